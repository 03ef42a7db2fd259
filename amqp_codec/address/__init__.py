"""Qpid Messaging address strings: parse, validate, write.

An address names a message source or target: a node name, an optional subject after ``/``
and an optional options map after ``;``::

    >>> from amqp_codec.address import parse
    >>> address = parse("xml; {link: {x-bindings: [{exchange: xml, key: weather}]}}")
    >>> address.name, address.subject, address.options["link"]["x-bindings"][0]["key"]
    ('xml', None, 'weather')
    >>> str(parse("news-service/*.news ; {create: always, node: {durable: true}}"))
    'news-service/*.news; {create: always, node: {durable: True}}'

The authority is the Qpid Messaging API's description of address strings (its token
expressions, grammar and option tables). Where it is silent or ambiguous this module does
what Qpid's python client (``qpid.messaging.address``) does, except where that contradicts
the grammar; each choice is listed below.

API
---
:func:`parse` (``text -> Address``), :func:`validate`, :class:`Address` (frozen:
``name``, ``subject``, ``options``; ``str()`` is the canonical form), :class:`OptionMap`
(the immutable options map), :class:`AddressError` (bad syntax) and its subclass
:class:`AddressOptionError` (bad options, with ``.path``). Both errors carry ``text``,
``column`` (1-based), ``expected`` and ``found``, and print the text with a caret under the
column.

:func:`plan` (``address, role, spec -> Plan``) lists the methods that resolve an address for a
sender or a receiver (:class:`Plan`: ``methods``, ``on_close``, ``queue``, ``exchange``,
``routing_key``); :class:`AddressPlanError` reports what the protocol cannot express and
:class:`UnsupportedSpecError` a protocol version without a planner.

Validation is on by default: ``parse(text)`` checks the options against the option tables
and raises :class:`AddressOptionError` pointing at the bad key or value in ``text``.
``parse(text, validate=False)`` only checks the grammar, for options of other Qpid versions
or private extensions; :func:`validate` checks an :class:`Address` afterwards, or one built in
code (its errors point into ``str(address)``). Validation does not know whether the address
is for a sender or a receiver: ``mode`` is accepted for both (Qpid reads it for receivers
only).

Tokens and names
----------------
* Tokens are the reference's regular expressions, tried in its order; the first that matches
  wins (``+1`` is a NUMBER, ``1e5`` a NUMBER ``1`` then an ID ``e5``). Whitespace
  (space, tab, CR, LF) separates tokens and is otherwise dropped *everywhere*, names
  included: ``xoxox ; {...}`` names ``xoxox``, and ``my queue`` names ``myqueue`` (as in
  Qpid). Quote a name with spaces: ``'my queue'``.
* A name is the texts of its tokens run together: ``{ } : ,``, NUMBERs (as written:
  ``+1.50``), IDs, SYMs (``. # * % @ $ ^ ! + -``), quoted strings and escapes. ``[`` and
  ``]`` are not name parts in the grammar and are refused (Qpid's python client took any
  token). A subject also takes ``/``. Other characters (non-ASCII letters too) must be quoted.
* ``name/`` with nothing after the slash has no subject (``None``), as in Qpid; ``name/""``
  has the empty subject. ``""`` alone is the empty name.
* Escapes outside quotes (the ESC token): ``\\xHH`` and ``\\uHHHH`` are code points, a
  backslash before any other character is that character (``my\\ queue``, ``a\\/b``).
  Inside quotes (single or double): ``\\xHH``, ``\\uHHHH``, ``\\\\``, ``\\'``, ``\\"``
  and ``\\a \\b \\f \\n \\r \\t \\v``, as Python reads them (Qpid's python client
  evaluates the token as a Python literal); any other backslash pair is kept as written
  (``"\\d"`` is backslash, ``d``). ``\\x`` and ``\\u`` need two and four hex digits.
  Surrogate escapes are not combined.

Values
------
* NUMBER: with a ``.`` a ``float``, otherwise an ``int`` (``+7``, ``-.5``, ``007`` is 7).
  The grammar's NUMBER has no exponent, so ``1e5`` is an error, not ``100000.0``.
* STRING (single or double quotes): ``str``. ID: ``str``, except ``True``/``true`` and
  ``False``/``false`` (``bool``) and ``None`` (``None``), as in Qpid's python client. Quote
  them for the strings: ``'True'``.
* Maps and lists nest (at most :data:`MAX_DEPTH` levels). Map keys are IDs or quoted strings,
  never converted (``{True: 1}`` has the key ``"True"``). The grammar says ID; quoted keys are
  allowed because the reference calls keys strings, Qpid accepts them, and keys such as
  ``'qpid.max_count'`` need them. Numbers, maps and lists are not keys.
* Stricter than Qpid's python client, following the grammar: no trailing comma in maps or
  lists; a key appears once per map (Qpid kept the last).
* In an :class:`Address`, maps are :class:`OptionMap` and lists are tuples; no options is the
  empty map, so ``q`` and ``q; {}`` are equal.

Canonical form
--------------
``str(address)`` writes ``name[/subject][; {key: value, ...}]``, quoting any name, subject,
key or string that would not read back as itself (``"my queue"``, ``"amq.topic"`` as a
value, ``"10"``, ``"True"``), floats positionally (``1e+16`` as ``10000000000000000.0``),
booleans as ``True``/``False``. ``parse(str(address)) == address`` for every address.
"""

from __future__ import annotations

from ._errors import AddressError, AddressOptionError
from ._model import Address
from ._parser import parse
from ._plan import AddressPlanError, Plan, UnsupportedSpecError, plan
from ._validation import validate
from ._values import MAX_DEPTH, OptionMap, OptionValue

__all__ = [
    "MAX_DEPTH",
    "Address",
    "AddressError",
    "AddressOptionError",
    "AddressPlanError",
    "OptionMap",
    "OptionValue",
    "Plan",
    "UnsupportedSpecError",
    "parse",
    "plan",
    "validate",
]
