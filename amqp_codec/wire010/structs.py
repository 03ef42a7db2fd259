"""Packed structs of the 99-0 draft: the base class and the sized and long-struct codecs.

A struct is written as ``[size] [type code] packing flags values``:

* ``size`` (when the struct's ``size`` attribute is octet, short or long) counts the bytes
  after it;
* ``type code`` (a short, when the struct has a ``type``) names the struct inside a
  long-struct; a ``<result>`` struct's code is ``class index * 256 + type``;
* the packing flags (``pack`` octets, default short): field *i* owns bit *i mod 8* of flag
  octet *i div 8*. A non-bit field's flag means "present" and its value follows; a bit
  field's flag *is* its value.

The generated struct classes (``amqp_codec.v0_10_draft.structs``) write and read the flags and
values; this module adds the prefixes. Long-structs are typed and long-sized: decoding looks
the struct up by its type code, parses it from its flags and then skips to the end given by the
size, tolerating trailing bytes (a C++ broker padded ``execution.result`` with six zeros) and
keeping them, so that every decoded struct re-encodes to the bytes it came from.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Self

from amqp_codec.base import FieldSpec
from amqp_codec.encoding import check_value
from amqp_codec.errors import AMQPEncodeError, FrameSyntaxError
from amqp_codec.protocol import spec_named

from .table import encode_array, encode_table
from .values import encode_content, encode_rfc1982_long_set, encode_uuid

__all__ = [
    "PackedStruct",
    "decode_header_structs",
    "decode_long_struct",
    "encode_long_struct",
    "encode_failure",
    "register_structs",
]

_unpack_IH = struct.Struct(">IH").unpack_from
_pack_IH = struct.Struct(">IH").pack


class PackedStruct:
    """Base of every generated 99-0 struct class (frozen, slotted dataclasses).

    Fields are ``None`` when absent (their packing flag clear); bit fields are ``bool``.

    Two forms older C++ peers sent decode and re-encode as they came, outside equality:
    bytes after the fields inside a long-struct's size (:attr:`padding`) and a size that
    counted its own width (:attr:`size_counts_itself`).
    """

    __slots__ = ("_padding", "_size_bias")  # set only on decoded structs that need them

    NAME: ClassVar[str]
    """The spec's name: the domain (``"delivery-properties"``) or ``"<class>.<method>-result"``."""
    TYPE_CODE: ClassVar[int | None]
    """The type code written after the size, or None for an untyped struct."""
    SIZE_WIDTH: ClassVar[int]
    """Octets of the size prefix: 0 (none), 1, 2 or 4."""
    PACK_WIDTH: ClassVar[int]
    """Octets of packing flags."""
    FIELDS: ClassVar[tuple[FieldSpec, ...]]

    def encode_body(self) -> bytes:
        """The packing flags and the present fields' values (no size, no type code)."""
        raise NotImplementedError

    @classmethod
    def decode_body(cls, buf: bytes, o: int, end: int, depth: int) -> tuple[Self, int]:
        """Read the packing flags and values at ``buf[o:]``, nothing past ``end``."""
        raise NotImplementedError

    @property
    def padding(self) -> bytes:
        """Bytes that followed the fields inside the size (C++ padded execution.result)."""
        return getattr(self, "_padding", b"")

    @property
    def size_counts_itself(self) -> bool:
        """The size as decoded counted its own width (C++ before March 2008)."""
        return bool(getattr(self, "_size_bias", 0))

    @property
    def flags(self) -> int:
        """The packing flags as one big-endian number of :attr:`PACK_WIDTH` octets."""
        word = 0
        for i, spec in enumerate(self.FIELDS):
            value = getattr(self, spec.attr)
            if value is not None and value is not False:
                word |= 1 << (8 * (self.PACK_WIDTH - 1 - i // 8) + i % 8)
        return word

    def encode(self) -> bytes:
        """The struct with the size and type code its spec declares."""
        body = self.encode_body() + self.padding
        if self.TYPE_CODE is not None:
            body = self.TYPE_CODE.to_bytes(2, "big") + body
        if self.SIZE_WIDTH:
            size = len(body) + getattr(self, "_size_bias", 0)
            if size >= 1 << (8 * self.SIZE_WIDTH):
                raise AMQPEncodeError(f"{self.NAME} of {len(body)} bytes overflows its size")
            body = size.to_bytes(self.SIZE_WIDTH, "big") + body
        return body

    @classmethod
    def decode(cls, buf: bytes, o: int, end: int, depth: int) -> tuple[Self, int]:
        """Read the struct with its declared size and type code at ``buf[o:]``.

        The size is checked, not trusted: the body is parsed from its flags, and the size must
        equal the bytes parsed (C++ builds before March 2008 counted the size field too: that
        form is accepted as well).
        """
        start = o
        width = cls.SIZE_WIDTH
        size = 0
        if width:
            if o + width > end:
                raise FrameSyntaxError(f"size of {cls.NAME} cut off", offset=o)
            size = int.from_bytes(buf[o : o + width], "big")
            if size == 0:
                raise FrameSyntaxError(f"{cls.NAME} has size 0 (absent)", offset=o)
            o += width
        if cls.TYPE_CODE is not None:
            if o + 2 > end:
                raise FrameSyntaxError(f"type code of {cls.NAME} cut off", offset=o)
            code = int.from_bytes(buf[o : o + 2], "big")
            if code != cls.TYPE_CODE:
                raise FrameSyntaxError(
                    f"{cls.NAME} has type code {code}, not {cls.TYPE_CODE}", offset=o
                )
            o += 2
        value, stop = cls.decode_body(buf, o, end, depth)
        if width and size not in (stop - start - width, stop - start):
            raise FrameSyntaxError(
                f"{cls.NAME} says {size} bytes but holds {stop - start - width}", offset=start
            )
        if width and size == stop - start:
            object.__setattr__(value, "_size_bias", width)
        return value, stop


# The draft's struct classes, by long-struct type code, and the codes a header segment may
# carry. The generated package hands them over when it is imported (register_structs): the
# runtime never imports generated code.
_LONG_STRUCTS: dict[int, type[PackedStruct]] = {}
_HEADER_STRUCTS: set[int] = set()


def register_structs(
    long_structs: Mapping[int, type[PackedStruct]], header_structs: Iterable[int]
) -> None:
    """Hand the wire format the structs it reads by type code: the long-structs, and the codes
    a header segment may carry. Called by the generated package
    (:mod:`amqp_codec.v0_10_draft`) when it is imported."""
    _LONG_STRUCTS.update(long_structs)
    _HEADER_STRUCTS.update(header_structs)


def _long_structs() -> dict[int, type[PackedStruct]]:
    if not _LONG_STRUCTS:
        # Used before the generated package was imported: load it by name, as the frame
        # decoder finds every version (amqp_codec.protocol); importing it hands the structs over.
        spec_named("99-0")
    return _LONG_STRUCTS


def _header_structs() -> set[int]:
    if not _HEADER_STRUCTS:
        spec_named("99-0")
    return _HEADER_STRUCTS


def encode_long_struct(value: PackedStruct | None, field: str = "") -> bytes:
    """A long-struct: long size, type code, flags and values."""
    if not isinstance(value, PackedStruct) or value.TYPE_CODE is None:
        raise AMQPEncodeError("long-struct takes a typed struct", field=field)
    body = value.encode_body() + value.padding
    return _pack_IH(len(body) + 2, value.TYPE_CODE) + body


def decode_long_struct(buf: bytes, o: int, end: int, depth: int) -> tuple[PackedStruct, int]:
    """A long-struct at ``buf[o:]``: the struct its type code names, and the offset after the
    size says it ends (bytes after the parsed fields are tolerated and kept as
    :attr:`PackedStruct.padding`)."""
    if o + 6 > end:
        raise FrameSyntaxError("long-struct size and type code cut off", offset=o)
    size, code = _unpack_IH(buf, o)
    stop = o + 4 + size
    if size < 2 or stop > end:
        raise FrameSyntaxError(f"long-struct of {size} bytes does not fit", offset=o)
    cls = _long_structs().get(code)
    if cls is None:
        raise FrameSyntaxError(f"long-struct with unknown type code {code}", offset=o + 4)
    value, parsed = cls.decode_body(buf, o + 6, stop, depth)
    if parsed < stop:  # tolerated, and kept so that the struct re-encodes as it came
        object.__setattr__(value, "_padding", bytes(buf[parsed:stop]))
    return value, stop


def decode_header_structs(buf: bytes, o: int, end: int, depth: int) -> tuple[PackedStruct, ...]:
    """A header segment: long-structs until ``end``, each a header struct at most once."""
    structs: list[PackedStruct] = []
    seen: set[int] = set()
    allowed = _header_structs()
    while o < end:
        if o + 6 <= end:
            code = int.from_bytes(buf[o + 4 : o + 6], "big")
            if code not in allowed:
                raise FrameSyntaxError(
                    f"header segment holds struct type {code}, not a message header struct",
                    offset=o + 4,
                )
            if code in seen:
                raise FrameSyntaxError(f"header segment repeats struct type {code}", offset=o + 4)
            seen.add(code)
        value, o = decode_long_struct(buf, o, end, depth)
        structs.append(value)
    return tuple(structs)


def encode_failure(obj: Any) -> AMQPEncodeError:
    """Find the field of a 99-0 method or struct whose value broke its encoder.

    Called only after a fast encoder failed; absent (None) struct fields are skipped.
    """
    for spec in obj.FIELDS:
        value = getattr(obj, spec.attr)
        if value is None and isinstance(obj, PackedStruct):
            continue
        try:
            encode = _ENCODERS.get(spec.wire_type)
            if encode is not None:
                encode(value, spec.attr)
            elif spec.wire_type == "struct":
                value.encode()
            else:
                check_value(spec, value)
        except AMQPEncodeError as exc:
            exc.reason = f"{type(obj).__name__}: {exc.reason}"
            return exc
        except (AttributeError, TypeError, ValueError):
            return AMQPEncodeError(f"{type(obj).__name__}: bad value {value!r}", field=spec.attr)
    return AMQPEncodeError(f"{type(obj).__name__} could not be encoded")


# The 99-0 encoders of the wire types 0-9-1's check_value does not know (or knows otherwise).
_ENCODERS: dict[str, Callable[[Any, str], bytes]] = {
    "table": encode_table,
    "array": encode_array,
    "uuid": encode_uuid,
    "rfc1982-long-set": encode_rfc1982_long_set,
    "content": encode_content,
    "long-struct": encode_long_struct,
}
