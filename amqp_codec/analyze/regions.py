"""The second pass: each task dissects the regions its split is home to, and writes rows.

A task (:func:`run_task`) parses its split's packets again, places every segment of an
analysed stream part at its stream offset, reassembles each part locally (first copy of a
byte wins, as :func:`~amqp_codec.capture.tcp.reassemble` rules) and keeps the bytes the part
owns. Each of its home regions then runs through a
:class:`~amqp_codec.analyze.streams.DirectionDissector` over the region's bytes in stream
order: its own, those other splits own inside the region (rare: reordered segments), and,
as far as needed, the bytes after it, which it reads from the following splits (parsed
only when needed). Rows go straight to the task's Parquet part files; the task returns the
small things the driver needs: each region's :class:`~amqp_codec.analyze.streams.Edge` and
facts, and each part's TCP counts.

The same function runs the fallback: one stream as a single region, read split after split.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..capture.packets import TH_SYN, RangeRead, Segment
from ..capture.tcp import Gap, Piece, place
from .parquet import TableWriters
from .plan import RegionPlan, Slice, StreamPlan
from .scan import PartKey, PartKeys, Split, segments_of, unwrap
from .streams import DirectionDissector, Edge, _Facts

__all__ = [
    "PartCounts",
    "PartWindow",
    "RegionResult",
    "Task",
    "TaskResult",
    "fallback_region",
    "run_task",
]


@dataclass(frozen=True, slots=True)
class PartWindow:
    """Where one analysed part lies in its stream (for placing its segments)."""

    stream: int
    offset0: int
    fin_offset: int | None
    owned: tuple[tuple[int, int], ...]


@dataclass(slots=True)
class Task:
    """One task of the second pass (or of the fallback)."""

    name: str
    """Names its part files."""
    split: Split | None
    """The home split, whose parts it counts; None for a fallback task."""
    parts: dict[PartKey, PartWindow]
    """The home split's analysed parts."""
    regions: list[tuple[StreamPlan, RegionPlan]]
    splits: dict[int, Split]
    """Every split its regions may read."""
    windows: dict[tuple[int, PartKey], PartWindow]
    """The parts of other splits its regions may read."""
    out: str
    bodies: bool


@dataclass(slots=True)
class PartCounts:
    stream: int
    conflicting: int = 0
    out_of_window: int = 0


@dataclass(slots=True)
class RegionResult:
    stream: int
    index: int
    edge: Edge
    facts: _Facts


@dataclass(slots=True)
class TaskResult:
    name: str
    regions: list[RegionResult] = field(default_factory=list)
    parts: list[PartCounts] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    bytes: int = 0


def _read_parts(
    split: Split, windows: dict[PartKey, PartWindow]
) -> tuple[dict[PartKey, list[Piece]], dict[PartKey, PartCounts]]:
    """The owned pieces of the parts of ``split`` named in ``windows``, and their counts."""
    keys = PartKeys()
    last: dict[PartKey, int] = {}
    first: dict[PartKey, int] = {}
    candidates: dict[PartKey, list[tuple[int, int, float, bytes, str]]] = {}
    counts: dict[PartKey, PartCounts] = {}
    for item in segments_of(split, RangeRead()):
        if not isinstance(item, Segment):
            continue
        key = keys.key(item)
        window = windows.get(key)
        if window is None:
            continue
        seg = item
        if key in last:
            absolute = unwrap(seg.seq, last[key])
        else:
            absolute = first[key] = seg.seq
            counts[key] = PartCounts(window.stream)
            candidates[key] = []
        last[key] = absolute
        data = seg.payload
        if not data:
            continue
        start = window.offset0 + absolute - first[key] + (1 if seg.flags & TH_SYN else 0)
        end = start + len(data)
        fin = window.fin_offset
        if end <= 0 or (fin is not None and start >= fin):
            counts[key].out_of_window += 1
            continue
        if start < 0:
            data, start = data[-start:], 0
        if fin is not None and end > fin:
            data, end = data[: fin - start], fin
        candidates[key].append((start, end, seg.ts, data, seg.capture))
    pieces: dict[PartKey, list[Piece]] = {}
    for key, found in candidates.items():
        placed, _retransmitted, conflicting = place(found)
        counts[key].conflicting = conflicting
        pieces[key] = _clip(placed, windows[key].owned)
    return pieces, counts


def _clip(pieces: list[Piece], owned: Sequence[tuple[int, int]]) -> list[Piece]:
    """The parts of ``pieces`` (in order) inside the ``owned`` intervals (in order)."""
    out: list[Piece] = []
    i = 0
    for piece in pieces:
        lo, hi = piece.offset, piece.offset + len(piece.data)
        while i < len(owned) and owned[i][1] <= lo:
            i += 1
        j = i
        while j < len(owned) and owned[j][0] < hi:
            a, b = max(lo, owned[j][0]), min(hi, owned[j][1])
            if b > a:
                data = piece.data if (a, b) == (lo, hi) else piece.data[a - lo : b - lo]
                out.append(Piece(a, piece.ts, data, piece.capture))
            j += 1
    return out


class _Source:
    """The pieces of a task's parts, parsing each split once, when first needed."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.cache: dict[int, dict[PartKey, list[Piece]]] = {}
        self.counts: dict[PartKey, PartCounts] = {}

    def home(self) -> None:
        task = self.task
        if task.split is not None:
            pieces, counts = _read_parts(task.split, task.parts)
            self.cache[task.split.index] = pieces
            self.counts = counts

    def pieces(self, part: Slice, keep: bool) -> list[Piece]:
        cached = self.cache.get(part.split)
        if cached is None or part.key not in cached:
            windows = {
                key: window
                for (split, key), window in self.task.windows.items()
                if split == part.split
            }
            found, _ = _read_parts(self.task.splits[part.split], windows)
            if keep:
                self.cache[part.split] = found
            return found.get(part.key, [])
        return cached.get(part.key, [])


def _items(
    stream: StreamPlan, region: RegionPlan, source: _Source, keep: bool
) -> Iterator[Piece | Gap]:
    """The region's pieces from its start on, in stream order, merged from its slices (each
    read when the stream reaches it), and the gaps only the plan knows of."""
    slices = sorted(region.slices, key=lambda s: s.low)
    heap: list[tuple[int, int, int, Iterator[Piece]]] = []
    order = 0
    next_slice = 0
    start = region.start
    if region.index == 0 and not stream.syn:
        first_ts = stream.first_ts
        yield Gap(0, None, first_ts)
    position = start
    while True:
        # Open every slice that may hold the next bytes.
        while next_slice < len(slices) and (not heap or slices[next_slice].low <= heap[0][0]):
            part = slices[next_slice]
            next_slice += 1
            pieces = [p for p in source.pieces(part, keep) if p.offset + len(p.data) > start]
            if pieces:
                it = iter(pieces)
                first = next(it)
                heapq.heappush(heap, (first.offset, order, id(first), _chain_first(first, it)))
                order += 1
        if not heap:
            break
        _offset, _order, _id, it = heapq.heappop(heap)
        piece = next(it)
        if piece.offset < start:
            piece = Piece(start, piece.ts, piece.data[start - piece.offset :], piece.capture)
        yield piece
        position = max(position, piece.offset + len(piece.data))
        following = next(it, None)
        if following is not None:
            heapq.heappush(
                heap, (following.offset, order, id(following), _chain_first(following, it))
            )
            order += 1
    if region.end is None and stream.fin_offset is not None and stream.fin_offset > position:
        yield Gap(position, stream.fin_offset - position, stream.fin_ts or stream.last_ts)


def _chain_first(first: Piece, rest: Iterator[Piece]) -> Iterator[Piece]:
    yield first
    yield from rest


def run_task(task: Task) -> TaskResult:
    """Dissect the task's regions into its part files (runs in a Spark task)."""
    result = TaskResult(task.name)
    writers = TableWriters(task.out, task.name)
    source = _Source(task)
    source.home()
    fallback = task.split is None
    for stream, region in task.regions:
        dissector = DirectionDissector(
            connection=stream.name,
            direction=stream.direction,
            bodies=task.bodies,
            region=stream.region(region),
        )
        writers.extend(dissector.run(_items(stream, region, source, keep=not fallback)))
        facts = dissector.facts
        facts.protocol = None  # travels by name (spec)
        result.regions.append(RegionResult(stream.id, region.index, dissector.edge, facts))
    result.parts = list(source.counts.values())
    result.rows = writers.close()
    result.files = dict(writers.files)
    if task.split is not None:
        result.bytes = task.split.end - task.split.start
    return result


def fallback_region(stream: StreamPlan) -> RegionPlan:
    """The whole of ``stream`` as one region, read part after part."""
    slices = tuple(s for s in stream.slices if s.owned)
    return RegionPlan(stream.id, 0, 0, None, -1, slices)
