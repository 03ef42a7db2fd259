"""The option tables: which keys each map may hold and what their values may be.

These are the reference's tables, as Qpid's python client checks them (``qpid.messaging.driver``):

======================  ===========================================================
key                     value
======================  ===========================================================
create, delete, assert  ``always``, ``never``, ``sender`` or ``receiver``
mode                    ``browse`` or ``consume`` (Qpid reads it for receivers only)
node                    map: ``type`` (``queue``/``topic``), ``durable`` (bool),
                        ``x-declare`` (any map), ``x-bindings`` (list of bindings)
link                    map: ``name`` (str), ``durable`` (bool), ``reliability``
                        (``unreliable``, ``at-most-once``, ``at-least-once``,
                        ``exactly-once``), ``x-declare`` (any map), ``x-subscribe``
                        (any map), ``x-bindings`` (list of bindings)
binding                 map: ``exchange``, ``queue``, ``key`` (str), ``arguments`` (any map)
======================  ===========================================================

Unknown keys are errors in every map of the table; the contents of ``x-declare``,
``x-subscribe`` and a binding's ``arguments`` are protocol-specific and not checked beyond
being maps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ._errors import AddressOptionError
from ._values import Path, format_path
from ._writer import Positions, write

if TYPE_CHECKING:
    from ._model import Address

POLICIES = ("always", "never", "sender", "receiver")
MODES = ("browse", "consume")
NODE_TYPES = ("queue", "topic")
RELIABILITIES = ("unreliable", "at-most-once", "at-least-once", "exactly-once")


class OptionProblem(Exception):
    """A broken option, before it is placed in a text (internal)."""

    def __init__(self, path: Path, expected: str, found: str, *, at_key: bool = False) -> None:
        super().__init__(path, expected, found)
        self.path = path
        self.expected = expected
        self.found = found
        self.at_key = at_key

    def error(self, text: str, positions: Positions) -> AddressOptionError:
        """The :class:`AddressOptionError` for this problem in ``text``."""
        key_at, value_at = positions[self.path]
        path = format_path(self.path)
        return AddressOptionError(
            f"option {path}: expected {self.expected}, found {self.found}",
            text=text,
            column=(key_at if self.at_key else value_at) + 1,
            expected=self.expected,
            found=self.found,
            path=path,
        )


Check = Callable[[object, Path], None]


def _describe(value: object) -> str:
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, tuple | list):
        return "a list"
    return repr(value)


def _words(choices: tuple[str, ...] | list[str]) -> str:
    return ", ".join(choices[:-1]) + " or " + choices[-1]


def _one_of(*choices: str) -> Check:
    expected = _words(choices)

    def check(value: object, path: Path) -> None:
        if not (isinstance(value, str) and value in choices):
            raise OptionProblem(path, expected, _describe(value))

    return check


def _boolean(value: object, path: Path) -> None:
    if not isinstance(value, bool):
        raise OptionProblem(path, "True or False", _describe(value))


def _string(value: object, path: Path) -> None:
    if not isinstance(value, str):
        raise OptionProblem(path, "a string", _describe(value))


def _any_map(value: object, path: Path) -> None:
    if not isinstance(value, Mapping):
        raise OptionProblem(path, "a map", _describe(value))


def _map_of(what: str, whats: str, fields: dict[str, Check]) -> Check:
    """A map whose keys are ``fields``: ``what`` names one key ("a node property"), ``whats``
    the map's contents ("node properties")."""
    unknown = f"{what} ({_words(list(fields))})"

    def check(value: object, path: Path) -> None:
        if not isinstance(value, Mapping):
            raise OptionProblem(path, f"a map of {whats}", _describe(value))
        for key, item in value.items():
            field = fields.get(key)
            if field is None:
                raise OptionProblem((*path, key), unknown, f"unknown key {key!r}", at_key=True)
            field(item, (*path, key))

    return check


def _list_of(what: str, item_check: Check) -> Check:
    def check(value: object, path: Path) -> None:
        if not isinstance(value, tuple | list):
            raise OptionProblem(path, f"a list of {what}s", _describe(value))
        for i, item in enumerate(value):
            item_check(item, (*path, i))

    return check


_BINDINGS = _list_of(
    "binding",
    _map_of(
        "a binding field",
        "binding fields",
        {"exchange": _string, "queue": _string, "key": _string, "arguments": _any_map},
    ),
)

_NODE = _map_of(
    "a node property",
    "node properties",
    {
        "type": _one_of(*NODE_TYPES),
        "durable": _boolean,
        "x-declare": _any_map,
        "x-bindings": _BINDINGS,
    },
)

_LINK = _map_of(
    "a link property",
    "link properties",
    {
        "name": _string,
        "durable": _boolean,
        "reliability": _one_of(*RELIABILITIES),
        "x-declare": _any_map,
        "x-subscribe": _any_map,
        "x-bindings": _BINDINGS,
    },
)

_OPTIONS = _map_of(
    "an address option",
    "address options",
    {
        "create": _one_of(*POLICIES),
        "delete": _one_of(*POLICIES),
        "assert": _one_of(*POLICIES),
        "mode": _one_of(*MODES),
        "node": _NODE,
        "link": _LINK,
    },
)


def check_options(options: Mapping[str, object]) -> None:
    """Check an options map against the tables.

    Raises:
        OptionProblem: the first broken option, in the order the options are written.
    """
    _OPTIONS(options, ())


def validate(address: Address) -> Address:
    """Check ``address.options`` against the option tables; return ``address``.

    :func:`parse` already does this unless called with ``validate=False``; use this for an
    :class:`Address` built in code, or parsed without validation.

    Raises:
        AddressOptionError: the first unknown key or bad value, with its path; ``text`` is
            ``str(address)`` and ``column`` points into it.
    """
    try:
        check_options(address.options)
    except OptionProblem as problem:
        text, positions = write(address.name, address.subject, address.options)
        raise problem.error(text, positions) from None
    return address
