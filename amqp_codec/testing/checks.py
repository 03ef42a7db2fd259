"""The spec's field checks, read from ``FieldSpec.checks``: what a valid value must satisfy.

:func:`violations` lists what a method, a property list or a 0-10 draft struct breaks; the
strategies' ``valid=True`` promises an empty list. Checks that compare with another method's
field (``connection.tune-ok``'s channel-max ``le tune.channel-max``) need the connection and
are left to :func:`~amqp_codec.testing.streams`.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sized
from typing import Any

from amqp_codec.base import FieldSpec

__all__ = ["PATH_SYNTAX", "check_value", "violations"]

#: The spec's ``path`` syntax (0-8's domain doc): a slash, then path names separated by
#: slashes, each with at least one of [A-Za-z0-9] among [.-_+!=:].
_PATH_NAME = r"[.\-_+!=:]*[A-Za-z0-9][A-Za-z0-9.\-_+!=:]*"
PATH_SYNTAX = rf"/(?:{_PATH_NAME}(?:/{_PATH_NAME})*)?"

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "le": operator.le,
    "ge": operator.ge,
    "lt": operator.lt,
    "gt": operator.gt,
    "eq": operator.eq,
    "ne": operator.ne,
}


def wire_bytes(value: Any) -> bytes | None:
    """A string's or binary's bytes as they go on the wire; None for other values."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return None


def _empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return False  # a bit is always there
    if isinstance(value, int):
        return value == 0
    if isinstance(value, Sized):
        return len(value) == 0
    values = getattr(value, "values", None)  # 0-10 draft Array
    return isinstance(values, tuple) and not values


def check_value(field: FieldSpec, value: Any) -> list[str]:
    """The checks of ``field`` that ``value`` breaks, as phrases ("longer than 127 bytes")."""
    broken: list[str] = []
    raw = wire_bytes(value)
    text = value if isinstance(value, str) else None
    for check, arg in field.checks:
        if check == "notnull" and _empty(value):
            broken.append("empty, must not be")
        elif check == "null" and not _empty(value):
            broken.append("not empty, must be")
        elif check == "length" and raw is not None and len(raw) > arg:
            broken.append(f"longer than {arg} bytes")
        elif check == "regexp" and text is not None and re.fullmatch(arg, text) is None:
            broken.append(f"does not match {arg}")
        elif check == "syntax" and arg == "path" and text is not None:
            if re.fullmatch(PATH_SYNTAX, text) is None:
                broken.append("not a path")
        elif check == "enum" and value not in arg:
            broken.append(f"not one of {arg}")
        elif (
            check in _COMPARE
            and isinstance(arg, int)
            and isinstance(value, int)
            and not _COMPARE[check](value, arg)
        ):
            broken.append(f"not {check} {arg}")
    return broken


def violations(obj: Any) -> list[str]:
    """Every spec check a method, property list or 0-10 draft struct breaks.

    Each entry names the field: ``"queue.declare queue: longer than 127 bytes"``. Reserved
    fields must hold their default (what the spec requires them to be); absent properties
    (None) break nothing but ``notnull``, and only on a method.
    """
    name = getattr(obj, "NAME", type(obj).__name__)
    optional = not hasattr(obj, "METHOD_ID")
    found: list[str] = []
    for field in obj.FIELDS:
        value = getattr(obj, field.attr)
        if field.reserved:
            if value != field.default:
                found.append(f"{name} {field.name}: reserved, must be {field.default!r}")
            continue
        if value is None and optional:
            continue
        found += [f"{name} {field.name}: {problem}" for problem in check_value(field, value)]
    return found
