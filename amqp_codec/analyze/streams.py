"""One direction's stream, or a region of it, into table rows; one connection in one pass.

A :class:`DirectionDissector` dissects a direction's bytes (pieces and gaps, in stream order)
with a :class:`~amqp_codec.inspect.dissector.StreamDissector` (gaps become problems and decoding
resumes after them; its :class:`~amqp_codec.MessageAssembler` hands over each message a frame
completes), and builds ``frames``, ``messages`` and ``problems`` rows. Given a
:class:`Region`, it does that for one part of a long stream, as the job's parallel tasks do (see
:mod:`amqp_codec.analyze.plan`): it starts at the first frame it finds, reads past its end
only to finish what it started, and reports in an :class:`Edge` what the driver needs to
check it against its neighbours and to resolve the rows that depend on them.

:func:`analyze_connection` is the whole connection in one pass, in this process: it
reassembles each direction (:func:`amqp_codec.capture.tcp.reassemble`), decides whether the
connection speaks AMQP, dissects both directions whole, and joins what they said into one
``connections`` row. It is the reference the job must equal. 0-8 and 99-0 connections give
the same rows: 99-0 framesets are assembled by the dissector's
:class:`~amqp_codec.wire010.DraftMessageAssembler`, a message.transfer's header structs fill
the message's properties, and method ids (the cause a connection.close names) are looked up
in the connection's own version.

Nothing here knows about Spark: rows are plain tuples in the column order of
:mod:`amqp_codec.analyze.tables`, tagged with their table's name.

Credentials (see :mod:`amqp_codec.credentials`) are replaced by a redaction marker before
anything is written; only the PLAIN/AMQPLAIN user name is kept.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import struct
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..assembly import Message
from ..base import Method, Properties
from ..capture.packets import TH_SYN, CaptureProblem, Segment
from ..capture.tcp import (
    Gap,
    Piece,
    Stream,
    connection_key,
    incarnations,
    reassemble,
    syn_servers,
)
from ..credentials import secret_fields
from ..errors import AMQPDecodeError
from ..frames import (
    FRAME_END,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    MethodFrame,
    ProtocolHeader,
)
from ..inspect.dissector import (
    DEFAULT_SPEC,
    FRAME_TYPE_NAMES,
    PROTOCOL_HEADER_NAME,
    RESYNC_WORK_ALLOWANCE,
    RESYNC_WORK_PER_BYTE,
    FrameEvent,
    Problem,
    ProblemEvent,
    ResyncEvent,
    SpecEvent,
    StreamDissector,
)
from ..inspect.resync import decodes_alone, framing, plausible_frame_end
from ..inspect.values import (
    draft_flag_names,
    json_properties_and_flags,
    json_struct,
    json_value,
    table_entries,
)
from ..protocol import ProtocolSpec, default_spec
from ..table import decode_table
from ..wire010.assembly import DraftMessage
from ..wire010.frames import (
    DraftBodyFrame,
    DraftHeaderFrame,
    DraftMethodFrame,
    start_version,
)
from .rules import (
    HEARTBEAT_MISSED,
    Finding,
    Negotiated,
    PeerRules,
    Pending,
    negotiated_in,
    silence_at_end,
)
from .rules import Edge as RulesEdge
from .tables import PROPERTIES, column_names

__all__ = [
    "REDACTED",
    "ConnectionKey",
    "Row",
    "analyze_connection",
    "capture_problem_row",
    "connection_name",
]

#: What a redacted credential is replaced with in the ``fields`` JSON.
REDACTED = "<redacted>"
_CONTENT_METHODS = frozenset({"basic.publish", "basic.deliver", "basic.get-ok", "basic.return"})
_AMQP = b"AMQP"
_SYN_ONLY = TH_SYN | 0x10  # SYN and ACK bits: a client's SYN has only the first
_PROPERTY_COLUMNS = column_names(PROPERTIES)
#: Methods whose fields JSON is remembered (see :func:`_method_json`): by the
#: process, not by the stream, since a file of short connections repeats the same methods
#: across thousands of streams (their tune, open, declares, publishes to the same place)
#: and a stream of its own repeats few of them: of 423,609 method frames in 20,417 short
#: connections, 5% were found in their stream's cache, 70% in one shared by the process.
_METHOD_JSON: dict[object, str] = {}
_JSON_CACHE_SIZE = 4096
#: Frames larger than this are not remembered, so the cache holds at most a few MiB
#: whatever arrives (a long string per method, say): the methods that repeat are small.
_JSON_CACHE_FRAME = 1024
#: Method classes met holding a field table (not hashable): their JSON is not cached, and
#: trying to hash one again would only fail again.
_UNHASHABLE_METHODS: set[type[Method]] = set()
#: Per method class, the attributes of its reserved fields: they keep what arrived, but the
#: generated equality leaves them out, so a cache keyed by the method alone gave the second
#: of two methods that differ only there the first one's JSON.
_RESERVED_ATTRS: dict[type[Method], tuple[str, ...]] = {}
# A connection.start method frame on channel 0: type 1, channel 0, size, class 10 method 10.
_START_PREFIX = b"\x01\x00\x00"
_START_IDS = b"\x00\x0a\x00\x0a"

#: (client_ip, client_port, server_ip, server_port), as connection_key returns it.
ConnectionKey = tuple[str, int, str, int]
#: A table's name and one of its rows.
Row = tuple[str, tuple[Any, ...]]


def connection_name(key: ConnectionKey) -> str:
    """``10.0.0.1:40000-10.0.0.2:5672``; IPv6 addresses in brackets."""
    client_ip, client_port, server_ip, server_port = key

    def endpoint(ip: str, port: int) -> str:
        return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"

    return f"{endpoint(client_ip, client_port)}-{endpoint(server_ip, server_port)}"


def text(value: str | None) -> str | None:
    """A decoded short string as Spark can store it: undecodable bytes as ``\\xNN``."""
    if value is None or value.isascii():  # ASCII: nothing to escape, known without a scan
        return value
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def capture_problem_row(problem: CaptureProblem) -> Row:
    """A ``problems`` row for a capture file that could not be read (wholly or in part)."""
    return (
        "problems",
        (
            problem.capture,
            None if problem.packet is None else problem.packet + 1,
            None,
            None,
            None,
            None,
            "capture",
            problem.kind,
            None,
            None,
            None,
            None,
            problem.detail,
        ),
    )


# ------------------------------------------------------------------------------------------
# Fields as JSON, credentials redacted
# ------------------------------------------------------------------------------------------


def method_fields(method: Method) -> dict[str, Any]:
    """A method's fields by spec name, JSON-ready, credentials redacted (the fields
    :func:`amqp_codec.credentials.secret_fields` names)."""
    hidden = secret_fields(method)
    return {
        spec.name: REDACTED if spec.name in hidden else json_value(getattr(method, spec.attr))
        for spec in type(method).FIELDS
    }


def frame_fields(frame: Frame) -> dict[str, Any] | None:
    """What the ``fields`` column holds for ``frame`` (before JSON encoding)."""
    if isinstance(frame, (MethodFrame, DraftMethodFrame)):
        return method_fields(frame.method)
    if isinstance(frame, DraftHeaderFrame):
        return {
            "flags": frame.flags,
            "flag_names": draft_flag_names(frame.flags),
            "structs": [json_struct(s) for s in frame.structs],
        }
    if isinstance(frame, ContentHeaderFrame):
        flags, present = json_properties_and_flags(frame.properties)
        return {
            "class_id": frame.class_id,
            "body_size": frame.body_size,
            "weight": frame.weight,
            "property_flags": flags,
            "properties": present,
        }
    if isinstance(frame, ProtocolHeader):
        return {
            "protocol_id": frame.protocol_id,
            "version": [frame.major, frame.minor, frame.revision],
        }
    return None


#: One encoder for every row: ``json.dumps`` with options builds a new one per call.
_dumps = json.JSONEncoder(allow_nan=False, separators=(",", ":"), ensure_ascii=False).encode
#: How ``_dumps`` writes a string (``ensure_ascii=False``), quotes included.
_json_string = json.encoder.encode_basestring

#: Per method class: ``('{"name":', attr)`` for each field in order, where ``attr`` None
#: means the text is written as it is: a credential's name and :data:`REDACTED`, or ``{``
#: for a method without fields.
_JSON_PLANS: dict[type[Method], tuple[tuple[str, str | None], ...]] = {}


def method_json(method: Method) -> str:
    """``_dumps(method_fields(method))``, written directly for the usual fields (ASCII
    strings, integers, bits, absent values, bytes, field tables of such values,
    credentials): a quarter of the time. Anything else goes the general way."""
    kind = type(method)
    plan = _JSON_PLANS.get(kind)
    if plan is None:
        plan = _JSON_PLANS[kind] = _json_plan(kind)
    parts = []
    for prefix, attr in plan:
        if attr is None:
            parts.append(prefix)
            continue
        value = getattr(method, attr)
        of = type(value)
        if of is str and value.isascii():
            parts.append(prefix + _json_string(value))
        elif of is int:
            parts.append(prefix + int.__repr__(value))
        elif of is bool:
            parts.append(prefix + ("true" if value else "false"))
        elif value is None:
            parts.append(prefix + "null")
        elif of is bytes:
            parts.append(f'{prefix}{{"hex":"{value.hex()}"}}')
        elif isinstance(value, Mapping):
            parts.append(prefix + _table_json(value))
        else:
            return _dumps(method_fields(method))
    parts.append("}")
    return "".join(parts)


def _method_json(method: Method, size: int) -> str:
    """:func:`method_json` of ``method``, whose frame is ``size`` bytes, remembered if that
    frame is small: repeated methods (same fields, reserved ones included) are encoded once
    (see :data:`_METHOD_JSON`)."""
    kind = type(method)
    if size > _JSON_CACHE_FRAME or kind in _UNHASHABLE_METHODS:
        return method_json(method)
    reserved = _RESERVED_ATTRS.get(kind)
    if reserved is None:
        reserved = _RESERVED_ATTRS[kind] = tuple(f.attr for f in kind.FIELDS if f.reserved)
    key = (method, *[getattr(method, attr) for attr in reserved]) if reserved else method
    try:
        cached = _METHOD_JSON.get(key)
    except TypeError:  # a field table inside: not hashable, not worth caching
        _UNHASHABLE_METHODS.add(kind)
        return method_json(method)
    if cached is None:
        if len(_METHOD_JSON) >= _JSON_CACHE_SIZE:
            _METHOD_JSON.clear()
        cached = _METHOD_JSON[key] = method_json(method)
    return cached


def _json_plan(kind: type[Method]) -> tuple[tuple[str, str | None], ...]:
    """The plan of :func:`method_json` for ``kind``."""
    if not kind.FIELDS:
        return (("{", None),)
    hidden = secret_fields(kind)
    plan: list[tuple[str, str | None]] = []
    for i, spec in enumerate(kind.FIELDS):
        prefix = ("{" if i == 0 else ",") + _json_string(spec.name) + ":"
        if spec.name in hidden:
            plan.append((prefix + _json_string(REDACTED), None))
        else:
            plan.append((prefix, spec.attr))
    return tuple(plan)


#: Per properties class: ``(flag bit, '"name":', attr, column)`` of each property, in wire
#: order; ``column``: its index in a ``messages`` row's properties, if the table has one.
_HEADER_PLANS: dict[type[Properties], tuple[tuple[int, str, str, int | None], ...]] = {}


def header_json(frame: ContentHeaderFrame) -> tuple[str, tuple[Any, ...]]:
    """``_dumps(frame_fields(frame))`` of a content header, and the properties of its
    message's row (:func:`message_properties`), worked out in the same pass.

    Written directly for the usual properties (ASCII strings, integers) rather than through
    a dict of JSON values, with a field table turned into JSON once for both columns.
    Anything else (a string to escape, a float, bytes) goes the general way.
    """
    props = frame.properties
    kind = type(props)
    plan = _HEADER_PLANS.get(kind)
    if plan is None:
        column_of = {attr: index for attr, index, _table in _property_plan(kind)}
        plan = _HEADER_PLANS[kind] = tuple(
            (bit, _json_string(spec.name) + ":", spec.attr, column_of.get(spec.attr))
            for spec, bit in zip(kind.FIELDS, kind.FLAGS, strict=True)
        )
    word = 0
    parts = []
    row: list[Any] = [None] * len(_PROPERTY_COLUMNS)
    for bit, prefix, attr, column in plan:
        value = getattr(props, attr)
        if value is None:
            continue
        word |= bit
        of = type(value)
        if of is str and value.isascii():
            parts.append(prefix + _json_string(value))
        elif of is bool:
            parts.append(prefix + ("true" if value else "false"))
            value = int(value)
        elif isinstance(value, int):  # Timestamp and enums too, written as plain integers
            parts.append(prefix + int.__repr__(value))
            value = int(value)
        elif isinstance(value, Mapping):
            value = _table_json(value)
            parts.append(prefix + value)
        else:
            return _header_json_generally(frame)
        if column is not None:
            row[column] = value
    numbers = (frame.class_id, frame.body_size, frame.weight)
    if any(type(number) is not int for number in numbers):
        return _header_json_generally(frame)
    return (
        f'{{"class_id":{frame.class_id},"body_size":{frame.body_size},'
        f'"weight":{frame.weight},"property_flags":{word},'
        f'"properties":{{{",".join(parts)}}}}}',
        tuple(row),
    )


def _table_json(table: Mapping[str, Any]) -> str:
    """``_dumps(json_value(table))``, written directly for entries of the usual values (ASCII
    strings, integers, booleans, void, nested tables of the same) under ASCII keys; any
    other value (a float, an array...) is encoded the general way, and a key that is not
    ASCII sends the whole table there."""
    parts = []
    for key, tag, value in table_entries(table):
        if type(key) is not str or not key.isascii() or type(tag) is not str:
            return _dumps(json_value(table))
        of = type(value)
        if of is str and value.isascii():
            text = _json_string(value)
        elif of is int:
            text = int.__repr__(value)
        elif of is bool:
            text = "true" if value else "false"
        elif value is None:
            text = "null"
        elif isinstance(value, Mapping):
            text = _table_json(value)
        else:
            text = _dumps(json_value(value))
        parts.append(f'{{"key":{_json_string(key)},"tag":{_json_string(tag)},"value":{text}}}')
    return f"[{','.join(parts)}]"


def _header_json_generally(frame: ContentHeaderFrame) -> tuple[str, tuple[Any, ...]]:
    fields = frame_fields(frame)
    assert fields is not None
    return _dumps(fields), message_properties(frame.properties)


def frame_type(frame: Frame) -> str:
    """The ``frame_type`` column: method, header, body, heartbeat or protocol-header."""
    return FRAME_TYPE_NAMES[type(frame)]


def user_name(mechanism: str, response: bytes) -> str | None:
    """The user named by a PLAIN or AMQPLAIN response (never the password)."""
    if mechanism == "PLAIN":
        parts = response.split(b"\x00")
        if len(parts) == 3:
            return parts[1].decode("utf-8", "backslashreplace")
        return None
    if mechanism == "AMQPLAIN":
        try:
            table, _ = decode_table(
                struct.pack(">I", len(response)) + response, 0, len(response) + 4
            )
        except AMQPDecodeError:
            return None
        login = table.get("LOGIN")
        if isinstance(login, str):
            return text(login)
        if isinstance(login, (bytes, bytearray)):
            return bytes(login).decode("utf-8", "backslashreplace")
    return None


def _table_text(table: Any, key: str) -> str | None:
    if not isinstance(table, Mapping):
        return None
    value = table.get(key)
    if isinstance(value, str):
        return text(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "backslashreplace")
    return None


# ------------------------------------------------------------------------------------------
# One direction
# ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Facts:
    """What one direction says about its connection (for the ``connections`` row)."""

    size: int = 0
    frames: int = 0
    messages: int = 0
    problems: int = 0
    spec: str | None = None
    protocol: ProtocolSpec | None = None
    """The version :attr:`spec` names (method ids are looked up in it)."""
    detected_by: str | None = None
    methods: dict[str, tuple[int, float, Method]] = field(default_factory=dict)
    """The first of each connection-class method seen: its offset, timestamp and itself."""


@dataclass(frozen=True, slots=True)
class Region:
    """The part of one direction's stream a :class:`DirectionDissector` is responsible for.

    A long stream is dissected in regions by parallel tasks (see
    :mod:`amqp_codec.analyze.plan`): region 0 from the start of the stream as one whole pass
    would; a later region from the first frame it finds at or after :attr:`start` (its
    *sync*), in the version the stream's head named. Each emits the rows of the frames that
    start in ``[start, end)`` and reads on past ``end`` only to finish what it started (the
    frame that crosses ``end``, the messages still in progress there).
    """

    index: int = 0
    """0: the stream's first region (or the whole stream)."""
    start: int = 0
    end: int | None = None
    """None: the region runs to the end of the stream."""
    spec: ProtocolSpec | None = None
    """A later region's version (region 0 detects it)."""
    tuned_frame_max: int = 0
    """A later region's frame_max from connection.tune (for the resync heuristic)."""
    reads_to_end: bool = True
    """The bytes given to the region run to the end of the stream (else they stop some way
    past the region's end, and running out of them is not the stream's end)."""
    negotiated: Negotiated | None = None
    """The client's connection.tune-ok, as far as it is known (see :mod:`.rules`)."""
    in_force: bool = False
    """A later region: the negotiated limits hold from its start (this side's tune or
    tune-ok came before it)."""


#: The whole stream as one region: the sequential pass every parallel run must equal.
WHOLE = Region()


@dataclass(slots=True)
class Follow:
    """A message in progress at a region's end, followed into the next region's frames."""

    channel: int
    start: int
    """Stream offset where following began (the region's :attr:`Edge.end`)."""
    end: int | None = None
    """Offset just past the frame that completed, failed or interrupted the message, or where
    frames were lost; None: followed to the end of the stream."""
    texts: dict[int, str] = field(default_factory=dict)
    """The content-sequence problem of each followed frame that had one, by frame offset."""


@dataclass(slots=True)
class Edge:
    """What a region reports to the driver so its neighbours can be checked against it."""

    sync: int | None = None
    """Offset of the first frame the region decoded (0 for region 0); None: none found."""
    end: int | None = None
    """Offset of the first frame boundary at or after the region's end, where the next
    region must have synced; None: the stream ended first."""
    forgot: bool = False
    """Content state was lost in the region (frames lost to a gap or a decode error), up to
    :attr:`end`: channels not in :attr:`known` are then unchecked after the region."""
    known: set[int] = field(default_factory=set)
    """Channels that had a method frame since the region's start or last loss."""
    overflow: bool = False
    """Reading on past the end to finish a message went further than allowed."""
    budget_refused: bool = False
    """A later region's dissector passed over a resync candidate for want of resync budget,
    which a dissector that read the stream from its start might have had."""
    spec: str | None = None
    """Region 0: the version it detected."""
    tuned_frame_max: int = 0
    """Region 0: frame_max of the first connection.tune or tune-ok."""
    deferred: list[tuple[int, int, list[Any]]] = field(default_factory=list)
    """Frame rows whose ``problem`` depends on what came before the region: content frames on
    a channel before its first method frame here, and that method frame (offset, channel,
    row with the problem found locally, assuming a clean state)."""
    conditional: list[tuple[int, int, tuple[Any, ...]]] = field(default_factory=list)
    """``problems`` rows found for those frames assuming a clean state (offset, channel, row)."""
    follows: list[Follow] = field(default_factory=list)
    rules: RulesEdge = field(default_factory=RulesEdge)
    """What the peer rules leave for the driver (see :func:`.rules.fold`)."""
    rule_texts: dict[int, str] = field(default_factory=dict)
    """The ``problem`` text the peer rules gave a deferred frame row, by offset."""


# Modes of a DirectionDissector
_SYNC, _MAIN, _FOLLOW, _DONE = "sync", "main", "follow", "done"
#: Bytes a later region looks through for its first frame before giving up.
SYNC_LIMIT = 8 * 2**20
#: Frames that must follow a candidate first frame, each plausible, before a region syncs.
SYNC_CHAIN = 4
#: Bytes a region reads past its end to finish the messages in progress there.
FOLLOW_LIMIT = 64 * 2**20
# Contiguous stream bytes fed to the dissector at once.
_BATCH_BYTES = 64 * 1024
#: Pieces indexed (for timestamps and capture files) before those no row can still name are
#: dropped: the index of a stream dissected in one pass does not grow with the stream.
INDEX_TRIM = 1 << 16
# The end of the last piece's range while no piece follows it: past any stream offset.
_NO_END = 1 << 63
_CONTENT_FRAMES = (ContentHeaderFrame, ContentBodyFrame, DraftHeaderFrame, DraftBodyFrame)


class DirectionDissector:
    """Dissects one direction's stream, or one :class:`Region` of it, into rows."""

    def __init__(
        self,
        *,
        connection: str,
        direction: str,
        bodies: bool,
        region: Region = WHOLE,
    ) -> None:
        self.connection = connection
        self.direction = direction
        self.bodies = bodies
        self.region = region
        self.rows: list[Row] = []  # rows found and not yet handed out by run()
        # ...but for the frames table's, kept apart: most rows are frames, and a batch of them
        # goes to the writer in one step (see run_batches)
        self.frame_rows: list[tuple[Any, ...]] = []
        self.facts = _Facts()
        self.edge = Edge(sync=0 if region.index == 0 else None)
        self.rules = PeerRules(
            direction, region.negotiated, in_force=region.in_force, later=region.index > 0
        )
        self.edge.rules = self.rules.edge
        self.rule_text: str | None = None  # the peer rules' text for the last frame
        name = f"{connection} {direction}"
        self.dissector = StreamDissector(name=name)
        # Channels with a message in progress, as the dissector's assembler says after each
        # frame (it assembles the messages: FrameEvent.message).
        self.in_progress: set[int] = set()
        # channel -> properties of its last content header, and its message row's properties
        self.header_properties: dict[int, tuple[Properties, tuple[Any, ...]]] = {}
        self.starts: list[int] = []  # stream offsets where pieces start
        self.stamps: list[float] = []  # their timestamps
        self.captures: list[str] = []  # and capture files
        # _where's last answer, and the stream range [from, to) of the piece it holds for
        # (still true once _trim_index has dropped that piece).
        self._found: tuple[float | None, str | None] = (None, None)
        self._found_from = self._found_to = 0
        self._trim_at = INDEX_TRIM  # len(starts) that sets off the next _trim_index
        # channel -> its content method's offset, timestamp and capture file (the message's,
        # kept rather than looked up again when it completes: by then the frames have moved on)
        self.content: dict[int, tuple[int, float, str | None]] = {}
        self.first = region.index == 0
        self.later = region.index > 0
        # The last frame's row, held until the next frame: a problem found meanwhile may set
        # its problem text (see _problem_text).
        self.last_frame: tuple[Any, ...] | None = None
        self.last_deferred = False
        self.mode = _MAIN if region.index == 0 else _SYNC
        self.sync_buffer = bytearray()
        self.sync_base = region.start  # stream offset of sync_buffer[0]
        self.sync_search = SyncSearch()
        self.after_gap = False  # a gap came before the region's first frame
        self.following: dict[int, Follow] = {}
        self.resolved: list[int] = []  # followed channels resolved by the last frame
        self.follow_frame: tuple[int, int] | None = None
        self.checked = False  # whether the peer rules apply to the stream's version
        self.past_end = 0  # bytes read past the region's end
        self._batch: list[bytes] = []  # contiguous bytes not fed yet, from _batch_start
        self._batch_start = self._batch_end = self._batched = 0

    # -- driving ----------------------------------------------------------------------------

    def run(self, items: Iterable[Piece | Gap]) -> Iterator[Row]:
        """:meth:`run_batches`, a ``(table, row)`` at a time."""
        for frames, others in self.run_batches(items):
            yield from others
            for row in frames:
                yield "frames", row

    def run_batches(
        self, items: Iterable[Piece | Gap]
    ) -> Iterator[tuple[list[tuple[Any, ...]], list[Row]]]:
        """Dissect the stream's pieces and gaps (in stream order, from the region's start on),
        yielding rows as they are found, in batches: the ``frames`` table's rows, and the
        ``(table, row)`` of the others. :attr:`facts` and :attr:`edge` are complete after.

        No item is asked for once the region is done: a region whose frames end exactly at
        its end, with no message in progress, reads nothing past it.
        """
        start = self.region.start
        position = start
        gap: Gap | None = None
        unknown: Gap | None = None
        for item in items:
            if isinstance(item, Gap):
                if item.length is None:  # started mid-stream: earlier bytes are unknown
                    # Reported with the first piece, its time and capture file (those of the
                    # bytes after the loss, as one pass dates it); a stream with no bytes
                    # lost nothing anyone could see.
                    unknown = item
                else:
                    gap = item  # its extent is where the next piece starts
                continue
            if unknown is not None:
                self._gap(unknown.offset, None, item.ts, item.capture)
                unknown = None
            if item.offset > position:
                self._flush_batch()
                ts = item.ts if gap is None else gap.ts
                if self.mode != _DONE:
                    self._gap(position, item.offset - position, ts, item.capture)
                position = item.offset
            gap = None
            data = item.data
            if item.offset < position:  # overlap already delivered: keep the new bytes only
                data = data[position - item.offset :]
            if data and self.mode != _DONE:
                position = self._piece(position, data, item.ts, item.capture)
            if self.mode == _DONE:
                break
            if len(self.frame_rows) + len(self.rows) > 1000:
                # Hand rows on as they come: a stream may be huge.
                yield self._handed()
        else:
            self._flush_batch()
            if self.mode == _DONE:
                pass
            elif not self.region.reads_to_end:
                # A region before the last ran out of the bytes it was given to read past its
                # end: the stream goes on, so nothing may be taken as its end. Still looking
                # for its first frame, it takes the best candidate in what it has (the check
                # sees whether it is where the region before ends); frames or messages it
                # has not finished then are left to one pass over the stream.
                if self.mode == _SYNC:
                    self._try_sync(final=True)  # none found: the bytes gathered are dropped
                if self.mode in (_MAIN, _FOLLOW):
                    self.edge.overflow = True
                self.mode = _DONE
            else:
                if gap is not None and gap.length is not None:  # bytes lost at the end
                    capture = self.captures[-1] if self.captures else ""
                    self._gap(position, gap.length, gap.ts, capture)
                self._finish()
        self._flush_batch()
        self._flush()
        self.edge.budget_refused = self.region.index > 0 and self.dissector.budget_refused
        yield self._handed()

    def _handed(self) -> tuple[list[tuple[Any, ...]], list[Row]]:
        """The rows found since the last batch, as a batch (see :meth:`run_batches`)."""
        batch = self.frame_rows, self.rows
        self.frame_rows, self.rows = [], []
        return batch

    def _piece(self, position: int, data: bytes, ts: float, capture: str) -> int:
        """Take the piece ``data`` at stream ``position``; the position after it."""
        start, end = self.region.start, self.region.end
        stop = position + len(data)
        if end is None or stop < end:
            # The usual piece: short of the region's end (run() never gives one that starts
            # before the region's start).
            self.facts.size += len(data)
            self._take(position, data, ts, capture)
            if self._batched >= _BATCH_BYTES:
                self._flush_batch()
            return stop
        high = position + len(data) if end is None else min(position + len(data), end)
        if high > max(position, start):
            self.facts.size += high - max(position, start)
        if end is not None and position + len(data) > end:
            self.past_end += position + len(data) - max(end, position)
            if self.past_end > FOLLOW_LIMIT and self.mode in (_MAIN, _FOLLOW):
                self.edge.overflow = True
                self.mode = _DONE
                return position
        if end is not None and position < end < position + len(data):
            # The bytes before the region's end go first, alone: if its frames end exactly
            # there, nothing after it is needed.
            self._take(position, data[: end - position], ts, capture)
            self._at_end(end)
            if self.mode == _DONE:
                return end
            data, position = data[end - position :], end
        self._take(position, data, ts, capture)
        position += len(data)
        if self._batched >= _BATCH_BYTES:
            self._flush_batch()
        if position == end:
            self._at_end(end)
        return position

    def _take(self, position: int, data: bytes, ts: float, capture: str) -> None:
        """Index a piece (for timestamps and capture files) and add it to the batch."""
        if len(self.starts) >= self._trim_at:
            self._trim_index()
        self.starts.append(position)
        self.stamps.append(ts)
        self.captures.append(capture)
        if self._found_to > position:  # _where's last piece ends where this one starts
            self._found_to = position
        # Contiguous pieces are fed together: the dissector's cost is per call as much as
        # per byte, and segments are small.
        if self._batch and self._batch_end != position:
            self._flush_batch()
        if not self._batch:
            self._batch_start = position
        self._batch.append(data)
        self._batched += len(data)
        self._batch_end = position + len(data)

    def _flush_batch(self) -> None:
        if self._batch:
            data = self._batch[0] if len(self._batch) == 1 else b"".join(self._batch)
            self._batch, self._batched = [], 0
            self._feed(self._batch_start, data)

    def _at_end(self, end: int) -> None:
        """Every byte before the region's end is in: if the frames end exactly there, the
        region's frames are done."""
        self._flush_batch()
        if self.mode == _MAIN and self.dissector.at_frame_boundary:
            self._end_main(end)

    def _feed(self, position: int, data: bytes) -> None:
        if self.mode == _SYNC:
            if not self.sync_buffer:
                self.sync_base = position
            self.sync_buffer += data
            self.sync_search.seen += len(data)
            self._try_sync(final=False)
        elif self.mode in (_MAIN, _FOLLOW):
            self._events(self.dissector.feed(data))

    def _finish(self) -> None:
        if self.mode == _SYNC:
            self._try_sync(final=True)
        if self.mode in (_MAIN, _FOLLOW):
            self._events(self.dissector.finish())
            if self.mode == _MAIN and self.region.end is None:
                self._edge_state()
        self.mode = _DONE

    # -- a later region's first frame -------------------------------------------------------

    def _try_sync(self, *, final: bool) -> None:
        """Find the region's first frame in the bytes gathered so far (see :func:`find_sync`)."""
        region = self.region
        spec = region.spec or DEFAULT_SPEC
        # Trial decodes within the dissector's resync budget for the bytes gathered: a
        # candidate frame can be a MiB long, and garbage can hold one every few bytes.
        search = self.sync_search
        budget = RESYNC_WORK_ALLOWANCE + RESYNC_WORK_PER_BYTE * search.seen
        found = find_sync(
            self.sync_buffer,
            spec,
            region.tuned_frame_max,
            final=final,
            search=search,
            budget=budget,
        )
        if found is None:
            given_up = len(self.sync_buffer) > SYNC_LIMIT or search.refused
            if final or given_up:
                if given_up:
                    self.mode = _DONE  # the driver falls back to one pass for this stream
                self._clear_sync()
            return
        sync = self.sync_base + found
        self.edge.sync = sync
        if region.end is not None and sync >= region.end:
            self.mode = _DONE  # no frame starts in this region (one large frame crosses it)
            return
        self.dissector = StreamDissector.resuming(
            spec,
            sync,
            tuned_frame_max=region.tuned_frame_max,
            forgotten=self.after_gap,
            name=self.dissector.stats.name,
        )
        if self.after_gap:
            self._forget()
        self.mode = _MAIN
        data = bytes(self.sync_buffer[found:])
        self._clear_sync()
        self._events(self.dissector.feed(data))

    def _clear_sync(self) -> None:
        """Drop the bytes gathered; the search starts over in the next ones (its work and the
        bytes it has seen, which its budget grows with, stay: a gap does not renew them)."""
        self.sync_buffer = bytearray()
        self.sync_search.start = 0

    # -- locating stream offsets in the capture ---------------------------------------------

    def _where(self, offset: int | None) -> tuple[float | None, str | None]:
        """Timestamp and capture file of the piece holding stream byte ``offset``."""
        # Frames come in stream order: most are in the piece of the frame before.
        if offset is not None and self._found_from <= offset < self._found_to:
            return self._found
        starts = self.starts
        if not starts:
            return None, None
        if offset is None:
            return self.stamps[0], self.captures[0] or None
        i = max(bisect.bisect_right(starts, offset) - 1, 0)
        found = self._found = (self.stamps[i], self.captures[i] or None)
        self._found_from = starts[i]
        self._found_to = starts[i + 1] if i + 1 < len(starts) else _NO_END
        return found

    def _ts(self, offset: int) -> float | None:
        return self._where(offset)[0]

    def _trim_index(self) -> None:
        """Drop the pieces before the one holding the oldest offset a row can still name:
        the dissector's (a frame being decoded, a resync's skipped range; bytes not fed yet
        come after it, and a region still looking for its first frame has a dissector that
        has not begun, at 0) or a message's in progress (its content method's). The first
        piece stays: a message whose method came before the region is dated from there
        (:meth:`_where` of None)."""
        oldest = self.dissector.oldest_offset
        for offset, _ts, _capture in self.content.values():
            oldest = min(oldest, offset)
        cut = bisect.bisect_right(self.starts, oldest) - 1
        if cut > 1:
            del self.starts[1:cut], self.stamps[1:cut], self.captures[1:cut]
        self._trim_at = len(self.starts) + INDEX_TRIM

    def _owns(self, offset: int) -> bool:
        end = self.region.end
        return offset >= self.region.start and (end is None or offset < end)

    # -- events -----------------------------------------------------------------------------

    def _gap(self, offset: int, length: int | None, ts: float, capture: str) -> None:
        if self._owns(offset):
            lost = "an unknown number of" if length is None else str(length)
            self._problem_row(
                offset,
                ts,
                kind="gap",
                error="gap",
                detail=f"{lost} bytes missing from the capture at stream offset {offset}",
                capture=capture or self._where(offset)[1],
            )
        if self.mode == _SYNC:
            self._try_sync(final=True)
            if self.mode == _SYNC:
                self.after_gap = True
                self._clear_sync()
                return
        if self.mode == _FOLLOW:
            self._resolve_all(offset)
            self.mode = _DONE
            return
        if self.mode == _MAIN:
            self._forget()
            self._events(self.dissector.gap(length or 0))

    def _forget(self) -> None:
        """Frames were lost: no message in progress can be completed."""
        self.in_progress.clear()
        self.content.clear()
        self.header_properties.clear()
        self.edge.forgot = True
        self.edge.known.clear()
        self.rules.forget()

    def _events(self, events: Iterable[Any]) -> None:
        end = self.region.end
        # The peer rules check frames of the version they were written for. The events come
        # from one call of the dissector, whose version is known by then if at all.
        spec = self.dissector.spec
        self.checked = spec is not None and spec.wire_format == "0-9"
        for event in events:
            if (
                type(event) is FrameEvent
                and self.mode == _MAIN
                and (end is None or event.offset < end)
            ):  # the usual event, handled as _main_event would
                self._frame(event)
                continue
            if self.mode == _MAIN and end is not None:
                # The region's frames end at the first frame boundary at or after its end.
                if isinstance(event, FrameEvent) and event.offset >= end:
                    self._end_main(event.offset)
                elif (
                    isinstance(event, ProblemEvent)
                    and event.problem.source != "content-sequence"
                    and event.problem.frame_offset >= end
                ):
                    self._end_main(event.problem.frame_offset)
                elif isinstance(event, ResyncEvent) and event.resumed and event.stop >= end:
                    self._flush()
                    self._forget()
                    self._end_main(event.stop)
                    continue
            if self.mode == _MAIN:
                self._main_event(event)
            elif type(event) is SpecEvent:
                self._late_spec(event)
            elif self.mode == _FOLLOW:
                self._follow_event(event)
        if self.mode == _FOLLOW:
            self._apply_resolved()

    def _late_spec(self, event: SpecEvent) -> None:
        """The version, learned from the first frame decoded, past the region's frames (a
        resync that resumed beyond its end: the stream's start, mid-connection, was not
        AMQP's): one pass learns it there too."""
        self._main_event(event)
        self.edge.spec = self.facts.spec

    def _main_event(self, event: Any) -> None:
        if isinstance(event, FrameEvent):
            self._frame(event)
        elif isinstance(event, ProblemEvent):
            self._problem(event.problem)
        elif isinstance(event, ResyncEvent):
            self._flush()
            self._forget()
            if not event.resumed:
                self._problem_row(
                    event.start,
                    self._ts(event.start),
                    kind="resync",
                    error="resync",
                    detail=f"no plausible frame start in the last {event.stop - event.start} "
                    "bytes of the stream",
                )
        elif isinstance(event, SpecEvent):
            self.facts.spec = event.spec.name
            self.facts.protocol = event.spec
            # "given": the spec a resync resumed with, never detected from this stream.
            given = event.detected_by == "given"
            self.facts.detected_by = "assumed" if given else event.detected_by

    def _edge_state(self) -> None:
        """Record what the next region's checks depend on, at the end of this one's frames."""
        self.edge.spec = self.facts.spec
        self.edge.tuned_frame_max = self.dissector.tuned_frame_max

    def _end_main(self, offset: int) -> None:
        """This region's frames are done; follow the messages still in progress."""
        self._flush()
        self.edge.end = offset
        self._edge_state()
        for channel in sorted(self.content):
            if channel in self.in_progress:
                self.following[channel] = Follow(channel, offset)
                self.edge.follows.append(self.following[channel])
        self.mode = _FOLLOW if self.following else _DONE

    # -- following messages past the region's end -------------------------------------------

    def _follow_event(self, event: Any) -> None:
        if isinstance(event, FrameEvent):
            self._apply_resolved()
            frame = event.frame
            channel = getattr(frame, "channel", None)
            if channel not in self.following or isinstance(frame, ProtocolHeader):
                self.follow_frame = None
                return
            self.follow_frame = (event.offset, channel)
            self._note_progress(channel, event.pending)
            if event.message is not None:
                self._message(event.message)
            in_progress = event.pending
            if isinstance(frame, (MethodFrame, DraftMethodFrame)) or not in_progress:
                self.following[channel].end = event.end
                self.resolved.append(channel)
        elif isinstance(event, ProblemEvent):
            problem = event.problem
            if problem.source != "content-sequence":
                self._resolve_all(problem.frame_offset)  # the dissector forgets the messages
                return
            follow = self.following.get(problem.channel) if problem.channel is not None else None
            at_frame = self.follow_frame is not None and self.follow_frame == (
                problem.frame_offset,
                problem.channel,
            )
            if follow is not None and (at_frame or problem.frame_offset >= self.dissector._end):
                follow.texts[problem.frame_offset] = problem.reason
                self._problem(problem)
        elif isinstance(event, ResyncEvent):
            self._resolve_all(event.start)

    def _apply_resolved(self) -> None:
        for channel in self.resolved:
            self.following.pop(channel, None)
        self.resolved.clear()
        if not self.following:
            self.mode = _DONE

    def _resolve_all(self, offset: int) -> None:
        for follow in self.following.values():
            if follow.end is None:
                follow.end = offset
        self.following.clear()
        self.resolved.clear()
        self.mode = _DONE

    # -- rows -------------------------------------------------------------------------------

    def _flush(self) -> None:
        last = self.last_frame
        if last is None:
            return
        if self.last_deferred:  # a list: the driver sets its problem text
            self.edge.deferred.append((last[4], last[5], list(last)))
            if self.rule_text is not None:
                self.edge.rule_texts[last[4]] = self.rule_text
            self.last_deferred = False
        else:
            self.frame_rows.append(last)
        self.last_frame = None

    def _frame(self, event: FrameEvent) -> None:
        """The frame's row, checks and message; the row of the frame before it goes first
        (as :meth:`_flush`, inline for the usual frame)."""
        last = self.last_frame
        if last is not None:
            if self.last_deferred:
                self._flush()
            else:
                self.frame_rows.append(last)
        frame = event.frame
        offset = event.offset
        size = event.end - offset
        if self._found_from <= offset < self._found_to:  # as _where, inline for the usual
            ts, capture = self._found
        else:
            ts, capture = self._where(offset)
        self.facts.frames += 1
        frame_class = type(frame)
        kind = FRAME_TYPE_NAMES[frame_class]
        method: Method | None = None
        fields: str | None = None
        if kind == "method":
            method = frame.method  # type: ignore[union-attr]
            fields = _method_json(method, size)
        elif frame_class is ContentHeaderFrame:
            # The message's headers column is the same JSON: worked out once.
            fields, properties = header_json(frame)  # type: ignore[arg-type]
            self.header_properties[frame.channel] = (frame.properties, properties)  # type: ignore[union-attr]
        elif kind != "body" and kind != "heartbeat":
            fields = _dumps(frame_fields(frame))
        protocol_header = kind == PROTOCOL_HEADER_NAME
        channel = None if protocol_header else frame.channel  # type: ignore[union-attr]
        if self.first:
            self.first = False
            if not (protocol_header or (method is not None and method.NAME == "connection.start")):
                self._forget()  # content sequences can only be checked from the start
        self.last_frame = (
            capture,
            self.connection,
            self.direction,
            ts,
            offset,
            channel,
            kind,
            None if method is None else method.NAME,
            fields,
            size,
            None,
        )
        # In a later region, a channel's content frames before its first method frame here
        # (and that method frame) depend on the state the earlier regions left it in.
        self.last_deferred = (
            self.later
            and not self.edge.forgot
            and channel is not None
            and channel not in self.edge.known
            and kind != "heartbeat"
            and not protocol_header
        )
        self.rule_text = None
        if not protocol_header:
            for finding in self.rules.frame(size, channel, method, ts, checked=self.checked):
                self._finding(finding, offset, ts, capture)
        if method is not None:
            self.edge.known.add(channel)  # type: ignore[arg-type]
            if method.CLASS_ID == 10 and ts is not None:
                self.facts.methods.setdefault(method.NAME, (offset, ts, method))
            if method.HAS_CONTENT:
                self.content[channel] = (offset, ts or 0.0, capture)  # type: ignore[index]
        if protocol_header:
            return
        if event.pending:  # as _note_progress, inline: once per frame
            self.in_progress.add(channel)  # type: ignore[arg-type]
        else:
            self.in_progress.discard(channel)
        if event.message is not None:
            self._message(event.message)

    def _note_progress(self, channel: int, pending: bool) -> None:
        if pending:
            self.in_progress.add(channel)
        else:
            self.in_progress.discard(channel)

    def _finding(
        self, finding: Finding, offset: int, ts: float | None, capture: str | None
    ) -> None:
        """A frame the receiving peer would refuse: a ``problems`` row now, or one the
        driver writes if the regions before make it hold."""
        row = finding_row(finding, capture, self.connection, self.direction, ts, offset)
        if finding.depends:
            pending = Pending(finding.kind, offset, finding.channel, ts or 0.0, finding.since, row)
            self.rules.edge.pending.append(pending)
            return
        self.facts.problems += 1
        self.rows.append(("problems", row))
        if finding.kind != HEARTBEAT_MISSED and self.last_frame is not None:
            if self.last_frame[10] is None:
                self._problem_text(finding.detail)
            if self.rule_text is None:
                self.rule_text = finding.detail

    def _problem_text(self, text: str | None) -> None:
        """Set the ``problem`` column of the last frame's row."""
        assert self.last_frame is not None
        self.last_frame = (*self.last_frame[:10], text)

    def _message(self, message: Message | DraftMessage) -> None:
        known = self.content.pop(message.channel, None)
        if known is None:  # its method came before this region: dated from the first piece
            offset, ts, capture = None, None, self._where(None)[1]
        else:
            offset, ts, capture = known
        method = message.method
        self.facts.messages += 1
        body = message.body

        values = _message_fields(method)
        if isinstance(message, DraftMessage):
            delivery = message.named("delivery-properties")
            # message.transfer's destination: the exchange when a client publishes, the
            # subscription when the broker delivers.
            destination = getattr(method, "destination", None)
            sent = self.direction == "client"
            header: dict[str, Any] = {
                "exchange": getattr(delivery, "exchange", None) or (destination if sent else None),
                "routing_key": getattr(delivery, "routing_key", None),
                "consumer_tag": None if sent else destination,
                "redelivered": getattr(delivery, "redelivered", None),  # a bit: False if clear
            }
            values = [
                header.get(attr) if value is None else value
                for attr, value in zip(_MESSAGE_FIELDS, values, strict=True)
            ]
            properties = draft_message_properties(message)
        else:
            header_of = self.header_properties.pop(message.channel, None)
            if header_of is not None and header_of[0] is message.properties:
                properties = header_of[1]
            else:
                properties = message_properties(message.properties)
        exchange, routing_key, consumer_tag, delivery_tag, redelivered, code, reply = values
        self.rows.append(
            (
                "messages",
                (
                    capture,
                    self.connection,
                    self.direction,
                    ts,
                    offset,
                    message.channel,
                    method.NAME,
                    text(exchange),
                    text(routing_key),
                    text(consumer_tag),
                    delivery_tag,
                    redelivered,
                    code,
                    text(reply),
                    properties,
                    len(body),
                    hashlib.sha256(body).hexdigest(),
                    body if self.bodies else None,
                ),
            )
        )

    def _problem(self, problem: Problem) -> None:
        concerns_last = self.last_frame is not None and problem.frame_offset == self.last_frame[4]
        if concerns_last:
            self._problem_text(problem.reason)
        ts, capture = self._where(problem.offset)
        row = (
            capture,
            None,
            self.connection,
            self.direction,
            ts,
            problem.offset,
            _problem_kind(problem),
            problem.error,
            problem.reply_code,
            problem.channel,
            problem.method,
            problem.field,
            problem.reason if not problem.note else f"{problem.reason}; {problem.note}",
        )
        if concerns_last and self.last_deferred and problem.source == "content-sequence":
            # Found assuming a clean state before this region: the driver decides.
            self.edge.conditional.append((problem.frame_offset, problem.channel or 0, row))
            return
        self.facts.problems += 1
        self.rows.append(("problems", row))

    def _problem_row(
        self,
        offset: int | None,
        ts: float | None,
        *,
        kind: str,
        error: str,
        detail: str,
        capture: str | None = None,
    ) -> None:
        self.facts.problems += 1
        if capture is None:
            capture = self._where(offset)[1]
        self.rows.append(
            (
                "problems",
                (
                    capture,
                    None,
                    self.connection,
                    self.direction,
                    ts,
                    offset,
                    kind,
                    error,
                    None,
                    None,
                    None,
                    None,
                    detail,
                ),
            )
        )


@dataclass(slots=True)
class SyncSearch:
    """Where a later region's search for its first frame stands (see :func:`find_sync`)."""

    start: int = 0
    """No frame starts before this offset of the bytes gathered, whatever bytes follow."""
    seen: int = 0
    """Bytes gathered for the search so far."""
    work: int = 0
    """Bytes of candidate frames decoded on trial so far (each copied to be decoded)."""
    refused: bool = False
    """A candidate would have taken :attr:`work` past the budget: the search was given up."""


def find_sync(
    data: bytes | bytearray,
    spec: ProtocolSpec,
    tuned_frame_max: int = 0,
    *,
    final: bool,
    search: SyncSearch | None = None,
    budget: int | None = None,
) -> int | None:
    """The offset in ``data`` of the first plausible frame start at or after
    ``search.start``: a frame whose header is plausible, whose frame-end octet is where its
    size says, which decodes on its own, and which :data:`SYNC_CHAIN` frames as plausible
    follow (fewer where ``data`` ends, if ``final``: nothing comes after it). None: none yet
    (or, if ``final``, none at all), or none within ``budget``.

    ``search`` carries the search from call to call as bytes are appended to ``data``: its
    :attr:`~SyncSearch.start` moves to where no frame can start before, whatever bytes
    follow (a start ruled out stays ruled out: each check reads only bytes already there),
    so the bytes a region gathers before its first frame are scanned once, not again with
    each piece added. The candidates decoded on trial add their bytes to its
    :attr:`~SyncSearch.work`; one that would take it past ``budget`` is not decoded, and the
    search is given up (:attr:`~SyncSearch.refused`).

    Stricter than the dissector's resync, which believes one frame: a region's guess is
    checked against where the previous region's frames actually ended, and a wrong guess
    costs a second pass over the stream.
    """
    if search is None:
        search = SyncSearch()
    layout = framing(spec)
    n = len(data)
    pos = search.start
    while True:
        match = layout.start.search(data, pos)
        if match is None:
            # The last octets may begin a start that is not whole yet.
            search.start = max(pos, n - layout.keep)
            return None
        pos = match.start()
        verdict = _chain(data, pos, spec, tuned_frame_max, final, search, budget)
        if verdict is None:  # wait for more bytes (or, refused, give up)
            search.start = pos
            return None
        if verdict:
            return pos
        pos += 1
        if pos >= n:
            search.start = pos
            return None


def _chain(
    data: bytes | bytearray,
    pos: int,
    spec: ProtocolSpec,
    tuned_frame_max: int,
    final: bool,
    search: SyncSearch,
    budget: int | None,
) -> bool | None:
    """Whether frames chain plausibly from ``pos``; None: more bytes are needed to tell (or
    the budget cannot pay for the first frame's trial decode: ``search.refused``)."""
    n = len(data)
    frames = 0
    cursor = pos
    header = framing(spec).header_size
    while frames < SYNC_CHAIN:
        if cursor + header > n:
            return (frames > 0) if final else None
        end = plausible_frame_end(spec, data, cursor, tuned_frame_max)
        if end is None:
            return False
        if end >= n:
            return (frames > 0) if final else None
        if data[end] != FRAME_END:
            return False
        if frames == 0:
            cost = end + 1 - cursor
            if budget is not None and search.work + cost > budget:
                search.refused = True
                return None
            search.work += cost
            if not decodes_alone(bytes(data[cursor : end + 1]), spec):
                return False
        frames += 1
        cursor = end + 1
        if cursor == n:
            return True if final else None
    return True


def _problem_kind(problem: Problem) -> str:
    if problem.source == "content-sequence":
        return "content-sequence"
    if problem.fatal:  # a protocol header of a version there is no codec for
        return "unknown-protocol"
    return "decode"


#: The method fields a ``messages`` row holds, in its columns' order.
_MESSAGE_FIELDS = (
    "exchange",
    "routing_key",
    "consumer_tag",
    "delivery_tag",
    "redelivered",
    "reply_code",
    "reply_text",
)
#: Per method class: each of :data:`_MESSAGE_FIELDS` it has, else None.
_MESSAGE_PLANS: dict[type[Method], tuple[str | None, ...]] = {}


def _message_fields(method: Method) -> list[Any]:
    """The values of :data:`_MESSAGE_FIELDS` in ``method`` (None where it has no such field).

    A class's fields are looked up once: ``getattr`` with a default would raise and catch an
    AttributeError inside for each field a method lacks, several per message."""
    kind = type(method)
    plan = _MESSAGE_PLANS.get(kind)
    if plan is None:
        plan = _MESSAGE_PLANS[kind] = tuple(
            attr if hasattr(method, attr) else None for attr in _MESSAGE_FIELDS
        )
    return [None if attr is None else getattr(method, attr) for attr in plan]


def draft_message_properties(message: DraftMessage) -> tuple[Any, ...]:
    """The ``properties`` struct of a 99-0 message row, from its header structs.

    delivery-properties and message-properties fields are matched to the columns by name;
    ``application-headers`` fills ``headers`` and the ``reply-to`` struct is JSON, as tables are.
    """
    values: dict[str, Any] = {}
    for struct_ in message.structs:
        for spec in struct_.FIELDS:
            value = getattr(struct_, spec.attr)
            attr = "headers" if spec.attr == "application_headers" else spec.attr
            if value is None or attr not in _PROPERTY_COLUMNS or attr in values:
                continue
            if spec.wire_type in ("table", "struct"):
                values[attr] = _dumps(json_value(value))
            elif isinstance(value, str):
                values[attr] = text(value)
            elif attr == "expiration":  # a timestamp here, a string in 0-9
                values[attr] = str(int(value))
            elif isinstance(value, int) and not isinstance(value, bool):
                values[attr] = int(value)
    return tuple(values.get(name) for name in _PROPERTY_COLUMNS)


def message_properties(props: Properties) -> tuple[Any, ...]:
    """The ``properties`` struct of a message row, in :data:`~.tables.PROPERTIES` order.

    Properties are matched by name, so any protocol version's basic properties fit; one the
    table has no column for is left out. (A content header's are worked out with its frame's
    fields, by :func:`header_json`.)
    """
    out: list[Any] = [None] * len(_PROPERTY_COLUMNS)
    for attr, index, table in _property_plan(type(props)):
        value = getattr(props, attr)
        if value is None:
            continue
        if table:
            out[index] = _table_json(value)
        elif isinstance(value, str):
            out[index] = text(value)
        elif isinstance(value, int):
            out[index] = int(value)
    return tuple(out)


#: Per properties class: (attribute, column index, is a field table) of each property the
#: table has a column for, worked out once.
_PROPERTY_PLANS: dict[type, list[tuple[str, int, bool]]] = {}


def _property_plan(cls: type[Properties]) -> list[tuple[str, int, bool]]:
    plan = _PROPERTY_PLANS.get(cls)
    if plan is None:
        columns = list(_PROPERTY_COLUMNS)
        plan = _PROPERTY_PLANS[cls] = [
            (spec.attr, columns.index(spec.attr), spec.wire_type == "table")
            for spec in cls.FIELDS
            if spec.attr in columns
        ]
    return plan


# ------------------------------------------------------------------------------------------
# Which capture a timestamp belongs to
# ------------------------------------------------------------------------------------------


# ------------------------------------------------------------------------------------------
# One connection
# ------------------------------------------------------------------------------------------


def looks_like_amqp(client_head: bytes | None, server_head: bytes | None) -> bool | None:
    """True: starts like AMQP; False: like something else; None: the start was not captured.

    A head is the first bytes of a direction's stream when its SYN and its first byte were
    captured, else None.
    """
    starts: list[bytes] = []
    for head, opening in ((client_head, _AMQP), (server_head, _START_PREFIX)):
        if not head:
            continue
        if head.startswith(opening):
            return True
        if head is server_head and start_version(head, 0) is not None:  # 99-0's frame
            return True
        starts.append(head[:16])
    if not starts:
        return None
    return False


def _stream_head(stream: Stream | None) -> bytes | None:
    if stream is None or not stream.pieces_and_gaps or not stream.syn:
        return None
    head = stream.pieces_and_gaps[0]
    if isinstance(head, Gap) or head.offset != 0:
        return None
    return head.data


def unknown_protocol_row(
    capture: str | None, name: str, direction: str, ts: float | None, head: bytes
) -> Row:
    """The ``problems`` row of a connection on an AMQP port that does not start like AMQP."""
    return (
        "problems",
        (
            capture,
            None,
            name,
            direction,
            ts,
            0,
            "unknown-protocol",
            "unknown-protocol",
            None,
            None,
            None,
            None,
            f"the connection does not start like AMQP (first bytes {head[:16].hex()})",
        ),
    )


def tcp_problem_row(
    name: str, direction: str, capture: str | None, ts: float | None, error: str, detail: str
) -> Row:
    """A ``problems`` row of kind ``tcp`` about one direction of a connection."""
    fields = (capture, None, name, direction, ts, None, "tcp", error, None, None, None, None)
    return ("problems", (*fields, detail))


def tcp_anomaly_rows(
    name: str,
    direction: str,
    capture: str | None,
    ts: float | None,
    *,
    conflicting: int,
    out_of_window: int,
) -> list[Row]:
    """Problems the reassembly counted: retransmissions that differ, segments out of window."""
    rows: list[Row] = []

    def row(error: str, detail: str) -> Row:
        return tcp_problem_row(name, direction, capture, ts, error, detail)

    if conflicting:
        rows.append(
            row(
                "conflicting-overlap",
                f"{conflicting} segments resent bytes that differ from the first copy (the "
                "first copy was decoded)",
            )
        )
    if out_of_window:
        rows.append(
            row(
                "out-of-window",
                f"{out_of_window} segments before the SYN or after the FIN were left out (a "
                "reused port?)",
            )
        )
    return rows


def endpoints(seg: Segment) -> tuple[tuple[str, int], tuple[str, int]]:
    """The two endpoints of ``seg``'s connection, in an order that ignores the direction."""
    a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
    return (a, b) if a <= b else (b, a)


def analyze_connection(
    segments: Iterable[Segment], *, ports: Collection[int], bodies: bool = False
) -> Iterator[Row]:
    """Every row one connection contributes: its frames, messages, problems and itself.

    ``segments`` are all segments between two endpoints (see :func:`endpoints`), both
    directions, in any order. Which side is the server: the one on one of ``ports``, else the
    one that received the SYN (see :func:`~amqp_codec.capture.tcp.connection_key`). A
    connection on one of ``ports`` that does not start like AMQP gives one
    ``unknown-protocol`` problem; a connection on another port is only analysed when it
    starts with the AMQP protocol header (or connection.start).

    This is the whole connection in one pass, in this process: the reference that the Spark
    job, which dissects long streams in parallel regions, must equal.
    """
    segs = list(segments)
    # A long capture may see a client reuse its port: each TCP connection (a new client ISN)
    # is analysed on its own, the second and later named "...#2", "#3".
    client_isns = {s.seq for s in segs if s.flags & _SYN_ONLY == TH_SYN}
    if len(client_isns) <= 1:
        yield from _analyze_incarnation(segs, ports, bodies, "")
        return
    for number, incarnation in enumerate(incarnations(segs), 1):
        yield from _analyze_incarnation(incarnation, ports, bodies, f"#{number}" * (number > 1))


@dataclass(frozen=True, slots=True)
class StreamEnds:
    """How one direction's TCP stream began and ended (for the ``connections`` row)."""

    first_ts: float | None = None
    last_ts: float | None = None
    fin: bool = False
    rst: bool = False


def _analyze_incarnation(
    segs: list[Segment], ports: Collection[int], bodies: bool, suffix: str
) -> Iterator[Row]:
    """:func:`analyze_connection` for the segments of one TCP connection."""
    servers = syn_servers(segs)
    by_direction: dict[str, list[Segment]] = {"client": [], "server": []}
    keys: dict[ConnectionKey, int] = {}
    for seg in segs:
        seg_key, direction = connection_key(seg, ports, servers)
        keys[seg_key] = keys.get(seg_key, 0) + 1
        by_direction[direction].append(seg)
    if not keys:
        return
    key = max(keys, key=lambda k: keys[k])
    first_capture = min(segs, key=lambda s: (s.ts, s.capture, s.packet)).capture
    client = reassemble(by_direction["client"]) if by_direction["client"] else None
    server = reassemble(by_direction["server"]) if by_direction["server"] else None
    name = connection_name(key) + suffix
    on_port = key[3] in ports
    amqp = looks_like_amqp(_stream_head(client), _stream_head(server))
    if amqp is False or (amqp is None and not on_port):
        if on_port:
            first = client or server
            head = b"" if first is None else b"".join(first.chunks())[:16]
            direction = "client" if client is not None else "server"
            ts = None if first is None else first.first_ts
            yield unknown_protocol_row(first_capture, name, direction, ts, head)
        return
    facts: dict[str, _Facts] = {}
    ends: dict[str, StreamEnds] = {}
    rules: dict[str, RulesEdge] = {}
    captures: dict[str, str] = {}
    for direction, stream in (("client", client), ("server", server)):
        if stream is None:
            continue
        # The server's frames answer to the client's tune-ok (see .rules): the client first.
        negotiated = (
            negotiated_in(_first(facts["client"], "connection.tune-ok"))
            if ("client" in facts)
            else None
        )
        dissected = DirectionDissector(
            connection=name,
            direction=direction,
            bodies=bodies,
            region=Region(negotiated=negotiated),
        )
        yield from dissected.run(stream.pieces_and_gaps)
        facts[direction] = dissected.facts
        rules[direction] = dissected.rules.edge
        ends[direction] = StreamEnds(stream.first_ts, stream.last_ts, stream.fin, stream.rst)
        pieces = [p for p in stream.pieces_and_gaps if isinstance(p, Piece)]
        last_capture = pieces[-1].capture if pieces else first_capture
        for row in tcp_anomaly_rows(
            name,
            direction,
            last_capture,
            stream.last_ts,
            conflicting=stream.overlaps_conflicting,
            out_of_window=stream.out_of_window_segments,
        ):
            dissected.facts.problems += 1
            yield row
        captures[direction] = last_capture
    for direction, row in silence_rows(name, ends, rules, captures):
        facts[direction].problems += 1
        yield ("problems", row)
    yield ("connections", connection_row(key, name, first_capture, ends, facts))


def silence_rows(
    name: str,
    ends: Mapping[str, StreamEnds],
    rules: Mapping[str, RulesEdge],
    captures: Mapping[str, str | None],
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """``problems`` rows for each side silent from its last frame to the connection's end
    for over twice the heartbeat (see :func:`.rules.silence_at_end`): (direction, row)."""
    lasts = [e.last_ts for e in ends.values() if e.last_ts is not None]
    end_ts = max(lasts) if lasts else None
    for direction in ("client", "server"):
        finding = silence_at_end(direction, rules.get(direction), end_ts)
        if finding is not None:
            detail = finding.detail + " (from its last frame to the connection's end)"
            last = rules[direction].last_ts
            yield (
                direction,
                finding_row(
                    replace(finding, detail=detail),
                    captures.get(direction),
                    name,
                    direction,
                    last,
                    None,
                ),
            )


def finding_row(
    finding: Finding,
    capture: str | None,
    connection: str,
    direction: str,
    ts: float | None,
    offset: int | None,
) -> tuple[Any, ...]:
    """The ``problems`` row of a peer-rule finding (see :mod:`.rules`)."""
    return (
        capture,
        None,
        connection,
        direction,
        ts,
        offset,
        finding.kind,
        finding.kind,
        finding.reply_code,
        finding.channel,
        finding.method,
        None,
        finding.detail,
    )


def _first(facts: _Facts, name: str) -> Method | None:
    entry = facts.methods.get(name)
    return None if entry is None else entry[2]


def connection_row(
    key: ConnectionKey,
    name: str,
    first_capture: str | None,
    ends: Mapping[str, StreamEnds],
    facts: Mapping[str, _Facts],
) -> tuple[Any, ...]:
    """The ``connections`` row from what both directions said and how their streams ended."""
    empty = _Facts()
    c, s = facts.get("client", empty), facts.get("server", empty)
    start = _first(s, "connection.start")
    start_ok = _first(c, "connection.start-ok")
    tune = _first(s, "connection.tune")
    tune_ok = _first(c, "connection.tune-ok")
    opened = _first(c, "connection.open")
    negotiated = tune_ok or tune
    client_props = getattr(start_ok, "client_properties", None)
    server_props = getattr(start, "server_properties", None)
    mechanism = getattr(start_ok, "mechanism", None)
    user = None
    response = getattr(start_ok, "response", None)
    if isinstance(mechanism, str) and isinstance(response, bytes):
        user = user_name(mechanism, response)
    closes = [
        (entry[1], who, entry[2])
        for who, f in (("client", c), ("server", s))
        if (entry := f.methods.get("connection.close")) is not None
    ]
    close = min(closes, key=lambda item: item[0]) if closes else None
    streams = list(ends.values())
    closed_by: str
    close_method = None
    if close is not None:
        closed_by = close[1]
        method = close[2]
        class_id, method_id = getattr(method, "class_id", 0), getattr(method, "method_id", 0)
        if class_id:
            close_method = f"{class_id}.{method_id}"
            # The ids are the closing side's version's (0-8 and 99-0 number methods their way).
            closer = c if close[1] == "client" else s
            spec = closer.protocol or c.protocol or s.protocol or default_spec()
            known = spec.method_class(class_id, method_id)
            if known is not None:
                close_method = known.NAME
    elif any(x.rst for x in streams):
        closed_by = "tcp-rst"
    elif any(x.fin for x in streams):
        closed_by = "tcp-fin"
    else:
        closed_by = "open"
    firsts = [x.first_ts for x in streams if x.first_ts is not None]
    lasts = [x.last_ts for x in streams if x.last_ts is not None]
    close_obj = close[2] if close is not None else None
    return (
        first_capture,
        name,
        key[0],
        key[1],
        key[2],
        key[3],
        c.spec or s.spec,
        c.detected_by or s.detected_by,
        min(firsts) if firsts else None,
        max(lasts) if lasts else None,
        None if client_props is None else _table_json(client_props),
        None if server_props is None else _table_json(server_props),
        _table_text(client_props, "product"),
        _table_text(client_props, "version") or _table_text(client_props, "product_version"),
        _table_text(client_props, "platform"),
        _table_text(server_props, "product"),
        _table_text(server_props, "version"),
        text(mechanism),
        text(getattr(start_ok, "locale", None)),
        getattr(negotiated, "channel_max", None),
        getattr(negotiated, "frame_max", None),
        getattr(negotiated, "heartbeat", None),
        text(getattr(opened, "virtual_host", None)),
        user,
        closed_by,
        getattr(close_obj, "reply_code", None),
        text(getattr(close_obj, "reply_text", None)),
        close_method,
        c.size,
        s.size,
        c.frames + s.frames,
        c.messages + s.messages,
        c.problems + s.problems,
    )
