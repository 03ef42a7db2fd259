"""MessageDecoder: whole messages from bytes, a body copied once.

Held to FrameDecoder and MessageAssembler used apart (which copy each body frame's payload)
on the same bytes in any chunking, valid and damaged: the same messages, frames and errors.
What the views keep alive is checked after every item: the received chunks a message in
progress points into add up to at most four times its body bytes.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from connection_support import with_channel
from hypothesis import given, settings
from hypothesis import strategies as st
from message_support import apart, together
from strategies import examples

from amqp_codec import (
    AMQPDecodeError,
    ContentBodyFrame,
    ContentHeaderFrame,
    FrameDecoder,
    HeartbeatFrame,
    Message,
    MessageDecoder,
    MethodFrame,
    encode_frame,
    encode_message,
    events,
    v0_8,
    v0_9_1,
)

VERSIONS = {"0-9-1": v0_9_1, "0-8": v0_8}


def _deliver(spec: Any, tag: int) -> Any:
    return spec.Basic.Deliver(consumer_tag="ct", delivery_tag=tag, exchange="ex", routing_key="rk")


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, int, bytes]:
    """A server's stream of deliveries on a few channels, their frames interleaved, with
    acks (methods without content) and heartbeats between them."""
    version = draw(st.sampled_from(sorted(VERSIONS)))
    spec = VERSIONS[version]
    frame_max = draw(st.sampled_from([4096, 9000, 131072]))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    per_channel: list[list[bytes]] = []
    for channel in range(1, draw(st.integers(1, 3)) + 1):
        frames: list[bytes] = []
        for tag in range(draw(st.integers(0, 3))):
            size = draw(st.sampled_from([0, 1, 100, 4088, 4089, 20000, 70000]))
            props = spec.BasicProperties(content_type="application/octet-stream")
            message = encode_message(
                channel, _deliver(spec, tag + 1), props, rnd.randbytes(size), frame_max
            )
            decoder = FrameDecoder(spec)
            decoder.receive_data(message)
            frames += [encode_frame(f) for f in decoder]
            if draw(st.booleans()):
                frames.append(encode_frame(MethodFrame(channel, spec.Basic.Ack(tag + 1))))
        per_channel.append(frames)
    out: list[bytes] = []
    while any(per_channel):
        queue = draw(st.sampled_from([q for q in per_channel if q]))
        out.append(queue.pop(0))
        if draw(st.integers(0, 9)) == 0:
            out.append(encode_frame(HeartbeatFrame()))
    return version, frame_max, b"".join(out)


def chunked(data: bytes, sizes: list[int]) -> list[bytes]:
    """``data`` cut into chunks of the sizes in turn (none under 1/300 of ``data``, so that
    a stream makes at most 300 chunks)."""
    chunks, pos, i = [], 0, 0
    least = len(data) // 300
    while pos < len(data):
        size = max(sizes[i % len(sizes)], least)
        chunks.append(data[pos : pos + size])
        pos += size
        i += 1
    return chunks


def held_within_bound(decoder: MessageDecoder, item: Any = None) -> None:
    """Bodies come out as bytes, and the chunks each message in progress keeps alive through
    views add up to at most four times the body bytes it has received."""
    if isinstance(item, Message):
        assert type(item.body) is bytes
    for pending in decoder.assembler._pending.values():
        held = {id(c.obj): len(c.obj) for c in pending.chunks if type(c) is memoryview}  # type: ignore[arg-type]
        assert sum(held.values()) <= 4 * pending.received


def outcomes(version: str, frame_max: int, chunks: list[bytes]) -> tuple[list[Any], list[Any]]:
    """MessageDecoder's results on ``chunks``, and those of FrameDecoder and MessageAssembler
    used apart."""
    spec = VERSIONS[version]
    decoder = MessageDecoder(spec, frame_max=frame_max)
    return (
        together(decoder, chunks, held_within_bound),
        apart(FrameDecoder(spec, frame_max=frame_max), chunks),
    )


chunk_sizes = st.lists(st.integers(1, 140_000), min_size=1, max_size=6)


@settings(max_examples=examples(150), deadline=None)
@given(streams(), chunk_sizes)
def test_same_as_decoder_and_assembler_apart(stream, sizes):
    version, frame_max, data = stream
    mine, theirs = outcomes(version, frame_max, chunked(data, sizes))
    assert mine == theirs


@settings(max_examples=examples(150), deadline=None)
@given(streams(), chunk_sizes, st.lists(st.tuples(st.integers(0), st.integers(0, 255)), max_size=3))
def test_same_on_damaged_bytes(stream, sizes, damage):
    version, frame_max, data = stream
    if not data:
        return
    damaged = bytearray(data)
    for where, value in damage:
        damaged[where % len(data)] = value
    mine, theirs = outcomes(version, frame_max, chunked(bytes(damaged), sizes))
    assert mine == theirs


def test_a_large_body_is_viewed_and_joined_once():
    body = random.Random(3).randbytes(1 << 20)
    data = encode_message(1, _deliver(v0_9_1, 1), v0_9_1.BasicProperties(), body, 131072)
    decoder = MessageDecoder(v0_9_1, frame_max=131072)
    chunks = chunked(data, [65536])
    received = {id(chunk) for chunk in chunks}
    items, held = [], 0
    for chunk in chunks:
        decoder.receive_data(chunk)
        items += list(decoder)
        for pending in decoder.assembler._pending.values():
            # Not copied: views of the chunks received, and those chunks themselves.
            uncopied = [c for c in pending.chunks if type(c) is memoryview or id(c) in received]
            held = max(held, sum(map(len, uncopied)))
    assert held > len(body) * 3 // 4
    [message] = items
    assert message.body == body and type(message.body) is bytes


@pytest.mark.parametrize(("size", "viewed"), [(10, False), (6000, False), (20_000, True)])
def test_a_body_frame_in_one_chunk_is_viewed_only_if_large_in_it(size, viewed):
    # A body frame at the end of a chunk of about 36 KB mostly made of another channel's
    # frames: a view would keep the whole chunk alive, so only a frame that is a quarter of
    # it or more (and more than a few KiB, where a slice costs less) is viewed.
    spec = v0_9_1
    filler = b"".join(encode_frame(MethodFrame(2, spec.Basic.Ack(n))) for n in range(1, 2000))
    start = encode_frame(MethodFrame(1, _deliver(spec, 1))) + encode_frame(
        ContentHeaderFrame(1, 60, size + 10, spec.BasicProperties())
    )
    first = bytes(range(256)) * (size // 256) + bytes(size % 256)
    decoder = MessageDecoder(spec)
    decoder.receive_data(start + filler + encode_frame(ContentBodyFrame(1, first)))
    assert all(isinstance(item, MethodFrame) for item in decoder)
    [pending] = decoder.assembler._pending.values()
    assert [type(c) for c in pending.chunks] == [memoryview if viewed else bytes]
    decoder.receive_data(encode_frame(ContentBodyFrame(1, b"abcdefghij")))
    [message] = list(decoder)
    assert message.body == first + b"abcdefghij"


def test_a_small_body_frame_alone_in_its_chunk_is_sliced():
    # Viewing it would save nothing: a view joined later costs more than a slice.
    spec = v0_9_1
    decoder = MessageDecoder(spec)
    decoder.receive_data(encode_frame(MethodFrame(1, _deliver(spec, 1))))
    decoder.receive_data(encode_frame(ContentHeaderFrame(1, 60, 200, spec.BasicProperties())))
    decoder.receive_data(encode_frame(ContentBodyFrame(1, b"x" * 100)))
    assert list(decoder) == []
    [pending] = decoder.assembler._pending.values()
    assert [type(c) for c in pending.chunks] == [bytes]


@pytest.mark.parametrize("cut", [100, 30_000])
def test_small_pieces_of_a_frame_across_chunks_are_copied(cut):
    # A body frame whose first `cut` bytes end a chunk full of other frames, and whose rest
    # starts a chunk that other frames fill: only its pieces that are a large part of their
    # chunk are viewed.
    spec = v0_9_1
    filler = b"".join(encode_frame(MethodFrame(2, spec.Basic.Ack(n))) for n in range(1, 3000))
    start = encode_frame(MethodFrame(1, _deliver(spec, 1))) + encode_frame(
        ContentHeaderFrame(1, 60, 60_000, spec.BasicProperties())
    )
    frame = encode_frame(ContentBodyFrame(1, bytes(range(256)) * 128))  # 32 KiB of the body
    decoder = MessageDecoder(spec)
    for chunk in (start + filler + frame[:cut], frame[cut:] + filler):
        decoder.receive_data(chunk)
        assert all(isinstance(item, MethodFrame) for item in decoder)
        held_within_bound(decoder)
    [pending] = decoder.assembler._pending.values()
    assert pending.received == 32768


def test_a_frame_in_tiny_chunks_is_joined_not_kept_in_pieces():
    # One object per 100-byte chunk kept until the message completes would cost more than
    # the body: such a frame is joined when it completes, as FrameDecoder does.
    spec = v0_9_1
    body = bytes(range(256)) * 400  # 100 KiB, in one frame of a 200 KiB body
    data = encode_frame(MethodFrame(1, _deliver(spec, 1)))
    data += encode_frame(ContentHeaderFrame(1, 60, 2 * len(body), spec.BasicProperties()))
    data += encode_frame(ContentBodyFrame(1, body))
    decoder = MessageDecoder(spec)
    for chunk in chunked(data, [100]):
        decoder.receive_data(chunk)
        assert list(decoder) == []
    [pending] = decoder.assembler._pending.values()
    assert pending.received == len(body) and [type(c) for c in pending.chunks] == [bytes]


def test_a_body_over_max_body_size_closes_only_its_channel():
    spec = v0_9_1
    data = encode_message(1, _deliver(spec, 1), spec.BasicProperties(), b"x" * 50, 0)
    data += encode_message(2, _deliver(spec, 2), spec.BasicProperties(), b"y" * 5, 0)
    decoder = MessageDecoder(spec, max_body_size=10)
    decoder.receive_data(data)
    with pytest.raises(AMQPDecodeError) as raised:
        decoder.next_item()
    assert raised.value.reply_code == 406 and raised.value.channel == 1
    assert (raised.value.class_id, raised.value.method_id) == (60, 60)  # basic.deliver
    [message] = list(decoder)
    assert (message.channel, message.body) == (2, b"y" * 5)


def test_a_connection_receives_a_large_message_in_chunks():
    # The connection layer's decoder has body views on: its messages still come out whole.
    client, server, channel = with_channel()
    body = random.Random(5).randbytes(300_000)
    client.send(channel, v0_9_1.Basic.Publish(routing_key="q"), v0_9_1.BasicProperties(), body)
    received = []
    for chunk in chunked(client.data_to_send(), [65536, 1000, 7]):
        received += server.receive_data(chunk)
    [event] = received
    assert isinstance(event, events.MessageReceived)
    assert event.body == body and type(event.body) is bytes
