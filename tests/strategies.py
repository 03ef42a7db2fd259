"""Hypothesis strategies and independent wire helpers, generated from the codec's model.

Method and property strategies are built by walking ``cls.FIELDS`` and mapping each field's
``wire_type`` to a value strategy, so a method added to the spec is covered without touching
this file.

Field tables are generated as a *model*: a tuple of ``(key, TV)`` entries where ``TV`` holds
the wire tag and the value a decoder must produce. From one model the tests get

* the codec's input (:func:`build_table`: plain Python values where the default tag mapping
  yields the tag, :class:`~amqp_codec.Tagged` otherwise),
* the expected wire bytes (:func:`model_table_bytes`, an encoder written here from the
  spec's table layout, independent of the codec), and
* the expected decoded shape (:func:`canon_model`, compared with :func:`canon_decoded`).
"""

from __future__ import annotations

import os
import string
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from amqp_codec import (
    ContentBodyFrame,
    ContentHeaderFrame,
    FieldArray,
    FieldTable,
    HeartbeatFrame,
    MethodFrame,
    Tagged,
    Timestamp,
)
from amqp_codec.v0_9_1 import METHODS, BasicProperties

#: Multiplier for every test's example count: AMQP_TEST_SCALE=20 for a long bug hunt.
SCALE = max(1, int(os.environ.get("AMQP_TEST_SCALE", "1")))


def examples(n: int) -> int:
    """``n`` hypothesis examples, times AMQP_TEST_SCALE."""
    return n * SCALE


PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_END = b"\xce"

ALL_TAGS = "tbBUusIiLlfdDSxATFV"
SCALAR_TAGS = "tbBUusIiLlfdDSxTV"

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
INT_RANGES: dict[str, tuple[int, int]] = {
    "b": (-(2**7), 2**7 - 1),
    "B": (0, 2**8 - 1),
    "U": (-(2**15), 2**15 - 1),
    "s": (-(2**15), 2**15 - 1),
    "u": (0, 2**16 - 1),
    "I": INT32,
    "i": (0, 2**32 - 1),
    "L": INT64,
    "l": INT64,
    "T": (0, 2**64 - 1),
}
# struct formats of the fixed-size tags, from the table in the spec/RabbitMQ errata.
TAG_FORMATS: dict[str, str] = {
    "b": ">b",
    "B": ">B",
    "U": ">h",
    "s": ">h",
    "u": ">H",
    "I": ">i",
    "i": ">I",
    "L": ">q",
    "l": ">q",
    "T": ">Q",
    "f": ">f",
    "d": ">d",
}
# Python type a decoder must produce for each tag ("S" may also be bytes).
TAG_TYPES: dict[str, type] = {
    "t": bool,
    "b": int,
    "B": int,
    "U": int,
    "u": int,
    "s": int,
    "I": int,
    "i": int,
    "L": int,
    "l": int,
    "f": float,
    "d": float,
    "D": Decimal,
    "S": str,
    "x": bytes,
    "A": FieldArray,
    "T": Timestamp,
    "F": FieldTable,
    "V": type(None),
}


# --------------------------------------------------------------------------------------------
# Independent wire helpers (written from the spec's layout, not from the codec)
# --------------------------------------------------------------------------------------------


def octet(n: int) -> bytes:
    return n.to_bytes(1, "big")


def short(n: int) -> bytes:
    return n.to_bytes(2, "big")


def long_(n: int) -> bytes:
    return n.to_bytes(4, "big")


def longlong(n: int) -> bytes:
    return n.to_bytes(8, "big")


def shortstr(value: str | bytes) -> bytes:
    raw = value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")
    assert len(raw) <= 255
    return bytes([len(raw)]) + raw


def longstr(raw: bytes) -> bytes:
    return len(raw).to_bytes(4, "big") + raw


def raw_frame(frame_type: int, channel: int, payload: bytes, end: bytes = FRAME_END) -> bytes:
    """A frame built by hand: type octet, channel short, size long, payload, frame end."""
    return octet(frame_type) + short(channel) + long_(len(payload)) + payload + end


def method_payload(class_id: int, method_id: int, args: bytes = b"") -> bytes:
    return short(class_id) + short(method_id) + args


def content_header_payload(
    class_id: int, body_size: int, properties: bytes, weight: int = 0
) -> bytes:
    return short(class_id) + short(weight) + longlong(body_size) + properties


def parse_frames(data: bytes) -> list[tuple[int, int, bytes]]:
    """Split well-formed frame bytes into (type, channel, payload), checking every frame end."""
    frames = []
    o = 0
    while o < len(data):
        frame_type, channel, size = struct.unpack_from(">BHI", data, o)
        payload = data[o + 7 : o + 7 + size]
        assert len(payload) == size, "frame cut off"
        assert data[o + 7 + size] == 0xCE, "bad frame end"
        frames.append((frame_type, channel, payload))
        o += 8 + size
    return frames


# --------------------------------------------------------------------------------------------
# Field-table model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TV:
    """A tagged value of the table model.

    ``value`` is what a decoder must produce, except for containers: for ``F`` it is a tuple
    of ``(key, TV)``, for ``A`` a tuple of ``TV``. ``plain`` asks :func:`build_value` to pass
    a plain Python value (relying on the default tag mapping) where that gives ``tag``.
    """

    tag: str
    value: Any
    plain: bool = False


def _default_tag_gives(tv: TV) -> bool:
    """True if the documented plain-value mapping of ``tv.value`` is ``tv.tag``."""
    tag, value = tv.tag, tv.value
    if tag in "tdDxTV":
        return True
    if tag == "I":
        return True  # every I value fits signed 32-bit
    if tag == "l":
        return not INT32[0] <= value <= INT32[1]
    if tag == "S":
        return isinstance(value, str)
    if tag == "F":
        keys = [k for k, _ in value]
        return len(keys) == len(set(keys))
    return tag == "A"


def is_plain(tv: TV) -> bool:
    """Whether ``tv`` is built as a plain value (itself and, for containers, everything in it)."""
    if not (tv.plain and _default_tag_gives(tv)):
        return False
    if tv.tag == "F":
        return all(is_plain(child) for _, child in tv.value)
    if tv.tag == "A":
        return all(is_plain(child) for child in tv.value)
    return True


def _build_inner(tv: TV) -> Any:
    if tv.tag == "F":
        pairs = [(key, build_value(child)) for key, child in tv.value]
        return dict(pairs) if is_plain(tv) else FieldTable(pairs)
    if tv.tag == "A":
        items = [build_value(child) for child in tv.value]
        return items if is_plain(tv) else FieldArray(items)
    return tv.value


def build_value(tv: TV) -> Any:
    """The codec input for ``tv``: a plain value, or ``Tagged`` when the tag must be forced.

    Containers holding anything tagged are built as FieldTable/FieldArray (which unwrap
    ``Tagged``), so the input compares equal to the decoded value.
    """
    inner = _build_inner(tv)
    return inner if is_plain(tv) else Tagged(tv.tag, inner)


def build_table(model: tuple[tuple[str, TV], ...]) -> FieldTable:
    return FieldTable([(key, build_value(tv)) for key, tv in model])


def _decimal_parts(value: Decimal) -> tuple[int, int]:
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int) and exponent <= 0
    mantissa = int("".join(map(str, digits)) or "0")
    return -exponent, -mantissa if sign else mantissa


def model_value_bytes(tv: TV) -> bytes:
    """Tag octet and value bytes of ``tv``, from the field-table layout."""
    tag, value = tv.tag, tv.value
    out = tag.encode("ascii")
    if tag == "t":
        return out + (b"\x01" if value else b"\x00")
    if tag in TAG_FORMATS:
        return out + struct.pack(TAG_FORMATS[tag], value)
    if tag == "D":
        scale, mantissa = _decimal_parts(value)
        return out + struct.pack(">Bi", scale, mantissa)
    if tag in "Sx":
        raw = value.encode("utf-8") if isinstance(value, str) else value
        return out + longstr(raw)
    if tag == "V":
        return out
    if tag == "F":
        return out + model_table_bytes(value)
    if tag == "A":
        return out + longstr(b"".join(model_value_bytes(child) for child in value))
    raise AssertionError(f"unknown tag {tag}")


def model_table_bytes(model: tuple[tuple[str, TV], ...]) -> bytes:
    """A whole field table (4-byte size, then key shortstr + tagged value per entry)."""
    body = b"".join(shortstr(key) + model_value_bytes(tv) for key, tv in model)
    return longstr(body)


def canon_model(tv: TV) -> tuple[Any, ...]:
    """Comparable (tag, type name, value) shape of what decoding ``tv``'s bytes must give."""
    if tv.tag == "F":
        return ("F", "FieldTable", tuple((k, canon_model(c)) for k, c in tv.value))
    if tv.tag == "A":
        return ("A", "FieldArray", tuple(canon_model(c) for c in tv.value))
    if tv.tag == "D":
        return ("D", "Decimal", tv.value.as_tuple())
    if tv.tag == "T":
        return ("T", "Timestamp", int(tv.value))
    return (tv.tag, type(tv.value).__name__, tv.value)


def canon_decoded(tag: str, value: Any) -> tuple[Any, ...]:
    """The same shape as :func:`canon_model`, read from a decoded value."""
    if tag == "F":
        return (
            "F",
            type(value).__name__,
            tuple((k, canon_decoded(t, v)) for k, t, v in value.entries()),
        )
    if tag == "A":
        return (
            "A",
            type(value).__name__,
            tuple(canon_decoded(t, v) for t, v in zip(value.tags, value, strict=True)),
        )
    if tag == "D":
        return ("D", type(value).__name__, value.as_tuple())
    if tag == "T":
        return ("T", type(value).__name__, int(value))
    return (tag, type(value).__name__, value)


def canon_model_table(model: tuple[tuple[str, TV], ...]) -> tuple[Any, ...]:
    return canon_model(TV("F", model))


def canon_decoded_table(table: FieldTable) -> tuple[Any, ...]:
    return canon_decoded("F", table)


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------

_INVALID_UTF8_TAILS = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80", b"\xf8\x88\x80\x80\x80")


def invalid_utf8() -> st.SearchStrategy[bytes]:
    """Bytes that are not valid UTF-8 (an invalid sequence at or near the end)."""
    return st.builds(
        lambda head, tail: head + tail,
        st.binary(max_size=6),
        st.sampled_from(_INVALID_UTF8_TAILS),
    ).filter(_not_utf8)


def _not_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def shortstr_texts() -> st.SearchStrategy[str]:
    """Text whose UTF-8 encoding fits a short string (<= 255 bytes), incl. non-UTF-8 bytes."""
    return st.one_of(
        st.text(max_size=63),  # at most 4 bytes per character
        st.text(alphabet=string.printable, min_size=200, max_size=255),
        st.text(alphabet="é", min_size=120, max_size=127),  # 2-byte characters near the limit
        # Arbitrary bytes, carried through str by surrogateescape (non-UTF-8 short strings).
        st.binary(max_size=255).map(lambda raw: raw.decode("utf-8", "surrogateescape")),
    )


def table_keys() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(["a", "k", "x-death", "count", ""]),  # a small pool: duplicate keys
        st.text(max_size=12),
        st.binary(max_size=8).map(lambda raw: raw.decode("utf-8", "surrogateescape")),
        st.just("K" * 255),
    )


def scalar_value(tag: str) -> st.SearchStrategy[Any]:
    if tag == "t":
        return st.booleans()
    if tag == "T":
        return st.integers(0, 2**64 - 1).map(Timestamp)
    if tag in INT_RANGES:
        low, high = INT_RANGES[tag]
        return st.integers(low, high)
    if tag == "f":
        return st.floats(width=32, allow_nan=False)
    if tag == "d":
        return st.floats(allow_nan=False)
    if tag == "D":
        return st.builds(
            lambda scale, mantissa: Decimal(f"{mantissa}E-{scale}"),
            st.integers(0, 255),
            st.integers(*INT32),
        )
    if tag == "S":
        return st.one_of(st.text(max_size=20), invalid_utf8())
    if tag == "x":
        return st.binary(max_size=20)
    if tag == "V":
        return st.none()
    raise AssertionError(tag)


def scalar_tvs(tags: str = ALL_TAGS) -> st.SearchStrategy[TV]:
    return st.one_of(
        *[
            st.builds(TV, st.just(tag), scalar_value(tag), st.booleans())
            for tag in SCALAR_TAGS
            if tag in tags
        ]
    )


def tvs(max_leaves: int = 12, tags: str = ALL_TAGS) -> st.SearchStrategy[TV]:
    """Any tagged value using only ``tags``, nested tables and arrays included."""

    def containers(children: st.SearchStrategy[TV]) -> st.SearchStrategy[TV]:
        options = []
        if "F" in tags:
            entries = st.lists(st.tuples(table_keys(), children), max_size=4).map(tuple)
            options.append(st.builds(TV, st.just("F"), entries, st.booleans()))
        if "A" in tags:
            items = st.lists(children, max_size=4).map(tuple)
            options.append(st.builds(TV, st.just("A"), items, st.booleans()))
        return st.one_of(*options)

    return st.recursive(scalar_tvs(tags), containers, max_leaves=max_leaves)


def table_models(
    max_size: int = 6, max_leaves: int = 12, tags: str = ALL_TAGS
) -> st.SearchStrategy[tuple]:
    """A field-table model: a tuple of (key, TV) entries, values tagged from ``tags``."""
    return st.lists(st.tuples(table_keys(), tvs(max_leaves, tags)), max_size=max_size).map(tuple)


def table_inputs(tags: str = ALL_TAGS) -> st.SearchStrategy[FieldTable]:
    return table_models(max_size=4, max_leaves=6, tags=tags).map(build_table)


#: A value strategy per AMQP wire type; every strategy below is derived from this map.
WIRE_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "bit": st.booleans(),
    "octet": st.integers(0, 2**8 - 1),
    "short": st.integers(0, 2**16 - 1),
    "long": st.integers(0, 2**32 - 1),
    "longlong": st.integers(0, 2**64 - 1),
    "timestamp": st.integers(0, 2**64 - 1).map(Timestamp),
    "shortstr": shortstr_texts(),
    "longstr": st.binary(max_size=64),
    "table": table_inputs(),
}


def spec_tags(spec: Any) -> str:
    """The field-table tags a generated version's ``SPEC`` defines (all tags if it says none)."""
    return ALL_TAGS if spec.table_tags is None else "".join(sorted(spec.table_tags))


def wire_strategies(tags: str = ALL_TAGS) -> dict[str, st.SearchStrategy[Any]]:
    """:data:`WIRE_STRATEGIES` with field tables restricted to ``tags``."""
    if tags == ALL_TAGS:
        return WIRE_STRATEGIES
    return {**WIRE_STRATEGIES, "table": table_inputs(tags)}


def methods(cls: type, tags: str = ALL_TAGS) -> st.SearchStrategy[Any]:
    """Instances of method class ``cls``, one value strategy per (non-reserved) field."""
    wire = wire_strategies(tags)
    kwargs = {spec.attr: wire[spec.wire_type] for spec in cls.FIELDS if not spec.reserved}
    return st.builds(cls, **kwargs)


def any_method(spec: Any = None) -> st.SearchStrategy[Any]:
    """Any method of ``spec`` (a generated version's ``SPEC``; default 0-9-1)."""
    table = METHODS if spec is None else spec.methods
    tags = ALL_TAGS if spec is None else spec_tags(spec)
    classes = sorted(table.values(), key=lambda c: c.INDEX)
    return st.sampled_from(classes).flatmap(lambda cls: methods(cls, tags))


def properties(cls: type = BasicProperties, tags: str = ALL_TAGS) -> st.SearchStrategy[Any]:
    """Property lists with each property independently present or absent."""
    wire = wire_strategies(tags)
    kwargs = {spec.attr: st.none() | wire[spec.wire_type] for spec in cls.FIELDS}
    return st.builds(cls, **kwargs)


@st.composite
def _wire_field(draw: st.DrawFn, wire: str, tags: str = ALL_TAGS) -> tuple[bytes, Any]:
    """Bytes of one non-bit field written from the spec layout, and the value they decode to."""
    if wire == "octet":
        v = draw(st.integers(0, 255))
        return octet(v), v
    if wire == "short":
        v = draw(st.integers(0, 2**16 - 1))
        return short(v), v
    if wire == "long":
        v = draw(st.integers(0, 2**32 - 1))
        return long_(v), v
    if wire in ("longlong", "timestamp"):
        v = draw(st.integers(0, 2**64 - 1))
        return longlong(v), v
    if wire == "shortstr":
        raw = draw(st.one_of(st.text(max_size=40).map(str.encode), st.binary(max_size=255)))
        raw = raw[:255]
        return shortstr(raw), raw.decode("utf-8", "surrogateescape")
    if wire == "longstr":
        raw = draw(st.binary(max_size=64))
        return longstr(raw), raw
    if wire == "table":
        model = draw(table_models(max_size=4, max_leaves=6, tags=tags))
        return model_table_bytes(model), model
    raise AssertionError(wire)


@st.composite
def method_payloads(
    draw: st.DrawFn, cls: type, tags: str = ALL_TAGS
) -> tuple[bytes, dict[str, Any]]:
    """A method frame payload for ``cls`` written field by field from ``cls.FIELDS``.

    Reserved fields get arbitrary values too; bits are packed LSB-first into octets. Returns
    the payload and ``{attr: expected decoded value}`` (tables as their model).
    """
    parts = [short(cls.CLASS_ID), short(cls.METHOD_ID)]
    values: dict[str, Any] = {}
    bits: list[bool] = []

    def flush() -> None:
        if bits:
            parts.append(octet(sum(1 << i for i, bit in enumerate(bits) if bit)))
            bits.clear()

    for spec in cls.FIELDS:
        if spec.wire_type == "bit":
            bit = draw(st.booleans())
            bits.append(bit)
            values[spec.attr] = bit
            if len(bits) == 8:
                flush()
            continue
        flush()
        raw, value = draw(_wire_field(spec.wire_type, tags))
        parts.append(raw)
        values[spec.attr] = value
    flush()
    return b"".join(parts), values


@st.composite
def property_payloads(
    draw: st.DrawFn, cls: type = BasicProperties, tags: str = ALL_TAGS
) -> tuple[bytes, dict[str, Any]]:
    """A property list (flag word, present properties) written from ``cls.FIELDS``.

    The flag bits are assigned from the spec: the first property is bit 15, downwards.
    """
    flags = 0
    parts: list[bytes] = []
    values: dict[str, Any] = {}
    for index, spec in enumerate(cls.FIELDS):
        if not draw(st.booleans()):
            values[spec.attr] = None
            continue
        flags |= 1 << (15 - index)
        raw, value = draw(_wire_field(spec.wire_type, tags))
        parts.append(raw)
        values[spec.attr] = value
    return short(flags) + b"".join(parts), values


def _method_frame(method: Any, channel: int) -> MethodFrame:
    return MethodFrame(0 if method.CLASS_ID == 10 else channel, method)


@st.composite
def frame_lists(draw: st.DrawFn, max_frames: int = 8) -> list[Any]:
    """Valid frames (channel rules respected) for building streams."""
    frames: list[Any] = []
    for _ in range(draw(st.integers(1, max_frames))):
        kind = draw(st.sampled_from(["method", "method", "header", "body", "heartbeat"]))
        channel = draw(st.integers(1, 65535))
        if kind == "method":
            frames.append(_method_frame(draw(any_method()), channel))
        elif kind == "header":
            frames.append(
                ContentHeaderFrame(
                    channel,
                    60,
                    draw(st.integers(0, 2**20)),
                    draw(properties()),
                )
            )
        elif kind == "body":
            frames.append(ContentBodyFrame(channel, draw(st.binary(max_size=300))))
        else:
            frames.append(HeartbeatFrame())
    return frames
