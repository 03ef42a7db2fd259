"""Record pika, py-amqp and aio-pika sessions with a real broker into tests/data/.

Each client library runs the same scenario over one connection through
:class:`tools.record_proxy.RecordingProxy`, which writes the exact bytes of both directions:

* ``tests/data/<client>.client.bin`` -- everything the client sent (protocol header first);
* ``tests/data/<client>.server.bin`` -- everything the broker sent;
* ``tests/data/recorded-clients.json`` -- what the scenario sent, as plain JSON, for the test
  to compare decoded values with (plus the client and broker versions).

The scenario, at frame_max 4096 and without heartbeats:

1. channel 1: exchange.declare (topic) with an argument table of every type the client can
   encode, queue.declare with x-arguments, queue.bind; three publishes (empty body with all
   13 properties the clients support, a small one, a 10240-byte one split over three body
   frames); basic.qos 3, basic.consume, then ack, nack and reject one delivery each,
   basic.cancel; a publish fetched with basic.get and acked, then basic.get-empty;
2. channel 2: confirm.select, a confirmed publish, an unroutable mandatory one
   (basic.return, then basic.ack);
3. channel 3: tx.select, a publish, tx.commit;
4. channel 4: a passive queue.declare of a missing queue (channel.close 404);
5. channel.close and connection.close.

Run from the repository root, with the broker on 127.0.0.1:5672 (guest/guest)::

    .venv/bin/python -m tools.record_clients [--out tests/data] [--pcap /tmp/clients.pcap]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import decimal
import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import aio_pika
import aio_pika.exceptions
import amqp
import amqp.exceptions
import amqp.spec
import pika  # type: ignore[import-untyped, unused-ignore]
import pika.exceptions  # type: ignore[import-untyped, unused-ignore]

from tools.record_proxy import RecordingProxy

CLIENTS = ("pika", "py-amqp", "aio-pika")
FRAME_MAX = 4096  # RabbitMQ's minimum: keeps the files small and splits the large body
EXCHANGE = "amqp-codec.recording"
QUEUE = "amqp-codec.recording.queue"
MISSING_QUEUE = "amqp-codec.recording.missing"
CONSUMER_TAG = "amqp-codec-recording"
BINDING_KEY = "rec.#"
QUEUE_ARGUMENTS: dict[str, Any] = {"x-max-length": 100, "x-message-ttl": 60_000}
#: aiormq (under aio-pika) always accepts the broker's frame_max (131072), so its large body
#: is larger: 131164 bytes, body frames of 131064 + 100. The others split 10240 bytes at 4096.
LARGE_BODY = {"pika": 10240, "py-amqp": 10240, "aio-pika": 131_164}


def exchange_arguments(client: str) -> dict[str, Any]:
    """One value of every type ``client`` can put in a table (each library picks the tags)."""
    arguments: dict[str, Any] = {
        "x-str": "h\u00e9llo",
        "x-int": 42,
        "x-negative": -7,
        "x-short": -1000,
        "x-wide": 100_000,
        "x-big-int": 2**40,
        "x-bool": True,
        "x-decimal": decimal.Decimal("3.14"),
        "x-timestamp": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
        "x-void": None,
        "x-table": {"nested": {"depth": 2}, "flag": False},
        "x-array": [1, "two", 2**33, True, None, {"k": "v"}, [3]],
    }
    if client != "pika":  # pika has no encoding for float
        arguments["x-float"] = -2.5
    if client != "aio-pika":  # pamqp has no encoding for bytes
        arguments["x-bytes"] = b"\x00\x01\xfe\xff"
    return arguments


#: The basic properties in wire order.
FIELD_ORDER = (
    "content_type", "content_encoding", "headers", "delivery_mode", "priority",
    "correlation_id", "reply_to", "expiration", "message_id", "timestamp", "type", "user_id",
    "app_id", "cluster_id",
)  # fmt: skip

#: Every basic property the three clients can set (none of them sends cluster-id), by the
#: codec's field names; ``timestamp`` in seconds, ``headers`` with nested table and array.
FULL_PROPERTIES: dict[str, Any] = {
    "content_type": "application/json",
    "content_encoding": "utf-8",
    "headers": {"trace": {"hop": 1, "path": ["a", "b"]}, "attempt": 1, "big": 2**35},
    "delivery_mode": 2,
    "priority": 5,
    "correlation_id": "corr-0001",
    "reply_to": "amqp-codec.recording.replies",
    "expiration": "60000",
    "message_id": "msg-0001",
    "timestamp": 1_700_000_000,
    "type": "recording.event",
    "user_id": "guest",  # RabbitMQ checks it equals the login user
    "app_id": "amqp-codec-recording",
}


def publishes(client: str) -> list[tuple[str, dict[str, Any], bytes, bool]]:
    """(routing key, properties, body, mandatory) in publishing order (phases as above)."""
    large = bytes(range(256)) * (LARGE_BODY[client] // 256) + bytes(LARGE_BODY[client] % 256)
    return [
        ("rec.full", FULL_PROPERTIES, b"", False),
        ("rec.small", {"content_type": "application/json", "headers": {"n": 2}, "message_id": "m2"}, b'{"a": 1}', False),
        ("rec.large", {"content_type": "application/octet-stream", "message_id": "m3"}, large, False),
        ("rec.get", {"message_id": "g1"}, b"fetch me", False),
        ("rec.confirmed", {"message_id": "c1"}, b"confirmed", False),
        ("nowhere", {"message_id": "r1"}, b"returned", True),
        ("rec.tx", {"message_id": "t1"}, b"in a transaction", False),
    ]  # fmt: skip


# -- pika (BlockingConnection, in a worker thread) -----------------------------------------


def _pika_properties(props: dict[str, Any]) -> Any:
    return pika.BasicProperties(**props)


def run_pika(port: int) -> None:
    """The scenario with pika's BlockingConnection."""
    params = pika.ConnectionParameters(
        host="127.0.0.1", port=port, frame_max=FRAME_MAX, heartbeat=0
    )
    connection = pika.BlockingConnection(params)
    sent = publishes("pika")
    ch = connection.channel()
    ch.exchange_declare(EXCHANGE, "topic", auto_delete=True, arguments=exchange_arguments("pika"))
    ch.queue_declare(QUEUE, exclusive=True, arguments=QUEUE_ARGUMENTS)
    ch.queue_bind(QUEUE, EXCHANGE, routing_key=BINDING_KEY)
    for key, props, body, _ in sent[:3]:
        ch.basic_publish(EXCHANGE, key, body, _pika_properties(props))
    ch.basic_qos(prefetch_count=3)
    tags: list[int] = []
    ch.basic_consume(
        QUEUE,
        lambda _c, method, _p, _b: tags.append(method.delivery_tag),
        consumer_tag=CONSUMER_TAG,
    )
    _wait(lambda: len(tags) == 3, lambda: connection.process_data_events(time_limit=0.1))
    ch.basic_ack(tags[0])
    ch.basic_nack(tags[1], requeue=False)
    ch.basic_reject(tags[2], requeue=False)
    ch.basic_cancel(CONSUMER_TAG)
    key, props, body, _ = sent[3]
    ch.basic_publish(EXCHANGE, key, body, _pika_properties(props))
    method, _props, _body = ch.basic_get(QUEUE)
    ch.basic_ack(method.delivery_tag)
    _check(ch.basic_get(QUEUE)[0] is None, "second basic.get was not empty")

    confirms = connection.channel()
    confirms.confirm_delivery()
    for key, props, body, mandatory in sent[4:6]:
        try:
            confirms.basic_publish(EXCHANGE, key, body, _pika_properties(props), mandatory)
        except pika.exceptions.UnroutableError:
            _check(mandatory, "a routable publish came back")
    tx = connection.channel()
    tx.tx_select()
    key, props, body, _ = sent[6]
    tx.basic_publish(EXCHANGE, key, body, _pika_properties(props))
    tx.tx_commit()
    failing = connection.channel()
    try:
        failing.queue_declare(MISSING_QUEUE, passive=True)
    except pika.exceptions.ChannelClosedByBroker as exc:
        _check(exc.reply_code == 404, f"expected 404, got {exc}")
    else:
        raise RuntimeError("the missing queue was found")
    for each in (ch, confirms, tx):
        each.close()
    connection.close()


# -- py-amqp (synchronous, in a worker thread) ---------------------------------------------


def _amqp_message(props: dict[str, Any], body: bytes) -> amqp.Message:
    renamed = {("application_headers" if k == "headers" else k): v for k, v in props.items()}
    return amqp.Message(body, **renamed)


class _PyAmqpConnection(amqp.Connection):  # type: ignore[misc]
    """py-amqp 5.4 answers tune with the broker's frame_max, ignoring its own ``frame_max``:
    take the smaller of the two, as the spec says a client does."""

    def _on_tune(
        self, channel_max: int, frame_max: int, server_heartbeat: int, argsig: str = "BlB"
    ) -> None:
        super()._on_tune(channel_max, min(frame_max, FRAME_MAX), server_heartbeat, argsig)


def run_py_amqp(port: int) -> None:
    """The scenario with py-amqp (which logs in with AMQPLAIN)."""
    connection = _PyAmqpConnection(f"127.0.0.1:{port}", frame_max=FRAME_MAX, heartbeat=0)
    sent = publishes("py-amqp")
    connection.connect()
    ch = connection.channel()
    ch.exchange_declare(
        EXCHANGE, "topic", auto_delete=True, arguments=exchange_arguments("py-amqp")
    )
    # py-amqp's default auto_delete=True would drop the queue at basic.cancel.
    ch.queue_declare(QUEUE, exclusive=True, auto_delete=False, arguments=QUEUE_ARGUMENTS)
    ch.queue_bind(QUEUE, EXCHANGE, routing_key=BINDING_KEY)
    for key, props, body, _ in sent[:3]:
        ch.basic_publish(_amqp_message(props, body), EXCHANGE, key)
    ch.basic_qos(0, 3, False)
    tags: list[int] = []
    ch.basic_consume(
        QUEUE, consumer_tag=CONSUMER_TAG, callback=lambda m: tags.append(m.delivery_tag)
    )
    _wait(lambda: len(tags) == 3, lambda: _drain(connection))
    ch.basic_ack(tags[0])
    # py-amqp has no basic_nack: send it by signature (multiple=False, requeue=False).
    ch.send_method(amqp.spec.Basic.Nack, "Lbb", (tags[1], False, False))
    ch.basic_reject(tags[2], requeue=False)
    ch.basic_cancel(CONSUMER_TAG)
    key, props, body, _ = sent[3]
    ch.basic_publish(_amqp_message(props, body), EXCHANGE, key)
    got = ch.basic_get(QUEUE)
    ch.basic_ack(got.delivery_tag)
    _check(ch.basic_get(QUEUE) is None, "second basic.get was not empty")

    confirms = connection.channel()
    confirms.confirm_select()
    events: list[str] = []
    confirms.events["basic_ack"].add(lambda *_: events.append("ack"))
    confirms.events["basic_return"].add(lambda *_: events.append("return"))
    for key, props, body, mandatory in sent[4:6]:
        confirms.basic_publish(_amqp_message(props, body), EXCHANGE, key, mandatory=mandatory)
    _wait(lambda: sorted(events) == ["ack", "ack", "return"], lambda: _drain(connection))
    tx = connection.channel()
    tx.tx_select()
    key, props, body, _ = sent[6]
    tx.basic_publish(_amqp_message(props, body), EXCHANGE, key)
    tx.tx_commit()
    failing = connection.channel()
    try:
        failing.queue_declare(MISSING_QUEUE, passive=True)
    except amqp.exceptions.NotFound:
        pass  # the 404 the scenario asks for
    else:
        raise RuntimeError("the missing queue was found")
    for each in (ch, confirms, tx):
        each.close()
    connection.close()


def _drain(connection: amqp.Connection) -> None:
    with contextlib.suppress(TimeoutError):
        connection.drain_events(timeout=0.1)


# -- aio-pika (asyncio, on the proxy's loop) -----------------------------------------------


#: Properties aio-pika's Message sets when not given (it also makes up a message-id, which
#: is why every message here has one).
AIO_PIKA_DEFAULTS: dict[str, Any] = {"headers": {}, "delivery_mode": 1, "priority": 0}


def _aio_message(props: dict[str, Any], body: bytes) -> aio_pika.Message:
    kwargs = dict(props)
    if "expiration" in kwargs:  # aio-pika takes seconds and writes milliseconds
        kwargs["expiration"] = int(kwargs["expiration"]) // 1000
    return aio_pika.Message(body, **kwargs)


async def run_aio_pika(port: int) -> None:
    """The scenario with aio-pika (aiormq and pamqp underneath)."""
    url = f"amqp://guest:guest@127.0.0.1:{port}/?frame_max={FRAME_MAX}&heartbeat=0"
    connection = await aio_pika.connect(url)
    sent = publishes("aio-pika")
    ch = await connection.channel(publisher_confirms=False)
    exchange = await ch.declare_exchange(
        EXCHANGE, "topic", auto_delete=True, arguments=exchange_arguments("aio-pika")
    )
    queue = await ch.declare_queue(QUEUE, exclusive=True, arguments=QUEUE_ARGUMENTS)
    await queue.bind(exchange, BINDING_KEY)
    for key, props, body, _ in sent[:3]:
        await exchange.publish(_aio_message(props, body), key, mandatory=False)
    await ch.set_qos(prefetch_count=3)
    delivered: asyncio.Queue[aio_pika.abc.AbstractIncomingMessage] = asyncio.Queue()
    await queue.consume(delivered.put, consumer_tag=CONSUMER_TAG)
    async with asyncio.timeout(10):
        first, second, third = [await delivered.get() for _ in range(3)]
    await first.ack()
    await second.nack(requeue=False)
    await third.reject(requeue=False)
    await queue.cancel(CONSUMER_TAG)
    key, props, body, _ = sent[3]
    await exchange.publish(_aio_message(props, body), key, mandatory=False)
    got = await queue.get(no_ack=False, fail=True)
    await got.ack()
    _check(await queue.get(fail=False) is None, "second basic.get was not empty")

    confirms = await connection.channel(publisher_confirms=True)
    confirm_exchange = await confirms.get_exchange(EXCHANGE, ensure=False)
    for key, props, body, mandatory in sent[4:6]:
        try:
            await confirm_exchange.publish(_aio_message(props, body), key, mandatory=mandatory)
        except aio_pika.exceptions.DeliveryError:
            _check(mandatory, "a routable publish came back")
    tx_channel = await connection.channel(publisher_confirms=False)
    tx = tx_channel.transaction()
    await tx.select()
    key, props, body, _ = sent[6]
    tx_exchange = await tx_channel.get_exchange(EXCHANGE, ensure=False)
    await tx_exchange.publish(_aio_message(props, body), key, mandatory=False)
    await tx.commit()
    failing = await connection.channel()
    try:
        await failing.declare_queue(MISSING_QUEUE, passive=True)
    except aio_pika.exceptions.ChannelNotFoundEntity:
        pass  # the 404 the scenario asks for
    else:
        raise RuntimeError("the missing queue was found")
    for each in (ch, confirms, tx_channel):
        await each.close()
    await connection.close()


# -- recording -----------------------------------------------------------------------------


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise RuntimeError(message)


def _wait(done: Callable[[], bool], step: Callable[[], object], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError("the broker did not answer in time")
        step()


async def record_one(client: str, upstream: tuple[str, int], out: Path, pcap: Path | None) -> None:
    """Run ``client``'s scenario through the proxy; copy its two streams into ``out``."""
    with tempfile.TemporaryDirectory() as tmp:
        proxy = RecordingProxy(tmp, prefix=client, upstream=upstream, pcap_path=pcap)
        async with proxy:
            if client == "pika":
                await asyncio.to_thread(run_pika, proxy.port)
            elif client == "py-amqp":
                await asyncio.to_thread(run_py_amqp, proxy.port)
            else:
                await run_aio_pika(proxy.port)
            async with asyncio.timeout(10):
                await proxy.wait_finished(1)
        (conn,) = proxy.connections
        # RabbitMQ closes with SO_LINGER 0, i.e. an RST after connection.close-ok.
        if conn.client_reset or len(conn.errors) > int(conn.server_reset):
            raise RuntimeError(f"{client}: proxy errors: {conn.errors}")
        shutil.copyfile(conn.client_path, out / f"{client}.client.bin")
        shutil.copyfile(conn.server_path, out / f"{client}.server.bin")


def plain(value: Any) -> Any:
    """``value`` as JSON: bytes, decimals and times become one-key objects."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, bytes):
        return {"$bytes": value.hex()}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, datetime.datetime):
        return {"$timestamp": int(value.timestamp())}
    return value


def _sent_properties(client: str, props: dict[str, Any]) -> dict[str, Any]:
    """The properties ``client`` puts on the wire for ``props``, in the codec's field order."""
    merged = {**AIO_PIKA_DEFAULTS, **props} if client == "aio-pika" else props
    return {name: merged[name] for name in FIELD_ORDER if name in merged}


def _timestamp_as_time(props: dict[str, Any]) -> dict[str, Any]:
    if "timestamp" not in props:
        return props
    when = datetime.datetime.fromtimestamp(props["timestamp"], datetime.UTC)
    return {**props, "timestamp": when}


def expectations(broker: str) -> dict[str, Any]:
    """What every recording's client sent, for tests/test_recorded_clients.py."""
    return {
        "broker": broker,
        "frame_max": FRAME_MAX,
        "exchange": EXCHANGE,
        "queue": QUEUE,
        "queue_arguments": plain(QUEUE_ARGUMENTS),
        "missing_queue": MISSING_QUEUE,
        "clients": {
            client: {
                "version": version({"py-amqp": "amqp"}.get(client, client)),
                "exchange_arguments": plain(exchange_arguments(client)),
                "publishes": [
                    {
                        "exchange": EXCHANGE,
                        "routing_key": key,
                        "mandatory": mandatory,
                        "properties": plain(_timestamp_as_time(_sent_properties(client, props))),
                        "body_size": len(body),
                        "body_sha256": hashlib.sha256(body).hexdigest(),
                    }
                    for key, props, body, mandatory in publishes(client)
                ],
            }
            for client in CLIENTS
        },
    }


def broker_version(server_bin: Path) -> str:
    """ "RabbitMQ 3.10.8" from connection.start's server-properties in a recording."""
    from amqp_codec import FrameDecoder, MethodFrame

    decoder = FrameDecoder()
    decoder.receive_data(server_bin.read_bytes())
    start = next(decoder)
    assert isinstance(start, MethodFrame)
    props = start.method.server_properties  # type: ignore[attr-defined]
    return f"{props['product']} {props['version']}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", default="127.0.0.1:5672", metavar="HOST:PORT")
    parser.add_argument("--out", type=Path, default=Path("tests/data"), metavar="DIR")
    parser.add_argument("--pcap", type=Path, metavar="DIR", help="also write <client>.pcap here")
    parser.add_argument("clients", nargs="*", metavar="CLIENT", help=f"any of {CLIENTS}")
    args = parser.parse_args(argv)
    args.clients = args.clients or list(CLIENTS)
    if unknown := set(args.clients) - set(CLIENTS):
        parser.error(f"unknown client(s) {sorted(unknown)}; choose from {CLIENTS}")
    host, _, port = args.upstream.rpartition(":")
    args.out.mkdir(parents=True, exist_ok=True)
    for client in args.clients:
        pcap = args.pcap / f"{client}.pcap" if args.pcap else None
        asyncio.run(record_one(client, (host, int(port)), args.out, pcap))
        for side in ("client", "server"):
            path = args.out / f"{client}.{side}.bin"
            print(f"{path}: {path.stat().st_size} bytes")
    broker = broker_version(args.out / f"{args.clients[0]}.server.bin")
    expected = expectations(broker)
    target = args.out / "recorded-clients.json"
    target.write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")
    print(
        f"{target}: {broker}; "
        + ", ".join(f"{c} {v['version']}" for c, v in expected["clients"].items())
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
