"""Field tables, sequences and arrays of the AMQP 0-10 draft (99-0).

Every value on the wire is a one-octet type code followed by the value. The codes, their
widths and their meanings are the spec's ``field-table-*`` constants (generated into
``amqp_codec.v0_10_draft.constants.FIELD_TABLE_TYPES`` and handed over by
:func:`register_table_types`); a code the spec does not name is
still sized by the rule behind the constants (its upper nibble) and kept as raw bytes.

========================  ===================================  =========================
datatype                  wire                                 Python value
========================  ===================================  =========================
signed/unsigned-integer   big-endian, 1, 2, 4 or 8 bytes       int
boolean                   one octet, 0 or 1                    bool
ieee-float                4 or 8 bytes                         float
datetime (0x38)           unsigned 64-bit seconds              Timestamp
uuid (0x48)               16 raw octets                        uuid.UUID
decimal                   scale octet + signed 4 or 8 bytes    decimal.Decimal
string                    1, 2 or 4-byte length + bytes        str (bytes for UTF-16/32)
binary, char              fixed or length-prefixed bytes       bytes
field-table (0xA8)        nested table                         FieldTable
sequence (0xA9)           long size + (code, value) pairs      tuple of Typed
array (0xAA)              long size, code, long count, values  Array
void (0xF0)               nothing                              None
========================  ===================================  =========================

A decoded table keeps key order, duplicate keys and every value's type code, so it re-encodes
byte for byte. Plain Python values are given the codes the Qpid implementations agreed on
(0x21/0x31 integers, 0xA4 strings, 0xA8 tables, 0x08 booleans, 0x38 datetimes); wrap a value
in :class:`Typed` to choose another code.
"""

from __future__ import annotations

import datetime as _dt
import functools
import struct
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from amqp_codec.errors import AMQPEncodeError, FrameSyntaxError, LimitExceededError
from amqp_codec.protocol import spec_named
from amqp_codec.table import DEFAULT_MAX_TABLE_DEPTH, Timestamp

__all__ = [
    "EMPTY_ARRAY",
    "EMPTY_TABLE",
    "Array",
    "FieldTable",
    "Timestamp",
    "TypeInfo",
    "Typed",
    "decode_array",
    "decode_table",
    "encode_array",
    "encode_table",
    "register_table_types",
    "type_code_for",
    "type_info",
]

_unpack_I = struct.Struct(">I").unpack_from
_pack_I = struct.Struct(">I").pack
_pack_B = struct.Struct(">B").pack

# An array never holds more elements than it has bytes (its size field's count, which
# includes the type code and the element count). Elements of a zero-width type (void) carry
# no bytes of their own, so without this a 9-byte array could ask for four billion Nones;
# with it, every decoded element is paid for by a byte of input and decoding stays linear.

# Upper nibble of a code the spec does not name → (fixed width, length-prefix width).
_NIBBLE_WIDTHS: dict[int, tuple[int, int]] = {
    0x0: (1, 0),
    0x1: (2, 0),
    0x2: (4, 0),
    0x3: (8, 0),
    0x4: (16, 0),
    0x5: (32, 0),
    0x6: (64, 0),
    0x7: (128, 0),
    0x8: (0, 1),
    0x9: (0, 2),
    0xA: (0, 4),
    0xC: (5, 0),
    0xD: (9, 0),
    0xF: (0, 0),
}

CODE_BOOLEAN = 0x08
CODE_SIGNED_INT = 0x21
CODE_SIGNED_LONG = 0x31
CODE_UNSIGNED_LONG = 0x32
CODE_DOUBLE = 0x33
CODE_DATETIME = 0x38
CODE_UUID = 0x48
CODE_LONG_BINARY = 0xA0
CODE_LONG_STRING = 0xA4
CODE_TABLE = 0xA8
CODE_SEQUENCE = 0xA9
CODE_ARRAY = 0xAA
CODE_DECIMAL = 0xC8
CODE_LONG_DECIMAL = 0xD8
CODE_VOID = 0xF0


@dataclass(frozen=True, slots=True)
class TypeInfo:
    """How one type code is encoded: a fixed ``width`` or a length prefix of ``lfwidth``."""

    code: int
    name: str
    width: int
    lfwidth: int
    datatype: str


# The spec's field-table-* constants by type code; the generated package hands them over when it
# is imported (register_table_types): the runtime never imports generated code.
_SPEC_TYPES: dict[int, TypeInfo] = {}


def register_table_types(types: Mapping[int, tuple[str, int, int, str]]) -> None:
    """Hand the wire format the spec's type codes: ``code -> (name, width, length-prefix width,
    datatype)``. Called by the generated package (:mod:`amqp_codec.v0_10_draft`) when it is
    imported."""
    _SPEC_TYPES.update(
        (code, TypeInfo(code, name, width, lfwidth, datatype))
        for code, (name, width, lfwidth, datatype) in types.items()
    )
    type_info.cache_clear()


def _spec_types() -> dict[int, TypeInfo]:
    if not _SPEC_TYPES:
        # Used before the generated package was imported: load it by name, as the frame
        # decoder finds every version (amqp_codec.protocol); importing it hands the codes over.
        spec_named("99-0")
    return _SPEC_TYPES


@functools.cache
def type_info(code: int) -> TypeInfo | None:
    """The encoding of ``code``: the spec's constant, else the nibble rule; None if reserved."""
    known = _spec_types().get(code)
    if known is not None:
        return known
    widths = _NIBBLE_WIDTHS.get(code >> 4)
    if widths is None or not 0 <= code <= 0xFF:
        return None
    return TypeInfo(code, f"0x{code:02x}", widths[0], widths[1], "binary")


def _check_code(code: object) -> None:
    # The nibble rule alone, so that module-level values need not load the spec's table.
    if not isinstance(code, int) or not 0 <= code <= 0xFF or code >> 4 not in _NIBBLE_WIDTHS:
        raise AMQPEncodeError(f"type code {code!r} is reserved or not an octet")


def _is_text(info: TypeInfo) -> bool:
    """String codes read as str: the plain and UTF-8 ones (UTF-16/32 stay bytes)."""
    return info.datatype == "string" and "utf16" not in info.name and "utf32" not in info.name


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Typed:
    """A value with an explicit type code, e.g. ``Typed(0x22, 7)`` (unsigned-int)."""

    code: int
    value: Any

    def __post_init__(self) -> None:
        _check_code(self.code)


class FieldTable(Mapping[str, Any]):
    """A 99-0 field table: ordered ``(key, code, value)`` entries that read like a dict.

    Lookups return the first value of a duplicated key; :meth:`get_all` returns them all.
    Build one from a mapping or ``(key, value)`` pairs; :class:`Typed` values force a code.
    ``==`` against another ``FieldTable`` compares entries with their codes.
    """

    __slots__ = ("_entries",)

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        entries: list[tuple[str, int, Any]] = []
        for key, value in pairs:
            if not isinstance(key, str):
                raise AMQPEncodeError(f"field-table keys are str, not {type(key).__name__}")
            if isinstance(value, Typed):
                entries.append((key, value.code, value.value))
            else:
                entries.append((key, type_code_for(value, key), value))
        self._entries = tuple(entries)

    @classmethod
    def from_entries(cls, entries: Iterable[tuple[str, int, Any]]) -> FieldTable:
        """Wrap decoded ``(key, code, value)`` entries."""
        table = object.__new__(cls)
        table._entries = tuple(entries)
        return table

    def entries(self) -> list[tuple[str, int, Any]]:
        """The ``(key, code, value)`` entries in wire order."""
        return list(self._entries)

    def code(self, key: str) -> int:
        """The type code of the (first) value under ``key``."""
        for k, code, _value in self._entries:
            if k == key:
                return code
        raise KeyError(key)

    def get_all(self, key: str) -> list[Any]:
        """Every value under ``key``, in wire order."""
        return [value for k, _code, value in self._entries if k == key]

    def _first(self) -> dict[str, Any]:
        first: dict[str, Any] = {}
        for key, _code, value in self._entries:
            first.setdefault(key, value)
        return first

    def __getitem__(self, key: str) -> Any:
        for k, _code, value in self._entries:
            if k == key:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._first())

    def __len__(self) -> int:
        return len(self._first())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FieldTable):
            return self._entries == other._entries
        if isinstance(other, Mapping):
            return self._first() == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FieldTable({[(k, v) for k, _c, v in self._entries]!r})"


#: The empty table, shared: tables are immutable.
EMPTY_TABLE = FieldTable()


@dataclass(frozen=True, slots=True)
class Array:
    """An array: ``values`` all of the type ``code``, written without per-element codes."""

    code: int
    values: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        _check_code(self.code)
        object.__setattr__(self, "values", tuple(self.values))


#: The empty array as C++ writes it: void type, no elements.
EMPTY_ARRAY = Array(CODE_VOID)


def type_code_for(value: Any, field: str | None = None) -> int:
    """The type code a plain Python value is encoded with."""
    if isinstance(value, Typed):
        return value.code
    if value is None:
        return CODE_VOID
    if isinstance(value, bool):
        return CODE_BOOLEAN
    if isinstance(value, Timestamp):
        return CODE_DATETIME
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return CODE_SIGNED_INT
        if -(2**63) <= value < 2**63:
            return CODE_SIGNED_LONG
        if 0 <= value < 2**64:
            return CODE_UNSIGNED_LONG
        raise AMQPEncodeError(f"integer {value} does not fit 64 bits", field=field)
    if isinstance(value, float):
        return CODE_DOUBLE
    if isinstance(value, str):
        return CODE_LONG_STRING
    if isinstance(value, (bytes, bytearray, memoryview)):
        return CODE_LONG_BINARY
    if isinstance(value, Mapping):
        return CODE_TABLE
    if isinstance(value, Array):
        return CODE_ARRAY
    if isinstance(value, (list, tuple)):
        return CODE_SEQUENCE
    if isinstance(value, uuid.UUID):
        return CODE_UUID
    if isinstance(value, _dt.datetime):
        return CODE_DATETIME
    if isinstance(value, Decimal):
        return CODE_DECIMAL if _decimal_parts(value, 4, field)[2] else CODE_LONG_DECIMAL
    raise AMQPEncodeError(f"no field-table type for {type(value).__name__}", field=field)


def _decimal_parts(value: Decimal, width: int, field: str | None) -> tuple[int, int, bool]:
    """(scale, unscaled, fits in ``width`` bytes) of a finite decimal."""
    if not value.is_finite():
        raise AMQPEncodeError(f"decimal {value} is not finite", field=field)
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    if exponent > 0:
        unscaled *= 10**exponent
        exponent = 0
    scale = -exponent
    if scale > 255:
        raise AMQPEncodeError(f"decimal {value} needs a scale over 255", field=field)
    bits = 8 * width
    return scale, unscaled, -(2 ** (bits - 1)) <= unscaled < 2 ** (bits - 1)


# --------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------


def encode_table(table: Mapping[str, Any] | None, field: str = "") -> bytes:
    """A field table: long size, then key, type code and value per entry."""
    if table is None:
        table = EMPTY_TABLE
    parts: list[bytes] = [b""]
    if isinstance(table, FieldTable):
        entries: Iterable[tuple[str, Any]] = ((k, Typed(c, v)) for k, c, v in table._entries)
    elif isinstance(table, Mapping):
        entries = table.items()
    else:
        raise AMQPEncodeError(f"a table must be a mapping, not {type(table).__name__}", field=field)
    try:
        for key, value in entries:
            path = f'{field}["{key}"]' if isinstance(key, str) else f"{field}[{key!r}]"
            if not isinstance(key, str):
                raise AMQPEncodeError("field-table keys are str", field=path)
            code = type_code_for(value, path)
            raw = key.encode("utf-8", "surrogateescape")
            if len(raw) > 255:
                raise AMQPEncodeError("field-table key over 255 bytes", field=path)
            parts.append(_pack_B(len(raw)))
            parts.append(raw)
            parts.append(_pack_B(code))
            _encode_value(code, value, parts, path)
    except RecursionError:  # bounded by the interpreter's stack, not by a cap of ours
        raise AMQPEncodeError(
            "field table nests too deeply to encode (or contains itself)", field=field
        ) from None
    body_len = sum(len(p) for p in parts)
    if body_len > 0xFFFFFFFF:
        raise AMQPEncodeError(f"field table of {body_len} bytes overflows its size", field=field)
    parts[0] = _pack_I(body_len)
    return b"".join(parts)


def encode_array(array: Array, field: str = "") -> bytes:
    """An array: long size, element type code, long count, the elements."""
    if not isinstance(array, Array):
        raise AMQPEncodeError(f"an array must be an Array, not {type(array).__name__}", field=field)
    parts: list[bytes] = [b"", _pack_B(array.code), _pack_I(len(array.values))]
    for i, value in enumerate(array.values):
        _encode_value(array.code, value, parts, f"{field}[{i}]")
    size = sum(len(p) for p in parts)
    if len(array.values) > size:  # zero-width elements: a decoder refuses this (see above)
        raise AMQPEncodeError(
            f"an array of {len(array.values)} zero-width elements needs more than its {size} bytes",
            field=field,
        )
    if size > 0xFFFFFFFF:
        raise AMQPEncodeError(f"array of {size} bytes overflows its long size", field=field)
    parts[0] = _pack_I(size)
    return b"".join(parts)


def _encode_value(code: int, value: Any, parts: list[bytes], path: str) -> None:
    info = type_info(code)
    if info is None:
        raise AMQPEncodeError(f"type code 0x{code:02x} is reserved", field=path)
    while isinstance(value, Typed):
        if value.code != code:
            raise AMQPEncodeError(f"value typed 0x{value.code:02x} where 0x{code:02x}", field=path)
        value = value.value
    try:
        if info.lfwidth:
            raw = _variable_bytes(info, value, path)
            if len(raw) >= 1 << (8 * info.lfwidth):
                raise AMQPEncodeError(f"{len(raw)} bytes is too long for {info.name}", field=path)
            parts.append(len(raw).to_bytes(info.lfwidth, "big"))
            parts.append(raw)
        else:
            raw = _fixed_bytes(info, value, path)
            if len(raw) != info.width:
                raise AMQPEncodeError(
                    f"{info.name} takes {info.width} bytes, not {len(raw)}", field=path
                )
            parts.append(raw)
    except (TypeError, ValueError, OverflowError, AttributeError, struct.error) as exc:
        if isinstance(exc, AMQPEncodeError):
            raise
        raise AMQPEncodeError(
            f"cannot encode {value!r} as {info.name}: {exc}", field=path
        ) from None


def _fixed_bytes(info: TypeInfo, value: Any, path: str) -> bytes:
    datatype, width = info.datatype, info.width
    if isinstance(value, (bytes, bytearray)) and width:
        return bytes(value)  # raw bytes fit any fixed-width code (a NaN's payload, say)
    if datatype == "void" or width == 0:
        if value is not None:
            raise AMQPEncodeError(f"{info.name} holds only None", field=path)
        return b""
    if datatype in ("signed-integer", "unsigned-integer"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise AMQPEncodeError(f"{info.name} takes an int", field=path)
        return int(value).to_bytes(width, "big", signed=datatype == "signed-integer")
    if datatype == "boolean":
        return b"\x01" if value else b"\x00"
    if datatype == "ieee-float":
        return struct.pack(">f" if width == 4 else ">d", value)
    if info.name == "datetime":
        if isinstance(value, _dt.datetime):
            value = Timestamp.from_datetime(value)
        return int(value).to_bytes(8, "big")
    if info.name == "uuid" and isinstance(value, uuid.UUID):
        return value.bytes
    if datatype == "decimal":
        if not isinstance(value, Decimal):
            raise AMQPEncodeError(f"{info.name} takes a Decimal", field=path)
        scale, unscaled, fits = _decimal_parts(value, width - 1, path)
        if not fits:
            raise AMQPEncodeError(f"decimal {value} does not fit {info.name}", field=path)
        return bytes((scale,)) + unscaled.to_bytes(width - 1, "big", signed=True)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise AMQPEncodeError(f"{info.name} takes {width} bytes", field=path)


def _variable_bytes(info: TypeInfo, value: Any, path: str) -> bytes:
    datatype = info.datatype
    if datatype == "field-table":
        return encode_table(value, path)[4:]
    if datatype == "array":
        return encode_array(value, path)[4:]
    if datatype == "sequence":
        if not isinstance(value, (list, tuple)):
            raise AMQPEncodeError(f"{info.name} takes a list or tuple", field=path)
        parts: list[bytes] = []
        for i, item in enumerate(value):
            code = type_code_for(item, f"{path}[{i}]")
            parts.append(_pack_B(code))
            _encode_value(code, item, parts, f"{path}[{i}]")
        return b"".join(parts)
    if isinstance(value, str) and datatype == "string":
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise AMQPEncodeError(
        f"{info.name} takes bytes{' or str' * (datatype == 'string')}", field=path
    )


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def _cut(what: str, offset: int) -> FrameSyntaxError:
    return FrameSyntaxError(f"{what} runs past the end of its container", offset=offset)


def decode_table(
    buf: bytes, o: int, end: int, depth: int = DEFAULT_MAX_TABLE_DEPTH
) -> tuple[FieldTable, int]:
    """Decode a field table at ``buf[o:]``, reading nothing past ``end``.

    Returns the table and the offset after it; raises :class:`AMQPDecodeError` with the
    buffer offset of the problem.
    """
    if o + 4 > end:
        raise _cut("field table size", o)
    (size,) = _unpack_I(buf, o)
    start, stop = o + 4, o + 4 + size
    if stop > end:
        raise _cut(f"field table of {size} bytes", o)
    if not size:
        return EMPTY_TABLE, stop
    if depth <= 0:
        raise LimitExceededError(
            "field tables nest deeper than max_table_depth", reply_code=502, offset=o
        )
    entries = []
    p = start
    while p < stop:
        n = buf[p]
        if p + 1 + n + 1 > stop:
            raise _cut("field-table key", p)
        key = buf[p + 1 : p + 1 + n].decode("utf-8", "surrogateescape")
        p += 1 + n
        code = buf[p]
        value, p = _decode_value(code, buf, p + 1, stop, depth - 1, key)
        entries.append((key, code, value))
    return FieldTable.from_entries(entries), stop


def decode_array(
    buf: bytes, o: int, end: int, depth: int = DEFAULT_MAX_TABLE_DEPTH
) -> tuple[Array, int]:
    """Decode an array (long size, type code, long count, elements) at ``buf[o:]``."""
    if o + 4 > end:
        raise _cut("array size", o)
    (size,) = _unpack_I(buf, o)
    stop = o + 4 + size
    if stop > end:
        raise _cut(f"array of {size} bytes", o)
    if size < 5:
        raise FrameSyntaxError(f"array of {size} bytes has no type code and count", offset=o)
    if depth <= 0:
        raise LimitExceededError(
            "arrays nest deeper than max_table_depth", reply_code=502, offset=o
        )
    code = buf[o + 4]
    (count,) = _unpack_I(buf, o + 5)
    info = type_info(code)
    if info is None:
        raise FrameSyntaxError(f"array of reserved type code 0x{code:02x}", offset=o + 4)
    if count > size:
        raise FrameSyntaxError(
            f"array of {size} bytes claims {count} elements, more than it has bytes", offset=o + 5
        )
    p = o + 9
    values = []
    for i in range(count):
        value, p = _decode_value(code, buf, p, stop, depth - 1, f"[{i}]")
        values.append(value)
    if p != stop:
        raise FrameSyntaxError(f"array elements end {p - stop:+d} bytes from its size", offset=p)
    return Array(code, tuple(values)), stop


def _decode_value(
    code: int, buf: bytes, p: int, stop: int, depth: int, key: str
) -> tuple[Any, int]:
    info = type_info(code)
    if info is None:
        raise FrameSyntaxError(f"reserved type code 0x{code:02x} for {key!r}", offset=p - 1)
    if info.lfwidth:
        w = info.lfwidth
        if p + w > stop:
            raise _cut(f"length of {key!r}", p)
        n = int.from_bytes(buf[p : p + w], "big")
        if p + w + n > stop:
            raise _cut(f"value of {key!r} ({n} bytes)", p)
        datatype = info.datatype
        if datatype == "field-table":
            return decode_table(buf, p, p + 4 + n, depth)
        if datatype == "array":
            return decode_array(buf, p, p + 4 + n, depth)
        start, end = p + w, p + w + n
        if datatype == "sequence":
            if depth <= 0:
                raise LimitExceededError(
                    "sequences nest deeper than max_table_depth", reply_code=502, offset=p
                )
            items = []
            q = start
            while q < end:
                item_code = buf[q]
                item, q = _decode_value(item_code, buf, q + 1, end, depth - 1, f"{key}[]")
                items.append(Typed(item_code, item))
            return tuple(items), end
        raw = buf[start:end]
        if _is_text(info):
            return raw.decode("utf-8", "surrogateescape"), end
        return raw, end
    width = info.width
    if p + width > stop:
        raise _cut(f"value of {key!r} ({info.name})", p)
    raw = buf[p : p + width]
    end = p + width
    datatype = info.datatype
    if datatype == "signed-integer":
        return int.from_bytes(raw, "big", signed=True), end
    if datatype == "unsigned-integer":
        return int.from_bytes(raw, "big"), end
    if datatype == "boolean":
        if raw[0] > 1:
            raise FrameSyntaxError(f"boolean {key!r} is {raw[0]}, not 0 or 1", offset=p)
        return raw[0] == 1, end
    if datatype == "ieee-float":
        value = struct.unpack(">f" if width == 4 else ">d", raw)[0]
        if value != value:  # NaN payloads do not survive a float: keep the bytes
            return Typed(code, raw), end
        return value, end
    if info.name == "datetime":
        return Timestamp(int.from_bytes(raw, "big")), end
    if info.name == "uuid":
        return uuid.UUID(bytes=raw), end
    if datatype == "decimal":
        scale, unscaled = raw[0], int.from_bytes(raw[1:], "big", signed=True)
        return Decimal(f"{unscaled}E-{scale}"), end
    if datatype == "void" or width == 0:
        return None, end
    return raw, end


def sequence_values(values: Sequence[Any]) -> list[Any]:
    """The plain values of a decoded sequence (codes dropped)."""
    return [v.value if isinstance(v, Typed) else v for v in values]
