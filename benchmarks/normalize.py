"""Turn every library's decoded objects into one plain form, and compare strictly.

The plain form:

* a method: ``("basic.deliver", {field: value, ...})`` (reserved fields dropped);
* properties: ``{attr: value}`` with amqp-codec's attribute names, absent ones left out;
* a frame: ``("method", channel, method)``, ``("header", channel, body_size, properties)``,
  ``("body", channel, payload)`` or ``("heartbeat", 0)``;
* a table value: dict / list / str / bytes / bool / int / float / Decimal / None, with
  timestamps as integer seconds since the epoch (naive datetimes read as UTC).

:func:`same` compares two plain values strictly: ``True`` is not ``1``, ``1`` is not ``1.0``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from amqp_codec import v0_9_1
from amqp_codec.table import FieldArray, FieldTable

_UTC = dt.UTC


def value(v: Any) -> Any:
    """A table value (or anything inside one) in plain form."""
    if v is None or type(v) is bool or type(v) is str or type(v) is float:
        return v
    if isinstance(v, bool):
        return bool(v)
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=_UTC)
        return int(v.timestamp())
    if isinstance(v, int):  # Timestamp, pika's ``long`` marker subclass
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, Decimal):
        return v
    if isinstance(v, (FieldTable, Mapping)):
        return {str(k): value(x) for k, x in v.items()}
    if isinstance(v, (FieldArray, list, tuple)):
        return [value(x) for x in v]
    raise TypeError(f"cannot normalise {type(v).__name__}: {v!r}")


def method(index: int, values: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """A method given its index (class << 16 | method) and a field lookup by our attr names."""
    cls = v0_9_1.METHODS[(index >> 16, index & 0xFFFF)]
    return cls.NAME, {
        spec.attr: value(values[spec.attr]) for spec in cls.FIELDS if not spec.reserved
    }


def method_from_attrs(index: int, obj: Any) -> tuple[str, dict[str, Any]]:
    """A method object whose attributes carry amqp-codec's field names (ours, pika, pamqp)."""
    cls = v0_9_1.METHODS[(index >> 16, index & 0xFFFF)]
    return method(
        index, {spec.attr: getattr(obj, spec.attr) for spec in cls.FIELDS if not spec.reserved}
    )


def method_from_args(sig: tuple[int, int], args: list[Any]) -> tuple[str, dict[str, Any]]:
    """py-amqp: positional argument list in spec order (reserved fields included)."""
    cls = v0_9_1.METHODS[sig]
    if len(args) != len(cls.FIELDS):
        raise ValueError(f"{cls.NAME}: {len(args)} args for {len(cls.FIELDS)} fields")
    return method(
        sig[0] << 16 | sig[1], {spec.attr: a for spec, a in zip(cls.FIELDS, args, strict=True)}
    )


PROPERTY_ATTRS: tuple[str, ...] = tuple(spec.attr for spec in v0_9_1.BasicProperties.FIELDS)


def properties(values: Mapping[str, Any]) -> dict[str, Any]:
    """Properties from a mapping keyed by our attr names; None means absent."""
    return {k: value(values[k]) for k in PROPERTY_ATTRS if values.get(k) is not None}


def same(a: Any, b: Any) -> bool:
    """Strict structural equality of two plain values."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two plain values first differ (for error messages), or None."""
    if type(a) is not type(b):
        return f"{path or '<root>'}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return f"{path or '<root>'}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            found = first_difference(a[k], b[k], f"{path}[{k!r}]")
            if found:
                return found
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path or '<root>'}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path or '<root>'}: {a!r} != {b!r}"


def map_floats(v: Any, fn: Any) -> Any:
    """Apply ``fn`` to every float inside a plain value (for documented peer deviations)."""
    if type(v) is float:
        return fn(v)
    if isinstance(v, dict):
        return {k: map_floats(x, fn) for k, x in v.items()}
    if isinstance(v, list):
        return [map_floats(x, fn) for x in v]
    if isinstance(v, tuple):
        return tuple(map_floats(x, fn) for x in v)
    return v
