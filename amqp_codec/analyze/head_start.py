"""The job's first tasks run in the driver while Spark starts, when Spark runs on this machine.

Starting the driver's JVM takes a few seconds, during which one core runs the JVM and the
others wait. On a local master the driver reads the same disks and writes the same output
folder as the tasks, so :class:`HeadStart`, a :data:`~.job.Mapper`, runs a stage's tasks
itself meanwhile (the same functions a Spark task runs, in a thread). Once the session is
up, the tasks it has not begun go to Spark as usual, and its results join theirs: the
tables cannot tell where a task ran. A small capture may be done before Spark is up. A
cluster's driver does not do this (it may be far from the captures, and has other work).

The tasks' thread holds the GIL that the thread starting the JVM needs back after each
py4j call, and at Python's default switch interval (5 ms) each reply can wait that long:
on 1 GB in one connection the SparkContext took 2.8 to 3.2 s to come up instead of 1.9 s.
So while the head start runs, the job hands the GIL over every 0.5 ms instead
(``_HEAD_START_SWITCH_INTERVAL`` in :mod:`~amqp_codec.analyze.job`, restored when the run
ends); a CPU-bound thread then gives way quickly, and only when another thread asks.
Whole commands alternated with the default (26 November 2026, four pairs on each 1 GB
set): 0.96x the wall time in one connection of 1448-byte segments, 0.98x of 65000-byte
segments, 0.96x on many connections. (On the earlier job, which started a SparkSession,
0.2 ms left a scan task to Spark and was slower; the same tasks in a forked process were
slower still than in this thread.)

Once the session is up, the driver starts the executors' Python workers (:func:`start_worker`,
a job of one small task per core) before Spark takes over, while the tasks here go on: a
session's first Python job waits over a second for them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["HeadStart", "HeadStartStopped", "runs_here", "start_worker"]

_LOCAL_MASTER = re.compile(r"local(\[[^\]]*\])?")

#: Runs a function over items, in parallel where it can (as :data:`~.job.Mapper`).
_Mapper = Callable[[str, Callable[[Any], Any], list[Any]], list[Any]]


def runs_here(master: str | None) -> bool:
    """Whether a session started with ``master`` runs its tasks on this machine (a local
    master; None is ``local[*]`` for a session this job starts)."""
    return master is None or _LOCAL_MASTER.fullmatch(master) is not None


def start_worker(index: int) -> int:
    """A task that starts a Python worker before Spark takes over: it imports what a stage's
    first task would import in the worker (the daemon leaves pyarrow to the workers)."""
    import pyarrow.parquet  # noqa: F401

    return index


class HeadStartStopped(Exception):
    """The run stopped (interrupted, or Spark failed to start) before Spark took over."""


class HeadStart:
    """A mapper that runs each stage's tasks here, one at a time, until :meth:`take_over`
    gives it Spark's mapper; then the tasks not begun go to Spark."""

    def __init__(self, say: Callable[[str], None] | None = None) -> None:
        self._say = say or (lambda message: None)
        self._changed = threading.Condition()
        self._spark: _Mapper | None = None
        self._stopped = False

    def take_over(self, spark: _Mapper) -> None:
        """Spark is up: stages hand it the tasks they have not begun."""
        with self._changed:
            self._spark = spark
            self._changed.notify_all()

    def stop(self) -> None:
        """Begin no more tasks here; a stage waiting for Spark raises
        :class:`HeadStartStopped` once its task in hand is done."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()

    def _here(self) -> bool:
        """Whether tasks still begin here (called holding the lock)."""
        return self._spark is None and not self._stopped

    def __call__(self, label: str, function: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        with self._changed:
            spark = self._spark
        if spark is not None:
            return spark(label, function, items)
        if not items:
            return []
        here = _Tasks(function, items, self._changed, self._here)
        with self._changed:
            self._changed.wait_for(
                lambda: here.finished or self._spark is not None or self._stopped
            )
            spark = self._spark
        rest = here.hand_over()
        if here.finished or spark is None:
            here.join()  # raises what failed here
        if rest and spark is None:
            raise HeadStartStopped(f"{label}: stopped before Spark took over")
        begun = len(items) - len(rest)
        self._say(f"{label}: {begun} of {len(items)} tasks run here while Spark started")
        there = spark(label, function, [items[i] for i in rest]) if spark and rest else []
        results = here.join()
        results.update(zip(rest, there, strict=True))
        return [results[i] for i in range(len(items))]


class _Tasks:
    """A thread that runs ``function`` over ``items`` in order until handed over, or until
    ``here()`` (asked under the lock of ``changed``) says tasks no longer begin here."""

    def __init__(
        self,
        function: Callable[[Any], Any],
        items: list[Any],
        changed: threading.Condition,
        here: Callable[[], bool],
    ) -> None:
        self._function, self._items, self._changed, self._here = function, items, changed, here
        self._next = 0
        self._end = len(items)
        self._results: dict[int, Any] = {}
        self._failure: BaseException | None = None
        self.finished = False
        self._thread = threading.Thread(target=self._run, name="amqp-codec head start", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                with self._changed:
                    if self._next >= self._end or not self._here():
                        return
                    index = self._next
                    self._next += 1
                self._results[index] = self._function(self._items[index])
        except BaseException as error:  # raised again in the stage's thread
            self._failure = error
        finally:
            with self._changed:
                self.finished = True
                self._changed.notify_all()

    def hand_over(self) -> list[int]:
        """Begin no more items; the indices of those not begun."""
        with self._changed:
            rest = list(range(self._next, self._end))
            self._end = self._next
        return rest

    def join(self) -> dict[int, Any]:
        """The results by index, once the item in hand is done (its failure raised)."""
        self._thread.join()
        if self._failure is not None:
            raise self._failure
        return self._results
