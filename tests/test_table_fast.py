"""The field-table decoder's fast path against its checked path.

``decode_table`` first decodes with ``_fast_entries`` (no bounds check before each fixed-size
read) and falls back to ``_decode_entries`` (every read checked, located errors) when the fast
path returns None. These tests hold the fast path to the checked one: on valid tables the same
entries (same tags, types, values, float bits), and on damaged bytes either None or, where the
damage happens to leave a valid table, again the same entries as the checked path.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import examples, model_table_bytes, table_models

from amqp_codec import AMQPDecodeError, FieldArray, FieldTable
from amqp_codec._table_decode import _decode_entries, _fast_entries
from amqp_codec.table import decode_table


def strict(tag: str, value: Any) -> Any:
    """A comparable shape of a decoded value: type, value, and the bits of floats."""
    if isinstance(value, FieldTable):
        return ("F", tag, tuple((k, strict(t, v)) for k, t, v in value.entries()))
    if isinstance(value, FieldArray):
        return ("A", tag, tuple(strict(t, v) for t, v in zip(value.tags, value, strict=True)))
    if isinstance(value, float):
        bits = getattr(value, "bits", None)
        return (tag, type(value).__name__, bits, struct.pack(">d", value), math.isnan(value))
    return (tag, type(value).__name__, value)


def shape(entries: list[tuple[str, str, Any]] | None) -> Any:
    if entries is None:
        return None
    return tuple((k, strict(t, v)) for k, t, v in entries)


def checked(buf: bytes, o: int, end: int, depth: int) -> Any:
    """The checked path's entries, or the error type it raises."""
    try:
        return shape(_decode_entries(buf, o, end, depth))
    except AMQPDecodeError as exc:
        return type(exc)


def check_against_checked(buf: bytes, o: int, end: int, depth: int) -> None:
    fast = shape(_fast_entries(buf, o, end, depth))
    slow = checked(buf, o, end, depth)
    if fast is not None:
        assert fast == slow
    # And decode_table, whichever path it takes, agrees with the checked path.
    if o >= 4:
        head = buf[: o - 4] + struct.pack(">I", end - o) + buf[o:]
        try:
            table, stop = decode_table(head, o - 4, end, depth)
        except AMQPDecodeError as exc:
            assert type(exc) is slow
        else:
            assert stop == end
            assert shape(table.entries()) == slow


models = table_models(max_size=6, max_depth=3)


@settings(max_examples=examples(300))
@given(models, st.integers(0, 4))
def test_valid_tables_decode_the_same(model: Any, depth: int) -> None:
    raw = model_table_bytes(model)
    fast = _fast_entries(raw, 4, len(raw), depth)
    slow = checked(raw, 4, len(raw), depth)
    if not isinstance(slow, type):  # within the depth limit: the fast path must decode it
        assert fast is not None
    check_against_checked(raw, 4, len(raw), depth)


@settings(max_examples=examples(500))
@given(
    models,
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    st.binary(max_size=12),
)
def test_damaged_tables_never_decode_differently(
    model: Any, flips: list[tuple[int, int]], trailer: bytes
) -> None:
    raw = bytearray(model_table_bytes(model))
    for where, value in flips:
        raw[where % len(raw)] = value
    # Bytes after the table's end (the rest of the frame) must never be read as its own.
    buf = bytes(raw) + trailer
    check_against_checked(buf, 4, len(raw), 32)
    check_against_checked(buf, 4, len(raw), 1)


@settings(max_examples=examples(300))
@given(models, st.integers(0, 40), st.binary(max_size=12))
def test_cut_tables_never_decode_differently(model: Any, cut: int, trailer: bytes) -> None:
    raw = model_table_bytes(model)
    end = max(4, len(raw) - cut)
    check_against_checked(raw[:end] + trailer, 4, end, 32)


@settings(max_examples=examples(500))
@given(st.binary(min_size=1, max_size=64), st.binary(max_size=8))
def test_random_bytes_never_decode_differently(body: bytes, trailer: bytes) -> None:
    buf = b"\x00\x00\x00\x00" + body + trailer
    check_against_checked(buf, 4, 4 + len(body), 32)
