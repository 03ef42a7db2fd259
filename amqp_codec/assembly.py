"""Assemble content frames into messages, one in progress per channel.

A content-carrying method (basic.publish, basic.deliver, basic.return, basic.get-ok) is
followed on its channel by one content header and then body frames adding up to the header's
body size. Anything else on that channel in the middle of the sequence is a 505
(unexpected frame) error, as the spec requires.

The same checks serve a live connection, where the first error closes it, and a capture
dissector, which reports an error and carries on: after :meth:`MessageAssembler.feed`
raises, the channel's message in progress has been dropped and the next frames are checked
from a clean state. A capture that starts mid-connection, or lost frames to a decode error,
can say so (``mid_stream=True``, :meth:`MessageAssembler.forget`): content frames on a
channel in an unknown state are then not checked until that channel's next method.

Fed frames from a :class:`~amqp_codec.FrameDecoder`, a body is copied twice: into each
frame's payload, then joined. :class:`~amqp_codec.MessageDecoder` decodes bytes straight
into messages and copies each body once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._content import ContentTracker, PendingContent
from .base import Method, Properties, writable_twin
from .errors import UnexpectedFrameError
from .frames import ContentBodyFrame, ContentHeaderFrame, Frame, MethodFrame, body_repr

__all__ = ["Message", "MessageAssembler"]


@dataclass(frozen=True, slots=True, repr=False)
class Message:
    """A whole message: its method, properties and body (its repr shows the first bytes)."""

    channel: int
    method: Method
    properties: Properties
    body: bytes

    def __repr__(self) -> str:
        return (
            f"Message(channel={self.channel}, method={self.method!r}, "
            f"properties={self.properties!r}, body={body_repr(self.body)})"
        )


# A message is made as the decoder makes frames: filled as its writable twin and then given
# its class (see writable_twin), not through the frozen dataclass's __init__.
_MessageTwin = writable_twin(Message)


@dataclass(slots=True)
class _Pending(PendingContent):
    # limit: the body size the content header announced.
    properties: Properties | None = None


class MessageAssembler(ContentTracker[_Pending]):
    """Feed every frame of a connection direction; get a :class:`Message` when one completes.

    Frames that are not part of content (other methods, heartbeats, the protocol header) are
    checked against the content sequence and otherwise ignored: handle them yourself.

    Args:
        max_body_size: largest body a content header may announce (406 beyond). Bodies are
            kept until their message completes, so this bounds the memory per channel.
        mid_stream: the frames fed do not start at the beginning of the connection. A content
            header or body frame on a channel that has had no method frame yet is then ignored
            (its method was before the capture started) instead of raising 505.

    When :meth:`feed` raises, that channel's message in progress is dropped first, so the
    caller may report the error and keep feeding. A method frame that interrupts a message
    still starts a message of its own if it carries content.
    """

    def feed(self, frame: Frame) -> Message | None:
        """Take one frame; return the message it completes, if any.

        Raises :class:`~amqp_codec.errors.UnexpectedFrameError` (505) for a frame out of
        sequence and :class:`~amqp_codec.errors.LimitExceededError` (406) for a body larger
        than ``max_body_size``; either way the channel's message in progress is dropped.
        """
        if type(frame) is ContentBodyFrame:
            # The usual frame, a body frame of a message whose header came, within the size
            # it announced: taken here; anything else goes the checked way below.
            channel = frame.channel
            pending = self._pending.get(channel)
            # bytes, or (body views, see MessageDecoder) a view or a list of pieces
            payload: bytes | memoryview | list[bytes | memoryview] = frame.payload
            if pending is not None and pending.has_header and not isinstance(payload, list):
                received = pending.received + len(payload)
                if received <= pending.limit:
                    pending.received = received
                    pending.chunks.append(payload)
                    return None if received < pending.limit else self._complete(channel, pending)
            pending = self._awaiting(channel, header=False)
            if pending is None:
                return None
            self._add_body(channel, pending, payload)
            return self._complete(channel, pending)
        if type(frame) is MethodFrame:
            channel, method = frame.channel, frame.method
            pending = _Pending(method) if method.HAS_CONTENT else None
            interrupted = self._method_seen(channel, method, pending)
            if interrupted is not None:
                raise self._interrupted(channel, method, interrupted)
            return None
        if type(frame) is ContentHeaderFrame:
            channel = frame.channel
            pending = self._awaiting(channel, header=True)
            if pending is None:
                return None
            if frame.class_id != pending.method.CLASS_ID:
                del self._pending[channel]
                raise self._unexpected(
                    f"content header for class {frame.class_id} after {pending.method.NAME}",
                    channel,
                    pending.method,
                )
            if frame.body_size > self.max_body_size:
                # A soft error: the body frames that follow are dropped, not refused with 505.
                self.forget(channel)
                raise self._too_large(
                    f"content body of {frame.body_size} bytes exceeds max_body_size {self.max_body_size}",
                    channel,
                    pending.method,
                )
            pending.properties = frame.properties
            pending.has_header = True
            pending.limit = frame.body_size
            return self._complete(channel, pending)
        return None

    def _complete(self, channel: int, pending: _Pending) -> Message | None:
        if pending.received < pending.limit or pending.properties is None:
            return None
        message = _MessageTwin()
        message.channel = channel
        message.method = pending.method
        message.properties = pending.properties
        message.body = self._finish(channel, pending)
        message.__class__ = Message
        return message  # type: ignore[no-any-return]

    def _overflow(self, channel: int, pending: _Pending) -> UnexpectedFrameError:
        return self._unexpected(
            f"content body frames add up to {pending.received} bytes, more than the "
            f"announced {pending.limit}",
            channel,
            pending.method,
        )

    def _progress(self, pending: _Pending) -> str:
        if pending.properties is None:
            return "no content header yet"
        return f"{pending.received} of {pending.limit} body bytes"
