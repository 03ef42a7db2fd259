"""amqp_codec.capture.synthetic writes valid captures of valid AMQP: checked with dpkt and the codec."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import dpkt
import pytest

from amqp_codec import NEED_DATA, FrameDecoder, MessageAssembler, ProtocolHeader
from amqp_codec.capture.synthetic import CaptureSet, generate, parse_size
from amqp_codec.v0_9_1 import Basic, Connection


def _ones_complement(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


@pytest.fixture(scope="module")
def capture_set(tmp_path_factory: pytest.TempPathFactory) -> CaptureSet:
    return generate(tmp_path_factory.mktemp("gen"), 1_500_000, 4, seed=1, concurrency=8)


def _read(files: list[Path]) -> list[tuple[float, bytes]]:
    packets = []
    for path in files:
        with path.open("rb") as fh:
            reader = dpkt.pcapng.Reader(fh) if path.suffix == ".pcapng" else dpkt.pcap.Reader(fh)
            packets += list(reader)
    return packets


def test_files_formats_and_size(capture_set: CaptureSet) -> None:
    files = capture_set.files
    assert [p.name for p in files] == [
        "capture-00000.pcap",
        "capture-00001.pcap",
        "capture-00002.pcapng",
        "capture-00003.pcap",
    ]
    sizes = [p.stat().st_size for p in files]
    assert sum(sizes) == capture_set.counts.file_bytes
    assert 1_500_000 <= sum(sizes) < 1_500_000 * 1.5
    manifest = json.loads((files[0].parent / "manifest.json").read_text())
    assert manifest["files"] == [p.name for p in files]
    assert manifest["counts"]["packets"] == capture_set.counts.packets


def test_packets_are_valid_tcp_in_time_order(capture_set: CaptureSet) -> None:
    packets = _read(capture_set.files)
    assert len(packets) == capture_set.counts.packets
    stamps = [ts for ts, _ in packets]
    assert stamps == sorted(stamps)
    flags: Counter[str] = Counter()
    for _, raw in packets:
        ip = dpkt.ethernet.Ethernet(raw).data
        tcp = ip.data
        header = bytes(ip)[:20]
        assert _ones_complement(header) == 0xFFFF  # the IPv4 header checksum holds
        segment = bytes(ip)[20:]
        pseudo = ip.src + ip.dst + struct.pack("!BBH", 0, 6, len(segment))
        assert _ones_complement(pseudo + segment) == 0xFFFF  # and the TCP checksum
        assert len(tcp.data) <= 1460
        for name, bit in (("syn", 2), ("fin", 1), ("rst", 4)):
            if tcp.flags & bit:
                flags[name] += 1
    connections = capture_set.counts.connections
    assert flags["syn"] == 2 * connections  # SYN and SYN-ACK for each
    assert flags["fin"] + 2 * flags["rst"] == 2 * connections  # FIN from both sides, or an RST


def test_streams_decode_to_the_counted_frames_and_messages(capture_set: CaptureSet) -> None:
    streams: defaultdict[tuple[bytes, int, bytes, int], bytearray] = defaultdict(bytearray)
    expected_seq: dict[tuple[bytes, int, bytes, int], int] = {}
    files_of: defaultdict[tuple[bytes, int, bytes, int], set[int]] = defaultdict(set)
    for index, path in enumerate(capture_set.files):
        for _, raw in _read([path]):
            ip = dpkt.ethernet.Ethernet(raw).data
            tcp = ip.data
            key = (ip.src, tcp.sport, ip.dst, tcp.dport)
            files_of[key].add(index)
            if tcp.flags & dpkt.tcp.TH_SYN:
                expected_seq[key] = (tcp.seq + 1) & 0xFFFFFFFF
            elif tcp.data:
                assert tcp.seq == expected_seq[key]  # in order, no gaps
                expected_seq[key] = (tcp.seq + len(tcp.data)) & 0xFFFFFFFF
                streams[key] += tcp.data
    counts = capture_set.counts
    assert max(len(indices) for indices in files_of.values()) > 1  # connections span files
    assert len(streams) == 2 * counts.connections
    frames = headers = 0
    methods: Counter[str] = Counter()
    messages: Counter[str] = Counter()
    for data in streams.values():
        decoder = FrameDecoder()
        assembler = MessageAssembler()
        decoder.receive_data(bytes(data))
        decoder.receive_data(b"")
        while (frame := decoder.next_frame()) is not NEED_DATA:
            if isinstance(frame, ProtocolHeader):
                headers += 1
                continue
            frames += 1
            method = getattr(frame, "method", None)
            if method is not None:
                methods[method.NAME] += 1
            message = assembler.feed(frame)
            if message is not None:
                messages[message.method.NAME] += 1
    assert headers == counts.protocol_headers == counts.connections
    assert frames == counts.frames
    expected = {
        Basic.Publish.NAME: counts.published,
        Basic.Deliver.NAME: counts.delivered,
        Basic.GetOk.NAME: counts.got,
        Basic.Return.NAME: counts.returned,
    }
    assert all(expected.values())  # the set has every kind of message
    assert messages == Counter(expected)
    assert methods[Connection.Start.NAME] == counts.connections
    assert methods[Connection.StartOk.NAME] == counts.connections


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", 200_000, 2, seed=11)
    b = generate(tmp_path / "b", 200_000, 2, seed=11)
    c = generate(tmp_path / "c", 200_000, 2, seed=12)
    assert [p.read_bytes() for p in a.files] == [p.read_bytes() for p in b.files]
    assert [p.read_bytes() for p in a.files] != [p.read_bytes() for p in c.files]


def test_parse_size() -> None:
    assert parse_size("1G") == 1 << 30
    assert parse_size("64m") == 64 << 20
    assert parse_size("1.5K") == 1536
    assert parse_size("1000") == 1000


def test_the_command_line_writes_the_same_set(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    args = ["--size", "64K", "--files", "2", "--seed", "3"]
    result = subprocess.run(
        [sys.executable, "-m", "tools.gen_captures", str(tmp_path / "cli"), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "2 files" in result.stdout
    direct = generate(tmp_path / "direct", 64 * 1024, 2, seed=3)
    written = sorted((tmp_path / "cli").glob("capture-*"))
    assert [p.name for p in written] == [p.name for p in direct.files]
    assert [p.read_bytes() for p in written] == [p.read_bytes() for p in direct.files]
