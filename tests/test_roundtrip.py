"""Round trips generated from the model: every method class, properties and field tables."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    ALL_TAGS,
    TV,
    build_table,
    canon_decoded_table,
    canon_model_table,
    examples,
    method_payloads,
    methods,
    model_table_bytes,
    properties,
    property_payloads,
    table_models,
)

import amqp_codec as ac
from amqp_codec import (
    ContentHeaderFrame,
    FieldTable,
    FrameDecoder,
    Tagged,
    Timestamp,
    decode_method,
    encode_frame,
)
from amqp_codec.table import decode_table, encode_table
from amqp_codec.v0_9_1 import METHODS, BasicProperties

METHOD_CLASSES = sorted(METHODS.values(), key=lambda c: c.INDEX)
METHOD_IDS = [c.NAME for c in METHOD_CLASSES]


def _check_field(spec, decoded_value, expected):
    if spec.wire_type == "table":
        assert isinstance(decoded_value, FieldTable)
        assert canon_decoded_table(decoded_value) == canon_model_table(expected), spec.attr
    else:
        assert decoded_value == expected, spec.attr
        want = {
            "bit": bool,
            "octet": int,
            "short": int,
            "long": int,
            "longlong": int,
            "shortstr": str,
            "longstr": bytes,
            "timestamp": Timestamp,
        }[spec.wire_type]
        assert isinstance(decoded_value, want), spec.attr


# --------------------------------------------------------------------------------------------
# Methods
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", METHOD_CLASSES, ids=METHOD_IDS)
@settings(max_examples=examples(25))
@given(data=st.data())
def test_method_decode_encode_roundtrip(cls, data):
    method = data.draw(methods(cls))
    payload = method.encode()
    assert isinstance(payload, bytes)
    decoded = decode_method(payload)
    assert type(decoded) is cls
    assert decoded == method
    for spec in cls.FIELDS:
        if not spec.reserved:
            assert getattr(decoded, spec.attr) == getattr(method, spec.attr), spec.attr
    assert decoded.encode() == payload


@pytest.mark.parametrize("cls", METHOD_CLASSES, ids=METHOD_IDS)
@settings(max_examples=examples(25))
@given(data=st.data())
def test_method_bytes_decode_and_reencode_identically(cls, data):
    """Bytes written from the spec layout decode to the right values and re-encode as-is."""
    payload, expected = data.draw(method_payloads(cls))
    decoded = decode_method(payload)
    assert type(decoded) is cls
    for spec in cls.FIELDS:
        _check_field(spec, getattr(decoded, spec.attr), expected[spec.attr])
    assert decoded.encode() == payload


@pytest.mark.parametrize(
    "cls",
    [c for c in METHOD_CLASSES if sum(f.wire_type == "bit" for f in c.FIELDS)],
    ids=lambda c: c.NAME,
)
def test_bits_are_packed_lsb_first(cls):
    """Each bit alone changes exactly one octet, to 1 << (its position among its group)."""
    public = [f for f in cls.FIELDS if not f.reserved]
    base = {f.attr: False for f in public if f.wire_type == "bit"}
    reference = cls(**base).encode()
    position = 0
    previous_was_bit = False
    for spec in cls.FIELDS:
        if spec.wire_type != "bit":
            position = 0
            previous_was_bit = False
            continue
        if previous_was_bit:
            position += 1
        previous_was_bit = True
        if spec.reserved:
            continue
        encoded = cls(**{**base, spec.attr: True}).encode()
        assert len(encoded) == len(reference)
        diffs = [i for i, (a, b) in enumerate(zip(encoded, reference, strict=True)) if a != b]
        assert len(diffs) == 1, spec.attr
        assert encoded[diffs[0]] == 1 << position, spec.attr


def test_all_methods_round_trip_with_defaults():
    for cls in METHOD_CLASSES:
        method = cls()
        assert decode_method(method.encode()) == method


@settings(max_examples=examples(100))
@given(properties())
def test_properties_roundtrip(props):
    data = props.encode()
    # The flag word lists exactly the present properties.
    flags = struct.unpack(">H", data[:2])[0]
    for spec, bit in zip(BasicProperties.FIELDS, BasicProperties.FLAGS, strict=True):
        assert bool(flags & bit) == (getattr(props, spec.attr) is not None), spec.attr
    assert props.flags == flags
    frame = ContentHeaderFrame(7, 60, 12345, props)
    stream = encode_frame(frame)
    decoder = FrameDecoder()
    decoder.receive_data(stream)
    decoded = decoder.next_frame()
    assert decoded == frame
    for spec in BasicProperties.FIELDS:
        assert getattr(decoded.properties, spec.attr) == getattr(props, spec.attr), spec.attr
    assert decoded.properties.encode() == data
    assert encode_frame(decoded) == stream


@settings(max_examples=examples(100))
@given(property_payloads())
def test_property_bytes_decode_and_reencode_identically(generated):
    props_bytes, expected = generated
    payload = struct.pack(">HHQ", 60, 0, 1) + props_bytes
    stream = struct.pack(">BHI", 2, 1, len(payload)) + payload + b"\xce"
    decoder = FrameDecoder()
    decoder.receive_data(stream)
    frame = decoder.next_frame()
    assert isinstance(frame, ContentHeaderFrame)
    for spec in BasicProperties.FIELDS:
        value = getattr(frame.properties, spec.attr)
        if expected[spec.attr] is None:
            assert value is None, spec.attr
        else:
            _check_field(spec, value, expected[spec.attr])
    assert frame.properties.encode() == props_bytes
    assert encode_frame(frame) == stream


# --------------------------------------------------------------------------------------------
# Field tables
# --------------------------------------------------------------------------------------------


@settings(max_examples=examples(150))
@given(table_models())
def test_table_model_roundtrip(model):
    """One model, three checks: encoder bytes, decoder values and tags, byte identity."""
    expected_bytes = model_table_bytes(model)
    # The codec encodes the input built from the model to the bytes written from the layout.
    assert encode_table(build_table(model)) == expected_bytes
    # Decoding those bytes gives every key, tag, value and Python type of the model.
    table, end = decode_table(expected_bytes, 0, len(expected_bytes))
    assert end == len(expected_bytes)
    assert canon_decoded_table(table) == canon_model_table(model)
    # And re-encoding the decoded table gives the same bytes.
    assert encode_table(table) == expected_bytes
    # The input compares equal to the decoded table.
    assert table == build_table(model)


@settings(max_examples=examples(60))
@given(table_models(), st.binary(max_size=8), st.binary(max_size=8))
def test_table_inside_a_larger_buffer(model, before, after):
    raw = model_table_bytes(model)
    buf = before + raw + after
    table, end = decode_table(buf, len(before), len(before) + len(raw))
    assert end == len(before) + len(raw)
    assert canon_decoded_table(table) == canon_model_table(model)


def test_table_with_every_tag_nested_roundtrips_byte_for_byte():
    from decimal import Decimal

    scalars = {
        "t": True,
        "b": -5,
        "B": 250,
        "U": -300,
        "u": 65000,
        "s": -2,
        "I": -70000,
        "i": 4_000_000_000,
        "L": -(2**40),
        "l": 2**40,
        "f": 1.5,
        "d": -2.25,
        "D": Decimal("-1.23"),
        "S": "snowman ☃",
        "x": b"\x00\x01",
        "T": Timestamp(1_700_000_000),
        "V": None,
    }
    inner = tuple((tag, TV(tag, value)) for tag, value in scalars.items())
    array = TV("A", tuple(TV(tag, value) for tag, value in scalars.items()))
    model = (
        *inner,
        ("A", array),
        ("F", TV("F", (*inner, ("nested-array", array), ("deeper", TV("F", inner))))),
        ("S", TV("S", b"\xff\xfe not utf-8")),  # duplicate key, invalid UTF-8 S
        ("S", TV("S", "second")),
    )
    assert {tv.tag for _, tv in model} | {tv.tag for tv in array.value} == set(ALL_TAGS)
    raw = model_table_bytes(model)
    assert encode_table(build_table(model)) == raw
    table, _ = decode_table(raw, 0, len(raw))
    assert canon_decoded_table(table) == canon_model_table(model)
    assert encode_table(table) == raw
    assert table["S"] == "snowman ☃"  # first duplicate wins
    assert table.get_all("S") == ["snowman ☃", b"\xff\xfe not utf-8", "second"]
    assert [k for k, _, _ in table.entries()] == [k for k, _ in model]  # key order kept


@pytest.mark.parametrize("tag", list(ALL_TAGS))
def test_each_tag_in_a_method_argument_roundtrips(tag):
    from decimal import Decimal

    values = {
        "t": False,
        "b": 127,
        "B": 0,
        "U": 32767,
        "u": 1,
        "s": -32768,
        "I": 2**31 - 1,
        "i": 0,
        "L": 2**63 - 1,
        "l": -(2**63),
        "f": -0.5,
        "d": 1e300,
        "D": Decimal("0.000"),
        "S": "",
        "x": b"",
        "A": (),
        "T": Timestamp(2**64 - 1),
        "F": (),
        "V": None,
    }
    tv = TV(tag, values[tag])
    model = (("arg", tv),)
    method = ac.v0_9_1.Queue.Declare(queue="q", arguments=build_table(model))
    payload = method.encode()
    assert payload.endswith(model_table_bytes(model))
    decoded = decode_method(payload)
    assert decoded == method
    assert decoded.arguments.tag("arg") == tag
    assert canon_decoded_table(decoded.arguments) == canon_model_table(model)
    assert decoded.encode() == payload


@settings(max_examples=examples(60))
@given(st.binary(max_size=255))
def test_non_utf8_shortstr_roundtrips(raw):
    payload = b"\x00\x3c\x00\x15" + bytes([len(raw)]) + raw  # basic.consume-ok
    method = decode_method(payload)
    assert isinstance(method.consumer_tag, str)
    assert method.consumer_tag.encode("utf-8", "surrogateescape") == raw
    assert method.encode() == payload


def test_invalid_utf8_long_string_keeps_tag_and_bytes():
    raw = b"\x00\x00\x00\x0a" + b"\x01k" + b"S" + b"\x00\x00\x00\x03" + b"\xc3\x28\xff"
    table, _ = decode_table(raw, 0, len(raw))
    assert table["k"] == b"\xc3\x28\xff"
    assert table.tag("k") == "S"
    assert encode_table(table) == raw
    assert encode_table({"k": Tagged("S", b"\xc3\x28\xff")}) == raw


def test_duplicate_keys_and_key_order_survive_a_method_roundtrip():
    table = FieldTable([("b", 1), ("a", 2), ("b", Tagged("l", 3))])
    method = ac.v0_9_1.Basic.Consume(queue="q", arguments=table)
    decoded = decode_method(method.encode())
    assert decoded.arguments.entries() == [("b", "I", 1), ("a", "I", 2), ("b", "l", 3)]
    assert decoded.encode() == method.encode()
