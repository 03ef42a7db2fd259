"""The inputs every library works on.

Everything is defined once, as plain Python values, and turned into wire bytes with
amqp-codec. The verification step (:mod:`benchmarks.workloads`) then checks that every peer
decodes those bytes to the same values, and that what every peer encodes decodes back to the
same values, before anything is timed -- so the fixtures are cross-checked by four
independent implementations.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from amqp_codec import (
    ContentBodyFrame,
    ContentHeaderFrame,
    HeartbeatFrame,
    MethodFrame,
    encode_frame,
)
from amqp_codec.table import Timestamp, encode_table
from amqp_codec.v0_9_1 import Basic, BasicProperties

UTC = dt.UTC
CHANNEL = 1
FRAME_MAX = 131072  # RabbitMQ's default negotiated frame_max
CHUNK_SIZE = 4096  # workload 6 feeds the stream in chunks of this size
LARGE_BODY_SIZE = 1024 * 1024  # workload 7: one message of this size
LARGE_CHUNK_SIZE = 65536  # workload 7 feeds it in chunks of this size (a socket read)
STREAM_FRAMES = 10_000

SENT_AT = dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)  # 1_700_000_000
SENT_AT_TS = 1_700_000_000

# --------------------------------------------------------------------------------------------
# The ~10-entry mixed headers table (workloads 2, 5 and part of 6)
# --------------------------------------------------------------------------------------------

#: One value of every kind a header table carries in practice, as plain Python values. The
#: comment is the tag amqp-codec (and RabbitMQ's clients) encode it with.
MIXED_TABLE: dict[str, Any] = {
    "x-request-id": "5f0c8a9e-2b7d-4c1e-9f3a-6d2e8b1c4a7f",  # S long string
    "x-retry-count": 3,  # I signed 32-bit
    "x-redelivered-by-dlx": True,  # t boolean
    "x-score": 0.875,  # d double (exact in 32 bits too)
    "x-origin": {"host": "web-17", "pid": 4242, "zone": "eu-west-1a"},  # F nested table
    "x-tags": ["billing", "eu", 7, True],  # A array
    "x-signature": b"\x00\x01\xfe\xff\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0\xb0\xc0",  # x
    "x-sent-at": SENT_AT,  # T timestamp (seconds)
    "x-amount": Decimal("12.34"),  # D decimal (scale 2, mantissa 1234)
    "x-deleted": None,  # V void
}
#: The same table without its float: pika cannot encode floats at all
#: (``pika.data.encode_value`` has no float branch and raises), so the table-encode workload
#: has a second row on this table where all four libraries run.
MIXED_TABLE_NO_FLOAT: dict[str, Any] = {k: v for k, v in MIXED_TABLE.items() if k != "x-score"}

#: Wire bytes of MIXED_TABLE (4-byte size prefix included), as amqp-codec encodes it.
MIXED_TABLE_BYTES: bytes = encode_table(MIXED_TABLE)

#: A small table like most real publishers send.
SMALL_TABLE: dict[str, Any] = {
    "x-request-id": "0b6e3f2a-9c41-4d8e-a5b7-2f1c9e8d7a60",
    "x-attempt": 1,
    "x-traced": True,
}

# --------------------------------------------------------------------------------------------
# Workload 1: basic.deliver method frame
# --------------------------------------------------------------------------------------------

DELIVER_FIELDS: dict[str, Any] = {
    "consumer_tag": "amq.ctag-Xk3dQw9pZ0aB7fL2mN4rTg",
    "delivery_tag": 123456,
    "redelivered": False,
    "exchange": "orders",
    "routing_key": "orders.created.eu-west-1",
}
DELIVER = Basic.Deliver(**DELIVER_FIELDS)
DELIVER_FRAME_OBJ = MethodFrame(CHANNEL, DELIVER)
DELIVER_FRAME: bytes = encode_frame(DELIVER_FRAME_OBJ)

# --------------------------------------------------------------------------------------------
# Workload 2: content header with all 14 properties
# --------------------------------------------------------------------------------------------

BODY_1K: bytes = bytes(range(256)) * 4  # 1 KiB, not valid UTF-8 (nobody may "decode" it)

FULL_PROPERTIES_VALUES: dict[str, Any] = {
    "content_type": "application/json",
    "content_encoding": "utf-8",
    "headers": MIXED_TABLE,
    "delivery_mode": 2,
    "priority": 5,
    "correlation_id": "c0ffee00-1234-4abc-8def-000000000042",
    "reply_to": "amq.rabbitmq.reply-to.g1h2AA5yZXBseUB0ZXN0",
    "expiration": "60000",
    "message_id": "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
    "timestamp": SENT_AT_TS,
    "type": "order.created",
    "user_id": "guest",
    "app_id": "billing-service",
    "cluster_id": "cluster-a",
}
FULL_PROPERTIES = BasicProperties(**FULL_PROPERTIES_VALUES)
HEADER_FRAME_OBJ = ContentHeaderFrame(CHANNEL, 60, len(BODY_1K), FULL_PROPERTIES)
HEADER_FRAME: bytes = encode_frame(HEADER_FRAME_OBJ)

# --------------------------------------------------------------------------------------------
# Workload 3: deliver + header + 1 KiB body in one buffer
# --------------------------------------------------------------------------------------------

BODY_FRAME_OBJ = ContentBodyFrame(CHANNEL, BODY_1K)
BODY_FRAME: bytes = encode_frame(BODY_FRAME_OBJ)
MESSAGE_BUFFER: bytes = DELIVER_FRAME + HEADER_FRAME + BODY_FRAME

# --------------------------------------------------------------------------------------------
# Workload 4: publish + header + 1 KiB body
# --------------------------------------------------------------------------------------------

PUBLISH_FIELDS: dict[str, Any] = {"exchange": "orders", "routing_key": "orders.created.eu-west-1"}
#: A typical publish: nine properties and a small headers table (no cluster_id: pamqp refuses
#: to encode one; no empty strings: pamqp drops them).
PUBLISH_PROPERTIES_VALUES: dict[str, Any] = {
    "content_type": "application/json",
    "content_encoding": "utf-8",
    "headers": SMALL_TABLE,
    "delivery_mode": 2,
    "priority": 0,
    "correlation_id": "c0ffee00-1234-4abc-8def-000000000042",
    "reply_to": "amq.rabbitmq.reply-to",
    "message_id": "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
    "timestamp": SENT_AT_TS,
    "type": "order.created",
    "app_id": "billing-service",
}

# --------------------------------------------------------------------------------------------
# Workload 6: a realistic server->client stream of 10,000 frames
# --------------------------------------------------------------------------------------------


@dataclass
class Stream:
    """The stream of workload 6 and what it holds."""

    data: bytes
    chunks: list[bytes]
    frame_count: int
    objects: list[Any]  # the frames as built, before encoding (the verification reference)
    counts: dict[str, int] = field(default_factory=dict)


def build_stream(frame_count: int = STREAM_FRAMES, seed: int = 91) -> Stream:
    """A consumer connection's inbound traffic: deliveries, publisher confirms, heartbeats.

    * ~80% of events are deliveries on channel 1 (basic.deliver + content header + one body
      frame). Properties: content_type, delivery_mode, message_id, timestamp always; a small
      3-entry headers table on 60% of them, the 10-entry mixed table on 10%. Body sizes: 70%
      100 B..1 KiB, 26% 1..4 KiB, 4% 16..64 KiB (one frame each; frame_max is 128 KiB).
    * ~17% are basic.ack on channel 2 (publisher confirms, some with multiple=True).
    * ~3% are heartbeats.
    """
    rng = random.Random(seed)
    frames: list[bytes] = []
    objects: list[Any] = []
    counts = {"deliveries": 0, "acks": 0, "heartbeats": 0, "body_bytes": 0}
    delivery_tag = 0
    confirm_tag = 0
    while len(frames) < frame_count:
        roll = rng.random()
        room = frame_count - len(frames)
        if roll < 0.80 and room >= 3:
            delivery_tag += 1
            kind = rng.random()
            headers: dict[str, Any] | None
            if kind < 0.10:
                headers = MIXED_TABLE
            elif kind < 0.70:
                headers = {**SMALL_TABLE, "x-attempt": rng.randint(1, 5)}
            else:
                headers = None
            size_roll = rng.random()
            if size_roll < 0.70:
                size = rng.randint(100, 1024)
            elif size_roll < 0.96:
                size = rng.randint(1025, 4096)
            else:
                size = rng.randint(16 * 1024, 64 * 1024)
            body = rng.randbytes(size)
            props = BasicProperties(
                content_type="application/json",
                delivery_mode=2,
                message_id=f"msg-{delivery_tag:08d}",
                timestamp=Timestamp(SENT_AT_TS + delivery_tag),
                headers=headers,
            )
            method = Basic.Deliver(
                consumer_tag="amq.ctag-Xk3dQw9pZ0aB7fL2mN4rTg",
                delivery_tag=delivery_tag,
                redelivered=rng.random() < 0.05,
                exchange="orders",
                routing_key=rng.choice(("orders.created", "orders.paid", "orders.shipped")),
            )
            objects.append(MethodFrame(1, method))
            objects.append(ContentHeaderFrame(1, 60, size, props))
            objects.append(ContentBodyFrame(1, body))
            frames.extend(encode_frame(f) for f in objects[-3:])
            counts["deliveries"] += 1
            counts["body_bytes"] += size
        elif roll < 0.97:
            multiple = rng.random() < 0.2
            confirm_tag += rng.randint(2, 6) if multiple else 1
            objects.append(MethodFrame(2, Basic.Ack(confirm_tag, multiple)))
            frames.append(encode_frame(objects[-1]))
            counts["acks"] += 1
        else:
            objects.append(HeartbeatFrame())
            frames.append(encode_frame(objects[-1]))
            counts["heartbeats"] += 1
    data = b"".join(frames)
    chunks = [data[i : i + CHUNK_SIZE] for i in range(0, len(data), CHUNK_SIZE)]
    counts["bytes"] = len(data)
    counts["chunks"] = len(chunks)
    return Stream(data, chunks, len(frames), objects, counts)


# --------------------------------------------------------------------------------------------
# Workload 7: one 1 MiB message
# --------------------------------------------------------------------------------------------


def build_large_message(
    body_size: int = LARGE_BODY_SIZE, chunk_size: int = LARGE_CHUNK_SIZE, seed: int = 7
) -> Stream:
    """One delivery of a ``body_size`` body: basic.deliver, a content header (the properties
    of workload 6's deliveries) and body frames of ``FRAME_MAX`` bytes, as a consumer receives
    it, in ``chunk_size`` reads."""
    body = random.Random(seed).randbytes(body_size)
    props = BasicProperties(
        content_type="application/octet-stream",
        delivery_mode=2,
        message_id="msg-large-00000001",
        timestamp=Timestamp(SENT_AT_TS),
        headers=SMALL_TABLE,
    )
    objects: list[Any] = [
        DELIVER_FRAME_OBJ,
        ContentHeaderFrame(CHANNEL, 60, body_size, props),
    ]
    step = FRAME_MAX - 8  # the largest payload a frame of frame_max bytes carries
    objects += [ContentBodyFrame(CHANNEL, body[i : i + step]) for i in range(0, body_size, step)]
    data = b"".join(encode_frame(f) for f in objects)
    chunks = [data[i : i + chunk_size] for i in range(0, len(data), chunk_size)]
    counts = {"bytes": len(data), "chunks": len(chunks), "body_bytes": body_size}
    return Stream(data, chunks, len(objects), objects, counts)
