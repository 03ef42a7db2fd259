"""The first tasks run in the driver while Spark starts (:mod:`amqp_codec.analyze.head_start`).

Whatever the driver has done when the session is up, the tasks it has not begun go to Spark,
and the tables are the same as when Spark runs everything.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from spark_cluster import java_missing

from amqp_codec.analyze.head_start import HeadStart, HeadStartStopped, runs_here
from amqp_codec.analyze.job import write_tables
from amqp_codec.analyze.tables import TABLES

pq = pytest.importorskip("pyarrow.parquet")

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "captures"


@pytest.mark.parametrize(
    ("master", "here"),
    [
        (None, True),
        ("local", True),
        ("local[2]", True),
        ("local[*]", True),
        ("local[2,3]", True),
        ("spark://host:7077", False),
        ("yarn", False),
        ("local-cluster[2,1,1024]", False),
    ],
)
def test_only_local_masters_run_tasks_in_the_driver(master: str | None, here: bool) -> None:
    assert runs_here(master) is here


class _Spark:
    """A mapper standing in for Spark's: records what it was given."""

    def __init__(self) -> None:
        self.given: list[list[Any]] = []

    def __call__(self, label: str, function: Any, items: list[Any]) -> list[Any]:
        self.given.append(list(items))
        return [function(item) for item in items]


def test_tasks_not_begun_go_to_spark_and_results_keep_their_order() -> None:
    head = HeadStart()
    spark = _Spark()
    third = threading.Event()
    go_on = threading.Event()

    def square(n: int) -> int:
        if n == 2:  # Spark takes over while the third task runs here
            third.set()
            go_on.wait(10)
        return n * n

    def stage() -> list[int]:
        return head("squaring", square, list(range(8)))

    result: list[list[int]] = []
    worker = threading.Thread(target=lambda: result.append(stage()))
    worker.start()
    assert third.wait(10)
    head.take_over(spark)
    go_on.set()
    worker.join(10)
    assert result == [[n * n for n in range(8)]]
    assert spark.given == [[3, 4, 5, 6, 7]]
    # Once Spark is there, every later stage goes to it whole.
    assert head("again", square, [5, 6]) == [25, 36]
    assert spark.given[-1] == [5, 6]


def test_a_stage_done_here_gives_spark_nothing() -> None:
    head = HeadStart()
    assert head("quick", lambda n: n + 1, [1, 2, 3]) == [2, 3, 4]
    spark = _Spark()
    head.take_over(spark)
    assert spark.given == []


def test_a_failure_here_is_raised_in_the_stage() -> None:
    def broken(n: int) -> int:
        raise RuntimeError("task failed")

    with pytest.raises(RuntimeError, match="task failed"):
        HeadStart()("failing", broken, [1, 2])


def test_a_stopped_run_begins_no_more_tasks() -> None:
    head = HeadStart()
    begun: list[int] = []
    first = threading.Event()
    go_on = threading.Event()

    def slow(n: int) -> int:
        begun.append(n)
        first.set()
        go_on.wait(10)
        return n

    failure: list[BaseException] = []

    def stage() -> None:
        try:
            head("slow", slow, [1, 2, 3])
        except BaseException as error:
            failure.append(error)

    worker = threading.Thread(target=stage)
    worker.start()
    assert first.wait(10)
    head.stop()
    go_on.set()
    worker.join(10)
    assert begun == [1]
    assert len(failure) == 1 and isinstance(failure[0], HeadStartStopped)


def _rows(out: Path) -> dict[str, list[Any]]:
    return {name: sorted(map(repr, pq.read_table(str(out / name)).to_pylist())) for name in TABLES}


@pytest.mark.parametrize("tasks_here", [0, 1, 5, None])
def test_tables_do_not_depend_on_where_tasks_ran(tmp_path: Path, tasks_here: int | None) -> None:
    """``tasks_here``: tasks run in the driver before Spark takes over (None: all of them)."""
    captures = [str(SAMPLES)]
    write_tables(captures, str(tmp_path / "spark"), split_bytes=4096)
    head = HeadStart()
    spark = _Spark()
    ran = 0
    lock = threading.Lock()

    def counting(label: str, function: Any, items: list[Any]) -> list[Any]:
        return head(label, counted(function), items)

    def counted(function: Any) -> Any:
        def run(item: Any) -> Any:
            nonlocal ran
            with lock:
                ran += 1
                if ran == tasks_here:
                    head.take_over(spark)
            return function(item)

        return run

    if tasks_here == 0:
        head.take_over(spark)
    write_tables(captures, str(tmp_path / "head"), split_bytes=4096, mapper=counting)
    assert _rows(tmp_path / "head") == _rows(tmp_path / "spark")
    if tasks_here is None:
        assert spark.given == []
    else:
        assert spark.given, "Spark was given the rest"


#: Runs the job on local[2] with the driver's head start held in its first dissecting task
#: until Spark's workers are started, then checks that they were, once, before Spark took the
#: tasks not begun. Spark's tasks get the same function, pickled: it waits only in the driver.
_HELD_IN_THE_DRIVER = """
import os, sys, time
import amqp_codec.analyze.job as job
import amqp_codec.analyze.regions as regions

driver = os.getpid()
started = []
switch_intervals = []  # while tasks run here
run_tasks, start_workers = regions.run_tasks, job._start_workers

def held_run_tasks(tasks):
    if os.getpid() == driver:
        switch_intervals.append(sys.getswitchinterval())
        deadline = time.monotonic() + 120
        while not started and time.monotonic() < deadline:
            time.sleep(0.05)
    return run_tasks(tasks)

def recorded_start_workers(sc):
    start_workers(sc)
    started.append(sc.defaultParallelism)

regions.run_tasks = held_run_tasks
job._start_workers = recorded_start_workers
before = sys.getswitchinterval()
job.run(sys.argv[1], sys.argv[2], master="local[2]", progress=False, split_bytes=4096)
assert started == [2], started
# The GIL changes hands more often while tasks run here, and as before once the run ends.
assert set(switch_intervals) == {job._HEAD_START_SWITCH_INTERVAL} != {before}, switch_intervals
assert sys.getswitchinterval() == before
"""


@pytest.mark.skipif(java_missing() is not None, reason=str(java_missing()))
def test_spark_starts_its_workers_before_taking_over_from_a_busy_head_start(
    tmp_path: Path,
) -> None:
    captures = str(SAMPLES)
    write_tables([captures], str(tmp_path / "here"), split_bytes=4096)
    result = subprocess.run(
        [sys.executable, "-c", _HELD_IN_THE_DRIVER, captures, str(tmp_path / "spark")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert _rows(tmp_path / "spark") == _rows(tmp_path / "here")
