"""Frame types and frame encoding.

Frames are frozen, slotted dataclasses. :func:`encode_frame` turns any of them into bytes;
for a frame the :class:`~amqp_codec.FrameDecoder` produced, the result is exactly the bytes
the frame was decoded from. :func:`encode_message` writes a whole message (method, content
header and body frames split at ``frame_max``) in one call.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .base import Method, Properties
from .errors import (
    AMQPDecodeError,
    AMQPEncodeError,
    FrameError,
    FrameSyntaxError,
    UnexpectedFrameError,
)
from .wire010.frames import DraftFrame, encode_draft_frame

__all__ = [
    "FRAME_BODY",
    "FRAME_END",
    "FRAME_HEADER",
    "FRAME_HEARTBEAT",
    "FRAME_METHOD",
    "ContentBodyFrame",
    "ContentHeaderFrame",
    "Frame",
    "HeartbeatFrame",
    "MethodFrame",
    "ProtocolHeader",
    "bad_frame_end",
    "frame_header_error",
    "unpack_frame_header",
    "check_channel",
    "check_payload",
    "body_repr",
    "encode_frame",
    "encode_message",
]

# Frame types and the frame-end octet; the same in AMQP 0-8 and 0-9-1.
FRAME_METHOD = 1
FRAME_HEADER = 2
FRAME_BODY = 3
FRAME_HEARTBEAT = 8
FRAME_END = 0xCE
FRAME_OVERHEAD = 8  # 7-byte header + frame-end octet

_END = b"\xce"
_FRAME_HEADER = struct.Struct(">BHI")
#: ``unpack_frame_header(buf, pos)``: a 7-byte frame header's (type, channel, payload size).
unpack_frame_header = _FRAME_HEADER.unpack_from
_pack_header = _FRAME_HEADER.pack
_pack_content_header = struct.Struct(">HHQ").pack
# The method frame's end octet, then a content header frame's header and fixed fields.
_pack_end_and_content_header = struct.Struct(">BBHIHHQ").pack


def bad_frame_end(octet: int, offset: int, channel: int) -> FrameError:
    """The error for a frame whose end octet (at ``offset``) is ``octet``, not 0xCE (501)."""
    return FrameError(f"frame-end octet is 0x{octet:02x}, not 0xce", offset=offset, channel=channel)


def frame_header_error(
    frame_type: int, channel: int, size: int, offset: int
) -> AMQPDecodeError | None:
    """What is wrong with a frame header at stream ``offset`` before its payload is read, or
    None: an unknown type, a content frame on channel 0, a heartbeat on another channel or
    with a payload, a method or content header payload shorter than its fixed part.

    The frame decoder's checked path raises it; the dissector's resync believes a candidate
    frame start only where it is None (:mod:`amqp_codec.inspect.resync`).
    """
    if frame_type == FRAME_METHOD:
        if size < 4:
            return FrameSyntaxError(
                f"method payload of {size} bytes has no class and method id",
                offset=offset + 7,
                channel=channel,
            )
        return None
    if frame_type == FRAME_BODY:
        if channel == 0:
            return UnexpectedFrameError("content body frame on channel 0", offset=offset, channel=0)
        return None
    if frame_type == FRAME_HEADER:
        if channel == 0:
            return UnexpectedFrameError(
                "content header frame on channel 0", offset=offset, channel=0
            )
        if size < 14:
            return FrameSyntaxError(
                f"content header of {size} bytes is shorter than its fixed part",
                offset=offset + 7,
                channel=channel,
            )
        return None
    if frame_type == FRAME_HEARTBEAT:
        if channel != 0 or size != 0:
            return FrameError(
                f"heartbeat frame on channel {channel} with {size} payload bytes "
                "(must be channel 0, empty)",
                offset=offset,
                channel=channel,
            )
        return None
    return FrameError(f"unknown frame type {frame_type}", offset=offset, channel=channel)


@dataclass(frozen=True, slots=True)
class ProtocolHeader:
    """The 8-byte protocol header a client sends first: ``AMQP`` and four version octets.

    For 0-9-1 the octets are protocol id 0, major 0, minor 9, revision 1. Older clients sent
    ``AMQP 1 1 0 9`` (class 1, instance 1, major 0, minor 9); the fields keep whatever came.
    """

    protocol_id: int = 0
    major: int = 0
    minor: int = 9
    revision: int = 1

    @property
    def version_bytes(self) -> bytes:
        """The four octets after ``AMQP``."""
        return bytes((self.protocol_id, self.major, self.minor, self.revision))


@dataclass(frozen=True, slots=True)
class MethodFrame:
    """A method frame: one method on one channel."""

    channel: int
    method: Method


@dataclass(frozen=True, slots=True)
class ContentHeaderFrame:
    """A content header frame: the body size and properties of the message that follows.

    ``weight`` is unused by AMQP 0-9-1 and always 0 on the wire in practice; a decoded frame
    keeps what arrived.
    """

    channel: int
    class_id: int
    body_size: int
    properties: Properties
    weight: int = 0


@dataclass(frozen=True, slots=True, repr=False)
class ContentBodyFrame:
    """A content body frame: one slice of a message body. Its repr shows the first bytes."""

    channel: int
    payload: bytes

    def __repr__(self) -> str:
        return f"ContentBodyFrame(channel={self.channel}, payload={body_repr(self.payload)})"


#: How many bytes of a body a repr shows.
REPR_BODY_BYTES = 48


def body_repr(body: bytes) -> str:
    """A message body for a repr: whole if short, else its first bytes and its length."""
    if len(body) <= REPR_BODY_BYTES:
        return repr(bytes(body))
    return f"{bytes(body[:REPR_BODY_BYTES])!r}...<{len(body)} bytes>"


@dataclass(frozen=True, slots=True)
class HeartbeatFrame:
    """A heartbeat frame (always channel 0 when valid)."""

    channel: int = 0


Frame = (
    ProtocolHeader
    | MethodFrame
    | ContentHeaderFrame
    | ContentBodyFrame
    | HeartbeatFrame
    | DraftFrame  # 99-0 (amqp_codec.wire010)
)


def _frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    try:
        return b"".join((_pack_header(frame_type, channel, len(payload)), payload, _END))
    except struct.error:
        raise AMQPEncodeError(
            f"channel {channel!r} is not 0..65535 or payload is over 4 GiB", field="channel"
        ) from None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_channel(channel: object) -> None:
    """Raise :class:`AMQPEncodeError` unless ``channel`` is an int in 0..65535."""
    if not _is_int(channel) or not 0 <= channel <= 0xFFFF:  # type: ignore[operator]
        raise AMQPEncodeError(f"channel {channel!r} is not an int in 0..65535", field="channel")


def check_payload(payload: object, field: str = "payload") -> bytes:
    """``payload`` as bytes; :class:`AMQPEncodeError` unless it is bytes, bytearray or memoryview."""
    if type(payload) is bytes:
        return payload
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return bytes(payload)
    raise AMQPEncodeError(f"{field} takes bytes, not {type(payload).__name__}", field=field)


def encode_frame(frame: Frame) -> bytes:
    """The wire bytes of ``frame``.

    Checked before anything is encoded, each raising :class:`AMQPEncodeError` naming the field:
    the frame is one of the frame classes; ``channel`` an int in 0..65535; a method frame's
    ``method`` a generated :class:`~amqp_codec.base.Method` (whose fields its encoder checks);
    a content header's ``properties`` a :class:`~amqp_codec.base.Properties`, ``class_id``
    and ``weight`` ints in 0..65535 and ``body_size`` in 0..2**64-1; a body's ``payload``
    bytes; a protocol header's four octets ints in 0..255.
    """
    if isinstance(frame, MethodFrame):
        check_channel(frame.channel)
        if not isinstance(frame.method, Method):
            raise AMQPEncodeError(
                f"method takes a generated method, not {type(frame.method).__name__}",
                field="method",
            )
        return _frame(FRAME_METHOD, frame.channel, frame.method.encode())
    if isinstance(frame, ContentBodyFrame):
        check_channel(frame.channel)
        return _frame(FRAME_BODY, frame.channel, check_payload(frame.payload))
    if isinstance(frame, ContentHeaderFrame):
        check_channel(frame.channel)
        return _frame(FRAME_HEADER, frame.channel, _content_header(frame))
    if isinstance(frame, HeartbeatFrame):
        check_channel(frame.channel)
        return _frame(FRAME_HEARTBEAT, frame.channel, b"")
    if isinstance(frame, ProtocolHeader):
        octets = (frame.protocol_id, frame.major, frame.minor, frame.revision)
        if not all(_is_int(o) and 0 <= o <= 255 for o in octets):
            raise AMQPEncodeError(f"protocol header octets {octets!r} must be ints in 0..255")
        return b"AMQP" + bytes(octets)
    if isinstance(frame, DraftFrame):  # 99-0's 12-byte frames (amqp_codec.wire010)
        return encode_draft_frame(frame)
    raise AMQPEncodeError(f"not a frame: {type(frame).__name__}")


def _content_header(frame: ContentHeaderFrame) -> bytes:
    if not isinstance(frame.properties, Properties):
        raise AMQPEncodeError(
            f"properties takes generated properties, not {type(frame.properties).__name__}",
            field="properties",
        )
    for name in ("class_id", "weight", "body_size"):
        if not _is_int(getattr(frame, name)):
            raise AMQPEncodeError(f"{name} takes an int", field=name)
    try:
        fixed = _pack_content_header(frame.class_id, frame.weight, frame.body_size)
    except struct.error:
        raise AMQPEncodeError(
            "class_id and weight must be 0..65535 and body_size 0..2**64-1", field="body_size"
        ) from None
    return fixed + frame.properties.encode()


def encode_message(
    channel: int,
    method: Method,
    properties: Properties,
    body: bytes,
    frame_max: int = 0,
) -> bytes:
    """Method frame, content header and body frames of one message, ready to send.

    The body is split into frames of at most ``frame_max - 8`` bytes (the frame overhead);
    ``frame_max=0`` means no limit, one body frame. An empty body has no body frames.
    Checked as in :func:`encode_frame`, and: ``method`` carries content, ``properties`` are of
    its class, ``body`` is bytes and ``frame_max`` an int (0, or more than 8).
    """
    # The usual arguments (plain ints, bytes) are checked inline: the calls cost as much as
    # encoding a method's fields.
    if type(channel) is not int or not 0 <= channel <= 0xFFFF:
        check_channel(channel)
    if not isinstance(method, Method):
        raise AMQPEncodeError(f"method takes a generated method, not {type(method).__name__}")
    if not isinstance(properties, Properties):
        raise AMQPEncodeError(
            f"properties takes generated properties, not {type(properties).__name__}",
            field="properties",
        )
    if type(body) is not bytes:
        body = check_payload(body, "body")
    if (type(frame_max) is not int and not _is_int(frame_max)) or frame_max < 0:
        raise AMQPEncodeError(f"frame_max {frame_max!r} is not an int >= 0", field="frame_max")
    if not method.HAS_CONTENT:
        raise AMQPEncodeError(f"{method.NAME} does not carry content")
    class_id = method.CLASS_ID
    if properties.CLASS_ID != class_id:
        raise AMQPEncodeError(
            f"{type(properties).__name__} belongs to class {properties.CLASS_ID}, "
            f"{method.NAME} to class {class_id}"
        )
    if frame_max and frame_max <= FRAME_OVERHEAD:
        raise AMQPEncodeError(f"frame_max {frame_max} leaves no room for a body", field="frame_max")
    payload = method.encode()
    props = properties.encode()
    size = len(body)
    try:
        parts = [
            _pack_header(FRAME_METHOD, channel, len(payload)),
            payload,
            _pack_end_and_content_header(
                FRAME_END, FRAME_HEADER, channel, 12 + len(props), class_id, 0, size
            ),
            props,
            _END,
        ]
    except struct.error:
        raise AMQPEncodeError(f"channel {channel!r} is not 0..65535", field="channel") from None
    chunk = frame_max - FRAME_OVERHEAD if frame_max else size
    if 0 < size <= chunk:
        parts += (_pack_header(FRAME_BODY, channel, size), body, _END)
    elif size:
        view = memoryview(body)
        for start in range(0, size, chunk):
            piece = view[start : start + chunk]
            parts += (_pack_header(FRAME_BODY, channel, len(piece)), piece, _END)  # type: ignore[arg-type]
    return b"".join(parts)
