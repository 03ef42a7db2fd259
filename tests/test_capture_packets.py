"""Reading pcap and pcapng files into TCP segments (amqp_codec.capture.packets).

Captures are built here byte by byte (pcapng) or with dpkt's pcap writer, so each test states
exactly what is in the file. The builders are reused by test_capture_tcp.py.
"""

from __future__ import annotations

import gzip
import io
import ipaddress
import pickle
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import dpkt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_codec.capture import CaptureProblem, Segment, capture_files, read_capture
from amqp_codec.capture.packets import (
    _SYNC_SPAN,
    CaptureLayout,
    RangeRead,
    _chain_holds,
    _pcap_record_end,
    _pcapng_record_end,
    capture_layout,
    find_record,
    read_range,
)

SAMPLES = Path(__file__).resolve().parent.parent / "samples"

ACK = dpkt.tcp.TH_ACK
PSH_ACK = dpkt.tcp.TH_PUSH | dpkt.tcp.TH_ACK
SYN = dpkt.tcp.TH_SYN

# ---------------------------------------------------------------------------- packet builders


def tcp(
    sport: int,
    dport: int,
    seq: int,
    flags: int = PSH_ACK,
    payload: bytes = b"",
    options: bytes = b"",
) -> bytes:
    """A TCP header (+ options, padded to 4 bytes) and payload; checksum left 0."""
    options += b"\x00" * (-len(options) % 4)
    doff = (20 + len(options)) // 4
    head = struct.pack(
        ">HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, 0, doff << 4, flags, 65535, 0, 0
    )
    return head + options + payload


def ipv4(src: str, dst: str, body: bytes, proto: int = 6, frag: int = 0x4000) -> bytes:
    """An IPv4 header (no options) around ``body``; ``frag`` is the flags/offset word."""
    return (
        struct.pack(
            ">BBHHHBBH4s4s",
            0x45,
            0,
            20 + len(body),
            1,
            frag,
            64,
            proto,
            0,
            ipaddress.IPv4Address(src).packed,
            ipaddress.IPv4Address(dst).packed,
        )
        + body
    )


def ipv6(src: str, dst: str, body: bytes, nxt: int = 6, ext: bytes = b"") -> bytes:
    """An IPv6 header; ``ext`` is a chain of extension headers already encoded, first
    header type ``nxt``."""
    return (
        struct.pack(">IHBB", 0x60000000, len(ext) + len(body), nxt, 64)
        + ipaddress.IPv6Address(src).packed
        + ipaddress.IPv6Address(dst).packed
        + ext
        + body
    )


def ethernet(ip: bytes, vlans: Sequence[int] = ()) -> bytes:
    """Ethernet II with optional 802.1Q tags; the ethertype follows the IP version."""
    ethertype = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    tags = b"".join(struct.pack(">HH", tpid, 7) for tpid in vlans)
    return (
        b"\x02\x00\x00\x00\x00\x02"
        + b"\x02\x00\x00\x00\x00\x01"
        + tags
        + struct.pack(">H", ethertype)
        + ip
    )


def sll(ip: bytes) -> bytes:
    ethertype = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    return struct.pack(">HHH8sH", 0, 772, 6, b"\x00" * 8, ethertype) + ip


def sll2(ip: bytes) -> bytes:
    ethertype = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    return struct.pack(">HHIHBB8s", ethertype, 0, 1, 772, 0, 6, b"\x00" * 8) + ip


def null(ip: bytes) -> bytes:
    """BSD loopback: address family in the capturing host's order (here little-endian)."""
    return struct.pack("<I", 2 if ip[0] >> 4 == 4 else 30) + ip


def loop(ip: bytes) -> bytes:
    """OpenBSD LOOP: address family in network order."""
    return struct.pack(">I", 2 if ip[0] >> 4 == 4 else 24) + ip


def write_pcap(
    path: Path,
    packets: Iterable[tuple[float, bytes]],
    linktype: int = dpkt.pcap.DLT_EN10MB,
    nano: bool = False,
    snaplen: int = 262144,
) -> Path:
    """A classic pcap written with dpkt; each packet is (timestamp, frame)."""
    with path.open("wb") as f:
        writer = dpkt.pcap.Writer(f, snaplen=snaplen, linktype=linktype, nano=nano)
        for ts, frame in packets:
            writer.writepkt(frame, ts=ts)
    return path


def pcap_bytes(
    packets: Iterable[tuple[int, int, bytes, int]],
    linktype: int = 1,
    order: str = "<",
    nano: bool = False,
    snaplen: int = 262144,
) -> bytes:
    """A classic pcap by hand: packets are (seconds, fraction, captured bytes, wire length)."""
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = io.BytesIO()
    out.write(struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
    for sec, frac, data, wire_len in packets:
        out.write(struct.pack(order + "IIII", sec, frac, len(data), wire_len) + data)
    return out.getvalue()


def _block(order: str, block_type: int, body: bytes) -> bytes:
    body += b"\x00" * (-len(body) % 4)
    length = 12 + len(body)
    return struct.pack(order + "II", block_type, length) + body + struct.pack(order + "I", length)


def _option(order: str, code: int, value: bytes) -> bytes:
    return struct.pack(order + "HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)


def shb(order: str = "<") -> bytes:
    """A pcapng section header block."""
    return _block(order, 0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(
    linktype: int, order: str = "<", tsresol: int | None = None, tsoffset: int | None = None
) -> bytes:
    """An interface description block with optional if_tsresol (9) / if_tsoffset (14)."""
    options = b""
    if tsresol is not None:
        options += _option(order, 9, bytes([tsresol]))
    if tsoffset is not None:
        options += _option(order, 14, struct.pack(order + "q", tsoffset))
    if options:
        options += _option(order, 0, b"")
    return _block(order, 1, struct.pack(order + "HHI", linktype, 0, 262144) + options)


def epb(
    interface: int, units: int, data: bytes, order: str = "<", wire_len: int | None = None
) -> bytes:
    """An enhanced packet block; ``units`` is the timestamp in the interface's resolution."""
    wire = len(data) if wire_len is None else wire_len
    head = struct.pack(order + "IIIII", interface, units >> 32, units & 0xFFFFFFFF, len(data), wire)
    return _block(order, 6, head + data)


def spb(data: bytes, order: str = "<") -> bytes:
    """A simple packet block (no interface id, no timestamp)."""
    return _block(order, 3, struct.pack(order + "I", len(data)) + data)


def pb(interface: int, units: int, data: bytes, order: str = "<") -> bytes:
    """An obsolete packet block."""
    head = struct.pack(
        order + "HHIIII", interface, 0, units >> 32, units & 0xFFFFFFFF, len(data), len(data)
    )
    return _block(order, 2, head + data)


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def segments(path: str) -> list[Segment]:
    items = list(read_capture(path))
    assert all(isinstance(i, Segment) for i in items), items
    return [i for i in items if isinstance(i, Segment)]


def problems(path: str) -> list[CaptureProblem]:
    return [i for i in read_capture(path) if isinstance(i, CaptureProblem)]


C4, S4 = "10.0.0.1", "10.0.0.2"
C6, S6 = "2001:db8::1", "2001:db8::2"
DATA = tcp(40000, 5672, 1000, PSH_ACK, b"AMQP\x00\x00\x09\x01")

# ---------------------------------------------------------------------------- link types

LINKS = [
    pytest.param(1, ethernet, id="ethernet"),
    pytest.param(113, sll, id="sll"),
    pytest.param(276, sll2, id="sll2"),
    pytest.param(101, lambda ip: ip, id="raw-101"),
    pytest.param(12, lambda ip: ip, id="raw-12"),
    pytest.param(14, lambda ip: ip, id="raw-14"),
    pytest.param(0, null, id="null"),
    pytest.param(108, loop, id="loop"),
]


@pytest.mark.parametrize(("linktype", "frame"), LINKS)
@pytest.mark.parametrize("version", [4, 6])
def test_every_link_type_and_ip_version(
    tmp_path: Path, linktype: int, frame: object, version: int
) -> None:
    make = frame  # a builder from LINKS
    assert callable(make)
    src, dst = (C4, S4) if version == 4 else (C6, S6)
    ip = (ipv4 if version == 4 else ipv6)(src, dst, DATA)
    path = write_pcap(tmp_path / "x.pcap", [(1_700_000_000.25, make(ip))], linktype)
    assert segments(str(path)) == [
        Segment(str(path), 0, 1_700_000_000.25, src, 40000, dst, 5672, 1000, PSH_ACK, DATA[20:])
    ]


@pytest.mark.parametrize("vlans", [[0x8100], [0x88A8, 0x8100], [0x9100, 0x8100, 0x8100]])
def test_vlan_tags(tmp_path: Path, vlans: list[int]) -> None:
    frame = ethernet(ipv4(C4, S4, DATA), vlans)
    path = write_pcap(tmp_path / "v.pcap", [(1.0, frame)])
    (seg,) = segments(str(path))
    assert (seg.src, seg.dport, seg.payload) == (C4, 5672, b"AMQP\x00\x00\x09\x01")


def test_ipv6_extension_headers_are_skipped(tmp_path: Path) -> None:
    hop_by_hop = bytes([60, 0]) + b"\x01\x04\x00\x00\x00\x00"  # next: destination options
    dest_opts = bytes([6, 1]) + b"\x00" * 14  # next: TCP, 16 bytes long
    frame = ethernet(ipv6(C6, S6, DATA, nxt=0, ext=hop_by_hop + dest_opts))
    path = write_pcap(tmp_path / "e.pcap", [(1.0, frame)])
    (seg,) = segments(str(path))
    assert (seg.src, seg.dst, seg.seq, seg.payload) == (C6, S6, 1000, DATA[20:])


def test_non_tcp_and_bare_acks_are_skipped_flags_kept(tmp_path: Path) -> None:
    udp = ipv4(C4, S4, b"\x00" * 12, proto=17)
    arp = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x06" + b"\x00" * 28
    frames = [
        ethernet(udp),
        arp,
        ethernet(ipv4(C4, S4, tcp(40000, 5672, 1, ACK))),  # bare ACK: skipped
        ethernet(ipv4(C4, S4, tcp(40000, 5672, 1, SYN, options=b"\x02\x04\x05\xb4"))),
        ethernet(ipv4(S4, C4, tcp(5672, 40000, 7, dpkt.tcp.TH_RST))),
        ethernet(ipv4(C4, S4, tcp(40000, 5672, 2, dpkt.tcp.TH_FIN | ACK))),
        ethernet(ipv6(C6, S6, b"\x00" * 8, nxt=17)),
    ]
    path = write_pcap(tmp_path / "n.pcap", [(float(i), f) for i, f in enumerate(frames)])
    got = [(s.packet, s.flags, s.payload) for s in segments(str(path))]
    assert got == [(3, SYN, b""), (4, dpkt.tcp.TH_RST, b""), (5, dpkt.tcp.TH_FIN | ACK, b"")]


def test_ethernet_padding_and_trailer_are_not_payload(tmp_path: Path) -> None:
    frame = ethernet(ipv4(C4, S4, tcp(40000, 5672, 5, PSH_ACK, b"\x08"))) + b"\x00" * 5 + b"FCS!"
    path = write_pcap(tmp_path / "p.pcap", [(1.0, frame)])
    (seg,) = segments(str(path))
    assert seg.payload == b"\x08"


def test_fragments_are_reported_not_decoded(tmp_path: Path) -> None:
    frag6 = bytes([6, 0, 0, 1]) + b"\x00\x00\x00\x2a"  # fragment header, more fragments
    frames = [
        ethernet(ipv4(C4, S4, DATA, frag=0x2000)),  # MF set
        ethernet(ipv4(C4, S4, b"\x00" * 8, frag=0x0003)),  # offset 3
        ethernet(ipv6(C6, S6, DATA, nxt=44, ext=frag6)),
        ethernet(ipv4(C4, S4, DATA)),  # still read after them
    ]
    path = write_pcap(tmp_path / "f.pcap", [(1.0, f) for f in frames])
    items = list(read_capture(str(path)))
    assert [(type(i).__name__, i.packet) for i in items] == [
        ("CaptureProblem", 0),
        ("CaptureProblem", 1),
        ("CaptureProblem", 2),
        ("Segment", 3),
    ]
    assert {i.kind for i in items if isinstance(i, CaptureProblem)} == {"ip-fragment"}


def test_snap_length_cut_keeps_what_was_captured(tmp_path: Path) -> None:
    body = bytes(range(200))
    frame = ethernet(ipv4(C4, S4, tcp(40000, 5672, 9, PSH_ACK, body)))
    header_only = frame[:30]  # cut inside the IPv4 header
    raw = pcap_bytes(
        [
            (1, 0, frame[:100], len(frame)),
            (2, 0, header_only, len(frame)),
            (3, 0, frame, len(frame)),
        ]
    )
    items = list(read_capture(write(tmp_path / "s.pcap", raw)))
    seg, cut, short, whole = items
    assert isinstance(seg, Segment) and seg.payload == body[: 100 - 54]
    assert isinstance(cut, CaptureProblem) and (cut.packet, cut.kind) == (0, "truncated-packet")
    assert isinstance(short, CaptureProblem)
    assert (short.packet, short.kind) == (1, "truncated-packet")
    assert isinstance(whole, Segment) and whole.payload == body


def test_malformed_packets_are_skipped_and_reading_goes_on(tmp_path: Path) -> None:
    good = ethernet(ipv4(C4, S4, DATA))
    bad_ihl = bytearray(good)
    bad_ihl[14] = 0x43  # IHL 12 bytes
    bad_doff = bytearray(good)
    bad_doff[14 + 20 + 12] = 0x30  # TCP data offset 12 bytes
    bad_total = bytearray(good)
    bad_total[16:18] = b"\x00\x18"  # IP total 24: ends inside the TCP header
    frames = [bytes(bad_ihl), bytes(bad_doff), bytes(bad_total), good[:10], b"\x60" * 3, good]
    path = write_pcap(tmp_path / "m.pcap", [(1.0, f) for f in frames], linktype=1)
    items = list(read_capture(str(path)))
    assert [getattr(i, "kind", "segment") for i in items] == [
        "malformed-packet",
        "malformed-packet",
        "malformed-packet",
        "malformed-packet",
        "malformed-packet",
        "segment",
    ]
    assert [i.packet for i in items] == [0, 1, 2, 3, 4, 5]


def test_ip_length_past_the_frame_is_malformed_but_kept(tmp_path: Path) -> None:
    frame = ethernet(ipv4(C4, S4, tcp(40000, 5672, 9, PSH_ACK, b"0123456789")))
    raw = pcap_bytes([(1, 0, frame[:-4], len(frame) - 4)])  # captured whole, yet 4 bytes short
    items = list(read_capture(write(tmp_path / "l.pcap", raw)))
    assert [getattr(i, "kind", "segment") for i in items] == ["segment", "malformed-packet"]
    assert isinstance(items[0], Segment) and items[0].payload == b"012345"


def test_raw_ip_with_unknown_version_is_malformed(tmp_path: Path) -> None:
    path = write_pcap(tmp_path / "r.pcap", [(1.0, b"\x50" + b"\x00" * 40)], linktype=101)
    assert [p.kind for p in problems(str(path))] == ["malformed-packet"]


# ---------------------------------------------------------------------------- pcap variants


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("nano", [False, True])
def test_pcap_byte_orders_and_resolutions(tmp_path: Path, order: str, nano: bool) -> None:
    frame = ethernet(ipv4(C4, S4, DATA))
    frac = 123_456_789 if nano else 123_456
    path = write(
        tmp_path / "o.pcap", pcap_bytes([(1_700_000_000, frac, frame, len(frame))], 1, order, nano)
    )
    (seg,) = segments(path)
    assert seg.ts == pytest.approx(1_700_000_000.123456789, abs=1e-6)
    assert seg.payload == DATA[20:]


def test_pcap_link_type_with_fcs_bits_is_still_ethernet(tmp_path: Path) -> None:
    frame = ethernet(ipv4(C4, S4, DATA))
    linktype = 1 | 0x10000000 | (4 << 28)  # "FCS present" bits above the link type
    path = write(tmp_path / "fcs.pcap", pcap_bytes([(1, 0, frame, len(frame))], linktype))
    assert len(segments(path)) == 1


def test_unsupported_link_type(tmp_path: Path) -> None:
    frame = ethernet(ipv4(C4, S4, DATA))
    path = write(tmp_path / "u.pcap", pcap_bytes([(1, 0, frame, len(frame))], linktype=105))
    assert [(p.kind, p.packet) for p in problems(path)] == [("unsupported-link-type", None)]


def _pcap_with_three_packets() -> bytes:
    frames = [
        ethernet(ipv4(C4, S4, tcp(40000, 5672, 1 + 8 * i, PSH_ACK, b"x" * 8))) for i in range(3)
    ]
    return pcap_bytes([(1, i, f, len(f)) for i, f in enumerate(frames)])


def test_every_truncation_of_a_pcap(tmp_path: Path) -> None:
    raw = _pcap_with_three_packets()
    record = (len(raw) - 24) // 3
    for cut in range(len(raw)):
        items = list(read_capture(write(tmp_path / "t.pcap", raw[:cut])))
        whole = max(0, (cut - 24) // record) if cut >= 24 else 0
        segs = [i for i in items if isinstance(i, Segment)]
        probs = [i for i in items if isinstance(i, CaptureProblem)]
        assert len(segs) == whole, cut
        if cut == 0 or cut < 4:
            assert [p.kind for p in probs] == ["not-a-capture"]
        elif cut == 24 + whole * record:
            assert probs == [], cut  # ends on a record boundary: nothing is missing
        else:
            assert [p.kind for p in probs] == ["truncated-file"], cut
    assert len(segments(write(tmp_path / "t.pcap", raw))) == 3


def test_corrupt_pcap_record_length(tmp_path: Path) -> None:
    raw = bytearray(_pcap_with_three_packets())
    record = (len(raw) - 24) // 3
    struct.pack_into("<I", raw, 24 + record + 8, 0x7FFFFFFF)  # second record's caplen
    items = list(read_capture(write(tmp_path / "c.pcap", bytes(raw))))
    assert isinstance(items[0], Segment)
    assert isinstance(items[1], CaptureProblem)
    assert (items[1].kind, items[1].packet, len(items)) == ("corrupt-file", 1, 2)


def test_not_a_capture_empty_and_missing_files(tmp_path: Path) -> None:
    assert [p.kind for p in problems(write(tmp_path / "a.txt", b"hello world"))] == [
        "not-a-capture"
    ]
    assert [p.kind for p in problems(write(tmp_path / "e.pcap", b""))] == ["not-a-capture"]
    assert [p.kind for p in problems(str(tmp_path / "missing.pcap"))] == ["unreadable"]
    assert [p.kind for p in problems(str(tmp_path))] == ["unreadable"]  # a folder


# ---------------------------------------------------------------------------- pcapng


def test_pcapng_interfaces_resolutions_and_offsets(tmp_path: Path) -> None:
    eth = ethernet(ipv4(C4, S4, DATA))
    raw_ip = ipv6(C6, S6, DATA)
    cooked = sll2(ipv4(S4, C4, tcp(5672, 40000, 77, PSH_ACK, b"ok")))
    data = (
        shb()
        + idb(1)  # 0: Ethernet, default microseconds
        + idb(101, tsresol=9)  # 1: raw IP, nanoseconds
        + idb(276, tsresol=0x80 | 10, tsoffset=1_000)  # 2: SLL2, 1/1024 s, +1000 s
        + epb(0, 1_700_000_000_500_000, eth)
        + _block("<", 5, b"\x00" * 16)  # interface statistics: skipped
        + epb(1, 1_700_000_001_250_000_000, raw_ip)
        + _block("<", 0x40000BAD, b"custom")  # an unknown block: skipped
        + epb(2, 1_700_000_000 * 1024 + 512, cooked)
    )
    items = segments(write(tmp_path / "i.pcapng", data))
    assert [(s.packet, s.src, s.payload) for s in items] == [
        (0, C4, DATA[20:]),
        (1, C6, DATA[20:]),
        (2, S4, b"ok"),
    ]
    assert [s.ts for s in items] == [1_700_000_000.5, 1_700_000_001.25, 1_700_001_000.5]


def test_pcapng_sections_byte_orders_simple_and_obsolete_blocks(tmp_path: Path) -> None:
    eth = ethernet(ipv4(C4, S4, DATA))
    data = (
        shb("<")
        + idb(1, "<")
        + epb(0, 5_000_000, eth, "<")
        + spb(eth, "<")  # no timestamp: takes the previous packet's
        + shb(">")  # a new section resets the interfaces; big-endian from here
        + idb(101, ">")
        + pb(0, 7_000_000, ipv4(C4, S4, DATA), ">")
        + epb(0, 8_000_000, ipv4(C4, S4, DATA), ">")
    )
    items = segments(write(tmp_path / "s.pcapng", data))
    assert [(s.packet, s.ts) for s in items] == [(0, 5.0), (1, 5.0), (2, 7.0), (3, 8.0)]
    assert {s.payload for s in items} == {DATA[20:]}


def test_pcapng_problems(tmp_path: Path) -> None:
    eth = ethernet(ipv4(C4, S4, DATA))
    unknown_iface = shb() + idb(1) + epb(3, 0, eth) + epb(0, 0, eth)
    items = list(read_capture(write(tmp_path / "u.pcapng", unknown_iface)))
    assert [(getattr(i, "kind", "segment"), i.packet) for i in items] == [
        ("malformed-packet", 0),
        ("segment", 1),
    ]
    unsupported = shb() + idb(147) + idb(1) + epb(0, 0, eth) + epb(1, 0, eth)
    items = list(read_capture(write(tmp_path / "l.pcapng", unsupported)))
    assert [(getattr(i, "kind", "segment"), i.packet) for i in items] == [
        ("unsupported-link-type", None),
        ("segment", 1),
    ]
    bad_length = bytearray(shb() + idb(1) + epb(0, 0, eth))
    struct.pack_into("<I", bad_length, len(shb() + idb(1)) + 4, 13)  # not a multiple of 4
    assert [p.kind for p in problems(write(tmp_path / "b.pcapng", bytes(bad_length)))] == [
        "corrupt-file"
    ]
    trailer = bytearray(shb() + idb(1) + epb(0, 0, eth))
    trailer[-4:] = b"\x00\x01\x00\x00"
    assert [p.kind for p in problems(write(tmp_path / "t.pcapng", bytes(trailer)))] == [
        "corrupt-file"
    ]
    bad_bom = bytearray(shb())
    bad_bom[8:12] = b"abcd"
    assert [p.kind for p in problems(write(tmp_path / "m.pcapng", bytes(bad_bom)))] == [
        "corrupt-file"
    ]
    # An option claiming more bytes than its block holds: the interface keeps its defaults.
    bad_option = _block("<", 1, struct.pack("<HHI", 1, 0, 0) + struct.pack("<HH", 9, 200))
    items = segments(write(tmp_path / "o.pcapng", shb() + bad_option + epb(0, 3_000_000, eth)))
    assert [i.ts for i in items] == [3.0]
    cut = shb() + idb(1) + epb(0, 0, eth[:-3], wire_len=len(eth))
    items = list(read_capture(write(tmp_path / "c.pcapng", cut)))
    assert isinstance(items[0], Segment) and items[0].payload == DATA[20:-3]
    assert [getattr(i, "kind", "segment") for i in items] == ["segment", "truncated-packet"]
    # Only a trailer after the IP packet was not kept: the payload is whole, nothing to report.
    trailer_cut = shb() + idb(1) + epb(0, 0, eth, wire_len=len(eth) + 4)
    assert [i.payload for i in segments(write(tmp_path / "f.pcapng", trailer_cut))] == [DATA[20:]]


@pytest.mark.parametrize("order", ["<", ">"])
def test_pcapng_packet_blocks_at_the_limits_of_their_length_and_interfaces(
    tmp_path: Path, order: str
) -> None:
    """Packet blocks just within and just past what they may claim, each followed by a good
    one: the interface one past the last described, a captured length that fills the block
    exactly and one that reaches into its trailing length, the shortest block that can hold
    a packet and one a word shorter."""
    payload = b"AMQP\x00\x00\x09\x01xx"
    eth = ethernet(ipv4(C4, S4, tcp(40000, 5672, 1000, PSH_ACK, payload)))
    assert len(eth) % 4 == 0  # no padding: the captured length can fill the block

    def block(interface: int, caplen: int, data: bytes) -> bytes:
        head = struct.pack(order + "IIIII", interface, 0, 0, caplen, len(eth))
        return _block(order, 6, head + data)

    cases = {
        "one interface past the last": (block(2, len(eth), eth), "unknown interface id 2"),
        "filling the block": (block(0, len(eth), eth), None),
        "into its trailing length": (
            block(0, len(eth) + 4, eth),
            f"captured length {len(eth) + 4} exceeds block",
        ),
        "empty, the shortest": (block(0, 0, b""), "Ethernet header cut short (0 bytes)"),
        "a word short of a packet block": (
            _block(order, 6, b"\x00" * 16),
            "packet block too short",
        ),
    }
    for name, (damaged, detail) in cases.items():
        made = shb(order) + idb(1, order) + idb(1, order) + damaged + epb(0, 0, eth, order)
        items = list(read_capture(write(tmp_path / "limits.pcapng", made)))
        got = [(i.packet, i.payload if isinstance(i, Segment) else i.detail) for i in items]
        assert got == [(0, detail or payload), (1, payload)], name


def test_every_truncation_of_a_pcapng(tmp_path: Path) -> None:
    eth = ethernet(ipv4(C4, S4, DATA))
    head = shb() + idb(1)
    packet = epb(0, 0, eth)
    raw = head + packet + packet
    for cut in range(len(raw)):
        items = list(read_capture(write(tmp_path / "t.pcapng", raw[:cut])))
        segs = [i for i in items if isinstance(i, Segment)]
        probs = [i.kind for i in items if isinstance(i, CaptureProblem)]
        whole = max(0, (cut - len(head)) // len(packet))
        assert len(segs) == whole, cut
        boundary = cut in (len(shb()), len(head), len(head) + len(packet))
        if cut < 4:
            assert probs == ["not-a-capture"]
        elif boundary:
            assert probs == [], cut
        else:
            assert probs == ["truncated-file"], cut


# ---------------------------------------------------------------------------- robustness


@given(
    which=st.sampled_from(["pcap", "pcapng", "pcap.gz"]),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=12),
    cut=st.integers(0, 10_000),
)
def test_mutated_files_never_raise(
    tmp_path_factory: pytest.TempPathFactory, which: str, edits: list[tuple[int, int]], cut: int
) -> None:
    eth = ethernet(ipv4(C4, S4, DATA))
    v6 = ethernet(ipv6(C6, S6, DATA, nxt=0, ext=bytes([6, 0]) + b"\x00" * 6), [0x8100])
    if which == "pcap":
        raw = bytearray(pcap_bytes([(1, 0, eth, len(eth)), (2, 0, v6, len(v6))]))
    elif which == "pcap.gz":
        raw = bytearray(gzip.compress(pcap_bytes([(1, 0, eth, len(eth)), (2, 0, v6, len(v6))])))
    else:
        raw = bytearray(
            shb()
            + idb(1)
            + idb(113, tsresol=9, tsoffset=5)
            + epb(0, 1, eth)
            + epb(1, 2, sll(ipv4(C4, S4, DATA)))
            + spb(v6)
        )
    for position, value in edits:
        raw[position % len(raw)] = value
    path = tmp_path_factory.mktemp("fuzz") / "f.cap"
    path.write_bytes(bytes(raw[: cut % (len(raw) + 1)]))
    for item in read_capture(str(path)):
        assert isinstance(item, Segment | CaptureProblem)
        if isinstance(item, Segment):
            assert 0 <= item.seq < 2**32 and 0 <= item.sport < 65536


#: The ways a TCP segment may differ from the usual one, over either IP version.
_UNUSUAL_TCP: dict[str, list[Any]] = {
    "options": [b"\x01\x01\x01\x01", b"\x02\x04\x05\xb4" * 3],
    "doff": [0x40, 0x30, 0xF0, 0x51],  # 0x51: the NS flag
    "flags": [ACK, SYN, dpkt.tcp.TH_FIN | ACK, dpkt.tcp.TH_RST, SYN | 0x80],
    "payload": [b"", b"x" * 1400],
    "padding": [b"\x00" * 6],
}
#: ...and an IPv4 packet from the usual one (no options, TCP).
_UNUSUAL: dict[str, list[Any]] = {
    "vihl": [0x46, 0x44, 0x55],
    "total": [0, -1, -20, 1, 8],  # 0: left 0 (offload), else added to the right length
    "proto": [17],
    "frag": [0x0000, 0x2000, 0x0001],
    **_UNUSUAL_TCP,
}
#: ...and an IPv6 packet from the usual one (TCP right after the fixed header).
_UNUSUAL6: dict[str, list[Any]] = {
    "version": [0x40, 0x70],  # the first octet: its version nibble
    "plen": [0, -1, -20, 1, 8],  # 0: left 0 (a jumbogram, offload), else added to the right one
    "nxt": [17, 0, 44],  # UDP, a hop-by-hop header, a fragment header
    **_UNUSUAL_TCP,
}
_CASES = [(4, {})] + [(4, {name: value}) for name, values in _UNUSUAL.items() for value in values]
_CASES += [(6, {})] + [(6, {name: value}) for name, values in _UNUSUAL6.items() for value in values]


def _ip_packet(version: int, case: dict[str, Any]) -> bytes:
    """The IP packet ``case`` describes (with any padding after it)."""
    segment = bytearray(
        tcp(
            40000,
            5672,
            7,
            case.get("flags", PSH_ACK),
            case.get("payload", b"AMQP"),
            case.get("options", b""),
        )
    )
    if "doff" in case:
        segment[12] = case["doff"]
    if version == 4:
        ip = bytearray(
            ipv4(C4, S4, bytes(segment), proto=case.get("proto", 6), frag=case.get("frag", 0x4000))
        )
        ip[0] = case.get("vihl", 0x45)
        if "total" in case:
            total = 0 if case["total"] == 0 else len(ip) + case["total"]
            ip[2:4] = total.to_bytes(2, "big")
    else:
        ip = bytearray(ipv6(C6, S6, bytes(segment), nxt=case.get("nxt", 6)))
        ip[0] = case.get("version", 0x60)
        if "plen" in case:
            plen = 0 if case["plen"] == 0 else len(segment) + case["plen"]
            ip[4:6] = plen.to_bytes(2, "big")
    return bytes(ip + case.get("padding", b""))


def _on_each_link(version: int, ip: bytes) -> list[tuple[int, int, bytes]]:
    """``ip`` as (link type, where the IP header starts, frame) on Ethernet, on Linux's
    "any" device (SLL2), both read by fast paths, and on SLL, whose reader has none."""
    ethertype = 0x0800 if version == 4 else 0x86DD  # by the case, not by its version nibble
    return [
        (
            1,
            14,
            b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01" + struct.pack(">H", ethertype) + ip,
        ),
        (276, 20, struct.pack(">HHIHBB8s", ethertype, 0, 1, 772, 0, 6, b"\x00" * 8) + ip),
        (113, 16, struct.pack(">HHH8sH", 0, 772, 6, b"\x00" * 8, ethertype) + ip),
    ]


def _reads_on_each_link(
    folder: Path, version: int, case: dict[str, Any], cut: int | None
) -> list[list[Any]]:
    read = []
    for link, ip_start, frame in _on_each_link(version, _ip_packet(version, case)):
        data = frame if cut is None else frame[: ip_start + cut]
        path = write(folder / f"{link}.pcap", pcap_bytes([(1, 0, data, len(frame))], link))
        read.append(
            [
                # A problem's detail counts the frame's bytes, which differ by the link header.
                item._replace(capture="") if isinstance(item, Segment) else item.kind
                for item in read_capture(path)
            ]
        )
    return read


@pytest.mark.parametrize(
    ("version", "case"),
    _CASES,
    ids=lambda c: (
        c if isinstance(c, int) else ",".join(f"{k}={v!r:.12}" for k, v in c.items()) or "usual"
    ),
)
@pytest.mark.parametrize("cut", [None, 0, 19, 20, 39, 40, 53, 59, 60, 73, 80])
def test_the_usual_packet_reads_as_on_a_link_without_a_fast_path(
    tmp_path: Path, version: int, case: dict[str, Any], cut: int | None
) -> None:
    """TCP over IPv4 or IPv6 has fast paths on Ethernet and SLL2; a packet, well formed or
    not and cut at any IP byte, reads the same through them as the same IP bytes do on SLL,
    whose reader has none: the same segment, or nothing, or a problem of the same kind."""
    ethernet_read, sll2_read, sll_read = _reads_on_each_link(tmp_path, version, case, cut)
    assert ethernet_read == sll_read
    assert sll2_read == sll_read


@given(
    version=st.sampled_from([4, 6]),
    data=st.data(),
    cut=st.none() | st.integers(0, 100),
)
def test_any_mix_of_unusual_fields_reads_as_on_a_link_without_a_fast_path(
    tmp_path_factory: pytest.TempPathFactory, version: int, data: st.DataObject, cut: int | None
) -> None:
    unusual = _UNUSUAL if version == 4 else _UNUSUAL6
    case = data.draw(
        st.fixed_dictionaries(
            {}, optional={name: st.sampled_from(values) for name, values in unusual.items()}
        )
    )
    ethernet_read, sll2_read, sll_read = _reads_on_each_link(
        tmp_path_factory.mktemp("links"), version, case, cut
    )
    assert ethernet_read == sll_read
    assert sll2_read == sll_read


def test_a_range_read_for_some_ports_leaves_only_the_others_out(tmp_path: Path) -> None:
    frames = [
        ethernet(ipv4(C4, S4, tcp(40000 + i % 3, 5672, i, PSH_ACK, b"x" * i))) for i in range(12)
    ]
    frames.append(sll(ipv4(C4, S4, tcp(40001, 5672, 99, PSH_ACK, b"on another link"))))
    path = write(tmp_path / "c.pcap", pcap_bytes([(1, 0, f, len(f)) for f in frames[:-1]]))
    layout = capture_layout(path)
    assert isinstance(layout, CaptureLayout)
    everything = list(read_range(layout, layout.first_record, layout.size, 0, RangeRead()))
    wanted = frozenset({(40001, 5672), (5672, 40001)})
    some = list(read_range(layout, layout.first_record, layout.size, 0, RangeRead(), wanted))
    assert some == [s for s in everything if isinstance(s, Segment) and s.sport == 40001]
    assert len(some) == 4


# ---------------------------------------------------------------------------- real captures


def _dpkt_segments(
    path: Path,
) -> list[tuple[int, float, str, int, str, int, int, int, bytes]]:
    """The same segments, found with dpkt's own readers and decoders (an independent parse)."""
    out = []
    with path.open("rb") as f:
        reader = dpkt.pcap.UniversalReader(f)
        link = reader.datalink()
        for index, (ts, buf) in enumerate(reader):
            if link == dpkt.pcap.DLT_EN10MB:
                ip = dpkt.ethernet.Ethernet(buf).data
            elif link == dpkt.pcap.DLT_LINUX_SLL2:
                ip = dpkt.sll2.SLL2(buf).data
            else:
                raise AssertionError(link)
            seg = ip.data
            if not isinstance(seg, dpkt.tcp.TCP):
                continue
            if not seg.data and not seg.flags & (SYN | dpkt.tcp.TH_FIN | dpkt.tcp.TH_RST):
                continue
            src = str(ipaddress.ip_address(ip.src))
            dst = str(ipaddress.ip_address(ip.dst))
            ts = float(ts)  # dpkt gives a Decimal for nanosecond files
            out.append((index, ts, src, seg.sport, dst, seg.dport, seg.seq, seg.flags, seg.data))
    return out


REAL = [*sorted((SAMPLES / "captures").glob("*.pcap*")), SAMPLES / "pika-session.pcap"]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_captures_agree_with_dpkt(path: Path) -> None:
    ours = [
        (s.packet, s.ts, s.src, s.sport, s.dst, s.dport, s.seq, s.flags & 0xFF, s.payload)
        for s in segments(str(path))
    ]
    theirs = _dpkt_segments(path)
    assert [t[:1] + t[2:] for t in ours] == [t[:1] + t[2:] for t in theirs]
    assert [t[1] for t in ours] == pytest.approx([t[1] for t in theirs], abs=1e-6)
    assert ours  # the sample is not empty


def test_capture_files_finds_captures_by_magic(tmp_path: Path) -> None:
    eth = ethernet(ipv4(C4, S4, DATA))
    (tmp_path / "b" / "deeper").mkdir(parents=True)
    write(tmp_path / "b" / "deeper" / "rotated.0", pcap_bytes([(1, 0, eth, len(eth))]))
    write(tmp_path / "b" / "z.pcapng", shb() + idb(1))
    write(tmp_path / "b" / "notes.pcap", b"not a capture")
    write(tmp_path / "a.pcap", pcap_bytes([], order=">", nano=True))
    explicit = write(tmp_path / "named.txt", b"kept: named explicitly")
    found = capture_files(
        [str(tmp_path / "b"), str(tmp_path / "a.pcap"), explicit, str(tmp_path / "b")]
    )
    assert found == sorted(
        [
            str(tmp_path / "b" / "deeper" / "rotated.0"),
            str(tmp_path / "b" / "z.pcapng"),
            str(tmp_path / "a.pcap"),
            explicit,
        ]
    )
    assert capture_files([]) == []


def test_segments_and_problems_pickle() -> None:
    seg = Segment("a.pcap", 3, 1.5, C6, 40000, S6, 5672, 2**32 - 1, PSH_ACK | 0x100, b"\x00x")
    problem = CaptureProblem("a.pcap", None, "truncated-file", "cut")
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(seg, protocol)) == seg
        assert pickle.loads(pickle.dumps(problem, protocol)) == problem


def test_gzip_compressed_captures(tmp_path: Path) -> None:
    eth = ethernet(ipv4(C4, S4, DATA))
    plain_pcap = _pcap_with_three_packets()
    plain_ng = shb() + idb(1) + epb(0, 0, eth) + epb(0, 1, eth)
    pcap_gz = write(tmp_path / "a.pcap.gz", gzip.compress(plain_pcap))
    ng_gz = write(tmp_path / "b.gz", gzip.compress(plain_ng))
    assert len(segments(pcap_gz)) == 3 and len(segments(ng_gz)) == 2
    assert capture_files([str(tmp_path)]) == [pcap_gz, ng_gz]

    # Cut short while being written: the packets that came out, then the problems.
    frames = [
        ethernet(ipv4(C4, S4, tcp(1, 5672, i, PSH_ACK, bytes(range(256))))) for i in range(400)
    ]
    compressed = gzip.compress(pcap_bytes([(1, 0, f, len(f)) for f in frames]), compresslevel=1)
    cut = write(tmp_path / "c.pcap.gz", compressed[: len(compressed) // 2])
    items = list(read_capture(cut))
    kinds = [getattr(i, "kind", "segment") for i in items]
    assert kinds[-1] == "truncated-file" and "segment" in kinds
    # Damaged in the middle: whatever decompressed before the damage is read.
    damaged = bytearray(compressed)
    damaged[len(damaged) // 2 : len(damaged) // 2 + 50] = b"\xff" * 50
    items = list(read_capture(write(tmp_path / "d.pcap.gz", bytes(damaged))))
    assert items and all(isinstance(i, Segment | CaptureProblem) for i in items)
    assert items[-1].kind in ("corrupt-file", "truncated-file")  # type: ignore[union-attr]
    # A gzip file that holds something else is not a capture.
    assert [p.kind for p in problems(write(tmp_path / "e.gz", gzip.compress(b"text")))] == [
        "not-a-capture"
    ]


# ---------------------------------------------------------------------------- finding a record


def _find_record_at_every_offset(layout: CaptureLayout, pos: int) -> int:
    """``find_record`` as the plain loop over every offset a record may start at (each one
    in a pcap, each 32-bit aligned one in a pcapng): the reference that its search for
    candidate offsets must equal."""
    if pos <= layout.first_record:
        return layout.first_record
    data: Any = Path(layout.path).read_bytes()
    size = min(layout.size, len(data))
    if layout.kind == "pcapng":
        candidates, plausible = range(pos + -pos % 4, size, 4), _pcapng_record_end
    else:
        candidates, plausible = range(pos, size), _pcap_record_end
    for candidate in candidates:
        if _chain_holds(plausible, layout, data, candidate, size):
            return candidate
    return layout.size


def _check_found_as_at_every_offset(path: Path, made: bytes) -> None:
    """Write ``made`` to ``path``; from every offset, ``find_record`` finds what the plain
    loop does."""
    path.write_bytes(made)
    layout = capture_layout(str(path))
    assert isinstance(layout, CaptureLayout)
    for pos in range(layout.first_record, layout.size + 1):
        assert find_record(layout, pos) == _find_record_at_every_offset(layout, pos), pos


_SECONDS = st.integers(0, 2**32 - 1)


@st.composite
def _pcap_with_garbage(draw: st.DrawFn) -> bytes:
    """A pcap whose records (timestamps near the first's or not, fractions in range or not)
    lie between runs of random bytes, which may look like record headers."""
    order = draw(st.sampled_from(["<", ">"]))
    nano = draw(st.booleans())
    first = draw(st.one_of(_SECONDS, st.integers(1_500_000_000, 1_900_000_000)))  # or today's
    divisor = 10**9 if nano else 10**6
    span = int(_SYNC_SPAN)
    edges = st.sampled_from([-span - 1, -span, span, span + 1])  # just in and out of range
    near = st.one_of(st.integers(-span, span), st.integers(-2 * span, 2 * span), edges).map(
        lambda d: min(max(first + d, 0), 2**32 - 1)
    )
    record = st.just(None)
    body = b""
    # Mostly records, so that runs of them make chains a candidate must be followed by.
    pieces = st.lists(st.one_of(st.binary(max_size=40), record, record, record), max_size=12)
    for piece in draw(pieces):
        if piece is None:  # a record
            sec = draw(st.one_of(near, near, _SECONDS))
            frac = draw(st.integers(0, divisor + 10))
            data = draw(st.binary(max_size=60))
            header = struct.pack(order + "IIII", sec, frac, len(data), len(data))
            body += header + data
        else:
            body += piece
    first_record = struct.pack(order + "IIII", first, 0, 4, 4) + b"\x00" * 4
    snaplen = draw(st.sampled_from([64, 65535, 262144, 2**32 - 1]))
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    head = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, snaplen, 1)
    return head + first_record + body


@settings(max_examples=300)
@given(_pcap_with_garbage())
def test_a_pcap_record_is_found_where_trying_every_offset_finds_it(
    tmp_path_factory: pytest.TempPathFactory, made: bytes
) -> None:
    _check_found_as_at_every_offset(tmp_path_factory.mktemp("find") / "f.pcap", made)


_BLOCK_TYPES = st.sampled_from([6, 3, 2, 4, 5, 0x0A, 0xBAD, 0x40000BAD, 1, 7, 0x0A0D0D0A])


@st.composite
def _pcapng_with_garbage(draw: st.DrawFn) -> bytes:
    """A pcapng whose blocks (known types or not, lengths right or not) lie between runs of
    random bytes, aligned or not, which may look like block headers."""
    order = draw(st.sampled_from(["<", ">"]))
    body = b""
    for piece in draw(st.lists(st.one_of(st.binary(max_size=40), st.none(), st.none()))):
        if piece is not None:
            body += piece
            continue
        block = _block(order, draw(_BLOCK_TYPES), draw(st.binary(max_size=60)))
        if draw(st.integers(0, 4)) == 0:  # a trailing length that differs
            block = block[:-4] + struct.pack(order + "I", draw(st.integers(0, 200)))
        body += block
    return shb(order) + idb(1, order) + epb(0, 0, b"\x00" * 20, order) + body


@settings(max_examples=300)
@given(_pcapng_with_garbage())
def test_a_pcapng_block_is_found_where_trying_every_aligned_offset_finds_it(
    tmp_path_factory: pytest.TempPathFactory, made: bytes
) -> None:
    _check_found_as_at_every_offset(tmp_path_factory.mktemp("find") / "f.pcapng", made)


def test_a_pcapng_block_is_found_in_a_real_capture_as_at_every_aligned_offset() -> None:
    layout = capture_layout(str(SAMPLES / "captures" / "py-amqp.pcapng"))
    assert isinstance(layout, CaptureLayout)
    for pos in range(layout.first_record, layout.size, 7):
        assert find_record(layout, pos) == _find_record_at_every_offset(layout, pos)


def test_a_pcap_record_is_found_in_real_captures_as_at_every_offset() -> None:
    for path in sorted([*SAMPLES.glob("*.pcap"), *(SAMPLES / "captures").glob("*.pcap")]):
        layout = capture_layout(str(path))
        assert isinstance(layout, CaptureLayout)
        for pos in range(layout.first_record, layout.size, 7):
            assert find_record(layout, pos) == _find_record_at_every_offset(layout, pos)
