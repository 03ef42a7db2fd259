"""JSON values of decoded fields (``amqp_codec.inspect.values``): the shortcut for the usual
types gives what the general rules give."""

from __future__ import annotations

import enum

from hypothesis import given
from hypothesis import strategies as st

from amqp_codec.inspect.values import _json_str, json_value


@given(st.text(st.characters(codec=None, categories=None)))
def test_a_string_is_itself_when_utf8_else_its_hex(text: str) -> None:
    assert json_value(text) == _json_str(text)


def test_strings_that_are_not_utf8_become_hex() -> None:
    assert json_value("caf\udce9") == {"hex": "636166e9"}
    assert json_value("café") == "café"
    # A lone surrogate that escapes no byte (never decoded; made by hand) is not an error.
    assert json_value("\ud800") == {"hex": "eda080"}


@given(st.integers() | st.booleans() | st.none())
def test_integers_bits_and_absent_values_are_themselves(value: int | bool | None) -> None:
    got = json_value(value)
    assert got == value and type(got) is type(value)


def test_an_int_subclass_becomes_a_plain_int() -> None:
    class Code(enum.IntEnum):
        OK = 200

    got = json_value(Code.OK)
    assert got == 200 and type(got) is int
