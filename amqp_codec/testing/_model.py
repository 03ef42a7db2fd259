"""Instances of the generated classes: one value strategy per field, from ``FIELDS``.

Each field's strategy comes from its wire type and, for valid values, from the checks the
spec states on it (``FieldSpec.checks``): a regexp field is drawn from its regexp, a length
bounds the size, ``notnull`` keeps it non-empty. Nothing here names a method, so a method an
overlay adds is covered with no new line.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from amqp_codec.base import FieldSpec, Method, Properties
from amqp_codec.table import Timestamp

from . import _draft
from ._version import Version
from .checks import PATH_SYNTAX, check_value, wire_bytes
from .tables import shortstr_texts, table_inputs

INT_BITS = {"octet": 8, "short": 16, "long": 32, "longlong": 64, "timestamp": 64}
_EMPTY: dict[str, Any] = {"shortstr": "", "longstr": b""}
_PLAIN_PATH = r"/(?:[A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)*)?"
_LONGSTR_MAX = 64  # bytes: enough to exercise every code path, small enough to stay fast


def _struct_class(version: Version, owner: type[Any], field: FieldSpec) -> type[Any]:
    """The struct class of a struct-typed field of a 0-10 draft struct or method."""
    annotation = str(owner.__annotations__[field.attr]).split(" | ")[0]
    return next(c for c in version.structs.values() if c.__name__ == annotation)


def wire_values(
    version: Version, owner: type[Any], field: FieldSpec, *, min_size: int = 0
) -> st.SearchStrategy[Any]:
    """Any value of the field's wire type that encodes (the spec's checks not applied)."""
    wire = field.wire_type
    if wire == "bit":
        return st.booleans()
    if wire in INT_BITS:
        ints = st.integers(0, 2 ** INT_BITS[wire] - 1)
        return ints.map(Timestamp) if wire == "timestamp" else ints
    if wire == "shortstr":
        if version.draft:
            return _draft.texts(min_size=min_size)
        return shortstr_texts(min_bytes=min_size)
    if wire == "longstr":
        return st.binary(min_size=min_size, max_size=max(min_size, _LONGSTR_MAX))
    if wire == "table":
        if version.draft:
            return _draft.tables(version, min_size=min_size)
        tables = table_inputs(version.tags)
        return tables.filter(len) if min_size else tables
    if wire == "uuid":
        return st.uuids()
    if wire == "rfc1982-long-set":
        u32 = st.integers(0, 2**32 - 1)
        return st.lists(st.tuples(u32, u32), min_size=min_size, max_size=5).map(tuple)
    if wire == "array":
        return _draft.arrays(version, min_size=min_size)
    if wire == "long-struct":
        return st.sampled_from(version.long_structs).flatmap(lambda c: structs(version, c))
    if wire == "struct":
        return structs(version, _struct_class(version, owner, field))
    if wire == "content":
        return st.just(field.default)
    raise TypeError(f"{owner.__name__}.{field.attr}: no strategy for wire type {wire!r}")


def _bounds(field: FieldSpec) -> tuple[int, int]:
    low, high = 0, 2 ** INT_BITS[field.wire_type] - 1
    for check, arg in field.checks:
        if check == "notnull":
            low = max(low, 1)
        elif isinstance(arg, int) and not isinstance(arg, bool):
            if check in ("ge", "gt"):
                low = max(low, arg + (check == "gt"))
            elif check in ("le", "lt"):
                high = min(high, arg - (check == "lt"))
            elif check == "eq":
                low, high = max(low, arg), min(high, arg)
    return low, high


def valid_values(version: Version, owner: type[Any], field: FieldSpec) -> st.SearchStrategy[Any]:
    """Values of the field that pass every check the spec states on it."""
    checks = dict(field.checks)
    wire = field.wire_type
    if not field.checks or wire == "bit":
        return wire_values(version, owner, field)
    if "null" in checks:
        return st.just(_EMPTY.get(wire, field.default))
    min_size = 1 if "notnull" in checks else 0
    if "enum" in checks:
        base: st.SearchStrategy[Any] = st.sampled_from(checks["enum"])
    elif wire in INT_BITS:
        low, high = _bounds(field)
        base = st.integers(low, high)
        if wire == "timestamp":
            base = base.map(Timestamp)
    elif wire == "shortstr" and checks.get("syntax") == "path":
        # Drawn from the path syntax; plain names too, so that a regexp stated with it
        # (0-8's virtual host) still leaves plenty of values through the filter below.
        base = st.from_regex(PATH_SYNTAX, fullmatch=True) | st.from_regex(
            _PLAIN_PATH, fullmatch=True
        )
    elif wire == "shortstr" and "regexp" in checks:
        base = st.from_regex(checks["regexp"], fullmatch=True)
    elif wire == "shortstr" and "length" in checks and not version.draft:
        base = shortstr_texts(checks["length"], min_size)
    elif wire == "longstr" and "length" in checks:
        base = st.binary(min_size=min_size, max_size=min(checks["length"], _LONGSTR_MAX))
    else:
        base = wire_values(version, owner, field, min_size=min_size)
    # The filter keeps the intersection of several checks (regexp, length, path) honest.
    return base.filter(lambda value: _fits(field, value))


def _fits(field: FieldSpec, value: Any) -> bool:
    raw = wire_bytes(value)
    if field.wire_type == "shortstr" and (raw is None or len(raw) > 255):
        return False
    return not check_value(field, value)


# Built strategies by (kind, version, class, valid): building one walks the fields and
# compiles regexps, drawing from it again is cheap.
_BUILT: dict[tuple[str, int, type[Any], bool], st.SearchStrategy[Any]] = {}


def methods(version: Version, cls: type[Method], valid: bool = True) -> st.SearchStrategy[Any]:
    """Instances of method class ``cls``; ``valid=False`` ignores the checks and gives
    reserved fields any value (still encodable)."""
    key = ("method", id(version), cls, valid)
    if key not in _BUILT:
        _BUILT[key] = _methods(version, cls, valid)
    return _BUILT[key]


def _methods(version: Version, cls: type[Method], valid: bool) -> st.SearchStrategy[Any]:
    pick = valid_values if valid else wire_values
    kwargs = {f.attr: pick(version, cls, f) for f in cls.FIELDS if not f.reserved}
    built = st.builds(cls, **kwargs)
    reserved = [(i, f) for i, f in enumerate(cls.FIELDS) if f.reserved]
    if valid or not reserved:
        return built

    @st.composite
    def with_reserved(draw: st.DrawFn) -> Any:
        method = draw(built)
        for index, field in reserved:
            cls._SETTERS[index](method, draw(wire_values(version, cls, field)))
        return method

    return with_reserved()


def properties(version: Version, cls: type[Properties]) -> st.SearchStrategy[Any]:
    """Property lists with each property independently present or absent (valid values)."""
    key = ("properties", id(version), cls, True)
    if key not in _BUILT:
        _BUILT[key] = _properties(version, cls)
    return _BUILT[key]


def _properties(version: Version, cls: type[Properties]) -> st.SearchStrategy[Any]:
    kwargs = {f.attr: st.none() | valid_values(version, cls, f) for f in cls.FIELDS}
    return st.builds(cls, **kwargs)


def structs(version: Version, cls: type[Any]) -> st.SearchStrategy[Any]:
    """0-10 draft: instances of a packed struct class, each non-bit field present or absent
    (``notnull`` fields always present)."""
    key = ("struct", id(version), cls, True)
    if key not in _BUILT:
        _BUILT[key] = _structs(version, cls)
    return _BUILT[key]


def _structs(version: Version, cls: type[Any]) -> st.SearchStrategy[Any]:
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for field in cls.FIELDS:
        value = valid_values(version, cls, field)
        required = field.wire_type == "bit" or "notnull" in dict(field.checks)
        kwargs[field.attr] = value if required else st.none() | value
    return st.builds(cls, **kwargs)
