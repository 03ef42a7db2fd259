"""Bad peers: whatever bytes arrive, a Connection raises nothing but RemoteProtocolError, and
when it does, the close it queued is a valid frame (or its protocol header)."""

from __future__ import annotations

import itertools

from connection_support import opened, pump
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_codec import (
    NEED_DATA,
    Connection,
    FrameDecoder,
    MethodFrame,
    RemoteProtocolError,
    encode_frame,
    encode_message,
)
from amqp_codec.v0_9_1 import Basic, BasicProperties, Channel, Queue
from amqp_codec.v0_9_1 import Connection as C


def _feed(conn: Connection, data: bytes, cuts: list[int]) -> RemoteProtocolError | None:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    error = None
    for a, b in itertools.pairwise(bounds):
        if b <= a:
            continue
        try:
            conn.receive_data(data[a:b])
        except RemoteProtocolError as exc:
            error = error or exc
    try:
        conn.receive_data(b"")
    except RemoteProtocolError as exc:  # pragma: no cover - EOF never raises
        raise AssertionError("EOF raised") from exc
    return error


def _check_answer(conn: Connection, error: RemoteProtocolError | None) -> None:
    data = conn.data_to_send()
    if error is None:
        return
    if error.reply_code is None:
        assert data.startswith(b"AMQP")
        return
    decoder = FrameDecoder(conn.spec)
    decoder.receive_data(data)
    closes = []
    while (frame := decoder.next_frame()) is not NEED_DATA:
        if isinstance(frame, MethodFrame) and frame.method.NAME.endswith(".close"):
            closes.append(frame)
    assert any(f.method.reply_code == error.reply_code for f in closes)


@settings(max_examples=150)
@given(st.binary(max_size=300), st.lists(st.integers(0, 1000), max_size=6))
def test_server_given_garbage_from_the_start(data: bytes, cuts: list[int]) -> None:
    server = Connection("server")
    _check_answer(server, _feed(server, data, cuts))


@settings(max_examples=150)
@given(st.binary(max_size=300), st.lists(st.integers(0, 1000), max_size=6))
def test_open_connections_given_garbage(data: bytes, cuts: list[int]) -> None:
    client, server = opened()
    _check_answer(server, _feed(server, data, cuts))
    _check_answer(client, _feed(client, data, cuts))


def _valid_client_stream() -> bytes:
    parts = [
        encode_frame(MethodFrame(1, Channel.Open())),
        encode_frame(MethodFrame(1, Queue.Declare(queue="q"))),
        encode_message(
            1, Basic.Publish(routing_key="q"), BasicProperties(headers={"a": 1}), b"x" * 300, 4096
        ),
        encode_frame(MethodFrame(1, Channel.Close())),
        encode_frame(MethodFrame(0, C.Close())),
    ]
    return b"".join(parts)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(_valid_client_stream())
    for _ in range(draw(st.integers(1, 5))):
        pos = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "insert", "delete", "swap"]))
        if op == "flip":
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 8))]
        else:  # a frame-sized block moved: wrong order
            end = min(len(data), pos + draw(st.integers(8, 40)))
            block = data[pos:end]
            del data[pos:end]
            at = draw(st.integers(0, len(data)))
            data[at:at] = block
        if not data:
            break
    return bytes(data)


@settings(max_examples=200)
@given(mutated(), st.lists(st.integers(0, 2000), max_size=6))
def test_server_given_a_mutated_client_stream(data: bytes, cuts: list[int]) -> None:
    _client, server = opened(server_frame_max=4096)
    _check_answer(server, _feed(server, data, cuts))


def test_an_oversized_frame_is_a_501() -> None:
    client, server = opened(server_frame_max=4096)
    frame = encode_frame(MethodFrame(1, Channel.Open()))
    big = b"\x01\x00\x01\x00\x01\x00\x00" + b"\x00" * 65536 + b"\xce"
    server.receive_data(frame)
    error = _feed(server, big, [])
    assert error is not None and error.reply_code == 501
    _check_answer(server, error)
    pump(client, server)
