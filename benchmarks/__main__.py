"""python -m benchmarks [--quick] [--json FILE] [--compare FILE] [--only KEYS] [--profile]"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import subprocess
import sys
import time
from pathlib import Path

from amqp_codec._compiled import compiled_modules

from . import fixtures as fx
from .peers import all_peers
from .profiling import profile
from .report import REGRESSION, Row, compare, details, read_json, table, to_json, write_json
from .timing import measure
from .workloads import build, ours_output, verify


def _git_state() -> str:
    """The commit of the code under test, and whether amqp_codec/ has local changes."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "amqp_codec"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" + uncommitted changes in amqp_codec/" if dirty.strip() else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="amqp-codec vs pamqp, pika and py-amqp, side by side.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 3 repeats of ~20 ms (numbers are noisy)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--compare",
        metavar="FILE",
        help="print this run's ratios against a result saved with --json; flag regressions",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=REGRESSION,
        metavar="F",
        help="--compare flags a ratio that fell by more than this fraction (default 0.10; "
        "a loaded machine needs 0.3)",
    )
    parser.add_argument(
        "--only", metavar="KEYS", help="comma-separated workload key prefixes, e.g. 1,5c,6"
    )
    parser.add_argument("--repeat", type=int, help="timed repeats per library (default 7)")
    parser.add_argument(
        "--time", type=float, metavar="S", help="target seconds per timed run (default 0.2)"
    )
    parser.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="cpu: process CPU time (default, robust on a shared machine); wall: time.perf_counter",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile our side of every workload below the target ratio",
    )
    parser.add_argument(
        "--profile-all", action="store_true", help="cProfile our side of every workload"
    )
    args = parser.parse_args(argv)

    repeats = args.repeat or (3 if args.quick else 7)
    target = args.time or (0.02 if args.quick else 0.2)

    peers = all_peers()
    labels = {p.key: p.label for p in peers}
    by_key = {p.key: p for p in peers}
    saved = read_json(args.compare) if args.compare else None  # fail early on a bad file
    stream = fx.build_stream()
    large = fx.build_large_message()
    workloads = build(stream, large)
    compiled = compiled_modules()
    build_name = f"compiled ({len(compiled)} modules)" if compiled else "pure Python"
    if args.only:
        prefixes = [s.strip() for s in args.only.split(",") if s.strip()]
        workloads = [w for w in workloads if any(w.key.startswith(p) for p in prefixes)]

    meta = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "versions": {p.label: p.version for p in peers},
        "amqp_codec_git": _git_state(),
        "amqp_codec_build": build_name,
        "amqp_codec_compiled_modules": compiled,
        "repeats": repeats,
        "target_seconds_per_run": target,
        "clock": args.clock,
        "quick": args.quick,
        "stream": stream.counts,
    }
    print(f"python {meta['python']} on {meta['platform']}")
    print(
        "versions: "
        + ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
        + f"; amqp-codec at {meta['amqp_codec_git']}, {build_name}"
    )
    print(
        f"median of {repeats} runs of ~{target * 1000:.0f} ms ({args.clock} time) each per "
        "library and workload;"
        " target: ours / fastest peer at least the ratio in brackets"
    )
    print()

    rows: list[Row] = []
    started = time.perf_counter()
    for w in workloads:
        ours_bytes = ours_output(w, by_key["ours"])
        verified = {p.key: verify(w, p, ours_bytes) for p in peers}
        row = Row(w, verified, compiled=bool(compiled))
        benches = {k: v.bench for k, v in verified.items() if v.ok and v.bench}
        if not verified["ours"].ok:
            print(f"[{w.key}] amqp-codec failed verification: {verified['ours'].note}")
        row.timings = measure(benches, repeats, target, args.clock) if benches else {}
        ratio = row.ratio_to_fastest()
        print(
            f"  {w.key:<30} done" + (f"  ours/fastest peer = {ratio:.2f}x" if ratio else ""),
            flush=True,
        )
        rows.append(row)
    elapsed = time.perf_counter() - started
    print()
    print(table(rows, labels))
    print()
    print(details(rows, labels))
    print(f"\n(total {elapsed:.0f} s)")

    if args.profile or args.profile_all:
        for row in rows:
            ratio = row.ratio_to_fastest()
            if not args.profile_all and (ratio is None or row.meets_target()):
                continue
            bench = row.verified["ours"].bench
            timing = row.timings.get("ours")
            if bench is None or timing is None:
                continue
            fresh = row.workload.make(by_key["ours"])  # fresh decoder state
            print(
                f"\n=== cProfile, amqp-codec, {row.workload.key} (ours/fastest = {ratio:.2f}x) ==="
                if ratio
                else ""
            )
            print(profile(fresh, 1.0 if not args.quick else 0.2, timing.median))

    if saved is not None:
        print()
        print(compare(rows, saved, args.compare, args.tolerance))
    if args.json:
        write_json(args.json, to_json(rows, labels, meta))
        print(f"\nresults written to {args.json}")
    failed = [
        (r.workload.key, k)
        for r in rows
        for k, v in r.verified.items()
        if not v.ok and not v.unsupported
    ]
    if failed:
        print(f"\nverification failures: {failed}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
