"""Tokens of address strings: the reference's regular expressions, tried in the reference's order.

At each position the first token type whose expression matches wins (not the longest match),
as in Qpid's lexer: ``+1`` is a NUMBER, ``+x`` a SYM then an ID, ``1e5`` a NUMBER then an ID.
Whitespace tokens are skipped.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from ._errors import AddressError

LBRACE = "LBRACE"
RBRACE = "RBRACE"
LBRACK = "LBRACK"
RBRACK = "RBRACK"
COLON = "COLON"
SEMI = "SEMI"
SLASH = "SLASH"
COMMA = "COMMA"
NUMBER = "NUMBER"
ID = "ID"
STRING = "STRING"
ESC = "ESC"
SYM = "SYM"
WSPACE = "WSPACE"
#: End of the text.
EOF = "EOF"
#: One character that starts no token (the parser reports it with what it expected).
BAD = "BAD"

# The reference's token table, in its order (which is also Qpid's order of alternatives).
TOKEN_PATTERNS = (
    (LBRACE, r"\{"),
    (RBRACE, r"\}"),
    (LBRACK, r"\["),
    (RBRACK, r"\]"),
    (COLON, r":"),
    (SEMI, r";"),
    (SLASH, r"/"),
    (COMMA, r","),
    (NUMBER, r"[+-]?[0-9]*\.?[0-9]+"),
    (ID, r"[a-zA-Z_](?:[a-zA-Z0-9_-]*[a-zA-Z0-9_])?"),
    (STRING, r""""(?:[^\\"]|\\.)*"|'(?:[^\\']|\\.)*'"""),
    (ESC, r"\\[^ux]|\\x[0-9a-fA-F][0-9a-fA-F]|\\u[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]"),
    (SYM, r"[.#*%@$^!+-]"),
    (WSPACE, r"[ \n\r\t]+"),
)
_TOKEN_RE = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in TOKEN_PATTERNS))

_PUNCTUATION = frozenset({LBRACE, RBRACE, LBRACK, RBRACK, COLON, SEMI, SLASH, COMMA, SYM})

# Escapes inside quoted strings, besides \xHH and \uHHHH: Python's (Qpid's python client reads
# a STRING token with eval). Any other backslash pair is kept as written, as Python does.
_STRING_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
_HEX = frozenset(string.hexdigits)

EXPECTED_ESCAPE = "an escape: \\xHH, \\uHHHH, or \\ and any other character"


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its type, its text as written and the index of its first character."""

    kind: str
    text: str
    start: int

    def describe(self) -> str:
        """The token for an error message: ``'}'``, ``identifier e5``, ``end of input``."""
        if self.kind == EOF:
            return "end of input"
        if self.kind in _PUNCTUATION:
            return f"'{self.text}'"
        if self.kind == BAD:
            return f"character {self.text!r}"
        label = {NUMBER: "number", ID: "identifier", STRING: "string", ESC: "escape"}[self.kind]
        return f"{label} {shown(self.text)}"


def shown(text: str) -> str:
    """``text`` for a one-line message: at most 24 characters, control characters escaped."""
    if len(text) > 24:
        text = text[:21] + "..."
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


class Lexer:
    """Cuts ``text`` into tokens on demand, skipping whitespace."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def next(self) -> Token:
        """The next token that is not whitespace; ``EOF`` at the end, again and again."""
        text = self.text
        while self.pos < len(text):
            match = _TOKEN_RE.match(text, self.pos)
            if match is None:
                return self._bad()
            kind = match.lastgroup
            assert kind is not None
            self.pos = match.end()
            if kind != WSPACE:
                return Token(kind, match.group(), match.start())
        return Token(EOF, "", len(text))

    def _bad(self) -> Token:
        text, pos = self.text, self.pos
        char = text[pos]
        if char in "\"'":
            raise AddressError(
                f"unterminated string: expected a closing {char}",
                text=text,
                column=pos + 1,
                expected=f"a closing {char}",
                found="end of input",
            )
        if char == "\\":
            if pos + 1 == len(text):
                found = "end of input"
            else:  # \x or \u without enough hex digits
                end = pos + 2
                while end < min(len(text), pos + 6) and text[end] in _HEX:
                    end += 1
                found = f"'{text[pos:end]}'"
            raise AddressError(
                f"invalid escape: expected {EXPECTED_ESCAPE}, found {found}",
                text=text,
                column=pos + 1,
                expected=EXPECTED_ESCAPE,
                found=found,
            )
        self.pos += 1
        return Token(BAD, char, pos)


def escape_value(token: Token) -> str:
    """The character an ESC token (outside quotes) stands for, as Qpid's python client reads it.

    ``\\xHH`` and ``\\uHHHH`` are code points; a backslash before any other character stands
    for that character (``\\/`` is ``/``, ``\\ `` a space, ``\\n`` the letter ``n``).
    """
    kind = token.text[1]
    if kind in "xu":
        return chr(int(token.text[2:], 16))
    return kind


def string_value(token: Token, text: str) -> str:
    """The value of a STRING token: quotes removed, escapes replaced.

    Raises:
        AddressError: ``\\x`` not followed by two hex digits, or ``\\u`` by four.
    """
    body = token.text[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while (j := body.find("\\", i)) >= 0:
        out.append(body[i:j])
        char = body[j + 1]  # the token's expression puts a character after every backslash
        if char in "xu":
            count = 2 if char == "x" else 4
            digits = body[j + 2 : j + 2 + count]
            if len(digits) < count or not _HEX.issuperset(digits):
                words = "two" if count == 2 else "four"
                expected = f"{words} hex digits after \\{char}"
                found = f"'{body[j : j + 2 + len(digits)]}'"
                raise AddressError(
                    f"invalid escape: expected {expected}, found {found}",
                    text=text,
                    column=token.start + 1 + j + 1,
                    expected=expected,
                    found=found,
                )
            out.append(chr(int(digits, 16)))
            i = j + 2 + count
        else:
            out.append(_STRING_ESCAPES.get(char, "\\" + char))
            i = j + 2
    out.append(body[i:])
    return "".join(out)
