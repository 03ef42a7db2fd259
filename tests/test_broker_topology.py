"""Live: exchanges, queues and bindings with argument tables, and tables read back.

RabbitMQ does not echo declare arguments, so table values come back through messages: a
message published with the every-tag table as headers is read with basic.get, and a
dead-lettered one carries the broker's own x-death table.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from broker_support import all_properties, connected, every_tag_table, run, unique

import amqp_codec as ac
from amqp_codec.v0_9_1 import Basic, BasicProperties, Confirm, Exchange, Queue


def as_reencoded_by_rabbitmq(table: ac.FieldTable) -> ac.FieldTable:
    """``table`` as RabbitMQ writes it back after parsing it: every tag "L" becomes "l"."""

    def entry(key: str, tag: str, value: Any) -> tuple[str, str, Any]:
        if tag == "F":
            if not isinstance(value, ac.FieldTable):
                value = ac.FieldTable(value)
            value = as_reencoded_by_rabbitmq(value)
        elif tag == "A":
            if not isinstance(value, ac.FieldArray):
                value = ac.FieldArray(value)  # a plain list: tags as the encoder picks them
            value = ac.FieldArray.from_entries(
                [entry("", t, v) for t, v in zip(value.tags, value, strict=True)]
            )
        return key, "l" if tag == "L" else tag, value

    return ac.FieldTable.from_entries([entry(*e) for e in table.entries()])


pytestmark = [pytest.mark.broker, pytest.mark.usefixtures("broker")]


@pytest.mark.parametrize("kind", ["direct", "fanout", "topic", "headers"])
def test_exchange_types_with_every_tag_and_headers_read_back(kind: str) -> None:
    async def scenario() -> None:
        table = every_tag_table()
        exchange, queue = unique(f"x-{kind}"), unique("q")
        async with connected() as (_client, ch):
            declared = await ch.call(
                Exchange.Declare(exchange=exchange, type=kind, auto_delete=True, arguments=table)
            )
            assert isinstance(declared, Exchange.DeclareOk)
            passive = await ch.call(Exchange.Declare(exchange=exchange, type=kind, passive=True))
            assert isinstance(passive, Exchange.DeclareOk)
            await ch.call(Queue.Declare(queue=queue, exclusive=True, arguments=table))
            bind_args = {"x-match": "all", "k-S": "naïve ✓"} if kind == "headers" else table
            await ch.call(
                Queue.Bind(queue=queue, exchange=exchange, routing_key="rk", arguments=bind_args)
            )
            properties = all_properties(table)
            await ch.publish(Basic.Publish(exchange=exchange, routing_key="rk"), properties, b"tb")
            got = await ch.call(Basic.Get(queue=queue, no_ack=True))
            assert isinstance(got, ac.Message) and isinstance(got.method, Basic.GetOk)
            assert got.body == b"tb"
            assert got.properties == properties
            headers = got.properties.headers  # type: ignore[attr-defined]
            assert headers.entries() == table.entries()  # every value with its tag
            assert headers["nested"]["deeper"]["level"] == 3
            assert headers["array"].tags[-2:] == ("F", "A")
            await ch.call(Queue.Delete(queue=queue))
            assert isinstance(await ch.call(Exchange.Delete(exchange=exchange)), Exchange.DeleteOk)

    run(scenario())


def test_dead_lettered_message_carries_x_death_and_keeps_headers() -> None:
    async def scenario() -> None:
        table = every_tag_table()
        dlx, dead, work = unique("dlx"), unique("dead"), unique("work")
        async with connected() as (_client, ch):
            await ch.call(Exchange.Declare(exchange=dlx, type="fanout", auto_delete=True))
            await ch.call(Queue.Declare(queue=dead, exclusive=True))
            await ch.call(Queue.Bind(queue=dead, exchange=dlx))
            await ch.call(
                Queue.Declare(queue=work, exclusive=True, arguments={"x-dead-letter-exchange": dlx})
            )
            await ch.publish(Basic.Publish(routing_key=work), BasicProperties(headers=table), b"d")
            got = await ch.call(Basic.Get(queue=work))
            assert isinstance(got, ac.Message) and isinstance(got.method, Basic.GetOk)
            ch.send(Basic.Reject(delivery_tag=got.method.delivery_tag, requeue=False))
            for _ in range(100):  # dead-lettering is asynchronous: poll for up to ~5 s
                dead_letter = await ch.call(Basic.Get(queue=dead, no_ack=True))
                if isinstance(dead_letter, ac.Message):
                    break
                await asyncio.sleep(0.05)
            assert isinstance(dead_letter, ac.Message) and dead_letter.body == b"d"
            headers = dead_letter.properties.headers  # type: ignore[attr-defined]
            death = headers["x-death"]
            assert isinstance(death, ac.FieldArray) and death.tags == ("F",)
            entry = death[0]
            assert entry["reason"] == "rejected" and entry["queue"] == work
            assert entry["count"] == 1 and entry.tag("count") == "l"
            assert entry["exchange"] == "" and list(entry["routing-keys"]) == [work]
            assert entry.tag("time") == "T" and isinstance(entry["time"], ac.Timestamp)
            assert headers["x-first-death-reason"] == "rejected"
            # The broker re-encodes the headers it adds x-death to: the top level sorted by
            # key, and "L" values written back as "l" (RabbitMQ reads both as signed 64-bit).
            original = [e for e in headers.entries() if not e[0].startswith("x-")]
            assert original == sorted(as_reencoded_by_rabbitmq(table).entries())
            await ch.call(Exchange.Delete(exchange=dlx))

    run(scenario())


def test_queue_arguments_bind_unbind_purge_delete() -> None:
    async def scenario() -> None:
        exchange, queue = unique("x"), unique("q")
        arguments = {
            "x-message-ttl": 60_000,
            "x-max-length": 100,
            "x-max-length-bytes": 1 << 20,
            "x-overflow": "reject-publish",
            "x-expires": 600_000,
            "x-max-priority": 9,
            "x-queue-mode": "lazy",
        }
        async with connected() as (_client, ch):
            # Not auto-delete: the exchange must outlive its only binding.
            await ch.call(Exchange.Declare(exchange=exchange, type="direct"))
            ok = await ch.call(Queue.Declare(queue=queue, arguments=arguments))
            assert ok == Queue.DeclareOk(queue=queue, message_count=0, consumer_count=0)
            await ch.call(Queue.Bind(queue=queue, exchange=exchange, routing_key="a"))
            await ch.call(Confirm.Select())  # a confirm means the queue has the message
            for tag in (1, 2, 3):
                await ch.publish(
                    Basic.Publish(exchange=exchange, routing_key="a"), BasicProperties(), b"m"
                )
                assert await ch.next_event() == Basic.Ack(delivery_tag=tag)
            again = await ch.call(Queue.Declare(queue=queue, passive=True))
            assert isinstance(again, Queue.DeclareOk) and again.message_count == 3
            assert await ch.call(Queue.Purge(queue=queue)) == Queue.PurgeOk(message_count=3)
            unbound = await ch.call(Queue.Unbind(queue=queue, exchange=exchange, routing_key="a"))
            assert isinstance(unbound, Queue.UnbindOk)
            await ch.publish(
                Basic.Publish(exchange=exchange, routing_key="a", mandatory=True),
                BasicProperties(),
                b"lost",
            )
            returned = await ch.next_event()
            assert isinstance(returned, ac.Message) and isinstance(returned.method, Basic.Return)
            assert returned.method.reply_code == 312 and returned.body == b"lost"
            assert await ch.next_event() == Basic.Ack(delivery_tag=4)
            await ch.publish(Basic.Publish(routing_key=queue), BasicProperties(), b"left")
            assert await ch.next_event() == Basic.Ack(delivery_tag=5)
            assert await ch.call(Queue.Delete(queue=queue)) == Queue.DeleteOk(message_count=1)
            await ch.call(Exchange.Delete(exchange=exchange))

    run(scenario())


def test_exchange_to_exchange_bind_unbind() -> None:
    async def scenario() -> None:
        source, destination, queue = unique("src"), unique("dst"), unique("q")
        async with connected() as (_client, ch):
            # Not auto-delete: both must outlive the unbind.
            await ch.call(Exchange.Declare(exchange=source, type="topic"))
            await ch.call(Exchange.Declare(exchange=destination, type="fanout"))
            await ch.call(Queue.Declare(queue=queue, exclusive=True))
            await ch.call(Queue.Bind(queue=queue, exchange=destination))
            bound = await ch.call(
                Exchange.Bind(
                    destination=destination,
                    source=source,
                    routing_key="a.*",
                    arguments=every_tag_table(),
                )
            )
            assert isinstance(bound, Exchange.BindOk)
            publish = Basic.Publish(exchange=source, routing_key="a.b")
            await ch.publish(publish, BasicProperties(), b"via e2e")
            got = await ch.call(Basic.Get(queue=queue, no_ack=True))
            assert isinstance(got, ac.Message) and got.body == b"via e2e"
            assert isinstance(got.method, Basic.GetOk) and got.method.exchange == source
            unbind = Exchange.Unbind(
                destination=destination,
                source=source,
                routing_key="a.*",
                arguments=every_tag_table(),
            )
            assert isinstance(await ch.call(unbind), Exchange.UnbindOk)
            await ch.publish(publish, BasicProperties(), b"dropped")
            assert isinstance(await ch.call(Basic.Get(queue=queue)), Basic.GetEmpty)
            await ch.call(Exchange.Delete(exchange=source))
            await ch.call(Exchange.Delete(exchange=destination))

    run(scenario())
