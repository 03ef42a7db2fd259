"""A soft error (406, a body over max_body_size) concerns one channel: the decoder steps over
the frame, the assembler drops only that channel's message, and the close names the method."""

from __future__ import annotations

import pytest

from amqp_codec import (
    NEED_DATA,
    ContentBodyFrame,
    ContentHeaderFrame,
    FrameDecoder,
    LimitExceededError,
    Message,
    MessageAssembler,
    MethodFrame,
    UnexpectedFrameError,
    close_for_error,
    encode_message,
)
from amqp_codec.v0_9_1 import Basic, BasicProperties, Channel

PUBLISH = Basic.Publish(routing_key="q")


def _stream() -> bytes:
    return (
        b"AMQP\x00\x00\x09\x01"
        + encode_message(1, PUBLISH, BasicProperties(), b"x" * 5000, frame_max=4096)
        + encode_message(2, PUBLISH, BasicProperties(), b"small", frame_max=4096)
    )


def _run(
    decoder: FrameDecoder, assembler: MessageAssembler
) -> tuple[list[Message], list[Exception]]:
    messages: list[Message] = []
    errors: list[Exception] = []
    for _ in range(100):  # a decoder that raised the same error forever would loop here
        try:
            frame = decoder.next_frame()
        except LimitExceededError as exc:
            errors.append(assembler.abandon(exc))
            continue
        if frame is NEED_DATA:
            return messages, errors
        message = assembler.feed(frame)
        if message is not None:
            messages.append(message)
    raise AssertionError("the decoder never returned NEED_DATA")


@pytest.mark.parametrize("chunk", [1, 7, 4096, 100_000])
def test_decoder_goes_on_after_a_soft_error(chunk: int) -> None:
    decoder = FrameDecoder(max_body_size=1000)
    assembler = MessageAssembler()
    data = _stream()
    messages: list[Message] = []
    errors: list[Exception] = []
    for start in range(0, len(data), chunk):
        decoder.receive_data(data[start : start + chunk])
        more, errs = _run(decoder, assembler)
        messages += more
        errors += errs
    assert [(m.channel, m.body) for m in messages] == [(2, b"small")]
    (error,) = errors
    assert isinstance(error, LimitExceededError)
    assert (error.reply_code, error.channel, error.class_id, error.method_id) == (406, 1, 60, 40)
    reply = close_for_error(error)
    assert reply.channel == 1 and isinstance(reply.method, Channel.Close)
    assert (reply.method.class_id, reply.method.method_id) == (60, 40)


def test_hard_errors_still_latch_the_decoder() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(
        b"AMQP\x00\x00\x09\x01" + b"\x01\x00\x01\x00\x00\x00\x04\x00\x3c\x00\x28\x00"
    )
    decoder.next_frame()
    with pytest.raises(Exception) as first:
        decoder.next_frame()
    with pytest.raises(Exception) as again:
        decoder.next_frame()
    assert first.value is again.value


def test_assemblers_own_406_drops_the_bodies_that_follow() -> None:
    assembler = MessageAssembler(max_body_size=10)
    assembler.feed(MethodFrame(1, PUBLISH))
    assembler.feed(MethodFrame(2, PUBLISH))
    with pytest.raises(LimitExceededError):
        assembler.feed(ContentHeaderFrame(1, 60, 20, BasicProperties()))
    assert assembler.feed(ContentBodyFrame(1, b"x" * 20)) is None  # ignored, not a 505
    assembler.feed(ContentHeaderFrame(2, 60, 2, BasicProperties()))
    assert assembler.feed(ContentBodyFrame(2, b"ok")).body == b"ok"  # type: ignore[union-attr]
    assembler.feed(MethodFrame(1, PUBLISH))  # the channel's next method: checked again
    with pytest.raises(UnexpectedFrameError):
        assembler.feed(ContentBodyFrame(1, b"x"))


def test_forget_one_channel_leaves_the_others_checked() -> None:
    assembler = MessageAssembler()
    assembler.feed(MethodFrame(1, PUBLISH))
    assembler.feed(MethodFrame(2, PUBLISH))
    assembler.forget(1)
    assert not assembler.in_progress(1) and assembler.in_progress(2)
    assert assembler.feed(ContentHeaderFrame(1, 60, 1, BasicProperties())) is None
    with pytest.raises(UnexpectedFrameError):
        assembler.feed(ContentBodyFrame(3, b"x"))  # channel 3 is still checked
