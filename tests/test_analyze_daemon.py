"""The executors' Python daemon (``amqp_codec.analyze.daemon``) imports the analysis before
it forks its workers, and must start no thread doing so: a thread does not survive a fork."""

from __future__ import annotations

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
