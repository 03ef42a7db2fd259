"""Capture-analysis throughput: ``python -m benchmarks.pipeline [--shapes ...] [--json FILE]``.

On generated capture sets (:mod:`amqp_codec.capture.synthetic`: rotated pcap and pcapng files
of many concurrent AMQP 0-9-1 connections, or one long connection in segments of a given size)
and, with ``live:SIZE``, a capture of real traffic (:mod:`benchmarks.live`: one connection to
the local broker recorded by dumpcap), each cached between runs, measures:

* ``read_capture`` alone: :func:`amqp_codec.capture.packets.read_capture` over every file in
  this process (packets parsed into TCP segments, nothing else);
* the whole pipeline, :func:`amqp_codec.analyze.run` (read, shuffle by connection, reassemble,
  decode, write four Parquet tables and ``report.html``), in local mode with 1 and with 2
  cores (``local[1]``, ``local[2]``), each in a fresh process so each starts its own JVM:
  the time is the job's own wall time (``Summary.seconds``, JVM start included); with
  ``--pin``, ``local[1]`` again with the whole process tree confined to one CPU, which is
  what one core means (``local[1]`` alone runs one Spark task at a time, but the driver's
  head start and the JVM's threads use the other CPUs);
* ``tshark`` dissecting the same traffic as AMQP (``-d tcp.port==5672,amqp``) with TCP
  reassembly, printing the type of every AMQP frame, over the set merged into one file with
  ``mergecap`` (untimed: a rotated set is one capture to Wireshark once merged, and that is how
  its connections that span files are reassembled). Said plainly when tshark is not installed.

Every result is checked before it is reported: frames and messages counted by the pipeline,
and frames dissected by tshark, against what the generator wrote; for a live set, the
pipeline's messages against what the recorder published (every body, by its SHA-256, among
the publishes and again among the deliveries), and tshark's frames are only counted.
Figures are wall-clock time on whatever else the machine is doing: the load average is
printed with each.
MB/s is capture-file bytes (what ``ls -l`` shows) per second; frames/s is AMQP frames
(protocol headers included for the pipeline, whose ``frames`` table has a row for each).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from amqp_codec.capture.synthetic import GENERATOR_VERSION, CaptureSet, Counts, generate, parse_size

from .cache import cached
from .live import LiveCaptureError, LiveCounts, bodies_digest, live_set

__all__ = ["Result", "main"]

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "amqp-codec-bench-captures"

# Runs in a child process: the job on MASTER over the capture files a JSON file lists (a
# rotated set's thousands of paths would not fit in its arguments), its summary as JSON on
# the last line.
_JOB = """
import json, sys
from amqp_codec.analyze import run

with open(sys.argv[1]) as listed:
    captures = json.load(listed)
summary = run(captures, sys.argv[2], master=sys.argv[3], progress=True)
print(json.dumps({"seconds": summary.seconds, "counts": summary.counts}))
"""


@dataclass
class Result:
    """One measured row."""

    name: str
    seconds: float | None = None
    cpu_seconds: float | None = None
    peak_rss: int | None = None
    """Bytes: the largest resident set of the whole process tree (JVM, Python workers)."""
    frames: int | None = None
    mb_per_s: float | None = None
    mb_per_cpu_s: float | None = None
    frames_per_s: float | None = None
    check: str = ""
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)
    details: dict[str, Any] = field(default_factory=dict)

    def rates(self, file_bytes: int) -> None:
        """Fill in MB/s, MB per CPU second and frames/s from the seconds."""
        if self.cpu_seconds:
            self.mb_per_cpu_s = file_bytes / 1e6 / self.cpu_seconds
        if self.seconds:
            self.mb_per_s = file_bytes / 1e6 / self.seconds
            if self.frames is not None:
                self.frames_per_s = self.frames / self.seconds


def _load() -> tuple[float, float, float]:
    return os.getloadavg()


class TreeCpu:
    """CPU seconds used by a process and all its descendants (JVM, Python workers), Linux.

    Descendants a process does not wait for (the JVM a PySpark driver leaves behind) never
    reach ``RUSAGE_CHILDREN``, so ``/proc`` is sampled every ``interval`` seconds instead; the
    last sample of each process counts. CPU time is what tells work from waiting on a busy
    machine, where wall-clock time also counts other people's jobs.
    """

    def __init__(self, root: int, interval: float = 0.25) -> None:
        self.root = root
        self.interval = interval
        self.ticks: dict[tuple[int, str], int] = {}  # (pid, start time) -> utime + stime
        self.peak_rss = 0  # bytes: the largest sum of the tree's resident sets in one sample
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._hz = os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> TreeCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def seconds(self) -> float:
        """CPU seconds (user + system) seen so far."""
        return sum(self.ticks.values()) / self._hz

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        """Read every process's parent and CPU ticks; keep those below ``root``."""
        stats: dict[int, tuple[int, str, int, int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    text = fh.read()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2 :].split()
            # fields[1] is the parent pid, [11] and [12] utime and stime, [19] the start time,
            # [21] the resident set in pages
            stats[int(entry)] = (
                int(fields[1]),
                fields[19],
                int(fields[11]) + int(fields[12]),
                int(fields[21]),
            )
        rss = 0
        for pid, (_, start, ticks, pages) in stats.items():
            ancestor = pid
            while ancestor > 1 and ancestor != self.root and ancestor in stats:
                ancestor = stats[ancestor][0]
            if ancestor == self.root:
                self.ticks[(pid, start)] = ticks
                rss += pages * self._page
        self.peak_rss = max(self.peak_rss, rss)


#: Messages per connection of a ``short`` set: a file of some 20,000 connections per 530 MB.
SHORT_MESSAGES = 2
#: File size of a ``rotated`` set: a capture rotated into many small files, as ``tcpdump -G``
#: rotates a quiet port's traffic by the minute.
ROTATED_FILE_BYTES = 20_000


def capture_set(
    cache: Path,
    size: int,
    files: int,
    seed: int,
    *,
    mss: int | None = None,
    short: bool = False,
    rotated: int | None = None,
) -> tuple[CaptureSet, float]:
    """The set from the cache if it was generated with the same arguments, else a new one.

    ``mss``: one long connection in one file, in segments of that size; ``short``: one file
    of many short connections; ``rotated``: many connections in files of about that many
    bytes (else many connections in ``files`` files)."""
    if rotated:
        files = max(1, size // rotated)
    shape = f"one-{mss}" if mss else "short" if short else f"many-{files}"
    target = cache / f"set-{shape}-{size}-{seed}-v{GENERATOR_VERSION}"
    kept = cached(target)
    if kept is not None:
        paths, data = kept
        return CaptureSet(paths, Counts(**data["counts"]), data["arguments"]), 0.0
    shutil.rmtree(target, ignore_errors=True)
    started = time.perf_counter()
    if mss:
        result = generate(target, size, 1, seed=seed, mss=mss, single_connection=True)
    elif short:
        result = generate(target, size, 1, seed=seed, max_messages=SHORT_MESSAGES, concurrency=64)
    else:
        result = generate(target, size, files, seed=seed)
    return result, time.perf_counter() - started


def bench_read_capture(files: list[Path], expected_packets: int | None) -> Result:
    """Time read_capture over every file, in this process (``expected_packets``: None when
    the set's packets were not counted, as in a live set)."""
    from amqp_codec.capture.packets import CaptureProblem, read_capture

    result = Result("read_capture (1 process)", load=_load())
    segments = problems = payload = 0
    cpu_started = time.process_time()
    started = time.perf_counter()
    for path in files:
        for item in read_capture(str(path)):
            if isinstance(item, CaptureProblem):
                problems += 1
            else:
                segments += 1
                payload += len(item.payload)
    result.seconds = time.perf_counter() - started
    result.cpu_seconds = time.process_time() - cpu_started
    result.details = {
        "segments": segments,
        "problems": problems,
        "payload_bytes": payload,
        "packets": expected_packets,
        "packets_per_s": None if expected_packets is None else expected_packets / result.seconds,
    }
    result.check = f"{segments:,} segments, {problems} problems"
    if problems:
        result.check += " (expected none)"
    return result


@dataclass(frozen=True)
class Check:
    """How a finished run is checked."""

    passed: str
    """What the check column says when nothing is wrong."""
    wrong: Callable[[dict[str, int], Path], list[str]]
    """(rows per table, the tables' folder) -> what is wrong."""


def generated_check(counts: Counts) -> Check:
    """A generated set's run: its tables hold what the generator wrote, and no problem."""

    def find(rows: dict[str, int], out: Path) -> list[str]:
        expected_frames = counts.frames + counts.protocol_headers
        expected_messages = counts.published + counts.delivered + counts.got + counts.returned
        wrong = []
        if rows.get("frames") != expected_frames:
            wrong.append(f"frames {rows.get('frames')} != {expected_frames}")
        if rows.get("messages") != expected_messages:
            wrong.append(f"messages {rows.get('messages')} != {expected_messages}")
        if rows.get("connections") != counts.connections:
            wrong.append(f"connections {rows.get('connections')} != {counts.connections}")
        if rows.get("problems"):
            wrong.append(f"{rows.get('problems')} problems (expected none)")
        return wrong

    return Check("frames, messages, connections ok", find)


def live_check(counts: LiveCounts) -> Check:
    """A live set's run: one connection, no problem, and every body the recorder published,
    byte for byte, among the publishes and again among the deliveries."""

    def find(rows: dict[str, int], out: Path) -> list[str]:
        import pyarrow.parquet as pq

        wrong = []
        if rows.get("connections") != counts.connections:
            wrong.append(f"connections {rows.get('connections')} != {counts.connections}")
        if rows.get("problems"):
            wrong.append(f"{rows.get('problems')} problems (expected none)")
        messages = pq.read_table(out / "messages", columns=["method", "body_sha256"])
        digests: dict[str, list[str]] = {"basic.publish": [], "basic.deliver": []}
        others = 0
        methods = messages.column("method").to_pylist()
        for method, digest in zip(methods, messages.column("body_sha256").to_pylist(), strict=True):
            if method in digests:
                digests[method].append(digest)
            else:
                others += 1
        for method, number in (
            ("basic.publish", counts.published),
            ("basic.deliver", counts.delivered),
        ):
            found = digests[method]
            if len(found) != number:
                wrong.append(f"{len(found)} {method} messages, {number} recorded")
            elif bodies_digest(found) != counts.bodies_digest:
                wrong.append(f"the {method} messages' bodies differ from those recorded")
        if others:
            wrong.append(f"{others} messages neither published nor delivered")
        return wrong

    return Check("connections, messages, bodies ok", find)


def bench_pipeline(
    files: list[Path],
    check: Check,
    cores: int,
    scratch: Path,
    log: Path,
    cpus: int | None = None,
) -> Result:
    """Time amqp_codec.analyze.run in local[cores], in a fresh child process.

    With ``cpus``, the child and everything it starts (the JVM, Python workers) may run on
    that many CPUs only (their affinity): ``local[1]`` alone still lets the driver, the JVM's
    own threads and the head start use every CPU, so it is not a run on one core.
    The job's progress goes to ``log`` (a long run can be followed with ``tail -f``).
    """
    name = f"pipeline local[{cores}]" + (f" on {cpus} CPU{'s' * (cpus > 1)}" if cpus else "")
    result = Result(name, load=_load())
    out = scratch / f"out-local-{cores}"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    listed = scratch / "captures.json"
    listed.write_text(json.dumps([str(p) for p in files]))
    job = [sys.executable, "-c", _JOB, str(listed), str(out)]
    started = time.perf_counter()
    with log.open("w") as err:
        child = subprocess.Popen(
            [*job, f"local[{cores}]"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            stdin=subprocess.DEVNULL,
            preexec_fn=(lambda: os.sched_setaffinity(0, range(cpus))) if cpus else None,
        )
        with TreeCpu(child.pid) as cpu:
            stdout, _ = child.communicate()
    process_seconds = time.perf_counter() - started
    result.cpu_seconds = cpu.seconds
    result.peak_rss = cpu.peak_rss
    if child.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        tail = log.read_text(errors="replace").strip()[-2000:]
        result.check = f"FAILED (exit {child.returncode}, log {log}): {tail}"
        return result
    summary = json.loads(stdout.strip().splitlines()[-1])
    rows: dict[str, int] = summary["counts"]
    result.seconds = float(summary["seconds"])
    result.frames = rows.get("frames")
    wrong = check.wrong(rows, out)
    shutil.rmtree(out, ignore_errors=True)
    result.check = "WRONG: " + "; ".join(wrong) if wrong else check.passed
    result.details = {"rows": rows, "process_seconds": process_seconds}
    return result


def bench_tshark(files: list[Path], expected_frames: int | None, cache: Path) -> Result:
    """Time tshark dissecting every AMQP frame of the merged set (``expected_frames``: what
    the generator wrote; None for a live set, where the count is only reported)."""
    result = Result("tshark (1 process)", load=_load())
    tshark, mergecap = shutil.which("tshark"), shutil.which("mergecap")
    if tshark is None or mergecap is None:
        result.check = "tshark not installed: no comparison (Debian: apt-get install tshark)"
        return result
    version = subprocess.run([tshark, "--version"], capture_output=True, text=True, check=False)
    merged = cache / f"{files[0].parent.name}-merged.pcapng"
    if len(files) == 1:
        merged = files[0]
    elif not merged.exists():
        partial = merged.with_suffix(".partial")
        subprocess.run([mergecap, "-w", str(partial), *map(str, files)], check=True)
        partial.rename(merged)
    command = [
        tshark,
        "-n",
        # Reassemble segments recorded out of order, as a capture on a machine with several
        # CPUs holds them (the live set does): without it tshark loses the frames after the
        # first such segment, reads others from the middle of frames, and slows down as the
        # bytes it waits for pile up.
        "-o",
        "tcp.reassemble_out_of_order:TRUE",
        "-r",
        str(merged),
        "-d",
        "tcp.port==5672,amqp",
        "-T",
        "fields",
        "-e",
        "amqp.type",
        "-E",
        "occurrence=a",
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    # One line per packet, the types of its AMQP frames separated by commas.
    frames = 0
    with TreeCpu(proc.pid) as cpu:
        for line in proc.stdout:
            line = line.strip()
            if line:
                frames += line.count(b",") + 1
        proc.wait()
    result.seconds = time.perf_counter() - started
    result.cpu_seconds = cpu.seconds
    result.peak_rss = cpu.peak_rss
    result.frames = frames
    if expected_frames is None:
        result.check = f"{frames:,} frames dissected"
    elif frames == expected_frames:
        result.check = "every frame dissected"
    else:
        result.check = f"WRONG: {frames:,} frames dissected, {expected_frames:,} written"
    result.details = {
        "command": " ".join(command),
        "version": version.stdout.splitlines()[0] if version.stdout else "",
        "exit": proc.returncode,
        "checked": expected_frames is not None,
    }
    return result


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(results: Sequence[Result]) -> str:
    """The results as a text table."""
    head = (
        f"{'':<44} {'seconds':>9} {'MB/s':>8} {'frames/s':>10} {'CPU s':>8} {'MB/CPU s':>9}"
        f" {'peak RSS MB':>11}  {'load 1m':>7}  check"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        rss = None if r.peak_rss is None else r.peak_rss / 1e6
        lines.append(
            f"{r.name:<44} {_fmt(r.seconds, '9.1f')} {_fmt(r.mb_per_s, '8.2f')} "
            f"{_fmt(r.frames_per_s, '10,.0f')} {_fmt(r.cpu_seconds, '8.1f')} "
            f"{_fmt(r.mb_per_cpu_s, '9.2f')} {_fmt(rss, '11,.0f')}  {r.load[0]:7.2f}  {r.check}"
        )
    return "\n".join(lines)


def _size_name(size: int) -> str:
    """``1.1 GB``, or ``42.7 MB`` below a GB."""
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.1f} MB"


def _shape(text: str) -> tuple[str, int | None, int, bool]:
    """``many:1G``, ``short:512M``, ``rotated:40M``, ``rotated-1M:1G``, ``one-1448:6G`` or
    ``live:2G``, each generated one with ``+gz`` after its name for its files compressed
    (``one-65000+gz:1G``) -> (the shape's name, its number (an MSS, a rotated set's file
    size) or None, size, compressed)."""
    kind, _, size = text.partition(":")
    kind, plus, suffix = kind.partition("+")
    if plus and (suffix != "gz" or kind == "live"):
        raise argparse.ArgumentTypeError(f"+{suffix}: only a generated set can be +gz")
    number = None
    if kind.startswith("one-"):
        number = int(kind[4:])
    elif kind.startswith("rotated"):
        file_size = kind.removeprefix("rotated").removeprefix("-")
        number = parse_size(file_size) if file_size else ROTATED_FILE_BYTES
    elif kind not in ("many", "short", "live"):
        raise argparse.ArgumentTypeError(
            f"unknown shape {kind!r}: many, short, rotated, rotated-FILESIZE, one-MSS or live"
        )
    return kind, number, parse_size(size or "1G"), bool(plus)


def gzipped(files: list[Path], cache: Path) -> list[Path]:
    """``files`` compressed as ``gzip -1`` does (a rotation's ``-z gzip``), once: kept in
    the cache beside their set."""
    folder = cache / f"{files[0].parent.name}-gz"
    done = folder / "complete"
    if not done.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for path in files:
            with path.open("rb") as src, gzip.open(folder / f"{path.name}.gz", "wb", 1) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        done.touch()
    return [folder / f"{path.name}.gz" for path in files]


DEFAULT_SHAPES = "many:1G,one-1448:1G,one-65000:1G,one-1448:6G"


def _bytecode_cached() -> str:
    """Compile amqp_codec's modules into their ``__pycache__`` folders, as pip does when it
    installs a package, and say so.

    An editable install caches bytecode on first import, unless the environment says not
    to (``PYTHONDONTWRITEBYTECODE``, as some machines here set): then every timed run
    compiled the codec and the analysis again in its driver and its executors' daemon (0.17 s
    of CPU each on the short set's machine, 0.37 s against 0.20 s to import them), a cost an
    installed package does not pay."""
    import compileall

    import amqp_codec

    folder = Path(amqp_codec.__file__).parent
    if compileall.compile_dir(folder, quiet=1):
        return f"amqp_codec's bytecode cached in {folder} (as an installed package's is)"
    return f"amqp_codec's bytecode could not be cached in {folder}: runs compile it again"


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.pipeline",
        description="Throughput and memory of the capture-analysis pipeline against tshark.",
    )
    parser.add_argument(
        "--shapes",
        default=DEFAULT_SHAPES,
        help="capture sets, comma-separated: many:SIZE (many connections in --files files), "
        "short:SIZE (one file of short connections, two messages each), "
        f"rotated:SIZE (many connections in files of {ROTATED_FILE_BYTES // 1000} kB; "
        "rotated-FILESIZE:SIZE in files of that size), "
        "one-MSS:SIZE (one connection, MSS-byte segments) or live:SIZE (one connection to the "
        "broker on 127.0.0.1:5672, recorded by dumpcap; see benchmarks/live.py); a generated "
        "one's name with +gz (one-65000+gz:1G) for its files compressed with gzip -1; default "
        f"{DEFAULT_SHAPES}",
    )
    parser.add_argument("--files", type=int, default=8, help="files of a many set (default 8)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, help=f"where sets are kept ({DEFAULT_CACHE})"
    )
    parser.add_argument(
        "--cores", default="1,2", help="local[N] pipeline runs, comma-separated (default 1,2)"
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="also run each local[N] with fewer cores than the machine's confined to N CPUs",
    )
    parser.add_argument("--no-tshark", action="store_true", help="skip the tshark comparison")
    parser.add_argument("--read", action="store_true", help="also time read_capture alone")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    cores = [int(c) for c in args.cores.split(",") if c.strip()]
    shapes = [_shape(text) for text in args.shapes.split(",") if text.strip()]
    args.cache.mkdir(parents=True, exist_ok=True)
    print(f"python {platform.python_version()}, {os.cpu_count()} cores", flush=True)
    print(_bytecode_cached() + "\n", flush=True)

    results: list[Result] = []
    sets: dict[str, Any] = {}
    for label, number, size, compressed in shapes:
        if label == "live":
            try:
                recorded, made_in = live_set(args.cache, size, args.seed)
            except LiveCaptureError as exc:
                print(f"live {size / 1e9:.1f} GB: not recorded: {exc}\n", flush=True)
                continue
            c: Counts | LiveCounts = recorded.counts
            files = recorded.files
            check, packets, frames = live_check(recorded.counts), None, None
            name = f"{label} {_size_name(c.file_bytes)}"
            sets[name] = {"arguments": recorded.arguments, "counts": asdict(c)}
            made = f"recorded in {made_in:.1f} s" if made_in else "from the cache"
            print(
                f"{name}: 1 file, 1 connection, {recorded.counts.published:,} messages published "
                f"and consumed ({recorded.counts.body_bytes / 1e6:,.0f} MB of bodies); {made}"
                f"\n  in {files[0].parent}",
                flush=True,
            )
        else:
            captures, made_in = capture_set(
                args.cache,
                size,
                args.files,
                args.seed,
                mss=number if label.startswith("one-") else None,
                short=label == "short",
                rotated=number if label.startswith("rotated") else None,
            )
            c = captures.counts
            files = captures.files
            check, packets, frames = generated_check(c), c.packets, c.frames
            name = f"{label} {_size_name(c.file_bytes)}"
            if compressed:
                files = gzipped(files, args.cache)
                gz_bytes = sum(path.stat().st_size for path in files)
                name = f"{label}+gz {_size_name(c.file_bytes)} ({_size_name(gz_bytes)} gzip -1)"
            sets[name] = {"arguments": captures.arguments, "counts": asdict(c)}
            print(
                f"{name}: {len(files)} files, {c.packets:,} packets, {c.connections:,} "
                f"connections, {c.frames:,} frames, "
                f"{c.published + c.delivered + c.got + c.returned:,} messages"
                + (f"; generated in {made_in:.1f} s" if made_in else "; from the cache")
                + f"\n  in {files[0].parent}",
                flush=True,
            )
        print(table([]), flush=True)
        mine: list[Result] = []

        def done(
            result: Result,
            set_name: str = name,
            file_bytes: int = c.file_bytes,
            mine: list[Result] = mine,
        ) -> None:
            result.name = f"{set_name}: {result.name}"
            result.rates(file_bytes)
            results.append(result)
            mine.append(result)
            print(table([result]).splitlines()[-1], flush=True)

        if args.read:
            done(bench_read_capture(files, packets))
        if not args.no_tshark:
            done(bench_tshark(files, frames, args.cache))
        with tempfile.TemporaryDirectory(prefix="amqp-codec-bench-") as scratch:
            for n in cores:
                log = args.cache / f"pipeline-{label}-{size}-local-{n}.log"
                print(f"  (running local[{n}]: progress in {log})", flush=True)
                done(bench_pipeline(files, check, n, Path(scratch), log))
                if args.pin and n < (os.cpu_count() or 1):
                    log = log.with_name(f"{log.stem}-on-{n}-cpus.log")
                    print(f"  (running local[{n}] on {n} CPUs: progress in {log})", flush=True)
                    done(bench_pipeline(files, check, n, Path(scratch), log, cpus=n))
        _ratios(mine)
        print(flush=True)

    print(table(results))
    if args.json:
        document = {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "capture_sets": sets,
            "results": [asdict(r) for r in results],
        }
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
        print(f"\nresults written to {args.json}")
    wrong = [r.name for r in results if r.check.startswith(("WRONG", "FAILED"))]
    return 1 if wrong else 0


def _ratios(results: Sequence[Result]) -> None:
    """Scaling from 1 to more cores, and speed against tshark, measured in the same run."""
    pipelines = [r for r in results if "pipeline" in r.name and r.seconds]
    for base in ("local[1]", "local[1] on 1 CPU"):
        one = next((r for r in pipelines if r.name.endswith(base)), None)
        for r in pipelines:
            if one and one.seconds and r.seconds and "local[1]" not in r.name:
                print(f"  scaling: {r.name} is {one.seconds / r.seconds:.2f}x {base}")
    tshark = next((r for r in results if "tshark" in r.name and r.seconds), None)
    if tshark and tshark.seconds:
        for r in pipelines:
            assert r.seconds
            print(f"  {r.name}: {tshark.seconds / r.seconds:.2f}x tshark's speed")
        print(f"  tshark: {tshark.details['version']}\n  {tshark.details['command']}")
        counted = next((r.frames for r in pipelines if r.frames is not None), None)
        if not tshark.details["checked"] and counted is not None and tshark.frames is not None:
            # Nothing to check tshark's count against but the pipeline's (a live set).
            print(
                f"  frames: tshark dissected {tshark.frames:,}; the pipeline's frames table has "
                f"{counted:,} rows, protocol headers included"
            )


if __name__ == "__main__":
    sys.exit(main())
