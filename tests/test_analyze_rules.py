"""What the receiving peer would refuse is a ``problems`` row (:mod:`amqp_codec.analyze.rules`).

Each rule is checked on a crafted connection in one pass (:func:`analyze_connection`), with
the reply code a broker (or client) would answer with; then the same connections go through
the job's stages at split sizes that cut them into many regions, and every table must equal
the one pass (the rules' state crosses region edges: channels opened before, the time of the
frame before, a handshake the head did not show).
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest
from spark_support import (
    PROTOCOL_HEADER,
    Conversation,
    closing,
    frames,
    message_frames,
    opening,
    write_pcap,
)
from test_analyze_regions import _check

from amqp_codec.analyze.streams import analyze_connection
from amqp_codec.capture.packets import Segment, read_capture
from amqp_codec.frames import ContentBodyFrame, HeartbeatFrame, MethodFrame
from amqp_codec.v0_9_1 import Basic, Channel, Connection

pytest.importorskip("pyarrow.parquet")


def _rows(*conversations: Conversation, tmp_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    path = write_pcap(tmp_path / "c.pcap", *conversations)
    segments = [s for s in read_capture(str(path)) if isinstance(s, Segment)]
    out: dict[str, list[tuple[Any, ...]]] = collections.defaultdict(list)
    for table, row in analyze_connection(segments, ports=(5672,)):
        out[table].append(row)
    return out


def _problems(rows: dict[str, list[tuple[Any, ...]]], kind: str) -> list[tuple[Any, ...]]:
    return [r for r in rows["problems"] if r[6] == kind]


def _opened(conversation: Conversation, channels: tuple[int, ...] = (1,)) -> Conversation:
    client, server = opening(channels)  # tune-ok: channel_max 64, frame_max 4096, heartbeat 30
    return conversation.handshake().send("client", client).send("server", server)


def test_a_frame_over_the_negotiated_frame_max(tmp_path: Path) -> None:
    c = _opened(Conversation())
    publish = message_frames(1, "ex", "k", b"x" * 6027, frame_max=6035)  # one 6035-byte body
    offset = len(c.sent["client"]) + len(frames(*publish[:2]))
    c.send("client", frames(*publish))
    rows = _rows(c, tmp_path=tmp_path)
    [problem] = rows["problems"]
    assert problem[6:11] == ("frame-too-large", "frame-too-large", 501, 1, None)
    assert problem[5] == offset
    assert "6035 bytes" in problem[12] and "frame_max 4096" in problem[12]
    [frame] = [f for f in rows["frames"] if f[4] == offset]
    assert frame[10] == problem[12]


def test_frames_before_tune_ok_are_not_held_to_frame_max(tmp_path: Path) -> None:
    c = Conversation().handshake()
    big = {"product": "p" * 5000}
    c.send(
        "client",
        PROTOCOL_HEADER
        + frames(
            MethodFrame(
                0, Connection.StartOk(client_properties=big, mechanism="PLAIN", response=b"\0a\0b")
            ),
            MethodFrame(0, Connection.TuneOk(channel_max=64, frame_max=4096, heartbeat=0)),
        ),
    )
    assert not _rows(c, tmp_path=tmp_path)["problems"]


def test_a_method_the_other_peer_sends(tmp_path: Path) -> None:
    c = _opened(Conversation())
    c.send("client", frames(MethodFrame(1, Basic.Deliver(consumer_tag="c", delivery_tag=1))))
    c.send("server", frames(MethodFrame(1, Basic.Publish(exchange="x"))))
    found = {(r[3], r[10], r[8]) for r in _problems(_rows(c, tmp_path=tmp_path), "wrong-peer")}
    assert found == {("client", "basic.deliver", 503), ("server", "basic.publish", 503)}


def test_a_channel_over_channel_max(tmp_path: Path) -> None:
    c = _opened(Conversation())
    c.send("client", frames(MethodFrame(64, Channel.Open()), MethodFrame(65, Channel.Open())))
    [problem] = _problems(_rows(c, tmp_path=tmp_path), "channel-over-max")
    assert (problem[8], problem[9], problem[10]) == (530, 65, "channel.open")


def test_frames_on_a_channel_that_is_not_open(tmp_path: Path) -> None:
    c = _opened(Conversation(), (1,))
    # Channel 7 was never opened: its first frame is reported, not every one after it.
    c.send(
        "client", frames(*message_frames(7, "ex", "k", b"a"), *message_frames(7, "ex", "k", b"b"))
    )
    # Channel 1 closed by the server, then used: reported once; open again: fine.
    c.send("server", frames(MethodFrame(1, Channel.Close(reply_code=406, reply_text="NO"))))
    c.send("client", frames(MethodFrame(1, Channel.CloseOk())))
    c.send(
        "client", frames(*message_frames(1, "ex", "k", b"c"), *message_frames(1, "ex", "k", b"d"))
    )
    c.send("client", frames(MethodFrame(1, Channel.Open()), *message_frames(1, "ex", "k", b"e")))
    # The server delivers on a channel it never opened.
    c.send("server", frames(MethodFrame(9, Basic.Deliver(consumer_tag="c", delivery_tag=1))))
    rows = _rows(c, tmp_path=tmp_path)
    found = [(r[3], r[9], r[10], r[8]) for r in _problems(rows, "channel-not-open")]
    assert found == [
        ("client", 7, "basic.publish", 504),
        ("client", 1, "basic.publish", 504),
        ("server", 9, "basic.deliver", 504),
    ]


def test_a_content_frame_alone_on_a_closed_channel(tmp_path: Path) -> None:
    """No method frame before it: the content frame itself is what the peer refuses."""
    c = _opened(Conversation(), (1,))
    c.send("server", frames(MethodFrame(1, Channel.Close(reply_code=406, reply_text="NO"))))
    c.send("client", frames(MethodFrame(1, Channel.CloseOk())))
    offset = len(c.sent["client"])
    c.send("client", frames(ContentBodyFrame(1, b"orphan"), ContentBodyFrame(1, b"again")))
    found = [(r[3], r[5], r[9]) for r in _problems(_rows(c, tmp_path=tmp_path), "channel-not-open")]
    assert found == [("client", offset, 1)]  # reported once


def test_frames_after_this_sides_own_channel_close_are_not_problems(tmp_path: Path) -> None:
    """The peer discards them until its close-ok (RabbitMQ does so without a word)."""
    c = _opened(Conversation(), (1,))
    c.send("client", frames(MethodFrame(1, Channel.Close(reply_code=200))))
    c.send("client", frames(*message_frames(1, "ex", "k", b"after")))
    c.send("server", frames(MethodFrame(1, Channel.CloseOk())))
    assert not _rows(c, tmp_path=tmp_path)["problems"]


def test_frames_in_flight_after_the_peer_closed_the_channel_are_not_problems(
    tmp_path: Path,
) -> None:
    c = _opened(Conversation(), (1,))
    c.send("server", frames(MethodFrame(1, Channel.Close(reply_code=404, reply_text="NOT_FOUND"))))
    c.send("client", frames(*message_frames(1, "ex", "k", b"late")))  # sent before it knew
    c.send("client", frames(MethodFrame(1, Channel.CloseOk())))
    assert not _rows(c, tmp_path=tmp_path)["problems"]


def test_a_peer_silent_for_over_twice_the_heartbeat(tmp_path: Path) -> None:
    c = _opened(Conversation())  # heartbeat 30 s
    c.send("client", frames(HeartbeatFrame(0)))
    c.ts += 45  # under 60 s: fine
    c.send("client", frames(HeartbeatFrame(0))).send("server", frames(HeartbeatFrame(0)))
    c.ts += 50
    c.send("server", frames(HeartbeatFrame(0)))
    c.ts += 25  # 75 s since the client's last frame
    c.send("client", frames(HeartbeatFrame(0)))
    # Then the client goes quiet for good while the server beats on and finally closes.
    for _ in range(5):
        c.ts += 25
        c.send("server", frames(HeartbeatFrame(0)))
    c.fin("server")
    problems = _problems(_rows(c, tmp_path=tmp_path), "heartbeat-missed")
    assert [(r[3], r[8]) for r in problems] == [("client", None), ("client", None)]
    assert "75.0 s" in problems[0][12] and problems[0][5] is not None
    assert "connection's end" in problems[1][12] and problems[1][5] is None


def test_a_silence_before_a_content_frame(tmp_path: Path) -> None:
    """The silence ends with a message's body frame, on an open channel, not a method."""
    c = _opened(Conversation())  # heartbeat 30 s
    method, header, body = message_frames(1, "ex", "k", b"late body")
    c.send("client", frames(method, header)).send("server", frames(HeartbeatFrame(0)))
    c.ts += 40
    c.send("server", frames(HeartbeatFrame(0)))
    c.ts += 35  # 75 s since the client's header frame
    offset = len(c.sent["client"])
    c.send("client", frames(body))
    problems = _problems(_rows(c, tmp_path=tmp_path), "heartbeat-missed")
    assert [(r[3], r[5]) for r in problems] == [("client", offset)]
    assert "75.0 s" in problems[0][12]


def test_no_heartbeat_problem_after_connection_close(tmp_path: Path) -> None:
    c = _opened(Conversation())
    client_close, server_close = closing()
    c.send("client", client_close).send("server", server_close)
    c.ts += 200  # both sides closed the connection: the socket may linger
    c.fin("server").fin("client")
    assert not _rows(c, tmp_path=tmp_path)["problems"]


def _all_rules(conversation: Conversation) -> Conversation:
    """A long connection breaking every rule, several times, spread over its length."""
    c = _opened(conversation, (1, 2))
    for round_ in range(4):
        c.send("client", frames(*message_frames(1, "ex", f"r{round_}", b"m" * 3000)), mss=700)
        c.send("client", frames(*message_frames(3, "ex", "no", b"n" * 10)), mss=300)
        c.send("server", frames(MethodFrame(2, Channel.Close(reply_code=404))))
        c.send("client", frames(MethodFrame(2, Channel.CloseOk())))
        c.send("client", frames(*message_frames(2, "ex", "closed", b"c" * 5000)), mss=500)
        c.send("client", frames(MethodFrame(2, Channel.Open())))
        c.send("server", frames(MethodFrame(2, Channel.OpenOk())))
        c.send("client", frames(ContentBodyFrame(1, b"y" * 5000)), mss=900)  # too large, orphan
        c.send("server", frames(MethodFrame(5, Basic.Deliver(consumer_tag="t", delivery_tag=1))))
        c.send("client", frames(MethodFrame(1, Basic.Deliver(consumer_tag="t", delivery_tag=1))))
        c.send("client", frames(MethodFrame(80 + round_, Channel.Open())))
        c.ts += 61 + round_ * 10
        c.send("client", frames(HeartbeatFrame(0)))
        c.ts += 10
        c.send("server", frames(HeartbeatFrame(0)))
    c.ts += 100
    c.send("server", frames(HeartbeatFrame(0)))
    return c.fin("server").fin("client")


def _late_handshake(conversation: Conversation) -> Conversation:
    """A client whose start-ok is over 8 KiB: its tune-ok lies past the stream's head."""
    c = conversation.handshake()
    big = {"product": "p" * 9000}
    client = PROTOCOL_HEADER + frames(
        MethodFrame(
            0, Connection.StartOk(client_properties=big, mechanism="PLAIN", response=b"\0a\0b")
        ),
        MethodFrame(0, Connection.TuneOk(channel_max=8, frame_max=4096, heartbeat=5)),
        MethodFrame(0, Connection.Open(virtual_host="/")),
        MethodFrame(1, Channel.Open()),
    )
    _, server = opening((1,))
    c.send("client", client, mss=1000).send("server", server)
    for _ in range(3):
        c.send("client", frames(*message_frames(1, "ex", "k", b"q" * 6000, frame_max=8000)))
        c.send("client", frames(MethodFrame(9, Channel.Open())))
        c.ts += 11
    return c.fin("client").fin("server")


@pytest.mark.parametrize("split_bytes", [300, 1000, 4000, 1 << 30])
def test_the_rules_across_regions_equal_one_pass(tmp_path: Path, split_bytes: int) -> None:
    folder = tmp_path / "captures"
    folder.mkdir()
    write_pcap(folder / "rules.pcap", _all_rules(Conversation()))
    write_pcap(
        folder / "late.pcap",
        _late_handshake(Conversation(client=("10.1.0.9", 40009), ts=1_700_000_000.0004)),
    )
    _check([str(folder)], tmp_path / "out", split_bytes)


def test_the_crafted_connection_breaks_every_rule(tmp_path: Path) -> None:
    """The connection the region test splits does exercise every rule, repeatedly."""
    rows = _rows(_all_rules(Conversation()), tmp_path=tmp_path)
    kinds = collections.Counter(r[6] for r in rows["problems"])
    for kind in ("frame-too-large", "wrong-peer", "channel-over-max", "channel-not-open"):
        assert kinds[kind] >= 4, kind
    assert kinds["heartbeat-missed"] >= 4
    late = _rows(
        _late_handshake(Conversation(client=("10.1.0.9", 40009))), tmp_path=tmp_path / ".."
    )
    late_kinds = collections.Counter(r[6] for r in late["problems"])
    assert late_kinds["channel-over-max"] == 3 and late_kinds["frame-too-large"] == 3


def test_a_handshake_cut_by_a_split_end_is_read_on_not_dissected_again(tmp_path: Path) -> None:
    """A head cut short by its split's end is completed from the next splits, so the limits
    the later regions need are known and nothing is dissected twice."""
    c = Conversation().handshake()
    client, server = opening((1,))
    c.send("client", client[:8]).send("server", server[:100], mss=30)
    c.send("client", client[8:], mss=30).send("server", server[100:], mss=30)
    for _ in range(6):
        c.send("client", frames(*message_frames(1, "ex", "k", b"x" * 3000)), mss=500)
    folder = tmp_path / "captures"
    folder.mkdir()
    write_pcap(folder / "slow.pcap", c.fin("client").fin("server"))
    for split_bytes in (500, 700):
        assert _check([str(folder)], tmp_path / f"out{split_bytes}", split_bytes) == 0
