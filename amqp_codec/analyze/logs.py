"""Spark's and Java's logs go to a log file, not the terminal, unless ``--verbose``.

The JVM that PySpark starts inherits the process's standard error: its log4j lines, its
progress bar and any Java stack trace would land on the user's terminal. :func:`jvm_stderr`
points file descriptor 2 at the log file while the JVM is started, so the JVM (and the
Python workers it starts) write there for their whole life, while Python's own ``sys.stderr``
is given back the terminal. py4j's Python loggers, which print tracebacks when a call is
interrupted, are raised to CRITICAL the same way.

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

__all__ = ["log_path", "jvm_stderr", "quiet_py4j"]

_path: str | None = None


def log_path() -> str:
    """This process's log file (one per run, in the temporary folder; created on first use)."""
    global _path
    if _path is None:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        _path = os.path.join(tempfile.gettempdir(), f"amqp-codec-analyze-{stamp}-{os.getpid()}.log")
    return _path


@contextmanager
def jvm_stderr(verbose: bool) -> Iterator[None]:
    """Start the JVM inside this block: its standard error goes to :func:`log_path` unless
    ``verbose``. Python's ``sys.stderr`` still writes to the terminal after the block."""
    if verbose:
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no usable fd 2 (embedded, notebook)
        yield
        return
    try:
        log = os.open(log_path(), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.dup2(log, 2)
        finally:
            os.close(log)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


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
