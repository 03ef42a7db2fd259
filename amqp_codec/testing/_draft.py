"""Values of the 0-10 draft's own types: its field tables (every type code the spec names),
arrays, sequences and packed structs, all read from the generated package."""

from __future__ import annotations

import importlib
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from amqp_codec.wire010 import Array, FieldTable, Timestamp, Typed

from ._version import Version

CODE_TABLE = 0xA8
CODE_SEQUENCE = 0xA9
CODE_ARRAY = 0xAA


def table_types(version: Version) -> dict[int, tuple[str, int, int, str]]:
    """The spec's field-table type codes: code → (name, width, length width, datatype)."""
    constants = importlib.import_module(version.package.__name__ + ".constants")
    types: dict[int, tuple[str, int, int, str]] = constants.FIELD_TABLE_TYPES
    return types


def scalar_codes(version: Version) -> list[int]:
    return sorted(
        code
        for code, t in table_types(version).items()
        if t[3] not in ("field-table", "sequence", "array")
    )


def texts(max_bytes: int = 255, min_size: int = 0) -> st.SearchStrategy[str]:
    """Text whose UTF-8 form fits ``max_bytes``."""
    return st.text(min_size=min_size, max_size=min(40, max_bytes)).filter(
        lambda s: len(s.encode()) <= max_bytes
    )


def _int_range(width: int, signed: bool) -> st.SearchStrategy[int]:
    bits = 8 * width
    if signed:
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return st.integers(0, 2**bits - 1)


def scalar_for(version: Version, code: int) -> st.SearchStrategy[Any]:
    """A value of table type ``code`` that decodes back equal to itself."""
    name, width, lfwidth, datatype = table_types(version)[code]
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
            return texts(limit)
        return st.binary(max_size=limit)
    return st.binary(min_size=width, max_size=width)


def arrays(
    version: Version, children: st.SearchStrategy[Any] | None = None, min_size: int = 0
) -> st.SearchStrategy[Array]:
    """An array of one scalar type (or of tables, when ``children`` draws tables)."""
    scalar = st.sampled_from(scalar_codes(version)).flatmap(
        lambda code: st.lists(scalar_for(version, code), min_size=min_size, max_size=4).map(
            lambda vs: Array(code, tuple(vs))
        )
    )
    if children is None:
        return scalar
    tables = st.lists(children, min_size=min_size, max_size=3)
    return st.one_of(scalar, tables.map(lambda t: Array(CODE_TABLE, tuple(t))))


def typed_values(version: Version, max_depth: int = 3) -> st.SearchStrategy[Typed]:
    """Typed values over every code the spec names, nesting tables, sequences and arrays."""
    leaves = st.sampled_from(scalar_codes(version)).flatmap(
        lambda c: scalar_for(version, c).map(lambda v: Typed(c, v))
    )
    if max_depth <= 0:
        return leaves
    children = typed_values(version, max_depth - 1)
    entries = st.lists(st.tuples(texts(30), children), max_size=4)
    nested = st.one_of(
        entries.map(lambda es: Typed(CODE_TABLE, FieldTable(es))),
        st.lists(children, max_size=4).map(lambda vs: Typed(CODE_SEQUENCE, tuple(vs))),
        arrays(version).map(lambda a: Typed(CODE_ARRAY, a)),
    )
    return st.one_of(leaves, nested)


def tables(
    version: Version, max_depth: int = 2, min_size: int = 0
) -> st.SearchStrategy[FieldTable]:
    entries = st.tuples(texts(30), typed_values(version, max_depth))
    return st.lists(entries, min_size=min_size, max_size=4).map(FieldTable)
