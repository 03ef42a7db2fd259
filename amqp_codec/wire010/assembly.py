"""Assemble 99-0 framesets into messages, one in progress per channel.

A content-bearing command (``message.transfer``, ``basic.publish``...) starts a frameset; its
header segment (delivery-properties, message-properties) and body frames follow on the same
channel. The frameset ends at the first frame with both E (last segment) and e (last frame of
its segment) set, as the C++ broker decides it: a header with E for empty content, else the
last body frame. Content carries no announced size in 99-0 (``content-length`` is advisory),
so the flags alone find the end.

:class:`DraftMessageAssembler` is used like :class:`~amqp_codec.MessageAssembler` (``feed``,
``forget``, ``unfinished``, ``in_progress``, ``mid_stream``) and raises the same errors: 505
for a frame out of sequence, 406 for a body larger than ``max_body_size``. Frames that are
not 99-0 frames are ignored, so both assemblers can be fed every frame of a stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from amqp_codec.base import Method
from amqp_codec.errors import LimitExceededError, UnexpectedFrameError

from .frames import (
    LAST_FRAME,
    LAST_SEGMENT,
    DraftBodyFrame,
    DraftHeaderFrame,
    DraftMethodFrame,
)
from .structs import PackedStruct

__all__ = ["DEFAULT_MAX_BODY_SIZE", "DraftMessage", "DraftMessageAssembler"]

#: The same default as :data:`amqp_codec.decoder.DEFAULT_MAX_BODY_SIZE`.
DEFAULT_MAX_BODY_SIZE = 512 * 1024 * 1024
_FRAMESET_END = LAST_SEGMENT | LAST_FRAME

S = TypeVar("S", bound=PackedStruct)


@dataclass(frozen=True, slots=True)
class DraftMessage:
    """A whole 99-0 message: its command, header structs (wire order) and body."""

    channel: int
    method: Method
    structs: tuple[PackedStruct, ...]
    body: bytes

    def get(self, cls: type[S]) -> S | None:
        """The header struct of class ``cls`` (``MessageProperties``), or None if absent."""
        for s in self.structs:
            if isinstance(s, cls):
                return s
        return None

    def named(self, name: str) -> PackedStruct | None:
        """The header struct whose spec name is ``name`` (``"delivery-properties"``)."""
        for s in self.structs:
            if s.NAME == name:
                return s
        return None


@dataclass(slots=True)
class _Pending:
    method: Method
    structs: tuple[PackedStruct, ...] | None = None
    received: int = 0
    chunks: list[bytes] = field(default_factory=list)


class DraftMessageAssembler:
    """Feed every frame of a 99-0 connection direction; get a :class:`DraftMessage` when one
    completes. Arguments and error handling as for :class:`~amqp_codec.MessageAssembler`."""

    def __init__(
        self, *, max_body_size: int = DEFAULT_MAX_BODY_SIZE, mid_stream: bool = False
    ) -> None:
        self.max_body_size = max_body_size
        self._pending: dict[int, _Pending] = {}
        self._all_known = not mid_stream
        self._known: set[int] = set()

    def in_progress(self, channel: int) -> bool:
        """True while a message on ``channel`` is waiting for its header or body frames."""
        return channel in self._pending

    def forget(self) -> None:
        """Frames may have been lost: drop every message in progress and ignore content
        frames on each channel until its next method frame."""
        self._pending.clear()
        self._all_known = False
        self._known.clear()

    def feed(self, frame: object) -> DraftMessage | None:
        """Take one frame; return the message it completes, if any.

        Raises :class:`~amqp_codec.errors.UnexpectedFrameError` (505) for a frame out of
        sequence and :class:`~amqp_codec.errors.LimitExceededError` (406) for a body larger
        than ``max_body_size``; either way the channel's message in progress is dropped.
        """
        if type(frame) is DraftMethodFrame:
            return self._method(frame)
        if type(frame) is DraftHeaderFrame:
            channel = frame.channel
            pending = self._pending.get(channel)
            if pending is None or pending.structs is not None:
                if pending is None and not self._checked(channel):
                    return None
                self._pending.pop(channel, None)
                raise self._unexpected(
                    "header segment without a content command before it", channel
                )
            pending.structs = frame.structs
            return self._complete(channel, pending, frame.flags)
        if type(frame) is DraftBodyFrame:
            channel = frame.channel
            pending = self._pending.get(channel)
            if pending is None or pending.structs is None:
                if pending is None and not self._checked(channel):
                    return None
                self._pending.pop(channel, None)
                raise self._unexpected("body frame without a header segment before it", channel)
            pending.received += len(frame.payload)
            if pending.received > self.max_body_size:
                del self._pending[channel]
                raise LimitExceededError(
                    f"content body of more than {self.max_body_size} bytes (max_body_size)",
                    reply_code=406,
                    channel=channel,
                    class_id=pending.method.CLASS_ID,
                    method_id=pending.method.METHOD_ID,
                )
            pending.chunks.append(frame.payload)
            return self._complete(channel, pending, frame.flags)
        return None

    def unfinished(self) -> list[UnexpectedFrameError]:
        """A 505 error for each message still incomplete (at the end of the stream), by channel."""
        return [
            self._unexpected(
                f"stream ended before the frameset of {pending.method.NAME} was complete "
                f"({self._progress(pending)})",
                channel,
                pending.method,
            )
            for channel, pending in sorted(self._pending.items())
        ]

    def _method(self, frame: DraftMethodFrame) -> DraftMessage | None:
        channel, method = frame.channel, frame.method
        if not self._all_known:
            self._known.add(channel)
        interrupted = self._pending.pop(channel, None)
        message = None
        if method.HAS_CONTENT:
            pending = _Pending(method)
            self._pending[channel] = pending
            if frame.flags & _FRAMESET_END == _FRAMESET_END:  # a frameset of one segment
                pending.structs = ()
                message = self._complete(channel, pending, frame.flags)
        if interrupted is not None:
            raise self._unexpected(
                f"{method.NAME} arrived before the frameset of {interrupted.method.NAME} "
                f"was complete ({self._progress(interrupted)})",
                channel,
                method,
            )
        return message

    def _checked(self, channel: int) -> bool:
        return self._all_known or channel in self._known

    def _complete(self, channel: int, pending: _Pending, flags: int) -> DraftMessage | None:
        if flags & _FRAMESET_END != _FRAMESET_END or pending.structs is None:
            return None
        del self._pending[channel]
        body = pending.chunks[0] if len(pending.chunks) == 1 else b"".join(pending.chunks)
        return DraftMessage(channel, pending.method, pending.structs, body)

    @staticmethod
    def _progress(pending: _Pending) -> str:
        if pending.structs is None:
            return "no header segment yet"
        return f"{pending.received} body bytes so far"

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
