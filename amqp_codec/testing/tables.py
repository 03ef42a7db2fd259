"""Field tables as a *model*, and an encoder for it written from the spec's table layout.

A model is a tuple of ``(key, TV)`` entries where :class:`TV` holds the wire tag and the value
a decoder must produce. From one model a test gets

* the codec's input (:func:`build_table`: plain Python values where the default tag mapping
  yields the tag, :class:`~amqp_codec.Tagged` otherwise),
* the expected wire bytes (:func:`model_table_bytes`, independent of the codec), and
* the expected decoded shape (:func:`canon_model`, compared with :func:`canon_decoded`).

:func:`~amqp_codec.testing.field_tables` and :func:`~amqp_codec.testing.field_values` draw
models with :func:`table_models` and :func:`tvs` and build them.
"""

from __future__ import annotations

import string
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from amqp_codec.table import FieldArray, FieldTable, Tagged, Timestamp

from ._version import ALL_TAGS

__all__ = [
    "INT_RANGES",
    "SCALAR_TAGS",
    "TAG_TYPES",
    "TV",
    "build_table",
    "build_value",
    "canon_decoded",
    "canon_decoded_table",
    "canon_model",
    "canon_model_table",
    "invalid_utf8",
    "model_table_bytes",
    "model_value_bytes",
    "scalar_tvs",
    "scalar_value",
    "shortstr_texts",
    "table_inputs",
    "table_keys",
    "table_models",
    "tvs",
]

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


def _longstr(raw: bytes) -> bytes:
    return len(raw).to_bytes(4, "big") + raw


def _shortstr(value: str) -> bytes:
    raw = value.encode("utf-8", "surrogateescape")
    return bytes([len(raw)]) + raw


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
        return out + _longstr(raw)
    if tag == "V":
        return out
    if tag == "F":
        return out + model_table_bytes(value)
    if tag == "A":
        return out + _longstr(b"".join(model_value_bytes(child) for child in value))
    raise AssertionError(f"unknown tag {tag}")


def model_table_bytes(model: tuple[tuple[str, TV], ...]) -> bytes:
    """A whole field table (4-byte size, then key shortstr + tagged value per entry)."""
    body = b"".join(_shortstr(key) + model_value_bytes(tv) for key, tv in model)
    return _longstr(body)


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


def shortstr_texts(max_bytes: int = 255, min_bytes: int = 0) -> st.SearchStrategy[str]:
    """Text whose UTF-8 encoding fits a short string (``min_bytes`` to ``max_bytes``, at most
    255), non-UTF-8 bytes included (carried through ``str`` by surrogateescape).

    Strings near the limit repeat a short drawn seed: the length is what matters there, and
    a few choices per string keep whole streams of them cheap to generate and to shrink.
    """
    max_bytes = min(max_bytes, 255)
    near = max(min_bytes, max_bytes - 55)
    seeds = st.text(alphabet=string.printable, min_size=1, max_size=8)
    options = [
        st.text(min_size=min_bytes, max_size=max(min_bytes, min(max_bytes // 4, 24))),
        st.builds(_repeat, seeds, st.integers(near, max_bytes)),  # near the limit
        st.integers((near + 1) // 2, max_bytes // 2).map(lambda n: "é" * n),  # 2-byte chars
        st.binary(min_size=min_bytes, max_size=max(min_bytes, min(max_bytes, 32))).map(
            lambda raw: raw.decode("utf-8", "surrogateescape")
        ),
    ]
    return st.one_of(*options).filter(lambda s: min_bytes <= _utf8_len(s) <= max_bytes)


def _repeat(seed: str, size: int) -> str:
    return (seed * (size // len(seed) + 1))[:size]


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


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


def _containers(children: st.SearchStrategy[TV], tags: str) -> st.SearchStrategy[TV]:
    options = []
    if "F" in tags:
        entries = st.lists(st.tuples(table_keys(), children), max_size=4).map(tuple)
        options.append(st.builds(TV, st.just("F"), entries, st.booleans()))
    if "A" in tags:
        items = st.lists(children, max_size=4).map(tuple)
        options.append(st.builds(TV, st.just("A"), items, st.booleans()))
    return st.one_of(*options)


def tvs(
    max_leaves: int = 12, tags: str = ALL_TAGS, max_depth: int | None = None
) -> st.SearchStrategy[TV]:
    """Any tagged value using only ``tags``, nested tables and arrays included.

    ``max_depth`` bounds the nesting (0: scalars only); without it, ``max_leaves`` bounds
    the size of the whole value.
    """
    if max_depth is None:
        return st.recursive(scalar_tvs(tags), lambda c: _containers(c, tags), max_leaves=max_leaves)
    if max_depth <= 0 or not set(tags) & set("FA"):
        return scalar_tvs(tags)
    # Scalars first: a failing example shrinks to a flat value when one is enough.
    return st.one_of(scalar_tvs(tags), _containers(tvs(max_leaves, tags, max_depth - 1), tags))


def table_models(
    max_size: int = 6,
    max_leaves: int = 12,
    tags: str = ALL_TAGS,
    max_depth: int | None = None,
    min_size: int = 0,
) -> st.SearchStrategy[tuple[tuple[str, TV], ...]]:
    """A field-table model: a tuple of (key, TV) entries, values tagged from ``tags``.

    ``max_depth`` counts the tables and arrays inside this one (see :func:`tvs`).
    """
    entry = st.tuples(table_keys(), tvs(max_leaves, tags, max_depth))
    return st.lists(entry, min_size=min_size, max_size=max_size).map(tuple)


def table_inputs(tags: str = ALL_TAGS) -> st.SearchStrategy[FieldTable]:
    """Field tables as the codec takes them (small ones, for method and property fields)."""
    return table_models(max_size=4, tags=tags, max_depth=2).map(build_table)
