"""StreamDissector's public API: events in stream order, problems, resynchronisation, chunking."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import FrozenInstanceError, fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amqp_codec import (
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    ProtocolSpec,
    encode_frame,
)
from amqp_codec.inspect.dissector import (
    Event,
    FrameEvent,
    Problem,
    ProblemEvent,
    ResyncEvent,
    SpecEvent,
    StreamDissector,
)
from amqp_codec.v0_9_1 import SPEC, Basic, BasicProperties, Channel, Connection, Queue

PUBLISH = Basic.Publish(exchange="", routing_key="q")
PROPS = BasicProperties(content_type="text/plain")


def stream_frames() -> list[Frame]:
    return [
        ProtocolHeader(),
        MethodFrame(0, Connection.TuneOk(channel_max=10, frame_max=4096, heartbeat=0)),
        MethodFrame(1, Channel.Open()),
        MethodFrame(1, Queue.Declare(queue="q", arguments={"x-max-length": 5})),
        MethodFrame(1, PUBLISH),
        ContentHeaderFrame(1, 60, 5, PROPS),
        ContentBodyFrame(1, b"hel"),
        ContentBodyFrame(1, b"lo"),
        HeartbeatFrame(),
        MethodFrame(0, Connection.Close(reply_code=200, reply_text="bye")),
    ]


FRAMES = stream_frames()
PARTS = [encode_frame(frame) for frame in FRAMES]
STREAM = b"".join(PARTS)
OFFSETS = [sum(len(p) for p in PARTS[:i]) for i in range(len(PARTS) + 1)]  # and the end
I_DECLARE, I_PUBLISH, I_HEADER, I_BODY1, I_BODY2, I_HEARTBEAT, I_CLOSE = 3, 4, 5, 6, 7, 8, 9


def dissect(
    data: bytes,
    chunk_size: int | None = None,
    *,
    spec: ProtocolSpec | None = None,
    frame_max: int | None = None,
) -> list[Event]:
    """Every event for ``data`` fed in chunks, then finish()'s."""
    dissector = StreamDissector(spec, frame_max=frame_max)
    size = chunk_size or max(len(data), 1)
    events: list[Event] = []
    for start in range(0, len(data), size):
        events += dissector.feed(data[start : start + size])
    return events + dissector.finish()


def frame_events(events: list[Event]) -> list[FrameEvent]:
    return [e for e in events if isinstance(e, FrameEvent)]


def problems(events: list[Event]) -> list[Problem]:
    return [e.problem for e in events if isinstance(e, ProblemEvent)]


def kinds(events: list[Event]) -> list[str]:
    return [type(e).__name__ for e in events]


def corrupt(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + bytes([value]) + data[offset + 1 :]


# -- a clean stream --------------------------------------------------------------------------


def test_events_in_order_with_offsets() -> None:
    dissector = StreamDissector(name="client")
    events = dissector.feed(STREAM)
    assert events[0] == SpecEvent(SPEC, "protocol header")
    assert events[1:] == [
        FrameEvent(OFFSETS[i], OFFSETS[i + 1], frame) for i, frame in enumerate(FRAMES)
    ]
    assert dissector.finish() == []
    stats = dissector.stats
    assert (stats.name, stats.bytes, stats.frames, stats.problems) == ("client", len(STREAM), 10, 0)
    assert stats.spec == "0-9-1"
    assert stats.detected_by == "protocol header"
    assert stats.by_type == {
        "protocol-header": 1,
        "method": 5,
        "header": 1,
        "body": 2,
        "heartbeat": 1,
    }
    assert stats.methods["basic.publish"] == 1
    assert dissector.spec is SPEC
    assert dissector.buffered == 0


def test_events_are_returned_once_and_as_they_complete() -> None:
    dissector = StreamDissector()
    cut = OFFSETS[I_PUBLISH] + 3  # inside basic.publish
    first = dissector.feed(STREAM[:cut])
    assert kinds(first) == ["SpecEvent"] + ["FrameEvent"] * I_PUBLISH
    assert dissector.buffered == 3
    assert dissector.feed(b"") == []
    rest = dissector.feed(STREAM[cut:])
    assert [e.offset for e in frame_events(rest)] == OFFSETS[I_PUBLISH:-1]
    assert dissector.finish() == []


def test_given_spec_and_bytes_like_input() -> None:
    dissector = StreamDissector(SPEC)
    events = dissector.feed(bytearray(STREAM[:10])) + dissector.feed(memoryview(STREAM[10:]))
    assert events[0] == SpecEvent(SPEC, "given")
    assert len(frame_events(events)) == len(FRAMES)
    assert dissector.finish() == []


def test_feeding_after_finish_is_an_error() -> None:
    dissector = StreamDissector()
    dissector.feed(STREAM)
    dissector.finish()
    with pytest.raises(RuntimeError):
        dissector.feed(b"\x08\x00\x00\x00\x00\x00\x00\xce")
    with pytest.raises(RuntimeError):
        dissector.finish()


def test_empty_stream() -> None:
    dissector = StreamDissector()
    assert dissector.finish() == []
    assert dissector.stats.bytes == 0
    assert dissector.stats.spec is None


def test_events_are_frozen() -> None:
    event = frame_events(dissect(STREAM))[0]
    with pytest.raises(AttributeError):
        event.offset = 1  # type: ignore[misc]


# -- problems and resynchronisation ----------------------------------------------------------


def test_corrupted_frame_problem_resync_and_later_frames() -> None:
    bad_end = OFFSETS[I_PUBLISH] - 1  # queue.declare's frame-end octet
    events = dissect(corrupt(STREAM, bad_end, 0x00))
    assert kinds(events) == [
        "SpecEvent",
        *["FrameEvent"] * I_DECLARE,
        "ProblemEvent",
        "ResyncEvent",
        *["FrameEvent"] * (len(FRAMES) - I_PUBLISH),
    ]
    (problem,) = problems(events)
    assert problem.offset == bad_end
    assert problem.frame_offset == OFFSETS[I_DECLARE]
    assert problem.error == "FrameError"
    assert problem.reply_code == 501
    assert problem.reply_name == "frame-error"
    assert problem.source == "decoder"
    assert problem.reason == "frame-end octet is 0x00, not 0xce"
    assert not problem.fatal
    resync = events[I_DECLARE + 2]
    assert resync == ResyncEvent(OFFSETS[I_DECLARE], OFFSETS[I_PUBLISH], resumed=True)
    later = frame_events(events)[I_DECLARE:]
    assert [(e.offset, e.end) for e in later] == list(
        zip(OFFSETS[I_PUBLISH:-1], OFFSETS[I_PUBLISH + 1 :], strict=True)
    )
    assert [e.frame for e in later] == FRAMES[I_PUBLISH:]


def test_bad_field_is_located() -> None:
    start = OFFSETS[I_DECLARE]
    bad = STREAM.index(b"x-max-lengthI") + len("x-max-length")
    events = dissect(corrupt(STREAM, bad, ord("Z")))
    (problem,) = problems(events)
    assert problem.error == "FrameSyntaxError"
    assert (problem.channel, problem.method, problem.field) == (
        1,
        "queue.declare",
        'arguments["x-max-length"]',
    )
    assert problem.frame_offset == start
    assert start < problem.offset <= bad
    assert ResyncEvent(start, OFFSETS[I_PUBLISH], resumed=True) in events


def test_lost_content_header_leaves_the_channel_unchecked() -> None:
    # the content header's frame end is broken: its body frames are not out of sequence
    events = dissect(corrupt(STREAM, OFFSETS[I_BODY1] - 1, 0xCD))
    assert len(problems(events)) == 1
    assert [e.offset for e in frame_events(events)] == [
        o for i, o in enumerate(OFFSETS[:-1]) if i != I_HEADER
    ]


def test_truncated_tail() -> None:
    dissector = StreamDissector()
    events = dissector.feed(STREAM[:-3])
    assert len(frame_events(events)) == len(FRAMES) - 1
    assert not problems(events)  # the last frame may still arrive
    tail = dissector.finish()
    last = OFFSETS[I_CLOSE]
    left = len(STREAM) - 3 - last
    assert kinds(tail) == ["ProblemEvent", "ResyncEvent"]
    problem = problems(tail)[0]
    assert problem.reason == f"stream ended inside a frame ({left} bytes left over)"
    assert (problem.offset, problem.frame_offset) == (last, last)
    assert tail[1] == ResyncEvent(last, len(STREAM) - 3, resumed=False)
    assert dissector.stats.problems == 1


def test_garbage_only() -> None:
    data = bytes(range(256)) * 2
    events = dissect(data)
    assert not frame_events(events)
    assert events[-1] == ResyncEvent(0, len(data), resumed=False)
    assert problems(events)[0].offset == 0


def test_unsupported_protocol_is_fatal() -> None:
    data = b"AMQP\x00\x01\x00\x00" + STREAM[8:]
    events = dissect(data)
    assert kinds(events) == ["ProblemEvent"]
    problem = problems(events)[0]
    assert problem.fatal
    assert problem.error == "UnsupportedProtocolError"
    assert problem.reply_code is None
    assert problem.note == "the rest of the stream is not decoded"
    # with the version given, the stream decodes
    events = dissect(data, spec=SPEC)
    assert not problems(events)
    assert len(frame_events(events)) == len(FRAMES)


def test_frame_max() -> None:
    body = ContentBodyFrame(1, b"x" * 5000)
    frames: list[Frame] = [
        ProtocolHeader(),
        MethodFrame(1, PUBLISH),
        ContentHeaderFrame(1, 60, 5000, PROPS),
        body,
        HeartbeatFrame(),
    ]
    data = b"".join(encode_frame(f) for f in frames)
    assert not problems(dissect(data))
    events = dissect(data, frame_max=4096)
    assert "exceeds the negotiated frame_max 4096" in problems(events)[0].reason
    assert [e.frame for e in frame_events(events)] == [*frames[:3], HeartbeatFrame()]


# -- content sequence ------------------------------------------------------------------------


def test_content_sequence_problems_follow_their_frame() -> None:
    frames: list[Frame] = [
        ProtocolHeader(),
        ContentBodyFrame(2, b"orphan"),
        MethodFrame(1, PUBLISH),
        MethodFrame(1, Basic.Ack(delivery_tag=1)),
    ]
    parts = [encode_frame(f) for f in frames]
    events = dissect(b"".join(parts))
    assert kinds(events) == [
        "SpecEvent",
        "FrameEvent",
        "FrameEvent",
        "ProblemEvent",
        "FrameEvent",
        "FrameEvent",
        "ProblemEvent",
    ]
    orphan, interrupted = problems(events)
    assert orphan.source == "content-sequence"
    assert orphan.error == "UnexpectedFrameError"
    assert (orphan.reply_code, orphan.reply_name) == (505, "unexpected-frame")
    assert (orphan.offset, orphan.frame_offset, orphan.channel) == (8, 8, 2)
    assert orphan.reason == "content body without a content header before it"
    ack_at = sum(map(len, parts[:3]))
    assert interrupted.frame_offset == ack_at
    assert interrupted.method == "basic.ack"
    assert interrupted.reason == (
        "basic.ack arrived before the content of basic.publish was complete (no content header yet)"
    )


def test_unfinished_message_at_the_end() -> None:
    end = OFFSETS[I_BODY2]
    dissector = StreamDissector()
    assert not problems(dissector.feed(STREAM[:end]))
    tail = dissector.finish()
    (problem,) = problems(tail)
    assert problem.source == "content-sequence"
    assert (problem.offset, problem.frame_offset) == (end, end)
    assert (problem.channel, problem.method) == (1, "basic.publish")
    assert problem.reason == (
        "stream ended before the content of basic.publish was complete (3 of 5 body bytes)"
    )


def test_mid_stream_start() -> None:
    # the capture starts inside a message: its body frame is not a problem...
    events = dissect(STREAM[OFFSETS[I_BODY2] :])
    assert events[0] == SpecEvent(SPEC, "assumed")
    assert [e.frame for e in frame_events(events)] == FRAMES[I_BODY2:]
    assert not problems(events)
    # ...but after a method on its channel, that channel is checked again
    more: list[Frame] = [
        ContentBodyFrame(1, b"tail"),
        MethodFrame(1, Basic.Ack(delivery_tag=1)),
        ContentBodyFrame(1, b"orphan"),
        ContentHeaderFrame(3, 60, 1, PROPS),  # channel 3 is still unknown
    ]
    events = dissect(b"".join(encode_frame(f) for f in more))
    (problem,) = problems(events)
    assert problem.reason == "content body without a content header before it"
    assert problem.frame_offset == frame_events(events)[2].offset


def test_stream_from_connection_start_is_checked_from_the_first_frame() -> None:
    frames: list[Frame] = [MethodFrame(0, Connection.Start()), ContentBodyFrame(1, b"x")]
    events = dissect(b"".join(encode_frame(f) for f in frames))
    assert events[0] == SpecEvent(SPEC, "connection.start")
    assert [p.reason for p in problems(events)] == [
        "content body without a content header before it"
    ]


# -- chunking --------------------------------------------------------------------------------


def _messy_stream() -> bytes:
    data = corrupt(STREAM, OFFSETS[I_PUBLISH] - 1, 0x00)
    cut = OFFSETS[I_HEARTBEAT]
    return data[:cut] + b"\x08\x00\x00junk" + data[cut:-2]


@pytest.mark.parametrize("chunk_size", [1, 2, 7, 13, 100])
@pytest.mark.parametrize("data", [STREAM, _messy_stream()], ids=["clean", "messy"])
def test_events_do_not_depend_on_chunking(data: bytes, chunk_size: int) -> None:
    expected = dissect(data)
    assert dissect(data, chunk_size) == expected
    if data != STREAM:
        assert len(problems(expected)) == 3
        assert sum(isinstance(e, ResyncEvent) for e in expected) == 3


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    damage=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),
    cuts=st.lists(st.integers(0, 10**6), max_size=12),
    repeat=st.integers(1, 3),
)
def test_events_do_not_depend_on_where_chunks_are_cut(
    damage: list[tuple[int, int]], cuts: list[int], repeat: int
) -> None:
    """Damaged bytes anywhere, chunks cut anywhere: the events of a whole feed. A decode
    error after chunks were held as they came (not copied) must scan exactly the bytes a
    single chunk would have left."""
    message = b"".join(PARTS[I_PUBLISH:I_HEARTBEAT])
    data = bytearray(
        STREAM[: OFFSETS[I_PUBLISH]] + message * repeat + STREAM[OFFSETS[I_HEARTBEAT] :]
    )
    for position, value in damage:
        data[position % len(data)] = value
    whole = dissect(bytes(data))
    dissector = StreamDissector()
    events: list[Event] = []
    start = 0
    for cut in [*sorted({cut % len(data) for cut in cuts}), len(data)]:
        events += dissector.feed(bytes(data[start:cut]))
        start = cut
    assert events + dissector.finish() == whole


def test_window_stays_bounded() -> None:
    message = b"".join(PARTS[I_PUBLISH:I_HEARTBEAT])
    data = STREAM[: OFFSETS[I_PUBLISH]] + message * 200
    dissector = StreamDissector()
    largest = 0
    for start in range(0, len(data), 1000):
        dissector.feed(data[start : start + 1000])
        largest = max(largest, dissector.buffered)
    dissector.finish()
    assert dissector.stats.problems == 0
    assert dissector.stats.methods["basic.publish"] == 200
    assert largest < max(len(p) for p in PARTS)


@pytest.mark.timeout(60)
def test_a_large_frame_fed_a_byte_at_a_time_takes_work_linear_in_it() -> None:
    """A 2 MiB body frame in two million one-byte chunks: the chunks held for the window
    are dropped together once the frame is decoded, not one by one (which moves every
    chunk after each: minutes, not seconds)."""
    body = bytes(range(256)) * 8192
    data = STREAM[: OFFSETS[I_HEADER]] + encode_frame(ContentHeaderFrame(1, 60, len(body), PROPS))
    data += encode_frame(ContentBodyFrame(1, body))
    one_byte = [bytes([value]) for value in range(256)]
    dissector = StreamDissector()
    events: list[Event] = []
    largest = 0
    for value in data:
        events += dissector.feed(one_byte[value])
        largest = max(largest, dissector.buffered)
    events += dissector.finish()
    assert dissector.stats.problems == 0
    last = frame_events(events)[-1]
    assert last.frame == ContentBodyFrame(1, body)
    assert last.message is not None and last.message.body == body
    assert largest <= len(body) + 8
    assert dissector.buffered == 0


# -- independence from the command line ------------------------------------------------------


def test_dissector_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    dissect(_messy_stream(), 3)
    assert capsys.readouterr() == ("", "")


def test_dissect_does_not_import_the_command_line_or_reporters() -> None:
    code = (
        "import sys, amqp_codec.inspect.dissector; "
        "print(sorted(m for m in ('argparse', 'amqp_codec.cli', 'amqp_codec.inspect.command', "
        "'amqp_codec.inspect.text', 'amqp_codec.inspect.jsonlines') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"


# -- other versions: 0-8 and 99-0 (12-byte frame header) -----------------------------------


def _draft_client() -> tuple[bytes, list[int]]:
    from version_streams import draft_streams

    client, _server = draft_streams()
    ends = [8]
    while ends[-1] < len(client):  # each frame's size field counts its 12-byte header
        ends.append(ends[-1] + int.from_bytes(client[ends[-1] + 2 : ends[-1] + 4], "big") + 1)
    return client, ends


def test_draft_stream_frames_sizes_and_stats() -> None:
    from version_streams import DRAFT_MESSAGE

    from amqp_codec import v0_10_draft as draft
    from amqp_codec.wire010 import DraftBodyFrame, DraftHeaderFrame, DraftMethodFrame

    client, ends = _draft_client()
    events = dissect(client, 5)
    assert kinds(events)[:2] == ["SpecEvent", "FrameEvent"] and not problems(events)
    assert events[0] == SpecEvent(draft.SPEC, "protocol header")
    frames = frame_events(events)
    assert [(e.offset, e.end) for e in frames] == list(zip([0, *ends[:-1]], ends, strict=True))
    assert tuple(e.frame for e in frames[5:8]) == DRAFT_MESSAGE
    assert [type(e.frame) for e in frames[5:8]] == [
        DraftMethodFrame,
        DraftHeaderFrame,
        DraftBodyFrame,
    ]
    dissector = StreamDissector()
    dissector.feed(client)
    dissector.finish()
    stats = dissector.stats
    assert stats.spec == "99-0" and stats.frames == len(ends)
    assert dict(stats.by_type) == {"protocol-header": 1, "method": 6, "header": 1, "body": 1}
    assert stats.methods["message.transfer"] == 1 and stats.methods["connection.close"] == 1


def test_draft_corrupted_frame_resyncs_on_the_next_12_byte_header() -> None:
    client, ends = _draft_client()
    transfer = ends[4]  # message.transfer starts here
    bad_end = ends[5] - 1  # its 0xCE octet
    for chunk_size in (1, 3, None):
        events = dissect(corrupt(client, bad_end, 0x00), chunk_size)
        (problem,) = problems(events)
        assert (problem.error, problem.reply_code) == ("FrameError", 501)
        assert problem.frame_offset == transfer and problem.offset == bad_end
        assert "frame-end octet is 0x00" in problem.reason
        resyncs = [e for e in events if isinstance(e, ResyncEvent)]
        assert resyncs == [ResyncEvent(transfer, ends[5], resumed=True)]
        after = frame_events(events)[5:]
        # The header segment that follows has lost its command: no content-sequence problem
        # (the dissector forgets the channel's state after a decode error) until the next method.
        assert [e.offset for e in after] == ends[5:-1]


def test_draft_garbage_between_frames_is_skipped() -> None:
    client, ends = _draft_client()
    garbage = b"\x0f\x01\xff\xff\x00\x00\x00\x00junk\x0b\x01\x00"  # frame-like, but not plausible
    data = client[: ends[3]] + garbage + client[ends[3] :]
    events = dissect(data, 4)
    resyncs = [e for e in events if isinstance(e, ResyncEvent)]
    assert resyncs == [ResyncEvent(ends[3], ends[3] + len(garbage), resumed=True)]
    assert len(frame_events(events)) == len(ends)
    assert [p.error for p in problems(events)] == ["FrameError"]


def test_draft_content_sequence_problems() -> None:
    client, ends = _draft_client()
    # The header segment is lost: the body frame has no header before it.
    events = dissect(client[: ends[5]] + client[ends[6] :])
    (problem,) = problems(events)
    assert problem.source == "content-sequence" and problem.reply_code == 505
    assert problem.reason == "body frame without a header segment before it"
    assert problem.frame_offset == ends[5] and problem.channel == 1
    # The stream ends inside the frameset.
    events = dissect(client[: ends[6]])
    (problem,) = problems(events)
    assert problem.source == "content-sequence" and problem.method == "message.transfer"
    assert "frameset of message.transfer was complete" in problem.reason


def test_v0_8_stream() -> None:
    from version_streams import V08_CLOSE, v08_streams

    from amqp_codec import v0_8

    client, server = v08_streams()
    events = dissect(client, 7)
    assert not problems(events)
    assert events[0] == SpecEvent(v0_8.SPEC, "protocol header")
    frames = frame_events(events)
    assert [type(e.frame).__name__ for e in frames] == [
        "ProtocolHeader",
        *["MethodFrame"] * 5,
        "ContentHeaderFrame",
        "ContentBodyFrame",
        "ContentBodyFrame",
        "MethodFrame",
    ]
    assert frames[-1].frame == MethodFrame(0, V08_CLOSE) and frames[-1].end == len(client)
    server_events = dissect(server)
    assert server_events[0] == SpecEvent(v0_8.SPEC, "connection.start")
    # A problem names 0-8 methods by 0-8's ids: 10.50 is connection.redirect there (and
    # connection.close in 0-9-1). This one has no arguments at all.
    truncated = b"\x01\x00\x00\x00\x00\x00\x04\x00\x0a\x00\x32\xce"
    (problem,) = problems(dissect(server + truncated))
    assert (problem.class_id, problem.method_id) == (10, 50)
    assert problem.method == "connection.redirect" and problem.frame_offset == len(server)
    interrupted = b"".join(
        encode_frame(f)
        for f in (MethodFrame(2, v0_8.Basic.Publish()), MethodFrame(2, v0_8.Channel.Flow()))
    )
    (problem,) = problems(dissect(server + interrupted))
    assert problem.source == "content-sequence" and problem.method == "channel.flow"


def test_the_dissectors_fast_frame_event_is_the_dataclass_itself() -> None:
    """The dissector makes its FrameEvents without the frozen dataclass's __init__ (it runs
    once per frame): every field set, equal, hashed and frozen as the dataclass is."""
    # Up to the content method: its message is in progress after it.
    events = StreamDissector(name="made").feed(STREAM[: OFFSETS[I_PUBLISH + 1]])
    last = events[-1]
    expected = FrameEvent(OFFSETS[I_PUBLISH], OFFSETS[I_PUBLISH + 1], FRAMES[I_PUBLISH], None, True)
    assert type(last) is FrameEvent
    assert last == expected and hash(last) == hash(expected)
    assert [getattr(last, f.name) for f in fields(FrameEvent)] == [
        OFFSETS[I_PUBLISH],
        OFFSETS[I_PUBLISH + 1],
        FRAMES[I_PUBLISH],
        None,
        True,
    ]
    with pytest.raises(FrozenInstanceError):
        last.offset = 4  # type: ignore[misc]
