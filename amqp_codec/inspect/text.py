"""``amqp-codec decode``'s text output: one indented block per frame.

:class:`HumanReporter` writes a frame's stream offset, type, channel and size, a method's name
and every field, a content header's properties, a body's size and an escaped preview; field
tables nest, each value with its wire tag. Problems and resyncs are lines of their own, and
each stream ends with a summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ..base import FieldSpec, Method
from ..credentials import redacted_text, secret_fields
from ..frames import (
    FRAME_OVERHEAD,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    MethodFrame,
    ProtocolHeader,
)
from ..protocol import ProtocolSpec
from ..table import FieldArray, Timestamp
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
from .dissector import FileStats, Problem, class_name
from .reporter import Reporter, display_name
from .values import array_items, is_utf8, struct_fields, table_entries

__all__ = ["HumanReporter"]


#: Human output shows at most this many bytes (or characters) of a string field value.
STRING_PREVIEW = 256

_DETECTED_BY_TEXT = {
    "given": "given with --spec",
    "protocol header": "detected from the protocol header",
    "connection.start": "detected from connection.start's version fields",
    "assumed": "assumed: the stream starts with neither a protocol header nor connection.start",
}


def _at(offset: int) -> str:
    return f"{offset} (0x{offset:x})"


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
        if not is_utf8(value):
            raw = value.encode("utf-8", "surrogateescape")
            return _human_bytes(raw, STRING_PREVIEW) + " (not UTF-8)"
        if len(value) > STRING_PREVIEW:
            return f"{value[:STRING_PREVIEW]!r}... ({len(value)} characters)"
        return repr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _human_bytes(bytes(value), STRING_PREVIEW)
    return repr(value)


def _human_key(key: str) -> str:
    if key and key.isprintable() and key.strip() == key and is_utf8(key):
        return key
    return _human_scalar(key)


def _ranges(value: Sequence[tuple[int, int]]) -> str:
    """An rfc1982-long-set as ``6-7, 9``."""
    if not value:
        return "(empty set)"
    return ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in value)


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
        present = struct_fields(value)
        lines.append(
            f"{indent}{label}: struct {value.NAME}, {_count(len(present), 'field', 'fields')}"
        )
        for spec, item in present:
            _value_lines(spec.name, item, indent + "    ", lines)
        return
    if isinstance(value, Mapping):
        entries = table_entries(value)
        if not entries:
            lines.append(f"{indent}{label} = {{}} (empty table)")
            return
        lines.append(f"{indent}{label}: table, {_count(len(entries), 'entry', 'entries')}")
        for key, tag, item in entries:
            _value_lines(f"{_human_key(key)} ({tag})", item, indent + "    ", lines)
        return
    if isinstance(value, (FieldArray, DraftArray, list, tuple)):
        items = array_items(value)
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

    def _body_line(self, head: str, payload: bytes) -> str:
        line = head.format("BODY")
        if self.body_preview:
            shown = payload[: self.body_preview]
            line += f" {shown!r}"
            if len(payload) > len(shown):
                line += f"... (+{len(payload) - len(shown)} bytes)"
        return line

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
                for spec, value in struct_fields(struct):
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
