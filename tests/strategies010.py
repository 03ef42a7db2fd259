"""Hypothesis strategies for the 99-0 draft, built from the generated model.

Methods and structs are walked through their ``FIELDS``; table values are drawn per type code
from the spec's ``FIELD_TABLE_TYPES``, so every code the spec names is exercised.
"""

from __future__ import annotations

import os
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from amqp_codec.v0_10_draft import METHODS, STRUCTS
from amqp_codec.v0_10_draft.constants import FIELD_TABLE_TYPES
from amqp_codec.v0_10_draft.structs import LONG_STRUCTS
from amqp_codec.wire010 import Array, FieldTable, Timestamp, Typed

SCALE = max(1, int(os.environ.get("AMQP_TEST_SCALE", "1")))


def examples(n: int) -> int:
    """``n`` hypothesis examples, times AMQP_TEST_SCALE."""
    return n * SCALE


def shortstr_texts(max_bytes: int = 255) -> st.SearchStrategy[str]:
    """Text whose UTF-8 form fits ``max_bytes``."""
    return st.text(max_size=40).filter(lambda s: len(s.encode()) <= max_bytes)


def _int_range(width: int, signed: bool) -> st.SearchStrategy[int]:
    bits = 8 * width
    if signed:
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return st.integers(0, 2**bits - 1)


def scalar_for(code: int) -> st.SearchStrategy[Any]:
    """A value of table type ``code`` that decodes back equal to itself."""
    name, width, lfwidth, datatype = FIELD_TABLE_TYPES[code]
    if datatype in ("signed-integer", "unsigned-integer"):
        return _int_range(width, datatype == "signed-integer")
    if datatype == "boolean":
        return st.booleans()
    if datatype == "ieee-float":
        return st.floats(width=32 if width == 4 else 64, allow_nan=False)
    if name == "datetime":
        return st.integers(0, 2**64 - 1).map(Timestamp)
    if name == "uuid":
        return st.uuids()
    if datatype == "decimal":
        return st.tuples(_int_range(width - 1, True), st.integers(0, 255)).map(
            lambda t: Decimal(f"{t[0]}E-{t[1]}")
        )
    if datatype == "void":
        return st.none()
    if lfwidth:
        limit = min(2 ** (8 * lfwidth) - 1, 64)
        if datatype == "string" and "utf16" not in name and "utf32" not in name:
            return shortstr_texts(limit)
        return st.binary(max_size=limit)
    return st.binary(min_size=width, max_size=width)


SCALAR_CODES = sorted(
    code
    for code, t in FIELD_TABLE_TYPES.items()
    if t[3] not in ("field-table", "sequence", "array")
)


def arrays(children: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[Array]:
    """An array of one scalar type (or of tables, when ``children`` draws tables)."""
    scalar = st.sampled_from(SCALAR_CODES).flatmap(
        lambda code: st.lists(scalar_for(code), max_size=4).map(lambda vs: Array(code, tuple(vs)))
    )
    if children is None:
        return scalar
    return st.one_of(scalar, st.lists(children, max_size=3).map(lambda t: Array(0xA8, tuple(t))))


def typed_values(max_leaves: int = 10) -> st.SearchStrategy[Typed]:
    """Typed values over every code the spec names, nesting tables, sequences and arrays."""
    leaves = st.sampled_from(SCALAR_CODES).flatmap(
        lambda c: scalar_for(c).map(lambda v: Typed(c, v))
    )

    def containers(children: st.SearchStrategy[Typed]) -> st.SearchStrategy[Typed]:
        tables = st.lists(st.tuples(shortstr_texts(30), children), max_size=4).map(
            lambda es: Typed(0xA8, FieldTable(es))
        )
        sequences = st.lists(children, max_size=4).map(lambda vs: Typed(0xA9, tuple(vs)))
        return st.one_of(tables, sequences, arrays().map(lambda a: Typed(0xAA, a)))

    return st.recursive(leaves, containers, max_leaves=max_leaves)


def tables() -> st.SearchStrategy[FieldTable]:
    return st.lists(st.tuples(shortstr_texts(30), typed_values()), max_size=5).map(FieldTable)


def plain_tables() -> st.SearchStrategy[dict[str, Any]]:
    """Plain Python values, encoded with the codes the implementations agreed on."""
    plain = st.one_of(
        st.integers(-(2**63), 2**64 - 1),
        st.text(max_size=20),
        st.booleans(),
        st.none(),
        st.binary(max_size=20),
        st.floats(allow_nan=False),
        st.uuids(),
    )
    return st.recursive(
        st.dictionaries(shortstr_texts(20), plain, max_size=4),
        lambda children: st.dictionaries(
            shortstr_texts(20), st.one_of(plain, children), max_size=4
        ),
        max_leaves=8,
    )


def _value(wire: str, spec_attr: str, owner: type) -> st.SearchStrategy[Any]:
    if wire == "bit":
        return st.booleans()
    if wire in ("octet", "short", "long", "longlong"):
        return _int_range({"octet": 1, "short": 2, "long": 4, "longlong": 8}[wire], False)
    if wire == "timestamp":
        return st.integers(0, 2**64 - 1).map(Timestamp)
    if wire == "shortstr":
        return shortstr_texts()
    if wire == "longstr":
        return st.binary(max_size=40)
    if wire == "table":
        return tables()
    if wire == "uuid":
        return st.uuids()
    if wire == "rfc1982-long-set":
        u32 = st.integers(0, 2**32 - 1)
        return st.lists(st.tuples(u32, u32), max_size=5).map(tuple)
    if wire == "array":
        return arrays()
    if wire == "long-struct":
        return st.sampled_from(sorted(LONG_STRUCTS.values(), key=lambda c: c.NAME)).flatmap(structs)
    if wire == "struct":
        nested = owner.__annotations__[spec_attr].split(" | ")[0]
        return structs(next(c for c in STRUCTS.values() if c.__name__ == nested))
    raise AssertionError(f"no strategy for {wire}")


def structs(cls: type) -> st.SearchStrategy[Any]:
    """Instances of a generated struct class: each non-bit field present or absent."""
    kwargs = {}
    for spec in cls.FIELDS:
        value = _value(spec.wire_type, spec.attr, cls)
        kwargs[spec.attr] = value if spec.wire_type == "bit" else st.one_of(st.none(), value)
    return st.builds(cls, **kwargs)


def methods(cls: type) -> st.SearchStrategy[Any]:
    """Instances of a generated method class with every field drawn."""
    return st.builds(cls, **{f.attr: _value(f.wire_type, f.attr, cls) for f in cls.FIELDS})


ALL_METHODS = sorted(METHODS.values(), key=lambda c: (c.CLASS_ID, c.METHOD_ID))
ALL_STRUCTS = sorted(STRUCTS.values(), key=lambda c: c.NAME)
