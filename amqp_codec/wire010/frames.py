"""99-0 frames: the 12-byte frame header, the frame classes and their codecs.

::

    0      1     2-3    4      5       6-7      8-11      12..      12+n
    flags  type  size   0      track   channel  0 0 0 0   payload   0xCE

``flags``: bits 7-4 zero; ``0x08`` first segment of a frameset (B), ``0x04`` last segment (E),
``0x02`` first frame of its segment (b), ``0x01`` last frame of its segment (e). ``size`` is 12
plus the payload (the 0xCE octet is not counted). ``track``'s upper nibble is zero; its lower
nibble meant nothing to any receiver and is kept as it came.

A method segment is ``class index, method index`` (one octet each) and the fields; a header
segment is a run of long-structs (delivery-properties, message-properties); body frames carry
content bytes. Method and header segments always travel in one frame.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TypeVar

from amqp_codec.base import Method
from amqp_codec.errors import (
    AMQPDecodeError,
    AMQPEncodeError,
    CommandInvalidError,
    FrameError,
    FrameSyntaxError,
    UnexpectedFrameError,
)
from amqp_codec.protocol import ProtocolSpec

from .structs import PackedStruct, decode_header_structs, encode_long_struct

__all__ = [
    "DraftBodyFrame",
    "DraftFrame",
    "DraftHeaderFrame",
    "DraftHeartbeatFrame",
    "DraftMethodFrame",
    "decode_frame",
    "encode_draft_frame",
    "encode_draft_message",
    "frame_header",
    "frame_size",
    "segment_error",
    "start_version",
]

# Segment types and the frame-end octet (the spec's frame-* constants).
FRAME_METHOD = 1
FRAME_HEADER = 2
FRAME_BODY = 3
FRAME_HEARTBEAT = 8
FRAME_END = 0xCE
HEADER_SIZE = 12
MAX_FRAME_SIZE = 0xFFFF  # the size field is 16 bits and counts the header

FIRST_SEGMENT = 0x08  # B
LAST_SEGMENT = 0x04  # E
FIRST_FRAME = 0x02  # b
LAST_FRAME = 0x01  # e
WHOLE_SEGMENT = FIRST_FRAME | LAST_FRAME

_HEADER = struct.Struct(">BBHBBHI")
_unpack_header = _HEADER.unpack_from
_pack_header = _HEADER.pack

S = TypeVar("S", bound=PackedStruct)


def _check_int(value: object, high: int, field: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
        raise AMQPEncodeError(f"{field} {value!r} is not an int in 0..{high}", field=field)


def _check_flags_track(flags: int, track: int) -> None:
    _check_int(flags, 0x0F, "flags")
    _check_int(track, 0x0F, "track")


@dataclass(frozen=True, slots=True)
class DraftMethodFrame:
    """A method segment in one frame. ``flags`` default: 0x0B before content, else 0x0F."""

    channel: int
    method: Method
    flags: int = -1
    track: int = 0

    def __post_init__(self) -> None:
        if self.flags == -1:
            # getattr: a bad method is refused by encode_draft_frame, not here.
            flags = 0x0B if getattr(self.method, "HAS_CONTENT", False) else 0x0F
            object.__setattr__(self, "flags", flags)


@dataclass(frozen=True, slots=True)
class DraftHeaderFrame:
    """A header segment: the message's header structs, in wire order.

    ``flags`` 0x03 when body frames follow, 0x07 for an empty message with no body frame.
    """

    channel: int
    structs: tuple[PackedStruct, ...] = ()
    flags: int = FIRST_FRAME | LAST_FRAME
    track: int = 0

    def get(self, cls: type[S]) -> S | None:
        """The header struct of class ``cls`` (``MessageProperties``), or None if absent."""
        for s in self.structs:
            if isinstance(s, cls):
                return s
        return None


@dataclass(frozen=True, slots=True)
class DraftBodyFrame:
    """A body frame: part (or all) of the message content."""

    channel: int
    payload: bytes = field(repr=False)
    flags: int = LAST_SEGMENT | FIRST_FRAME | LAST_FRAME
    track: int = 0


@dataclass(frozen=True, slots=True)
class DraftHeartbeatFrame:
    """A heartbeat frame (type 8, empty). Qpid never sent one: negotiate heartbeat 0."""

    channel: int = 0
    flags: int = FIRST_SEGMENT | LAST_SEGMENT | FIRST_FRAME | LAST_FRAME
    track: int = 0


DraftFrame = DraftMethodFrame | DraftHeaderFrame | DraftBodyFrame | DraftHeartbeatFrame


# --------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------


def _frame(flags: int, frame_type: int, track: int, channel: int, payload: bytes) -> bytes:
    size = HEADER_SIZE + len(payload)
    if size > MAX_FRAME_SIZE:
        raise AMQPEncodeError(f"frame of {size} bytes exceeds the 16-bit size field")
    return b"".join((_pack_header(flags, frame_type, size, 0, track, channel, 0), payload, b"\xce"))


def encode_draft_frame(frame: DraftFrame) -> bytes:
    """The wire bytes of a 99-0 frame; a decoded frame gives back the bytes it came from.

    Checked before anything is encoded, each raising :class:`AMQPEncodeError` naming the field:
    the frame is one of the 99-0 frame classes; ``channel`` an int in 0..65535, ``flags`` and
    ``track`` ints in 0..15; a method frame's ``method`` a generated method (whose fields its
    encoder checks); a header frame's ``structs`` a tuple or list of typed structs; a body's
    ``payload`` bytes; and the whole frame at most 65535 bytes.
    """
    if not isinstance(frame, DraftFrame):
        raise AMQPEncodeError(f"not a 99-0 frame: {type(frame).__name__}")
    _check_int(frame.channel, 0xFFFF, "channel")
    _check_flags_track(frame.flags, frame.track)
    if isinstance(frame, DraftMethodFrame):
        if not isinstance(frame.method, Method):
            raise AMQPEncodeError(
                f"method takes a generated method, not {type(frame.method).__name__}",
                field="method",
            )
        payload = frame.method.encode()
        return _frame(frame.flags, FRAME_METHOD, frame.track, frame.channel, payload)
    if isinstance(frame, DraftHeaderFrame):
        if not isinstance(frame.structs, (tuple, list)):
            raise AMQPEncodeError(
                f"structs takes a tuple of structs, not {type(frame.structs).__name__}",
                field="structs",
            )
        payload = b"".join(
            encode_long_struct(s, f"structs[{i}]") for i, s in enumerate(frame.structs)
        )
        return _frame(frame.flags, FRAME_HEADER, frame.track, frame.channel, payload)
    if isinstance(frame, DraftBodyFrame):
        if not isinstance(frame.payload, (bytes, bytearray, memoryview)):
            raise AMQPEncodeError(
                f"payload takes bytes, not {type(frame.payload).__name__}", field="payload"
            )
        return _frame(frame.flags, FRAME_BODY, frame.track, frame.channel, bytes(frame.payload))
    return _frame(frame.flags, FRAME_HEARTBEAT, frame.track, frame.channel, b"")


def encode_draft_message(
    channel: int,
    method: Method,
    structs: tuple[PackedStruct, ...] | list[PackedStruct],
    body: bytes,
    *,
    frame_max: int = MAX_FRAME_SIZE,
) -> bytes:
    """A whole frameset: the method (0x0B), the header and the body split at ``frame_max``.

    The header is 0x03 followed by body frames with E on every frame (0x07 alone; 0x06,
    0x04…, 0x05 when split), or 0x07 with no body frame for empty content. Checked as in
    :func:`encode_draft_frame`, and: ``method`` carries content, ``body`` is bytes and
    ``frame_max`` an int.
    """
    _check_int(channel, 0xFFFF, "channel")
    if not isinstance(method, Method):
        raise AMQPEncodeError(f"method takes a generated method, not {type(method).__name__}")
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise AMQPEncodeError(f"body takes bytes, not {type(body).__name__}", field="body")
    if not isinstance(frame_max, int) or isinstance(frame_max, bool):
        raise AMQPEncodeError(f"frame_max {frame_max!r} is not an int", field="frame_max")
    if not method.HAS_CONTENT:
        raise AMQPEncodeError(f"{method.NAME} carries no content")
    chunk = min(frame_max, MAX_FRAME_SIZE) - HEADER_SIZE
    if chunk <= 0:
        raise AMQPEncodeError(f"frame_max {frame_max} leaves no room for a payload")
    parts = [encode_draft_frame(DraftMethodFrame(channel, method, FIRST_SEGMENT | WHOLE_SEGMENT))]
    header_flags = WHOLE_SEGMENT if body else LAST_SEGMENT | WHOLE_SEGMENT
    parts.append(encode_draft_frame(DraftHeaderFrame(channel, tuple(structs), header_flags)))
    body = bytes(body)
    for start in range(0, len(body), chunk):
        flags = LAST_SEGMENT
        if start == 0:
            flags |= FIRST_FRAME
        if start + chunk >= len(body):
            flags |= LAST_FRAME
        parts.append(
            encode_draft_frame(DraftBodyFrame(channel, body[start : start + chunk], flags))
        )
    return b"".join(parts)


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def frame_size(buf: bytes | bytearray, pos: int) -> int:
    """Check the 12-byte header at ``buf[pos:]``; return the frame's size field (header and
    payload, without the 0xCE octet). Error offsets are positions in ``buf``."""
    flags, _type, size, reserved, track, channel, reserved2 = _unpack_header(buf, pos)
    if flags & 0xF0:
        raise FrameError(f"frame flags 0x{flags:02x} set reserved or version bits", offset=pos)
    if size < HEADER_SIZE:
        raise FrameError(f"frame size {size} is smaller than its 12-byte header", offset=pos)
    if reserved or track & 0xF0 or reserved2:
        raise FrameError("reserved frame header bits are set", offset=pos, channel=channel)
    return int(size)


def frame_header(buf: bytes | bytearray, pos: int) -> tuple[int, int, int, int]:
    """The flags, type, channel and size (header included) of the 12-byte header at
    ``buf[pos:]``, unchecked."""
    flags, frame_type, size, _r, _track, channel, _r2 = _unpack_header(buf, pos)
    return flags, frame_type, channel, size


def segment_error(
    flags: int, frame_type: int, channel: int, size: int, pos: int
) -> AMQPDecodeError | None:
    """What is wrong with a frame whose header (at ``pos``, checked by :func:`frame_size`) says
    these, before its payload is read, or None: an unknown type, a content frame on channel 0,
    a heartbeat with a payload, a method or header segment split over frames, a method
    segment with no class and method index.

    :func:`decode_frame` raises it; the dissector's resync believes a candidate frame start
    only where it is None (:mod:`amqp_codec.inspect.resync`).
    """
    if frame_type == FRAME_BODY:
        if channel == 0:
            return UnexpectedFrameError("body frame on channel 0", offset=pos, channel=0)
        return None
    if frame_type == FRAME_HEARTBEAT:
        if size != HEADER_SIZE:
            return FrameError("heartbeat frame with a payload", offset=pos, channel=channel)
        return None
    if frame_type not in (FRAME_METHOD, FRAME_HEADER):
        return FrameError(f"unknown frame type {frame_type}", offset=pos, channel=channel)
    if flags & WHOLE_SEGMENT != WHOLE_SEGMENT:
        return FrameError(
            "a method or header segment split over frames (never sent by Qpid C++ or Python)",
            offset=pos,
            channel=channel,
        )
    if frame_type == FRAME_HEADER and channel == 0:
        return UnexpectedFrameError("header frame on channel 0", offset=pos, channel=0)
    if frame_type == FRAME_METHOD and size < HEADER_SIZE + 2:
        return FrameSyntaxError(
            "method segment has no class and method index", offset=pos + HEADER_SIZE
        )
    return None


def decode_frame(spec: ProtocolSpec, buf: bytes, pos: int, depth: int) -> DraftFrame:
    """Decode the whole frame at ``buf[pos:]`` (header checked by :func:`frame_size`, and the
    frame-end octet present in ``buf``). Error offsets are positions in ``buf``."""
    flags, frame_type, size, _r, track, channel, _r2 = _unpack_header(buf, pos)
    end = pos + size
    if buf[end] != FRAME_END:
        raise FrameError(
            f"frame-end octet is 0x{buf[end]:02x}, not 0xce", offset=end, channel=channel
        )
    error = segment_error(flags, frame_type, channel, size, pos)
    if error is not None:
        raise error
    start = pos + HEADER_SIZE
    if frame_type == FRAME_BODY:
        return DraftBodyFrame(channel, buf[start:end], flags, track)
    if frame_type == FRAME_HEARTBEAT:
        return DraftHeartbeatFrame(channel, flags, track)
    # The generated decoders read some fields (short strings, fixed runs) before checking them
    # against ``end``: decoded in a copy of the segment alone (at most 64 KiB, so still one
    # copy per byte), they can never see the next frame's bytes, and an error is the same
    # whatever else happens to be buffered after this frame.
    segment = buf[start:end]
    try:
        if frame_type == FRAME_HEADER:
            structs = decode_header_structs(segment, 0, len(segment), depth)
            return DraftHeaderFrame(channel, structs, flags, track)
        method = decode_method(spec, segment, 0, len(segment), depth)
    except AMQPDecodeError as exc:
        if exc.offset is not None:
            exc.offset += start
        raise
    except _BAD_ARGUMENTS:  # a header struct read past the segment
        raise FrameSyntaxError(
            "header structs run past the end of the frame", offset=start
        ) from None
    if (method.CLASS_ID == spec.connection_class_id) != (channel == 0):
        raise CommandInvalidError(
            f"{method.NAME} on channel {channel}: channel 0 carries the connection class "
            "and only it",
            offset=pos,
            channel=channel,
            class_id=method.CLASS_ID,
            method_id=method.METHOD_ID,
        )
    return DraftMethodFrame(channel, method, flags, track)


_BAD_ARGUMENTS = (IndexError, struct.error, ValueError, OverflowError)


def decode_method(spec: ProtocolSpec, buf: bytes, start: int, end: int, depth: int) -> Method:
    """A method segment ``buf[start:end]``: octet class and method indexes, then the fields."""
    if end - start < 2:
        raise FrameSyntaxError("method segment has no class and method index", offset=start)
    class_id, method_id = buf[start], buf[start + 1]
    decode = spec.method_decoders.get(class_id << 16 | method_id)
    if decode is None:
        raise CommandInvalidError(
            f"unknown method {class_id}.{method_id}",
            offset=start,
            class_id=class_id,
            method_id=method_id,
        )
    try:
        return decode(buf, start + 2, end, depth)
    except AMQPDecodeError as exc:
        raise exc.located(offset=start, class_id=class_id, method_id=method_id) from None
    except _BAD_ARGUMENTS:
        raise FrameSyntaxError(
            "method arguments run past the end of the frame",
            offset=start,
            class_id=class_id,
            method_id=method_id,
        ) from None


def start_version(buf: bytes, pos: int) -> tuple[int, int] | None:
    """(version-major, version-minor) if ``buf[pos:]`` opens with a 99-0 connection.start
    frame (flags 0x0F, method, channel 0, class 10 method 10), else None. Needs 16 bytes."""
    if len(buf) - pos < 16 or buf[pos : pos + 2] != b"\x0f\x01":
        return None
    if buf[pos + 6 : pos + 8] != b"\x00\x00" or buf[pos + 12 : pos + 14] != b"\x0a\x0a":
        return None
    return buf[pos + 14], buf[pos + 15]
