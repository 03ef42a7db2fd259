"""The Python daemon of the job's executors: pyspark's own, with the analysis imported first.

Spark starts one daemon per executor (``python -m <spark.python.daemon.module>``) and forks
a worker from it for each Python task slot; each worker then imports what its first task
needs. Imported here, before the forks, the codec and the analysis are imported once per
executor instead of once per worker, and a worker's first task starts without waiting for
them: a fixed cost of every run, paid while the cores would otherwise be idle.

Only modules that start no thread when imported belong here (pyspark's daemon forks, and
a thread does not survive a fork): not pyarrow, which the tasks import themselves.
"""

from __future__ import annotations

import gc

# The worker's own module, which pyspark's daemon would import after each fork.
import pyspark.worker  # noqa: F401
from pyspark.daemon import manager

# What the scan, dissect and report tasks run.
from amqp_codec.analyze import regions, scan, tally, tops  # noqa: F401

if __name__ == "__main__":
    # What is imported now lives as long as the workers: kept out of the collector's passes
    # (and so untouched, shared with the daemon after each fork). The tasks make millions of
    # short-lived objects and next to no cycles: the young generation is collected after
    # 10,000 allocations instead of 700. Together 1.2% of a dissecting task's instructions.
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
    manager()
