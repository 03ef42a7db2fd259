"""The Python daemon of the job's executors: pyspark's own, with the analysis imported first.

Spark starts one daemon per executor (``python -m <spark.python.daemon.module>``) and forks
a worker from it for each Python task slot; each worker then imports what its first task
needs. Imported here, before the forks, the codec and the analysis are imported once per
executor instead of once per worker, and a worker's first task starts without waiting for
them: a fixed cost of every run, paid while the cores would otherwise be idle.

Only modules that start no thread when imported belong here (pyspark's daemon forks, and
a thread does not survive a fork): not pyarrow, which the tasks import themselves.

Spark puts its own ``pyspark.zip`` first on the workers' ``PYTHONPATH``. A zip holds only
sources, so every module imported from it is compiled again in every run: 1.0 s of CPU for
this daemon's imports against 0.6 s from a pip-installed pyspark's cached bytecode. When
that zip is the one inside the installed pyspark package (a local run of a pip install, the
same release by construction), it goes to the end of the path instead; a Spark
installation's own zip (a cluster's) is left first.
"""

from __future__ import annotations

import gc
import os
import sys
from importlib.machinery import PathFinder


def _installed_pyspark_first(path: list[str]) -> list[str]:
    """``path`` with the zips bundled inside the importable pyspark package moved last."""
    zips = [entry for entry in path if entry.endswith(".zip")]
    if not zips:
        return path
    found = PathFinder.find_spec("pyspark", [entry for entry in path if entry not in zips])
    if found is None or not found.submodule_search_locations:
        return path
    bundled_in = os.path.join(
        os.path.realpath(found.submodule_search_locations[0]), "python", "lib"
    )
    bundled = [entry for entry in zips if os.path.dirname(os.path.realpath(entry)) == bundled_in]
    return [entry for entry in path if entry not in bundled] + bundled


# Before anything imports pyspark.
sys.path[:] = _installed_pyspark_first(sys.path)

# The worker's own module, which pyspark's daemon would import after each fork.
import pyspark.worker  # noqa: E402, F401
from pyspark.daemon import manager  # noqa: E402

# What the scan, dissect and report tasks run.
from amqp_codec.analyze import regions, scan, tally, tops  # noqa: E402, F401

if __name__ == "__main__":
    # What is imported now lives as long as the workers: kept out of the collector's passes
    # (and so untouched, shared with the daemon after each fork). The tasks make millions of
    # short-lived objects and next to no cycles: the young generation is collected after
    # 10,000 allocations instead of 700 (together 1.2% of a dissecting task's instructions),
    # and the middle one after 100 of those passes instead of 10, so that what a task keeps
    # a while (its packets, rows waiting for their row group, each stream's facts) is walked
    # once more, not again every ten: on three tasks of short connections the middle
    # generation's passes took 11 ms instead of 127 ms, the oldest's none instead of 50 ms,
    # of 5.1 s (garbage cycles are still found young: a stream of garbage peaks the same).
    gc.freeze()
    gc.set_threshold(10_000, 100, 10)
    manager()
