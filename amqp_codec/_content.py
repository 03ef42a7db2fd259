"""What the 0-9 and the 99-0 message assemblers share: per-channel state, the bounded body and
the errors.

Both keep one message in progress per channel, both check a header and body frame against
the channel's state in the same way, both bound a body before buffering a frame of it and
join it once when the message completes, both may start mid-stream or lose frames
(``forget``), and both report what is left unfinished at the end of a stream. They differ in
how content is framed (what a header holds, what bounds the body, what ends a message), which
each subclass handles in ``feed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .base import Method
from .errors import AMQPDecodeError, LimitExceededError, UnexpectedFrameError

#: Content headers announcing a larger body are refused (406), and 99-0 bodies growing past it
#: (RabbitMQ's historic maximum message size is 128 MiB; 4.x defaults to 16 MiB). The frame
#: decoder and both assemblers take it as their default.
DEFAULT_MAX_BODY_SIZE = 512 * 1024 * 1024


@dataclass(slots=True)
class PendingContent:
    """A message in progress: its method, whether its header came, and its body so far.

    ``limit`` bounds the body: a frame that would take ``received`` past it is refused before
    it is buffered (0-9: the body size the header announced; 99-0: ``max_body_size``).
    """

    method: Method
    limit: int = 0
    has_header: bool = False
    received: int = 0
    chunks: list[bytes | memoryview] = field(default_factory=list)

    def body(self) -> bytes:
        """The body frames' payloads, joined once (the only frame's bytes payload as it is)."""
        chunks = self.chunks
        if len(chunks) == 1 and type(chunks[0]) is bytes:
            return chunks[0]
        return b"".join(chunks)


P = TypeVar("P", bound=PendingContent)


class ContentTracker(Generic[P]):
    """Per-channel messages in progress (of pending type ``P``) and the mid-stream rules."""

    #: The word for a message's frames in error texts ("content", "frameset").
    UNIT = "content"
    #: What a header or body frame out of sequence is missing, for the 505 texts.
    NO_METHOD = "content header without a content method before it"
    NO_HEADER = "content body without a content header before it"

    def __init__(
        self, *, max_body_size: int = DEFAULT_MAX_BODY_SIZE, mid_stream: bool = False
    ) -> None:
        self.max_body_size = max_body_size
        self._pending: dict[int, P] = {}
        # False once frames may be missing: content frames are then only checked on
        # channels in _known, the ones that had a method frame since.
        self._all_known = not mid_stream
        self._known: set[int] = set()
        # Channels whose message was abandoned after an error: their content frames are
        # ignored until the channel's next method frame.
        self._skipping: set[int] = set()

    def in_progress(self, channel: int) -> bool:
        """True while a message on ``channel`` is waiting for its header or body frames."""
        return channel in self._pending

    def forget(self, channel: int | None = None) -> None:
        """Frames may have been lost: drop every message in progress and, from now on,
        ignore content frames on each channel until its next method frame (as ``mid_stream``).

        With ``channel``, only that channel's message is dropped and only its content frames
        are ignored until its next method frame; the other channels are checked as before.
        """
        if channel is not None:
            self._pending.pop(channel, None)
            self._skipping.add(channel)
            return
        self._pending.clear()
        self._all_known = False
        self._known.clear()
        self._skipping.clear()

    def abandon(self, error: AMQPDecodeError) -> AMQPDecodeError:
        """A decode error on one channel's content, such as the decoder's 406 for a content
        header over ``max_body_size``: name the content method in progress in ``error`` (its
        class and method ids), drop that message and ignore the channel's remaining content
        frames until its next method (``forget(channel)``). Returns ``error``.
        """
        channel = error.channel
        if channel:
            pending = self._pending.get(channel)
            if pending is not None:
                error.class_id = pending.method.CLASS_ID
                error.method_id = pending.method.METHOD_ID
            self.forget(channel)
        return error

    def unfinished(self) -> list[UnexpectedFrameError]:
        """A 505 error for each message still incomplete (at the end of the stream), by channel.

        The state is left as it is: this only reports.
        """
        return [
            self._unexpected(
                f"stream ended before the {self.UNIT} of {pending.method.NAME} was complete "
                f"({self._progress(pending)})",
                channel,
                pending.method,
            )
            for channel, pending in sorted(self._pending.items())
        ]

    def _method_seen(self, channel: int, method: Method, pending: P | None) -> P | None:
        """A method frame on ``channel``: its state is known from now on; ``pending`` (if the
        method carries content) becomes the message in progress. Returns the message it
        interrupted, if any; the caller raises for it once the new state is in place."""
        if not self._all_known:
            self._known.add(channel)
        self._skipping.discard(channel)
        interrupted = self._pending.pop(channel, None)
        if pending is not None:
            self._pending[channel] = pending
        return interrupted

    def _interrupted(self, channel: int, method: Method, interrupted: P) -> UnexpectedFrameError:
        return self._unexpected(
            f"{method.NAME} arrived before the {self.UNIT} of {interrupted.method.NAME} "
            f"was complete ({self._progress(interrupted)})",
            channel,
            method,
        )

    def _awaiting(self, channel: int, header: bool) -> P | None:
        """The message in progress on ``channel``, which a header frame (``header``) or a body
        frame has just come for; None when the channel's content frames are not checked.

        Raises 505 (and drops the channel's message) when the frame is out of sequence: no
        message in progress, or a header where a body was due or the reverse.
        """
        pending = self._pending.get(channel)
        if pending is not None and pending.has_header is not header:
            return pending
        if pending is None and not self._checked(channel):
            return None
        self._pending.pop(channel, None)
        raise self._unexpected(self.NO_METHOD if header else self.NO_HEADER, channel)

    def _add_body(
        self, channel: int, pending: P, payload: bytes | memoryview | list[bytes | memoryview]
    ) -> None:
        """Buffer one body frame's payload, checking the bound first: past ``pending.limit``
        the message is dropped and :meth:`_overflow`'s error raised, nothing buffered.

        The payload is bytes, or, from a decoder with body views on (see
        :class:`~amqp_codec.MessageDecoder`), a view of the received bytes or a list
        of pieces of a frame that spanned received chunks."""
        if isinstance(payload, list):
            pending.received += sum(map(len, payload))
        else:
            pending.received += len(payload)
        if pending.received > pending.limit:
            del self._pending[channel]
            raise self._overflow(channel, pending)
        if isinstance(payload, list):
            pending.chunks.extend(payload)
        else:
            pending.chunks.append(payload)

    def _finish(self, channel: int, pending: P) -> bytes:
        """The message on ``channel`` is complete: drop it from the state; its body."""
        del self._pending[channel]
        return pending.body()

    def _overflow(self, channel: int, pending: P) -> AMQPDecodeError:
        """The error for body frames adding up to more than ``pending.limit``."""
        raise NotImplementedError

    def _too_large(self, reason: str, channel: int, method: Method) -> LimitExceededError:
        """406 for a body over ``max_body_size``, naming the content method."""
        return LimitExceededError(
            reason,
            reply_code=406,
            channel=channel,
            class_id=method.CLASS_ID,
            method_id=method.METHOD_ID,
        )

    def _checked(self, channel: int) -> bool:
        """Whether content frames on ``channel`` are checked (its state is known)."""
        return (self._all_known or channel in self._known) and channel not in self._skipping

    def _progress(self, pending: P) -> str:
        """How far ``pending`` got, for error texts."""
        raise NotImplementedError

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
