"""Frames and whole messages of one version, in its own wire format."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from amqp_codec.base import Method
from amqp_codec.frames import (
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    MethodFrame,
    encode_frame,
)
from amqp_codec.wire010.frames import (
    FIRST_FRAME,
    FIRST_SEGMENT,
    HEADER_SIZE,
    LAST_FRAME,
    LAST_SEGMENT,
    MAX_FRAME_SIZE,
    WHOLE_SEGMENT,
    DraftBodyFrame,
    DraftHeaderFrame,
    DraftHeartbeatFrame,
    DraftMethodFrame,
)

from . import _model
from ._version import Version

OVERHEAD_0_9 = 8  # 7-byte header and the frame-end octet
MAX_BODY = 300  # bytes of body a message gets at most: enough to split, small to shrink


def overhead(version: Version) -> int:
    """Bytes a frame adds to its payload, as frame_max counts them."""
    return HEADER_SIZE if version.draft else OVERHEAD_0_9


def frame_size(version: Version, wire: bytes) -> int:
    """The size frame_max limits: the whole frame for 0-9, header and payload for the draft."""
    return len(wire) - 1 if version.draft else len(wire)


def pick_classes(
    version: Version, include: Iterable[str | type[Method]] | None
) -> tuple[type[Method], ...]:
    """The method classes ``include`` names (all when None); unknown names are an error."""
    if include is None:
        return version.methods
    chosen: list[type[Method]] = []
    for item in include:
        if isinstance(item, str):
            cls = version.method(item)
            if cls is None:
                raise ValueError(f"AMQP {version.spec.name} has no method {item!r}")
        elif item in version.methods:
            cls = item
        else:
            raise ValueError(f"{item!r} is not a method class of AMQP {version.spec.name}")
        chosen.append(cls)
    if not chosen:
        raise ValueError("include names no method")
    return tuple(chosen)


def any_method(
    version: Version, classes: Sequence[type[Method]], valid: bool = True
) -> st.SearchStrategy[Any]:
    return st.sampled_from(classes).flatmap(lambda cls: _model.methods(version, cls, valid))


def method_frame(version: Version, channel: int, method: Method) -> Frame:
    if version.draft:
        return DraftMethodFrame(channel, method)
    return MethodFrame(channel, method)


def heartbeat(version: Version) -> Frame:
    return DraftHeartbeatFrame() if version.draft else HeartbeatFrame()


def content_properties(version: Version, cls: type[Method]) -> st.SearchStrategy[Any]:
    """0-9: the property list of ``cls``'s class; draft: a tuple of header structs."""
    if not version.draft:
        return _model.properties(version, version.spec.properties[cls.CLASS_ID])
    optional = [st.none() | _model.structs(version, s) for s in version.header_structs]
    return st.tuples(*optional).map(lambda found: tuple(s for s in found if s is not None))


def content_frames(
    version: Version,
    channel: int,
    method: Method,
    properties: Any,
    body: bytes,
    pieces: Sequence[int],
) -> list[Frame]:
    """Method, content header and body frames of one message, the body cut into ``pieces``."""
    bodies, start = [], 0
    for size in pieces:
        bodies.append(body[start : start + size])
        start += size
    if not version.draft:
        return [
            MethodFrame(channel, method),
            ContentHeaderFrame(channel, method.CLASS_ID, len(body), properties),
            *(ContentBodyFrame(channel, b) for b in bodies),
        ]
    header_flags = WHOLE_SEGMENT if body else LAST_SEGMENT | WHOLE_SEGMENT
    frames: list[Frame] = [
        DraftMethodFrame(channel, method, FIRST_SEGMENT | WHOLE_SEGMENT),
        DraftHeaderFrame(channel, tuple(properties), header_flags),
    ]
    for i, piece in enumerate(bodies):
        flags = LAST_SEGMENT | (FIRST_FRAME if i == 0 else 0)
        flags |= LAST_FRAME if i == len(bodies) - 1 else 0
        frames.append(DraftBodyFrame(channel, piece, flags))
    return frames


def even_pieces(size: int, chunk: int) -> list[int]:
    """Body frame sizes of a body split at ``chunk`` bytes (0: one frame)."""
    if not size:
        return []
    chunk = chunk or size
    return [min(chunk, size - start) for start in range(0, size, chunk)]


@dataclass(frozen=True)
class MessageExample:
    """One message: its parts, the frames it travels in and their bytes."""

    channel: int
    method: Any
    properties: Any
    """0-8, 0-9-1: the property list; 0-10 draft: the tuple of header structs."""
    body: bytes
    frame_max: int
    """The frame_max the frames respect (0: no limit)."""
    frames: tuple[Frame, ...] = field(repr=False)
    data: bytes = field(repr=False)


@st.composite
def messages(draw: st.DrawFn, version: Version, frame_max: int | None = None) -> MessageExample:
    cls = draw(st.sampled_from(version.content_methods))
    method = draw(_model.methods(version, cls))
    channel = draw(st.integers(1, 65535))
    props = draw(content_properties(version, cls))
    body = draw(st.binary(max_size=MAX_BODY))
    head = content_frames(version, channel, method, props, body, [])
    needed = max(frame_size(version, encode_frame(f)) for f in head) + 1
    limit = MAX_FRAME_SIZE if version.draft else 2**32 - 1
    if frame_max is None:
        # Small frame_max values split the body; 0 (no limit, 0-9 only) keeps it whole.
        extra = draw(st.integers(0, MAX_BODY + 1))
        frame_max = 0 if extra > MAX_BODY and not version.draft else needed + extra
        frame_max = min(frame_max, limit)
    assume(frame_max == 0 or frame_max >= needed)
    chunk = frame_max - overhead(version) if frame_max else 0
    frames = content_frames(version, channel, method, props, body, even_pieces(len(body), chunk))
    data = b"".join(encode_frame(f) for f in frames)
    return MessageExample(channel, method, props, body, frame_max, tuple(frames), data)


@st.composite
def frames(
    draw: st.DrawFn, version: Version, channel: int | None = None, frame_max: int | None = None
) -> Frame:
    kinds = ["method", "heartbeat"] if channel == 0 else ["method", "header", "body", "heartbeat"]
    kind = draw(st.sampled_from(kinds))
    on = st.just(channel) if channel else st.integers(1, 65535)
    frame: Frame
    if kind == "method":
        classes = version.methods
        if channel == 0:
            classes = tuple(c for c in classes if version.is_connection(c))
        method = draw(any_method(version, classes))
        frame = method_frame(
            version, 0 if version.is_connection(type(method)) else draw(on), method
        )
    elif kind == "header":
        cls = draw(st.sampled_from(version.content_methods))
        props = draw(content_properties(version, cls))
        size = draw(st.integers(0, 2**20))
        if version.draft:
            frame = DraftHeaderFrame(draw(on), props, WHOLE_SEGMENT if size else 0x07)
        else:
            frame = ContentHeaderFrame(draw(on), cls.CLASS_ID, size, props)
    elif kind == "body":
        room = frame_max - overhead(version) if frame_max else MAX_BODY
        payload = draw(st.binary(max_size=max(0, min(MAX_BODY, room))))
        frame = (
            DraftBodyFrame(draw(on), payload)
            if version.draft
            else ContentBodyFrame(draw(on), payload)
        )
    else:
        frame = heartbeat(version)
    if frame_max:
        assume(frame_size(version, encode_frame(frame)) <= frame_max)
    return frame
