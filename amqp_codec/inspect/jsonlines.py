"""``amqp-codec decode --json``: one JSON object per line (see ``amqp-codec decode --help``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..base import Method
from ..credentials import REDACTED, secret_fields
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
from ..wire010 import frames as wire010
from ..wire010.frames import (
    DraftBodyFrame,
    DraftFrame,
    DraftHeaderFrame,
    DraftHeartbeatFrame,
    DraftMethodFrame,
)
from .dissector import PROTOCOL_HEADER_NAME, FileStats, Problem, class_name
from .reporter import Reporter
from .values import draft_flag_names, json_field, json_properties_and_flags, json_struct

__all__ = ["JsonReporter"]


class JsonReporter(Reporter):
    """One JSON object per line; every object has ``kind`` and ``file``."""

    def _fields(self, method: Method) -> dict[str, Any]:
        """A method's fields by spec name; credentials redacted unless ``show_secrets``."""
        hidden = frozenset() if self.show_secrets else secret_fields(method)
        return {
            s.name: REDACTED if s.name in hidden else json_field(s, getattr(method, s.attr))
            for s in type(method).FIELDS
        }

    def _method(self, method: Method) -> dict[str, Any]:
        """A method frame's own keys, the same in both framings."""
        return {
            "method": method.NAME,
            "class_id": method.CLASS_ID,
            "method_id": method.METHOD_ID,
            "fields": self._fields(method),
            "reserved": [s.name for s in type(method).FIELDS if s.reserved],
        }

    def _body(self, payload: bytes) -> dict[str, Any]:
        """A body frame's own keys: the first ``body_preview`` bytes, as hex."""
        shown = payload[: self.body_preview]
        return {"payload_hex": shown.hex(), "payload_truncated": len(shown) < len(payload)}

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
            obj.update(
                type="method",
                type_id=FRAME_METHOD,
                channel=frame.channel,
                size=size,
                **self._method(frame.method),
            )
        elif isinstance(frame, ContentHeaderFrame):
            flags, properties = json_properties_and_flags(frame.properties)
            obj.update(
                type="header",
                type_id=FRAME_HEADER,
                channel=frame.channel,
                size=size,
                class_id=frame.class_id,
                **{"class": class_name(spec, frame.class_id)},
                body_size=frame.body_size,
                weight=frame.weight,
                property_flags=flags,
                properties=properties,
            )
        elif isinstance(frame, ContentBodyFrame):
            obj.update(
                type="body",
                type_id=FRAME_BODY,
                channel=frame.channel,
                size=size,
                **self._body(frame.payload),
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
            obj.update(
                type="method", type_id=wire010.FRAME_METHOD, **common, **self._method(frame.method)
            )
        elif isinstance(frame, DraftHeaderFrame):
            obj.update(
                type="header",
                type_id=wire010.FRAME_HEADER,
                **common,
                structs=[json_struct(s) for s in frame.structs],
            )
        elif isinstance(frame, DraftBodyFrame):
            obj.update(
                type="body", type_id=wire010.FRAME_BODY, **common, **self._body(frame.payload)
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
