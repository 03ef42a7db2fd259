"""The ``amqp-codec`` command line: a packet-dissector view of captured AMQP byte streams.

``amqp-codec decode FILE [FILE ...]`` reads raw captures (one direction of one connection,
as ``tools/record_proxy.py`` writes them) and prints every frame: its stream offset, type,
channel and size, a method's name and every field, a content header's properties, a body's
size and an escaped preview. Field tables are shown nested, each value with its wire tag.

Problems are shown, not fatal: a decode error is printed as a ``!!! PROBLEM`` line, the tool
resynchronises on the next plausible frame start (see :meth:`StreamDissector._scan`) and
carries on. ``--json`` prints one JSON object per line instead (bytes as hex, see
``amqp-codec decode --help``). Exit status: 0 no problems, 1 problems found, 2 usage or I/O
error.

Streams are read in 64 KiB chunks and fed to a :class:`~amqp_codec.FrameDecoder`; memory
stays bounded by the largest frame (plus a chunk), not the size of the capture.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import struct
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, BinaryIO, TextIO

from . import v0_9_1
from .base import FieldSpec, Method, Properties
from .decoder import NEED_DATA, FrameDecoder
from .errors import AMQPDecodeError, UnexpectedFrameError, UnsupportedProtocolError
from .frames import (
    FRAME_BODY,
    FRAME_END,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    FRAME_OVERHEAD,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
)
from .protocol import ProtocolSpec
from .table import FieldArray, FieldTable, Timestamp, tag_for

__all__ = ["main"]

#: Bytes read from a capture at a time.
CHUNK_SIZE = 64 * 1024
#: Default number of body bytes shown per body frame.
DEFAULT_BODY_PREVIEW = 64
#: Human output shows at most this many bytes (or characters) of a string field value.
STRING_PREVIEW = 256
#: After a decode error, a candidate frame start with a payload larger than this is not
#: believed unless --frame-max (or a connection.tune / tune-ok seen in the stream) allows it.
RESYNC_MAX_PAYLOAD = 1024 * 1024

#: The protocol versions --spec accepts; "detect" lets the decoder find out.
SPECS: dict[str, ProtocolSpec] = {"0-9-1": v0_9_1.SPEC}
DEFAULT_SPEC: ProtocolSpec = v0_9_1.SPEC

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2

FRAME_TYPE_NAMES = {
    FRAME_METHOD: "method",
    FRAME_HEADER: "header",
    FRAME_BODY: "body",
    FRAME_HEARTBEAT: "heartbeat",
}
PROTOCOL_HEADER_NAME = "protocol-header"

_DETECTED_BY_TEXT = {
    "given": "given with --spec",
    "protocol header": "detected from the protocol header",
    "connection.start": "detected from connection.start's version fields",
    "assumed": "assumed: the stream starts with neither a protocol header nor connection.start",
}

_SEQUENCE = "content-sequence"
_unpack_frame_header = struct.Struct(">BHI").unpack_from
# Resync: a frame can only start on one of the known frame-type octets.
_FRAME_TYPE_OCTET = re.compile(b"[\x01\x02\x03\x08]")


# ------------------------------------------------------------------------------------------
# What the dissector finds
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem in a stream: a decode error, or a broken content sequence."""

    offset: int
    """Stream offset where the problem was found (inside the frame when known)."""
    frame_offset: int
    """Stream offset of the frame that was being decoded."""
    reason: str
    error: str
    """Exception class name (``FrameError``) or ``ContentSequence``."""
    reply_code: int | None
    reply_name: str | None
    channel: int | None
    class_id: int
    method_id: int
    method: str | None
    """Method name (or ``class N`` / ``N.M`` when not a known method), if known."""
    field: str | None
    source: str = "decoder"
    """``decoder`` (the FrameDecoder raised it) or ``content-sequence`` (the CLI's own check)."""
    note: str | None = None


@dataclass(slots=True)
class FileStats:
    """Counts for one stream."""

    name: str
    bytes: int = 0
    frames: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    methods: Counter[str] = field(default_factory=Counter)
    problems: int = 0
    spec: str | None = None
    detected_by: str | None = None


def _class_name(spec: ProtocolSpec, class_id: int) -> str | None:
    for (cid, _mid), cls in spec.methods.items():
        if cid == class_id:
            return cls.NAME.split(".", 1)[0]
    return None


def _method_label(spec: ProtocolSpec, class_id: int, method_id: int) -> str | None:
    if not class_id:
        return None
    cls = spec.method_class(class_id, method_id)
    if cls is not None:
        return cls.NAME
    if not method_id:
        name = _class_name(spec, class_id)
        return f"class {class_id}" + (f" ({name})" if name else "")
    return f"{class_id}.{method_id}"


def _printable(text: str) -> str:
    """``text`` with undecodable bytes as \\xNN and control characters escaped."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _problem_from_error(
    exc: AMQPDecodeError,
    spec: ProtocolSpec,
    frame_offset: int,
    base: int,
    note: str | None = None,
    source: str = "decoder",
) -> Problem:
    offset = frame_offset if exc.offset is None else base + exc.offset
    code = exc.reply_code
    return Problem(
        offset=offset,
        frame_offset=frame_offset,
        reason=_printable(exc.reason),
        error=type(exc).__name__,
        reply_code=code,
        reply_name=spec.reply_names.get(code) if code is not None else None,
        channel=exc.channel,
        class_id=exc.class_id,
        method_id=exc.method_id,
        method=_method_label(spec, exc.class_id, exc.method_id),
        field=None if exc.field is None else _printable(exc.field),
        source=source,
        note=note,
    )


# ------------------------------------------------------------------------------------------
# Content sequence: method -> header -> body frames, per channel
# ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Content:
    method: Method
    body_size: int | None = None  # None until the content header arrives
    received: int = 0


class ContentTracker:
    """Checks that content methods, headers and bodies come in order on each channel.

    Only byte counts are kept (never bodies), so memory does not grow with message size.
    A stream that starts mid-connection, or one where frames were lost to a
    resynchronisation, has channels in an unknown state: they are not checked until their
    next method frame.
    """

    def __init__(self) -> None:
        self._pending: dict[int, _Content] = {}
        self._all_known = True
        self._known: set[int] = set()

    def forget(self) -> None:
        """Frames may have been lost: stop checking channels until their next method."""
        self._pending.clear()
        self._all_known = False
        self._known.clear()

    def check(self, frame: Frame) -> UnexpectedFrameError | None:
        """The content-sequence error ``frame`` makes, if any."""
        if isinstance(frame, MethodFrame):
            channel, method = frame.channel, frame.method
            error = None
            pending = self._pending.pop(channel, None)
            if pending is not None:
                error = self._unexpected(
                    f"{method.NAME} arrived before the content of {pending.method.NAME} was "
                    f"complete ({self._progress(pending)})",
                    channel,
                    method,
                )
            if method.HAS_CONTENT:
                self._pending[channel] = _Content(method)
            self._known.add(channel)
            return error
        if isinstance(frame, ContentHeaderFrame):
            channel = frame.channel
            if not (self._all_known or channel in self._known):
                return None
            pending = self._pending.get(channel)
            if pending is None or pending.body_size is not None:
                self._pending.pop(channel, None)
                return self._unexpected(
                    "content header without a content method before it", channel
                )
            if frame.class_id != pending.method.CLASS_ID:
                del self._pending[channel]
                return self._unexpected(
                    f"content header for class {frame.class_id} after {pending.method.NAME}",
                    channel,
                    pending.method,
                )
            pending.body_size = frame.body_size
            if frame.body_size == 0:
                del self._pending[channel]
            return None
        if isinstance(frame, ContentBodyFrame):
            channel = frame.channel
            if not (self._all_known or channel in self._known):
                return None
            pending = self._pending.get(channel)
            if pending is None or pending.body_size is None:
                self._pending.pop(channel, None)
                return self._unexpected("content body without a content header before it", channel)
            pending.received += len(frame.payload)
            if pending.received > pending.body_size:
                del self._pending[channel]
                return self._unexpected(
                    f"content body frames add up to {pending.received} bytes, more than the "
                    f"announced {pending.body_size}",
                    channel,
                    pending.method,
                )
            if pending.received == pending.body_size:
                del self._pending[channel]
        return None

    def unfinished(self) -> list[UnexpectedFrameError]:
        """Messages still incomplete at the end of the stream."""
        return [
            self._unexpected(
                f"stream ended before the content of {pending.method.NAME} was complete "
                f"({self._progress(pending)})",
                channel,
                pending.method,
            )
            for channel, pending in sorted(self._pending.items())
        ]

    @staticmethod
    def _progress(pending: _Content) -> str:
        if pending.body_size is None:
            return "no content header yet"
        return f"{pending.received} of {pending.body_size} body bytes"

    @staticmethod
    def _unexpected(
        reason: str, channel: int, method: Method | None = None
    ) -> UnexpectedFrameError:
        return UnexpectedFrameError(
            reason,
            channel=channel,
            class_id=method.CLASS_ID if method else 0,
            method_id=method.METHOD_ID if method else 0,
        )


# ------------------------------------------------------------------------------------------
# Reporters: human text or JSON lines
# ------------------------------------------------------------------------------------------


class Reporter:
    """Receives what the dissector finds and writes it out."""

    def __init__(self, out: TextIO, body_preview: int) -> None:
        self.out = out
        self.body_preview = body_preview

    def start_file(self, name: str) -> None:
        """A new stream begins."""

    def spec(self, name: str, spec: ProtocolSpec, detected_by: str | None) -> None:
        """The stream's protocol version became known."""

    def frame(self, name: str, spec: ProtocolSpec, offset: int, end: int, frame: Frame) -> None:
        """One decoded frame at ``offset``; ``end`` is the offset just after it."""

    def problem(self, name: str, problem: Problem) -> None:
        """One problem."""

    def resync(self, name: str, start: int, stop: int, resumed: bool) -> None:
        """Bytes ``start..stop-1`` were skipped; decoding resumed at ``stop`` if ``resumed``."""

    def end_file(self, stats: FileStats) -> None:
        """The stream is done."""

    def total(self, stats: Sequence[FileStats]) -> None:
        """All streams are done (called for more than one stream)."""


def _display_name(name: str) -> str:
    return "<stdin>" if name == "-" else name


def _at(offset: int) -> str:
    return f"{offset} (0x{offset:x})"


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _human_bytes(raw: bytes, limit: int) -> str:
    if len(raw) > limit:
        return f"{raw[:limit]!r}... ({len(raw)} bytes)"
    return repr(raw)


def _human_scalar(value: Any) -> str:
    if isinstance(value, Timestamp):
        try:
            when = value.to_datetime().strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, ValueError):
            when = "outside the datetime range"
        return f"{int(value)} ({when})"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, str):
        if not _is_utf8(value):
            raw = value.encode("utf-8", "surrogateescape")
            return _human_bytes(raw, STRING_PREVIEW) + " (not UTF-8)"
        if len(value) > STRING_PREVIEW:
            return f"{value[:STRING_PREVIEW]!r}... ({len(value)} characters)"
        return repr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _human_bytes(bytes(value), STRING_PREVIEW)
    return repr(value)


def _human_key(key: str) -> str:
    if key and key.isprintable() and key.strip() == key and _is_utf8(key):
        return key
    return _human_scalar(key)


def _table_entries(value: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    if isinstance(value, FieldTable):
        return value.entries()
    return [(k, tag_for(v), v) for k, v in value.items()]


def _array_items(value: Sequence[Any]) -> list[tuple[str, Any]]:
    if isinstance(value, FieldArray):
        return list(zip(value.tags, value, strict=True))
    return [(tag_for(v), v) for v in value]


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _value_lines(label: str, value: Any, indent: str, lines: list[str]) -> None:
    """Append ``label = value`` lines; tables and arrays nest one level deeper."""
    if isinstance(value, Mapping):
        entries = _table_entries(value)
        if not entries:
            lines.append(f"{indent}{label} = {{}} (empty table)")
            return
        lines.append(f"{indent}{label}: table, {_count(len(entries), 'entry', 'entries')}")
        for key, tag, item in entries:
            _value_lines(f"{_human_key(key)} ({tag})", item, indent + "    ", lines)
        return
    if isinstance(value, (FieldArray, list, tuple)):
        items = _array_items(value)
        if not items:
            lines.append(f"{indent}{label} = [] (empty array)")
            return
        lines.append(f"{indent}{label}: array, {_count(len(items), 'item', 'items')}")
        for i, (tag, item) in enumerate(items):
            _value_lines(f"[{i}] ({tag})", item, indent + "    ", lines)
        return
    lines.append(f"{indent}{label} = {_human_scalar(value)}")


def _field_lines(
    specs: Sequence[FieldSpec], obj: Any, indent: str, only_present: bool
) -> list[str]:
    lines: list[str] = []
    for spec in specs:
        value = getattr(obj, spec.attr)
        if only_present and value is None:
            continue
        label = spec.name
        if spec.reserved:
            label += " [reserved]"
        _value_lines(label, value, indent, lines)
    return lines


class HumanReporter(Reporter):
    """Indented text, one block per frame."""

    def start_file(self, name: str) -> None:
        self.out.write(f"=== {_display_name(name)}\n")

    def spec(self, name: str, spec: ProtocolSpec, detected_by: str | None) -> None:
        how = _DETECTED_BY_TEXT.get(detected_by or "", detected_by or "unknown")
        self.out.write(f"spec: AMQP {spec.name} ({how})\n")

    def frame(self, name: str, spec: ProtocolSpec, offset: int, end: int, frame: Frame) -> None:
        at = f"{offset:>10} 0x{offset:08x}"
        if isinstance(frame, ProtocolHeader):
            version = ".".join(map(str, frame.version_bytes))
            self.out.write(f"{at}  PROTOCOL-HEADER  AMQP {version} ({end - offset} bytes)\n")
            return
        size = end - offset - FRAME_OVERHEAD
        head = f"{at}  {{:<9}} ch={frame.channel:<5} size={size:<7}"
        lines: list[str]
        if isinstance(frame, MethodFrame):
            method = frame.method
            lines = [
                head.format("METHOD") + f" {method.NAME} ({method.CLASS_ID}.{method.METHOD_ID})"
            ]
            lines += _field_lines(type(method).FIELDS, method, "    ", only_present=False)
        elif isinstance(frame, ContentHeaderFrame):
            props = frame.properties
            class_name = _class_name(spec, frame.class_id)
            cls = f"{frame.class_id}" + (f" ({class_name})" if class_name else "")
            lines = [
                head.format("HEADER")
                + f" class {cls}, body-size {frame.body_size}, weight {frame.weight}, "
                f"property flags 0x{props.flags:04x}"
            ]
            lines += _field_lines(type(props).FIELDS, props, "    ", only_present=True)
        elif isinstance(frame, ContentBodyFrame):
            payload = frame.payload
            line = head.format("BODY")
            if self.body_preview:
                shown = payload[: self.body_preview]
                line += f" {shown!r}"
                if len(payload) > len(shown):
                    line += f"... (+{len(payload) - len(shown)} bytes)"
            lines = [line.rstrip()]
        else:
            lines = [head.format("HEARTBEAT").rstrip()]
        self.out.write("\n".join(lines) + "\n")

    def problem(self, name: str, problem: Problem) -> None:
        if problem.reply_code is None:
            code = "no reply code"
        else:
            code = f"{problem.reply_code} {problem.reply_name or '?'}"
        channel = "-" if problem.channel is None else str(problem.channel)
        self.out.write(
            f"!!! PROBLEM at {_at(problem.offset)} [{code}] {problem.reason}\n"
            f"    {problem.error} ({problem.source}): frame at {_at(problem.frame_offset)}, "
            f"channel {channel}, method {problem.method or '-'}, field {problem.field or '-'}\n"
        )
        if problem.note:
            self.out.write(f"    {problem.note}\n")

    def resync(self, name: str, start: int, stop: int, resumed: bool) -> None:
        skipped = stop - start
        if resumed:
            self.out.write(
                f"~~~ RESYNC: skipped {skipped} bytes ({_at(start)} to {_at(stop - 1)}), "
                f"resuming at {_at(stop)}\n"
            )
        else:
            self.out.write(
                f"~~~ RESYNC: no plausible frame start in the last {skipped} bytes "
                f"(from {_at(start)}); skipped to the end of the stream\n"
            )

    def end_file(self, stats: FileStats) -> None:
        by_type = ", ".join(f"{k} {v}" for k, v in sorted(stats.by_type.items())) or "none"
        methods = ", ".join(f"{k} {v}" for k, v in sorted(stats.methods.items())) or "none"
        self.out.write(
            f"--- summary for {_display_name(stats.name)}: {stats.bytes} bytes, "
            f"{_count(stats.frames, 'frame', 'frames')}, "
            f"{_count(stats.problems, 'problem', 'problems')}\n"
            f"    frames by type: {by_type}\n"
            f"    methods: {methods}\n"
            f"    problems: {stats.problems}\n"
        )

    def total(self, stats: Sequence[FileStats]) -> None:
        self.out.write(
            f"=== total: {len(stats)} streams, {sum(s.bytes for s in stats)} bytes, "
            f"{sum(s.frames for s in stats)} frames, {sum(s.problems for s in stats)} problems\n"
        )


def _json_str(text: str) -> Any:
    if _is_utf8(text):
        return text
    return {"hex": text.encode("utf-8", "surrogateescape").hex()}


def _json_value(value: Any) -> Any:
    """A JSON-ready value: bytes become {"hex": ...}, tables lists of entries with tags."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, str):
        return _json_str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, Mapping):
        return [
            {"key": _json_str(k), "tag": t, "value": _json_value(v)}
            for k, t, v in _table_entries(value)
        ]
    if isinstance(value, (FieldArray, list, tuple)):
        return [{"tag": t, "value": _json_value(v)} for t, v in _array_items(value)]
    return repr(value)


class JsonReporter(Reporter):
    """One JSON object per line; every object has ``kind`` and ``file``."""

    def _emit(self, obj: dict[str, Any]) -> None:
        self.out.write(json.dumps(obj, allow_nan=False, separators=(",", ":")) + "\n")

    def spec(self, name: str, spec: ProtocolSpec, detected_by: str | None) -> None:
        self._emit({"kind": "spec", "file": name, "spec": spec.name, "detected_by": detected_by})

    def frame(self, name: str, spec: ProtocolSpec, offset: int, end: int, frame: Frame) -> None:
        obj: dict[str, Any] = {"kind": "frame", "file": name, "offset": offset}
        obj["length"] = end - offset
        if isinstance(frame, ProtocolHeader):
            obj.update(
                type=PROTOCOL_HEADER_NAME,
                type_id=None,
                channel=None,
                size=None,
                protocol_id=frame.protocol_id,
                version=[frame.major, frame.minor, frame.revision],
            )
            self._emit(obj)
            return
        size = end - offset - FRAME_OVERHEAD
        if isinstance(frame, MethodFrame):
            method = frame.method
            specs = type(method).FIELDS
            obj.update(
                type="method",
                type_id=FRAME_METHOD,
                channel=frame.channel,
                size=size,
                method=method.NAME,
                class_id=method.CLASS_ID,
                method_id=method.METHOD_ID,
                fields={s.name: _json_value(getattr(method, s.attr)) for s in specs},
                reserved=[s.name for s in specs if s.reserved],
            )
        elif isinstance(frame, ContentHeaderFrame):
            props = frame.properties
            obj.update(
                type="header",
                type_id=FRAME_HEADER,
                channel=frame.channel,
                size=size,
                class_id=frame.class_id,
                **{"class": _class_name(spec, frame.class_id)},
                body_size=frame.body_size,
                weight=frame.weight,
                property_flags=props.flags,
                properties=_json_properties(props),
            )
        elif isinstance(frame, ContentBodyFrame):
            shown = frame.payload[: self.body_preview]
            obj.update(
                type="body",
                type_id=FRAME_BODY,
                channel=frame.channel,
                size=size,
                payload_hex=shown.hex(),
                payload_truncated=len(shown) < len(frame.payload),
            )
        else:
            obj.update(type="heartbeat", type_id=FRAME_HEARTBEAT, channel=frame.channel, size=size)
        self._emit(obj)

    def problem(self, name: str, problem: Problem) -> None:
        self._emit(
            {
                "kind": "problem",
                "file": name,
                "offset": problem.offset,
                "frame_offset": problem.frame_offset,
                "reply_code": problem.reply_code,
                "reply_name": problem.reply_name,
                "error": problem.error,
                "source": problem.source,
                "reason": problem.reason,
                "channel": problem.channel,
                "class_id": problem.class_id,
                "method_id": problem.method_id,
                "method": problem.method,
                "field": problem.field,
                "note": problem.note,
            }
        )

    def resync(self, name: str, start: int, stop: int, resumed: bool) -> None:
        self._emit(
            {
                "kind": "resync",
                "file": name,
                "skipped_from": start,
                "skipped_to": stop,
                "skipped": stop - start,
                "resumed": resumed,
            }
        )

    def end_file(self, stats: FileStats) -> None:
        self._emit(
            {
                "kind": "summary",
                "file": stats.name,
                "spec": stats.spec,
                "detected_by": stats.detected_by,
                "bytes": stats.bytes,
                "frames": stats.frames,
                "frames_by_type": dict(sorted(stats.by_type.items())),
                "methods": dict(sorted(stats.methods.items())),
                "problems": stats.problems,
            }
        )

    def total(self, stats: Sequence[FileStats]) -> None:
        self._emit(
            {
                "kind": "total",
                "files": [s.name for s in stats],
                "bytes": sum(s.bytes for s in stats),
                "frames": sum(s.frames for s in stats),
                "problems": sum(s.problems for s in stats),
            }
        )


def _json_properties(props: Properties) -> dict[str, Any]:
    present: dict[str, Any] = {}
    for spec in type(props).FIELDS:
        value = getattr(props, spec.attr)
        if value is not None:
            present[spec.name] = _json_value(value)
    return present


# ------------------------------------------------------------------------------------------
# The dissector: decoder + resynchronisation for one stream
# ------------------------------------------------------------------------------------------


class StreamDissector:
    """Decode one captured stream, fed in chunks, reporting frames and problems.

    The stream's bytes from the start of the frame being decoded onwards are kept in a
    window (the decoder holds its own copy, which is private); after a decode error the
    window is where resynchronisation scans. Decoded and skipped bytes are dropped from it
    after every chunk, so it holds at most one frame (or one resync candidate, see
    :data:`RESYNC_MAX_PAYLOAD`) plus one chunk.
    """

    def __init__(
        self, name: str, reporter: Reporter, spec: ProtocolSpec | None, frame_max: int
    ) -> None:
        self.name = name
        self.reporter = reporter
        self.frame_max = frame_max
        self.stats = FileStats(name)
        self.tracker = ContentTracker()
        self._decoder = FrameDecoder(spec, frame_max=frame_max or None)
        self._decoder_base = 0  # stream offset where the current decoder started
        self._window = bytearray()
        self._window_base = 0  # stream offset of _window[0]
        self._spec: ProtocolSpec | None = spec
        self._spec_reported = False
        self._scanning = False
        self._scan_pos = 0  # next candidate frame start (stream offset)
        self._skip_start = 0  # where the bytes being skipped began
        self._done = False  # nothing more to decode: unsupported protocol, or skipped to end
        self._eof = False
        self._tuned_frame_max = 0

    # -- input ----------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """The next chunk of the stream."""
        if not data:
            return
        self.stats.bytes += len(data)
        if self._done:
            return
        self._window += data
        if not self._scanning:
            self._decoder.receive_data(data)
        self._run()

    def finish(self) -> FileStats:
        """The stream ended: report a truncated tail and unfinished messages."""
        self._eof = True
        if not self._done:
            if not self._scanning:
                self._decoder.receive_data(b"")
            self._run()
        for error in self.tracker.unfinished():
            self._report_problem(
                _problem_from_error(
                    error, self._spec or DEFAULT_SPEC, self.stats.bytes, 0, source=_SEQUENCE
                )
            )
        if self._spec is not None:
            self.stats.spec = self._spec.name
        return self.stats

    def _run(self) -> None:
        # A loop rather than mutual recursion: a stream may need thousands of resyncs.
        while not self._done:
            progressed = self._scan() if self._scanning else self._drain()
            if not progressed:
                return

    # -- decoding ---------------------------------------------------------------------------

    def _drain(self) -> bool:
        """Take frames until the decoder needs data (False) or fails (True: now scanning)."""
        decoder = self._decoder
        base = self._decoder_base
        while True:
            start = base + decoder.offset
            try:
                frame = decoder.next_frame()
            except AMQPDecodeError as exc:
                self._note_spec(decoder)
                return self._decode_failed(exc, start, base)
            except Exception as exc:  # a codec bug: report it like a problem, keep going
                self._note_spec(decoder)
                error = AMQPDecodeError(
                    f"decoder crashed with {type(exc).__name__}: {exc} (a bug in amqp-codec)",
                    reply_code=None,
                    offset=start - base,
                )
                return self._decode_failed(error, start, base)
            if frame is NEED_DATA:
                self._trim(base + decoder.offset)
                return False
            self._note_spec(decoder)
            self._frame(frame, start, base + decoder.offset)

    def _note_spec(self, decoder: FrameDecoder) -> None:
        if self._spec_reported or decoder.spec is None:
            return
        self._spec_reported = True
        self._spec = decoder.spec
        self.stats.detected_by = decoder.detected_by
        self.reporter.spec(self.name, decoder.spec, decoder.detected_by)

    def _frame(self, frame: Frame, start: int, end: int) -> None:
        spec = self._spec or DEFAULT_SPEC
        stats = self.stats
        if stats.frames == 0 and not stats.problems:
            # Content sequence can only be checked from the start of a connection.
            starts = isinstance(frame, ProtocolHeader) or (
                isinstance(frame, MethodFrame) and frame.method.NAME == "connection.start"
            )
            if not starts:
                self.tracker.forget()
        stats.frames += 1
        if isinstance(frame, ProtocolHeader):
            stats.by_type[PROTOCOL_HEADER_NAME] += 1
        elif isinstance(frame, MethodFrame):
            stats.by_type["method"] += 1
            stats.methods[frame.method.NAME] += 1
            if frame.method.NAME in ("connection.tune", "connection.tune-ok"):
                self._tuned_frame_max = int(getattr(frame.method, "frame_max", 0) or 0)
        elif isinstance(frame, ContentHeaderFrame):
            stats.by_type["header"] += 1
        elif isinstance(frame, ContentBodyFrame):
            stats.by_type["body"] += 1
        elif isinstance(frame, HeartbeatFrame):
            stats.by_type["heartbeat"] += 1
        self.reporter.frame(self.name, spec, start, end, frame)
        error = self.tracker.check(frame)
        if error is not None:
            self._report_problem(_problem_from_error(error, spec, start, 0, source=_SEQUENCE))

    def _report_problem(self, problem: Problem) -> None:
        self.stats.problems += 1
        self.reporter.problem(self.name, problem)

    def _decode_failed(self, exc: AMQPDecodeError, start: int, base: int) -> bool:
        spec = self._decoder.spec
        fatal = isinstance(exc, UnsupportedProtocolError) and spec is None
        note = None
        if fatal:
            note = (
                "the rest of the stream is not decoded; "
                "use --spec 0-9-1 to decode it as AMQP 0-9-1 anyway"
            )
        self._report_problem(_problem_from_error(exc, spec or DEFAULT_SPEC, start, base, note))
        self.tracker.forget()
        if fatal:
            self._done = True
            self._window = bytearray()
            return False
        if self._spec is None:
            self._spec = spec or DEFAULT_SPEC
        self._scanning = True
        self._skip_start = start
        self._scan_pos = start + 1
        return True

    # -- resynchronisation ------------------------------------------------------------------

    def _resync_limit(self) -> int:
        if self.frame_max:
            return self.frame_max - FRAME_OVERHEAD
        return max(RESYNC_MAX_PAYLOAD, self._tuned_frame_max - FRAME_OVERHEAD)

    def _scan(self) -> bool:
        """Look for the next plausible frame start; True once decoding resumed there.

        Heuristic: a candidate at offset p is believed when

        * its first octet is a known frame type (1 method, 2 header, 3 body, 8 heartbeat);
        * its 4-byte size is at most the frame_max payload (``--frame-max``, else the larger
          of 1 MiB and a frame_max seen in connection.tune/tune-ok): a corrupted length would
          otherwise make the scan wait for megabytes;
        * the octet at p + 7 + size is the frame end 0xCE;
        * and the frame decodes on its own with the stream's spec: a known method with
          well-formed arguments on a channel allowed for its class, a content header for a
          class with content on a non-zero channel, a body on a non-zero channel, a heartbeat
          on channel 0 with no payload.

        A fresh FrameDecoder for the stream's spec then takes over at p (the failed one stays
        failed). A candidate whose end is not received yet is waited for; at the end of the
        stream it is passed over. Payload bytes that happen to look like a frame are a
        false positive this cannot rule out; they show up as frames inside the skipped range.
        """
        window = self._window
        base = self._window_base
        spec = self._spec or DEFAULT_SPEC
        limit = self._resync_limit()
        n = len(window)
        pos = self._scan_pos - base
        while True:
            match = _FRAME_TYPE_OCTET.search(window, pos)
            if match is None:
                pos = n
                break
            pos = match.start()
            if pos + 7 > n:
                break
            frame_type, channel, size = _unpack_frame_header(window, pos)
            if size > limit or not _header_plausible(frame_type, channel, size):
                pos += 1
                continue
            end = pos + 7 + size
            if end >= n:
                if self._eof:
                    pos += 1
                    continue
                break  # wait for the rest of this candidate
            if window[end] != FRAME_END or not self._decodes(bytes(window[pos : end + 1]), spec):
                pos += 1
                continue
            self._resume(base + pos, spec)
            return True
        self._scan_pos = base + pos
        if self._eof:
            self.reporter.resync(self.name, self._skip_start, base + n, resumed=False)
            self._trim(base + n)
            self._done = True
            return False
        self._trim(self._scan_pos)
        return False

    def _decodes(self, candidate: bytes, spec: ProtocolSpec) -> bool:
        trial = FrameDecoder(spec, frame_max=self.frame_max or None)
        trial.receive_data(candidate)
        try:
            return trial.next_frame() is not NEED_DATA
        except Exception:  # AMQPDecodeError, or a codec bug: either way not believable
            return False

    def _resume(self, offset: int, spec: ProtocolSpec) -> None:
        self.reporter.resync(self.name, self._skip_start, offset, resumed=True)
        self._trim(offset)
        decoder = FrameDecoder(spec, frame_max=self.frame_max or None)
        if self._window:
            decoder.receive_data(bytes(self._window))
        if self._eof:
            decoder.receive_data(b"")
        self._decoder = decoder
        self._decoder_base = offset
        self._scanning = False

    def _trim(self, offset: int) -> None:
        """Drop window bytes before stream ``offset``."""
        drop = offset - self._window_base
        if drop > 0:
            del self._window[:drop]
            self._window_base = offset


def _header_plausible(frame_type: int, channel: int, size: int) -> bool:
    if frame_type == FRAME_METHOD:
        return size >= 4
    if frame_type == FRAME_HEADER:
        return channel != 0 and size >= 14
    if frame_type == FRAME_BODY:
        return channel != 0
    if frame_type == FRAME_HEARTBEAT:
        return channel == 0 and size == 0
    return False


# ------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------

_DECODE_EPILOG = """\
output:
  Each frame starts with its stream offset in decimal and hex, its type, channel and
  payload size. Methods list every field as name = value ([reserved] marks reserved
  fields); content headers list every present property; field tables nest, each value
  with its wire tag, e.g. "x-max-length (I) = 10". Problems are lines starting with
  "!!! PROBLEM" (reply code, offset, channel, method, field path); "~~~ RESYNC" lines
  say which bytes were skipped to find the next plausible frame. Besides decoder errors,
  content out of sequence on a channel (a body without a header, a method before the
  previous message's body is complete, a message unfinished at the end) is a problem
  with reply code 505 and source "content-sequence".

resynchronisation:
  After a decode error the bytes from the failed frame's start + 1 are scanned for a
  frame start: a known frame type octet, a size within --frame-max (else 1 MiB, or a
  larger frame_max seen in connection.tune/tune-ok), 0xCE at the end, and a frame that
  decodes on its own. A fresh decoder with the stream's spec resumes there. A frame cut
  off by the end of the stream is a problem too.

--json:
  One JSON object per line, each with "kind" ("spec", "frame", "problem", "resync",
  "summary", "total") and "file". Frames have offset, length (bytes on the wire), type,
  type_id, channel, size (payload bytes); methods add method, class_id, method_id,
  fields (by spec name) and reserved (names of reserved fields); headers add class_id,
  class, body_size, weight, property_flags and properties (present ones only); bodies add
  payload_hex (the first --max-body-preview bytes) and payload_truncated. Bytes are hex:
  every bytes value (long strings, 'x' values, non-UTF-8 strings) is {"hex": "..."}.
  Field tables are lists of {"key", "tag", "value"}, arrays lists of {"tag", "value"};
  decimals are strings, timestamps integers, NaN and infinities the strings "nan",
  "inf", "-inf".

exit status:
  0 no problems, 1 problems found, 2 usage or I/O error.
"""


def _positive_frame_max(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value != 0 and not FRAME_OVERHEAD < value <= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(
            f"frame_max must be 0 (no limit) or {FRAME_OVERHEAD + 1}..{0xFFFFFFFF}"
        )
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``amqp-codec`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="amqp-codec", description="Tools for the amqp-codec AMQP 0-9-1 codec."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    decode = commands.add_parser(
        "decode",
        help="dissect captured raw AMQP byte streams frame by frame",
        description=(
            "Print captured raw AMQP byte streams (one direction of one connection each, "
            "as tools/record_proxy.py writes them) frame by frame."
        ),
        epilog=_DECODE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    decode.add_argument(
        "files", nargs="+", metavar="FILE", help="capture file; - reads standard input"
    )
    decode.add_argument(
        "--spec",
        choices=["detect", *SPECS],
        default="detect",
        help="protocol version (default: detect from the protocol header or connection.start)",
    )
    decode.add_argument(
        "--frame-max",
        type=_positive_frame_max,
        default=0,
        metavar="N",
        help="negotiated frame_max: larger frames are problems (default 0: no limit)",
    )
    decode.add_argument("--json", action="store_true", help="one JSON object per line")
    decode.add_argument(
        "--max-body-preview",
        type=_non_negative,
        default=DEFAULT_BODY_PREVIEW,
        metavar="N",
        help=f"body bytes shown per body frame (default {DEFAULT_BODY_PREVIEW}; 0: none)",
    )
    return parser


class _ReadError(Exception):
    """Reading a capture failed (as opposed to writing the output)."""


def _chunks(stream: BinaryIO) -> Iterator[bytes]:
    # read1 returns what is available, so a live pipe is shown as it arrives.
    read: Callable[[int], bytes] = getattr(stream, "read1", stream.read)
    while True:
        try:
            chunk = read(CHUNK_SIZE)
        except OSError as exc:
            raise _ReadError(str(exc)) from exc
        if not chunk:
            return
        yield chunk


def _open(name: str) -> BinaryIO:
    if name == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:
            raise OSError("standard input is not available as bytes")
        return stdin  # type: ignore[no-any-return]
    return open(name, "rb")


def _decode_one(
    name: str, reporter: Reporter, spec: ProtocolSpec | None, frame_max: int, err: TextIO
) -> FileStats | None:
    try:
        stream = _open(name)
    except OSError as exc:
        err.write(f"amqp-codec: cannot read {_display_name(name)}: {exc}\n")
        return None
    reporter.start_file(name)
    dissector = StreamDissector(name, reporter, spec, frame_max)
    try:
        for chunk in _chunks(stream):
            dissector.feed(chunk)
    except _ReadError as exc:
        err.write(f"amqp-codec: cannot read {_display_name(name)}: {exc}\n")
        return None
    finally:
        if name != "-":
            stream.close()
    stats = dissector.finish()
    reporter.end_file(stats)
    return stats


def _decode(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    spec = None if args.spec == "detect" else SPECS[args.spec]
    reporter: Reporter
    if args.json:
        reporter = JsonReporter(out, args.max_body_preview)
    else:
        reporter = HumanReporter(out, args.max_body_preview)
    results: list[FileStats] = []
    io_error = False
    for name in args.files:
        stats = _decode_one(name, reporter, spec, args.frame_max, err)
        if stats is None:
            io_error = True
        else:
            results.append(stats)
        out.flush()
    if len(args.files) > 1:
        reporter.total(results)
    if io_error:
        return EXIT_ERROR
    return EXIT_PROBLEMS if any(s.problems for s in results) else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Run ``amqp-codec``; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    out, err = sys.stdout, sys.stderr
    try:
        status = _decode(args, out, err)
        out.flush()
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, and keep the interpreter from
        # complaining when it flushes stdout at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_ERROR
    return status
