"""Record samples/pika-session.{client.bin,server.bin,pcap} from a real broker.

Runs one pika BlockingConnection through RecordingProxy (on an ephemeral
port) against a RabbitMQ broker, exercising a representative set of AMQP
0-9-1 methods, then copies the recording into samples/.  Run from the
repository root::

    .venv/bin/python -m tools.record_pika_sample [--upstream HOST:PORT] [--out DIR]

Needs a broker that accepts guest/guest (RabbitMQ's default on localhost).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import decimal
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pika  # type: ignore[import-untyped, unused-ignore]
import pika.exceptions  # type: ignore[import-untyped, unused-ignore]

from tools.record_proxy import RecordingProxy

EXCHANGE = "amqp-codec.sample"
QUEUE = "amqp-codec.sample.queue"
CONSUMER_TAG = "amqp-codec-sample-consumer"
FRAME_MAX = 4096  # RabbitMQ's minimum: keeps the sample small, splits bodies
HEARTBEAT = 2  # seconds; a short idle pause near the end yields heartbeat frames
LARGE_BODY = bytes(range(256)) * 40  # 10240 bytes: three body frames at 4096

# One value of every field-table type pika can encode; pika 1.4 picks the tag
# from the Python type (it has no encoding for float).
EXCHANGE_ARGUMENTS: dict[str, Any] = {
    "x-str": "h\u00e9llo",  # S (long string, UTF-8)
    "x-int": 42,  # I (signed 32-bit)
    "x-negative": -7,  # I
    "x-big-int": 2**40,  # l (signed 64-bit, as the value is > 2**31)
    "x-bool": True,  # t
    "x-decimal": decimal.Decimal("3.14"),  # D (scale 2, value 314)
    "x-timestamp": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),  # T
    "x-bytes": b"\x00\x01\xfe\xff",  # x (byte array)
    "x-void": None,  # V
    "x-table": {"nested": {"depth": 2}, "flag": False},  # F
    "x-array": [1, "two", 2**33, True, None, {"k": "v"}, [3]],  # A
}
QUEUE_ARGUMENTS: dict[str, Any] = {"x-max-length": 10, "x-message-ttl": 60_000}


def _full_properties() -> Any:
    """Every basic property set."""
    return pika.BasicProperties(
        content_type="application/json",
        content_encoding="utf-8",
        headers={"trace": {"hop": 1, "path": ["a", "b"]}, "attempt": 1, "big": 2**35},
        delivery_mode=2,
        priority=5,
        correlation_id="corr-0001",
        reply_to="amqp-codec.sample.replies",
        expiration="60000",
        message_id="msg-0001",
        timestamp=1_700_000_000,
        type="sample.event",
        user_id="guest",  # RabbitMQ checks it equals the login user
        app_id="amqp-codec-sample",
    )


def run_scenario(port: int) -> dict[str, Any]:
    """Run the session against 127.0.0.1:port; return the server properties."""
    params = pika.ConnectionParameters(
        host="127.0.0.1",
        port=port,
        credentials=pika.PlainCredentials("guest", "guest"),
        frame_max=FRAME_MAX,
        heartbeat=HEARTBEAT,
        client_properties={"connection_name": "amqp-codec sample"},
    )
    connection = pika.BlockingConnection(params)
    server_properties: dict[str, Any] = dict(connection._impl.server_properties)
    channel = connection.channel()
    channel.exchange_declare(
        EXCHANGE,
        exchange_type="topic",
        durable=False,
        auto_delete=True,
        arguments=EXCHANGE_ARGUMENTS,
    )
    channel.queue_declare(QUEUE, exclusive=True, arguments=QUEUE_ARGUMENTS)
    channel.queue_bind(QUEUE, EXCHANGE, routing_key="sample.#")

    # Three plain publishes: empty body with every property, small body with
    # a few, large body (split over three body frames) with others.
    channel.basic_publish(EXCHANGE, "sample.empty", b"", _full_properties())
    channel.basic_publish(
        EXCHANGE,
        "sample.small",
        b'{"hello": "world"}',
        pika.BasicProperties(content_type="application/json", headers={"n": 2}),
    )
    channel.basic_publish(
        EXCHANGE,
        "sample.large",
        LARGE_BODY,
        pika.BasicProperties(
            content_type="application/octet-stream",
            delivery_mode=1,
            priority=0,
            message_id="msg-0003",
            timestamp=1_700_000_003,
        ),
    )

    # Consume all three with prefetch 3, leaving them unacked.
    channel.basic_qos(prefetch_count=3)
    delivered: list[int] = []

    def on_message(_ch: Any, method: Any, _props: Any, _body: bytes) -> None:
        delivered.append(method.delivery_tag)

    channel.basic_consume(QUEUE, on_message, consumer_tag=CONSUMER_TAG)
    deadline = time.monotonic() + 10
    while len(delivered) < 3 and time.monotonic() < deadline:
        connection.process_data_events(time_limit=0.1)
    if len(delivered) != 3:
        raise RuntimeError(f"expected 3 deliveries, got {delivered}")

    # The consumer is at its prefetch limit, so a 4th message stays in the
    # queue for basic.get; the second basic.get finds the queue empty.
    channel.basic_publish(EXCHANGE, "sample.get", b"fetch me")
    method, _props, _body = channel.basic_get(QUEUE)
    if method is None:
        raise RuntimeError("basic.get returned nothing")
    if channel.basic_get(QUEUE)[0] is not None:
        raise RuntimeError("second basic.get was not empty")
    channel.basic_ack(method.delivery_tag, multiple=True)  # acks all four
    channel.basic_cancel(CONSUMER_TAG)

    # Publisher confirms: a routed publish (basic.ack) and an unroutable
    # mandatory one (basic.return, then basic.ack).
    channel.confirm_delivery()
    channel.basic_publish(EXCHANGE, "sample.confirmed", b"confirmed")
    try:
        channel.basic_publish(EXCHANGE, "nowhere", b"returned", mandatory=True)
    except pika.exceptions.UnroutableError:
        pass
    else:
        raise RuntimeError("unroutable mandatory publish was not returned")

    connection.sleep(HEARTBEAT + 0.5)  # idle: both sides send heartbeats
    channel.close()
    connection.close()
    return server_properties


async def record(upstream: tuple[str, int], out_dir: Path) -> dict[str, Any]:
    """Record the scenario into out_dir/pika-session.*; return server properties."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        proxy = RecordingProxy(
            tmp_dir, prefix="pika", upstream=upstream, pcap_path=tmp_dir / "pika.pcap"
        )
        async with proxy:
            server_properties = await asyncio.to_thread(run_scenario, proxy.port)
            async with asyncio.timeout(10):
                await proxy.wait_finished(1)
        (conn,) = proxy.connections
        # RabbitMQ closes with SO_LINGER 0, i.e. an RST after connection.close-ok.
        if conn.client_reset or len(conn.errors) > int(conn.server_reset):
            raise RuntimeError(f"proxy errors: {conn.errors}")
        out_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(conn.client_path, out_dir / "pika-session.client.bin")
        shutil.copyfile(conn.server_path, out_dir / "pika-session.server.bin")
        shutil.copyfile(tmp_dir / "pika.pcap", out_dir / "pika-session.pcap")
    return server_properties


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", default="127.0.0.1:5672", metavar="HOST:PORT")
    parser.add_argument("--out", type=Path, default=Path("samples"), metavar="DIR")
    args = parser.parse_args(argv)
    host, _, port = args.upstream.rpartition(":")
    props = asyncio.run(record((host, int(port)), args.out))
    print(f"pika {pika.__version__}")
    print(f"{_text(props.get('product'))} {_text(props.get('version'))}")
    for name in ("client.bin", "server.bin", "pcap"):
        path = args.out / f"pika-session.{name}"
        print(f"{path}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
