"""The Spark job: capture files in, Parquet tables and ``report.html`` out.

The unit of work is a *split*: a few MiB of one capture file (:mod:`~.scan`), never a whole
file or a whole connection, so no task, record or buffer grows with a capture or with a
connection, and every core has work whatever the capture's shape (one connection of
gigabytes, or a file of thousands of short ones). Files smaller than a split (a capture
rotated into thousands of small files) go several to a task, as one split (:func:`batched`).

1. **Scan** (a task per split): parse the packets, summarise each stream part (sequence
   numbers, byte intervals, SYN/FIN/RST, the stream's first bytes). Only these summaries
   reach the driver.
2. **Plan** (driver, :mod:`~.plan`): connections, directions, where each part lies in its
   stream and which bytes it owns, and each stream's regions, one per split that carries
   new bytes of it.
3. **Dissect** (a task per split, :mod:`~.regions`): parse the packets again, reassemble,
   and dissect the regions the split is home to; a region after the first starts at the
   first frame it can find and reads past its end only to finish what it started. Rows are
   written by the task itself as Parquet (pyarrow): payload bytes never cross into the JVM.
4. **Check** (driver): each stream's regions must meet frame for frame
   (:func:`~.plan.check_stream`); a stream whose regions do not (damage at a region's
   edge, say) is dissected again in one pass, and its region rows are dropped. The rows that
   depended on earlier regions are resolved, and the driver writes them with the
   ``connections`` rows and the capture problems.
5. **Report** (:mod:`~.report`): the bounded figures of the frames, messages and
   connections files were tallied as the tasks wrote them; the problems files and the files
   the check step rewrote are read again. The top-N lists are read from the tables with
   Arrow and go through a shuffle (no Spark SQL query).

Every table equals what one pass over each whole stream gives
(:func:`~.streams.analyze_connection`).

Run it from Python (:func:`run`), from the command line (``amqp-codec analyze``), or submit
this file to a cluster: ``spark-submit amqp_codec/analyze/job.py CAPTURES... --out DIR``
(the machines running executors need amqp-codec installed, and the capture paths and the
output folder must be the same on every machine: a shared file system).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import gc
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext
    from pyspark.sql import SparkSession

    from .plan import Connection, Plan, Slice, StreamPlan
    from .regions import PartWindow, Task, TaskResult
    from .scan import PartKey, Split, SplitScan
    from .tally import Tally

__all__ = [
    "DEFAULT_PORTS",
    "Mapper",
    "local_map",
    "write_tables",
    "DEFAULT_SPLIT_BYTES",
    "Summary",
    "Written",
    "add_arguments",
    "main",
    "run",
    "run_from_args",
]

#: The AMQP ports looked at by default (connections elsewhere count when they start with
#: the protocol header).
DEFAULT_PORTS: tuple[int, ...] = (5672,)
#: Capture bytes per split: what one task reads (and, with what it reads past its end, holds).
DEFAULT_SPLIT_BYTES = 64 * 2**20

_Item = TypeVar("_Item")


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
    redissected: int = 0
    """Streams whose regions did not meet and were dissected again in one pass."""

    def text(self) -> str:
        """The summary the command line prints."""
        rate = self.capture_bytes / 1e6 / self.seconds if self.seconds else 0.0
        lines = [
            f"analysed {self.captures} capture file{'s' if self.captures != 1 else ''} "
            f"({_megabytes(self.capture_bytes)}) in {self.seconds:.1f} s ({rate:,.1f} MB/s)",
        ]
        lines += [
            f"  {name:<12} {count:>10,} row{'s' if count != 1 else ''}"
            for name, count in self.counts.items()
        ]
        lines.append(f"tables in {self.out}")
        lines.append(f"report: {self.report}")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Written:
    """What :func:`write_tables` wrote."""

    counts: dict[str, int]
    """Rows per table."""
    redissected: int
    """Streams whose regions did not meet and were dissected again in one pass."""
    tallies: dict[str, Tally]
    """Per table file (by path), the report's bounded figures of its rows, counted as it was
    written (:func:`~amqp_codec.analyze.report.summarize` takes them)."""


# ------------------------------------------------------------------------------------------
# Progress
# ------------------------------------------------------------------------------------------


def _megabytes(size: float) -> str:
    """``1,074.4 MB``; below 0.1 MB, ``28.5 kB``."""
    return f"{size / 1e6:,.1f} MB" if size >= 100_000 else f"{size / 1e3:,.1f} kB"


class _Progress:
    """Progress lines on standard error: the stage, and while tasks run, the capture bytes
    done of the total with a rate and an ETA (Spark's own progress bar is off)."""

    def __init__(self, enabled: bool, err: TextIO) -> None:
        self.enabled = enabled
        self.err = err
        self.start = time.monotonic()
        self._held: list[str] | None = None
        self._lock = threading.Lock()

    def __call__(self, message: str) -> None:
        if self.enabled:
            elapsed = time.monotonic() - self.start
            line = f"[amqp-codec analyze {elapsed:7.1f}s] {message}\n"
            with self._lock:
                if self._held is not None:
                    self._held.append(line)
                    return
                self.err.write(line)
                self.err.flush()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Lines said inside the block (from any thread) are written when it ends."""
        with self._lock:
            self._held = []
        try:
            yield
        finally:
            with self._lock:
                lines, self._held = self._held or [], None
                if lines:
                    self.err.write("".join(lines))
                    self.err.flush()

    def watch(self, sc: SparkContext, group: str, label: str, total: int, tasks: int) -> _Watcher:
        return _Watcher(self, sc, group, label, total, tasks)


class _Watcher:
    """Polls Spark's status tracker for a job group's finished tasks (of ``tasks``, in one
    job or more) while it runs."""

    def __init__(
        self, say: _Progress, sc: SparkContext, group: str, label: str, total: int, tasks: int
    ):
        self.say, self.sc, self.group, self.label, self.total = say, sc, group, label, total
        self.tasks = tasks
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.began = time.monotonic()

    def __enter__(self) -> _Watcher:
        self.sc.setJobGroup(self.group, self.label)
        if self.say.enabled:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()

    def _fraction(self) -> float:
        tracker = self.sc.statusTracker()
        done = 0
        for job in tracker.getJobIdsForGroup(self.group):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info else ():
                stage_info = tracker.getStageInfo(stage)
                if stage_info:
                    done += stage_info.numCompletedTasks
        return min(done / self.tasks, 1.0) if self.tasks else 0.0

    def _run(self) -> None:
        last = -1.0
        while not self.stop.wait(2.0):
            try:
                fraction = self._fraction()
            except Exception:  # the context is stopping
                return
            if fraction == last:
                continue
            last = fraction
            elapsed = time.monotonic() - self.began
            done = self.total * fraction
            rate = done / 1e6 / elapsed if elapsed else 0.0
            eta = f", ETA {elapsed / fraction - elapsed:.0f} s" if fraction else ""
            self.say(
                f"{self.label}: {_megabytes(done)} of {_megabytes(self.total)} "
                f"({fraction:.0%}), {rate:,.1f} MB/s{eta}"
            )


# ------------------------------------------------------------------------------------------
# The driver
# ------------------------------------------------------------------------------------------


#: JVM options of a driver this job starts (not of one ``spark-submit`` started, nor of
#: executors). The optimising JIT compiler (C2) and parallel GC threads cost more CPU than
#: they save in a job whose JVM mostly schedules Python tasks. They go before
#: ``spark.driver.extraJavaOptions``, whose options win.
_DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: The interpreter's switch interval while the head start runs tasks in the driver (seconds;
#: Python's default is 0.005). See :mod:`~amqp_codec.analyze.head_start`.
_HEAD_START_SWITCH_INTERVAL = 0.0005


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[list[int]]:
    """Ctrl-C inside the block is noted in the list it gives, not raised: the caller acts on
    it once the block is done.

    Interrupted while it waits for the JVM it started, PySpark loses that process, which
    then lives on (it ignores Ctrl-C) holding the terminal's output. Only the main thread
    receives signals: elsewhere nothing changes."""
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return

    def note(signum: int, frame: Any) -> None:
        caught.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield caught
    finally:
        if signal.getsignal(signal.SIGINT) is note:  # else the new context's own handler
            signal.signal(signal.SIGINT, previous)


def _local_driver(master: str | None) -> bool:
    """Whether this process starts the driver's JVM (``spark-submit`` did not) on a local
    master."""
    from amqp_codec.analyze.head_start import runs_here

    return "PYSPARK_GATEWAY_PORT" not in os.environ and runs_here(master)


def _running_context() -> SparkContext | None:
    """The SparkContext already running in this process (a session's, say), if any."""
    from pyspark import SparkContext

    return SparkContext._active_spark_context


def _import_spark() -> None:
    """Import what starting the driver's JVM needs, before the head start's tasks begin.

    Imported by the thread that starts the JVM while a task runs in another (they share the
    interpreter), pyspark held the JVM's start back: it began 0.25 to 0.32 s into the run,
    and 0.10 to 0.13 s this way, and the SparkContext was up 0.2 to 0.3 s sooner (1 GB in
    one connection, four runs of each alternated, 7 December 2026). The whole run took as
    long on the 2-core machine, whose cores are busy either way; with more cores, the
    executors start that much sooner."""
    import pyspark.java_gateway  # noqa: F401
    from pyspark import SparkContext  # noqa: F401


def _context(master: str | None, progress: bool, verbose: bool) -> tuple[SparkContext, bool]:
    """A SparkContext to run in, and whether it is ours to stop (not one already running).

    Only a context, no SparkSession: the job runs no SQL, and a session's start costs the
    driver's JVM more. Up, the JVM had used 1.7 to 1.8 s of CPU with a context alone and
    2.4 to 2.7 s with a session, which also came up 0.4 to 0.7 s later (the 2-core machine,
    two starts of each, alternated)."""
    # Executors must run this interpreter (the one with amqp-codec installed), not "python3".
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from py4j.protocol import Py4JJavaError
    from pyspark import SparkConf, SparkContext
    from pyspark.errors import PySparkRuntimeError

    from amqp_codec.analyze.class_archive import archive_options, discard
    from amqp_codec.analyze.logs import jvm_output, log_size, quiet_py4j
    from amqp_codec.analyze.preflight import java_command

    active = _running_context()
    if active is not None:
        # One SparkContext per process: a different master cannot be honoured silently.
        running = active.master
        if master and master != running:
            raise ValueError(
                f"a Spark session on {running} is already running in this process; "
                f"cannot run on {master} (pass spark=, or run in a new process)"
            )
        return active, False

    conf = SparkConf().setAppName("amqp-codec analyze")
    if master:
        conf.setMaster(master)
    archive = None
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # this process starts the driver's JVM
        archive_flags, archive = archive_options(java_command()[0])
        options = f"{_DRIVER_JAVA_OPTIONS} {archive_flags}".strip()
        conf.set("spark.driver.defaultJavaOptions", options)
    # The job reports its own progress (capture MB done, rate, ETA): Spark's bar stays off,
    # and so does its web UI in a driver this job starts on a local master (starting it
    # costs a third of a second; spark-submit's driver and a cluster's keep it).
    conf.set("spark.ui.showConsoleProgress", "false")
    if _local_driver(master):
        conf.set("spark.ui.enabled", "false")
    # Executors fork their Python workers from a daemon that has the analysis imported.
    conf.set("spark.python.daemon.module", "amqp_codec.analyze.daemon")
    quiet_py4j(verbose)
    logged = log_size()
    # Java's and log4j's lines go to the log file unless verbose.
    with _interrupts_deferred() as interrupted, jvm_output(verbose):
        try:
            try:
                sc = SparkContext.getOrCreate(conf)
            except PySparkRuntimeError:
                if archive is None:
                    raise
                # A JVM that cannot map the class archive (damaged, say) does not start: the
                # driver starts without it, and if it then does, the archive goes. One that
                # does not start either way has another reason (the user's Java options, a
                # heap too large): the archive stays.
                conf.set("spark.driver.defaultJavaOptions", _DRIVER_JAVA_OPTIONS)
                sc = SparkContext.getOrCreate(conf)
                discard(archive)
        except PySparkRuntimeError as error:
            if error.getCondition() != "JAVA_GATEWAY_EXITED":
                raise
            raise _java_exited(logged, verbose) from None
        except Py4JJavaError as error:
            # Refused by Spark as the context started: nothing of ours runs in there yet, so
            # it is the settings Spark was given (a port out of range, a bad size).
            raise _spark_refused(error, verbose) from None
    if interrupted:
        _stop(sc)
        raise KeyboardInterrupt
    sc.setLogLevel("WARN" if verbose else "ERROR")
    return sc, True


def _java_exited(logged: int, verbose: bool) -> Exception:
    """The error to raise for a driver JVM that exited as it started: what Java said (in
    the log file after byte ``logged``, or above when ``verbose``), in one line."""
    from amqp_codec.analyze.logs import log_path, log_since
    from amqp_codec.analyze.preflight import AnalyzeUsageError
    from amqp_codec.analyze.spark_errors import java_said

    said = None if verbose else java_said(log_since(logged))
    where = "its output is above" if verbose else f"its output is in {log_path()}"
    return AnalyzeUsageError(
        f"Java exited as Spark's driver started{': ' + said if said else ''} ({where}; "
        "check what Spark and its Java were given: --master, spark-defaults.conf in "
        "SPARK_CONF_DIR, spark.driver.memory, spark.driver.extraJavaOptions)"
    )


def _spark_refused(error: Exception, verbose: bool) -> Exception:
    """The error to raise for a SparkContext that Spark refused to create: its reason (the
    Java exception's first line) in one line."""
    from amqp_codec.analyze.logs import log_path
    from amqp_codec.analyze.preflight import AnalyzeUsageError
    from amqp_codec.analyze.spark_errors import java_exception

    reason = java_exception(error)
    where = "its output is above" if verbose else f"its log is {log_path()}"
    return AnalyzeUsageError(
        f"Spark refused to start{': ' + reason if reason else ''} ({where}; check the "
        "settings it was given: spark-defaults.conf in SPARK_CONF_DIR, PYSPARK_SUBMIT_ARGS)"
    )


def _start_workers(sc: SparkContext) -> None:
    """Start the executors' Python workers with a job of one small task per core.

    A session's first Python job waits about 1.4 s (on the 2-core machine) for the
    executors' Python daemon and workers to start; later jobs do not. Run while the head
    start still has tasks to begin, that wait overlaps the tasks it keeps doing meanwhile,
    and Spark's share then starts at once: on 1 GB, runs took 0.95x the time (26 November
    2026, whole-process timing, one connection in 65000-byte segments and many connections)."""
    from amqp_codec.analyze.head_start import start_worker

    cores = max(sc.defaultParallelism, 1)
    sc.parallelize(range(cores), cores).map(start_worker).collect()


class _Background:
    """``work(mapper)`` in a thread, from the start; its result (or its failure) later."""

    def __init__(self, work: Callable[[Mapper], Any], mapper: Mapper) -> None:
        self._result: Any = None
        self._failure: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(work, mapper), name="amqp-codec tables", daemon=True
        )
        self._thread.start()

    def _run(self, work: Callable[[Mapper], Any], mapper: Mapper) -> None:
        try:
            self._result = work(mapper)
        except BaseException as error:  # raised again by result()
            self._failure = error

    def running(self) -> bool:
        return self._thread.is_alive()

    def result(self) -> Any:
        self._thread.join()
        if self._failure is not None:
            raise self._failure
        return self._result

    def wait(self, timeout: float = 60.0) -> None:
        """Wait for the thread to end (after a failure elsewhere: its own is not raised)."""
        self._thread.join(timeout)


def _stop(context: SparkContext) -> None:
    """``context.stop()``, without waiting for PySpark's accumulator server to notice.

    That server's request loop looks for its stop flag once a second, and stopping the
    context waits for it: on average half a second added to every run, for accumulators this
    job never uses. It is stopped in a daemon thread instead (done within the second, or
    ended with the process)."""
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        context._accumulatorServer = None  # type: ignore[assignment]
    context.stop()
    if server is not None:
        threading.Thread(
            target=server.shutdown, name="accumulator server stop", daemon=True
        ).start()


def run(
    captures: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    master: str | None = None,
    ports: Collection[int] = DEFAULT_PORTS,
    bodies: bool = False,
    progress: bool = True,
    spark: SparkSession | None = None,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    overwrite: bool = False,
    verbose: bool = False,
) -> Summary:
    """Analyse ``captures`` (a pcap/pcapng file or folder, or a list of them) into ``out``.

    Args:
        master: Spark master URL (``local[4]``, ``spark://host:7077``); default: the one
            ``spark-submit`` was given, else ``local[*]``. Ignored when ``spark`` is given.
        ports: server ports of AMQP connections; connections on other ports are analysed
            when their client starts with the AMQP protocol header.
        bodies: keep message bodies in the ``messages`` table (else only size and hash).
        progress: show progress on standard error (stages, capture MB done, rate, ETA).
        spark: an existing session to run in (left running); default: one is created and
            stopped at the end.
        split_bytes: capture bytes per task (the tables do not depend on it).
        overwrite: replace the outputs of a previous run in ``out`` (other files there are
            kept); without it, an ``out`` that holds files is refused.
        verbose: Spark's and Java's logs on standard error (else in a log file, see
            :mod:`amqp_codec.analyze.logs`).

    Returns the :class:`Summary`. Everything that can be checked before Spark starts is
    (:func:`~amqp_codec.analyze.preflight.preflight`): a missing input, no captures, an
    ``out`` that is a file, not writable or not empty, no suitable Java, a bad ``master`` or
    port raise :class:`~amqp_codec.analyze.preflight.AnalyzeUsageError`, and so do a
    driver JVM that Java will not start with the settings Spark gives it and a context that
    Spark refuses to create (the reason in the message). Unreadable captures, inputs skipped
    in folders (pipes, sockets...), garbage streams and unknown protocols are rows in
    ``problems``, not errors. The outputs are written into a staging folder and moved into
    ``out`` at the end: a failed run leaves ``out`` as it was.
    """
    from amqp_codec.analyze.head_start import HeadStart, runs_here
    from amqp_codec.analyze.output import staged_output
    from amqp_codec.analyze.preflight import check_master_reachable, preflight
    from amqp_codec.analyze.report import REPORT_NAME, write_report
    from amqp_codec.analyze.streams import capture_problem_row
    from amqp_codec.capture.packets import CaptureProblem

    checked = preflight(
        captures, out, master=master, ports=ports, overwrite=overwrite, java=spark is None
    )
    began = time.monotonic()
    say = _Progress(progress, sys.stderr)
    out, files, port_set = checked.out, checked.files, checked.ports
    size = sum(os.path.getsize(path) for path in files)
    skipped = [
        capture_problem_row(CaptureProblem(s.capture, None, s.kind, s.detail))[1]
        for s in checked.skipped
    ]
    redissected = 0
    # Compressed captures are decompressed once into a temporary folder where every task
    # sees this machine's disk (see write_tables).
    local = _local_driver(master) if spark is None else runs_here(spark.sparkContext.master)
    # The context is stopped before a failed run's staging folder is removed: no task of it
    # is left writing there.
    with _collector_eased(), staged_output(out) as staging:

        def tables(mapper: Mapper) -> Written:
            return write_tables(
                files,
                staging,
                ports=port_set,
                bodies=bodies,
                split_bytes=split_bytes,
                mapper=mapper,
                say=say,
                problems=skipped,
                decompress=local,
            )

        # On this machine the first tasks run here while Spark starts (see head_start), unless
        # AMQP_CODEC_HEAD_START=0 leaves every task to Spark.
        wanted = os.environ.get("AMQP_CODEC_HEAD_START", "1") != "0"
        head = HeadStart(say) if wanted and spark is None and _local_driver(master) else None
        begun: _Background | None = None
        sc: SparkContext | None = None
        own = False
        switch_interval = sys.getswitchinterval()
        try:
            if spark is None:
                if master and _running_context() is None:
                    # Found before any line is written: a mistake is said in one line.
                    check_master_reachable(master)
                say("starting Spark" + (" (the first tasks run here meanwhile)" if head else ""))
                # The lines of the work begun meanwhile wait while Java's start-up output goes
                # to the log file.
                with say.held():
                    if head is not None:
                        _import_spark()
                        sys.setswitchinterval(_HEAD_START_SWITCH_INTERVAL)
                        begun = _Background(tables, head)
                    sc, own = _context(master, progress, verbose)
            else:
                sc = spark.sparkContext
            say(
                f"{len(files)} capture file{'s' if len(files) != 1 else ''} "
                f"({_megabytes(size)}), {sc.defaultParallelism} cores"
            )
            mapper = _SparkMapper(sc, say, size)
            if head is None or begun is None:
                written = tables(mapper)
            else:
                if begun.running():
                    _start_workers(sc)
                head.take_over(mapper)
                written = begun.result()
            counts, redissected = written.counts, written.redissected
            say("writing report.html")
            write_report(sc, staging, counts, files, written.tallies)
        except BaseException:
            if sc is not None and not own:
                # A session we leave running: no job of this run goes on in it.
                with contextlib.suppress(Exception):
                    sc.cancelAllJobs()
            raise
        finally:
            if head is not None:
                head.stop()
            if own and sc is not None:
                _stop(sc)
            if begun is not None:
                begun.wait()  # nothing of it is left writing into the staging folder
            sys.setswitchinterval(switch_interval)
    report = os.path.join(out, REPORT_NAME)
    summary = Summary(
        out=out,
        captures=len(files),
        capture_bytes=size,
        counts=counts,
        report=report,
        seconds=time.monotonic() - began,
        redissected=redissected,
    )
    say(
        f"done: {_megabytes(size)} in {summary.seconds:.1f} s "
        f"({size / 1e6 / max(summary.seconds, 1e-9):,.1f} MB/s)"
    )
    return summary


#: The collector's thresholds while the driver works (see :func:`_collector_eased`): those
#: of the executors' workers (:mod:`amqp_codec.analyze.daemon`), whose tasks it runs too.
_DRIVER_GC_THRESHOLD = (10_000, 100, 10)


@contextlib.contextmanager
def _collector_eased() -> Iterator[None]:
    """The young generation collected after 10,000 allocations instead of 700, and the
    middle one after 100 of those passes instead of 10, while the driver works, as in the
    executors' workers (:mod:`amqp_codec.analyze.daemon`); the caller's thresholds back
    after. The driver holds the plan (objects in proportion to the connections) while it
    makes millions of short-lived objects with next to no cycles, and each older-generation
    pass walks the whole plan. On a file of 20,417 short connections, in one process, with
    the young generation's threshold alone: planning 2.2 s instead of 1.1 s, scanning 8.0 s
    instead of 7.0 s."""
    before = gc.get_threshold()
    gc.set_threshold(*_DRIVER_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _clear_tables(out: str) -> None:
    """Remove the tables a previous run wrote into ``out`` (each table is a folder)."""
    from amqp_codec.analyze.tables import TABLES

    for name in TABLES:
        path = os.path.join(out, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
    os.makedirs(out, exist_ok=True)


#: Runs a function over items, in parallel where it can: (label, function, items) -> results.
Mapper = Callable[[str, Callable[[Any], Any], list[Any]], list[Any]]


def local_map(label: str, function: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """A :data:`Mapper` that runs everything in this process, one item after another."""
    return [function(item) for item in items]


class _SparkMapper:
    """A :data:`Mapper` that runs a Spark task per item, with progress in capture bytes: those
    of the items' splits (a scan's splits, a dissection's tasks, batches of them), else the
    whole capture's.

    The driver pickles every item of a job before the job starts, and a dissecting task
    carries the plan of its connections: on one file of 20,417 short connections, 0.6 s
    of pickling for nine tasks while the executors waited. So a stage of more items than
    cores runs as two jobs: the first, of one item per core, starts as soon as those are
    pickled; the rest are pickled meanwhile and queue behind it (Spark runs a context's
    jobs first come, first served)."""

    def __init__(self, sc: SparkContext, say: _Progress, size: int) -> None:
        self.sc, self.say, self.size = sc, say, size

    def __call__(self, label: str, function: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        from amqp_codec.analyze.pickling import call_pickled, pickled_each, unpickled_each

        if not items:
            return []
        sizes = [_capture_bytes(item) for item in items]
        # A fallback task reads whole streams: progress counts in the whole capture's bytes.
        total = self.size if None in sizes else sum(s for s in sizes if s is not None)
        group = f"amqp-codec-{label}"
        cores = max(self.sc.defaultParallelism, 1)
        # Items and results go between the driver and the tasks pickled by us (see
        # call_pickled): Spark carries bytes.
        task = functools.partial(call_pickled, function)
        with self.say.watch(self.sc, group, label, total, len(items)):
            if len(items) <= cores:
                done = self.sc.parallelize(pickled_each(items), len(items)).map(task).collect()
                return unpickled_each(done)
            first = self.sc.parallelize(pickled_each(items[:cores]), cores).map(task)
            begun = _FirstJob(self.sc, group, label, first)
            rest = pickled_each(items[cores:])
            try:
                later = unpickled_each(self.sc.parallelize(rest, len(rest)).map(task).collect())
            except BaseException as error:
                cause = begun.failure  # it failed first, and cancelled this job
                # Not waited for: an interrupt is acted on at once, and a failed run stops
                # (or, in a session it did not start, cancels) what is left.
                _cancel(self.sc, group)
                if cause is not None and isinstance(error, Exception):
                    raise cause from None
                raise
            return unpickled_each(begun.result()) + later


def _cancel(sc: SparkContext, group: str) -> None:
    """Cancel the group's jobs, if the context can still be asked (a stopping one cannot:
    the failure being raised is the one to report)."""
    with contextlib.suppress(Exception):
        sc.cancelJobGroup(group)


class _FirstJob:
    """The first job of a stage (see :class:`_SparkMapper`), collected in a thread of the
    same job group; its failure cancels the group's other job and is raised by
    :meth:`result`."""

    def __init__(self, sc: SparkContext, group: str, label: str, rdd: RDD[Any]) -> None:
        self._rows: list[Any] = []
        self.failure: BaseException | None = None

        def collect() -> None:
            sc.setJobGroup(group, label)
            try:
                self._rows = rdd.collect()
            except BaseException as error:
                self.failure = error
                _cancel(sc, group)

        self._thread = threading.Thread(target=collect, name="amqp-codec first job", daemon=True)
        self._thread.start()

    def result(self) -> list[Any]:
        self._thread.join()
        if self.failure is not None:
            raise self.failure
        return self._rows


def write_tables(
    captures: Sequence[str],
    out: str,
    *,
    ports: Collection[int] = DEFAULT_PORTS,
    bodies: bool = False,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    mapper: Mapper = local_map,
    say: Callable[[str], None] | None = None,
    problems: Sequence[tuple[Any, ...]] = (),
    decompress: bool = True,
) -> Written:
    """Scan, plan, dissect and check ``captures`` (files or folders) into the four tables
    under ``out``. :func:`run` does this on Spark; with the default ``mapper`` it runs in
    this process.
    ``problems``: rows the caller found (inputs it skipped), written with the driver's.
    ``decompress``: compressed captures are decompressed once into a temporary folder and
    split from there (see :mod:`~amqp_codec.analyze.decompressed`); False where the tasks
    do not see this machine's disk, and such files are read whole, a task each."""
    from amqp_codec.analyze.decompressed import copies_folder
    from amqp_codec.analyze.plan import make_plan
    from amqp_codec.analyze.regions import complete_heads, run_tasks
    from amqp_codec.analyze.scan import plan_splits, scan_splits
    from amqp_codec.capture.packets import capture_files

    say = say or (lambda message: None)
    files = capture_files(list(captures))
    with copies_folder(decompress, out) as folder, _collector_spared() as spare:
        splits = plan_splits(files, split_bytes, _decompressed(mapper, files, folder, split_bytes))
        _clear_tables(out)
        # Files smaller than a split go several to a task, up to the split size, as if they
        # were one split: their scans, and their regions (see make_plan).
        batches = _small_files_batched(splits, split_bytes)
        scans = [scan for done in mapper("scanning", scan_splits, batches) for scan in done]
        splits, scans = _whole_where_needed(mapper, splits, scans)
        splits, scans = _chain(splits, scans)
        spare()  # the scans
        groups = [0] * len(splits)  # split index -> its batch, for the regions and the tasks
        for number, batch in enumerate(_small_files_batched(splits, split_bytes)):
            for split in batch:
                groups[split.index] = number
        plan = make_plan(scans, files, [s.file for s in splits], frozenset(ports), groups)
        complete_heads(plan, splits)
        spare()  # the plan
        n = len(plan.connections)
        say(
            f"{n:,} AMQP connection{'s' if n != 1 else ''}, "
            f"{sum(len(s.regions) for s in plan.streams):,} stream regions; dissecting"
        )
        tasks = _tasks(plan, splits, out, bodies)
        results = mapper("dissecting", run_tasks, _grouped(tasks, groups))
        spare()  # the tasks' results
        return _finish(mapper, say, plan, splits, scans, results, out, bodies, problems)


def _decompressed(
    mapper: Mapper, files: Sequence[str], folder: str | None, split_bytes: int
) -> dict[str, str]:
    """Per compressed file of ``files`` that decompressed whole, its copy in ``folder`` (see
    :mod:`~amqp_codec.analyze.decompressed`); nothing when ``folder`` is None. Small files
    go several to a task, up to ``split_bytes`` of them, as small files are scanned: a
    capture rotated by the minute and compressed is a thousand files a day."""
    from amqp_codec.analyze.decompressed import compressed_files, decompress_splits

    if folder is None:
        return {}
    batches = batched(compressed_files(files), _capture_bytes, split_bytes)
    if not batches:
        return {}
    done = mapper("decompressing", functools.partial(decompress_splits, folder), batches)
    return {
        split.path: copy
        for batch, copies in zip(batches, done, strict=True)
        for split, copy in zip(batch, copies, strict=True)
        if copy is not None
    }


def batched(
    items: Sequence[_Item], size: Callable[[_Item], int | None], target: int
) -> list[list[_Item]]:
    """``items`` in order, in batches that each run as one task: consecutive items of fewer
    than ``target`` bytes together, up to ``target`` bytes a batch; larger ones, and those
    whose ``size`` is None, alone.

    A Spark task costs 20 to 50 ms beyond its work (its scheduling, the Python worker's round
    trip), and a dissecting task four part files: a capture rotated into 1,947 files of
    22 kB (as ``tcpdump -G`` rotates by the minute) took 57 to 62 s on ``local[2]`` with a
    task per file, 7,844 part files written. A batch of small files is also one region of
    each stream (see :func:`~.plan.make_plan`)."""
    out: list[list[_Item]] = []
    held = 0  # bytes in the last batch, while it takes more
    for item in items:
        n = size(item)
        if n is None or n >= target:
            out.append([item])
            held = target
        elif out and held + n <= target:
            out[-1].append(item)
            held += n
        else:
            out.append([item])
            held = n
    return out


def _small_files_batched(splits: Sequence[Split], split_bytes: int) -> list[list[Split]]:
    """:func:`batched` ``splits``: those that are whole files together, up to ``split_bytes``
    a batch; the splits of a larger file alone.

    Batched, a larger file's splits would be cut differently: its last split's regions
    joined with the next file's, say. Small files batched are one region of each stream,
    where a region per file cost each of them a search for its first frame and a read on
    into the next files: on 100 files of 10 MB, 17.6 to 18.6 s with a task and a region per
    file, 10.6 to 11.2 s in batches."""
    per_file = collections.Counter(split.file for split in splits)
    several = {file for file, count in per_file.items() if count > 1}

    def size(split: Split) -> int | None:
        return None if split.file in several else split.end - split.start

    return batched(splits, size, split_bytes)


def _grouped(tasks: list[Task], groups: Sequence[int]) -> list[list[Task]]:
    """``tasks`` in order, those of each group of splits (see :func:`make_plan`) together."""
    out: list[list[Task]] = []
    last = -1
    for task in tasks:
        group = -1 if task.split is None else groups[task.split.index]
        if out and group == last and group >= 0:
            out[-1].append(task)
        else:
            out.append([task])
        last = group
    return out


def _capture_bytes(item: Any) -> int | None:
    """The capture bytes a split, a dissecting task (its split's) or a batch of them covers;
    None where unknown (a fallback task reads whole streams)."""
    from amqp_codec.analyze.regions import Task
    from amqp_codec.analyze.scan import Split

    if isinstance(item, list):
        sizes = [_capture_bytes(member) for member in item]
        return None if None in sizes else sum(s for s in sizes if s is not None)
    split = item.split if isinstance(item, Task) else item
    return split.end - split.start if isinstance(split, Split) else None


@contextlib.contextmanager
def _collector_spared() -> Iterator[Callable[[], None]]:
    """A function that moves every object alive into the collector's permanent generation
    (:func:`gc.freeze`), and at the end all of them back.

    What the driver keeps from stage to stage (scans, plan, results) grows with the
    connections, and each pass of the collector's oldest generation walks all of it while
    the next stage makes millions of short-lived objects: on a file of 20,417 short
    connections, the driver's checks and rows at the end took 3.0 s, 1.7 s with the
    collector off (so 1.3 s was the collector walking what the stages kept). Frozen objects
    are still freed when nothing refers to them; only cycles among them wait for the end. A
    process that had frozen objects of its own is left as it is: unfreezing would take those
    back too.
    """
    if gc.get_freeze_count():
        yield lambda: None
        return
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()


def _whole_where_needed(
    mapper: Mapper, splits: list[Split], scans: list[SplitScan]
) -> tuple[list[Split], list[SplitScan]]:
    """Files in which a split met a pcapng section or interface block after the first packet
    are read again whole, in one split: a split starting after such a block misreads."""
    from amqp_codec.analyze.scan import Split, scan_split

    changed = {split.file for split, scan in zip(splits, scans, strict=True) if scan.layout_changed}
    if not changed:
        return splits, scans
    kept: list[tuple[Split, SplitScan | None]] = []
    for split, scan in zip(splits, scans, strict=True):
        if split.file not in changed:
            kept.append((split, scan))
        elif not kept or kept[-1][0].file != split.file:
            whole = Split(0, split.file, split.path, None, 0, os.path.getsize(split.path), 0, True)
            kept.append((whole, None))
    renumbered = [
        Split(i, s.file, s.path, s.layout, s.start, s.end, s.first_packet, s.synced)
        for i, (s, _) in enumerate(kept)
    ]
    again = mapper(
        "scanning", scan_split, [renumbered[i] for i, (_, scan) in enumerate(kept) if scan is None]
    )
    redone = iter(again)
    fixed: list[SplitScan] = []
    for i, (_, first) in enumerate(kept):
        scan = first if first is not None else next(redone)
        scan.split = i
        fixed.append(scan)
    return renumbered, fixed


def _chain(splits: list[Split], scans: list[SplitScan]) -> tuple[list[Split], list[SplitScan]]:
    """Check that each split starts where the one before it in the file stopped (else scan
    it again from there, here), and number the packets: the splits as the second pass reads
    them, and their scans."""
    from amqp_codec.analyze.scan import Split, scan_split

    by_index = {scan.split: scan for scan in scans}
    fixed_splits: list[Split] = []
    fixed_scans: list[SplitScan] = []
    previous: Split | None = None
    packets = 0
    for split in splits:
        scan = by_index[split.index]
        if previous is None or previous.file != split.file:
            packets = 0
            expected = scan.start
        else:
            expected = fixed_scans[-1].stop
        if split.layout is not None and scan.start != expected:
            split = Split(
                split.index, split.file, split.path, split.layout, expected, split.end, 0, True
            )
            scan = scan_split(split)
        synced = Split(
            split.index, split.file, split.path, split.layout, scan.start, split.end, packets, True
        )
        for problem in scan.problems:
            object.__setattr__(
                problem, "packet", None if problem.packet is None else problem.packet + packets
            )
        for part in scan.parts.values():
            part.first_packet += packets
        packets += scan.records
        fixed_splits.append(synced)
        fixed_scans.append(scan)
        previous = split
    return fixed_splits, fixed_scans


def _windows(plan: Plan) -> dict[tuple[int, PartKey], PartWindow]:
    from amqp_codec.analyze.regions import PartWindow

    windows: dict[tuple[int, PartKey], PartWindow] = {}
    for stream in plan.streams:
        for part in stream.slices:
            windows[(part.split, part.key)] = PartWindow(
                stream.id, part.offset0, stream.fin_offset, part.owned
            )
    return windows


def _tasks(plan: Plan, splits: list[Split], out: str, bodies: bool) -> list[Task]:
    """One second-pass task per split that holds parts of an analysed stream."""
    from amqp_codec.analyze.plan import nearest_copies
    from amqp_codec.analyze.regions import Task

    windows = _windows(plan)
    by_split: dict[int, dict[Any, Any]] = {}
    for (index, key), window in windows.items():
        by_split.setdefault(index, {})[key] = window
    first_copies: dict[int, dict[PartKey, tuple[Slice, ...]]] = {}
    for stream in plan.streams:
        for index, owners in (stream.first_copies or {}).items():
            part = stream.slices[index]
            first_copies.setdefault(part.split, {})[part.key] = owners
    # A connection whose streams are one region each, all read from one split, is checked
    # and written by that split's task (see regions.finish_connections), not here.
    finishing: dict[int, list[Connection]] = {}
    for connection in plan.connections:
        streams = [plan.streams[i] for i in connection.streams.values()]
        if any(len(stream.regions) != 1 for stream in streams):
            continue
        read = {part.split for stream in streams for part in stream.slices}
        read |= {stream.regions[0].home for stream in streams}
        if len(read) == 1:
            finishing.setdefault(read.pop(), []).append(connection)
    # Those connections' tasks check their streams whole; the others' need less of them.
    finished = {i for home in finishing.values() for c in home for i in c.streams.values()}
    home: dict[int, list[Any]] = {}
    for stream in plan.streams:
        carried = stream if stream.id in finished else stream.for_task()
        for region in stream.regions:
            home.setdefault(region.home, []).append((carried, region))
    tasks = []
    for split in splits:
        parts = by_split.get(split.index, {})
        regions = home.get(split.index, [])
        if not parts and not regions:
            continue
        others = {
            (part.split, part.key): windows[(part.split, part.key)]
            for _, region in regions
            for part in region.slices
            if part.split != split.index
        }
        copies, unread = nearest_copies(first_copies.get(split.index, {}))
        for owners in copies.values():  # read for comparing the bytes its parts carried again
            for part in owners:
                others[(part.split, part.key)] = windows[(part.split, part.key)]
        needed = {part_split for part_split, _ in others} | {split.index}
        tasks.append(
            Task(
                name=f"{split.index:05d}",
                split=split,
                parts=parts,
                regions=regions,
                splits={i: splits[i] for i in needed},
                windows=others,
                out=out,
                bodies=bodies,
                first_copies=copies,
                unread_copies=unread,
                connections=finishing.get(split.index, []),
            )
        )
    return tasks


def _finish(
    mapper: Mapper,
    say: Callable[[str], None],
    plan: Plan,
    splits: list[Split],
    scans: list[SplitScan],
    results: list[TaskResult],
    out: str,
    bodies: bool,
    problems: Sequence[tuple[Any, ...]],
) -> Written:
    """Check the streams, dissect again those whose regions do not meet, write the driver's
    rows."""
    from amqp_codec.analyze.parquet import TableWriters, filter_file
    from amqp_codec.analyze.plan import check_stream
    from amqp_codec.analyze.regions import PartWindow, Task, fallback_region, run_task, tcp_counts
    from amqp_codec.analyze.tables import TABLES

    counts = dict.fromkeys(TABLES, 0)
    tallies: dict[str, Tally] = {}
    edges: dict[int, dict[int, Any]] = {}
    facts: dict[int, dict[int, Any]] = {}
    files_of: dict[int, set[tuple[str, str]]] = {}
    tcp = tcp_counts(part for result in results for part in result.parts)
    finished: set[int] = set()  # connections their task checked and wrote (see regions)
    for result in results:
        for table, n in result.rows.items():
            counts[table] += n
        tallies.update(result.tallies)
        finished.update(result.finished)
        for region in result.regions:
            edges.setdefault(region.stream, {})[region.index] = region.edge
            facts.setdefault(region.stream, {})[region.index] = region.facts
            files_of.setdefault(region.stream, set()).update(result.files.items())
    driver = TableWriters(out, "driver")
    for row in problems:
        driver.add("problems", row)
    failed: list[StreamPlan] = []
    extra_problems: dict[int, int] = {}
    rules: dict[int, Any] = {}
    verdicts: dict[int, Any] = {}  # the rows each stream's regions left to the driver
    for stream in plan.streams:
        if stream.connection in finished:
            continue
        stream_edges = [edges[stream.id][r.index] for r in stream.regions]
        verdict = check_stream(stream, stream_edges)
        if not verdict.ok:
            failed.append(stream)
            continue
        verdicts[stream.id] = verdict
        extra_problems[stream.id] = len(verdict.problems)
        rules[stream.id] = verdict.rules

    def again(streams: list[StreamPlan], why: str, tag: str) -> None:
        """Dissect ``streams`` again, each in one pass, in place of what was written (``tag``
        names this round's task files)."""
        n = len(streams)
        say(f"{n} stream{'s' if n != 1 else ''} dissected again in one pass ({why})")
        drop = {(s.name, s.direction) for s in streams}
        for stream in streams:
            for table, path in files_of.pop(stream.id, set()):
                if table == "connections":
                    continue  # a task's file of the connections it finished: none of these
                counts[table] -= filter_file(path, table, drop)
                tallies.pop(path, None)  # no longer what the file holds: read it again
            extra_problems.pop(stream.id, None)
            verdicts.pop(stream.id, None)
        fallback = [
            Task(
                name=f"{tag}{stream.id:05d}",
                split=None,
                parts={},
                regions=[(stream, fallback_region(stream))],
                splits={s.split: splits[s.split] for s in stream.slices},
                windows={
                    (s.split, s.key): PartWindow(stream.id, s.offset0, stream.fin_offset, s.owned)
                    for s in stream.slices
                },
                out=out,
                bodies=bodies,
            )
            for stream in streams
        ]
        for result in mapper("dissecting again", run_task, fallback):
            for table, n in result.rows.items():
                counts[table] += n
            tallies.update(result.tallies)
            for region in result.regions:
                facts[region.stream] = {0: region.facts}
                rules[region.stream] = region.edge.rules
                files_of[region.stream] = set(result.files.items())
        whole.update(s.id for s in streams)
        redone.update(s.id for s in streams)

    redone: set[int] = set()
    whole: set[int] = {s.id for s in plan.streams if len(s.regions) == 1}
    if failed:
        again(failed, "their regions did not meet", "f")
    # The negotiated limits the regions assumed from the connection's head must be those the
    # streams hold; where not (a handshake past the head), dissect again with the right ones.
    wrong = _wrong_negotiation(plan, facts, whole, finished)
    if wrong:
        again(wrong, "the handshake was not where the head showed it", "fr")
    for verdict in verdicts.values():
        for row in verdict.frames:
            driver.add("frames", row)
        for row in verdict.problems:
            driver.add("problems", row)
    _driver_rows(driver, plan, scans, facts, tcp, extra_problems, rules, finished)
    for table, n in driver.close().items():
        counts[table] += n
    tallies.update(driver.tallies)
    return Written(counts, len(redone), tallies)


def _wrong_negotiation(
    plan: Plan, facts: dict[int, dict[int, Any]], whole: set[int], finished: set[int]
) -> list[StreamPlan]:
    """The streams dissected with negotiated limits other than their connection's (see
    :func:`~amqp_codec.analyze.heads.head_negotiation`), set right for dissecting again
    (``finished``: the connections their tasks checked and wrote)."""
    from amqp_codec.analyze.plan import misnegotiated

    wrong: list[StreamPlan] = []
    for connection in plan.connections:
        if connection.id in finished:
            continue
        streams = {d: plan.streams[i] for d, i in connection.streams.items()}
        found, negotiated = misnegotiated(streams, facts, whole)
        for stream in found:
            stream.negotiated, stream.tuned_at = negotiated, None
        wrong.extend(found)
    return wrong


def _driver_rows(
    driver: Any,
    plan: Plan,
    scans: list[SplitScan],
    facts: dict[int, dict[int, Any]],
    tcp: dict[int, list[int]],
    extra_problems: dict[int, int],
    rules: dict[int, Any],
    finished: set[int],
) -> None:
    """Capture problems, unknown protocols, and the ``connections`` rows, TCP anomalies and
    heartbeats missed at the end of each connection but those ``finished`` by their tasks."""
    from amqp_codec.analyze.plan import connection_rows
    from amqp_codec.analyze.streams import capture_problem_row, unknown_protocol_row
    from amqp_codec.capture.packets import CaptureProblem

    for scan in scans:
        for problem in scan.problems:
            driver.add(*capture_problem_row(problem))
        if scan.more_problems and scan.problems:
            capture = scan.problems[-1].capture
            detail = f"{scan.more_problems} more problems in this part of {capture}, not listed"
            driver.add(*capture_problem_row(CaptureProblem(capture, None, "more-problems", detail)))
    for unknown in plan.unknown:
        driver.add(*unknown_protocol_row(*unknown))
    for connection in plan.connections:
        if connection.id in finished:
            continue
        streams = {d: plan.streams[i] for d, i in connection.streams.items()}
        driver.extend(connection_rows(connection, streams, facts, tcp, extra_problems, rules))


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
        "captures",
        nargs="+",
        metavar="CAPTURE",
        help="pcap or pcapng file (plain, or compressed with gzip, xz, bzip2, zstd or lz4), "
        "or a folder of them",
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
