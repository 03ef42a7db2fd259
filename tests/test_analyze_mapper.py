"""How the job runs a stage's tasks on Spark (:class:`amqp_codec.analyze.job._SparkMapper`).

A stage of more tasks than cores runs as two jobs, the first of one task per core, so that
the executors start while the driver pickles the rest: the results keep the items' order,
a failure in either job is the one raised, and progress counts the tasks of both.
"""

from __future__ import annotations

import io
import signal
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest
from spark_support import spark

from amqp_codec.analyze.job import _Progress, _SparkMapper, _Watcher

__all__ = ["spark"]


def _mapper(session: Any) -> _SparkMapper:
    return _SparkMapper(session.sparkContext, _Progress(False, io.StringIO()), 0)


def test_a_stage_of_more_tasks_than_cores_runs_as_two_jobs_in_item_order(spark: Any) -> None:
    sc = spark.sparkContext
    items = [str(n) for n in range(9)]
    assert sc.defaultParallelism < len(items)
    assert _mapper(spark)("ordering", int, items) == list(range(9))
    jobs = sc.statusTracker().getJobIdsForGroup("amqp-codec-ordering")
    assert len(jobs) == 2


def test_a_stage_no_larger_than_the_cores_is_one_job(spark: Any) -> None:
    sc = spark.sparkContext
    items = [str(n) for n in range(sc.defaultParallelism)]
    assert _mapper(spark)("small", int, items) == list(range(len(items)))
    assert len(sc.statusTracker().getJobIdsForGroup("amqp-codec-small")) == 1


@pytest.mark.parametrize("bad", [0, 8], ids=["in the first job", "in the later job"])
def test_a_failed_task_fails_the_stage_with_its_own_error(spark: Any, bad: int) -> None:
    items = [str(n) for n in range(9)]
    items[bad] = "not a number"
    with pytest.raises(Exception, match="invalid literal for int") as raised:
        _mapper(spark)(f"failing-{bad}", int, items)
    assert "cancel" not in str(raised.value).lower()
    # The context is still usable: nothing of the failed stage is left running.
    assert _mapper(spark)("after", int, ["1", "2", "3"]) == [1, 2, 3]


class _Tracker:
    """A status tracker of a group whose first job (2 tasks) is done and whose second is not
    submitted yet."""

    def getJobIdsForGroup(self, group: str) -> list[int]:
        return [0]

    def getJobInfo(self, job: int) -> Any:
        return SimpleNamespace(stageIds=[0])

    def getStageInfo(self, stage: int) -> Any:
        return SimpleNamespace(numCompletedTasks=2, numTasks=2)


def test_progress_counts_the_tasks_of_the_jobs_still_to_come() -> None:
    sc = SimpleNamespace(statusTracker=_Tracker)
    watcher = _Watcher(_Progress(False, io.StringIO()), sc, "g", "dissecting", 900, 9)  # type: ignore[arg-type]
    assert watcher._fraction() == pytest.approx(2 / 9)


def test_an_interrupt_while_the_later_job_runs_is_raised_as_such(spark: Any) -> None:
    """Ctrl-C while both jobs of a stage run: the interrupt is what the stage raises, at
    once, not the first job's cancellation nor after its tasks; the context runs the next
    stage."""
    main = threading.main_thread().ident
    timer = threading.Timer(1.0, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    began = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            _mapper(spark)("interrupted", time.sleep, [2.0] * 5)
    finally:
        timer.cancel()
    assert time.monotonic() - began < 3.5  # the stage's tasks would take 6 s
    assert _mapper(spark)("after-interrupt", int, ["4", "5", "6"]) == [4, 5, 6]
