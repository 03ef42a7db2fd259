"""The parsed address."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ._values import OptionMap, OptionValue, freeze_options
from ._writer import write

_NO_OPTIONS = OptionMap()


@dataclass(frozen=True, slots=True)
class Address:
    """A Qpid Messaging address: a node name, an optional subject and options.

    ``str(address)`` is the canonical address string, which parses back to an equal
    ``Address``. Addresses are immutable and hashable: ``options`` is always an
    :class:`OptionMap` (nested maps are ``OptionMap`` too, lists are tuples), whatever mapping
    was given to the constructor. Equality is type-exact for option values (``durable: True``
    is not ``durable: 1``) and ignores the order of keys.

    Attributes:
        name: the node name, never ``None`` (``""`` only when written as ``""``).
        subject: the text after the first ``/``; ``None`` when there is no subject (and when
            nothing follows the ``/``, as in Qpid).
        options: the options map; empty when the address has none.
    """

    name: str
    subject: str | None = None
    options: Mapping[str, OptionValue] = _NO_OPTIONS

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"address name must be a str, not {type(self.name).__name__}")
        if self.subject is not None and not isinstance(self.subject, str):
            raise TypeError(
                f"address subject must be a str or None, not {type(self.subject).__name__}"
            )
        object.__setattr__(self, "name", str.__str__(self.name))
        if self.subject is not None:
            object.__setattr__(self, "subject", str.__str__(self.subject))
        object.__setattr__(self, "options", freeze_options(self.options))

    def __str__(self) -> str:
        return write(self.name, self.subject, self.options)[0]
