"""Edges users hit: datetimes with microseconds, long bodies in reprs, reply-code exceptions."""

from __future__ import annotations

import datetime as dt

import pytest

from amqp_codec import NEED_DATA, ContentBodyFrame, FrameDecoder, Message, encode_frame, v0_8
from amqp_codec.errors import (
    REPLY_ERRORS,
    AccessRefused,
    NotFound,
    PreconditionFailed,
    ReplyError,
    reply_error,
)
from amqp_codec.events import ChannelClosed, ConnectionClosed, MessageReceived
from amqp_codec.table import Timestamp
from amqp_codec.v0_9_1 import Basic, BasicProperties


@pytest.mark.parametrize("props_cls", [BasicProperties, v0_8.BasicProperties])
def test_a_datetime_timestamp_property_drops_the_fraction(props_cls) -> None:
    when = dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=dt.UTC)
    props = props_cls(timestamp=when)
    assert props.timestamp == Timestamp(1_700_000_000)
    assert props.encode() == props_cls(timestamp=1_700_000_000).encode()


def test_datetime_now_in_headers_and_timestamp_encodes() -> None:
    now = dt.datetime.now(dt.UTC)
    props = BasicProperties(timestamp=now, headers={"sent": now})
    whole = now.replace(microsecond=0)
    expected = BasicProperties(timestamp=Timestamp.from_datetime(whole), headers={"sent": whole})
    assert props.encode() == expected.encode()


def test_reprs_show_the_first_bytes_of_a_long_body() -> None:
    body = b"x" * 100_000
    for value in (
        ContentBodyFrame(1, body),
        Message(1, Basic.Publish(), BasicProperties(), body),
        MessageReceived(1, Basic.Publish(), BasicProperties(), body),
    ):
        text = repr(value)
        assert len(text) < 1000 and "<100000 bytes>" in text
    assert repr(ContentBodyFrame(1, b"short")) == "ContentBodyFrame(channel=1, payload=b'short')"
    decoder = FrameDecoder()
    decoder.receive_data(b"AMQP\x00\x00\x09\x01" + encode_frame(ContentBodyFrame(1, body)))
    decoder.next_frame()
    frame = decoder.next_frame()
    assert frame is not NEED_DATA and frame == ContentBodyFrame(1, body)


def test_an_exception_class_per_reply_code() -> None:
    assert isinstance(ChannelClosed(1, 404, "NOT_FOUND - x", True).exception(), NotFound)
    assert isinstance(ConnectionClosed(403, "ACCESS_REFUSED", True).exception(), AccessRefused)
    error = reply_error(406, "PRECONDITION_FAILED - y", 50, 10)
    assert isinstance(error, PreconditionFailed) and isinstance(error, ReplyError)
    assert (error.reply_code, error.class_id, error.method_id, error.soft) == (406, 50, 10, True)
    assert type(reply_error(599)) is ReplyError
    assert sorted(REPLY_ERRORS) == sorted({*REPLY_ERRORS})  # one class per code
    assert not REPLY_ERRORS[501].soft
    with pytest.raises(NotFound):
        raise ChannelClosed(1, 404, "NOT_FOUND - x", True).exception()


def test_field_table_to_dict_is_json() -> None:
    import json
    from decimal import Decimal

    from amqp_codec import FieldTable, Tagged
    from amqp_codec.table import decode_table, encode_table

    raw = encode_table(
        {
            "bytes": b"\x00ab\xff",
            "decimal": Decimal("3.14"),
            "when": Timestamp(1_700_000_000),
            "nested": {"list": [b"x", Tagged("D", Decimal("-1.5"))]},
        }
    )
    table, _ = decode_table(raw, 0, len(raw))
    plain = table.to_dict()
    assert json.loads(json.dumps(plain)) == {
        "bytes": "\x00ab\\xff",
        "decimal": "3.14",
        "when": 1_700_000_000,
        "nested": {"list": ["x", "-1.5"]},
    }
    assert isinstance(table, FieldTable)  # the table itself keeps its values
    assert table["bytes"] == b"\x00ab\xff"
