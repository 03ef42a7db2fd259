"""The incremental, sans-IO frame decoder.

Feed bytes with :meth:`FrameDecoder.receive_data`; take frames with
:meth:`FrameDecoder.next_frame` until it returns :data:`NEED_DATA`. No I/O, no threads, no
callbacks: any event loop or a capture reader can drive it.

Security properties, in order of the checks:

* **Bounded work.** Incoming chunks are queued, not joined, until a whole frame (or frame
  header) can be read, and each frame is then decoded in place inside one buffer. Every byte
  is copied a constant number of times, so total work is O(n) however the stream is chunked.
* **Limits before buffering.** A frame's size is checked against ``frame_max`` (or the safety
  cap ``max_frame_size``) as soon as its 7-byte header is there, before its payload is waited
  for. Content body sizes are checked against ``max_body_size`` at the content header, field
  table nesting against ``max_table_depth``.
* **One error type.** Bad bytes raise :class:`~amqp_codec.errors.AMQPDecodeError` carrying the
  reply code, stream offset, channel, method and field. After a hard error the decoder stays
  failed and raises the same error again, like a connection that must be closed; after a soft
  one (406, a body over ``max_body_size``, which closes only its channel) it steps over that
  frame and goes on.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Final, Literal

from ._compiled import mypyc_attr
from ._content import DEFAULT_MAX_BODY_SIZE
from .base import Method, Properties, writable_twin
from .diagnose import locate_method_error, locate_properties_error
from .errors import (
    AMQPDecodeError,
    CommandInvalidError,
    FrameError,
    FrameSyntaxError,
    LimitExceededError,
    UnsupportedProtocolError,
)
from .frames import (
    FRAME_BODY,
    FRAME_END,
    FRAME_HEADER,
    FRAME_METHOD,
    FRAME_OVERHEAD,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    bad_frame_end,
    frame_header_error,
    unpack_frame_header,
)
from .protocol import (
    MethodDecoder,
    PropertiesDecoder,
    ProtocolSpec,
    default_spec,
    spec_for_header,
    spec_for_start,
)
from .table import DEFAULT_MAX_TABLE_DEPTH, check_table_tags
from .wire010 import frames as wire010

__all__ = [
    "DEFAULT_MAX_BODY_SIZE",
    "DEFAULT_MAX_FRAME_SIZE",
    "NEED_DATA",
    "FrameDecoder",
    "NeedData",
]

#: Frames larger than this are refused when no frame_max was negotiated. Real peers stay far
#: below it (RabbitMQ's own ceiling for frame_max is 128 KiB by default), yet it leaves room
#: for the oversized content headers RabbitMQ has been seen to send.
DEFAULT_MAX_FRAME_SIZE = 64 * 1024 * 1024

_DIAGNOSABLE = (AMQPDecodeError, IndexError, struct.error, ValueError, OverflowError)
# What sends a frame from the fast path to the checked one: the above, or no decoder for the
# method on that channel (KeyError).
_FAST_PATH_MISSES = (KeyError, *_DIAGNOSABLE)


@mypyc_attr(native_class=False)
class NeedData(enum.Enum):
    """Type of the :data:`NEED_DATA` sentinel."""

    NEED_DATA = "NEED_DATA"

    def __repr__(self) -> str:
        return "NEED_DATA"


#: Returned by :meth:`FrameDecoder.next_frame` when no whole frame is buffered.
NEED_DATA: Literal[NeedData.NEED_DATA] = NeedData.NEED_DATA

# Typed as returning ints, so that a compiled build works on native ints from them.
_unpack_index: Final[Callable[[bytes, int], tuple[int]]] = struct.Struct(">I").unpack_from
_unpack_frame_start: Final[Callable[[bytes, int], tuple[int, int, int, int]]] = struct.Struct(
    ">BHII"
).unpack_from
_unpack_content_header: Final[Callable[[bytes, int], tuple[int, int, int]]] = struct.Struct(
    ">HHQ"
).unpack_from


# Frames are built in writable twins (same slots) and then given their frozen class, as the
# generated method decoders do: half the cost of the slot setters.
_MethodFrameTwin: Final = writable_twin(MethodFrame)
_ContentHeaderFrameTwin: Final = writable_twin(ContentHeaderFrame)
_ContentBodyFrameTwin: Final = writable_twin(ContentBodyFrame)


#: Below this many bytes a body piece is sliced rather than viewed (see _spanning_body).
_SLICE_MAX: Final = 4096
#: With body views on, a body frame in one chunk is viewed (not copied) when it is larger
#: than _SLICE_MAX (a slice is cheaper than a view joined later) and at least this fraction
#: (1/_VIEW_SHARE) of the received chunk holding it, as is a piece of one spanning chunks: the
#: chunks a message in progress keeps alive then add up to at most _VIEW_SHARE times its
#: body bytes.
_VIEW_SHARE: Final = 4
#: A frame of at most this many bytes (header and end included) that the last chunk cut is
#: completed by joining the next chunk to it as soon as it comes (see receive_data); a larger
#: one waits in the queue for its last chunk.
_JOIN_MAX: Final = 8192

# The frame classes and NEED_DATA under Final names: a compiled build reads them as C statics.
_MethodFrame: Final = MethodFrame
_ContentHeaderFrame: Final = ContentHeaderFrame
_ContentBodyFrame: Final = ContentBodyFrame
_NEED_DATA: Final = NEED_DATA

_HEARTBEAT: Final = HeartbeatFrame(0)  # frozen, so one instance serves every heartbeat


def _resolve_spec(spec: ProtocolSpec | ModuleType | None) -> ProtocolSpec | None:
    if spec is None or isinstance(spec, ProtocolSpec):
        return spec
    found = getattr(spec, "SPEC", None)
    if isinstance(found, ProtocolSpec):
        return found
    raise TypeError(f"spec must be a ProtocolSpec or a generated package, not {spec!r}")


@mypyc_attr(allow_interpreted_subclasses=True)
class FrameDecoder:
    """Decode a byte stream (one direction of one connection) into frames.

    Args:
        spec: the protocol version (``amqp_codec.v0_9_1`` or its ``SPEC``). ``None`` detects
            it from the stream: the client's protocol header, or the server's
            connection.start; a stream that starts mid-connection is read as 0-9-1.
        frame_max: the negotiated frame_max (``connection.tune-ok``); a frame larger than it
            raises a 501 error from its header. ``None`` or 0: no negotiated limit, only
            ``max_frame_size``. Can be set later through :attr:`frame_max`.
        max_frame_size: safety cap on any frame's payload when no frame_max applies.
        max_body_size: largest body size a content header may announce (406 beyond).
        max_table_depth: deepest field-table nesting accepted (502 beyond).
        strict_tags: hold field tables to the version's own grammar
            (:attr:`ProtocolSpec.table_tags`; 0-8: S I D T F), refusing any other tag with
            502 and the path to it. Off by default: every version decodes every tag, as
            RabbitMQ does (it accepts them from 0-8 clients and relays 0-9-1 publishers'
            headers to 0-8 consumers unchanged). For validators and test suites.
        accept_extended_tags: the former name of ``not strict_tags``, still accepted.
    """

    def __init__(
        self,
        spec: ProtocolSpec | ModuleType | None = None,
        *,
        frame_max: int | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        max_table_depth: int = DEFAULT_MAX_TABLE_DEPTH,
        strict_tags: bool = False,
        accept_extended_tags: bool | None = None,
    ) -> None:
        self._spec = _resolve_spec(spec)
        self._strict_tags = _strict(strict_tags, accept_extended_tags)
        self._allowed_tags: frozenset[str] | None = None  # set with the version, if strict
        self._version = ""  # "AMQP 0-8", for strict mode's errors
        self._buf = b""
        self._pos = 0  # next unread byte of _buf
        self._base = 0  # stream offset of _buf[0]
        self._pending: list[bytes | memoryview] = []  # chunks received, not yet joined into _buf
        self._pending_len = 0
        self._need = 0  # bytes _fill last waited for, counted from _pos
        self._started = False  # past the protocol header / first frame
        self._error: AMQPDecodeError | None = None
        self._skipped: AMQPDecodeError | None = None  # the last soft error's frame was skipped
        self._fast = False  # next_frame's fast path is on once the version is known
        # The spec's method decoders split by the channels they may arrive on.
        self._connection_decoders: dict[int, MethodDecoder] = {}
        self._channel_decoders: dict[int, MethodDecoder] = {}
        self._property_decoders: Mapping[int, PropertiesDecoder] = {}
        self._eof = False
        # Content body frames' payloads as views of the received chunks (memoryview, or a
        # list of pieces for a frame spanning chunks) rather than bytes: only for a message
        # assembler in this package, which joins a body once (MessageDecoder, Connection).
        self._body_views = False
        self.max_frame_size = max_frame_size
        self.max_body_size = max_body_size
        self.max_table_depth = max_table_depth
        self._frame_max = 0
        self._limit = max_frame_size
        self.frame_max = frame_max or 0
        #: How the protocol version was found: "given", "protocol header", "connection.start"
        #: or "assumed" (a stream that began mid-connection).
        self.detected_by: str | None = "given" if self._spec is not None else None

    # -- configuration -------------------------------------------------------------------

    @property
    def spec(self) -> ProtocolSpec | None:
        """The protocol version in use; ``None`` until detected."""
        return self._spec

    @property
    def strict_tags(self) -> bool:
        """Refuse field-table tags outside the version's own grammar (0-8: S I D T F); can be
        changed at any time, e.g. once connection.start shows which peer it is."""
        return self._strict_tags

    @strict_tags.setter
    def strict_tags(self, value: bool) -> None:
        self._strict_tags = value
        if self._started and self._spec is not None:
            self._enable_fast_path()

    @property
    def accept_extended_tags(self) -> bool:
        """``not strict_tags``, under its former name."""
        return not self._strict_tags

    @accept_extended_tags.setter
    def accept_extended_tags(self, value: bool) -> None:
        self.strict_tags = not value

    @property
    def frame_max(self) -> int:
        """The negotiated frame_max (0 = none); frames larger than it are refused (501)."""
        return self._frame_max

    @frame_max.setter
    def frame_max(self, value: int) -> None:
        if value and value <= FRAME_OVERHEAD:
            raise ValueError(f"frame_max {value} is too small to carry a frame")
        self._frame_max = value
        self._limit = value - FRAME_OVERHEAD if value else self.max_frame_size

    @property
    def offset(self) -> int:
        """Stream offset of the next byte to decode."""
        return self._base + self._pos

    @property
    def buffered(self) -> int:
        """Bytes received but not yet decoded."""
        return len(self._buf) - self._pos + self._pending_len

    # -- input -----------------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Queue bytes received from the peer. ``b""`` marks the end of the stream.

        Only queues: decoding happens in :meth:`next_frame`, which checks each frame's size
        from its header, so call it after every receive. After a hard decode error the data is
        dropped.
        """
        if not data:
            self._eof = True
            return
        if self._eof:
            raise RuntimeError("receive_data() after the end of the stream")
        if self._error is not None:
            return  # the stream is dead (next_frame re-raises): keep nothing more
        chunk = data if type(data) is bytes else bytes(data)
        if not self._pending_len:
            pos = self._pos
            rest = len(self._buf) - pos
            if not rest:
                # Everything so far is decoded: decode the new chunk in place, no copy.
                self._base += pos
                self._buf = chunk
                self._pos = 0
                return
            need = self._need
            if 0 < need <= _JOIN_MAX and rest + len(chunk) >= need:
                # The end of the last chunk cut a small frame, which this one completes: join
                # them now (the tail is shorter than the frame), so next_frame finds it whole.
                self._base += pos
                self._buf = self._buf[pos:] + chunk
                self._pos = 0
                self._need = 0
                return
        self._pending.append(chunk)
        self._pending_len += len(chunk)

    def _fill(self, needed: int) -> bool:
        """Make ``needed`` bytes available at ``_buf[_pos:]``; False if not received yet."""
        have = len(self._buf) - self._pos
        if have + self._pending_len < needed:
            self._need = needed
            return False
        self._need = 0
        self._base += self._pos
        # One copy of every byte: the unread tail is joined through a view, not sliced first.
        self._pending.insert(0, memoryview(self._buf)[self._pos :])
        self._buf = b"".join(self._pending)
        self._pos = 0
        self._pending.clear()
        self._pending_len = 0
        return True

    # -- output ----------------------------------------------------------------------------

    def __iter__(self) -> FrameDecoder:
        return self

    def __next__(self) -> Frame:
        frame = self.next_frame()
        if frame is NEED_DATA:
            raise StopIteration
        return frame

    def next_frame(self) -> Frame | Literal[NeedData.NEED_DATA]:
        """The next whole frame, or :data:`NEED_DATA`. Raises :class:`AMQPDecodeError`."""
        # Fast path: a whole, valid frame already in the buffer, or one cut by its end. Anything
        # else (more data needed, the stream's start, other frame types, any error) goes to
        # _next_frame, which decodes it again with every check and the located errors.
        buf = self._buf
        pos = self._pos
        have = len(buf)
        if self._fast and have - pos > 11:
            # The frame header and, for a method frame, its class and method ids.
            frame_type, channel, size, index = _unpack_frame_start(buf, pos)
            end = pos + 7 + size
            if end < have and size <= self._limit and buf[end] == 206:
                if frame_type == 1 and size >= 4:
                    # Channel 0 carries the connection class and only it: one table each.
                    decoders = self._channel_decoders if channel else self._connection_decoders
                    try:
                        method = decoders[index](buf, pos + 11, end, self.max_table_depth)
                        if self._allowed_tags is not None:  # 0-8: a smaller tag set
                            _check_tags(method, self._allowed_tags, 0, self._version)
                    except _FAST_PATH_MISSES:
                        pass
                    else:
                        twin = _MethodFrameTwin()
                        twin.channel = channel
                        twin.method = method
                        twin.__class__ = _MethodFrame
                        self._pos = end + 1
                        return twin  # type: ignore[no-any-return]
                elif frame_type == 3 and channel:
                    body = _ContentBodyFrameTwin()
                    body.channel = channel
                    if size > _SLICE_MAX and self._body_views and size * _VIEW_SHARE >= have:
                        body.payload = memoryview(buf)[pos + 7 : end]
                    else:
                        body.payload = buf[pos + 7 : end]
                    body.__class__ = _ContentBodyFrame
                    self._pos = end + 1
                    return body  # type: ignore[no-any-return]
                elif frame_type == 2 and channel and size >= 14:
                    class_id, weight, body_size = _unpack_content_header(buf, pos + 7)
                    decode_properties = self._property_decoders.get(class_id)
                    if decode_properties is not None and body_size <= self.max_body_size:
                        try:
                            properties = decode_properties(buf, pos + 19, end, self.max_table_depth)
                            if self._allowed_tags is not None:
                                _check_tags(properties, self._allowed_tags, 0, self._version)
                        except _DIAGNOSABLE:
                            pass
                        else:
                            header = _ContentHeaderFrameTwin()
                            header.channel = channel
                            header.class_id = class_id
                            header.body_size = body_size
                            header.properties = properties
                            header.weight = weight
                            header.__class__ = _ContentHeaderFrame
                            self._pos = end + 1
                            return header  # type: ignore[no-any-return]
                elif frame_type == 8 and not channel and not size:
                    self._pos = end + 1
                    return _HEARTBEAT
            elif end >= have and size <= self._limit and not self._pending_len and not self._eof:
                # Cut by the end of the chunk: wait for the rest (see receive_data).
                self._need = end + 1 - pos
                return _NEED_DATA
        elif pos == have and self._fast and not self._pending_len and not self._eof:
            return _NEED_DATA  # everything received is decoded
        if self._error is not None:
            raise self._error
        if len(buf) - pos + self._pending_len < self._need and not self._eof:
            return _NEED_DATA  # still short of the frame _fill last waited for
        try:
            return self._next_frame()
        except AMQPDecodeError as exc:
            if self._skip_soft_error_frame(exc):
                raise  # only that frame's channel is in error: the stream goes on
            self._error = exc
            self._fast = False
            raise

    def _skip_soft_error_frame(self, error: AMQPDecodeError) -> bool:
        """Step over the frame a soft error (406, a content body over ``max_body_size``) was
        raised for, which closes only its channel; False for errors that end the stream."""
        if error is self._skipped:
            return True  # raised through a nested next_frame call: already stepped over
        if error.hard or not error.channel or self._spec is None or not self._started:
            return False
        if self._spec.wire_format != "0-9":
            return False
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 7:
            return False
        _frame_type, _channel, size = unpack_frame_header(buf, pos)
        if len(buf) - pos < size + FRAME_OVERHEAD:
            return False
        self._pos = pos + size + FRAME_OVERHEAD
        self._skipped = error
        return True

    def _next_frame(self) -> Frame | Literal[NeedData.NEED_DATA]:
        buf = self._buf
        pos = self._pos
        if len(buf) - pos < 7:
            if not self._fill(7):
                return self._need_data()
            buf, pos = self._buf, 0
        if not self._started:
            return self._start(buf, pos)
        if self._spec is not None and self._spec.wire_format != "0-9":
            return self._next_draft_frame()
        frame_type, channel, size = unpack_frame_header(buf, pos)
        if size > self._limit:
            raise self._too_large(size, channel)
        end = pos + 7 + size
        if end >= len(buf):
            if (
                frame_type == FRAME_BODY
                and channel
                and self._fast
                and len(buf) - pos + self._pending_len >= size + FRAME_OVERHEAD
            ):
                body = self._spanning_body(channel, size)
                if body is not None:
                    return body
            if not self._fill(size + FRAME_OVERHEAD):
                return self._need_data()
            if self._fast:  # the whole frame is in the buffer now
                return self.next_frame()
            buf, pos, end = self._buf, 0, 7 + size
        if buf[end] != FRAME_END:
            raise bad_frame_end(buf[end], self._base + end, channel)
        # The header's own rules, shared with the dissector's resync (the fast path in
        # next_frame inlines the few it needs: a call per frame there would cost speed).
        error = frame_header_error(frame_type, channel, size, self._base + pos)
        if error is not None:
            raise error
        start = pos + 7
        if frame_type == FRAME_METHOD:
            frame: Frame = self._method_frame(buf, start, end, channel)
        elif frame_type == FRAME_BODY:
            frame = ContentBodyFrame(channel, buf[start:end])
        elif frame_type == FRAME_HEADER:
            frame = self._content_header_frame(buf, start, end, channel)
        else:
            frame = _HEARTBEAT
        self._pos = end + 1
        if self._pos == len(buf):  # all consumed: drop the buffer now rather than later
            self._base += self._pos
            self._buf = b""
            self._pos = 0
        return frame

    def _spanning_body(self, channel: int, size: int) -> ContentBodyFrame | None:
        """A body frame that runs from ``_buf`` into the queued chunks, its payload joined
        straight from them: one copy of a large body, where joining the chunks first and
        slicing the payload out would make two. ``None`` if its frame-end octet is wrong (the
        checked path then raises the located error)."""
        buf, pos, pending = self._buf, self._pos, self._pending
        start = pos + 7
        in_buf = len(buf) - start  # payload bytes in _buf
        have = in_buf
        used = 0  # queued chunks the frame reaches into
        while have <= size:  # the frame-end octet is not in the pieces yet
            have += len(pending[used])
            used += 1
        last = pending[used - 1]
        frame_end = len(last) - (have - size)  # its index in the last chunk
        if last[frame_end] != FRAME_END:
            return None
        payload: bytes | list[bytes | memoryview]
        if self._body_views and size >= used * _SLICE_MAX:
            # Not joined at all: the pieces go to the message assembler, which joins the
            # whole body once. A piece that is a small part of its chunk is copied, so that
            # what the views hold stays within _VIEW_SHARE times the body bytes; a frame in
            # chunks of a few KiB or less on average is joined here, as without views, so
            # that a message does not keep one object per tiny chunk it came in.
            head = memoryview(buf)[start:] if in_buf * _VIEW_SHARE >= len(buf) else buf[start:]
            tail = (
                memoryview(last)[:frame_end]
                if frame_end * _VIEW_SHARE >= len(last)
                else last[:frame_end]
            )
            payload = [head, *pending[: used - 1], tail]
        else:
            # A piece of a few KiB is sliced (cheaper than making a memoryview of it); a
            # larger one is joined through a view, so a large body is copied once.
            head = buf[start:] if in_buf <= _SLICE_MAX else memoryview(buf)[start:]
            tail = last[:frame_end] if frame_end <= _SLICE_MAX else memoryview(last)[:frame_end]
            if used == 1:
                payload = b"".join((head, tail))
            else:
                payload = b"".join((head, *pending[: used - 1], tail))
        # The rest of the last chunk becomes the buffer, in place.
        consumed = have - len(last) - in_buf  # the chunks before it
        self._base += len(buf) + consumed
        self._buf = last if type(last) is bytes else bytes(last)
        self._pos = frame_end + 1
        del pending[:used]
        self._pending_len -= consumed + len(last)
        self._need = 0
        frame = _ContentBodyFrameTwin()
        frame.channel = channel
        frame.payload = payload
        frame.__class__ = _ContentBodyFrame
        return frame  # type: ignore[no-any-return]

    def _need_data(self) -> Literal[NeedData.NEED_DATA]:
        if self._eof and self.buffered:
            raise stream_ended_error(self.buffered, self.offset)
        return NEED_DATA

    def _too_large(self, size: int, channel: int) -> AMQPDecodeError:
        if self._frame_max:
            return FrameError(
                f"frame payload of {size} bytes exceeds the negotiated frame_max "
                f"{self._frame_max} (at most {self._limit} payload bytes)",
                offset=self.offset,
                channel=channel,
            )
        return LimitExceededError(
            f"frame payload of {size} bytes exceeds the safety cap max_frame_size "
            f"{self.max_frame_size}",
            reply_code=501,
            offset=self.offset,
            channel=channel,
        )

    def _start(self, buf: bytes, pos: int) -> Frame | Literal[NeedData.NEED_DATA]:
        """The first thing in the stream: a protocol header, or a frame that names the version."""
        if buf[pos : pos + 4] == b"AMQP":
            if len(buf) - pos < 8:
                if not self._fill(8):
                    return self._need_data()
                buf, pos = self._buf, 0
            header = ProtocolHeader(*buf[pos + 4 : pos + 8])
            self._pos = pos + 8
            self._started = True
            if self._spec is None:
                self._spec = spec_for_header(header.version_bytes)
                if self._spec is None:
                    raise UnsupportedProtocolError(
                        f"protocol header AMQP {' '.join(map(str, header.version_bytes))} "
                        "names a version this codec does not support",
                        offset=self._base + pos,
                    )
                self.detected_by = "protocol header"
            self._enable_fast_path()
            return header
        if self._spec is None:
            if buf[pos : pos + 2] == b"\x0f\x01" and len(buf) - pos < 16:  # 99-0's 12-byte header?
                if not self._fill(16):
                    return self._need_data()
                buf, pos = self._buf, 0
            draft_version = wire010.start_version(buf, pos)
            frame_type, _channel, size = unpack_frame_header(buf, pos)
            if frame_type == FRAME_METHOD and size >= 6 and len(buf) - pos < 13:
                if not self._fill(13):
                    return self._need_data()
                buf, pos = self._buf, 0
            if draft_version is not None or (
                frame_type == FRAME_METHOD
                and size >= 6
                and buf[pos + 7 : pos + 11] == b"\x00\x0a\x00\x0a"
            ):
                # connection.start: version-major and version-minor are its first two octets.
                major, minor = draft_version or (buf[pos + 11], buf[pos + 12])
                self._spec = spec_for_start(major, minor, draft_version is not None)
                if self._spec is None:
                    raise UnsupportedProtocolError(
                        f"connection.start offers AMQP {major}-{minor}, which this codec "
                        "does not support",
                        offset=self._base + pos,
                    )
                self.detected_by = "connection.start"
            else:
                self._spec = default_spec()
                self.detected_by = "assumed"
        self._started = True
        self._enable_fast_path()
        return self._next_frame()

    def _enable_fast_path(self) -> None:
        spec = self._spec
        assert spec is not None
        self._connection_decoders, self._channel_decoders = _decoders_by_channel(spec)
        self._property_decoders = spec.property_decoders
        self._allowed_tags = spec.table_tags if self._strict_tags else None
        self._version = f"AMQP {spec.name}"
        self._fast = self._error is None
        self._fast &= spec.wire_format == "0-9"  # 99-0 frames take _next_draft_frame

    def _next_draft_frame(self) -> Frame | Literal[NeedData.NEED_DATA]:
        """The next frame of a 99-0 stream (12-byte frame header; see amqp_codec.wire010)."""
        spec = self._spec
        assert spec is not None
        buf, pos = self._buf, self._pos
        if len(buf) - pos < wire010.HEADER_SIZE:
            if not self._fill(wire010.HEADER_SIZE):
                return self._need_data()
            buf, pos = self._buf, 0
        channel = int.from_bytes(buf[pos + 6 : pos + 8], "big")
        try:
            size = wire010.frame_size(buf, pos)
            if self._frame_max and size > self._frame_max:
                raise FrameError(
                    f"frame of {size} bytes exceeds the negotiated frame_max {self._frame_max}",
                    offset=pos,
                )
        except AMQPDecodeError as exc:
            raise self._relocate(exc.located(offset=pos), channel) from None
        if len(buf) - pos <= size:
            if not self._fill(size + 1):
                return self._need_data()  # its error already holds a stream offset
            buf, pos = self._buf, 0
        try:
            frame = wire010.decode_frame(spec, buf, pos, self.max_table_depth)
        except AMQPDecodeError as exc:
            raise self._relocate(exc.located(offset=pos), channel) from None
        self._pos = pos + size + 1
        if self._pos == len(buf):
            self._base += self._pos
            self._buf = b""
            self._pos = 0
        return frame

    def _method_frame(self, buf: bytes, start: int, end: int, channel: int) -> MethodFrame:
        spec = self._spec
        assert spec is not None  # set by _start before any frame is decoded
        try:
            method = _decode_method(spec, buf, start, end, self.max_table_depth)
            if self._allowed_tags is not None:
                _check_tags(method, self._allowed_tags, start, self._version)
        except AMQPDecodeError as exc:
            raise self._relocate(exc, channel) from None
        if (spec.connection_class_id == method.CLASS_ID) != (channel == 0):
            raise CommandInvalidError(
                f"{method.NAME} on channel {channel}: channel 0 carries the connection "
                "class and only it",
                offset=self._base + start - 7,
                channel=channel,
                class_id=method.CLASS_ID,
                method_id=method.METHOD_ID,
            )
        return MethodFrame(channel, method)

    def _content_header_frame(
        self, buf: bytes, start: int, end: int, channel: int
    ) -> ContentHeaderFrame:
        spec = self._spec
        assert spec is not None  # channel and size checked: frame_header_error
        class_id, weight, body_size = _unpack_content_header(buf, start)
        decode = spec.property_decoders.get(class_id)
        if decode is None:
            raise CommandInvalidError(
                f"content header for class {class_id}, which has no content",
                offset=self._base + start,
                channel=channel,
                class_id=class_id,
            )
        if body_size > self.max_body_size:
            raise LimitExceededError(
                f"content body of {body_size} bytes exceeds max_body_size {self.max_body_size}",
                reply_code=406,
                offset=self._base + start,
                channel=channel,
                class_id=class_id,
            )
        try:
            properties = decode(buf, start + 12, end, self.max_table_depth)
        except _DIAGNOSABLE as exc:
            cls = spec.properties[class_id]
            error = locate_properties_error(cls, buf, start + 12, end, self.max_table_depth, exc)
            if error.offset is None:
                error.offset = start
            error.class_id = class_id
            raise self._relocate(error, channel) from None
        if self._allowed_tags is not None:
            try:
                _check_tags(properties, self._allowed_tags, start, self._version, class_id)
            except AMQPDecodeError as exc:
                raise self._relocate(exc, channel) from None
        return ContentHeaderFrame(channel, class_id, body_size, properties, weight)

    def _relocate(self, error: AMQPDecodeError, channel: int) -> AMQPDecodeError:
        """Turn the error's buffer position into a stream offset and add the channel."""
        if error.offset is not None:
            error.offset += self._base
        error.channel = channel
        return error


def stream_ended_error(left_over: int, offset: int) -> FrameError:
    """The error for a stream that ends ``left_over`` bytes into a frame starting at ``offset``."""
    return FrameError(f"stream ended inside a frame ({left_over} bytes left over)", offset=offset)


# Per spec, built once: a dissector creates a decoder per resynchronisation.
_DECODERS_BY_CHANNEL: dict[
    int, tuple[ProtocolSpec, dict[int, MethodDecoder], dict[int, MethodDecoder]]
] = {}


def _decoders_by_channel(
    spec: ProtocolSpec,
) -> tuple[dict[int, MethodDecoder], dict[int, MethodDecoder]]:
    """``spec``'s method decoders split by channel: (connection class, every other class)."""
    cached = _DECODERS_BY_CHANNEL.get(id(spec))
    if cached is None or cached[0] is not spec:
        connection = spec.connection_class_id
        decoders = spec.method_decoders.items()
        cached = (
            spec,
            {index: decode for index, decode in decoders if index >> 16 == connection},
            {index: decode for index, decode in decoders if index >> 16 != connection},
        )
        _DECODERS_BY_CHANNEL[id(spec)] = cached
    return cached[1], cached[2]


def decode_method(
    payload: bytes | bytearray | memoryview,
    spec: ProtocolSpec | ModuleType | None = None,
    *,
    max_table_depth: int = DEFAULT_MAX_TABLE_DEPTH,
    strict_tags: bool = False,
    accept_extended_tags: bool | None = None,
) -> Method:
    """Decode one method frame payload (class id, method id, arguments) on its own.

    Error offsets are positions in ``payload``. ``strict_tags`` (and its former name
    ``accept_extended_tags``) as for :class:`FrameDecoder`.
    """
    data = bytes(payload)
    resolved = _resolve_spec(spec) or default_spec()
    method = _decode_method(resolved, data, 0, len(data), max_table_depth)
    if resolved.table_tags is not None and _strict(strict_tags, accept_extended_tags):
        _check_tags(method, resolved.table_tags, 0, f"AMQP {resolved.name}")
    return method


def _strict(strict_tags: bool, accept_extended_tags: bool | None) -> bool:
    """Strict mode from the option and its former, inverted name (which must agree)."""
    if accept_extended_tags is None:
        return strict_tags
    if strict_tags and accept_extended_tags:
        raise ValueError("strict_tags=True contradicts accept_extended_tags=True")
    return not accept_extended_tags


# The table-valued fields of each method and properties class (see _check_tags).
_TABLE_ATTRS: dict[type, tuple[str, ...]] = {}


def _check_tags(
    decoded: Method | Properties,
    allowed: frozenset[str],
    offset: int,
    version: str,
    class_id: int = 0,
) -> None:
    """Refuse (502) a field-table value in ``decoded`` whose tag is not in ``allowed``."""
    cls = type(decoded)
    attrs = _TABLE_ATTRS.get(cls)
    if attrs is None:  # once per generated class
        attrs = _TABLE_ATTRS[cls] = tuple(s.attr for s in cls.FIELDS if s.wire_type == "table")
    for attr in attrs:
        value = getattr(decoded, attr)
        if not value:
            continue
        try:
            check_table_tags(value, allowed, version)
        except AMQPDecodeError as exc:
            exc.field = attr + (exc.field or "")
            exc.offset = offset
            if isinstance(decoded, Method):
                raise exc.located(class_id=decoded.CLASS_ID, method_id=decoded.METHOD_ID) from None
            exc.class_id = class_id
            raise


def _decode_method(spec: ProtocolSpec, buf: bytes, start: int, end: int, depth: int) -> Method:
    """Decode the method payload ``buf[start:end]``; error offsets are positions in ``buf``."""
    if end - start < 4:
        raise FrameSyntaxError(
            f"method payload of {end - start} bytes has no class and method id", offset=start
        )
    (index,) = _unpack_index(buf, start)
    class_id, method_id = index >> 16, index & 0xFFFF
    decode = spec.method_decoders.get(index)
    if decode is None:
        raise CommandInvalidError(
            f"unknown method {class_id}.{method_id}",
            offset=start,
            class_id=class_id,
            method_id=method_id,
        )
    try:
        return decode(buf, start + 4, end, depth)
    except _DIAGNOSABLE as exc:
        cls = spec.methods[(class_id, method_id)]
        error = locate_method_error(cls, buf, start + 4, end, depth, exc)
        if error.offset is None:
            error.offset = start
        raise error.located(class_id=class_id, method_id=method_id) from None
