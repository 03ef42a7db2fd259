"""The value types of field tables: :class:`FieldTable`, :class:`FieldArray`,
:class:`Timestamp` and :class:`Tagged`, all importable from (and documented in)
:mod:`amqp_codec.table`.

They live apart from the table codec so that the compiled build (see
:mod:`amqp_codec._compiled`) can compile the codec's functions while these classes stay
ordinary Python classes, identical in both builds.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .errors import AMQPEncodeError

__all__ = ["EMPTY_TABLE", "FieldArray", "FieldTable", "Tagged", "Timestamp"]

_ALL_TAGS = frozenset("tbBUusIiLlfdDSxATFV")
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)


class Timestamp(int):
    """An AMQP timestamp: any unsigned 64-bit number, normally seconds since the epoch.

    It stays an ``int`` because real peers also send milliseconds, which overflow ``datetime``;
    :meth:`to_datetime` converts on request.
    """

    __module__ = "amqp_codec.table"  # its public home

    __slots__ = ()

    def to_datetime(self, *, milliseconds: bool = False) -> _dt.datetime:
        """The timestamp as an aware UTC datetime (raises ``OverflowError`` past year 9999)."""
        seconds, millis = divmod(int(self), 1000) if milliseconds else (int(self), 0)
        return _EPOCH + _dt.timedelta(seconds=seconds, milliseconds=millis)

    @classmethod
    def from_datetime(cls, value: _dt.datetime) -> Timestamp:
        """Whole seconds since the epoch; a naive datetime is taken as UTC.

        An AMQP timestamp holds whole seconds: the fraction of a second is dropped, as every
        AMQP client does (``datetime.now()`` works as a message timestamp).
        """
        delta = value - (_EPOCH_NAIVE if value.tzinfo is None else _EPOCH)
        return cls(delta.days * 86400 + delta.seconds)

    def __repr__(self) -> str:
        return f"Timestamp({int(self)})"


@dataclass(frozen=True, slots=True)
class Tagged:
    """A value with an explicit field-table tag, e.g. ``Tagged("f", 1.5)`` or ``Tagged("b", -3)``.

    Use it where RabbitMQ's default mapping (see :func:`tag_for`) is not what the peer expects.
    """

    __module__ = "amqp_codec.table"  # its public home

    tag: str
    value: Any

    def __post_init__(self) -> None:
        if self.tag not in _ALL_TAGS:
            raise AMQPEncodeError(f"unknown field-table tag {self.tag!r}")


class FieldTable(Mapping[str, Any]):
    """An AMQP field table: ordered ``(key, tag, value)`` entries that read like a dict.

    Lookups return the first entry with that key, as RabbitMQ does; :meth:`get_all` returns
    every value of a duplicated key. Build one from a mapping or from ``(key, value)`` pairs;
    a value may be :class:`Tagged` to force its tag. Tables are immutable.

    ``==`` against another ``FieldTable`` compares entries including tags (wire identity);
    against a plain mapping it compares values as Python sees them.
    """

    __module__ = "amqp_codec.table"  # its public home

    __slots__ = ("_entries", "_index")

    _entries: list[tuple[str, str, Any]]
    _index: dict[str, Any]  # unset until the first lookup

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        entries = []
        for key, value in pairs:
            if not isinstance(key, str):
                raise AMQPEncodeError(f"field-table keys are str, not {type(key).__name__}")
            if type(value) is Tagged:
                entries.append((key, value.tag, value.value))
            else:
                entries.append((key, tag_for(value, key), value))
        self._entries = entries

    @classmethod
    def from_entries(cls, entries: list[tuple[str, str, Any]]) -> FieldTable:
        """Wrap decoded ``(key, tag, value)`` entries without re-checking them."""
        table = _new(cls)
        _set_entries(table, entries)
        return table

    def entries(self) -> list[tuple[str, str, Any]]:
        """The ``(key, tag, value)`` entries in wire order (a copy)."""
        return list(self._entries)

    def _lookup(self) -> dict[str, Any]:
        # The dict view is built on first use: many decoded tables are only re-encoded.
        try:
            return self._index
        except AttributeError:
            index: dict[str, Any] = {}
            for key, _tag, value in self._entries:
                index.setdefault(key, value)
            self._index = index
            return index

    def __getitem__(self, key: str) -> Any:
        return self._lookup()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._lookup())

    def __len__(self) -> int:
        return len(self._lookup())

    def __contains__(self, key: object) -> bool:
        return key in self._lookup()

    def tag(self, key: str) -> str:
        """The wire tag of the (first) value under ``key``."""
        for k, tag, _value in self._entries:
            if k == key:
                return tag
        raise KeyError(key)

    def get_all(self, key: str) -> list[Any]:
        """Every value stored under ``key``, in wire order (duplicates included)."""
        return [value for k, _tag, value in self._entries if k == key]

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dicts and lists (first value of duplicated keys; tags dropped) that
        ``json.dumps`` takes: byte strings (``x``) become text (UTF-8, other bytes as ``\\x``
        escapes) and decimals (``D``) their exact string; timestamps stay ints."""
        return {key: _plain(value) for key, value in self._lookup().items()}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FieldTable):
            return self._entries == other._entries
        if isinstance(other, Mapping):
            return self._lookup() == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if len(self._entries) == len(self._lookup()):
            return f"FieldTable({self._lookup()!r})"
        return f"FieldTable({[(k, v) for k, _t, v in self._entries]!r})"


_new = object.__new__
_set_entries = FieldTable.__dict__["_entries"].__set__

#: The empty table, shared: tables are immutable.
EMPTY_TABLE = FieldTable.from_entries([])


class FieldArray(Sequence[Any]):
    """An AMQP field array: values that remember their tags. Immutable.

    ``==`` against another ``FieldArray`` compares values and tags; against a list or tuple
    it compares values.
    """

    __module__ = "amqp_codec.table"  # its public home

    __slots__ = ("_tags", "_values")

    def __init__(self, values: Iterable[Any] = ()) -> None:
        vals = []
        tags = []
        for i, value in enumerate(values):
            if type(value) is Tagged:
                tags.append(value.tag)
                vals.append(value.value)
            else:
                tags.append(tag_for(value, f"[{i}]"))
                vals.append(value)
        self._values: list[Any] = vals
        self._tags: list[str] = tags

    @classmethod
    def from_entries(cls, entries: list[tuple[str, str, Any]]) -> FieldArray:
        """Wrap decoded ``(key, tag, value)`` entries (keys unused) without re-checking them."""
        array = cls.__new__(cls)
        array._values = [value for _key, _tag, value in entries]
        array._tags = [tag for _key, tag, _value in entries]
        return array

    @property
    def tags(self) -> tuple[str, ...]:
        """The wire tag of each value."""
        return tuple(self._tags)

    def __getitem__(self, index: Any) -> Any:
        return self._values[index]

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FieldArray):
            return self._values == other._values and self._tags == other._tags
        if isinstance(other, (list, tuple)):
            return self._values == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FieldArray({self._values!r})"


_set_values = FieldArray.__dict__["_values"].__set__
_set_tags = FieldArray.__dict__["_tags"].__set__


def _plain(value: Any) -> Any:
    if isinstance(value, FieldTable):
        return value.to_dict()
    if isinstance(value, FieldArray):
        return [_plain(v) for v in value]
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, Decimal):
        return str(value)
    return value


class _Float32NaN(float):
    """A 32-bit NaN from a table, with its exact bits: converting to a Python float sets the
    quiet bit of a signalling NaN, and the re-encoded bytes would differ."""

    __slots__ = ("bits",)
    bits: bytes


# Exact types whose tag needs no further look (ints depend on their size; see tag_for).
_TAG_BY_TYPE: dict[type, str] = {
    str: "S",
    bool: "t",
    float: "d",
    type(None): "V",
    dict: "F",
    FieldTable: "F",
    list: "A",
    tuple: "A",
    FieldArray: "A",
    bytes: "x",
    bytearray: "x",
    memoryview: "x",
    Decimal: "D",
    Timestamp: "T",
    _dt.datetime: "T",
}


def tag_for(value: Any, field: str | None = None) -> str:
    """The tag a plain Python value is encoded with, following RabbitMQ's clients.

    bool→t, int→I if it fits signed 32-bit else l, float→d, Decimal→D, str→S,
    bytes/bytearray/memoryview→x, datetime and :class:`Timestamp`→T, None→V, list/tuple→A,
    mapping→F. Anything else, or an int past signed 64-bit, raises :class:`AMQPEncodeError`.
    """
    tag = _TAG_BY_TYPE.get(type(value))
    if tag is not None:
        return tag
    if isinstance(value, int) and not isinstance(value, bool):
        if -(2**31) <= value < 2**31:
            return "I"
        if -(2**63) <= value < 2**63:
            return "l"
        raise AMQPEncodeError(
            f"int {value} does not fit a signed 64-bit field-table value", field=field
        )
    if isinstance(value, Tagged):
        return value.tag
    # Subclasses of the types above.
    for cls, tag in _TAG_BY_TYPE.items():
        if cls is not type(None) and isinstance(value, cls):
            return tag
    if isinstance(value, Mapping):
        return "F"
    raise AMQPEncodeError(
        f"{type(value).__name__} has no field-table encoding (wrap it in Tagged to choose one)",
        field=field,
    )


tag_for.__module__ = "amqp_codec.table"  # its public home, beside the encoder that uses it
