"""Recorded sessions of pika, py-amqp and aio-pika (tests/data/, see its README).

Every stream decodes with a spec-less ``FrameDecoder()`` at any chunking and re-encodes byte
for byte; what the decoder reads agrees with what the recording script sent
(tests/data/recorded-clients.json, written by tools/record_clients.py).
"""

from __future__ import annotations

import decimal
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import amqp_codec as ac
from amqp_codec.table import encode_table
from amqp_codec.v0_9_1 import Basic, BasicProperties, Channel, Connection, Exchange, Queue

DATA = Path(__file__).resolve().parent / "data"
EXPECTED: dict[str, Any] = json.loads((DATA / "recorded-clients.json").read_text())
CLIENTS = sorted(EXPECTED["clients"])
STREAMS = [f"{client}.{side}.bin" for client in CLIENTS for side in ("client", "server")]


def decode(data: bytes, chunk: int = 1 << 30) -> tuple[ac.FrameDecoder, list[ac.Frame]]:
    decoder = ac.FrameDecoder()
    frames: list[ac.Frame] = []
    for start in range(0, len(data), chunk):
        decoder.receive_data(data[start : start + chunk])
        frames.extend(decoder)
    decoder.receive_data(b"")
    assert decoder.next_frame() is ac.NEED_DATA
    return decoder, frames


def methods(frames: list[ac.Frame]) -> list[Any]:
    return [frame.method for frame in frames if isinstance(frame, ac.MethodFrame)]


def messages(frames: list[ac.Frame]) -> list[ac.Message]:
    assembler = ac.MessageAssembler()
    found = [m for frame in frames if (m := assembler.feed(frame)) is not None]
    assert not assembler.unfinished()
    return found


def plain(value: Any) -> Any:
    """A decoded value in the recording script's JSON form."""
    if isinstance(value, ac.FieldTable):
        return {key: plain(item) for key, _tag, item in value.entries()}
    if isinstance(value, ac.FieldArray):
        return [plain(item) for item in value]
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, ac.Timestamp):
        return {"$timestamp": int(value)}
    return value


def plain_properties(properties: Any) -> dict[str, Any]:
    assert isinstance(properties, BasicProperties)
    return {
        spec.attr: plain(getattr(properties, spec.attr))
        for spec in properties.FIELDS
        if getattr(properties, spec.attr) is not None
    }


@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 30])
@pytest.mark.parametrize("name", STREAMS)
def test_stream_decodes_and_reencodes_exactly(name: str, chunk: int) -> None:
    data = (DATA / name).read_bytes()
    decoder, frames = decode(data, chunk)
    if name.endswith(".client.bin"):
        assert decoder.detected_by == "protocol header"
        assert frames[0] == ac.ProtocolHeader(0, 0, 9, 1)
    else:
        assert decoder.detected_by == "connection.start"
    assert b"".join(ac.encode_frame(frame) for frame in frames) == data
    assert decoder.offset == len(data)


@pytest.mark.parametrize("client", CLIENTS)
def test_frames_respect_the_negotiated_frame_max(client: str) -> None:
    _, sent = decode((DATA / f"{client}.client.bin").read_bytes())
    (tune_ok,) = [m for m in methods(sent) if isinstance(m, Connection.TuneOk)]
    for side in ("client", "server"):
        data = (DATA / f"{client}.{side}.bin").read_bytes()
        decoder = ac.FrameDecoder(frame_max=tune_ok.frame_max)  # refuses larger frames (501)
        decoder.receive_data(data)
        frames = list(decoder)
        assert b"".join(ac.encode_frame(frame) for frame in frames) == data
        largest = max(len(ac.encode_frame(f)) for f in frames if isinstance(f, ac.ContentBodyFrame))
        assert largest == tune_ok.frame_max  # bodies are split at exactly frame_max


@pytest.mark.parametrize("client", CLIENTS)
def test_client_stream_carries_what_the_client_sent(client: str) -> None:
    expected = EXPECTED["clients"][client]
    _, frames = decode((DATA / f"{client}.client.bin").read_bytes())
    sent = methods(frames)
    start_ok = sent[0]
    assert isinstance(start_ok, Connection.StartOk)
    if start_ok.mechanism == "AMQPLAIN":  # a field table without its size prefix
        assert start_ok.response == encode_table({"LOGIN": "guest", "PASSWORD": "guest"})[4:]
    else:
        assert (start_ok.mechanism, start_ok.response) == ("PLAIN", b"\x00guest\x00guest")
    (declare,) = [m for m in sent if isinstance(m, Exchange.Declare)]
    assert (declare.exchange, declare.type) == (EXPECTED["exchange"], "topic")
    assert plain(declare.arguments) == expected["exchange_arguments"]
    queue_declares = [m for m in sent if isinstance(m, Queue.Declare)]
    assert queue_declares[0].queue == EXPECTED["queue"]
    assert plain(queue_declares[0].arguments) == EXPECTED["queue_arguments"]
    assert queue_declares[1].queue == EXPECTED["missing_queue"] and queue_declares[1].passive
    published = messages(frames)
    assert len(published) == len(expected["publishes"])
    for message, want in zip(published, expected["publishes"], strict=True):
        method = message.method
        assert isinstance(method, Basic.Publish)
        assert (method.exchange, method.routing_key, method.mandatory) == (
            want["exchange"],
            want["routing_key"],
            want["mandatory"],
        )
        assert plain_properties(message.properties) == want["properties"]
        assert len(message.body) == want["body_size"]
        assert hashlib.sha256(message.body).hexdigest() == want["body_sha256"]
    names = {m.NAME for m in sent}
    assert names >= {
        "basic.qos", "basic.consume", "basic.ack", "basic.nack", "basic.reject", "basic.cancel",
        "basic.get", "confirm.select", "tx.select", "tx.commit", "channel.close",
        "connection.close",
    }  # fmt: skip


@pytest.mark.parametrize("client", CLIENTS)
def test_server_stream_answers_the_scenario(client: str) -> None:
    publishes = EXPECTED["clients"][client]["publishes"]
    _, frames = decode((DATA / f"{client}.server.bin").read_bytes())
    received = methods(frames)
    start = received[0]
    assert isinstance(start, Connection.Start)
    product = start.server_properties["product"], start.server_properties["version"]
    assert " ".join(product) == EXPECTED["broker"]
    by_kind: dict[type, list[ac.Message]] = {}
    for message in messages(frames):
        by_kind.setdefault(type(message.method), []).append(message)
    deliveries = by_kind[Basic.Deliver]
    assert [hashlib.sha256(m.body).hexdigest() for m in deliveries] == [
        p["body_sha256"] for p in publishes[:3]
    ]
    assert [plain_properties(m.properties) for m in deliveries] == [
        p["properties"] for p in publishes[:3]
    ]
    (got,) = by_kind[Basic.GetOk]
    assert got.body == b"fetch me"
    (returned,) = by_kind[Basic.Return]
    assert isinstance(returned.method, Basic.Return)
    assert (returned.method.reply_code, returned.body) == (312, b"returned")
    assert sum(isinstance(m, Basic.GetEmpty) for m in received) == 1
    # Confirms may come out of order: the unroutable publish (2) needs no queue's word.
    assert sorted(m.delivery_tag for m in received if isinstance(m, Basic.Ack)) == [1, 2]
    (close,) = [m for m in received if isinstance(m, Channel.Close)]
    assert close == Channel.Close(
        reply_code=404,
        reply_text=f"NOT_FOUND - no queue '{EXPECTED['missing_queue']}' in vhost '/'",
        class_id=50,
        method_id=10,
    )
    assert isinstance(received[-1], Connection.CloseOk)
