"""`amqp-codec analyze` as people meet it: every mistake is one line and exit status 2, found
before Spark starts (or, for settings that Java refuses, as the driver's JVM starts), with
nothing written or deleted; inputs that would hang are skipped; a failed run leaves --out as
it was.

Every test here but the last few fails before Spark starts, so they are fast. Those run
through a real subprocess: what is checked is what a user sees.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from amqp_codec.analyze import AnalyzeUsageError
from amqp_codec.analyze.output import staged_output
from amqp_codec.analyze.preflight import (
    check_executor_python,
    check_java,
    check_master,
    check_master_reachable,
    java_version,
    preflight,
    release_version,
    resolve_captures,
)
from amqp_codec.analyze.spark_errors import java_exception, java_said, user_problem

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "samples" / "pika-session.pcap"


def snapshot(*roots: Path) -> dict[str, tuple[str, int]]:
    """Every path under ``roots``: its kind or content hash, and a file's mtime (a folder's
    changes when the check that it is writable creates and removes a probe in it)."""
    seen: dict[str, tuple[str, int]] = {}
    for root in roots:
        if not root.exists():
            continue
        for path in [root, *sorted(root.rglob("*"))]:
            info = path.lstat()
            if path.is_fifo():
                kind = "fifo"
            elif path.is_symlink():
                kind = "link:" + os.readlink(path)
            elif path.is_file():
                kind = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                seen[str(path)] = ("dir", 0)
                continue
            seen[str(path)] = (kind, info.st_mtime_ns)
    return seen


def analyze(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amqp_codec", "analyze", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
        cwd=REPO,
    )


def assert_one_line_error(
    result: subprocess.CompletedProcess[str], status: int, *words: str
) -> None:
    assert result.returncode == status, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("amqp-codec analyze"), result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)


@pytest.fixture
def captures(tmp_path: Path) -> Path:
    folder = tmp_path / "captures"
    folder.mkdir()
    shutil.copy(SAMPLE, folder)
    return folder


def refused(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``analyze`` and check the test's whole folder is exactly as it was afterwards:
    nothing written or deleted."""
    before = snapshot(tmp_path)
    result = analyze(*args, env=env)
    assert snapshot(tmp_path) == before
    return result


# ------------------------------------------------------------------------------------------
# usage errors: one line, exit 2, nothing written
# ------------------------------------------------------------------------------------------


def test_missing_input(tmp_path: Path, captures: Path) -> None:
    missing = tmp_path / "captrues"
    result = refused(tmp_path, str(captures), str(missing), "--out", str(tmp_path / "out"))
    assert_one_line_error(result, 2, "no such file or folder", str(missing))


def test_standard_input_is_refused_saying_what_to_do(tmp_path: Path) -> None:
    """``-`` (tshark's ``-r -``) was "no such file or folder: -"."""
    result = refused(tmp_path, "-", "--out", str(tmp_path / "out"))
    assert_one_line_error(result, 2, "not standard input", "tcpdump -w FILE")


def test_folder_without_captures_names_what_was_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "nothing"
    folder.mkdir()
    (folder / "README").write_text("notes")
    os.mkfifo(folder / "pipe")
    before = snapshot(tmp_path)
    result = refused(tmp_path, str(folder), "--out", str(tmp_path / "out"))
    assert_one_line_error(result, 2, "no pcap or pcapng", "1 file not pcap", "named-pipe")
    assert snapshot(tmp_path) == before


def test_out_is_a_file(tmp_path: Path, captures: Path) -> None:
    out = tmp_path / "out.txt"
    out.write_text("mine")
    result = refused(tmp_path, str(captures), "--out", str(out))
    assert_one_line_error(result, 2, "is a file")


def test_out_cannot_be_written(tmp_path: Path, captures: Path) -> None:
    # /proc refuses new folders to everyone, root included.
    result = refused(tmp_path, str(captures), "--out", "/proc/amqp-codec-analysis")
    assert_one_line_error(result, 2, "not writable")


def test_out_holding_files_needs_overwrite(tmp_path: Path, captures: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = refused(tmp_path, str(captures), "--out", str(out))
    assert_one_line_error(result, 2, "already holds files", "--overwrite")


def test_overwrite_never_replaces_a_table_folder_holding_other_files(
    tmp_path: Path, captures: Path
) -> None:
    out = tmp_path / "out"
    (out / "frames").mkdir(parents=True)
    (out / "frames" / "part-00000-x.snappy.parquet").write_bytes(b"PAR1")
    (out / "frames" / "my-notes.txt").write_text("mine")
    result = refused(tmp_path, str(captures), "--out", str(out), "--overwrite")
    assert_one_line_error(result, 2, "my-notes.txt", "was not written by amqp-codec analyze")


def test_no_java(tmp_path: Path, captures: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path / "empty-path")
    result = refused(tmp_path, str(captures), "--out", str(tmp_path / "out"), env=env)
    assert_one_line_error(result, 2, "Java 17 or newer", "openjdk-17", "JAVA_HOME")


def test_a_spark_home_without_spark(tmp_path: Path, captures: Path) -> None:
    env = {**os.environ, "SPARK_HOME": str(tmp_path / "no-spark")}
    result = refused(tmp_path, str(captures), "--out", str(tmp_path / "out"), env=env)
    assert_one_line_error(result, 2, "SPARK_HOME is", "no-spark", "bin/spark-submit", "unset")


def test_java_too_old(tmp_path: Path, captures: Path) -> None:
    home = tmp_path / "jdk11"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text("#!/bin/sh\necho 'openjdk version \"11.0.22\" 2024-01-16' >&2\n")
    java.chmod(0o755)
    before = snapshot(tmp_path)
    env = {**os.environ, "JAVA_HOME": str(home)}
    result = refused(tmp_path, str(captures), "--out", str(tmp_path / "out"), env=env)
    assert_one_line_error(result, 2, "Java 17 or newer", "is Java 11", str(java))
    assert snapshot(tmp_path) == before


def _fake_java(home: Path, release: str | None, prints: str) -> Path:
    """A Java installation at ``home``: its ``release`` file (None: none) and a ``bin/java``
    that prints ``prints`` as ``java -version`` does, or fails when ``prints`` is empty."""
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    body = f"echo '{prints}' >&2" if prints else "exit 1"
    java.write_text(f"#!/bin/sh\n{body}\n")
    java.chmod(0o755)
    if release is not None:
        (home / "release").write_text(release)
    return java


def test_java_version_from_the_release_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The release file is believed without running java, which here would fail or lie.
    home = tmp_path / "jdk"
    java = _fake_java(home, 'IMPLEMENTOR="x"\nJAVA_VERSION="21.0.2"\n', "")
    assert release_version(str(java)) == 21
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert check_java() == 21
    (home / "release").write_text('JAVA_VERSION="1.8.0_392"\n')
    assert release_version(str(java)) == 8
    # Through a link to bin/java, as /usr/bin/java is on Debian.
    link = tmp_path / "java-link"
    link.symlink_to(java)
    assert release_version(str(link)) == 8


@pytest.mark.parametrize("release", [None, 'IMPLEMENTOR="x"\n', 'JAVA_VERSION="17.0.1"\n'])
def test_java_version_without_a_usable_release_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, release: str | None
) -> None:
    home = tmp_path / "jdk"
    java = _fake_java(home, release, 'openjdk version "17.0.1" 2021-10-19')
    if release is None or "JAVA_VERSION" not in release:
        assert release_version(str(java)) is None  # java -version decides
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert check_java() == 17


def test_java_too_old_by_its_release_file(tmp_path: Path, captures: Path) -> None:
    home = tmp_path / "jdk11"
    java = _fake_java(home, 'JAVA_VERSION="11.0.22"\n', "")
    env = {**os.environ, "JAVA_HOME": str(home)}
    result = refused(tmp_path, str(captures), "--out", str(tmp_path / "out"), env=env)
    assert_one_line_error(result, 2, "Java 17 or newer", "is Java 11", str(java))


@pytest.mark.parametrize(
    "master", ["bogus", "local[x]", "spark://nohost", "local[0]", "mesos://host:5050"]
)
def test_bad_master(tmp_path: Path, captures: Path, master: str) -> None:
    result = refused(tmp_path, str(captures), "--out", str(tmp_path / "out"), "--master", master)
    assert_one_line_error(result, 2, "not a Spark master URL", master)


@pytest.mark.parametrize("python", ["/nonexistent/python3", "true"])
def test_executors_python_that_cannot_run_the_analysis(
    tmp_path: Path, captures: Path, python: str
) -> None:
    """PYSPARK_PYTHON names the executors' Python: one that is missing, or is not a Python
    with the codec, PySpark and pyarrow, is said before Spark starts."""
    env = {**os.environ, "PYSPARK_PYTHON": python}
    result = refused(tmp_path, str(captures), "--out", str(tmp_path / "out"), env=env)
    assert_one_line_error(result, 2, f"PYSPARK_PYTHON={python}", "amqp-codec[analyze]")


def test_a_standalone_master_that_cannot_be_reached(tmp_path: Path, captures: Path) -> None:
    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    master = f"spark://127.0.0.1:{port}"
    result = refused(tmp_path, str(captures), "--out", str(tmp_path / "out"), "--master", master)
    assert_one_line_error(result, 2, f"cannot reach the Spark master {master}", "refused")


def test_a_standalone_master_is_reached_at_any_of_its_addresses() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        check_master_reachable(f"spark://nosuchhost.invalid:7077,127.0.0.1:{port}")
    check_master_reachable("local[2]")  # nothing to reach


def test_the_executors_python_is_not_checked_for_a_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cluster's executors run on other machines, where the path may well exist."""
    monkeypatch.setenv("PYSPARK_PYTHON", "/nonexistent/python3")
    check_executor_python("spark://h:7077")
    with pytest.raises(AnalyzeUsageError, match="not a program"):
        check_executor_python("local[2]")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    check_executor_python(None)  # this Python: nothing to ask


class _JavaFailure(Exception):
    """Stands for a Py4JJavaError: its text is the Java stack."""


#: The text of a Spark job whose executors could not start the Python PYSPARK_PYTHON named,
#: and of one whose Python lacked the codec (cut from real runs).
_NO_PYTHON = (
    "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 "
    "failed 1 times, most recent failure: Lost task 0.0 in stage 0.0 (TID 0) (192.0.2.2 "
    'executor driver): java.io.IOException: Cannot run program "/opt/py/bin/python3": '
    "error=2, No such file or directory\n"
    "\tat java.base/java.lang.ProcessBuilder.start(ProcessBuilder.java:1143)\n"
    "\tat org.apache.spark.api.python.PythonWorkerFactory.startDaemon("
    "PythonWorkerFactory.scala:371)\n"
)
_NO_CODEC = (
    "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 "
    "failed 1 times, most recent failure: Lost task 0.0 in stage 0.0 (TID 0) (192.0.2.2 "
    "executor driver): org.apache.spark.SparkException: \nError from python worker:\n"
    "  /usr/bin/python3: Error while finding module specification for "
    "'amqp_codec.analyze.daemon' (ModuleNotFoundError: No module named 'amqp_codec')\n"
)


_CAPTURE_CHANGED = (
    "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 3 in stage 1.0 "
    "failed 1 times, most recent failure: Lost task 3.0 in stage 1.0 (TID 12) (192.0.2.2 "
    "executor driver): org.apache.spark.api.python.PythonException: Traceback (most recent "
    "call last):\n"
    '  File "/opt/py/lib/python3.11/site-packages/amqp_codec/analyze/regions.py", line 190, '
    "in _read_again\n"
    "amqp_codec.analyze.regions.CaptureChanged: capture /data/ring_00007.pcap changed while "
    "it was analysed (FileNotFoundError: No such file or directory): analyse files that "
    "nothing writes to, rotates or removes meanwhile (a copy of a ring buffer's)\n"
    "\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException("
    "PythonRunner.scala:572)\n"
)


def test_what_spark_says_of_the_executors_python_becomes_one_line() -> None:
    no_python = user_problem(_JavaFailure(_NO_PYTHON))
    assert no_python is not None
    assert "cannot start Python /opt/py/bin/python3 (No such file or directory)" in no_python
    no_codec = user_problem(_JavaFailure(_NO_CODEC))
    assert no_codec is not None and "(/usr/bin/python3) cannot import amqp_codec" in no_codec
    assert "\n" not in no_python + no_codec
    # A capture that changed between the passes, as a task raised it (see regions).
    changed = user_problem(_JavaFailure(_CAPTURE_CHANGED))
    assert changed == (
        "capture /data/ring_00007.pcap changed while it was analysed (FileNotFoundError: No "
        "such file or directory): analyse files that nothing writes to, rotates or removes "
        "meanwhile (a copy of a ring buffer's)"
    )
    # Anything else stays an internal error.
    assert user_problem(_JavaFailure("java.lang.OutOfMemoryError: Java heap space")) is None

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("the JVM is gone")

    assert user_problem(Unprintable()) is None


def test_a_spark_failure_the_user_can_fix_is_not_called_internal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Raised from the job (a cluster's executors without the codec), it is one line naming
    what to do, exit status 2; an unknown failure stays an internal error (1)."""
    from amqp_codec.analyze import command
    from amqp_codec.cli import build_parser

    def failing(text: str) -> Any:
        def run_from_args(args: Any, out: Any) -> int:
            raise _JavaFailure(text)

        return run_from_args

    args = build_parser().parse_args(["analyze", str(SAMPLE), "--out", str(tmp_path / "o")])
    log = str(tmp_path / "analyze.log")
    monkeypatch.setattr("amqp_codec.analyze.logs.log_path", lambda: log)
    for text, status, words in [
        (_NO_CODEC, 2, ("cannot import amqp_codec", f"(Spark's log: {log})")),
        ("java.lang.OutOfMemoryError: Java heap space", 1, ("internal error", log)),
    ]:
        monkeypatch.setattr(command, "run_from_args", failing(text))
        out, err = io.StringIO(), io.StringIO()
        assert command.run(args, out, err) == status
        assert err.getvalue().count("\n") == 1 and "Traceback" not in err.getvalue()
        assert all(word in err.getvalue() for word in words), err.getvalue()


@pytest.mark.parametrize(
    ("output", "said"),
    [
        (
            "WARNING: Using incubator modules: jdk.incubator.vector\n"
            "Invalid maximum heap size: -Xmx1q\n"
            "Error: Could not create the Java Virtual Machine.\n"
            "Error: A fatal exception has occurred. Program will exit.\n",
            "Invalid maximum heap size: -Xmx1q",
        ),
        (
            "Error: VM option 'Foo' is diagnostic and must be enabled via "
            "-XX:+UnlockDiagnosticVMOptions.\nError: The unlock option must precede 'Foo'.\n"
            "Error: Could not create the Java Virtual Machine.\n",
            "VM option 'Foo' is diagnostic and must be enabled via -XX:+UnlockDiagnosticVMOptions.",
        ),
        (
            "Error occurred during initialization of VM\n"
            "Could not reserve enough space for 104857600000KB object heap\n",
            "Error occurred during initialization of VM: Could not reserve enough space for "
            "104857600000KB object heap",
        ),
        ("", None),
        ("25/12/07 03:14:03 WARN Utils: Your hostname resolves to a loopback address\n", None),
    ],
)
def test_what_java_says_as_it_fails_to_start_becomes_one_line(
    output: str, said: str | None
) -> None:
    assert java_said(output) == said


def _with_spark_defaults(
    tmp_path: Path, captures: Path, setting: str
) -> subprocess.CompletedProcess[str]:
    """A quiet run with ``setting`` in a spark-defaults.conf of its own, refused."""
    conf = tmp_path / "spark-conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(setting + "\n")
    env = {**os.environ, "SPARK_CONF_DIR": str(conf)}
    out = str(tmp_path / "out")
    return refused(tmp_path, str(captures), "--out", out, "--quiet", env=env)


def test_java_that_cannot_start_with_the_users_spark_settings(
    tmp_path: Path, captures: Path
) -> None:
    """A driver JVM refused by Java (here a heap size it cannot read, from the user's
    spark-defaults.conf) is the user's to fix: one line with Java's reason, exit status 2,
    nothing written; not an internal error."""
    result = _with_spark_defaults(tmp_path, captures, "spark.driver.memory 1q")
    assert_one_line_error(
        result,
        2,
        "Java exited as Spark's driver started: Invalid maximum heap size: -Xmx1q",
        "spark.driver.memory",
    )


def test_the_java_exception_of_a_spark_failure_is_its_first_line() -> None:
    refused = _JavaFailure(
        "An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.\n"
        ": java.lang.IllegalArgumentException: requirement failed: startPort should be between "
        "1024 and 65535 (inclusive), or 0 for a random free port.\n"
        "\tat scala.Predef$.require(Predef.scala:337)\n"
    )
    assert java_exception(refused) == (
        "java.lang.IllegalArgumentException: requirement failed: startPort should be between "
        "1024 and 65535 (inclusive), or 0 for a random free port."
    )
    assert java_exception(_JavaFailure("nothing Java about it")) is None


def test_spark_settings_that_spark_refuses(tmp_path: Path, captures: Path) -> None:
    """Settings Java takes but Spark refuses as its context starts (a driver port out of
    range): one line with Spark's reason, exit status 2, nothing written."""
    result = _with_spark_defaults(tmp_path, captures, "spark.driver.port 99999999")
    assert_one_line_error(
        result, 2, "Spark refused to start: java.lang.IllegalArgumentException", "startPort"
    )


@pytest.mark.parametrize("port", ["0", "65536", "amqp"])
def test_bad_port(tmp_path: Path, captures: Path, port: str) -> None:
    result = refused(tmp_path, str(captures), "--out", str(tmp_path / "out"), "--port", port)
    assert_one_line_error(result, 2, "--port", port)


def test_missing_out_option(tmp_path: Path, captures: Path) -> None:
    result = refused(tmp_path, str(captures))
    assert_one_line_error(result, 2, "--out")


# ------------------------------------------------------------------------------------------
# preflight from Python: the same checks, AnalyzeUsageError
# ------------------------------------------------------------------------------------------


def test_one_path_is_one_path_not_its_characters(
    tmp_path: Path, captures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    files, skipped = resolve_captures("captures")
    assert files == [os.path.join("captures", SAMPLE.name)] and skipped == []
    assert resolve_captures(captures)[0] == [str(captures / SAMPLE.name)]
    with pytest.raises(AnalyzeUsageError, match="no such file"):
        resolve_captures(["captures", "c"])
    with pytest.raises(AnalyzeUsageError, match="a path or a list"):
        resolve_captures(42)  # type: ignore[arg-type]
    with pytest.raises(AnalyzeUsageError, match="no capture given"):
        resolve_captures([])


def test_inputs_that_would_hang_or_loop_are_skipped_unopened(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    (folder / "deeper").mkdir(parents=True)
    shutil.copy(SAMPLE, folder / "deeper" / "a.pcap")
    (folder / "b.pcap.gz").write_bytes(gzip.compress(SAMPLE.read_bytes()))
    os.mkfifo(folder / "pipe.pcap")  # opening it would block until a writer comes
    os.symlink("loop", folder / "loop")  # a link to itself
    os.symlink(".", folder / "deeper" / "again")  # a link to a folder: not followed
    os.symlink("gone", folder / "dangling")
    (folder / "broken.pcap.gz").write_bytes(b"\x1f\x8b\x08\x00garbage, not deflate")
    (folder / "notes.txt").write_text("not a capture")
    files, skipped = resolve_captures([str(folder)])
    assert files == [str(folder / "b.pcap.gz"), str(folder / "deeper" / "a.pcap")]
    assert {(Path(s.capture).name, s.kind) for s in skipped} == {
        ("pipe.pcap", "named-pipe"),
        ("loop", "symlink-loop"),
        ("dangling", "dangling-link"),
        ("broken.pcap.gz", "corrupt-gzip"),
    }
    assert all(s.detail for s in skipped)


def test_a_corrupt_gzip_is_called_that(tmp_path: Path, captures: Path) -> None:
    broken = tmp_path / "broken.pcap.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 40)
    result = refused(tmp_path, str(broken), "--out", str(tmp_path / "out"))
    assert_one_line_error(result, 2, "corrupt gzip file", str(broken))
    assert "empty" not in result.stderr
    files, skipped = resolve_captures([str(broken), str(captures)])
    assert files == [str(captures / SAMPLE.name)]
    assert [(s.capture, s.kind) for s in skipped] == [(str(broken), "corrupt-gzip")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_file_in_a_folder_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "a.pcap")
    locked = folder / "locked.pcap"
    shutil.copy(SAMPLE, locked)
    locked.chmod(0)
    files, skipped = resolve_captures(str(folder))
    assert files == [str(folder / "a.pcap")]
    assert [(s.capture, s.kind) for s in skipped] == [(str(locked), "unreadable")]


def test_a_named_pipe_or_device_given_directly_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(AnalyzeUsageError, match="is a named pipe"):
        resolve_captures(str(tmp_path / "pipe"))
    with pytest.raises(AnalyzeUsageError, match="is a device"):
        resolve_captures("/dev/null")


def test_preflight_checks_everything_before_spark(tmp_path: Path, captures: Path) -> None:
    checked = preflight(captures, tmp_path / "out", ports=[5672, 5673], master="local[2]")
    assert checked.files == [str(captures / SAMPLE.name)]
    assert checked.ports == {5672, 5673}
    assert checked.out == str(tmp_path / "out")
    with pytest.raises(AnalyzeUsageError, match="not a port number"):
        preflight(captures, tmp_path / "out", ports=[True])
    with pytest.raises(AnalyzeUsageError, match="ports must be"):
        preflight(captures, tmp_path / "out", ports="5672")  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "master", ["local", "local[*]", "local[4]", "local[2,3]", "spark://h:7077,g:7077", "yarn"]
)
def test_good_masters(master: str) -> None:
    assert check_master(master) == master


def test_java_versions() -> None:
    assert java_version('openjdk version "17.0.15" 2025-04-15') == 17
    assert java_version('java version "1.8.0_392"') == 8
    assert java_version('openjdk version "21" 2023-09-19') == 21
    assert java_version("garbage") is None


# ------------------------------------------------------------------------------------------
# nothing lost: the staging folder
# ------------------------------------------------------------------------------------------


def _write_outputs(folder: str, marker: str) -> None:
    for table in ("frames", "messages", "connections", "problems"):
        os.mkdir(os.path.join(folder, table))
        Path(folder, table, "part-00000-a.snappy.parquet").write_text(marker)
        Path(folder, table, "_SUCCESS").write_text("")
    Path(folder, "report.html").write_text(marker)
    Path(folder, "summary.json").write_text(marker)


def test_a_failed_run_leaves_out_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    _write_outputs(str(out), "first")
    (out / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)
    for error in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(error)), staged_output(str(out)) as staging:
            _write_outputs(staging, "second")
            raise error
        assert snapshot(tmp_path) == before


def test_a_new_out_appears_whole(tmp_path: Path) -> None:
    out = tmp_path / "new" / "out"
    with staged_output(str(out)) as staging:
        assert Path(staging).parent == out.parent
        _write_outputs(staging, "first")
        assert not out.exists()
    assert (out / "report.html").read_text() == "first"
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]  # no staging left


@pytest.mark.parametrize("had_outputs", [False, True])
def test_outputs_another_run_wrote_meanwhile_are_not_replaced(
    tmp_path: Path, had_outputs: bool
) -> None:
    """Two runs into one --out: the one that ends second does not replace what the first
    wrote there after it began (the user let it replace only what was there then, if
    anything); its own outputs stay in its staging folder, which the error names."""
    out = tmp_path / "out"
    if had_outputs:
        out.mkdir()
        _write_outputs(str(out), "before both")
    clash = pytest.raises(AnalyzeUsageError, match="changed while this run ran")
    with clash as raised, staged_output(str(out)) as staging:
        _write_outputs(staging, "second")
        with staged_output(str(out)) as other:  # the other run, which ends first
            _write_outputs(other, "first")
    assert (out / "report.html").read_text() == "first"
    assert staging in str(raised.value)
    assert (Path(staging) / "report.html").read_text() == "second"


def test_success_replaces_only_what_the_job_writes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    _write_outputs(str(out), "first")
    (out / "notes.txt").write_text("mine")
    with staged_output(str(out)) as staging:
        _write_outputs(staging, "second")
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "report.html").read_text() == "second"
    assert (out / "frames" / "part-00000-a.snappy.parquet").read_text() == "second"
    assert sorted(p.name for p in out.iterdir()) == [
        "connections",
        "frames",
        "messages",
        "notes.txt",
        "problems",
        "report.html",
        "summary.json",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# ------------------------------------------------------------------------------------------
# a bug of ours: one line naming the log file, exit 1
# ------------------------------------------------------------------------------------------


def test_a_bug_is_one_line_naming_the_log_file(
    tmp_path: Path,
    captures: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from amqp_codec import cli
    from amqp_codec.analyze import command, logs

    def broken(*args: object) -> int:
        raise RuntimeError("something of ours broke")

    monkeypatch.setattr(command, "run_from_args", broken)
    monkeypatch.setattr(logs, "_path", str(tmp_path / "analyze.log"))
    status = cli.main(["analyze", str(captures), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "internal error (RuntimeError: something of ours broke)" in err
    assert str(tmp_path / "analyze.log") in err
    log = (tmp_path / "analyze.log").read_text()
    assert "Traceback" in log and "something of ours broke" in log


# ------------------------------------------------------------------------------------------
# with Spark (slow): quiet by default, Ctrl-C, --overwrite keeping the user's files
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("after", ["run here meanwhile)", "cores"])
def test_interrupt_stops_spark_and_leaves_out_untouched(
    tmp_path: Path, captures: Path, tmp_path_factory: pytest.TempPathFactory, after: str
) -> None:
    """Ctrl-C while Spark starts (the first tasks running in the driver meanwhile), and once
    it is up: then with every task left to Spark, which a capture this small would otherwise
    not be, so that Spark has jobs running when the signal comes."""
    out = tmp_path / "out"
    before = snapshot(tmp_path)
    temp = tmp_path_factory.mktemp("temp")  # where the log file goes
    proc = subprocess.Popen(
        [sys.executable, "-m", "amqp_codec", "analyze", str(captures), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={
            **os.environ,
            "TMPDIR": str(temp),
            "AMQP_CODEC_HEAD_START": "0" if after == "cores" else "1",
        },
        start_new_session=True,  # Ctrl-C reaches the whole process group, as in a terminal
    )
    assert proc.stderr is not None
    try:
        line = proc.stderr.readline()
        while line and not line.rstrip().endswith(after):
            line = proc.stderr.readline()
        assert line, f"no line ending with {after!r}"
        time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        _, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, rest
    assert "Traceback" not in rest and "py4j" not in rest
    lines = [line for line in rest.splitlines() if not line.startswith("[amqp-codec analyze")]
    assert lines == ["amqp-codec analyze: interrupted; Spark stopped, --out left as it was"]
    assert snapshot(tmp_path) == before  # no output, no staging folder left behind
    assert not list(temp.glob("amqp-codec-analyze-*.log"))  # nothing worth keeping


def test_quiet_run_then_overwrite_keeps_the_users_files(tmp_path: Path, captures: Path) -> None:
    out = tmp_path / "out"
    first = analyze(str(captures), "--out", str(out), "--quiet", timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stderr == ""  # no Spark or Java log line
    assert "frames" in first.stdout and "Traceback" not in first.stdout
    (out / "notes.txt").write_text("mine")
    report = (out / "report.html").read_bytes()

    again = analyze(str(captures), "--out", str(out), "--quiet")
    assert_one_line_error(again, 2, "already holds files")
    assert (out / "report.html").read_bytes() == report

    replaced = analyze(str(captures), "--out", str(out), "--quiet", "--overwrite", timeout=300)
    assert replaced.returncode == 0, replaced.stderr
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "report.html").is_file() and (out / "summary.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["captures", "out"]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
