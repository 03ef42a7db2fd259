"""The driver JVM's class-data archive (``amqp_codec.analyze.class_archive``): which options a
run gets, how a finished recording is moved into place, and that a damaged archive never
stops a run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_cluster import java_missing

from amqp_codec.analyze import class_archive
from amqp_codec.analyze.class_archive import archive_options, discard
from amqp_codec.analyze.preflight import java_command

ROOT = Path(__file__).resolve().parent.parent
JAVA = java_command()[0]
pytestmark = pytest.mark.skipif(JAVA is None, reason="no java")
#: What a recording holds here: a dynamic archive's magic number, then anything.
RECORDED = b"\xa8\xab\x0b\xf0 recorded"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("AMQP_CODEC_CACHE", str(folder))
    monkeypatch.delenv("AMQP_CODEC_CLASS_ARCHIVE", raising=False)
    return folder


def _key() -> str:
    assert JAVA is not None
    return class_archive._installation_key(JAVA)


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


def _analyze(out: Path, cache: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``amqp-codec analyze`` of the sample captures into ``out``, archives in ``cache``."""
    return subprocess.run(
        [
            *(sys.executable, "-m", "amqp_codec", "analyze"),
            *(str(ROOT / "samples/captures"), "--out", str(out), "--quiet"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "AMQP_CODEC_CACHE": str(cache), **env},
        cwd=cwd,
        check=False,
    )


def test_the_first_run_records_and_a_second_at_the_same_time_does_not(cache: Path) -> None:
    options, archive = archive_options(JAVA)
    recording = cache / f"spark-{_key()}-{os.getpid()}.recording"
    assert options.startswith(f"-XX:ArchiveClassesAtExit={recording} ")
    assert archive is None
    recording.write_bytes(b"being written")
    assert archive_options(JAVA) == ("", None)  # one recording at a time


def test_a_finished_recording_is_moved_into_place_and_used(cache: Path) -> None:
    cache.mkdir()
    stale = cache / "spark-0123456789abcdef.jsa"  # another Java or Spark's, long ago
    stale.write_bytes(RECORDED)
    _age(stale, class_archive.OTHER_INSTALLATIONS_KEPT_SECONDS + 1)
    recent = cache / "spark-fedcba9876543210.jsa"  # another's, in use: theirs to keep
    recent.write_bytes(RECORDED)
    theirs = cache / f"spark-fedcba9876543210-{_dead_pid()}.recording"
    theirs.write_bytes(RECORDED)
    _age(theirs, class_archive.SETTLED_SECONDS + 1)
    recording = cache / f"spark-{_key()}-{_dead_pid()}.recording"
    recording.write_bytes(RECORDED)
    _age(recording, class_archive.SETTLED_SECONDS + 1)
    options, archive = archive_options(JAVA)
    assert archive == cache / f"spark-{_key()}.jsa"
    assert options.startswith(f"-XX:SharedArchiveFile={archive} ")
    assert archive.read_bytes() == RECORDED
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [archive.name, recent.name, theirs.name]
    )


def test_a_recording_is_not_taken_while_its_run_goes_on_or_just_ended(cache: Path) -> None:
    cache.mkdir()
    running = cache / f"spark-{_key()}-{os.getpid()}.recording"  # this process: still running
    running.write_bytes(b"part")
    _age(running, class_archive.SETTLED_SECONDS + 1)
    assert archive_options(JAVA) == ("", None)
    running.unlink()
    fresh = cache / f"spark-{_key()}-{_dead_pid()}.recording"  # ended, JVM perhaps writing
    fresh.write_bytes(b"part")
    assert archive_options(JAVA) == ("", None)
    assert fresh.exists() and not (cache / f"spark-{_key()}.jsa").exists()


def test_a_cache_path_with_a_space_gets_no_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark splits the driver's JVM options at spaces."""
    monkeypatch.setenv("AMQP_CODEC_CACHE", str(tmp_path / "my cache"))
    assert archive_options(JAVA) == ("", None)


def test_turned_off_or_unwritable_means_no_options(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AMQP_CODEC_CLASS_ARCHIVE", "0")
    assert archive_options(JAVA) == ("", None)
    monkeypatch.delenv("AMQP_CODEC_CLASS_ARCHIVE")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("AMQP_CODEC_CACHE", str(blocker / "cache"))
    assert archive_options(JAVA) == ("", None)
    assert archive_options(None) == ("", None)


def test_discard_deletes_the_archive(cache: Path) -> None:
    cache.mkdir()
    archive = cache / "spark-x.jsa"
    archive.write_bytes(b"x")
    discard(archive)
    discard(archive)  # already gone: nothing to do
    assert not archive.exists()


def test_a_file_that_is_no_archive_is_deleted_and_recorded_again(cache: Path) -> None:
    cache.mkdir()
    archive = cache / f"spark-{_key()}.jsa"
    archive.write_bytes(b"\x00" * 4096)  # the JVM would ignore it, silently, every run
    options, mapped = archive_options(JAVA)
    assert mapped is None and "-XX:ArchiveClassesAtExit=" in options
    assert not archive.exists()


@pytest.mark.skipif(java_missing() is not None, reason=str(java_missing()))
@pytest.mark.timeout(300)
def test_a_damaged_archive_costs_one_start_and_is_deleted(cache: Path, tmp_path: Path) -> None:
    """A JVM does not start with an archive cut short: the run starts it again without."""
    assert JAVA is not None
    cache.mkdir()
    whole = tmp_path / "whole.jsa"
    subprocess.run(
        [JAVA, f"-XX:ArchiveClassesAtExit={whole}", "-Xlog:cds=off", "-version"],
        capture_output=True,
        check=True,
    )
    archive = cache / f"spark-{_key()}.jsa"
    data = whole.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    out = tmp_path / "out"
    done = _analyze(out, cache, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Exception" not in done.stderr
    assert not archive.exists()
    assert (out / "report.html").is_file()
    # The JVM that died left no crash report in the working folder, nor in the cache.
    assert not list(tmp_path.glob("hs_err_pid*.log"))
    assert sorted(p.name for p in cache.iterdir()) == []


@pytest.mark.skipif(java_missing() is not None, reason=str(java_missing()))
@pytest.mark.timeout(300)
def test_an_archive_stays_when_java_does_not_start_for_another_reason(
    cache: Path, tmp_path: Path
) -> None:
    """A driver JVM that does not start without the archive either (the user's settings ask
    for a heap it cannot read) was not stopped by the archive: the archive is kept."""
    assert JAVA is not None
    cache.mkdir()
    archive = cache / f"spark-{_key()}.jsa"
    subprocess.run(
        [JAVA, f"-XX:ArchiveClassesAtExit={archive}", "-Xlog:cds=off", "-version"],
        capture_output=True,
        check=True,
    )
    recorded = archive.read_bytes()
    conf = tmp_path / "spark-conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.driver.memory 1q\n")
    done = _analyze(tmp_path / "out", cache, tmp_path, SPARK_CONF_DIR=str(conf))
    assert done.returncode == 2, done.stderr
    assert "Invalid maximum heap size" in done.stderr
    assert archive.read_bytes() == recorded
