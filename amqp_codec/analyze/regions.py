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
facts, and each part's TCP counts. A connection the task holds whole (every stream one
region, read from this split alone) it checks and writes itself, as the driver would
(:func:`finish_connections`), and returns none of that for it.

The same function runs the fallback: one stream as a single region, read split after split.
"""

from __future__ import annotations

import bisect
import heapq
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ..capture.packets import TH_SYN, CaptureProblem, PortPairs, RangeRead, Segment
from ..capture.tcp import Gap, Piece, place
from .heads import head_negotiation
from .parquet import TableWriters
from .pickling import pickled_by_fields
from .plan import (
    Connection,
    Interval,
    Plan,
    RegionPlan,
    Slice,
    StreamPlan,
    check_stream,
    connection_rows,
    head_wanted,
    interval_union,
    misnegotiated,
    plan_limits_again,
)
from .scan import HEAD_BYTES, PartKey, PartKeys, Split, segments_of, unwrap
from .streams import DirectionDissector, Edge, _Facts
from .tally import Tally

__all__ = [
    "PartCounts",
    "PartWindow",
    "RegionResult",
    "Task",
    "TaskResult",
    "fallback_region",
    "finish_connections",
    "run_task",
    "run_tasks",
    "tcp_counts",
]


@pickled_by_fields
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
    """The regions it dissects, each with its stream as :meth:`~.plan.StreamPlan.for_task`
    gives it (whole for the streams of :attr:`connections`)."""
    splits: dict[int, Split]
    """Every split its regions may read."""
    windows: dict[tuple[int, PartKey], PartWindow]
    """The parts of other splits its regions may read, and the parts holding the first
    copies its parts need (see :attr:`first_copies`)."""
    out: str
    bodies: bool
    first_copies: dict[PartKey, tuple[Slice, ...]] = field(default_factory=dict)
    """Per part of the home split that carried bytes again after parts before it: those
    parts, holding the first copies (see :attr:`~.plan.StreamPlan.first_copies`)."""
    unread_copies: dict[PartKey, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    """Per part: the bytes it carried again whose first copies lie in splits too far back to
    be read (see :data:`~.plan.FIRST_COPY_SPLITS`)."""
    connections: list[Connection] = field(default_factory=list)
    """Connections whose streams are one region each, all read from the home split: the task
    checks and writes them whole (:func:`finish_connections`)."""


@dataclass(slots=True)
class PartCounts:
    stream: int
    conflicting: int = 0
    out_of_window: int = 0
    not_compared: int = 0
    """Segments that carried again bytes first carried too far back to be read (see
    :data:`~.plan.FIRST_COPY_SPLITS`)."""


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
    tallies: dict[str, Tally] = field(default_factory=dict)
    """Per part file written: the report's figures of its rows (see :mod:`.tally`)."""
    bytes: int = 0
    finished: list[int] = field(default_factory=list)
    """The connections written whole (:func:`finish_connections`): their streams' regions
    and parts are not in :attr:`regions` and :attr:`parts`."""


#: A segment's payload placed in its stream: start, end, timestamp, bytes, capture file.
_Candidate = tuple[int, int, float, bytes, str]


class _Placer:
    """Places one split's segments, in capture order, in the streams of the parts named in
    ``windows``: each segment's part, and where its payload lies in its stream."""

    def __init__(self, windows: dict[PartKey, PartWindow]) -> None:
        self.windows = windows
        self.keys = PartKeys()
        self.last: dict[PartKey, int] = {}  # unwrapped sequence number of the last segment
        self.first: dict[PartKey, int] = {}  # and of the part's first

    def place(self, seg: Segment) -> tuple[PartKey, _Candidate | None, bool] | None:
        """``seg``'s part, its payload placed and cut to the stream's window (None: no
        payload, or none inside), and whether it lay wholly outside the window; None for a
        segment of a part not asked for."""
        key = self.keys.key(seg)
        window = self.windows.get(key)
        if window is None:
            return None
        if key in self.last:
            absolute = unwrap(seg.seq, self.last[key])
        else:
            absolute = self.first[key] = seg.seq
        self.last[key] = absolute
        data = seg.payload
        if not data:
            return key, None, False
        start = window.offset0 + absolute - self.first[key] + (1 if seg.flags & TH_SYN else 0)
        end = start + len(data)
        fin = window.fin_offset
        if end <= 0 or (fin is not None and start >= fin):
            return key, None, True
        if start < 0:
            data, start = data[-start:], 0
        if fin is not None and end > fin:
            data, end = data[: fin - start], fin
        return key, (start, end, seg.ts, data, seg.capture), False


def port_pairs(keys: Iterable[PartKey]) -> PortPairs:
    """The (source, destination) port pairs of the segments of the parts ``keys``, both ways."""
    pairs = set()
    for ((_, port_a), (_, port_b)), _incarnation, _forward in keys:
        pairs.add((port_a, port_b))
        pairs.add((port_b, port_a))
    return frozenset(pairs)


class CaptureChanged(OSError):
    """A capture file the first pass read could not be read the same way again: it went
    away, shrank or became unreadable while it was analysed (a ring buffer's oldest file
    rotated away, say). Raised, not taken as the end of the streams it holds."""


def _read_again(
    split: Split, windows: dict[PartKey, PartWindow]
) -> Iterator[Segment | CaptureProblem]:
    """The records of ``split`` between the ports of the parts ``windows`` names, as the first
    pass read them, once its file is checked to be no shorter than then. Its capture
    problems were reported by that pass: give each to :func:`_read_failed`, which raises
    for a new one. (The segments come straight from the reader: a generator in between
    would cost a switch per packet.)"""
    layout = split.layout
    if layout is not None:
        try:
            size = os.stat(layout.file).st_size
        except OSError as exc:
            raise _changed(split.path, f"{type(exc).__name__}: {exc.strerror}") from None
        if size < layout.size:
            raise _changed(split.path, f"{size:,} bytes now, {layout.size:,} when first read")
    return segments_of(split, RangeRead(), port_pairs(windows))


def _read_failed(split: Split, problem: CaptureProblem) -> None:
    """Raise if reading ``split`` again failed where the first pass did not."""
    if problem.kind == "unreadable":
        raise _changed(split.path, problem.detail)


def _changed(path: str, detail: str) -> CaptureChanged:
    return CaptureChanged(
        f"capture {path} changed while it was analysed ({detail}): analyse files that "
        "nothing writes to, rotates or removes meanwhile (a copy of a ring buffer's)"
    )


def _cut(reader: _LazySplit, key: PartKey, spans: list[tuple[int, int]]) -> list[Piece]:
    """The bytes part ``key`` of ``reader``'s split owns in ``spans`` (sorted, disjoint), in
    stream order: asked for in that order, as the reader lets go of what lies behind."""
    out: list[Piece] = []
    for lo, hi in spans:
        for piece in reader.pieces(key, lo):
            start = max(lo, piece.offset)
            end = min(hi, piece.offset + len(piece.data))
            if start >= hi:
                break
            data = piece.data[start - piece.offset : end - piece.offset]
            out.append(Piece(start, piece.ts, data, piece.capture))
            if end >= hi:
                break
    return out


def _touching(candidates: list[_Candidate], spans: Sequence[tuple[int, int]]) -> int:
    """How many of ``candidates`` carry bytes of ``spans`` (sorted, disjoint): a search each,
    not a pass over the spans."""
    ends = [hi for _, hi in spans]
    count = 0
    for start, end, *_ in candidates:
        i = bisect.bisect_right(ends, start)
        count += i < len(spans) and spans[i][0] < end
    return count


def _read_parts(
    split: Split,
    windows: dict[PartKey, PartWindow],
    first_copies: dict[PartKey, list[_Candidate]],
    unread: dict[PartKey, tuple[tuple[int, int], ...]],
) -> tuple[dict[PartKey, list[Piece]], dict[PartKey, PartCounts]]:
    """The owned pieces of the parts of ``split`` named in ``windows``, and their counts.

    A part's segments that carried bytes again are compared with every earlier copy, as one
    pass does: the part's own here, those of the parts before it (in earlier splits, or of
    the stream under another key in this one) from ``first_copies``; those that carried
    bytes ``unread`` names are counted as not compared."""
    placer = _Placer(windows)
    candidates: dict[PartKey, list[_Candidate]] = {}
    counts: dict[PartKey, PartCounts] = {}
    for item in _read_again(split, windows):
        if not isinstance(item, Segment):
            _read_failed(split, item)
            continue
        placed = placer.place(item)
        if placed is None:
            continue
        key, candidate, outside = placed
        if key not in counts:
            counts[key] = PartCounts(windows[key].stream)
            candidates[key] = []
        if outside:
            counts[key].out_of_window += 1
        elif candidate is not None:
            candidates[key].append(candidate)
    pieces: dict[PartKey, list[Piece]] = {}
    for key, found in candidates.items():
        far = unread.get(key)
        if far:
            counts[key].not_compared = _touching(found, far)
        earlier = first_copies.get(key)
        if earlier:
            found = earlier + found
        placed_pieces, _retransmitted, conflicting = place(found)
        counts[key].conflicting = conflicting
        pieces[key] = _clip(placed_pieces, windows[key].owned)
    return pieces, counts


def _clip(pieces: list[Piece], owned: Sequence[tuple[int, int]]) -> list[Piece]:
    """The parts of ``pieces`` (in order) inside the ``owned`` intervals (in order)."""
    if not pieces:
        return pieces
    if len(owned) == 1:
        lo, hi = owned[0]
        last = pieces[-1]
        if pieces[0].offset >= lo and last.offset + len(last.data) <= hi:
            return pieces  # the usual case: the split owns all it carried
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


#: Other splits' readers kept at once (each holds its capture file open twice, the file and
#: its map): a stream dissected again in one pass reads every split it crosses, one after
#: another, and a run's heads cut by a split's end may lie in as many splits. A reader
#: asked for again after it was let go parses its split again from the start.
OPEN_READERS = 16


class _Readers:
    """Lazy readers of splits (:class:`_LazySplit`), at most :data:`OPEN_READERS` kept: the
    one asked for least recently goes first (its file is closed once no piece iterator
    still reads it)."""

    def __init__(
        self, splits: dict[int, Split], windows: Callable[[int], dict[PartKey, PartWindow]]
    ) -> None:
        self.splits = splits
        self.windows = windows
        self.open: dict[int, _LazySplit] = {}  # in the order last asked for

    def __getitem__(self, split: int) -> _LazySplit:
        reader = self.open.pop(split, None)
        if reader is None:
            reader = _LazySplit(self.splits[split], self.windows(split))
            if len(self.open) >= OPEN_READERS:
                del self.open[next(iter(self.open))]
        self.open[split] = reader
        return reader


class _Source:
    """The pieces of a task's parts: its home split's parsed once, whole (its TCP counts come
    from there); other splits' read lazily, packet by packet, only as far as a region needs,
    except those that are homes of the same batch's tasks (see :class:`_Batch`)."""

    def __init__(self, task: Task, batch: _Batch | None = None) -> None:
        self.task = task
        self.batch = batch
        self.home_pieces: dict[PartKey, list[Piece]] = {}
        self.counts: dict[PartKey, PartCounts] = {}
        self.parsed = False
        windows: dict[int, dict[PartKey, PartWindow]] = {}
        for (split, key), window in task.windows.items():
            windows.setdefault(split, {})[key] = window
        self.lazy = _Readers(task.splits, lambda split: windows.get(split, {}))

    def home(self) -> None:
        task = self.task
        if task.split is not None and not self.parsed:
            self.home_pieces, self.counts = _read_parts(
                task.split, task.parts, self.first_copies(), task.unread_copies
            )
        self.parsed = True

    def first_copies(self) -> dict[PartKey, list[_Candidate]]:
        """Per part of the home split in :attr:`Task.first_copies`: the first copies, held
        by the parts before it, of the bytes it carried again, as candidates for placing
        (see :func:`_read_parts`). Each holder is read once, over all the bytes asked of it,
        in stream order (see :func:`_cut`)."""
        # holder part -> (the part asking, the bytes it asks for), for every holder
        wanted: dict[tuple[int, PartKey], list[tuple[PartKey, tuple[Interval, ...]]]] = {}
        for key, holders in self.task.first_copies.items():
            for part in holders:
                wanted.setdefault((part.split, part.key), []).append((key, part.owned))
        out: dict[PartKey, list[_Candidate]] = {}
        for (split, holder), asks in wanted.items():
            spans = interval_union([], [span for _, owned in asks for span in owned])
            copies = _cut(self.lazy[split], holder, spans)
            for key, owned in asks:
                out.setdefault(key, []).extend(
                    (p.offset, p.offset + len(p.data), p.ts, p.data, p.capture)
                    for p in _clip(copies, owned)
                )
        return out

    def pieces(self, part: Slice, start: int) -> Iterator[Piece]:
        """``part``'s owned pieces that end after ``start``, in stream order."""
        task = self.task
        if task.split is not None and part.split == task.split.index:
            return self.home_from(part.key, start)
        other = None if self.batch is None else self.batch.source(part.split)
        if other is not None:
            other.home()
            return other.home_from(part.key, start)
        return self.lazy[part.split].pieces(part.key, start)

    def home_from(self, key: PartKey, start: int) -> Iterator[Piece]:
        """Home part ``key``'s owned pieces that end after ``start``, in stream order."""
        # Disjoint and in stream order: past the first piece that ends after ``start``, every
        # one does.
        home = self.home_pieces.get(key, [])
        first = 0
        while first < len(home) and home[first].offset + len(home[first].data) <= start:
            first += 1
        return iter(home[first:] if first else home)


class _Batch:
    """The sources of a batch's tasks (see :func:`run_tasks`), each home split parsed once.

    A batch's splits follow one another (small files), and a stream has one region for all
    of them (see :func:`~.plan.make_plan`), dissected by the first task: it reads the other
    tasks' home splits. A task's source is kept from when a task before it first reads its
    split until the task is done, so no more than the batch's bytes (a split's) are held."""

    def __init__(self, tasks: Sequence[Task]) -> None:
        self.tasks = {task.split.index: task for task in tasks if task.split is not None}
        self.sources: dict[int, _Source] = {}

    def source(self, split: int) -> _Source | None:
        """The source of the task whose home is ``split``, if it is in this batch."""
        source = self.sources.get(split)
        if source is None and split in self.tasks:
            source = self.sources[split] = _Source(self.tasks.pop(split), self)
        return source

    def done(self, task: Task) -> None:
        if task.split is not None:
            self.sources.pop(task.split.index, None)


class _LazySplit:
    """One split's packets parsed only as far as asked, for the parts of several streams.

    A byte belongs to the first segment (in capture order) that carried it, so it is known
    as soon as a segment covering it has been parsed: later ones can only be copies.
    """

    def __init__(self, split: Split, windows: dict[PartKey, PartWindow]) -> None:
        # Only a few streams of the split are followed here: the others' segments are
        # skipped as cheaply as the reader can.
        self.split = split
        self.packets = _read_again(split, windows)
        self.windows = windows
        self.placer = _Placer(windows)
        # Per part: the candidates parsed and not yet passed.
        self.pending: dict[PartKey, _Pending] = {}

    def _parse_more(self, wanted: PartKey) -> bool:
        """Parse packets until one more candidate of ``wanted`` is known (False: none left)."""
        for item in self.packets:
            if not isinstance(item, Segment):
                _read_failed(self.split, item)
                continue
            placed = self.placer.place(item)
            if placed is None:
                continue
            key, candidate, _outside = placed
            if candidate is None:
                continue
            self.pending.setdefault(key, _Pending()).add(candidate)
            if key == wanted:
                return True
        return False

    def pieces(self, key: PartKey, start: int) -> Iterator[Piece]:
        """The owned pieces of part ``key`` from ``start`` on, in stream order."""
        window = self.windows[key]
        pending = self.pending.setdefault(key, _Pending())
        for owned_lo, owned_hi in window.owned:
            position = max(owned_lo, start)
            while position < owned_hi:
                found = pending.first_carrier(position)
                if found is None:
                    if self._parse_more(key):
                        continue
                    return  # no more of this part in the split (cannot happen for owned bytes)
                (lo, _hi, ts, data, capture), stop = found
                stop = min(stop, owned_hi)
                yield Piece(position, ts, data[position - lo : stop - lo], capture)
                position = stop


class _Pending:
    """One part's candidates parsed by a :class:`_LazySplit` and not yet passed, for reading
    the part's bytes in stream order: at each position, the first candidate in capture order
    that carried it.

    Two heaps make each step O(log n) whatever the order of the segments: those that start
    after the position, by start; those that start at or before it, by capture order (those
    passed leave as they come to the top). A list in capture order scanned at each step from
    the first not passed cost O(n) a step when segments far ahead were captured first: 8,000
    such before 8,000 in order took 8.2 s, and the time grew with the square of their number.
    """

    __slots__ = ("ahead", "count", "covering", "reached")

    def __init__(self) -> None:
        self.ahead: list[tuple[int, int, _Candidate]] = []  # (start, capture order, candidate)
        self.covering: list[tuple[int, _Candidate]] = []  # (capture order, candidate)
        self.count = 0  # candidates added: the next one's capture order
        self.reached = 0  # the position last asked for

    def add(self, candidate: _Candidate) -> None:
        """A candidate parsed after all those added before it."""
        heapq.heappush(self.ahead, (candidate[0], self.count, candidate))
        self.count += 1

    def first_carrier(self, position: int) -> tuple[_Candidate, int] | None:
        """The first candidate, in capture order, that carried the byte at ``position``, and
        where its piece stops: at its end, or earlier where a candidate that starts after
        ``position`` begins (one captured earlier wins its bytes back; one captured later
        only cuts the piece in two, from the same carrier). None if no candidate parsed so
        far carried it."""
        ahead, covering = self.ahead, self.covering
        if position < self.reached:
            # Asked again from further back (a part read for its first copies, then by a
            # region): those that start after the position are ahead of it again.
            for order, candidate in covering:
                ahead.append((candidate[0], order, candidate))
            covering.clear()
            heapq.heapify(ahead)
        self.reached = position
        while ahead and ahead[0][0] <= position:
            _start, order, candidate = heapq.heappop(ahead)
            heapq.heappush(covering, (order, candidate))
        while covering and covering[0][1][1] <= position:
            heapq.heappop(covering)
        if not covering:
            return None
        first = covering[0][1]
        stop = first[1]
        if ahead and ahead[0][0] < stop:
            stop = ahead[0][0]
        return first, stop


def _items(stream: StreamPlan, region: RegionPlan, source: _Source) -> Iterator[Piece | Gap]:
    """The region's pieces from its start on, in stream order, merged from its slices (each
    read when the stream reaches it), and the gaps only the plan knows of; none past its
    :attr:`~.plan.RegionPlan.horizon`. There the region runs out of bytes, as at the end of
    its slices: before, it took the bytes of a part it was not given (segments reordered
    across the last split it may read) for bytes lost, and a message in progress for cut."""
    items = _merged(stream, region, source)
    horizon = region.horizon
    if horizon is None:
        return items
    return _before(items, horizon)


def _before(items: Iterator[Piece | Gap], horizon: int) -> Iterator[Piece | Gap]:
    """``items`` (in stream order) cut at stream offset ``horizon``."""
    for item in items:
        if item.offset >= horizon:
            return
        if isinstance(item, Piece) and item.offset + len(item.data) > horizon:
            yield Piece(item.offset, item.ts, item.data[: horizon - item.offset], item.capture)
            return
        yield item


def _merged(stream: StreamPlan, region: RegionPlan, source: _Source) -> Iterator[Piece | Gap]:
    """:func:`_items` before the horizon is applied."""
    slices = sorted(region.slices, key=lambda s: s.low)
    # (offset of the next piece, tie-breaker, that piece, the rest of its slice's pieces)
    heap: list[tuple[int, int, Piece, Iterator[Piece]]] = []
    order = 0
    next_slice = 0
    start = region.start
    if region.index == 0 and not stream.syn:
        yield Gap(0, None, stream.first_ts)
    position = start
    while True:
        # Open every slice that may hold the next bytes.
        while next_slice < len(slices) and (not heap or slices[next_slice].low <= heap[0][0]):
            part = slices[next_slice]
            next_slice += 1
            rest = source.pieces(part, start)
            head = next(rest, None)
            if head is not None:
                heapq.heappush(heap, (head.offset, order, head, rest))
                order += 1
        if not heap:
            break
        if len(heap) == 1:
            # One slice open (the usual case): its pieces come in stream order, with no
            # merging, until the stream reaches the next slice, which may hold earlier bytes.
            _offset, _order, first, rest = heap.pop()
            low = slices[next_slice].low if next_slice < len(slices) else None
            current: Piece | None = first
            while current is not None:
                piece = current
                if piece.offset < start:
                    piece = Piece(
                        start, piece.ts, piece.data[start - piece.offset :], piece.capture
                    )
                yield piece
                position = max(position, piece.offset + len(piece.data))
                current = next(rest, None)
                if current is not None and low is not None and current.offset >= low:
                    heapq.heappush(heap, (current.offset, order, current, rest))
                    order += 1
                    break
            continue
        _offset, _order, piece, rest = heapq.heappop(heap)
        following = next(rest, None)
        if following is not None:
            heapq.heappush(heap, (following.offset, order, following, rest))
            order += 1
        if piece.offset < start:
            piece = Piece(start, piece.ts, piece.data[start - piece.offset :], piece.capture)
        yield piece
        position = max(position, piece.offset + len(piece.data))
    # Bytes lost before the FIN: a region that may read to the stream's end (a resync or a
    # message running on past its own) meets them as one pass does.
    if region.reads_to_end and stream.fin_offset is not None and stream.fin_offset > position:
        yield Gap(position, stream.fin_offset - position, stream.fin_ts or stream.last_ts)


def run_task(task: Task) -> TaskResult:
    """Dissect the task's regions into its part files (runs in a Spark task)."""
    return run_tasks([task])


def run_tasks(tasks: Sequence[Task]) -> TaskResult:
    """Dissect the regions of ``tasks``, one after another, into one set of part files named
    after the first; their results as one (a Spark task runs the tasks of several small
    splits this way: see :func:`~.job.batched`)."""
    result = TaskResult(tasks[0].name)
    writers = TableWriters(tasks[0].out, tasks[0].name)
    batch = _Batch(tasks)
    for task in tasks:
        _dissect(task, result, writers, batch)
    result.rows = writers.close()
    result.files = dict(writers.files)
    result.tallies = writers.tallies
    return result


def _dissect(task: Task, result: TaskResult, writers: TableWriters, batch: _Batch) -> None:
    """Dissect ``task``'s regions into ``writers``; add its regions, parts and finished
    connections to ``result``."""
    own = TaskResult(task.name)
    source = (None if task.split is None else batch.source(task.split.index)) or _Source(task)
    source.home()
    for stream, region in task.regions:
        dissector = DirectionDissector(
            connection=stream.name,
            direction=stream.direction,
            bodies=task.bodies,
            region=stream.region(region),
        )
        for frames, others in dissector.run_batches(_items(stream, region, source)):
            writers.add_rows("frames", frames)
            writers.extend(others)
        facts = dissector.facts
        facts.protocol = None  # travels by name (spec)
        own.regions.append(RegionResult(stream.id, region.index, dissector.edge, facts))
    own.parts = list(source.counts.values())
    batch.done(task)
    finish_connections(task, own, writers)
    result.regions += own.regions
    result.parts += own.parts
    result.finished += own.finished
    if task.split is not None:
        result.bytes += task.split.end - task.split.start


def tcp_counts(parts: Iterable[PartCounts]) -> dict[int, list[int]]:
    """Stream id -> [conflicting, out of window, not compared] over ``parts`` (of any
    tasks)."""
    tcp: dict[int, list[int]] = {}
    for part in parts:
        counter = tcp.setdefault(part.stream, [0, 0, 0])
        counter[0] += part.conflicting
        counter[1] += part.out_of_window
        counter[2] += part.not_compared
    return tcp


def finish_connections(task: Task, result: TaskResult, writers: TableWriters) -> None:
    """Check and write here what the driver would for each of ``task.connections``, and take
    its streams out of ``result``: each stream's check (:func:`~.plan.check_stream`), the
    negotiated limits its regions assumed against those they found, the rows the check
    decides, and the ``connections`` row with the problems of the connection's ends
    (:func:`~.plan.connection_rows`). All of it depends only on the streams' one region each
    and on the TCP counts of their parts, all in this task. A connection whose check fails,
    or whose limits were not those found, is left to the driver, which dissects it again.

    The driver would otherwise receive every region's edge and facts (their methods, field
    tables and all) and work through each connection alone: with thousands of short
    connections per split, most of what a task sent back and most of the driver's last
    stage."""
    if not task.connections:
        return
    regions = {r.stream: r for r in result.regions}
    plans = {stream.id: stream for stream, _ in task.regions}
    tcp = tcp_counts(result.parts)
    done: set[int] = set()
    for connection in task.connections:
        streams = {d: plans[i] for d, i in connection.streams.items()}
        verdicts = {s.id: check_stream(s, [regions[s.id].edge]) for s in streams.values()}
        if not all(verdict.ok for verdict in verdicts.values()):
            continue
        facts = {i: {0: regions[i].facts} for i in verdicts}
        if misnegotiated(streams, facts, whole=set(verdicts))[0]:
            continue
        for verdict in verdicts.values():
            writers.extend(("frames", row) for row in verdict.frames)
            writers.extend(("problems", row) for row in verdict.problems)
        extra = {i: len(verdict.problems) for i, verdict in verdicts.items()}
        rules = {i: verdict.rules for i, verdict in verdicts.items()}
        writers.extend(connection_rows(connection, streams, facts, tcp, extra, rules))
        result.finished.append(connection.id)
        done.update(verdicts)
    result.regions = [r for r in result.regions if r.stream not in done]
    result.parts = [p for p in result.parts if p.stream not in done]


def complete_heads(plan: Plan, splits: Sequence[Split]) -> int:
    """Read the rest of the heads that a split's end cut short before their handshake (see
    :func:`~.plan.head_wanted`), each split parsed only as far as they need (they continue
    near its start), and plan those connections' limits again. Returns how many."""
    wanted: dict[int, tuple[int, list[Slice]]] = {}
    for stream in plan.streams:
        found = head_wanted(stream)
        if found is not None and not _shows_tuning(stream.direction, stream.head):
            wanted[stream.id] = found
    windows: dict[int, dict[PartKey, PartWindow]] = {}
    for stream_id, (_, slices) in wanted.items():
        for s in slices:
            fin = plan.streams[stream_id].fin_offset
            windows.setdefault(s.split, {})[s.key] = PartWindow(stream_id, s.offset0, fin, s.owned)
    lazy = _Readers({i: splits[i] for i in windows}, windows.__getitem__)
    for stream_id, (_, slices) in wanted.items():
        stream = plan.streams[stream_id]
        stream.head = _read_head(stream.direction, stream.head or b"", slices, lazy)
    done = {plan.streams[i].connection for i in wanted}
    for connection in done:
        plan_limits_again(plan.connections[connection], plan.streams)
    for stream in plan.streams:
        stream.head = None
    return len(done)


def _read_head(direction: str, head: bytes, slices: list[Slice], lazy: _Readers) -> bytes:
    """``head`` read on from ``slices`` as far as the side's handshake frame: a quiet side's
    next bytes may lie far into the next split, its tune-ok not."""
    out = bytearray(head)
    for part in sorted(slices, key=lambda s: s.low):
        for piece in lazy[part.split].pieces(part.key, len(out)):
            if piece.offset != len(out) or len(out) >= HEAD_BYTES:
                return bytes(out)  # bytes missing from the capture, or enough
            out += piece.data[: HEAD_BYTES - len(out)]
            if _shows_tuning(direction, bytes(out)):
                return bytes(out)
    return bytes(out)


def _shows_tuning(direction: str, head: bytes | None) -> bool:
    """``head`` holds the side's tune-ok (client) or tune (server)."""
    client, server = (head, None) if direction == "client" else (None, head)
    return direction in head_negotiation(client, server)[1]


def fallback_region(stream: StreamPlan) -> RegionPlan:
    """The whole of ``stream`` as one region, read part after part."""
    slices = tuple(s for s in stream.slices if s.owned)
    return RegionPlan(stream.id, 0, 0, None, -1, slices)
