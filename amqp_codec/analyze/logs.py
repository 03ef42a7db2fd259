"""Spark's and Java's logs go to a log file, not the terminal, unless ``--verbose``.

The JVM that PySpark starts inherits the process's standard error and output: its log4j
lines, its progress bar, any Java stack trace, and the errors of a JVM that cannot start
(HotSpot writes "Error occurred during initialization of VM" to standard output) would land
on the user's terminal. :func:`jvm_output` points file descriptors 1 and 2 at the log file
while the JVM is started, so the JVM (and the Python workers it starts) write there for their
whole life, while Python's own ``sys.stdout`` and ``sys.stderr`` are given back the terminal.
py4j's Python loggers, which print tracebacks when a call is interrupted, are raised to
CRITICAL the same way.

The same file receives the traceback of a bug of ours (see
:mod:`amqp_codec.analyze.command`), so that the one line the user sees can name where the
details are.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["jvm_output", "log_path", "log_since", "log_size", "quiet_py4j"]

_path: str | None = None


def log_path() -> str:
    """This process's log file (one per run, in the temporary folder; created on first use)."""
    global _path
    if _path is None:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        _path = os.path.join(tempfile.gettempdir(), f"amqp-codec-analyze-{stamp}-{os.getpid()}.log")
    return _path


def log_size() -> int:
    """Bytes in the log file so far (0 before it exists): where the next lines will start."""
    try:
        return os.path.getsize(log_path())
    except OSError:
        return 0


def log_since(offset: int, limit: int = 64 * 1024) -> str:
    """At most ``limit`` bytes of what the log file received after ``offset`` (see
    :func:`log_size`), as text; empty if it cannot be read."""
    try:
        with open(log_path(), "rb") as log:
            log.seek(offset)
            return log.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


@contextmanager
def jvm_output(verbose: bool) -> Iterator[None]:
    """Start the JVM inside this block: its standard output and error go to :func:`log_path`
    unless ``verbose``. Python's ``sys.stdout`` and ``sys.stderr`` still write to the
    terminal after the block."""
    if verbose:
        yield
        return
    saved: dict[int, int] = {}
    try:
        for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
            try:
                stream.flush()
                saved[fd] = os.dup(fd)
            except (OSError, ValueError, AttributeError):  # no usable fd (embedded, notebook)
                continue
        if saved:
            log = os.open(log_path(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                for fd in saved:
                    os.dup2(log, fd)
            finally:
                os.close(log)
        yield
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)


def _not_py4j(record: logging.LogRecord) -> bool:
    return not record.name.startswith("py4j") and f"{os.sep}py4j{os.sep}" not in record.pathname


def quiet_py4j(verbose: bool) -> None:
    """py4j's log records (tracebacks when Ctrl-C interrupts a call) only with ``verbose``.

    py4j logs some of them with ``logging.exception()`` on the root logger, which also
    gives the root logger a handler printing to standard error: a filter on the root logger
    drops records made in py4j's modules, and leaves everyone else's alone.
    """
    root = logging.getLogger()
    if verbose:
        root.removeFilter(_not_py4j)
        logging.getLogger("py4j").setLevel(logging.NOTSET)
    else:
        root.addFilter(_not_py4j)  # added once, however often called
        logging.getLogger("py4j").setLevel(logging.CRITICAL)
