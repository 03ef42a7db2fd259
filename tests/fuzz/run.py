"""Run one fuzz target: ``python tests/fuzz/run.py TARGET [--minutes N]``.

With atheris installed (``pip install -e '.[fuzz]'``) this is a coverage-guided libFuzzer run
over a corpus directory seeded from the repository's test data and samples; without it, or
with ``--random``, a seeded random mutator drives the same target (no coverage guidance).
Either way each input must satisfy the target's invariants (see ``targets.py``) and, here but
not in the test suite, take at most ``--max-ms-per-kib`` per KiB of input (plus half a second
for a garbage collection or a busy machine): cost must stay linear in the input.

Examples::

    .venv/bin/python tests/fuzz/run.py --list
    .venv/bin/python tests/fuzz/run.py dissector --minutes 60
    .venv/bin/python tests/fuzz/run.py decoder-99-0 --minutes 5 --corpus /tmp/corpus-99-0
    .venv/bin/python tests/fuzz/run.py table-0-9-1 --random --runs 100000

A failing input is saved (``crash-*`` by libFuzzer in the working directory, or
``fuzz-failure-<target>-<n>.bin`` by the random driver); replay one with ``--replay FILE``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent, HERE.parent.parent):  # targets, tests/ helpers, the repo
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))


def mutate(rng: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    """One to eight random edits of ``data``: flips, interesting octets, inserts, deletes,
    duplicated runs and splices with another seed."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(7)
        pos = rng.randrange(len(buf) + 1)
        if op == 0 and buf:
            buf[pos % len(buf)] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:
            buf[pos % len(buf)] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xCE, 0xF0, 0xFF))
        elif op == 2:
            buf[pos:pos] = rng.randbytes(rng.randint(1, 16))
        elif op == 3:
            del buf[pos : pos + rng.randint(1, 32)]
        elif op == 4:
            run = buf[pos : pos + rng.randint(1, 64)]
            buf[pos:pos] = run * rng.randint(1, 8)
        elif op == 5:
            other = rng.choice(pool)
            start = rng.randrange(len(other) + 1)
            buf[pos:] = other[start : start + rng.randint(1, 256)]
        elif buf:
            at = pos % len(buf)
            value = rng.choice((0, 1, 5, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF))
            buf[at : at + 4] = value.to_bytes(4, "big")
    return bytes(buf)


def random_inputs(seeds: list[bytes], rng: random.Random) -> Callable[[], bytes]:
    pool = seeds or [b""]

    def next_input() -> bytes:
        roll = rng.random()
        if roll < 0.05:
            return rng.randbytes(rng.randint(0, 512))
        return mutate(rng, rng.choice(pool), pool)

    return next_input


def run_random(
    target: Callable[[bytes], None],
    seeds: list[bytes],
    *,
    runs: int,
    seconds: float,
    seed: int,
    time_limit: Callable[[int], float] | None = None,
    name: str = "target",
) -> int:
    """Seeds, then mutated inputs until ``runs`` inputs or ``seconds`` passed; returns runs."""
    rng = random.Random(seed)
    next_input = random_inputs(seeds, rng)
    deadline = time.monotonic() + seconds
    done = 0
    for data in seeds:  # untimed: the first inputs also fill lazy tables and caches
        _one(target, data, None, name, done)
        done += 1
    while done < runs and time.monotonic() < deadline:
        _one(target, next_input(), time_limit, name, done)
        done += 1
    return done


def _one(
    target: Callable[[bytes], None],
    data: bytes,
    time_limit: Callable[[int], float] | None,
    name: str,
    index: int,
) -> None:
    start = time.perf_counter()
    try:
        target(data)
    except BaseException:
        saved = Path(f"fuzz-failure-{name}-{index}.bin")
        saved.write_bytes(data)
        print(f"input saved to {saved}", file=sys.stderr)
        raise
    if time_limit is not None:
        took = time.perf_counter() - start
        for _ in range(2):  # a busy machine or a garbage collection: fail only if it repeats
            if took <= time_limit(len(data)):
                break
            start = time.perf_counter()
            target(data)
            took = min(took, time.perf_counter() - start)
        if took > time_limit(len(data)):
            saved = Path(f"fuzz-slow-{name}-{index}.bin")
            saved.write_bytes(data)
            raise AssertionError(f"{len(data)} bytes took {took:.3f} s (saved to {saved})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", help="a target name (see --list)")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to run (1)")
    parser.add_argument("--runs", type=int, default=0, help="stop after this many inputs")
    parser.add_argument("--random", action="store_true", help="random mutator, not atheris")
    parser.add_argument("--seed", type=int, default=0, help="random driver's seed (0)")
    parser.add_argument("--corpus", type=Path, help="corpus directory (atheris; default temp)")
    parser.add_argument("--replay", type=Path, help="run the target once on this input file")
    parser.add_argument("--max-ms-per-kib", type=float, default=50.0)
    args = parser.parse_args(argv)

    atheris = None
    if not args.random and not args.list and not args.replay:
        try:
            import atheris  # type: ignore[import-not-found,no-redef]
        except ImportError:
            print("atheris is not installed: using the random driver", file=sys.stderr)
    if atheris is not None:
        # Coverage for the codec only, and before anything else imports it.
        with atheris.instrument_imports(include=["amqp_codec"]):
            import importlib
            import pkgutil

            import amqp_codec

            for module in pkgutil.walk_packages(amqp_codec.__path__, "amqp_codec."):
                skip = (
                    "amqp_codec.analyze",
                    "amqp_codec.cli",
                    "amqp_codec.__main__",
                    "amqp_codec.dissect",  # deprecated aliases
                    "amqp_codec.report",
                )
                if not module.name.startswith(skip):
                    importlib.import_module(module.name)

    from corpus import seeds
    from targets import TARGETS

    if args.list or not args.target:
        print("\n".join(TARGETS))
        return 0
    if args.target not in TARGETS:
        print(f"unknown target {args.target!r}; --list shows them", file=sys.stderr)
        return 2
    target = TARGETS[args.target]

    def linear_limit(size: int) -> float:
        return 0.5 + args.max_ms_per_kib / 1000 * size / 1024

    # Hypothesis draws from the input rather than decoding it: its work is not the input's size.
    time_limit = None if args.target == "encode-round-trip" else linear_limit

    if args.replay:
        _one(target, args.replay.read_bytes(), time_limit, args.target, 0)
        print("ok")
        return 0
    seconds = args.minutes * 60
    if atheris is None:
        runs = run_random(
            target,
            seeds(args.target),
            runs=args.runs or sys.maxsize,
            seconds=seconds,
            seed=args.seed,
            time_limit=time_limit,
            name=args.target,
        )
        print(f"{args.target}: {runs} inputs, no failure")
        return 0
    return _run_atheris(atheris, args, target, time_limit)


def _run_atheris(
    atheris: object, args: argparse.Namespace, target: Callable[[bytes], None], time_limit: object
) -> int:
    import tempfile

    from corpus import seeds

    corpus = args.corpus or Path(tempfile.mkdtemp(prefix=f"amqp-codec-corpus-{args.target}-"))
    corpus.mkdir(parents=True, exist_ok=True)
    for i, data in enumerate(seeds(args.target)):
        (corpus / f"seed-{i}").write_bytes(data)
    libfuzzer = [
        sys.argv[0],
        str(corpus),
        f"-max_total_time={int(args.minutes * 60)}",
        "-timeout=10",  # libFuzzer's own per-input limit, on top of the linear one
        "-rss_limit_mb=2048",
        "-max_len=65536",
    ]
    if args.runs:
        libfuzzer.append(f"-runs={args.runs}")

    def one(data: bytes) -> None:
        _one(target, data, time_limit, args.target, 0)  # type: ignore[arg-type]

    for data in seeds(args.target):  # warm up (lazy tables, caches) before timing inputs
        target(data)
    atheris.Setup(libfuzzer, one)  # type: ignore[attr-defined]
    atheris.Fuzz()  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main())
