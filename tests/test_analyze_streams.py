"""One connection's segments to table rows, without Spark: gaps, detection, redaction, users."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spark_support import (
    PASSWORD,
    PROTOCOL_HEADER,
    Conversation,
    frames,
    message_frames,
    opening,
    write_pcap,
)

from amqp_codec import testing, v0_8, v0_9_1, v0_10_draft
from amqp_codec.analyze import streams as streams_module
from amqp_codec.analyze.streams import (
    REDACTED,
    DirectionDissector,
    Region,
    _dumps,
    analyze_connection,
    frame_fields,
    header_json,
    message_properties,
    method_fields,
    method_json,
    user_name,
)
from amqp_codec.analyze.tables import PROPERTIES, column_names
from amqp_codec.capture.packets import Segment, read_capture
from amqp_codec.capture.tcp import Piece
from amqp_codec.frames import ContentBodyFrame, ContentHeaderFrame, MethodFrame
from amqp_codec.inspect import resync
from amqp_codec.inspect.dissector import (
    RESYNC_WORK_ALLOWANCE,
    RESYNC_WORK_PER_BYTE,
    FrameEvent,
    ProblemEvent,
    ResyncEvent,
    StreamDissector,
)
from amqp_codec.v0_9_1 import Basic, Channel, Connection


def _segments(tmp_path: Path, *conversations: Conversation) -> list[Segment]:
    path = write_pcap(tmp_path / "c.pcap", *conversations)
    return [item for item in read_capture(str(path)) if isinstance(item, Segment)]


def _tables(rows: Any) -> dict[str, list[tuple[Any, ...]]]:
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table, row in rows:
        out.setdefault(table, []).append(row)
    return out


# ------------------------------------------------------------------------------------------
# StreamDissector.gap
# ------------------------------------------------------------------------------------------

FRAME1 = frames(MethodFrame(1, Channel.Open()))
FRAME2 = frames(MethodFrame(1, Basic.Qos(prefetch_count=10)))
FRAME3 = frames(MethodFrame(1, Basic.Ack(delivery_tag=5)))


def _kinds(events: list[Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for event in events:
        if isinstance(event, FrameEvent):
            out.append(("frame", event.offset, event.frame.method.NAME))
        elif isinstance(event, ResyncEvent):
            out.append(("resync", event.start, event.stop, event.resumed))
        elif isinstance(event, ProblemEvent):
            out.append(("problem", event.problem.offset))
    return out


def test_gap_at_a_frame_boundary_loses_only_that_frame() -> None:
    dissector = StreamDissector()
    events = dissector.feed(FRAME1) + dissector.gap(len(FRAME2)) + dissector.feed(FRAME3)
    events += dissector.finish()
    start3 = len(FRAME1) + len(FRAME2)
    assert _kinds(events) == [
        ("frame", 0, "channel.open"),
        ("resync", len(FRAME1), start3, True),
        ("frame", start3, "basic.ack"),
    ]
    assert dissector.stats.bytes == len(FRAME1) + len(FRAME3)  # bytes seen, not lost


def test_gap_inside_a_frame_resumes_at_the_next_frame() -> None:
    dissector = StreamDissector()
    half = len(FRAME2) // 2
    events = dissector.feed(FRAME1 + FRAME2[:half])
    events += dissector.gap(len(FRAME2) - half - 2)
    events += dissector.feed(FRAME2[-2:] + FRAME3) + dissector.finish()
    start3 = len(FRAME1) + len(FRAME2)
    assert _kinds(events) == [
        ("frame", 0, "channel.open"),
        ("resync", len(FRAME1), start3, True),
        ("frame", start3, "basic.ack"),
    ]


def test_unknown_gap_before_the_first_byte() -> None:
    dissector = StreamDissector()
    events = dissector.gap(0) + dissector.feed(FRAME2[3:] + FRAME3) + dissector.finish()
    start3 = len(FRAME2) - 3
    assert _kinds(events) == [("resync", 0, start3, True), ("frame", start3, "basic.ack")]


# ------------------------------------------------------------------------------------------
# credentials
# ------------------------------------------------------------------------------------------


def test_user_names_without_passwords() -> None:
    assert user_name("PLAIN", b"\x00alice\x00" + PASSWORD) == "alice"
    assert user_name("PLAIN", b"alice") is None
    table = b"\x05LOGINS\x00\x00\x00\x03bob\x08PASSWORDS\x00\x00\x00\x02pw"
    assert user_name("AMQPLAIN", table) == "bob"
    assert user_name("AMQPLAIN", b"\x05LOG") is None  # cut off: no user, no exception
    assert user_name("EXTERNAL", b"") is None


def test_responses_are_redacted() -> None:
    start_ok = Connection.StartOk(response=b"\x00u\x00" + PASSWORD)
    assert method_fields(start_ok)["response"] == REDACTED
    assert method_fields(Connection.SecureOk(response=PASSWORD))["response"] == REDACTED
    assert method_fields(Connection.Open(virtual_host="/v"))["virtual-host"] == "/v"


# ------------------------------------------------------------------------------------------
# detection, mid-stream captures, order of segments
# ------------------------------------------------------------------------------------------


def _session(conversation: Conversation, *, handshake: bool = True) -> Conversation:
    if handshake:
        conversation.handshake()
    client, server = opening()
    conversation.send("client", client).send("server", server)
    conversation.send("client", frames(*message_frames(1, "ex", "rk", b"b" * 9000)), mss=700)
    return conversation.fin("client").fin("server")


def test_amqp_on_another_port_is_found_by_its_protocol_header(tmp_path: Path) -> None:
    conversation = _session(Conversation(server=("10.1.0.2", 5555)))
    rows = _tables(analyze_connection(_segments(tmp_path, conversation), ports={5672}))
    assert len(rows["connections"]) == 1 and len(rows["messages"]) == 1
    assert rows["connections"][0][2:6] == ("10.1.0.1", 40001, "10.1.0.2", 5555)


def test_other_traffic_on_other_ports_is_ignored(tmp_path: Path) -> None:
    web = Conversation(server=("10.1.0.2", 8080)).handshake()
    web.send("client", b"GET / HTTP/1.0\r\n\r\n").send("server", b"HTTP/1.0 200 OK\r\n\r\n")
    assert list(analyze_connection(_segments(tmp_path, web), ports={5672})) == []


def test_a_connection_captured_mid_stream_is_decoded_after_a_resync(tmp_path: Path) -> None:
    conversation = Conversation()
    body = frames(*message_frames(1, "ex", "late", b"q" * 100))
    conversation.send("client", b"\x00" * 5 + FRAME3 + body)  # starts inside some frame
    rows = _tables(analyze_connection(_segments(tmp_path, conversation), ports={5672}))
    gaps = [r for r in rows["problems"] if r[6] == "gap"]
    assert len(gaps) == 1 and "unknown number" in gaps[0][-1]
    assert [r[7] for r in rows["frames"]] == ["basic.ack", "basic.publish", None, None]
    assert [r[8] for r in rows["messages"]] == ["late"]
    connection = rows["connections"][0]
    assert connection[6:8] == ("0-9-1", "assumed") and connection[24] == "open"


def test_segment_order_and_retransmissions_do_not_change_rows(tmp_path: Path) -> None:
    segments = _segments(tmp_path, _session(Conversation()))
    expected = list(analyze_connection(segments, ports={5672}))
    shuffled = segments + segments[5:9]  # retransmitted copies
    random.Random(7).shuffle(shuffled)
    assert list(analyze_connection(shuffled, ports={5672})) == expected


def test_a_frame_out_of_sequence_carries_its_problem(tmp_path: Path) -> None:
    conversation = Conversation().handshake()
    client, server = opening()
    conversation.send("client", client + frames(ContentBodyFrame(1, b"orphan")))
    conversation.send("server", server)
    rows = _tables(analyze_connection(_segments(tmp_path, conversation), ports={5672}))
    body = [r for r in rows["frames"] if r[6] == "body"]
    assert len(body) == 1 and "content body without a content header" in body[0][10]
    problem = [r for r in rows["problems"] if r[6] == "content-sequence"]
    assert [(r[5], r[8]) for r in problem] == [(body[0][4], 505)]


def test_protocol_header_rows(tmp_path: Path) -> None:
    conversation = _session(Conversation())
    rows = _tables(analyze_connection(_segments(tmp_path, conversation), ports={5672}))
    first = min((r for r in rows["frames"] if r[2] == "client"), key=lambda r: r[4])
    assert (first[4], first[5], first[6], first[9]) == (0, None, "protocol-header", 8)
    assert json.loads(first[8]) == {"protocol_id": 0, "version": [0, 9, 1]}
    assert bytes(conversation.sent["client"][:8]) == PROTOCOL_HEADER


def test_retransmitted_bytes_that_differ_are_a_problem(tmp_path: Path) -> None:
    segments = _segments(tmp_path, _session(Conversation()))
    data = [s for s in segments if s.payload and s.dport == 5672]
    victim = data[3]
    forged = Segment(
        victim.capture,
        999,
        victim.ts + 0.5,
        victim.src,
        victim.sport,
        victim.dst,
        victim.dport,
        victim.seq,
        victim.flags,
        b"X" * len(victim.payload),
    )
    clean = list(analyze_connection(segments, ports={5672}))
    rows = list(analyze_connection([*segments, forged], ports={5672}))
    extra = [row for row in rows if row not in clean]
    assert [(r[1][6], r[1][7]) for r in extra if r[0] == "problems"] == [
        ("tcp", "conflicting-overlap")
    ]
    assert [r for r in rows if r[0] == "frames"] == [r for r in clean if r[0] == "frames"]


def test_an_unsupported_protocol_version_is_an_unknown_protocol(tmp_path: Path) -> None:
    conversation = Conversation().handshake()
    conversation.send("client", b"AMQP\x00\x01\x00\x00" + b"\x10" * 40)  # AMQP 1.0
    conversation.send("server", b"AMQP\x00\x00\x09\x01").fin("server")
    rows = _tables(analyze_connection(_segments(tmp_path, conversation), ports={5672}))
    kinds = [(r[3], r[6], r[7]) for r in rows["problems"]]
    assert ("client", "unknown-protocol", "UnsupportedProtocolError") in kinds
    assert "frames" not in rows or all(r[2] == "server" for r in rows["frames"])
    assert rows["connections"][0][24] == "tcp-fin"


# ------------------------------------------------------------------------------------------
# 0-8 and 99-0 connections
# ------------------------------------------------------------------------------------------


def _version_rows(tmp_path: Path, client: bytes, server: bytes) -> dict[str, list[Any]]:
    conversation = Conversation().handshake()
    conversation.send("client", client[:60]).send("server", server)
    conversation.send("client", client[60:], mss=50).fin("client").fin("server")
    return _tables(analyze_connection(_segments(tmp_path, conversation), ports={5672}))


def test_v0_8_connection_rows(tmp_path: Path) -> None:
    from version_streams import PASSWORD as OLD_PASSWORD
    from version_streams import v08_streams

    body = bytes(range(256)) + b"tail"
    client, server = v08_streams(body)
    rows = _version_rows(tmp_path, client, server)
    assert "problems" not in rows
    client_frames = sorted((r for r in rows["frames"] if r[2] == "client"), key=lambda r: r[4])
    assert [(r[6], r[7]) for r in client_frames] == [
        ("protocol-header", None),
        ("method", "connection.start-ok"),
        ("method", "connection.tune-ok"),
        ("method", "connection.open"),
        ("method", "channel.open"),
        ("method", "basic.publish"),
        ("header", None),
        ("body", None),
        ("body", None),
        ("method", "connection.close"),
    ]
    assert sum(r[9] for r in client_frames) == len(client)
    assert json.loads(client_frames[6][8])["properties"] == {
        "content-type": "text/plain",
        "priority": 4,
        "cluster-id": "c1",
    }
    (message,) = rows["messages"]
    assert message[6:9] == ("basic.publish", "amq.topic", "a.b")
    assert message[14][0] == "text/plain" and message[14][4] == 4 and message[14][13] == "c1"
    assert message[15] == len(body) and message[16] == hashlib.sha256(body).hexdigest()
    (connection,) = rows["connections"]
    assert connection[6:8] == ("0-8", "protocol header")
    assert connection[12] == "old-client" and connection[15] == "RabbitMQ"
    assert connection[19:24] == (10, 2048, 5, "/old", "olduser")
    # 10.50 is connection.redirect in 0-8 (connection.close in 0-9-1).
    assert connection[24:28] == ("client", 320, "redirected", "connection.redirect")
    assert OLD_PASSWORD.decode() not in repr(rows)


def test_draft_connection_rows(tmp_path: Path) -> None:
    from version_streams import DRAFT_EXAMPLE, draft_streams
    from version_streams import PASSWORD as DRAFT_PASSWORD

    client, server = draft_streams()
    for name in ("transfer", "header", "body"):  # the wire note's bytes are in the stream
        assert DRAFT_EXAMPLE[name] in client
    assert server.startswith(DRAFT_EXAMPLE["start"])
    rows = _version_rows(tmp_path, client, server)
    assert "problems" not in rows
    frames_ = sorted(rows["frames"], key=lambda r: (r[2], r[4]))
    client_frames = [r for r in frames_ if r[2] == "client"]
    assert [(r[5], r[6], r[7]) for r in client_frames] == [
        (None, "protocol-header", None),
        (0, "method", "connection.start-ok"),
        (0, "method", "connection.tune-ok"),
        (0, "method", "connection.open"),
        (1, "method", "session.open"),
        (1, "method", "message.transfer"),
        (1, "header", None),
        (1, "body", None),
        (0, "method", "connection.close"),
    ]
    transfer, header, body = client_frames[5:8]
    assert (transfer[9], header[9], body[9]) == tuple(
        len(DRAFT_EXAMPLE[n]) for n in ("transfer", "header", "body")
    )
    assert sum(r[9] for r in client_frames) == len(client)
    assert json.loads(transfer[8]) == {
        "ticket": 0,
        "destination": "amq.direct",
        "confirm-mode": 1,
        "acquire-mode": 0,
    }
    structs = json.loads(header[8])["structs"]
    assert [s["struct"] for s in structs] == ["delivery-properties", "message-properties"]
    assert structs[0]["fields"] == {"delivery-mode": 2, "routing-key": "q"}
    assert json.loads(client_frames[1][8])["response"] == REDACTED
    server_frames = [r for r in frames_ if r[2] == "server"]
    assert [r[7] for r in server_frames] == [
        "connection.start",
        "connection.tune",
        "connection.open-ok",
        "connection.close-ok",
    ]
    (message,) = rows["messages"]
    assert message[4:12] == (
        transfer[4],
        1,
        "message.transfer",
        "amq.direct",
        "q",
        None,
        None,
        False,
    )
    properties = dict(zip(column_names(PROPERTIES), message[14], strict=True))
    assert properties["content_type"] == "text/plain"
    assert properties["delivery_mode"] == 2
    assert json.loads(properties["headers"]) == [{"key": "k", "tag": "long-string", "value": "v"}]
    assert json.loads(properties["reply_to"])["fields"] == {
        "exchange-name": "ex",
        "routing-key": "rk",
    }
    assert message[15:17] == (5, hashlib.sha256(b"hello").hexdigest())
    (connection,) = rows["connections"]
    assert connection[6:8] == ("99-0", "protocol header")
    assert connection[12] == "qpid.py" and connection[17:19] == ("PLAIN", "en_US")
    # Negotiated from the 99-0 tune-ok.
    assert connection[19:24] == (100, 4096, 0, "/draft", "draftuser")
    # 120.10 is message.transfer in 99-0 (no such method in 0-9-1).
    assert connection[24:28] == ("client", 530, "not allowed", "message.transfer")
    assert connection[30:] == (len(client_frames) + len(server_frames), 1, 0)
    assert DRAFT_PASSWORD.decode() not in repr(rows)


def test_draft_delivery_and_server_only_capture(tmp_path: Path) -> None:
    from version_streams import DRAFT_EXAMPLE, DRAFT_STRUCTS, draft_frames

    from amqp_codec import v0_10_draft as draft
    from amqp_codec.wire010 import DraftMethodFrame
    from amqp_codec.wire010.frames import encode_draft_message

    deliver = draft.Message.Transfer(destination="sub-1", confirm_mode=1, acquire_mode=1)
    server = (
        DRAFT_EXAMPLE["start"]
        + draft_frames(DraftMethodFrame(1, draft.Session.Open()))
        + encode_draft_message(1, deliver, DRAFT_STRUCTS, b"x" * 300, frame_max=100)
    )
    conversation = Conversation().handshake()
    conversation.send("server", server).fin("server")
    rows = _tables(analyze_connection(_segments(tmp_path, conversation), ports={5672}))
    assert "problems" not in rows
    (message,) = rows["messages"]
    # Delivered by the broker: the destination names the subscription, not the exchange.
    assert message[2] == "server" and message[6:10] == ("message.transfer", None, "q", "sub-1")
    assert message[15] == 300
    assert [r[6] for r in rows["frames"]].count("body") == 4
    assert rows["connections"][0][6:8] == ("99-0", "connection.start")


def test_a_reused_port_pair_is_two_connections(tmp_path: Path) -> None:
    first = _session(Conversation())
    later = _session(Conversation(ts=1_700_000_100.0, seq={"client": 5_000_000, "server": 7_000}))
    rows = _tables(analyze_connection(_segments(tmp_path, first, later), ports={5672}))
    names = [r[1] for r in rows["connections"]]
    assert names == ["10.1.0.1:40001-10.1.0.2:5672", "10.1.0.1:40001-10.1.0.2:5672#2"]
    assert sorted(r[1] for r in rows["messages"]) == names
    assert not rows.get("problems")
    # Each alone gives the rows it gives within the pair (but for the second one's name).
    alone = _tables(analyze_connection(_segments(tmp_path, later), ports={5672}))
    assert [r[2:] for r in alone["connections"]] == [r[2:] for r in rows["connections"][1:]]


@pytest.mark.parametrize("spec", ["0-9-1", "0-8", "0-10-draft"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_method_json_is_the_general_encoding(spec: str, data: st.DataObject) -> None:
    """The fields column's shortcut writes exactly what encoding ``method_fields`` writes,
    for any method, valid or not (non-ASCII and surrogate strings, tables, credentials)."""
    version = {"0-9-1": v0_9_1, "0-8": v0_8, "0-10-draft": v0_10_draft}[spec]
    method = data.draw(testing.methods(version, valid=data.draw(st.booleans())))
    assert method_json(method) == _dumps(method_fields(method))


@pytest.mark.parametrize(
    "method",
    [
        Basic.Deliver("ctag", 2**63, True, "ex", 'key "quoted"\\'),
        Basic.Publish(exchange="caf\u00e9", routing_key="k\udcff"),
        Connection.StartOk({"product": "x"}, "PLAIN", b"\x00guest\x00secret", "en_US"),
        Channel.Close(0, "", 0, 0),
        Channel.CloseOk(),
        Connection.Start(0, 9, {"capabilities": {"basic.nack": True}, "n": 1}, b"PLAIN", b""),
        Connection.Start(0, 9, {"caps": {"caf\u00e9": None}, "f": 1.5, "a": [1]}, b"\xff", b"x"),
        v0_9_1.Queue.Declare(queue="q", arguments={"x-args": {"deep": {"deeper": "\u00e9"}}}),
    ],
)
def test_method_json_on_strings_it_must_escape_or_leave_to_the_general_way(method: Any) -> None:
    assert method_json(method) == _dumps(method_fields(method))


#: Methods with reserved fields and no field table (their JSON is cached), and a value for
#: each reserved field: the field's type decides which.
_RESERVED_METHODS = [
    Channel.Open(),
    Channel.OpenOk(),
    Connection.Open("/"),
    Basic.Get(queue="q"),
    v0_9_1.Queue.Delete(queue="q"),
    v0_9_1.Exchange.Delete(exchange="x"),
]
_RESERVED_VALUES = {
    "str": st.text(alphabet="abc", max_size=2),
    "bytes": st.binary(max_size=2),
    "int": st.integers(0, 2**16 - 1),
    "bool": st.booleans(),
}


@st.composite
def _with_reserved_values(draw: st.DrawFn) -> Any:
    """One of :data:`_RESERVED_METHODS` with its reserved fields set to drawn values, as a
    peer that sends something other than the default would have them decoded."""
    method = draw(st.sampled_from(_RESERVED_METHODS))
    method = copy.copy(method)
    for spec in dataclasses.fields(method):
        if not spec.compare:
            object.__setattr__(method, spec.name, draw(_RESERVED_VALUES[str(spec.type)]))
    return method


@settings(max_examples=100, deadline=None)
@given(streams=st.lists(st.lists(_with_reserved_values(), min_size=1, max_size=6), max_size=3))
def test_a_repeated_method_is_written_as_it_arrived_reserved_fields_included(
    streams: list[list[Any]],
) -> None:
    """Two methods that differ only in a reserved field are equal, yet each frame's fields
    JSON is that of its own method (the JSON of a repeated method is encoded once)."""
    for number, methods in enumerate(streams):
        data = frames(*(MethodFrame(int(m.CLASS_ID != 10), m) for m in methods))
        dissector = DirectionDissector(connection=f"c{number}", direction="client", bodies=False)
        rows = [
            row for batch, _ in dissector.run_batches([Piece(0, 1.0, data, "f")]) for row in batch
        ]
        assert [row[8] for row in rows] == [method_json(method) for method in methods]


def test_only_small_methods_are_remembered() -> None:
    """The JSON cache is the process's, shared by every stream: it keeps what a frame of at
    most a KiB encodes, so that what it holds stays small whatever arrives (a long string
    in each of thousands of methods), and a large method is written all the same."""
    small = Connection.SecureOk(response=b"x" * 100)
    large = Connection.SecureOk(response=b"y" * 4000)
    streams_module._METHOD_JSON.clear()
    data = frames(MethodFrame(0, small), MethodFrame(0, large), MethodFrame(0, large))
    dissector = DirectionDissector(connection="c", direction="client", bodies=False)
    rows = [row for batch, _ in dissector.run_batches([Piece(0, 1.0, data, "f")]) for row in batch]
    assert [row[8] for row in rows] == [method_json(small), method_json(large), method_json(large)]
    assert list(streams_module._METHOD_JSON) == [small]


def _json_text(value: Any) -> str:
    """JSON as ``json.dumps`` writes it with the tables' options: what ``_dumps`` must write."""
    return json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("spec", ["0-9-1", "0-8"])
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_header_json_is_the_general_encoding(spec: str, data: st.DataObject) -> None:
    """A content header's fields column and its headers column, written directly, are
    exactly what encoding ``frame_fields`` writes, for any properties (non-ASCII and
    surrogate strings, tables, floats in tables), and the headers JSON the same in both."""
    version = {"0-9-1": v0_9_1, "0-8": v0_8}[spec]
    props = data.draw(testing.properties(version))
    frame = ContentHeaderFrame(
        data.draw(st.integers(1, 65535)),
        type(props).CLASS_ID,
        data.draw(st.integers(0, 2**64 - 1)),
        props,
        data.draw(st.integers(0, 65535)),
    )
    _check_header_json(frame)


def _check_header_json(frame: ContentHeaderFrame) -> None:
    """``header_json`` of ``frame``: the general encoding of its fields, and its message's
    properties as the general way finds them, the headers table in the same JSON."""
    general = frame_fields(frame)
    assert general is not None
    fields, properties = header_json(frame)
    assert fields == _json_text(general)
    assert properties == message_properties(frame.properties)
    headers = general["properties"].get("headers")
    column = column_names(PROPERTIES).index("headers")
    assert properties[column] == (None if headers is None else _json_text(headers))


@pytest.mark.parametrize(
    "props",
    [
        v0_9_1.BasicProperties(content_type="caf\u00e9", headers={"k": 1.5}),
        v0_9_1.BasicProperties(message_id="m\udcff", priority=True),
        v0_9_1.BasicProperties(headers={"\u00e9": b"\x00", "x": {"y": None}}, timestamp=7),
        v0_9_1.BasicProperties(),
        v0_9_1.BasicProperties(
            headers={
                "a": "x",
                "b": -1,
                "c": True,
                "d": None,
                "e": {"f": 2},
                "g": 1.5,
                "h": "\u00e9",
            }
        ),
        v0_9_1.BasicProperties(headers={"a": [1, "x"], "b": b"\xff", "c": 2**40}),
    ],
)
def test_header_json_on_values_it_must_leave_to_the_general_way(props: Any) -> None:
    _check_header_json(ContentHeaderFrame(1, 60, 5, props))


def test_a_region_whose_frames_end_at_its_end_reads_nothing_past_it() -> None:
    """Its last piece ends exactly where the region does, with no message in progress: the
    region is done there, and the piece after it is never asked for."""
    head = PROTOCOL_HEADER
    framed = [
        frames(MethodFrame(1, Channel.Open())),
        frames(MethodFrame(1, Basic.Qos(prefetch_count=10))),
        frames(MethodFrame(1, Channel.Close(reply_code=200))),
    ]
    end = len(head) + len(framed[0]) + len(framed[1])
    taken: list[int] = []

    def pieces() -> Iterator[Piece]:
        offset = 0
        for data in [head, *framed]:
            taken.append(offset)
            yield Piece(offset, 1.0, data)
            offset += len(data)

    dissector = DirectionDissector(
        connection="c", direction="client", bodies=False, region=Region(end=end)
    )
    rows = [row for table, row in dissector.run(pieces()) if table == "frames"]
    assert [row[7] for row in rows] == [None, "channel.open", "basic.qos"]
    assert taken == [0, len(head), len(head) + len(framed[0])]  # not the piece at ``end``
    assert dissector.edge.end == end


def test_a_later_region_checks_each_start_before_its_first_frame_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Garbage that comes piece by piece before a later region's first frame: each place a
    frame could start is checked once, not again with every piece added (that made a
    stream of garbage cost in proportion to the square of what a region gathered)."""
    # Every seventh octet could start a frame (a frame-type octet); none's header holds up.
    # More than one batch of bytes fed at once (64 KiB), in pieces of 700.
    garbage = b"\x01\xff\xff\xff\xff\xff\xff" * 30_000
    framed = frames(
        MethodFrame(1, Channel.Open()),
        MethodFrame(1, Basic.Qos(prefetch_count=10)),
        MethodFrame(1, Channel.Flow(active=True)),
        MethodFrame(1, Basic.Qos(prefetch_count=20)),
        MethodFrame(1, Channel.Close(reply_code=200)),
    )
    stream = garbage + framed
    checked: list[int] = []
    chain = streams_module._chain

    def counted(data: Any, pos: int, *args: Any) -> bool | None:
        checked.append(pos)
        return chain(data, pos, *args)

    monkeypatch.setattr(streams_module, "_chain", counted)
    region = Region(index=1, start=0, spec=v0_9_1.SPEC)
    dissector = DirectionDissector(connection="c", direction="client", bodies=False, region=region)
    pieces = [
        Piece(offset, 1.0, stream[offset : offset + 700]) for offset in range(0, len(stream), 700)
    ]
    rows = [row for table, row in dissector.run(iter(pieces)) if table == "frames"]
    assert dissector.edge.sync == len(garbage)
    # The first frame on the channel goes to the driver, which knows the channel's state.
    assert [offset for offset, _channel, _row in dissector.edge.deferred] == [len(garbage)]
    assert [row[7] for row in rows] == ["basic.qos", "channel.flow", "basic.qos", "channel.close"]
    assert len(checked) == len(set(checked))  # no start checked twice
    assert len(garbage) // 7 <= len(checked) <= len(garbage) // 7 + 2


def test_a_later_region_gives_up_its_search_within_the_resync_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Garbage built so that every eighth octet starts a plausible body frame of almost a
    MiB whose frame-end octet is in place, and whose next frame is not: each such candidate
    is copied to be decoded on trial. The region decodes no more than the dissector's resync
    budget allows for the bytes it gathered, then gives up its search (the driver then
    dissects the stream in one pass); without the budget, minutes of copying."""
    garbage = bytes.fromhex("030001000FCE0E00") * (3 * 2**20 // 8)
    tried: list[int] = []

    def counted(candidate: bytes, spec: Any, *args: Any) -> bool:
        tried.append(len(candidate))
        return resync.decodes_alone(candidate, spec, *args)

    monkeypatch.setattr(streams_module, "decodes_alone", counted)
    region = Region(index=1, start=0, spec=v0_9_1.SPEC)
    dissector = DirectionDissector(connection="c", direction="client", bodies=False, region=region)
    pieces = [
        Piece(offset, 1.0, garbage[offset : offset + 65000])
        for offset in range(0, len(garbage), 65000)
    ]
    assert list(dissector.run(iter(pieces))) == []
    assert dissector.edge.sync is None and dissector.sync_search.refused
    assert len(tried) > 1  # candidates were tried before the budget ran out
    assert sum(tried) <= RESYNC_WORK_ALLOWANCE + RESYNC_WORK_PER_BYTE * len(garbage)


@pytest.mark.parametrize("reads_to_end", [False, True])
def test_a_later_region_whose_bytes_run_out_takes_none_of_it_for_the_streams_end(
    reads_to_end: bool,
) -> None:
    """A region before the last is given the bytes up to some way past its end. If they run
    out while it is still checking the frames after its candidate first frame, it takes the
    candidate (the driver's check sees whether it is where the region before ends), but not
    the end of its bytes for the stream's: the message it was following there is left to a
    pass over the whole stream (``overflow``), not cut by a truncated frame. At the stream's
    real end, the cut frame is the stream's."""
    body = bytes(range(256)) * 40
    framed = frames(
        MethodFrame(1, Basic.Publish(exchange="ex", routing_key="k")),
        ContentHeaderFrame(1, 60, len(body), v0_9_1.BasicProperties()),
        ContentBodyFrame(1, body[:4000]),
        ContentBodyFrame(1, body[4000:8000]),
        ContentBodyFrame(1, body[8000:]),
    )
    given = framed[:6000]  # the second body frame is cut: the chain is not all there
    region = Region(index=1, start=0, end=100, spec=v0_9_1.SPEC, reads_to_end=reads_to_end)
    dissector = DirectionDissector(connection="c", direction="client", bodies=False, region=region)
    pieces = [Piece(offset, 1.0, given[offset : offset + 500]) for offset in range(0, 6000, 500)]
    rows = list(dissector.run(iter(pieces)))
    assert dissector.edge.sync == 0
    assert [row for table, row in rows if table == "problems"] == []  # past the region's end
    second_body = len(framed) - len(body[4000:]) - 16  # two body frames of 8 bytes' framing
    if reads_to_end:
        assert not dissector.edge.overflow
        (follow,) = dissector.edge.follows
        assert follow.end == second_body  # the message was cut there, with the stream
    else:
        assert dissector.edge.overflow  # the frame after it goes on past the bytes it has
