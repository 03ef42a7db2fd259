"""Golden byte vectors written by hand from the AMQP 0-9-1 wire layout.

Every method payload is: class id (short), method id (short), then the fields in spec order:
octet = 1 byte, short = 2 bytes BE, long = 4 bytes BE, longlong = 8 bytes BE, shortstr =
1-byte length + bytes, longstr = 4-byte length + bytes, table = 4-byte size + entries;
consecutive bits share one octet, the first bit in the least significant position.

The expected bytes are spelled out below; the helpers (``sh`` = short etc.) are the one-line
definitions from strategies.py, and each bit octet is written as a binary literal computed by
hand (rightmost digit = first bit). Every field gets a distinctive non-default value.
"""

from __future__ import annotations

import pytest
from strategies import longlong as ll
from strategies import longstr as ls
from strategies import octet as oc
from strategies import short as sh
from strategies import shortstr as ss

import amqp_codec as ac
from amqp_codec import (
    ContentBodyFrame,
    ContentHeaderFrame,
    FieldTable,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    Timestamp,
    decode_method,
    encode_frame,
    v0_9_1,
)
from amqp_codec.v0_9_1 import (
    METHODS,
    Access,
    Basic,
    BasicProperties,
    Channel,
    Confirm,
    Connection,
    Exchange,
    Queue,
    Tx,
)

# A small table: "a" -> S "xy", "n" -> I 7 (written out byte by byte).
TABLE = FieldTable([("a", "xy"), ("n", 7)])
TABLE_BYTES = (
    b"\x00\x00\x00\x10"  # 16 bytes of entries
    b"\x01a" + b"S" + b"\x00\x00\x00\x02xy"  # 1+1 + 1 + 4+2 = 9
    b"\x01n" + b"I" + b"\x00\x00\x00\x07"  # 1+1 + 1 + 4 = 7
)


def lo(n: int) -> bytes:
    return n.to_bytes(4, "big")


def ids(class_id: int, method_id: int) -> bytes:
    return sh(class_id) + sh(method_id)


# (method, expected payload). Reserved fields encode their defaults (0 / "" / false) here;
# RESERVED_GOLDEN below checks non-default reserved values.
GOLDEN: list[tuple[object, bytes]] = [
    # ---- connection (10)
    (
        Connection.Start(
            version_major=2,
            version_minor=7,
            server_properties=TABLE,
            mechanisms=b"PLAIN AMQPLAIN",
            locales=b"en_US de_DE",
        ),
        ids(10, 10) + oc(2) + oc(7) + TABLE_BYTES + ls(b"PLAIN AMQPLAIN") + ls(b"en_US de_DE"),
    ),
    (
        Connection.StartOk(
            client_properties=TABLE,
            mechanism="AMQPLAIN",
            response=b"\x00guest\x00guest",
            locale="de_DE",
        ),
        ids(10, 11) + TABLE_BYTES + ss("AMQPLAIN") + ls(b"\x00guest\x00guest") + ss("de_DE"),
    ),
    (Connection.Secure(challenge=b"chal\x00lenge"), ids(10, 20) + ls(b"chal\x00lenge")),
    (Connection.SecureOk(response=b"resp\xffonse"), ids(10, 21) + ls(b"resp\xffonse")),
    (
        Connection.Tune(channel_max=2047, frame_max=131072, heartbeat=60),
        b"\x00\x0a\x00\x1e" + b"\x07\xff" + b"\x00\x02\x00\x00" + b"\x00\x3c",
    ),
    (
        Connection.TuneOk(channel_max=0x0102, frame_max=0x03040506, heartbeat=0x0708),
        b"\x00\x0a\x00\x1f\x01\x02\x03\x04\x05\x06\x07\x08",
    ),
    # reserved-1 (shortstr "") and reserved-2 (bit 0) keep their defaults.
    (Connection.Open(virtual_host="/vhost"), ids(10, 40) + ss("/vhost") + ss("") + oc(0)),
    (Connection.OpenOk(), ids(10, 41) + ss("")),
    (
        Connection.Close(
            reply_code=320, reply_text="CONNECTION_FORCED - bye", class_id=60, method_id=40
        ),
        ids(10, 50) + sh(320) + ss("CONNECTION_FORCED - bye") + sh(60) + sh(40),
    ),
    (Connection.CloseOk(), b"\x00\x0a\x00\x33"),
    (Connection.Blocked(reason="low on memory"), ids(10, 60) + ss("low on memory")),
    (Connection.Unblocked(), ids(10, 61)),
    (
        Connection.UpdateSecret(new_secret=b"t0k3n", reason="refresh ключ"),
        ids(10, 70) + ls(b"t0k3n") + b"\x10refresh \xd0\xba\xd0\xbb\xd1\x8e\xd1\x87",
    ),
    (Connection.UpdateSecretOk(), ids(10, 71)),
    # ---- channel (20)
    (Channel.Open(), ids(20, 10) + ss("")),
    (Channel.OpenOk(), ids(20, 11) + ls(b"")),
    (Channel.Flow(active=True), ids(20, 20) + oc(0b1)),
    (Channel.FlowOk(active=True), ids(20, 21) + oc(0b1)),
    (
        Channel.Close(reply_code=406, reply_text="PRECONDITION_FAILED", class_id=50, method_id=10),
        ids(20, 40) + sh(406) + ss("PRECONDITION_FAILED") + sh(50) + sh(10),
    ),
    (Channel.CloseOk(), ids(20, 41)),
    # ---- access (30), from RabbitMQ's overlay
    (
        # exclusive=1 passive=0 active=1 write=0 read=1 -> 0b10101
        Access.Request(
            realm="/data/x", exclusive=True, passive=False, active=True, write=False, read=True
        ),
        ids(30, 10) + ss("/data/x") + oc(0b10101),
    ),
    (Access.RequestOk(ticket=0x0ABC), b"\x00\x1e\x00\x0b\x0a\xbc"),
    # ---- exchange (40)
    (
        # passive=1 durable=0 auto_delete=1 internal=0 no_wait=1 -> 0b10101
        Exchange.Declare(
            exchange="amq.test",
            type="topic",
            passive=True,
            durable=False,
            auto_delete=True,
            internal=False,
            no_wait=True,
            arguments=TABLE,
        ),
        ids(40, 10) + sh(0) + ss("amq.test") + ss("topic") + oc(0b10101) + TABLE_BYTES,
    ),
    (Exchange.DeclareOk(), ids(40, 11)),
    (
        Exchange.Delete(exchange="amq.old", if_unused=True, no_wait=False),
        ids(40, 20) + sh(0) + ss("amq.old") + oc(0b01),
    ),
    (Exchange.DeleteOk(), ids(40, 21)),
    (
        Exchange.Bind(
            destination="dst", source="src", routing_key="rk.#", no_wait=True, arguments=TABLE
        ),
        ids(40, 30) + sh(0) + ss("dst") + ss("src") + ss("rk.#") + oc(0b1) + TABLE_BYTES,
    ),
    (Exchange.BindOk(), ids(40, 31)),
    (
        Exchange.Unbind(
            destination="dst2", source="src2", routing_key="rk.*", no_wait=True, arguments=TABLE
        ),
        ids(40, 40) + sh(0) + ss("dst2") + ss("src2") + ss("rk.*") + oc(0b1) + TABLE_BYTES,
    ),
    (Exchange.UnbindOk(), ids(40, 51)),
    # ---- queue (50)
    (
        # passive=0 durable=1 exclusive=0 auto_delete=1 no_wait=0 -> 0b01010
        Queue.Declare(
            queue="q1",
            passive=False,
            durable=True,
            exclusive=False,
            auto_delete=True,
            no_wait=False,
            arguments=TABLE,
        ),
        ids(50, 10) + sh(0) + ss("q1") + oc(0b01010) + TABLE_BYTES,
    ),
    (
        Queue.DeclareOk(queue="amq.gen-abc", message_count=0x01020304, consumer_count=5),
        ids(50, 11) + ss("amq.gen-abc") + b"\x01\x02\x03\x04" + b"\x00\x00\x00\x05",
    ),
    (
        Queue.Bind(queue="q1", exchange="ex", routing_key="rk", no_wait=True, arguments=TABLE),
        ids(50, 20) + sh(0) + ss("q1") + ss("ex") + ss("rk") + oc(0b1) + TABLE_BYTES,
    ),
    (Queue.BindOk(), ids(50, 21)),
    (Queue.Purge(queue="q2", no_wait=True), ids(50, 30) + sh(0) + ss("q2") + oc(0b1)),
    (Queue.PurgeOk(message_count=77), ids(50, 31) + lo(77)),
    (
        # if_unused=1 if_empty=0 no_wait=1 -> 0b101
        Queue.Delete(queue="q3", if_unused=True, if_empty=False, no_wait=True),
        ids(50, 40) + sh(0) + ss("q3") + oc(0b101),
    ),
    (Queue.DeleteOk(message_count=0xDEADBEEF), ids(50, 41) + b"\xde\xad\xbe\xef"),
    (
        Queue.Unbind(queue="q4", exchange="ex4", routing_key="rk4", arguments=TABLE),
        ids(50, 50) + sh(0) + ss("q4") + ss("ex4") + ss("rk4") + TABLE_BYTES,
    ),
    (Queue.UnbindOk(), ids(50, 51)),
    # ---- basic (60)
    (
        Basic.Qos(prefetch_size=0x10000, prefetch_count=300, global_=True),
        ids(60, 10) + b"\x00\x01\x00\x00" + b"\x01\x2c" + oc(0b1),
    ),
    (Basic.QosOk(), ids(60, 11)),
    (
        # no_local=1 no_ack=0 exclusive=1 no_wait=0 -> 0b0101
        Basic.Consume(
            queue="q",
            consumer_tag="ctag-1",
            no_local=True,
            no_ack=False,
            exclusive=True,
            no_wait=False,
            arguments=TABLE,
        ),
        ids(60, 20) + sh(0) + ss("q") + ss("ctag-1") + oc(0b0101) + TABLE_BYTES,
    ),
    (Basic.ConsumeOk(consumer_tag="ctag-1"), ids(60, 21) + ss("ctag-1")),
    (
        Basic.Cancel(consumer_tag="ctag-2", no_wait=True),
        ids(60, 30) + ss("ctag-2") + oc(0b1),
    ),
    (Basic.CancelOk(consumer_tag="ctag-2"), ids(60, 31) + ss("ctag-2")),
    (
        # mandatory=1 immediate=0 -> 0b01
        Basic.Publish(exchange="ex", routing_key="rk", mandatory=True, immediate=False),
        b"\x00\x3c\x00\x28" + b"\x00\x00" + b"\x02ex" + b"\x02rk" + b"\x01",
    ),
    (
        Basic.Return(reply_code=312, reply_text="NO_ROUTE", exchange="ex", routing_key="rk"),
        ids(60, 50) + sh(312) + ss("NO_ROUTE") + ss("ex") + ss("rk"),
    ),
    (
        Basic.Deliver(
            consumer_tag="ctag",
            delivery_tag=0x0102030405060708,
            redelivered=True,
            exchange="ex",
            routing_key="rk",
        ),
        ids(60, 60)
        + ss("ctag")
        + b"\x01\x02\x03\x04\x05\x06\x07\x08"
        + oc(0b1)
        + ss("ex")
        + ss("rk"),
    ),
    (Basic.Get(queue="q", no_ack=True), ids(60, 70) + sh(0) + ss("q") + oc(0b1)),
    (
        Basic.GetOk(
            delivery_tag=2**40 + 3,
            redelivered=True,
            exchange="ex",
            routing_key="rk",
            message_count=9,
        ),
        ids(60, 71) + ll(2**40 + 3) + oc(0b1) + ss("ex") + ss("rk") + lo(9),
    ),
    (Basic.GetEmpty(), ids(60, 72) + ss("")),
    (Basic.Ack(delivery_tag=42, multiple=True), ids(60, 80) + ll(42) + oc(0b1)),
    (Basic.Reject(delivery_tag=43, requeue=False), ids(60, 90) + ll(43) + oc(0b0)),
    (Basic.RecoverAsync(requeue=True), ids(60, 100) + oc(0b1)),
    (Basic.Recover(requeue=True), ids(60, 110) + oc(0b1)),
    (Basic.RecoverOk(), ids(60, 111)),
    (
        # multiple=1 requeue=0 -> 0b01
        Basic.Nack(delivery_tag=44, multiple=True, requeue=False),
        ids(60, 120) + ll(44) + oc(0b01),
    ),
    # ---- confirm (85)
    (Confirm.Select(nowait=True), ids(85, 10) + oc(0b1)),
    (Confirm.SelectOk(), ids(85, 11)),
    # ---- tx (90)
    (Tx.Select(), b"\x00\x5a\x00\x0a"),
    (Tx.SelectOk(), ids(90, 11)),
    (Tx.Commit(), ids(90, 20)),
    (Tx.CommitOk(), ids(90, 21)),
    (Tx.Rollback(), ids(90, 30)),
    (Tx.RollbackOk(), ids(90, 31)),
]


def _id(item: tuple[object, bytes]) -> str:
    return type(item[0]).NAME  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize("method, expected", GOLDEN, ids=[_id(g) for g in GOLDEN])
def test_method_encodes_to_golden_bytes(method, expected):
    assert method.encode() == expected


@pytest.mark.parametrize("method, expected", GOLDEN, ids=[_id(g) for g in GOLDEN])
def test_golden_bytes_decode_to_method(method, expected):
    decoded = decode_method(expected)
    assert type(decoded) is type(method)
    assert decoded == method
    # Field by field too, so a broken __eq__ could not hide a wrong value.
    for spec in method.FIELDS:
        assert getattr(decoded, spec.attr) == getattr(method, spec.attr), spec.attr
    # Reserved fields decode to what the golden bytes hold: their defaults.
    for spec in method.FIELDS:
        if spec.reserved:
            assert getattr(decoded, spec.attr) == spec.default
            assert type(getattr(decoded, spec.attr)) is type(spec.default)


def test_every_method_has_a_golden_vector():
    covered = {(type(m).CLASS_ID, type(m).METHOD_ID) for m, _ in GOLDEN}
    assert covered == set(METHODS), sorted(set(METHODS) ^ covered)
    assert len(GOLDEN) == len(METHODS)  # no method twice
    assert (30, 10) in covered and (30, 11) in covered  # access.request / request-ok


def test_golden_ids_are_the_spec_ids():
    # class and method ids of the golden vectors come from the spec; the payload starts with them
    for method, expected in GOLDEN:
        cls = type(method)
        assert expected[:4] == sh(cls.CLASS_ID) + sh(cls.METHOD_ID)
        assert METHODS[(cls.CLASS_ID, cls.METHOD_ID)] is cls


# Methods with reserved fields, decoded from bytes holding non-default reserved values.
RESERVED_GOLDEN: list[tuple[type, bytes, dict[str, object]]] = [
    (
        Connection.Open,
        ids(10, 40) + ss("/") + ss("cap-x") + oc(0b1),
        {"reserved_1": "cap-x", "reserved_2": True, "virtual_host": "/"},
    ),
    (Connection.OpenOk, ids(10, 41) + ss("known-host"), {"reserved_1": "known-host"}),
    (Channel.Open, ids(20, 10) + ss("oob"), {"reserved_1": "oob"}),
    (Channel.OpenOk, ids(20, 11) + ls(b"chan\x00id"), {"reserved_1": b"chan\x00id"}),
    (
        Exchange.Declare,
        ids(40, 10) + sh(0x0102) + ss("e") + ss("direct") + oc(0) + b"\x00\x00\x00\x00",
        {"reserved_1": 0x0102, "exchange": "e"},
    ),
    (
        Exchange.Delete,
        ids(40, 20) + sh(7) + ss("e") + oc(0),
        {"reserved_1": 7},
    ),
    (
        Exchange.Bind,
        ids(40, 30) + sh(8) + ss("d") + ss("s") + ss("r") + oc(0) + b"\x00\x00\x00\x00",
        {"reserved_1": 8},
    ),
    (
        Exchange.Unbind,
        ids(40, 40) + sh(9) + ss("d") + ss("s") + ss("r") + oc(0) + b"\x00\x00\x00\x00",
        {"reserved_1": 9},
    ),
    (
        Queue.Declare,
        ids(50, 10) + sh(10) + ss("q") + oc(0) + b"\x00\x00\x00\x00",
        {"reserved_1": 10},
    ),
    (
        Queue.Bind,
        ids(50, 20) + sh(11) + ss("q") + ss("e") + ss("r") + oc(0) + b"\x00\x00\x00\x00",
        {"reserved_1": 11},
    ),
    (Queue.Purge, ids(50, 30) + sh(12) + ss("q") + oc(0), {"reserved_1": 12}),
    (Queue.Delete, ids(50, 40) + sh(13) + ss("q") + oc(0), {"reserved_1": 13}),
    (
        Queue.Unbind,
        ids(50, 50) + sh(14) + ss("q") + ss("e") + ss("r") + b"\x00\x00\x00\x00",
        {"reserved_1": 14},
    ),
    (
        Basic.Consume,
        ids(60, 20) + sh(15) + ss("q") + ss("t") + oc(0) + b"\x00\x00\x00\x00",
        {"reserved_1": 15},
    ),
    (Basic.Publish, ids(60, 40) + sh(16) + ss("e") + ss("r") + oc(0), {"reserved_1": 16}),
    (Basic.Get, ids(60, 70) + sh(17) + ss("q") + oc(0), {"reserved_1": 17}),
    (Basic.GetEmpty, ids(60, 72) + ss("cluster-1"), {"reserved_1": "cluster-1"}),
]


def test_every_method_with_reserved_fields_has_a_reserved_vector():
    with_reserved = {cls for cls in METHODS.values() if any(f.reserved for f in cls.FIELDS)}
    assert with_reserved == {cls for cls, _, _ in RESERVED_GOLDEN}


@pytest.mark.parametrize(
    "cls, payload, expected", RESERVED_GOLDEN, ids=[c.NAME for c, _, _ in RESERVED_GOLDEN]
)
def test_reserved_fields_keep_the_decoded_value(cls, payload, expected):
    decoded = decode_method(payload)
    assert type(decoded) is cls
    for attr, value in expected.items():
        assert getattr(decoded, attr) == value
        assert type(getattr(decoded, attr)) is type(value)
    # A decoded method re-encodes exactly what arrived, reserved values included.
    assert decoded.encode() == payload
    # Reserved fields are not constructor parameters and do not take part in ==.
    public = {f.attr: getattr(decoded, f.attr) for f in cls.FIELDS if not f.reserved}
    fresh = cls(**public)
    assert fresh == decoded
    reserved = [f for f in cls.FIELDS if f.reserved]
    for spec in reserved:
        assert getattr(fresh, spec.attr) == spec.default
        with pytest.raises(TypeError):
            cls(**public, **{spec.attr: spec.default})
    assert fresh.encode() != payload


# --------------------------------------------------------------------------------------------
# Content properties
# --------------------------------------------------------------------------------------------

ALL_PROPERTIES = BasicProperties(
    content_type="application/json",
    content_encoding="gzip",
    headers=TABLE,
    delivery_mode=2,
    priority=7,
    correlation_id="corr-1",
    reply_to="amq.rabbitmq.reply-to",
    expiration="60000",
    message_id="msg-1",
    timestamp=Timestamp(1_700_000_000),
    type="order.created",
    user_id="guest",
    app_id="shop",
    cluster_id="c1",
)
ALL_PROPERTIES_BYTES = (
    b"\xff\xfc"  # bits 15..2 set: all fourteen properties
    + ss("application/json")  # bit 15 content-type
    + ss("gzip")  # bit 14 content-encoding
    + TABLE_BYTES  # bit 13 headers
    + b"\x02"  # bit 12 delivery-mode
    + b"\x07"  # bit 11 priority
    + ss("corr-1")  # bit 10 correlation-id
    + ss("amq.rabbitmq.reply-to")  # bit 9 reply-to
    + ss("60000")  # bit 8 expiration
    + ss("msg-1")  # bit 7 message-id
    + b"\x00\x00\x00\x00\x65\x53\xf1\x00"  # bit 6 timestamp 1700000000
    + ss("order.created")  # bit 5 type
    + ss("guest")  # bit 4 user-id
    + ss("shop")  # bit 3 app-id
    + ss("c1")  # bit 2 cluster-id
)

PROPERTY_GOLDEN: list[tuple[str, BasicProperties, bytes]] = [
    ("all", ALL_PROPERTIES, ALL_PROPERTIES_BYTES),
    ("none", BasicProperties(), b"\x00\x00"),
    ("content-type", BasicProperties(content_type="text/plain"), b"\x80\x00\x0atext/plain"),
    ("content-encoding", BasicProperties(content_encoding="utf-8"), b"\x40\x00\x05utf-8"),
    ("headers", BasicProperties(headers=TABLE), b"\x20\x00" + TABLE_BYTES),
    ("empty-headers", BasicProperties(headers=FieldTable()), b"\x20\x00\x00\x00\x00\x00"),
    ("delivery-mode", BasicProperties(delivery_mode=2), b"\x10\x00\x02"),
    ("priority-0", BasicProperties(priority=0), b"\x08\x00\x00"),
    ("correlation-id", BasicProperties(correlation_id="c"), b"\x04\x00\x01c"),
    ("reply-to", BasicProperties(reply_to="r"), b"\x02\x00\x01r"),
    ("expiration", BasicProperties(expiration="5"), b"\x01\x00\x015"),
    ("message-id", BasicProperties(message_id="m"), b"\x00\x80\x01m"),
    (
        "timestamp",
        BasicProperties(timestamp=Timestamp(0x0102030405060708)),
        b"\x00\x40\x01\x02\x03\x04\x05\x06\x07\x08",
    ),
    ("type", BasicProperties(type="t"), b"\x00\x20\x01t"),
    ("user-id", BasicProperties(user_id="u"), b"\x00\x10\x01u"),
    ("app-id", BasicProperties(app_id="a"), b"\x00\x08\x01a"),
    ("cluster-id", BasicProperties(cluster_id="cl"), b"\x00\x04\x02cl"),
    (
        "empty-strings",
        BasicProperties(content_type="", cluster_id=""),
        b"\x80\x04\x00\x00",
    ),
    (
        "headers+priority",
        BasicProperties(headers=TABLE, priority=9),
        b"\x28\x00" + TABLE_BYTES + b"\x09",
    ),
    (
        "delivery-mode+timestamp+app-id",
        BasicProperties(delivery_mode=1, timestamp=Timestamp(1), app_id="x"),
        b"\x10\x48" + b"\x01" + b"\x00" * 7 + b"\x01" + b"\x01x",
    ),
]


@pytest.mark.parametrize(
    "props, expected", [g[1:] for g in PROPERTY_GOLDEN], ids=[g[0] for g in PROPERTY_GOLDEN]
)
def test_properties_golden(props, expected):
    assert props.encode() == expected
    assert props.flags == int.from_bytes(expected[:2], "big")
    # Decode through a whole content header frame.
    payload = sh(60) + sh(0) + ll(99) + expected
    stream = b"\x02\x00\x01" + lo(len(payload)) + payload + b"\xce"
    decoder = ac.FrameDecoder(v0_9_1)
    decoder.receive_data(stream)
    frame = decoder.next_frame()
    assert frame == ContentHeaderFrame(1, 60, 99, props)
    for spec in BasicProperties.FIELDS:
        assert getattr(frame.properties, spec.attr) == getattr(props, spec.attr), spec.attr
    assert frame.properties.flags == props.flags
    assert encode_frame(frame) == stream


def test_property_flags_from_the_spec_order():
    # content-type is bit 15, each following property one bit lower, cluster-id bit 2.
    expected = {
        "content_type": 15,
        "content_encoding": 14,
        "headers": 13,
        "delivery_mode": 12,
        "priority": 11,
        "correlation_id": 10,
        "reply_to": 9,
        "expiration": 8,
        "message_id": 7,
        "timestamp": 6,
        "type": 5,
        "user_id": 4,
        "app_id": 3,
        "cluster_id": 2,
    }
    assert [f.attr for f in BasicProperties.FIELDS] == list(expected)
    assert list(BasicProperties.FLAGS) == [1 << bit for bit in expected.values()]
    for attr, bit in expected.items():
        value = getattr(ALL_PROPERTIES, attr)
        assert BasicProperties(**{attr: value}).flags == 1 << bit


# --------------------------------------------------------------------------------------------
# Whole frames
# --------------------------------------------------------------------------------------------

PUBLISH = Basic.Publish(exchange="", routing_key="q", mandatory=False, immediate=False)
FRAME_GOLDEN: list[tuple[str, object, bytes]] = [
    ("protocol-header", ProtocolHeader(), b"AMQP\x00\x00\x09\x01"),
    (
        "method",
        MethodFrame(1, PUBLISH),
        b"\x01\x00\x01\x00\x00\x00\x0a"  # method frame, channel 1, 10 payload bytes
        b"\x00\x3c\x00\x28\x00\x00\x00\x01q\x00"
        b"\xce",
    ),
    (
        "method-channel-0",
        MethodFrame(0, Connection.Tune(channel_max=2047, frame_max=131072, heartbeat=60)),
        b"\x01\x00\x00\x00\x00\x00\x0c\x00\x0a\x00\x1e\x07\xff\x00\x02\x00\x00\x00\x3c\xce",
    ),
    (
        "header",
        ContentHeaderFrame(
            0x1234, 60, 5, BasicProperties(content_type="text/plain", delivery_mode=2)
        ),
        b"\x02\x12\x34\x00\x00\x00\x1a"  # header frame, channel 0x1234, 26 payload bytes
        b"\x00\x3c\x00\x00"  # class 60, weight 0
        b"\x00\x00\x00\x00\x00\x00\x00\x05"  # body size 5
        b"\x90\x00\x0atext/plain\x02"
        b"\xce",
    ),
    ("body", ContentBodyFrame(1, b"hello"), b"\x03\x00\x01\x00\x00\x00\x05hello\xce"),
    ("empty-body", ContentBodyFrame(65535, b""), b"\x03\xff\xff\x00\x00\x00\x00\xce"),
    ("heartbeat", HeartbeatFrame(), b"\x08\x00\x00\x00\x00\x00\x00\xce"),
]


@pytest.mark.parametrize(
    "frame, expected", [g[1:] for g in FRAME_GOLDEN], ids=[g[0] for g in FRAME_GOLDEN]
)
def test_frame_golden(frame, expected):
    assert encode_frame(frame) == expected
    if not isinstance(frame, ProtocolHeader):
        assert expected[-1] == 0xCE


@pytest.mark.parametrize(
    "frame, expected", [g[1:] for g in FRAME_GOLDEN], ids=[g[0] for g in FRAME_GOLDEN]
)
def test_frame_golden_decodes(frame, expected):
    decoder = ac.FrameDecoder()
    decoder.receive_data(expected)
    assert decoder.next_frame() == frame
    assert decoder.next_frame() is ac.NEED_DATA
    assert decoder.offset == len(expected)


def test_golden_stream_decodes_in_order():
    stream = b"".join(expected for _, _, expected in FRAME_GOLDEN)
    decoder = ac.FrameDecoder()
    decoder.receive_data(stream)
    assert list(decoder) == [frame for _, frame, _ in FRAME_GOLDEN]
    assert decoder.detected_by == "protocol header"


def test_old_style_protocol_header_golden():
    assert encode_frame(ProtocolHeader(1, 1, 0, 9)) == b"AMQP\x01\x01\x00\x09"
    assert ProtocolHeader(1, 1, 0, 9).version_bytes == b"\x01\x01\x00\x09"


def test_encode_message_golden():
    data = ac.encode_message(
        3, PUBLISH, BasicProperties(delivery_mode=1), b"abcdefghij", frame_max=13
    )
    assert data == (
        b"\x01\x00\x03\x00\x00\x00\x0a\x00\x3c\x00\x28\x00\x00\x00\x01q\x00\xce"
        b"\x02\x00\x03\x00\x00\x00\x0f\x00\x3c\x00\x00" + ll(10) + b"\x10\x00\x01\xce"
        # frame_max 13 leaves 5 payload bytes per body frame
        b"\x03\x00\x03\x00\x00\x00\x05abcde\xce"
        b"\x03\x00\x03\x00\x00\x00\x05fghij\xce"
    )
