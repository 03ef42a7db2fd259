"""The executors' Python daemon (``amqp_codec.analyze.daemon``) imports the analysis before
it forks its workers, and must start no thread doing so: a thread does not survive a fork."""

from __future__ import annotations

import glob
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("pyspark")


def test_importing_the_daemon_starts_no_thread_and_leaves_pyarrow_to_the_workers() -> None:
    probe = (
        "import sys, threading\n"
        "import amqp_codec.analyze.daemon\n"
        "assert 'amqp_codec.analyze.regions' in sys.modules\n"
        "print(threading.active_count(), 'pyarrow' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["1", "False"]


def _imported_from(pythonpath: list[str]) -> tuple[str, str]:
    """Where the daemon's pyspark comes from, started with ``pythonpath`` as Spark starts it."""
    probe = (
        "import amqp_codec.analyze.daemon, pyspark, sys\n"
        "print(pyspark.__file__)\n"
        "print(next(e for e in sys.path if e.endswith('.zip') and 'pyspark' in e))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=60,
    )
    module, first_zip = done.stdout.split("\n")[:2]
    return module, first_zip


def test_the_zip_inside_the_installed_pyspark_goes_after_its_cached_bytecode() -> None:
    import pyspark

    package = os.path.dirname(pyspark.__file__)
    bundled = sorted(glob.glob(os.path.join(package, "python", "lib", "*.zip")))
    assert any(path.endswith("pyspark.zip") for path in bundled)
    module, _ = _imported_from(bundled)
    assert module == pyspark.__file__  # not .../pyspark.zip/pyspark/__init__.py


def test_a_spark_installations_own_zip_stays_first(tmp_path: pathlib.Path) -> None:
    # A cluster's SPARK_HOME: its pyspark.zip must win over a pip-installed pyspark, whose
    # release may differ from the JVM's.
    import pyspark

    package = os.path.dirname(pyspark.__file__)
    own = tmp_path / "spark" / "python" / "lib" / "pyspark.zip"
    own.parent.mkdir(parents=True)
    shutil.copy(os.path.join(package, "python", "lib", "pyspark.zip"), own)
    module, first_zip = _imported_from([str(own)])
    assert module == str(own / "pyspark" / "__init__.py")
    assert first_zip == str(own)
