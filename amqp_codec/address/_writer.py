"""The canonical form of an address: ``str(address)``.

::

    name[/subject][; {key: value, key: [value, value], key: {key: value}}]

* A name or subject made only of characters that lex as name parts (ASCII letters and
  digits, ``_ - . # * % @ $ ^ ! + { } : ,`` and, in a subject, ``/``) is written as it is;
  anything else is written as one double-quoted string. The empty subject is ``name/""``.
  Empty options are left out.
* Keys and string values are written bare when they are one ID token and not one of the
  words ``True true False false None``, quoted otherwise: ``"amq.topic"``, ``"10"``,
  ``"True"``, ``"two words"``. Keys that are not strings are written as values are (``1``,
  ``True``, ``None``).
* Quoted strings escape ``\\`` and ``"``, write ``\\n \\r \\t``, and ``\\xHH`` or
  ``\\uHHHH`` for other characters that are not printable (lone surrogates included).
* ``True``, ``False`` and ``None``; integers in decimal; floats in positional notation with a
  fraction, since the grammar's NUMBER has no exponent (``1e+16`` is written
  ``10000000000000000.0``), with the shortest digits that read back as the same float.
* Keys keep their order, so the text reads like what was written.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ._values import ID_RE, OptionKey, OptionValue, Path

#: ID tokens that stand for values rather than strings (as in Qpid's python client).
CONSTANTS: dict[str, bool | None] = {
    "True": True,
    "true": True,
    "False": False,
    "false": False,
    "None": None,
}

#: Where each option was written: path → (index of its key, index of its value). A list
#: item's "key" is the item itself.
Positions = dict[Path, tuple[int, int]]

_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_-.#*%@$^!+{}:,")
_SUBJECT_CHARS = _NAME_CHARS | {"/"}
_SHORT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote(text: str) -> str:
    """``text`` as a double-quoted STRING token that reads back as ``text``."""
    out = ['"']
    for char in text:
        if char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x100:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:  # the lexer takes any character inside quotes; \u stops at four digits
            out.append(char)
    out.append('"')
    return "".join(out)


def float_text(value: float) -> str:
    """A NUMBER token for a finite float: positional, always with a fraction."""
    text = repr(value)
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    if "." not in text:
        text += ".0"
    return text


def _bare_or_quoted(text: str, allowed: frozenset[str]) -> str:
    if text and allowed.issuperset(text):
        return text
    return quote(text)


def key_text(key: OptionKey) -> str:
    """A map key, written like a value: a str bare when it is one ID token and not a word
    that reads as a constant (``"True"``), else quoted; other keys as their values are."""
    return scalar_text(key)


def scalar_text(value: OptionValue) -> str:
    """A scalar option value as it is written."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, str):
        if ID_RE.fullmatch(value) and value not in CONSTANTS:
            return value
        return quote(value)
    raise TypeError(f"not a scalar option value: {value!r}")


class _Writer:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.positions: Positions = {}

    def put(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def value(self, value: OptionValue, path: Path, key_at: int) -> None:
        self.positions[path] = (key_at, self.length)
        if isinstance(value, Mapping):
            self.map(value, path)
        elif isinstance(value, Sequence) and not isinstance(value, str):
            self.put("[")
            for i, item in enumerate(value):
                if i:
                    self.put(", ")
                self.value(item, (*path, i), self.length)
            self.put("]")
        else:
            self.put(scalar_text(value))

    def map(self, value: Mapping[Any, OptionValue], path: Path) -> None:
        self.put("{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                self.put(", ")
            key_at = self.length
            self.put(key_text(key))
            self.put(": ")
            self.value(item, (*path, key), key_at)
        self.put("}")


def write(
    name: str, subject: str | None, options: Mapping[Any, OptionValue]
) -> tuple[str, Positions]:
    """The canonical text of an address, and where each option was written in it."""
    writer = _Writer()
    writer.put(_bare_or_quoted(name, _NAME_CHARS))
    if subject is not None:
        writer.put("/")
        writer.put(_bare_or_quoted(subject, _SUBJECT_CHARS))
    if options:
        writer.put("; ")
        writer.map(options, ())
    return "".join(writer.parts), writer.positions
