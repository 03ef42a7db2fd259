"""TCP reassembly and connection keys (amqp_codec.capture.tcp)."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from pathlib import Path

import dpkt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_capture_packets import SAMPLES, ethernet, ipv4, tcp, write_pcap

from amqp_codec import NEED_DATA, FrameDecoder, MethodFrame
from amqp_codec.capture import (
    ConnectionKey,
    Gap,
    Piece,
    Segment,
    Stream,
    capture_files,
    connection_key,
    incarnations,
    read_capture,
    reassemble,
    syn_servers,
)
from amqp_codec.capture.tcp import _first_seen_wins, place

SYN = dpkt.tcp.TH_SYN
ACK = dpkt.tcp.TH_ACK
FIN = dpkt.tcp.TH_FIN
RST = dpkt.tcp.TH_RST
PSH_ACK = dpkt.tcp.TH_PUSH | ACK
MASK = 0xFFFFFFFF


def seg(
    seq: int,
    payload: bytes = b"",
    flags: int = PSH_ACK,
    ts: float = 0.0,
    packet: int = 0,
    capture: str = "a.pcap",
    src: tuple[str, int] = ("10.0.0.1", 40000),
    dst: tuple[str, int] = ("10.0.0.2", 5672),
) -> Segment:
    return Segment(capture, packet, ts, src[0], src[1], dst[0], dst[1], seq & MASK, flags, payload)


def split(data: bytes, isn: int, sizes: list[int], syn: bool = True) -> list[Segment]:
    """``data`` cut into segments of the given sizes (cycled), in time order."""
    out = [seg(isn, flags=SYN, ts=0.0)] if syn else []
    position = 0
    i = 0
    while position < len(data):
        n = sizes[i % len(sizes)]
        out.append(seg(isn + 1 + position, data[position : position + n], ts=1.0 + i, packet=i + 1))
        position += n
        i += 1
    return out


def layout(stream: Stream) -> list[tuple[str, int, int | None]]:
    return [
        ("piece", item.offset, len(item.data))
        if isinstance(item, Piece)
        else ("gap", item.offset, item.length)
        for item in stream.pieces_and_gaps
    ]


def joined(stream: Stream) -> bytes:
    return b"".join(stream.chunks())


DATA = bytes(range(256)) * 8


# ---------------------------------------------------------------------------- reassembly


def test_in_order_with_syn_and_fin() -> None:
    segments = split(DATA, 1000, [100, 300, 1448])
    segments.append(seg(1001 + len(DATA), flags=FIN | ACK, ts=99.0))
    stream = reassemble(segments)
    assert joined(stream) == DATA
    assert (stream.syn, stream.fin, stream.rst) == (True, True, False)
    assert stream.fin_offset == len(DATA)
    assert stream.initial_seq == 1001
    assert stream.gaps == [] and stream.retransmitted_bytes == 0
    assert (stream.first_ts, stream.last_ts, stream.segments) == (0.0, 99.0, len(segments))
    assert [p.offset for p in stream.pieces_and_gaps if isinstance(p, Piece)][:3] == [0, 100, 400]


def test_any_order_gives_the_same_stream() -> None:
    segments = split(DATA, 5, [37, 512, 3])
    expected = reassemble(segments)
    rng = random.Random(7)
    for _ in range(20):
        shuffled = segments[:]
        rng.shuffle(shuffled)
        assert reassemble(shuffled) == expected


def test_out_of_order_arrival_in_time() -> None:
    # Segments captured out of order (later timestamps for earlier bytes) still line up.
    stream = reassemble(
        [
            seg(0, flags=SYN, ts=0),
            seg(11, b"BBBBBBBBBB", ts=1),
            seg(21, b"CCCC", ts=2),
            seg(1, b"AAAAAAAAAA", ts=3),
        ]
    )
    assert joined(stream) == b"A" * 10 + b"B" * 10 + b"C" * 4
    assert stream.gaps == []


def test_retransmission_is_counted_once() -> None:
    segments = split(DATA, 0, [500])
    again = segments[2]
    stream = reassemble([*segments, seg(again.seq, again.payload, ts=50.0)])
    assert joined(stream) == DATA
    assert stream.retransmitted_bytes == 500
    assert stream.overlaps_conflicting == 0


def test_partial_overlap_same_bytes() -> None:
    stream = reassemble([seg(0, flags=SYN), seg(1, DATA[:100], ts=1), seg(51, DATA[50:300], ts=2)])
    assert joined(stream) == DATA[:300]
    assert layout(stream) == [("piece", 0, 100), ("piece", 100, 200)]
    assert stream.retransmitted_bytes == 50


def test_conflicting_overlap_keeps_the_first_data_seen() -> None:
    stream = reassemble(
        [
            seg(0, flags=SYN, ts=0),
            seg(101, b"L" * 100, ts=1),  # later bytes first in time
            seg(1, b"E" * 150, ts=2),  # overlaps 100..150 with different bytes
            seg(131, b"X" * 10, ts=3),  # wholly inside, different again
        ]
    )
    assert joined(stream) == b"E" * 100 + b"L" * 100
    assert stream.overlaps_conflicting == 2
    assert stream.retransmitted_bytes == 0


def test_overlap_spanning_several_pieces_fills_the_holes() -> None:
    stream = reassemble(
        [
            seg(0, flags=SYN),
            seg(1 + 10, DATA[10:20], ts=1),
            seg(1 + 30, DATA[30:40], ts=2),
            seg(1 + 0, DATA[0:50], ts=3),
        ]
    )
    assert joined(stream) == DATA[:50]
    assert layout(stream) == [
        ("piece", 0, 10),
        ("piece", 10, 10),
        ("piece", 20, 10),
        ("piece", 30, 10),
        ("piece", 40, 10),
    ]
    assert stream.retransmitted_bytes == 20


def test_gaps_are_reported_and_the_stream_goes_on() -> None:
    stream = reassemble(
        [
            seg(0, flags=SYN, ts=0),
            seg(101, b"b" * 10, ts=2),  # bytes 0..99 lost
            seg(131, b"d" * 10, ts=4),  # bytes 110..129 lost
            seg(200, flags=FIN | ACK, ts=5),  # stream is 199 bytes: 140..198 lost
        ]
    )
    assert layout(stream) == [
        ("gap", 0, 100),
        ("piece", 100, 10),
        ("gap", 110, 20),
        ("piece", 130, 10),
        ("gap", 140, 59),
    ]
    assert [g.ts for g in stream.gaps] == [2, 4, 5]


def test_no_syn_starts_at_the_lowest_sequence_number() -> None:
    stream = reassemble([seg(5000, b"later", ts=1), seg(4990, b"0123456789", ts=2)])
    assert (stream.syn, stream.initial_seq) == (False, 4990)
    assert layout(stream) == [("gap", 0, None), ("piece", 0, 10), ("piece", 10, 5)]
    assert joined(stream) == b"0123456789later"


@pytest.mark.parametrize("isn", [MASK - 5, MASK, 0x7FFFFFFF, 0x80000000 - 3])
def test_wraparound_with_syn(isn: int) -> None:
    segments = split(DATA, isn, [7, 64])
    assert any(s.seq < 100 for s in segments[1:]) or isn < 0xF0000000
    random.Random(isn).shuffle(segments)
    stream = reassemble(segments)
    assert joined(stream) == DATA
    assert stream.gaps == []
    assert stream.initial_seq == (isn + 1) & MASK


def test_wraparound_without_syn() -> None:
    # Lowest sequence number "seen" is just below 2**32, most data after the wrap.
    segments = split(DATA, MASK - 100, [50], syn=False)
    rng = random.Random(1)
    rng.shuffle(segments)
    stream = reassemble(segments)
    assert stream.initial_seq == (MASK - 100 + 1) & MASK
    assert joined(stream) == DATA
    assert layout(stream)[0] == ("gap", 0, None)


def test_streams_longer_than_the_sequence_space() -> None:
    # Steps of 1.5 GiB (< 2**31): five steps cover more than 2**32 of sequence space.
    step = 3 << 29
    segments = [seg(0, flags=SYN)] + [seg(1 + i * step, b"%d" % i, ts=i + 1) for i in range(6)]
    stream = reassemble(segments)
    pieces = [p for p in stream.pieces_and_gaps if isinstance(p, Piece)]
    assert [p.offset for p in pieces] == [i * step for i in range(6)]
    assert pieces[-1].offset > 2**32
    assert b"".join(p.data for p in pieces) == b"012345"


def test_syn_with_data_fin_and_rst() -> None:
    stream = reassemble(
        [
            seg(10, b"fast-open", flags=SYN),
            seg(20, b"!", ts=1),
            seg(21, flags=FIN | ACK, ts=2),
            seg(22, flags=RST, ts=3),
        ]
    )
    assert joined(stream) == b"fast-open!"
    assert (stream.syn, stream.fin, stream.rst, stream.fin_offset) == (True, True, True, 10)
    assert stream.gaps == []


def test_data_outside_the_window_is_dropped_and_counted() -> None:
    stream = reassemble(
        [
            seg(900, b"old connection", ts=0),  # before the SYN's sequence number
            seg(1000, flags=SYN, ts=1),
            seg(995, b"0123456789", ts=2),  # straddles the start: first 6 bytes dropped
            seg(1005, b"abcdef", ts=3),
            seg(1011, flags=FIN | ACK, ts=4),
            seg(1011, b"after fin", ts=5),
        ]
    )
    assert joined(stream) == b"6789abcdef"
    assert stream.out_of_window_segments == 2
    assert stream.fin_offset == 10


def test_rotated_files_make_one_stream(tmp_path: Path) -> None:
    """A connection whose packets are spread over three files, read back and reassembled."""
    segments = split(DATA, 77, [300])
    segments.append(seg(78 + len(DATA), flags=FIN | ACK, ts=100.0))
    frames = [
        (
            1_700_000_000 + s.ts,
            ethernet(ipv4(s.src, s.dst, tcp(s.sport, s.dport, s.seq, s.flags, s.payload))),
        )
        for s in segments
    ]
    files = [
        write_pcap(tmp_path / "cap.2.pcap", frames[:4]),
        write_pcap(tmp_path / "cap.0.pcap", frames[4:7]),
        write_pcap(tmp_path / "cap.1.pcap", frames[7:]),
    ]
    read: list[Segment] = []
    for path in capture_files([str(tmp_path)]):
        read.extend(i for i in read_capture(path) if isinstance(i, Segment))
    stream = reassemble(read)
    assert joined(stream) == DATA and stream.gaps == [] and stream.fin
    assert stream.captures == sorted(str(p) for p in files)


def test_empty_input() -> None:
    stream = reassemble([])
    assert stream == Stream()
    assert (stream.first_ts, stream.initial_seq, stream.data_bytes) == (None, None, 0)


def test_flags_only_without_syn() -> None:
    stream = reassemble([seg(50, flags=RST, ts=3.0)])
    assert (stream.rst, stream.pieces_and_gaps, stream.initial_seq) == (True, [], 50)


@given(
    data=st.binary(min_size=1, max_size=3000),
    isn=st.integers(0, MASK),
    cuts=st.lists(st.integers(1, 3000), max_size=30),
    repeats=st.lists(st.integers(0, 100), max_size=10),
    drops=st.lists(st.integers(0, 100), max_size=5),
    with_syn=st.booleans(),
    seed=st.integers(0, 2**32),
)
def test_reassembly_property(
    data: bytes,
    isn: int,
    cuts: list[int],
    repeats: list[int],
    drops: list[int],
    with_syn: bool,
    seed: int,
) -> None:
    """Any cut, any order, any retransmissions: the data comes back at its offsets; dropped
    segments become gaps of exactly their size; pieces and gaps tile the stream."""
    bounds = sorted({0, len(data), *(c % len(data) for c in cuts)})
    chunks = [(a, data[a:b]) for a, b in itertools.pairwise(bounds)]
    # Without a SYN the stream starts at the first byte seen: never drop the first chunk then.
    dropped = {d % len(chunks) for d in drops} - (set() if with_syn else {0})
    kept = [chunk for i, chunk in enumerate(chunks) if i not in dropped]
    segments = [seg(isn, flags=SYN)] if with_syn else []
    segments += [seg(isn + 1 + a, chunk, ts=float(i)) for i, (a, chunk) in enumerate(kept)]
    for r in repeats:
        a, chunk = kept[r % len(kept)] if kept else (0, b"")
        if chunk:
            segments.append(seg(isn + 1 + a, chunk, ts=1e6))
    random.Random(seed).shuffle(segments)
    stream = reassemble(segments)

    items = stream.pieces_and_gaps
    if not with_syn:
        assert items[0] == Gap(0, None, 0.0)
        items = items[1:]
    position = 0
    for item in items:
        assert item.offset == position
        if isinstance(item, Piece):
            assert item.data == data[item.offset : item.offset + len(item.data)]
            position += len(item.data)
        else:
            assert item.length is not None and item.length > 0
            position += item.length
    end = max((a + len(c) for a, c in kept), default=0)
    assert position == end  # nothing assumed after the last byte seen (no FIN here)
    missing_before_end = sum(len(c) for i, (a, c) in enumerate(chunks) if i in dropped and a < end)
    assert sum(g.length or 0 for g in stream.gaps) == missing_before_end
    assert joined(stream) == b"".join(c for _, c in kept)
    assert stream.overlaps_conflicting == 0
    assert stream.retransmitted_bytes == sum(len(kept[r % len(kept)][1]) for r in repeats if kept)


def _placed(candidates: list[tuple[int, int, float, bytes, str]]) -> tuple[list[Piece], int, int]:
    """What the general algorithm makes of ``candidates``: the reference for the fast paths."""
    counts = Stream()
    pieces = _first_seen_wins(counts, candidates)
    return pieces, counts.retransmitted_bytes, counts.overlaps_conflicting


def test_disjoint_segments_recorded_out_of_order() -> None:
    # As a capture on a machine with two CPUs records them: no byte carried twice.
    data = bytes(range(256)) * 40
    candidates = [
        (a, min(a + 1000, len(data)), float(i), data[a : a + 1000], f"c{i}")
        for i, a in enumerate(range(0, len(data), 1000))
    ]
    candidates.insert(3, candidates.pop(7))
    candidates.append(candidates.pop(0))
    pieces, retransmitted, conflicting = place(candidates)
    assert (pieces, retransmitted, conflicting) == _placed(candidates)
    assert [p.offset for p in pieces] == sorted(c[0] for c in candidates)
    assert b"".join(p.data for p in pieces) == data


@given(
    st.lists(
        st.tuples(st.integers(0, 60), st.binary(min_size=1, max_size=12), st.booleans()),
        max_size=25,
    )
)
def test_place_equals_the_general_algorithm(raw: list[tuple[int, bytes, bool]]) -> None:
    """In order, reordered, overlapping, retransmitted or conflicting: the fast paths give
    what the first-seen-wins algorithm gives."""
    stream = bytes(range(256))
    candidates = [
        (
            start,
            start + len(data),
            float(i),
            stream[start : start + len(data)] if same else data,
            "",
        )
        for i, (start, data, same) in enumerate(raw)
    ]
    assert place(candidates) == _placed(candidates)


@given(
    st.lists(
        st.tuples(
            st.integers(0, MASK),
            st.binary(max_size=40),
            st.integers(0, 0x1FF),
            st.floats(allow_nan=False, allow_infinity=False, width=32),
        ),
        max_size=40,
    )
)
def test_odd_input_never_raises(raw: list[tuple[int, bytes, int, float]]) -> None:
    stream = reassemble(seg(s, p, flags=f, ts=t, packet=i) for i, (s, p, f, t) in enumerate(raw))
    offsets = [(i.offset, i) for i in stream.pieces_and_gaps]
    assert [o for o, _ in offsets] == sorted(o for o, _ in offsets)
    assert all(len(i.data) > 0 for _, i in offsets if isinstance(i, Piece))


# ---------------------------------------------------------------------------- connection keys

CLIENT = ("10.0.0.1", 40000)
SERVER = ("10.0.0.2", 5672)
KEY: ConnectionKey = ("10.0.0.1", 40000, "10.0.0.2", 5672)


def test_connection_key_by_port() -> None:
    assert connection_key(seg(1, src=CLIENT, dst=SERVER), {5672}) == (KEY, "client")
    assert connection_key(seg(1, src=SERVER, dst=CLIENT), {5672}) == (KEY, "server")
    # The configured port wins over the lower-port rule.
    assert connection_key(seg(1, src=CLIENT, dst=SERVER), {40000}) == (
        ("10.0.0.2", 5672, "10.0.0.1", 40000),
        "server",
    )


def test_connection_key_by_syn_then_lower_port() -> None:
    high = ("10.0.0.2", 6000)
    low = ("10.0.0.1", 5000)
    # neither port configured: the SYN's receiver is the server, even on the higher port
    assert connection_key(seg(1, flags=SYN, src=low, dst=high), ()) == (
        ("10.0.0.1", 5000, "10.0.0.2", 6000),
        "client",
    )
    assert connection_key(seg(1, flags=SYN | ACK, src=high, dst=low), ()) == (
        ("10.0.0.1", 5000, "10.0.0.2", 6000),
        "server",
    )
    # a data segment alone falls back to the lower port...
    assert connection_key(seg(1, src=low, dst=high), ()) == (
        ("10.0.0.2", 6000, "10.0.0.1", 5000),
        "server",
    )
    # ...unless the endpoints learnt from SYNs are passed in
    servers = syn_servers([seg(1, flags=SYN, src=low, dst=high)])
    assert servers == {high}
    assert connection_key(seg(1, src=low, dst=high), (), servers) == (
        ("10.0.0.1", 5000, "10.0.0.2", 6000),
        "client",
    )
    # both ports configured behaves like none
    assert connection_key(seg(1, src=low, dst=high), {5000, 6000})[1] == "server"


def test_connection_key_equal_ports_is_symmetric() -> None:
    a = ("10.0.0.9", 5672)
    b = ("10.0.0.3", 5672)
    one = connection_key(seg(1, src=a, dst=b), {5672})
    other = connection_key(seg(1, src=b, dst=a), {5672})
    assert one[0] == other[0] and {one[1], other[1]} == {"client", "server"}


# ---------------------------------------------------------------------------- real captures


def _streams(paths: list[str]) -> dict[tuple[ConnectionKey, str], Stream]:
    groups: dict[tuple[ConnectionKey, str], list[Segment]] = defaultdict(list)
    for path in paths:
        for item in read_capture(path):
            assert isinstance(item, Segment), item
            groups[connection_key(item, {5672})].append(item)
    return {key: reassemble(segments) for key, segments in groups.items()}


def _decode(stream: Stream) -> list[str]:
    decoder = FrameDecoder()
    for chunk in stream.chunks():
        decoder.receive_data(chunk)
    decoder.receive_data(b"")
    names = []
    while (frame := decoder.next_frame()) is not NEED_DATA:
        names.append(frame.method.NAME if isinstance(frame, MethodFrame) else type(frame).__name__)
    return names


def test_real_samples_reassemble_and_decode() -> None:
    files = capture_files([str(SAMPLES / "captures")])
    assert len(files) == 4
    streams = _streams(files)
    assert len(streams) == 6  # pika, py-amqp, aio-pika: both directions each
    for (key, direction), stream in streams.items():
        assert stream.syn and stream.gaps == [] and stream.overlaps_conflicting == 0, key
        names = _decode(stream)
        if direction == "client":
            assert names[0] == "ProtocolHeader" and names[-1] == "connection.close"
            assert "basic.publish" in names and "basic.ack" in names
            assert stream.fin
        else:
            assert names[0] == "connection.start" and names[-1] == "connection.close-ok"
            assert "channel.close" in names  # the 404 of the passive declare
            assert stream.rst  # RabbitMQ closes with SO_LINGER 0
    rotated = [s for s in streams.values() if len(s.captures) == 2]
    assert len(rotated) == 2  # the aio-pika connection spans both of its files


def test_pika_session_pcap_equals_the_recorded_byte_streams() -> None:
    streams = _streams([str(SAMPLES / "pika-session.pcap")])
    for (_key, direction), stream in streams.items():
        assert joined(stream) == (SAMPLES / f"pika-session.{direction}.bin").read_bytes()


def test_ts_at_maps_offsets_to_capture_times() -> None:
    stream = reassemble(
        [
            seg(0, flags=SYN, ts=0),
            seg(1, b"abc", ts=1.5),
            seg(4, b"de", ts=2.5),
            seg(10, b"z", ts=3),
        ]
    )
    assert [stream.ts_at(o) for o in range(-1, 11)] == [
        None, 1.5, 1.5, 1.5, 2.5, 2.5, None, None, None, None, 3, None,
    ]  # fmt: skip


def test_incarnations_split_reused_port_pairs() -> None:
    c2s = {"src": CLIENT, "dst": SERVER}
    s2c = {"src": SERVER, "dst": CLIENT}
    old_tail = [seg(500, b"old", ts=0, **c2s), seg(90, b"OLD", ts=1, **s2c)]
    first = [
        seg(1000, flags=SYN, ts=2, **c2s),
        seg(1000, flags=SYN, ts=3, **c2s),  # retransmitted SYN: same connection
        seg(7000, flags=SYN | ACK, ts=3.5, **s2c),
        seg(1001, b"AMQP\x00\x00\x09\x01", ts=4, **c2s),
        seg(1009, flags=FIN | ACK, ts=5, **c2s),
    ]
    second = [
        seg(3_000_000_000, flags=SYN, ts=60, **c2s),
        seg(40, flags=SYN | ACK, ts=60.1, **s2c),
        seg(3_000_000_001, b"AMQP\x00\x00\x09\x01", ts=61, **c2s),
    ]
    everything = old_tail + first + second
    random.Random(3).shuffle(everything)
    parts = incarnations(everything)
    assert parts == [old_tail, first, second]
    for part in parts[1:]:
        client = reassemble(s for s in part if connection_key(s, {5672})[1] == "client")
        assert client.syn and joined(client) == b"AMQP\x00\x00\x09\x01"
    assert incarnations([]) == []
