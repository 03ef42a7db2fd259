"""A capture of real traffic for the pipeline benchmark: one long-lived connection to the local
RabbitMQ broker, recorded on the loopback interface by ``dumpcap`` (``python -m
benchmarks.pipeline --shapes live:2G``).

The generated sets (:mod:`amqp_codec.capture.synthetic`) are regular by construction; a live
capture has what real ones have: pcapng as Wireshark's tools write it, segments of every size
up to the loopback MSS, packets the capture records out of order, the broker's own framing
and timing. One pika connection publishes on one channel and consumes what it published, with
a manual ack each, on another, until its bodies reach half the requested size (each body
crosses the wire twice, so the file comes out a little larger than asked).

What was published is the check: the message count and a digest of every body, which the
``messages`` table must reproduce for the publishes and again for the deliveries.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .cache import cached

#: Bumped when the traffic recorded changes: a cached set of an older version is recorded again.
RECORDER_VERSION = 2
BROKER = ("127.0.0.1", 5672)
#: dumpcap's kernel buffer (MiB): the default (2 MiB) drops packets at loopback rates.
CAPTURE_BUFFER_MIB = 1024


class LiveCaptureError(Exception):
    """The live set cannot be recorded here (no dumpcap, no broker, packets dropped)."""


@dataclass
class LiveCounts:
    """What a live set holds, as its recorder counted it."""

    file_bytes: int = 0
    connections: int = 1
    published: int = 0
    delivered: int = 0
    body_bytes: int = 0  #: bytes of the published bodies (the deliveries carry them again)
    bodies_digest: str = ""  #: :func:`bodies_digest` of the published bodies


@dataclass
class LiveSet:
    files: list[Path]
    counts: LiveCounts
    arguments: dict[str, int]


def bodies_digest(hexdigests: list[str]) -> str:
    """One digest of a multiset of bodies, given each body's SHA-256 (order does not count)."""
    return hashlib.sha256("\n".join(sorted(hexdigests)).encode()).hexdigest()


def live_set(cache: Path, size: int, seed: int) -> tuple[LiveSet, float]:
    """The live set of ``size`` bytes from the cache if recorded with the same arguments, else
    a new recording; with the seconds recording took (0 from the cache)."""
    target = cache / f"set-live-{size}-{seed}-v{RECORDER_VERSION}"
    kept = cached(target)
    if kept is not None:
        files, data = kept
        return LiveSet(files, LiveCounts(**data["counts"]), data["arguments"]), 0.0
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    started = time.perf_counter()
    capture = target / "live.pcapng"
    counts = record(capture, size, seed)
    arguments = {"size": size, "seed": seed}
    (target / "manifest.json").write_text(
        json.dumps(
            {"files": [capture.name], "arguments": arguments, "counts": asdict(counts)}, indent=2
        )
        + "\n"
    )
    return LiveSet([capture], counts, arguments), time.perf_counter() - started


def record(path: Path, size: int, seed: int) -> LiveCounts:
    """Record one connection's traffic with the local broker into ``path`` (pcapng)."""
    dumpcap = shutil.which("dumpcap")
    if dumpcap is None:
        raise LiveCaptureError("dumpcap not installed (Debian: apt-get install tshark)")
    if importlib.util.find_spec("pika") is None:
        raise LiveCaptureError("pika not installed (pip install -e '.[bench]')")
    command = [dumpcap, "-B", str(CAPTURE_BUFFER_MIB), "-i", "lo", "-f", f"tcp port {BROKER[1]}"]
    capturing = subprocess.Popen(
        [*command, "-w", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for_capture(path, capturing)
        counts = _traffic(size, seed)
        _wait_for_backlog(path)
    finally:
        capturing.terminate()
        _, report = capturing.communicate(timeout=60)
    dropped = _dropped(report)
    if dropped:
        raise LiveCaptureError(f"dumpcap dropped {dropped} packets: the capture is incomplete")
    counts.file_bytes = path.stat().st_size
    return counts


def _wait_for_capture(path: Path, capturing: subprocess.Popen[str]) -> None:
    """dumpcap writes the file's header once it captures: traffic before that is lost."""
    deadline = time.monotonic() + 30
    while not (path.exists() and path.stat().st_size > 0):
        if capturing.poll() is not None:
            said = (capturing.stderr.read() if capturing.stderr else "").strip()
            last = said.splitlines()[-1] if said else f"exit status {capturing.returncode}"
            raise LiveCaptureError(f"dumpcap failed: {last}")
        if time.monotonic() > deadline:
            raise LiveCaptureError("dumpcap did not start capturing within 30 s")
        time.sleep(0.05)
    time.sleep(0.5)


def _wait_for_backlog(path: Path, quiet: float = 2.0, limit: float = 120.0) -> None:
    """Wait until dumpcap has written what its buffer still holds: it writes each packet as
    it takes it (Wireshark follows the file), but behind a large buffer it runs seconds
    behind the traffic, and what it has not taken when it is stopped is lost, uncounted."""
    deadline = time.monotonic() + limit
    size, since = path.stat().st_size, time.monotonic()
    while time.monotonic() - since < quiet:
        if time.monotonic() > deadline:
            raise LiveCaptureError(f"dumpcap still writing {limit:.0f} s after the traffic ended")
        time.sleep(0.1)
        now = path.stat().st_size
        if now != size:
            size, since = now, time.monotonic()


def _dropped(report: str) -> int:
    """Packets dumpcap's closing report says it dropped (0 when it says nothing)."""
    found = re.search(r"received/dropped on interface '[^']*': \d+/(\d+)", report)
    return int(found.group(1)) if found else 0


def _traffic(size: int, seed: int) -> LiveCounts:
    """Publish and consume on one connection until the bodies published reach ``size / 2``.

    Bodies: 60% of 100 B to 1 KiB, 30% up to 16 KiB, 10% up to 300 KB (several frames at the
    broker's frame_max of 128 KiB); properties as an application sets them, a small headers
    table on two messages in three.
    """
    import pika

    rng = random.Random(seed)
    parameters = pika.ConnectionParameters(*BROKER, heartbeat=30)
    try:
        connection = pika.BlockingConnection(parameters)
    except pika.exceptions.AMQPConnectionError as exc:
        raise LiveCaptureError(f"no broker at {BROKER[0]}:{BROKER[1]}: {exc!r}") from exc
    publisher, consumer = connection.channel(), connection.channel()
    exchange = f"amqp-codec-bench-{os.getpid()}"
    publisher.exchange_declare(exchange, "topic", auto_delete=True)
    queue = consumer.queue_declare("", exclusive=True).method.queue
    consumer.queue_bind(queue, exchange, "orders.*")
    consumer.basic_qos(prefetch_count=200)
    received = [0, 0]  # messages, body bytes

    def on_message(channel: object, method: object, properties: object, body: bytes) -> None:
        received[0] += 1
        received[1] += len(body)
        consumer.basic_ack(method.delivery_tag)  # type: ignore[attr-defined]

    consumer.basic_consume(queue, on_message)
    hexdigests: list[str] = []
    sent = 0
    while sent * 2 < size:
        roll = rng.random()
        if roll < 0.6:
            length = rng.randint(100, 1024)
        elif roll < 0.9:
            length = rng.randint(1025, 16384)
        else:
            length = rng.randint(16385, 300_000)
        body = rng.randbytes(length)
        number = len(hexdigests) + 1
        properties = pika.BasicProperties(
            content_type="application/octet-stream",
            delivery_mode=2,
            message_id=f"m-{number:08d}",
            timestamp=int(time.time()),
            headers={"attempt": number % 5, "source": "bench"} if number % 3 else None,
        )
        publisher.basic_publish(
            exchange, rng.choice(("orders.created", "orders.paid")), body, properties
        )
        hexdigests.append(hashlib.sha256(body).hexdigest())
        sent += length
        if number % 50 == 0:
            connection.process_data_events(time_limit=0)
            while sent - received[1] > 64 * 2**20:  # the consumer keeps up: a bounded queue
                connection.process_data_events(time_limit=0.05)
    deadline = time.monotonic() + 60
    while received[0] < len(hexdigests) and time.monotonic() < deadline:
        connection.process_data_events(time_limit=0.1)
    connection.close()
    if received[0] != len(hexdigests):
        raise LiveCaptureError(f"consumed {received[0]} of {len(hexdigests)} messages published")
    return LiveCounts(
        published=len(hexdigests),
        delivered=received[0],
        body_bytes=sent,
        bodies_digest=bodies_digest(hexdigests),
    )
