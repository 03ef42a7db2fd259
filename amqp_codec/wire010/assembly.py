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

from dataclasses import dataclass
from typing import TypeVar

from amqp_codec._content import DEFAULT_MAX_BODY_SIZE, ContentTracker, PendingContent
from amqp_codec.base import Method
from amqp_codec.errors import LimitExceededError

from .frames import (
    LAST_FRAME,
    LAST_SEGMENT,
    DraftBodyFrame,
    DraftHeaderFrame,
    DraftMethodFrame,
)
from .structs import PackedStruct

__all__ = ["DEFAULT_MAX_BODY_SIZE", "DraftMessage", "DraftMessageAssembler"]

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
class _Pending(PendingContent):
    # limit: max_body_size (99-0 announces no body size).
    structs: tuple[PackedStruct, ...] = ()


class DraftMessageAssembler(ContentTracker[_Pending]):
    """Feed every frame of a 99-0 connection direction; get a :class:`DraftMessage` when one
    completes. Arguments and error handling as for :class:`~amqp_codec.MessageAssembler`."""

    UNIT = "frameset"
    NO_METHOD = "header segment without a content command before it"
    NO_HEADER = "body frame without a header segment before it"

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
            pending = self._awaiting(channel, header=True)
            if pending is None:
                return None
            pending.structs = frame.structs
            pending.has_header = True
            return self._complete(channel, pending, frame.flags)
        if type(frame) is DraftBodyFrame:
            channel = frame.channel
            pending = self._awaiting(channel, header=False)
            if pending is None:
                return None
            self._add_body(channel, pending, frame.payload)
            return self._complete(channel, pending, frame.flags)
        return None

    def _method(self, frame: DraftMethodFrame) -> DraftMessage | None:
        channel, method = frame.channel, frame.method
        pending = _Pending(method, self.max_body_size) if method.HAS_CONTENT else None
        interrupted = self._method_seen(channel, method, pending)
        message = None
        if pending is not None and frame.flags & _FRAMESET_END == _FRAMESET_END:
            pending.has_header = True  # a frameset of one segment: no header, no body
            message = self._complete(channel, pending, frame.flags)
        if interrupted is not None:
            raise self._interrupted(channel, method, interrupted)
        return message

    def _complete(self, channel: int, pending: _Pending, flags: int) -> DraftMessage | None:
        if flags & _FRAMESET_END != _FRAMESET_END or not pending.has_header:
            return None
        body = self._finish(channel, pending)
        return DraftMessage(channel, pending.method, pending.structs, body)

    def _overflow(self, channel: int, pending: _Pending) -> LimitExceededError:
        return self._too_large(
            f"content body of more than {self.max_body_size} bytes (max_body_size)",
            channel,
            pending.method,
        )

    def _progress(self, pending: _Pending) -> str:
        if not pending.has_header:
            return "no header segment yet"
        return f"{pending.received} body bytes so far"
