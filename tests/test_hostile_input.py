"""Regression tests for hostile and unusual input: each reproduces one finding of fuzzing.

Costs are checked by counting what comes out (elements, problems, bytes copied), never by
timing: a decoded value holds no more elements than its input has bytes, a capture yields a
bounded number of problems, and errors carry the same offset whatever the chunking.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from amqp_codec import NEED_DATA, AMQPDecodeError, FrameDecoder
from amqp_codec import v0_10_draft as draft
from amqp_codec.capture import CaptureProblem, packets, read_capture
from amqp_codec.errors import FrameSyntaxError
from amqp_codec.inspect import dissector as dissect_module
from amqp_codec.inspect import resync as resync_module
from amqp_codec.table import decode_table
from amqp_codec.wire010 import Array, encode_array, encode_draft_frame
from amqp_codec.wire010 import table as wire010_table
from amqp_codec.wire010.frames import DraftBodyFrame, DraftMethodFrame
from amqp_codec.wire010.table import CODE_VOID, decode_array

DRAFT_HEADER = b"AMQP\x01\x01\x63\x00"


def decode_all(data: bytes, chunk: int) -> tuple[int, AMQPDecodeError | None]:
    """Frames decoded and the error (if any) for ``data`` fed ``chunk`` bytes at a time."""
    decoder = FrameDecoder()
    frames = 0
    try:
        for start in range(0, len(data), chunk):
            decoder.receive_data(data[start : start + chunk])
            while decoder.next_frame() is not NEED_DATA:
                frames += 1
        decoder.receive_data(b"")
        while decoder.next_frame() is not NEED_DATA:
            frames += 1
    except AMQPDecodeError as exc:
        return frames, exc
    return frames, None


# -- finding 1: 99-0 arrays of a zero-width type ----------------------------------------------


def test_void_array_cannot_claim_more_elements_than_bytes() -> None:
    # 9 bytes: size 5, type void, count 65536. It used to decode to 65,536 Nones.
    data = b"\x00\x00\x00\x05\xf0\x00\x01\x00\x00"
    with pytest.raises(FrameSyntaxError, match="more than it has bytes") as caught:
        decode_array(data, 0, len(data))
    assert caught.value.reply_code == 502
    assert 0 <= (caught.value.offset or 0) < len(data)


@pytest.mark.parametrize("count", [0, 1, 5])
def test_void_array_within_its_bytes_still_decodes(count: int) -> None:
    data = encode_array(Array(CODE_VOID, (None,) * count))
    array, end = decode_array(data, 0, len(data))
    assert array.values == (None,) * count and end == len(data)


def test_void_array_over_its_bytes_is_refused_on_encode() -> None:
    with pytest.raises(ValueError, match="zero-width"):
        encode_array(Array(CODE_VOID, (None,) * 6))


@pytest.mark.parametrize("count", [5, 6, 0xFFFFFFFF])
def test_table_of_void_arrays_holds_no_more_values_than_bytes(count: int) -> None:
    array = b"\x00\x00\x00\x05\xf0" + count.to_bytes(4, "big")
    entries = b"".join(bytes([2]) + b"k%d" % (i % 10) + b"\xaa" + array for i in range(200))
    data = len(entries).to_bytes(4, "big") + entries
    try:
        table, _ = wire010_table.decode_table(data, 0, len(data))
    except FrameSyntaxError as exc:
        assert count > 5 and "more than it has bytes" in exc.reason
        return
    values = sum(len(a.values) for _k, _c, a in table.entries())
    assert values == 200 * count <= len(data)


# -- finding 5: 99-0 error offsets --------------------------------------------------------------


def _transfer_with_long_shortstr() -> bytes:
    frame = bytearray(
        encode_draft_frame(DraftMethodFrame(1, draft.Message.Transfer(destination="amq.direct")))
    )
    assert frame[16] == len("amq.direct")
    frame[16] = 0xFF  # the destination's length now runs past the frame's end
    body = encode_draft_frame(DraftBodyFrame(1, b"x" * 300))
    return DRAFT_HEADER + bytes(frame) + body


def test_draft_error_offset_does_not_depend_on_chunking() -> None:
    data = _transfer_with_long_shortstr()
    outcomes = set()
    for chunk in (1, 2, 3, 7, 12, 13, 29, 64, len(data)):
        frames, error = decode_all(data, chunk)
        assert error is not None
        assert error.offset is not None and 0 <= error.offset < len(data)
        outcomes.add((frames, type(error), error.offset, error.reason, error.field))
    assert len(outcomes) == 1, outcomes
    ((_, _, offset, _, _),) = outcomes
    assert 8 <= offset < 8 + 30  # inside the bad frame, not in the body frame after it


def test_draft_stream_ending_inside_a_frame_reports_its_start() -> None:
    frame = encode_draft_frame(DraftMethodFrame(1, draft.Message.Transfer(destination="q")))
    data = DRAFT_HEADER + frame + frame[:-3]
    for chunk in (1, 5, len(data)):
        frames, error = decode_all(data, chunk)
        assert frames == 2
        assert error is not None and "stream ended inside a frame" in error.reason
        assert error.offset == len(DRAFT_HEADER) + len(frame)


# -- finding 6: 0-9-1 field table size ------------------------------------------------------------


def test_table_size_is_not_read_past_end() -> None:
    # The size field is cut off by ``end``; bytes after it in the buffer must not be read.
    messages = set()
    for tail in (b"", b"\x00\x00\x00", b"\x00\x00\x00\x00\x00", b"\xff" * 8):
        with pytest.raises(FrameSyntaxError) as caught:
            decode_table(b"\x00" + tail, 0, 1)
        messages.add(caught.value.reason)
    assert len(messages) == 1
    assert "cut off" in messages.pop()


# -- finding 4: compressed captures ---------------------------------------------------------------


def _pcap_header() -> bytes:
    return struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)


def test_gzip_bomb_is_capped_in_inflated_size_and_problems(tmp_path: Path) -> None:
    # 16 KB of gzip inflating to 16 MiB of zeros: a million empty packet records.
    path = tmp_path / "zeros.pcap.gz"
    path.write_bytes(gzip.compress(_pcap_header() + bytes(16 * 1024 * 1024), 9))
    assert path.stat().st_size < 32 * 1024
    items = list(read_capture(str(path)))
    assert all(isinstance(i, CaptureProblem) for i in items)
    kinds = [i.kind for i in items]  # type: ignore[union-attr]
    packet_problems = [i for i in items if i.packet is not None]  # type: ignore[union-attr]
    assert len(packet_problems) == packets.MAX_PROBLEMS
    assert kinds.count("too-large") == 1
    assert kinds[-1] == "too-many-problems"
    assert len(items) <= packets.MAX_PROBLEMS + 3


def test_ratio_cap_leaves_ordinary_compressed_captures_alone(tmp_path: Path) -> None:
    records = b"".join(
        struct.pack("<IIII", i, 0, 64, 64) + bytes(range(i % 7, i % 7 + 64)) for i in range(3000)
    )
    path = tmp_path / "ok.pcap.gz"
    path.write_bytes(gzip.compress(_pcap_header() + records))
    kinds = {getattr(i, "kind", "segment") for i in read_capture(str(path))}
    assert "too-large" not in kinds and "too-many-problems" not in kinds


def test_corrupt_gzip_is_called_corrupt_not_empty(tmp_path: Path) -> None:
    path = tmp_path / "bad.pcap.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"not deflate at all" * 4)
    items = list(read_capture(str(path)))
    assert len(items) == 1
    problem = items[0]
    assert isinstance(problem, CaptureProblem)
    assert problem.kind == "corrupt-file" and "corrupt gzip" in problem.detail
    assert "empty" not in problem.detail


# -- findings 2 and 3: dissector resync and large buffers ----------------------------------------


class _CountingDecoder(FrameDecoder):
    """A FrameDecoder that counts the bytes handed to it (every copy the dissector makes)."""

    fed = 0

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        _CountingDecoder.fed += len(data)
        super().receive_data(data)


def _bytes_fed_to_decoders(data: bytes, chunk: int, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(dissect_module, "FrameDecoder", _CountingDecoder)  # resumed decoders
    monkeypatch.setattr(resync_module, "FrameDecoder", _CountingDecoder)  # trial decodes
    _CountingDecoder.fed = 0
    dissector = dissect_module.StreamDissector()
    for start in range(0, len(data), chunk):
        dissector.feed(data[start : start + chunk])
    dissector.finish()
    return _CountingDecoder.fed


def _garbage_of_resync_candidates(size: int) -> bytes:
    # Every 16 bytes a method frame header on channel 1 announcing 16 KiB, whose frame-end
    # octet is there: each is a plausible candidate a resync must decode on trial.
    unit = b"\x01\x00\x01\x00\x00\x40\x00" + b"\xce" * 9
    return b"\xce" * 16 + unit * (size // 16)


def _bodies_between_garbage(size: int) -> bytes:
    # A valid body frame, then a byte that breaks the next frame: a resync every 10 bytes,
    # each followed by a header announcing 16 MiB.
    unit = b"\x03\x00\x01\x00\x00\x00\x01\x00\xce\x02"
    return unit * (size // len(unit))


@pytest.mark.parametrize("make", [_garbage_of_resync_candidates, _bodies_between_garbage])
@pytest.mark.parametrize("chunk", [16, 4096, None])
def test_dissector_copies_each_byte_a_bounded_number_of_times(
    make: Callable[[int], bytes], chunk: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Bytes handed to decoders (trial decodes and resumed decoders) grow linearly with the
    # input: with a copy of the window per resync, or a megabyte per candidate, they did not.
    monkeypatch.setattr(dissect_module, "RESYNC_WORK_ALLOWANCE", 64 * 1024)
    for size in (32 * 1024, 128 * 1024):
        data = make(size)
        fed = _bytes_fed_to_decoders(data, chunk or len(data), monkeypatch)
        # Trial decodes within the budget, plus each byte fed once or twice (header, rest).
        bound = dissect_module.RESYNC_WORK_PER_BYTE + 4
        assert fed <= bound * len(data) + dissect_module.RESYNC_WORK_ALLOWANCE


def test_dissector_events_after_many_resyncs_do_not_depend_on_chunking() -> None:
    data = _bodies_between_garbage(2000) + _garbage_of_resync_candidates(600)

    def events(chunk: int) -> list[object]:
        dissector = dissect_module.StreamDissector()
        out: list[object] = []
        for start in range(0, len(data), chunk):
            out += dissector.feed(data[start : start + chunk])
        return out + dissector.finish()

    expected = events(len(data))
    assert sum(isinstance(e, dissect_module.ResyncEvent) for e in expected) > 100
    for chunk in (1, 3, 16, 999):
        assert events(chunk) == expected
