"""Base classes and field metadata shared by every generated protocol package."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["FieldSpec", "Method", "Properties", "slot_setters", "writable_twin"]


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """What the spec says about one field of a method or one content property.

    ``wire_type`` is the AMQP primitive: bit, octet, short, long, longlong, shortstr, longstr,
    timestamp or table. ``reserved`` fields are hidden from constructors and encode as
    ``default`` unless a decoded value was remembered.

    ``checks`` are the spec's ``<assert>``s on the field (its domain's included), as data for
    validators and test-data generators (``amqp_codec.testing``); the codec itself does not
    enforce them. Each is a ``(check, value)`` pair:

    * ``("length", n)``: at most ``n`` bytes (short strings as UTF-8);
    * ``("regexp", pattern)``: the whole value matches ``pattern`` (Python ``re`` syntax);
    * ``("notnull", None)``: not empty (strings, tables), not zero (numbers);
    * ``("null", None)``: empty;
    * ``("enum", values)``: one of ``values``;
    * ``("syntax", "path")``: a path as the spec's ``path`` domain describes it;
    * ``("ne", v)``, ``("le", v)``, ...: compared with the number ``v``, or, when ``v`` is a
      string, with that field (``"tune.channel-max"``) of an earlier method on the connection.
    """

    name: str
    attr: str
    wire_type: str
    default: Any
    reserved: bool = False
    label: str = ""
    checks: tuple[tuple[str, Any], ...] = ()


class Method:
    """Base of every generated method class (frozen, slotted dataclasses).

    Class attributes describe the method as the spec does; instance attributes are its
    fields. :meth:`encode` gives the method frame payload (class id, method id, arguments).
    """

    __slots__ = ()

    NAME: ClassVar[str]
    """The spec's name, ``"basic.publish"``."""
    CLASS_ID: ClassVar[int]
    METHOD_ID: ClassVar[int]
    INDEX: ClassVar[int]
    """``CLASS_ID << 16 | METHOD_ID``: the first four payload bytes as one big-endian number."""
    SYNCHRONOUS: ClassVar[bool]
    """The sender waits for one of :attr:`RESPONSES`."""
    RESPONSES: ClassVar[tuple[type[Method], ...]]
    HAS_CONTENT: ClassVar[bool]
    """A content header and body frames follow this method."""
    SENT_BY: ClassVar[frozenset[str]]
    """Which peers may send it: ``"client"``, ``"server"`` or both."""
    FIELDS: ClassVar[tuple[FieldSpec, ...]]
    _SETTERS: ClassVar[tuple[Callable[[Any, Any], None], ...]]
    """Slot setters in :attr:`FIELDS` order (see :func:`slot_setters`)."""

    def encode(self) -> bytes:
        """The method frame payload: class id, method id and the encoded fields."""
        raise NotImplementedError


class Properties:
    """Base of every generated content-properties class (``BasicProperties``).

    Every property is optional; ``None`` means absent (its flag bit is clear).
    """

    __slots__ = ()

    CLASS_ID: ClassVar[int]
    FIELDS: ClassVar[tuple[FieldSpec, ...]]
    FLAGS: ClassVar[tuple[int, ...]]
    """The flag bit of each field in :attr:`FIELDS`, in the same order."""

    def encode(self) -> bytes:
        """Property flags followed by the present properties."""
        raise NotImplementedError

    @property
    def flags(self) -> int:
        """The property flag word as it goes on the wire."""
        word = 0
        for spec, bit in zip(self.FIELDS, self.FLAGS, strict=True):
            if getattr(self, spec.attr) is not None:
                word |= bit
        return word


def slot_setters(cls: type[Method]) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot descriptors' setters of ``cls``'s fields, in :attr:`Method.FIELDS` order.

    Generated constructors and decoders set fields through these: a frozen dataclass's own
    ``__init__`` goes through ``object.__setattr__`` per field, at twice the cost.
    """
    return tuple(getattr(cls, spec.attr).__set__ for spec in cls.FIELDS)


def writable_twin(cls: type) -> Any:
    """A class with ``cls``'s bases and slots but none of its methods: writable, and
    layout-identical, so an instance filled through plain attribute stores can be given
    ``cls`` by a ``__class__`` assignment (the frozen class's ``__setattr__`` refuses stores).

    Built with ``type()`` rather than a class statement so that a compiled build of the
    decoders keeps it an ordinary Python class, whose ``__class__`` can be reassigned. Typed
    ``Any``: the fields are set by name on what it makes.
    """
    namespace: dict[str, Any] = {"__module__": cls.__module__}
    if "__slots__" in cls.__dict__:
        namespace["__slots__"] = cls.__dict__["__slots__"]
    # else ``cls`` has an instance ``__dict__`` (the properties classes): so has the twin,
    # its present fields stored as plain attributes, in order.
    return type(f"{cls.__name__}Twin", cls.__bases__, namespace)
