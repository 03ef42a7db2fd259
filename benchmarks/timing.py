"""timeit-style measurement: calibrated loop counts, round-robin repeats, median.

For one workload all libraries are measured together: after calibration, each repeat times
every library once, in an order rotated per repeat, so slow drift of the machine (thermal,
other load) spreads over all of them instead of favouring whoever ran first. ``timeit``
disables the garbage collector while timing, for every library alike.

The default clock is the process's CPU time (``time.process_time``, nanosecond resolution on
Linux), not wall time: on a shared machine wall time also counts the time other processes
held the CPU, which made repeats differ by 50-80%; CPU time keeps them within a few percent.
``--clock wall`` uses ``time.perf_counter`` (timeit's default) instead.
"""

from __future__ import annotations

import statistics
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass

from .peers import Bench


@dataclass
class Timing:
    number: int  # ops per timed run
    runs: list[float]  # seconds per op, one per repeat

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def ops_per_sec(self) -> float:
        return 1.0 / self.median

    @property
    def spread(self) -> float:
        """(max - min) / median of the repeats: a noise indicator."""
        return (max(self.runs) - min(self.runs)) / self.median


def _calibrate(timer: timeit.Timer, target: float) -> int:
    """Loop count so that one timed run takes about ``target`` seconds (also warms up)."""
    number = 1
    while True:
        elapsed = timer.timeit(number)
        if elapsed >= target / 4 or elapsed >= 0.05:
            break
        number *= 4 if elapsed < target / 40 else 2
    return max(1, round(number * target / elapsed))


CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}


def measure(
    benches: dict[str, Bench], repeats: int, target: float, clock: str = "cpu"
) -> dict[str, Timing]:
    timer_fn = CLOCKS[clock]
    timers = {key: timeit.Timer(b.stmt, timer=timer_fn, globals=b.ns) for key, b in benches.items()}
    numbers = {key: _calibrate(t, target) for key, t in timers.items()}
    runs: dict[str, list[float]] = {key: [] for key in timers}
    keys = list(timers)
    for r in range(repeats):
        shift = r % len(keys)
        for key in keys[shift:] + keys[:shift]:
            runs[key].append(timers[key].timeit(numbers[key]) / numbers[key])
    return {key: Timing(numbers[key], runs[key]) for key in keys}
