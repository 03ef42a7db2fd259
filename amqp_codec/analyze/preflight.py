"""Everything ``analyze`` can check before Spark starts: inputs, ``--out``, Java, master, ports.

:func:`preflight` takes what :func:`amqp_codec.analyze.run` takes and either returns the
capture files to read (plus the inputs it skipped, and why) or raises
:class:`AnalyzeUsageError` with one line for the user. It runs in well under a second on a
normal input: starting Spark to find out that ``--out`` is a file costs 10 s and prints a
Java stack.

Inside input folders, only regular files are ever opened. Named pipes, sockets and devices
(opening a pipe blocks until a writer comes, forever), files that cannot be read, dangling
links and symbolic link loops are skipped and listed in :attr:`Preflight.skipped`, each of
which the job turns into a ``problems`` row. Regular files that are not pcap/pcapng (plain or
compressed: gzip, xz, bzip2, zstd, lz4) are left out silently: folders of captures hold
READMEs too. A compressed file is decompressed as far as its first bytes to tell; one that is
damaged from the start, or that needs a package that is missing, is skipped and listed.
Links to folders are not followed, so walking always ends.

A path named on the command line is different: it is what the user asked for, so one that
does not exist, cannot be read or is not a regular file or folder is an error.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from amqp_codec.capture.compressed import CorruptStream, compression_of, first_bytes

__all__ = [
    "JAVA_NEEDED",
    "OUTPUT_NAMES",
    "AnalyzeUsageError",
    "Preflight",
    "Skipped",
    "check_executor_python",
    "check_java",
    "check_master",
    "check_master_reachable",
    "check_out",
    "check_ports",
    "check_spark_home",
    "is_spark_output",
    "java_command",
    "preflight",
    "release_version",
    "resolve_captures",
]

#: What the executors' Python must be able to import (asked without importing them).
_EXECUTOR_MODULES = ("amqp_codec", "pyspark", "pyarrow")
_FOUND = "amqp-codec: executors' modules found"
_FINDS_THE_MODULES = (
    "import importlib.util; "
    f"all(map(importlib.util.find_spec, {_EXECUTOR_MODULES!r})) and print({_FOUND!r})"
)
#: What to do about an executors' Python that cannot run the analysis.
_PYTHON_HINT = (
    "unset it (the executors then run this Python) or point it at a Python with "
    "amqp-codec[analyze] installed"
)

#: The oldest Java that Spark 4 runs on.
JAVA_NEEDED = 17
#: What the job writes into ``--out``: the tables' folders, the report and its figures.
#: Only these are ever replaced (with ``--overwrite``); anything else in ``--out`` is left alone.
OUTPUT_NAMES = ("frames", "messages", "connections", "problems", "report.html", "summary.json")
_TABLE_FOLDERS = OUTPUT_NAMES[:4]
#: Files Spark's Parquet writer leaves in a table folder (data parts, their checksums, the
#: commit markers).
_SPARK_FILE = re.compile(r"^\.?(part-.*|_SUCCESS(\.crc)?|_committed_.*|_started_.*)$")
#: How to get Java, said when it is missing or too old.
_JAVA_HINT = (
    f"install Java {JAVA_NEEDED} or newer (Debian/Ubuntu: apt install openjdk-{JAVA_NEEDED}-jre-headless; "
    "elsewhere https://adoptium.net) and put it on PATH or set JAVA_HOME"
)
#: Spark master URLs: local[N], local[*], local[N,F], local-cluster[N,C,M], spark://H:P[,H:P],
#: yarn, k8s://URL (Spark 4, which the job needs, no longer runs on Mesos).
_MASTER = re.compile(
    r"^(local(\[(\*|[1-9][0-9]*)(,\s*[0-9]+)?\])?"
    r"|local-cluster\[[1-9][0-9]*,\s*[1-9][0-9]*,\s*[1-9][0-9]*\]"
    r"|spark://[^\s:/,]+:[0-9]+(,[^\s:/,]+:[0-9]+)*"
    r"|yarn|k8s://\S+)$"
)
_PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"


class AnalyzeUsageError(ValueError):
    """What ``analyze`` was asked to do cannot be done; ``str()`` is one line saying why.

    The command line prints it and exits with status 2; nothing has been written.
    """


@dataclass(frozen=True, slots=True)
class Skipped:
    """An input found inside a folder that is not read: one ``problems`` row each."""

    capture: str
    """The path, as found under the folder given."""
    kind: str
    """``named-pipe``, ``socket``, ``device``, ``unreadable``, ``dangling-link``,
    ``symlink-loop``, or ``corrupt-gzip`` (``corrupt-xz``, ``corrupt-bzip2``, ``corrupt-zstd``,
    ``corrupt-lz4``): a compressed file damaged from its start."""
    detail: str
    """What was found and that it was skipped."""


@dataclass(frozen=True, slots=True)
class Preflight:
    """What a run will read and write, once every check has passed."""

    files: list[str]
    """Capture files to read, sorted, each a regular file."""
    skipped: list[Skipped] = field(default_factory=list)
    """Inputs inside folders that are not read, and why."""
    out: str = ""
    """The output folder (``--out``) as given, as a str."""
    ports: frozenset[int] = frozenset()
    """The AMQP server ports, checked."""


def preflight(
    captures: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    master: str | None = None,
    ports: Collection[int] = (5672,),
    overwrite: bool = False,
    java: bool = True,
) -> Preflight:
    """Check a run's arguments; the files to read, or :class:`AnalyzeUsageError`.

    ``java``: also check that a Java Spark can run on is installed (not needed when a Spark
    session is already running, or under ``spark-submit``, whose JVM is already up).
    """
    port_set = check_ports(ports)
    if master is not None:
        check_master(master)
    out_path = check_out(out, overwrite)
    files, skipped = resolve_captures(captures)
    if java and "PYSPARK_GATEWAY_PORT" not in os.environ:
        check_spark_home()
        check_java()
        check_executor_python(master)
    return Preflight(files, skipped, out_path, port_set)


# ------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------


def _as_paths(captures: object) -> list[str]:
    """One path or a list of them, as strs (a str is one path, never its characters)."""
    if isinstance(captures, (str, os.PathLike)):
        items: list[object] = [captures]
    elif isinstance(captures, (list, tuple)):
        items = list(captures)
    else:
        raise AnalyzeUsageError(
            f"captures must be a path or a list of paths, not {type(captures).__name__}"
        )
    paths = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise AnalyzeUsageError(f"not a path: {item!r}")
        path = os.fspath(item)
        if not isinstance(path, str) or not path:
            raise AnalyzeUsageError(f"not a path: {item!r}")
        paths.append(path)
    if not paths:
        raise AnalyzeUsageError("no capture given: name pcap/pcapng files or folders of them")
    return paths


def _kind_of(mode: int) -> str | None:
    """The skip kind of a file that is neither a regular file nor a folder."""
    if stat.S_ISFIFO(mode):
        return "named-pipe"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "special-file"


_KIND_WORDS = {
    "named-pipe": "a named pipe",
    "socket": "a socket",
    "device": "a device",
    "special-file": "not a regular file",
}


def _magic(path: str) -> bytes | tuple[str, str]:
    """A regular file's first four bytes (decompressed, if it is compressed); or why not,
    as the kind and detail of a skipped input.

    Opened without blocking and checked again once open: a file replaced by a pipe after
    it was looked at must not hang the walk.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return ("unreadable", f"cannot open: {exc.strerror}; skipped")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ("unreadable", "not a regular file; skipped")
        head = os.read(fd, 65536)
        compression = compression_of(head)
        if compression is None:
            return head[:4]
        missing = compression.missing()
        if missing is not None:
            return ("unreadable", f"{missing}; skipped")
        unread = [head]
        data = first_bytes(compression, lambda n: unread.pop() if unread else os.read(fd, n), 4)
        if len(data) < 4:
            name = compression.name
            return (
                f"corrupt-{name}",
                f"corrupt {name} file: stream ends before its first bytes",
            )
        return data
    except CorruptStream as exc:
        name = exc.compression
        return (
            f"corrupt-{name}",
            f"corrupt {name} file: not a valid {name} stream ({exc.cause})",
        )
    except OSError as exc:
        return ("unreadable", f"cannot be read ({exc.strerror}); skipped")
    finally:
        os.close(fd)


def _is_capture_magic(magic: bytes) -> bool:
    return magic in _PCAP_MAGICS or magic == _PCAPNG_MAGIC


class _Walk:
    """The capture files under one folder, and what was skipped there."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.skipped: list[Skipped] = []
        self.others = 0  # regular files that are not captures

    def folder(self, path: str) -> None:
        try:
            with os.scandir(path) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            self.skipped.append(
                Skipped(path, "unreadable", f"folder cannot be listed ({exc.strerror}); skipped")
            )
            return
        for entry in entries:
            self.entry(entry)

    def entry(self, entry: os.DirEntry[str]) -> None:
        path = entry.path
        try:
            link = entry.is_symlink()
            info = os.stat(path)  # follows a link to a file
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self.skipped.append(Skipped(path, "symlink-loop", "symbolic link loop; skipped"))
            elif exc.errno == errno.ENOENT:
                self.skipped.append(
                    Skipped(path, "dangling-link", "symbolic link to nothing; skipped")
                )
            else:
                self.skipped.append(
                    Skipped(path, "unreadable", f"cannot be read ({exc.strerror}); skipped")
                )
            return
        if stat.S_ISDIR(info.st_mode):
            if not link:  # links to folders are not followed: the walk always ends
                self.folder(path)
            return
        kind = _kind_of(info.st_mode)
        if kind is not None:
            self.skipped.append(
                Skipped(path, kind, f"{_KIND_WORDS[kind]}, not a capture file; skipped unopened")
            )
            return
        magic = _magic(path)
        if isinstance(magic, tuple):
            self.skipped.append(Skipped(path, *magic))
            return
        if _is_capture_magic(magic):
            self.files.append(path)
        else:
            self.others += 1


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def resolve_captures(
    captures: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
) -> tuple[list[str], list[Skipped]]:
    """The capture files named by ``captures`` (files, or folders walked recursively).

    A file named directly is kept whatever its content (the job reports a file that is not
    a capture as a ``problems`` row), but it must exist, be readable and be a regular file;
    a compressed file whose stream is corrupt from the start is skipped as ``corrupt-gzip``
    (``corrupt-xz``...).
    Raises :class:`AnalyzeUsageError` when nothing is left to read.
    """
    found: set[str] = set()
    skipped: list[Skipped] = []
    others = 0
    for path in _as_paths(captures):
        try:
            info = os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ENOENT and path == "-":
                # tshark's habit (-r -): the splits Spark reads in parallel need a file.
                raise AnalyzeUsageError(
                    "captures are read from files, not standard input: write it to a file "
                    "(tcpdump -w FILE) and name that"
                ) from None
            if exc.errno == errno.ENOENT:
                raise AnalyzeUsageError(f"no such file or folder: {path}") from None
            if exc.errno == errno.ELOOP:
                raise AnalyzeUsageError(f"symbolic link loop: {path}") from None
            raise AnalyzeUsageError(f"cannot read {path}: {exc.strerror}") from None
        if stat.S_ISDIR(info.st_mode):
            if not os.access(path, os.R_OK | os.X_OK):
                raise AnalyzeUsageError(f"cannot read the folder {path}: permission denied")
            walk = _Walk()
            walk.folder(path)
            found.update(walk.files)
            skipped += walk.skipped
            others += walk.others
            continue
        kind = _kind_of(info.st_mode)
        if kind is not None:
            raise AnalyzeUsageError(f"{path} is {_KIND_WORDS[kind]}, not a capture file")
        if not os.access(path, os.R_OK):
            raise AnalyzeUsageError(f"cannot read {path}: permission denied")
        magic = _magic(path)
        if isinstance(magic, tuple) and magic[0].startswith("corrupt-"):
            skipped.append(Skipped(path, *magic))
            continue
        found.add(path)
    if not found and len(skipped) == 1 and not others:
        raise AnalyzeUsageError(f"nothing to read: {skipped[0].capture}: {skipped[0].detail}")
    if not found:
        what = ", ".join(_as_paths(captures))
        reasons = []
        if others:
            reasons.append(f"{_plural(others, 'file')} not pcap/pcapng")
        kinds: dict[str, int] = {}
        for item in skipped:
            kinds[item.kind] = kinds.get(item.kind, 0) + 1
        reasons += [f"{n} skipped: {kind}" for kind, n in sorted(kinds.items())]
        because = f" ({'; '.join(reasons)})" if reasons else " (empty)"
        raise AnalyzeUsageError(f"no pcap or pcapng capture files in {what}{because}")
    return sorted(found), skipped


# ------------------------------------------------------------------------------------------
# Output folder
# ------------------------------------------------------------------------------------------


def is_spark_output(name: str) -> bool:
    """Whether a file in a table folder is one Spark's Parquet writer writes."""
    return _SPARK_FILE.match(name) is not None


def _foreign_files(table: str) -> list[str]:
    """Files in a previous run's table folder that the job did not write."""
    foreign = []
    for root, dirs, files in os.walk(table):
        dirs.sort()
        for name in sorted(files):
            if not is_spark_output(name):
                foreign.append(os.path.join(root, name))
        for name in dirs:  # Spark writes no sub-folders into a table
            foreign.append(os.path.join(root, name))
        dirs.clear()
    return foreign


def check_out(out: str | os.PathLike[str], overwrite: bool) -> str:
    """``--out`` as a str, if the job can write there; else :class:`AnalyzeUsageError`.

    Refused: a file; a folder that cannot be written; a folder that already holds files
    unless ``overwrite`` (then only the job's own outputs there are replaced, and a table
    folder holding files the job did not write is refused rather than deleted).
    """
    if not isinstance(out, (str, os.PathLike)) or not os.fspath(out):
        raise AnalyzeUsageError(f"--out must be a folder path, not {out!r}")
    path = os.fspath(out)
    if not isinstance(path, str):
        raise AnalyzeUsageError(f"--out must be a folder path, not {out!r}")
    if os.path.lexists(path) and not os.path.isdir(path):
        what = "a file" if os.path.isfile(path) else "not a folder"
        raise AnalyzeUsageError(f"--out {path} is {what}; name a folder (new or empty)")
    if os.path.isdir(path):
        try:
            entries = sorted(os.listdir(path))
        except OSError as exc:
            raise AnalyzeUsageError(f"cannot read --out {path}: {exc.strerror}") from None
        if not _writable(path):
            raise AnalyzeUsageError(f"cannot write into --out {path}: not writable")
        if entries and not overwrite:
            raise AnalyzeUsageError(
                f"--out {path} already holds files ({', '.join(entries[:3])}"
                f"{', ...' if len(entries) > 3 else ''}); pass --overwrite to replace a previous "
                "analysis there, or name a new folder"
            )
        for name in _TABLE_FOLDERS:
            table = os.path.join(path, name)
            if os.path.isdir(table):
                foreign = _foreign_files(table)
                if foreign:
                    raise AnalyzeUsageError(
                        f"--out {path}: {foreign[0]} was not written by amqp-codec analyze "
                        f"and --overwrite would replace its folder; move it away first"
                    )
            elif os.path.lexists(table):
                raise AnalyzeUsageError(
                    f"--out {path}: {table} is not a table folder of a previous analysis; "
                    "move it away first"
                )
        for name in OUTPUT_NAMES[4:]:
            if os.path.isdir(os.path.join(path, name)):
                raise AnalyzeUsageError(
                    f"--out {path}: {os.path.join(path, name)} is a folder; move it away first"
                )
        return path
    # A new folder: its nearest existing ancestor must let us create it.
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise AnalyzeUsageError(f"cannot create --out {path}: {parent} is not a folder")
    if not _writable(parent):
        raise AnalyzeUsageError(f"cannot create --out {path}: {parent} is not writable")
    return path


def _writable(folder: str) -> bool:
    """Whether a folder can be created in ``folder``: tried, as permissions do not tell
    everything (root, read-only mounts, /proc)."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".amqp-codec-probe-", dir=folder))
    except OSError:
        return False
    return True


# ------------------------------------------------------------------------------------------
# Java, master, ports
# ------------------------------------------------------------------------------------------


def java_command() -> tuple[str | None, str]:
    """The java Spark would start, as Spark's launcher finds it, and where that came from."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return shutil.which(os.path.join(home, "bin", "java")), f"JAVA_HOME={home}"
    return shutil.which("java"), "PATH"


def java_version(output: str) -> int | None:
    """The major version in ``java -version``'s output (``1.8.0_392`` is 8)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    return major


def release_version(java: str) -> int | None:
    """The major version in the ``release`` file of the Java installation ``java`` belongs to
    (``JAVA_VERSION="17.0.15"``, beside its ``bin``), None when there is no such file or it
    does not say. Every JDK and JRE since 9 ships one; reading it costs a file read, where
    ``java -version`` starts a JVM (30 to 40 ms on the 2-core machine, before Spark's own JVM
    can start)."""
    home = os.path.dirname(os.path.dirname(os.path.realpath(java)))
    try:
        with open(os.path.join(home, "release"), encoding="utf-8", errors="replace") as file:
            text = file.read(65536)
    except OSError:
        return None
    match = re.search(r'^JAVA_VERSION="([^"]*)"', text, re.MULTILINE)
    return None if match is None else java_version(f'version "{match.group(1)}"')


def check_java() -> int:
    """The major version of the Java Spark will use; :class:`AnalyzeUsageError` if none fits.

    Read from the installation's ``release`` file where it has one (a wrapper script on the
    PATH, say, has not), else from ``java -version``."""
    java, source = java_command()
    if java is None:
        where = "JAVA_HOME has no bin/java" if source != "PATH" else "no java on PATH"
        raise AnalyzeUsageError(f"Spark needs Java {JAVA_NEEDED} or newer ({where}): {_JAVA_HINT}")
    version = release_version(java)
    if version is None:
        version = _version_by_running(java)
    if version < JAVA_NEEDED:
        raise AnalyzeUsageError(
            f"Spark needs Java {JAVA_NEEDED} or newer, {java} (from {source}) is Java "
            f"{version}: {_JAVA_HINT}"
        )
    return version


def _version_by_running(java: str) -> int:
    """The major version ``java -version`` prints; :class:`AnalyzeUsageError` if none."""
    try:
        result = subprocess.run(
            [java, "-version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AnalyzeUsageError(f"cannot run {java} -version ({exc}): {_JAVA_HINT}") from None
    version = java_version(result.stderr + result.stdout)
    if version is None:
        raise AnalyzeUsageError(
            f"{java} -version does not say its version; Spark needs Java {JAVA_NEEDED} "
            f"or newer: {_JAVA_HINT}"
        )
    return version


def check_spark_home() -> None:
    """A ``SPARK_HOME`` that is set must hold Spark's ``bin/spark-submit``, which PySpark
    starts the driver with; else :class:`AnalyzeUsageError` (PySpark would fail with a bare
    "No such file or directory")."""
    home = os.environ.get("SPARK_HOME")
    if not home:
        return
    submit = os.path.join(home, "bin", "spark-submit")
    if not os.access(submit, os.X_OK):
        raise AnalyzeUsageError(
            f"SPARK_HOME is {home}, which holds no runnable bin/spark-submit: unset it to use "
            "the Spark that came with pyspark, or set it to a Spark 4 installation"
        )


def check_executor_python(master: str | None) -> None:
    """On a local master, that the Python ``PYSPARK_PYTHON`` names, when it is set to other
    than this one, runs and has amqp-codec, PySpark and pyarrow; else
    :class:`AnalyzeUsageError`. Spark would start the executors with it and fail the first
    job with a Java stack. A cluster's executors run elsewhere: they are not checked here."""
    from amqp_codec.analyze.head_start import runs_here

    value = os.environ.get("PYSPARK_PYTHON")
    if not value or not runs_here(master):
        return
    python = shutil.which(value)
    if python is None:
        raise AnalyzeUsageError(
            f"PYSPARK_PYTHON={value} is not a program Spark can start: {_PYTHON_HINT}"
        )
    # Not the real paths: a virtual environment's python is a link to its base Python,
    # which has none of the environment's packages.
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        return
    try:
        result = subprocess.run(
            [python, "-c", _FINDS_THE_MODULES],
            capture_output=True,
            timeout=60,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AnalyzeUsageError(
            f"cannot run PYSPARK_PYTHON={value} ({exc}): {_PYTHON_HINT}"
        ) from None
    if result.returncode != 0 or _FOUND.encode() not in result.stdout:
        modules = ", ".join(_EXECUTOR_MODULES[:-1]) + " and " + _EXECUTOR_MODULES[-1]
        raise AnalyzeUsageError(
            f"PYSPARK_PYTHON={value}, the Python Spark's executors would run, is not one that "
            f"can import {modules}: {_PYTHON_HINT}"
        )


def check_master(master: str) -> str:
    """``master`` if it is a Spark master URL; else :class:`AnalyzeUsageError`."""
    if not isinstance(master, str) or _MASTER.match(master) is None:
        raise AnalyzeUsageError(
            f"not a Spark master URL: {master!r} (expected local, local[N], local[*], "
            "spark://HOST:PORT, yarn or k8s://URL)"
        )
    return master


def check_master_reachable(master: str, timeout: float = 5.0) -> None:
    """For a standalone master (``spark://HOST:PORT[,HOST:PORT...]``), that one of its
    addresses accepts a connection; else :class:`AnalyzeUsageError`. Spark itself would
    fail with a Java stack that does not say why. Checked when a driver is about to be
    started for it (not when a session already runs in the process)."""
    if not master.startswith("spark://"):
        return
    failures = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except OSError as exc:
            failures.append(f"{address}: {exc.strerror or exc}")
    raise AnalyzeUsageError(
        f"cannot reach the Spark master {master} ({'; '.join(failures)}): start it, or "
        "check --master"
    )


def check_ports(ports: Collection[int]) -> frozenset[int]:
    """The server ports as a set; :class:`AnalyzeUsageError` for anything not 1..65535."""
    if isinstance(ports, (str, bytes)) or not isinstance(ports, Collection):
        raise AnalyzeUsageError(f"ports must be a list of port numbers, not {ports!r}")
    for port in ports:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise AnalyzeUsageError(f"not a port number (1-65535): {port!r}")
    if not ports:
        raise AnalyzeUsageError("no AMQP server port given")
    return frozenset(ports)
