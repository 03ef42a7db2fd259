"""Whole one-direction streams of a connection, and the same bytes in arbitrary chunks."""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from amqp_codec.base import Method
from amqp_codec.frames import Frame, ProtocolHeader, encode_frame

# The decoder's own table of connection.start versions, so both always agree.
from amqp_codec.protocol import _DRAFT_START_VERSIONS, _START_VERSIONS, ProtocolSpec

from . import _model
from ._frames import MAX_BODY, content_frames, content_properties, heartbeat, method_frame
from ._frames import overhead as frame_overhead
from ._version import Version

DIRECTIONS = ("client", "server")
# Methods that open and close a channel (0-10 draft: a session), by direction.
_OPENERS = {
    "client": ("channel.open", "session.open"),
    "server": ("channel.open-ok", "session.attached"),
}
_CHANNEL_LIFE = frozenset(
    {
        "channel.open",
        "channel.open-ok",
        "channel.close",
        "channel.close-ok",
        "session.open",
        "session.attached",
        "session.close",
        "session.closed",
        "session.detached",
    }
)
FRAME_MIN_SIZE = 4096  # the smallest frame_max a peer must accept (0-8, 0-9-1)


@dataclass(frozen=True)
class StreamExample:
    """One direction of a connection: what a decoder must return, and its bytes."""

    direction: str
    frame_max: int
    """The frame_max negotiated in the stream (0: none); every frame respects it."""
    frames: tuple[Frame, ...] = field(repr=False)
    """What a decoder must return, in order (the protocol header first, client side)."""
    data: bytes = field(repr=False)
    offsets: tuple[int, ...] = field(repr=False)
    """The stream offset where each of :attr:`frames` starts."""
    chunks: tuple[bytes, ...] | None = field(default=None, repr=False)
    """The same bytes cut into pieces, once drawn through :func:`chunked`."""
    spec: ProtocolSpec | None = field(default=None, repr=False, compare=False)
    """The version the stream speaks."""

    def __repr__(self) -> str:
        names = [_frame_name(f) for f in self.frames]
        return (
            f"StreamExample(direction={self.direction!r}, frame_max={self.frame_max}, "
            f"frames=[{', '.join(names)}], {len(self.data)} bytes"
            + (f", {len(self.chunks)} chunks" if self.chunks is not None else "")
            + ")"
        )


def _frame_name(frame: Frame) -> str:
    method = getattr(frame, "method", None)
    name = method.NAME if method is not None else type(frame).__name__
    return f"{name}@{getattr(frame, 'channel', '-')}"


def _channel_methods(
    version: Version, direction: str
) -> tuple[list[type[Method]], list[type[Method]]]:
    """The methods ``direction`` sends on an open channel: without content, with content."""
    key = (id(version), direction)
    if key not in _CHANNEL_METHODS:
        _CHANNEL_METHODS[key] = _find_channel_methods(version, direction)
    return _CHANNEL_METHODS[key]


_CHANNEL_METHODS: dict[tuple[int, str], tuple[list[type[Method]], list[type[Method]]]] = {}


def _find_channel_methods(
    version: Version, direction: str
) -> tuple[list[type[Method]], list[type[Method]]]:
    others = [
        m
        for m in version.methods
        if direction in m.SENT_BY and not version.is_connection(m) and m.NAME not in _CHANNEL_LIFE
    ]
    content = [m for m in others if m in version.content_methods]
    return [m for m in others if not m.HAS_CONTENT], content


def _first(version: Version, names: tuple[str, ...]) -> type[Method] | None:
    return next((c for n in names if (c := version.method(n)) is not None), None)


def _with(draw: st.DrawFn, version: Version, cls: type[Method], **fields: Any) -> Any:
    """A valid instance of ``cls`` with ``fields`` set (those it has)."""
    method = draw(_model.methods(version, cls))
    known = {f.attr: i for i, f in enumerate(cls.FIELDS)}
    for attr, value in fields.items():
        if attr in known:
            cls._SETTERS[known[attr]](method, value)
    return method


def _frame_max(draw: st.DrawFn, version: Version, upper: int | None) -> int:
    cap = 0xFFFF if version.draft else 2**20
    if upper:
        cap = min(cap, upper)
    choice = st.integers(FRAME_MIN_SIZE, cap)
    if not version.draft and not upper:
        choice = st.just(0) | choice
    return draw(choice)


def _start_version(version: Version) -> tuple[int, int]:
    """The version connection.start announces: what real servers of this version send (0-8
    servers say 8-0), so a decoder that detects the version from it finds this one."""
    known = _DRAFT_START_VERSIONS if version.draft else _START_VERSIONS
    for (major, minor), package in known.items():
        if package == version.package.__name__:
            return major, minor
    return version.spec.major, version.spec.minor


@st.composite
def _handshake(draw: st.DrawFn, version: Version, direction: str) -> tuple[list[Frame], int, int]:
    """The connection's opening frames; returns them, the channel-max and the frame_max."""
    frames: list[Frame] = []

    def send(name: str, **fields: Any) -> None:
        cls = version.method(name)
        if cls is not None:
            frames.append(method_frame(version, 0, _with(draw, version, cls, **fields)))

    # The server offers limits in tune; tune-ok accepts them or smaller ones (the spec's
    # "le tune.channel-max").
    server_channels = draw(st.just(0) | st.integers(1, 8) | st.integers(1, 0xFFFF))
    server_frame_max = _frame_max(draw, version, None)
    channel_max = draw(st.integers(1, server_channels or 0xFFFF))
    frame_max = _frame_max(draw, version, server_frame_max)
    heartbeat_ = draw(st.integers(0, 600))
    secure_rounds = draw(st.integers(0, 2))
    if direction == "client":
        frames.append(ProtocolHeader(*version.header[4:8]))
        send("connection.start-ok")
        for _ in range(secure_rounds):
            send("connection.secure-ok")
        send(
            "connection.tune-ok", channel_max=channel_max, frame_max=frame_max, heartbeat=heartbeat_
        )
        send("connection.open")
    else:
        major, minor = _start_version(version)
        send("connection.start", version_major=major, version_minor=minor)
        for _ in range(secure_rounds):
            send("connection.secure")
        send(
            "connection.tune",
            channel_max=server_channels,
            frame_max=server_frame_max,
            heartbeat=heartbeat_,
        )
        send("connection.open-ok")
    return frames, channel_max, frame_max


@st.composite
def _pieces(draw: st.DrawFn, size: int, chunk: int) -> list[int]:
    """Body frame sizes: any split with frames of at most ``chunk`` bytes, shrinking towards
    the fewest frames."""
    pieces = []
    while size:
        most = min(size, chunk) if chunk else size
        piece = most - draw(st.integers(0, most - 1))
        pieces.append(piece)
        size -= piece
    return pieces


@st.composite
def streams(
    draw: st.DrawFn, version: Version, direction: str = "client", max_events: int = 8
) -> StreamExample:
    frames, channel_max, frame_max = draw(_handshake(version, direction))
    opener = _first(version, _OPENERS[direction])
    closer = version.method("channel.close")
    plain, content = _channel_methods(version, direction)
    chunk = frame_max - frame_overhead(version) if frame_max else 0
    open_channels: list[int] = []
    kinds = ["open", "method", "content", "heartbeat", "close"]
    for _ in range(draw(st.integers(0, max_events))):
        kind = draw(st.sampled_from(kinds))
        if kind in ("method", "content", "close") and not open_channels:
            kind = "open"
        if kind == "open":
            if opener is None:
                continue
            channel = draw(st.integers(1, channel_max).filter(lambda c: c not in open_channels))
            open_channels.append(channel)
            frames.append(method_frame(version, channel, draw(_model.methods(version, opener))))
        elif kind == "method" and plain:
            channel = draw(st.sampled_from(open_channels))
            cls = draw(st.sampled_from(plain))
            frames.append(method_frame(version, channel, draw(_model.methods(version, cls))))
        elif kind == "content" and content:
            channel = draw(st.sampled_from(open_channels))
            cls = draw(st.sampled_from(content))
            method = draw(_model.methods(version, cls))
            props = draw(content_properties(version, cls))
            body = draw(st.binary(max_size=MAX_BODY))
            pieces = draw(_pieces(len(body), chunk))
            frames += content_frames(version, channel, method, props, body, pieces)
        elif kind == "heartbeat":
            frames.append(heartbeat(version))
        elif kind == "close" and closer is not None and direction in closer.SENT_BY:
            channel = draw(st.sampled_from(open_channels))
            open_channels.remove(channel)
            frames.append(method_frame(version, channel, draw(_model.methods(version, closer))))
    close = version.method("connection.close")
    if close is not None and draw(st.booleans()):
        frames.append(method_frame(version, 0, draw(_model.methods(version, close))))
    wires = [encode_frame(f) for f in frames]
    offsets, at = [], 0
    for wire in wires:
        offsets.append(at)
        at += len(wire)
    return StreamExample(
        direction,
        frame_max,
        tuple(frames),
        b"".join(wires),
        tuple(offsets),
        spec=version.spec,
    )


def cut(data: bytes) -> st.SearchStrategy[tuple[bytes, ...]]:
    """``data`` cut at random points (repeated points give empty pieces)."""

    def pieces(points: list[int]) -> tuple[bytes, ...]:
        bounds = [0, *sorted(points), len(data)]
        return tuple(data[a:b] for a, b in itertools.pairwise(bounds))

    return st.lists(st.integers(0, len(data)), max_size=16).map(pieces)


def with_chunks(example: Any) -> st.SearchStrategy[Any]:
    return cut(example.data).map(lambda chunks: dataclasses.replace(example, chunks=chunks))
