"""Capture files in byte ranges: the splits the job's tasks read, and what a first pass learns.

A capture set is cut into :class:`Split`\\ s of a few MiB of file bytes each, so that no
task holds more than that whatever the size of a file or of a connection. A split starts at
the first record found at or after its nominal start (:func:`~amqp_codec.capture.packets.
find_record`) and reads the records that start before its end; the driver checks that each
split starts exactly where the one before it stopped.

:func:`scan_split` is the first pass (one task per split): it parses the split's packets
and summarises each stream part it holds (one direction of one TCP connection, within the
split) as a :class:`StreamPart`: sequence numbers, the byte intervals it covers, SYN, FIN
and RST, and the first bytes of the stream. No payload leaves the task except those first
bytes. From these summaries the driver plans the second pass (:mod:`amqp_codec.analyze.plan`).

Both passes name a segment's stream part the same way (:class:`PartKeys`): by its
connection's two endpoints, by which client SYN of those endpoints it follows within the
split (a reused port pair is a new TCP connection), and by its direction.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ..capture.packets import (
    TH_FIN,
    TH_RST,
    TH_SYN,
    CaptureLayout,
    CaptureProblem,
    PortPairs,
    RangeRead,
    Segment,
    capture_layout,
    find_record,
    read_capture,
    read_range,
)
from .heads import HeadFacts, head_facts

__all__ = [
    "HEAD_BYTES",
    "HEAD_KEPT",
    "Endpoints",
    "PartKey",
    "PartKeys",
    "Split",
    "SplitScan",
    "StreamPart",
    "plan_splits",
    "scan_split",
    "scan_splits",
    "segments_of",
    "synced",
    "unwrap",
]

#: First bytes of a stream kept by the first pass (version detection, tune, the
#: unknown-protocol check).
HEAD_BYTES = 8192
#: Of a whole head, the bytes that go on to the driver with what it shows (its
#: :class:`~.heads.HeadFacts`): enough to tell AMQP from another protocol and to quote an
#: unknown one. A head cut short by its split's end goes whole: the driver completes it.
HEAD_KEPT = 64
#: Capture problems a split reports one by one; the rest are counted.
MAX_SPLIT_PROBLEMS = 100
# Segments looked at for a stream's first bytes (retransmitted many times, say).
_MAX_HEAD_PIECES = 256

_TH_ACK = 0x10
#: Segment endpoints whose part key is remembered (a bound: a port scan stays cheap).
_KNOWN_KEYS = 65536
_MASK = 0xFFFFFFFF
_HALF = 0x80000000

Endpoints = tuple[tuple[str, int], tuple[str, int]]
#: (the two endpoints, lower first; which client SYN of theirs in the split the part follows
#: (0: none yet); sent by the first endpoint).
PartKey = tuple[Endpoints, int, bool]


@dataclass(frozen=True, slots=True)
class Split:
    """Records ``[start, end)`` of one capture file: the unit of work of a task."""

    index: int
    """Position in the capture set's splits (file order, then byte order)."""
    file: int
    """Index of the file in the capture set."""
    path: str
    layout: CaptureLayout | None
    """None: the file is read whole (compressed and not decompressed beforehand, or framed
    in a way that cannot be entered in the middle)."""
    start: int
    end: int
    first_packet: int = 0
    """Packet index of the record at ``start`` (known once the splits before it are read)."""
    synced: bool = False
    """``start`` is known to be a record start (else the first record at or after it is
    found)."""


def plan_splits(
    files: list[str], split_bytes: int, copies: Mapping[str, str] | None = None
) -> list[Split]:
    """The splits of ``files``: about ``split_bytes`` of file each, whole files where needed.
    ``copies``: per compressed file, its decompressed copy, split in its place (see
    :mod:`~amqp_codec.analyze.decompressed`); a file without one is read whole."""
    splits: list[Split] = []
    for file, path in enumerate(files):
        layout = capture_layout(path, (copies or {}).get(path))
        if not isinstance(layout, CaptureLayout):
            size = os.path.getsize(path) if os.path.isfile(path) else 0
            splits.append(Split(len(splits), file, path, None, 0, size, 0, True))
            continue
        start = layout.first_record
        while True:
            end = min(layout.size, start + split_bytes)
            if layout.size - end < split_bytes // 4:
                end = layout.size  # no sliver of a split at the end
            synced = start == layout.first_record
            splits.append(Split(len(splits), file, path, layout, start, end, 0, synced))
            if end >= layout.size:
                break
            start = end
    return splits


def segments_of(
    split: Split, out: RangeRead, only: PortPairs | None = None
) -> Iterator[Segment | CaptureProblem]:
    """The segments and problems of ``split``'s records; ``out`` learns where it stopped.
    ``only``: the port pairs wanted (others may be left out: see :func:`read_range`)."""
    if split.layout is None:
        count = 0
        for item in read_capture(split.path):
            if isinstance(item, Segment):
                count = item.packet + 1
            yield item
        out.stop = split.end
        out.records = count
        return
    yield from read_range(
        split.layout, synced(split).start, split.end, split.first_packet, out, only
    )


def unwrap(seq: int, last: int) -> int:
    """``seq`` (32 bits) as the unbounded sequence number nearest to ``last``."""
    return last + (((seq & _MASK) - last + _HALF) & _MASK) - _HALF


class PartKeys:
    """Names the stream part of each segment of one split, in capture order."""

    def __init__(self) -> None:
        # endpoints -> (last client SYN's sequence number, its ordinal in the split)
        self._syns: dict[Endpoints, tuple[int, int]] = {}
        # (src, sport, dst, dport) -> its key, until the next client SYN: most segments
        # are named by one lookup.
        self._known: dict[tuple[str, int, str, int], PartKey] = {}

    def key(self, seg: Segment) -> PartKey:
        syn = seg.flags & (TH_SYN | _TH_ACK) == TH_SYN
        if not syn:
            known = self._known.get((seg.src, seg.sport, seg.dst, seg.dport))
            if known is not None:
                return known
        a, b = (seg.src, seg.sport), (seg.dst, seg.dport)
        ends = (a, b) if a <= b else (b, a)
        state = self._syns.get(ends)
        if syn and (state is None or state[0] != seg.seq):
            state = (seg.seq, 1 if state is None else state[1] + 1)
            self._syns[ends] = state
            self._known.clear()  # a new incarnation of these endpoints: rare
        key = ends, 0 if state is None else state[1], a == ends[0]
        if len(self._known) < _KNOWN_KEYS:
            self._known[(seg.src, seg.sport, seg.dst, seg.dport)] = key
        return key


@dataclass(slots=True)
class StreamPart:
    """One stream part: the segments of one split in one direction of one TCP connection.

    Relative sequence numbers (``rel``) count from :attr:`first_seq`, unwrapped in capture
    order, so a part is placed in its stream once the driver knows where that first
    sequence number lies.
    """

    first_seq: int
    """Sequence number of the part's first segment, as on the wire."""
    first_ts: float
    """Timestamp of the part's earliest segment (not always its first: see scan_split)."""
    first_packet: int
    last_rel: int = 0
    last_ts: float = 0.0
    """Timestamp of its latest segment."""
    segments: int = 0
    intervals: list[list[int]] = field(default_factory=list)
    """Payload intervals ``[start, end)`` in rel, merged."""
    syn_rel: int | None = None
    """rel of the first SYN, if one is in the part."""
    syn_ack: bool = False
    """That SYN was a SYN-ACK."""
    client_syn: int | None = None
    """Sequence number of the client SYN that starts this part's connection in the split."""
    fin_rel: int | None = None
    """The smallest stream end a FIN announced, in rel."""
    fin_ts: float | None = None
    rst: bool = False
    head: bytes = b""
    """The stream's first bytes after the SYN, when the SYN and those bytes are in this
    part: all of them if fewer than :data:`HEAD_BYTES`, else the first :data:`HEAD_KEPT`."""
    head_facts: HeadFacts | None = None
    """What the first :data:`HEAD_BYTES` bytes show (see :mod:`~.heads`), worked out in this
    task. Sending every whole head to the driver instead made the scan's results of 20,417
    short connections 120 MB rather than 50 MB, and the run's peak 1,959 MB rather than
    1,689 MB."""


@dataclass(slots=True)
class SplitScan:
    """What the first pass found in one split."""

    split: int
    start: int
    """Where the split's first record is (the driver checks it against the split before)."""
    stop: int
    records: int
    layout_changed: bool
    first_ts: float | None
    problems: list[CaptureProblem]
    more_problems: int
    parts: dict[PartKey, StreamPart]


def scan_split(split: Split) -> SplitScan:
    """The first pass over one split (runs in a task)."""
    out = RangeRead()
    keys = PartKeys()
    parts: dict[PartKey, StreamPart] = {}
    last_abs: dict[PartKey, int] = {}
    heads: dict[PartKey, list[tuple[int, bytes]]] = {}
    problems: list[CaptureProblem] = []
    more = 0
    first_ts: float | None = None
    split = synced(split)
    for item in segments_of(split, out):
        if isinstance(item, CaptureProblem):
            if len(problems) < MAX_SPLIT_PROBLEMS:
                problems.append(item)
            else:
                more += 1
            continue
        seg = item
        if first_ts is None:
            first_ts = seg.ts
        key = keys.key(seg)
        part = parts.get(key)
        if part is None:
            part = parts[key] = StreamPart(seg.seq, seg.ts, seg.packet)
            if key[1] and seg.flags & (TH_SYN | _TH_ACK) == TH_SYN:
                part.client_syn = seg.seq
            rel = 0
        else:
            rel = unwrap(seg.seq, last_abs[key]) - part.first_seq
            # A capture's timestamps need not rise with its packets (several interfaces or
            # CPUs): a part's times are its earliest and latest, as one pass finds them.
            if seg.ts < part.first_ts:
                part.first_ts = seg.ts
        last_abs[key] = part.first_seq + rel
        part.last_rel = rel
        if seg.ts > part.last_ts:
            part.last_ts = seg.ts
        part.segments += 1
        flags = seg.flags
        syn = 1 if flags & TH_SYN else 0
        if syn and part.syn_rel is None:
            part.syn_rel = rel
            part.syn_ack = bool(flags & _TH_ACK)
        if flags & TH_FIN:
            end = rel + syn + len(seg.payload)
            if part.fin_rel is None or end < part.fin_rel:
                part.fin_rel = end
            if part.fin_ts is None or seg.ts < part.fin_ts:
                part.fin_ts = seg.ts
        if flags & TH_RST:
            part.rst = True
        if seg.payload:
            lo = rel + syn
            _add_interval(part.intervals, lo, lo + len(seg.payload))
            if part.syn_rel is not None and lo < part.syn_rel + 1 + HEAD_BYTES:
                pieces = heads.setdefault(key, [])
                if len(pieces) < _MAX_HEAD_PIECES:
                    pieces.append((lo - part.syn_rel - 1, seg.payload))
    known: dict[bytes, HeadFacts] = {}
    for key, part in parts.items():
        part.intervals = _merged(part.intervals)
        if key in heads:
            head = _head(heads[key])
            part.head_facts = head_facts(head, known)
            part.head = head if len(head) < HEAD_BYTES else head[:HEAD_KEPT]
    return SplitScan(
        split.index,
        split.start,
        out.stop,
        out.records,
        out.layout_changed,
        first_ts,
        problems,
        more,
        parts,
    )


def scan_splits(splits: Sequence[Split]) -> list[SplitScan]:
    """:func:`scan_split` of each of ``splits`` (a batch of small ones, run as one task)."""
    return [scan_split(split) for split in splits]


def synced(split: Split) -> Split:
    """``split`` starting at its first record."""
    if split.layout is None or split.synced:
        return split
    start = find_record(split.layout, split.start)
    return Split(split.index, split.file, split.path, split.layout, start, split.end, 0, True)


def _add_interval(intervals: list[list[int]], lo: int, hi: int) -> None:
    """Add ``[lo, hi)``; in-order data extends the last interval, anything else is merged
    later by :func:`_merged`."""
    if intervals:
        last = intervals[-1]
        if last[0] <= lo <= last[1]:
            if hi > last[1]:
                last[1] = hi
            return
    intervals.append([lo, hi])


def _merged(intervals: list[list[int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def _head(pieces: list[tuple[int, bytes]]) -> bytes:
    """The contiguous bytes from offset 0 that ``pieces`` (offset, data) carry, first seen
    first; at most :data:`HEAD_BYTES`."""
    head = bytearray()
    for _ in range(len(pieces)):
        grew = False
        for offset, data in pieces:
            end = offset + len(data)
            if offset <= len(head) < end:
                head += data[len(head) - offset :]
                grew = True
        if not grew or len(head) >= HEAD_BYTES:
            break
    return bytes(head[:HEAD_BYTES])
