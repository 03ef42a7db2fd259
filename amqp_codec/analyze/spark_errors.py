"""Spark's failures that the user can fix, said in one line instead of "internal error".

Spark reports them as a Java exception whose text carries the cause several levels down (a
``Py4JJavaError`` from py4j, its Java stack in the message). :func:`user_problem` finds the
few causes that come from the user's setup or files, not from amqp-codec, and words them
with what to do; anything else stays an internal error with its details in the log file.
(A standalone master that cannot be reached is found before Spark starts: see
:func:`~amqp_codec.analyze.preflight.check_master_reachable`.)
"""

from __future__ import annotations

import os
import re

__all__ = ["java_exception", "java_said", "user_problem"]

#: An executor could not start the Python that ``PYSPARK_PYTHON`` (or Spark's own setting)
#: names: ``Cannot run program "python3.9": error=2, No such file or directory``.
_NO_PYTHON = re.compile(r'Cannot run program "([^"]+)": error=\d+, ([^\n\r]+)')
#: An executor's Python started but lacks a module the tasks need.
_NO_MODULE = re.compile(r"No module named '(amqp_codec|pyspark|pyarrow)[.']")
#: Which Python said so: ``/usr/bin/python3: Error while finding module specification ...``.
_WHICH_PYTHON = re.compile(r"(\S+): Error while finding module specification")
#: What Java or Spark's launcher says when the driver's JVM does not start: an option it does
#: not take, a heap it cannot reserve, Spark refusing its configuration.
_JAVA_FAILURE = re.compile(
    r"error|unrecognized|invalid|exception|could not|cannot|no such file|not found", re.I
)
#: The Java exception a ``Py4JJavaError`` carries, on the first line after py4j's own:
#: ``: java.lang.IllegalArgumentException: requirement failed: ...``.
_JAVA_EXCEPTION = re.compile(r"^: ([\w.$]+(?:Exception|Error)[^\n\r]*)", re.M)
#: Lines that say only that something above failed, or are not about the failure at all.
_JAVA_NOISE = re.compile(
    r"Error: Could not create the Java Virtual Machine|Error: A fatal exception has occurred"
    r"|^WARNING: |^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (WARN|INFO) "
)
#: A task found a capture file changed since the first pass read it (see
#: :class:`~amqp_codec.analyze.regions.CaptureChanged`, whose text says what to do).
_CAPTURE_CHANGED = re.compile(r"CaptureChanged: (capture [^\n\r]+)")


def user_problem(error: BaseException) -> str | None:
    """What the user can fix about ``error`` (raised by Spark), in one line; None if it is
    none of the causes this module knows."""
    try:
        text = str(error)  # a Py4JJavaError asks the JVM for its stack trace
    except Exception:
        return None
    changed = _CAPTURE_CHANGED.search(text)
    if changed is not None:
        return changed.group(1)
    if "PythonWorkerFactory" in text or "python worker" in text.lower():
        found = _NO_PYTHON.search(text)
        if found is not None:
            return (
                f"Spark's executors cannot start Python {found.group(1)} ({found.group(2)}): "
                "set PYSPARK_PYTHON to a Python with amqp-codec[analyze] installed on every "
                "machine of the cluster"
            )
        missing = _NO_MODULE.search(text)
        if missing is not None:
            said = _WHICH_PYTHON.search(text)
            python = said.group(1) if said else os.environ.get("PYSPARK_PYTHON", "python3")
            return (
                f"the Python Spark's executors run ({python}) cannot import "
                f"{missing.group(1)}: install amqp-codec[analyze] for it on every machine of "
                "the cluster, or set PYSPARK_PYTHON to a Python that has it"
            )
    return None


def java_said(output: str) -> str | None:
    """What Java (or Spark's launcher) said of why the driver's JVM did not start, in one
    line, from its ``output``; None if it said nothing that looks like a reason."""
    lines = [line.strip() for line in output.splitlines()]
    lines = [line for line in lines if line and not _JAVA_NOISE.search(line)]
    for i, line in enumerate(lines):
        if _JAVA_FAILURE.search(line):
            said = line.removeprefix("Error: ")
            if said == "Error occurred during initialization of VM" and i + 1 < len(lines):
                said = f"{said}: {lines[i + 1]}"  # the reason is on the next line
            return said[:300]
    return None


def java_exception(error: BaseException) -> str | None:
    """The Java exception (class and message, one line) that ``error``, a ``Py4JJavaError``,
    carries; None if its text holds none."""
    try:
        text = str(error)  # a Py4JJavaError asks the JVM for its stack trace
    except Exception:
        return None
    found = _JAVA_EXCEPTION.search(text)
    return found.group(1)[:300] if found else None
