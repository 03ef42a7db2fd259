"""The report's bounded figures, counted from the tables' rows in Arrow batches.

A :class:`Tally` is fed record batches of the four tables (:meth:`Tally.add`) and keeps
only figures whose size has a bound that does not depend on the capture: counts per message
role and per method and sender (bounded by the protocol's methods), reply codes (a short per
close or return method), the time span, per capture file figures (bounded by the inputs),
problems per kind (bounded by the kinds and error classes), the first
:data:`PROBLEMS_LISTED` problems and the :data:`LARGEST_KEYS` largest distinct messages by
body size (fixed-size lists). Nothing in it grows with rows or with distinct exchanges,
routing keys or connections; tallies of several parts of a table add up (:meth:`merge`).

Each batch is grouped with Arrow's compute functions first, so Python sees a few rows per
batch (one per group), not one per table row; only the fields of the close and return
frames are read as JSON one by one.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "LARGEST_KEYS",
    "MESSAGE_KEYS",
    "PROBLEMS_LISTED",
    "PROBLEM_COLUMNS",
    "REPLY_METHODS",
    "TALLY_COLUMNS",
    "Tally",
    "null_first",
    "role_array",
    "tally_file",
    "tally_files",
]

#: Problems listed one by one at the end of the report.
PROBLEMS_LISTED = 100
#: The largest distinct messages kept: as many as the report lists.
LARGEST_KEYS = 15
#: What makes a message "the same message" (a publish and its deliveries).
MESSAGE_KEYS = ("body_size", "body_sha256", "exchange", "routing_key")
#: The methods whose reply codes the report counts.
REPLY_METHODS = ("connection.close", "channel.close", "basic.return")
#: The order problems are listed in (Spark's ascending order: missing values first); the
#: columns after the first five only make the order total, ties listed the same way each time.
PROBLEM_ORDER = (
    "capture",
    "connection",
    "direction",
    "offset",
    "packet",
    "kind",
    "error",
    "detail",
)
#: The columns shown with each problem (and its detail).
PROBLEM_COLUMNS = ("capture", "packet", "connection", "direction", "offset", "kind", "error")
_PROBLEM_ROW = (*PROBLEM_COLUMNS, "detail")
#: The columns each table's tally reads.
TALLY_COLUMNS: dict[str, tuple[str, ...]] = {
    "frames": ("capture", "timestamp", "frame_type", "method", "direction", "fields"),
    "messages": ("method", "direction", *MESSAGE_KEYS),
    "connections": (),
    "problems": (*_PROBLEM_ROW,),
}

_INT32 = (-(2**31), 2**31 - 1)


def role_array(method: pa.Array, direction: pa.Array) -> pa.Array:
    """Each message's role: its method, and for 99-0's ``message.transfer`` its sender too
    (``message.transfer client``), as the report labels counts."""
    import pyarrow as pa
    import pyarrow.compute as pc

    transfer = pc.fill_null(pc.equal(method, "message.transfer"), False)
    # As Spark's concat_ws: a missing sender leaves the method alone.
    with_sender = pc.binary_join_element_wise(method, direction, " ", null_handling="skip").cast(
        pa.string()
    )
    return pc.if_else(transfer, with_sender, method)


def null_first(value: Any) -> tuple[bool, Any]:
    """A sort key that puts None first, as Spark's ascending order does."""
    return (value is not None, value if value is not None else 0)


def _problem_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(null_first(row[c]) for c in PROBLEM_ORDER)


def _largest_key(key: tuple[Any, ...]) -> tuple[Any, ...]:
    # Body size descending, missing sizes last; the rest only to make the order total.
    size = key[0]
    return (size is None, -(size or 0), *(null_first(v) for v in key[1:]))


def _json_text(value: Any) -> str | None:
    """A JSON value as Spark's ``get_json_object`` returns it: a string as itself, anything
    else as its JSON text."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _json_int(value: Any) -> int | None:
    """A JSON value cast to Spark's ``int`` as ``get_json_object(...).cast("int")``: a whole
    number or a string of one in range; None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if _INT32[0] <= number <= _INT32[1] else None


def _reply(fields: str | None) -> tuple[int | None, str | None]:
    try:
        decoded = json.loads(fields) if fields is not None else None
    except ValueError:
        decoded = None
    if not isinstance(decoded, dict):
        return None, None
    return _json_int(decoded.get("reply-code")), _json_text(decoded.get("reply-text"))


def _lesser(a: Any, b: Any) -> Any:
    """The smaller of two values that may be None (None only when both are)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _greater(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


@dataclass
class Tally:
    """The bounded figures of the rows added so far."""

    rows: dict[str, int] = field(default_factory=dict)
    """Rows per table."""
    captures: dict[str | None, list[Any]] = field(default_factory=dict)
    """Per capture file: first and last frame time, frames, problems."""
    methods: dict[tuple[str | None, str | None], int] = field(default_factory=dict)
    """Method frames per (method, sender)."""
    replies: dict[tuple[int | None, str | None], list[Any]] = field(default_factory=dict)
    """Per (reply code, method): frames, and the least reply text."""
    roles: dict[str | None, int] = field(default_factory=dict)
    """Messages per role."""
    largest: list[tuple[Any, ...]] = field(default_factory=list)
    """The largest distinct messages (:data:`MESSAGE_KEYS`), largest first."""
    problem_kinds: dict[tuple[str | None, str | None], int] = field(default_factory=dict)
    first_problems: list[dict[str, Any]] = field(default_factory=list)
    """The first problems in the listed order."""

    # -- feeding -------------------------------------------------------------------------

    def add(self, table: str, batch: pa.RecordBatch | pa.Table) -> None:
        """Count a batch of ``table``'s rows (holding at least :data:`TALLY_COLUMNS`)."""
        import pyarrow as pa

        self.rows[table] = self.rows.get(table, 0) + batch.num_rows
        if batch.num_rows == 0:
            return
        data = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        if table == "frames":
            self._frames(data)
        elif table == "messages":
            self._messages(data)
        elif table == "problems":
            self._problems(data)

    def _capture(self, name: str | None) -> list[Any]:
        return self.captures.setdefault(name, [None, None, 0, 0])

    def _frames(self, data: pa.Table) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        spans = data.group_by(["capture"], use_threads=False).aggregate(
            [("timestamp", "min"), ("timestamp", "max"), ([], "count_all")]
        )
        for name, lo, hi, n in zip(*(c.to_pylist() for c in spans.columns), strict=True):
            entry = self._capture(name)
            entry[0], entry[1] = _lesser(entry[0], lo), _greater(entry[1], hi)
            entry[2] += n
        method_frames = data.filter(pc.fill_null(pc.equal(data["frame_type"], "method"), False))
        mix = method_frames.group_by(["method", "direction"], use_threads=False).aggregate(
            [([], "count_all")]
        )
        for method, direction, n in zip(*(c.to_pylist() for c in mix.columns), strict=True):
            self.methods[(method, direction)] = self.methods.get((method, direction), 0) + n
        closes = data.filter(pc.fill_null(pc.is_in(data["method"], pa.array(REPLY_METHODS)), False))
        for method, fields in zip(
            closes["method"].to_pylist(), closes["fields"].to_pylist(), strict=True
        ):
            code, text = _reply(fields)
            entry = self.replies.setdefault((code, method), [0, None])
            entry[0] += 1
            entry[1] = _lesser(entry[1], text)

    def _messages(self, data: pa.Table) -> None:
        import pyarrow as pa

        role = role_array(data["method"].combine_chunks(), data["direction"].combine_chunks())
        counted = pa.table({"role": role}).group_by(["role"], use_threads=False)
        for name, n in zip(
            *(c.to_pylist() for c in counted.aggregate([([], "count_all")]).columns), strict=True
        ):
            self.roles[name] = self.roles.get(name, 0) + n
        distinct = (
            data.select(list(MESSAGE_KEYS))
            .group_by(list(MESSAGE_KEYS), use_threads=False)
            .aggregate([])
        )
        biggest = distinct.sort_by([("body_size", "descending")]).slice(0, LARGEST_KEYS)
        self._keep_largest(zip(*(biggest[k].to_pylist() for k in MESSAGE_KEYS), strict=True))

    def _keep_largest(self, keys: Iterable[tuple[Any, ...]]) -> None:
        merged = set(self.largest) | set(keys)
        self.largest = heapq.nsmallest(LARGEST_KEYS, merged, key=_largest_key)

    def _problems(self, data: pa.Table) -> None:
        import pyarrow.compute as pc

        per_capture = data.group_by(["capture"], use_threads=False).aggregate([([], "count_all")])
        for name, n in zip(*(c.to_pylist() for c in per_capture.columns), strict=True):
            self._capture(name)[3] += n
        kinds = data.group_by(["kind", "error"], use_threads=False).aggregate([([], "count_all")])
        for kind, error, n in zip(*(c.to_pylist() for c in kinds.columns), strict=True):
            self.problem_kinds[(kind, error)] = self.problem_kinds.get((kind, error), 0) + n
        # Arrow finds the batch's first rows; only those become Python rows.
        order = pc.sort_indices(data, options=_nulls_first_keys())
        first = data.select(list(_PROBLEM_ROW)).take(order[:PROBLEMS_LISTED]).to_pylist()
        self._keep_problems(first)

    def _keep_problems(self, rows: Iterable[dict[str, Any]]) -> None:
        candidates = [*self.first_problems, *rows]
        self.first_problems = heapq.nsmallest(PROBLEMS_LISTED, candidates, key=_problem_key)

    # -- adding up -----------------------------------------------------------------------

    def merge(self, other: Tally) -> None:
        """Add ``other``'s rows to these."""
        for table, n in other.rows.items():
            self.rows[table] = self.rows.get(table, 0) + n
        for name, (lo, hi, frames, problems) in other.captures.items():
            entry = self._capture(name)
            entry[0], entry[1] = _lesser(entry[0], lo), _greater(entry[1], hi)
            entry[2] += frames
            entry[3] += problems
        for pair, n in other.methods.items():
            self.methods[pair] = self.methods.get(pair, 0) + n
        for reply, (n, text) in other.replies.items():
            entry = self.replies.setdefault(reply, [0, None])
            entry[0] += n
            entry[1] = _lesser(entry[1], text)
        for name, n in other.roles.items():
            self.roles[name] = self.roles.get(name, 0) + n
        for key, n in other.problem_kinds.items():
            self.problem_kinds[key] = self.problem_kinds.get(key, 0) + n
        self._keep_largest(other.largest)
        self._keep_problems(other.first_problems)

    # -- figures -------------------------------------------------------------------------

    def span(self) -> tuple[float | None, float | None]:
        """The first and last frame time of the whole capture."""
        lo = hi = None
        for first, last, _, _ in self.captures.values():
            lo, hi = _lesser(lo, first), _greater(hi, last)
        return lo, hi

    def largest_threshold(self) -> int | None:
        """A body size every one of the :data:`LARGEST_KEYS` largest distinct messages
        reaches (None: any size, when fewer have one)."""
        if len(self.largest) < LARGEST_KEYS:
            return None
        size: int | None = self.largest[-1][0]
        return size

    def problem_rows(self) -> list[dict[str, Any]]:
        """The first problems, with the columns the report lists."""
        return [dict(row) for row in self.first_problems]


def tally_file(item: tuple[str, str]) -> Tally:
    """The tally of one Parquet file of a table, given as ``(table, path)``: read batch by
    batch, only the columns the tally needs (runs in a Spark task)."""
    import pyarrow.parquet as pq

    table, path = item
    tally = Tally(rows={table: 0})
    file = pq.ParquetFile(path)
    columns = TALLY_COLUMNS[table]
    if not columns:
        tally.rows[table] = file.metadata.num_rows
        return tally
    for batch in file.iter_batches(columns=list(columns)):
        tally.add(table, batch)
    return tally


def tally_files(items: Iterable[tuple[str, str]]) -> Tally:
    """The tally of several files, as :func:`tally_file` takes them (runs in a Spark task)."""
    tally = Tally()
    for item in items:
        tally.merge(tally_file(item))
    return tally


def _nulls_first_keys() -> Any:
    """Sort keys of :data:`PROBLEM_ORDER`, ascending with nulls first: per key from pyarrow
    25 on (where one ``null_placement`` for all keys is deprecated), else as options."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if int(pa.__version__.split(".")[0]) >= 25:
        return pc.SortOptions([(c, "ascending", "at_start") for c in PROBLEM_ORDER])
    return pc.SortOptions([(c, "ascending") for c in PROBLEM_ORDER], null_placement="at_start")
