"""Helpers for the connection-layer tests: a client and a server Connection wired in memory."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from amqp_codec import NEED_DATA, Connection, FrameDecoder, v0_9_1
from amqp_codec.events import Event
from amqp_codec.frames import Frame


def pair(spec: ModuleType = v0_9_1, **options: Any) -> tuple[Connection, Connection]:
    """A client and a server of ``spec``; ``client_x=`` / ``server_x=`` options go to one side."""
    client_options = {k[7:]: v for k, v in options.items() if k.startswith("client_")}
    server_options = {k[7:]: v for k, v in options.items() if k.startswith("server_")}
    return (
        Connection("client", spec=spec, **client_options),
        Connection("server", spec=spec, **server_options),
    )


def pump(client: Connection, server: Connection) -> tuple[list[Event], list[Event]]:
    """Move bytes both ways until neither side has anything to send; the events of each side."""
    client_events: list[Event] = []
    server_events: list[Event] = []
    while True:
        to_server = client.data_to_send()
        if to_server:
            server_events += server.receive_data(to_server)
        to_client = server.data_to_send()
        if to_client:
            client_events += client.receive_data(to_client)
        if not to_server and not to_client:
            return client_events, server_events


def opened(spec: ModuleType = v0_9_1, **options: Any) -> tuple[Connection, Connection]:
    """A pair past the handshake."""
    client, server = pair(spec, **options)
    pump(client, server)
    assert client.is_open and server.is_open
    return client, server


def with_channel(spec: ModuleType = v0_9_1, **options: Any) -> tuple[Connection, Connection, int]:
    """An open pair with one open channel."""
    client, server = opened(spec, **options)
    channel = client.open_channel()
    pump(client, server)
    return client, server, channel


def frames(data: bytes, spec: ModuleType = v0_9_1) -> list[Frame]:
    """The frames in ``data`` (a client's bytes start with the protocol header)."""
    decoder = FrameDecoder(spec, accept_extended_tags=True)
    decoder.receive_data(data)
    found = []
    while (frame := decoder.next_frame()) is not NEED_DATA:
        found.append(frame)
    return found
