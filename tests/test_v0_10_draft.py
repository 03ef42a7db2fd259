"""AMQP 99-0 (Qpid's 0-10 preview): worked examples, round trips, hostile bytes, detection.

The worked examples are the hex dumps in ``amqp0-10-draft-WIRE.md`` §11, made by Qpid's own
Python 99-0 codec; each must decode to the values the note lists and re-encode to the same
bytes.
"""

from __future__ import annotations

import contextlib
import uuid
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amqp_codec import (
    NEED_DATA,
    AMQPDecodeError,
    AMQPEncodeError,
    CommandInvalidError,
    FrameDecoder,
    FrameError,
    ProtocolHeader,
    UnsupportedProtocolError,
    close_for_error,
    encode_frame,
)
from amqp_codec import v0_10_draft as draft
from amqp_codec.v0_10_draft import (
    Connection,
    DeliveryProperties,
    Execution,
    Message,
    MessageProperties,
    QueueQueryResult,
    ReplyTo,
    Session,
)
from amqp_codec.wire010 import (
    EMPTY_ARRAY,
    Array,
    DraftBodyFrame,
    DraftHeaderFrame,
    DraftHeartbeatFrame,
    DraftMethodFrame,
    FieldTable,
    Timestamp,
    Typed,
    decode_array,
    decode_long_struct,
    decode_rfc1982_long_set,
    decode_table,
    encode_array,
    encode_draft_frame,
    encode_draft_message,
    encode_long_struct,
    encode_rfc1982_long_set,
    encode_table,
)
from tests import strategies010 as s10


def hexb(text: str) -> bytes:
    return bytes.fromhex(text.replace("|", " "))


def decode_all(data: bytes, spec: object = draft, chunk: int | None = None) -> list[object]:
    decoder = FrameDecoder(spec)  # type: ignore[arg-type]
    frames: list[object] = []
    pieces = [data] if chunk is None else [data[i : i + chunk] for i in range(0, len(data), chunk)]
    for piece in [*pieces, b""]:
        decoder.receive_data(piece)
        while (frame := decoder.next_frame()) is not NEED_DATA:
            frames.append(frame)
    return frames


def only(data: bytes) -> object:
    (frame,) = decode_all(data)
    assert encode_frame(frame) == data  # type: ignore[arg-type]
    return frame


# --------------------------------------------------------------------------------------------
# §11 worked examples
# --------------------------------------------------------------------------------------------

PROTOCOL_HEADER = hexb("41 4d 51 50 01 01 63 00")
CONNECTION_START = hexb(
    "0f 01 00 26 00 00 00 00 00 00 00 00"
    "0a 0a 63 00 | 00 00 00 00 | 00 00 00 05 50 4c 41 49 4e | 00 00 00 05 65 6e 5f 55 53 ce"
)
CONNECTION_TUNE = hexb("0f 01 00 16 00 00 00 00 00 00 00 00 | 0a 1e 7f ff 00 00 ff ff 00 00 | ce")
SESSION_OPEN = hexb("0f 01 00 12 00 00 00 01 00 00 00 00 | 14 0a 00 00 00 00 | ce")
QUEUE_DECLARE = hexb(
    "0f 01 00 28 00 00 00 01 00 00 00 00"
    "32 0a | 00 00 | 01 71 | 00 | 0a | 00 00 00 10 01 78 22 00 00 00 01 01 73 a4 00 00 00 02 61 62"
    "ce"
)
MESSAGE_TRANSFER = hexb(
    "0b 01 00 1d 00 00 00 01 00 00 00 00 | 78 0a 00 00 0a 61 6d 71 2e 64 69 72 65 63 74 01 00 | ce"
)
HEADER = hexb(
    "03 02 00 48 00 00 00 01 00 00 00 00"
    "00 00 00 07 00 00 08 01 02 01 71"
    "00 00 00 2d 00 01 19 08 00 00 00 00 00 00 00 05 00 08 03 00 02 65 78 02 72 6b"
    "0a 74 65 78 74 2f 70 6c 61 69 6e 00 00 00 08 01 6b a4 00 00 00 01 76"
    "ce"
)
BODY = hexb("07 03 00 11 00 00 00 01 00 00 00 00 | 68 65 6c 6c 6f | ce")
EMPTY_HEADER = hexb(
    "07 02 00 24 00 00 00 01 00 00 00 00 | 00 00 00 04 00 00 00 00 |"
    "00 00 00 0c 00 01 01 00 00 00 00 00 00 00 00 00 | ce"
)
EXECUTION_COMPLETE = hexb(
    "0f 01 00 24 00 00 00 01 00 00 00 00"
    "8c 14 00 00 00 04 00 10 00 00 00 06 00 00 00 07 00 00 00 09 00 00 00 09 | ce"
)
EXECUTION_SYNC = hexb("0f 01 00 0e 00 00 00 01 00 00 00 00 8c 32 ce")
EXECUTION_FLUSH = hexb("0f 01 00 0e 00 00 00 01 00 00 00 00 8c 0a ce")
EXECUTION_RESULT = hexb(
    "0f 01 00 29 00 00 00 01 00 00 00 00"
    "8c 28 00 00 00 05"
    "00 00 00 13 32 3d e7 00 01 71 00 00 00 00 00 00 00 00 03 00 00 00 00"
    "ce"
)
IN_DOUBT_ARRAY = hexb("00 00 00 10 a4 00 00 00 02 00 00 00 02 61 62 00 00 00 01 63")

EXAMPLES = [
    CONNECTION_START,
    CONNECTION_TUNE,
    SESSION_OPEN,
    QUEUE_DECLARE,
    MESSAGE_TRANSFER,
    HEADER,
    BODY,
    EMPTY_HEADER,
    EXECUTION_COMPLETE,
    EXECUTION_SYNC,
    EXECUTION_FLUSH,
    EXECUTION_RESULT,
]
SESSION = PROTOCOL_HEADER + b"".join(EXAMPLES)


def test_protocol_header() -> None:
    frames = decode_all(PROTOCOL_HEADER, spec=None)
    assert frames == [ProtocolHeader(1, 1, 99, 0)]
    assert encode_frame(frames[0]) == PROTOCOL_HEADER  # type: ignore[arg-type]


def test_connection_start() -> None:
    frame = only(CONNECTION_START)
    assert frame == DraftMethodFrame(
        0,
        Connection.Start(
            version_major=99,
            version_minor=0,
            server_properties={},
            mechanisms=b"PLAIN",
            locales=b"en_US",
        ),
        flags=0x0F,
    )


def test_connection_tune() -> None:
    frame = only(CONNECTION_TUNE)
    assert frame == DraftMethodFrame(0, Connection.Tune(32767, 65535, 0))
    assert encode_frame(DraftMethodFrame(0, Connection.Tune(32767, 65535, 0))) == CONNECTION_TUNE


def test_session_open() -> None:
    assert only(SESSION_OPEN) == DraftMethodFrame(1, Session.Open(detached_lifetime=0))


def test_queue_declare() -> None:
    frame = only(QUEUE_DECLARE)
    assert isinstance(frame, DraftMethodFrame)
    method = frame.method
    assert method == draft.Queue.Declare(
        queue="q", durable=True, auto_delete=True, arguments=method.arguments
    )
    assert (method.passive, method.exclusive, method.ticket, method.alternate_exchange) == (
        False,
        False,
        0,
        "",
    )
    assert method.arguments.entries() == [("x", 0x22, 1), ("s", 0xA4, "ab")]
    # Built from Typed values the same bytes come out.
    built = draft.Queue.Declare(
        queue="q",
        durable=True,
        auto_delete=True,
        arguments=FieldTable([("x", Typed(0x22, 1)), ("s", "ab")]),
    )
    assert encode_frame(DraftMethodFrame(1, built)) == QUEUE_DECLARE


def test_message_transfer() -> None:
    frame = only(MESSAGE_TRANSFER)
    assert frame == DraftMethodFrame(
        1, Message.Transfer(destination="amq.direct", confirm_mode=1, acquire_mode=0)
    )
    assert isinstance(frame, DraftMethodFrame) and frame.flags == 0x0B


DELIVERY = DeliveryProperties(routing_key="q", delivery_mode=2)
PROPERTIES = MessageProperties(
    content_length=5,
    reply_to=ReplyTo(exchange_name="ex", routing_key="rk"),
    content_type="text/plain",
    application_headers=FieldTable({"k": "v"}),
)


def test_header_frame() -> None:
    frame = only(HEADER)
    assert frame == DraftHeaderFrame(1, (DELIVERY, PROPERTIES), flags=0x03)
    assert isinstance(frame, DraftHeaderFrame)
    assert frame.get(MessageProperties) == PROPERTIES
    assert DELIVERY.encode() == hexb("00 00 00 07 00 00 08 01 02 01 71")
    assert DELIVERY.flags == 0x0801
    assert MessageProperties(content_length=5).encode_body()[:2] == b"\x01\x00"


def test_body_frame() -> None:
    assert only(BODY) == DraftBodyFrame(1, b"hello")


def test_empty_content_header() -> None:
    frame = only(EMPTY_HEADER)
    assert frame == DraftHeaderFrame(
        1, (DeliveryProperties(), MessageProperties(content_length=0)), flags=0x07
    )


def test_execution_complete() -> None:
    frame = only(EXECUTION_COMPLETE)
    assert frame == DraftMethodFrame(
        1,
        Execution.Complete(cumulative_execution_mark=4, ranged_execution_set=((6, 7), (9, 9))),
    )


def test_execution_sync_and_flush() -> None:
    assert only(EXECUTION_SYNC) == DraftMethodFrame(1, Execution.Sync())
    assert only(EXECUTION_FLUSH) == DraftMethodFrame(1, Execution.Flush())


def test_execution_result() -> None:
    frame = only(EXECUTION_RESULT)
    result = QueueQueryResult(
        queue="q",
        alternate_exchange="",
        durable=True,
        arguments=FieldTable(),
        message_count=3,
        consumer_count=0,
    )
    assert frame == DraftMethodFrame(1, Execution.Result(command_id=5, data=result))
    assert QueueQueryResult.TYPE_CODE == 12861 == 50 * 256 + 61
    assert draft.Queue.Query.RESULT is QueueQueryResult


def test_execution_result_with_cpp_padding() -> None:
    # A C++ broker from Nov 2007 to Apr 2008 sent length 25: six zero bytes after the struct.
    payload = EXECUTION_RESULT[12:-1]
    padded = payload[:6] + b"\x00\x00\x00\x19" + payload[10:] + bytes(6)
    data = bytes((0x0F, 1)) + (12 + len(padded)).to_bytes(2, "big") + EXECUTION_RESULT[4:12]
    (frame,) = decode_all(data + padded + b"\xce")
    assert frame == only(EXECUTION_RESULT)
    assert isinstance(frame, DraftMethodFrame) and frame.method.data.padding == bytes(6)
    assert encode_frame(frame) == data + padded + b"\xce"  # kept: it re-encodes as it came


def test_in_doubt_array() -> None:
    array, end = decode_array(IN_DOUBT_ARRAY, 0, len(IN_DOUBT_ARRAY))
    assert end == len(IN_DOUBT_ARRAY)
    assert array == Array(0xA4, ("ab", "c"))
    assert encode_array(array) == IN_DOUBT_ARRAY


def test_rfc1982_long_set_example() -> None:
    wire = hexb("00 10 00000001 00000003 00000006 00000006")
    assert decode_rfc1982_long_set(wire, 0, len(wire)) == (((1, 3), (6, 6)), len(wire))
    assert encode_rfc1982_long_set(((1, 3), (6, 6))) == wire
    assert encode_rfc1982_long_set(()) == b"\x00\x00"


def test_empty_cpp_array() -> None:
    wire = hexb("00 00 00 05 F0 00 00 00 00")
    assert decode_array(wire, 0, len(wire)) == (EMPTY_ARRAY, len(wire))
    assert encode_array(EMPTY_ARRAY) == wire


def test_whole_session_in_any_chunking() -> None:
    whole = decode_all(SESSION, spec=None)
    assert len(whole) == 1 + len(EXAMPLES)
    assert b"".join(encode_frame(f) for f in whole) == SESSION  # type: ignore[arg-type]
    for chunk in (1, 5, 13):
        assert decode_all(SESSION, spec=None, chunk=chunk) == whole


def test_encode_message_matches_recommended_flags() -> None:
    transfer = Message.Transfer(destination="amq.direct", confirm_mode=1)
    wire = encode_draft_message(1, transfer, [DELIVERY, PROPERTIES], b"hello")
    assert wire == MESSAGE_TRANSFER + HEADER + BODY
    empty = encode_draft_message(1, transfer, [], b"")
    frames = decode_all(empty)
    assert [f.flags for f in frames] == [0x0B, 0x07]  # type: ignore[attr-defined]
    split = decode_all(encode_draft_message(1, transfer, [], bytes(range(40)), frame_max=12 + 16))
    assert [f.flags for f in split] == [0x0B, 0x03, 0x06, 0x04, 0x05]  # type: ignore[attr-defined]
    assert b"".join(f.payload for f in split[2:]) == bytes(range(40))  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# Detection
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [b"\x01\x01\x63\x00", b"\x01\x01\x00\x0a"])
def test_detects_client_header(version: bytes) -> None:
    decoder = FrameDecoder()
    decoder.receive_data(b"AMQP" + version + SESSION_OPEN)
    assert decoder.next_frame() == ProtocolHeader(*version)
    assert decoder.spec is draft.SPEC and decoder.detected_by == "protocol header"
    assert decoder.next_frame() == DraftMethodFrame(1, Session.Open())


@pytest.mark.parametrize("major_minor", [b"\x63\x00", b"\x00\x0a"])
def test_detects_server_connection_start(major_minor: bytes) -> None:
    start = CONNECTION_START[:14] + major_minor + CONNECTION_START[16:]
    decoder = FrameDecoder()
    for byte in start + CONNECTION_TUNE:  # one byte at a time
        decoder.receive_data(bytes((byte,)))
    assert isinstance(decoder.next_frame(), DraftMethodFrame)
    assert decoder.spec is draft.SPEC and decoder.detected_by == "connection.start"
    assert decoder.next_frame() == DraftMethodFrame(0, Connection.Tune(32767, 65535, 0))


def test_other_versions_unaffected() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(b"AMQP\x00\x00\x09\x01")
    decoder.next_frame()
    assert decoder.spec is not None and decoder.spec.name == "0-9-1"
    with pytest.raises(UnsupportedProtocolError):
        decode_all(b"AMQP\x01\x01\x63\x01", spec=None)


# --------------------------------------------------------------------------------------------
# Frame-level errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (SESSION_OPEN[:-1] + b"\xcd", FrameError),  # frame end
        (b"\x1f" + SESSION_OPEN[1:], FrameError),  # reserved flag bits
        (SESSION_OPEN[:4] + b"\x01" + SESSION_OPEN[5:], FrameError),  # reserved octet
        (SESSION_OPEN[:5] + b"\x10" + SESSION_OPEN[6:], FrameError),  # track upper nibble
        (SESSION_OPEN[:11] + b"\x01" + SESSION_OPEN[12:], FrameError),  # reserved long
        (SESSION_OPEN[:2] + b"\x00\x0b" + SESSION_OPEN[4:], FrameError),  # size < 12
        (b"\x0f\x07" + SESSION_OPEN[2:], FrameError),  # frame-trace is not sent
        (b"\x0d" + SESSION_OPEN[1:], FrameError),  # method segment split over frames
        (CONNECTION_TUNE[:7] + b"\x01" + CONNECTION_TUNE[8:], CommandInvalidError),
        (SESSION_OPEN[:12] + b"\x14\xff" + SESSION_OPEN[14:], CommandInvalidError),
        (SESSION_OPEN[:-2] + b"\xce", AMQPDecodeError),  # arguments cut short
    ],
)
def test_frame_errors(data: bytes, error: type[AMQPDecodeError]) -> None:
    with pytest.raises(error) as info:
        decode_all(data)
    assert info.value.offset is not None and 0 <= info.value.offset <= len(data)


def test_close_for_error() -> None:
    with pytest.raises(AMQPDecodeError) as info:
        decode_all(SESSION_OPEN[:12] + b"\x14\xff" + SESSION_OPEN[14:])
    hard = close_for_error(info.value, draft)
    assert isinstance(hard, DraftMethodFrame) and hard.channel == 0
    assert isinstance(hard.method, Connection.Close) and hard.method.reply_code == 503
    assert (hard.method.class_id, hard.method.method_id) == (20, 255)
    soft = close_for_error(AMQPDecodeError("gone", reply_code=404, channel=3), draft)
    assert soft == DraftMethodFrame(
        3, Session.Closed(reply_code=404, reply_text="NOT_FOUND - gone")
    )


def test_frame_max_and_heartbeat() -> None:
    decoder = FrameDecoder(draft, frame_max=0x11)
    decoder.receive_data(SESSION_OPEN)
    with pytest.raises(FrameError):
        decoder.next_frame()
    heartbeat = encode_draft_frame(DraftHeartbeatFrame())
    assert heartbeat == hexb("0f 08 00 0c 00 00 00 00 00 00 00 00 ce")
    assert decode_all(heartbeat) == [DraftHeartbeatFrame()]


def test_header_segment_rules() -> None:
    payload = DELIVERY.encode() + DELIVERY.encode()
    frame = bytes((0x03, 2)) + (12 + len(payload)).to_bytes(2, "big") + HEADER[4:12] + payload
    with pytest.raises(AMQPDecodeError, match="repeats"):
        decode_all(frame + b"\xce")
    result = encode_long_struct(QueueQueryResult(queue="q"))
    frame = bytes((0x03, 2)) + (12 + len(result)).to_bytes(2, "big") + HEADER[4:12] + result
    with pytest.raises(AMQPDecodeError, match="not a message header"):
        decode_all(frame + b"\xce")
    # Either order is accepted (C++ sends message-properties first).
    swapped = encode_frame(DraftHeaderFrame(1, (PROPERTIES, DELIVERY)))
    assert decode_all(swapped) == [DraftHeaderFrame(1, (PROPERTIES, DELIVERY))]


# --------------------------------------------------------------------------------------------
# Structs, tables and values
# --------------------------------------------------------------------------------------------


def test_struct_flag_layout() -> None:
    # Field i owns bit i mod 8 of flag octet i div 8.
    assert DeliveryProperties(discard_unroutable=True).encode_body() == b"\x01\x00"
    assert DeliveryProperties(routing_key="").encode_body() == b"\x00\x01\x00"
    assert ReplyTo(routing_key="r").encode() == hexb("00 04 02 00 01 72")
    bad = hexb("00 00 00 04 00 00 00 02")  # bit 1 of octet 1: field 9, which does not exist
    with pytest.raises(AMQPDecodeError, match="packing flags"):
        decode_long_struct(bad, 0, len(bad), 8)


def test_execution_header_as_the_note_writes_it() -> None:
    # Never sent by Qpid; literally it would be 01 01 (sync) or 01 00.
    assert draft.ExecutionHeader(sync=True).encode() == b"\x01\x01"
    assert draft.ExecutionHeader().encode() == b"\x01\x00"


def test_value_bytes_written_independently() -> None:
    sid = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    attached = Session.Attached(session_id=sid, detached_lifetime=7)
    assert attached.encode() == b"\x14\x0b" + bytes.fromhex("00112233445566778899aabbccddeeff") + (
        b"\x00\x00\x00\x07"
    )
    table = FieldTable(
        [
            ("b", False),
            ("d", Decimal("-1.5")),
            ("t", Timestamp(1)),
            ("q", (1, "a")),
            ("n", Typed(0x02, 255)),
        ]
    )
    assert encode_table(table)[4:] == (
        b"\x01b\x08\x00"
        + b"\x01d\xc8\x01\xff\xff\xff\xf1"
        + b"\x01t\x38"
        + bytes(7)
        + b"\x01"
        + b"\x01q\xa9\x00\x00\x00\x0b\x21\x00\x00\x00\x01\xa4\x00\x00\x00\x01a"
        + b"\x01n\x02\xff"
    )


def test_untyped_struct_size_forms() -> None:
    exact = ReplyTo(exchange_name="ex").encode()
    assert ReplyTo.decode(exact, 0, len(exact), 8) == (ReplyTo(exchange_name="ex"), len(exact))
    counted_itself = b"\x00\x07" + exact[2:]  # C++ before 2008-03-04
    decoded = ReplyTo.decode(counted_itself, 0, len(exact), 8)[0]
    assert decoded == ReplyTo(exchange_name="ex") and decoded.size_counts_itself
    assert decoded.encode() == counted_itself
    for wrong in (b"\x00\x00", b"\x00\x09"):
        with pytest.raises(AMQPDecodeError):
            ReplyTo.decode(wrong + exact[2:], 0, len(exact), 8)


def test_table_plain_value_codes() -> None:
    table = FieldTable(
        {
            "i": 1,
            "l": 2**40,
            "u": 2**63,
            "s": "x",
            "b": True,
            "t": {},
            "v": None,
            "d": 1.5,
            "x": b"\x00",
            "id": uuid.UUID(int=1),
            "ts": Timestamp(7),
            "dec": Decimal("1.25"),
        }
    )
    assert [code for _k, code, _v in table.entries()] == [
        0x21,
        0x31,
        0x32,
        0xA4,
        0x08,
        0xA8,
        0xF0,
        0x33,
        0xA0,
        0x48,
        0x38,
        0xC8,
    ]
    wire = encode_table(table)
    decoded, end = decode_table(wire, 0, len(wire))
    assert end == len(wire) and decoded == table and encode_table(decoded) == wire


def test_nan_keeps_its_payload() -> None:
    wire = hexb("00 00 00 07 01 6e 23 7f c0 00 01")
    table, _ = decode_table(wire, 0, len(wire))
    assert encode_table(table) == wire


def test_table_unknown_but_sized_codes_and_reserved_ones() -> None:
    # 0x3f is not named by the spec; its nibble says 8 bytes: kept raw, re-encoded the same.
    wire = hexb("00 00 00 0b 01 6b 3f 01 02 03 04 05 06 07 08")
    table, _ = decode_table(wire, 0, len(wire))
    assert table.entries() == [("k", 0x3F, bytes(range(1, 9)))]
    assert encode_table(table) == wire
    for reserved in (0xB0, 0xE5):
        bad = hexb(f"00 00 00 04 01 6b {reserved:02x} 00")
        with pytest.raises(AMQPDecodeError, match="reserved"):
            decode_table(bad, 0, len(bad))


def test_encode_errors_name_the_field() -> None:
    with pytest.raises(AMQPEncodeError) as info:
        encode_frame(DraftMethodFrame(0, Connection.Tune(channel_max=70000)))
    assert info.value.field == "channel_max"
    with pytest.raises(AMQPEncodeError) as info:
        draft.Queue.Declare(arguments={"x": object()}).encode()
    assert info.value.field == 'arguments["x"]'
    with pytest.raises(AMQPEncodeError) as info:
        DeliveryProperties(priority=256).encode()
    assert info.value.field == "priority"
    with pytest.raises(AMQPEncodeError):
        Execution.Result(command_id=1).encode()  # no struct to carry
    with pytest.raises(AMQPEncodeError):
        Execution.Complete(ranged_execution_set=((1, 2**32),)).encode()


# --------------------------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------------------------


def _roundtrip(frame: object) -> None:
    wire = encode_frame(frame)  # type: ignore[arg-type]
    (decoded,) = decode_all(wire)
    assert decoded == frame
    assert encode_frame(decoded) == wire  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", s10.ALL_METHODS, ids=lambda c: c.NAME)
@settings(max_examples=s10.examples(15), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_method_roundtrip(cls: type, data: st.DataObject) -> None:
    method = data.draw(s10.methods(cls))
    channel = (
        0 if cls.CLASS_ID == draft.SPEC.connection_class_id else data.draw(st.integers(1, 0xFFFF))
    )
    _roundtrip(DraftMethodFrame(channel, method, track=data.draw(st.integers(0, 15))))


@pytest.mark.parametrize("cls", s10.ALL_STRUCTS, ids=lambda c: c.NAME)
@settings(max_examples=s10.examples(25), suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_struct_roundtrip(cls: type, data: st.DataObject) -> None:
    value = data.draw(s10.structs(cls))
    wire = value.encode()
    assert cls.decode(wire, 0, len(wire), 32) == (value, len(wire))
    body = value.encode_body()
    assert cls.decode_body(body, 0, len(body), 32) == (value, len(body))
    if cls.TYPE_CODE is not None and cls.SIZE_WIDTH == 4:
        long_struct = encode_long_struct(value)
        assert decode_long_struct(long_struct, 0, len(long_struct), 32) == (value, len(long_struct))


@settings(max_examples=s10.examples(100))
@given(
    delivery=s10.structs(DeliveryProperties),
    properties=s10.structs(MessageProperties),
    body=st.binary(max_size=300),
    frame_max=st.integers(13, 200),
)
def test_message_roundtrip(
    delivery: DeliveryProperties, properties: MessageProperties, body: bytes, frame_max: int
) -> None:
    transfer = Message.Transfer(destination="d")
    wire = encode_draft_message(7, transfer, [delivery, properties], body, frame_max=frame_max)
    frames = decode_all(wire)
    assert frames[0] == DraftMethodFrame(7, transfer)
    assert frames[1] == DraftHeaderFrame(7, (delivery, properties), frames[1].flags)  # type: ignore[attr-defined]
    assert b"".join(f.payload for f in frames[2:]) == body  # type: ignore[attr-defined]
    assert (frames[-1].flags & 0x05) == 0x05  # type: ignore[attr-defined]
    assert b"".join(encode_frame(f) for f in frames) == wire  # type: ignore[arg-type]


@settings(max_examples=s10.examples(200))
@given(table=s10.tables())
def test_table_roundtrip(table: FieldTable) -> None:
    wire = encode_table(table)
    decoded, end = decode_table(wire, 0, len(wire))
    assert end == len(wire)
    assert decoded == table
    assert encode_table(decoded) == wire


@settings(max_examples=s10.examples(100))
@given(table=s10.plain_tables())
def test_plain_table_roundtrip(table: dict[str, object]) -> None:
    wire = encode_table(table)
    decoded, _ = decode_table(wire, 0, len(wire))
    assert encode_table(decoded) == wire
    assert decoded.keys() == table.keys()


# --------------------------------------------------------------------------------------------
# Hostile bytes: only AMQPDecodeError
# --------------------------------------------------------------------------------------------


def _only_decode_errors(data: bytes, chunk: int = 0) -> None:
    with contextlib.suppress(AMQPDecodeError):
        decode_all(data, spec=None, chunk=chunk or None)


@settings(max_examples=s10.examples(400))
@given(
    cut=st.integers(0, len(SESSION)),
    flips=st.lists(st.tuples(st.integers(0, len(SESSION) - 1), st.integers(1, 255)), max_size=4),
    chunk=st.integers(0, 9),
)
def test_mutated_session_only_raises_decode_errors(
    cut: int, flips: list[tuple[int, int]], chunk: int
) -> None:
    data = bytearray(SESSION[:cut] if cut > 8 else SESSION)
    for index, xor in flips:
        if index < len(data):
            data[index] ^= xor
    _only_decode_errors(bytes(data), chunk)


@settings(max_examples=s10.examples(400))
@given(payload=st.binary(max_size=200), flags=st.integers(0, 0x0F), frame_type=st.integers(0, 9))
def test_random_payloads_only_raise_decode_errors(
    payload: bytes, flags: int, frame_type: int
) -> None:
    header = bytes((flags, frame_type)) + (12 + len(payload)).to_bytes(2, "big")
    frame = header + b"\x00\x00\x00\x01\x00\x00\x00\x00" + payload + b"\xce"
    _only_decode_errors(PROTOCOL_HEADER + frame)


@settings(max_examples=s10.examples(400))
@given(data=st.binary(max_size=120), depth=st.integers(0, 4))
def test_value_decoders_only_raise_decode_errors(data: bytes, depth: int) -> None:
    for decode in (decode_table, decode_array, decode_long_struct, decode_rfc1982_long_set):
        try:
            _value, end = decode(data, 0, len(data), depth)
        except AMQPDecodeError:
            continue
        assert 0 <= end <= len(data)
