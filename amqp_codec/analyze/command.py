"""``amqp-codec analyze``: the command's arguments, and its mistakes and errors as one line.

The job itself is :mod:`amqp_codec.analyze.job`. A mistake (missing input, unusable
``--out``, no Java...) is one line and exit status 2, found before Spark starts; Ctrl-C
stops Spark and exits with 130; an error of ours is one line naming the log file that holds
the details, and exit status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import traceback
from typing import TextIO

from .job import add_arguments as _job_arguments
from .job import run_from_args

__all__ = ["DESCRIPTION", "EPILOG", "HELP", "add_arguments", "run"]

EXIT_OK = 0
#: A bug of ours (the details are in the log file named).
EXIT_BUG = 1
EXIT_ERROR = 2
#: Interrupted (Ctrl-C), as shells report a process ended by SIGINT.
EXIT_INTERRUPTED = 130

HELP = "analyse pcap/pcapng captures on Spark into Parquet tables and report.html"
#: ``{versions}`` is the protocol versions the codec reads (see :mod:`amqp_codec.cli`).
DESCRIPTION = (
    "Analyse captured AMQP traffic ({versions}; pcap or pcapng files, or "
    "folders of them) on Spark: writes the Parquet tables frames, messages, "
    "connections and problems, summary.json and a self-contained report.html into "
    "--out. Needs the 'analyze' extra and Java 17 or newer."
)
EPILOG = (
    "exit status: 0 done; 1 an internal error (details in the log file named); "
    "2 usage error (nothing written); 130 interrupted (--out left as it was)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The analyze command's arguments."""
    _job_arguments(parser)


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised while handling, a Ctrl-C (py4j may wrap it)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _bug(exc: BaseException, err: TextIO) -> int:
    """An error of ours: the traceback into the log file, one line naming it on ``err``."""
    from .logs import log_path

    path = log_path()
    try:
        with open(path, "a", encoding="utf-8") as log:
            log.write("amqp-codec analyze failed:\n")
            traceback.print_exception(exc, file=log)
        where = f"details in {path}"
    except OSError:
        where = "run with --verbose for details"
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    err.write(
        f"amqp-codec analyze: internal error ({type(exc).__name__}"
        f"{': ' + first if first else ''}); {where}\n"
    )
    return EXIT_BUG


def _forget_log() -> None:
    from .logs import log_path

    with contextlib.suppress(OSError):
        os.remove(log_path())


def _stopped(err: TextIO) -> int:
    """Ctrl-C: Spark was stopped and the staging folder removed on the way out."""
    _forget_log()
    err.write("amqp-codec analyze: interrupted; Spark stopped, --out left as it was\n")
    return EXIT_INTERRUPTED


def _analyze(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        err.write(f"amqp-codec analyze needs the 'analyze' extra ('amqp-codec[analyze]'): {exc}\n")
        return EXIT_ERROR
    from .preflight import AnalyzeUsageError
    from .spark_errors import user_problem

    try:
        status = run_from_args(args, out)
        _forget_log()  # a clean run's Spark and Java logs are of no use to anyone
        return status
    except AnalyzeUsageError as exc:
        err.write(f"amqp-codec analyze: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return _stopped(err)
    except OSError as exc:
        if _interrupted(exc):
            return _stopped(err)
        err.write(f"amqp-codec analyze: {exc}\n")
        return EXIT_ERROR
    except Exception as exc:
        if _interrupted(exc):
            return _stopped(err)
        problem = user_problem(exc)
        if problem is not None:  # the user's setup, not a bug: what to do, in one line
            from .logs import log_path

            where = "" if args.verbose else f" (Spark's log: {log_path()})"
            err.write(f"amqp-codec analyze: {problem}{where}\n")
            return EXIT_ERROR
        if args.verbose:
            traceback.print_exception(exc, file=err)
        return _bug(exc, err)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the analyze command; returns its exit status."""
    try:
        return _analyze(args, out, err)
    except KeyboardInterrupt:  # a second Ctrl-C, while Spark was stopping
        err.write("amqp-codec analyze: interrupted\n")
        return EXIT_INTERRUPTED
