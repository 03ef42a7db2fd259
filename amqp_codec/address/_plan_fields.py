"""What the planners share: reading an address's protocol-specific maps (``x-declare``,
``x-subscribe``, binding ``arguments``) onto a method's fields and field tables, and binding.

A key (``_`` may stand for ``-``) that names a field of the method sets that field, with its type
checked; ``arguments`` is the method's table; a key the protocol has no field for but that is
meaningful elsewhere is refused with the reason; any other key is protocol-specific and kept in
the table under its own name. Values a field table cannot hold are refused at their path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..base import Method
from ._plan import Binding, Link, Subscription
from ._values import OptionValue, Path


@dataclass(frozen=True, slots=True)
class FieldMap:
    """How one method takes an option map.

    Attributes:
        what: the method's name, for messages (``"queue.declare"``).
        bools: option key → attribute of the boolean fields.
        strings: option key → attribute of the string fields (``type`` must not be empty).
        name_field: the option key naming the declared entity, which must match its name.
        as_arguments: option key → table key, for fields this version carries as arguments.
        refused: option key → why the key cannot be used.
        table: the attribute of the method's table (``arguments``, ``filter``).
        int_range: the integers a table value may hold.
    """

    what: str
    bools: Mapping[str, str]
    strings: Mapping[str, str] = field(default_factory=dict)
    name_field: str | None = None
    as_arguments: Mapping[str, str] = field(default_factory=dict)
    refused: Mapping[str, str] = field(default_factory=dict)
    table: str = "arguments"
    int_range: tuple[int, int] = (-(2**63), 2**63 - 1)


def describe(value: object) -> str:
    """A value as error messages show it."""
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, tuple | list):
        return "a list"
    return repr(value)


def shortstr(link: Link, value: str, path: Path | None) -> str:
    """``value`` if it fits a short string (at most 255 bytes of UTF-8)."""
    try:
        size = len(value.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        raise link.error(path, "text that encodes as UTF-8", repr(value)) from None
    if size > 255:
        raise link.error(path, "at most 255 bytes (a short string)", f"{size} bytes")
    return value


def table_value(link: Link, value: OptionValue, path: Path, int_range: tuple[int, int]) -> object:
    """An option value as a field-table value (maps as dicts, lists as lists)."""
    if isinstance(value, Mapping):
        return table(link, value, path, int_range)
    if isinstance(value, tuple | list):
        return [table_value(link, item, (*path, i), int_range) for i, item in enumerate(value)]
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        if not int_range[0] <= value <= int_range[1]:
            raise link.error(path, "an integer that fits 64 bits", str(value))
        return value
    if not isinstance(value, str):  # pragma: no cover - an Address holds no other values
        raise link.error(path, "an option value", describe(value))
    try:
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise link.error(path, "text that encodes as UTF-8", repr(value)) from None
    return value


def table(
    link: Link, value: Mapping[str, OptionValue], path: Path, int_range: tuple[int, int]
) -> dict[str, object]:
    """An options map as a field table, refusing what a table cannot hold."""
    out: dict[str, object] = {}
    for key, item in value.items():
        shortstr(link, key, (*path, key))
        out[key] = table_value(link, item, (*path, key), int_range)
    return out


def arguments(
    link: Link,
    value: OptionValue,
    path: Path,
    extra: Mapping[str, tuple[object, Path]],
    int_range: tuple[int, int],
) -> dict[str, object]:
    """The ``arguments`` map at ``path`` (``None``: empty) with the ``extra`` keys added."""
    if value is None:
        out: dict[str, object] = {}
    elif isinstance(value, Mapping):
        out = table(link, value, path, int_range)
    else:
        raise link.error(path, "a map", describe(value))
    for key, (item, where) in extra.items():
        if key in out:
            raise link.error(where, f"{key} only once (it is also in arguments)", key, at_key=True)
        shortstr(link, key, where)
        out[key] = item
    return out


def read_fields(
    link: Link,
    options: Mapping[str, OptionValue],
    path: Path,
    fields: FieldMap,
    defaults: Mapping[str, Any],
    *,
    name: str = "",
    durable_option: Path | None = None,
) -> dict[str, Any]:
    """The method's keyword arguments: ``defaults`` overridden by ``options``.

    ``durable_option`` is the path of a ``durable`` option given beside ``options``, which an
    x-declare ``durable`` must agree with.
    """
    out = dict(defaults)
    seen: dict[str, str] = {}
    extra: dict[str, tuple[object, Path]] = {}
    table_option: OptionValue = None
    table_path = (*path, "arguments")
    for key, value in options.items():
        here = (*path, key)
        canon = key.replace("_", "-")
        if canon in seen:
            raise link.error(here, f"{canon} only once", f"{seen[canon]} and {key}", at_key=True)
        seen[canon] = key
        if canon == "arguments":
            table_option, table_path = value, here
        elif canon in fields.bools:
            if not isinstance(value, bool):
                raise link.error(here, "True or False", describe(value))
            attr = fields.bools[canon]
            if attr == "durable" and durable_option is not None and value != out[attr]:
                shown = ".".join(str(part) for part in durable_option)
                raise link.error(here, f"the same durability as {shown}", repr(value))
            out[attr] = value
        elif canon in fields.strings:
            if canon == "type" and (not isinstance(value, str) or not value):
                raise link.error(here, "an exchange type", describe(value))
            if not isinstance(value, str):
                raise link.error(here, "a string", describe(value))
            out[fields.strings[canon]] = shortstr(link, value, here)
        elif canon == fields.name_field:
            if value != name:
                raise link.error(here, f"the name being declared, {name!r}", describe(value))
        elif canon in fields.as_arguments:
            if not isinstance(value, str):
                raise link.error(here, "a string", describe(value))
            extra[fields.as_arguments[canon]] = (value, here)
        elif canon in fields.refused:
            reason = fields.refused[canon]
            raise link.error(here, f"a field of {fields.what} ({reason})", key, at_key=True)
        else:  # protocol-specific: kept in the table
            extra[key] = (table_value(link, value, here, fields.int_range), here)
    out[fields.table] = arguments(link, table_option, table_path, extra, fields.int_range)
    return out


def stated_durability(link: Link, section: str) -> Path | None:
    """The path of ``section.durable`` when the address gives it."""
    options = link.address.options.get(section)
    if isinstance(options, Mapping) and "durable" in options:
        return (section, "durable")
    return None


def subscription_queue(link: Link, sub: Subscription) -> str:
    """A receiver's subscription queue name, checked as a short string at its source."""
    link_options = link.address.options.get("link")
    if isinstance(link_options, Mapping) and link_options.get("name"):
        return shortstr(link, sub.queue, ("link", "name"))
    if sub.generated:  # the node's name, "_" and 32 hex digits
        size = len(link.name.encode("utf-8", "surrogateescape"))
        if size > 255 - 33:
            raise link.error(
                None, "at most 222 bytes (a subscription queue's name adds 33)", f"{size} bytes"
            )
    return sub.queue


def bind(
    link: Link, pkg: ModuleType, binding: Binding, int_range: tuple[int, int], *, unbind: bool
) -> Method:
    """``queue.bind`` (or ``unbind``) for ``binding``; ``exchange.bind`` from exchange to
    exchange where the version has it."""
    path = binding.path
    exchange = shortstr(link, binding.exchange, (*path, "exchange"))
    key = shortstr(link, binding.key, ("/",) if path == ("/",) else (*path, "key"))
    args = arguments(link, binding.arguments, (*path, "arguments"), {}, int_range)
    if binding.queue is None:
        method_class = getattr(pkg.Exchange, "Unbind" if unbind else "Bind", None)
        if method_class is None:
            raise link.error(
                path, "a binding with a queue (this version has no exchange.bind)", "no queue"
            )
        return method_class(  # type: ignore[no-any-return]
            destination=binding.destination, source=exchange, routing_key=key, arguments=args
        )
    queue = shortstr(link, binding.queue, (*path, "queue"))
    method_class = pkg.Queue.Unbind if unbind else pkg.Queue.Bind
    return method_class(  # type: ignore[no-any-return]
        queue=queue, exchange=exchange, routing_key=key, arguments=args
    )
