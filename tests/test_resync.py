"""Where a frame may start: one framing record per wire format, shared by the dissector's
resync and the analysis's region sync."""

from __future__ import annotations

import gc

import pytest

from amqp_codec import (
    ContentBodyFrame,
    HeartbeatFrame,
    MethodFrame,
    encode_frame,
    v0_9_1,
    v0_10_draft,
)
from amqp_codec.frames import Frame
from amqp_codec.inspect import dissector
from amqp_codec.inspect.resync import (
    DRAFT,
    NINE,
    decodes_alone,
    framing,
    plausible_frame_end,
)
from amqp_codec.protocol import ProtocolSpec
from amqp_codec.wire010.frames import DraftBodyFrame, DraftFrame, DraftMethodFrame

NINE_FRAMES: list[Frame] = [
    MethodFrame(1, v0_9_1.Queue.Declare(queue="jobs", durable=True)),
    ContentBodyFrame(1, b"hello"),
    HeartbeatFrame(0),
]
DRAFT_FRAMES: list[DraftFrame] = [
    DraftMethodFrame(0, v0_10_draft.Connection.Open(virtual_host="/")),
    DraftBodyFrame(1, b"hello"),
]
CASES: list[tuple[ProtocolSpec, Frame | DraftFrame]] = [
    *((v0_9_1.SPEC, f) for f in NINE_FRAMES),
    *((v0_10_draft.SPEC, f) for f in DRAFT_FRAMES),
]


def test_each_version_has_its_framing() -> None:
    assert framing(v0_9_1.SPEC) is NINE and NINE.header_size == 7
    assert framing(v0_10_draft.SPEC) is DRAFT and DRAFT.header_size == 12


@pytest.mark.parametrize(("spec", "frame"), CASES)
def test_a_real_frame_is_a_plausible_start(spec: ProtocolSpec, frame: Frame) -> None:
    wire = encode_frame(frame)
    data = b"\x00garbage" + wire
    pos = 8
    layout = framing(spec)
    assert layout.start.match(data, pos)
    frame_type, channel, end = layout.header(bytearray(data), pos)
    assert end == len(data) - 1 and data[end] == 0xCE
    assert channel == frame.channel and frame_type in (1, 3, 8)
    assert plausible_frame_end(spec, data, pos) == end
    assert decodes_alone(wire, spec)


@pytest.mark.parametrize(("spec", "frame"), CASES)
def test_a_damaged_frame_is_not_believed(spec: ProtocolSpec, frame: Frame) -> None:
    wire = bytearray(encode_frame(frame))
    header = framing(spec).header_size
    assert plausible_frame_end(spec, wire, 0) is not None
    assert plausible_frame_end(spec, wire[: header - 1], 0) is None  # the header is not whole
    assert not decodes_alone(bytes(wire[:-1]) + b"\x00", spec)  # no frame-end octet


@pytest.mark.parametrize(("spec", "frame"), CASES)
def test_a_candidate_refused_leaves_no_cycle_for_the_collector(
    spec: ProtocolSpec, frame: Frame
) -> None:
    """A resync tries candidates by the thousand in a damaged stream: one refused is freed at
    once, its bytes with it, not left in a cycle (the decoder keeps the error it raised, whose
    traceback holds the decoder) for the collector."""
    wire = bytes(encode_frame(frame))[:-1] + b"\x00"  # no frame-end octet
    gc.collect()
    gc.disable()
    try:
        assert not decodes_alone(wire, spec)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_an_implausible_header_is_refused() -> None:
    # A heartbeat with a payload, a body on channel 0, an unknown frame type.
    for header in (
        b"\x08\x00\x00\x00\x00\x00\x01",
        b"\x03\x00\x00\x00\x00\x00\x01",
        b"\x05" + bytes(6),
    ):
        assert plausible_frame_end(v0_9_1.SPEC, header, 0) is None


def test_a_payload_past_the_resync_limit_is_refused_until_tune_allows_it() -> None:
    size = dissector.RESYNC_MAX_PAYLOAD + 1
    header = b"\x03\x00\x01" + size.to_bytes(4, "big")
    assert plausible_frame_end(v0_9_1.SPEC, header, 0) is None
    assert plausible_frame_end(v0_9_1.SPEC, header, 0, tuned_frame_max=size + 8) == 7 + size
