"""Live: the connection layer's client role against RabbitMQ, driven by a small blocking loop."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from amqp_codec import Connection, v0_8, v0_9_1
from amqp_codec.errors import NotFound, PreconditionFailed
from amqp_codec.events import (
    ChannelClosed,
    ChannelOpened,
    ConnectionClosed,
    ConnectionOpened,
    Event,
    MessageReceived,
    MethodReceived,
    PublishConfirmed,
)

pytestmark = [pytest.mark.broker, pytest.mark.usefixtures("broker")]


class Live:
    """A Connection on a blocking socket: ``until`` reads until an event matches."""

    def __init__(self, spec: ModuleType = v0_9_1, **options: Any) -> None:
        self.spec = spec
        self.sock = socket.create_connection(("127.0.0.1", 5672), timeout=10)
        self.conn = Connection("client", spec=spec, **options)
        self.events: list[Event] = []
        self.opened = self.until(lambda e: isinstance(e, ConnectionOpened))

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def until(self, match: Callable[[Event], bool]) -> Any:
        while True:
            for i, event in enumerate(self.events):
                if match(event):
                    del self.events[i]
                    return event
            self.flush()
            self.conn.tick(time.monotonic())
            self.flush()
            self.events += self.conn.receive_data(self.sock.recv(65536))

    def channel(self) -> int:
        ch = self.conn.open_channel()
        self.until(lambda e: e == ChannelOpened(ch))
        return ch

    def call(self, ch: int, method: Any) -> Any:
        self.conn.send(ch, method)
        event = self.until(
            lambda e: (
                (isinstance(e, MethodReceived | MessageReceived) and e.channel == ch)
                or isinstance(e, ChannelClosed)
            )
        )
        return event

    def close(self) -> ConnectionClosed:
        self.conn.close()
        closed = self.until(lambda e: isinstance(e, ConnectionClosed))
        self.sock.close()
        return closed


def _name() -> str:
    return f"layer-{uuid.uuid4().hex[:10]}"


@pytest.mark.parametrize("mechanism", ["PLAIN", "AMQPLAIN"])
def test_login_tune_and_close(mechanism: str) -> None:
    live = Live(mechanism=mechanism, frame_max=8192, channel_max=5, heartbeat=0)
    assert live.opened.peer_properties["product"] == "RabbitMQ"
    assert (live.opened.frame_max, live.opened.channel_max, live.opened.heartbeat) == (8192, 5, 0)
    assert live.conn.next_deadline() is None
    closed = live.close()
    assert (closed.reply_code, closed.by_peer) == (200, False)


def test_refused_login_is_a_403_close() -> None:
    sock = socket.create_connection(("127.0.0.1", 5672), timeout=10)
    conn = Connection("client", password="not-the-password")
    events: list[Event] = []
    while not events:
        sock.sendall(conn.data_to_send())
        events = conn.receive_data(sock.recv(65536))
    sock.sendall(conn.data_to_send())
    sock.close()
    (closed,) = events
    assert isinstance(closed, ConnectionClosed) and closed.reply_code == 403 and closed.by_peer


@pytest.mark.parametrize("spec", [v0_9_1, v0_8], ids=["0-9-1", "0-8"])
def test_publish_get_and_consume_content_split_by_frame_max(spec: ModuleType) -> None:
    live = Live(spec, frame_max=4096)
    ch = live.channel()
    queue = live.call(ch, spec.Queue.Declare(queue=_name(), auto_delete=True)).method.queue
    body = bytes(range(256)) * 1200  # 300 KB: many body frames of at most 4088 bytes
    props = spec.BasicProperties(content_type="application/octet-stream", headers={"n": 1})
    live.conn.send(ch, spec.Basic.Publish(routing_key=queue), props, body)
    got = live.call(ch, spec.Basic.Get(queue=queue, no_ack=True))
    assert isinstance(got, MessageReceived) and got.body == body
    assert got.properties.headers["n"] == 1
    live.call(ch, spec.Basic.Consume(queue=queue, consumer_tag="c1"))
    for n in range(3):
        live.conn.send(ch, spec.Basic.Publish(routing_key=queue), spec.BasicProperties(), b"%d" % n)
    delivered = [live.until(lambda e: isinstance(e, MessageReceived)) for _ in range(3)]
    assert [d.body for d in delivered] == [b"0", b"1", b"2"]
    live.conn.send(
        ch, spec.Basic.Ack(delivery_tag=delivered[-1].method.delivery_tag, multiple=True)
    )
    live.close()


def test_publisher_confirms() -> None:
    live = Live()
    ch = live.channel()
    queue = live.call(ch, v0_9_1.Queue.Declare(queue=_name(), auto_delete=True)).method.queue
    assert live.call(ch, v0_9_1.Confirm.Select()).method == v0_9_1.Confirm.SelectOk()
    for n in range(20):
        live.conn.send(
            ch, v0_9_1.Basic.Publish(routing_key=queue), v0_9_1.BasicProperties(), b"m%d" % n
        )
    confirmed: set[int] = set()
    while len(confirmed) < 20:
        event = live.until(lambda e: isinstance(e, PublishConfirmed))
        assert event.ack
        start = max(confirmed, default=0) + 1 if event.multiple else event.delivery_tag
        confirmed.update(range(start, event.delivery_tag + 1))
    assert confirmed == set(range(1, 21))
    live.close()


def test_channel_errors_close_one_channel_and_a_new_one_works() -> None:
    live = Live()
    ch = live.channel()
    other = live.channel()
    closed = live.call(ch, v0_9_1.Queue.Declare(queue=_name(), passive=True))
    assert isinstance(closed, ChannelClosed) and closed.by_peer
    assert isinstance(closed.exception(), NotFound) and (closed.class_id, closed.method_id) == (
        50,
        10,
    )
    name = _name()
    live.call(other, v0_9_1.Queue.Declare(queue=name, auto_delete=True))
    closed = live.call(other, v0_9_1.Queue.Declare(queue=name, durable=True))
    assert isinstance(closed.exception(), PreconditionFailed)
    again = live.channel()
    assert again == ch  # the lowest free number is reused
    reply = live.call(again, v0_9_1.Queue.Declare(queue="", exclusive=True))
    assert isinstance(reply.method, v0_9_1.Queue.DeclareOk)
    live.close()


def test_heartbeats_keep_an_idle_connection_alive() -> None:
    live = Live(heartbeat=1)
    assert live.opened.heartbeat == 1
    ch = live.channel()
    stop = time.monotonic() + 3.5  # three intervals with no traffic but heartbeats
    while time.monotonic() < stop:
        deadline = live.conn.next_deadline()
        assert deadline is not None
        live.sock.settimeout(max(0.01, min(deadline, stop) - time.monotonic()))
        try:
            data = live.sock.recv(65536)
        except TimeoutError:
            data = None
        if data is not None:
            assert live.conn.receive_data(data) == []
        assert live.conn.tick(time.monotonic()) == []
        live.flush()
    live.sock.settimeout(10)
    reply = live.call(ch, v0_9_1.Queue.Declare(queue="", exclusive=True))
    assert isinstance(reply.method, v0_9_1.Queue.DeclareOk)
    live.close()


def _block_after(path: str, heading: str, fence: str) -> str:
    text = (Path(__file__).resolve().parent.parent / path).read_text(encoding="utf-8")
    start = text.index(fence, text.index(heading)) + len(fence)
    return text[start : text.index("```", start)]


@pytest.mark.parametrize(
    ("path", "heading", "fence"),
    [
        ("docs/getting-started.md", "## Connections: the protocol", "```py\n"),
        ("docs/connection.md", "## A publisher and a consumer", "```python\n"),
    ],
)
def test_the_documented_publisher_runs(path: str, heading: str, fence: str) -> None:
    printed: list[Any] = []
    code = _block_after(path, heading, fence)
    exec(compile(code, path, "exec"), {"print": printed.append})
    live = Live()  # the documented publisher declares a durable queue: leave the broker clean
    ch = live.channel()
    live.call(ch, v0_9_1.Queue.Delete(queue="jobs"))
    live.close()
