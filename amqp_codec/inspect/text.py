"""Reporters for ``amqp-codec decode``: what the dissector finds, as text or JSON lines.

:class:`HumanReporter` writes one indented block per frame: its stream offset, type, channel
and size, a method's name and every field, a content header's properties, a body's size and
an escaped preview; field tables nest, each value with its wire tag. :class:`JsonReporter`
writes one JSON object per line (bytes as hex; see ``amqp-codec decode --help``).

Reporters only format: the events come from :class:`~amqp_codec.inspect.dissector.StreamDissector`,
and :mod:`amqp_codec.cli` passes them on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, TextIO
from uuid import UUID

from ..base import FieldSpec, Method, Properties
from ..credentials import REDACTED, redacted_text, secret_fields
from ..frames import (
    FRAME_BODY,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    FRAME_OVERHEAD,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    MethodFrame,
    ProtocolHeader,
)
from ..protocol import ProtocolSpec
from ..table import FieldArray, FieldTable, Timestamp, tag_for
from ..wire010 import frames as wire010
from ..wire010.frames import (
    DraftBodyFrame,
    DraftFrame,
    DraftHeaderFrame,
    DraftHeartbeatFrame,
    DraftMethodFrame,
)
from ..wire010.structs import PackedStruct
from ..wire010.table import Array as DraftArray
from ..wire010.table import FieldTable as DraftFieldTable
from ..wire010.table import Typed, type_info
from .dissector import PROTOCOL_HEADER_NAME, FileStats, Problem, class_name

__all__ = [
    "HumanReporter",
    "JsonReporter",
    "Reporter",
    "display_name",
    "draft_flag_names",
    "json_struct",
]

#: Human output shows at most this many bytes (or characters) of a string field value.
STRING_PREVIEW = 256

_DETECTED_BY_TEXT = {
    "given": "given with --spec",
    "protocol header": "detected from the protocol header",
    "connection.start": "detected from connection.start's version fields",
    "assumed": "assumed: the stream starts with neither a protocol header nor connection.start",
}


class Reporter:
    """Receives what the dissector finds and writes it out."""

    def __init__(self, out: TextIO, body_preview: int, *, show_secrets: bool = False) -> None:
        self.out = out
        self.body_preview = body_preview
        #: Show credential fields (:mod:`amqp_codec.credentials`) instead of redacting them.
        self.show_secrets = show_secrets

    def start_file(self, name: str) -> None:
        """A new stream begins."""

    def spec(self, name: str, spec: ProtocolSpec, detected_by: str | None) -> None:
        """The stream's protocol version became known."""

    def frame(self, name: str, spec: ProtocolSpec, offset: int, end: int, frame: Frame) -> None:
        """One decoded frame at ``offset``; ``end`` is the offset just after it."""

    def _body_line(self, head: str, payload: bytes) -> str:
        line = head.format("BODY")
        if self.body_preview:
            shown = payload[: self.body_preview]
            line += f" {shown!r}"
            if len(payload) > len(shown):
                line += f"... (+{len(payload) - len(shown)} bytes)"
        return line

    def problem(self, name: str, problem: Problem) -> None:
        """One problem."""

    def resync(self, name: str, start: int, stop: int, resumed: bool) -> None:
        """Bytes ``start..stop-1`` were skipped; decoding resumed at ``stop`` if ``resumed``."""

    def end_file(self, stats: FileStats) -> None:
        """The stream is done."""

    def total(self, stats: Sequence[FileStats]) -> None:
        """All streams are done (called for more than one stream)."""


def display_name(name: str) -> str:
    """How a stream's name is shown: ``-`` is standard input."""
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


def _code_tag(code: int) -> str:
    """A 99-0 type code as shown in place of a 0-9 tag: its spec name (``str16``)."""
    info = type_info(code)
    return info.name if info is not None else f"0x{code:02x}"


def _table_entries(value: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    if isinstance(value, FieldTable):
        return value.entries()
    if isinstance(value, DraftFieldTable):
        return [(k, _code_tag(code), v) for k, code, v in value.entries()]
    return [(k, tag_for(v), v) for k, v in value.items()]


def _array_items(value: Sequence[Any] | DraftArray) -> list[tuple[str, Any]]:
    if isinstance(value, FieldArray):
        return list(zip(value.tags, value, strict=True))
    if isinstance(value, DraftArray):
        return [(_code_tag(value.code), v) for v in value.values]
    return [
        (_code_tag(v.code), v.value) if isinstance(v, Typed) else (tag_for(v), v) for v in value
    ]


def _ranges(value: Sequence[tuple[int, int]]) -> str:
    """An rfc1982-long-set as ``6-7, 9``."""
    if not value:
        return "(empty set)"
    return ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in value)


def _struct_fields(obj: PackedStruct) -> list[tuple[FieldSpec, Any]]:
    """A 99-0 struct's present fields (a clear bit is absent, as its packing flag says)."""
    return [
        (spec, value)
        for spec in obj.FIELDS
        if (value := getattr(obj, spec.attr)) is not None and value is not False
    ]


def draft_flag_names(flags: int) -> list[str]:
    """The segment flags set in a 99-0 frame header's flags octet, B E b e order."""
    names = (
        (wire010.FIRST_SEGMENT, "first-segment"),
        (wire010.LAST_SEGMENT, "last-segment"),
        (wire010.FIRST_FRAME, "first-frame"),
        (wire010.LAST_FRAME, "last-frame"),
    )
    return [name for bit, name in names if flags & bit]


def _draft_flags_text(flags: int) -> str:
    letters = "".join(
        c if flags & bit else "." for bit, c in zip((8, 4, 2, 1), "BEbe", strict=True)
    )
    return f"flags=0x{flags:02x}[{letters}]"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _value_lines(label: str, value: Any, indent: str, lines: list[str]) -> None:
    """Append ``label = value`` lines; tables, arrays and structs nest one level deeper."""
    if isinstance(value, PackedStruct):
        present = _struct_fields(value)
        lines.append(
            f"{indent}{label}: struct {value.NAME}, {_count(len(present), 'field', 'fields')}"
        )
        for spec, item in present:
            _value_lines(spec.name, item, indent + "    ", lines)
        return
    if isinstance(value, Mapping):
        entries = _table_entries(value)
        if not entries:
            lines.append(f"{indent}{label} = {{}} (empty table)")
            return
        lines.append(f"{indent}{label}: table, {_count(len(entries), 'entry', 'entries')}")
        for key, tag, item in entries:
            _value_lines(f"{_human_key(key)} ({tag})", item, indent + "    ", lines)
        return
    if isinstance(value, (FieldArray, DraftArray, list, tuple)):
        items = _array_items(value)
        if not items:
            lines.append(f"{indent}{label} = [] (empty array)")
            return
        lines.append(f"{indent}{label}: array, {_count(len(items), 'item', 'items')}")
        for i, (tag, item) in enumerate(items):
            _value_lines(f"[{i}] ({tag})", item, indent + "    ", lines)
        return
    lines.append(f"{indent}{label} = {_human_scalar(value)}")


def _method_lines(head: str, method: Method, show_secrets: bool = False) -> list[str]:
    """A method frame's head line and one line per field (credentials redacted unless
    ``show_secrets``)."""
    lines = [head.format("METHOD") + f" {method.NAME} ({method.CLASS_ID}.{method.METHOD_ID})"]
    hidden = frozenset() if show_secrets else secret_fields(method)
    lines += _field_lines(type(method).FIELDS, method, "    ", only_present=False, hidden=hidden)
    return lines


def _field_lines(
    specs: Sequence[FieldSpec],
    obj: Any,
    indent: str,
    only_present: bool,
    hidden: frozenset[str] = frozenset(),
) -> list[str]:
    lines: list[str] = []
    for spec in specs:
        value = getattr(obj, spec.attr)
        if only_present and value is None:
            continue
        label = spec.name
        if spec.reserved:
            label += " [reserved]"
        if spec.name in hidden:
            lines.append(f"{indent}{label} = {redacted_text(value)}")
            continue
        if spec.wire_type == "rfc1982-long-set":
            lines.append(f"{indent}{label} = {_ranges(value)}")
            continue
        _value_lines(label, value, indent, lines)
    return lines


class HumanReporter(Reporter):
    """Indented text, one block per frame."""

    def start_file(self, name: str) -> None:
        self.out.write(f"=== {display_name(name)}\n")

    def spec(self, name: str, spec: ProtocolSpec, detected_by: str | None) -> None:
        how = _DETECTED_BY_TEXT.get(detected_by or "", detected_by or "unknown")
        self.out.write(f"spec: AMQP {spec.name} ({how})\n")

    def frame(self, name: str, spec: ProtocolSpec, offset: int, end: int, frame: Frame) -> None:
        at = f"{offset:>10} 0x{offset:08x}"
        if isinstance(frame, ProtocolHeader):
            version = ".".join(map(str, frame.version_bytes))
            self.out.write(f"{at}  PROTOCOL-HEADER  AMQP {version} ({end - offset} bytes)\n")
            return
        if isinstance(
            frame, (DraftMethodFrame, DraftHeaderFrame, DraftBodyFrame, DraftHeartbeatFrame)
        ):
            self._draft_frame(at, end - offset, frame)
            return
        size = end - offset - FRAME_OVERHEAD
        head = f"{at}  {{:<9}} ch={frame.channel:<5} size={size:<7}"
        lines: list[str]
        if isinstance(frame, MethodFrame):
            lines = _method_lines(head, frame.method, self.show_secrets)
        elif isinstance(frame, ContentHeaderFrame):
            props = frame.properties
            named = class_name(spec, frame.class_id)
            cls = f"{frame.class_id}" + (f" ({named})" if named else "")
            lines = [
                head.format("HEADER")
                + f" class {cls}, body-size {frame.body_size}, weight {frame.weight}, "
                f"property flags 0x{props.flags:04x}"
            ]
            lines += _field_lines(type(props).FIELDS, props, "    ", only_present=True)
        elif isinstance(frame, ContentBodyFrame):
            lines = [self._body_line(head, frame.payload).rstrip()]
        else:
            lines = [head.format("HEARTBEAT").rstrip()]
        self.out.write("\n".join(lines) + "\n")

    def _draft_frame(self, at: str, length: int, frame: DraftFrame) -> None:
        """A 99-0 frame: as a 0-9 one, plus its segment flags and track."""
        size = length - wire010.HEADER_SIZE - 1
        head = (
            f"{at}  {{:<9}} ch={frame.channel:<5} size={size:<7} {_draft_flags_text(frame.flags)}"
        )
        if frame.track:
            head += f" track={frame.track}"
        lines: list[str]
        if isinstance(frame, DraftMethodFrame):
            lines = _method_lines(head, frame.method, self.show_secrets)
        elif isinstance(frame, DraftHeaderFrame):
            lines = [head.format("HEADER") + f" {_count(len(frame.structs), 'struct', 'structs')}"]
            for struct in frame.structs:
                lines.append(
                    f"    {struct.NAME} (type {struct.TYPE_CODE}), "
                    f"packing flags 0x{struct.flags:0{2 * struct.PACK_WIDTH}x}"
                )
                for spec, value in _struct_fields(struct):
                    _value_lines(spec.name, value, "        ", lines)
        elif isinstance(frame, DraftBodyFrame):
            lines = [self._body_line(head, frame.payload)]
        else:
            lines = [head.format("HEARTBEAT")]
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
            f"--- summary for {display_name(stats.name)}: {_count(stats.bytes, 'byte', 'bytes')}, "
            f"{_count(stats.frames, 'frame', 'frames')}, "
            f"{_count(stats.problems, 'problem', 'problems')}\n"
            f"    frames by type: {by_type}\n"
            f"    methods: {methods}\n"
            f"    problems: {stats.problems}\n"
        )

    def total(self, stats: Sequence[FileStats]) -> None:
        self.out.write(
            f"=== total: {_count(len(stats), 'stream', 'streams')}, "
            f"{_count(sum(s.bytes for s in stats), 'byte', 'bytes')}, "
            f"{_count(sum(s.frames for s in stats), 'frame', 'frames')}, "
            f"{_count(sum(s.problems for s in stats), 'problem', 'problems')}\n"
        )


def _json_str(text: str) -> Any:
    if _is_utf8(text):
        return text
    return {"hex": text.encode("utf-8", "surrogateescape").hex()}


def _json_value(value: Any) -> Any:
    """A JSON-ready value: bytes become {"hex": ...}, tables lists of entries with tags."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, PackedStruct):
        return json_struct(value)
    if isinstance(value, UUID):
        return str(value)
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
    if isinstance(value, (FieldArray, DraftArray, list, tuple)):
        return [{"tag": t, "value": _json_value(v)} for t, v in _array_items(value)]
    return repr(value)


def _json_field(spec: FieldSpec, value: Any) -> Any:
    if spec.wire_type == "rfc1982-long-set" and value is not None:
        return [[lo, hi] for lo, hi in value]
    return _json_value(value)


def json_struct(struct: PackedStruct) -> dict[str, Any]:
    """A 99-0 struct as JSON: its name, type code, packing flags and present fields."""
    return {
        "struct": struct.NAME,
        "type_code": struct.TYPE_CODE,
        "packing_flags": struct.flags,
        "fields": {spec.name: _json_field(spec, value) for spec, value in _struct_fields(struct)},
    }


class JsonReporter(Reporter):
    """One JSON object per line; every object has ``kind`` and ``file``."""

    def _fields(self, method: Method) -> dict[str, Any]:
        """A method's fields by spec name; credentials redacted unless ``show_secrets``."""
        hidden = frozenset() if self.show_secrets else secret_fields(method)
        return {
            s.name: REDACTED if s.name in hidden else _json_field(s, getattr(method, s.attr))
            for s in type(method).FIELDS
        }

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
        if isinstance(
            frame, (DraftMethodFrame, DraftHeaderFrame, DraftBodyFrame, DraftHeartbeatFrame)
        ):
            self._emit(self._draft_frame(obj, frame))
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
                fields=self._fields(method),
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
                **{"class": class_name(spec, frame.class_id)},
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

    def _draft_frame(self, obj: dict[str, Any], frame: DraftFrame) -> dict[str, Any]:
        """A 99-0 frame's object: as a 0-9 one, plus ``flags``, ``flag_names``, ``track``."""
        common = {
            "channel": frame.channel,
            "size": obj["length"] - wire010.HEADER_SIZE - 1,
            "flags": frame.flags,
            "flag_names": draft_flag_names(frame.flags),
            "track": frame.track,
        }
        if isinstance(frame, DraftMethodFrame):
            method = frame.method
            specs = type(method).FIELDS
            obj.update(
                type="method",
                type_id=wire010.FRAME_METHOD,
                **common,
                method=method.NAME,
                class_id=method.CLASS_ID,
                method_id=method.METHOD_ID,
                fields=self._fields(method),
                reserved=[s.name for s in specs if s.reserved],
            )
        elif isinstance(frame, DraftHeaderFrame):
            obj.update(
                type="header",
                type_id=wire010.FRAME_HEADER,
                **common,
                structs=[json_struct(s) for s in frame.structs],
            )
        elif isinstance(frame, DraftBodyFrame):
            shown = frame.payload[: self.body_preview]
            obj.update(
                type="body",
                type_id=wire010.FRAME_BODY,
                **common,
                payload_hex=shown.hex(),
                payload_truncated=len(shown) < len(frame.payload),
            )
        else:
            obj.update(type="heartbeat", type_id=wire010.FRAME_HEARTBEAT, **common)
        return obj

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
