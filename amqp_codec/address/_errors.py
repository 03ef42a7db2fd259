"""The two exceptions of :mod:`amqp_codec.address`."""

from __future__ import annotations

from ..errors import AMQPError


class AddressError(AMQPError, ValueError):
    """An address string that does not follow the grammar.

    ``str(error)`` is the reason and its position, then the text with a caret under that
    position::

        column 9: expected ',' or '}', found identifier e5
          q; {x: 1e5}
                  ^

    Attributes:
        text: the address string. For :func:`~amqp_codec.address.validate` on an
            :class:`~amqp_codec.address.Address` built in code, its canonical ``str()``.
        column: where the problem is, counted from 1: column 1 is ``text[0]`` and
            ``len(text) + 1`` is the end of the text. Every character counts, newlines
            included (an address is normally one line; the message shows the line that
            holds the column). ``text[column - 1]`` is the offending character.
        expected: what was expected there, in words: ``"':'"``, ``"',' or '}'"``,
            ``"a name"``, ``"always, never, sender or receiver"``.
        found: what was there instead: ``"end of input"``, ``"identifier e5"``,
            ``"character '&'"``, ``"'alway'"``.
        reason: the one-line message, without the position and the caret display.
    """

    def __init__(self, reason: str, *, text: str, column: int, expected: str, found: str) -> None:
        self.reason = reason
        self.text = text
        self.column = column
        self.expected = expected
        self.found = found
        super().__init__(reason)

    @property
    def offset(self) -> int:
        """The 0-based index into :attr:`text` (``column - 1``)."""
        return self.column - 1

    def __str__(self) -> str:
        offset = min(max(self.offset, 0), len(self.text))
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        if end < 0:
            end = len(self.text)
        line = "".join(ch if ch.isprintable() else " " for ch in self.text[start:end])
        where = f"column {self.column}"
        if "\n" in self.text:
            line_number = self.text.count("\n", 0, start) + 1
            where += f" (line {line_number}, column {offset - start + 1})"
        caret = " " * (offset - start) + "^"
        return f"{where}: {self.reason}\n  {line}\n  {caret}"


class AddressOptionError(AddressError):
    """An address whose options break the option tables (unknown key, bad value or type).

    Raised by :func:`~amqp_codec.address.parse` (unless ``validate=False``) and by
    :func:`~amqp_codec.address.validate`. ``column`` points at the offending key (unknown keys)
    or value (everything else).

    Attributes:
        path: the option's path, keys joined by ``.`` and list indexes in brackets:
            ``node.x-bindings[0].exchange``. Keys that are not identifiers are quoted:
            ``link.x-declare["qpid.max_count"]``.
    """

    def __init__(
        self, reason: str, *, text: str, column: int, expected: str, found: str, path: str
    ) -> None:
        self.path = path
        super().__init__(reason, text=text, column=column, expected=expected, found=found)
