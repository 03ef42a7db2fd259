"""AMQP 0-8 (``amqp_codec.v0_8``): the model against RabbitMQ's codegen file, golden vectors
written by hand from the 0-8 field layouts, round trips for every method and property list,
the 0-8 field-table tag set, version detection, and fuzzing.

Wire layout as in 0-9-1 (see test_golden.py): class id, method id, fields in spec order;
consecutive bits share one octet, first bit least significant. 0-8 field tables define only
S (long string), I (signed 32-bit), D (scale octet + signed 32-bit), T (64-bit timestamp) and
F (nested table).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    TV,
    any_method,
    canon_decoded_table,
    canon_model_table,
    examples,
    method_payloads,
    methods,
    model_table_bytes,
    properties,
    property_payloads,
    raw_frame,
    spec_tags,
    table_models,
)
from strategies import longlong as ll
from strategies import longstr as ls
from strategies import octet as oc
from strategies import short as sh
from strategies import shortstr as ss
from test_fuzz import check_error, run_decoder

from amqp_codec import (
    NEED_DATA,
    AMQPDecodeError,
    ContentBodyFrame,
    ContentHeaderFrame,
    FieldArray,
    FieldTable,
    FrameDecoder,
    FrameSyntaxError,
    MethodFrame,
    ProtocolHeader,
    Tagged,
    Timestamp,
    close_for_error,
    decode_method,
    encode_frame,
    encode_message,
    v0_8,
    v0_9_1,
)
from amqp_codec.v0_8 import (
    METHODS,
    PROPERTIES,
    Access,
    Basic,
    BasicProperties,
    Channel,
    Connection,
    Dtx,
    Queue,
    Test,
    Tunnel,
    TunnelProperties,
)

SPEC = v0_8.SPEC
TAGS = spec_tags(SPEC)
ROOT = Path(__file__).resolve().parent.parent
METHOD_CLASSES = sorted(METHODS.values(), key=lambda c: c.INDEX)
METHOD_IDS = [c.NAME for c in METHOD_CLASSES]
PROPERTY_CLASSES = sorted(PROPERTIES.values(), key=lambda c: c.CLASS_ID)
HEADER_0_8 = b"AMQP\x01\x01\x08\x00"


def lo(n: int) -> bytes:
    return n.to_bytes(4, "big")


# "a" -> S "xy", "n" -> I 7: 16 bytes of entries.
TABLE = FieldTable([("a", "xy"), ("n", 7)])
TABLE_BYTES = lo(16) + b"\x01aS" + lo(2) + b"xy" + b"\x01nI" + lo(7)

# One value of each 0-8 tag, written out: 9 + 7 + 8 + 11 + 14 = 49 bytes of entries.
ALL_0_8_TAGS = {
    "s": "hi",
    "i": -2,
    "d": Decimal("1.23"),
    "t": Timestamp(1_700_000_000),
    "f": {"x": 1},
}
ALL_0_8_TAGS_BYTES = (
    lo(49)
    + b"\x01sS" + lo(2) + b"hi"
    + b"\x01iI" + b"\xff\xff\xff\xfe"
    + b"\x01dD" + b"\x02" + lo(123)
    + b"\x01tT" + ll(1_700_000_000)
    + b"\x01fF" + lo(7) + b"\x01xI" + lo(1)
)  # fmt: skip

# connection.start as RabbitMQ 3.10 sent it to a client that opened with AMQP 1 1 8 0.
RABBITMQ_START_FRAME = bytes.fromhex(
    "01000000000129000a000a0800000001040c6361706162696c69746965734600"
    "0000000c636c75737465725f6e616d65530000000972616262697440766d0963"
    "6f707972696768745300000037436f707972696768742028632920323030372d"
    "3230323220564d776172652c20496e632e206f722069747320616666696c6961"
    "7465732e0b696e666f726d6174696f6e53000000394c6963656e73656420756e"
    "64657220746865204d504c20322e302e20576562736974653a2068747470733a"
    "2f2f7261626269746d712e636f6d08706c6174666f726d530000001145726c61"
    "6e672f4f54502032352e322e330770726f647563745300000008526162626974"
    "4d510776657273696f6e5300000006332e31302e380000000e504c41494e2041"
    "4d51504c41494e00000005656e5f5553ce"
)


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


def test_spec_identity():
    assert (SPEC.name, SPEC.major, SPEC.minor, SPEC.revision) == ("0-8", 0, 8, 0)
    assert SPEC.table_tags == frozenset("SIDTF")
    assert v0_9_1.SPEC.table_tags is None
    assert SPEC.connection_close is Connection.Close
    assert SPEC.channel_close is Channel.Close


def test_model_matches_rabbitmq_codegen_json():
    """Every class, method id, field name and type, property and constant of RabbitMQ's
    amqp-rabbitmq-0.8.json is in the generated package (XML plus overlay), and nothing else."""
    data = json.loads((ROOT / "specs" / "amqp-rabbitmq-0.8.json").read_text())
    domains = dict(data["domains"])
    expected = {}
    for cls in data["classes"]:
        for m in cls["methods"]:
            fields = [
                (a["name"], domains.get(a.get("type") or a.get("domain"), a.get("type")))
                for a in m["arguments"]
            ]
            expected[(cls["id"], m["id"])] = (f"{cls['name']}.{m['name']}", fields)
        props = [(p["name"], p["type"]) for p in cls.get("properties") or []]
        if props:
            assert [(f.name, f.wire_type) for f in PROPERTIES[cls["id"]].FIELDS] == props
        else:
            assert cls["id"] not in PROPERTIES
    actual = {
        key: (m.NAME, [(f.name, f.wire_type) for f in m.FIELDS]) for key, m in METHODS.items()
    }
    assert actual == expected
    names = {c["name"].lower(): c["value"] for c in data["constants"]}
    constants = {
        name.lower().replace("_", "-"): value
        for name, value in vars(v0_8.constants).items()
        if name.isupper() and isinstance(value, int)
    }
    assert constants == names
    soft = {c["value"] for c in data["constants"] if c.get("class") == "soft-error"}
    assert soft == SPEC.soft_errors


def test_classes_0_9_1_dropped_are_here():
    names = {cls.NAME.split(".")[0] for cls in METHODS.values()}
    assert {"access", "file", "stream", "tx", "dtx", "tunnel", "test"} <= names
    assert len(METHODS) == 93


@pytest.mark.parametrize(
    ("key", "name_0_8", "name_0_9_1"),
    [
        ((10, 50), "connection.redirect", "connection.close"),
        ((10, 60), "connection.close", "connection.blocked"),
        ((10, 61), "connection.close-ok", "connection.unblocked"),
        ((20, 30), "channel.alert", None),
        ((60, 100), "basic.recover-async", "basic.recover-async"),
    ],
)
def test_same_ids_different_methods(key, name_0_8, name_0_9_1):
    assert METHODS[key].NAME == name_0_8
    other = v0_9_1.METHODS.get(key)
    assert (other.NAME if other else None) == name_0_9_1


def test_names_with_spaces_are_hyphenated():
    assert [f.name for f in Basic.Publish.FIELDS] == [
        "ticket",
        "exchange",
        "routing-key",
        "mandatory",
        "immediate",
    ]
    assert Basic.Publish(routing_key="rk").routing_key == "rk"
    assert Connection.Start.NAME == "connection.start"
    assert v0_8.constants.FRAME_END == 206
    assert v0_8.constants.REPLY_NAMES[320] == "connection-forced"
    assert "version" not in Connection.Start.__doc__.lower().split(".")[0]  # label, not rules


def test_labels_and_docs_come_from_the_0_8_text():
    assert Basic.Publish.__doc__.startswith("Publish a message.")
    assert "rule" not in (Basic.Recover.__doc__ or "").lower()
    labels = {f.attr: f.label for f in Queue.Declare.FIELDS}
    assert labels["durable"] == "Request a durable queue."


# --------------------------------------------------------------------------------------------
# Golden vectors
# --------------------------------------------------------------------------------------------

GOLDEN = [
    pytest.param(
        Connection.Close(reply_code=320, reply_text="bye", class_id=50, method_id=10),
        sh(10) + sh(60) + sh(320) + ss("bye") + sh(50) + sh(10),
        id="connection.close 10.60",
    ),
    pytest.param(Connection.CloseOk(), sh(10) + sh(61), id="connection.close-ok 10.61"),
    pytest.param(
        Connection.Redirect(host="b:5672", known_hosts="c"),
        sh(10) + sh(50) + ss("b:5672") + ss("c"),
        id="connection.redirect 10.50",
    ),
    pytest.param(
        Connection.Open(virtual_host="/v", capabilities="x", insist=True),
        sh(10) + sh(40) + ss("/v") + ss("x") + oc(0b1),
        id="connection.open",
    ),
    pytest.param(
        Connection.Tune(channel_max=2047, frame_max=131072, heartbeat=60),
        sh(10) + sh(30) + sh(2047) + lo(131072) + sh(60),
        id="connection.tune",
    ),
    pytest.param(Channel.Open(out_of_band="oob"), sh(20) + sh(10) + ss("oob"), id="channel.open"),
    pytest.param(Channel.OpenOk(), sh(20) + sh(11), id="channel.open-ok (no reserved longstr)"),
    pytest.param(
        Channel.Alert(reply_code=310, reply_text="nd", details=TABLE),
        sh(20) + sh(30) + sh(310) + ss("nd") + TABLE_BYTES,
        id="channel.alert 20.30",
    ),
    pytest.param(
        Access.Request(realm="/data", exclusive=True, passive=False, active=True, write=False),
        sh(30) + sh(10) + ss("/data") + oc(0b10101),
        id="access.request",
    ),
    pytest.param(
        Queue.Declare(
            ticket=5, queue="jobs", durable=True, auto_delete=True, nowait=True, arguments=TABLE
        ),
        sh(50) + sh(10) + sh(5) + ss("jobs") + oc(0b11010) + TABLE_BYTES,
        id="queue.declare",
    ),
    pytest.param(
        Queue.Unbind(ticket=1, queue="q", exchange="ex", routing_key="rk", arguments=TABLE),
        sh(50) + sh(50) + sh(1) + ss("q") + ss("ex") + ss("rk") + TABLE_BYTES,
        id="queue.unbind 50.50 (RabbitMQ)",
    ),
    pytest.param(Queue.UnbindOk(), sh(50) + sh(51), id="queue.unbind-ok 50.51 (RabbitMQ)"),
    pytest.param(
        Basic.Consume(ticket=1, queue="q", consumer_tag="c", no_ack=True, exclusive=True),
        sh(60) + sh(20) + sh(1) + ss("q") + ss("c") + oc(0b0110),
        id="basic.consume (no arguments table in 0-8)",
    ),
    pytest.param(
        Basic.Publish(ticket=1, exchange="ex", routing_key="rk", immediate=True),
        sh(60) + sh(40) + sh(1) + ss("ex") + ss("rk") + oc(0b10),
        id="basic.publish",
    ),
    pytest.param(
        Basic.Deliver(
            consumer_tag="ct", delivery_tag=2**40 + 3, redelivered=True, exchange="e",
            routing_key="r",
        ),
        sh(60) + sh(60) + ss("ct") + ll(2**40 + 3) + oc(1) + ss("e") + ss("r"),
        id="basic.deliver",
    ),
    pytest.param(
        Basic.RecoverAsync(requeue=True),
        sh(60) + sh(100) + oc(1),
        id="basic.recover-async 60.100",
    ),
    pytest.param(Basic.Recover(requeue=False), sh(60) + sh(110) + oc(0), id="basic.recover 60.110"),
    pytest.param(Basic.RecoverOk(), sh(60) + sh(111), id="basic.recover-ok 60.111"),
    pytest.param(Dtx.Start(dtx_identifier="xid"), sh(100) + sh(20) + ss("xid"), id="dtx.start"),
    pytest.param(
        Tunnel.Request(meta_data=TABLE), sh(110) + sh(10) + TABLE_BYTES, id="tunnel.request"
    ),
    pytest.param(
        Test.Integer(integer_1=1, integer_2=2, integer_3=3, integer_4=4, operation=2),
        sh(120) + sh(10) + oc(1) + sh(2) + lo(3) + ll(4) + oc(2),
        id="test.integer",
    ),
    pytest.param(
        Connection.StartOk(
            client_properties=ALL_0_8_TAGS, mechanism="PLAIN", response=b"\0g\0g", locale="en_US"
        ),
        sh(10) + sh(11) + ALL_0_8_TAGS_BYTES + ss("PLAIN") + ls(b"\0g\0g") + ss("en_US"),
        id="connection.start-ok (every 0-8 tag)",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("method", "payload"), GOLDEN)
def test_golden_method(method, payload):
    assert method.encode() == payload
    decoded = decode_method(payload, v0_8)
    assert decoded == method
    assert decoded.encode() == payload


def test_rabbitmq_connection_start_for_0_8():
    decoder = FrameDecoder()
    decoder.receive_data(RABBITMQ_START_FRAME)
    frame = decoder.next_frame()
    assert decoder.spec is SPEC and decoder.detected_by == "connection.start"
    assert isinstance(frame, MethodFrame) and frame.channel == 0
    start = frame.method
    assert type(start) is Connection.Start
    assert (start.version_major, start.version_minor) == (8, 0)
    assert start.server_properties["product"] == "RabbitMQ"
    assert start.server_properties["capabilities"] == {}  # none offered to 0-8 clients
    assert start.mechanisms == b"PLAIN AMQPLAIN" and start.locales == b"en_US"
    assert encode_frame(frame) == RABBITMQ_START_FRAME


def test_golden_properties_and_content_header():
    props = BasicProperties(
        content_type="text/plain",
        headers=ALL_0_8_TAGS,
        delivery_mode=2,
        timestamp=Timestamp(1_700_000_000),
    )
    wire = sh(0x8000 | 0x2000 | 0x1000 | 0x0040) + ss("text/plain") + ALL_0_8_TAGS_BYTES
    wire += oc(2) + ll(1_700_000_000)
    assert props.encode() == wire
    frame = ContentHeaderFrame(3, 60, 5, props)
    frame_bytes = raw_frame(2, 3, sh(60) + sh(0) + ll(5) + wire)
    assert encode_frame(frame) == frame_bytes
    decoder = FrameDecoder(v0_8)
    decoder.receive_data(frame_bytes)
    decoded = decoder.next_frame()
    assert decoded == frame
    assert decoded.properties.headers.tag("d") == "D"


def test_golden_tunnel_properties():
    props = TunnelProperties(proxy_name="p", durable=1, broadcast=0)
    wire = sh(0x4000 | 0x1000 | 0x0800) + ss("p") + oc(1) + oc(0)
    assert props.encode() == wire
    decoder = FrameDecoder(v0_8)
    decoder.receive_data(raw_frame(2, 1, sh(110) + sh(0) + ll(0) + wire))
    assert decoder.next_frame().properties == props


def test_message_round_trip_through_decoder():
    publish = Basic.Publish(exchange="", routing_key="q")
    props = BasicProperties(content_type="application/json", headers={"n": 1}, priority=3)
    wire = HEADER_0_8 + encode_message(1, publish, props, b"x" * 10, frame_max=4096 + 8)
    decoder = FrameDecoder()
    decoder.receive_data(wire)
    frames = list(decoder)
    assert isinstance(frames[0], ProtocolHeader) and decoder.spec is SPEC
    assert frames[1] == MethodFrame(1, publish)
    assert frames[2].properties == props
    assert frames[3] == ContentBodyFrame(1, b"x" * 10)


# --------------------------------------------------------------------------------------------
# Round trips for every method and property list (strategies driven by the model)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", METHOD_CLASSES, ids=METHOD_IDS)
@settings(max_examples=examples(15))
@given(data=st.data())
def test_method_roundtrip(cls, data):
    method = data.draw(methods(cls, TAGS))
    payload = method.encode()
    decoded = decode_method(payload, v0_8)
    assert type(decoded) is cls
    assert decoded == method
    assert decoded.encode() == payload


@pytest.mark.parametrize("cls", METHOD_CLASSES, ids=METHOD_IDS)
@settings(max_examples=examples(15))
@given(data=st.data())
def test_method_bytes_from_layout_decode_and_reencode(cls, data):
    payload, expected = data.draw(method_payloads(cls, TAGS))
    decoded = decode_method(payload, v0_8)
    assert type(decoded) is cls
    for spec in cls.FIELDS:
        value = getattr(decoded, spec.attr)
        if spec.wire_type == "table":
            assert canon_decoded_table(value) == canon_model_table(expected[spec.attr])
        else:
            assert value == expected[spec.attr], spec.attr
    assert decoded.encode() == payload


@pytest.mark.parametrize("cls", PROPERTY_CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=examples(25))
@given(data=st.data())
def test_properties_roundtrip(cls, data):
    props = data.draw(properties(cls, TAGS))
    payload, expected = data.draw(property_payloads(cls, TAGS))
    for wire in (props.encode(), payload):
        frame_bytes = raw_frame(2, 1, sh(cls.CLASS_ID) + sh(0) + ll(0) + wire)
        decoder = FrameDecoder(v0_8)
        decoder.receive_data(frame_bytes)
        frame = decoder.next_frame()
        assert type(frame.properties) is cls
        assert encode_frame(frame) == frame_bytes
    assert frame.properties.encode() == payload
    for spec in cls.FIELDS:
        value = getattr(frame.properties, spec.attr)
        if spec.wire_type == "table" and value is not None:
            assert canon_decoded_table(value) == canon_model_table(expected[spec.attr])
        else:
            assert value == expected[spec.attr], spec.attr


@settings(max_examples=examples(40))
@given(model=table_models(tags=TAGS))
def test_0_8_tables_decode_strictly(model):
    """A table using only S I D T F passes the strict 0-8 decoder unchanged."""
    payload = sh(20) + sh(30) + sh(200) + ss("") + model_table_bytes(model)
    decoded = decode_method(payload, v0_8)
    assert canon_decoded_table(decoded.details) == canon_model_table(model)
    assert decoded.encode() == payload


# --------------------------------------------------------------------------------------------
# The 0-8 tag set: every tag decodes by default, the grammar's alone in strict mode
# --------------------------------------------------------------------------------------------


def _declare_with(arguments: FieldTable) -> bytes:
    return Queue.Declare(queue="q", arguments=arguments).encode()


@pytest.mark.parametrize(
    ("table", "path", "tag"),
    [
        (FieldTable([("x-flag", True)]), 'arguments["x-flag"]', "t"),
        (FieldTable([("ok", "s"), ("n", 2**40)]), 'arguments["n"]', "l"),
        (FieldTable([("f", {"inner": {"v": None}})]), 'arguments["f"]["inner"]["v"]', "V"),
        (FieldTable([("a", [1, 2])]), 'arguments["a"]', "A"),
        (FieldTable([("b", Tagged("x", b"\0"))]), 'arguments["b"]', "x"),
    ],
)
def test_extended_tags_are_refused_in_strict_mode(table, path, tag):
    payload = _declare_with(table)
    with pytest.raises(FrameSyntaxError) as info:
        decode_method(payload, v0_8, strict_tags=True)
    assert info.value.reply_code == 502
    assert info.value.field == path
    assert f"'{tag}'" in str(info.value)
    assert "AMQP 0-8" in str(info.value)
    assert (info.value.class_id, info.value.method_id) == (50, 10)
    # Accepted by default (and under the option's former name), and by 0-9-1 even when
    # strict: its spec names no smaller set.
    assert decode_method(payload, v0_8).arguments == table
    assert decode_method(payload, v0_8, accept_extended_tags=True).arguments == table
    with pytest.raises(FrameSyntaxError):
        decode_method(payload, v0_8, accept_extended_tags=False)
    assert decode_method(sh(50) + sh(10) + payload[4:], v0_9_1, strict_tags=True).CLASS_ID == 50


def _delivery(headers: FieldTable) -> bytes:
    deliver = Basic.Deliver(consumer_tag="c", delivery_tag=1, exchange="", routing_key="q")
    props = BasicProperties(headers=headers)
    return HEADER_0_8 + encode_message(7, deliver, props, b"body")


def test_frame_decoder_refuses_extended_header_tags_in_strict_mode():
    wire = _delivery(FieldTable([("x-death", [{"count": 1}])]))
    decoder = FrameDecoder(strict_tags=True)
    decoder.receive_data(wire)
    assert isinstance(decoder.next_frame(), ProtocolHeader)
    assert isinstance(decoder.next_frame(), MethodFrame)
    with pytest.raises(AMQPDecodeError) as info:
        decoder.next_frame()
    error = info.value
    assert (error.reply_code, error.channel, error.class_id) == (502, 7, 60)
    assert error.field == 'headers["x-death"]'
    header_start = len(HEADER_0_8) + len(encode_frame(MethodFrame(7, Basic.Deliver())))
    assert header_start <= error.offset < len(wire)
    assert close_for_error(error, v0_8).method.NAME == "connection.close"
    assert close_for_error(error, v0_8).method.METHOD_ID == 60


def test_frame_decoder_accepts_extended_tags_by_default():
    death = FieldArray([FieldTable([("count", Tagged("l", 1)), ("ok", True)])])
    headers = FieldTable([("x-death", death), ("v", None)])
    decoder = FrameDecoder()
    decoder.receive_data(_delivery(headers))
    frames = list(decoder)
    assert decoder.spec is SPEC
    assert frames[2].properties.headers == headers
    assert frames[2].properties.headers["x-death"][0].tag("count") == "l"


def test_extended_tag_inside_nested_table_in_method_on_stream():
    wire = HEADER_0_8 + encode_frame(
        MethodFrame(
            1,
            Queue.Bind(queue="q", exchange="e", arguments={"f": {"ok": 1, "b": Tagged("t", True)}}),
        )
    )
    decoder = FrameDecoder(strict_tags=True)
    decoder.receive_data(wire)
    decoder.next_frame()
    with pytest.raises(AMQPDecodeError) as info:
        decoder.next_frame()
    assert info.value.field == 'arguments["f"]["b"]'
    assert (info.value.channel, info.value.class_id, info.value.method_id) == (1, 50, 20)
    with pytest.raises(AMQPDecodeError) as again:
        decoder.next_frame()
    assert again.value is info.value


# --------------------------------------------------------------------------------------------
# Version detection
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "version"),
    [
        (b"AMQP\x01\x01\x08\x00", "0-8"),
        (b"AMQP\x01\x01\x09\x01", "0-8"),  # what old 0-8 clients sent
        (b"AMQP\x00\x00\x09\x01", "0-9-1"),
        (b"AMQP\x01\x01\x00\x09", "0-9-1"),
    ],
)
def test_detect_from_client_protocol_header(header, version):
    decoder = FrameDecoder()
    for i in range(len(header)):  # one byte at a time
        assert decoder.next_frame() is NEED_DATA
        decoder.receive_data(header[i : i + 1])
    frame = decoder.next_frame()
    assert isinstance(frame, ProtocolHeader) and encode_frame(frame) == header
    assert decoder.spec.name == version
    assert decoder.detected_by == "protocol header"


def test_detect_from_server_connection_start():
    start = Connection.Start(version_major=8, version_minor=0, server_properties={"p": "x"})
    wire = encode_frame(MethodFrame(0, start)) + encode_frame(
        MethodFrame(0, Connection.Close(reply_code=320, reply_text="x"))
    )
    decoder = FrameDecoder()
    decoder.receive_data(wire)
    frames = list(decoder)
    assert decoder.spec is SPEC and decoder.detected_by == "connection.start"
    assert frames[0].method == start
    assert type(frames[1].method) is Connection.Close  # 10.60 read as 0-8, not blocked


def test_server_start_0_9_still_detects_0_9_1():
    start = v0_9_1.Connection.Start(version_major=0, version_minor=9)
    decoder = FrameDecoder()
    decoder.receive_data(encode_frame(MethodFrame(0, start)))
    decoder.next_frame()
    assert decoder.spec is v0_9_1.SPEC


def test_unsupported_start_version_is_refused():
    start = Connection.Start(version_major=7, version_minor=0)
    decoder = FrameDecoder()
    decoder.receive_data(encode_frame(MethodFrame(0, start)))
    with pytest.raises(AMQPDecodeError, match="7-0"):
        decoder.next_frame()


# --------------------------------------------------------------------------------------------
# Fuzzing: bad 0-8 bytes only raise AMQPDecodeError
# --------------------------------------------------------------------------------------------


@st.composite
def _frames_0_8(draw: st.DrawFn) -> list:
    frames = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["method", "method", "header", "body"]))
        channel = draw(st.integers(1, 65535))
        if kind == "method":
            method = draw(any_method(SPEC))
            frames.append(MethodFrame(0 if method.CLASS_ID == 10 else channel, method))
        elif kind == "header":
            cls = draw(st.sampled_from(PROPERTY_CLASSES))
            props = draw(properties(cls, TAGS))
            frames.append(
                ContentHeaderFrame(channel, cls.CLASS_ID, draw(st.integers(0, 999)), props)
            )
        else:
            frames.append(ContentBodyFrame(channel, draw(st.binary(max_size=50))))
    return frames


@settings(max_examples=examples(100))
@given(
    frames=_frames_0_8(),
    header=st.sampled_from([b"AMQP\x01\x01\x08\x00", b"AMQP\x01\x01\x09\x01"]),
    cuts=st.lists(st.integers(0, 10_000), max_size=5),
)
def test_valid_0_8_streams_decode_completely(frames, header, cuts):
    data = header + b"".join(encode_frame(f) for f in frames)
    count, error = run_decoder(data, cuts)
    assert error is None
    assert count == len(frames) + 1


@settings(max_examples=examples(150))
@given(
    frames=_frames_0_8(),
    mutations=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1),
    cuts=st.lists(st.integers(0, 10_000), max_size=5),
    strict=st.booleans(),
)
def test_mutated_0_8_streams_only_raise_decode_errors(frames, mutations, cuts, strict):
    data = bytearray(HEADER_0_8 + b"".join(encode_frame(f) for f in frames))
    for position, value in mutations:
        data[8 + position % (len(data) - 8)] = value
    _count, error = run_decoder(bytes(data), cuts, strict_tags=strict)
    check_error(error, len(data))


@settings(max_examples=examples(150))
@given(data=st.binary(max_size=400), cuts=st.lists(st.integers(0, 10_000), max_size=5))
def test_random_bytes_after_0_8_header_only_raise_decode_errors(data, cuts):
    wire = HEADER_0_8 + data
    _count, error = run_decoder(wire, cuts)
    check_error(error, len(wire))


@pytest.mark.parametrize("cls", METHOD_CLASSES, ids=METHOD_IDS)
@settings(max_examples=examples(8))
@given(data=st.data())
def test_truncated_and_extended_payloads_raise_decode_errors(cls, data):
    payload, _ = data.draw(method_payloads(cls, TAGS))
    cut = data.draw(st.integers(0, len(payload) - 1))
    for bad in (payload[:cut], payload + data.draw(st.binary(min_size=1, max_size=4))):
        with pytest.raises(AMQPDecodeError) as info:
            decode_method(bad, v0_8)
        assert info.value.reply_code == 502


def test_model_table_strategy_restricted_to_0_8_tags():
    # The strategy helper used above draws only 0-8 tags.
    @settings(max_examples=examples(30))
    @given(model=table_models(tags=TAGS))
    def check(model):
        def tags(tv: TV):
            yield tv.tag
            if tv.tag == "F":
                for _key, child in tv.value:
                    yield from tags(child)

        for _key, tv in model:
            assert set(tags(tv)) <= set("SIDTF")

    check()


# --------------------------------------------------------------------------------------------
# The loader: 0-8's XML dialect
# --------------------------------------------------------------------------------------------

MINI_0_8 = """<?xml version="1.0"?>
<amqp major="8" minor="0" port="5672">
  <constant name="frame end" value="206"/>
  <constant name="not found" value="404" class="soft error"/>
  <constant name="frame error" value="501" class="hard error"/>
  <domain name="reply code" type="short"/>
  <domain name="queue name" type="shortstr"/>
  <class name="connection" handler="connection" index="10">
    work with socket connections
    <doc>The connection class.</doc>
    <doc name="grammar">connection = C:CLOSE S:CLOSE-OK</doc>
    <method name="close" synchronous="1" index="60">
      request a connection close
      <doc>Closes the connection.</doc>
      <rule implement="MUST">After sending this method any received method except close-ok
        MUST be discarded.</rule>
      <doc name="rule">The peer MUST answer with close-ok.</doc>
      <chassis name="client" implement="MUST"/>
      <response name="close ok"/>
      <field name="reply code" domain="reply code"/>
      <field name="reply text" type="shortstr">
        the reply text
        <rule implement="SHOULD">Log it.</rule>
      </field>
      <field name="class id" type="short"/>
      <field name="method id" type="short"/>
    </method>
    <method name="close ok" synchronous="1" index="61">confirm a connection close</method>
  </class>
  <class name="channel" handler="channel" index="20">
    <method name="close" synchronous="1" index="40">
      <field name="reply code" domain="reply code"/>
      <field name="reply text" type="shortstr"/>
      <field name="class id" type="short"/>
      <field name="method id" type="short"/>
    </method>
    <method name="purge" index="50">
      <field name="queue" domain="queue name"/>
      <field name="if empty" type="bit"/>
    </method>
  </class>
</amqp>
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_loader_reads_the_0_8_dialect(tmp_path: Path):
    from codegen.loader import load

    spec = load(_write(tmp_path, "mini08.xml", MINI_0_8))
    assert (spec.major, spec.minor, spec.version) == (0, 8, "0-8")
    assert [(c.name, c.error_class) for c in spec.constants] == [
        ("frame-end", None),
        ("not-found", "soft-error"),
        ("frame-error", "hard-error"),
    ]
    connection = spec.classes[0]
    assert connection.label == "work with socket connections"
    assert connection.doc == "The connection class."  # no grammar
    close = connection.methods[0]
    assert close.label == "request a connection close"
    assert close.doc == "Closes the connection."  # rules are not documentation
    assert [r.full_name for r in close.responses] == ["connection.close-ok"]
    assert [(f.name, f.attr, f.wire_type) for f in close.fields] == [
        ("reply-code", "reply_code", "short"),
        ("reply-text", "reply_text", "shortstr"),
        ("class-id", "class_id", "short"),
        ("method-id", "method_id", "short"),
    ]
    assert close.fields[1].label == "the reply text"
    purge = spec.classes[1].methods[1]
    assert [f.name for f in purge.fields] == ["queue", "if-empty"]
    assert spec.table_tags is None


def test_overlay_names_0_8_targets_with_hyphens_or_spaces(tmp_path: Path):
    from codegen.loader import load

    overlay = _write(
        tmp_path,
        "o.xml",
        """<overlay>
          <table-tags value="SIDTF"/>
          <patch class="channel" method="purge" field="if empty" default="1"/>
          <patch class="connection" method="close" field="reply-text" default="bye"/>
        </overlay>""",
    )
    spec = load(_write(tmp_path, "mini08.xml", MINI_0_8), overlay)
    assert spec.table_tags == "SIDTF"
    assert spec.classes[1].methods[1].fields[1].default is True
    assert spec.classes[0].methods[0].fields[1].default == "bye"


@pytest.mark.parametrize("value", ["", "SS"])
def test_overlay_table_tags_must_be_distinct_tags(tmp_path: Path, value: str):
    from codegen.loader import load
    from codegen.model import ModelError

    overlay = _write(tmp_path, "o.xml", f'<overlay><table-tags value="{value}"/></overlay>')
    with pytest.raises(ModelError, match="table-tags"):
        load(_write(tmp_path, "mini08.xml", MINI_0_8), overlay)


def test_strict_mode_can_be_switched_mid_stream():
    """A validator may learn from connection.start which peer it checks, then tighten."""
    table = FieldTable([("flag", True)])
    frame = encode_frame(MethodFrame(1, Queue.Declare(queue="q", arguments=table)))
    decoder = FrameDecoder(strict_tags=True)
    decoder.receive_data(HEADER_0_8)
    decoder.next_frame()
    assert decoder.strict_tags is True
    assert decoder.accept_extended_tags is False
    decoder.strict_tags = False
    decoder.receive_data(frame)
    assert decoder.next_frame().method.arguments == table
    decoder.accept_extended_tags = False  # the former name still works
    assert decoder.strict_tags is True
    decoder.receive_data(frame)
    with pytest.raises(FrameSyntaxError):
        decoder.next_frame()


def test_client_header_per_version():
    from amqp_codec.protocol import client_header

    assert b"AMQP" + client_header(SPEC) == HEADER_0_8
    assert b"AMQP" + client_header(v0_9_1.SPEC) == b"AMQP\x00\x00\x09\x01"
