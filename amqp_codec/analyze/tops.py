"""The report's unbounded figures: top exchanges, routing keys, clients, largest messages.

These group by values a capture may hold millions of (a routing key per message, a client
product per connection), so no single process may hold every group: each table file is read
in a task, batch by batch; each batch is grouped with Arrow into partial counts per key;
Spark's shuffle adds them up per key (:meth:`pyspark.RDD.reduceByKey`, which spills to
disk past ``spark.python.worker.memory``), and each reduce partition keeps only its best
:data:`TOP` keys of each list, so the driver receives a few lists of fifteen. The same
job counts the message rate's buckets (bounded: roles times buckets).

Everything runs in the Python workers the job already started, on Spark's core scheduler:
no Spark SQL query is planned or compiled, which on a driver that has not run one yet costs
more than all the report's counting together.

Orders are Spark SQL's (``ORDER BY n DESC, key ASC``): missing values first when ascending
and last when descending; strings compare by code point, as their UTF-8 bytes do.
"""

from __future__ import annotations

import bisect
import heapq
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .tally import MESSAGE_KEYS, null_first, role_array

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["TOP", "Tops", "role_counts", "shares", "table_files", "top_figures"]

#: Entries in each top list.
TOP = 15

#: Per role: messages and body bytes (None while every body size is missing, as SQL's sum).
Roles = dict[Any, list[Any]]

_MESSAGE_COLUMNS = ["timestamp", "connection", "offset", "method", "direction", *MESSAGE_KEYS]


def table_files(out: str, table: str) -> list[str]:
    """The files of one table, as Spark reads them (names starting with ``.`` or ``_`` are
    not data)."""
    folder = os.path.join(out, table)
    return sorted(
        os.path.join(folder, name)
        for name in os.listdir(folder)
        if not name.startswith((".", "_")) and os.path.isfile(os.path.join(folder, name))
    )


def shares(items: Sequence[tuple[str, str]], tasks: int) -> list[list[tuple[str, str]]]:
    """``(table, path)`` items in at most ``tasks`` lists of about equal bytes: a Spark task
    costs tens of milliseconds to start, more than reading a small file."""
    loads = [(0, i) for i in range(max(1, min(tasks, len(items))))]
    lists: list[list[tuple[str, str]]] = [[] for _ in loads]
    for item in sorted(items, key=lambda item: -os.path.getsize(item[1])):
        load, i = heapq.heappop(loads)
        lists[i].append(item)
        heapq.heappush(loads, (load + os.path.getsize(item[1]), i))
    return [share for share in lists if share]


#: Table bytes (Parquet) the driver reads itself for the report rather than start Spark jobs
#: for: a job's tasks and shuffle cost more than reading this little, and what the driver
#: holds from it stays as small.
DRIVER_BYTES = 32 * 2**20


def in_driver(items: Sequence[tuple[str, str]]) -> bool:
    """Whether the ``(table, path)`` items are few enough bytes to read in the driver."""
    return sum(os.path.getsize(path) for _, path in items) <= DRIVER_BYTES


def _add(a: Any, b: Any) -> Any:
    """SQL's sum of two partial sums: None only while both are."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _add_roles(a: Roles, b: Roles) -> Roles:
    for role, (n, size) in b.items():
        mine = a.get(role)
        if mine is None:
            a[role] = [n, size]
        else:
            mine[0] += n
            mine[1] = _add(mine[1], size)
    return a


def _first_key(first: tuple[Any, ...]) -> tuple[Any, ...]:
    """The order of ``(timestamp, connection, offset)`` as Spark orders the struct."""
    return tuple(null_first(v) for v in first)


def _merge(a: Any, b: Any) -> Any:
    """Two partial values of the same key added up."""
    kind = type(a)
    if kind is int:  # a client's connections, a rate bucket's messages
        return a + b
    if kind is dict:  # per role, of an exchange or a routing key
        return _add_roles(a, b)
    roles, first = a  # a distinct message: per role, and where it was first seen
    other_roles, other_first = b
    if _first_key(other_first) < _first_key(first):
        first = other_first
    return (_add_roles(roles, other_roles), first)


@dataclass(frozen=True, slots=True)
class _Job:
    """What each task needs to know: the largest messages' threshold and the rate's
    buckets."""

    threshold: int | None
    lo: float | None
    width: float
    buckets: int


def _grouped_roles(data: Any, column: str, tag: str) -> Iterator[tuple[Any, Any]]:
    """Per value of ``column`` in a batch: messages and body bytes per role."""
    grouped = data.group_by([column, "role"], use_threads=False).aggregate(
        [([], "count_all"), ("body_size", "sum")]
    )
    values: dict[Any, Roles] = {}
    for value, role, n, size in zip(*(c.to_pylist() for c in grouped.columns), strict=True):
        values.setdefault(value, {})[role] = [n, size]
    for value, roles in values.items():
        yield (tag, value), roles


def _message_records(job: _Job, path: str) -> Iterator[tuple[Any, Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(columns=_MESSAGE_COLUMNS):
        if batch.num_rows == 0:
            continue
        data = pa.Table.from_batches([batch])
        data = data.append_column("role", role_array(batch["method"], batch["direction"]))
        yield from _grouped_roles(data, "exchange", "x")
        yield from _grouped_roles(data, "routing_key", "k")
        # The largest messages: only rows that may be among them, one by one.
        big = data
        if job.threshold is not None:
            big = data.filter(
                pc.fill_null(pc.greater_equal(data["body_size"], job.threshold), False)
            )
        messages: dict[tuple[Any, ...], Any] = {}
        columns = [
            big[c].to_pylist() for c in (*MESSAGE_KEYS, "role", "timestamp", "connection", "offset")
        ]
        for size, sha, exchange, key, role, ts, connection, offset in zip(*columns, strict=True):
            first = (ts, connection, offset)
            entry = messages.get((size, sha, exchange, key))
            if entry is None:
                messages[(size, sha, exchange, key)] = ({role: [1, size]}, first)
                continue
            _add_roles(entry[0], {role: [1, size]})
            if _first_key(first) < _first_key(entry[1]):
                messages[(size, sha, exchange, key)] = (entry[0], first)
        for message, value in messages.items():
            yield ("m", *message), value
        if job.lo is not None:
            timed = data.filter(pc.is_valid(data["timestamp"]))
            # As Spark would: floor((t - lo) / width) in doubles, the last bucket closed.
            index = pc.floor(pc.divide(pc.subtract(timed["timestamp"], job.lo), job.width))
            index = pc.max_element_wise(pc.min_element_wise(index, job.buckets - 1), 0)
            counted = (
                pa.table({"role": timed["role"], "bucket": index.cast(pa.int64())})
                .group_by(["role", "bucket"], use_threads=False)
                .aggregate([([], "count_all")])
            )
            for role, bucket, n in zip(*(c.to_pylist() for c in counted.columns), strict=True):
                yield ("r", role, bucket), n


def _client_records(path: str) -> Iterator[tuple[Any, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(columns=["client_product", "client_version"]):
        grouped = (
            pa.Table.from_batches([batch])
            .group_by(["client_product", "client_version"], use_threads=False)
            .aggregate([([], "count_all")])
        )
        for product, version, n in zip(*(c.to_pylist() for c in grouped.columns), strict=True):
            yield ("c", product, version), n


def _records(job: _Job, share: list[tuple[str, str]]) -> Iterator[tuple[Any, Any]]:
    for table, path in share:
        if table == "messages":
            yield from _message_records(job, path)
        else:
            yield from _client_records(path)


class _Best:
    """The ``size`` smallest items by ``key`` seen so far (kept sorted)."""

    def __init__(self, size: int, key: Callable[[Any], Any]) -> None:
        self.size, self.key = size, key
        self.keys: list[Any] = []
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        key = self.key(item)
        if len(self.keys) == self.size and not key < self.keys[-1]:
            return
        at = bisect.bisect_right(self.keys, key)
        self.keys.insert(at, key)
        self.items.insert(at, item)
        if len(self.keys) > self.size:
            self.keys.pop()
            self.items.pop()


def _busiest(roles: Roles, measure: int) -> Any:
    """The most messages (0) or body bytes (1) of any role; None when no size is known."""
    values = [v[measure] for v in roles.values() if v[measure] is not None]
    return max(values) if values else None


def _by_messages(item: tuple[Any, Roles]) -> tuple[Any, ...]:
    (_, value), roles = item
    return (-_busiest(roles, 0), null_first(value))


def _by_bytes(item: tuple[Any, Roles]) -> tuple[Any, ...]:
    (_, value), roles = item
    size = _busiest(roles, 1)
    return (size is None, -(size or 0), null_first(value))


def _by_size(item: tuple[Any, Any]) -> tuple[Any, ...]:
    (_, size, sha, exchange, key), (_, first) = item
    return (
        size is None,
        -(size or 0),
        _first_key(first),
        null_first(sha),
        null_first(exchange),
        null_first(key),
    )


def _by_connections(item: tuple[Any, int]) -> tuple[Any, ...]:
    (_, product, version), n = item
    return (-n, null_first(product), null_first(version))


def _lists() -> dict[str, _Best]:
    return {
        "exchange by_messages": _Best(TOP, _by_messages),
        "exchange by_bytes": _Best(TOP, _by_bytes),
        "routing_key by_messages": _Best(TOP, _by_messages),
        "routing_key by_bytes": _Best(TOP, _by_bytes),
        "largest": _Best(TOP, _by_size),
        "clients": _Best(TOP, _by_connections),
    }


def _best(records: Iterable[tuple[Any, Any]]) -> Iterator[tuple[str, list[Any]]]:
    """One reduce partition's best keys of each list, and its rate buckets."""
    lists = _lists()
    rate: list[Any] = []
    for item in records:
        tag = item[0][0]
        if tag == "x":
            lists["exchange by_messages"].add(item)
            lists["exchange by_bytes"].add(item)
        elif tag == "k":
            lists["routing_key by_messages"].add(item)
            lists["routing_key by_bytes"].add(item)
        elif tag == "m":
            lists["largest"].add(item)
        elif tag == "c":
            lists["clients"].add(item)
        else:
            rate.append(item)
    for name, best in lists.items():
        yield name, best.items
    yield "rate", rate


@dataclass
class Tops:
    """The unbounded figures, best first: each list holds ``((tag, *key), value)`` items."""

    lists: dict[str, list[Any]]
    rate: dict[Any, list[int]]


def top_figures(
    sc: SparkContext,
    out: str,
    threshold: int | None,
    lo: float | None,
    width: float,
    buckets: int,
) -> Tops:
    """One Spark job over ``messages`` and ``connections`` in ``out``. ``threshold``: a body
    size every one of the :data:`TOP` largest distinct messages reaches (None: unknown);
    ``lo``, ``width``, ``buckets``: the rate's first bucket, bucket width and count (no rate
    when ``lo`` is None)."""
    job = _Job(threshold, lo, width, buckets)
    items = [(t, p) for t in ("messages", "connections") for p in table_files(out, t)]
    if not items:
        return Tops({name: [] for name in _lists()}, {})
    partitions = max(1, sc.defaultParallelism)
    if in_driver(items):  # the same functions, one partition
        merged: dict[Any, Any] = {}
        for key, value in _records(job, list(items)):
            merged[key] = _merge(merged[key], value) if key in merged else value
        found = list(_best(merged.items()))
    else:
        tasks = shares(items, partitions)
        found = (
            sc.parallelize(tasks, len(tasks))
            .flatMap(lambda share: _records(job, share))
            .reduceByKey(_merge, partitions)
            .mapPartitions(_best)
            .collect()
        )
    lists = _lists()
    rate: dict[Any, list[int]] = {}
    for name, items_found in found:
        if name == "rate":
            for (_, role, bucket), n in items_found:
                rate.setdefault(role, [0] * buckets)[bucket] += n
            continue
        for item in items_found:
            lists[name].add(item)
    return Tops({name: best.items for name, best in lists.items()}, rate)


def role_counts(roles: Roles, measure: int) -> dict[Any, int]:
    """Per role in role order: messages (``measure`` 0) or body bytes (1), 0 when unknown."""
    ordered: Sequence[Any] = sorted(roles, key=null_first)
    return {role: int(roles[role][measure] or 0) for role in ordered}
