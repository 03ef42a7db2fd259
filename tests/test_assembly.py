"""MessageAssembler (content sequencing, 505 errors) and encode_message (body splitting)."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError, fields

import pytest
from strategies import parse_frames

from amqp_codec import (
    AMQPEncodeError,
    ContentBodyFrame,
    ContentHeaderFrame,
    FrameDecoder,
    HeartbeatFrame,
    LimitExceededError,
    Message,
    MessageAssembler,
    MethodFrame,
    ProtocolHeader,
    UnexpectedFrameError,
    encode_message,
)
from amqp_codec.v0_9_1 import Basic, BasicProperties, Channel, Connection

DELIVER = Basic.Deliver(consumer_tag="ct", delivery_tag=1, exchange="ex", routing_key="rk")
PUBLISH = Basic.Publish(exchange="ex", routing_key="rk")
PROPS = BasicProperties(content_type="text/plain", delivery_mode=2)


def header(channel: int, size: int, props: BasicProperties = PROPS) -> ContentHeaderFrame:
    return ContentHeaderFrame(channel, 60, size, props)


def feed_all(assembler: MessageAssembler, frames) -> list[Message]:
    out = []
    for frame in frames:
        message = assembler.feed(frame)
        if message is not None:
            out.append(message)
    return out


# --------------------------------------------------------------------------------------------
# Assembling
# --------------------------------------------------------------------------------------------


def test_deliver_header_and_bodies():
    assembler = MessageAssembler()
    assert assembler.feed(MethodFrame(1, DELIVER)) is None
    assert assembler.in_progress(1)
    assert assembler.feed(header(1, 11)) is None
    assert assembler.in_progress(1)
    assert assembler.feed(ContentBodyFrame(1, b"hello ")) is None
    message = assembler.feed(ContentBodyFrame(1, b"world"))
    assert message == Message(1, DELIVER, PROPS, b"hello world")
    assert type(message.body) is bytes
    assert not assembler.in_progress(1)


def test_an_assembled_message_is_the_frozen_dataclass_itself():
    """The assembler makes its messages without the frozen dataclass's __init__: every field
    set, equal, picklable and frozen as the dataclass is."""
    assembler = MessageAssembler()
    made = feed_all(assembler, [MethodFrame(1, DELIVER), header(1, 2), ContentBodyFrame(1, b"ok")])
    message = made[0]
    expected = Message(1, DELIVER, PROPS, b"ok")
    assert type(message) is Message
    assert message == expected and repr(message) == repr(expected)
    assert [getattr(message, f.name) for f in fields(Message)] == [1, DELIVER, PROPS, b"ok"]
    assert pickle.loads(pickle.dumps(message)) == expected
    with pytest.raises(FrozenInstanceError):
        message.body = b""  # type: ignore[misc]


def test_single_body_frame():
    assembler = MessageAssembler()
    messages = feed_all(
        assembler, [MethodFrame(2, PUBLISH), header(2, 3), ContentBodyFrame(2, b"abc")]
    )
    assert messages == [Message(2, PUBLISH, PROPS, b"abc")]


def test_empty_body_completes_at_the_header():
    assembler = MessageAssembler()
    assert assembler.feed(MethodFrame(1, DELIVER)) is None
    message = assembler.feed(header(1, 0))
    assert message == Message(1, DELIVER, PROPS, b"")
    assert not assembler.in_progress(1)
    # and the channel is free for the next message
    assert feed_all(
        assembler, [MethodFrame(1, DELIVER), header(1, 1), ContentBodyFrame(1, b"x")]
    ) == [Message(1, DELIVER, PROPS, b"x")]


def test_empty_body_frames_are_accepted():
    assembler = MessageAssembler()
    frames = [
        MethodFrame(1, DELIVER),
        header(1, 2),
        ContentBodyFrame(1, b""),
        ContentBodyFrame(1, b"a"),
        ContentBodyFrame(1, b""),
        ContentBodyFrame(1, b"b"),
    ]
    assert feed_all(assembler, frames) == [Message(1, DELIVER, PROPS, b"ab")]


@pytest.mark.parametrize(
    "method",
    [
        Basic.Publish(routing_key="q"),
        Basic.Deliver(delivery_tag=9),
        Basic.Return(reply_code=312, reply_text="NO_ROUTE"),
        Basic.GetOk(delivery_tag=3, message_count=1),
    ],
    ids=lambda m: m.NAME,
)
def test_every_content_method(method):
    assembler = MessageAssembler()
    frames = [MethodFrame(4, method), header(4, 2), ContentBodyFrame(4, b"ok")]
    assert feed_all(assembler, frames) == [Message(4, method, PROPS, b"ok")]


def test_interleaved_channels():
    props_a = BasicProperties(message_id="a")
    props_b = BasicProperties(message_id="b")
    deliver_b = Basic.Deliver(consumer_tag="ct2", delivery_tag=2)
    frames = [
        MethodFrame(1, DELIVER),
        MethodFrame(2, deliver_b),
        header(2, 4, props_b),
        MethodFrame(0, Connection.Blocked(reason="x")),  # channel 0 traffic in between
        HeartbeatFrame(),
        header(1, 6, props_a),
        ContentBodyFrame(1, b"aaa"),
        ContentBodyFrame(2, b"bb"),
        MethodFrame(3, Basic.Ack(delivery_tag=1)),  # another channel's method
        ContentBodyFrame(2, b"BB"),
        ContentBodyFrame(1, b"AAA"),
    ]
    assert feed_all(MessageAssembler(), frames) == [
        Message(2, deliver_b, props_b, b"bbBB"),
        Message(1, DELIVER, props_a, b"aaaAAA"),
    ]


def test_non_content_frames_are_ignored():
    assembler = MessageAssembler()
    for frame in [
        ProtocolHeader(),
        HeartbeatFrame(),
        MethodFrame(0, Connection.Tune()),
        MethodFrame(1, Basic.Ack(delivery_tag=1)),
        MethodFrame(1, Channel.Close()),
    ]:
        assert assembler.feed(frame) is None
    assert not assembler.in_progress(1)
    assert not assembler.in_progress(0)


# --------------------------------------------------------------------------------------------
# 505 unexpected frame
# --------------------------------------------------------------------------------------------

UNEXPECTED = {
    "header-without-method": [header(1, 1)],
    "body-without-method": [ContentBodyFrame(1, b"x")],
    "body-before-header": [MethodFrame(1, DELIVER), ContentBodyFrame(1, b"x")],
    "empty-body-before-header": [MethodFrame(1, DELIVER), ContentBodyFrame(1, b"")],
    "body-views-before-header": [MethodFrame(1, DELIVER), ContentBodyFrame(1, [b"", b""])],
    "method-before-header": [MethodFrame(1, DELIVER), MethodFrame(1, Basic.Ack(delivery_tag=1))],
    "method-before-body": [
        MethodFrame(1, DELIVER),
        header(1, 3),
        MethodFrame(1, Basic.Ack(delivery_tag=1)),
    ],
    "method-inside-body": [
        MethodFrame(1, DELIVER),
        header(1, 3),
        ContentBodyFrame(1, b"a"),
        MethodFrame(1, Channel.Close()),
    ],
    "content-method-inside-body": [
        MethodFrame(1, DELIVER),
        header(1, 3),
        ContentBodyFrame(1, b"a"),
        MethodFrame(1, DELIVER),
    ],
    "second-header": [MethodFrame(1, DELIVER), header(1, 3), header(1, 3)],
    "body-too-long-in-one-frame": [
        MethodFrame(1, DELIVER),
        header(1, 3),
        ContentBodyFrame(1, b"abcd"),
    ],
    "body-too-long-over-frames": [
        MethodFrame(1, DELIVER),
        header(1, 3),
        ContentBodyFrame(1, b"ab"),
        ContentBodyFrame(1, b"cd"),
    ],
    "body-after-complete-message": [
        MethodFrame(1, DELIVER),
        header(1, 1),
        ContentBodyFrame(1, b"a"),
        ContentBodyFrame(1, b"b"),
    ],
    "body-after-empty-message": [MethodFrame(1, DELIVER), header(1, 0), ContentBodyFrame(1, b"")],
    "header-after-complete-message": [
        MethodFrame(1, DELIVER),
        header(1, 1),
        ContentBodyFrame(1, b"a"),
        header(1, 1),
    ],
    "header-class-mismatch": [MethodFrame(1, DELIVER), ContentHeaderFrame(1, 50, 1, PROPS)],
    "body-on-other-channel": [MethodFrame(1, DELIVER), header(1, 1), ContentBodyFrame(2, b"a")],
    "header-on-other-channel": [MethodFrame(1, DELIVER), header(2, 1)],
}


@pytest.mark.parametrize("frames", list(UNEXPECTED.values()), ids=list(UNEXPECTED))
def test_unexpected_frames(frames):
    assembler = MessageAssembler()
    for frame in frames[:-1]:
        assembler.feed(frame)
    with pytest.raises(UnexpectedFrameError) as info:
        assembler.feed(frames[-1])
    error = info.value
    assert error.reply_code == 505
    assert error.hard
    assert error.channel == frames[-1].channel


def test_unexpected_error_names_the_pending_method():
    assembler = MessageAssembler()
    assembler.feed(MethodFrame(7, PUBLISH))
    with pytest.raises(UnexpectedFrameError) as info:
        assembler.feed(MethodFrame(7, Basic.Ack(delivery_tag=1)))
    assert info.value.channel == 7
    assert info.value.class_id == 60


def test_max_body_size_in_assembler():
    assembler = MessageAssembler(max_body_size=10)
    assembler.feed(MethodFrame(5, PUBLISH))
    with pytest.raises(LimitExceededError) as info:
        assembler.feed(header(5, 11))
    assert info.value.reply_code == 406
    assert info.value.channel == 5
    assert not info.value.hard
    ok = MessageAssembler(max_body_size=10)
    assert feed_all(ok, [MethodFrame(5, PUBLISH), header(5, 10), ContentBodyFrame(5, b"0" * 10)])


# --------------------------------------------------------------------------------------------
# encode_message
# --------------------------------------------------------------------------------------------


def _body_sizes(data: bytes, channel: int) -> tuple[list[tuple[int, int, bytes]], list[int]]:
    frames = parse_frames(data)
    assert [t for t, _, _ in frames[:2]] == [1, 2]
    assert all(ch == channel for _, ch, _ in frames)
    assert all(t == 3 for t, _, _ in frames[2:])
    return frames, [len(p) for _, _, p in frames[2:]]


@pytest.mark.parametrize("frame_max", [4096, 131072])
@pytest.mark.parametrize("size_name", ["0", "1", "fm-8", "fm-7", "1MiB"])
def test_encode_message_splits_at_frame_max(frame_max, size_name):
    size = {
        "0": 0,
        "1": 1,
        "fm-8": frame_max - 8,
        "fm-7": frame_max - 7,
        "1MiB": 1024 * 1024,
    }[size_name]
    body = bytes(i % 251 for i in range(size))
    data = encode_message(9, PUBLISH, PROPS, body, frame_max=frame_max)
    frames, sizes = _body_sizes(data, 9)
    chunk = frame_max - 8
    expected = [chunk] * (size // chunk) + ([size % chunk] if size % chunk else [])
    assert sizes == expected
    assert all(0 < s <= chunk for s in sizes)
    assert all(8 + s <= frame_max for s in sizes)
    assert b"".join(p for _, _, p in frames[2:]) == body
    header_payload = frames[1][2]
    assert header_payload[:12] == (60).to_bytes(2, "big") + b"\x00\x00" + size.to_bytes(8, "big")
    assert header_payload[12:] == PROPS.encode()
    assert frames[0][2] == PUBLISH.encode()

    # The decoder with the same frame_max reassembles the same message.
    decoder = FrameDecoder(frame_max=frame_max)
    decoder.receive_data(data)
    messages = feed_all(MessageAssembler(), decoder)
    assert messages == [Message(9, PUBLISH, PROPS, body)]


def test_encode_message_without_frame_max_is_one_body_frame():
    body = b"x" * 200_000
    _, sizes = _body_sizes(encode_message(1, PUBLISH, PROPS, body), 1)
    assert sizes == [200_000]
    _, sizes = _body_sizes(encode_message(1, PUBLISH, PROPS, b""), 1)
    assert sizes == []


def test_encode_message_small_frame_max():
    data = encode_message(1, PUBLISH, BasicProperties(), b"abc", frame_max=9)
    _, sizes = _body_sizes(data, 1)
    assert sizes == [1, 1, 1]


@pytest.mark.parametrize("frame_max", [1, 8])
def test_encode_message_frame_max_without_room(frame_max):
    with pytest.raises(AMQPEncodeError):
        encode_message(1, PUBLISH, PROPS, b"a", frame_max=frame_max)


def test_encode_message_rejects_method_without_content():
    with pytest.raises(AMQPEncodeError):
        encode_message(1, Basic.Ack(delivery_tag=1), PROPS, b"a")


def test_encode_message_accepts_bytes_like_bodies():
    for body in (bytearray(b"abc"), memoryview(b"abc")):
        data = encode_message(1, PUBLISH, PROPS, body, frame_max=10)
        _, sizes = _body_sizes(data, 1)
        assert sizes == [2, 1]


# -- 99-0 framesets (amqp_codec.wire010.assembly) --------------------------------------------


def _draft_frames(data: bytes) -> list[object]:
    from amqp_codec import v0_10_draft

    decoder = FrameDecoder(v0_10_draft.SPEC)
    decoder.receive_data(data)
    return list(decoder)


def _draft_feed(frames, **kwargs) -> list[object]:  # type: ignore[no-untyped-def]
    from amqp_codec.wire010.assembly import DraftMessageAssembler

    assembler = DraftMessageAssembler(**kwargs)
    return [m for m in (assembler.feed(f) for f in frames) if m is not None]


def test_draft_worked_example_assembles():
    from version_streams import DRAFT_EXAMPLE, DRAFT_STRUCTS, DRAFT_TRANSFER

    from amqp_codec import v0_10_draft as draft
    from amqp_codec.wire010.assembly import DraftMessage

    data = DRAFT_EXAMPLE["transfer"] + DRAFT_EXAMPLE["header"] + DRAFT_EXAMPLE["body"]
    (message,) = _draft_feed(_draft_frames(data))
    assert message == DraftMessage(1, DRAFT_TRANSFER, DRAFT_STRUCTS, b"hello")
    assert message.get(draft.MessageProperties).content_type == "text/plain"
    assert message.named("delivery-properties").routing_key == "q"
    assert message.named("no-such-struct") is None


@pytest.mark.parametrize(
    ("frame_max", "flags"),
    [
        (64, None),  # encode_draft_message: E on every body frame (0x06 0x04... 0x05)
        (0, (0x02, 0x00, 0x00, 0x01, 0x05)),  # C++ client: E only on the last body frame
    ],
)
def test_draft_split_body_ends_at_e_and_e(frame_max, flags):
    from version_streams import DRAFT_STRUCTS, DRAFT_TRANSFER

    from amqp_codec.wire010 import DraftBodyFrame, DraftHeaderFrame, DraftMethodFrame
    from amqp_codec.wire010.frames import encode_draft_message

    body = bytes(range(200))
    if flags is None:
        frames = _draft_frames(
            encode_draft_message(3, DRAFT_TRANSFER, DRAFT_STRUCTS, body, frame_max=frame_max)
        )
        assert len(frames) > 4
    else:
        chunks = [body[i : i + 50] for i in range(0, 200, 50)] + [b""]
        frames = [DraftMethodFrame(3, DRAFT_TRANSFER), DraftHeaderFrame(3, DRAFT_STRUCTS, 0x03)]
        frames += [DraftBodyFrame(3, c, f) for c, f in zip(chunks, flags, strict=True)]
    from amqp_codec.wire010.assembly import DraftMessageAssembler

    assembler = DraftMessageAssembler()
    results = [assembler.feed(f) for f in frames]
    assert results[:-1] == [None] * (len(frames) - 1)
    assert results[-1].body == body and not assembler.in_progress(3)


def test_draft_empty_content_ends_at_the_header_or_an_empty_body():
    from version_streams import DRAFT_TRANSFER

    from amqp_codec.wire010 import DraftBodyFrame, DraftHeaderFrame, DraftMethodFrame

    # C++ and Python: header with E, no body frame. Java: header 0x03 and an empty body 0x07.
    cpp = [DraftMethodFrame(1, DRAFT_TRANSFER), DraftHeaderFrame(1, (), 0x07)]
    java = [
        DraftMethodFrame(1, DRAFT_TRANSFER),
        DraftHeaderFrame(1, (), 0x03),
        DraftBodyFrame(1, b""),
    ]
    for frames in (cpp, java):
        (message,) = _draft_feed(frames)
        assert message.body == b"" and message.structs == ()


def test_draft_sequence_errors():
    from version_streams import DRAFT_STRUCTS, DRAFT_TRANSFER

    from amqp_codec import v0_10_draft as draft
    from amqp_codec.wire010 import DraftBodyFrame, DraftHeaderFrame, DraftMethodFrame
    from amqp_codec.wire010.assembly import DraftMessageAssembler

    assembler = DraftMessageAssembler()
    with pytest.raises(UnexpectedFrameError, match="body frame without a header segment"):
        assembler.feed(DraftBodyFrame(1, b"x"))
    with pytest.raises(UnexpectedFrameError, match="header segment without a content command"):
        assembler.feed(DraftHeaderFrame(1, DRAFT_STRUCTS))
    assembler.feed(DraftMethodFrame(1, DRAFT_TRANSFER))
    assembler.feed(DraftHeaderFrame(1, DRAFT_STRUCTS, 0x03))
    assembler.feed(DraftBodyFrame(1, b"he", 0x06))
    (error,) = assembler.unfinished()
    assert error.reply_code == 505 and "2 body bytes so far" in error.reason
    with pytest.raises(
        UnexpectedFrameError, match=r"before the frameset of message\.transfer"
    ) as info:
        assembler.feed(DraftMethodFrame(1, draft.Execution.Sync()))
    assert (info.value.class_id, info.value.method_id) == (140, 50)
    assert not assembler.in_progress(1) and assembler.unfinished() == []
    # A second header segment in one frameset.
    assembler.feed(DraftMethodFrame(2, DRAFT_TRANSFER))
    assembler.feed(DraftHeaderFrame(2, DRAFT_STRUCTS, 0x03))
    with pytest.raises(UnexpectedFrameError, match="header segment without"):
        assembler.feed(DraftHeaderFrame(2, DRAFT_STRUCTS, 0x03))
    # 0-9 frames are not its business.
    assert assembler.feed(ContentBodyFrame(1, b"x")) is None


def test_draft_limits_and_mid_stream():
    from version_streams import DRAFT_STRUCTS, DRAFT_TRANSFER

    from amqp_codec.wire010 import DraftBodyFrame, DraftHeaderFrame, DraftMethodFrame
    from amqp_codec.wire010.assembly import DraftMessageAssembler

    assembler = DraftMessageAssembler(max_body_size=10)
    assembler.feed(DraftMethodFrame(1, DRAFT_TRANSFER))
    assembler.feed(DraftHeaderFrame(1, DRAFT_STRUCTS, 0x03))
    assembler.feed(DraftBodyFrame(1, b"x" * 6, 0x06))
    with pytest.raises(LimitExceededError) as info:
        assembler.feed(DraftBodyFrame(1, b"x" * 6, 0x05))
    assert info.value.reply_code == 406 and not assembler.in_progress(1)
    # Mid-stream: content on a channel with no method since is ignored until its next method.
    late = DraftMessageAssembler(mid_stream=True)
    assert late.feed(DraftHeaderFrame(1, DRAFT_STRUCTS, 0x03)) is None
    assert late.feed(DraftBodyFrame(1, b"tail")) is None
    assert late.feed(DraftMethodFrame(1, DRAFT_TRANSFER)) is None
    assert late.feed(DraftHeaderFrame(1, DRAFT_STRUCTS, 0x07)).body == b""
    late.feed(DraftMethodFrame(1, DRAFT_TRANSFER))
    late.forget()
    assert late.unfinished() == [] and late.feed(DraftBodyFrame(1, b"x")) is None
