"""The job's tables equal one pass over each whole stream, however the captures are split.

The job cuts captures into splits of a few MiB and dissects each long stream in regions, in
parallel (:mod:`amqp_codec.analyze.regions`). These tests run its stages in this process
(:func:`amqp_codec.analyze.job.write_tables` with the local mapper, no Spark) with splits
down to a few hundred bytes, so that streams are cut everywhere: inside frames, inside
messages interleaved on several channels, inside gaps and damage, between a SYN and its
data, between a retransmission and its first copy. Every table must equal what
:func:`~amqp_codec.analyze.streams.analyze_connection` gives for each whole connection.
"""

from __future__ import annotations

import collections
import os
import pickle
import random
import resource
import shutil
import struct
import tempfile
from pathlib import Path
from typing import Any

import dpkt
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from spark_support import (
    PROTOCOL_HEADER,
    Conversation,
    closing,
    frames,
    interleave,
    message_frames,
    opening,
    spark,
    write_pcap,
)

from amqp_codec.analyze import plan, regions, streams
from amqp_codec.analyze.heads import NO_FACTS
from amqp_codec.analyze.job import DEFAULT_SPLIT_BYTES, batched, local_map, write_tables
from amqp_codec.analyze.parquet import TALLIED_AS_WRITTEN
from amqp_codec.analyze.regions import CaptureChanged, PartWindow
from amqp_codec.analyze.scan import PartKeys, StreamPart
from amqp_codec.analyze.streams import analyze_connection, endpoints
from amqp_codec.analyze.tables import TABLES
from amqp_codec.analyze.tally import tally_file
from amqp_codec.analyze.tops import table_files
from amqp_codec.capture.packets import (
    RangeRead,
    Segment,
    capture_files,
    capture_layout,
    find_record,
    read_capture,
    read_range,
)
from amqp_codec.capture.synthetic import generate
from amqp_codec.capture.tcp import place
from amqp_codec.frames import ContentBodyFrame, HeartbeatFrame, MethodFrame
from amqp_codec.inspect.resync import RESYNC_MAX_PAYLOAD
from amqp_codec.v0_9_1 import Basic, Channel, Connection

pq = pytest.importorskip("pyarrow.parquet")

__all__ = ["spark"]  # the session fixture, imported for pytest

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "captures"


def _reference(paths: list[str]) -> dict[str, list[str]]:
    groups: dict[Any, list[Segment]] = collections.defaultdict(list)
    for path in capture_files(paths):
        for item in read_capture(path):
            if isinstance(item, Segment):
                groups[endpoints(item)].append(item)
    out: dict[str, list[str]] = {name: [] for name in TABLES}
    for segments in groups.values():
        for table, row in analyze_connection(segments, ports=(5672,)):
            out[table].append(repr(row))
    return {name: sorted(rows) for name, rows in out.items()}


def _written(out: Path) -> dict[str, list[str]]:
    tables: dict[str, list[str]] = {}
    for name, columns in TABLES.items():
        rows = []
        for record in pq.read_table(str(out / name)).to_pylist():
            row: list[Any] = []
            for column in columns:
                value = record[column.name]
                if not isinstance(column.type, str) and value is not None:
                    value = tuple(value[sub.name] for sub in column.type)
                row.append(value)
            rows.append(repr(tuple(row)))
        tables[name] = sorted(rows)
    return tables


def _check(paths: list[str], out: Path, split_bytes: int, mapper: Any = local_map) -> int:
    """Run the stages; assert the tables equal the one-pass reference; streams redone."""
    expected = _reference(paths)
    written = write_tables(paths, str(out), split_bytes=split_bytes, mapper=mapper)
    counts, redone = written.counts, written.redissected
    got = _written(out)
    for name in TABLES:
        assert got[name] == expected[name], f"{name} differs with {split_bytes}-byte splits"
        assert counts[name] == len(expected[name])
    # The report's figures counted as each file was written are those of reading it back
    # (a file the check step rewrote has none: the report reads it).
    rewritten = 0
    for name in TALLIED_AS_WRITTEN:
        for path in table_files(str(out), name):
            if path in written.tallies:
                assert written.tallies[path] == tally_file((name, path)), path
            else:
                rewritten += 1
    tallied = sum(len(table_files(str(out), t)) for t in TALLIED_AS_WRITTEN)
    assert len(written.tallies) + rewritten == tallied
    assert rewritten == 0 or redone
    return redone


def _busy(conversation: Conversation, seed: int, channels: int = 3) -> Conversation:
    """A connection with messages of many sizes interleaved on several channels."""
    rng = random.Random(seed)
    client, server = opening(tuple(range(1, channels + 1)))
    conversation.handshake().send("client", client[:8]).send("server", server[:400])
    conversation.send("client", client[8:]).send("server", server[400:])
    for round_ in range(6):
        sequences = [
            message_frames(
                ch, "ex", f"k{round_}.{ch}", rng.randbytes(rng.choice((0, 5, 900, 9000)))
            )
            for ch in range(1, channels + 1)
        ]
        data = frames(*interleave(*sequences), HeartbeatFrame(0))
        conversation.send("client", data, mss=rng.choice((100, 536, 1448)))
        deliveries = [
            [MethodFrame(ch, Basic.Ack(delivery_tag=round_ + 1))] for ch in range(1, channels + 1)
        ]
        conversation.send("server", frames(*interleave(*deliveries)), mss=700)
    client_close, server_close = closing()
    conversation.send("client", client_close).send("server", server_close)
    return conversation.fin("client").fin("server")


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Several files of varied connections (written once for the module)."""
    folder = tmp_path_factory.mktemp("captures")
    one = _busy(Conversation(), 1)
    two = _busy(Conversation(client=("10.1.0.3", 40003), ts=1_700_000_000.0005), 2, channels=2)
    # Lost segments (gaps) and a damaged frame in the middle of a long stream.
    lossy = Conversation(client=("10.1.0.4", 40004), ts=1_700_000_000.0002).handshake()
    client, server = opening()
    lossy.send("client", client).send("server", server)
    body = frames(*message_frames(1, "ex", "big", bytes(range(256)) * 90))
    lossy.send("client", body + body, mss=500, lose=(7, 30))
    broken = bytearray(body)
    broken[3] ^= 0xFF  # the publish's size field: the frame is garbage, the rest resyncs
    lossy.send("client", bytes(broken) + body, mss=900).fin("client")
    # Orphan content and a message cut by a method on its channel.
    odd = Conversation(client=("10.1.0.5", 40005), ts=1_700_000_000.0003).handshake()
    client, server = opening((1, 2))
    publish = message_frames(1, "ex", "cut", b"z" * 5000)
    odd.send("client", client + frames(ContentBodyFrame(2, b"orphan")), mss=300)
    odd.send("client", frames(*publish[:3], MethodFrame(1, Channel.Flow(active=True))), mss=300)
    odd.send("client", frames(*publish), mss=300).send("server", server)
    write_pcap(folder / "a.pcap", one, lossy)
    write_pcap(folder / "b.pcap", two, odd)
    return [str(folder)]


@pytest.mark.parametrize("split_bytes", [400, 1500, 7000, 30_000, 1 << 30])
def test_tables_equal_one_pass_at_any_split_size(
    captures: list[str], tmp_path: Path, split_bytes: int
) -> None:
    _check(captures, tmp_path / "out", split_bytes)


@pytest.mark.parametrize("split_bytes", [700, 5000])
def test_sample_captures_at_small_splits(tmp_path: Path, split_bytes: int) -> None:
    assert _check([str(SAMPLES)], tmp_path / "out", split_bytes) == 0


def test_long_streams_are_dissected_in_parallel_regions(
    captures: list[str], tmp_path: Path
) -> None:
    """At a realistic split size, regions meet: nothing is dissected a second time, except
    streams damaged right at a region's edge."""
    redone = _check(captures, tmp_path / "out", 30_000)
    assert redone <= 1


def _reading_past_the_read_ahead(tail: bytes) -> Conversation:
    """A connection whose client ends its stream with ``tail`` after its opening: more than
    a region may read past its end (:data:`~amqp_codec.analyze.plan.READ_AHEAD_PARTS`
    splits) at the split size of the tests below."""
    conversation = Conversation().handshake()
    client, server = opening()
    conversation.send("client", client).send("server", server)
    conversation.send("client", tail)
    return conversation.fin("client").fin("server")


@pytest.mark.parametrize(
    "tail",
    [
        # A message in progress at the first region's end whose bodies run on further.
        frames(*message_frames(1, "ex", "long", random.Random(8).randbytes(100_000))),
        # Garbage from the first region on: its resync would not end before the stream's.
        random.Random(9).randbytes(100_000),
    ],
    ids=["long-message", "garbage-tail"],
)
def test_a_region_that_runs_out_of_read_ahead_is_dissected_again(
    tail: bytes, tmp_path: Path
) -> None:
    """The bytes a region may read past its end ran out before it was done: that is not the
    stream's end (its message was not cut there, its resync did not give up there), so the
    stream is dissected again in one pass rather than written as if it had ended."""
    path = write_pcap(tmp_path / "c.pcap", _reading_past_the_read_ahead(tail))
    split_bytes = 8000
    assert len(tail) > (plan.READ_AHEAD_PARTS + 1) * split_bytes
    assert _check([str(path)], tmp_path / "out", split_bytes) == 1


def test_a_stream_dissected_again_across_many_splits_keeps_few_files_open(
    tmp_path: Path,
) -> None:
    """A stream dissected again in one pass reads every split it crosses. Its readers are
    let go as it moves on (a capture file held open twice by each): under a limit of 60
    more open files than the test has, hundreds of splits are read, and the stream is not
    silently cut where the process ran out of them."""
    body = random.Random(10).randbytes(100_000)
    path = write_pcap(
        tmp_path / "c.pcap",
        _reading_past_the_read_ahead(frames(*message_frames(1, "ex", "long", body))),
    )
    split_bytes = 300
    assert len(body) > 300 * split_bytes
    expected = _reference([str(path)])
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    used = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (used + 60, hard))
    try:
        written = write_tables([str(path)], str(tmp_path / "out"), split_bytes=split_bytes)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert written.redissected == 1
    assert _written(tmp_path / "out") == expected


def test_a_report_after_streams_were_dissected_again_is_that_of_its_tables(
    captures: list[str], tmp_path: Path, spark: Any
) -> None:
    """On Spark: the tallies the tasks counted as they wrote, and the files the check step
    rewrote read again, give the figures of reading every table."""
    from amqp_codec.analyze.job import run
    from amqp_codec.analyze.report import SUMMARY_NAME, _dumps, summarize

    result = run(captures, str(tmp_path / "out"), spark=spark, split_bytes=1500, progress=False)
    assert result.redissected
    written = (tmp_path / "out" / SUMMARY_NAME).read_text(encoding="utf-8")
    read = summarize(spark, result.out, result.counts, capture_files(captures))
    assert written == _dumps(read) + "\n"


def test_retransmissions_and_reordering_across_splits(tmp_path: Path) -> None:
    conversation = _busy(Conversation(), 5)
    data = [p for p in conversation.packets]
    rng = random.Random(3)
    # Resend a few segments much later (other splits) and swap neighbours.
    for i in rng.sample(range(10, len(data) - 10), 8):
        ts, raw = data[i]
        data.append((ts + 0.05, raw))
    for i in rng.sample(range(10, len(data) - 10), 6):
        data[i], data[i + 1] = data[i + 1], data[i]
    path = tmp_path / "r.pcap"
    with open(path, "wb") as out:
        writer = dpkt.pcap.Writer(out)
        for ts, raw in sorted(data, key=lambda p: p[0]):
            writer.writepkt(raw, ts=ts)
    for split_bytes in (900, 4000):
        _check([str(path)], tmp_path / f"out{split_bytes}", split_bytes)


def test_segments_recorded_out_of_order_across_splits(tmp_path: Path) -> None:
    """Neighbours swapped in the file itself, as a capture on a machine with several CPUs
    records some: a later split then carries bytes that come before some of an earlier
    split's, and a region's pieces are merged from both in stream order."""
    conversation = _busy(Conversation(), 7)
    data = list(conversation.packets)
    rng = random.Random(4)
    for i in rng.sample(range(10, len(data) - 10), 30):
        data[i], data[i + 1] = data[i + 1], data[i]
    path = tmp_path / "o.pcap"
    with open(path, "wb") as out:
        writer = dpkt.pcap.Writer(out)
        for ts, raw in data:
            writer.writepkt(raw, ts=ts)
    for split_bytes in (700, 900, 4000):
        _check([str(path)], tmp_path / f"out{split_bytes}", split_bytes)


def test_a_stream_whose_packets_are_not_recorded_in_time_order_keeps_its_times(
    tmp_path: Path,
) -> None:
    """A capture's timestamps need not rise with its packets (a capture of several
    interfaces, or a machine with several CPUs): the client's SYN is recorded after its
    first data, the server's FIN before its last data. A stream's first and last times
    (the connection's, its FIN's) are its earliest and latest, as in one pass, not those
    of its first and last packets in the file."""
    conversation = _busy(Conversation(), 11)
    data = list(conversation.packets)
    client_port = struct.pack(">H", conversation.client[1])

    def sent_by(raw: bytes, port: bytes) -> bool:
        return raw[34:36] == port  # Ethernet, IPv4 without options: the TCP source port

    client = [i for i, (_, raw) in enumerate(data) if sent_by(raw, client_port)]
    server = [i for i, (_, raw) in enumerate(data) if not sent_by(raw, client_port)]
    for first, second in ((client[0], client[1]), (server[-2], server[-1])):
        data[first], data[second] = data[second], data[first]
    path = tmp_path / "t.pcap"
    with open(path, "wb") as out:
        writer = dpkt.pcap.Writer(out)
        for ts, raw in data:
            writer.writepkt(raw, ts=ts)
    for split_bytes in (700, 1 << 30):
        _check([str(path)], tmp_path / f"out{split_bytes}", split_bytes)


def test_a_capture_that_starts_mid_connection_reports_what_one_pass_does(
    tmp_path: Path,
) -> None:
    """No SYN was captured: the bytes before the client's first are reported missing, at
    the time of the segment that carries them (here recorded after one that carries later
    bytes), and a server that sent nothing the capture saw but its FIN lost nothing."""
    conversation = Conversation()  # no handshake
    client, _server = opening()
    client_close, _server_close = closing()
    conversation.send("client", client[8:] + client_close, mss=100)
    conversation.fin("client").fin("server")
    data = list(conversation.packets)
    data[0], data[1] = data[1], data[0]
    path = tmp_path / "m.pcap"
    with open(path, "wb") as out:
        writer = dpkt.pcap.Writer(out)
        for ts, raw in data:
            writer.writepkt(raw, ts=ts)
    problems = _reference([str(path)])["problems"]
    assert len(problems) == 1 and "'gap'" in problems[0] and "'client'" in problems[0]
    for split_bytes in (300, 1 << 30):
        _check([str(path)], tmp_path / f"out{split_bytes}", split_bytes)


def test_a_stream_whose_first_frame_lies_past_its_first_region_keeps_its_version(
    tmp_path: Path,
) -> None:
    """Captured from mid-connection, the client's first bytes are the rest of a frame, and
    the first frame a resync finds lies past the first region's end: the version it
    assumes there is the connection's, as in one pass (the row named none)."""
    conversation = Conversation()  # no handshake, no protocol header
    body = random.Random(12).randbytes(13_000)
    framed = frames(*message_frames(1, "ex", "k", body, frame_max=131072))
    tail = framed[3000:]  # inside its one body frame: 10 KB before the next frame
    rest = frames(*message_frames(1, "ex", "k2", b"x" * 10), MethodFrame(1, Basic.Ack(1)))
    conversation.send("client", tail + rest, mss=1000)
    conversation.fin("client").fin("server")
    path = write_pcap(tmp_path / "v.pcap", conversation)
    expected = _reference([str(path)])
    assert "'0-9-1', 'assumed'" in expected["connections"][0]
    assert _check([str(path)], tmp_path / "out", 3000) == 0


def test_bytes_lost_before_the_fin_reach_a_region_that_reads_to_the_end(tmp_path: Path) -> None:
    """Garbage from an early region to the stream's end, whose last segment before the FIN
    was not captured: the region whose resync runs to the end meets the lost bytes there, as
    one pass does (its resync detail counted only the bytes captured)."""
    conversation = Conversation().handshake()
    client, server = opening()
    conversation.send("client", client).send("server", server)
    garbage = random.Random(13).randbytes(8000)
    conversation.send("client", garbage, mss=500, lose=(15,))  # the last segment
    conversation.fin("client").fin("server")
    path = write_pcap(tmp_path / "l.pcap", conversation)
    assert any("'resync'" in row for row in _reference([str(path)])["problems"])
    _check([str(path)], tmp_path / "out", 2000)


def test_a_message_row_names_the_file_of_its_content_method(tmp_path: Path) -> None:
    """One connection recorded in two files, as a ring buffer rotates them: the message whose
    method is in the first and whose body ends in the second belongs to the first file (the
    ``capture`` column of ``messages``); each frame to the file of its first byte."""
    conversation = Conversation().handshake()
    client, server = opening()
    conversation.send("client", client).send("server", server)
    body = bytes(range(256)) * 40
    conversation.send("client", frames(*message_frames(1, "ex", "spans", body)), mss=1000)
    conversation.send("client", frames(*message_frames(1, "ex", "after", b"x" * 100)))
    conversation.fin("client").fin("server")
    packets = conversation.packets
    publish = next(i for i, (_, raw) in enumerate(packets) if b"spans" in raw)
    cut = publish + 3  # the method, the header and some of the body in the first file
    ring = tmp_path / "ring"
    ring.mkdir()
    first, second = ring / "a.pcap", ring / "b.pcap"
    for path, part in ((first, packets[:cut]), (second, packets[cut:])):
        with open(path, "wb") as out:
            writer = dpkt.pcap.Writer(out)
            for ts, raw in part:
                writer.writepkt(raw, ts=ts)
    for split_bytes in (1500, 1 << 30):
        out = tmp_path / f"out{split_bytes}"
        write_tables([str(ring)], str(out), split_bytes=split_bytes)
        messages = pq.read_table(str(out / "messages")).to_pylist()
        files = {row["routing_key"]: row["capture"] for row in messages}
        assert files == {"spans": str(first), "after": str(second)}
        bodies = [
            row["capture"]
            for row in pq.read_table(str(out / "frames")).to_pylist()
            if row["frame_type"] == "body" and row["direction"] == "client"
        ]
        assert bodies[0] == str(first) and bodies[-1] == str(second)


def test_a_capture_read_in_ranges_gives_the_same_packets(tmp_path: Path) -> None:
    """Ranges that start at arbitrary bytes find their first record and meet exactly."""
    for path in sorted(str(p) for p in SAMPLES.iterdir() if p.suffix in (".pcap", ".pcapng")):
        whole = list(read_capture(path))
        layout = capture_layout(path)
        assert layout is not None and not isinstance(layout, Exception)
        for step in (97, 1000, 4096):
            items: list[Any] = []
            position, index = layout.first_record, 0
            for nominal in range(layout.first_record, layout.size, step):
                start = find_record(layout, nominal) if nominal > layout.first_record else nominal
                assert start == position, f"{os.path.basename(path)} at {nominal}"
                out = RangeRead()
                items += list(read_range(layout, start, nominal + step, index, out))
                position, index = out.stop, index + out.records
            assert items == whole


def test_a_pcapng_with_a_late_interface_block_is_read_whole(tmp_path: Path) -> None:
    """A pcapng file whose second interface is described after packets cannot be entered in
    the middle: it is read whole, and the tables are still those of one pass."""
    conversation = _busy(Conversation(), 9)
    path = tmp_path / "late.pcapng"
    with open(path, "wb") as out:
        writer = dpkt.pcapng.Writer(out)
        packets = conversation.packets
        half = len(packets) // 2
        for ts, raw in packets[:half]:
            writer.writepkt(raw, ts=ts)
        # A second interface block after packets (dumpcap adds one when an interface appears).
        idb = dpkt.pcapng.InterfaceDescriptionBlockLE(linktype=1, snaplen=65535)
        out.write(bytes(idb))
        for ts, raw in packets[half:]:  # on the new interface
            micros = round(ts * 1e6)
            block = dpkt.pcapng.EnhancedPacketBlockLE(
                iface_id=1, ts_high=micros >> 32, ts_low=micros & 0xFFFFFFFF, pkt_data=raw
            )
            block.caplen = block.pkt_len = len(raw)
            out.write(bytes(block))
    assert _check([str(path)], tmp_path / "out", 3000) == 0
    assert not any("interface" in row for row in _written(tmp_path / "out")["problems"])


def _reference_part_key(syns: dict[Any, tuple[int, int]], seg: Segment) -> tuple[Any, int, bool]:
    """A part's key as the scan defines it, worked out afresh for every segment."""
    a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
    ends = (a, b) if a <= b else (b, a)
    state = syns.get(ends)
    if seg.flags & 0x12 == 0x02 and (state is None or state[0] != seg.seq):
        state = syns[ends] = (seg.seq, 1 if state is None else state[1] + 1)
    return ends, 0 if state is None else state[1], a == ends[0]


def test_part_keys_remembered_per_endpoints_name_every_incarnation() -> None:
    """PartKeys remembers each endpoints' key until a client SYN starts a new incarnation:
    on a random mix of reused ports, SYNs, SYN retransmissions and SYN-ACKs it names every
    segment as the key worked out afresh does."""
    rnd = random.Random(7)
    hosts = [("10.0.0.1", 40000), ("10.0.0.1", 40001), ("10.0.0.2", 5672), ("10.0.0.3", 5672)]
    keys, syns = PartKeys(), {}
    last_syn = 0
    for index in range(20_000):
        (src, sport), (dst, dport) = rnd.sample(hosts, 2)
        roll = rnd.random()
        flags, seq = 0x18, rnd.randrange(2**32)
        if roll < 0.02:
            flags, seq = 0x02, rnd.randrange(2**32)  # a new client SYN
            last_syn = seq
        elif roll < 0.03:
            flags, seq = 0x02, last_syn  # a retransmitted SYN
        elif roll < 0.04:
            flags = 0x12  # a SYN-ACK
        seg = Segment("c", index, 0.0, src, sport, dst, dport, seq, flags, b"x")
        assert keys.key(seg) == _reference_part_key(syns, seg), index


def test_rows_keep_their_time_and_capture_when_the_piece_index_is_trimmed(
    captures: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream's index of pieces (for timestamps and capture files) drops what no row can
    still name as it goes (``streams.INDEX_TRIM`` pieces at a time). Trimmed at every other
    piece, every row is as with no trimming at all: in one pass over each whole stream
    (as a stream dissected again is), over gaps, resyncs, messages spanning dozens of
    segments and a connection spanning two capture files, and in regions."""
    paths = [*captures, str(SAMPLES), _rotated(tmp_path / "rotated")]
    expected = _reference(paths)
    monkeypatch.setattr(streams, "INDEX_TRIM", 2)
    monkeypatch.setattr(streams, "_BATCH_BYTES", 1)  # pieces fed one by one, as at scale
    assert _reference(paths) == expected
    write_tables(paths, str(tmp_path / "out"), split_bytes=1500)
    got = _written(tmp_path / "out")
    for name in TABLES:
        assert got[name] == expected[name], name


def _rotated(folder: Path) -> str:
    """One connection in two capture files, as a ring buffer rotates them: the second file
    begins with a message of three body frames in small segments (its row names the file of
    its method, which a trimmed index must still know when the last body comes), then bytes
    that never make a frame again (the resync row is dated from where they began)."""
    folder.mkdir()
    talk = Conversation(client=("10.1.0.9", 40009), ts=1_700_000_100.0).handshake()
    client, server = opening()
    talk.send("client", client).send("server", server)
    rotation = len(talk.packets)
    talk.send("client", frames(*message_frames(1, "ex", "rotated", b"r" * 9000)), mss=120)
    talk.send("client", bytes(range(7, 250)) * 20, mss=100).fin("client").fin("server")
    first, second = Conversation(), Conversation()
    first.packets, second.packets = talk.packets[:rotation], talk.packets[rotation:]
    write_pcap(folder / "ring-1.pcap", first)
    write_pcap(folder / "ring-2.pcap", second)
    return str(folder)


def test_the_collector_is_left_as_the_caller_had_it(captures: list[str], tmp_path: Path) -> None:
    """The driver freezes what it keeps from stage to stage (scans, plan, results) so that
    the collector does not walk it again and again; nothing is left frozen after, even when
    a stage fails, and a caller's own frozen objects are neither unfrozen nor joined."""
    import gc

    assert gc.get_freeze_count() == 0
    frozen_during: list[int] = []

    def watching(label: str, function: Any, items: list[Any]) -> list[Any]:
        frozen_during.append(gc.get_freeze_count())
        return [function(item) for item in items]

    write_tables(captures, str(tmp_path / "out"), mapper=watching)
    assert frozen_during[0] == 0 and frozen_during[-1] > 0  # the dissecting spared the plan
    assert gc.get_freeze_count() == 0

    def failing(label: str, function: Any, items: list[Any]) -> list[Any]:
        if label == "dissecting":
            raise RuntimeError("a task failed")
        return [function(item) for item in items]

    with pytest.raises(RuntimeError):
        write_tables(captures, str(tmp_path / "failed"), mapper=failing)
    assert gc.get_freeze_count() == 0

    kept = [object() for _ in range(10)]  # a caller that froze objects of its own
    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        frozen_during.clear()
        write_tables(captures, str(tmp_path / "again"), mapper=watching)
        # None joined (frozen objects freed meanwhile leave the count), none unfrozen.
        assert all(0 < count <= mine for count in frozen_during)
        assert 0 < gc.get_freeze_count() <= mine
    finally:
        gc.unfreeze()
    del kept


def _finishing(results: list[Any]) -> Any:
    """A mapper that runs each item here and keeps the dissecting tasks' results."""

    def mapper(label: str, function: Any, items: list[Any]) -> list[Any]:
        out = [function(item) for item in items]
        if label == "dissecting":
            results.extend(out)
        return out

    return mapper


def test_connections_in_one_split_are_written_by_their_task(
    captures: list[str], tmp_path: Path
) -> None:
    """A connection whose streams are one region each, read from one split, is checked and
    written by that split's task (its connections row, the problems of its ends: here
    gaps, damage, orphan content, a retransmission of other bytes): its streams' regions do
    not go back to the driver, and the tables are those of one pass."""
    resent = _busy(Conversation(client=("10.1.0.6", 40006), ts=1_700_000_000.0009), 6)
    ts, raw = resent.packets[40]
    resent.packets.append((ts + 0.01, raw[:-1] + bytes([raw[-1] ^ 0xFF])))  # other bytes
    paths = [*captures, str(write_pcap(tmp_path / "resent.pcap", resent))]
    expected = _reference(paths)
    assert any("conflicting-overlap" in row for row in expected["problems"])
    results: list[Any] = []
    out = tmp_path / "out"
    write_tables(paths, str(out), split_bytes=1 << 30, mapper=_finishing(results))
    assert _written(out) == expected
    finished = [c for r in results for c in r.finished]
    assert len(finished) == len(expected["connections"]) == 5
    assert not any(r.regions or r.parts for r in results)


def test_a_connection_whose_limits_its_head_did_not_show_is_left_to_the_driver(
    tmp_path: Path,
) -> None:
    """A client whose properties push its tune-ok past the head the scan reads: the server's
    stream was dissected without the negotiated limits, so its task leaves the connection
    to the driver, which dissects that stream again; a connection beside it is finished in
    its task as usual."""
    big = Conversation(client=("10.1.0.7", 40007)).handshake()
    start_ok = Connection.StartOk(
        client_properties={"product": "test-client", "information": "x" * 9000},
        mechanism="PLAIN",
        response=b"\x00analyst\x00secret",
    )
    client = PROTOCOL_HEADER + frames(
        MethodFrame(0, start_ok),
        MethodFrame(0, Connection.TuneOk(channel_max=64, frame_max=4096, heartbeat=30)),
        MethodFrame(0, Connection.Open(virtual_host="/test")),
        MethodFrame(1, Channel.Open()),
    )
    _, server = opening()
    big.send("server", server[:400]).send("client", client, mss=1448).send("server", server[400:])
    big.send("client", frames(*message_frames(1, "ex", "k", b"m" * 5000)), mss=1448)
    big.fin("client").fin("server")
    usual = _busy(Conversation(client=("10.1.0.8", 40008), ts=1_700_000_000.0007), 9)
    paths = [str(write_pcap(tmp_path / "c.pcap", big, usual))]
    expected = _reference(paths)
    results: list[Any] = []
    written = write_tables(
        paths, str(tmp_path / "out"), split_bytes=1 << 30, mapper=_finishing(results)
    )
    assert _written(tmp_path / "out") == expected
    assert written.redissected == 1
    finished = [c for r in results for c in r.finished]
    assert len(finished) == 1 and len(expected["connections"]) == 2


def test_head_facts_stop_at_the_first_tuning_frame() -> None:
    """A head is dissected as far as its first tune (server) or tune-ok (client), wherever
    it falls among the pieces the dissector is given; a head without one, to its end."""
    from amqp_codec.analyze.heads import HEAD_STEP, head_facts
    from amqp_codec.analyze.rules import Negotiated

    client, server = opening()
    facts = head_facts(client)
    tune_ok_at = client.index(frames(MethodFrame(0, Connection.TuneOk(64, 4096, 30))))
    assert (facts.spec, facts.tuned_frame_max) == ("0-9-1", 4096)
    assert facts.tuned_at == {"client": tune_ok_at}
    assert facts.negotiated == Negotiated(4096, 64, 30) and facts.size == len(client)
    for pad in range(0, HEAD_STEP, 37):  # the tune-ok across every piece boundary
        props = {"product": "test-client", "pad": "p" * pad}
        start_ok = Connection.StartOk(props, "PLAIN", b"\x00a\x00b")
        head = PROTOCOL_HEADER + frames(
            MethodFrame(0, start_ok), MethodFrame(0, Connection.TuneOk(64, 8192, 30))
        )
        assert head_facts(head).tuned_at == {"client": head.index(b"\x01\x00\x00", 8 + 12)}
        assert head_facts(head).tuned_frame_max == 8192
    server_facts = head_facts(server)
    assert list(server_facts.tuned_at) == ["server"] and server_facts.negotiated is None
    untuned = client[:tune_ok_at]
    assert head_facts(untuned).tuned_at == {} and head_facts(untuned).tuned_frame_max == 0


def test_a_stream_that_tunes_twice_is_dissected_as_in_one_pass(tmp_path: Path) -> None:
    """A client that sends a second tune-ok with a frame_max that changes what a resync
    believes: the head's facts (the first) are not what the stream holds after it, the
    regions after the first are found not to fit, and the stream is dissected again in one
    pass."""
    conversation = Conversation(client=("10.1.0.9", 40019)).handshake()
    client, server = opening()
    # Heartbeats first: the second tune-ok lies past the first piece of the head dissected.
    beats = frames(*[HeartbeatFrame(0)] * 100)
    again = beats + frames(MethodFrame(0, Connection.TuneOk(64, 4 * RESYNC_MAX_PAYLOAD, 30)))
    conversation.send("client", client + again).send("server", server)
    for n in range(12):
        body = frames(*message_frames(1, "ex", f"k{n}", bytes([n]) * 20_000, 131072))
        conversation.send("client", body, mss=1448)
    conversation.fin("client").fin("server")
    path = write_pcap(tmp_path / "twice.pcap", conversation)
    assert _check([str(path)], tmp_path / "out", 30_000) >= 1


@st.composite
def _one_part(draw: st.DrawFn) -> StreamPart:
    """A stream part as a scan leaves it: merged payload intervals in rel, perhaps a SYN
    (before, at or after the first payload), a FIN anywhere (before the SYN too), a head."""
    first_seq = draw(st.integers(0, 2**32 - 1))
    cuts = sorted(draw(st.sets(st.integers(0, 5_000), max_size=8)))
    intervals = [[lo, hi] for lo, hi in zip(cuts[::2], cuts[1::2], strict=False) if lo < hi]
    part = StreamPart(first_seq, 1.0, 7, last_rel=cuts[-1] if cuts else 0, last_ts=2.0)
    part.intervals = intervals
    part.syn_rel = draw(st.none() | st.integers(-10, 5_000))
    part.fin_rel = draw(st.none() | st.integers(-10, 6_000))
    part.fin_ts = None if part.fin_rel is None else 1.5
    part.rst = draw(st.booleans())
    part.head = draw(st.sampled_from([b"", b"AMQP\x00\x00\x09\x01"]))
    part.head_facts = NO_FACTS if part.syn_rel is not None else None
    return part


def _fin_at_the_start() -> StreamPart:
    """A part whose FIN is at stream offset 0, after a segment that starts before the SYN's
    sequence number and ends after it: nothing of it lies in the stream."""
    part = StreamPart(1000, 1.0, 7, last_rel=10, last_ts=2.0)
    part.intervals = [[0, 10]]
    part.syn_rel, part.fin_rel, part.fin_ts = 5, 6, 1.5
    part.head_facts = NO_FACTS
    return part


@given(part=_one_part(), split=st.integers(0, 3))
@example(part=_fin_at_the_start(), split=0)
def test_a_stream_in_one_split_is_planned_as_in_general(part: StreamPart, split: int) -> None:
    """The plan's way for a stream whose bytes one split holds (most streams of short
    connections) gives what its general way gives for one part (the example: once an
    empty interval that one way kept and the other did not)."""
    key = ((("10.0.0.1", 40000), ("10.0.0.2", 5672)), 1, True)
    args = ("client", [(split, key, part)], ["a.pcap", "b.pcap"], [0, 1, 1, 0])
    assert repr(plan._plan_one_part(args[0], args[1][0], args[2], args[3])) == repr(
        plan._plan_parts(*args)
    )


def _heads() -> list[bytes]:
    """Heads as scans find them: both sides of an opening, the same client tuning other
    limits, a 0-8 client's, and a client whose start-ok differs from the others' (another
    connection name)."""
    client, server = opening()
    tune_ok = frames(MethodFrame(0, Connection.TuneOk(64, 4096, 30)))
    retuned = client.replace(tune_ok, frames(MethodFrame(0, Connection.TuneOk(64, 8192, 0))))
    other = PROTOCOL_HEADER + frames(
        MethodFrame(0, Connection.StartOk({"connection_name": "other"}, "PLAIN", b"\x00a\x00b")),
        MethodFrame(0, Connection.TuneOk(0, 131072, 0)),
    )
    old = b"AMQP\x01\x01\x08\x00" + frames(
        MethodFrame(0, Connection.StartOk({"product": "old"}, "PLAIN", b"\x00a\x00b")),
        MethodFrame(0, Connection.TuneOk(10, 8192, 5)),
    )
    return [client, server, retuned, other, old]


@st.composite
def _damaged_heads(draw: st.DrawFn) -> list[bytes]:
    """A scan's heads: each one of :func:`_heads`, maybe cut short, maybe with bytes
    changed, maybe followed by more frames."""
    out = []
    for _ in range(draw(st.integers(1, 12))):
        head = bytearray(draw(st.sampled_from(_heads())))
        if draw(st.booleans()):
            head += frames(MethodFrame(1, Channel.Open())) * draw(st.integers(1, 80))
        for _ in range(draw(st.integers(0, 2))):
            head[draw(st.integers(0, len(head) - 1))] = draw(st.integers(0, 255))
        out.append(bytes(head[: draw(st.integers(1, len(head)))]))
    return out


@given(heads=_damaged_heads())
def test_head_facts_known_from_an_earlier_head_are_those_of_dissecting_it(
    heads: list[bytes],
) -> None:
    """Facts kept by the bytes that show them, then found for a head that starts with the
    same bytes, are what dissecting the head itself gives, damaged or cut short as it is."""
    from amqp_codec.analyze.heads import _facts_by_steps, head_facts

    known: dict[bytes, Any] = {}
    for head in heads:
        assert repr(head_facts(head, known)) == repr(_facts_by_steps(head))


def _random_capture(rng: random.Random, folder: Path) -> None:
    """One to three connections with what real traffic and captures bring: messages of many
    sizes interleaved on channels and cut by methods, heartbeats, frames damaged, cut or
    followed by garbage, segments lost, recorded twice (some resent with other bytes),
    swapped or from mid-connection on, in one to three files, pcap or pcapng."""
    packets: list[tuple[float, bytes]] = []
    for number in range(rng.randint(1, 3)):
        conversation = Conversation(
            client=(f"10.1.{number}.1", 41000 + number),
            ts=1_700_000_000.0 + number * 0.0003,
            seq={"client": rng.choice([1000, 2**32 - 3000]), "server": 900000},
        )
        conversation.handshake()
        channels = tuple(range(1, rng.randint(1, 3) + 1))
        client, server = opening(channels)
        conversation.send("client", client, mss=rng.choice([100, 536, 1448]))
        conversation.send("server", server)
        for round_ in range(rng.randint(1, 5)):
            sequences = []
            for channel in rng.sample(channels, rng.randint(1, len(channels))):
                size = rng.choice([0, 50, 4088, 4089, 9000, 30000])
                message = message_frames(channel, "ex", f"k{round_}", rng.randbytes(size))
                if rng.random() < 0.1:  # a method cuts the message
                    cut = MethodFrame(channel, Channel.Flow(active=True))
                    message.insert(rng.randrange(2, len(message) + 1), cut)
                sequences.append(message)
            items = interleave(*sequences)
            if rng.random() < 0.3:
                items.insert(rng.randrange(len(items) + 1), HeartbeatFrame(0))
            data = bytearray(frames(*items))
            damage = rng.random()
            if damage < 0.15:
                for _ in range(rng.randint(1, 3)):
                    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            elif damage < 0.25:
                at = rng.randrange(len(data) + 1)
                data[at:at] = rng.randbytes(rng.choice([3, 100, 5000]))
            elif damage < 0.3:
                del data[rng.randrange(len(data)) :]
            lose = (rng.randrange(20),) if rng.random() < 0.1 else ()
            mss = rng.choice([100, 536, 1448, 9000])
            conversation.send("client", bytes(data), mss=mss, lose=lose)
            if rng.random() < 0.5:
                acks = [MethodFrame(ch, Basic.Ack(delivery_tag=1)) for ch in channels]
                conversation.send("server", frames(*acks), mss=700)
        if rng.random() < 0.7:
            client_close, server_close = closing()
            conversation.send("client", client_close).send("server", server_close)
        if rng.random() < 0.8:
            conversation.fin("client").fin("server")
        recorded = list(conversation.packets)
        if rng.random() < 0.15:
            recorded = recorded[rng.randrange(1, len(recorded) // 2 + 1) :]
        if rng.random() < 0.2:
            for i in rng.sample(range(len(recorded)), min(4, len(recorded))):
                ts, raw = recorded[i]
                if len(raw) > 54 and rng.random() < 0.3:  # resent with other bytes
                    raw = raw[:-1] + bytes([raw[-1] ^ 0xFF])
                recorded.append((ts + rng.choice([0.0005, 0.05]), raw))
        if rng.random() < 0.2:
            for i in rng.sample(range(len(recorded) - 1), min(4, len(recorded) - 1)):
                recorded[i], recorded[i + 1] = recorded[i + 1], recorded[i]
        packets += recorded
    if rng.random() < 0.5:
        packets.sort(key=lambda packet: packet[0])
    files = rng.randint(1, 3)
    bounds = [0, *sorted(rng.sample(range(1, len(packets)), files - 1)), len(packets)]
    for n in range(files):
        pcapng = rng.random() < 0.3
        with open(folder / f"c{n}.{'pcapng' if pcapng else 'pcap'}", "wb") as out:
            writer = dpkt.pcapng.Writer(out) if pcapng else dpkt.pcap.Writer(out)
            for ts, raw in packets[bounds[n] : bounds[n + 1]]:
                writer.writepkt(raw, ts=ts)


def _resent_late(folder: Path, rotated: bool, syn_again: bool = False) -> list[str]:
    """A connection whose client resends a segment of its first message with other bytes
    after a second message of 9 KB; both sides then fall silent past twice their heartbeat
    and close. ``rotated``: the resend and the FINs alone in a second file; ``syn_again``:
    the client's SYN recorded again just before the resend."""
    conversation = Conversation(client=("10.1.0.7", 40007)).handshake()
    client, server = opening((1, 2))
    conversation.send("client", client).send("server", server)
    sent = []
    for channel in (1, 2):
        message = message_frames(channel, "ex", "k", random.Random(channel).randbytes(9000))
        conversation.send("client", frames(*message), mss=536)
        sent.append(conversation.packets[-3][1])
    conversation.ts += 300
    conversation.fin("client").fin("server")
    data, fins = conversation.packets[:-2], conversation.packets[-2:]
    raw = sent[0] if not rotated else sent[1]
    resent = (fins[0][0] - 0.5, raw[:-1] + bytes([raw[-1] ^ 0xFF]))  # other bytes
    again = [(resent[0] - 0.1, conversation.packets[0][1])] if syn_again else []
    files = [data, [resent, *fins]] if rotated else [[*data, *again, resent, *fins]]
    folder.mkdir()
    for n, packets in enumerate(files):
        with open(folder / f"c{n}.pcap", "wb") as out:
            writer = dpkt.pcap.Writer(out)
            for when, packet in packets:
                writer.writepkt(packet, ts=when)
    return [str(folder)]


@pytest.mark.parametrize("split_bytes", [1500, 9000])
def test_bytes_resent_in_a_later_split_are_compared_with_the_first_copy(
    split_bytes: int, tmp_path: Path
) -> None:
    """A segment resent with other bytes in a later split than the first copy is counted,
    as one pass counts it ("conflicting-overlap"): each split's task compares its segments
    with the first copies that earlier splits hold, read from them."""
    captures = _resent_late(tmp_path / "in", rotated=False)
    expected = _reference(captures)
    assert sum("conflicting-overlap" in row for row in expected["problems"]) == 1
    _check(captures, tmp_path / "out", split_bytes)


@pytest.mark.parametrize("split_bytes", [1500, 1 << 30])
def test_bytes_resent_after_the_syn_recorded_again_are_compared_with_the_first_copy(
    split_bytes: int, tmp_path: Path
) -> None:
    """The client's SYN recorded again mid-stream gives its later segments another key in
    the split (a part of their own, as a new connection on the same ports would): a resend
    of other bytes among them is still compared with the first copy, which the part before
    it holds."""
    captures = _resent_late(tmp_path / "in", rotated=False, syn_again=True)
    expected = _reference(captures)
    assert sum("conflicting-overlap" in row for row in expected["problems"]) == 1
    _check(captures, tmp_path / "out", split_bytes)


@pytest.mark.parametrize("split_bytes", [9000, 20000])
@pytest.mark.parametrize(
    "resends",
    [
        # (segment, from, to) of each part's resend: the first part's from a later segment
        [(2, 700, 1400), (1, 0, 700)],
        # the first part's across both segments, the second's inside the first one
        [(1, 700, 2100), (1, 1000, 1300)],
    ],
    ids=["out-of-order", "overlapping"],
)
def test_two_parts_of_a_split_compared_with_one_earlier_part(
    resends: list[tuple[int, int, int]], split_bytes: int, tmp_path: Path
) -> None:
    """Two parts of one stream in a split (its SYN recorded again between them) both resend
    bytes of one earlier part, each with other bytes: the earlier part is read once, over
    all the bytes asked of it in stream order, and both resends are compared with their
    first copies (read for each part in turn, the bytes behind the first part's were gone)."""
    conversation = Conversation(client=("10.1.0.9", 40009)).handshake()
    first_seq = conversation.seq["client"]
    client, server = opening()
    conversation.send("client", client).send("server", server)
    body = random.Random(9).randbytes(30_000)
    conversation.send("client", frames(*message_frames(1, "ex", "k", body)), mss=1400)
    for n, (segment, lo, hi) in enumerate(resends):
        if n == 1:  # the client's SYN recorded again: the part after it has another key
            conversation.packets.append((conversation.ts + 0.0001, conversation.packets[0][1]))
        offset = len(client) + segment * 1400 + lo  # the message's segments of 1,400 bytes
        data = bytearray(conversation.sent["client"][offset : offset + hi - lo])
        data[0] ^= 0xFF
        conversation.resend("client", bytes(data), first_seq + offset)
    conversation.fin("client").fin("server")
    captures = [str(write_pcap(tmp_path / "c.pcap", conversation))]
    expected = _reference(captures)
    conflicting = [row for row in expected["problems"] if "conflicting-overlap" in row]
    assert len(conflicting) == 1 and "'2 segments resent" in conflicting[0]
    _check(captures, tmp_path / "out", split_bytes)


def test_a_task_reads_the_first_copies_of_few_splits_and_says_what_it_left(
    tmp_path: Path,
) -> None:
    """A resend of bytes first carried across more splits than a task reads for first
    copies (FIRST_COPY_SPLITS, the latest ones): the bytes whose first copies lie further
    back are not compared, and a ``tcp`` row says so; the rest is compared as one pass
    does, and in splits that hold it all, the tables are those of one pass."""
    conversation = Conversation(client=("10.1.0.8", 40008)).handshake()
    client, server = opening()
    conversation.send("client", client).send("server", server)
    start = conversation.seq["client"]
    body = random.Random(8).randbytes(30_000)
    conversation.send("client", frames(*message_frames(1, "ex", "k", body)), mss=1400)
    resent = bytearray(conversation.sent["client"][len(client) : len(client) + 16_000])
    resent[-1] ^= 0xFF  # in bytes first carried by one of the latest splits
    conversation.resend("client", bytes(resent), start)
    conversation.fin("client").fin("server")
    captures = [str(write_pcap(tmp_path / "c.pcap", conversation))]
    expected = _reference(captures)
    assert sum("conflicting-overlap" in row for row in expected["problems"]) == 1
    _check(captures, tmp_path / "whole", 1 << 30)

    write_tables(captures, str(tmp_path / "out"), split_bytes=1500)
    got = _written(tmp_path / "out")
    left = [row for row in got["problems"] if "resend-not-compared" in row]
    assert len(left) == 1 and "1 segments resent bytes" in left[0]
    assert sorted(set(got["problems"]) - set(left)) == expected["problems"]
    for name in ("frames", "messages"):
        assert got[name] == expected[name]
    # The connection's problems counted once more: the row above.
    assert [row.rsplit(",", 1)[0] for row in got["connections"]] == [
        row.rsplit(",", 1)[0] for row in expected["connections"]
    ]


@pytest.mark.parametrize("split_bytes", [1500, 1 << 30])
def test_a_stream_ending_in_a_later_file_names_where_its_bytes_end(
    split_bytes: int, tmp_path: Path
) -> None:
    """A rotated capture whose second file holds only a stream's last packets (a resend of
    other bytes, the FINs long after the last frames): its ``tcp`` and silence rows name
    the file of its last byte kept, as one pass does, not the file of its last packet."""
    captures = _resent_late(tmp_path / "in", rotated=True)
    expected = _reference(captures)
    named = [row for row in expected["problems"] if "overlap" in row or "nothing for" in row]
    assert len(named) == 3 and all(str(tmp_path / "in" / "c0.pcap") in row for row in named)
    _check(captures, tmp_path / "out", split_bytes)


@settings(max_examples=20, derandomize=True)
@given(seed=st.integers(0, 2**32 - 1), split_bytes=st.sampled_from([300, 1500, 9000, 100_000]))
# A region read past its end through more parts than it may read, and one of the parts it
# read owned bytes after a part it may not read (segments swapped across splits): it took
# the bytes between for lost, and a message in progress there for cut.
@example(seed=1091, split_bytes=1500)
def test_random_captures_give_the_tables_of_one_pass(seed: int, split_bytes: int) -> None:
    """Random captures of damaged traffic (see :func:`_random_capture`), in regions as small
    as a few packets: every table equals one pass over each whole stream. (A reused port's
    incarnations are left out: told apart in capture order by the job and in time order by
    one pass, they differ when packets are recorded out of time order.)"""
    folder = Path(tempfile.mkdtemp(prefix="amqp-codec-random-"))
    try:
        (folder / "in").mkdir()
        _random_capture(random.Random(seed), folder / "in")
        _check([str(folder / "in")], folder / "out", split_bytes)
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("change", ["removed", "truncated"])
def test_a_capture_changed_between_the_passes_is_said_not_cut(
    change: str, captures: list[str], tmp_path: Path
) -> None:
    """A capture file the scan read went away or shrank before its streams were dissected
    (a ring buffer rotating its oldest file away, say): the run stops with an error naming
    the file and what to do, rather than taking what is left for the end of its streams."""
    folder = tmp_path / "in"
    folder.mkdir()
    for path in capture_files(captures):
        (folder / os.path.basename(path)).write_bytes(Path(path).read_bytes())
    victim = folder / "a.pcap"

    def mapper(label: str, function: Any, items: list[Any]) -> list[Any]:
        if label == "dissecting":
            if change == "removed":
                victim.unlink()
            else:
                os.truncate(victim, victim.stat().st_size // 2)
        return [function(item) for item in items]

    with pytest.raises(CaptureChanged) as raised:
        write_tables([str(folder)], str(tmp_path / "out"), split_bytes=4000, mapper=mapper)
    said = str(raised.value)
    assert said.startswith(f"capture {victim} changed while it was analysed (")
    assert "\n" not in said


def test_batches_keep_order_and_bound_their_bytes() -> None:
    sizes = [3, 3, 3, 10, 1, None, 2, 2, 9, 4]
    batches = batched(list(range(len(sizes))), sizes.__getitem__, 8)
    assert batches == [[0, 1], [2], [3], [4], [5], [6, 7], [8], [9]]
    assert batched([], sizes.__getitem__, 8) == []


def test_a_capture_rotated_into_small_files_is_dissected_several_files_to_a_task(
    tmp_path: Path,
) -> None:
    """A task per small file costs more than its work (and four part files each): small
    splits are scanned and dissected in batches, with the tables of one pass. A batch's
    splits are one region of each stream: with 280 kB splits, three batches of files of
    9 to 17 kB, so regions that span files meet regions that span files."""
    made = generate(tmp_path / "captures", 600_000, 40, seed=5, concurrency=6)
    paths = [str(path) for path in made.files]
    assert len(paths) >= 30
    _check(paths, tmp_path / "out", DEFAULT_SPLIT_BYTES)
    written = sorted(path.name for path in (tmp_path / "out" / "frames").iterdir())
    assert len(written) <= 2, written  # one batch's file, and the driver's
    results: list[Any] = []
    _check(paths, tmp_path / "out-280k", 280_000, mapper=_finishing(results))
    assert len(results) == 3
    # A region per batch a stream runs through, not per file (left to the driver: regions
    # of connections not finished by their task).
    regions = sum(len(result.regions) for result in results)
    assert regions <= 3 * 2 * made.counts.connections, regions
    written = sorted(path.name for path in (tmp_path / "out-280k" / "frames").iterdir())
    assert len(written) <= len(results) + 1, written


def _pickled_sizes(sizes: list[int]) -> Any:
    """A mapper running here that adds the pickled size of each dissecting item to ``sizes``."""

    def measuring(label: str, function: Any, items: list[Any]) -> list[Any]:
        if label == "dissecting":
            sizes.extend(len(pickle.dumps(item)) for item in items)
        return local_map(label, function, items)

    return measuring


def test_a_task_carries_the_regions_it_dissects_not_whole_stream_plans(tmp_path: Path) -> None:
    """The tasks of a long stream do not grow with it: each carries the regions it dissects
    and what they read, not its streams' plans with all their regions and parts (as they
    did, 886 MB of pickled tasks for a capture rotated into 1,000 files of 1 MB)."""
    largest = []
    for size in (300_000, 1_200_000):
        made = generate(tmp_path / f"c{size}", size, 1, seed=7, mss=1448, single_connection=True)
        paths = [str(path) for path in made.files]
        pickled: list[int] = []
        out = tmp_path / f"out{size}"
        write_tables(paths, str(out), split_bytes=20_000, mapper=_pickled_sizes(pickled))
        assert _written(out) == _reference(paths)
        assert len(pickled) >= size // 25_000  # a task per split, each of one region
        largest.append(max(pickled))
    assert largest[1] < 1.5 * largest[0], largest


class _PlacedAsCandidates:
    """Stands for a lazy reader's placer: segment ``i`` of part ``"part"`` is candidate ``i``."""

    def __init__(self, candidates: list[Any]) -> None:
        self.candidates = candidates

    def place(self, segment: Segment) -> tuple[str, Any, bool]:
        return "part", self.candidates[segment.packet], False


def _lazy_reader(candidates: list[Any]) -> regions._LazySplit:
    """A lazy reader of one part whose segments, parsed in capture order, carry
    ``candidates`` (``(start, end, ts, data, capture)``)."""
    owned = tuple(plan.interval_union([], [(lo, hi) for lo, hi, *_ in candidates]))
    reader = object.__new__(regions._LazySplit)
    reader.windows = {"part": PartWindow(0, 0, None, owned)}  # type: ignore[dict-item]
    reader.pending = {}
    reader.placer = _PlacedAsCandidates(candidates)  # type: ignore[assignment]
    reader.packets = iter(
        Segment("c", i, ts, "a", 1, "b", 2, lo, 0, data)
        for i, (lo, _hi, ts, data, _capture) in enumerate(candidates)
    )
    return reader


@settings(max_examples=300, derandomize=True)
@given(
    spans=st.lists(st.tuples(st.integers(0, 300), st.integers(1, 60)), min_size=1, max_size=60),
    start=st.integers(0, 320),
    parsed=st.integers(0, 60),
)
def test_a_lazy_reader_gives_each_byte_from_its_first_carrier(
    spans: list[tuple[int, int]], start: int, parsed: int
) -> None:
    """A split read lazily gives a part's owned bytes as placing all its segments does: each
    byte from the first segment, in capture order, that carried it, whatever the order and
    overlaps of the segments already parsed (as reading another part first leaves them)."""
    candidates = [
        (lo, lo + size, float(i), bytes([i]) * size, "c") for i, (lo, size) in enumerate(spans)
    ]
    reader = _lazy_reader(candidates)
    for _ in range(parsed):  # parsed before the part is read, as reading another part leaves them
        reader._parse_more("part")  # type: ignore[arg-type]
    got = {}
    for piece in reader.pieces("part", start):  # type: ignore[arg-type]
        for i, octet in enumerate(piece.data):
            assert piece.offset + i not in got
            got[piece.offset + i] = octet
    expected = {}
    for piece in place(candidates)[0]:
        for i, octet in enumerate(piece.data):
            if piece.offset + i >= start:
                expected[piece.offset + i] = octet
    assert got == expected


class _Counted(int):
    """A stream offset that counts the comparisons made with it."""

    made = 0

    def __lt__(self, other: object) -> bool:
        _Counted.made += 1
        return int(self) < other  # type: ignore[operator]

    def __le__(self, other: object) -> bool:
        _Counted.made += 1
        return int(self) <= other  # type: ignore[operator]

    def __gt__(self, other: object) -> bool:
        _Counted.made += 1
        return int(self) > other  # type: ignore[operator]

    def __ge__(self, other: object) -> bool:
        _Counted.made += 1
        return int(self) >= other  # type: ignore[operator]


def test_a_lazy_reader_is_not_slowed_by_segments_captured_far_ahead() -> None:
    """Segments far ahead in a part, captured before those at its start (a capture can be
    made so, with tens of thousands), cost the lazy reader O(n log n) comparisons, not
    O(n^2): it passed over all of them at each step (8,000 of each took 8.2 s)."""

    def comparisons(n: int) -> int:
        ahead = [(_Counted(10 * n + 2 * i), 10 * n + 2 * i + 1, 0.0, b"a", "c") for i in range(n)]
        near = [(_Counted(i), i + 1, 1.0, b"n", "c") for i in range(n)]
        reader = _lazy_reader(ahead + near)
        _Counted.made = 0
        got = b"".join(piece.data for piece in reader.pieces("part", 0))  # type: ignore[arg-type]
        assert got == b"n" * n + b"a" * n
        return _Counted.made

    small, large = comparisons(500), comparisons(2000)
    # Four times the segments: about 4.9 times the comparisons at O(n log n), 16 at O(n^2).
    assert large < 8 * small, (small, large)


def _recording(seen: dict[str, list[Any]]) -> Any:
    """A mapper that runs in this process and keeps each stage's items."""

    def mapper(label: str, function: Any, items: list[Any]) -> list[Any]:
        seen[label] = items
        return local_map(label, function, items)

    return mapper


@pytest.mark.parametrize("compress", ["gzip", "zstd"])
def test_a_compressed_capture_is_split_from_one_decompressed_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compress: str
) -> None:
    """A compressed capture was one split, decompressed again by every task that read it
    (one connection of 1 GB, gzip -1: 14.5 to 15.3 s, 6.0 s plain). It is decompressed
    once, its copy split as a plain file is, and the tables are one pass's over the
    compressed file, which the rows still name; the copy goes with the run."""
    import gzip

    from backports import zstd

    generate(tmp_path / "gen", 600_000, 1, seed=5)
    (plain,) = sorted((tmp_path / "gen").glob("capture-*"))
    packed = tmp_path / f"capture.{compress}"
    packed.write_bytes((gzip.compress if compress == "gzip" else zstd.compress)(plain.read_bytes()))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    seen: dict[str, list[Any]] = {}
    _check([str(packed)], tmp_path / "out", 40_000, _recording(seen))
    assert [s.path for batch in seen["decompressing"] for s in batch] == [str(packed)]
    scanned = [split for batch in seen["scanning"] for split in batch]
    assert len(scanned) > 10
    assert all(s.layout is not None and s.layout.read_from for s in scanned)
    assert {s.path for s in scanned} == {str(packed)}
    assert not list(temporary.iterdir())  # the copies' folder is gone
    frames = pq.read_table(str(tmp_path / "out" / "frames"), columns=["capture"])
    assert set(frames.column("capture").to_pylist()) == {str(packed)}


def test_a_damaged_compressed_capture_is_read_whole_as_before(tmp_path: Path) -> None:
    """A stream cut short is not split from a copy: read whole, its problems are the ones
    one pass reports (the cut stream, the record it cut)."""
    import gzip

    generate(tmp_path / "gen", 300_000, 1, seed=6)
    (plain,) = sorted((tmp_path / "gen").glob("capture-*"))
    data = gzip.compress(plain.read_bytes())
    cut = tmp_path / "cut.pcap.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    seen: dict[str, list[Any]] = {}
    write_tables([str(cut)], str(tmp_path / "out"), split_bytes=40_000, mapper=_recording(seen))
    assert [s.path for batch in seen["decompressing"] for s in batch] == [str(cut)]
    scanned = [split for batch in seen["scanning"] for split in batch]
    assert [(s.path, s.layout) for s in scanned] == [(str(cut), None)]
    write_tables([str(cut)], str(tmp_path / "before"), split_bytes=40_000, decompress=False)
    assert _written(tmp_path / "out") == _written(tmp_path / "before")
    kinds = pq.read_table(str(tmp_path / "out" / "problems")).column("error").to_pylist()
    assert "truncated-file" in kinds


def test_compressed_captures_are_read_whole_where_tasks_do_not_share_the_disk(
    tmp_path: Path,
) -> None:
    """On a cluster the driver's temporary folder is not the executors': no copies."""
    import gzip

    packed = tmp_path / "capture.pcap.gz"
    packed.write_bytes(gzip.compress((SAMPLES / "pika.pcap").read_bytes()))
    seen: dict[str, list[Any]] = {}
    write_tables([str(packed)], str(tmp_path / "out"), mapper=_recording(seen), decompress=False)
    assert "decompressing" not in seen
    assert [s.layout for batch in seen["scanning"] for s in batch] == [None]


def test_small_compressed_files_are_decompressed_several_to_a_task(tmp_path: Path) -> None:
    """A capture rotated by the minute and compressed (``tcpdump -G 60 -z gzip``) is a
    thousand small files a day: a Spark task each would cost 20 to 50 ms each."""
    import gzip

    generate(tmp_path / "gen", 400_000, 24, seed=7)
    rotated = tmp_path / "rotated"
    rotated.mkdir()
    for path in sorted((tmp_path / "gen").glob("capture-*")):
        (rotated / f"{path.name}.gz").write_bytes(gzip.compress(path.read_bytes()))
    seen: dict[str, list[Any]] = {}
    _check([str(rotated)], tmp_path / "out", 150_000, _recording(seen))
    assert len([s for batch in seen["decompressing"] for s in batch]) == 24
    assert len(seen["decompressing"]) < 8
    scanned = [split for batch in seen["scanning"] for split in batch]
    assert all(s.layout is not None and s.layout.read_from for s in scanned)


def test_copies_are_not_made_in_a_temporary_folder_held_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tmpfs /tmp (Debian 13, Fedora) is memory: a copy there would take the decompressed
    capture's size of it. The copies go into the output folder instead, and go."""
    import gzip

    from amqp_codec.capture import compressed

    mounts = tmp_path / "mounts"
    mounts.write_text(
        "/dev/vda / ext4 rw 0 0\ntmpfs /tmp tmpfs rw 0 0\n/dev/vdb /tmp/disk ext4 rw 0 0\n"
        "/dev/vdc /mnt/with\\040space xfs rw 0 0\n"
    )
    assert compressed.in_memory("/tmp/x", str(mounts))
    assert compressed.in_memory("/tmp", str(mounts))
    assert not compressed.in_memory("/tmp/disk/x", str(mounts))
    assert not compressed.in_memory("/tmpfoo", str(mounts))
    assert not compressed.in_memory("/mnt/with space/x", str(mounts))
    assert not compressed.in_memory("/tmp/x", str(tmp_path / "no-mounts"))

    made: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def mkdtemp(*args: Any, **kwargs: Any) -> str:
        made.append(real_mkdtemp(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(compressed, "in_memory", lambda path: True)
    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    packed = tmp_path / "capture.pcap.gz"
    packed.write_bytes(gzip.compress((SAMPLES / "pika.pcap").read_bytes()))
    out = tmp_path / "out"
    seen: dict[str, list[Any]] = {}
    write_tables([str(packed)], str(out), mapper=_recording(seen))
    assert [Path(folder).parent for folder in made] == [out]
    assert sorted(p.name for p in out.iterdir()) == sorted(TABLES)
    assert all(s.layout is not None for batch in seen["scanning"] for s in batch)
