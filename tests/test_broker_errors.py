"""Live: the broker's errors arrive as structured close methods; blocked and update-secret."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Iterator

import pytest
from broker_support import connected, run, unique

import amqp_codec as ac
from amqp_codec.v0_9_1 import Basic, BasicProperties, Channel, Confirm, Connection, Queue
from examples.amqp_client import AMQPClient, ChannelClosed, ConnectionClosed

pytestmark = [pytest.mark.broker, pytest.mark.usefixtures("broker")]


def test_channel_close_404_not_found_keeps_the_connection() -> None:
    async def scenario() -> None:
        missing = unique("missing")
        async with connected() as (client, ch):
            with pytest.raises(ChannelClosed) as caught:
                await ch.call(Queue.Declare(queue=missing, passive=True))
            assert caught.value.close == Channel.Close(
                reply_code=404,
                reply_text=f"NOT_FOUND - no queue '{missing}' in vhost '/'",
                class_id=Queue.Declare.CLASS_ID,
                method_id=Queue.Declare.METHOD_ID,
            )
            with pytest.raises(ChannelClosed):
                ch.send(Basic.Qos(prefetch_count=1))  # the channel is gone ...
            other = await client.channel()  # ... the connection is not
            assert isinstance(await other.call(Basic.Qos(prefetch_count=1)), Basic.QosOk)

    run(scenario())


def test_channel_close_406_precondition_failed() -> None:
    async def scenario() -> None:
        queue = unique("q")
        async with connected() as (client, ch):
            await ch.call(Queue.Declare(queue=queue, auto_delete=True))
            with pytest.raises(ChannelClosed) as caught:
                await ch.call(Queue.Declare(queue=queue, durable=True, auto_delete=True))
            error = caught.value
            assert (error.reply_code, error.class_id, error.method_id) == (406, 50, 10)
            assert error.reply_text.startswith("PRECONDITION_FAILED - inequivalent arg 'durable'")
            # An acknowledgement of a delivery tag the channel never had is a 406 too.
            ch2 = await client.channel()
            ch2.send(Basic.Ack(delivery_tag=99))
            with pytest.raises(ChannelClosed) as caught:
                await ch2.call(Basic.Qos(prefetch_count=1))
            assert caught.value.close == Channel.Close(
                reply_code=406,
                reply_text="PRECONDITION_FAILED - unknown delivery tag 99",
                class_id=Basic.Ack.CLASS_ID,
                method_id=Basic.Ack.METHOD_ID,
            )
            ch3 = await client.channel()
            await ch3.call(Queue.Delete(queue=queue))

    run(scenario())


def test_connection_close_530_for_an_unknown_virtual_host() -> None:
    async def scenario() -> None:
        vhost = unique("vhost")
        with pytest.raises(ConnectionClosed) as caught:
            await AMQPClient.connect(virtual_host=vhost)
        assert caught.value.close == Connection.Close(
            reply_code=530,
            reply_text=f"NOT_ALLOWED - vhost {vhost} not found",
            class_id=Connection.Open.CLASS_ID,
            method_id=Connection.Open.METHOD_ID,
        )

    run(scenario())


@pytest.mark.parametrize("mechanism", ["PLAIN", "AMQPLAIN"])
def test_connection_close_403_for_bad_credentials(mechanism: str) -> None:
    async def scenario() -> None:
        with pytest.raises(ConnectionClosed) as caught:
            await AMQPClient.connect(username="guest", password="wrong", mechanism=mechanism)
        error = caught.value
        assert isinstance(error.close, Connection.Close)
        assert (error.reply_code, error.class_id, error.method_id) == (403, 0, 0)
        assert error.reply_text.startswith(
            f"ACCESS_REFUSED - Login was refused using authentication mechanism {mechanism}."
        )
        # The right password works with the same mechanism.
        client = await AMQPClient.connect(mechanism=mechanism)
        await client.close()

    run(scenario())


def test_frame_over_negotiated_frame_max_is_answered_with_501() -> None:
    async def scenario() -> None:
        client = await AMQPClient.connect(frame_max=4096)
        ch = await client.channel()
        await ch.call(Confirm.Select())

        def publish_in_one_frame(size: int) -> None:
            body = b"x" * size
            client.write(ac.encode_frame(ac.MethodFrame(1, Basic.Publish(routing_key="none"))))
            client.write(ac.encode_frame(ac.ContentHeaderFrame(1, 60, size, BasicProperties())))
            client.write(ac.encode_frame(ac.ContentBodyFrame(1, body)))

        # RabbitMQ lets a frame's payload reach frame_max itself (8 bytes past the limit,
        # its FRAME_SIZE_FUDGE for old clients that forgot the frame overhead) ...
        publish_in_one_frame(client.frame_max)
        assert await ch.next_event() == Basic.Ack(delivery_tag=1)
        # ... one byte more and it closes the connection with 501.
        publish_in_one_frame(client.frame_max + 1)
        closed = await client.wait_closed()
        assert closed.close == Connection.Close(
            reply_code=501,
            reply_text="FRAME_ERROR - type 3, all octets = <<>>: {frame_too_large,4097,4088}",
            class_id=0,
            method_id=0,
        )
        await client.close()

    run(scenario())


def test_update_secret() -> None:
    async def scenario() -> None:
        async with connected() as (client, ch):
            ok = await client.update_secret(b"guest", "credential rotation")
            assert ok == Connection.UpdateSecretOk()
            assert isinstance(await ch.call(Basic.Qos(prefetch_count=2)), Basic.QosOk)

    run(scenario())


def _rabbitmqctl(*args: str) -> str:
    done = subprocess.run(["rabbitmqctl", *args], capture_output=True, text=True, timeout=60)
    if done.returncode:
        raise RuntimeError(f"rabbitmqctl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


@pytest.fixture
def memory_alarm_switch() -> Iterator[tuple[str, str]]:
    """(watermark that raises the memory alarm, the current one); restored afterwards."""
    if shutil.which("rabbitmqctl") is None:
        pytest.skip("rabbitmqctl is not installed: cannot raise a memory alarm")
    try:
        current = _rabbitmqctl("eval", "vm_memory_monitor:get_vm_memory_high_watermark().")
        float(current)
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"rabbitmqctl cannot read the memory watermark: {exc}")
    try:
        yield "0.00001", current
    finally:
        _rabbitmqctl("set_vm_memory_high_watermark", current)


def test_connection_blocked_and_unblocked(memory_alarm_switch: tuple[str, str]) -> None:
    low, restore = memory_alarm_switch

    async def scenario() -> None:
        async with connected() as (client, ch):
            await asyncio.to_thread(_rabbitmqctl, "set_vm_memory_high_watermark", low)
            try:
                # RabbitMQ blocks (and says so) once the connection publishes in the alarm.
                await ch.publish(Basic.Publish(routing_key=unique("nowhere")), BasicProperties())
                blocked = await asyncio.wait_for(client.events.get(), 30)
                assert blocked == Connection.Blocked(reason="low on memory")
            finally:
                await asyncio.to_thread(_rabbitmqctl, "set_vm_memory_high_watermark", restore)
            assert await asyncio.wait_for(client.events.get(), 30) == Connection.Unblocked()

    run(scenario())
