"""Live: content in both directions, consumers, acknowledgements, confirms and transactions."""

from __future__ import annotations

import pytest
from broker_support import all_properties, connected, run, unique

import amqp_codec as ac
from amqp_codec.v0_9_1 import Basic, BasicProperties, Confirm, Queue, Tx

pytestmark = [pytest.mark.broker, pytest.mark.usefixtures("broker")]


def body_of(size: int) -> bytes:
    """A body whose bytes differ by position, so a misplaced slice shows."""
    return bytes(i * 7 % 251 for i in range(size))


@pytest.mark.parametrize("frame_max", [4096, 131072])
def test_publish_every_property_and_edge_body_sizes(frame_max: int) -> None:
    sizes = [0, 1, frame_max - 8, frame_max - 7, 1 << 20]

    async def scenario() -> None:
        queue = unique("q")
        async with connected(frame_max=frame_max) as (client, ch):
            assert client.frame_max == frame_max == client.decoder.frame_max
            await ch.call(Queue.Declare(queue=queue, exclusive=True))
            sent = []
            for i, size in enumerate(sizes):
                properties = all_properties()
                body = body_of(size)
                await ch.publish(Basic.Publish(routing_key=queue), properties, body)
                sent.append((properties, body))
                got = await ch.call(Basic.Get(queue=queue, no_ack=True))
                assert isinstance(got, ac.Message) and isinstance(got.method, Basic.GetOk)
                assert got.method.delivery_tag == i + 1
                assert got.properties == properties
                assert got.body == body
            # The same messages again, this time delivered to a consumer.
            for properties, body in sent:
                await ch.publish(Basic.Publish(routing_key=queue), properties, body)
            ok = await ch.call(Basic.Consume(queue=queue, consumer_tag="c", no_ack=True))
            assert ok == Basic.ConsumeOk(consumer_tag="c")
            for properties, body in sent:
                delivery = await ch.next_event()
                assert isinstance(delivery, ac.Message)
                assert isinstance(delivery.method, Basic.Deliver)
                assert delivery.properties == properties and delivery.body == body
            assert await ch.call(Basic.Cancel(consumer_tag="c")) == Basic.CancelOk("c")

    run(scenario(), timeout=120)


def test_consume_qos_ack_multiple_nack_reject_recover_cancel() -> None:
    async def scenario() -> None:
        queue = unique("q")
        async with connected() as (_client, ch):
            await ch.call(Queue.Declare(queue=queue, exclusive=True))
            await ch.call(Confirm.Select())
            for n in range(6):
                await ch.publish(
                    Basic.Publish(routing_key=queue), BasicProperties(message_id=str(n)), b"%d" % n
                )
                assert await ch.next_event() == Basic.Ack(delivery_tag=n + 1)
            assert isinstance(await ch.call(Basic.Qos(prefetch_count=3)), Basic.QosOk)
            await ch.call(Basic.Consume(queue=queue, consumer_tag="worker"))
            first = [await ch.next_event() for _ in range(3)]
            assert [m.body for m in first if isinstance(m, ac.Message)] == [b"0", b"1", b"2"]
            assert ch.events.empty()  # prefetch 3: nothing more until acked
            ch.send(Basic.Ack(delivery_tag=2, multiple=True))  # acks 1 and 2
            ch.send(Basic.Reject(delivery_tag=3, requeue=False))  # drops "2"
            more = [await ch.next_event() for _ in range(3)]
            assert [m.body for m in more if isinstance(m, ac.Message)] == [b"3", b"4", b"5"]
            ch.send(Basic.Nack(delivery_tag=5, multiple=True, requeue=True))  # "3", "4" again
            again = [await ch.next_event() for _ in range(2)]
            redelivered = [m for m in again if isinstance(m, ac.Message)]
            assert [m.body for m in redelivered] == [b"3", b"4"]
            assert all(m.method.redelivered for m in redelivered)  # type: ignore[attr-defined]
            assert await ch.call(Basic.Recover(requeue=True)) == Basic.RecoverOk()
            back = [await ch.next_event() for _ in range(3)]
            assert sorted(m.body for m in back if isinstance(m, ac.Message)) == [b"3", b"4", b"5"]
            last = back[-1]
            assert isinstance(last, ac.Message) and isinstance(last.method, Basic.Deliver)
            ch.send(Basic.Ack(delivery_tag=last.method.delivery_tag, multiple=True))
            assert await ch.call(Basic.Cancel(consumer_tag="worker")) == Basic.CancelOk("worker")
            assert isinstance(await ch.call(Basic.Get(queue=queue)), Basic.GetEmpty)
            assert await ch.call(Queue.Delete(queue=queue)) == Queue.DeleteOk(message_count=0)

    run(scenario())


def test_confirms_and_mandatory_return() -> None:
    async def scenario() -> None:
        queue = unique("q")
        async with connected() as (_client, ch):
            await ch.call(Queue.Declare(queue=queue, exclusive=True))
            assert await ch.call(Confirm.Select()) == Confirm.SelectOk()
            await ch.publish(Basic.Publish(routing_key=queue, mandatory=True), BasicProperties())
            assert await ch.next_event() == Basic.Ack(delivery_tag=1)
            unroutable = Basic.Publish(routing_key=unique("nowhere"), mandatory=True)
            await ch.publish(unroutable, BasicProperties(type="lost"), b"back")
            returned = await ch.next_event()
            assert isinstance(returned, ac.Message)
            assert returned.method == Basic.Return(
                reply_code=312,
                reply_text="NO_ROUTE",
                exchange="",
                routing_key=unroutable.routing_key,
            )
            assert returned.properties == BasicProperties(type="lost") and returned.body == b"back"
            assert await ch.next_event() == Basic.Ack(delivery_tag=2)

    run(scenario())


def test_transactions_commit_and_rollback() -> None:
    async def scenario() -> None:
        queue = unique("q")
        async with connected() as (_client, ch):
            await ch.call(Queue.Declare(queue=queue, exclusive=True))
            assert await ch.call(Tx.Select()) == Tx.SelectOk()
            await ch.publish(Basic.Publish(routing_key=queue), BasicProperties(), b"rolled back")
            assert await ch.call(Tx.Rollback()) == Tx.RollbackOk()
            assert isinstance(await ch.call(Basic.Get(queue=queue)), Basic.GetEmpty)
            await ch.publish(Basic.Publish(routing_key=queue), BasicProperties(), b"committed")
            assert await ch.call(Tx.Commit()) == Tx.CommitOk()
            got = await ch.call(Basic.Get(queue=queue))
            assert isinstance(got, ac.Message) and got.body == b"committed"
            assert isinstance(got.method, Basic.GetOk)
            ch.send(Basic.Ack(delivery_tag=got.method.delivery_tag))
            assert await ch.call(Tx.Commit()) == Tx.CommitOk()  # the ack takes effect
            assert isinstance(await ch.call(Basic.Get(queue=queue)), Basic.GetEmpty)

    run(scenario())
