"""Live: the reply code each peer-rule problem names is the one RabbitMQ answers with.

A client opens a connection to the broker (frame_max 4096, channel_max 5), then sends what
the rule says a broker refuses; both directions are recorded as a capture and analysed. The
``problems`` row must name the frame, and the reply code the broker actually closed the
connection with (the ``connections`` row's close, read from the broker's own bytes).
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from spark_support import Conversation, write_pcap

from amqp_codec import Connection, encode_frame
from amqp_codec.analyze.streams import analyze_connection
from amqp_codec.capture.packets import Segment, read_capture
from amqp_codec.events import ConnectionOpened
from amqp_codec.frames import ContentBodyFrame, ContentHeaderFrame, MethodFrame
from amqp_codec.v0_9_1 import Basic, BasicProperties, Channel, Queue

pytestmark = [pytest.mark.broker, pytest.mark.usefixtures("broker")]


def _record(refused: list[Any]) -> Conversation:
    """Open a connection, send ``refused`` raw, read until the broker hangs up."""
    conversation = Conversation().handshake()
    sock = socket.create_connection(("127.0.0.1", 5672), timeout=10)
    conn = Connection("client", frame_max=4096, channel_max=5, heartbeat=0)
    opened = False
    while not opened:
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
            conversation.send("client", out)
        data = sock.recv(65536)
        conversation.send("server", data)
        opened = any(isinstance(e, ConnectionOpened) for e in conn.receive_data(data))
    raw = conn.data_to_send() + b"".join(encode_frame(f) for f in refused)
    sock.sendall(raw)
    conversation.send("client", raw)
    sock.settimeout(3)  # the broker's close comes at once; then it waits for close-ok
    try:
        while data := sock.recv(65536):
            conversation.send("server", data)
    except (TimeoutError, ConnectionResetError):
        pass
    sock.close()
    return conversation.fin("server").fin("client")


CASES = {
    "frame-too-large": [
        MethodFrame(1, Channel.Open()),
        MethodFrame(1, Basic.Publish(routing_key="nowhere")),
        ContentHeaderFrame(1, 60, 5000, BasicProperties()),
        ContentBodyFrame(1, b"x" * 5000),
    ],
    "channel-not-open": [MethodFrame(3, Queue.Declare(queue="nowhere", passive=True))],
    "wrong-peer": [
        MethodFrame(1, Channel.Open()),
        MethodFrame(1, Basic.ConsumeOk(consumer_tag="c")),
    ],
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_the_reply_code_named_is_the_brokers(kind: str, tmp_path: Path) -> None:
    path = write_pcap(tmp_path / "live.pcap", _record(CASES[kind]))
    segments = [s for s in read_capture(str(path)) if isinstance(s, Segment)]
    rows: dict[str, list[tuple[Any, ...]]] = {"problems": [], "connections": []}
    for table, row in analyze_connection(segments, ports=(5672,)):
        rows.setdefault(table, []).append(row)
    [problem] = rows["problems"]
    [connection] = rows["connections"]
    closed_by, close_code = connection[24], connection[25]
    assert (problem[6], problem[3]) == (kind, "client")
    assert closed_by == "server" and problem[8] == close_code
