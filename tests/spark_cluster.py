"""A throwaway Spark standalone cluster on 127.0.0.1, started from the installed PySpark.

One master and N workers (``spark-class org.apache.spark.deploy.master.Master`` / ``...Worker``),
each in its own process group on free ports, with logs and work directories under a given
folder. :func:`spark_cluster` waits until every worker has registered with the master and
always tears the whole group down (master, workers, their executors and Python workers),
however the block ends.

Executors run the same Python as the tests (``PYSPARK_PYTHON``), so they import this checkout's
``amqp_codec``. Jobs run in a child process (:meth:`SparkCluster.python`) with the environment
a driver needs (:meth:`SparkCluster.driver_env`): one JVM per job, whatever SparkSession the
test process may hold.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

START_TIMEOUT = 180.0  # seconds for the master and every worker to come up (a busy machine)


def java_missing() -> str | None:
    """Why Spark cannot run here (no JVM), or None when it can."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return None
    if shutil.which("java"):
        return None
    return "no Java runtime (java on PATH or JAVA_HOME): Spark needs a JVM"


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark package."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class SparkCluster:
    """A running cluster: its master URL, web UI and processes."""

    root: Path
    master_url: str = ""
    webui_url: str = ""
    processes: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)

    def base_env(self) -> dict[str, str]:
        """Environment shared by the cluster's daemons and its drivers."""
        env = dict(os.environ)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOG_DIR=str(self.root / "logs"),
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
        )
        # A SPARK_CONF_DIR or master URL from the caller's shell must not leak in.
        for name in ("SPARK_CONF_DIR", "MASTER", "SPARK_MASTER_HOST", "PYSPARK_SUBMIT_ARGS"):
            env.pop(name, None)
        return env

    def driver_env(self) -> dict[str, str]:
        """Environment for a driver process submitting to this cluster."""
        return self.base_env()

    def _spawn(self, name: str, args: Sequence[str]) -> subprocess.Popen[bytes]:
        log = (self.root / "logs" / f"{name}.out").open("wb")
        proc = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.base_env(),
            cwd=self.root,
            start_new_session=True,  # its own process group: executors die with it
        )
        log.close()
        self.processes.append((name, proc))
        return proc

    def logs(self, lines: int = 40) -> str:
        """The last lines of every daemon's log, for failure messages."""
        out = []
        for name, _ in self.processes:
            path = self.root / "logs" / f"{name}.out"
            text = path.read_text(errors="replace").splitlines() if path.exists() else []
            out.append(f"--- {name} ---\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    def status(self) -> dict[str, Any]:
        """The master's JSON status page (workers, running and completed applications)."""
        with urllib.request.urlopen(self.webui_url + "/json/", timeout=5) as response:
            data: dict[str, Any] = json.load(response)
        return data

    def _check_alive(self) -> None:
        for name, proc in self.processes:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"Spark {name} exited with status {proc.returncode}\n{self.logs()}"
                )

    def _wait(self, what: str, ready: Any, deadline: float) -> None:
        while True:
            self._check_alive()
            with contextlib.suppress(OSError, ValueError, urllib.error.URLError):
                if ready():
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"Spark {what} not ready in {START_TIMEOUT:.0f} s\n{self.logs()}"
                )
            time.sleep(0.5)

    def start(self, workers: int, cores: int, memory: str) -> None:
        """Start the master, then the workers; return once all workers are ALIVE."""
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + START_TIMEOUT
        port, webui = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{port}"
        self.webui_url = f"http://127.0.0.1:{webui}"
        master_class = "org.apache.spark.deploy.master.Master"
        self._spawn(
            "master",
            [master_class, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui)],
        )
        self._wait("master", lambda: self.status().get("status") == "ALIVE", deadline)
        for n in range(workers):
            work = self.root / f"worker-{n}"
            work.mkdir()
            self._spawn(
                f"worker-{n}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(free_port()),
                    "--webui-port",
                    str(free_port()),
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--work-dir",
                    str(work),
                ],
            )
        self._wait("workers", lambda: self.alive_workers() == workers, deadline)

    def alive_workers(self) -> int:
        """How many workers the master sees as ALIVE."""
        return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")

    def stop(self) -> None:
        """Terminate every process group (SIGTERM, then SIGKILL after 15 s)."""
        for _, proc in reversed(self.processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        for _, proc in reversed(self.processes):
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            # Executors and Python workers share the group and may outlive their parent.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def python(
        self, args: Sequence[str], *, timeout: float = 400, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run this interpreter with ``args`` as a driver of the cluster; raise if it fails."""
        result = subprocess.run(
            [sys.executable, *args],
            env=self.driver_env(),
            cwd=cwd or self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"driver exited with status {result.returncode}\n"
                f"--- stdout ---\n{result.stdout[-4000:]}\n--- stderr ---\n{result.stderr[-8000:]}"
                f"\n{self.logs()}"
            )
        return result


@contextlib.contextmanager
def spark_cluster(
    root: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g"
) -> Iterator[SparkCluster]:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each, torn down after."""
    cluster = SparkCluster(root)
    try:
        cluster.start(workers, cores, memory)
        yield cluster
    finally:
        cluster.stop()
