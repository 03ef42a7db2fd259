"""Live: an AMQP 0-8 connection to RabbitMQ through the example client (``spec=v0_8``).

RabbitMQ still accepts 0-8 clients (``AMQP 1 1 8 0``) and speaks its own 0-8 dialect to them,
with queue.unbind and the synchronous basic.recover from amqp-rabbitmq-0.8.json.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import pytest
from broker_support import connected, run, unique

import amqp_codec as ac
from amqp_codec import FieldTable, FrameDecoder, Tagged, Timestamp, encode_frame, v0_8
from amqp_codec.v0_8 import Basic, BasicProperties, Queue
from amqp_codec.v0_9_1 import Basic as Basic091
from amqp_codec.v0_9_1 import BasicProperties as BasicProperties091
from amqp_codec.v0_9_1 import Queue as Queue091
from examples.amqp_client import ConnectionClosed
from tools.record_proxy import RecordingProxy

pytestmark = [pytest.mark.broker, pytest.mark.usefixtures("broker")]

#: One header of each 0-8 field-table type (S I D T F).
HEADERS_0_8 = FieldTable(
    [
        ("s", "naïve ✓"),
        ("i", -(2**31)),
        ("d", Decimal("-3.14159")),
        ("t", Timestamp(1_700_000_000)),
        ("f", FieldTable([("inner", "x"), ("n", 2**31 - 1)])),
    ]
)


def properties_0_8() -> BasicProperties:
    """Every one of 0-8's 14 basic properties (user-id must be the login user)."""
    return BasicProperties(
        content_type="text/plain",
        content_encoding="identity",
        headers=HEADERS_0_8,
        delivery_mode=2,
        priority=5,
        correlation_id="corr-8",
        reply_to="reply-8",
        expiration="600000",
        message_id="msg-8",
        timestamp=Timestamp(1_700_000_123),
        type="example.type",
        user_id="guest",
        app_id="amqp-codec-tests",
        cluster_id="cluster-8",
    )


def test_0_8_declare_publish_consume_ack_close() -> None:
    async def scenario() -> None:
        queue = unique("q08")
        async with connected(spec=v0_8) as (client, ch):
            assert client.decoder.spec is v0_8.SPEC
            assert client.server_properties["product"] == "RabbitMQ"
            ok = await ch.call(Queue.Declare(queue=queue, exclusive=True))
            assert ok == Queue.DeclareOk(queue=queue, message_count=0, consumer_count=0)
            # RabbitMQ's 0-8 additions: queue.unbind (50.50) and basic.recover (60.110).
            await ch.call(Queue.Bind(queue=queue, exchange="amq.direct", routing_key=queue))
            assert (
                await ch.call(Queue.Unbind(queue=queue, exchange="amq.direct", routing_key=queue))
                == Queue.UnbindOk()
            )
            properties = properties_0_8()
            bodies = [b"", b"one", bytes(range(256)) * 40]
            for body in bodies:
                await ch.publish(Basic.Publish(routing_key=queue), properties, body)
            ok = await ch.call(Basic.Consume(queue=queue, consumer_tag="c8"))
            assert ok == Basic.ConsumeOk(consumer_tag="c8")
            for n, body in enumerate(bodies, 1):
                delivery = await ch.next_event()
                assert isinstance(delivery, ac.Message)
                assert isinstance(delivery.method, Basic.Deliver)
                assert delivery.method.delivery_tag == n
                assert delivery.properties == properties
                assert delivery.properties.headers.entries() == HEADERS_0_8.entries()
                assert delivery.body == body
            ch.send(Basic.Ack(delivery_tag=len(bodies), multiple=True))
            assert await ch.call(Basic.Recover(requeue=True)) == Basic.RecoverOk()
            assert await ch.call(Basic.Cancel(consumer_tag="c8")) == Basic.CancelOk("c8")
            got = await ch.call(Basic.Get(queue=queue, no_ack=True))
            assert isinstance(got, Basic.GetEmpty)  # all acked: nothing was requeued
            await ch.close()

    run(scenario())


def test_0_8_consumer_of_extended_headers() -> None:
    """A 0-9-1 publisher's headers reach a 0-8 consumer with their 0-9-1 tags unchanged: the
    default decoder takes them, as RabbitMQ does; strict mode refuses them (502, connection
    closed)."""
    headers = FieldTable([("flag", True), ("big", Tagged("l", 2**40)), ("list", [1, "a"])])

    async def scenario() -> None:
        queue = unique("q08x")
        async with connected() as (_publisher, pub):
            await pub.call(Queue091.Declare(queue=queue, arguments={"x-expires": 60_000}))
            for _ in range(2):
                await pub.publish(
                    Basic091.Publish(routing_key=queue), BasicProperties091(headers=headers), b"x"
                )
            async with connected(spec=v0_8) as (client, ch):
                client.decoder.strict_tags = True
                with pytest.raises(ConnectionClosed) as info:
                    await ch.call(Basic.Get(queue=queue, no_ack=True))
                assert "decode error" in info.value.reply_text
                assert 'headers["flag"]' in info.value.reply_text
                assert client.closed is not None
            async with connected(spec=v0_8) as (client, ch):
                got = await ch.call(Basic.Get(queue=queue, no_ack=True))
                assert isinstance(got, ac.Message)
                assert got.properties.headers == headers
                assert got.properties.headers.tag("big") == "l"
            await pub.call(Queue091.Delete(queue=queue))

    run(scenario())


def test_recorded_0_8_session_detects_and_reencodes_both_directions(tmp_path: Path) -> None:
    """Both directions of a real 0-8 session, recorded by a proxy: FrameDecoder() finds 0-8
    from the client's header and from the server's connection.start, decodes every frame with
    0-8's own tag set, and every frame re-encodes to the bytes it came from."""

    async def scenario() -> tuple[bytes, bytes]:
        proxy = RecordingProxy(tmp_path, prefix="v08")
        async with proxy:
            queue = unique("q08r")
            async with connected(spec=v0_8, port=proxy.port, frame_max=4096) as (_client, ch):
                await ch.call(Queue.Declare(queue=queue, exclusive=True))
                body = bytes(range(256)) * 20  # two body frames at frame_max 4096
                await ch.publish(Basic.Publish(routing_key=queue), properties_0_8(), body)
                got = await ch.call(Basic.Get(queue=queue))
                assert isinstance(got, ac.Message) and got.body == body
                ch.send(Basic.Ack(delivery_tag=got.method.delivery_tag))
                await ch.close()
            async with asyncio.timeout(10):
                await proxy.wait_finished(1)
        (conn,) = proxy.connections
        return conn.client_path.read_bytes(), conn.server_path.read_bytes()

    client_bytes, server_bytes = run(scenario())
    for data, detected_by in (
        (client_bytes, "protocol header"),
        (server_bytes, "connection.start"),
    ):
        decoder = FrameDecoder()
        decoder.receive_data(data)
        decoder.receive_data(b"")
        frames, offset = [], 0
        for frame in decoder:
            assert encode_frame(frame) == data[offset : decoder.offset]
            offset = decoder.offset
            frames.append(frame)
        assert offset == len(data)
        assert decoder.spec is v0_8.SPEC and decoder.detected_by == detected_by
        names = [f.method.NAME for f in frames if isinstance(f, ac.MethodFrame)]
        assert "connection.close" in names or "connection.close-ok" in names
    assert client_bytes.startswith(b"AMQP\x01\x01\x08\x00")
