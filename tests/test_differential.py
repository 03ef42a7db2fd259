"""Differential tests: amqp_codec against pika 1.4 and pamqp 4.

For every method in each peer's own registry (``pika.spec.methods``,
``pamqp.commands.INDEX_MAPPING``), matched to ours by (class id, method id), with
Hypothesis-generated field values built from our classes' ``FIELDS`` metadata:

(a) what the peer encodes -- the whole frame through the peer's frame marshalling, and the
    method payload on its own -- decodes with our FrameDecoder (fed in random chunks) and
    decode_method to the same values, and re-encodes to exactly the peer's bytes;
(b) what we encode (``encode_frame(MethodFrame(...))``, ``encode_message``) decodes in the
    peer to the same values.

The same is done for content headers (BasicProperties, all 14 properties), whole messages
(method, header and body frames), field tables on their own, the protocol header and
heartbeats. The peer adapters live in ``tests/peers/``.

Values are compared in a canonical, type-tagged form (:func:`canon`), so True != 1,
1.0 != 1, b"a" != "a" and -0.0 != 0.0. A peer's values are first mapped to our representation
by small named normalisers in the adapters (``pika_peer.shortstr``, ``pamqp_peer.longstr``,
``pamqp_peer.byte_array``, ``datetime_to_timestamp``, ...), each commenting the documented
peer behaviour it accounts for. Nothing decoded or encoded by amqp_codec is normalised.

Known peer differences
----------------------
Where a peer is lossy or wrong on the wire, or refuses a value, the values generated *for that
peer* are restricted as listed; the checks on our side are never weakened.

pika 1.4
  * Decodes float ('f') and double ('d') table values to ``int`` (``long(unpack(...))``): the
    fraction is lost. No floats are sent to pika.
  * Cannot encode a float at all (UnsupportedAMQPFieldException) and cannot choose a tag:
    tables it encodes hold only t I l D S x T F A V (``int`` -> I, or l if it does not fit;
    ``pika.compat.long`` -> l). Everything else (b B U u s i L) is tested in direction (b).
  * Decodes 'T' with ``datetime.fromtimestamp``: values past year 9999 raise. Table
    timestamps sent to pika stay <= 253402300799; the timestamp *property* is a plain int
    in pika and is tested over the full unsigned 64-bit range.
  * Drops the content header's weight (and keeps the class id only as the properties class).
  * Cannot decode connection.update-secret through ``pika.frame.decode_frame``: the class's
    ``__init__`` has required parameters and decode_frame calls it with none (TypeError).
    Its ``decode()`` then stores new-secret as ``mechanisms``. The adapter splits that frame
    itself, decodes with pika's ``decode()`` and reads ``mechanisms``
    (``pika_peer.needs_arguments``, ``pika_peer.update_secret_values``).
pamqp 4.0
  * Writes field-table entries sorted by key at every level: we expect the sorted order.
  * Truncates field-table keys longer than 128 bytes: generated keys stay below that.
  * Encodes every Python float as a 32-bit 'f': only float32-exact values are sent from it.
  * Encodes 'x' only from ``bytearray``; cannot write 'd' 'B' 'U' 'L'; picks the smallest
    integer tag for the value (b s u I i l).
  * Rejects tag 'U' when decoding ("Unknown type"): never sent to pamqp.
  * Reads 'T' values above 0xFFFFFFFF as milliseconds (a heuristic), for table values and
    the timestamp property: timestamps sent to pamqp stay <= 0xFFFFFFFF.
  * Treats ``longlong`` as signed 64-bit: delivery tags >= 2**63 cannot be encoded and decode
    negative. delivery_tag stays < 2**63 with pamqp.
  * Short strings are ``str`` only and decoded strictly as UTF-8 (UnicodeDecodeError
    otherwise): only valid UTF-8 short strings go either way. Long strings are sent from
    ``str`` only, so what pamqp encodes is valid UTF-8.
  * ``validate()`` in constructors and ``marshal()``: exchange/queue/source/destination must
    match ``^[a-zA-Z0-9-_.:@#,/+ ]*$`` (and <= 127 chars, queue <= 256), virtual_host <= 127
    chars, and reserved fields must hold pamqp's fixed values (ticket 0, capabilities '',
    insist False, known_hosts '', out_of_band '0', channel_id '0', cluster_id ''). Those
    reserved values are what pamqp puts on the wire; we check we decode and keep them.
  * Basic.Properties drops every property equal to '' when marshalling, refuses a non-empty
    cluster_id and a delivery_mode other than 1/2 in its constructor, and reports an absent
    cluster_id as ''. Properties pamqp encodes are non-empty strings, delivery_mode 1 or 2
    and no cluster_id; a cluster_id sent to pamqp is non-empty.
  * Has no access class: 64 methods against pika's (and our) 66.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import string
import struct
from collections.abc import Callable, Mapping
from decimal import Decimal
from functools import cache
from types import ModuleType
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import amqp_codec as ac
from amqp_codec import v0_9_1
from amqp_codec.base import FieldSpec
from amqp_codec.table import (
    FieldArray,
    FieldTable,
    Tagged,
    Timestamp,
    decode_table,
    encode_table,
    tag_for,
)

try:  # tests/ is not a package, so pytest puts it on sys.path
    from peers import pamqp_peer, pika_peer
except ImportError:  # pragma: no cover - in case tests/ becomes a package
    from tests.peers import pamqp_peer, pika_peer

PEERS: dict[str, ModuleType] = {"pika": pika_peer, "pamqp": pamqp_peer}
OUR_METHODS = v0_9_1.METHODS
PROPERTY_FIELDS = v0_9_1.BasicProperties.FIELDS

# Example counts below are sized for the default profile (the whole file in well under a
# minute); a profile asking for more examples (HYPOTHESIS_PROFILE=thorough) scales them up.
SCALE = max(1, settings().max_examples // 60)


def examples(count: int) -> int:
    return count * SCALE


SETTINGS = settings(
    max_examples=examples(30),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

U64_MAX = 2**64 - 1
I64 = (-(2**63), 2**63 - 1)
MAX_DATETIME_SECONDS = 253402300799  # 9999-12-31T23:59:59Z, the end of datetime's range
PAMQP_MAX_TIMESTAMP = 0xFFFFFFFF  # above this pamqp reads a timestamp as milliseconds
INT_RANGES = {"octet": (0, 2**8 - 1), "short": (0, 2**16 - 1), "long": (0, 2**32 - 1)}


# ------------------------------------------------------------------------------------------
# Canonical comparison form
# ------------------------------------------------------------------------------------------


def canon(value: Any) -> tuple[Any, ...]:
    """A type-tagged, order-keeping form of a value, for exact comparison across libraries."""
    if value is None:
        return ("none",)
    if type(value) is bool:
        return ("bool", value)
    if isinstance(value, Timestamp):
        return ("timestamp", int(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", int(value))
    if isinstance(value, float):
        return ("float", struct.pack(">d", value))  # bit-exact: keeps -0.0 and inf apart
    if isinstance(value, Decimal):
        return ("decimal", value)  # numeric equality: 1.50 == 1.5 (same AMQP value)
    if isinstance(value, str):
        return ("str", value)
    if type(value) is bytes:
        return ("bytes", value)
    if isinstance(value, FieldTable):
        return ("table", tuple((k, canon(v)) for k, _tag, v in value.entries()))
    if isinstance(value, Mapping):
        return ("table", tuple((k, canon(v)) for k, v in value.items()))
    if isinstance(value, (FieldArray, list, tuple)):
        return ("array", tuple(canon(v) for v in value))
    raise TypeError(f"no canonical form for {type(value).__name__} {value!r} (not normalised?)")


def fields_of(method: ac.Method) -> list[tuple[str, tuple[Any, ...]]]:
    """Our decoded method's fields (reserved ones included), canonical."""
    return [(spec.attr, canon(getattr(method, spec.attr))) for spec in type(method).FIELDS]


def properties_of(properties: ac.Properties) -> list[tuple[str, tuple[Any, ...]]]:
    return [(spec.attr, canon(getattr(properties, spec.attr))) for spec in PROPERTY_FIELDS]


def peer_fields(peer: ModuleType, our_cls: type, method: Any) -> list[tuple[str, Any]]:
    """A peer's decoded method's fields, normalised to our representation, canonical."""
    values = peer.method_values(method)
    return [
        (spec.attr, canon(peer.field(spec.wire_type, value)))
        for spec, value in zip(our_cls.FIELDS, values, strict=True)
    ]


def peer_properties(peer: ModuleType, properties: Any) -> list[tuple[str, Any]]:
    values = peer.properties_values(properties)
    return [
        (spec.attr, canon(peer.property_value(spec.wire_type, spec.attr, value)))
        for spec, value in zip(PROPERTY_FIELDS, values, strict=True)
    ]


# ------------------------------------------------------------------------------------------
# Strategies: shared pieces
# ------------------------------------------------------------------------------------------

Pair = tuple[Any, tuple[Any, ...]]  # (value handed to an encoder, canonical expected value)


class _PeerDefault:
    """Marker: leave this field to the peer's constructor default (pamqp's fixed reserved
    values); the expected value is then read back from the peer object."""

    def __repr__(self) -> str:
        return "PEER_DEFAULT"


PEER_DEFAULT = _PeerDefault()


def pairs(strategy: st.SearchStrategy[Any], expect: Callable[[Any], Any] = canon) -> Any:
    return strategy.map(lambda value: (value, expect(value)))


def optional(strategy: st.SearchStrategy[Pair]) -> st.SearchStrategy[Pair]:
    """A content property: absent (None) or a value."""
    return st.one_of(st.just((None, canon(None))), strategy)


def _surrogateescape(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def ints(low: int, high: int) -> st.SearchStrategy[int]:
    """Integers in [low, high], with the range's edges and its middle (the sign bit of an
    unsigned range, zero of a signed one) drawn often."""
    middle = (low + high + 1) // 2
    edges = sorted(
        x for x in {low, low + 1, middle - 1, middle, high - 1, high} if low <= x <= high
    )
    return st.one_of(st.integers(low, high), st.sampled_from(edges))


SHORT_TEXT = st.one_of(
    st.text(max_size=63),  # at most 4 UTF-8 bytes a character: always within 255 bytes
    st.text(alphabet=string.ascii_letters + string.digits, min_size=250, max_size=255),
)
# Any 0..255 bytes, in our representation of a short string (str, surrogateescape).
SHORT_ANY = st.binary(max_size=255).map(_surrogateescape)
LONG_BYTES = st.binary(max_size=300)
KEYS = st.text(max_size=20)  # <= 80 UTF-8 bytes: below pamqp's 128-byte key truncation
DECIMALS = st.builds(
    lambda mantissa, scale: Decimal(mantissa).scaleb(-scale),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(0, 255),
)
CHANNELS = ints(1, 65535)
CUTS = st.lists(st.integers(0, 2**16), max_size=4)  # where the input stream is split


def utc_datetime(seconds: int, naive: bool = False) -> dt.datetime:
    value = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    return value.replace(tzinfo=None) if naive else value


def datetimes(max_seconds: int) -> st.SearchStrategy[dt.datetime]:
    """Whole-second datetimes from 1970 on (naive ones mean UTC to both peers and to us)."""
    return st.builds(utc_datetime, st.integers(0, max_seconds), st.booleans())


def channel_for(cls: type[ac.Method]) -> st.SearchStrategy[int]:
    return st.just(0) if cls.CLASS_ID == 10 else CHANNELS


# -- direction (a): plain Python tables in the form each peer encodes ---------------------


def plain_tables(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    values = st.recursive(
        leaves,
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)
        ),
        max_leaves=8,
    )
    return st.dictionaries(KEYS, values, max_size=5)


PIKA_TABLE_LEAVES = st.one_of(
    st.booleans(),
    ints(*I64),  # pika: I when it fits 32 bits, else l
    ints(-(2**31), 2**31 - 1).map(pika_peer.LONG),  # forced l
    st.text(max_size=30),
    st.binary(max_size=30),
    DECIMALS,
    datetimes(MAX_DATETIME_SECONDS),
    st.none(),
)
PAMQP_TABLE_LEAVES = st.one_of(
    st.booleans(),
    ints(*I64),  # pamqp: the smallest of b s u I i l that fits
    ints(-(2**15), 2**16 - 1),  # ... so also small ones: b, s and u
    ints(2**31, 2**32 - 1),  # ... and i
    st.text(max_size=30),
    st.binary(max_size=30).map(bytearray),
    DECIMALS,
    st.floats(width=32, allow_nan=False),
    datetimes(MAX_DATETIME_SECONDS),
    st.none(),
)


# -- direction (b): tagged value trees we encode ------------------------------------------


class Node(NamedTuple):
    ours: Any  # what we hand our encoder (plain, or Tagged to force a tag)
    expected: tuple[Any, ...]  # canonical value a faithful peer decodes


_TAG_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "t": st.booleans(),
    "b": ints(-(2**7), 2**7 - 1),
    "B": ints(0, 2**8 - 1),
    "U": ints(-(2**15), 2**15 - 1),
    "s": ints(-(2**15), 2**15 - 1),
    "u": ints(0, 2**16 - 1),
    "I": ints(-(2**31), 2**31 - 1),
    "i": ints(0, 2**32 - 1),
    "l": ints(*I64),
    "L": ints(*I64),
    "f": st.floats(width=32, allow_nan=False),
    "d": st.floats(allow_nan=False),
    "D": DECIMALS,
    "S": st.one_of(st.text(max_size=30), st.binary(max_size=30)),
    "x": st.binary(max_size=30),
    "V": st.none(),
}


def _leaf_node(tag: str, value: Any) -> Node:
    expected = value
    if tag == "S" and isinstance(value, bytes):
        # A long string that is UTF-8 reads back as str, else as bytes (ours and peers').
        with contextlib.suppress(UnicodeDecodeError):
            expected = value.decode("utf-8")
    ours = value if tag_for(value) == tag else Tagged(tag, value)
    return Node(ours, canon(expected))


def _timestamp_node(seconds: int, form: str) -> Node:
    """We encode a Timestamp, an aware or a naive (UTC) whole-second datetime as 'T'."""
    if form == "timestamp":
        ours: Any = Timestamp(seconds)
    else:
        ours = utc_datetime(seconds, naive=form == "naive")
    return Node(ours, canon(Timestamp(seconds)))


def leaf_nodes(tag: str, max_timestamp: int) -> st.SearchStrategy[Node]:
    if tag == "T":
        forms = st.sampled_from(["timestamp", "aware", "naive"])
        return st.builds(_timestamp_node, ints(0, max_timestamp), forms)
    return _TAG_VALUES[tag].map(lambda value: _leaf_node(tag, value))


def array_node(items: list[Node], as_tuple: bool = False) -> Node:
    ours = [n.ours for n in items]
    return Node(tuple(ours) if as_tuple else ours, ("array", tuple(n.expected for n in items)))


def table_node(entries: dict[str, Node]) -> Node:
    return Node(
        {k: n.ours for k, n in entries.items()},
        ("table", tuple((k, n.expected) for k, n in entries.items())),
    )


def tagged_tables(tags: str, max_timestamp: int) -> st.SearchStrategy[Node]:
    leaves = st.sampled_from(tags).flatmap(lambda tag: leaf_nodes(tag, max_timestamp))
    values = st.recursive(
        leaves,
        lambda children: st.one_of(
            st.builds(array_node, st.lists(children, max_size=4), st.booleans()),
            st.dictionaries(KEYS, children, max_size=4).map(table_node),
        ),
        max_leaves=8,
    )
    return st.dictionaries(KEYS, values, max_size=5).map(table_node)


def _timestamp_pair(seconds: int, as_int: bool) -> Pair:
    return (seconds if as_int else Timestamp(seconds)), canon(Timestamp(seconds))


# ------------------------------------------------------------------------------------------
# Per-peer value domains
# ------------------------------------------------------------------------------------------


class Profile:
    """What values to generate for one peer, per direction.

    ``a_*`` strategies give (peer input, expected) pairs for the peer to encode; ``b_*`` give
    (our input, expected) pairs for us to encode and the peer to decode.
    """

    peer: ModuleType
    b_table_tags: str
    b_table_max_timestamp: int
    b_max_longlong = U64_MAX
    b_max_property_timestamp = U64_MAX
    b_shortstr: st.SearchStrategy[str]

    # -- direction (a) ---------------------------------------------------------------------

    def a_table(self) -> st.SearchStrategy[Pair]:
        raise NotImplementedError

    def a_field(self, spec: FieldSpec) -> st.SearchStrategy[Pair]:
        raise NotImplementedError

    def a_property(self, spec: FieldSpec) -> st.SearchStrategy[Pair]:
        return optional(self.a_field(spec))

    # -- direction (b) ---------------------------------------------------------------------

    def b_table(self) -> st.SearchStrategy[Node]:
        return tagged_tables(self.b_table_tags, self.b_table_max_timestamp)

    def b_field(self, spec: FieldSpec) -> st.SearchStrategy[Pair]:
        wire = spec.wire_type
        if spec.reserved:  # not a constructor parameter: we send its default
            return st.just((PEER_DEFAULT, canon(spec.default)))
        if wire == "bit":
            return pairs(st.booleans())
        if wire in INT_RANGES:
            return pairs(ints(*INT_RANGES[wire]))
        if wire == "longlong":
            return pairs(ints(0, self.b_max_longlong))
        if wire == "shortstr":
            return pairs(self.b_shortstr)
        if wire == "longstr":
            return pairs(LONG_BYTES)
        if wire == "table":
            return self.b_table().map(lambda n: (FieldTable(n.ours), n.expected))
        if wire == "timestamp":
            seconds = ints(0, self.b_max_property_timestamp)
            return st.builds(_timestamp_pair, seconds, st.booleans())
        raise AssertionError(f"unknown wire type {wire}")

    def b_property(self, spec: FieldSpec) -> st.SearchStrategy[Pair]:
        if spec.wire_type == "table":  # headers: a plain dict this time (FieldTable above)
            return optional(self.b_table().map(lambda n: (n.ours, n.expected)))
        return optional(self.b_field(spec))


class PikaProfile(Profile):
    peer = pika_peer
    b_table_tags = "tbBUusIiLlDSxTV"  # no f/d: pika decodes them to int
    b_table_max_timestamp = MAX_DATETIME_SECONDS
    b_shortstr = st.one_of(SHORT_ANY, SHORT_TEXT)

    def a_table(self) -> st.SearchStrategy[Pair]:
        return pairs(plain_tables(PIKA_TABLE_LEAVES), lambda t: canon(pika_peer.table_value(t)))

    def a_field(self, spec: FieldSpec) -> st.SearchStrategy[Pair]:
        wire = spec.wire_type  # pika sets reserved fields like any other
        if wire == "bit":
            return pairs(st.booleans())
        if wire in INT_RANGES:
            return pairs(ints(*INT_RANGES[wire]))
        if wire == "longlong":
            return pairs(ints(0, U64_MAX))
        if wire == "shortstr":  # pika sends str as UTF-8 and bytes as they are
            return st.one_of(
                pairs(st.binary(max_size=255), lambda raw: canon(_surrogateescape(raw))),
                pairs(SHORT_TEXT),
            )
        if wire == "longstr":
            return st.one_of(
                pairs(LONG_BYTES), pairs(st.text(max_size=60), lambda s: canon(s.encode()))
            )
        if wire == "table":
            return self.a_table()
        if wire == "timestamp":  # the property: a plain int in pika
            return pairs(ints(0, U64_MAX), lambda n: canon(Timestamp(n)))
        raise AssertionError(f"unknown wire type {wire}")


_PAMQP_NAME = st.text(alphabet=pamqp_peer.NAME_CHARS, max_size=pamqp_peer.MAX_VALIDATED_NAME)
_PAMQP_VALIDATED_SHORTSTRS = {
    "exchange": _PAMQP_NAME,
    "destination": _PAMQP_NAME,
    "source": _PAMQP_NAME,
    "queue": _PAMQP_NAME,
    "virtual_host": st.text(max_size=pamqp_peer.MAX_VALIDATED_NAME // 2),
}


class PamqpProfile(Profile):
    peer = pamqp_peer
    b_table_tags = "tbBsuIiLlfdDSxTV"  # no U: pamqp rejects it
    b_table_max_timestamp = PAMQP_MAX_TIMESTAMP
    b_max_longlong = I64[1]
    b_max_property_timestamp = PAMQP_MAX_TIMESTAMP
    b_shortstr = SHORT_TEXT

    def a_table(self) -> st.SearchStrategy[Pair]:
        return pairs(
            plain_tables(PAMQP_TABLE_LEAVES),
            lambda t: canon(pamqp_peer.table_value(pamqp_peer.sorted_like_pamqp(t))),
        )

    def a_field(self, spec: FieldSpec) -> st.SearchStrategy[Pair]:
        wire = spec.wire_type
        if spec.reserved:  # validate() pins them to pamqp's own values
            return st.just((PEER_DEFAULT, ("unused",)))
        if wire == "bit":
            return pairs(st.booleans())
        if wire in INT_RANGES:
            return pairs(ints(*INT_RANGES[wire]))
        if wire == "longlong":
            return pairs(ints(0, I64[1]))
        if wire == "shortstr":
            return pairs(_PAMQP_VALIDATED_SHORTSTRS.get(spec.attr, SHORT_TEXT))
        if wire == "longstr":  # pamqp sends str only, as UTF-8
            return pairs(st.text(max_size=60), lambda s: canon(s.encode()))
        if wire == "table":
            return self.a_table()
        raise AssertionError(f"unknown wire type {wire}")

    def a_property(self, spec: FieldSpec) -> st.SearchStrategy[Pair]:
        if spec.attr == "cluster_id":  # only '' gets past validate(); marshal drops it
            return st.just(("", canon(None)))
        if spec.attr == "delivery_mode":
            return optional(pairs(st.sampled_from([1, 2])))
        if spec.wire_type == "shortstr":  # '' would be dropped by marshal
            return optional(pairs(st.text(min_size=1, max_size=63)))
        if spec.wire_type == "timestamp":
            return optional(
                pairs(datetimes(MAX_DATETIME_SECONDS), lambda d: canon(pamqp_peer.timestamp(d)))
            )
        return optional(self.a_field(spec))

    def b_property(self, spec: FieldSpec) -> st.SearchStrategy[Pair]:
        if spec.attr == "cluster_id":  # pamqp reports an absent cluster_id as ''
            return optional(pairs(st.text(min_size=1, max_size=63)))
        return super().b_property(spec)


PROFILES: dict[str, Profile] = {"pika": PikaProfile(), "pamqp": PamqpProfile()}


@cache
def method_values_a(peer_name: str, key: tuple[int, int]) -> st.SearchStrategy[tuple[Pair, ...]]:
    profile = PROFILES[peer_name]
    return st.tuples(*(profile.a_field(spec) for spec in OUR_METHODS[key].FIELDS))


@cache
def method_values_b(peer_name: str, key: tuple[int, int]) -> st.SearchStrategy[tuple[Pair, ...]]:
    profile = PROFILES[peer_name]
    return st.tuples(*(profile.b_field(spec) for spec in OUR_METHODS[key].FIELDS))


@cache
def property_values_a(peer_name: str) -> st.SearchStrategy[tuple[Pair, ...]]:
    profile = PROFILES[peer_name]
    return st.tuples(*(profile.a_property(spec) for spec in PROPERTY_FIELDS))


@cache
def property_values_b(peer_name: str) -> st.SearchStrategy[tuple[Pair, ...]]:
    profile = PROFILES[peer_name]
    return st.tuples(*(profile.b_property(spec) for spec in PROPERTY_FIELDS))


# ------------------------------------------------------------------------------------------
# Building and decoding
# ------------------------------------------------------------------------------------------


def build_peer_method(
    peer: ModuleType, our_cls: type[ac.Method], peer_cls: type, drawn: tuple[Pair, ...]
) -> tuple[Any, list[tuple[str, Any]]]:
    """The peer's method object for ``drawn`` values, and our expected decoded fields."""
    method = peer.build_method(
        peer_cls, {i: value for i, (value, _) in enumerate(drawn) if value is not PEER_DEFAULT}
    )
    actual = peer.method_values(method)
    expected = []
    for spec, (value, exp), peer_value in zip(our_cls.FIELDS, drawn, actual, strict=True):
        if value is PEER_DEFAULT:
            exp = canon(peer.field(spec.wire_type, peer_value))
        expected.append((spec.attr, exp))
    return method, expected


def build_peer_properties(peer: ModuleType, drawn: tuple[Pair, ...]) -> Any:
    return peer.build_properties(
        {i: value for i, (value, _) in enumerate(drawn) if value is not None}
    )


def build_our_method(our_cls: type[ac.Method], drawn: tuple[Pair, ...]) -> ac.Method:
    return our_cls(
        **{
            spec.attr: value
            for spec, (value, _) in zip(our_cls.FIELDS, drawn, strict=True)
            if not spec.reserved
        }
    )


def expected_of(fields: tuple[FieldSpec, ...], drawn: tuple[Pair, ...]) -> list[tuple[str, Any]]:
    return [(spec.attr, exp) for spec, (_, exp) in zip(fields, drawn, strict=True)]


def decode_stream(wire: bytes, cuts: list[int], **options: Any) -> list[ac.Frame]:
    """All frames our decoder finds in ``wire``, fed in pieces split at ``cuts``."""
    decoder = ac.FrameDecoder(v0_9_1, **options)
    frames: list[ac.Frame] = []
    start = 0
    for point in sorted({c % (len(wire) + 1) for c in cuts} | {len(wire)}):
        if point > start:
            decoder.receive_data(wire[start:point])
            start = point
        frames.extend(decoder)
    decoder.receive_data(b"")  # end of stream: nothing may be left over
    assert decoder.next_frame() is ac.NEED_DATA
    assert decoder.offset == len(wire)
    return frames


def _method_params(content_only: bool = False) -> list[Any]:
    params = []
    for name, peer in PEERS.items():
        for key in sorted(peer.method_registry()):
            ours = OUR_METHODS.get(key)
            if content_only and not (ours and ours.HAS_CONTENT):
                continue
            label = ours.NAME if ours else f"{key[0]}.{key[1]}"
            params.append(pytest.param(name, key, id=f"{name}-{label}"))
    return params


METHOD_PARAMS = _method_params()
CONTENT_PARAMS = _method_params(content_only=True)


def _classes(peer_name: str, key: tuple[int, int]) -> tuple[ModuleType, type[ac.Method], type]:
    peer = PEERS[peer_name]
    our_cls = OUR_METHODS.get(key)
    assert our_cls is not None, f"{peer_name} has method {key}, amqp_codec does not"
    return peer, our_cls, peer.method_registry()[key]


# ------------------------------------------------------------------------------------------
# Registries and metadata
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("peer_name", PEERS)
def test_peer_registry_maps_onto_ours(peer_name: str) -> None:
    peer = PEERS[peer_name]
    registry = peer.method_registry()
    assert set(registry) <= set(OUR_METHODS), set(registry) - set(OUR_METHODS)
    for key, peer_cls in registry.items():
        our_cls = OUR_METHODS[key]
        assert len(peer.attrs(peer_cls)) == len(our_cls.FIELDS), our_cls.NAME
        if peer is pamqp_peer:  # pamqp carries wire types: they must agree with ours
            assert peer.wire_types(peer_cls) == tuple(f.wire_type for f in our_cls.FIELDS)
    assert len(peer.PROPERTY_ATTRS) == len(PROPERTY_FIELDS) == 14
    if peer is pamqp_peer:
        types = pamqp_peer.wire_types(pamqp_peer.Properties)
        assert types == tuple(f.wire_type for f in PROPERTY_FIELDS)


def test_peers_cover_every_method() -> None:
    covered = set().union(*(peer.method_registry() for peer in PEERS.values()))
    assert covered == set(OUR_METHODS)
    assert len(pika_peer.method_registry()) == 66
    assert len(pamqp_peer.method_registry()) == 64  # no access class


# ------------------------------------------------------------------------------------------
# Methods
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("peer_name", "key"), METHOD_PARAMS)
@SETTINGS
@given(data=st.data())
def test_method_encoded_by_peer_decodes(
    peer_name: str, key: tuple[int, int], data: st.DataObject
) -> None:
    peer, our_cls, peer_cls = _classes(peer_name, key)
    channel = data.draw(channel_for(our_cls), label="channel")
    drawn = data.draw(method_values_a(peer_name, key), label="fields")
    cuts = data.draw(CUTS, label="cuts")
    method, expected = build_peer_method(peer, our_cls, peer_cls, drawn)
    wire = peer.encode_method_frame(channel, method)
    payload = peer.encode_method_payload(method)
    assert wire[7:-1] == payload  # the peer's own frame carries its own payload

    frames = decode_stream(wire, cuts)
    assert len(frames) == 1
    (frame,) = frames
    assert type(frame) is ac.MethodFrame
    assert frame.channel == channel
    assert type(frame.method) is our_cls
    assert fields_of(frame.method) == expected
    assert ac.encode_frame(frame) == wire

    alone = ac.decode_method(payload, v0_9_1)
    assert type(alone) is our_cls
    assert fields_of(alone) == expected
    assert alone.encode() == payload


@pytest.mark.parametrize(("peer_name", "key"), METHOD_PARAMS)
@SETTINGS
@given(data=st.data())
def test_method_encoded_by_us_decodes_in_peer(
    peer_name: str, key: tuple[int, int], data: st.DataObject
) -> None:
    peer, our_cls, peer_cls = _classes(peer_name, key)
    channel = data.draw(channel_for(our_cls), label="channel")
    drawn = data.draw(method_values_b(peer_name, key), label="fields")
    method = build_our_method(our_cls, drawn)
    expected = expected_of(our_cls.FIELDS, drawn)
    wire = ac.encode_frame(ac.MethodFrame(channel, method))
    payload = method.encode()
    assert wire == struct.pack(">BHI", 1, channel, len(payload)) + payload + b"\xce"

    frames = peer.decode_frames(wire)
    assert [(f.kind, f.channel, f.size) for f in frames] == [("method", channel, len(wire))]
    assert type(frames[0].value) is peer_cls
    assert peer_fields(peer, our_cls, frames[0].value) == expected

    alone = peer.decode_method_payload(payload)
    assert type(alone) is peer_cls
    assert peer_fields(peer, our_cls, alone) == expected
    # The same bytes through our own decoder: the two decoders agree.
    assert fields_of(ac.decode_method(payload, v0_9_1)) == expected


# ------------------------------------------------------------------------------------------
# Content headers (BasicProperties)
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("peer_name", PEERS)
@settings(SETTINGS, max_examples=examples(80))
@given(data=st.data())
def test_content_header_encoded_by_peer_decodes(peer_name: str, data: st.DataObject) -> None:
    peer = PEERS[peer_name]
    channel = data.draw(CHANNELS, label="channel")
    body_size = data.draw(ints(0, U64_MAX), label="body_size")
    drawn = data.draw(property_values_a(peer_name), label="properties")
    cuts = data.draw(CUTS, label="cuts")
    wire = peer.encode_header_frame(channel, body_size, build_peer_properties(peer, drawn))

    frames = decode_stream(wire, cuts, max_body_size=U64_MAX)
    assert len(frames) == 1
    (frame,) = frames
    assert type(frame) is ac.ContentHeaderFrame
    assert (frame.channel, frame.class_id, frame.weight, frame.body_size) == (
        channel,
        60,
        0,
        body_size,
    )
    assert type(frame.properties) is v0_9_1.BasicProperties
    assert properties_of(frame.properties) == expected_of(PROPERTY_FIELDS, drawn)
    assert ac.encode_frame(frame) == wire


@pytest.mark.parametrize("peer_name", PEERS)
@settings(SETTINGS, max_examples=examples(80))
@given(data=st.data())
def test_content_header_encoded_by_us_decodes_in_peer(peer_name: str, data: st.DataObject) -> None:
    peer = PEERS[peer_name]
    channel = data.draw(CHANNELS, label="channel")
    body_size = data.draw(ints(0, U64_MAX), label="body_size")
    drawn = data.draw(property_values_b(peer_name), label="properties")
    properties = v0_9_1.BasicProperties(
        **{spec.attr: value for spec, (value, _) in zip(PROPERTY_FIELDS, drawn, strict=True)}
    )
    wire = ac.encode_frame(ac.ContentHeaderFrame(channel, 60, body_size, properties))

    frames = peer.decode_frames(wire)
    assert [(f.kind, f.channel, f.size) for f in frames] == [("header", channel, len(wire))]
    header = frames[0].value
    assert (header.class_id, header.body_size) == (60, body_size)
    assert header.weight in (0, None)  # None: pika does not keep it
    assert peer_properties(peer, header.properties) == expected_of(PROPERTY_FIELDS, drawn)
    (ours,) = decode_stream(wire, [], max_body_size=U64_MAX)  # and our decoder agrees
    assert properties_of(ours.properties) == expected_of(PROPERTY_FIELDS, drawn)  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------
# Whole messages: method + content header + body frames
# ------------------------------------------------------------------------------------------

BODIES = st.binary(max_size=2000)


@pytest.mark.parametrize(("peer_name", "key"), CONTENT_PARAMS)
@settings(SETTINGS, max_examples=examples(25))
@given(data=st.data())
def test_message_encoded_by_peer_assembles(
    peer_name: str, key: tuple[int, int], data: st.DataObject
) -> None:
    peer, our_cls, peer_cls = _classes(peer_name, key)
    channel = data.draw(CHANNELS, label="channel")
    method, expected_method = build_peer_method(
        peer, our_cls, peer_cls, data.draw(method_values_a(peer_name, key), label="fields")
    )
    drawn_properties = data.draw(property_values_a(peer_name), label="properties")
    body = data.draw(BODIES, label="body")
    chunk = data.draw(st.integers(1, len(body) + 1), label="body frame size")
    cuts = data.draw(CUTS, label="cuts")
    pieces = [len(body[i : i + chunk]) for i in range(0, len(body), chunk)]
    wire = b"".join(
        [
            peer.encode_method_frame(channel, method),
            peer.encode_header_frame(
                channel, len(body), build_peer_properties(peer, drawn_properties)
            ),
            *(
                peer.encode_body_frame(channel, body[i : i + chunk])
                for i in range(0, len(body), chunk)
            ),
        ]
    )

    frames = decode_stream(wire, cuts)
    kinds = [ac.MethodFrame, ac.ContentHeaderFrame] + [ac.ContentBodyFrame] * len(pieces)
    assert [type(f) for f in frames] == kinds
    assert [len(f.payload) for f in frames[2:]] == pieces  # type: ignore[union-attr]
    assert b"".join(ac.encode_frame(f) for f in frames) == wire

    assembler = ac.MessageAssembler()
    messages = [m for f in frames if (m := assembler.feed(f)) is not None]
    assert len(messages) == 1
    (message,) = messages
    assert message.channel == channel
    assert type(message.method) is our_cls
    assert fields_of(message.method) == expected_method
    assert properties_of(message.properties) == expected_of(PROPERTY_FIELDS, drawn_properties)
    assert message.body == body


@pytest.mark.parametrize(("peer_name", "key"), CONTENT_PARAMS)
@settings(SETTINGS, max_examples=examples(25))
@given(data=st.data())
def test_message_encoded_by_us_decodes_in_peer(
    peer_name: str, key: tuple[int, int], data: st.DataObject
) -> None:
    peer, our_cls, peer_cls = _classes(peer_name, key)
    channel = data.draw(CHANNELS, label="channel")
    drawn_method = data.draw(method_values_b(peer_name, key), label="fields")
    drawn_properties = data.draw(property_values_b(peer_name), label="properties")
    body = data.draw(BODIES, label="body")
    frame_max = data.draw(st.one_of(st.just(0), st.integers(9, 2100)), label="frame_max")
    properties = v0_9_1.BasicProperties(
        **{spec.attr: v for spec, (v, _) in zip(PROPERTY_FIELDS, drawn_properties, strict=True)}
    )
    wire = ac.encode_message(
        channel, build_our_method(our_cls, drawn_method), properties, body, frame_max
    )

    frames = peer.decode_frames(wire)
    assert sum(f.size for f in frames) == len(wire)
    assert all(f.channel == channel for f in frames)
    chunk = frame_max - 8 if frame_max else max(len(body), 1)
    pieces = [len(body[i : i + chunk]) for i in range(0, len(body), chunk)]
    assert [f.kind for f in frames] == ["method", "header"] + ["body"] * len(pieces)
    assert type(frames[0].value) is peer_cls
    assert peer_fields(peer, our_cls, frames[0].value) == expected_of(our_cls.FIELDS, drawn_method)
    header = frames[1].value
    assert (header.class_id, header.body_size) == (60, len(body))
    assert peer_properties(peer, header.properties) == expected_of(
        PROPERTY_FIELDS, drawn_properties
    )
    assert [len(f.value) for f in frames[2:]] == pieces
    assert b"".join(f.value for f in frames[2:]) == body


# ------------------------------------------------------------------------------------------
# Field tables on their own
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("peer_name", PEERS)
@settings(SETTINGS, max_examples=examples(100))
@given(data=st.data())
def test_field_table_encoded_by_peer_decodes(peer_name: str, data: st.DataObject) -> None:
    peer = PEERS[peer_name]
    table, expected = data.draw(PROFILES[peer_name].a_table(), label="table")
    before = data.draw(st.binary(max_size=8), label="bytes before")
    after = data.draw(st.binary(max_size=8), label="bytes after")
    raw = peer.encode_table(table)
    buf = before + raw + after

    decoded, end = decode_table(buf, len(before), len(before) + len(raw))
    assert end == len(before) + len(raw)
    assert canon(decoded) == expected
    assert encode_table(decoded) == raw


@pytest.mark.parametrize("peer_name", PEERS)
@settings(SETTINGS, max_examples=examples(100))
@given(data=st.data())
def test_field_table_encoded_by_us_decodes_in_peer(peer_name: str, data: st.DataObject) -> None:
    peer = PEERS[peer_name]
    node = data.draw(PROFILES[peer_name].b_table(), label="table")
    raw = encode_table(node.ours)
    assert encode_table(FieldTable(node.ours)) == raw

    decoded, end = peer.decode_table(raw)
    assert end == len(raw)
    assert canon(peer.table_value(decoded)) == node.expected
    # The same bytes through our own decoder (covers tags no peer writes: B U L d ...).
    assert canon(decode_table(raw, 0, len(raw))[0]) == node.expected


# ------------------------------------------------------------------------------------------
# Protocol header and heartbeat
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("peer_name", PEERS)
def test_protocol_header_and_heartbeat_from_peer(peer_name: str) -> None:
    peer = PEERS[peer_name]
    wire = peer.encode_protocol_header() + peer.encode_heartbeat()
    decoder = ac.FrameDecoder()
    decoder.receive_data(wire)
    assert list(decoder) == [ac.ProtocolHeader(0, 0, 9, 1), ac.HeartbeatFrame(0)]
    assert decoder.detected_by == "protocol header"
    assert decoder.spec is v0_9_1.SPEC
    assert decoder.offset == len(wire)


@pytest.mark.parametrize("peer_name", PEERS)
def test_protocol_header_and_heartbeat_to_peer(peer_name: str) -> None:
    peer = PEERS[peer_name]
    header = ac.encode_frame(ac.ProtocolHeader())
    heartbeat = ac.encode_frame(ac.HeartbeatFrame())
    assert header == peer.encode_protocol_header()
    assert heartbeat == peer.encode_heartbeat()
    frames = peer.decode_frames(header + heartbeat)
    assert [(f.kind, f.channel, f.size) for f in frames] == [
        ("protocol-header", 0, 8),
        ("heartbeat", 0, 8),
    ]
    version = frames[0].value
    if peer is pika_peer:
        assert (version.major, version.minor, version.revision) == (0, 9, 1)
    else:
        assert (version.major_version, version.minor_version, version.revision) == (0, 9, 1)
