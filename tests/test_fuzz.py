"""Fuzzing: arbitrary and mutated bytes may only raise AMQPDecodeError, and decoding ends.

Every byte fed is either decoded into a frame (each at least 8 bytes, or the 8-byte protocol
header), kept as an incomplete frame, or the decoder stops with an AMQPDecodeError; so the
number of next_frame() calls is bounded by the input size and the loops below are bounded too.
"""

from __future__ import annotations

import contextlib
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import PROTOCOL_HEADER, examples, frame_lists, method_payloads

from amqp_codec import (
    NEED_DATA,
    AMQPDecodeError,
    FrameDecoder,
    MessageAssembler,
    decode_method,
    encode_frame,
)
from amqp_codec.table import decode_table, encode_table
from amqp_codec.v0_9_1 import METHODS

METHOD_CLASSES = sorted(METHODS.values(), key=lambda c: c.INDEX)


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def run_decoder(data: bytes, cuts: list[int], **kwargs) -> tuple[int, AMQPDecodeError | None]:
    """Feed ``data`` in chunks; return (frames decoded, error or None). Only decode errors pass,
    and every frame that decodes re-encodes to exactly the bytes it was decoded from."""
    decoder = FrameDecoder(**kwargs)
    assembler = MessageAssembler()
    frames = 0
    limit = len(data) // 8 + 2
    try:
        for chunk in [*chunked(data, cuts), b""]:
            decoder.receive_data(chunk)
            for _ in range(limit + 1):
                start = decoder.offset
                frame = decoder.next_frame()
                if frame is NEED_DATA:
                    break
                # Whatever decodes, even from mangled input, re-encodes to exactly its bytes.
                assert encode_frame(frame) == data[start : decoder.offset]
                frames += 1
                assert frames <= limit, "decoder produced more frames than the input can hold"
                with contextlib.suppress(AMQPDecodeError):
                    assembler.feed(frame)  # sequencing errors are fine; the frame decoded
            else:
                raise AssertionError("next_frame() did not return NEED_DATA")
    except AMQPDecodeError as exc:
        if not exc.hard and exc.channel:
            # A soft error (406) closes one channel: the decoder steps over its frame.
            try:
                decoder.next_frame()
            except AMQPDecodeError as again:
                assert again is not exc
            return frames, exc
        # Latched: the same error again, whatever comes next.
        try:
            decoder.next_frame()
        except AMQPDecodeError as again:
            assert again is exc
        else:
            raise AssertionError("decoder did not stay failed") from None
        return frames, exc
    return frames, None


def check_error(exc: AMQPDecodeError | None, data_len: int) -> None:
    if exc is None:
        return
    assert exc.reply_code in (None, 406, 501, 502, 503, 504, 505)
    if exc.offset is not None:
        assert 0 <= exc.offset <= data_len
    str(exc)  # never raises


@settings(max_examples=examples(300))
@given(st.binary(max_size=400), st.lists(st.integers(0, 10_000), max_size=12))
def test_arbitrary_bytes(data, cuts):
    _, exc = run_decoder(data, cuts)
    check_error(exc, len(data))


@settings(max_examples=examples(200))
@given(st.binary(max_size=300), st.lists(st.integers(0, 10_000), max_size=8))
def test_arbitrary_bytes_after_a_protocol_header(data, cuts):
    _, exc = run_decoder(PROTOCOL_HEADER + data, cuts)
    check_error(exc, len(data) + 8)


@settings(max_examples=examples(200))
@given(st.binary(max_size=300), st.lists(st.integers(0, 10_000), max_size=8))
def test_arbitrary_frame_shaped_bytes(payload, cuts):
    # Frames with a valid header and frame end but random payloads reach the method and
    # property decoders rather than stopping at the framing checks.
    for frame_type in (1, 2):
        for channel in (0, 1):
            data = (
                bytes([frame_type])
                + channel.to_bytes(2, "big")
                + len(payload).to_bytes(4, "big")
                + payload
                + b"\xce"
            )
            _, exc = run_decoder(PROTOCOL_HEADER + data, cuts, max_frame_size=4096)
            check_error(exc, len(data) + 8)


@st.composite
def mutated_streams(draw):
    frames = draw(frame_lists(max_frames=6))
    data = bytearray(PROTOCOL_HEADER + b"".join(encode_frame(f) for f in frames))
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "dup"]))
        if not data:
            break
        pos = draw(st.integers(0, len(data) - 1))
        if op == "flip":
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            data[pos] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xCE, 0xFF]))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 8))]
        elif op == "truncate":
            del data[pos:]
        else:
            end = min(len(data), pos + draw(st.integers(1, 16)))
            data[pos:pos] = data[pos:end]
    return bytes(data)


@settings(max_examples=examples(300))
@given(mutated_streams(), st.lists(st.integers(0, 100_000), max_size=10))
def test_mutated_valid_streams(data, cuts):
    _, exc = run_decoder(data, cuts)
    check_error(exc, len(data))


@settings(max_examples=examples(100))
@given(mutated_streams(), st.lists(st.integers(0, 100_000), max_size=10))
def test_mutated_valid_streams_with_small_limits(data, cuts):
    _, exc = run_decoder(data, cuts, frame_max=512, max_body_size=1000, max_table_depth=1)
    check_error(exc, len(data))


@settings(max_examples=examples(300))
@given(st.data())
def test_mutated_method_payloads(data):
    cls = data.draw(st.sampled_from(METHOD_CLASSES))
    payload, _ = data.draw(method_payloads(cls))
    mutated = bytearray(payload)
    for _ in range(data.draw(st.integers(1, 4))):
        if not mutated:
            break
        pos = data.draw(st.integers(0, len(mutated) - 1))
        op = data.draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        if op == "flip":
            mutated[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif op == "delete":
            del mutated[pos]
        elif op == "insert":
            mutated[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
        else:
            del mutated[pos:]
    try:
        method = decode_method(bytes(mutated))
    except AMQPDecodeError as exc:
        check_error(exc, len(mutated))
    else:
        # Whatever decoded re-encodes to the same bytes.
        assert method.encode() == bytes(mutated)


@settings(max_examples=examples(300))
@given(st.binary(max_size=200))
def test_arbitrary_method_payloads(payload):
    try:
        method = decode_method(payload)
    except AMQPDecodeError as exc:
        check_error(exc, len(payload))
    else:
        assert method.encode() == payload


@settings(max_examples=examples(300))
@given(st.binary(max_size=200), st.integers(0, 3))
def test_arbitrary_tables(body, depth):
    raw = len(body).to_bytes(4, "big") + body
    try:
        table, end = decode_table(raw, 0, len(raw), depth)
    except AMQPDecodeError as exc:
        check_error(exc, len(raw))
    else:
        assert end == len(raw)
        assert encode_table(table) == raw
