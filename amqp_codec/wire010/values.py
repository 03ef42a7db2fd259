"""The 99-0 primitive types 0-9-1 does not have: uuid, rfc1982-long-set and content.

Each type has an ``encode_<type>(value, field)`` returning bytes and a
``decode_<type>(buf, o, end, depth)`` returning ``(value, offset after it)``; the generated
method and struct codecs call them by those names. Decoders read nothing past ``end`` and raise
:class:`~amqp_codec.errors.FrameSyntaxError` with the buffer offset of the problem.
"""

from __future__ import annotations

import struct
import uuid
from typing import NamedTuple

from amqp_codec.errors import AMQPEncodeError, FrameSyntaxError

__all__ = [
    "EMPTY_CONTENT",
    "NIL_UUID",
    "Content",
    "RangeSet",
    "decode_content",
    "decode_longstr",
    "decode_rfc1982_long_set",
    "decode_shortstr",
    "decode_uuid",
    "encode_content",
    "encode_longstr",
    "encode_rfc1982_long_set",
    "encode_shortstr",
    "encode_uuid",
]

UUID = uuid.UUID
#: The all-zero UUID, the default of uuid fields.
NIL_UUID = uuid.UUID(int=0)

#: An rfc1982-long-set: inclusive ``(lower, upper)`` ranges of 32-bit serial numbers.
RangeSet = tuple[tuple[int, int], ...]

_unpack_H = struct.Struct(">H").unpack_from
_unpack_I = struct.Struct(">I").unpack_from
_pack_H = struct.Struct(">H").pack
_pack_I = struct.Struct(">I").pack
_pack_II = struct.Struct(">II").pack


class Content(NamedTuple):
    """A ``content`` value: inline data (``kind`` 0) or a reference id (``kind`` 1)."""

    kind: int
    data: bytes


EMPTY_CONTENT = Content(0, b"")


def _cut(what: str, offset: int) -> FrameSyntaxError:
    return FrameSyntaxError(f"{what} runs past the end of its container", offset=offset)


def encode_uuid(value: uuid.UUID, field: str = "") -> bytes:
    """16 raw octets in network order."""
    if not isinstance(value, uuid.UUID):
        raise AMQPEncodeError(f"uuid takes a uuid.UUID, not {type(value).__name__}", field=field)
    return value.bytes


def decode_uuid(buf: bytes, o: int, end: int, depth: int = 0) -> tuple[uuid.UUID, int]:
    """16 raw octets."""
    if o + 16 > end:
        raise _cut("uuid", o)
    return uuid.UUID(bytes=bytes(buf[o : o + 16])), o + 16


def encode_rfc1982_long_set(value: RangeSet, field: str = "") -> bytes:
    """A short byte count, then each range as two longs (lower, upper)."""
    try:
        parts = [_pack_II(lower, upper) for lower, upper in value]
    except (TypeError, ValueError, struct.error):
        raise AMQPEncodeError(
            "rfc1982-long-set takes (lower, upper) pairs of 32-bit unsigned ints", field=field
        ) from None
    size = 8 * len(parts)
    if size > 0xFFFF:
        raise AMQPEncodeError(f"{len(parts)} ranges do not fit a short byte count", field=field)
    return _pack_H(size) + b"".join(parts)


def decode_rfc1982_long_set(buf: bytes, o: int, end: int, depth: int = 0) -> tuple[RangeSet, int]:
    """A short byte count, then longs taken in (lower, upper) pairs."""
    if o + 2 > end:
        raise _cut("rfc1982-long-set size", o)
    (size,) = _unpack_H(buf, o)
    start, stop = o + 2, o + 2 + size
    if stop > end:
        raise _cut(f"rfc1982-long-set of {size} bytes", o)
    if size % 8:
        raise FrameSyntaxError(
            f"rfc1982-long-set of {size} bytes is not a whole number of ranges", offset=o
        )
    values = struct.unpack_from(f">{size // 4}I", buf, start)
    return tuple(zip(values[::2], values[1::2], strict=True)), stop


def encode_content(value: Content | tuple[int, bytes], field: str = "") -> bytes:
    """An octet discriminator, then a longstr."""
    try:
        kind, data = value
        if kind not in (0, 1):
            raise ValueError
        return bytes((kind,)) + _pack_I(len(data)) + bytes(data)
    except (TypeError, ValueError, struct.error):
        raise AMQPEncodeError("content takes (0 or 1, bytes)", field=field) from None


def decode_content(buf: bytes, o: int, end: int, depth: int = 0) -> tuple[Content, int]:
    """An octet discriminator (0 inline, 1 reference), then a longstr."""
    if o + 5 > end:
        raise _cut("content", o)
    kind = buf[o]
    if kind > 1:
        raise FrameSyntaxError(f"content discriminator {kind} is neither 0 nor 1", offset=o)
    data, stop = decode_longstr(buf, o + 1, end)
    return Content(kind, data), stop


def encode_shortstr(value: str, field: str = "") -> bytes:
    """An octet length, then the UTF-8 bytes (surrogate escapes carry other bytes)."""
    if not isinstance(value, str):
        raise AMQPEncodeError(f"shortstr takes str, not {type(value).__name__}", field=field)
    raw = value.encode("utf-8", "surrogateescape")
    if len(raw) > 255:
        raise AMQPEncodeError(f"shortstr is {len(raw)} bytes; the limit is 255", field=field)
    return bytes((len(raw),)) + raw


def decode_shortstr(buf: bytes, o: int, end: int, depth: int = 0) -> tuple[str, int]:
    """An octet length, then bytes read as UTF-8 (surrogate escapes for the rest)."""
    if o + 1 > end:
        raise _cut("short string", o)
    stop = o + 1 + buf[o]
    if stop > end:
        raise _cut(f"short string of {buf[o]} bytes", o)
    return buf[o + 1 : stop].decode("utf-8", "surrogateescape"), stop


def encode_longstr(value: bytes, field: str = "") -> bytes:
    """A long length, then the bytes."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise AMQPEncodeError(f"longstr takes bytes, not {type(value).__name__}", field=field)
    return _pack_I(len(value)) + bytes(value)


def decode_longstr(buf: bytes, o: int, end: int, depth: int = 0) -> tuple[bytes, int]:
    """A long length, then the bytes."""
    if o + 4 > end:
        raise _cut("long string size", o)
    (n,) = _unpack_I(buf, o)
    if o + 4 + n > end:
        raise _cut(f"long string of {n} bytes", o)
    return bytes(buf[o + 4 : o + 4 + n]), o + 4 + n
