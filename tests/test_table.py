"""Field tables: decoding of every tag, plain-value encoding rules, Tagged, FieldTable."""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

import pytest
from strategies import ALL_TAGS, TAG_TYPES

from amqp_codec import (
    AMQPDecodeError,
    AMQPEncodeError,
    FieldArray,
    FieldTable,
    FrameSyntaxError,
    LimitExceededError,
    Tagged,
    Timestamp,
)
from amqp_codec.table import decode_table, encode_table

UTC = dt.UTC


def entry(key: str, tag: str, value_bytes: bytes) -> bytes:
    raw = key.encode()
    return bytes([len(raw)]) + raw + tag.encode() + value_bytes


def table(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack(">I", len(body)) + body


def decode(raw: bytes) -> FieldTable:
    result, end = decode_table(raw, 0, len(raw))
    assert end == len(raw)
    return result


def enc1(value) -> bytes:
    """Encode {"k": value} and return the bytes after the key (tag + value)."""
    raw = encode_table({"k": value})
    assert raw[4:6] == b"\x01k"
    assert struct.unpack(">I", raw[:4])[0] == len(raw) - 4
    return raw[6:]


# --------------------------------------------------------------------------------------------
# Decoding: each tag's value and Python type
# --------------------------------------------------------------------------------------------

DECODE_CASES = [
    ("t", b"\x01", True),
    ("t", b"\x00", False),
    ("b", b"\xff", -1),
    ("b", b"\x80", -128),
    ("B", b"\xff", 255),
    ("U", b"\xff\xfe", -2),
    ("u", b"\xff\xfe", 65534),
    ("s", b"\x80\x00", -32768),
    ("I", b"\xff\xff\xff\xfe", -2),
    ("i", b"\xff\xff\xff\xfe", 4294967294),
    ("L", b"\xff\xff\xff\xff\xff\xff\xff\xfe", -2),
    ("l", b"\x80\x00\x00\x00\x00\x00\x00\x00", -(2**63)),
    ("l", b"\x7f\xff\xff\xff\xff\xff\xff\xff", 2**63 - 1),
    ("f", b"\x3f\xc0\x00\x00", 1.5),
    ("d", b"\xc0\x02\x00\x00\x00\x00\x00\x00", -2.25),
    ("D", b"\x02\xff\xff\xff\x85", Decimal("-1.23")),
    ("D", b"\x00\x00\x00\x00\x07", Decimal(7)),
    ("S", b"\x00\x00\x00\x06h\xc3\xa9llo", "héllo"),
    ("S", b"\x00\x00\x00\x00", ""),
    ("x", b"\x00\x00\x00\x03\x00\xffa", b"\x00\xffa"),
    ("T", b"\x00\x00\x00\x00\x65\x53\xf1\x00", Timestamp(1_700_000_000)),
    ("T", b"\xff" * 8, Timestamp(2**64 - 1)),
    ("V", b"", None),
]


@pytest.mark.parametrize("tag, value_bytes, expected", DECODE_CASES)
def test_decode_each_tag(tag, value_bytes, expected):
    raw = table(entry("k", tag, value_bytes))
    result = decode(raw)
    value = result["k"]
    assert value == expected
    assert type(value) is TAG_TYPES[tag]
    assert result.tag("k") == tag
    assert result.entries() == [("k", tag, expected)]
    assert encode_table(result) == raw


def test_decode_decimal_scale():
    result = decode(table(entry("k", "D", b"\x03\x00\x00\x04\xd2")))  # 1234 scale 3
    value = result["k"]
    assert value == Decimal("1.234")
    assert value.as_tuple().exponent == -3


def test_decode_invalid_utf8_long_string_gives_bytes_and_keeps_tag():
    raw = table(entry("k", "S", b"\x00\x00\x00\x02\xff\xfe"))
    result = decode(raw)
    assert result["k"] == b"\xff\xfe"
    assert type(result["k"]) is bytes
    assert result.tag("k") == "S"
    assert encode_table(result) == raw


def test_decode_nested_array_and_table():
    inner = table(entry("n", "b", b"\x05"))
    array_body = b"I\x00\x00\x00\x01" + b"S\x00\x00\x00\x01z" + b"F" + inner + b"V"
    raw = table(
        entry("arr", "A", struct.pack(">I", len(array_body)) + array_body),
        entry("tbl", "F", inner),
    )
    result = decode(raw)
    arr = result["arr"]
    assert type(arr) is FieldArray
    assert list(arr) == [1, "z", {"n": 5}, None]
    assert arr.tags == ("I", "S", "F", "V")
    assert type(arr[2]) is FieldTable
    assert arr[2].tag("n") == "b"
    assert type(result["tbl"]) is FieldTable
    assert result["tbl"] == {"n": 5}
    assert encode_table(result) == raw


def test_decode_key_that_is_not_utf8_roundtrips():
    raw = b"\x00\x00\x00\x04" + b"\x02\xff\xfeV"
    result = decode(raw)
    (key,) = list(result)
    assert key.encode("utf-8", "surrogateescape") == b"\xff\xfe"
    assert encode_table(result) == raw


def test_decode_empty_table():
    result = decode(b"\x00\x00\x00\x00")
    assert len(result) == 0
    assert result.entries() == []


@pytest.mark.parametrize(
    "raw, field",
    [
        (table(entry("k", "Z", b"")), '["k"]'),  # unknown tag
        (table(entry("k", "I", b"\x00\x00")), '["k"]'),  # value cut off
        (table(entry("k", "S", b"\x00\x00\x00\x09abc")), '["k"]'),  # string runs past table
        (
            table(entry("o", "F", table(entry("i", "A", b"\x00\x00\x00\x01Z")))),
            '["o"]["i"][0]',
        ),
    ],
)
def test_decode_errors_name_the_path(raw, field):
    with pytest.raises(FrameSyntaxError) as info:
        decode_table(raw, 0, len(raw))
    assert info.value.reply_code == 502
    assert info.value.field == field


def test_decode_table_size_past_end():
    raw = b"\x00\x00\x00\x10" + b"\x01kV"
    with pytest.raises(AMQPDecodeError) as info:
        decode_table(raw, 0, len(raw))
    assert info.value.reply_code == 502


def test_decode_never_reads_past_end():
    raw = table(entry("k", "V", b""))
    # end cuts the table short: it must not read the remaining bytes of the buffer.
    with pytest.raises(AMQPDecodeError):
        decode_table(raw, 0, len(raw) - 1)


def test_decode_depth_limit():
    level = table(entry("leaf", "V", b""))
    for _ in range(3):
        level = table(entry("n", "F", level))
    # three nested tables below the top-level one
    assert decode_table(level, 0, len(level), 3)[1] == len(level)
    with pytest.raises(LimitExceededError) as info:
        decode_table(level, 0, len(level), 2)
    assert info.value.reply_code == 502


# --------------------------------------------------------------------------------------------
# Timestamps
# --------------------------------------------------------------------------------------------


def test_timestamp_in_milliseconds_decodes():
    millis = 1_700_000_000_123  # as seconds this is far past year 9999
    result = decode(table(entry("ts", "T", struct.pack(">Q", millis))))
    value = result["ts"]
    assert type(value) is Timestamp
    assert value == millis
    assert value.to_datetime(milliseconds=True) == dt.datetime(
        2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC
    )
    with pytest.raises(OverflowError):
        value.to_datetime()


def test_timestamp_to_datetime_seconds():
    assert Timestamp(1_700_000_000).to_datetime() == dt.datetime(
        2023, 11, 14, 22, 13, 20, tzinfo=UTC
    )
    assert Timestamp(0).to_datetime() == dt.datetime(1970, 1, 1, tzinfo=UTC)
    assert isinstance(Timestamp(5), int)


def test_timestamp_from_datetime():
    assert Timestamp.from_datetime(dt.datetime(2023, 11, 14, 22, 13, 20)) == 1_700_000_000
    aware = dt.datetime(2023, 11, 15, 0, 13, 20, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert Timestamp.from_datetime(aware) == 1_700_000_000
    # The fraction of a second is dropped, as AMQP clients do.
    assert Timestamp.from_datetime(dt.datetime(2023, 11, 14, 22, 13, 20, 999_999)) == 1_700_000_000


# --------------------------------------------------------------------------------------------
# Plain-value encoding rules
# --------------------------------------------------------------------------------------------

PLAIN_CASES = [
    (True, b"t\x01"),
    (False, b"t\x00"),
    (0, b"I\x00\x00\x00\x00"),
    (-1, b"I\xff\xff\xff\xff"),
    (2**31 - 1, b"I\x7f\xff\xff\xff"),
    (-(2**31), b"I\x80\x00\x00\x00"),
    (2**31, b"l\x00\x00\x00\x00\x80\x00\x00\x00"),
    (-(2**31) - 1, b"l\xff\xff\xff\xff\x7f\xff\xff\xff"),
    (2**63 - 1, b"l\x7f\xff\xff\xff\xff\xff\xff\xff"),
    (-(2**63), b"l\x80\x00\x00\x00\x00\x00\x00\x00"),
    (1.5, b"d\x3f\xf8\x00\x00\x00\x00\x00\x00"),
    (0.1, b"d" + struct.pack(">d", 0.1)),  # never f: no precision lost
    (Decimal("1.23"), b"D\x02\x00\x00\x00\x7b"),
    (Decimal("-1.5"), b"D\x01\xff\xff\xff\xf1"),
    (Decimal("1E+2"), b"D\x00\x00\x00\x00\x64"),  # positive exponent: 100, scale 0
    (Decimal("0"), b"D\x00\x00\x00\x00\x00"),
    (Decimal("2147483647"), b"D\x00\x7f\xff\xff\xff"),
    (Decimal("-2147483648"), b"D\x00\x80\x00\x00\x00"),
    (Decimal("1E-255"), b"D\xff\x00\x00\x00\x01"),
    ("héllo", b"S\x00\x00\x00\x06h\xc3\xa9llo"),
    ("", b"S\x00\x00\x00\x00"),
    (b"\x00\xff", b"x\x00\x00\x00\x02\x00\xff"),
    (bytearray(b"ab"), b"x\x00\x00\x00\x02ab"),
    (dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC), b"T\x00\x00\x00\x00\x65\x53\xf1\x00"),
    (dt.datetime(2023, 11, 14, 22, 13, 20), b"T\x00\x00\x00\x00\x65\x53\xf1\x00"),  # naive=UTC
    (Timestamp(2**64 - 1), b"T" + b"\xff" * 8),
    (None, b"V"),
    ([1, "a"], b"A\x00\x00\x00\x0bI\x00\x00\x00\x01S\x00\x00\x00\x01a"),
    ((True,), b"A\x00\x00\x00\x02t\x01"),
    ([], b"A\x00\x00\x00\x00"),
    ({"n": None}, b"F\x00\x00\x00\x03\x01nV"),
    ({}, b"F\x00\x00\x00\x00"),
]


@pytest.mark.parametrize("value, expected", PLAIN_CASES, ids=[repr(v) for v, _ in PLAIN_CASES])
def test_plain_value_encoding(value, expected):
    assert enc1(value) == expected


def test_plain_values_decode_back():
    raw = encode_table({"i": 5, "big": 2**40, "f": 0.1, "b": True, "s": "x", "y": b"y"})
    result = decode(raw)
    assert [(k, t) for k, t, _ in result.entries()] == [
        ("i", "I"),
        ("big", "l"),
        ("f", "d"),
        ("b", "t"),
        ("s", "S"),
        ("y", "x"),
    ]
    assert result["f"] == 0.1


def test_float_never_encodes_as_f():
    for value in (1.0, 1e300, -0.0, 3.4e39, float("inf")):
        assert enc1(value)[:1] == b"d"


def test_nan_roundtrips_as_bytes():
    raw = encode_table({"k": float("nan")})
    result = decode(raw)
    assert math.isnan(result["k"])
    assert encode_table(result) == raw


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**100])
def test_int_beyond_int64_is_an_error(value):
    with pytest.raises(AMQPEncodeError) as info:
        encode_table({"k": value})
    assert info.value.field == '["k"]'


@pytest.mark.parametrize(
    "value",
    [
        Decimal("1E-256"),  # scale past 255
        Decimal("2147483648"),  # mantissa past int32
        Decimal("-2147483649"),
        Decimal("1E+10"),  # 10000000000 digits at scale 0
        Decimal("NaN"),
        Decimal("Infinity"),
        Decimal("-Infinity"),
    ],
)
def test_decimal_out_of_range(value):
    with pytest.raises(AMQPEncodeError) as info:
        encode_table({"d": value})
    assert info.value.field == '["d"]'


def test_datetime_with_microseconds_drops_them():
    with_fraction = encode_table({"when": dt.datetime(2023, 1, 1, 0, 0, 0, 500)})
    assert with_fraction == encode_table({"when": dt.datetime(2023, 1, 1)})


def test_datetime_before_epoch_is_an_error():
    with pytest.raises(AMQPEncodeError) as info:
        encode_table({"when": dt.datetime(1969, 12, 31, 23, 59, 59)})
    assert info.value.field == '["when"]'


@pytest.mark.parametrize("value", [object(), {1, 2}, 1j])
def test_value_without_encoding_is_an_error(value):
    with pytest.raises(AMQPEncodeError) as info:
        encode_table({"k": value})
    assert info.value.field == '["k"]'


def test_encode_none_and_empty_table():
    assert encode_table(None) == b"\x00\x00\x00\x00"
    assert encode_table({}) == b"\x00\x00\x00\x00"
    assert encode_table(FieldTable()) == b"\x00\x00\x00\x00"


# --------------------------------------------------------------------------------------------
# Tagged: forcing every tag
# --------------------------------------------------------------------------------------------

TAGGED_CASES = [
    ("t", True, b"\x01"),
    ("b", -2, b"\xfe"),
    ("B", 200, b"\xc8"),
    ("U", -2, b"\xff\xfe"),
    ("u", 65535, b"\xff\xff"),
    ("s", 300, b"\x01\x2c"),
    ("I", 7, b"\x00\x00\x00\x07"),
    ("i", 2**32 - 1, b"\xff\xff\xff\xff"),
    ("L", 7, b"\x00\x00\x00\x00\x00\x00\x00\x07"),
    ("l", 7, b"\x00\x00\x00\x00\x00\x00\x00\x07"),
    ("f", 1.5, b"\x3f\xc0\x00\x00"),
    ("d", 1.5, b"\x3f\xf8\x00\x00\x00\x00\x00\x00"),
    ("d", 3, b"\x40\x08\x00\x00\x00\x00\x00\x00"),  # an int exactly representable
    ("D", Decimal("0.5"), b"\x01\x00\x00\x00\x05"),
    ("S", "a", b"\x00\x00\x00\x01a"),
    ("S", b"\xff", b"\x00\x00\x00\x01\xff"),
    ("x", b"a", b"\x00\x00\x00\x01a"),
    ("A", [Tagged("b", 1)], b"\x00\x00\x00\x02b\x01"),
    ("T", 5, b"\x00\x00\x00\x00\x00\x00\x00\x05"),
    ("T", dt.datetime(1970, 1, 1, 0, 0, 9), b"\x00\x00\x00\x00\x00\x00\x00\x09"),
    ("F", {"a": Tagged("u", 1)}, b"\x00\x00\x00\x05\x01au\x00\x01"),
    ("V", None, b""),
]


@pytest.mark.parametrize("tag, value, expected", TAGGED_CASES)
def test_tagged_forces_tag(tag, value, expected):
    raw = encode_table({"k": Tagged(tag, value)})
    assert raw[6:] == tag.encode() + expected
    result = decode(raw)
    assert result.tag("k") == tag
    assert encode_table(result) == raw


def test_tagged_covers_every_tag():
    assert {tag for tag, _, _ in TAGGED_CASES} == set(ALL_TAGS)


TAGGED_ERRORS = [
    ("t", 2),
    ("t", "yes"),
    ("b", 128),
    ("b", -129),
    ("B", 256),
    ("B", -1),
    ("U", 32768),
    ("u", 65536),
    ("u", -1),
    ("s", -32769),
    ("I", 2**31),
    ("i", 2**32),
    ("i", -1),
    ("L", 2**63),
    ("l", -(2**63) - 1),
    ("T", 2**64),
    ("T", -1),
    ("b", 1.5),
    ("I", "1"),
    ("I", True),
    ("f", 1e300),
    ("f", "1.5"),
    ("d", "x"),
    ("d", 2**60 + 1),  # not exactly representable
    ("D", 1.5),
    ("D", Decimal("NaN")),
    ("S", 5),
    ("x", "str"),
    ("A", 5),
    ("A", "abc"),
    ("F", [1]),
    ("V", 0),
]


@pytest.mark.parametrize("tag, value", TAGGED_ERRORS)
def test_tagged_out_of_range_names_the_path(tag, value):
    with pytest.raises(AMQPEncodeError) as info:
        encode_table({"outer": {"inner": [1, Tagged(tag, value)]}})
    assert info.value.field == '["outer"]["inner"][1]'
    assert '["outer"]["inner"][1]' in str(info.value)


def test_unknown_tag_is_an_error():
    with pytest.raises(AMQPEncodeError):
        Tagged("z", 1)
    with pytest.raises(AMQPEncodeError):
        Tagged("", 1)


def test_nested_plain_value_error_path():
    with pytest.raises(AMQPEncodeError) as info:
        encode_table({"a": [{"b": 2**64}]})
    assert info.value.field == '["a"][0]["b"]'


# --------------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------------


def test_key_of_255_bytes_is_fine():
    key = "k" * 255
    raw = encode_table({key: None})
    assert raw == b"\x00\x00\x01\x01" + b"\xff" + key.encode() + b"V"
    assert decode(raw)[key] is None


@pytest.mark.parametrize("key", ["k" * 256, "é" * 128, "€" * 86])
def test_key_over_255_bytes_is_an_error(key):
    with pytest.raises(AMQPEncodeError):
        encode_table({key: 1})
    with pytest.raises(AMQPEncodeError):
        encode_table({"outer": {key: 1}})


def test_non_str_key_is_an_error():
    with pytest.raises(AMQPEncodeError):
        encode_table({1: "x"})
    with pytest.raises(AMQPEncodeError):
        FieldTable([(b"k", 1)])


# --------------------------------------------------------------------------------------------
# FieldTable / FieldArray behaviour
# --------------------------------------------------------------------------------------------


def test_fieldtable_duplicate_keys():
    ft = FieldTable([("a", 1), ("b", "x"), ("a", Tagged("l", 2)), ("a", 3)])
    assert ft["a"] == 1  # first wins
    assert ft.get("a") == 1
    assert ft.get_all("a") == [1, 2, 3]
    assert ft.get_all("missing") == []
    assert ft.tag("a") == "I"
    assert ft.tag("b") == "S"
    with pytest.raises(KeyError):
        ft.tag("missing")
    with pytest.raises(KeyError):
        ft["missing"]
    assert len(ft) == 2
    assert list(ft) == ["a", "b"]
    assert "a" in ft and "zz" not in ft
    assert ft.entries() == [("a", "I", 1), ("b", "S", "x"), ("a", "l", 2), ("a", "I", 3)]
    assert ft.to_dict() == {"a": 1, "b": "x"}
    raw = encode_table(ft)
    decoded = decode(raw)
    assert decoded.get_all("a") == [1, 2, 3]
    assert decoded["a"] == 1
    assert encode_table(decoded) == raw


def test_fieldtable_entries_is_a_copy():
    ft = FieldTable({"a": 1})
    ft.entries().append(("b", "I", 2))
    assert ft.entries() == [("a", "I", 1)]


def test_fieldtable_is_immutable_and_unhashable():
    ft = FieldTable({"a": 1})
    with pytest.raises(TypeError):
        ft["a"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        hash(ft)
    with pytest.raises(TypeError):
        hash(FieldArray([1]))


def test_fieldtable_to_dict_is_plain_and_nested():
    raw = encode_table({"a": {"b": [1, {"c": None}]}, "d": Tagged("b", 3)})
    result = decode(raw).to_dict()
    assert result == {"a": {"b": [1, {"c": None}]}, "d": 3}
    assert type(result) is dict
    assert type(result["a"]) is dict
    assert type(result["a"]["b"]) is list
    assert type(result["a"]["b"][1]) is dict


def test_fieldtable_equality_rules():
    plain = FieldTable({"a": 1, "b": "x"})
    # Against a FieldTable: entries, tags and order all count.
    assert plain == FieldTable([("a", 1), ("b", "x")])
    assert plain != FieldTable([("a", Tagged("l", 1)), ("b", "x")])
    assert plain != FieldTable([("b", "x"), ("a", 1)])
    assert plain != FieldTable([("a", 1), ("b", "x"), ("a", 2)])
    # Against a plain mapping: the values as Python sees them, order ignored.
    assert plain == {"a": 1, "b": "x"}
    assert plain == {"b": "x", "a": 1}
    assert FieldTable([("a", Tagged("l", 1)), ("b", "x")]) == {"a": 1, "b": "x"}
    assert plain != {"a": 1}
    assert plain != {"a": 2, "b": "x"}
    assert FieldTable([("a", 1), ("a", 2)]) == {"a": 1}
    assert (plain == 5) is False
    assert plain != [("a", 1), ("b", "x")]


def test_fieldarray_behaviour():
    arr = FieldArray([1, Tagged("b", 2), "x"])
    assert list(arr) == [1, 2, "x"]
    assert arr.tags == ("I", "b", "S")
    assert len(arr) == 3
    assert arr[1] == 2
    assert arr == [1, 2, "x"]
    assert arr == (1, 2, "x")
    assert arr == FieldArray([1, Tagged("b", 2), "x"])
    assert arr != FieldArray([1, 2, "x"])  # tags differ
    assert arr != [1, 2]


def test_fieldtable_with_nested_tagged_values_roundtrips():
    ft = FieldTable({"x-death": [FieldTable({"count": Tagged("l", 1), "reason": "expired"})]})
    raw = encode_table(ft)
    decoded = decode(raw)
    assert decoded["x-death"][0].tag("count") == "l"
    assert decoded == ft
    assert encode_table(decoded) == raw


@pytest.mark.parametrize(
    "tag, value_bytes",
    [
        ("f", b"\x7f\x80\x00\x01"),  # float32 signalling NaN
        ("f", b"\xff\xc0\x00\x00"),  # float32 negative quiet NaN
        ("f", b"\x7f\xc1\x23\x45"),  # float32 quiet NaN with payload
        ("d", b"\x7f\xf0\x00\x00\x00\x00\x00\x01"),  # float64 signalling NaN
        ("d", b"\xff\xf8\x00\x00\x00\x00\x00\x00"),
    ],
)
def test_nan_payloads_roundtrip_byte_for_byte(tag, value_bytes):
    raw = table(entry("k", tag, value_bytes))
    result = decode(raw)
    assert math.isnan(result["k"])
    assert encode_table(result) == raw


@pytest.mark.parametrize(
    "text", ["1" * 100_000, "1E+999999", "0." + "0" * 255 + "1", "-2147483649", "NaN", "-Infinity"]
)
def test_decimals_that_do_not_fit_raise_encode_errors(text: str) -> None:
    with pytest.raises(AMQPEncodeError, match="decimal"):
        encode_table({"d": Decimal(text)})


@pytest.mark.parametrize(
    ("text", "wire"),
    [
        ("0." + "0" * 254 + "1", b"\xff\x00\x00\x00\x01"),
        ("-0.50", b"\x02\xff\xff\xff\xce"),
        ("1E+2", b"\x00\x00\x00\x00\x64"),
        ("0E+5", b"\x00\x00\x00\x00\x00"),
        ("-2147483648", b"\x00\x80\x00\x00\x00"),
    ],
)
def test_decimal_edge_encodings(text: str, wire: bytes) -> None:
    assert encode_table({"d": Decimal(text)}) == b"\x00\x00\x00\x08\x01dD" + wire
