"""Qpid Messaging address strings: the reference's examples, the grammar's corners, errors with
their exact positions, the option tables, and hypothesis round trips (structure → text →
structure, through the canonical writer and through an independent, randomised writer)."""

from __future__ import annotations

import math
import string
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from amqp_codec import AMQPError
from amqp_codec.address import (
    MAX_DEPTH,
    Address,
    AddressError,
    AddressOptionError,
    OptionMap,
    parse,
    validate,
)

# --------------------------------------------------------------------------------------------
# Every address in the reference (after the shell's quote removal), with its structure.

XQUERY = (
    "let $w := ./weather return $w/station = 'Raleigh-Durham International Airport (KRDU)' "
    "and $w/temperature_f > 50 and $w/temperature_f - $w/dewpoint > 5 and "
    "$w/wind_speed_mph > 7 and $w/wind_speed_mph < 20"
)

REFERENCE_EXAMPLES: list[tuple[str, str, str | None, dict[str, Any]]] = [
    # Example 1.4, Queues / 1.5, Topics
    ("hello-world", "hello-world", None, {}),
    ("hello-word", "hello-word", None, {}),
    # footnote 2: the default address of spout and drain
    ("amq.topic", "amq.topic", None, {}),
    # Example 1.6, Using subjects
    ("news-service/sports", "news-service", "sports", {}),
    ("news-service/news", "news-service", "news", {}),
    # Example 1.7, Subjects with multi-word keys, and the prose around it
    ("news-service/*.news", "news-service", "*.news", {}),
    ("news-service/europe.#", "news-service", "europe.#", {}),
    ("news-service/usa.news", "news-service", "usa.news", {}),
    ("news-service/usa.sports", "news-service", "usa.sports", {}),
    ("news-service/europe.sports", "news-service", "europe.sports", {}),
    ("news-service/europe.news", "news-service", "europe.news", {}),
    ("news-service/#.news", "news-service", "#.news", {}),
    ("news-service/usa.faux.news", "news-service", "usa.faux.news", {}),
    ("news-service/usa.faux.sports", "news-service", "usa.faux.sports", {}),
    # Example 1.8, Assertions on Nodes (and the prose before it)
    (
        "my-queue; {assert: always, node:{ type: queue }}",
        "my-queue",
        None,
        {"assert": "always", "node": {"type": "queue"}},
    ),
    (
        "my-queue; {assert: always, node:{ type: topic }}",
        "my-queue",
        None,
        {"assert": "always", "node": {"type": "topic"}},
    ),
    (
        "my-topic; {assert: always, node:{ type: topic }}",
        "my-topic",
        None,
        {"assert": "always", "node": {"type": "topic"}},
    ),
    (
        "my-topic; {assert: always, node:{ type: queue }}",
        "my-topic",
        None,
        {"assert": "always", "node": {"type": "queue"}},
    ),
    # Example 1.9, Creating a Queue Automatically
    ("xoxox ; {create: always}", "xoxox", None, {"create": "always"}),
    # Example 1.10, Browsing a Queue
    ("my-queue", "my-queue", None, {}),
    ("my-queue; {mode: browse}", "my-queue", None, {"mode": "browse"}),
    # The XML exchange
    (
        'xml; { link: { x-bindings: [{exchange:xml, key:weather, arguments:{xquery:"./weather"} }] } }',
        "xml",
        None,
        {
            "link": {
                "x-bindings": [
                    {"exchange": "xml", "key": "weather", "arguments": {"xquery": "./weather"}}
                ]
            }
        },
    ),
    # Example 1.11, Using the XML Exchange ($(cat rdu.xquery) expanded by the shell)
    (
        "xml; {link:{x-bindings:[{key:'weather', arguments:{xquery:\"" + XQUERY + '"}}]}}',
        "xml",
        None,
        {"link": {"x-bindings": [{"key": "weather", "arguments": {"xquery": XQUERY}}]}},
    ),
    (
        "xml; {link:{x-bindings:[{exchange:'xml', key:'weather', arguments:{xquery:\""
        + XQUERY
        + '"}}]}}',
        "xml",
        None,
        {
            "link": {
                "x-bindings": [
                    {"exchange": "xml", "key": "weather", "arguments": {"xquery": XQUERY}}
                ]
            }
        },
    ),
    ("xml/weather", "xml", "weather", {}),
    # The options template of "Address String Options", every key filled in
    (
        "news-service/usa.* ; { create: receiver, delete: sender, assert: never, mode: consume,"
        " node: { type: topic, durable: True, x-declare: { type: fanout, auto-delete: true },"
        " x-bindings: [{ exchange: 'amq.direct', queue: q, key: k }] },"
        " link: { name: my-link, durable: False, reliability: at-least-once,"
        " x-declare: { exclusive: false, arguments: {'qpid.max_count': 1000} },"
        " x-bindings: [{ exchange: 'amq.topic', key: '#', arguments: {} }],"
        " x-subscribe: { exclusive: True } } }",
        "news-service",
        "usa.*",
        {
            "create": "receiver",
            "delete": "sender",
            "assert": "never",
            "mode": "consume",
            "node": {
                "type": "topic",
                "durable": True,
                "x-declare": {"type": "fanout", "auto-delete": True},
                "x-bindings": [{"exchange": "amq.direct", "queue": "q", "key": "k"}],
            },
            "link": {
                "name": "my-link",
                "durable": False,
                "reliability": "at-least-once",
                "x-declare": {"exclusive": False, "arguments": {"qpid.max_count": 1000}},
                "x-bindings": [{"exchange": "amq.topic", "key": "#", "arguments": {}}],
                "x-subscribe": {"exclusive": True},
            },
        },
    ),
]


@pytest.mark.parametrize(("text", "name", "subject", "options"), REFERENCE_EXAMPLES)
def test_reference_examples(
    text: str, name: str, subject: str | None, options: dict[str, Any]
) -> None:
    address = parse(text)  # validates too: every reference example is a valid address
    assert address.name == name
    assert address.subject == subject
    assert address.options == options
    assert address == Address(name, subject, options)
    assert parse(str(address)) == address


def test_reference_example_template_quoting() -> None:
    # A value is one token: amq.direct is an ID, a SYM and an ID, so the template above quotes
    # it. (In a name the tokens run together: amq.topic is a name.)
    with pytest.raises(AddressError) as info:
        parse("q; {node: {x-bindings: [{exchange: amq.direct}]}}")
    assert (info.value.column, info.value.found) == (39, "'.'")


def test_reference_examples_canonical_text() -> None:
    canonical = {text: str(parse(text)) for text, *_ in REFERENCE_EXAMPLES}
    assert canonical["news-service/*.news"] == "news-service/*.news"
    assert canonical["xoxox ; {create: always}"] == "xoxox; {create: always}"
    assert (
        canonical["my-queue; {assert: always, node:{ type: queue }}"]
        == "my-queue; {assert: always, node: {type: queue}}"
    )
    xml = 'xml; { link: { x-bindings: [{exchange:xml, key:weather, arguments:{xquery:"./weather"} }] } }'
    assert canonical[xml] == (
        "xml; {link: {x-bindings: [{exchange: xml, key: weather, "
        'arguments: {xquery: "./weather"}}]}}'
    )


# --------------------------------------------------------------------------------------------
# The grammar's corners.

GRAMMAR_CASES: list[tuple[str, str, str | None, dict[str, Any]]] = [
    # quoted names, escapes in names, whitespace dropped between name tokens (as in Qpid)
    ("'my queue'", "my queue", None, {}),
    ('"my queue"', "my queue", None, {}),
    ("my\\ queue", "my queue", None, {}),
    ("my queue", "myqueue", None, {}),
    ("  q  ", "q", None, {}),
    ("\tq\r\n;\n{\ta\t:\t1\t}\n", "q", None, {"a": 1}),
    ("a'b c'd", "ab cd", None, {}),
    ("a\\/b/c\\;d", "a/b", "c;d", {}),
    ("\\x41\\u00e9\\n\\q", "Aénq", None, {}),
    ('""', "", None, {}),
    ("''/''", "", "", {}),
    # name parts: braces, colons, commas, numbers as written, symbols
    ("a{b}:c,d", "a{b}:c,d", None, {}),
    ("+1.50", "+1.50", None, {}),
    ("007/.5", "007", ".5", {}),
    ("#.*%@$^!+-", "#.*%@$^!+-", None, {}),
    # subjects: slashes, empty subject after the slash is no subject (as in Qpid)
    ("ex/a/b/c", "ex", "a/b/c", {}),
    ("ex//", "ex", "/", {}),
    ("ex/", "ex", None, {}),
    ("ex/;{}", "ex", None, {}),
    ("ex / a.b ; {}", "ex", "a.b", {}),
    ("ex/{x}", "ex", "{x}", {}),
    # numbers keep their type
    ("q;{a: 1, b: -2, c: +3, d: 007}", "q", None, {"a": 1, "b": -2, "c": 3, "d": 7}),
    ("q;{a: 1.5, b: -.5, c: +0.25, d: .0}", "q", None, {"a": 1.5, "b": -0.5, "c": 0.25, "d": 0.0}),
    (
        "q;{big: 123456789012345678901234567890}",
        "q",
        None,
        {"big": 123456789012345678901234567890},
    ),
    # IDs: strings, except the constants; quoted strings are always strings
    (
        "q;{a: True, b: true, c: False, d: false, e: None, f: 'True', g: TRUE, h: none}",
        "q",
        None,
        {
            "a": True,
            "b": True,
            "c": False,
            "d": False,
            "e": None,
            "f": "True",
            "g": "TRUE",
            "h": "none",
        },
    ),
    ("q;{a: x-y_z, b: _1, c: a-1}", "q", None, {"a": "x-y_z", "b": "_1", "c": "a-1"}),
    # strings: both quotes, escapes as Python reads them, unknown escapes kept
    (
        r"""q;{a: 'it', b: "say \"hi\"", c: 'it\'s', d: "it's", e: 'say "hi"'}""",
        "q",
        None,
        {"a": "it", "b": 'say "hi"', "c": "it's", "d": "it's", "e": 'say "hi"'},
    ),
    (
        r"q;{a: '\x41\u00e9\\', b: '\t\n\r', c: '\d\/'}",
        "q",
        None,
        {"a": "Aé\\", "b": "\t\n\r", "c": "\\d\\/"},
    ),
    ("q;{a: 'π ; {}/[]'}", "q", None, {"a": "π ; {}/[]"}),
    # keys: IDs or quoted strings, never converted
    ("q;{True: 1, 'a.b': 2, \"c d\": 3}", "q", None, {True: 1, "a.b": 2, "c d": 3}),
    ("q;{'True': 1, None: 2, 1: 3, 1.5: 4}", "q", None, {"True": 1, None: 2, 1: 3, 1.5: 4}),
    # maps and lists nest, may be empty
    ("q;{}", "q", None, {}),
    (
        "q;{a: [], b: {}, c: [[1], {x: [2, {y: 'z'}]}]}",
        "q",
        None,
        {"a": [], "b": {}, "c": [[1], {"x": [2, {"y": "z"}]}]},
    ),
]


@pytest.mark.parametrize(("text", "name", "subject", "options"), GRAMMAR_CASES)
def test_grammar(text: str, name: str, subject: str | None, options: dict[str, Any]) -> None:
    address = parse(text, validate=False)
    assert (address.name, address.subject) == (name, subject)
    assert address.options == options
    assert parse(str(address), validate=False) == address


def test_values_keep_their_types() -> None:
    options = parse("q;{i: 1, f: 1.0, b: True, s: '1', n: None, m: {}, l: []}", validate=False)
    kinds = {key: type(value) for key, value in options.options.items()}
    assert kinds == {
        "i": int,
        "f": float,
        "b": bool,
        "s": str,
        "n": type(None),
        "m": OptionMap,
        "l": tuple,
    }


# --------------------------------------------------------------------------------------------
# The canonical form.

CANONICAL_CASES: list[tuple[Address, str]] = [
    (Address("q"), "q"),
    (Address("q", None, {}), "q"),
    (Address("my queue"), '"my queue"'),
    (Address(""), '""'),
    (Address("ex", ""), 'ex/""'),
    (Address("ex", "a/b c"), 'ex/"a/b c"'),
    (Address("a/b", "c"), '"a/b"/c'),
    (Address("café"), '"café"'),
    (Address("a[0]"), '"a[0]"'),
    (Address("q", options={"a": "amq.topic"}), 'q; {a: "amq.topic"}'),
    (Address("q", options={"a": "10"}), 'q; {a: "10"}'),
    (Address("q", options={"a": "True", "b": "none"}), 'q; {a: "True", b: none}'),
    (Address("q", options={"a": ""}), 'q; {a: ""}'),
    (Address("q", options={"a": 'x"\\\n\x00\u2028'}), 'q; {a: "x\\"\\\\\\n\\x00\\u2028"}'),
    (Address("q", options={"a": True, "b": False, "c": None}), "q; {a: True, b: False, c: None}"),
    (
        Address("q", options={"a": 1e16, "b": 1e-7, "c": -0.0, "d": 2.0}),
        "q; {a: 10000000000000000.0, b: 0.0000001, c: -0.0, d: 2.0}",
    ),
    (Address("q", options={"a.b": 1, "True": 2, "c d": 3}), 'q; {"a.b": 1, "True": 2, "c d": 3}'),
    (Address("q", options={True: 1, None: 2, 3: 4, 0.5: 5}), "q; {True: 1, None: 2, 3: 4, 0.5: 5}"),
    (Address("q", options={"l": [1, [2, {}], ()]}), "q; {l: [1, [2, {}], []]}"),
]


@pytest.mark.parametrize(("address", "text"), CANONICAL_CASES)
def test_canonical_text(address: Address, text: str) -> None:
    assert str(address) == text
    assert parse(text, validate=False) == address


# --------------------------------------------------------------------------------------------
# Bad input: exact column (1-based) and expectation.

E_NAME = "a name"
E_AFTER_NAME = "'/', ';' or end of input"
E_AFTER_SUBJECT = "';' or end of input"
E_OPTIONS = "'{'"
E_KEY_OR_END = "a key (identifier, number or quoted string) or '}'"
E_OCTAL = "octal digits 0-7 after a leading 0 (Qpid reads 010 as 8)"
E_COLON = "':'"
E_VALUE = "a value (number, string, identifier, map or list)"
E_VALUE_OR_END = "a value (number, string, identifier, map or list) or ']'"
E_MAP_NEXT = "',' or '}'"
E_LIST_NEXT = "',' or ']'"
E_END = "end of input"
E_ESCAPE = "an escape: \\xHH, \\uHHHH, or \\ and any other character"

DEEP = "q;" + "{a:" * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)

INVALID: list[tuple[str, int, str, str]] = [
    # text, column, expected, found
    ("", 1, E_NAME, "end of input"),
    ("   ", 4, E_NAME, "end of input"),
    (";{create: always}", 1, E_NAME, "';'"),
    ("/subject", 1, E_NAME, "'/'"),
    ("[queue]", 1, E_NAME, "'['"),
    ("queue[0]", 6, E_AFTER_NAME, "'['"),
    ("café", 4, E_AFTER_NAME, "character 'é'"),
    ("a&b", 2, E_AFTER_NAME, "character '&'"),
    ("a/b]c", 4, E_AFTER_SUBJECT, "']'"),
    ("a/b c=d", 6, E_AFTER_SUBJECT, "character '='"),
    ("queue;", 7, E_OPTIONS, "end of input"),
    ("queue; create: always", 8, E_OPTIONS, "identifier create"),
    ("q;[1]", 3, E_OPTIONS, "'['"),
    ("q;{", 4, E_KEY_OR_END, "end of input"),
    ("q;{create}", 10, E_COLON, "'}'"),
    ("q;{create always}", 11, E_COLON, "identifier always"),
    ("q;{create:}", 11, E_VALUE, "'}'"),
    ("q;{create: always", 18, E_MAP_NEXT, "end of input"),
    ("q;{a: 1 b: 2}", 9, E_MAP_NEXT, "identifier b"),
    ("q;{[a]: 1}", 4, E_KEY_OR_END, "'['"),
    ("q;{a: [1, 2}", 12, E_LIST_NEXT, "'}'"),
    ("q;{a: [1,,]}", 10, E_VALUE_OR_END, "','"),
    ("q;{a: 1,,}", 9, E_KEY_OR_END, "','"),
    ("q;{,}", 4, E_KEY_OR_END, "','"),
    ("q;{{a: 1}: 2}", 4, E_KEY_OR_END, "'{'"),
    ("q;{a: 08}", 7, E_OCTAL, "number 08"),
    ("q;{a: [,]}", 8, E_VALUE_OR_END, "','"),
    ("q;{a: [1 2]}", 10, E_LIST_NEXT, "number 2"),
    ("q;{a: 1}}", 9, E_END, "'}'"),
    ("q;{a: 1} /x", 10, E_END, "'/'"),
    ("q;{a: 1}; {b: 2}", 9, E_END, "';'"),
    ("q;{a: 1e5}", 8, E_MAP_NEXT, "identifier e5"),
    ("q;{a: 1.}", 8, E_MAP_NEXT, "'.'"),
    ("q;{a: 1.5.5}", 10, E_MAP_NEXT, "number .5"),
    ("q;{a: amq.topic}", 10, E_MAP_NEXT, "'.'"),
    ("q;{a: b c}", 9, E_MAP_NEXT, "identifier c"),
    ("q;{a: -}", 7, E_VALUE, "'-'"),
    ("q;{a: \\x41}", 7, E_VALUE, "escape \\x41"),
    ("q;{a: \x0b}", 7, E_VALUE, "character '\\x0b'"),
    ("q;{a: 1, a: 2}", 10, "a key not already in this map", "duplicate key a"),
    ("q;{a: 1, 'a': 2}", 10, "a key not already in this map", "duplicate key 'a'"),
    ("'unterminated", 1, "a closing '", "end of input"),
    ('q;{a: "abc}', 7, 'a closing "', "end of input"),
    ("q;{'a: 1}", 4, "a closing '", "end of input"),
    ('q;{a: "\\x4"}', 8, "two hex digits after \\x", "'\\x4'"),
    ('q;{a: "ok\\u12g4"}', 10, "four hex digits after \\u", "'\\u12g4'"),
    ("my\\u12", 3, E_ESCAPE, "'\\u12'"),
    ("my\\xZZ", 3, E_ESCAPE, "'\\x'"),
    ("queue\\", 6, E_ESCAPE, "end of input"),
    ("q;\n{a:\n 1e5}", 10, E_MAP_NEXT, "identifier e5"),
    (
        DEEP,
        2 + 3 * MAX_DEPTH + 1,
        f"at most {MAX_DEPTH} nested maps and lists",
        "a map at depth 101",
    ),
    (
        "q;{a: " + "1" * 5000 + "}",
        7,
        "an integer of at most 4300 digits",
        "number " + "1" * 21 + "...",
    ),
    (
        "q;{a: " + "9" * 400 + ".0}",
        7,
        "a number within the range of a float",
        "number " + "9" * 21 + "...",
    ),
]


@pytest.mark.parametrize(("text", "column", "expected", "found"), INVALID)
def test_invalid(text: str, column: int, expected: str, found: str) -> None:
    with pytest.raises(AddressError) as info:
        parse(text, validate=False)
    error = info.value
    assert type(error) is AddressError
    assert (error.column, error.expected, error.found) == (column, expected, found)
    assert error.text == text
    assert error.offset == column - 1
    assert f"column {column}" in str(error)


def test_error_message_has_a_caret_under_the_column() -> None:
    with pytest.raises(AddressError) as info:
        parse("q; {x: 1e5}")
    assert str(info.value) == (
        "column 9: expected ',' or '}', found identifier e5\n  q; {x: 1e5}\n          ^"
    )
    assert info.value.reason == "expected ',' or '}', found identifier e5"


def test_error_message_at_end_of_input() -> None:
    with pytest.raises(AddressError) as info:
        parse("q; {create: always")
    assert str(info.value).splitlines() == [
        "column 19: expected ',' or '}', found end of input",
        "  q; {create: always",
        "                    ^",
    ]


def test_error_message_on_a_multi_line_text_shows_the_line() -> None:
    with pytest.raises(AddressError) as info:
        parse("q;\n{a:\n\t1e5}")
    assert str(info.value).splitlines() == [
        "column 10 (line 3, column 3): expected ',' or '}', found identifier e5",
        "   1e5}",
        "    ^",
    ]


def test_errors_are_value_errors_and_amqp_errors() -> None:
    assert issubclass(AddressError, ValueError)
    assert issubclass(AddressError, AMQPError)
    assert issubclass(AddressOptionError, AddressError)
    with pytest.raises(TypeError):
        parse(b"q")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# The option tables.

VALID_OPTIONS = [
    *(
        f"q; {{{key}: {policy}}}"
        for key in ("create", "delete", "assert")
        for policy in ("always", "never", "sender", "receiver")
    ),
    "q; {mode: browse}",
    "q; {mode: consume}",
    "q; {node: {}}",
    "q; {node: {type: queue, durable: True}}",
    "q; {node: {type: topic, durable: false}}",
    "q; {node: {x-declare: {auto-delete: True, exclusive: 1, type: fanout, alternate-exchange: 'ae',"
    " arguments: {'qpid.max_count': 100, 'x-any': [1, {deep: None}]}}}}",
    "q; {node: {x-declare: {}, x-bindings: []}}",
    "q; {node: {x-bindings: [{}, {exchange: e, queue: q, key: k, arguments: {x: 1}}]}}",
    "q; {link: {}}",
    "q; {link: {name: l, durable: True}}",
    "q; {link: {name: 'l.1', durable: False}}",
    *(
        f"q; {{link: {{reliability: {r}}}}}"
        for r in ("unreliable", "at-most-once", "at-least-once", "exactly-once")
    ),
    "q; {link: {x-declare: {exclusive: False, arguments: {'qpid.policy_type': ring}}}}",
    "q; {link: {x-subscribe: {exclusive: True, arguments: {x: [1]}}}}",
    "q; {link: {x-bindings: [{exchange: 'amq.match', key: k, arguments: {x-match: any, a: 1}}]}}",
    "q; {create: always, delete: never, assert: sender, mode: browse, node: {type: queue},"
    " link: {name: n}}",
]


@pytest.mark.parametrize("text", VALID_OPTIONS)
def test_valid_options(text: str) -> None:
    address = parse(text)
    assert validate(address) is address
    assert parse(str(address)) == address


A_POLICY = "always, never, sender or receiver"
UNKNOWN_OPTION = "an address option (create, delete, assert, mode, node or link)"
UNKNOWN_NODE = "a node property (type, durable, x-declare or x-bindings)"
UNKNOWN_LINK = "a link property (name, durable, reliability, x-declare, x-subscribe or x-bindings)"
UNKNOWN_BINDING = "a binding field (exchange, queue, key or arguments)"
RELIABILITY = "unreliable, at-most-once, at-least-once or exactly-once"

INVALID_OPTIONS: list[tuple[str, str, int, str, str]] = [
    # text, path, column, expected, found
    ("q; {colour: red}", "colour", 5, UNKNOWN_OPTION, "unknown key 'colour'"),
    ("q; {'x.y': 1}", '["x.y"]', 5, UNKNOWN_OPTION, "unknown key 'x.y'"),
    ("q; {create: yes}", "create", 13, A_POLICY, "'yes'"),
    ("q; {delete: True}", "delete", 13, A_POLICY, "True"),
    ("q; {assert: 'always '}", "assert", 13, A_POLICY, "'always '"),
    ("q; {assert: Always}", "assert", 13, A_POLICY, "'Always'"),
    ("q; {create: [always]}", "create", 13, A_POLICY, "a list"),
    ("q; {mode: consumed}", "mode", 11, "browse or consume", "'consumed'"),
    ("q; {mode: 1}", "mode", 11, "browse or consume", "1"),
    ("q; {node: queue}", "node", 11, "a map of node properties", "'queue'"),
    ("q; {node: {type: exchange}}", "node.type", 18, "queue or topic", "'exchange'"),
    ("q; {node: {durable: 1}}", "node.durable", 21, "True or False", "1"),
    ("q; {node: {durable: 'True'}}", "node.durable", 21, "True or False", "'True'"),
    (
        "q; {node: {auto-delete: True}}",
        "node.auto-delete",
        12,
        UNKNOWN_NODE,
        "unknown key 'auto-delete'",
    ),
    ("q; {node: {x-declare: [1]}}", "node.x-declare", 23, "a map", "a list"),
    (
        "q; {node: {x-bindings: {exchange: e}}}",
        "node.x-bindings",
        24,
        "a list of bindings",
        "a map",
    ),
    ("q; {node: {x-bindings: [e]}}", "node.x-bindings[0]", 25, "a map of binding fields", "'e'"),
    (
        "q; {node: {x-bindings: [{exchange: 1}]}}",
        "node.x-bindings[0].exchange",
        36,
        "a string",
        "1",
    ),
    (
        "q; {node: {x-bindings: [{}, {routing-key: k}]}}",
        "node.x-bindings[1].routing-key",
        30,
        UNKNOWN_BINDING,
        "unknown key 'routing-key'",
    ),
    (
        "q; {node: {x-bindings: [{queue: [q]}]}}",
        "node.x-bindings[0].queue",
        33,
        "a string",
        "a list",
    ),
    ("q; {node: {x-bindings: [{key: None}]}}", "node.x-bindings[0].key", 31, "a string", "None"),
    (
        "q; {node: {x-bindings: [{arguments: [1]}]}}",
        "node.x-bindings[0].arguments",
        37,
        "a map",
        "a list",
    ),
    ("q; {link: 1.5}", "link", 11, "a map of link properties", "1.5"),
    ("q; {link: {name: 5}}", "link.name", 18, "a string", "5"),
    ("q; {link: {durable: None}}", "link.durable", 21, "True or False", "None"),
    (
        "q; {link: {reliability: at_least_once}}",
        "link.reliability",
        25,
        RELIABILITY,
        "'at_least_once'",
    ),
    ("q; {link: {x-declare: 1.5}}", "link.x-declare", 23, "a map", "1.5"),
    ("q; {link: {x-subscribe: exclusive}}", "link.x-subscribe", 25, "a map", "'exclusive'"),
    (
        "q; {link: {x-bindings: [{exchange: e, key: [k]}]}}",
        "link.x-bindings[0].key",
        44,
        "a string",
        "a list",
    ),
    ("q; {link: {mode: browse}}", "link.mode", 12, UNKNOWN_LINK, "unknown key 'mode'"),
    ("q; {link: {type: queue}}", "link.type", 12, UNKNOWN_LINK, "unknown key 'type'"),
    # the first broken option in text order is reported
    ("q; {create: always, mode: x, colour: red}", "mode", 27, "browse or consume", "'x'"),
]


@pytest.mark.parametrize(("text", "path", "column", "expected", "found"), INVALID_OPTIONS)
def test_invalid_options(text: str, path: str, column: int, expected: str, found: str) -> None:
    with pytest.raises(AddressOptionError) as info:
        parse(text)
    error = info.value
    assert (error.path, error.column, error.expected, error.found) == (
        path,
        column,
        expected,
        found,
    )
    assert error.text == text
    assert error.reason == f"option {path}: expected {expected}, found {found}"
    # Without validation the same text parses, and validate() finds the same problem in the
    # canonical text.
    address = parse(text, validate=False)
    with pytest.raises(AddressOptionError) as again:
        validate(address)
    canonical = again.value
    assert canonical.text == str(address)
    assert (canonical.path, canonical.expected, canonical.found) == (path, expected, found)
    # The column points at the same key (unknown keys) or value in the canonical text.
    assert canonical.text[canonical.column - 1].replace('"', "'") == text[column - 1].replace(
        '"', "'"
    )


def test_validate_an_address_built_in_code() -> None:
    address = Address("q", options={"node": {"type": "exchange"}})
    with pytest.raises(AddressOptionError) as info:
        validate(address)
    assert str(info.value) == (
        "column 18: option node.type: expected queue or topic, found 'exchange'\n"
        "  q; {node: {type: exchange}}\n"
        "                   ^"
    )
    good = Address("q", options={"create": "always", "link": {"x-bindings": [{"key": "k"}]}})
    assert validate(good) is good


def test_option_error_message_points_into_the_parsed_text() -> None:
    with pytest.raises(AddressOptionError) as info:
        parse("xml; {link: {x-bindings: [{exchange: xml, key: weather, args: {}}]}}")
    assert str(info.value).splitlines() == [
        "column 57: option link.x-bindings[0].args: expected a binding field "
        "(exchange, queue, key or arguments), found unknown key 'args'",
        "  xml; {link: {x-bindings: [{exchange: xml, key: weather, args: {}}]}}",
        "                                                          ^",
    ]


# --------------------------------------------------------------------------------------------
# The Address object.


def test_address_options_are_frozen_and_hashable() -> None:
    options = {"node": {"x-bindings": [{"key": "k"}]}, "create": "always"}
    address = Address("q", "s", options)
    options["create"] = "never"  # the address holds a copy
    assert address.options["create"] == "always"
    node = address.options["node"]
    assert isinstance(node, OptionMap)
    assert node["x-bindings"] == ({"key": "k"},)
    assert isinstance(node["x-bindings"], tuple)
    assert hash(address) == hash(Address("q", "s", {"create": "always", "node": node}))
    assert {address: 1}[parse(str(address))] == 1
    with pytest.raises(TypeError):
        address.options["create"] = "never"  # type: ignore[index]
    with pytest.raises(AttributeError):
        address.name = "other"  # type: ignore[misc]
    assert address.options.to_dict() == {
        "node": {"x-bindings": [{"key": "k"}]},
        "create": "always",
    }
    assert type(address.options.to_dict()["node"]["x-bindings"]) is list  # type: ignore[index]


def test_address_equality_is_type_exact_and_ignores_key_order() -> None:
    assert Address("q", options={"a": 1, "b": 2}) == Address("q", options={"b": 2, "a": 1})
    assert Address("q", options={"a": True}) != Address("q", options={"a": 1})
    assert Address("q", options={"a": 1}) != Address("q", options={"a": 1.0})
    assert Address("q", options={"a": [0]}) != Address("q", options={"a": [False]})
    assert Address("q", options={"a": {"b": "1"}}) != Address("q", options={"a": {"b": 1}})
    assert Address("q", options={"a": None}) != Address("q", options={"a": "None"})
    assert Address("q", options={"a": []}) != Address("q", options={"a": {}})
    assert Address("q", None) != Address("q", "")
    assert parse("q") == parse("q; {}") == Address("q")
    assert parse("q;{a: [1]}", validate=False).options != {"a": [True]}


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"a": b"bytes"}, TypeError),
        ({"a": {1, 2}}, TypeError),
        ({(1, 2): "a"}, TypeError),
        ({"a": {b"k": "a"}}, TypeError),
        ({"a": float("nan")}, ValueError),
        ({"a": [float("inf")]}, ValueError),
        ("not a mapping", TypeError),
    ],
)
def test_address_refuses_values_without_syntax(options: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        Address("q", options=options)


def test_address_refuses_deep_nesting_and_bad_names() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(MAX_DEPTH):
        inner["a"] = {}
        inner = inner["a"]
    with pytest.raises(ValueError):
        Address("q", options=deep)
    with pytest.raises(TypeError):
        Address(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Address("q", 1)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Hypothesis: structure → canonical text → structure.

SPECIAL_CHARS = [
    *"abcdef012_-.#*%@$^!+{}:,/;[]\"'\\ \t\n\r\x00\x0b\x7f",
    *("é", "π", "\u2028", "\ud800", "\udfff", "\U0001f600", "\U000e0001"),
]
CHARS = st.one_of(st.sampled_from(SPECIAL_CHARS), st.characters())
TEXT = st.text(CHARS, max_size=10)
WORDS = st.sampled_from(
    [
        "q",
        "a-b",
        "x_1",
        "True",
        "true",
        "False",
        "None",
        "none",
        "1",
        "-1.5",
        ".5",
        "+2",
        "",
        "amq.topic",
        "a-",
        "-a",
        "1e5",
        "my queue",
        "é",
    ]
)
# Qpid reads keys as values: numbers, True and None are keys too.
KEYS = st.one_of(
    TEXT,
    WORDS,
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
    WORDS,
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)
    ),
    max_leaves=12,
)
OPTIONS = st.dictionaries(KEYS, VALUES, max_size=5)
NAMES = st.one_of(TEXT, WORDS)
SUBJECTS = st.one_of(st.none(), TEXT, WORDS)
ADDRESSES = st.builds(Address, NAMES, SUBJECTS, OPTIONS)

# These run fast: more examples than the suite's default profile (never fewer than a profile's).
MORE = settings(max_examples=max(250, settings.default.max_examples))


@MORE
@given(ADDRESSES)
@example(Address("", "", {"": ""}))
@example(Address("q", options={"f": 5e-324, "g": 1.7976931348623157e308, "h": -0.0}))
def test_round_trip_through_the_canonical_text(address: Address) -> None:
    text = str(address)
    parsed = parse(text, validate=False)
    assert parsed == address
    assert str(parsed) == text  # the canonical form is a fixed point


# --------------------------------------------------------------------------------------------
# Hypothesis: structure → text written another way (random quotes, escapes, whitespace,
# bare words, number spellings) → the same structure.

ID_CHARS = set(string.ascii_letters + string.digits + "_-")
NAME_PART_CHARS = set(string.ascii_letters + string.digits + "_-.#*%@$^!+{}:,")
CONSTANT_WORDS = {"True", "true", "False", "false", "None"}
SPACE = st.sampled_from(["", "", "", " ", "  ", "\t", "\n", " \r\n "])
SIMPLE_ESCAPES = {"\n": "n", "\r": "r", "\t": "t", "\a": "a", "\b": "b", "\f": "f", "\v": "v"}


def is_id(text: str) -> bool:
    return (
        bool(text)
        and (text[0].isascii() and (text[0].isalpha() or text[0] == "_"))
        and set(text) <= ID_CHARS
        and text[-1] != "-"
    )


def write_quoted(draw: st.DrawFn, text: str) -> str:
    quote = draw(st.sampled_from(["'", '"']))
    out = [quote]
    for char in text:
        if char in (quote, "\\"):
            out.append("\\" + char)
            continue
        forms = [char]
        if ord(char) < 0x100:
            forms.append(f"\\x{ord(char):02X}")
        if ord(char) < 0x10000:
            forms.append(f"\\u{ord(char):04x}")
        if char in SIMPLE_ESCAPES:
            forms.append("\\" + SIMPLE_ESCAPES[char])
        if char in "'\"":
            forms.append("\\" + char)
        out.append(draw(st.sampled_from(forms)))
    out.append(quote)
    return "".join(out)


def write_words(draw: st.DrawFn, text: str, bare_chars: set[str]) -> str:
    """A name or subject as a run of bare parts, quoted strings and escapes."""
    if not text:
        return write_quoted(draw, "")
    pieces = []
    i = 0
    while i < len(text):
        size = draw(st.integers(1, len(text) - i))
        chunk, i = text[i : i + size], i + size
        style = draw(st.sampled_from(["bare", "quoted", "escaped"]))
        if style == "bare" and set(chunk) <= bare_chars:
            pieces.append(chunk)
        elif style == "escaped":
            for char in chunk:
                forms = [f"\\u{ord(char):04x}"] if ord(char) < 0x10000 else []
                if char not in "ux":
                    forms.append("\\" + char)
                if ord(char) < 0x100:
                    forms.append(f"\\x{ord(char):02x}")
                pieces.append(draw(st.sampled_from(forms)) if forms else write_quoted(draw, char))
        else:
            pieces.append(write_quoted(draw, chunk))
        pieces.append(draw(SPACE))
    return "".join(pieces)


def write_number(draw: st.DrawFn, value: int | float) -> str:
    if isinstance(value, int):
        # Qpid reads a leading 0 as octal: 8 may be spelt 010 or 0010 as well as 8.
        if value and draw(st.booleans()):
            text = "0" * draw(st.integers(1, 2)) + format(abs(value), "o")
        else:
            text = str(abs(value))
    else:
        text = format(Decimal(abs(value)), "f")  # the exact binary value, all its digits
        if "." not in text:
            text += ".0"
        if text.startswith("0.") and draw(st.booleans()):
            text = text[1:]
    negative = value < 0 or (isinstance(value, float) and math.copysign(1, value) < 0)
    sign = "-" if negative else draw(st.sampled_from(["", "+"]))
    return sign + text


def write_value(draw: st.DrawFn, value: Any) -> str:
    space = draw(SPACE)
    if value is None:
        return space + "None"
    if isinstance(value, bool):
        return space + draw(st.sampled_from(["True", "true"] if value else ["False", "false"]))
    if isinstance(value, int | float):
        return space + write_number(draw, value)
    if isinstance(value, str):
        if is_id(value) and value not in CONSTANT_WORDS and draw(st.booleans()):
            return space + value
        return space + write_quoted(draw, value)
    if isinstance(value, list):
        items = ",".join(write_value(draw, item) + draw(SPACE) for item in value)
        return f"{space}[{items}{draw(SPACE)}]"
    entries = []
    for key, item in value.items():
        if not isinstance(key, str):
            key_text = write_value(draw, key).strip()
        elif is_id(key) and key not in CONSTANT_WORDS and draw(st.booleans()):
            key_text = key
        else:
            key_text = write_quoted(draw, key)
        entries.append(f"{draw(SPACE)}{key_text}{draw(SPACE)}:{write_value(draw, item)}")
    return f"{space}{{{','.join(entries)}{draw(SPACE)}}}"


@MORE
@given(NAMES, SUBJECTS, OPTIONS, st.data())
def test_round_trip_through_other_spellings(
    name: str, subject: str | None, options: dict[str, Any], data: st.DataObject
) -> None:
    draw = data.draw
    text = draw(SPACE) + write_words(draw, name, NAME_PART_CHARS)
    if subject is not None:
        text += draw(SPACE) + "/" + draw(SPACE)
        text += write_words(draw, subject, NAME_PART_CHARS | {"/"}) if subject else "''"
    if options or draw(st.booleans()):
        text += draw(SPACE) + ";" + write_value(draw, options)
    text += draw(SPACE)
    assert parse(text, validate=False) == Address(name, subject, options)


# --------------------------------------------------------------------------------------------
# Hypothesis: any text either parses (and round-trips) or raises AddressError in range.

TOKEN_SOUP = st.lists(
    st.sampled_from(
        [
            "q",
            "a-b",
            "{",
            "}",
            "[",
            "]",
            ":",
            ";",
            "/",
            ",",
            "1",
            "-1.5",
            ".5",
            "+",
            "True",
            "None",
            "'s'",
            '"d"',
            "'",
            '"',
            "\\x41",
            "\\u00e9",
            "\\/",
            "\\",
            "\\x4",
            ".",
            "#",
            "*",
            " ",
            "\t",
            "\n",
            "&",
            "é",
            "1e5",
            "create",
            "always",
            "node",
            "type",
            "queue",
            "link",
            "x-bindings",
            "x-declare",
            "exchange",
            "mode",
            "browse",
        ]
    ),
    max_size=30,
).map("".join)


def check_any_text(text: str) -> None:
    try:
        address = parse(text)
    except AddressError as error:
        assert error.text == text
        assert 1 <= error.column <= len(text) + 1
        assert str(error).endswith("^")
    else:
        assert parse(str(address)) == address


@MORE
@given(TOKEN_SOUP)
@example("q;{node:{type:queue},link:{x-bindings:[{exchange:'e'}]},mode:browse}")
def test_token_soup_parses_or_raises_address_error(text: str) -> None:
    check_any_text(text)


@MORE
@given(st.text(CHARS, max_size=40))
def test_any_text_parses_or_raises_address_error(text: str) -> None:
    check_any_text(text)
