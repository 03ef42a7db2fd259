"""Fuzz targets: one function per decoder or tool, each taking the fuzzer's bytes.

A target returns normally when the input was handled as documented and raises
``AssertionError`` when an invariant broke. The invariants, besides "nothing else escapes":

* only the documented exceptions (``AMQPDecodeError`` family, ``AddressError``);
* exact re-encode: every decoded frame, table or address writes back to the bytes (or, for
  addresses, the value) it came from;
* error offsets inside the input, and the same result whatever the chunking;
* output bounded by the input: a decoded value holds no more elements than its input has
  bytes, a capture no more problems than the cap (memory per input is linear);
* a decoder that failed stays failed with the same error.

Time per input is checked by the runner (``run.py``), not here, so that the targets can also
run as plain tests without timing thresholds.
"""

from __future__ import annotations

import atexit
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from amqp_codec import (
    NEED_DATA,
    AMQPDecodeError,
    FrameDecoder,
    Message,
    MessageDecoder,
    encode_frame,
    v0_8,
    v0_9_1,
)
from amqp_codec import v0_10_draft as draft
from amqp_codec.address import AddressError, parse
from amqp_codec.capture import Segment, connection_key, read_capture, reassemble
from amqp_codec.capture import packets as capture_packets
from amqp_codec.inspect.dissector import FrameEvent, ProblemEvent, ResyncEvent, StreamDissector
from amqp_codec.protocol import ProtocolSpec
from amqp_codec.table import FieldArray, FieldTable, decode_table, encode_table
from amqp_codec.wire010 import table as table010

Target = Callable[[bytes], None]


# -- helpers ---------------------------------------------------------------------------------


def split(data: bytes) -> tuple[int, bytes]:
    """The first octet (a knob: chunk size, framing) and the rest."""
    return (data[0], data[1:]) if data else (0, b"")


def chunks(data: bytes, knob: int) -> list[bytes]:
    """``data`` cut into pieces of 1 to 64 bytes, the sizes cycling from ``knob``."""
    out = []
    i = 0
    step = knob
    while i < len(data):
        size = 1 + step % 64
        out.append(data[i : i + size])
        i += size
        step = step * 5 + 3
    return out


def elements(value: Any, depth: int = 0) -> int:
    """How many values ``value`` holds, nested containers counted through."""
    if depth > 100:
        return 0
    if isinstance(value, FieldTable | table010.FieldTable):
        return sum(1 + elements(v, depth + 1) for _k, _t, v in value.entries())
    if isinstance(value, table010.Array):
        return sum(1 + elements(v, depth + 1) for v in value.values)
    if isinstance(value, FieldArray | tuple | list):
        return sum(1 + elements(v, depth + 1) for v in value)
    if isinstance(value, table010.Typed):
        return elements(value.value, depth + 1)
    fields = getattr(type(value), "FIELDS", None)
    if fields is not None:
        return sum(elements(getattr(value, f.attr), depth + 1) for f in fields)
    for attr in ("method", "properties", "structs"):
        if hasattr(value, attr):
            return elements(getattr(value, attr), depth + 1)
    return 0


def _decode_stream(
    spec: ProtocolSpec | None, pieces: Iterable[bytes], data: bytes
) -> tuple[list[tuple[int, int]], AMQPDecodeError | None]:
    """Frames as (start, end) and the error of one decoder fed ``pieces``; checks re-encode,
    element counts and the latched error."""
    decoder = FrameDecoder(spec, accept_extended_tags=True)
    spans: list[tuple[int, int]] = []
    try:
        for piece in [*pieces, b""]:
            decoder.receive_data(piece)
            while True:
                start = decoder.offset
                frame = decoder.next_frame()
                if frame is NEED_DATA:
                    break
                raw = data[start : decoder.offset]
                assert encode_frame(frame) == raw, "a decoded frame does not re-encode exactly"
                assert elements(frame) <= len(raw), "more decoded values than input bytes"
                spans.append((start, decoder.offset))
                assert len(spans) <= len(data) // 8 + 2
    except AMQPDecodeError as exc:
        detected = decoder.spec
        # A channel-level (soft) error closes that channel only: the decoder steps over the
        # frame and may go on. Any other error latches it.
        if detected is None or exc.reply_code not in detected.soft_errors:
            try:
                decoder.next_frame()
            except AMQPDecodeError as again:
                assert again is exc, "a failed decoder raised a different error"
            else:
                raise AssertionError("a failed decoder did not stay failed") from None
        if exc.offset is not None:
            assert 0 <= exc.offset <= len(data), f"error offset {exc.offset} outside the input"
        str(exc)
        return spans, exc
    return spans, None


def _outcome(result: tuple[list[tuple[int, int]], AMQPDecodeError | None]) -> tuple[Any, ...]:
    spans, exc = result
    if exc is None:
        return (spans, None)
    return (spans, type(exc), exc.offset, exc.reason, exc.field, exc.channel, exc.reply_code)


def _decoder_target(spec: ProtocolSpec | None, prefix: bytes = b"") -> Target:
    def target(data: bytes) -> None:
        knob, rest = split(data)
        stream = prefix + rest
        whole = _decode_stream(spec, [stream], stream)
        chunked = _decode_stream(spec, chunks(stream, knob), stream)
        assert _outcome(whole) == _outcome(chunked), "the result depends on the chunking"

    return target


def message_decoder(data: bytes) -> None:
    """MessageDecoder (body frames as views of the input) in one piece and in small pieces
    against FrameDecoder's frames assembled apart: the same messages, frames and errors;
    bodies are bytes no larger than the input, error offsets inside it."""
    from message_support import apart, together

    knob, stream = split(data)

    def check(decoder: MessageDecoder, item: Any) -> None:
        if isinstance(item, Message):
            assert type(item.body) is bytes, "a body that is not bytes"
            assert len(item.body) <= len(stream), "a body larger than the input"
        elif isinstance(item, AMQPDecodeError) and item.offset is not None:
            assert 0 <= item.offset <= len(stream), "error offset outside the input"

    def decoder() -> MessageDecoder:
        return MessageDecoder(v0_9_1.SPEC, accept_extended_tags=True)

    whole = together(decoder(), [stream], check)
    assert len(whole) <= len(stream) // 8 + 2, "more items than frames fit in the input"
    pieces = together(decoder(), chunks(stream, knob), check)
    assert pieces == whole, "the result depends on the chunking"
    frames = apart(FrameDecoder(v0_9_1.SPEC, accept_extended_tags=True), [stream])
    assert whole == frames, "MessageDecoder differs from FrameDecoder and MessageAssembler"


# -- targets ---------------------------------------------------------------------------------

decoder_0_9_1 = _decoder_target(v0_9_1.SPEC)
decoder_0_8 = _decoder_target(v0_8.SPEC)
decoder_99_0 = _decoder_target(draft.SPEC, b"AMQP\x01\x01\x63\x00")
decoder_detect = _decoder_target(None)


def _table_target(
    decode: Callable[[bytes, int, int], tuple[Any, int]], encode: Callable[[Any], bytes]
) -> Target:
    def target(data: bytes) -> None:
        knob, rest = split(data)
        end = len(rest) - knob % 8 if len(rest) >= knob % 8 else len(rest)
        results = []
        # The bytes after ``end`` must not change anything: decode with and without them.
        for buf in (rest, rest[:end], rest[:end] + b"\xff" * 8):
            try:
                table, stop = decode(buf, 0, end)
            except AMQPDecodeError as exc:
                if exc.offset is not None:
                    assert 0 <= exc.offset <= end, "error offset outside the table"
                results.append((type(exc), exc.reason, exc.field, exc.offset))
                continue
            assert 0 <= stop <= end
            assert encode(table) == rest[:stop], "a decoded table does not re-encode exactly"
            assert elements(table) <= stop, "more decoded values than input bytes"
            results.append((stop, encode(table)))
        assert results[0] == results[1] == results[2], "bytes past end changed the result"

    return target


table_0_9_1 = _table_target(decode_table, encode_table)
table_99_0 = _table_target(table010.decode_table, table010.encode_table)


def _dissect(pieces: Iterable[bytes]) -> list[Any]:
    dissector = StreamDissector()
    events: list[Any] = []
    for piece in pieces:
        events += dissector.feed(piece)
    events += dissector.finish()
    return events


def dissector(data: bytes) -> None:
    knob, rest = split(data)
    whole = _dissect([rest])
    assert _dissect(chunks(rest, knob)) == whole, "events depend on the chunking"
    decoded = 0
    for event in whole:
        if isinstance(event, FrameEvent):
            raw = rest[event.offset : event.end]
            assert encode_frame(event.frame) == raw, "a dissected frame does not re-encode"
            decoded += elements(event.frame)
        elif isinstance(event, ProblemEvent):
            assert 0 <= event.problem.offset <= len(rest), "problem offset outside the stream"
        elif isinstance(event, ResyncEvent):
            assert 0 <= event.start <= event.stop <= len(rest)
    assert decoded <= len(rest), "more decoded values than input bytes"
    assert len(whole) <= 3 * len(rest) + 8, "more events than input bytes"


_CAPTURE_PATH: str | None = None


def capture(data: bytes) -> None:
    """The capture reader on ``data`` as a file, then TCP reassembly and the dissector."""
    global _CAPTURE_PATH
    if _CAPTURE_PATH is None:
        fd, _CAPTURE_PATH = tempfile.mkstemp(prefix="amqp-codec-fuzz-", suffix=".cap")
        os.close(fd)
        atexit.register(os.remove, _CAPTURE_PATH)
    with open(_CAPTURE_PATH, "wb") as f:
        f.write(data)
    groups: dict[Any, list[Segment]] = defaultdict(list)
    problems = 0
    for item in read_capture(_CAPTURE_PATH):
        if isinstance(item, Segment):
            groups[connection_key(item, {5672})].append(item)
        else:
            problems += 1
    assert problems <= capture_packets.MAX_PROBLEMS + 4, "problems per capture not capped"
    for segments in groups.values():
        stream = reassemble(segments)
        dissector_ = StreamDissector()
        for chunk in stream.chunks():
            dissector_.feed(chunk)
        dissector_.finish()


def address(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    for validate in (False, True):
        try:
            parsed = parse(text, validate=validate)
        except AddressError as exc:
            assert 1 <= exc.column <= len(text) + 1, "error column outside the text"
            str(exc)
            continue
        canonical = str(parsed)
        assert parse(canonical, validate=False) == parsed, "canonical form does not read back"
        assert str(parse(canonical, validate=False)) == canonical


def _encode_round_trip() -> Target:
    """Hypothesis strategies (tests/strategies.py) drawn from the fuzzer's bytes: frames
    encode, decode back equal and re-encode to the same bytes."""
    from hypothesis import given, settings
    from strategies import frame_lists

    @settings(database=None, deadline=None)
    @given(frame_lists(max_frames=4))
    def round_trip(frames: list[Any]) -> None:
        wire = b"".join(encode_frame(frame) for frame in frames)
        decoder = FrameDecoder(v0_9_1.SPEC)
        decoder.receive_data(wire)
        decoded = []
        while (frame := decoder.next_frame()) is not NEED_DATA:
            decoded.append(frame)
        assert decoded == frames
        assert b"".join(encode_frame(frame) for frame in decoded) == wire

    fuzz_one_input = round_trip.hypothesis.fuzz_one_input

    def target(data: bytes) -> None:
        fuzz_one_input(data)  # an input too short to draw from is skipped quietly

    return target


encode_round_trip = _encode_round_trip()


TARGETS: dict[str, Target] = {
    "decoder-0-9-1": decoder_0_9_1,
    "decoder-0-8": decoder_0_8,
    "decoder-99-0": decoder_99_0,
    "decoder-detect": decoder_detect,
    "message-decoder": message_decoder,
    "table-0-9-1": table_0_9_1,
    "table-99-0": table_99_0,
    "dissector": dissector,
    "capture": capture,
    "address": address,
    "encode-round-trip": encode_round_trip,
}
