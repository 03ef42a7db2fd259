"""Error objects: close_for_error, messages, and AMQPEncodeError for bad outgoing values."""

from __future__ import annotations

from decimal import Decimal

import pytest
from strategies import PROTOCOL_HEADER, content_header_payload, longlong, raw_frame, shortstr

import amqp_codec as ac
from amqp_codec import (
    AMQPDecodeError,
    AMQPEncodeError,
    AMQPError,
    CommandInvalidError,
    ContentBodyFrame,
    ContentHeaderFrame,
    FrameDecoder,
    FrameError,
    FrameSyntaxError,
    HeartbeatFrame,
    LimitExceededError,
    MessageAssembler,
    MethodFrame,
    UnexpectedFrameError,
    UnsupportedProtocolError,
    close_for_error,
    decode_method,
    encode_frame,
)
from amqp_codec.v0_9_1 import METHODS, Basic, BasicProperties, Channel, Connection, Exchange

HB = raw_frame(8, 0, b"")


def error_from(stream: bytes, **kwargs) -> AMQPDecodeError:
    decoder = FrameDecoder(**kwargs)
    decoder.receive_data(stream)
    with pytest.raises(AMQPDecodeError) as info:
        list(decoder)
    return info.value


def check_close_frame(frame: MethodFrame) -> None:
    """The close method fits a short string and goes on the wire and back unchanged."""
    text = frame.method.reply_text
    assert len(text.encode("utf-8")) <= 255
    data = encode_frame(frame)
    decoder = FrameDecoder(ac.v0_9_1)
    decoder.receive_data(data)
    assert decoder.next_frame() == frame


# --------------------------------------------------------------------------------------------
# close_for_error
# --------------------------------------------------------------------------------------------


def test_hard_frame_error_closes_the_connection():
    error = error_from(PROTOCOL_HEADER + raw_frame(3, 1, b"abc", end=b"\x00"))
    frame = close_for_error(error)
    assert frame.channel == 0
    assert type(frame.method) is Connection.Close
    assert frame.method.reply_code == 501
    assert frame.method.reply_text.startswith("FRAME_ERROR")
    assert (frame.method.class_id, frame.method.method_id) == (0, 0)
    check_close_frame(frame)


def test_hard_command_invalid_names_the_method():
    error = error_from(PROTOCOL_HEADER + raw_frame(1, 0, Basic.Publish().encode()))
    frame = close_for_error(error)
    assert frame.channel == 0
    assert type(frame.method) is Connection.Close
    assert frame.method.reply_code == 503
    assert frame.method.reply_text.startswith("COMMAND_INVALID")
    assert (frame.method.class_id, frame.method.method_id) == (60, 40)
    check_close_frame(frame)


def test_hard_syntax_error_on_a_channel_still_closes_the_connection():
    payload = (60).to_bytes(2, "big") + (60).to_bytes(2, "big") + shortstr("c") + b"\x00"
    error = error_from(PROTOCOL_HEADER + raw_frame(1, 4, payload))
    assert error.channel == 4
    frame = close_for_error(error)
    assert frame.channel == 0
    assert type(frame.method) is Connection.Close
    assert frame.method.reply_code == 502
    assert frame.method.reply_text.startswith("SYNTAX_ERROR")
    assert (frame.method.class_id, frame.method.method_id) == (60, 60)
    check_close_frame(frame)


def test_unexpected_frame_from_the_assembler():
    assembler = MessageAssembler()
    with pytest.raises(UnexpectedFrameError) as info:
        assembler.feed(ContentBodyFrame(3, b"x"))
    frame = close_for_error(info.value)
    assert frame.channel == 0
    assert type(frame.method) is Connection.Close
    assert frame.method.reply_code == 505
    assert frame.method.reply_text.startswith("UNEXPECTED_FRAME")
    check_close_frame(frame)


def test_soft_error_closes_only_the_channel():
    header = raw_frame(2, 5, content_header_payload(60, 1000, b"\x00\x00"))
    error = error_from(PROTOCOL_HEADER + header, max_body_size=999)
    assert isinstance(error, LimitExceededError)
    assert error.reply_code == 406
    assert not error.hard
    frame = close_for_error(error)
    assert frame.channel == 5
    assert type(frame.method) is Channel.Close
    assert frame.method.reply_code == 406
    assert frame.method.reply_text.startswith("PRECONDITION_FAILED")
    assert frame.method.class_id == 60
    check_close_frame(frame)


def test_soft_error_from_the_assembler():
    assembler = MessageAssembler(max_body_size=1)
    assembler.feed(MethodFrame(6, Basic.Publish()))
    with pytest.raises(LimitExceededError) as info:
        assembler.feed(ContentHeaderFrame(6, 60, 2, BasicProperties()))
    frame = close_for_error(info.value)
    assert frame.channel == 6
    assert type(frame.method) is Channel.Close
    assert frame.method.reply_code == 406
    assert (frame.method.class_id, frame.method.method_id) == (60, 40)


@pytest.mark.parametrize("error_cls", [FrameError, FrameSyntaxError, CommandInvalidError])
def test_reply_text_is_cut_to_255_bytes_at_a_character_boundary(error_cls):
    error = error_cls("é" * 300 + "€" * 50, channel=2)
    frame = close_for_error(error)
    text = frame.method.reply_text
    assert len(text.encode("utf-8")) <= 255
    assert len(text.encode("utf-8")) >= 250  # cut, not dropped
    assert text.startswith(
        {501: "FRAME_ERROR", 502: "SYNTAX_ERROR", 503: "COMMAND_INVALID"}[error.reply_code]
    )
    assert "\ufffd" not in text
    check_close_frame(frame)


def test_reply_text_carries_the_reason():
    frame = close_for_error(FrameError("bad frame end octet", channel=0))
    assert "bad frame end octet" in frame.method.reply_text
    assert frame.method.reply_text.startswith("FRAME_ERROR")


def test_unsupported_protocol_is_not_answered_with_a_close():
    error = error_from(b"AMQP\x00\x01\x00\x00")
    assert isinstance(error, UnsupportedProtocolError)
    assert error.reply_code is None
    with pytest.raises(ValueError):
        close_for_error(error)


def test_hard_and_soft_reply_codes():
    assert FrameError("x").hard
    assert FrameSyntaxError("x").hard
    assert CommandInvalidError("x").hard
    assert UnexpectedFrameError("x").hard
    assert [cls("x").reply_code for cls in (FrameError, FrameSyntaxError)] == [501, 502]
    assert [cls("x").reply_code for cls in (CommandInvalidError, UnexpectedFrameError)] == [
        503,
        505,
    ]
    assert not AMQPDecodeError("x", reply_code=406).hard
    assert not AMQPDecodeError("x", reply_code=404).hard
    assert AMQPDecodeError("x", reply_code=504).hard
    for cls in (FrameError, FrameSyntaxError, CommandInvalidError, UnexpectedFrameError):
        assert issubclass(cls, AMQPDecodeError)
    assert issubclass(LimitExceededError, AMQPDecodeError)
    assert issubclass(UnsupportedProtocolError, AMQPDecodeError)
    assert issubclass(AMQPDecodeError, AMQPError)
    assert issubclass(AMQPEncodeError, AMQPError)
    assert issubclass(AMQPEncodeError, ValueError)


# --------------------------------------------------------------------------------------------
# Messages
# --------------------------------------------------------------------------------------------


def test_str_of_a_located_decode_error():
    payload = (60).to_bytes(2, "big") + (60).to_bytes(2, "big") + shortstr("ctag") + b"\x00\x01"
    error = error_from(PROTOCOL_HEADER + HB + raw_frame(1, 3, payload))
    assert error.field == "delivery_tag"
    assert error.offset == 16 + 7 + 4 + 5
    text = str(error)
    assert "delivery_tag" in text
    assert str(16 + 7 + 4 + 5) in text
    assert "502" in text
    assert "channel 3" in text
    assert "60.60" in text
    assert error.reason in text


def test_str_of_a_table_error_names_the_path():
    table = b"\x00\x00\x00\x07\x05x-bad" + b"Z"
    args = b"\x00\x00" + shortstr("e") + shortstr("direct") + b"\x00" + table
    payload = (40).to_bytes(2, "big") + (10).to_bytes(2, "big") + args
    with pytest.raises(FrameSyntaxError) as info:
        decode_method(payload)
    assert info.value.field == 'arguments["x-bad"]'
    assert 'arguments["x-bad"]' in str(info.value)
    assert "502" in str(info.value)


def test_str_of_unsupported_protocol_has_no_reply_code():
    error = error_from(b"AMQP\x00\x01\x00\x00")
    assert "reply code" not in str(error)
    assert "offset 0" in str(error)


def test_str_of_encode_error_names_the_field():
    with pytest.raises(AMQPEncodeError) as info:
        Basic.Qos(prefetch_count=70000).encode()
    assert info.value.field == "prefetch_count"
    assert "prefetch_count" in str(info.value)
    assert "70000" in str(info.value)


# --------------------------------------------------------------------------------------------
# AMQPEncodeError for bad values of every wire type
# --------------------------------------------------------------------------------------------

BAD_VALUES: dict[str, list[object]] = {
    "octet": [256, -1, 1.5, "1", None],
    "short": [65536, -1, 2.0, "1", None],
    "long": [2**32, -1, 1.5, "1", None],
    "longlong": [2**64, -1, 1.5, "1", None],
    "timestamp": [2**64, -1, 1.5, "1"],
    "shortstr": ["x" * 256, "é" * 128, "\ud800", 5, b"bytes", None],
    "longstr": ["str", 5, None, [1]],
    "table": [
        {"k": object()},
        {"k": 2**64},
        {"k" * 256: 1},
        {"k": [1, {"deep": 2**70}]},
        {"k": "\ud800"},
        {"\ud800": 1},
        {"k": Decimal("NaN")},
        5,
        [("k", 1)],
        "not a table",
    ],
}


def _method_cases():
    for cls in sorted(METHODS.values(), key=lambda c: c.INDEX):
        for spec in cls.FIELDS:
            if spec.reserved or spec.wire_type == "bit":
                continue
            for i, value in enumerate(BAD_VALUES[spec.wire_type]):
                yield pytest.param(cls, spec.attr, value, id=f"{cls.NAME}.{spec.attr}-{i}")


@pytest.mark.parametrize("cls, attr, value", list(_method_cases()))
def test_bad_method_value_raises_encode_error_naming_the_field(cls, attr, value):
    method = cls(**{attr: value})
    with pytest.raises(AMQPEncodeError) as info:
        method.encode()
    assert info.value.field is not None
    assert info.value.field == attr or info.value.field.startswith(attr + "[")
    assert attr in str(info.value)
    assert isinstance(info.value, ValueError)


def _property_cases():
    for spec in BasicProperties.FIELDS:
        for i, value in enumerate(BAD_VALUES[spec.wire_type]):
            if value is None:
                continue  # None is an absent property
            yield pytest.param(spec.attr, value, id=f"{spec.attr}-{i}")


@pytest.mark.parametrize("attr, value", list(_property_cases()))
def test_bad_property_value_raises_encode_error_naming_the_field(attr, value):
    props = BasicProperties(**{attr: value})
    with pytest.raises(AMQPEncodeError) as info:
        props.encode()
    assert info.value.field is not None
    assert info.value.field == attr or info.value.field.startswith(attr + "[")
    with pytest.raises(AMQPEncodeError):
        encode_frame(ContentHeaderFrame(1, 60, 0, props))
    with pytest.raises(AMQPEncodeError):
        ac.encode_message(1, Basic.Publish(), props, b"")


def test_every_wire_type_has_bad_values():
    wire_types = {spec.wire_type for cls in METHODS.values() for spec in cls.FIELDS}
    wire_types |= {spec.wire_type for spec in BasicProperties.FIELDS}
    assert wire_types - {"bit"} <= set(BAD_VALUES)


def test_specific_examples_from_the_issue():
    with pytest.raises(AMQPEncodeError) as info:
        Basic.Qos(prefetch_count=70000).encode()
    assert info.value.field == "prefetch_count"
    with pytest.raises(AMQPEncodeError) as info:
        Basic.Publish(exchange="e" * 256).encode()
    assert info.value.field == "exchange"
    with pytest.raises(AMQPEncodeError) as info:
        Basic.Publish(routing_key=b"rk").encode()
    assert info.value.field == "routing_key"
    with pytest.raises(AMQPEncodeError) as info:
        Exchange.Declare(arguments={"x-args": {"n": 2**64}}).encode()
    assert info.value.field == 'arguments["x-args"]["n"]'


def test_good_values_on_the_edges_encode():
    assert Basic.Qos(prefetch_size=2**32 - 1, prefetch_count=65535).encode()
    assert Basic.Publish(exchange="e" * 255).encode()
    assert Basic.Publish(exchange="é" * 127).encode()
    assert Basic.Ack(delivery_tag=2**64 - 1).encode()
    assert BasicProperties(timestamp=2**64 - 1, priority=255).encode()


@pytest.mark.parametrize(
    "frame",
    [
        HeartbeatFrame(65536),
        HeartbeatFrame(-1),
        ContentBodyFrame(70000, b"x"),
        MethodFrame(-1, Basic.Ack()),
        ContentHeaderFrame(1, 60, -1, BasicProperties()),
        ContentHeaderFrame(1, 60, 2**64, BasicProperties()),
        ContentHeaderFrame(1, 70000, 1, BasicProperties()),
        ac.ProtocolHeader(256, 0, 9, 1),
    ],
)
def test_bad_frame_values_raise_encode_error(frame):
    with pytest.raises(AMQPEncodeError):
        encode_frame(frame)


def test_encode_frame_rejects_non_frames():
    with pytest.raises(AMQPEncodeError):
        encode_frame("not a frame")  # type: ignore[arg-type]


def test_encode_message_bad_channel():
    with pytest.raises(AMQPEncodeError):
        ac.encode_message(70000, Basic.Publish(), BasicProperties(), b"x")


def test_longlong_decoded_values_fit():
    # A decoded method always re-encodes (no AMQPEncodeError for values that came in).
    payload = (60).to_bytes(2, "big") + (80).to_bytes(2, "big") + longlong(2**64 - 1) + b"\x01"
    assert decode_method(payload).encode() == payload
