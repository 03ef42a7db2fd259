"""Read TCP segments out of pcap and pcapng capture files.

``read_capture(path)`` yields one :class:`Segment` per TCP packet that carries payload or a
SYN, FIN or RST flag, and a :class:`CaptureProblem` for everything it cannot read. It never
raises for bad content: a truncated or corrupt file, an unsupported link type or a malformed
packet becomes a problem, and reading goes on wherever the file's framing still holds.

The file formats are parsed here with ``struct`` rather than with dpkt's readers: dpkt's
pcapng reader takes the link type and timestamp resolution of the first interface for every
packet (captures from ``tcpdump -i any`` or dumpcap on several interfaces have more), and its
readers hand back short records of a truncated file without saying so. Link, IP and TCP
headers are parsed by offset too: building a dpkt object per layer costs several times more
than the few ``unpack_from`` calls a segment needs; the usual packets, TCP over IPv4 or
IPv6 on Ethernet (what ``tcpdump -i eth0`` or ``-i lo`` records) or on Linux's "any" device
(SLL2, ``tcpdump -i any``), take one, and anything those fast paths do not vouch for is read
the general way, with every check. The file is memory-mapped, so reading
costs no more memory than the page cache (a compressed file is first decompressed into an
anonymous temporary file, which takes that much disk space while it is read: in the system's
temporary folder, or in the capture's own folder where that one is held in memory, as a
tmpfs ``/tmp`` is).

Supported: classic pcap (micro- and nanosecond, either byte order) and pcapng (any number of
sections and interfaces, each with its own link type, ``if_tsresol`` and ``if_tsoffset``;
enhanced, simple and obsolete packet blocks), plain or compressed with gzip, xz, bzip2, zstd or
lz4 (see :mod:`amqp_codec.capture.compressed`). Link types: Ethernet
(1, with any number of 802.1Q/802.1ad VLAN tags), Linux cooked SLL (113) and SLL2 (276), raw
IP (101, 12, 14), BSD null/loopback (0) and OpenBSD LOOP (108). IPv4 and IPv6 (extension headers skipped). Packets
that are not TCP are skipped silently.

Problem kinds (``CaptureProblem.kind``), stable strings:

``unreadable``
    the file cannot be opened, mapped or decompressed to a temporary file (OS error), or it
    is compressed with zstd or lz4 and the package that reads that is not installed (the
    detail names it).
``not-a-capture``
    no pcap or pcapng magic at the start (of the decompressed bytes, if compressed).
``truncated-file``
    the file (or its compressed stream) ends inside a header, record or block; reading
    stops there.
``corrupt-file``
    a record or block length that cannot be right, or a damaged compressed stream; reading
    stops there, since the framing of whatever follows is unknown.
``unsupported-link-type``
    a pcap file or pcapng interface whose link type is not one of the above; its packets are
    skipped.
``malformed-packet``
    a header that contradicts itself or the captured length; the packet is skipped.
``truncated-packet``
    the capture kept fewer bytes than the packet had (snap length), so the TCP payload is cut
    short. The segment is still yielded with the bytes that were kept; reassembly then sees a
    gap where the rest was.
``ip-fragment``
    a fragment of an IPv4 or IPv6 packet; fragments are not reassembled, the packet is skipped.
``too-large``
    a compressed stream that decompresses past
    :data:`~amqp_codec.capture.compressed.MAX_INFLATED_SIZE` bytes or to more than
    :data:`~amqp_codec.capture.compressed.MAX_INFLATE_RATIO` times its compressed size;
    what came out up to there is read.
``too-many-problems``
    the last item of a file with more than :data:`MAX_PROBLEMS` packet problems: the first
    ones are yielded, this one counts the rest (by kind) instead of listing them.

Timestamps are ``float`` seconds since the epoch: exact to the microsecond for current dates,
so nanosecond captures are rounded to about 0.2 microseconds.
"""

from __future__ import annotations

import enum
import functools
import ipaddress
import math
import mmap
import os
import re
import struct
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, BinaryIO, NamedTuple, TypeAlias

from .compressed import (
    Compression,
    CorruptStream,
    compression_of,
    decompress,
    first_bytes,
    scratch_folder,
)

#: (source port, destination port) pairs: the segments a reader wants (see :func:`read_range`).
PortPairs: TypeAlias = "frozenset[tuple[int, int]]"

__all__ = [
    "CaptureLayout",
    "CaptureProblem",
    "PortPairs",
    "RangeRead",
    "Segment",
    "capture_files",
    "capture_layout",
    "find_record",
    "is_capture_file",
    "read_capture",
    "read_range",
]


class Segment(NamedTuple):
    """One TCP segment that carries payload or a SYN, FIN or RST flag.

    A named tuple: built for every packet of every capture, twice in a run of the analysis,
    where a frozen dataclass cost four times as much to make.
    """

    capture: str
    """Capture file path, exactly as given to :func:`read_capture`."""
    packet: int
    """0-based index of the packet in that file (counting every packet, TCP or not)."""
    ts: float
    """Capture timestamp, seconds since the epoch."""
    src: str
    """Source address, IPv4 dotted quad or compressed IPv6 text."""
    sport: int
    """Source TCP port."""
    dst: str
    """Destination address, same format as ``src``."""
    dport: int
    """Destination TCP port."""
    seq: int
    """TCP sequence number as on the wire (unsigned 32-bit)."""
    flags: int
    """TCP flag bits: ``dpkt.tcp.TH_FIN`` (0x01), ``TH_SYN`` (0x02), ``TH_RST`` (0x04), ``TH_PUSH``,
    ``TH_ACK``, ``TH_URG``, ``TH_ECE``, ``TH_CWR`` (0x80), and NS as 0x100."""
    payload: bytes
    """TCP payload as captured (shorter than sent if the capture cut the packet)."""


#: A :class:`Segment` from the tuple of its fields, made without the Python-level ``__new__``
#: that NamedTuple generates: the reader makes one per packet.
_segment: Callable[[tuple[Any, ...]], Segment] = functools.partial(tuple.__new__, Segment)


@dataclass(frozen=True, slots=True)
class CaptureProblem:
    """Something in a capture file that could not be read; see the module doc for ``kind``."""

    capture: str
    """Capture file path, exactly as given to :func:`read_capture`."""
    packet: int | None
    """0-based packet index the problem is about, or None for the file as a whole."""
    kind: str
    """One of the stable kinds listed in the module docstring."""
    detail: str
    """Human-readable explanation, with byte offsets where they help."""


# TCP flag bits, as dpkt.tcp spells them (kept local: the codec package must import without dpkt).
TH_FIN = 0x01
TH_SYN = 0x02
TH_RST = 0x04
_INTERESTING = TH_FIN | TH_SYN | TH_RST

_PCAP_MAGICS = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000_000),  # little-endian, microseconds
    b"\xa1\xb2\xc3\xd4": (">", 1_000_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1_000_000_000),  # little-endian, nanoseconds
    b"\xa1\xb2\x3c\x4d": (">", 1_000_000_000),
}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"

# pcapng block types
_SHB = 0x0A0D0D0A
_IDB = 1
_PB = 2  # obsolete packet block
_SPB = 3
_EPB = 6
_BYTE_ORDER_MAGIC = 0x1A2B3C4D

# Link types
_LT_NULL = 0
_LT_ETHERNET = 1
_LT_RAW_12 = 12
_LT_RAW_14 = 14
_LT_RAW = 101
_LT_LOOP = 108
_LT_SLL = 113
_LT_SLL2 = 276
_SUPPORTED_LINKS = frozenset(
    {_LT_NULL, _LT_ETHERNET, _LT_RAW_12, _LT_RAW_14, _LT_RAW, _LT_LOOP, _LT_SLL, _LT_SLL2}
)

_ETH_IPV4 = 0x0800
_ETH_IPV6 = 0x86DD
_ETH_VLANS = frozenset({0x8100, 0x88A8, 0x9100})

# A record longer than this is taken as corruption rather than a packet (Wireshark uses the same
# idea: no link layer captures more than 256 KiB per packet).
_MAX_RECORD = 256 * 1024
# pcapng blocks other than packet blocks (name resolution, statistics, ...) may be larger.
_MAX_BLOCK = 16 * 1024 * 1024

# The fixed parts of the IPv4 header (version/IHL, total length, flags/fragment offset,
# protocol, addresses) and of the TCP header (ports, sequence number, data offset, flags).
_IPV4 = struct.Struct(">BxHxxHxBxx4s4s").unpack_from
_TCP = struct.Struct(">HHI4xBB").unpack_from
#: Ethernet, an IPv4 header of 20 bytes and TCP's fixed fields, as _IPV4 and _TCP read them.
_ETHERNET_IPV4_TCP = struct.Struct(">12xHBxHxxHxBxx4s4sHHI4xBB").unpack_from
#: An IPv4 header of 20 bytes and TCP's fixed fields, read from the IP header on.
_IPV4_TCP = struct.Struct(">BxHxxHxBxx4s4sHHI4xBB").unpack_from
#: IPv6's fixed header (version word, payload length, next header, addresses) and TCP's fixed
#: fields right after it.
_IPV6_TCP = struct.Struct(">IHBx16s16sHHI4xBB").unpack_from
_IPV6_EXTENSIONS = frozenset({0, 43, 60, 51, 135, 139, 140})  # hop-by-hop, routing, dest, AH, ...
_IPV6_FRAGMENT = 44
_IPV6_NO_NEXT = 59


class _General(enum.Enum):
    GENERAL = enum.auto()


#: What a fast path returns for a packet it does not vouch for: read the general way.
_GENERAL = _General.GENERAL

_ip4_cache: dict[bytes, str] = {}
_ip6_cache: dict[bytes, str] = {}


def _ip4(raw: bytes) -> str:
    text = _ip4_cache.get(raw)
    if text is None:
        text = f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}"
        if len(_ip4_cache) < 65536:  # bounded: a scan across the whole address space stays cheap
            _ip4_cache[raw] = text
    return text


def _ip6(raw: bytes) -> str:
    text = _ip6_cache.get(raw)
    if text is None:
        text = str(ipaddress.IPv6Address(raw))
        if len(_ip6_cache) < 65536:
            _ip6_cache[raw] = text
    return text


class _Packets:
    """Turns one captured frame into a Segment, a CaptureProblem or None (not TCP)."""

    __slots__ = ("capture", "cut", "only")

    def __init__(self, capture: str, only: PortPairs | None = None) -> None:
        self.capture = capture
        self.cut = False  # set when the last segment's payload ends before its IP length says
        # Segments between other ports are skipped before their addresses are named and their
        # payload is copied: a reader that wants a few streams of a busy capture pays little
        # for the others.
        self.only = only

    def parse(
        self,
        buf: bytes | mmap.mmap,
        base: int,
        n: int,
        link: int,
        index: int,
        ts: float,
        wire_len: int,
    ) -> Segment | CaptureProblem | None:
        """Parse ``buf[base:n]``, the captured bytes of packet ``index``, of link type ``link``.

        Offsets are into ``buf`` (the whole mapped file): no copy of the frame is made, only of
        the payload.
        """
        caplen = n - base
        if link == _LT_ETHERNET and caplen >= 54:
            # The usual packet (Ethernet, IPv4 without options, TCP) in one unpack; anything
            # else it does not vouch for goes the general way below. Written out here rather
            # than through _ipv4_tcp, which the other fast paths share: the commonest packet
            # of all took a fifth longer through its two calls (1.5 us against 1.2-1.3 us).
            (
                ethertype,
                vihl,
                total,
                frag,
                proto,
                src_raw,
                dst_raw,
                sport,
                dport,
                seq,
                doff,
                flags,
            ) = _ETHERNET_IPV4_TCP(buf, base)
            if (
                ethertype == _ETH_IPV4
                and vihl == 0x45
                and proto == 6
                and not frag & 0x3FFF
                and total >= 40
                and doff >= 0x50
            ):
                only = self.only
                if only is not None and (sport, dport) not in only:
                    return None
                start = base + 34 + (doff >> 4) * 4
                end = base + 14 + total
                if start <= end <= n and (start < end or flags & _INTERESTING):
                    return _segment(
                        (
                            self.capture,
                            index,
                            ts,
                            _ip4_cache.get(src_raw) or _ip4(src_raw),
                            sport,
                            _ip4_cache.get(dst_raw) or _ip4(dst_raw),
                            dport,
                            seq,
                            flags | (doff & 1) << 8,
                            buf[start:end],
                        )
                    )
                if start <= end <= n:
                    return None  # a bare ACK or window update
            elif ethertype == _ETH_IPV6 and caplen >= 74:  # a loopback capture over ::1
                fast = self._ipv6_tcp(buf, base + 14, n, index, ts)
                if fast is not _GENERAL:
                    return fast
        elif link == _LT_SLL2 and caplen >= 60:  # tcpdump -i any
            ethertype = (buf[base] << 8) | buf[base + 1]
            if ethertype == _ETH_IPV4:
                fast = self._ipv4_tcp(buf, base + 20, n, index, ts)
                if fast is not _GENERAL:
                    return fast
            elif ethertype == _ETH_IPV6 and caplen >= 80:
                fast = self._ipv6_tcp(buf, base + 20, n, index, ts)
                if fast is not _GENERAL:
                    return fast
        # Find the network layer: offset and, where the link layer says it, the ethertype.
        if link == _LT_ETHERNET:
            if caplen < 14:
                return self._bad(index, f"Ethernet header cut short ({caplen} bytes)")
            ethertype = (buf[base + 12] << 8) | buf[base + 13]
            off = base + 14
            while ethertype in _ETH_VLANS:
                if n < off + 4:
                    return self._bad(index, "VLAN tag cut short")
                ethertype = (buf[off + 2] << 8) | buf[off + 3]
                off += 4
        elif link == _LT_SLL:
            if caplen < 16:
                return self._bad(index, f"SLL header cut short ({caplen} bytes)")
            ethertype = (buf[base + 14] << 8) | buf[base + 15]
            off = base + 16
        elif link == _LT_SLL2:
            if caplen < 20:
                return self._bad(index, f"SLL2 header cut short ({caplen} bytes)")
            ethertype = (buf[base] << 8) | buf[base + 1]
            off = base + 20
        elif link in (_LT_NULL, _LT_LOOP):
            # The 4-byte address family is in the capturing host's byte order (NULL) or network
            # order (LOOP), and AF_INET6 differs between systems: the IP version nibble is surer.
            off = base + 4
            ethertype = 0
        else:  # raw IP
            off = base
            ethertype = 0
        if ethertype == 0:
            if n <= off:
                return self._bad(index, "no IP header")
            version = buf[off] >> 4
            if version == 4:
                ethertype = _ETH_IPV4
            elif version == 6:
                ethertype = _ETH_IPV6
            elif off == base:  # raw IP: nothing else may be there
                return self._bad(index, f"IP version {version}")
            else:
                return None  # null/loopback carrying another protocol family
        if ethertype == _ETH_IPV4:
            if n < off + 20:
                return self._short(index, caplen, wire_len, "IPv4 header")
            vihl, total, frag, proto, src_raw, dst_raw = _IPV4(buf, off)
            ihl = (vihl & 0x0F) * 4
            if vihl >> 4 != 4 or ihl < 20:
                return self._bad(index, f"IPv4 version/IHL byte 0x{vihl:02x}")
            if proto != 6:
                return None
            if total < ihl:
                if total == 0 and n > off + ihl:  # TCP segmentation offload: length left 0
                    total = n - off
                else:
                    return self._bad(index, f"IPv4 total length {total} < header length {ihl}")
            if frag & 0x3FFF:  # MF flag or a fragment offset
                return CaptureProblem(
                    self.capture, index, "ip-fragment", "IPv4 fragment (not reassembled)"
                )
            src = dst = ""  # named once the ports are known to be wanted
            end = off + total  # drops Ethernet padding and trailers
            off += ihl
        elif ethertype == _ETH_IPV6:
            if n < off + 40:
                return self._short(index, caplen, wire_len, "IPv6 header")
            if buf[off] >> 4 != 6:
                return self._bad(index, f"IPv6 version nibble {buf[off] >> 4}")
            plen = (buf[off + 4] << 8) | buf[off + 5]
            nxt = buf[off + 6]
            src = _ip6(buf[off + 8 : off + 24])
            dst = _ip6(buf[off + 24 : off + 40])
            end = off + 40 + plen if plen else n  # 0: jumbogram or offloaded length
            off += 40
            while nxt != 6:
                if nxt == _IPV6_FRAGMENT:
                    return CaptureProblem(
                        self.capture, index, "ip-fragment", "IPv6 fragment (not reassembled)"
                    )
                if nxt not in _IPV6_EXTENSIONS or nxt == _IPV6_NO_NEXT:
                    return None
                if n < off + 8:
                    return self._short(index, caplen, wire_len, "IPv6 extension header")
                ext_len = (buf[off + 1] + 2) * 4 if nxt == 51 else (buf[off + 1] + 1) * 8
                nxt = buf[off]
                off += ext_len
        else:
            return None  # ARP, LLDP, ...
        # TCP
        if n < off + 20:
            return self._short(index, caplen, wire_len, "TCP header")
        sport, dport, seq, doff, flags = _TCP(buf, off)
        if self.only is not None and (sport, dport) not in self.only:
            return None
        if not src:
            src = _ip4_cache.get(src_raw) or _ip4(src_raw)
            dst = _ip4_cache.get(dst_raw) or _ip4(dst_raw)
        flags |= (doff & 1) << 8  # NS
        doff = (doff >> 4) * 4
        if doff < 20:
            return self._bad(index, f"TCP data offset {doff} < 20")
        if end < off + doff:
            return self._bad(index, "IP length ends inside the TCP header")
        start = off + doff
        cut = end > n
        if start >= end and not flags & _INTERESTING:
            return None  # a bare ACK or window update
        if start > n:
            return self._short(index, caplen, wire_len, "TCP options")
        if cut:
            self.cut = True
            payload = buf[start:n]
        else:
            payload = buf[start:end]
        return Segment(
            self.capture,
            index,
            ts,
            src,
            sport,
            dst,
            dport,
            seq,
            flags,
            payload,
        )

    def _ipv4_tcp(
        self, buf: bytes | mmap.mmap, ip: int, n: int, index: int, ts: float
    ) -> Segment | _General | None:
        """The usual IPv4 packet (no options, TCP, not cut) at ``buf[ip:n]`` in one unpack, as
        the Ethernet fast path in :meth:`parse`; :data:`_GENERAL` for anything else."""
        (vihl, total, frag, proto, src, dst, sport, dport, seq, doff, flags) = _IPV4_TCP(buf, ip)
        if vihl != 0x45 or proto != 6 or frag & 0x3FFF or total < 40 or doff < 0x50:
            return _GENERAL
        start = ip + 20 + (doff >> 4) * 4
        return self._tcp(
            buf, n, index, ts, _ip4, src, dst, sport, dport, seq, doff, flags, start, ip + total
        )

    def _ipv6_tcp(
        self, buf: bytes | mmap.mmap, ip: int, n: int, index: int, ts: float
    ) -> Segment | _General | None:
        """The usual IPv6 packet (TCP right after the fixed header, a payload length, not
        cut) at ``buf[ip:n]`` in one unpack; :data:`_GENERAL` for anything else (extension
        headers, a jumbogram, an offloaded length of 0, a cut or malformed packet)."""
        (word, plen, nxt, src, dst, sport, dport, seq, doff, flags) = _IPV6_TCP(buf, ip)
        if word >> 28 != 6 or nxt != 6 or not plen or doff < 0x50:
            return _GENERAL
        start = ip + 40 + (doff >> 4) * 4
        return self._tcp(
            buf, n, index, ts, _ip6, src, dst, sport, dport, seq, doff, flags, start, ip + 40 + plen
        )

    def _tcp(
        self,
        buf: bytes | mmap.mmap,
        n: int,
        index: int,
        ts: float,
        name: Callable[[bytes], str],
        src: bytes,
        dst: bytes,
        sport: int,
        dport: int,
        seq: int,
        doff: int,
        flags: int,
        start: int,
        end: int,
    ) -> Segment | _General | None:
        """A fast path's segment, its payload ``buf[start:end]``, if the packet's lengths are
        sound and it ends within the frame (:data:`_GENERAL` if not); None for a bare ACK or
        a segment between ports not wanted. ``name`` names an address."""
        only = self.only
        if only is not None and (sport, dport) not in only:
            return None
        if not start <= end <= n:
            return _GENERAL
        if start == end and not flags & _INTERESTING:
            return None  # a bare ACK or window update
        return _segment(
            (
                self.capture,
                index,
                ts,
                name(src),
                sport,
                name(dst),
                dport,
                seq,
                flags | (doff & 1) << 8,
                buf[start:end],
            )
        )

    def _bad(self, index: int, detail: str) -> CaptureProblem:
        return CaptureProblem(self.capture, index, "malformed-packet", detail)

    def _short(self, index: int, n: int, wire_len: int, what: str) -> CaptureProblem:
        if wire_len > n:
            return CaptureProblem(
                self.capture,
                index,
                "truncated-packet",
                f"{what} cut off: {n} of {wire_len} bytes captured",
            )
        return self._bad(index, f"{what} cut short at {n} bytes")


def _cut_problem(parser: _Packets, index: int, caplen: int, wire_len: int) -> CaptureProblem:
    """The problem to report with a segment whose payload ends before its IP length says."""
    parser.cut = False
    if wire_len > caplen:
        return CaptureProblem(
            parser.capture,
            index,
            "truncated-packet",
            f"payload cut by the capture: {caplen} of {wire_len} bytes kept",
        )
    return CaptureProblem(
        parser.capture,
        index,
        "malformed-packet",
        f"IP length runs past the {caplen}-byte frame (payload kept up to the frame's end)",
    )


#: Problems yielded per capture file; the rest are counted in one ``too-many-problems`` item.
MAX_PROBLEMS = 1000


def read_capture(path: str) -> Iterator[Segment | CaptureProblem]:
    """Yield the TCP segments and the problems of one pcap or pcapng file, in file order.

    The format is detected from the magic number, not the file name; compressed captures
    (``tcpdump -z xz`` rotation, dumpcap's gzip or lz4) are decompressed first, into an
    anonymous temporary file.
    Never raises for bad content (see the module docstring for the problem kinds); it yields a
    problem and either goes on with the next packet or, when the file's framing is lost, stops.
    At most :data:`MAX_PROBLEMS` packet problems are yielded per file, then one that counts the
    rest (problems about the file as a whole are few and always yielded).
    """
    problems = 0
    over: dict[str, int] = {}
    for item in _read_capture(path):
        if isinstance(item, CaptureProblem) and item.packet is not None:
            problems += 1
            if problems > MAX_PROBLEMS:
                over[item.kind] = over.get(item.kind, 0) + 1
                continue
        yield item
    if over:
        counts = ", ".join(f"{n} {kind}" for kind, n in sorted(over.items()))
        yield CaptureProblem(
            path,
            None,
            "too-many-problems",
            f"{problems - MAX_PROBLEMS} more packet problems after the first {MAX_PROBLEMS}: "
            + counts,
        )


def _read_capture(path: str) -> Iterator[Segment | CaptureProblem]:
    try:
        with open(path, "rb") as f:
            compression = compression_of(f.read(8))
            if compression is not None:
                yield from _read_compressed(path, f, compression)
                return
            yield from _read_mapped(path, f)
    except OSError as exc:
        yield CaptureProblem(path, None, "unreadable", f"{type(exc).__name__}: {exc}")


def _read_mapped(path: str, f: BinaryIO) -> Iterator[Segment | CaptureProblem]:
    """Read the capture in open file ``f`` through a memory map."""
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        yield CaptureProblem(path, None, "not-a-capture", "empty file")
        return
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        magic = mm[:4]
        if magic in _PCAP_MAGICS:
            yield from _read_pcap(path, mm, size)
        elif magic == _PCAPNG_MAGIC:
            yield from _read_pcapng(path, mm, size)
        else:
            yield CaptureProblem(
                path, None, "not-a-capture", f"no pcap or pcapng magic (starts {magic.hex()})"
            )


def _scratch_file(path: str) -> BinaryIO:
    """An anonymous temporary file for ``path``'s decompressed bytes: in the system's
    temporary folder, or beside ``path`` where that is held in memory (see
    :func:`~.compressed.scratch_folder`; nothing shows there, the file has no name); in the
    temporary folder after all where ``path``'s folder cannot be written."""
    folder = scratch_folder(os.path.dirname(os.path.abspath(path)))
    try:
        return tempfile.TemporaryFile(dir=folder)
    except OSError:
        return tempfile.TemporaryFile()


def _read_compressed(
    path: str, f: BinaryIO, compression: Compression
) -> Iterator[Segment | CaptureProblem]:
    """Decompress into a temporary file, read that; a damaged stream keeps what came out."""
    missing = compression.missing()
    if missing is not None:
        yield CaptureProblem(path, None, "unreadable", missing)
        return
    f.seek(0)
    with _scratch_file(path) as plain:
        damage = decompress(compression, f, plain)
        plain.flush()
        problem = None if damage is None else CaptureProblem(path, None, *damage)
        if problem is not None and not plain.tell():
            yield problem  # nothing came out: the file is a corrupt stream, not an empty capture
            return
        yield from _read_mapped(path, plain)
    if problem is not None:  # after the reader's own problem, if any, with its packet index
        yield problem


def _read_pcap(path: str, mm: mmap.mmap, size: int) -> Iterator[Segment | CaptureProblem]:
    layout = _pcap_layout(path, mm, size)
    if isinstance(layout, CaptureProblem):
        yield layout
        return
    yield from _pcap_records(layout, mm, layout.first_record, size, 0, RangeRead())


def _pcap_layout(path: str, mm: mmap.mmap, size: int) -> CaptureLayout | CaptureProblem:
    order, divisor = _PCAP_MAGICS[mm[:4]]
    if size < 24:
        return CaptureProblem(path, None, "truncated-file", f"pcap header cut at {size} bytes")
    snaplen, network = struct.unpack_from(order + "II", mm, 16)
    link = network & 0x03FFFFFF  # the top bits may carry FCS information
    if link not in _SUPPORTED_LINKS:
        return CaptureProblem(
            path, None, "unsupported-link-type", f"link type {link} (packets skipped)"
        )
    first_ts = None
    if size >= 40:
        sec, frac = struct.unpack_from(order + "II", mm, 24)
        first_ts = sec + frac / divisor
    return CaptureLayout(
        path, size, "pcap", 24, order, divisor, link, max(snaplen, _MAX_RECORD), (), first_ts
    )


def _pcap_records(
    layout: CaptureLayout,
    mm: mmap.mmap,
    pos: int,
    end: int,
    index: int,
    out: RangeRead,
    only: PortPairs | None = None,
) -> Iterator[Segment | CaptureProblem]:
    """The packets of the records that start in ``[pos, end)``; ``out`` learns where the next
    record starts and how many were read."""
    path, size, link, divisor = layout.path, layout.size, layout.link, layout.divisor
    max_caplen = layout.max_caplen
    parser = _Packets(path, only)
    parse = parser.parse
    record = struct.Struct(layout.order + "IIII").unpack_from
    first = index
    try:
        while pos < end:
            if pos + 16 > size:
                yield CaptureProblem(
                    path, index, "truncated-file", f"record header cut at byte {pos} of {size}"
                )
                pos = size
                return
            sec, frac, caplen, wire_len = record(mm, pos)
            pos += 16
            if caplen > max_caplen:
                yield CaptureProblem(
                    path,
                    index,
                    "corrupt-file",
                    f"record at byte {pos - 16} claims {caplen} bytes "
                    f"(snap length {layout.max_caplen})",
                )
                pos = size
                return
            if pos + caplen > size:
                yield CaptureProblem(
                    path,
                    index,
                    "truncated-file",
                    f"packet data cut: {size - pos} of {caplen} bytes at byte {pos}",
                )
                pos = size
                return
            ts = sec + frac / divisor  # a division rounds once; a multiplication by 1e-6 twice
            item = parse(mm, pos, pos + caplen, link, index, ts, wire_len)
            pos += caplen
            if item is not None:
                yield item
                if parser.cut:
                    yield _cut_problem(parser, index, caplen, wire_len)
            index += 1
    finally:
        out.stop = pos
        out.records = index - first


class _Interface:
    __slots__ = ("divisor", "link", "offset", "supported")

    def __init__(self, link: int, divisor: int, offset: int) -> None:
        self.link = link
        self.divisor = divisor  # timestamp units per second
        self.offset = offset  # seconds added to every timestamp
        self.supported = link in _SUPPORTED_LINKS


def _parse_idb(body: bytes, order: str) -> _Interface:
    """Link type, timestamp resolution and offset of an interface description block body."""
    link = struct.unpack_from(order + "H", body, 0)[0]
    divisor = 1_000_000
    ts_offset = 0
    pos = 8
    while pos + 4 <= len(body):
        code, length = struct.unpack_from(order + "HH", body, pos)
        pos += 4
        if code == 0:  # opt_endofopt
            break
        value = body[pos : pos + length]  # shorter than length if the block is cut
        if code == 9 and len(value) >= 1:  # if_tsresol
            r = value[0]
            divisor = 2 ** (r & 0x7F) if r & 0x80 else 10 ** (r & 0x7F)
        elif code == 14 and len(value) >= 8:  # if_tsoffset, seconds
            ts_offset = struct.unpack_from(order + "q", value, 0)[0]
        pos += (length + 3) & ~3
    return _Interface(link, divisor, ts_offset)


def _read_pcapng(path: str, mm: mmap.mmap, size: int) -> Iterator[Segment | CaptureProblem]:
    yield from _pcapng_blocks(path, mm, size, 0, size, 0, "<", [], RangeRead(), start_of_file=True)


def _pcapng_layout(path: str, mm: mmap.mmap, size: int) -> CaptureLayout | None:
    """The layout of a pcapng file whose leading section and interface blocks are sound, from
    its first packet block on; None when its start is damaged (it is then read whole)."""
    order = "<"
    interfaces: list[_Interface] = []
    pos = 0
    while pos + 12 <= size:
        if mm[pos : pos + 4] == _PCAPNG_MAGIC:
            bom = mm[pos + 8 : pos + 12]
            if bom not in (b"\x4d\x3c\x2b\x1a", b"\x1a\x2b\x3c\x4d"):
                return None
            order = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
            if pos:  # a second section: its interfaces replace the first's
                return None
        block_type, block_len = struct.unpack_from(order + "II", mm, pos)
        if block_len < 12 or block_len % 4 or pos + block_len > size:
            return None
        if block_type in (_EPB, _PB, _SPB):
            first_ts = None
            if block_type == _EPB and interfaces and block_len >= 32:
                iface_id, high, low = struct.unpack_from(order + "III", mm, pos + 8)
                if iface_id < len(interfaces):
                    iface = interfaces[iface_id]
                    first_ts = ((high << 32) | low) / iface.divisor + iface.offset
            return CaptureLayout(
                path, size, "pcapng", pos, order, 0, 0, 0, tuple(interfaces), first_ts
            )
        if block_type == _IDB:
            if block_len < 20:
                return None
            interfaces.append(_parse_idb(mm[pos + 8 : pos + block_len - 4], order))
        pos += block_len
    return CaptureLayout(path, size, "pcapng", pos, order, 0, 0, 0, tuple(interfaces), None)


def _pcapng_blocks(
    path: str,
    mm: mmap.mmap,
    size: int,
    pos: int,
    end: int,
    index: int,
    order: str,
    interfaces: list[_Interface],
    out: RangeRead,
    *,
    start_of_file: bool = False,
    only: PortPairs | None = None,
) -> Iterator[Segment | CaptureProblem]:
    """The packets of the blocks that start in ``[pos, end)``, read with byte ``order`` and
    the ``interfaces`` described before ``pos``; ``out`` learns where the next block starts,
    how many packets were read, and whether a section or interface block was met (a reader
    starting later in the file would not know of it)."""
    parser = _Packets(path, only)
    parse = parser.parse
    head = struct.Struct(order + "II").unpack_from
    u32 = struct.Struct(order + "I").unpack_from
    epb = struct.Struct(order + "IIIII").unpack_from
    whole_epb = struct.Struct(order + "IIIIIII").unpack_from
    first = index
    last_ts = 0.0
    try:
        while pos < end:
            if pos + 28 <= size:
                # The usual block, an enhanced packet block of a known interface whole in the
                # file, in two unpacks; anything it does not vouch for goes the general way
                # below, which checks the same things in this order and names what is wrong.
                block_type, block_len, iface_id, high, low, caplen, wire_len = whole_epb(mm, pos)
                if (
                    block_type == _EPB
                    and 32 <= block_len <= _MAX_BLOCK
                    and not block_len % 4
                    and pos + block_len <= size
                    and caplen <= block_len - 32
                    and iface_id < len(interfaces)
                    and u32(mm, pos + block_len - 4)[0] == block_len
                ):
                    iface = interfaces[iface_id]
                    last_ts = ((high << 32) | low) / iface.divisor + iface.offset
                    if iface.supported:
                        item = parse(
                            mm, pos + 28, pos + 28 + caplen, iface.link, index, last_ts, wire_len
                        )
                        if item is not None:
                            yield item
                            if parser.cut:
                                yield _cut_problem(parser, index, caplen, wire_len)
                    pos += block_len
                    index += 1
                    continue
            if pos + 12 > size:
                yield CaptureProblem(
                    path, None, "truncated-file", f"block header cut at byte {pos} of {size}"
                )
                pos = size
                return
            if mm[pos : pos + 4] == _PCAPNG_MAGIC:  # a section header: byte order may change
                bom = mm[pos + 8 : pos + 12]
                if bom == b"\x4d\x3c\x2b\x1a":
                    order = "<"
                elif bom == b"\x1a\x2b\x3c\x4d":
                    order = ">"
                else:
                    yield CaptureProblem(
                        path,
                        None,
                        "corrupt-file",
                        f"section header at byte {pos}: bad byte-order magic",
                    )
                    pos = size
                    return
                head = struct.Struct(order + "II").unpack_from
                u32 = struct.Struct(order + "I").unpack_from
                epb = struct.Struct(order + "IIIII").unpack_from
                whole_epb = struct.Struct(order + "IIIIIII").unpack_from
                interfaces = []
                if not start_of_file:
                    out.layout_changed = True
            block_type, block_len = head(mm, pos)
            if block_len < 12 or block_len % 4 or block_len > _MAX_BLOCK:
                yield CaptureProblem(
                    path, None, "corrupt-file", f"block at byte {pos} has length {block_len}"
                )
                pos = size
                return
            if pos + block_len > size:
                yield CaptureProblem(
                    path,
                    None,
                    "truncated-file",
                    f"block at byte {pos} needs {block_len} bytes, {size - pos} left",
                )
                pos = size
                return
            if u32(mm, pos + block_len - 4)[0] != block_len:
                yield CaptureProblem(
                    path, None, "corrupt-file", f"block at byte {pos}: trailing length differs"
                )
                pos = size
                return
            body_start = pos + 8
            body_end = pos + block_len - 4
            pos += block_len
            if block_type in (_EPB, _PB):
                if body_end - body_start < 20:
                    yield CaptureProblem(path, index, "malformed-packet", "packet block too short")
                    index += 1
                    continue
                iface_id, high, low, caplen, wire_len = epb(mm, body_start)
                if block_type == _PB:  # 16-bit interface id, then a 16-bit drops count
                    iface_id = struct.unpack_from(order + "H", mm, body_start)[0]
                data = body_start + 20
                if iface_id >= len(interfaces):
                    yield CaptureProblem(
                        path, index, "malformed-packet", f"unknown interface id {iface_id}"
                    )
                    index += 1
                    continue
                if data + caplen > body_end:
                    yield CaptureProblem(
                        path, index, "malformed-packet", f"captured length {caplen} exceeds block"
                    )
                    index += 1
                    continue
                iface = interfaces[iface_id]
                ts = ((high << 32) | low) / iface.divisor + iface.offset
                last_ts = ts
            elif block_type == _SPB:
                # No interface id (always 0) and no timestamp: the previous packet's is the best
                # guess.
                if not interfaces or body_end - body_start < 4:
                    yield CaptureProblem(path, index, "malformed-packet", "simple packet block")
                    index += 1
                    continue
                wire_len = u32(mm, body_start)[0]
                data = body_start + 4
                caplen = min(wire_len, body_end - data)
                iface = interfaces[0]
                ts = last_ts
            else:
                if block_type == _IDB:
                    if not start_of_file:
                        out.layout_changed = True
                    if body_end - body_start < 8:
                        yield CaptureProblem(
                            path, None, "corrupt-file", f"interface block at byte {pos} too short"
                        )
                        pos = size
                        return
                    iface = _parse_idb(mm[body_start:body_end], order)
                    if not iface.supported:
                        yield CaptureProblem(
                            path,
                            None,
                            "unsupported-link-type",
                            f"interface {len(interfaces)}: link type {iface.link} "
                            "(packets skipped)",
                        )
                    interfaces.append(iface)
                continue  # other blocks: name resolution, statistics, custom...
            if iface.supported:
                item = parse(mm, data, data + caplen, iface.link, index, ts, wire_len)
                if item is not None:
                    yield item
                    if parser.cut:
                        yield _cut_problem(parser, index, caplen, wire_len)
            index += 1
    finally:
        out.stop = pos
        out.records = index - first


# ------------------------------------------------------------------------------------------
# Reading a capture in byte ranges (one per task of a parallel reader)
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CaptureLayout:
    """How one uncompressed capture file frames its records: enough to start reading at any
    record (see :func:`read_range` and :func:`find_record`)."""

    path: str
    size: int
    kind: str
    """``pcap`` or ``pcapng``."""
    first_record: int
    """File offset of the first packet record (pcapng: of the first packet block)."""
    order: str
    """Byte order, as a struct prefix."""
    divisor: int
    """pcap: timestamp units per second."""
    link: int
    """pcap: the link type."""
    max_caplen: int
    """pcap: the largest believable captured length."""
    interfaces: tuple[_Interface, ...]
    """pcapng: the interfaces described before :attr:`first_record`."""
    first_ts: float | None
    """Timestamp of the first packet, if known (a sanity check when finding records)."""
    read_from: str | None = None
    """The file read in place of :attr:`path`, which segments and problems still name: a
    compressed capture's decompressed copy (None: :attr:`path` itself)."""

    @property
    def file(self) -> str:
        """The file that holds the records."""
        return self.read_from or self.path


@dataclass(slots=True)
class RangeRead:
    """What :func:`read_range` found out while reading."""

    stop: int = 0
    """File offset of the first record at or after the range's end (or where reading stopped
    because the file's framing was lost): where the next range starts."""
    records: int = 0
    """Packet records read (what packet indexes count)."""
    layout_changed: bool = False
    """pcapng: a section or interface block was met after the first packet block; a reader
    starting after it would misread the packets, so the file must be read whole."""


def capture_layout(
    path: str, read_from: str | None = None
) -> CaptureLayout | CaptureProblem | None:
    """The layout of capture file ``path``, a problem if it cannot be read, or None when it
    cannot be read in ranges (compressed, or a pcapng file whose leading blocks are
    damaged or which has several sections): read it whole with :func:`read_capture`.
    ``read_from``: a file holding ``path``'s records, read in its place (see
    :attr:`CaptureLayout.read_from`)."""
    try:
        with open(read_from or path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 4:
                return None
            magic = f.read(4)
            if magic not in _PCAP_MAGICS and magic != _PCAPNG_MAGIC:
                return None  # compressed, or not a capture: read_capture reports which
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                layout: CaptureLayout | CaptureProblem | None
                if magic in _PCAP_MAGICS:
                    layout = _pcap_layout(path, mm, size)
                else:
                    layout = _pcapng_layout(path, mm, size)
        if read_from is not None and isinstance(layout, CaptureLayout):
            return replace(layout, read_from=read_from)
        return layout
    except OSError as exc:
        return CaptureProblem(path, None, "unreadable", f"{type(exc).__name__}: {exc}")


def read_range(
    layout: CaptureLayout,
    start: int,
    end: int,
    first_index: int,
    out: RangeRead,
    only: PortPairs | None = None,
) -> Iterator[Segment | CaptureProblem]:
    """The segments and problems of the records that start in ``[start, end)`` of the file.

    ``start`` must be a record start (:attr:`CaptureLayout.first_record`, a
    :attr:`RangeRead.stop`, or what :func:`find_record` returned); ``first_index`` is that
    record's packet index. The last record may run past ``end``: it is read whole.
    ``only``: the (source port, destination port) pairs of the segments wanted; the segments
    of other pairs, and the problems of their packets past the IP header, are left out.
    """
    try:
        with open(layout.file, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            size = min(layout.size, len(mm))
            if layout.kind == "pcap":
                yield from _pcap_records(layout, mm, start, min(end, size), first_index, out, only)
            else:
                yield from _pcapng_blocks(
                    layout.path,
                    mm,
                    size,
                    start,
                    min(end, size),
                    first_index,
                    layout.order,
                    list(layout.interfaces),
                    out,
                    only=only,
                )
    except OSError as exc:
        out.stop = layout.size
        yield CaptureProblem(layout.path, None, "unreadable", f"{type(exc).__name__}: {exc}")


#: Records that must follow a candidate record start, each plausible, before it is believed.
_SYNC_CHAIN = 4
#: A packet more than this far in time from the file's first is not believed (seconds).
_SYNC_SPAN = 366 * 86400.0


def find_record(layout: CaptureLayout, pos: int) -> int:
    """The first offset at or after ``pos`` where a record plausibly starts (the file's size
    when none does).

    As splittable pcap readers do, a candidate is believed when it and the records that
    follow it (up to :data:`_SYNC_CHAIN`, or to the end of the file) all look right:
    lengths within the snap length and the file, and (pcap) timestamps near the file's
    first, or (pcapng) a known block type with equal leading and trailing lengths. The
    caller checks the result against where the previous range actually ended.
    """
    if pos <= layout.first_record:
        return layout.first_record
    with open(layout.file, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        size = min(layout.size, len(mm))
        # Only offsets whose header octets can pass the checks, found by the regex engine:
        # trying every offset in Python cost a 64 MiB split of 64 KiB packets 12 ms (pcap),
        # every 32-bit aligned one 10 ms (pcapng), twice per split (its scan, its dissection).
        if layout.kind == "pcapng":
            step = 4  # blocks are 32-bit aligned from the start of the file
            plausible = _pcapng_record_end
            pattern = _pcapng_header_pattern(layout.order)
        else:
            step = 1
            plausible = _pcap_record_end
            pattern = _pcap_header_pattern(layout)
        while pos < size:
            pos = _search(pattern, mm, pos, size)
            if pos == size:
                break
            if pos % step:
                pos += -pos % step
                continue
            if _chain_holds(plausible, layout, mm, pos, size):
                return pos
            pos += step
    return layout.size


def _chain_holds(
    plausible: Callable[[CaptureLayout, Any, int, int], int | None],
    layout: CaptureLayout,
    data: Any,
    pos: int,
    size: int,
) -> bool:
    """Whether a record at ``pos`` and the ones after it (up to :data:`_SYNC_CHAIN`, or to
    the end of the data) all look right to ``plausible``, which gives a record's end."""
    cursor = pos
    for _ in range(_SYNC_CHAIN):
        following = plausible(layout, data, cursor, size)
        if following is None:
            return False
        cursor = following
        if cursor == size:
            return True
    return True


def _search(pattern: re.Pattern[bytes], mm: mmap.mmap, pos: int, size: int) -> int:
    """Where ``pattern`` first matches in ``mm[pos:size]``, else ``size``. (The match, which
    holds on to the map, is gone once this returns: the map can then be closed.)"""
    match = pattern.search(mm, pos, size)
    return size if match is None else match.start()


def _pcap_header_pattern(layout: CaptureLayout) -> re.Pattern[bytes]:
    """A regex that matches (as an empty lookahead) at each offset where a pcap record header
    could pass :func:`_pcap_record_end`: the most significant octets of its seconds, fraction
    and captured length each within what those checks allow. A necessary condition only:
    every match is still checked."""
    lo, hi = 0, 2**32 - 1
    if layout.first_ts is not None:
        lo = max(lo, math.ceil(layout.first_ts - _SYNC_SPAN))
        hi = min(hi, math.floor(layout.first_ts + _SYNC_SPAN))
    highest = (
        (lo >> 24, hi >> 24),  # seconds
        (0, (layout.divisor - 1) >> 24),  # fraction
        (0, min(layout.max_caplen, 2**32 - 1) >> 24),  # captured length
    )
    fields = []
    for low, high in highest:
        octet = b"[" + re.escape(bytes([low])) + b"-" + re.escape(bytes([high])) + b"]"
        fields.append(octet + b"..." if layout.order == ">" else b"..." + octet)
    return re.compile(b"(?s)(?=" + b"".join(fields) + b")")


@functools.cache
def _pcapng_header_pattern(order: str) -> re.Pattern[bytes]:
    """A regex that matches (as an empty lookahead) at each offset where a pcapng block
    header in byte ``order`` could pass :func:`_pcapng_record_end`: a known block type, and a
    length that is a multiple of 4 whose most significant octet allows :data:`_MAX_BLOCK`. A
    necessary condition only: every match is still checked, alignment included."""

    def octets(values: range) -> bytes:
        return b"[" + b"".join(re.escape(bytes([value])) for value in values) + b"]"

    types = b"|".join(
        re.escape(struct.pack(order + "I", kind)) for kind in sorted(_PCAPNG_KNOWN_BLOCKS)
    )
    lowest, highest = octets(range(0, 256, 4)), octets(range((_MAX_BLOCK >> 24) + 1))
    length = lowest + b".." + highest if order == "<" else highest + b".." + lowest
    return re.compile(b"(?s)(?=(?:" + types + b")" + length + b")")


def _pcap_record_end(layout: CaptureLayout, mm: mmap.mmap, pos: int, size: int) -> int | None:
    if pos + 16 > size:
        return None
    sec, frac, caplen, wire_len = struct.unpack_from(layout.order + "IIII", mm, pos)
    if caplen > layout.max_caplen or caplen > wire_len or frac >= layout.divisor:
        return None
    if wire_len > max(layout.max_caplen, 1 << 18) * 4:
        return None
    if layout.first_ts is not None and abs(sec - layout.first_ts) > _SYNC_SPAN:
        return None
    end = pos + 16 + caplen
    return end if end <= size else None


_PCAPNG_KNOWN_BLOCKS = frozenset({_EPB, _SPB, _PB, 4, 5, 0x0A, 0xBAD, 0x40000BAD})


def _pcapng_record_end(layout: CaptureLayout, mm: mmap.mmap, pos: int, size: int) -> int | None:
    if pos + 12 > size:
        return None
    block_type, block_len = struct.unpack_from(layout.order + "II", mm, pos)
    if block_type not in _PCAPNG_KNOWN_BLOCKS:
        return None
    if block_len < 12 or block_len % 4 or block_len > _MAX_BLOCK or pos + block_len > size:
        return None
    if struct.unpack_from(layout.order + "I", mm, pos + block_len - 4)[0] != block_len:
        return None
    return int(pos + block_len)


def is_capture_file(path: str) -> bool:
    """Whether ``path`` is a readable file starting with a pcap or pcapng magic number, plain
    or compressed (see :mod:`.compressed`)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(8)
            compression = compression_of(magic)
            if compression is not None:
                f.seek(0)
                magic = first_bytes(compression, f.read, 4)
    except LookupError:
        return True  # its library is missing: read_capture says what to install
    except (OSError, CorruptStream):
        return False
    magic = magic[:4]
    return magic in _PCAP_MAGICS or magic == _PCAPNG_MAGIC


def capture_files(paths: Sequence[str]) -> list[str]:
    """Expand files and folders into a sorted, de-duplicated list of capture files.

    Folders are walked recursively (symbolic links to folders are not followed) and keep only
    files whose magic number is pcap or pcapng, whatever their name. Paths naming a file are
    kept as given even if they are not captures, so that :func:`read_capture` reports them
    (``not-a-capture``, ``unreadable``) instead of dropping them unseen.
    """
    found: set[str] = set()
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in files:
                    full = os.path.join(root, name)
                    if is_capture_file(full):
                        found.add(full)
        else:
            found.add(path)
    return sorted(found)
