"""The grammar: a recursive-descent parser over :mod:`._lexer`'s tokens.

::

    address := name [ SLASH subject ] [ ";" options ]
    name    := ( part | quoted )+
    subject := ( part | quoted | SLASH )*
    quoted  := STRING / ESC
    part    := LBRACE / RBRACE / COLON / COMMA / NUMBER / ID / SYM
    options := map
    map     := "{" ( keyval ( "," keyval )* ","? )? "}"
    keyval  := key ":" value          (key: NUMBER, STRING or ID, read as a value)
    value   := NUMBER / STRING / ID / map / list
    list    := "[" ( value ( "," value )* ","? )? "]"

As in Qpid's python client: a trailing comma is allowed in maps and lists; a key is read like
a value (``1`` is the int 1, ``True`` the bool, ``None`` None; Qpid fails on a map or list key,
and so does this parser); a NUMBER is read as Python 2's ``eval`` reads it (Qpid's reader):
with a ``.`` a float, else an integer, octal when it has a leading zero (``010`` is 8, and
``08`` is refused).
"""

from __future__ import annotations

import sys

from ._errors import AddressError
from ._lexer import (
    BAD,
    COLON,
    COMMA,
    EOF,
    ESC,
    ID,
    LBRACE,
    LBRACK,
    NUMBER,
    RBRACE,
    RBRACK,
    SEMI,
    SLASH,
    STRING,
    SYM,
    Lexer,
    Token,
    escape_value,
    shown,
    string_value,
)
from ._model import Address
from ._validation import OptionProblem, check_options
from ._values import MAX_DEPTH, OptionKey, OptionMap, OptionValue, Path
from ._writer import CONSTANTS, Positions

_PARTS = frozenset({LBRACE, RBRACE, COLON, COMMA, NUMBER, ID, SYM, STRING, ESC})
_SUBJECT_PARTS = _PARTS | {SLASH}

# What the parser expects, in the words of AddressError.expected.
EXPECTED_NAME = "a name"
EXPECTED_AFTER_NAME = "'/', ';' or end of input"
EXPECTED_AFTER_SUBJECT = "';' or end of input"
EXPECTED_OPTIONS = "'{'"
EXPECTED_KEY = "a key (identifier, number or quoted string)"
EXPECTED_KEY_OR_END = "a key (identifier, number or quoted string) or '}'"
EXPECTED_NEW_KEY = "a key not already in this map"
EXPECTED_COLON = "':'"
EXPECTED_VALUE = "a value (number, string, identifier, map or list)"
EXPECTED_VALUE_OR_END = "a value (number, string, identifier, map or list) or ']'"
EXPECTED_MAP_NEXT = "',' or '}'"
EXPECTED_LIST_NEXT = "',' or ']'"
EXPECTED_END = "end of input"
EXPECTED_DEPTH = f"at most {MAX_DEPTH} nested maps and lists"
EXPECTED_FLOAT = "a number within the range of a float"
EXPECTED_OCTAL = "octal digits 0-7 after a leading 0 (Qpid reads 010 as 8)"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lexer = Lexer(text)
        self.token = self.lexer.next()
        self.positions: Positions = {}

    # -- helpers --

    def advance(self) -> Token:
        token = self.token
        self.token = self.lexer.next()
        return token

    def fail(
        self, expected: str, token: Token | None = None, found: str | None = None
    ) -> AddressError:
        token = self.token if token is None else token
        found = token.describe() if found is None else found
        reason = f"expected {expected}, found {found}"
        if token.kind == BAD:
            reason += " (quote the name, subject or value that holds it)"
        return AddressError(
            reason, text=self.text, column=token.start + 1, expected=expected, found=found
        )

    def expect(self, kind: str, expected: str) -> Token:
        if self.token.kind != kind:
            raise self.fail(expected)
        return self.advance()

    # -- address --

    def address(self) -> tuple[str, str | None, OptionMap]:
        name = self.words(_PARTS)
        if name is None:
            raise self.fail(EXPECTED_NAME)
        subject = None
        if self.token.kind == SLASH:
            self.advance()
            subject = self.words(_SUBJECT_PARTS)
            if self.token.kind not in (SEMI, EOF):
                raise self.fail(EXPECTED_AFTER_SUBJECT)
        elif self.token.kind not in (SEMI, EOF):
            raise self.fail(EXPECTED_AFTER_NAME)
        options = OptionMap()
        if self.token.kind == SEMI:
            self.advance()
            if self.token.kind != LBRACE:
                raise self.fail(EXPECTED_OPTIONS)
            options = self.map((), 1)
        if self.token.kind != EOF:
            raise self.fail(EXPECTED_END)
        return name, subject, options

    def words(self, kinds: frozenset[str]) -> str | None:
        """A name or subject: its tokens' texts run together, whitespace dropped.

        ``None`` when there is no token at all (as Qpid's ``toks2str``).
        """
        parts: list[str] = []
        while self.token.kind in kinds:
            token = self.advance()
            if token.kind == STRING:
                parts.append(string_value(token, self.text))
            elif token.kind == ESC:
                parts.append(escape_value(token))
            else:
                parts.append(token.text)
        return "".join(parts) if parts else None

    # -- values --

    def map(self, path: Path, depth: int) -> OptionMap:
        if depth > MAX_DEPTH:
            raise self.fail(EXPECTED_DEPTH, found=f"a map at depth {depth}")
        self.expect(LBRACE, EXPECTED_OPTIONS)
        data: dict[OptionKey, OptionValue] = {}
        while True:
            if self.token.kind == RBRACE:  # the empty map, or after a trailing comma
                self.advance()
                return OptionMap._wrap(data)
            key_token = self.token
            if key_token.kind not in (ID, STRING, NUMBER):
                raise self.fail(EXPECTED_KEY_OR_END)
            key = self.scalar()
            # Python's dict equality, as Qpid's: 1, 1.0 and True are the same key.
            if key in data:
                raise self.fail(
                    EXPECTED_NEW_KEY, key_token, found=f"duplicate key {shown(key_token.text)}"
                )
            self.expect(COLON, EXPECTED_COLON)
            data[key] = self.value((*path, key), key_token.start, depth)
            if self.token.kind == COMMA:
                self.advance()
            elif self.token.kind != RBRACE:
                raise self.fail(EXPECTED_MAP_NEXT)

    def list(self, path: Path, depth: int) -> tuple[OptionValue, ...]:
        if depth > MAX_DEPTH:
            raise self.fail(EXPECTED_DEPTH, found=f"a list at depth {depth}")
        self.expect(LBRACK, "'['")
        items: list[OptionValue] = []
        while True:
            if self.token.kind == RBRACK:  # the empty list, or after a trailing comma
                self.advance()
                return tuple(items)
            at = self.token.start
            if self.token.kind not in (NUMBER, STRING, ID, LBRACE, LBRACK):
                raise self.fail(EXPECTED_VALUE_OR_END)
            items.append(self.value((*path, len(items)), at, depth))
            if self.token.kind == COMMA:
                self.advance()
            elif self.token.kind != RBRACK:
                raise self.fail(EXPECTED_LIST_NEXT)

    def value(self, path: Path, key_at: int, depth: int) -> OptionValue:
        token = self.token
        self.positions[path] = (key_at, token.start)
        if token.kind == LBRACE:
            return self.map(path, depth + 1)
        if token.kind == LBRACK:
            return self.list(path, depth + 1)
        if token.kind in (ID, STRING, NUMBER):
            return self.scalar()
        raise self.fail(EXPECTED_VALUE)

    def scalar(self) -> str | int | float | bool | None:
        """The value of the ID, STRING or NUMBER token at hand (a key or a value)."""
        token = self.token
        if token.kind == ID:
            self.advance()
            return CONSTANTS.get(token.text, token.text)
        if token.kind == STRING:
            self.advance()
            return string_value(token, self.text)
        return self.number()

    def number(self) -> int | float:
        token = self.token
        text = token.text
        if "." in text:
            value: int | float = float(text)
            if value in (float("inf"), float("-inf")):
                raise self.fail(EXPECTED_FLOAT)
        else:
            digits = text.lstrip("+-")
            base = 8 if len(digits) > 1 and digits[0] == "0" else 10
            if base == 8 and not set(digits) <= set("01234567"):
                raise self.fail(EXPECTED_OCTAL, found=f"number {shown(text)}")
            try:
                value = int(text, base)
            except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
                limit = sys.get_int_max_str_digits()
                raise self.fail(f"an integer of at most {limit} digits") from None
        self.advance()
        return value


def parse(text: str, *, validate: bool = True) -> Address:
    """Parse a Qpid Messaging address string.

    Args:
        text: ``name[/subject][;{options}]``, e.g. ``"xoxox ; {create: always}"``.
        validate: check the options against the option tables (the default); ``False``
            accepts any options map the grammar allows (see :func:`validate`).

    Raises:
        AddressError: the text does not follow the grammar; ``column`` and ``expected`` say
            where and what was wanted.
        AddressOptionError: (an ``AddressError``) the options break the option tables.
    """
    if not isinstance(text, str):
        raise TypeError(f"an address string must be a str, not {type(text).__name__}")
    parser = _Parser(text)
    name, subject, options = parser.address()
    if validate:
        try:
            check_options(options)
        except OptionProblem as problem:
            raise problem.error(text, parser.positions) from None
    return Address(name, subject, options)
