"""Assemble content frames into messages, one in progress per channel.

A content-carrying method (basic.publish, basic.deliver, basic.return, basic.get-ok) is
followed on its channel by one content header and then body frames adding up to the header's
body size. Anything else on that channel in the middle of the sequence is a 505
(unexpected frame) error, as the spec requires.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .base import Method, Properties
from .decoder import DEFAULT_MAX_BODY_SIZE
from .errors import LimitExceededError, UnexpectedFrameError
from .frames import ContentBodyFrame, ContentHeaderFrame, Frame, MethodFrame

__all__ = ["Message", "MessageAssembler"]


@dataclass(frozen=True, slots=True)
class Message:
    """A whole message: its method, properties and body."""

    channel: int
    method: Method
    properties: Properties
    body: bytes


@dataclass(slots=True)
class _Pending:
    method: Method
    properties: Properties | None = None
    body_size: int = 0
    received: int = 0
    chunks: list[bytes] = field(default_factory=list)


class MessageAssembler:
    """Feed every frame of a connection direction; get a :class:`Message` when one completes.

    Frames that are not part of content (other methods, heartbeats, the protocol header) are
    checked against the content sequence and otherwise ignored: handle them yourself.
    """

    def __init__(self, *, max_body_size: int = DEFAULT_MAX_BODY_SIZE) -> None:
        self.max_body_size = max_body_size
        self._pending: dict[int, _Pending] = {}

    def in_progress(self, channel: int) -> bool:
        """True while a message on ``channel`` is waiting for its header or body frames."""
        return channel in self._pending

    def feed(self, frame: Frame) -> Message | None:
        """Take one frame; return the message it completes, if any. Raises 505 errors."""
        if type(frame) is MethodFrame:
            channel, method = frame.channel, frame.method
            if channel in self._pending:
                raise self._unexpected(
                    f"{method.NAME} arrived before the content of the previous message was complete",
                    channel,
                    method,
                )
            if method.HAS_CONTENT:
                self._pending[channel] = _Pending(method)
            return None
        if type(frame) is ContentHeaderFrame:
            pending = self._pending.get(frame.channel)
            if pending is None or pending.properties is not None:
                raise self._unexpected(
                    "content header without a content method before it", frame.channel
                )
            if frame.class_id != pending.method.CLASS_ID:
                raise self._unexpected(
                    f"content header for class {frame.class_id} after {pending.method.NAME}",
                    frame.channel,
                    pending.method,
                )
            if frame.body_size > self.max_body_size:
                raise LimitExceededError(
                    f"content body of {frame.body_size} bytes exceeds max_body_size {self.max_body_size}",
                    reply_code=406,
                    channel=frame.channel,
                    class_id=pending.method.CLASS_ID,
                    method_id=pending.method.METHOD_ID,
                )
            pending.properties = frame.properties
            pending.body_size = frame.body_size
            return self._complete(frame.channel, pending)
        if type(frame) is ContentBodyFrame:
            pending = self._pending.get(frame.channel)
            if pending is None or pending.properties is None:
                raise self._unexpected(
                    "content body without a content header before it", frame.channel
                )
            pending.received += len(frame.payload)
            if pending.received > pending.body_size:
                raise self._unexpected(
                    f"content body frames add up to more than the announced {pending.body_size} bytes",
                    frame.channel,
                    pending.method,
                )
            pending.chunks.append(frame.payload)
            return self._complete(frame.channel, pending)
        return None

    def _complete(self, channel: int, pending: _Pending) -> Message | None:
        if pending.received < pending.body_size or pending.properties is None:
            return None
        del self._pending[channel]
        body = pending.chunks[0] if len(pending.chunks) == 1 else b"".join(pending.chunks)
        return Message(channel, pending.method, pending.properties, body)

    @staticmethod
    def _unexpected(
        reason: str, channel: int, method: Method | None = None
    ) -> UnexpectedFrameError:
        return UnexpectedFrameError(
            reason,
            channel=channel,
            class_id=method.CLASS_ID if method else 0,
            method_id=method.METHOD_ID if method else 0,
        )
