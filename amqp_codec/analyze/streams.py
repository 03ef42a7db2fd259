"""One connection's segments in, table rows out: reassembly, detection, dissection, joins.

:func:`analyze_connection` is what a Spark task runs for each connection (all its segments,
both directions, from every capture file). It reassembles each direction
(:func:`amqp_codec.capture.tcp.reassemble`), decides whether the connection speaks AMQP,
dissects each direction's byte stream in order with a
:class:`~amqp_codec.dissect.StreamDissector` (gaps become problems and decoding resumes
after them), assembles messages with a :class:`~amqp_codec.MessageAssembler`, and joins
what both directions said into one ``connections`` row. 0-8 and 99-0 connections give the
same rows: 99-0 framesets are assembled with a
:class:`~amqp_codec.wire010.DraftMessageAssembler`, a message.transfer's header structs fill
the message's properties, and method ids (the cause a connection.close names) are looked up
in the connection's own version.

Nothing here knows about Spark: rows are plain tuples in the column order of
:mod:`amqp_codec.analyze.tables`, tagged with their table's name.

Credentials: the ``response`` of connection.start-ok and connection.secure-ok is replaced
by a redaction marker before anything is written; only the PLAIN/AMQPLAIN user name is kept.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import struct
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..assembly import Message, MessageAssembler
from ..base import Method, Properties
from ..capture.packets import TH_SYN, CaptureProblem, Segment
from ..capture.tcp import (
    Gap,
    Stream,
    connection_key,
    incarnations,
    reassemble,
    syn_servers,
)
from ..credentials import secret_fields
from ..dissect import (
    PROTOCOL_HEADER_NAME,
    FrameEvent,
    Problem,
    ProblemEvent,
    ResyncEvent,
    SpecEvent,
    StreamDissector,
)
from ..errors import AMQPDecodeError
from ..frames import (
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
)
from ..protocol import ProtocolSpec, default_spec
from ..report import _json_properties, _json_value, draft_flag_names, json_struct
from ..table import decode_table
from ..wire010.assembly import DraftMessage, DraftMessageAssembler
from ..wire010.frames import (
    DraftBodyFrame,
    DraftHeaderFrame,
    DraftHeartbeatFrame,
    DraftMethodFrame,
    start_version,
)
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
#: Methods whose ``response`` field carries credentials.
_SECRET_METHODS = frozenset({"connection.start-ok", "connection.secure-ok"})
_CONTENT_METHODS = frozenset({"basic.publish", "basic.deliver", "basic.get-ok", "basic.return"})
_AMQP = b"AMQP"
_SYN_ONLY = TH_SYN | 0x10  # SYN and ACK bits: a client's SYN has only the first
_PROPERTY_COLUMNS = column_names(PROPERTIES)
# Distinct methods whose fields JSON is remembered per stream (publishes to the same place).
_JSON_CACHE_SIZE = 4096
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
    if value is None:
        return None
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
        spec.name: REDACTED if spec.name in hidden else _json_value(getattr(method, spec.attr))
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
        return {
            "class_id": frame.class_id,
            "body_size": frame.body_size,
            "weight": frame.weight,
            "property_flags": frame.properties.flags,
            "properties": _json_properties(frame.properties),
        }
    if isinstance(frame, ProtocolHeader):
        return {
            "protocol_id": frame.protocol_id,
            "version": [frame.major, frame.minor, frame.revision],
        }
    return None


def _dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False)


_FRAME_TYPES: dict[type, str] = {
    MethodFrame: "method",
    ContentHeaderFrame: "header",
    ContentBodyFrame: "body",
    HeartbeatFrame: "heartbeat",
    ProtocolHeader: PROTOCOL_HEADER_NAME,
    DraftMethodFrame: "method",
    DraftHeaderFrame: "header",
    DraftBodyFrame: "body",
    DraftHeartbeatFrame: "heartbeat",
}


def frame_type(frame: Frame) -> str:
    """The ``frame_type`` column: method, header, body, heartbeat or protocol-header."""
    return _FRAME_TYPES[type(frame)]


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
    methods: dict[str, tuple[float, Method]] = field(default_factory=dict)
    """The first of each connection-class method seen, with its timestamp."""


class _Direction:
    """Dissects one direction's reassembled stream into rows."""

    def __init__(
        self,
        stream: Stream,
        *,
        capture_of: _CaptureIndex,
        connection: str,
        direction: str,
        bodies: bool,
    ) -> None:
        self.connection = connection
        self.direction = direction
        self.bodies = bodies
        self.rows: list[Row] = []  # rows found and not yet handed out by run()
        self.capture_of = capture_of
        self.facts = _Facts()
        self.dissector = StreamDissector(name=f"{connection} {direction}")
        self.assembler = MessageAssembler()
        self.draft_assembler = DraftMessageAssembler()  # 99-0 framesets
        self.starts: list[int] = []  # stream offsets where pieces start
        self.stamps: list[float] = []  # their timestamps
        self.content: dict[int, tuple[int, float]] = {}  # channel -> content method offset, ts
        self.first = True
        self.last_frame: list[Any] | None = None
        self.json_cache: dict[Method, str] = {}
        self.stream = stream

    def run(self) -> Iterator[Row]:
        """Dissect the stream, yielding rows as they are found; then :attr:`facts` is complete."""
        position = 0
        gap: Gap | None = None
        for item in self.stream.pieces_and_gaps:
            if isinstance(item, Gap):
                if item.length is None:  # started mid-stream: earlier bytes are unknown
                    self._gap(item.offset, None, item.ts)
                else:
                    gap = item  # its extent is where the next piece starts
                continue
            if item.offset > position:
                self._gap(position, item.offset - position, item.ts if gap is None else gap.ts)
                position = item.offset
            gap = None
            data = item.data
            if item.offset < position:  # overlap already delivered: keep the new bytes only
                data = data[position - item.offset :]
            if not data:
                continue
            self.starts.append(position)
            self.stamps.append(item.ts)
            self._events(self.dissector.feed(data))
            position += len(data)
            if len(self.rows) > 1000:  # hand rows on as they come: a stream may be huge
                yield from self.rows
                self.rows.clear()
        if gap is not None and gap.length is not None:  # bytes lost at the end of the stream
            self._gap(position, gap.length, gap.ts)
        self._events(self.dissector.finish())
        self._tcp_anomalies()
        self._flush()
        self.facts.size = self.dissector.stats.bytes
        yield from self.rows
        self.rows.clear()

    def _tcp_anomalies(self) -> None:
        """Problems the reassembly counted: retransmissions that differ, segments out of window."""
        stream = self.stream
        if stream.overlaps_conflicting:
            self._problem_row(
                None,
                stream.last_ts,
                kind="tcp",
                error="conflicting-overlap",
                detail=f"{stream.overlaps_conflicting} segments resent bytes that differ from "
                "the first copy (the first copy was decoded)",
            )
        if stream.out_of_window_segments:
            self._problem_row(
                None,
                stream.last_ts,
                kind="tcp",
                error="out-of-window",
                detail=f"{stream.out_of_window_segments} segments before the SYN or after the "
                "FIN were left out (a reused port?)",
            )

    # -- locating stream offsets in the capture ---------------------------------------------

    def _ts(self, offset: int) -> float | None:
        i = bisect.bisect_right(self.starts, offset) - 1
        if i < 0:
            return self.stamps[0] if self.stamps else None
        return self.stamps[i]

    # -- events -----------------------------------------------------------------------------

    def _gap(self, offset: int, length: int | None, ts: float) -> None:
        lost = "an unknown number of" if length is None else str(length)
        self._problem_row(
            offset,
            ts,
            kind="gap",
            error="gap",
            detail=f"{lost} bytes missing from the capture at stream offset {offset}",
        )
        self._forget()
        self._events(self.dissector.gap(length or 0))

    def _forget(self) -> None:
        """Frames were lost: no message in progress can be completed."""
        self.assembler.forget()
        self.draft_assembler.forget()
        self.content.clear()

    def _events(self, events: Iterable[Any]) -> None:
        for event in events:
            if isinstance(event, FrameEvent):
                self._flush()
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

    def _flush(self) -> None:
        if self.last_frame is not None:
            self.rows.append(("frames", tuple(self.last_frame)))
            self.last_frame = None

    def _frame(self, event: FrameEvent) -> None:
        frame = event.frame
        ts = self._ts(event.offset)
        self.facts.frames += 1
        kind = _FRAME_TYPES[type(frame)]
        method = frame.method if kind == "method" else None  # type: ignore[union-attr]
        if kind == "body" or kind == "heartbeat":
            fields = None
        elif method is not None:
            fields = self._method_json(method)
        else:
            fields = _dumps(frame_fields(frame))
        self.last_frame = [
            self.capture_of(ts),
            self.connection,
            self.direction,
            ts,
            event.offset,
            None if isinstance(frame, ProtocolHeader) else frame.channel,
            kind,
            None if method is None else method.NAME,
            fields,
            event.end - event.offset,
            None,
        ]
        if method is not None and method.CLASS_ID == 10 and ts is not None:
            self.facts.methods.setdefault(method.NAME, (ts, method))
        self._assemble(frame, event.offset, ts)

    def _method_json(self, method: Method) -> str:
        """The fields JSON of ``method``; repeated methods (same fields) are encoded once."""
        try:
            cached = self.json_cache.get(method)
        except TypeError:  # a field table inside: not hashable, not worth caching
            return _dumps(method_fields(method))
        if cached is None:
            if len(self.json_cache) >= _JSON_CACHE_SIZE:
                self.json_cache.clear()
            cached = self.json_cache[method] = _dumps(method_fields(method))
        return cached

    def _assemble(self, frame: Frame, offset: int, ts: float | None) -> None:
        if self.first:
            self.first = False
            starts = isinstance(frame, ProtocolHeader) or (
                isinstance(frame, (MethodFrame, DraftMethodFrame))
                and frame.method.NAME == "connection.start"
            )
            if not starts:
                self.assembler.forget()
                self.draft_assembler.forget()
        if isinstance(frame, (MethodFrame, DraftMethodFrame)) and frame.method.HAS_CONTENT:
            self.content[frame.channel] = (offset, ts or 0.0)
        try:
            # Each assembler ignores the other version's frames.
            message = self.assembler.feed(frame) or self.draft_assembler.feed(frame)
        except AMQPDecodeError:
            return  # the dissector reports the same broken sequence as a problem
        if message is not None:
            self._message(message)

    def _message(self, message: Message | DraftMessage) -> None:
        offset, ts = self.content.pop(message.channel, (None, None))
        method = message.method
        self.facts.messages += 1
        body = message.body

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
            properties = draft_message_properties(message)
        else:
            header = {}
            properties = message_properties(message.properties)

        def get(attr: str) -> Any:
            value = getattr(method, attr, None)
            return header.get(attr) if value is None else value

        self.rows.append(
            (
                "messages",
                (
                    self.capture_of(ts),
                    self.connection,
                    self.direction,
                    ts,
                    offset,
                    message.channel,
                    method.NAME,
                    text(get("exchange")),
                    text(get("routing_key")),
                    text(get("consumer_tag")),
                    get("delivery_tag"),
                    get("redelivered"),
                    get("reply_code"),
                    text(get("reply_text")),
                    properties,
                    len(body),
                    hashlib.sha256(body).hexdigest(),
                    body if self.bodies else None,
                ),
            )
        )

    def _problem(self, problem: Problem) -> None:
        self.facts.problems += 1
        if self.last_frame is not None and problem.frame_offset == self.last_frame[4]:
            self.last_frame[10] = problem.reason
        self.rows.append(
            (
                "problems",
                (
                    self.capture_of(self._ts(problem.offset)),
                    None,
                    self.connection,
                    self.direction,
                    self._ts(problem.offset),
                    problem.offset,
                    _problem_kind(problem),
                    problem.error,
                    problem.reply_code,
                    problem.channel,
                    problem.method,
                    problem.field,
                    problem.reason if not problem.note else f"{problem.reason}; {problem.note}",
                ),
            )
        )

    def _problem_row(
        self, offset: int | None, ts: float | None, *, kind: str, error: str, detail: str
    ) -> None:
        self.facts.problems += 1
        self.rows.append(
            (
                "problems",
                (
                    self.capture_of(ts),
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


def _problem_kind(problem: Problem) -> str:
    if problem.source == "content-sequence":
        return "content-sequence"
    if problem.fatal:  # a protocol header of a version there is no codec for
        return "unknown-protocol"
    return "decode"


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
                values[attr] = _dumps(_json_value(value))
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
    table has no column for is left out.
    """
    values: dict[str, Any] = {}
    for spec in type(props).FIELDS:
        value = getattr(props, spec.attr)
        if value is None:
            continue
        if spec.wire_type == "table":
            values[spec.attr] = _dumps(_json_value(value))
        elif isinstance(value, str):
            values[spec.attr] = text(value)
        elif isinstance(value, int):
            values[spec.attr] = int(value)
    return tuple(values.get(name) for name in _PROPERTY_COLUMNS)


# ------------------------------------------------------------------------------------------
# Which capture a timestamp belongs to
# ------------------------------------------------------------------------------------------


class _CaptureIndex:
    """Maps a packet timestamp to the capture file it came from (rotated files follow in time)."""

    def __init__(self, segments: Iterable[Segment]) -> None:
        spans: dict[str, list[float]] = {}
        for seg in segments:
            span = spans.setdefault(seg.capture, [seg.ts, seg.ts])
            span[0] = min(span[0], seg.ts)
            span[1] = max(span[1], seg.ts)
        ordered = sorted(spans.items(), key=lambda item: (item[1][0], item[0]))
        self.names = [name for name, _ in ordered]
        self.firsts = [span[0] for _, span in ordered]

    @property
    def first(self) -> str | None:
        """The capture holding the connection's first packet."""
        return self.names[0] if self.names else None

    def __call__(self, ts: float | None) -> str | None:
        if not self.names:
            return None
        if ts is None:
            return self.names[0]
        i = bisect.bisect_right(self.firsts, ts) - 1
        return self.names[max(i, 0)]


# ------------------------------------------------------------------------------------------
# One connection
# ------------------------------------------------------------------------------------------


def _looks_like_amqp(client: Stream | None, server: Stream | None) -> bool | None:
    """True: starts like AMQP; False: starts like something else; None: start not captured."""
    starts: list[bytes] = []
    for stream, opening in ((client, _AMQP), (server, _START_PREFIX)):
        if stream is None or not stream.pieces_and_gaps:
            continue
        head = stream.pieces_and_gaps[0]
        if isinstance(head, Gap) or head.offset != 0 or not stream.syn:
            continue
        if head.data.startswith(opening):
            return True
        if stream is server and start_version(head.data, 0) is not None:  # 99-0's frame
            return True
        starts.append(head.data[:16])
    if not starts:
        return None
    return False


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
    captures = _CaptureIndex(segs)
    client = reassemble(by_direction["client"]) if by_direction["client"] else None
    server = reassemble(by_direction["server"]) if by_direction["server"] else None
    name = connection_name(key) + suffix
    on_port = key[3] in ports
    amqp = _looks_like_amqp(client, server)
    if amqp is False or (amqp is None and not on_port):
        if on_port:
            first = client or server
            head = b""
            if first is not None:
                head = b"".join(first.chunks())[:16]
            yield (
                "problems",
                (
                    captures.first,
                    None,
                    name,
                    "client" if client is not None else "server",
                    None if first is None else first.first_ts,
                    0,
                    "unknown-protocol",
                    "unknown-protocol",
                    None,
                    None,
                    None,
                    None,
                    f"the connection does not start like AMQP (first bytes {head.hex()})",
                ),
            )
        return
    facts: dict[str, _Facts] = {}
    for direction, stream in (("client", client), ("server", server)):
        if stream is None:
            continue
        dissected = _Direction(
            stream, capture_of=captures, connection=name, direction=direction, bodies=bodies
        )
        yield from dissected.run()
        facts[direction] = dissected.facts
    yield ("connections", _connection_row(key, name, captures, client, server, facts))


def _connection_row(
    key: ConnectionKey,
    name: str,
    captures: _CaptureIndex,
    client: Stream | None,
    server: Stream | None,
    facts: Mapping[str, _Facts],
) -> tuple[Any, ...]:
    empty = _Facts()
    c, s = facts.get("client", empty), facts.get("server", empty)
    start = s.methods.get("connection.start", (0.0, None))[1]
    start_ok = c.methods.get("connection.start-ok", (0.0, None))[1]
    tune = s.methods.get("connection.tune", (0.0, None))[1]
    tune_ok = c.methods.get("connection.tune-ok", (0.0, None))[1]
    opened = c.methods.get("connection.open", (0.0, None))[1]
    negotiated = tune_ok or tune
    client_props = getattr(start_ok, "client_properties", None)
    server_props = getattr(start, "server_properties", None)
    mechanism = getattr(start_ok, "mechanism", None)
    user = None
    response = getattr(start_ok, "response", None)
    if isinstance(mechanism, str) and isinstance(response, bytes):
        user = user_name(mechanism, response)
    closes = [
        (when, who, method)
        for who, f in (("client", c), ("server", s))
        if (entry := f.methods.get("connection.close")) is not None
        for when, method in [entry]
    ]
    close = min(closes, key=lambda item: item[0]) if closes else None
    streams = [x for x in (client, server) if x is not None]
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
        captures.first,
        name,
        key[0],
        key[1],
        key[2],
        key[3],
        c.spec or s.spec,
        c.detected_by or s.detected_by,
        min(firsts) if firsts else None,
        max(lasts) if lasts else None,
        None if client_props is None else _dumps(_json_value(client_props)),
        None if server_props is None else _dumps(_json_value(server_props)),
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
