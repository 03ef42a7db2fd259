"""MessageDecoder against FrameDecoder and MessageAssembler used apart, for the tests and the
fuzz target: what each makes of the same chunks, as comparable keys.

Messages and frames are keyed by their bytes (a decoded NaN is not equal to itself), errors
by what they say. After a soft decode error (406 on a channel) and after any error of the
content sequence both go on; after any other decode error both stop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from amqp_codec import (
    NEED_DATA,
    AMQPDecodeError,
    ContentBodyFrame,
    ContentHeaderFrame,
    FrameDecoder,
    Message,
    MessageAssembler,
    MessageDecoder,
    MethodFrame,
    encode_frame,
)

__all__ = ["apart", "together"]


def _error(exc: AMQPDecodeError) -> tuple[Any, ...]:
    return ("error", type(exc).__name__, exc.reply_code, exc.offset, exc.channel, str(exc))


def _item(item: Any) -> tuple[Any, ...]:
    if isinstance(item, Message):
        props = item.properties.encode()
        return ("message", item.channel, item.method.encode(), props, item.body)
    return ("frame", encode_frame(item))


def _is_content(frame: Any) -> bool:
    if isinstance(frame, MethodFrame):
        return bool(frame.method.HAS_CONTENT)
    return isinstance(frame, ContentHeaderFrame | ContentBodyFrame)


def apart(decoder: FrameDecoder, chunks: Iterable[bytes]) -> list[tuple[Any, ...]]:
    """``decoder`` fed ``chunks`` and the end of the stream, its frames to a MessageAssembler:
    the messages, the frames that are not content, and the errors."""
    assembler = MessageAssembler()
    out: list[tuple[Any, ...]] = []
    for chunk in [*chunks, b""]:
        decoder.receive_data(chunk)
        while True:
            try:
                frame = decoder.next_frame()
            except AMQPDecodeError as exc:
                if exc.hard or not exc.channel:
                    return [*out, _error(exc)]
                out.append(_error(assembler.abandon(exc)))
                continue
            if frame is NEED_DATA:
                break
            try:
                message = assembler.feed(frame)
            except AMQPDecodeError as exc:
                out.append(_error(exc))
                continue
            if message is not None:
                out.append(_item(message))
            elif not _is_content(frame):
                out.append(_item(frame))
    return out


def together(
    decoder: MessageDecoder,
    chunks: Iterable[bytes],
    check: Callable[[MessageDecoder, Any], None] = lambda decoder, item: None,
) -> list[tuple[Any, ...]]:
    """``decoder`` fed ``chunks`` and the end of the stream: what ``next_item`` returned and
    raised, until its decoder failed. ``check`` sees the decoder and each item or error."""
    out: list[tuple[Any, ...]] = []
    last: AMQPDecodeError | None = None
    for chunk in [*chunks, b""]:
        decoder.receive_data(chunk)
        while True:
            try:
                item = decoder.next_item()
            except AMQPDecodeError as exc:
                if exc is last:  # raised again: the decoder failed
                    return out
                check(decoder, exc)
                out.append(_error(exc))
                last = exc
                continue
            check(decoder, item)
            if item is NEED_DATA:
                break
            out.append(_item(item))
    return out
