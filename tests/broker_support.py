"""Shared pieces of the live broker tests (tests/test_broker_*.py).

Each test opens its own connections through the example client (examples/amqp_client.py) and
uses names made unique per test, so tests never see each other's queues or exchanges.
"""

from __future__ import annotations

import asyncio
import contextlib
import decimal
import uuid
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from amqp_codec import FieldArray, FieldTable, Tagged, Timestamp
from amqp_codec.v0_9_1 import BasicProperties
from examples.amqp_client import AMQPClient, Channel

#: Every field-table tag RabbitMQ 3.10 accepts, each with a value at an edge of its range.
#: ("U" is missing on purpose: RabbitMQ's table parser has no clause for it and drops the
#: connection without a close method.)
TAG_VALUES: list[tuple[str, Any]] = [
    ("t", True),
    ("b", -128),
    ("B", 255),
    ("s", -32768),
    ("u", 65535),
    ("I", -(2**31)),
    ("i", 2**32 - 1),
    ("L", 2**63 - 1),
    ("l", -(2**63)),
    ("f", 1.5),
    ("d", -2.718281828459045),
    ("D", decimal.Decimal("-3.14159")),
    ("S", "naïve ✓"),
    ("x", b"\x00\xff\xce"),
    ("T", Timestamp(1_700_000_000)),
    ("V", None),
]


def every_tag_table() -> FieldTable:
    """A table with one value per accepted tag, plus a nested table and an array of both."""
    flat = [(f"k-{tag}", Tagged(tag, value)) for tag, value in TAG_VALUES]
    nested = FieldTable([*flat, ("deeper", FieldTable([("level", 3)]))])
    array = FieldArray([*(Tagged(tag, value) for tag, value in TAG_VALUES), nested, [1, "two"]])
    return FieldTable([*flat, ("nested", nested), ("array", array), ("empty-array", [])])


def all_properties(headers: FieldTable | None = None) -> BasicProperties:
    """Every one of the 14 basic properties set (user-id must be the login user)."""
    return BasicProperties(
        content_type="application/octet-stream",
        content_encoding="identity",
        headers=headers if headers is not None else every_tag_table(),
        delivery_mode=2,
        priority=7,
        correlation_id="corr-1",
        reply_to="amq.rabbitmq.reply-to.example",
        expiration="600000",
        message_id="msg-1",
        timestamp=Timestamp(1_700_000_123),
        type="example.type",
        user_id="guest",
        app_id="amqp-codec-tests",
        cluster_id="cluster-x",
    )


def unique(kind: str) -> str:
    """A queue or exchange name no other test (or run) uses."""
    return f"amqp-codec.test.{kind}.{uuid.uuid4().hex[:10]}"


def run(coro: Coroutine[Any, Any, Any], timeout: float = 60.0) -> Any:
    """Run one test scenario with an overall time limit (a hang fails instead of blocking)."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


@contextlib.asynccontextmanager
async def connected(**options: Any) -> AsyncIterator[tuple[AMQPClient, Channel]]:
    """A connection with one open channel; closed (if still open) on the way out."""
    client = await AMQPClient.connect(**options)
    try:
        yield client, await client.channel()
    finally:
        await client.close()
