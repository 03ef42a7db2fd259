"""cProfile of our side of a workload: where amqp-codec spends its time.

cProfile charges a fixed cost to every Python call, so call-heavy code looks heavier than
it is; read ``tottime`` as attribution between functions, not as absolute time.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import textwrap

from .peers import Bench


def profile(bench: Bench, seconds_hint: float, per_op: float, top: int = 14) -> str:
    """Run ``bench`` under cProfile for about ``seconds_hint`` of unprofiled time."""
    n = max(1, int(seconds_hint / per_op))
    loop = f"for _i in range({n}):\n" + textwrap.indent(bench.stmt, "    ")
    prof = cProfile.Profile()
    ns = dict(bench.ns)
    prof.runctx(loop, ns, ns)
    buf = io.StringIO()
    stats = pstats.Stats(prof, stream=buf)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    text = buf.getvalue()
    # keep the table, drop pstats' preamble lines except the totals
    lines = [line for line in text.splitlines() if line.strip()]
    return f"{n:,} ops profiled\n" + "\n".join(lines[1:])
