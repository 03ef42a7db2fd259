"""Real clients (pika, py-amqp, aio-pika, kombu) against examples/amqp_broker.py, the small
in-memory broker built on the connection layer's server role."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import amqp
import pika
import pytest

from examples.amqp_broker import serve, topic_matches

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """The example broker on a free port, in a thread with its own event loop."""
    ready = threading.Event()
    found: list[int] = []
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def run() -> None:
        server = await serve("127.0.0.1", 0)
        found.append(server.sockets[0].getsockname()[1])
        ready.set()
        await stop.wait()
        server.close()

    thread = threading.Thread(target=lambda: loop.run_until_complete(run()), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield found[0]
    loop.call_soon_threadsafe(stop.set)
    thread.join(5)


@pytest.mark.parametrize(
    ("pattern", "key", "expected"),
    [
        ("a.*", "a.b", True),
        ("a.*", "a.b.c", False),
        ("a.#", "a", True),
        ("#.c", "a.b.c", True),
        ("*.b.#", "x.b", True),
        ("a.b", "a.c", False),
        ("#", "", True),
    ],
)
def test_topic_matching(pattern: str, key: str, expected: bool) -> None:
    assert topic_matches(pattern, key) is expected


def test_pika(port: int) -> None:
    conn = pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", port, heartbeat=1))
    ch = conn.channel()
    ch.confirm_delivery()
    ch.exchange_declare("logs", "topic")
    queue = ch.queue_declare("", exclusive=True).method.queue
    ch.queue_bind(queue, "logs", "app.*")
    ch.basic_publish("logs", "app.start", b"hello", pika.BasicProperties(content_type="text/plain"))
    ch.basic_publish("logs", "db.start", b"not routed")
    with pytest.raises(pika.exceptions.UnroutableError):
        ch.basic_publish("logs", "db.start", b"returned", mandatory=True)
    method, props, body = ch.basic_get(queue)
    assert (body, props.content_type, method.routing_key) == (b"hello", "text/plain", "app.start")
    ch.basic_ack(method.delivery_tag)
    assert ch.basic_get(queue) == (None, None, None)
    # Consume with prefetch 1; a rejected message comes back redelivered.
    ch.basic_qos(prefetch_count=1)
    for n in range(3):
        ch.basic_publish("", queue, b"m%d" % n)
    seen: list[tuple[bytes, bool]] = []

    def on_message(channel, method, _props, body) -> None:
        seen.append((body, method.redelivered))
        if body == b"m1" and not method.redelivered:
            channel.basic_reject(method.delivery_tag, requeue=True)
        else:
            channel.basic_ack(method.delivery_tag)
        if len(seen) == 4:
            channel.stop_consuming()

    ch.basic_consume(queue, on_message)
    ch.start_consuming()
    assert seen == [(b"m0", False), (b"m1", False), (b"m1", True), (b"m2", False)]
    # A channel error closes that channel; a new one works.
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        ch.queue_declare("no-such-queue", passive=True)
    assert info.value.reply_code == 404
    other = conn.channel()
    assert other.queue_declare("", exclusive=True).method.queue.startswith("amq.gen-")
    conn.sleep(3)  # three heartbeat intervals: both sides send heartbeats and stay
    assert conn.is_open
    other.queue_declare("", exclusive=True)
    conn.close()


def test_py_amqp(port: int) -> None:
    with amqp.Connection(f"127.0.0.1:{port}", heartbeat=0) as conn:
        ch = conn.channel()
        ch.confirm_select()
        ch.exchange_declare("fan", "fanout", auto_delete=False)
        first, _, _ = ch.queue_declare("", exclusive=True)
        second, _, _ = ch.queue_declare("", exclusive=True)
        ch.queue_bind(first, "fan")
        ch.queue_bind(second, "fan")
        ch.basic_publish(amqp.Message(b"to both", application_headers={"k": 1}), exchange="fan")
        for name in (first, second):
            message = ch.basic_get(name)
            assert message.body == b"to both" and message.headers["k"] == 1
            ch.basic_ack(message.delivery_tag)
        ch.basic_publish(amqp.Message(b"nacked"), exchange="fan")
        message = ch.basic_get(first)
        ch.basic_reject(message.delivery_tag, requeue=True)
        again = ch.basic_get(first)
        assert again.body == b"nacked" and again.delivery_info["redelivered"]
        ch.basic_ack(again.delivery_tag)
        with pytest.raises(amqp.exceptions.NotFound):
            ch.basic_get("missing")
        ch2 = conn.channel()
        assert ch2.queue_declare("", exclusive=True)[0].startswith("amq.gen-")


def test_aio_pika(port: int) -> None:
    import aio_pika

    async def scenario() -> list[bytes]:
        conn = await aio_pika.connect(f"amqp://guest:guest@127.0.0.1:{port}/")
        async with conn:
            channel = await conn.channel(publisher_confirms=True)
            exchange = await channel.declare_exchange("direct-x", aio_pika.ExchangeType.DIRECT)
            queue = await channel.declare_queue(exclusive=True)
            await queue.bind(exchange, "k")
            for n in range(3):
                await exchange.publish(aio_pika.Message(b"a%d" % n), routing_key="k")
            got = []
            async with queue.iterator() as messages:
                async for message in messages:
                    async with message.process():
                        got.append(message.body)
                    if len(got) == 3:
                        break
            return got

    assert asyncio.run(scenario()) == [b"a0", b"a1", b"a2"]


def test_kombu(port: int) -> None:
    kombu = pytest.importorskip("kombu")
    with kombu.Connection(f"amqp://guest:guest@127.0.0.1:{port}//") as conn:
        queue = conn.SimpleQueue("kombu-jobs")
        queue.put({"job": 1})
        message = queue.get(timeout=5)
        assert message.payload == {"job": 1}
        message.ack()
        queue.close()


def test_a_wrong_password_is_refused(port: int) -> None:
    credentials = pika.PlainCredentials("guest", "wrong")
    with pytest.raises(pika.exceptions.ProbableAuthenticationError):
        pika.BlockingConnection(
            pika.ConnectionParameters("127.0.0.1", port, credentials=credentials)
        )
    time.sleep(0)  # the broker is still up for the next test
