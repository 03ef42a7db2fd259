"""AMQP field tables and field arrays.

Decoding accepts the union of value tags seen in the wild, with RabbitMQ's meanings:

====  ==========================  ==================
tag   wire type                   Python value
====  ==========================  ==================
t     boolean octet (0 or 1)      bool
b/B   signed/unsigned 8-bit       int
U/s   signed 16-bit               int
u     unsigned 16-bit             int
I/i   signed/unsigned 32-bit      int
l/L   signed 64-bit               int
f/d   IEEE 754 32/64-bit float    float
D     scale octet + int32         decimal.Decimal (see below)
S     long string                 str (bytes if not UTF-8)
x     byte array                  bytes
A     field array                 FieldArray
T     64-bit timestamp            Timestamp (an int)
F     nested field table          FieldTable
V     void                        None
====  ==========================  ==================

Every version decodes every tag by default, as RabbitMQ does: AMQP 0-8's grammar names only
S I D T F, yet RabbitMQ accepts the others from 0-8 clients and relays 0-9-1 publishers'
headers to 0-8 consumers unchanged. A version's own grammar is in
``ProtocolSpec.table_tags``; :class:`~amqp_codec.FrameDecoder` enforces it only in its opt-in
strict mode (``strict_tags=True``), through :func:`check_table_tags`, which names the field path
and the tag.

Encoding writes the tags the values carry. A version with a smaller grammar encodes plain
values within it (:func:`table_encoder`: 0-8 writes bytes as ``S`` and refuses a bool, a float,
None, a list or a 64-bit int with an :class:`AMQPEncodeError` that says what to do), while a
:class:`FieldTable`, a :class:`FieldArray` and :class:`Tagged` keep their tags.

Decimals: peers disagree on the sign of the 32-bit digits (unsigned in the 0-9-1 grammar,
two's complement in most clients, sign and magnitude in the .NET client). They are read and
written as two's complement, which maps every bit pattern to one value and back;
:func:`reread_decimal` gives the value another reading sees in the same bytes
(``docs/field-tables.md`` has the table of peers).

A decoded table keeps key order, duplicate keys and every value's tag, so it re-encodes byte
for byte; it still reads like a dict. Plain Python values are encoded the way RabbitMQ's own
clients do (see :func:`tag_for`); :class:`Tagged` forces any tag.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, cast

from ._table_decode import _EXACT, DEFAULT_MAX_TABLE_DEPTH, _key_step, decode_table
from ._table_values import (
    _EPOCH,
    _EPOCH_NAIVE,
    EMPTY_TABLE,
    FieldArray,
    FieldTable,
    Tagged,
    Timestamp,
    _Float32NaN,
    tag_for,
)
from .errors import AMQPDecodeError, AMQPEncodeError, FrameSyntaxError

__all__ = [
    "DEFAULT_MAX_TABLE_DEPTH",
    "EMPTY_TABLE",
    "FieldArray",
    "FieldTable",
    "Tagged",
    "Timestamp",
    "check_table_tags",
    "decode_table",
    "encode_table",
    "reread_decimal",
    "table_encoder",
    "tag_for",
]

_U32 = struct.Struct(">I")
_unpack_I = _U32.unpack_from
_pack_I = _U32.pack
_unpack_i = struct.Struct(">i").unpack_from
_unpack_l = struct.Struct(">q").unpack_from
_unpack_T = struct.Struct(">Q").unpack_from
_unpack_d = struct.Struct(">d").unpack_from
_unpack_f = struct.Struct(">f").unpack_from
_unpack_h = struct.Struct(">h").unpack_from
_unpack_H = struct.Struct(">H").unpack_from
_unpack_b = struct.Struct(">b").unpack_from
_unpack_D = struct.Struct(">Bi").unpack_from

# Integer tags: struct code and the range a value must be in to be encoded with that tag.
_INTEGER_TAGS: dict[str, tuple[str, int, int]] = {
    "b": ("b", -(2**7), 2**7 - 1),
    "B": ("B", 0, 2**8 - 1),
    "U": ("h", -(2**15), 2**15 - 1),
    "s": ("h", -(2**15), 2**15 - 1),
    "u": ("H", 0, 2**16 - 1),
    "I": ("i", -(2**31), 2**31 - 1),
    "i": ("I", 0, 2**32 - 1),
    "l": ("q", -(2**63), 2**63 - 1),
    "L": ("q", -(2**63), 2**63 - 1),
    "T": ("Q", 0, 2**64 - 1),
}


def check_table_tags(
    value: FieldTable | FieldArray, allowed: frozenset[str], version: str = "this protocol version"
) -> None:
    """Raise :class:`FrameSyntaxError` (502) if a decoded table or array, at any depth, holds
    a value whose wire tag is not in ``allowed``; ``field`` is the path to it and the message
    names the tag and ``version``'s grammar.

    Decoding accepts every tag the codec knows; the strict mode of a version with a smaller
    grammar (0-8: S I D T F) is this walk over the decoded entries, which keep their tags.
    """
    if isinstance(value, FieldArray):
        entries = [("", tag, v) for tag, v in zip(value._tags, value._values, strict=True)]
    else:
        entries = value._entries
    for i, (key, tag, v) in enumerate(entries):
        if tag in allowed and tag != "F" and tag != "A":
            continue  # the common case: a scalar of an allowed tag
        try:
            if tag not in allowed:
                raise FrameSyntaxError(
                    f"field-table value tag {tag!r} is not in {version}'s grammar, whose tags "
                    f"are {' '.join(sorted(allowed))} (strict mode)"
                )
            check_table_tags(v, allowed, version)
        except AMQPDecodeError as exc:
            step = f"[{i}]" if isinstance(value, FieldArray) else _key_step(key)
            exc.field = step + (exc.field or "")
            raise


# --------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------


def encode_table(table: Mapping[str, Any] | None, field: str = "") -> bytes:
    """Encode a field table with its 4-byte size prefix. ``None`` encodes as an empty table.

    A :class:`FieldTable` keeps its order, duplicates and tags; a plain mapping is encoded in
    its iteration order with :func:`tag_for` tags. Raises :class:`AMQPEncodeError` whose
    ``field`` is the path of the bad value, starting with ``field``.
    """
    if not table:
        return b"\x00\x00\x00\x00"
    parts: list[bytes] = []
    try:
        _encode_entries(table, parts)
    except AMQPEncodeError as exc:
        exc.field = field + (exc.field or "")
        raise
    except AttributeError:  # not a mapping
        raise AMQPEncodeError(
            f"a field table takes a mapping, not {type(table).__name__}", field=field
        ) from None
    except RecursionError:  # bounded by the interpreter's stack, not by a cap of ours
        raise AMQPEncodeError(
            "field table nests too deeply to encode (or contains itself)", field=field
        ) from None
    body = b"".join(parts)
    return _pack_I(len(body)) + body


# Key length prefixes, by length.
_KEY_LENGTH: tuple[bytes, ...] = tuple(bytes((n,)) for n in range(256))
_pack_tag_size = struct.Struct(">BI").pack  # tag + 32-bit size of S, x, F, A
_pack_tag_int = struct.Struct(">Bi").pack  # tag + signed 32-bit value
_pack_tag_double = struct.Struct(">Bd").pack


# Encoded keys with their length prefix. Tables repeat the same few keys message after
# message, so this saves most of the key work; it is cleared when full to bound its size.
_key_cache: dict[str, bytes] = {}
_KEY_CACHE_SIZE = 4096


def _encoded_key(key: str) -> bytes:
    if not isinstance(key, str):
        raise AMQPEncodeError(f"field-table keys are str, not {type(key).__name__}")
    raw = key.encode("utf-8", "surrogateescape")
    if len(raw) > 255:
        raise AMQPEncodeError(f"field-table key is {len(raw)} bytes; the limit is 255")
    if len(_key_cache) >= _KEY_CACHE_SIZE:
        _key_cache.clear()
    prefixed = _key_cache[key] = _KEY_LENGTH[len(raw)] + raw
    return prefixed


def _encode_entries(table: Mapping[str, Any], parts: list[bytes]) -> None:
    """Append the entries of ``table``; errors carry the path below ``table``."""
    key: Any = ""
    try:
        if type(table) is FieldTable:
            for key, tag, value in table._entries:
                parts.append(_key_cache.get(key) or _encoded_key(key))
                _encode_value(tag, value, parts)
            return
        for key, value in table.items():
            parts.append(_key_cache.get(key) or _encoded_key(key))
            # _append_plain's first two branches, repeated: strings and ints are most entries
            # of real tables, and the call costs about as much as encoding one (the 10-entry
            # table of the benchmark: 4.3 us with the call, 4.1 us without).
            t = type(value)
            if t is str:
                raw = value.encode()
                parts.append(_pack_tag_size(83, len(raw)))
                parts.append(raw)
            elif t is int and -2147483648 <= value <= 2147483647:
                parts.append(_pack_tag_int(73, value))
            else:
                _append_plain(value, parts)
    except AMQPEncodeError as exc:
        exc.field = _key_step(key) + (exc.field or "")
        raise
    except (TypeError, UnicodeEncodeError) as exc:  # an unhashable key; a lone surrogate
        if not isinstance(key, str):
            raise AMQPEncodeError(f"field-table keys are str, not {type(key).__name__}") from None
        raise AMQPEncodeError(f"cannot encode value: {exc}", field=_key_step(key)) from None


def _append_plain(value: Any, parts: list[bytes]) -> None:
    """Append a plain value with the tag :func:`tag_for` gives it; common types inline."""
    t = type(value)
    if t is str:
        raw = value.encode()
        parts.append(_pack_tag_size(83, len(raw)))
        parts.append(raw)
    elif t is int and -2147483648 <= value <= 2147483647:
        parts.append(_pack_tag_int(73, value))
    elif t is bool:
        parts.append(b"t\x01" if value else b"t\x00")
    elif value is None:
        parts.append(b"V")
    elif t is dict:
        # Nested containers are encoded here rather than through encode_table and
        # _encode_array: their tag and size go out in one pack, with no extra call or copy.
        if value:
            nested: list[bytes] = []
            _encode_entries(value, nested)
            body = b"".join(nested)
            parts.append(_pack_tag_size(70, len(body)))
            parts.append(body)
        else:
            parts.append(b"F\x00\x00\x00\x00")
    elif t is bytes:
        parts.append(_pack_tag_size(120, len(value)))
        parts.append(value)
    elif t is float:
        parts.append(_pack_tag_double(100, value))
    elif t is list:
        body = _plain_items(value)
        parts.append(_pack_tag_size(65, len(body)))
        parts.append(body)
    elif t is Decimal:
        parts.append(_encode_decimal(value))
    elif t is _dt.datetime:
        delta = value - (_EPOCH_NAIVE if value.tzinfo is None else _EPOCH)
        seconds = delta.days * 86400 + delta.seconds  # Timestamp.from_datetime, inline
        if seconds < 0:
            raise AMQPEncodeError("timestamps before 1970 do not fit an AMQP timestamp")
        parts.append(_pack_tag_timestamp(84, seconds))
    elif t is Tagged:
        _encode_value(value.tag, value.value, parts)
    else:
        _encode_value(tag_for(value), value, parts)


def _encode_value(tag: str, value: Any, parts: list[bytes]) -> None:
    """Append ``tag`` and ``value`` encoded as that tag; errors carry the path below it."""
    try:
        encode = _VALUE_ENCODERS[tag]
    except KeyError:
        raise AMQPEncodeError(f"unknown field-table tag {tag!r}") from None
    try:
        parts.append(encode(value))
    except (OverflowError, struct.error) as exc:
        raise AMQPEncodeError(f"cannot encode {value!r} as tag {tag!r}: {exc}") from None


def _integer_encoder(tag: str) -> Callable[[Any], bytes]:
    struct_code, low, high = _INTEGER_TAGS[tag]
    with_tag = struct.Struct(">B" + struct_code).pack
    code = ord(tag)

    def encode(value: Any) -> bytes:
        if isinstance(value, bool) or not isinstance(value, int):
            raise AMQPEncodeError(f"tag {tag!r} takes an int, not {value!r}")
        if not low <= value <= high:
            raise AMQPEncodeError(f"{value} is out of range for tag {tag!r} ({low}..{high})")
        return with_tag(code, value)

    return encode


def _float_encoder(tag: str) -> Callable[[Any], bytes]:
    with_tag = struct.Struct(">B" + tag).pack
    code = ord(tag)

    def encode(value: Any) -> bytes:
        if type(value) is _Float32NaN and tag == "f":
            return b"f" + value.bits
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise AMQPEncodeError(f"tag {tag!r} takes a float, not {value!r}")
        if isinstance(value, int) and float(value) != value:
            raise AMQPEncodeError(f"int {value} is not exactly representable as a float")
        return with_tag(code, value)

    return encode


def _encode_string(tag: str) -> Callable[[Any], bytes]:
    code = ord(tag)

    def encode(value: Any) -> bytes:
        if isinstance(value, str):
            if tag == "x":
                raise AMQPEncodeError("tag 'x' takes bytes, not str")
            raw = value.encode()
        elif isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
        else:
            raise AMQPEncodeError(f"tag {tag!r} takes str or bytes, not {type(value).__name__}")
        return _pack_tag_size(code, len(raw)) + raw

    return encode


def _encode_nested_table(value: Any) -> bytes:
    if not isinstance(value, Mapping):
        raise AMQPEncodeError(f"tag 'F' takes a mapping, not {type(value).__name__}")
    return b"F" + encode_table(value)


def _encode_bool(value: Any) -> bytes:
    if type(value) is not bool and value not in (0, 1):
        raise AMQPEncodeError(f"tag 't' takes a bool, not {value!r}")
    return b"t\x01" if value else b"t\x00"


def _encode_void(value: Any) -> bytes:
    if value is not None:
        raise AMQPEncodeError(f"tag 'V' takes None, not {value!r}")
    return b"V"


_encode_timestamp_int = _integer_encoder("T")


_pack_tag_timestamp = struct.Struct(">BQ").pack


def _encode_timestamp(value: Any) -> bytes:
    if not isinstance(value, _dt.datetime):
        return _encode_timestamp_int(value)
    seconds = int(Timestamp.from_datetime(value))
    if seconds < 0:
        raise AMQPEncodeError("timestamps before 1970 do not fit an AMQP timestamp")
    try:
        return _pack_tag_timestamp(84, seconds)
    except struct.error:  # unreachable for real datetimes (year 9999 fits): kept for safety
        raise AMQPEncodeError(f"{value} does not fit an AMQP timestamp") from None


_VALUE_ENCODERS: dict[str, Callable[[Any], bytes]] = {
    **{tag: _integer_encoder(tag) for tag in _INTEGER_TAGS if tag != "T"},
    "d": _float_encoder("d"),
    "f": _float_encoder("f"),
    "S": _encode_string("S"),
    "x": _encode_string("x"),
    "F": _encode_nested_table,
    "A": lambda value: b"A" + _encode_array(value),
    "t": _encode_bool,
    "V": _encode_void,
    "D": lambda value: _encode_decimal(value),  # defined below
    "T": _encode_timestamp,
}


def _encode_array(values: Any) -> bytes:
    if isinstance(values, FieldArray):
        parts: list[bytes] = []
        for tag, value in zip(values._tags, values._values, strict=True):
            _encode_value(tag, value, parts)
        body = b"".join(parts)
    elif isinstance(values, (list, tuple)):
        body = _plain_items(values)
    else:
        raise AMQPEncodeError(f"tag 'A' takes a list or tuple, not {type(values).__name__}")
    return _pack_I(len(body)) + body


def _plain_items(values: list[Any] | tuple[Any, ...]) -> bytes:
    """The items of a plain array, encoded and joined; errors carry the item's index."""
    parts: list[bytes] = []
    position = 0
    try:
        for value in values:
            _append_plain(value, parts)
            position += 1
    except AMQPEncodeError as exc:
        exc.field = f"[{position}]" + (exc.field or "")
        raise
    return b"".join(parts)


def _encode_decimal(value: Any) -> bytes:
    """The tag ``D`` and the decimal's scale and digits."""
    if not isinstance(value, Decimal):
        raise AMQPEncodeError(f"tag 'D' takes a decimal.Decimal, not {type(value).__name__}")
    # str() of a Decimal is exact; without an exponent it is digits with an optional point,
    # which is the quickest way to the scale and the digits (as_tuple() costs five times more).
    text = str(value)
    if len(text) > 258:  # more than a sign, "0." and 255 digits: no AMQP decimal is this long
        raise AMQPEncodeError(
            f"{text[:20]}... does not fit an AMQP decimal (scale 0..255, signed 32-bit digits)"
        )
    whole, _, fraction = text.partition(".")
    digits = whole + fraction
    if digits.isdigit() or (digits[0] == "-" and digits[1:].isdigit()):
        scale, mantissa = len(fraction), int(digits)
    else:  # an exponent (1E+2, 1.5E-7), or no number (NaN, Infinity)
        scale, mantissa = _scale_and_digits(value)
    if scale > 255 or not -(2**31) <= mantissa < 2**31:
        raise AMQPEncodeError(
            f"{value} does not fit an AMQP decimal (scale 0..255, signed 32-bit digits)"
        )
    return _pack_tag_decimal(68, scale, mantissa)


def _scale_and_digits(value: Decimal) -> tuple[int, int]:
    """A decimal with an exponent: its scale and digits (digits past 32 bits when too big);
    raises for one that is not finite."""
    if not value.is_finite():
        raise AMQPEncodeError(f"{value} cannot be an AMQP decimal")
    exponent = cast(int, value.as_tuple().exponent)  # an int for every finite Decimal
    scale = max(-exponent, 0)  # 1E+2 is written exactly as 100 with scale 0
    # adjusted() >= 10 means |value| >= 1e10: too big, and not worth building the int.
    too_big = bool(value) and value.adjusted() >= 10
    mantissa = 2**31 if too_big or scale > 255 else int(value.scaleb(scale, _EXACT))
    return scale, mantissa


_pack_tag_decimal = struct.Struct(">BBi").pack


# --------------------------------------------------------------------------------------------
# Encoding within a version's smaller grammar (0-8)
# --------------------------------------------------------------------------------------------

# What to write instead when a plain value's usual tag is outside the grammar, and the advice
# for when nothing fits. 0-8's long string carries any octets, so bytes fit ``S``.
_FALLBACK_TAGS: dict[str, str] = {"x": "S"}
_NO_TAG_ADVICE: dict[str, str] = {
    "t": "write 1 or 0 for 'I', or Tagged('t', value) for the 0-9-1 boolean",
    "l": "Tagged('l', value) writes the 0-9-1 64-bit integer",
    "d": "a decimal.Decimal fits 'D', or Tagged('d', value) writes the 0-9-1 double",
    "V": "leave the key out, or write Tagged('V', None) for the 0-9-1 void",
    "A": "Tagged('A', [...]) writes the 0-9-1 array",
}


def table_encoder(
    tags: str | frozenset[str] | None, version: str = "this protocol version"
) -> Callable[..., bytes]:
    """An :func:`encode_table` that writes plain values only with ``tags`` (``None``: every
    tag, which returns :func:`encode_table` itself).

    Plain values get :func:`tag_for`'s tag when it is in ``tags``; bytes fall back to ``S``;
    a value with no tag in ``tags`` (0-8: a bool, a float, None, a list, an int past signed
    32-bit) raises :class:`AMQPEncodeError` naming its path, its type, ``version`` and the way
    out. RabbitMQ accepts the 0-9-1 tags on a 0-8 connection, so the way out is often
    :class:`Tagged`, which, like a :class:`FieldTable` or :class:`FieldArray` (a decoded table
    re-encodes byte for byte), is written with the tags it holds.
    """
    if tags is None:
        return encode_table
    allowed = frozenset(tags)

    def encode_within(table: Mapping[str, Any] | None, field: str = "") -> bytes:
        if not table or type(table) is FieldTable:
            return encode_table(table, field)
        try:
            within = _table_within(table, allowed, version)
        except AMQPEncodeError as exc:
            exc.field = field + (exc.field or "")
            raise
        return encode_table(within, field)

    encode_within.__doc__ = f"encode_table with plain values written within {version}'s tags."
    return encode_within


def _table_within(table: Any, allowed: frozenset[str], version: str) -> FieldTable:
    """``table`` (a plain mapping) as a FieldTable whose plain values have tags in ``allowed``."""
    if not isinstance(table, Mapping):
        raise AMQPEncodeError(f"a field table takes a mapping, not {type(table).__name__}")
    entries: list[tuple[str, str, Any]] = []
    for key, value in table.items():
        try:
            entries.append((key, *_tagged_within(value, allowed, version)))
        except AMQPEncodeError as exc:
            exc.field = _key_step(key) + (exc.field or "")
            raise
    return FieldTable.from_entries(entries)


def _tagged_within(value: Any, allowed: frozenset[str], version: str) -> tuple[str, Any]:
    """The tag and value to write a value with, choosing tags in ``allowed`` for plain ones."""
    if type(value) is Tagged:
        return value.tag, value.value
    if isinstance(value, (FieldTable, FieldArray)):
        return ("F" if isinstance(value, FieldTable) else "A"), value
    tag = tag_for(value)
    if tag not in allowed:
        fallback = _FALLBACK_TAGS.get(tag)
        if fallback is None or fallback not in allowed:
            advice = _NO_TAG_ADVICE.get(tag)
            raise AMQPEncodeError(
                f"{_no_tag(value, tag)} in {version} (tags {' '.join(sorted(allowed))}): "
                + (f"{advice}, which RabbitMQ accepts" if advice else "wrap it in Tagged")
            )
        tag = fallback
    if tag == "F":
        return tag, _table_within(value, allowed, version)
    if tag == "A":  # only when the grammar has arrays: their items stay within it too
        items = []
        for i, item in enumerate(value):
            try:
                items.append(("", *_tagged_within(item, allowed, version)))
            except AMQPEncodeError as exc:
                exc.field = f"[{i}]" + (exc.field or "")
                raise
        return tag, FieldArray.from_entries(items)
    return tag, value


def _no_tag(value: Any, tag: str) -> str:
    if tag == "l":
        return f"int {value} does not fit 'I', the only integer tag (signed 32-bit),"
    what = "None" if value is None else f"a {type(value).__name__}"
    return f"{what} has no field-table tag"


# --------------------------------------------------------------------------------------------
# Decimals: the readings of the 32-bit digits
# --------------------------------------------------------------------------------------------

#: How peers read the 32-bit digits of a decimal (``docs/field-tables.md`` lists who does
#: what); the codec reads and writes ``"twos-complement"``.
DECIMAL_READINGS = ("twos-complement", "sign-magnitude", "unsigned")
_unpack_decimal_raw = struct.Struct(">BI").unpack


def reread_decimal(value: Decimal, reading: str) -> Decimal:
    """The decimal that a peer reading the digits as ``reading`` sees in the bytes ``value``
    is written as (and decoded from): the same scale, the same 32 bits.

    For example the .NET client writes -0.001 as scale 3, digits ``80 00 00 01``, which
    decodes as ``Decimal("-2147483.647")``; ``reread_decimal(that, "sign-magnitude")`` is
    ``Decimal("-0.001")``. Raises :class:`AMQPEncodeError` if ``value`` does not fit a decimal,
    ``ValueError`` for an unknown reading.
    """
    if reading not in DECIMAL_READINGS:
        raise ValueError(f"reading must be one of {', '.join(DECIMAL_READINGS)}, not {reading!r}")
    scale, raw = _unpack_decimal_raw(_encode_decimal(value)[1:])
    if reading == "unsigned":
        digits = Decimal(raw)
    elif reading == "sign-magnitude":
        digits = Decimal(raw & 0x7FFFFFFF)
        if raw >> 31:
            digits = digits.copy_negate()  # keeps -0 (80 00 00 00), a value of its own
    else:
        digits = Decimal(raw - (raw >> 31 << 32))
    return digits.scaleb(-scale, _EXACT)
