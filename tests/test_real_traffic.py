"""Recorded real traffic (samples/, see its README) decodes and re-encodes byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

import amqp_codec as ac
from amqp_codec.v0_9_1 import Basic, BasicProperties, Connection, Exchange

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
STREAMS = ["pika-session.client.bin", "pika-session.server.bin"]


def decode_all(data: bytes, chunk: int) -> tuple[ac.FrameDecoder, list[ac.Frame]]:
    decoder = ac.FrameDecoder()
    frames: list[ac.Frame] = []
    for start in range(0, len(data), chunk):
        decoder.receive_data(data[start : start + chunk])
        frames.extend(decoder)
    decoder.receive_data(b"")
    assert decoder.next_frame() is ac.NEED_DATA
    return decoder, frames


@pytest.mark.parametrize("name", STREAMS)
@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 30])
def test_sample_streams_reencode_exactly(name: str, chunk: int) -> None:
    data = (SAMPLES / name).read_bytes()
    decoder, frames = decode_all(data, chunk)
    assert decoder.detected_by == (
        "protocol header" if name.endswith("client.bin") else "connection.start"
    )
    assert b"".join(ac.encode_frame(frame) for frame in frames) == data
    for frame in frames:  # each frame on its own, too
        assert ac.encode_frame(frame) in data


def test_client_stream_carries_what_pika_sent() -> None:
    _, frames = decode_all((SAMPLES / "pika-session.client.bin").read_bytes(), 1 << 30)
    methods = [f.method for f in frames if isinstance(f, ac.MethodFrame)]
    start_ok = next(m for m in methods if isinstance(m, Connection.StartOk))
    assert start_ok.client_properties["product"] == "Pika Python Client Library"
    assert start_ok.client_properties["capabilities"]["basic.nack"] is True
    assert start_ok.response == b"\x00guest\x00guest"
    declare = next(m for m in methods if isinstance(m, Exchange.Declare))
    assert declare.type == "topic" and declare.auto_delete and not declare.durable
    assert declare.arguments.tag("x-big-int") == "l"  # pika's tag for ints past 32 bits
    headers = [f.properties for f in frames if isinstance(f, ac.ContentHeaderFrame)]
    assert all(isinstance(p, BasicProperties) for p in headers)
    full = max(headers, key=lambda p: bin(p.flags).count("1"))
    assert full.user_id == "guest" and full.delivery_mode == 2
    assert isinstance(full.timestamp, ac.Timestamp)
    assemble = ac.MessageAssembler()
    messages = [m for f in frames if (m := assemble.feed(f)) is not None]
    assert all(isinstance(m.method, Basic.Publish) for m in messages)
    assert any(len(m.body) > 4096 for m in messages)  # split over several body frames
    assert not assemble.unfinished()


def test_server_stream_negotiation_and_deliveries() -> None:
    _, frames = decode_all((SAMPLES / "pika-session.server.bin").read_bytes(), 1 << 30)
    methods = [f.method for f in frames if isinstance(f, ac.MethodFrame)]
    start = methods[0]
    assert isinstance(start, Connection.Start)
    assert (start.version_major, start.version_minor) == (0, 9)
    assert start.server_properties["product"] == "RabbitMQ"
    assert b"PLAIN" in start.mechanisms.split()
    assert any(isinstance(m, Connection.Tune) for m in methods)
    assemble = ac.MessageAssembler()
    messages = [m for f in frames if (m := assemble.feed(f)) is not None]
    kinds = {type(m.method) for m in messages}
    assert Basic.Deliver in kinds and Basic.GetOk in kinds and Basic.Return in kinds
