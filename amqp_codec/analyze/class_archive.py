"""A class-data archive for the driver's JVM: Spark's classes mapped at start, not loaded.

Starting a Spark driver loads and verifies some ten thousand classes, which is most of the
job's fixed start-up cost. Java's dynamic class-data sharing (AppCDS, Java 13 and newer)
records the classes a JVM loaded into an archive when it exits
(``-XX:ArchiveClassesAtExit``); a later JVM with the same Java and the same class path maps
that archive instead (``-XX:SharedArchiveFile``). On the 2-core development machine this
took creating the Spark session from 6.6 s to 3.1 s.

The first run of a Java and Spark installation records the archive (about 120 MB, in
``$AMQP_CODEC_CACHE``, else ``$XDG_CACHE_HOME/amqp-codec``, else ``~/.cache/amqp-codec``);
the runs after it use it. A run records into a file of its own, which a later run moves into
place only once the recording run has ended and its JVM has finished writing; one recording
at a time, so runs side by side neither read a half-written archive nor write several. A JVM
that cannot start with the archive is started again without it, and the archive is deleted:
an archive never stops a run. Each Java and Spark installation has its archive; a run of
one deletes the archives of others recorded more than a week ago (an installation still in
use records its own again). ``AMQP_CODEC_CLASS_ARCHIVE=0`` turns all this off.

Only a driver JVM that the job starts itself uses it: not one ``spark-submit`` started, nor
executors on a cluster.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

__all__ = ["archive_options", "cache_folder", "discard"]

#: A recording unchanged this long after its run's process ended is finished: the JVM writes
#: it as it exits, right after that process, in a second or two.
SETTLED_SECONDS = 30.0
#: A recording this old is finished whatever its process id says (ids are reused).
ABANDONED_SECONDS = 3600.0
#: Archives of other Java or Spark installations recorded longer ago than this are deleted.
OTHER_INSTALLATIONS_KEPT_SECONDS = 7 * 86400.0
#: Unified-logging tags of class-data sharing, silenced: a missing or mismatched archive is
#: not the user's concern, and the JVM carries on without one.
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
_SUFFIX = ".jsa"
#: The first four bytes of a dynamic archive (0xf00baba8), in either byte order.
_MAGIC = (b"\xa8\xab\x0b\xf0", b"\xf0\x0b\xab\xa8")
_RECORDING = ".recording"


def cache_folder() -> Path | None:
    """Where archives are kept, or None when archives are turned off."""
    if os.environ.get("AMQP_CODEC_CLASS_ARCHIVE", "1") == "0":
        return None
    configured = os.environ.get("AMQP_CODEC_CACHE")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "amqp-codec"


def _installation_key(java: str) -> str:
    """Names the Java runtime and Spark's jars: an archive only fits the ones it recorded."""
    import pyspark

    java_path = os.path.realpath(java)
    jars = Path(pyspark.__file__).parent / "jars"
    parts = [java_path, str(os.stat(java_path).st_mtime_ns), pyspark.__version__, str(jars)]
    if jars.is_dir():
        parts += sorted(f"{p.name}:{p.stat().st_size}" for p in jars.iterdir())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def archive_options(java: str | None) -> tuple[str, Path | None]:
    """JVM options for the driver: map this installation's archive if there is one, else
    record one; and the archive mapped (None: recording, or archives are off). Never raises:
    whatever goes wrong here only means starting without an archive."""
    folder = cache_folder()
    if folder is None or java is None:
        return "", None
    if any(c.isspace() or c in "\"'" for c in str(folder)):
        return "", None  # Spark splits the JVM options at spaces: no path with one
    try:
        key = _installation_key(java)
        folder.mkdir(parents=True, exist_ok=True)
        archive = folder / f"spark-{key}{_SUFFIX}"
        _settle(folder, archive, time.time())
        if archive.is_file():
            if _looks_like_an_archive(archive):
                # A JVM that dies mapping a damaged archive writes its crash report here,
                # not into the user's working folder; discard() deletes it.
                crash = folder / "jvm-crash-%p.log"
                return f"-XX:SharedArchiveFile={archive} -XX:ErrorFile={crash} {_QUIET}", archive
            discard(archive)  # not an archive at all: the JVM would ignore it every run
        if any(folder.glob(f"spark-{key}-*{_RECORDING}")):
            return "", None  # another run is recording it: one recording at a time
        recording = folder / f"spark-{key}-{os.getpid()}{_RECORDING}"
        return f"-XX:ArchiveClassesAtExit={recording} {_QUIET}", None
    except (OSError, ImportError):
        return "", None


def _settle(folder: Path, archive: Path, now: float) -> None:
    """Move a finished recording of this installation into place and delete the ones it
    does not need; delete recordings abandoned long ago, and archives of other
    installations recorded more than a week ago (another installation's recent archive and
    its recording in progress are that installation's to use)."""
    prefix = archive.name[: -len(_SUFFIX)] + "-"
    for path in folder.iterdir():
        if not path.name.startswith("spark-") or not path.is_file():
            continue
        age = now - path.stat().st_mtime
        if path.name.endswith(_RECORDING):
            if path.name.startswith(prefix):
                if not _settled(path, now):
                    continue  # perhaps still being written
                if archive.exists():
                    path.unlink(missing_ok=True)
                else:
                    os.replace(path, archive)  # atomic: readers see all of it or none
            elif age >= ABANDONED_SECONDS:
                path.unlink(missing_ok=True)
        elif path != archive and age >= OTHER_INSTALLATIONS_KEPT_SECONDS:
            path.unlink(missing_ok=True)


def _settled(recording: Path, now: float) -> bool:
    """Whether ``recording``'s JVM has finished writing it."""
    age = now - recording.stat().st_mtime
    if age >= ABANDONED_SECONDS:
        return True
    if age < SETTLED_SECONDS:
        return False
    pid = recording.name[: -len(_RECORDING)].rsplit("-", 1)[-1]
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True  # its run has ended
    except (ValueError, OSError):
        return False
    return False  # its run goes on


def _looks_like_an_archive(path: Path) -> bool:
    """Whether ``path`` starts as a dynamic class-data archive does (its magic number)."""
    with path.open("rb") as f:
        return f.read(4) in _MAGIC


def discard(archive: Path) -> None:
    """Delete an archive a JVM could not start with, and the reports of JVMs that died on it."""
    archive.unlink(missing_ok=True)
    for report in archive.parent.glob("jvm-crash-*.log"):
        report.unlink(missing_ok=True)
