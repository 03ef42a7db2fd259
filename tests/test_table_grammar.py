"""Field tables across versions: encoding plain values within 0-8's grammar, strict decoding,
and the sign of decimals as each kind of peer writes it."""

from __future__ import annotations

import struct
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples

from amqp_codec import (
    AMQPEncodeError,
    ContentHeaderFrame,
    FieldArray,
    FieldTable,
    FrameDecoder,
    FrameSyntaxError,
    Tagged,
    Timestamp,
    decode_method,
    encode_message,
    v0_8,
    v0_9_1,
)
from amqp_codec.table import (
    DECIMAL_READINGS,
    decode_table,
    encode_table,
    reread_decimal,
    table_encoder,
)

HEADER_0_8 = b"AMQP\x01\x01\x08\x00"


def entry(key: str, tag: str, value_bytes: bytes) -> bytes:
    raw = key.encode()
    return bytes([len(raw)]) + raw + tag.encode() + value_bytes


def table(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack(">I", len(body)) + body


def long_string(text: bytes) -> bytes:
    return struct.pack(">I", len(text)) + text


def decode(raw: bytes) -> FieldTable:
    result, end = decode_table(raw, 0, len(raw))
    assert end == len(raw)
    return result


def declare_arguments_0_8(arguments: object) -> bytes:
    """The arguments table as a 0-8 exchange.declare writes it."""
    payload = v0_8.Exchange.Declare(exchange="x", arguments=arguments).encode()  # type: ignore[arg-type]
    # class, method, ticket, exchange "x", type "direct", the bits octet, then the table.
    return payload[4 + 2 + 2 + 7 + 1 :]


# --------------------------------------------------------------------------------------------
# Encoding plain values for 0-8: within S I D T F where they fit
# --------------------------------------------------------------------------------------------


def test_plain_values_are_written_with_0_8_tags():
    arguments = {
        "s": "naïve",
        "i": -7,
        "d": Decimal("1.25"),
        "t": Timestamp(1_700_000_000),
        "f": {"inner": 2**31 - 1, "deeper": {"b": b"\x00\xff"}},
        "x": b"\x00\xff",  # 0-8's long string carries any octets: S, not 0-9-1's x
    }
    expected = table(
        entry("s", "S", long_string("naïve".encode())),
        entry("i", "I", struct.pack(">i", -7)),
        entry("d", "D", b"\x02" + struct.pack(">i", 125)),
        entry("t", "T", struct.pack(">Q", 1_700_000_000)),
        entry(
            "f",
            "F",
            table(
                entry("inner", "I", struct.pack(">i", 2**31 - 1)),
                entry("deeper", "F", table(entry("b", "S", long_string(b"\x00\xff")))),
            ),
        ),
        entry("x", "S", long_string(b"\x00\xff")),
    )
    assert declare_arguments_0_8(arguments) == expected
    # 0-9-1 keeps RabbitMQ's mapping: bytes are x there.
    assert encode_table({"x": b"\x00\xff"}) == table(entry("x", "x", long_string(b"\x00\xff")))


@pytest.mark.parametrize(
    ("value", "tag", "what"),
    [
        (True, "t", "a bool"),
        (1.5, "d", "a float"),
        (None, "V", "None"),
        ([1, 2], "A", "a list"),
        (2**40, "l", "int 1099511627776"),
    ],
)
def test_values_without_a_0_8_tag_raise_with_the_way_out(value, tag, what):
    with pytest.raises(AMQPEncodeError) as info:
        v0_8.Queue.Declare(queue="q", arguments={"ok": 1, "nested": {"bad": value}}).encode()
    error = info.value
    assert error.field == 'arguments["nested"]["bad"]'
    assert error.reason.startswith(what)
    assert "AMQP 0-8 (tags D F I S T)" in error.reason
    assert f"Tagged('{tag}'" in error.reason  # the 0-9-1 tag, which RabbitMQ accepts
    # The same value is fine in 0-9-1, and in 0-8 when its tag is asked for.
    v0_9_1.Queue.Declare(queue="q", arguments={"nested": {"bad": value}}).encode()
    forced = v0_8.Queue.Declare(queue="q", arguments={"nested": {"bad": Tagged(tag, value)}})
    assert decode_method(forced.encode(), v0_8).arguments["nested"]["bad"] == value


def test_headers_of_0_8_properties_stay_within_the_grammar():
    publish = v0_8.Basic.Publish(routing_key="q")
    with pytest.raises(AMQPEncodeError) as info:
        encode_message(1, publish, v0_8.BasicProperties(headers={"a": [{"b": 1}]}), b"")
    assert info.value.field == 'headers["a"]'
    wire = encode_message(1, publish, v0_8.BasicProperties(headers={"b": b"\x01"}), b"")
    decoder = FrameDecoder(v0_8, strict_tags=True)
    decoder.receive_data(wire)
    header = next(f for f in decoder if isinstance(f, ContentHeaderFrame))
    assert header.properties.headers.tag("b") == "S"


def test_tables_and_arrays_keep_their_tags_in_0_8():
    """A decoded table re-encodes byte for byte whatever version it is written in; a
    FieldTable built from plain values holds RabbitMQ's tags and keeps them too."""
    raw = table(
        entry("t", "t", b"\x01"),
        entry("a", "A", struct.pack(">I", 3) + b"b\xfeV"),
        entry("x", "x", long_string(b"\x00")),
        entry("n", "F", table(entry("l", "l", struct.pack(">q", -1)))),
    )
    decoded = decode(raw)
    assert declare_arguments_0_8(decoded) == raw
    built = FieldTable({"flag": True})
    assert declare_arguments_0_8(built) == table(entry("flag", "t", b"\x01"))
    array = FieldArray([Tagged("b", -2)])
    assert declare_arguments_0_8({"a": array}) == table(entry("a", "A", b"\x00\x00\x00\x02b\xfe"))


def test_table_encoder_without_tags_is_encode_table():
    assert table_encoder(None) is encode_table
    encode_0_8 = table_encoder("SIDTF", "AMQP 0-8")
    assert encode_0_8(None) == encode_0_8({}) == b"\x00\x00\x00\x00"
    with pytest.raises(AMQPEncodeError) as info:
        encode_0_8([("k", 1)], "arguments")  # type: ignore[arg-type]
    assert info.value.field == "arguments"
    with pytest.raises(AMQPEncodeError, match="keys are str"):
        encode_0_8({1: "v"})  # type: ignore[dict-item]


@settings(max_examples=examples(100))
@given(
    st.recursive(
        st.one_of(
            st.text(max_size=8),
            st.integers(-(2**31), 2**31 - 1),
            st.binary(max_size=8),
            st.builds(Timestamp, st.integers(0, 2**64 - 1)),
            st.decimals(allow_nan=False, allow_infinity=False, places=3).filter(
                lambda d: abs(d) < 10**6
            ),
        ),
        lambda inner: st.dictionaries(st.text(max_size=5), inner, max_size=4),
        max_leaves=12,
    ).filter(lambda value: isinstance(value, dict))
)
def test_plain_0_8_tables_decode_strictly(arguments):
    """Whatever plain values fit 0-8 decode in strict 0-8 mode, with their values."""
    payload = v0_8.Exchange.Declare(exchange="x", arguments=arguments).encode()
    decoded = decode_method(payload, v0_8, strict_tags=True).arguments

    def plain(value: object) -> object:
        # What FieldTable.to_dict() gives, which json.dumps takes: text for an S value
        # (bytes that are not UTF-8 as \\x escapes), a decimal's exact string.
        if isinstance(value, bytes):
            return value.decode("utf-8", "backslashreplace")
        if isinstance(value, Decimal):
            return str(value)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    assert decoded.to_dict() == plain(arguments)


# --------------------------------------------------------------------------------------------
# Strict decoding names the path, the tag and the version
# --------------------------------------------------------------------------------------------


def test_strict_mode_names_path_tag_and_version_in_a_content_header():
    headers = FieldTable([("ok", "s"), ("x-death", FieldArray([FieldTable({"count": 2**40})]))])
    deliver = v0_8.Basic.Deliver(consumer_tag="c", delivery_tag=1, routing_key="q")
    wire = HEADER_0_8 + encode_message(3, deliver, v0_8.BasicProperties(headers=headers), b"")
    lenient = FrameDecoder()
    lenient.receive_data(wire)
    assert (
        next(f for f in lenient if isinstance(f, ContentHeaderFrame)).properties.headers == headers
    )
    strict = FrameDecoder(strict_tags=True)
    strict.receive_data(wire)
    with pytest.raises(FrameSyntaxError) as info:
        list(strict)
    error = info.value
    assert error.field == 'headers["x-death"]'
    assert (error.reply_code, error.channel, error.class_id) == (502, 3, 60)
    assert "'A'" in error.reason and "AMQP 0-8" in error.reason


def test_strict_and_its_former_name_must_agree():
    with pytest.raises(ValueError, match="contradicts"):
        FrameDecoder(strict_tags=True, accept_extended_tags=True)
    assert FrameDecoder(accept_extended_tags=False).strict_tags is True
    assert FrameDecoder().strict_tags is False


# --------------------------------------------------------------------------------------------
# Decimals: the 32 bits are read as two's complement; other readings on request
# --------------------------------------------------------------------------------------------


def decimal_table(scale: int, digits: bytes) -> bytes:
    return table(entry("d", "D", bytes([scale]) + digits))


# (scale, the 32 bits, what a two's-complement reader sees, sign-magnitude, unsigned)
DECIMAL_VECTORS = [
    # -0.001 from the Java client, pamqp, py-amqp (two's complement)
    (3, "ffffffff", "-0.001", "-2147483.647", "4294967.295"),
    # -0.001 from the .NET client (sign and magnitude)
    (3, "80000001", "-2147483.647", "-0.001", "2147483.649"),
    # -0 in sign and magnitude
    (3, "80000000", "-2147483.648", "-0.000", "2147483.648"),
    # the largest value of the grammar's long-uint
    (0, "ffffffff", "-1", "-2147483647", "4294967295"),
    # every reading agrees below 2**31
    (2, "00000315", "7.89", "7.89", "7.89"),
]


@pytest.mark.parametrize(("scale", "bits", "twos", "sign_magnitude", "unsigned"), DECIMAL_VECTORS)
def test_decimal_readings(scale, bits, twos, sign_magnitude, unsigned):
    raw = decimal_table(scale, bytes.fromhex(bits))
    value = decode(raw)["d"]
    assert value == Decimal(twos) and str(value) == twos  # the scale is kept, too
    assert encode_table(decode(raw)) == raw  # byte for byte
    readings = {reading: reread_decimal(value, reading) for reading in DECIMAL_READINGS}
    assert {k: str(v) for k, v in readings.items()} == {
        "twos-complement": twos,
        "sign-magnitude": sign_magnitude,
        "unsigned": unsigned,
    }


def test_decimals_agree_with_python_peers():
    """pamqp and py-amqp read and write two's complement, as the codec does."""
    pamqp_decode = pytest.importorskip("pamqp.decode")
    pamqp_encode = pytest.importorskip("pamqp.encode")
    amqp_serialization = pytest.importorskip("amqp.serialization")
    for scale, bits, twos, _sm, _unsigned in DECIMAL_VECTORS:
        digits = bytes([scale]) + bytes.fromhex(bits)
        assert pamqp_decode.decimal(digits)[1] == Decimal(twos)
        raw = decimal_table(scale, bytes.fromhex(bits))
        assert amqp_serialization.loads("F", raw, 0)[0][0]["d"] == Decimal(twos)
        assert pamqp_encode.decimal(Decimal(twos)) == digits
        assert encode_table({"d": Decimal(twos)}) == raw


def test_reread_decimal_refuses_an_unknown_reading_and_a_value_that_does_not_fit():
    with pytest.raises(ValueError, match="reading must be one of"):
        reread_decimal(Decimal(1), "ones-complement")
    with pytest.raises(AMQPEncodeError):
        reread_decimal(Decimal(2**31), "unsigned")


@settings(max_examples=examples(200))
@given(scale=st.integers(0, 255), bits=st.binary(min_size=4, max_size=4))
def test_every_decimal_bit_pattern_round_trips(scale, bits):
    raw = decimal_table(scale, bits)
    value = decode(raw)["d"]
    assert encode_table(decode(raw)) == raw
    assert reread_decimal(value, "twos-complement") == value
    unsigned = int.from_bytes(bits, "big")
    assert reread_decimal(value, "unsigned") == Decimal(unsigned).scaleb(-scale)
    magnitude = Decimal(unsigned & 0x7FFFFFFF).scaleb(-scale)
    expected = -magnitude if unsigned >> 31 else magnitude
    assert reread_decimal(value, "sign-magnitude") == expected


@settings(max_examples=examples(200))
@given(
    st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(),
            st.text(max_size=4),
            st.binary(max_size=4),
            st.decimals(),
            st.datetimes(),
            st.builds(object),
        ),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.one_of(st.text(max_size=3), st.integers()), inner, max_size=3)
        ),
        max_leaves=10,
    )
)
def test_0_8_encoder_raises_only_encode_errors(value):
    encode_0_8 = table_encoder("SIDTF", "AMQP 0-8")
    for table_value in (value, {"k": value}):
        try:
            raw = encode_0_8(table_value, "arguments")
        except AMQPEncodeError as exc:
            assert exc.field is not None and exc.field.startswith("arguments")
        else:  # what was written decodes, within 0-8's grammar
            decoded = decode(raw)
            decode_method(v0_8.Exchange.Declare(arguments=decoded).encode(), v0_8, strict_tags=True)
