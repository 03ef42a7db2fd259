"""Decode a byte stream into whole messages and the frames between them, a body copied once.

:class:`MessageDecoder` is a :class:`~amqp_codec.FrameDecoder` and a
:class:`~amqp_codec.MessageAssembler` in one, for a client or broker that wants messages
rather than content frames. Because its content frames never leave it, its decoder hands
the assembler views of the received bytes instead of copying each body frame's payload:
a message's body is copied once, when it completes (``FrameDecoder`` and
``MessageAssembler`` used apart copy it twice: into each frame's payload, then into the
body). Views keep the received chunks they point into alive until the message completes;
a piece that is a small part of its chunk (under a quarter) is copied instead, so what a
message in progress holds stays within four times its body bytes, as bounded by
``max_body_size``. A frame of a few KiB, or one that came in chunks of a few KiB on
average, is copied into its own bytes as ``FrameDecoder`` does: views would save little
there and cost one object per piece.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Literal

from .assembly import Message, MessageAssembler
from .decoder import DEFAULT_MAX_BODY_SIZE, NEED_DATA, FrameDecoder, NeedData
from .errors import AMQPDecodeError
from .frames import ContentBodyFrame, ContentHeaderFrame, Frame, MethodFrame
from .protocol import ProtocolSpec

__all__ = ["MessageDecoder"]


class MessageDecoder:
    """Feed bytes of one connection direction; take whole messages and the other frames.

    :meth:`next_item` returns a :class:`~amqp_codec.Message` once its content method,
    content header and body frames have all arrived; every other frame (methods that carry
    no content, heartbeats, the protocol header) as it arrives; :data:`NEED_DATA` when more
    bytes are needed. The content frames themselves are not returned.

    Args:
        spec: the protocol version, 0-8 or 0-9-1 (as for :class:`~amqp_codec.FrameDecoder`;
            ``None`` detects it from the stream).
        max_body_size: largest body a content header may announce (406 beyond).
        mid_stream: the bytes do not start at the beginning of the connection (see
            :class:`~amqp_codec.MessageAssembler`).
        decoder_options: the other keyword arguments of :class:`~amqp_codec.FrameDecoder`
            (``frame_max``, ``max_frame_size``, ``max_table_depth``, ``strict_tags``).

    Errors are :class:`~amqp_codec.AMQPDecodeError`, as :class:`~amqp_codec.FrameDecoder`
    and :class:`~amqp_codec.MessageAssembler` raise them, and decoding may go on after the
    same ones: after an error in the content sequence (505, or 406 for a body over
    ``max_body_size``) the channel's message in progress is dropped and the frame that raised
    is not returned; after a decode error that is not soft, the decoder is failed and raises
    it again, as a ``FrameDecoder`` does.
    """

    def __init__(
        self,
        spec: ProtocolSpec | ModuleType | None = None,
        *,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        mid_stream: bool = False,
        **decoder_options: Any,
    ) -> None:
        self.decoder = FrameDecoder(spec, max_body_size=max_body_size, **decoder_options)
        self.decoder._body_views = True
        self.assembler = MessageAssembler(max_body_size=max_body_size, mid_stream=mid_stream)
        # Bound once: next_item runs per frame.
        self._next_frame = self.decoder.next_frame
        self._feed = self.assembler.feed

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Queue bytes received from the peer; ``b""`` marks the end of the stream."""
        self.decoder.receive_data(data)

    def next_item(self) -> Message | Frame | Literal[NeedData.NEED_DATA]:
        """The next whole message or other frame, or :data:`NEED_DATA`."""
        next_frame = self._next_frame
        feed = self._feed
        while True:
            try:
                frame = next_frame()
            except AMQPDecodeError as exc:
                if not exc.hard and exc.channel:
                    raise self.assembler.abandon(exc) from None
                raise
            if frame is NEED_DATA:
                return frame
            kind = type(frame)
            if kind is ContentBodyFrame or kind is ContentHeaderFrame:
                message = feed(frame)
                if message is not None:
                    return message
            elif kind is MethodFrame:
                feed(frame)  # checks that no message on its channel is cut short
                if not frame.method.HAS_CONTENT:  # type: ignore[union-attr]
                    return frame
            else:
                return frame

    def __iter__(self) -> MessageDecoder:
        return self

    def __next__(self) -> Message | Frame:
        item = self.next_item()
        if item is NEED_DATA:
            raise StopIteration
        return item
