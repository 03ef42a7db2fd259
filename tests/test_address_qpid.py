"""Address strings as Qpid's python client reads them: our own vectors of its behaviour.

Qpid's parser allows a trailing comma in maps and lists, reads a map key like a value (so
``1`` is an int key and ``True`` a bool key) and reads a NUMBER with Python 2's ``eval``: a
leading zero makes an integer octal. What it refuses (a map or list as a key, a lone comma,
``08``) stays refused. Each case is parsed without option validation, as Qpid's parser does.
"""

from __future__ import annotations

from typing import Any

import pytest

from amqp_codec.address import Address, AddressError, parse

ACCEPTED: list[tuple[str, dict[Any, Any]]] = [
    ("n; {k: v,}", {"k": "v"}),
    ("n; {k: v, j: w , }", {"k": "v", "j": "w"}),
    ("n; {k: [1, 2,]}", {"k": (1, 2)}),
    ("n; {k: [[],]}", {"k": ((),)}),
    ("n; {k: {a: b,},}", {"k": {"a": "b"}}),
    ("n; {1: v}", {1: "v"}),
    ("n; {-2: v, 0.5: w}", {-2: "v", 0.5: "w"}),
    ("n; {True: a, None: b}", {True: "a", None: "b"}),
    ("n; {true: a, false: b}", {True: "a", False: "b"}),
    ("n; {'True': a, \"None\": b}", {"True": "a", "None": "b"}),
    ("n; {k: 010}", {"k": 8}),
    ("n; {k: -017}", {"k": -15}),
    ("n; {k: +00}", {"k": 0}),
    ("n; {k: 0}", {"k": 0}),
    ("n; {k: 10}", {"k": 10}),
    ("n; {k: 010.5}", {"k": 10.5}),
    ("n; {k: .25, j: -0.0}", {"k": 0.25, "j": -0.0}),
]


@pytest.mark.parametrize(("text", "options"), ACCEPTED)
def test_accepted_as_qpid_reads_it(text: str, options: dict[Any, Any]) -> None:
    address = parse(text, validate=False)
    assert address.options == options
    # The canonical form reads back the same, keys' types included.
    assert parse(str(address), validate=False) == address


def test_keys_keep_their_types() -> None:
    options = parse("n; {2: a, True: b, None: c, '1': d}", validate=False).options
    assert [type(key) for key in options] == [int, bool, type(None), str]
    assert str(parse("n; {'True': x, True: y}", validate=False)) == 'n; {"True": x, True: y}'


REFUSED = [
    "n; {,}",
    "n; {k: v,,}",
    "n; {k: [,]}",
    "n; {k: [1,,]}",
    "n; {{a: b}: c}",
    "n; {[1]: c}",
    "n; {k: 08}",
    "n; {k: -0019}",
    "n; {1: a, 1.0: b}",  # the same key to Qpid's dict: refused as a duplicate
]


@pytest.mark.parametrize("text", REFUSED)
def test_refused(text: str) -> None:
    with pytest.raises(AddressError):
        parse(text, validate=False)


def test_address_built_in_code_takes_scalar_keys() -> None:
    address = Address("n", options={2: "x", None: [1]})
    assert str(address) == "n; {2: x, None: [1]}"
    assert parse(str(address), validate=False) == address
