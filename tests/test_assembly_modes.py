"""MessageAssembler for captures: mid_stream, forget(), recovery after errors, unfinished()."""

from __future__ import annotations

import pytest

from amqp_codec import (
    AMQPDecodeError,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    LimitExceededError,
    Message,
    MessageAssembler,
    MethodFrame,
    UnexpectedFrameError,
)
from amqp_codec.v0_9_1 import Basic, BasicProperties, Channel, Connection

DELIVER = Basic.Deliver(consumer_tag="ct", delivery_tag=1, exchange="ex", routing_key="rk")
PUBLISH = Basic.Publish(exchange="ex", routing_key="rk")
ACK = Basic.Ack(delivery_tag=1)
PROPS = BasicProperties(content_type="text/plain")


def header(channel: int, size: int) -> ContentHeaderFrame:
    return ContentHeaderFrame(channel, 60, size, PROPS)


def message(channel: int, method: Basic.Deliver | Basic.Publish, body: bytes) -> list[Frame]:
    return [
        MethodFrame(channel, method),
        header(channel, len(body)),
        ContentBodyFrame(channel, body),
    ]


def feed_all(assembler: MessageAssembler, frames: list[Frame]) -> list[Message]:
    return [m for frame in frames if (m := assembler.feed(frame)) is not None]


def error_of(assembler: MessageAssembler, frame: Frame) -> AMQPDecodeError:
    with pytest.raises(AMQPDecodeError) as info:
        assembler.feed(frame)
    return info.value


# -- mid_stream --------------------------------------------------------------------------------


def test_default_checks_every_channel_from_the_start() -> None:
    assembler = MessageAssembler()
    assert isinstance(error_of(assembler, ContentBodyFrame(1, b"x")), UnexpectedFrameError)
    assert isinstance(error_of(assembler, header(2, 1)), UnexpectedFrameError)


def test_mid_stream_ignores_content_of_a_message_begun_before_the_capture() -> None:
    assembler = MessageAssembler(mid_stream=True)
    assert assembler.feed(header(1, 10)) is None
    assert assembler.feed(ContentBodyFrame(1, b"rest")) is None
    assert assembler.feed(ContentBodyFrame(2, b"more")) is None
    assert not assembler.in_progress(1)
    assert assembler.unfinished() == []


def test_mid_stream_channel_is_checked_after_its_next_method() -> None:
    assembler = MessageAssembler(mid_stream=True)
    assert assembler.feed(MethodFrame(1, ACK)) is None  # any method makes the channel known
    error = error_of(assembler, ContentBodyFrame(1, b"x"))
    assert isinstance(error, UnexpectedFrameError)
    assert error.reason == "content body without a content header before it"
    assert error.channel == 1
    # other channels are still unknown, channel 0 traffic does not change that
    assert assembler.feed(MethodFrame(0, Connection.Blocked(reason="x"))) is None
    assert assembler.feed(HeartbeatFrame()) is None
    assert assembler.feed(ContentBodyFrame(2, b"x")) is None


def test_mid_stream_assembles_messages_that_start_in_the_capture() -> None:
    assembler = MessageAssembler(mid_stream=True)
    frames = [header(3, 5), ContentBodyFrame(3, b"tail"), *message(3, DELIVER, b"whole")]
    assert feed_all(assembler, frames) == [Message(3, DELIVER, PROPS, b"whole")]


def test_mid_stream_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        MessageAssembler(10, True)  # type: ignore[call-arg]


# -- forget ------------------------------------------------------------------------------------


def test_forget_drops_messages_in_progress() -> None:
    assembler = MessageAssembler()
    assembler.feed(MethodFrame(1, DELIVER))
    assembler.feed(header(1, 6))
    assembler.feed(ContentBodyFrame(1, b"abc"))
    assembler.feed(MethodFrame(2, PUBLISH))
    assembler.forget()
    assert not assembler.in_progress(1)
    assert not assembler.in_progress(2)
    assert assembler.unfinished() == []
    # the rest of the lost message is ignored, not an error...
    assert assembler.feed(ContentBodyFrame(1, b"def")) is None
    assert assembler.feed(header(2, 1)) is None
    # ...until the channel's next method
    assert feed_all(assembler, message(1, DELIVER, b"new")) == [Message(1, DELIVER, PROPS, b"new")]
    assert isinstance(error_of(assembler, ContentBodyFrame(1, b"x")), UnexpectedFrameError)
    assert assembler.feed(ContentBodyFrame(2, b"x")) is None


def test_forget_applies_again_after_channels_became_known() -> None:
    assembler = MessageAssembler(mid_stream=True)
    assembler.feed(MethodFrame(1, ACK))
    assembler.forget()
    assert assembler.feed(ContentBodyFrame(1, b"x")) is None


# -- recovering from errors --------------------------------------------------------------------


def test_method_interrupting_a_message_starts_its_own() -> None:
    assembler = MessageAssembler()
    assembler.feed(MethodFrame(1, DELIVER))
    assembler.feed(header(1, 3))
    assembler.feed(ContentBodyFrame(1, b"a"))
    second = Basic.Deliver(consumer_tag="ct", delivery_tag=2)
    error = error_of(assembler, MethodFrame(1, second))
    assert isinstance(error, UnexpectedFrameError)
    assert error.reason == (
        "basic.deliver arrived before the content of basic.deliver was complete (1 of 3 body bytes)"
    )
    assert (error.reply_code, error.channel, error.class_id, error.method_id) == (505, 1, 60, 60)
    assert assembler.in_progress(1)
    frames: list[Frame] = [header(1, 2), ContentBodyFrame(1, b"ok")]
    assert feed_all(assembler, frames) == [Message(1, second, PROPS, b"ok")]


def test_method_without_content_interrupting_a_message() -> None:
    assembler = MessageAssembler()
    assembler.feed(MethodFrame(1, PUBLISH))
    error = error_of(assembler, MethodFrame(1, ACK))
    assert error.reason == (
        "basic.ack arrived before the content of basic.publish was complete (no content header yet)"
    )
    assert (error.class_id, error.method_id) == (60, 80)  # the interrupting method
    assert not assembler.in_progress(1)
    assert feed_all(assembler, message(1, PUBLISH, b"x")) == [Message(1, PUBLISH, PROPS, b"x")]


@pytest.mark.parametrize(
    ("before", "bad", "reason"),
    [
        ([], header(1, 1), "content header without a content method before it"),
        ([], ContentBodyFrame(1, b"x"), "content body without a content header before it"),
        (
            [MethodFrame(1, DELIVER)],
            ContentBodyFrame(1, b"x"),
            "content body without a content header before it",
        ),
        (
            [MethodFrame(1, DELIVER), header(1, 3)],
            header(1, 3),
            "content header without a content method before it",
        ),
        (
            [MethodFrame(1, DELIVER)],
            ContentHeaderFrame(1, 50, 1, PROPS),
            "content header for class 50 after basic.deliver",
        ),
        (
            [MethodFrame(1, DELIVER), header(1, 3), ContentBodyFrame(1, b"ab")],
            ContentBodyFrame(1, b"cd"),
            "content body frames add up to 4 bytes, more than the announced 3",
        ),
    ],
    ids=["orphan-header", "orphan-body", "body-first", "second-header", "class", "too-long"],
)
def test_errors_drop_the_channels_message(before: list[Frame], bad: Frame, reason: str) -> None:
    assembler = MessageAssembler()
    assembler.feed(MethodFrame(2, PUBLISH))  # another channel's message is kept
    feed_all(assembler, before)
    error = error_of(assembler, bad)
    assert isinstance(error, UnexpectedFrameError)
    assert error.reason == reason
    assert error.channel == 1
    assert not assembler.in_progress(1)
    assert assembler.in_progress(2)
    # the channel starts afresh: a body now is out of sequence again, a new message works
    assert isinstance(error_of(assembler, ContentBodyFrame(1, b"x")), UnexpectedFrameError)
    assert feed_all(assembler, message(1, DELIVER, b"ok")) == [Message(1, DELIVER, PROPS, b"ok")]


def test_body_size_limit_drops_the_channels_message() -> None:
    assembler = MessageAssembler(max_body_size=4)
    assembler.feed(MethodFrame(1, PUBLISH))
    error = error_of(assembler, header(1, 5))
    assert isinstance(error, LimitExceededError)
    assert error.reply_code == 406
    assert not assembler.in_progress(1)
    assert assembler.feed(MethodFrame(1, ACK)) is None  # not "arrived before ..."


# -- unfinished --------------------------------------------------------------------------------


def test_unfinished_reports_incomplete_messages_by_channel() -> None:
    assembler = MessageAssembler()
    assert assembler.unfinished() == []
    assembler.feed(MethodFrame(5, PUBLISH))
    assembler.feed(MethodFrame(2, DELIVER))
    assembler.feed(header(2, 10))
    assembler.feed(ContentBodyFrame(2, b"1234"))
    feed_all(assembler, message(3, DELIVER, b"done"))
    errors = assembler.unfinished()
    assert [e.reason for e in errors] == [
        "stream ended before the content of basic.deliver was complete (4 of 10 body bytes)",
        "stream ended before the content of basic.publish was complete (no content header yet)",
    ]
    assert all(isinstance(e, UnexpectedFrameError) and e.reply_code == 505 for e in errors)
    assert [(e.channel, e.class_id, e.method_id) for e in errors] == [(2, 60, 60), (5, 60, 40)]
    # reporting does not change the state: the messages can still complete
    assert assembler.in_progress(2)
    assert assembler.feed(ContentBodyFrame(2, b"567890")) == Message(
        2, DELIVER, PROPS, b"1234567890"
    )
    assert len(assembler.unfinished()) == 1


def test_empty_body_is_not_unfinished() -> None:
    assembler = MessageAssembler()
    assembler.feed(MethodFrame(1, DELIVER))
    assert assembler.feed(header(1, 0)) == Message(1, DELIVER, PROPS, b"")
    assembler.feed(MethodFrame(1, Channel.Close()))
    assert assembler.unfinished() == []
