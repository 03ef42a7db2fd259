"""The Spark job: capture files in, Parquet tables and ``report.html`` out.

Stages:

1. one task per capture file reads its TCP segments (:func:`amqp_codec.capture.read_capture`)
   and groups them by their two endpoints into compact pieces (plain tuples; about 64 MB of
   payload held at a time); capture problems are keyed by their file;
2. a shuffle brings the pieces of each connection together, from every file (rotated
   captures of a long connection meet here). Every connection goes through it, also one
   seen in a single file: knowing that needs every file read first, and in rotated captures
   of long-lived connections most bytes belong to connections that span files (70% of the
   generated 1 GB benchmark set, 92% of the 256 MB one);
3. each shuffle partition gathers its pieces (about 256 MB of captures held) and calls
   :func:`amqp_codec.analyze.streams.analyze_connection` once per connection, which
   reassembles, dissects and joins both directions into table rows;
4. one job computes the rows into Spark's cache and counts them per table; each table is
   written as Parquet from that cache; the report's aggregates are computed by Spark from
   the tables (a few queries at a time) and only small results reach the driver.

Run it from Python (:func:`run`), from the command line (``amqp-codec analyze``), or submit
this file to a cluster: ``spark-submit amqp_codec/analyze/job.py CAPTURES... --out DIR``
(the machines running executors need amqp-codec installed, and the capture paths and the
output folder must be the same on every machine: a shared file system).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import zlib
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_PORTS", "Summary", "add_arguments", "main", "run", "run_from_args"]

#: The AMQP ports looked at by default (connections elsewhere count when they start with
#: the protocol header).
DEFAULT_PORTS: tuple[int, ...] = (5672,)


@dataclass(frozen=True, slots=True)
class Summary:
    """What one run produced: row counts per table and where everything is."""

    out: str
    captures: int
    """Capture files read."""
    capture_bytes: int = 0
    """Their total size."""
    counts: dict[str, int] = field(default_factory=dict)
    """Rows per table: ``frames``, ``messages``, ``connections``, ``problems``."""
    report: str = ""
    """Path of ``report.html``."""
    seconds: float = 0.0
    """Wall-clock time of the run."""

    def text(self) -> str:
        """The summary the command line prints."""
        lines = [
            f"analysed {self.captures} capture file{'s' if self.captures != 1 else ''} "
            f"({self.capture_bytes / 1e6:,.1f} MB) in {self.seconds:.1f} s",
        ]
        lines += [
            f"  {name:<12} {count:>10,} row{'s' if count != 1 else ''}"
            for name, count in self.counts.items()
        ]
        lines.append(f"tables in {self.out}")
        lines.append(f"report: {self.report}")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# Task functions (module level: pickled by reference for the executors)
# ------------------------------------------------------------------------------------------

#: Capture bytes per shuffle partition, about: a partition's pieces are held in memory until
#: all have arrived (see :func:`_analyze_partition`).
_PARTITION_BYTES = 256 * 2**20
#: Payload bytes a stage 1 task holds before it sends what it has on (a big capture file is
#: not held whole; a connection then has several pieces from that file).
_PIECES_BYTES = 64 * 2**20

#: One connection's segments from one capture file, or part of them: the file's index, the
#: part's number in that file, and ``(packet, ts, forward, seq, flags, payload)`` per segment.
_Piece = tuple[int, int, list[tuple[int, float, bool, int, int, bytes]]]


def _extract(item: tuple[int, str]) -> Iterator[tuple[Any, Any]]:
    """Stage 1: one capture file's segments as compact pieces keyed by connection; its problems.

    A segment travels as a plain tuple (pickled in C, no ``__reduce__`` call per segment),
    without the two addresses (``forward``: sent from the first of the two endpoints) and
    file name, which its piece carries once. Which endpoint is the server is decided per
    connection, once all its pieces (and so its SYNs) are together.
    """
    from amqp_codec.analyze.streams import endpoints
    from amqp_codec.capture.packets import CaptureProblem, read_capture

    index, path = item
    pieces: dict[Any, list[tuple[int, float, bool, int, int, bytes]]] = {}
    problems: list[CaptureProblem] = []
    held = part = 0
    for seg in read_capture(path):
        if isinstance(seg, CaptureProblem):
            problems.append(seg)
            continue
        key = endpoints(seg)
        piece = pieces.get(key)
        if piece is None:
            piece = pieces[key] = []
        piece.append(
            (seg.packet, seg.ts, key[0] == (seg.src, seg.sport), seg.seq, seg.flags, seg.payload)
        )
        held += len(seg.payload)
        if held >= _PIECES_BYTES:
            for key, piece in pieces.items():
                yield key, (index, part, piece)
            pieces, held, part = {}, 0, part + 1
    for key, piece in pieces.items():
        yield key, (index, part, piece)
    if problems:
        yield ("capture", path), (index, 0, problems)


def _partition(key: Any) -> int:
    """Shuffle partitioner: the same on every machine and Python (``hash`` of str is salted)."""
    return zlib.crc32(repr(key).encode())


def _segments(key: Any, pieces: list[_Piece], files: Sequence[str]) -> Iterator[Any]:
    """A connection's segments back from its pieces, in capture file order."""
    from amqp_codec.capture.packets import Segment

    (a_ip, a_port), (b_ip, b_port) = key
    for index, _, piece in sorted(pieces, key=lambda p: (p[0], p[1])):
        path = files[index]
        for packet, ts, forward, seq, flags, payload in piece:
            if forward:
                yield Segment(path, packet, ts, a_ip, a_port, b_ip, b_port, seq, flags, payload)
            else:
                yield Segment(path, packet, ts, b_ip, b_port, a_ip, a_port, seq, flags, payload)


def _analyze_partition(
    items: Iterable[tuple[Any, Any]],
    files: Sequence[str],
    ports: frozenset[int],
    bodies: bool,
) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Stage 3: the rows of every connection (and capture file) whose pieces are here.

    A connection's pieces come from any of the stage 1 tasks, in any order, so all are
    gathered first, in a plain dict: they are already grouped, and ``groupByKey`` would merge
    them again in Python on both sides of the shuffle.
    """
    from amqp_codec.analyze.streams import analyze_connection, capture_problem_row

    groups: dict[Any, list[Any]] = {}
    for key, piece in items:
        group = groups.get(key)
        if group is None:
            group = groups[key] = []
        group.append(piece)
    for key in sorted(groups, key=repr):
        pieces = groups.pop(key)
        if key[0] == "capture":  # problems reading that file
            for _, _, problems in pieces:
                for problem in problems:
                    yield capture_problem_row(problem)
            continue
        yield from analyze_connection(_segments(key, pieces, files), ports=ports, bodies=bodies)


def _table_name(row: tuple[str, tuple[Any, ...]]) -> str:
    return row[0]


def _in_table(name: str, row: tuple[str, tuple[Any, ...]]) -> bool:
    return row[0] == name


def _row(row: tuple[str, tuple[Any, ...]]) -> tuple[Any, ...]:
    return row[1]


# ------------------------------------------------------------------------------------------
# The driver
# ------------------------------------------------------------------------------------------


class _Progress:
    def __init__(self, enabled: bool, err: TextIO) -> None:
        self.enabled = enabled
        self.err = err
        self.start = time.monotonic()

    def __call__(self, message: str) -> None:
        if self.enabled:
            elapsed = time.monotonic() - self.start
            self.err.write(f"[amqp-codec analyze {elapsed:7.1f}s] {message}\n")
            self.err.flush()


#: JVM options of a driver this job starts (not of one ``spark-submit`` started, nor of
#: executors). The optimising JIT compiler (C2) and parallel GC threads cost more CPU than
#: they save in a job of this length, whose JVM mostly moves bytes: on a 1 GB capture set in
#: ``local[2]``, 66 -> 46 CPU seconds and 41 -> 33 s, the same rows. They go before
#: ``spark.driver.extraJavaOptions``, whose options win.
_DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _session(master: str | None, progress: bool, verbose: bool) -> tuple[SparkSession, bool]:
    """A session to run in, and whether it is ours to stop (not one already running)."""
    # Executors must run this interpreter (the one with amqp-codec installed), not "python3".
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from amqp_codec.analyze.logs import jvm_stderr, quiet_py4j

    active = SparkSession.getActiveSession()
    if active is not None:
        # One SparkContext per process: a different master cannot be honoured silently.
        running = active.sparkContext.master
        if master and master != running:
            raise ValueError(
                f"a Spark session on {running} is already running in this process; "
                f"cannot run on {master} (pass spark=, or run in a new process)"
            )
        return active, False

    builder = SparkSession.builder.appName("amqp-codec analyze")
    if master:
        builder = builder.master(master)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # this process starts the driver's JVM
        builder = builder.config("spark.driver.defaultJavaOptions", _DRIVER_JAVA_OPTIONS)
    # Spark's progress bar writes to the JVM's stderr, which is the log file unless verbose.
    show_bar = "true" if progress and verbose else "false"
    builder = builder.config("spark.ui.showConsoleProgress", show_bar)
    quiet_py4j(verbose)
    with jvm_stderr(verbose):  # Java's and log4j's lines go to the log file unless verbose
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN" if verbose else "ERROR")
    return spark, True


def run(
    captures: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    master: str | None = None,
    ports: Collection[int] = DEFAULT_PORTS,
    bodies: bool = False,
    progress: bool = True,
    overwrite: bool = False,
    verbose: bool = False,
    spark: SparkSession | None = None,
) -> Summary:
    """Analyse ``captures`` (a pcap/pcapng file or folder, or a list of them) into ``out``.

    Args:
        master: Spark master URL (``local[4]``, ``spark://host:7077``); default: the one
            ``spark-submit`` was given, else ``local[*]``. Ignored when ``spark`` is given.
        ports: server ports of AMQP connections; connections on other ports are analysed
            when their client starts with the AMQP protocol header.
        bodies: keep message bodies in the ``messages`` table (else only size and hash).
        progress: show progress on standard error (stage lines; Spark's bar with ``verbose``).
        overwrite: replace the outputs of a previous run in ``out`` (other files there are
            kept); without it, an ``out`` that holds files is refused.
        verbose: Spark's and Java's logs on standard error (else in a log file, see
            :mod:`amqp_codec.analyze.logs`).
        spark: an existing session to run in (left running); default: one is created and
            stopped at the end.

    Returns the :class:`Summary`. Everything that can be checked before Spark starts is
    (:func:`~amqp_codec.analyze.preflight.preflight`): a missing input, no captures, an
    ``out`` that is a file, not writable or not empty, no suitable Java, a bad ``master`` or
    port raise :class:`~amqp_codec.analyze.preflight.AnalyzeUsageError`. Unreadable
    captures, inputs skipped in folders (pipes, sockets...), garbage streams and unknown
    protocols are rows in ``problems``, not errors. The outputs are written into a staging
    folder and moved into ``out`` at the end: a failed run leaves ``out`` as it was.
    """
    from amqp_codec.analyze.output import staged_output
    from amqp_codec.analyze.preflight import preflight

    checked = preflight(
        captures, out, master=master, ports=ports, overwrite=overwrite, java=spark is None
    )
    from pyspark import StorageLevel

    from amqp_codec.analyze.report import REPORT_NAME, write_report
    from amqp_codec.analyze.streams import capture_problem_row
    from amqp_codec.analyze.tables import TABLES, spark_schema
    from amqp_codec.capture.packets import CaptureProblem

    began = time.monotonic()
    say = _Progress(progress, sys.stderr)
    out, files, port_set = checked.out, checked.files, checked.ports
    size = sum(os.path.getsize(path) for path in files)
    skipped = [
        capture_problem_row(CaptureProblem(s.capture, None, s.kind, s.detail))
        for s in checked.skipped
    ]
    # The session is stopped before a failed run's staging folder is removed: no task of it
    # is left writing there.
    with staged_output(out) as staging:
        session, own = _session(master, progress, verbose) if spark is None else (spark, False)
        try:
            sc = session.sparkContext
            say(
                f"{len(files)} capture file{'s' if len(files) != 1 else ''}, "
                f"{sc.defaultParallelism} cores; reading segments"
            )
            parts = max(1, len(files), -(-size // _PARTITION_BYTES))
            pieces = sc.parallelize(list(enumerate(files)), max(1, len(files))).flatMap(_extract)
            rows = pieces.partitionBy(parts, _partition).mapPartitions(
                partial(_analyze_partition, files=files, ports=port_set, bodies=bodies)
            )
            if skipped:  # inputs preflight skipped (pipes, sockets...): problems rows
                rows = rows.union(sc.parallelize(skipped, 1))
            rows.persist(StorageLevel.MEMORY_AND_DISK)
            try:
                # One job computes every row (into the cache) and counts them per table: the
                # counts are exactly the rows each table is written with, without reading the
                # tables back.
                say("reassembling and decoding connections")
                found = rows.map(_table_name).countByValue()
                counts = {name: found.get(name, 0) for name in TABLES}
                for name, columns in TABLES.items():
                    say(f"writing {name}")
                    table = rows.filter(partial(_in_table, name)).map(_row)
                    frame = session.createDataFrame(table, spark_schema(columns))
                    frame.write.mode("overwrite").parquet(os.path.join(staging, name))
            finally:
                rows.unpersist()
            say("writing report.html")
            write_report(session, staging, counts, files)
        except BaseException:
            if not own:  # a session we leave running: no job of this run goes on in it
                with contextlib.suppress(Exception):
                    session.sparkContext.cancelAllJobs()
            raise
        finally:
            if own:
                session.stop()
    report = os.path.join(out, REPORT_NAME)
    summary = Summary(
        out=out,
        captures=len(files),
        capture_bytes=size,
        counts=counts,
        report=report,
        seconds=time.monotonic() - began,
    )
    say("done")
    return summary


# ------------------------------------------------------------------------------------------
# Command line (amqp-codec analyze, and spark-submit of this file)
# ------------------------------------------------------------------------------------------


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"port out of range: {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``analyze`` options, shared by ``amqp-codec analyze`` and ``spark-submit``."""
    parser.add_argument(
        "captures", nargs="+", metavar="CAPTURE", help="pcap or pcapng file, or a folder of them"
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder")
    parser.add_argument(
        "--master",
        metavar="URL",
        help="Spark master (default: spark-submit's, else local[*])",
    )
    parser.add_argument(
        "--port",
        dest="ports",
        type=_port,
        action="append",
        metavar="N",
        help=f"AMQP server port; repeat for several (default {DEFAULT_PORTS[0]}); other ports "
        "count when a connection starts with the AMQP protocol header",
    )
    parser.add_argument(
        "--bodies", action="store_true", help="keep message bodies in the messages table"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a previous analysis in --out (other files there are kept)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output, only the summary")
    parser.add_argument(
        "--verbose", action="store_true", help="show Spark's and Java's logs (else in a log file)"
    )


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    """Run the job for parsed ``analyze`` arguments; print the summary; return 0."""
    summary = run(
        args.captures,
        args.out,
        master=args.master,
        ports=args.ports or DEFAULT_PORTS,
        bodies=args.bodies,
        progress=not args.quiet,
        overwrite=args.overwrite,
        verbose=args.verbose,
    )
    out.write(summary.text() + "\n")
    out.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``spark-submit amqp_codec/analyze/job.py CAPTURES... --out DIR``."""
    parser = argparse.ArgumentParser(
        prog="amqp-codec-analyze", description="Analyse AMQP capture files on Spark."
    )
    add_arguments(parser)
    from amqp_codec.analyze.preflight import AnalyzeUsageError

    args = parser.parse_args(argv)
    try:
        return run_from_args(args, sys.stdout)
    except AnalyzeUsageError as exc:
        print(f"amqp-codec-analyze: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
