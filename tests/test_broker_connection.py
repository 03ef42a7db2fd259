"""Live: opening a connection, tune negotiation and heartbeats through the example client."""

from __future__ import annotations

import asyncio

import pytest
from broker_support import connected, run

from amqp_codec.v0_9_1 import Basic
from examples.amqp_client import AMQPClient

pytestmark = [pytest.mark.broker, pytest.mark.usefixtures("broker")]


@pytest.mark.parametrize("mechanism", ["PLAIN", "AMQPLAIN"])
def test_login_and_server_properties(mechanism: str) -> None:
    async def scenario() -> None:
        async with connected(mechanism=mechanism) as (client, ch):
            assert client.server_properties["product"] == "RabbitMQ"
            assert client.server_properties["capabilities"]["connection.blocked"] is True
            assert isinstance(await ch.call(Basic.Qos(prefetch_count=1)), Basic.QosOk)

    run(scenario())


def test_tune_takes_the_smaller_limits() -> None:
    async def scenario() -> None:
        async with connected(channel_max=3, frame_max=8192, heartbeat=0) as (client, _ch):
            assert (client.channel_max, client.frame_max, client.heartbeat) == (3, 8192, 0)
            assert client.decoder.frame_max == 8192
            await client.channel()
            await client.channel()  # channels 1..3 now open
            with pytest.raises(RuntimeError, match="all 3 channels are in use"):
                await client.channel()
        async with connected() as (client, _ch):  # the broker's offer: 2047, 131072, 60
            assert (client.channel_max, client.frame_max, client.heartbeat) == (2047, 131072, 60)

    run(scenario())


def test_heartbeats_keep_an_idle_connection_open() -> None:
    async def scenario() -> None:
        client = await AMQPClient.connect(heartbeat=1)
        try:
            # RabbitMQ drops a peer that stays silent for two intervals; ours sends heartbeats.
            await asyncio.sleep(3.5)
            assert client.closed is None and client.heartbeats_received >= 1
            ok = await client.channel()
            assert ok.closed is None
        finally:
            await client.close()
        assert client.closed is not None and client.closed.close is None

    run(scenario())
