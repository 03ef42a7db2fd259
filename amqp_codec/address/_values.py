"""Option values: the frozen map, freezing plain values, type-exact comparison, option paths."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeAlias

#: An option value: ``bool``, ``int``, ``float``, ``str``, ``None``, a map or a list. In an
#: :class:`~amqp_codec.address.Address`, maps are :class:`OptionMap` and lists are tuples.
OptionValue: TypeAlias = (
    "bool | int | float | str | Mapping[str, OptionValue] | Sequence[OptionValue] | None"
)

#: A map key. Qpid reads a key like a value: ``{1: x}`` has the int key 1, ``{True: x}`` the
#: bool key True, ``{None: x}`` the key None; only maps and lists cannot be keys.
OptionKey: TypeAlias = "str | int | float | bool | None"

#: A path to an option: map keys and list indexes, outermost first.
Path: TypeAlias = tuple["OptionKey", ...]

#: Maps and lists nested deeper than this are refused (by the parser and by :class:`OptionMap`).
MAX_DEPTH = 100

#: The ID token of the grammar.
ID_RE = re.compile(r"[a-zA-Z_](?:[a-zA-Z0-9_-]*[a-zA-Z0-9_])?")


# Keys are typed Any for callers: Mapping's key type is invariant, and nearly every key is a
# str (``options["node"]``); OptionKey says what a key can be.
class OptionMap(Mapping[Any, OptionValue]):
    """An immutable, hashable, insertion-ordered map of address options.

    It reads like a dict (``options["node"]["type"]``, ``.get``, ``in``, iteration in the
    order the keys were written). Nested maps are ``OptionMap`` too and lists are tuples, so a
    whole :class:`~amqp_codec.address.Address` is hashable. :meth:`to_dict` gives plain dicts
    and lists (for ``json.dumps`` or editing).

    Equality is *type-exact*, unlike Python's: ``True`` is not ``1`` and ``1`` is not ``1.0``
    (they are different options and write differently). Key order does not matter. An
    ``OptionMap`` also compares equal to a plain mapping holding the same values, lists
    standing for tuples: ``parse("q; {node: {type: queue}}").options == {"node": {"type":
    "queue"}}``.

    ``OptionMap(mapping)`` copies and freezes ``mapping``: keys must be ``str``, ``bool``,
    ``int``, ``float`` (finite) or ``None`` (an :data:`OptionKey`); values
    ``bool``, ``int``, ``float`` (finite), ``str``, ``None``, mappings, lists or tuples
    (``TypeError`` / ``ValueError`` otherwise, naming the option's path).
    """

    __slots__ = ("_data", "_hash")

    _data: dict[OptionKey, OptionValue]
    _hash: int | None

    def __init__(self, items: Mapping[Any, object] | None = None) -> None:
        if items is not None and not isinstance(items, Mapping):
            raise TypeError(f"address options must be a mapping, not {type(items).__name__}")
        self._data = {} if items is None else _freeze_entries(items, (), 1)
        self._hash = None

    @classmethod
    def _wrap(cls, data: dict[OptionKey, OptionValue]) -> OptionMap:
        """An ``OptionMap`` around ``data``, which must already be frozen (the parser's)."""
        self = cls.__new__(cls)
        self._data = data
        self._hash = None
        return self

    def __getitem__(self, key: OptionKey) -> OptionValue:
        return self._data[key]

    def __iter__(self) -> Iterator[OptionKey]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return same(self, other)
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"OptionMap({self._data!r})"

    def to_dict(self) -> dict[Any, object]:
        """A deep copy made of plain dicts and lists."""
        return {key: _thaw(value) for key, value in self._data.items()}


def _thaw(value: object) -> object:
    if isinstance(value, OptionMap):
        return value.to_dict()
    if isinstance(value, tuple):
        return [_thaw(item) for item in value]
    return value


def same(a: object, b: object) -> bool:
    """Type-exact equality of option values (``True`` is not ``1``, ``1`` is not ``1.0``).

    Maps compare without regard to key order; lists and tuples compare alike.
    """
    if isinstance(a, Mapping):
        if not isinstance(b, Mapping) or len(a) != len(b):
            return False
        return all(key in b and same(value, b[key]) for key, value in a.items())
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list | tuple):
        return (
            isinstance(b, list | tuple)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    for kind in (bool, float, int):
        if isinstance(a, kind) or isinstance(b, kind):
            return isinstance(a, kind) and isinstance(b, kind) and a == b
    return a is None and b is None


def format_path(path: Path) -> str:
    """``("node", "x-bindings", 0, "exchange")`` → ``node.x-bindings[0].exchange``."""
    out: list[str] = []
    for part in path:
        if not isinstance(part, str):  # a list index, or a key that is not a str
            out.append(f"[{part!r}]")
        elif ID_RE.fullmatch(part):
            out.append(f".{part}" if out else part)
        else:
            escaped = part.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'["{escaped}"]')
    return "".join(out)


def freeze_options(options: Mapping[Any, object]) -> OptionMap:
    """``options`` as an :class:`OptionMap` (itself when it already is one)."""
    if isinstance(options, OptionMap):
        return options
    if not isinstance(options, Mapping):
        raise TypeError(f"address options must be a mapping, not {type(options).__name__}")
    return OptionMap._wrap(_freeze_entries(options, (), 1))


def _freeze_entries(
    items: Mapping[Any, object], path: Path, depth: int
) -> dict[OptionKey, OptionValue]:
    if depth > MAX_DEPTH:
        raise ValueError(f"option {format_path(path)}: maps and lists nest deeper than {MAX_DEPTH}")
    data: dict[OptionKey, OptionValue] = {}
    for key, value in items.items():
        frozen_key = _freeze_key(key, path)
        data[frozen_key] = _freeze(value, (*path, frozen_key), depth)
    return data


def _freeze_key(key: object, path: Path) -> OptionKey:
    if key is None or isinstance(key, str | int | float):
        frozen = _freeze(key, path, 0)
        assert frozen is None or isinstance(frozen, str | int | float)
        return frozen
    where = f"option {format_path(path)}" if path else "address options"
    raise TypeError(f"{where}: key {key!r} is not a str, bool, int, float or None")


def _freeze(value: object, path: Path, depth: int) -> OptionValue:
    if value is None:
        return None
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"option {format_path(path)}: {value!r} has no address syntax")
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, Mapping):
        return OptionMap._wrap(_freeze_entries(value, path, depth + 1))
    if isinstance(value, list | tuple):
        if depth + 1 > MAX_DEPTH:
            raise ValueError(
                f"option {format_path(path)}: maps and lists nest deeper than {MAX_DEPTH}"
            )
        return tuple(_freeze(item, (*path, i), depth + 1) for i, item in enumerate(value))
    raise TypeError(
        f"option {format_path(path)}: {type(value).__name__} is not an option value "
        "(bool, int, float, str, None, mapping, list or tuple)"
    )
