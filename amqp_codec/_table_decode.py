"""Decoding field tables: the hot loop of every content header and of many methods.

Apart from :mod:`amqp_codec.table` (which re-exports :func:`decode_table` and documents the
format) so that the compiled build (see :mod:`amqp_codec._compiled`) compiles decoding only:
decoding's recursion is bounded by ``max_depth``, where encoding relies on the interpreter's
recursion limit, which compiled calls do not check.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from typing import Any, Final

from ._table_values import (
    EMPTY_TABLE,
    FieldArray,
    FieldTable,
    Timestamp,
    _Float32NaN,
    _new,
    _set_entries,
    _set_tags,
    _set_values,
)
from .errors import AMQPDecodeError, FrameSyntaxError, LimitExceededError

__all__ = ["DEFAULT_MAX_TABLE_DEPTH", "decode_table"]

#: Nesting deeper than this is rejected: real tables (``x-death``) nest three or four levels.
DEFAULT_MAX_TABLE_DEPTH = 32

# Sizes typed as ints, so that a compiled build works on native ints from them (values stay
# the objects struct made).
_unpack_I: Final[Callable[[bytes, int], tuple[int]]] = struct.Struct(">I").unpack_from
_unpack_i: Final = struct.Struct(">i").unpack_from
_unpack_l: Final = struct.Struct(">q").unpack_from
_unpack_T: Final = struct.Struct(">Q").unpack_from
_unpack_d: Final = struct.Struct(">d").unpack_from
_unpack_f: Final = struct.Struct(">f").unpack_from
_unpack_h: Final = struct.Struct(">h").unpack_from
_unpack_H: Final = struct.Struct(">H").unpack_from
_unpack_b: Final = struct.Struct(">b").unpack_from
_unpack_D: Final = struct.Struct(">Bi").unpack_from
# The value types under Final names: a compiled build reads them as C statics.
_FieldTable: Final = FieldTable
_Timestamp: Final = Timestamp
_Decimal: Final = Decimal
_new_value: Final = _new
_set_table_entries: Final = _set_entries
_set_array_values: Final = _set_values
_set_array_tags: Final = _set_tags
# Decimals are scaled in this context: enough precision that scaleb never rounds, whatever
# the caller's decimal context says.
_EXACT: Final = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def decode_table(
    buf: bytes, offset: int, end: int, max_depth: int = DEFAULT_MAX_TABLE_DEPTH
) -> tuple[FieldTable, int]:
    """Decode a field table (4-byte size, then entries) at ``buf[offset:]``.

    ``end`` bounds the enclosing frame payload: nothing past it is read. Returns the table and
    the offset just after it. Raises :class:`AMQPDecodeError` (502) with the path to the bad
    value in ``field``.
    """
    if offset + 4 > end:  # checked against end, not the buffer: bytes past end are not ours
        raise FrameSyntaxError("field table size cut off by the end of the frame")
    try:
        (size,) = _unpack_I(buf, offset)
    except struct.error:  # an ``end`` past the buffer's own end
        raise FrameSyntaxError("field table size cut off by the end of the buffer") from None
    start = offset + 4
    stop = start + size
    if stop > end:
        raise FrameSyntaxError(f"field table of {size} bytes runs past the end of the frame")
    if not size:
        return EMPTY_TABLE, stop
    entries = _fast_entries(buf, start, stop, max_depth)
    if entries is None:  # something is wrong: the checked decoder says what and where
        entries = _decode_entries(buf, start, stop, max_depth)
    table = _new_value(_FieldTable)
    _set_table_entries(table, entries)
    return table, stop


# The fast path. Valid tables are decoded without the bounds check before every read that
# _decode_entries makes: a fixed-size read may run up to 8 bytes past ``end`` (never past the
# buffer: that raises, and is caught), and then the loop ends with ``o != end``. What starts
# a range of its own (a string, a nested table or array) is still checked against ``end``
# first, so nothing is decoded from bytes past it. On any doubt the result is ``None`` and
# the caller decodes the same bytes again with _decode_entries, which gives the same value
# for a valid table (tests/test_table_fast.py checks that) and the located error for a bad
# one: at most twice the work, still linear.


def _fast_entries(buf: bytes, o: int, end: int, depth: int) -> list[tuple[str, str, Any]] | None:
    """The entries of the table in ``buf[o:end]``, or ``None`` if they are not all valid."""
    entries: list[tuple[str, str, Any]] = []
    try:
        while o < end:
            stop = o + 1 + buf[o]
            try:
                key = buf[o + 1 : stop].decode()
            except UnicodeDecodeError:
                key = buf[o + 1 : stop].decode("utf-8", "surrogateescape")
            tag = buf[stop]
            o = stop + 1
            if tag == 83:  # S
                stop = o + 4 + _unpack_I(buf, o)[0]
                if stop > end:
                    return None
                raw = buf[o + 4 : stop]
                try:
                    entries.append((key, "S", raw.decode()))
                except UnicodeDecodeError:
                    entries.append((key, "S", raw))
                o = stop
            elif tag == 73:  # I
                entries.append((key, "I", _unpack_i(buf, o)[0]))
                o += 4
            elif tag == 116:  # t
                b = buf[o]
                if b == 1:
                    entries.append((key, "t", True))
                elif b == 0:
                    entries.append((key, "t", False))
                else:
                    return None
                o += 1
            elif tag == 70:  # F
                stop = o + 4 + _unpack_I(buf, o)[0]
                if stop > end or depth <= 0:
                    return None
                nested = _fast_entries(buf, o + 4, stop, depth - 1)
                if nested is None:
                    return None
                table = _new_value(_FieldTable)
                _set_table_entries(table, nested)
                entries.append((key, "F", table))
                o = stop
            elif tag == 108:  # l
                entries.append((key, "l", _unpack_l(buf, o)[0]))
                o += 8
            elif tag == 65:  # A
                stop = o + 4 + _unpack_I(buf, o)[0]
                if stop > end or depth <= 0:
                    return None
                array = _fast_array(buf, o + 4, stop, depth - 1)
                if array is None:
                    return None
                entries.append((key, "A", array))
                o = stop
            elif tag == 120:  # x
                stop = o + 4 + _unpack_I(buf, o)[0]
                if stop > end:
                    return None
                entries.append((key, "x", buf[o + 4 : stop]))
                o = stop
            elif tag == 84:  # T
                entries.append((key, "T", _Timestamp(_unpack_T(buf, o)[0])))
                o += 8
            elif tag == 86:  # V
                entries.append((key, "V", None))
            else:
                o = _fast_other(buf, o, tag, key, entries)
                if o < 0:
                    return None
    except (IndexError, struct.error):
        return None
    if o != end:
        return None
    return entries


def _fast_array(buf: bytes, o: int, end: int, depth: int) -> FieldArray | None:
    """The array in ``buf[o:end]``, or ``None`` if its values are not all valid."""
    entries: list[tuple[str, str, Any]] = []
    values: list[Any] = []
    tags: list[str] = []
    try:
        while o < end:
            tag = buf[o]
            o += 1
            if tag == 83:  # S
                stop = o + 4 + _unpack_I(buf, o)[0]
                if stop > end:
                    return None
                raw = buf[o + 4 : stop]
                try:
                    values.append(raw.decode())
                except UnicodeDecodeError:
                    values.append(raw)
                tags.append("S")
                o = stop
            elif tag == 73:  # I
                values.append(_unpack_i(buf, o)[0])
                tags.append("I")
                o += 4
            elif tag == 116:  # t
                b = buf[o]
                if b > 1:
                    return None
                values.append(b == 1)
                tags.append("t")
                o += 1
            elif tag == 70:  # F
                stop = o + 4 + _unpack_I(buf, o)[0]
                if stop > end or depth <= 0:
                    return None
                nested = _fast_entries(buf, o + 4, stop, depth - 1)
                if nested is None:
                    return None
                table = _new_value(_FieldTable)
                _set_table_entries(table, nested)
                values.append(table)
                tags.append("F")
                o = stop
            elif tag == 65:  # A
                stop = o + 4 + _unpack_I(buf, o)[0]
                if stop > end or depth <= 0:
                    return None
                array = _fast_array(buf, o + 4, stop, depth - 1)
                if array is None:
                    return None
                values.append(array)
                tags.append("A")
                o = stop
            elif tag == 120:  # x
                stop = o + 4 + _unpack_I(buf, o)[0]
                if stop > end:
                    return None
                values.append(buf[o + 4 : stop])
                tags.append("x")
                o = stop
            elif tag == 86:  # V
                values.append(None)
                tags.append("V")
            else:
                o = _fast_other(buf, o, tag, "", entries)
                if o < 0:
                    return None
                _key, name, value = entries.pop()
                values.append(value)
                tags.append(name)
    except (IndexError, struct.error):
        return None
    if o != end:
        return None
    array = _new_value(FieldArray)
    _set_array_values(array, values)
    _set_array_tags(array, tags)
    return array


def _fast_other(buf: bytes, o: int, tag: int, key: str, entries: list[tuple[str, str, Any]]) -> int:
    """The fast path's other tags (and, for arrays, T and l): appends to ``entries`` the entry at
    ``buf[o:]`` and returns the offset after it; -1 for an unknown tag. Reads may run past the
    table's end, as above."""
    if tag == 84:  # T
        entries.append((key, "T", _Timestamp(_unpack_T(buf, o)[0])))
        return o + 8
    if tag == 108:  # l
        entries.append((key, "l", _unpack_l(buf, o)[0]))
        return o + 8
    if tag == 100:  # d
        entries.append((key, "d", _unpack_d(buf, o)[0]))
        return o + 8
    if tag == 68:  # D
        scale, mantissa = _unpack_D(buf, o)
        entries.append((key, "D", _Decimal(mantissa).scaleb(-scale, _EXACT)))
        return o + 5
    if tag == 76:  # L
        entries.append((key, "L", _unpack_l(buf, o)[0]))
        return o + 8
    if tag == 102:  # f
        value = _unpack_f(buf, o)[0]
        if value != value:  # NaN: keep its exact bits (see _Float32NaN)
            value = _Float32NaN(value)
            value.bits = buf[o : o + 4]
        entries.append((key, "f", value))
        return o + 4
    reader = _SMALL_INTS.get(tag)
    if reader is None:
        return -1
    size, unpack, name = reader
    entries.append((key, name, unpack(buf, o)[0]))
    return o + size


def _cut_off(what: str) -> FrameSyntaxError:
    return FrameSyntaxError(f"{what} cut off by the end of its table or array")


def _decode_entries(
    buf: bytes, o: int, end: int, depth: int, keyed: bool = True
) -> list[tuple[str, str, Any]]:
    """Decode the entries of a table (``keyed``) or the values of an array in ``buf[o:end]``.

    Returns ``(key, tag, value)`` triples (key ``""`` in arrays). ``depth`` is how many more
    nesting levels may follow. Every read is checked against ``end`` before it happens, so
    the result, and any error, depends only on these bytes, never on what follows them.
    """
    entries: list[tuple[str, str, Any]] = []
    key = ""
    try:
        while o < end:
            if keyed:
                stop = o + 1 + buf[o]
                if stop >= end:  # the key must be followed by a tag inside the table
                    key = buf[o + 1 : min(stop, end)].decode("utf-8", "surrogateescape")
                    raise _cut_off("field-table key or value tag")
                try:
                    key = buf[o + 1 : stop].decode()
                except UnicodeDecodeError:
                    key = buf[o + 1 : stop].decode("utf-8", "surrogateescape")
                o = stop
            tag = buf[o]
            o += 1
            # Tags by how often they occur in real traffic; each checks its bounds first.
            if tag == 83 or tag == 120:  # S, x: a 32-bit size, then the bytes
                if o + 4 > end:
                    raise _cut_off("string size")
                stop = o + 4 + _unpack_I(buf, o)[0]
                if stop > end:
                    raise FrameSyntaxError(f"string of {stop - o - 4} bytes runs past its table")
                raw = buf[o + 4 : stop]
                o = stop
                if tag == 120:
                    entries.append((key, "x", raw))
                else:
                    try:
                        entries.append((key, "S", raw.decode()))
                    except UnicodeDecodeError:
                        entries.append((key, "S", raw))
            elif tag == 73:  # I
                if o + 4 > end:
                    raise _cut_off("value of tag 'I'")
                entries.append((key, "I", _unpack_i(buf, o)[0]))
                o += 4
            elif tag == 116:  # t
                if o >= end:
                    raise _cut_off("value of tag 't'")
                b = buf[o]
                if b > 1:
                    raise FrameSyntaxError(f"boolean octet is {b}, not 0 or 1")
                entries.append((key, "t", b == 1))
                o += 1
            elif tag == 70 or tag == 65:  # F, A
                if o + 4 > end:
                    raise _cut_off("nested table or array size")
                stop = o + 4 + _unpack_I(buf, o)[0]
                if stop > end:
                    raise FrameSyntaxError(
                        f"nested table or array of {stop - o - 4} bytes runs past its parent"
                    )
                if depth <= 0:
                    raise LimitExceededError(
                        "field tables and arrays nested deeper than the configured limit",
                        reply_code=502,
                    )
                nested = _decode_entries(buf, o + 4, stop, depth - 1, tag == 70)
                if tag == 70:
                    table = _new(FieldTable)
                    _set_entries(table, nested)
                    entries.append((key, "F", table))
                else:
                    entries.append((key, "A", FieldArray.from_entries(nested)))
                o = stop
            elif tag == 108 or tag == 76:  # l, L
                if o + 8 > end:
                    raise _cut_off(f"value of tag {chr(tag)!r}")
                entries.append((key, "l" if tag == 108 else "L", _unpack_l(buf, o)[0]))
                o += 8
            elif tag == 84:  # T
                if o + 8 > end:
                    raise _cut_off("value of tag 'T'")
                entries.append((key, "T", Timestamp(_unpack_T(buf, o)[0])))
                o += 8
            elif tag == 86:  # V
                entries.append((key, "V", None))
            elif tag == 100:  # d
                if o + 8 > end:
                    raise _cut_off("value of tag 'd'")
                entries.append((key, "d", _unpack_d(buf, o)[0]))
                o += 8
            elif tag == 68:  # D
                if o + 5 > end:
                    raise _cut_off("value of tag 'D'")
                scale, mantissa = _unpack_D(buf, o)
                entries.append((key, "D", Decimal(mantissa).scaleb(-scale, _EXACT)))
                o += 5
            elif tag == 102:  # f
                if o + 4 > end:
                    raise _cut_off("value of tag 'f'")
                value = _unpack_f(buf, o)[0]
                if value != value:  # NaN: keep its exact bits (see _Float32NaN)
                    value = _Float32NaN(value)
                    value.bits = buf[o : o + 4]
                entries.append((key, "f", value))
                o += 4
            else:
                reader = _SMALL_INTS.get(tag)
                if reader is None:
                    raise FrameSyntaxError(f"unknown field-table value tag 0x{tag:02x}")
                size, unpack, name = reader
                if o + size > end:
                    raise _cut_off(f"value of tag {name!r}")
                entries.append((key, name, unpack(buf, o)[0]))
                o += size
    except AMQPDecodeError as exc:
        step = _key_step(key) if keyed else f"[{len(entries)}]"
        exc.field = step + (exc.field or "")
        raise
    return entries


# The remaining fixed-size tags: size, reader, tag.
_SMALL_INTS: dict[int, tuple[int, Callable[[bytes, int], tuple[Any, ...]], str]] = {
    ord("b"): (1, _unpack_b, "b"),
    ord("B"): (1, struct.Struct(">B").unpack_from, "B"),
    ord("s"): (2, _unpack_h, "s"),
    ord("U"): (2, _unpack_h, "U"),
    ord("u"): (2, _unpack_H, "u"),
    ord("i"): (4, _unpack_I, "i"),
}


def _key_step(key: object) -> str:
    """One step of an error path: ``["x-death"]``."""
    return f'["{key}"]' if isinstance(key, str) else f"[{key!r}]"
