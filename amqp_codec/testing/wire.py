"""Wire bytes written by hand from the spec's layout, independent of the codec.

Tests compare the codec with these: :func:`method_payloads` and :func:`property_payloads`
write a method's or a property list's bytes field by field from ``FIELDS`` and return the
values a decoder must produce; the small helpers write one primitive each.
"""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import strategies as st

from amqp_codec.v0_9_1 import BasicProperties

from ._version import ALL_TAGS
from .tables import model_table_bytes, table_models

__all__ = [
    "FRAME_END",
    "PROTOCOL_HEADER",
    "content_header_payload",
    "long_",
    "longlong",
    "longstr",
    "method_payload",
    "method_payloads",
    "octet",
    "parse_frames",
    "property_payloads",
    "raw_frame",
    "short",
    "shortstr",
]

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_END = b"\xce"


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
    draw: st.DrawFn, cls: type[Any], tags: str = ALL_TAGS
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
    draw: st.DrawFn, cls: type[Any] = BasicProperties, tags: str = ALL_TAGS
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
