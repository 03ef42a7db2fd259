"""The connection layer (amqp_codec.Connection): handshake, channels, content, confirms,
errors, closes and heartbeats, each side checked against the other or against raw frames."""

from __future__ import annotations

import struct

import pytest
from connection_support import frames, opened, pair, pump, with_channel

from amqp_codec import (
    Connection,
    ContentBodyFrame,
    HeartbeatFrame,
    LocalProtocolError,
    MethodFrame,
    RemoteProtocolError,
    encode_frame,
    v0_8,
    v0_9_1,
)
from amqp_codec.errors import AccessRefused, NotFound, PreconditionFailed
from amqp_codec.events import (
    ChannelClosed,
    ChannelOpened,
    ConnectionBlocked,
    ConnectionClosed,
    ConnectionOpened,
    ConnectionUnblocked,
    HeartbeatTimeout,
    MessageReceived,
    MethodReceived,
    PublishConfirmed,
)
from amqp_codec.sasl import amqplain_response, parse_response, plain_response
from amqp_codec.v0_9_1 import Basic, BasicProperties, Channel, Confirm, Queue
from amqp_codec.v0_9_1 import Connection as C

# -- handshake ------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [v0_9_1, v0_8], ids=["0-9-1", "0-8"])
def test_handshake_opens_both_sides(spec) -> None:
    client, server = pair(spec, client_client_properties={"connection_name": "t"})
    assert client.data_to_send()[:4] == b"AMQP"  # queued at construction
    client = Connection("client", spec=spec, client_properties={"connection_name": "t"})
    client_events, server_events = pump(client, server)
    (c,) = client_events
    (s,) = server_events
    assert isinstance(c, ConnectionOpened) and isinstance(s, ConnectionOpened)
    assert (c.frame_max, c.channel_max, c.heartbeat) == (s.frame_max, s.channel_max, s.heartbeat)
    assert s.username == "guest"
    assert s.peer_properties["connection_name"] == "t"
    if spec is v0_9_1:
        assert s.peer_properties["capabilities"]["publisher_confirms"] is True
        assert c.peer_properties["capabilities"]["publisher_confirms"] is True
    else:  # 0-8 has no capabilities, nor the boolean tag to say them in
        assert "capabilities" not in s.peer_properties and "capabilities" not in c.peer_properties


@pytest.mark.parametrize(
    ("client_opts", "server_opts", "expected"),
    [
        ({}, {}, (131072, 2047, 60)),
        ({"frame_max": 8192, "channel_max": 5}, {}, (8192, 5, 60)),
        ({}, {"frame_max": 4096, "channel_max": 3}, (4096, 3, 60)),
        ({"frame_max": 0, "channel_max": 0}, {"frame_max": 0, "channel_max": 0}, (0, 0, 60)),
        ({"frame_max": 0}, {"frame_max": 65536}, (65536, 2047, 60)),
        ({"heartbeat": 0}, {"heartbeat": 30}, (131072, 2047, 0)),
        ({"heartbeat": 10}, {"heartbeat": 30}, (131072, 2047, 10)),
        ({"heartbeat": 10}, {"heartbeat": 0}, (131072, 2047, 0)),
        ({"heartbeat": None}, {"heartbeat": 15}, (131072, 2047, 15)),
    ],
)
def test_tune_the_lower_limit_wins_and_zero_means_none(client_opts, server_opts, expected) -> None:
    client = Connection("client", **client_opts)
    server = Connection("server", **server_opts)
    (c,), (s,) = pump(client, server)
    assert (c.frame_max, c.channel_max, c.heartbeat) == expected
    assert (s.frame_max, s.channel_max, s.heartbeat) == expected


def test_negotiated_frame_max_splits_content_and_limits_the_decoder() -> None:
    client, server, ch = with_channel(client_frame_max=4096)
    body = bytes(range(256)) * 40  # 10240 bytes: three body frames
    client.send(ch, Basic.Publish(routing_key="q"), BasicProperties(), body)
    wire = client.data_to_send()
    bodies = [f for f in frames(wire) if isinstance(f, ContentBodyFrame)]
    assert [len(f.payload) for f in bodies] == [4088, 4088, 2064]
    (event,) = server.receive_data(wire)
    assert isinstance(event, MessageReceived) and event.body == body
    # A frame over the negotiated size is a hard 501 on the receiving side.
    big = encode_frame(MethodFrame(ch, Queue.Declare(queue="x" * 200, arguments={"a": "b" * 5000})))
    with pytest.raises(RemoteProtocolError) as info:
        server.receive_data(big)
    assert info.value.reply_code == 501


@pytest.mark.parametrize(
    ("mechanism", "response"),
    [
        ("PLAIN", plain_response("ann", "secret")),
        ("AMQPLAIN", amqplain_response("ann", "secret")),
        ("EXTERNAL", b""),
    ],
)
def test_sasl_mechanisms_reach_authenticate(mechanism: str, response: bytes) -> None:
    seen = []

    def authenticate(mech: str, resp: bytes) -> str | None:
        seen.append((mech, resp))
        return "ann"

    client = Connection("client", username="ann", password="secret", mechanism=mechanism)
    server = Connection(
        "server", authenticate=authenticate, mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL")
    )
    _, (opened_event,) = pump(client, server)
    assert seen == [(mechanism, response)]
    assert opened_event.username == "ann"
    if mechanism != "EXTERNAL":
        assert parse_response(mechanism, response) == ("ann", "secret")


def test_refused_login_closes_with_403_on_both_sides() -> None:
    client = Connection("client", username="guest", password="wrong")
    server = Connection("server")
    (c,), (s,) = pump(client, server)
    assert isinstance(c, ConnectionClosed) and c.by_peer and c.reply_code == 403
    assert isinstance(s, ConnectionClosed) and not s.by_peer and s.reply_code == 403
    assert isinstance(c.exception(), AccessRefused)
    assert client.state == server.state == "closed"


def test_server_asks_with_secure_when_start_ok_has_no_response() -> None:
    server = Connection("server")
    server.receive_data(b"AMQP\x00\x00\x09\x01")
    server.data_to_send()
    start_ok = C.StartOk(mechanism="PLAIN", response=b"")
    server.receive_data(encode_frame(MethodFrame(0, start_ok)))
    (secure,) = frames(server.data_to_send())
    assert isinstance(secure.method, C.Secure)
    server.receive_data(
        encode_frame(MethodFrame(0, C.SecureOk(response=plain_response("guest", "guest"))))
    )
    (tune,) = frames(server.data_to_send())
    assert isinstance(tune.method, C.Tune)


def test_client_answers_a_secure_challenge_with_its_response() -> None:
    client = Connection("client", mechanism="PLAIN")
    client.data_to_send()
    client.receive_data(encode_frame(MethodFrame(0, C.Start(mechanisms=b"PLAIN"))))
    client.data_to_send()
    client.receive_data(encode_frame(MethodFrame(0, C.Secure(challenge=b"?"))))
    (secure_ok,) = frames(client.data_to_send())
    assert secure_ok.method == C.SecureOk(response=plain_response("guest", "guest"))


@pytest.mark.parametrize(
    "header", [b"AMQP\x01\x01\x00\x0a", b"AMQP\x00\x00\x09\x02", b"GET / HTTP/1.1\r\n"]
)
def test_unsupported_header_is_answered_with_the_servers_header(header: bytes) -> None:
    server = Connection("server")
    with pytest.raises(RemoteProtocolError) as info:
        server.receive_data(header)
    assert info.value.reply_code is None
    assert server.data_to_send() == b"AMQP\x00\x00\x09\x01"
    assert server.state == "closed"


def test_the_0_9_header_and_no_access_request_are_accepted() -> None:
    # The .NET client: "AMQP 1 1 0 9", connection.open with insist set, no access.request.
    server = Connection("server")
    server.receive_data(b"AMQP\x01\x01\x00\x09")
    server.receive_data(
        encode_frame(MethodFrame(0, C.StartOk(response=plain_response("guest", "guest"))))
    )
    server.receive_data(
        encode_frame(MethodFrame(0, C.TuneOk(channel_max=10, frame_max=8192, heartbeat=0)))
    )
    # connection.open: vhost "/", reserved-1 "" and the reserved bit (insist) set.
    open_payload = struct.pack(">HH", 10, 40) + b"\x01/" + b"\x00" + b"\x01"
    frame = struct.pack(">BHI", 1, 0, len(open_payload)) + open_payload + b"\xce"
    (event,) = server.receive_data(frame)
    assert isinstance(event, ConnectionOpened) and (event.frame_max, event.channel_max) == (
        8192,
        10,
    )
    server.receive_data(encode_frame(MethodFrame(1, Channel.Open())))
    (event,) = server.receive_data(encode_frame(MethodFrame(1, Queue.Declare(queue="q"))))
    assert event == MethodReceived(1, Queue.Declare(queue="q"))


def test_client_sees_a_refused_version() -> None:
    client = Connection("client")
    client.data_to_send()
    (event,) = client.receive_data(b"AMQP\x00\x00\x09\x01")
    assert isinstance(event, ConnectionClosed) and event.by_peer and "0-9-1" in event.reply_text


def test_tune_ok_over_the_proposal_is_refused_with_530() -> None:
    server = Connection("server", frame_max=8192)
    server.receive_data(b"AMQP\x00\x00\x09\x01")
    server.receive_data(
        encode_frame(MethodFrame(0, C.StartOk(response=plain_response("guest", "guest"))))
    )
    with pytest.raises(RemoteProtocolError) as info:
        server.receive_data(encode_frame(MethodFrame(0, C.TuneOk(frame_max=16384))))
    assert info.value.reply_code == 530
    (close,) = frames(server.data_to_send())[-1:]
    assert isinstance(close.method, C.Close) and close.method.reply_code == 530


# -- channels and the synchronous discipline ------------------------------------------------


def test_channel_numbers_are_allocated_and_reused() -> None:
    client, server = opened()
    assert [client.open_channel(), client.open_channel(), client.open_channel()] == [1, 2, 3]
    c, s = pump(client, server)
    assert c == s == [ChannelOpened(1), ChannelOpened(2), ChannelOpened(3)]
    client.close_channel(2)
    pump(client, server)
    assert client.open_channel() == 2


def test_channel_max_bounds_the_numbers() -> None:
    client, _server = opened(client_channel_max=2)
    client.open_channel(), client.open_channel()
    with pytest.raises(LocalProtocolError, match="all 2 channels"):
        client.open_channel()


def test_local_mistakes_raise_and_change_nothing() -> None:
    client, server, ch = with_channel()
    cases = [
        lambda: client.send(5, Queue.Declare(queue="q")),  # not open
        lambda: client.send(ch, Basic.Deliver()),  # server-only
        lambda: client.send(ch, Channel.Close()),  # the layer's own
        lambda: client.send(ch, Queue.DeclareOk(queue="q")),  # answers nothing
        lambda: client.send(0, C.Close()),  # use close()
        lambda: client.send(ch, Queue.Declare(), BasicProperties()),  # no content
        lambda: client.send(ch, v0_8.Queue.Declare(queue="q")),  # another version's method
        lambda: server.open_channel(),
        lambda: client.close_channel(9),
    ]
    for case in cases:
        with pytest.raises(LocalProtocolError):
            case()
        assert client.data_to_send() == b"" and server.data_to_send() == b""
    client.send(ch, Queue.Declare(queue="a"))
    with pytest.raises(LocalProtocolError, match="one synchronous request at a time"):
        client.send(ch, Queue.Declare(queue="b"))
    client.send(ch, Queue.Declare(queue="c", no_wait=True))  # no reply awaited: allowed
    client.send(ch, Basic.Publish(), BasicProperties(), b"x")  # asynchronous: allowed
    _, server_events = pump(client, server)
    assert [type(e) for e in server_events] == [MethodReceived, MethodReceived, MessageReceived]
    server.send(ch, Queue.DeclareOk(queue="a"))
    with pytest.raises(LocalProtocolError, match="answers no request"):
        server.send(ch, Queue.DeclareOk(queue="c"))
    client_events, _ = pump(client, server)
    assert client_events == [MethodReceived(ch, Queue.DeclareOk(queue="a"))]
    client.send(ch, Queue.Declare(queue="b"))  # the first reply came: the next may go


def test_deliveries_interleave_with_a_synchronous_reply() -> None:
    client, server, ch = with_channel()
    other = client.open_channel()
    pump(client, server)
    client.send(ch, Basic.Get(queue="q"))
    pump(client, server)
    server.send(other, Basic.Deliver(consumer_tag="t", delivery_tag=1), BasicProperties(), b"a")
    server.send(ch, Basic.Deliver(consumer_tag="t", delivery_tag=2), BasicProperties(), b"b")
    server.send(ch, Basic.GetOk(delivery_tag=3), BasicProperties(), b"c")
    events, _ = pump(client, server)
    assert [(e.channel, e.body) for e in events] == [(other, b"a"), (ch, b"b"), (ch, b"c")]
    client.send(ch, Basic.Get(queue="q"))  # get-ok answered the first get


def test_a_reply_nobody_asked_for_is_a_hard_503() -> None:
    client, _server, ch = with_channel()
    with pytest.raises(RemoteProtocolError) as info:
        client.receive_data(encode_frame(MethodFrame(ch, Queue.DeclareOk(queue="q"))))
    assert info.value.reply_code == 503
    (close,) = frames(client.data_to_send())
    assert isinstance(close.method, C.Close) and close.channel == 0


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (MethodFrame(1, Basic.Deliver()), 503),  # chassis: a server-only method from a client
        (MethodFrame(7, Queue.Declare(queue="q")), 504),  # channel not open
        (MethodFrame(1, Channel.Open()), 504),  # already open
        (MethodFrame(0, C.Tune()), 503),  # a handshake method after the handshake
    ],
)
def test_server_answers_bad_client_frames_with_a_hard_close(frame, code) -> None:
    _client, server, _ch = with_channel()
    with pytest.raises(RemoteProtocolError) as info:
        server.receive_data(encode_frame(frame))
    assert info.value.reply_code == code
    (close,) = frames(server.data_to_send())
    assert isinstance(close.method, C.Close) and close.method.reply_code == code
    # Until close-ok, everything else from the client is ignored.
    assert server.receive_data(encode_frame(MethodFrame(1, Queue.Declare(queue="q")))) == []
    (event,) = server.receive_data(encode_frame(MethodFrame(0, C.CloseOk())))
    assert event == ConnectionClosed(
        code, close.method.reply_text, False, close.method.class_id, close.method.method_id
    )


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x01\x00\x00\x00\x00\x00\x04\x00\x0a\x00\x0aXX",
        b"\x09\x00\x00\x00\x00\x00\x00\xce",
        b"\xff" * 20,
    ],
)
def test_garbage_gets_a_close_and_only_remote_protocol_error(garbage: bytes) -> None:
    _client, server = opened()
    with pytest.raises(RemoteProtocolError) as info:
        server.receive_data(garbage)
    assert info.value.reply_code in (501, 502, 503, 505)
    (close,) = frames(server.data_to_send())
    assert isinstance(close.method, C.Close)


# -- soft errors ------------------------------------------------------------------------------


def test_a_body_over_max_body_size_closes_its_channel_only() -> None:
    client, server = opened(server_max_body_size=1000)
    one, two = client.open_channel(), client.open_channel()
    pump(client, server)
    client.send(one, Basic.Publish(routing_key="big"), BasicProperties(), b"x" * 5000)
    client.send(two, Basic.Publish(routing_key="ok"), BasicProperties(), b"fine")
    with pytest.raises(RemoteProtocolError) as info:
        server.receive_data(client.data_to_send())
    error = info.value
    assert (error.reply_code, error.channel) == (406, one)
    assert [(type(e), e.channel) for e in error.events] == [(MessageReceived, two)]
    answer = server.data_to_send()
    (close,) = frames(answer)
    assert close.channel == one and isinstance(close.method, Channel.Close)
    assert (close.method.reply_code, close.method.class_id, close.method.method_id) == (406, 60, 40)
    client_events = client.receive_data(answer)
    more_client_events, server_events = pump(client, server)
    assert more_client_events == []
    assert client_events == [ChannelClosed(one, 406, close.method.reply_text, True, 60, 40)]
    assert server_events == [ChannelClosed(one, 406, close.method.reply_text, False, 60, 40)]
    assert isinstance(client_events[0].exception(), PreconditionFailed)
    client.send(two, Basic.Publish(routing_key="ok"), BasicProperties(), b"again")
    _, (event,) = pump(client, server)
    assert event.body == b"again"


# -- confirms ---------------------------------------------------------------------------------


def test_confirm_tags_are_counted_on_both_sides() -> None:
    client, server, ch = with_channel()
    client.send(ch, Confirm.Select())
    _, (select,) = pump(client, server)
    assert select == MethodReceived(ch, Confirm.Select())
    server.send(ch, Confirm.SelectOk())
    pump(client, server)
    for n in range(5):
        client.send(ch, Basic.Publish(routing_key="q"), BasicProperties(), b"%d" % n)
    pump(client, server)
    with pytest.raises(LocalProtocolError):
        server.send(ch, Basic.Ack(delivery_tag=6))
    server.send(ch, Basic.Ack(delivery_tag=2, multiple=True))
    server.send(ch, Basic.Nack(delivery_tag=4))
    with pytest.raises(LocalProtocolError):
        server.send(ch, Basic.Ack(delivery_tag=4))  # already nacked
    server.send(ch, Basic.Ack(delivery_tag=5, multiple=True))
    events, _ = pump(client, server)
    assert events == [
        PublishConfirmed(ch, 2, True, True),
        PublishConfirmed(ch, 4, False, False),
        PublishConfirmed(ch, 5, True, True),
    ]


def test_a_confirm_is_reported_as_the_server_sent_it() -> None:
    client, server, ch = with_channel()
    client.send(ch, Confirm.Select())
    pump(client, server)
    server.send(ch, Confirm.SelectOk())
    pump(client, server)
    client.send(ch, Basic.Publish(), BasicProperties(), b"x")
    pump(client, server)
    # Tag 2 was never published (a publish written around the layer, say): reported anyway.
    events = client.receive_data(
        encode_frame(MethodFrame(ch, Basic.Ack(delivery_tag=2, multiple=True)))
    )
    assert events == [PublishConfirmed(ch, 2, True, True)]
    assert client.is_open and client.channel_is_open(ch)


# -- flow, blocked ---------------------------------------------------------------------------


def test_flow_pauses_content_and_blocked_is_reported() -> None:
    client, server, ch = with_channel()
    server.send(ch, Channel.Flow(active=False))
    (event,), _ = pump(client, server)
    assert event == MethodReceived(ch, Channel.Flow(active=False))
    with pytest.raises(LocalProtocolError, match="paused"):
        client.send(ch, Basic.Publish(), BasicProperties(), b"x")
    client.send(ch, Channel.FlowOk(active=False))
    pump(client, server)
    server.send(ch, Channel.Flow(active=True))
    pump(client, server)
    client.send(ch, Basic.Publish(), BasicProperties(), b"x")
    server.send(0, C.Blocked(reason="low on memory"))
    server.send(0, C.Unblocked())
    events, _ = pump(client, server)
    assert events == [ConnectionBlocked("low on memory"), ConnectionUnblocked()]


# -- closes -----------------------------------------------------------------------------------


def test_close_handshakes_both_ways() -> None:
    client, server, ch = with_channel()
    server.close_channel(ch, 404, "NOT_FOUND - no queue")
    c, s = pump(client, server)
    assert c == [ChannelClosed(ch, 404, "NOT_FOUND - no queue", True)]
    assert s == [ChannelClosed(ch, 404, "NOT_FOUND - no queue", False)]
    assert isinstance(c[0].exception(), NotFound)
    server.close(320, "CONNECTION_FORCED - bye")
    c, s = pump(client, server)
    assert c == [ConnectionClosed(320, "CONNECTION_FORCED - bye", True)]
    assert s == [ConnectionClosed(320, "CONNECTION_FORCED - bye", False)]
    with pytest.raises(LocalProtocolError):
        client.open_channel()


def test_both_sides_closing_a_channel_at_once() -> None:
    client, server, ch = with_channel()
    client.close_channel(ch)
    server.close_channel(ch, 406, "PRECONDITION_FAILED - x")
    to_server, to_client = client.data_to_send(), server.data_to_send()
    assert server.receive_data(to_server) == []
    assert client.receive_data(to_client) == []
    c, s = pump(client, server)
    assert c == [ChannelClosed(ch, 200, "", False)]
    assert s == [ChannelClosed(ch, 406, "PRECONDITION_FAILED - x", False)]


def test_after_close_the_peers_methods_are_discarded() -> None:
    client, server, ch = with_channel()
    client.close()
    server.send(ch, Basic.Deliver(), BasicProperties(), b"late")
    assert client.receive_data(server.data_to_send()) == []
    c, s = pump(client, server)
    assert c == [ConnectionClosed(200, "", False)] and s == [ConnectionClosed(200, "", True)]


def test_socket_closed_after_a_servers_close_completes_it() -> None:
    # The Erlang client closes the socket instead of sending close-ok.
    _client, server = opened()
    server.close(320, "bye")
    assert server.receive_data(b"") == [ConnectionClosed(320, "bye", False)]
    _, server2 = opened()
    (event,) = server2.receive_data(b"")
    assert event.by_peer and event.reply_code == 0


# -- heartbeats -------------------------------------------------------------------------------


def test_heartbeats_are_sent_when_idle_and_a_silent_peer_times_out() -> None:
    client, _server = opened(client_heartbeat=10)
    assert client.heartbeat == 10
    assert client.next_deadline() == 0.0
    assert client.tick(100.0) == []
    assert client.next_deadline() == 110.0
    assert client.tick(105.0) == [] and client.data_to_send() == b""
    assert client.tick(110.0) == []
    assert frames(client.data_to_send()) == [HeartbeatFrame(0)]
    client.receive_data(encode_frame(HeartbeatFrame(0)))
    assert client.tick(115.0) == []  # the peer spoke: its clock restarts at 115
    assert client.tick(134.0) == []
    assert client.tick(135.0) == [HeartbeatTimeout()]
    assert client.state == "closed" and client.next_deadline() is None


def test_heartbeat_zero_switches_them_off() -> None:
    client, server = opened(client_heartbeat=0)
    assert client.next_deadline() is None and server.next_deadline() is None
    assert client.tick(1e9) == [] and client.data_to_send() == b""


# -- 0-8 ---------------------------------------------------------------------------------------


def test_0_8_sends_insist_and_follows_a_redirect() -> None:
    client = Connection("client", spec=v0_8, insist=True)
    client.data_to_send()
    M = v0_8.Connection
    client.receive_data(encode_frame(MethodFrame(0, M.Start())))
    client.receive_data(encode_frame(MethodFrame(0, M.Tune(frame_max=8192))))
    sent = frames(client.data_to_send(), v0_8)
    assert sent[-1].method == M.Open(virtual_host="/", insist=True)
    events = client.receive_data(encode_frame(MethodFrame(0, M.Redirect(host="other:5672"))))
    assert isinstance(events[-1], ConnectionClosed) and "other:5672" in events[-1].reply_text
    assert client.state == "closed"


def test_0_8_access_request_goes_to_the_application() -> None:
    client, server, ch = with_channel(v0_8)
    client.send(ch, v0_8.Access.Request(realm="/data", active=True, read=True))
    _, (event,) = pump(client, server)
    assert isinstance(event.method, v0_8.Access.Request)
    server.send(ch, v0_8.Access.RequestOk(ticket=101))
    (event,), _ = pump(client, server)
    assert event.method.ticket == 101
