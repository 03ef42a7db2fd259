"""Record samples/captures/: real clients talking to a real RabbitMQ, captured with tcpdump.

Runs one session each with pika, py-amqp and aio-pika against the broker while tcpdump
captures the loopback traffic, keeps only each session's own connection (other programs may
use the broker at the same time), and writes::

    pika.pcap            pika, `-i lo` (Ethernet), classic pcap, microseconds
    py-amqp.pcapng       py-amqp, `-i any` (Linux cooked SLL2), converted to pcapng
    aio-pika.0.pcap      aio-pika, `-i lo`, nanosecond pcap, split in two like a rotated
    aio-pika.1.pcap      capture (`tcpdump -C`): the connection spans both files

Then it reassembles and decodes every stream to check them. Run from the repository root,
as a user allowed to capture (root), with tcpdump installed (only recording needs it)::

    .venv/bin/python -m tools.record_captures [--out samples/captures] [--port 5672]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import dpkt

from amqp_codec import NEED_DATA, FrameDecoder, MethodFrame
from amqp_codec.capture import ConnectionKey, Segment, connection_key, read_capture, reassemble

HOST = "127.0.0.1"
FRAME_MAX = 4096  # RabbitMQ's minimum: small files, and a 10 KB body takes three body frames
LARGE_BODY = bytes(range(256)) * 40  # 10240 bytes
NAME = "amqp-codec capture sample ({client})"  # connection_name: finds our connection again


def _names(client: str) -> tuple[str, str, str]:
    base = f"amqp-codec.capture.{client}"
    return base, base + ".queue", base + ".missing"


def pika_session(port: int) -> None:
    """Declares, three publishes (full properties, a multi-frame body), get, consume, acks,
    a 404 channel error, close."""
    import pika  # type: ignore[import-untyped, unused-ignore]
    import pika.exceptions  # type: ignore[import-untyped, unused-ignore]

    exchange, queue, missing = _names("pika")
    params = pika.ConnectionParameters(
        host=HOST,
        port=port,
        credentials=pika.PlainCredentials("guest", "guest"),
        frame_max=FRAME_MAX,
        heartbeat=0,
        client_properties={"connection_name": NAME.format(client="pika")},
    )
    connection = pika.BlockingConnection(params)
    channel = connection.channel()
    channel.exchange_declare(exchange, exchange_type="direct", auto_delete=True)
    channel.queue_declare(queue, exclusive=True, arguments={"x-max-length": 100})
    channel.queue_bind(queue, exchange, routing_key="k")
    channel.basic_publish(
        exchange,
        "k",
        b'{"n": 1}',
        pika.BasicProperties(
            content_type="application/json",
            content_encoding="utf-8",
            headers={"trace": {"hop": 1}, "tags": ["a", "b"], "attempt": 1},
            delivery_mode=2,
            priority=3,
            correlation_id="corr-1",
            reply_to="amqp-codec.replies",
            expiration="60000",
            message_id="msg-1",
            timestamp=1_700_000_000,
            type="sample",
            app_id="amqp-codec",
        ),
    )
    channel.basic_publish(
        exchange, "k", LARGE_BODY, pika.BasicProperties(content_type="application/octet-stream")
    )
    channel.basic_publish(exchange, "k", b"third")
    method, _props, _body = channel.basic_get(queue)
    if method is None:
        raise RuntimeError("pika: basic.get returned nothing")
    channel.basic_ack(method.delivery_tag)
    tags: list[int] = []
    channel.basic_consume(queue, lambda _c, m, _p, _b: tags.append(m.delivery_tag))
    deadline = time.monotonic() + 10
    while len(tags) < 2 and time.monotonic() < deadline:
        connection.process_data_events(time_limit=0.1)
    for tag in tags:
        channel.basic_ack(tag)
    other = connection.channel()
    try:
        other.queue_declare(missing, passive=True)
    except pika.exceptions.ChannelClosedByBroker:
        pass
    else:
        raise RuntimeError("pika: passive declare of a missing queue succeeded")
    channel.close()
    connection.close()


def py_amqp_session(port: int) -> None:
    """The same story with py-amqp (its tune-ok answers the broker's frame_max whatever
    ``frame_max`` says, so the large body goes as one frame)."""
    import amqp

    exchange, queue, missing = _names("py-amqp")
    connection = amqp.Connection(
        f"{HOST}:{port}",
        userid="guest",
        password="guest",
        frame_max=FRAME_MAX,
        heartbeat=0,
        client_properties={"connection_name": NAME.format(client="py-amqp")},
    )
    connection.connect()
    channel = connection.channel()
    channel.exchange_declare(exchange, "direct", auto_delete=True)
    channel.queue_declare(queue, exclusive=True)
    channel.queue_bind(queue, exchange, "k")
    channel.basic_publish(
        amqp.Message(
            b'{"n": 1}',
            content_type="application/json",
            application_headers={"trace": {"hop": 1}, "attempt": 1},
            delivery_mode=2,
            priority=3,
            correlation_id="corr-1",
            message_id="msg-1",
            timestamp=1_700_000_000,
        ),
        exchange,
        "k",
    )
    channel.basic_publish(amqp.Message(LARGE_BODY), exchange, "k")
    channel.basic_publish(amqp.Message(b"third"), exchange, "k")
    message = channel.basic_get(queue)
    if message is None:
        raise RuntimeError("py-amqp: basic.get returned nothing")
    channel.basic_ack(message.delivery_tag)
    received: list[Any] = []
    channel.basic_consume(queue, callback=received.append)
    deadline = time.monotonic() + 10
    while len(received) < 2 and time.monotonic() < deadline:
        with contextlib.suppress(TimeoutError):
            connection.drain_events(timeout=0.2)
    for message in received:
        channel.basic_ack(message.delivery_tag)
    other = connection.channel()
    try:
        other.queue_declare(missing, passive=True)
    except amqp.exceptions.NotFound:
        pass
    else:
        raise RuntimeError("py-amqp: passive declare of a missing queue succeeded")
    channel.close()
    connection.close()


def aio_pika_session(port: int) -> None:
    """The same story with aio-pika (it takes the broker's frame_max: bodies stay one frame)."""

    async def run() -> None:
        import aio_pika

        exchange_name, queue_name, missing = _names("aio-pika")
        connection = await aio_pika.connect(
            f"amqp://guest:guest@{HOST}:{port}/?heartbeat=0",
            client_properties={"connection_name": NAME.format(client="aio-pika")},
        )
        channel = await connection.channel()
        exchange = await channel.declare_exchange(
            exchange_name, aio_pika.ExchangeType.DIRECT, auto_delete=True
        )
        queue = await channel.declare_queue(queue_name, exclusive=True)
        await queue.bind(exchange, "k")
        await exchange.publish(
            aio_pika.Message(
                b'{"n": 1}',
                content_type="application/json",
                headers={"trace": {"hop": 1}, "attempt": 1},
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                priority=3,
                correlation_id="corr-1",
                message_id="msg-1",
            ),
            "k",
        )
        await exchange.publish(aio_pika.Message(LARGE_BODY), "k")
        await exchange.publish(aio_pika.Message(b"third"), "k")
        message = await queue.get(timeout=5)
        await message.ack()
        got = 0
        async with queue.iterator() as messages:
            async for message in messages:
                await message.ack()
                got += 1
                if got == 2:
                    break
        other = await connection.channel()
        try:
            await other.declare_queue(missing, passive=True)
        except aio_pika.exceptions.ChannelNotFoundEntity:
            pass
        else:
            raise RuntimeError("aio-pika: passive declare of a missing queue succeeded")
        await channel.close()
        await connection.close()

    asyncio.run(run())


class Tcpdump:
    """tcpdump writing a capture file for as long as the ``with`` block runs."""

    def __init__(self, path: Path, interface: str, port: int, nano: bool = False) -> None:
        # --immediate-mode and -U: every packet reaches the file before tcpdump is stopped;
        # -B: a 64 MiB kernel buffer, so that other traffic on the port does not make it drop ours
        self.args = ["tcpdump", "-i", interface, "--immediate-mode", "-U", "-B", "65536"]
        self.args += ["-s", "0", "-w", str(path)]
        if nano:
            self.args += ["--time-stamp-precision=nano"]
        self.args += [f"tcp port {port}"]
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Tcpdump:
        self.proc = subprocess.Popen(self.args, stderr=subprocess.PIPE)
        assert self.proc.stderr is not None
        # Wait for "listening on ..." (after a note or two): from then on the capture is armed.
        line = b""
        for _ in range(5):
            line = self.proc.stderr.readline()
            if b"listening" in line or not line:
                break
        if b"listening" not in line:
            self.proc.kill()
            raise RuntimeError(f"tcpdump did not start: {line!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        time.sleep(1.5)  # let the last packets (the broker's RST) reach the capture
        self.proc.send_signal(signal.SIGINT)
        self.proc.communicate(timeout=10)


def _our_client_port(path: Path, client: str, port: int) -> int:
    """The client port of the connection whose connection_name names ``client``."""
    groups: dict[tuple[ConnectionKey, str], list[Segment]] = defaultdict(list)
    for item in read_capture(str(path)):
        if isinstance(item, Segment):
            key, direction = connection_key(item, {port})
            groups[key, direction].append(item)
    wanted = NAME.format(client=client)
    for (key, direction), segments in groups.items():
        if direction != "client":
            continue
        data = b"".join(reassemble(segments).chunks())
        if wanted.encode() in data[:2048]:
            return key[1]
    raise RuntimeError(f"{client}: its connection is not in the capture")


def _filter(src: Path, dst: Path, client_port: int, port: int, nano: bool) -> None:
    """Copy the packets of one connection (tcpdump reading a file needs no privileges)."""
    precision = ["--time-stamp-precision=nano"] if nano else []  # else it writes microseconds
    bpf = f"tcp port {port} and tcp port {client_port}"
    subprocess.run(
        ["tcpdump", "-r", str(src), *precision, "-w", str(dst), bpf],
        check=True,
        capture_output=True,
    )


def _to_pcapng(src: Path, dst: Path) -> None:
    with src.open("rb") as f_in, dst.open("wb") as f_out:
        reader = dpkt.pcap.Reader(f_in)
        writer = dpkt.pcapng.Writer(f_out, snaplen=262144, linktype=reader.datalink())
        for ts, buf in reader:
            writer.writepkt(buf, ts=ts)


def _split(src: Path, first: Path, second: Path) -> None:
    """Split a pcap in two halves by packet count, as a rotating tcpdump would: each half has
    the file header and whole records, copied byte for byte."""
    raw = src.read_bytes()
    order = "<" if raw[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    records = []
    pos = 24
    while pos < len(raw):
        caplen = struct.unpack_from(order + "I", raw, pos + 8)[0]
        records.append(raw[pos : pos + 16 + caplen])
        pos += 16 + caplen
    half = len(records) // 2
    first.write_bytes(raw[:24] + b"".join(records[:half]))
    second.write_bytes(raw[:24] + b"".join(records[half:]))


def check(paths: Sequence[Path], port: int) -> list[str]:
    """Reassemble and decode every stream; one summary line per stream."""
    groups: dict[tuple[ConnectionKey, str], list[Segment]] = defaultdict(list)
    for path in paths:
        for item in read_capture(str(path)):
            if not isinstance(item, Segment):
                raise RuntimeError(f"{path}: {item}")
            key, direction = connection_key(item, {port})
            groups[key, direction].append(item)
    lines = []
    for (key, direction), segments in sorted(groups.items()):
        stream = reassemble(segments)
        if stream.gaps or stream.overlaps_conflicting:
            raise RuntimeError(f"{key} {direction}: gaps or conflicting overlaps")
        decoder = FrameDecoder()
        for chunk in stream.chunks():
            decoder.receive_data(chunk)
        decoder.receive_data(b"")
        names = []
        while (frame := decoder.next_frame()) is not NEED_DATA:
            if isinstance(frame, MethodFrame):
                names.append(frame.method.NAME)
        lines.append(f"{key} {direction}: {stream.data_bytes} bytes, {len(names)} methods")
    return lines


SESSIONS: list[tuple[str, Callable[[int], None], str, bool]] = [
    ("pika", pika_session, "lo", False),
    ("py-amqp", py_amqp_session, "any", False),
    ("aio-pika", aio_pika_session, "lo", True),
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("samples/captures"), metavar="DIR")
    parser.add_argument("--port", type=int, default=5672)
    args = parser.parse_args(argv)
    if shutil.which("tcpdump") is None:
        print("tcpdump is needed to record (apt-get install tcpdump)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        os.chmod(tmp_dir, 0o777)  # tcpdump may drop privileges before opening its output
        for client, session, interface, nano in SESSIONS:
            raw = tmp_dir / f"{client}.raw.pcap"
            with Tcpdump(raw, interface, args.port, nano=nano):
                session(args.port)
            mine = tmp_dir / f"{client}.pcap"
            _filter(raw, mine, _our_client_port(raw, client, args.port), args.port, nano)
            if client == "pika":
                shutil.copyfile(mine, args.out / "pika.pcap")
            elif client == "py-amqp":
                _to_pcapng(mine, args.out / "py-amqp.pcapng")
            else:
                _split(mine, args.out / "aio-pika.0.pcap", args.out / "aio-pika.1.pcap")
    files = sorted(args.out.glob("*.pcap*"))
    for line in check(files, args.port):
        print(line)
    for path in files:
        print(f"{path}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
