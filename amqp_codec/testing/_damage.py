"""Streams broken in one labelled way, for checking that a decoder fails cleanly."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from amqp_codec.base import Method
from amqp_codec.frames import ContentBodyFrame, Frame, ProtocolHeader, encode_frame
from amqp_codec.table import DEFAULT_MAX_TABLE_DEPTH
from amqp_codec.wire010 import Array
from amqp_codec.wire010.frames import DraftBodyFrame
from amqp_codec.wire010.table import CODE_VOID

from ._frames import frame_size, method_frame
from ._frames import overhead as frame_overhead
from ._streams import StreamExample
from ._version import Version, resolve

#: Every kind of damage, in the order :func:`damaged` shrinks towards.
KINDS = (
    "cut-short",
    "frame-end",
    "size-short",
    "size-long",
    "size-huge",
    "unknown-class",
    "unknown-method",
    "over-frame-max",
    "deep-tables",
    "bit-flip",
    "void-array-count",
)
DRAFT_ONLY = frozenset({"void-array-count"})


@dataclass(frozen=True)
class DamagedStream:
    """A stream broken in one way: ``kind`` says how, ``offset`` where (a stream offset)."""

    kind: str
    offset: int
    data: bytes = field(repr=False)
    frame_max: int
    """The frame_max a decoder must enforce (the negotiated one, or the one the damage
    exceeds); 0 for none."""
    stream: StreamExample = field(repr=False)
    """The stream before the damage."""
    chunks: tuple[bytes, ...] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return (
            f"DamagedStream(kind={self.kind!r}, offset={self.offset}, frame_max={self.frame_max}, "
            f"{len(self.data)} bytes, from {self.stream!r})"
        )


@dataclass(frozen=True)
class _Frame:
    """Where one frame of the stream is, and its layout."""

    start: int
    end: int  # offset of the frame-end octet
    size_at: int
    size_width: int
    ids_at: int  # the class id of a method frame
    id_width: int
    is_method: bool


def _frames(version: Version, stream: StreamExample) -> list[_Frame]:
    found = []
    for frame, start in zip(stream.frames, stream.offsets, strict=True):
        if isinstance(frame, ProtocolHeader):
            continue
        wire = encode_frame(frame)
        is_method = getattr(frame, "method", None) is not None
        if version.draft:
            found.append(
                _Frame(start, start + len(wire) - 1, start + 2, 2, start + 12, 1, is_method)
            )
        else:
            found.append(
                _Frame(start, start + len(wire) - 1, start + 3, 4, start + 7, 2, is_method)
            )
    return found


def _patch(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new) :]


def _table_method(version: Version) -> tuple[type[Method], str] | None:
    for cls in version.methods:
        for spec in cls.FIELDS:
            if spec.wire_type == "table" and not spec.reserved:
                return cls, spec.attr
    return None


def _array_method(version: Version) -> tuple[type[Method], str] | None:
    for cls in version.methods:
        for spec in cls.FIELDS:
            if spec.wire_type == "array" and not spec.reserved:
                return cls, spec.attr
    return None


def kinds_for(version: Version) -> tuple[str, ...]:
    kinds = [k for k in KINDS if version.draft or k not in DRAFT_ONLY]
    if _table_method(version) is None:
        kinds.remove("deep-tables")
    if version.draft and _array_method(version) is None:
        kinds.remove("void-array-count")
    return tuple(kinds)


def _insert(draw: st.DrawFn, stream: StreamExample, wire: bytes) -> tuple[bytes, int]:
    """``wire`` inserted between two frames (never before the first)."""
    bounds = [*stream.offsets[1:], len(stream.data)]
    at = draw(st.sampled_from(bounds))
    return stream.data[:at] + wire + stream.data[at:], at


@st.composite
def damaged(
    draw: st.DrawFn,
    given: Version | None,
    streams: st.SearchStrategy[StreamExample],
    kinds: tuple[str, ...] | None,
) -> DamagedStream:
    stream = draw(streams)
    # The stream knows its version; ``given`` (the spec= argument) takes precedence.
    version = given or resolve(stream.spec)
    data = stream.data
    frames = _frames(version, stream)
    available = kinds_for(version)
    kind = draw(st.sampled_from([k for k in kinds or available if k in available] or available))
    frame_max = stream.frame_max
    if kind == "cut-short":
        frame = draw(st.sampled_from(frames))
        offset = draw(st.integers(frame.start + 1, frame.end))
        data = data[:offset]
    elif kind == "bit-flip":
        offset = draw(st.integers(0, len(data) - 1))
        data = _patch(data, offset, bytes([data[offset] ^ (1 << draw(st.integers(0, 7)))]))
    elif kind in ("size-short", "size-long", "size-huge"):
        frame = draw(st.sampled_from(frames))
        width = frame.size_width
        size = int.from_bytes(data[frame.size_at : frame.size_at + width], "big")
        top = 2 ** (8 * width) - 1
        if kind == "size-short":
            new = size - draw(st.integers(1, max(1, size)))
        elif kind == "size-long":
            new = size + draw(st.integers(1, 255))
        else:
            new = draw(st.integers(top // 2 + 1, top)) if not version.draft else top
        new = max(0, min(new, top))
        if new == size:  # a full size field cannot lie longer, nor a zero one shorter
            new = size - 1 if size else 1
        offset = frame.size_at
        data = _patch(data, offset, new.to_bytes(width, "big"))
    elif kind == "frame-end":
        frame = draw(st.sampled_from(frames))
        offset = frame.end
        data = _patch(data, offset, bytes([draw(st.integers(0, 255).filter(lambda b: b != 0xCE))]))
    elif kind in ("unknown-class", "unknown-method"):
        frame = draw(st.sampled_from([f for f in frames if f.is_method]))
        width = frame.id_width
        top = 2 ** (8 * width) - 1
        classes = {(m.CLASS_ID, m.METHOD_ID) for m in version.methods}
        class_ids = {c for c, _ in classes}
        if kind == "unknown-class":
            class_id = draw(st.integers(0, top).filter(lambda c: c not in class_ids))
            method_id = draw(st.integers(0, top))
            offset = frame.ids_at
        else:
            class_id = int.from_bytes(data[frame.ids_at : frame.ids_at + width], "big")
            method_id = draw(st.integers(0, top).filter(lambda m: (class_id, m) not in classes))
            offset = frame.ids_at + width
        ids = class_id.to_bytes(width, "big") + method_id.to_bytes(width, "big")
        data = _patch(data, frame.ids_at, ids)
    elif kind == "over-frame-max":
        largest = max(frame_size(version, data[f.start : f.end + 1]) for f in frames)
        frame_max = max(frame_max or 4096, largest)
        if version.draft:  # the 16-bit size field must still be able to say "larger"
            frame_max = min(frame_max, 0xFFFF - 64)
        payload = bytes(frame_max - frame_overhead(version) + draw(st.integers(1, 64)))
        big: Frame = DraftBodyFrame(1, payload) if version.draft else ContentBodyFrame(1, payload)
        data, offset = _insert(draw, stream, encode_frame(big))
    elif kind == "deep-tables":
        found = _table_method(version)
        assert found is not None
        cls, attr = found
        nested: dict[str, Any] = {}
        for _ in range(DEFAULT_MAX_TABLE_DEPTH + 1):
            nested = {"a": nested}
        method = cls(**{attr: nested})
        channel = 0 if version.is_connection(cls) else 1
        data, offset = _insert(draw, stream, encode_frame(method_frame(version, channel, method)))
    else:  # void-array-count: a 0-10 draft array of void elements claiming too many of them
        found = _array_method(version)
        assert found is not None
        cls, attr = found
        method = cls(**{attr: Array(CODE_VOID, ())})
        channel = 0 if version.is_connection(cls) else 1
        wire = encode_frame(method_frame(version, channel, method))
        empty = b"\x00\x00\x00\x05" + bytes([CODE_VOID]) + b"\x00\x00\x00\x00"
        at = wire.index(empty) + 5
        # More zero-width elements than the array has bytes: refused, never materialised.
        count = draw(st.integers(2**16, 2**32 - 1))
        wire = _patch(wire, at, count.to_bytes(4, "big"))
        data, offset = _insert(draw, stream, wire)
        offset += at
    event(f"damaged: {kind}")
    return DamagedStream(kind, offset, data, frame_max, stream)
