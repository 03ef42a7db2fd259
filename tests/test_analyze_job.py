"""The Spark job end to end on a local SparkSession: tables, problems, redaction, report, CLI.

One analysis of a folder of captures (real ones from ``samples/`` and ones built here with
dpkt) runs once for the module; the tests read its tables back through Spark.
"""

from __future__ import annotations

import gc
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import report_reference
from spark_support import (
    PASSWORD,
    PROTOCOL_HEADER,
    Conversation,
    closing,
    frames,
    interleave,
    message_frames,
    opening,
    spark,
    write_pcap,
)

from amqp_codec.analyze import AnalyzeUsageError, run
from amqp_codec.analyze.preflight import resolve_captures
from amqp_codec.analyze.report import summarize
from amqp_codec.analyze.streams import REDACTED, connection_name, endpoints
from amqp_codec.capture.packets import Segment, read_capture
from amqp_codec.capture.tcp import connection_key, reassemble, syn_servers
from amqp_codec.cli import main
from amqp_codec.frames import MethodFrame
from amqp_codec.inspect.dissector import StreamDissector
from amqp_codec.inspect.jsonlines import JsonReporter
from amqp_codec.v0_9_1 import Basic, Connection

__all__ = ["spark"]  # the session fixture, imported for pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
AMQPLAIN_PASSWORD = b"amqplain-Pa55"
TOKEN = b"oauth2-token-t0k3n"
FANOUT_BODY = b"fanout body " * 1000


@dataclass
class Analysis:
    out: Path
    built: dict[str, Conversation]
    tables: dict[str, list[dict[str, Any]]]


def _rows(spark: Any, path: Path) -> list[dict[str, Any]]:
    return [row.asDict(recursive=True) for row in spark.read.parquet(str(path)).collect()]


def _built_captures(folder: Path) -> tuple[dict[str, Conversation], list[str]]:
    """Captures exercising joins, detection and damage; returns the conversations by name."""
    built: dict[str, Conversation] = {}

    # Two channels publishing multi-frame messages, their frames interleaved.
    multi = Conversation(client=("10.1.0.1", 40001)).handshake()
    client, server = opening((1, 2))
    multi.send("client", client).send("server", server)
    body1, body2 = bytes(range(256)) * 40, b"second body " * 700
    multi.send(
        "client",
        frames(
            *interleave(
                message_frames(1, "orders", "eu.new", body1), message_frames(2, "", "q2", body2)
            )
        ),
        mss=1000,
    )
    deliver = frames(
        MethodFrame(
            1,
            Basic.Deliver(
                consumer_tag="ctag", delivery_tag=7, exchange="orders", routing_key="eu.new"
            ),
        ),
        *message_frames(1, "", "", b"delivered")[1:],
    )
    multi.send("server", deliver)
    close_c, close_s = closing()
    multi.send("client", close_c).send("server", close_s).fin("client").fin("server")
    built["multi"] = multi

    # AMQP on a port that is not configured, AMQPLAIN login: found by its protocol header.
    other = Conversation(client=("10.1.0.3", 40003), server=("10.1.0.4", 15672), ts=1_700_000_100.0)
    table = (
        b"\x05LOGINS\x00\x00\x00\x04carl\x08PASSWORDS"
        + len(AMQPLAIN_PASSWORD).to_bytes(4, "big")
        + AMQPLAIN_PASSWORD
    )
    other.handshake().send(
        "client",
        PROTOCOL_HEADER
        + frames(MethodFrame(0, Connection.StartOk(mechanism="AMQPLAIN", response=table))),
    )
    other.send("server", frames(MethodFrame(0, Connection.Start()))).fin("client")
    built["other-port"] = other

    # HTTP on port 80: not AMQP, not on an AMQP port: ignored.
    web = Conversation(client=("10.1.0.5", 40005), server=("10.1.0.6", 80), ts=1_700_000_200.0)
    web.handshake().send("client", b"GET / HTTP/1.1\r\n\r\n").send(
        "server", b"HTTP/1.1 200 OK\r\n\r\n"
    )
    built["web"] = web

    # HTTP on the AMQP port: an unknown protocol.
    wrong = Conversation(client=("10.1.0.7", 40007), ts=1_700_000_300.0)
    wrong.handshake().send("client", b"GET / HTTP/1.1\r\n\r\n")
    built["unknown"] = wrong

    # A lost segment in the middle of a message; decoding goes on after it.
    lossy = Conversation(client=("10.1.0.9", 40009), ts=1_700_000_400.0).handshake()
    client, server = opening()
    lossy.send("client", client).send("server", server)
    lossy.send(
        "client", frames(*message_frames(1, "logs", "lost", b"x" * 5000)), mss=1000, lose=(2,)
    )
    lossy.send("client", frames(*message_frames(1, "logs", "after", b"y" * 100)))
    built["gap"] = lossy

    # Garbage on the AMQP port, captured without the handshake.
    noise = Conversation(client=("10.1.0.11", 40011), ts=1_700_000_500.0)
    noise.send("client", bytes((i * 37 + 11) % 251 for i in range(3000)))
    built["garbage"] = noise

    # One message published once and delivered to two consumers; a token refreshed.
    fanout = Conversation(client=("10.1.0.13", 40013), ts=1_700_000_600.0).handshake()
    client, server = opening((1, 2))
    fanout.send("client", client).send("server", server)
    fanout.send("client", frames(MethodFrame(0, Connection.UpdateSecret(new_secret=TOKEN))))
    fanout.send("client", frames(*message_frames(1, "events", "user.created", FANOUT_BODY)))
    for channel in (1, 2):
        fanout.send(
            "server",
            frames(
                MethodFrame(
                    channel,
                    Basic.Deliver(
                        consumer_tag=f"c{channel}",
                        delivery_tag=1,
                        exchange="events",
                        routing_key="user.created",
                    ),
                ),
                *message_frames(channel, "", "", FANOUT_BODY)[1:],
            ),
        )
    built["fanout"] = fanout

    write_pcap(folder / "built.pcap", *built.values())
    os.mkfifo(folder / "live.pcap")  # a pipe someone left: skipped, never opened
    # A capture cut in the middle of a packet record.
    whole = write_pcap(folder / "whole.tmp", built["multi"]).read_bytes()
    (folder / "truncated.pcap").write_bytes(whole[: len(whole) - 50])
    (folder / "whole.tmp").unlink()
    junk = folder.parent / "not-a-capture.pcap"
    junk.write_bytes(b"this is not a capture file")
    return built, [str(folder), str(junk)]


@pytest.fixture(scope="module")
def analysis(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    base = tmp_path_factory.mktemp("analysis")
    folder = base / "captures"
    folder.mkdir()
    shutil.copy(SAMPLES / "pika-session.pcap", folder)
    built, inputs = _built_captures(folder)
    out = base / "out"
    thresholds = gc.get_threshold()
    summary = run(inputs, str(out), spark=spark, progress=False)
    # The driver eases the collector while it works (job._collector_eased), only then.
    assert gc.get_threshold() == thresholds
    tables = {name: _rows(spark, out / name) for name in summary.counts}
    assert summary.counts == {name: len(rows) for name, rows in tables.items()}
    return Analysis(out, built, tables)


# ------------------------------------------------------------------------------------------
# The single-process reference: the stream's bytes through StreamDissector and JsonReporter
# ------------------------------------------------------------------------------------------


def _reference(data: bytes) -> list[dict[str, Any]]:
    """What ``amqp-codec decode --json`` says about a stream, as frames-table columns."""
    buffer = io.StringIO()
    reporter = JsonReporter(buffer, 0)
    dissector = StreamDissector()
    from amqp_codec.inspect.command import _report  # the decode command's own event routing

    spec = _report(reporter, "stream", dissector.feed(data), dissector.spec or _default())
    _report(reporter, "stream", dissector.finish(), spec)
    rows = []
    for line in buffer.getvalue().splitlines():
        obj = json.loads(line)
        if obj["kind"] != "frame":
            continue
        if obj["type"] == "method":
            fields = obj["fields"]
            if obj["method"] in ("connection.start-ok", "connection.secure-ok"):
                fields = {**fields, "response": REDACTED}
        elif obj["type"] == "header":
            keys = ("class_id", "body_size", "weight", "property_flags", "properties")
            fields = {k: obj[k] for k in keys}
        elif obj["type"] == "protocol-header":
            fields = {"protocol_id": obj["protocol_id"], "version": obj["version"]}
        else:
            fields = None
        rows.append(
            {
                "offset": obj["offset"],
                "channel": obj["channel"],
                "frame_type": obj["type"],
                "method": obj.get("method"),
                "fields": fields,
                "size": obj["length"],
            }
        )
    return rows


def _default() -> Any:
    from amqp_codec.inspect.dissector import DEFAULT_SPEC

    return DEFAULT_SPEC


def _table_frames(analysis: Analysis, connection: str, direction: str) -> list[dict[str, Any]]:
    rows = [
        r
        for r in analysis.tables["frames"]
        if r["connection"] == connection and r["direction"] == direction
    ]
    rows.sort(key=lambda r: r["offset"])
    return [
        {
            "offset": r["offset"],
            "channel": r["channel"],
            "frame_type": r["frame_type"],
            "method": r["method"],
            "fields": None if r["fields"] is None else json.loads(r["fields"]),
            "size": r["size"],
        }
        for r in rows
    ]


def _streams_of(paths: list[str]) -> Iterator[tuple[str, str, bytes]]:
    """(connection, direction, bytes) of every connection in ``paths``, read in one process."""
    groups: dict[Any, list[Segment]] = defaultdict(list)
    for path in resolve_captures(paths)[0]:
        for item in read_capture(path):
            if isinstance(item, Segment):
                groups[endpoints(item)].append(item)
    for segs in groups.values():
        servers = syn_servers(segs)
        by_direction: dict[str, list[Segment]] = defaultdict(list)
        key = None
        for seg in segs:
            key, direction = connection_key(seg, (5672,), servers)
            by_direction[direction].append(seg)
        assert key is not None
        for direction, mine in by_direction.items():
            yield connection_name(key), direction, b"".join(reassemble(mine).chunks())


def test_frames_equal_decode_of_the_recorded_streams(analysis: Analysis) -> None:
    # samples/pika-session.pcap holds the connection whose bytes the .bin files hold.
    names = {r["connection"] for r in analysis.tables["connections"] if r["client_port"] != 40001}
    pika = [
        r["connection"]
        for r in analysis.tables["connections"]
        if r["client_product"] == "Pika Python Client Library"
    ]
    assert len(pika) == 1, names
    for direction in ("client", "server"):
        data = (SAMPLES / f"pika-session.{direction}.bin").read_bytes()
        expected = _reference(data)
        assert len(expected) > 10
        assert _table_frames(analysis, pika[0], direction) == expected


def test_frames_equal_decode_of_the_sent_bytes(analysis: Analysis) -> None:
    for name in ("multi", "other-port"):
        conversation = analysis.built[name]
        connection = connection_name((*conversation.client, *conversation.server))
        for direction in ("client", "server"):
            expected = _reference(bytes(conversation.sent[direction]))
            assert expected
            assert _table_frames(analysis, connection, direction) == expected


def test_frames_have_time_capture_and_no_problem(analysis: Analysis) -> None:
    multi = analysis.built["multi"]
    connection = connection_name((*multi.client, *multi.server))
    rows = [r for r in analysis.tables["frames"] if r["connection"] == connection]
    assert {r["capture"].rsplit("/", 1)[-1] for r in rows} <= {"built.pcap", "truncated.pcap"}
    times = [ts for ts, _ in multi.packets]
    assert all(min(times) <= r["timestamp"] <= max(times) for r in rows)
    assert all(r["problem"] is None for r in rows)


# ------------------------------------------------------------------------------------------
# messages, connections
# ------------------------------------------------------------------------------------------


def test_messages_join_multi_frame_bodies_on_interleaved_channels(analysis: Analysis) -> None:
    multi = analysis.built["multi"]
    connection = connection_name((*multi.client, *multi.server))
    rows = sorted(
        (r for r in analysis.tables["messages"] if r["connection"] == connection),
        key=lambda r: (r["direction"], r["channel"]),
    )
    body1, body2 = bytes(range(256)) * 40, b"second body " * 700
    assert [
        (
            r["direction"],
            r["channel"],
            r["method"],
            r["exchange"],
            r["routing_key"],
            r["body_size"],
            r["body_sha256"],
        )
        for r in rows
    ] == [
        (
            "client",
            1,
            "basic.publish",
            "orders",
            "eu.new",
            len(body1),
            hashlib.sha256(body1).hexdigest(),
        ),
        ("client", 2, "basic.publish", "", "q2", len(body2), hashlib.sha256(body2).hexdigest()),
        (
            "server",
            1,
            "basic.deliver",
            "orders",
            "eu.new",
            9,
            hashlib.sha256(b"delivered").hexdigest(),
        ),
    ]
    assert all(r["body"] is None for r in rows)  # only with bodies=True
    props = rows[0]["properties"]
    assert props["content_type"] == "text/plain" and props["priority"] == 3
    assert json.loads(props["headers"]) == [{"key": "n", "tag": "I", "value": len(body1)}]
    deliver = rows[2]
    assert (deliver["consumer_tag"], deliver["delivery_tag"], deliver["redelivered"]) == (
        "ctag",
        7,
        False,
    )
    # The method frame's offset and time locate the message in the stream.
    frames_at = {
        (r["direction"], r["offset"]): r["method"]
        for r in analysis.tables["frames"]
        if r["connection"] == connection
    }
    assert all(frames_at[(r["direction"], r["offset"])] == r["method"] for r in rows)


def test_connections_join_both_directions(analysis: Analysis) -> None:
    by_port = {r["client_port"]: r for r in analysis.tables["connections"]}
    multi = by_port[40001]
    assert multi["protocol"] == "0-9-1" and multi["detected_by"] == "protocol header"
    assert (multi["channel_max"], multi["frame_max"], multi["heartbeat"]) == (64, 4096, 30)
    assert (multi["vhost"], multi["user"], multi["mechanism"]) == ("/test", "analyst", "PLAIN")
    assert (multi["client_product"], multi["client_version"]) == ("test-client", "9.8.7")
    assert multi["server_product"] == "test-broker"
    assert (multi["closed_by"], multi["close_reply_code"], multi["close_reply_text"]) == (
        "client",
        200,
        "Goodbye",
    )
    assert multi["messages"] == 3 and multi["problems"] == 0
    assert multi["client_bytes"] == len(analysis.built["multi"].sent["client"])
    other = by_port[40003]
    assert (other["server_port"], other["user"], other["mechanism"]) == (15672, "carl", "AMQPLAIN")
    assert other["closed_by"] == "tcp-fin"
    assert 40005 not in by_port  # HTTP on port 80 is not AMQP
    assert 40007 not in by_port  # HTTP on the AMQP port is a problem, not a connection


# ------------------------------------------------------------------------------------------
# problems, never failures
# ------------------------------------------------------------------------------------------


def test_damaged_inputs_become_problems(analysis: Analysis) -> None:
    problems = analysis.tables["problems"]
    kinds = {(r["kind"], r["error"]) for r in problems}
    by_capture = {
        (r["capture"].rsplit("/", 1)[-1], r["error"]) for r in problems if r["kind"] == "capture"
    }
    assert ("truncated.pcap", "truncated-file") in by_capture
    assert ("not-a-capture.pcap", "not-a-capture") in by_capture
    assert ("live.pcap", "named-pipe") in by_capture
    assert ("unknown-protocol", "unknown-protocol") in kinds
    unknown = [r for r in problems if r["kind"] == "unknown-protocol"]
    assert [r["connection"] for r in unknown] == ["10.1.0.7:40007-10.1.0.2:5672"]
    assert b"GET / HTTP".hex() in unknown[0]["detail"]
    garbage = [r for r in problems if r["connection"] == "10.1.0.11:40011-10.1.0.2:5672"]
    assert {r["kind"] for r in garbage} >= {"gap", "resync"}


def test_decoding_goes_on_after_a_gap(analysis: Analysis) -> None:
    lossy = analysis.built["gap"]
    connection = connection_name((*lossy.client, *lossy.server))
    gaps = [
        r
        for r in analysis.tables["problems"]
        if r["connection"] == connection and r["kind"] == "gap"
    ]
    assert len(gaps) == 1 and "1000 bytes missing" in gaps[0]["detail"]
    after = [r["routing_key"] for r in analysis.tables["messages"] if r["connection"] == connection]
    assert after == ["after"]  # the message cut by the gap is lost, the next one is whole
    late = [
        r
        for r in analysis.tables["frames"]
        if r["connection"] == connection and r["offset"] > gaps[0]["offset"]
    ]
    assert any(r["method"] == "basic.publish" for r in late)


# ------------------------------------------------------------------------------------------
# credentials
# ------------------------------------------------------------------------------------------


def test_credentials_are_redacted_everywhere(analysis: Analysis, spark: Any) -> None:
    secrets = [PASSWORD, AMQPLAIN_PASSWORD, TOKEN]
    for name, rows in analysis.tables.items():
        text = repr(rows).encode()
        for secret in secrets:
            assert secret not in text, name
            assert secret.hex().encode() not in text, name
    for path in analysis.out.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(secret in data for secret in secrets), path
    start_oks = [r for r in analysis.tables["frames"] if r["method"] == "connection.start-ok"]
    assert start_oks and all(json.loads(r["fields"])["response"] == REDACTED for r in start_oks)


def test_bodies_are_kept_on_request(spark: Any, tmp_path: Path) -> None:
    conversation = Conversation(client=("10.2.0.1", 41000)).handshake()
    client, server = opening()
    body = b"\x00\xffbody" * 2000
    conversation.send("client", client).send("server", server)
    conversation.send("client", frames(*message_frames(1, "x", "k", body)))
    capture = write_pcap(tmp_path / "bodies.pcap", conversation)
    run([str(capture)], str(tmp_path / "out"), spark=spark, progress=False, bodies=True)
    rows = _rows(spark, tmp_path / "out" / "messages")
    assert [bytes(r["body"]) for r in rows] == [body]


def test_no_captures_is_refused_before_spark_starts(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("not a capture")
    with pytest.raises(AnalyzeUsageError, match=r"no pcap or pcapng capture files in .*1 file"):
        run(str(tmp_path / "empty"), str(tmp_path / "out"), progress=False)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------
# the command line and the report
# ------------------------------------------------------------------------------------------


def test_cli_analyze_end_to_end(spark: Any, tmp_path: Path) -> None:
    captures = SAMPLES / "captures"
    if not any(captures.glob("*.pcap*")):
        captures = tmp_path / "captures"
        captures.mkdir()
        _built_captures(captures)
    stdout = io.StringIO()
    with redirect_stdout(stdout):
        status = main(["analyze", str(captures), "--out", str(tmp_path / "out"), "--quiet"])
    assert status == 0
    text = stdout.getvalue()
    counts = {
        name: len(_rows(spark, tmp_path / "out" / name)) for name in ("frames", "connections")
    }
    assert f"frames {counts['frames']:,} rows" in " ".join(text.split())
    assert counts["frames"] > 0 and counts["connections"] > 0
    assert (tmp_path / "out" / "report.html").is_file()
    # The same frames as the single-process decoder finds in the reassembled streams.
    table = _rows(spark, tmp_path / "out" / "frames")
    seen = 0
    for connection, direction, data in _streams_of([str(captures)]):
        got = sorted(
            (r for r in table if r["connection"] == connection and r["direction"] == direction),
            key=lambda r: r["offset"],
        )
        expected = _reference(data)
        assert [
            (r["offset"], r["channel"], r["frame_type"], r["method"], r["size"], r["fields"])
            for r in got
        ] == [
            (
                e["offset"],
                e["channel"],
                e["frame_type"],
                e["method"],
                e["size"],
                None
                if e["fields"] is None
                else json.dumps(e["fields"], separators=(",", ":"), ensure_ascii=False),
            )
            for e in expected
        ]
        seen += len(got)
    assert seen == counts["frames"] > 0


def _chromium() -> str | None:
    path = shutil.which("chromium") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None
    )
    return path


def test_report_renders_in_headless_chromium(analysis: Analysis) -> None:
    browser = _chromium()
    if browser is None:
        if os.environ.get("AMQP_CODEC_REQUIRE_CHROMIUM") == "1":
            pytest.fail("chromium is required (AMQP_CODEC_REQUIRE_CHROMIUM=1) but not installed")
        pytest.skip("chromium is not installed (set AMQP_CODEC_REQUIRE_CHROMIUM=1 to require it)")
    page = analysis.out / "report.html"
    text = page.read_text(encoding="utf-8")
    # Self-contained: no script, nothing loaded from elsewhere, and small.
    assert not re.search(r"<(script|link|img|iframe)\b", text)
    assert page.stat().st_size < 1_500_000
    charts = text.count('<svg class="chart"')
    assert charts >= 8, charts
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    # Every chart is in the rendered page, with its bars or lines drawn.
    assert dom.count('class="chart"') == charts
    assert dom.count("<rect") >= charts and "<polyline" in dom
    for title in (
        "Messages over time",
        "Top exchanges",
        "Method mix",
        "Problems by kind",
        "Inputs",
    ):
        assert title in dom


def _role(row: dict[str, Any]) -> str:
    if row["method"] == "message.transfer":
        return f"message.transfer {row['direction']}"
    return str(row["method"])


def test_summary_counts_each_thing_once_and_the_report_shows_it(analysis: Analysis) -> None:
    summary = json.loads((analysis.out / "summary.json").read_text(encoding="utf-8"))
    tables = analysis.tables
    assert summary["tables"] == {name: len(rows) for name, rows in tables.items()}
    messages = tables["messages"]
    assert summary["messages"] == dict(sorted(Counter(_role(r) for r in messages).items()))
    # One publish, two deliveries: never "three messages" for the exchange.
    events = next(e for e in summary["top_exchanges"]["by_messages"] if e["exchange"] == "events")
    assert events["counts"] == {"basic.deliver": 2, "basic.publish": 1}
    for entry in summary["top_exchanges"]["by_messages"]:
        expected = Counter(_role(r) for r in messages if r["exchange"] == entry["exchange"])
        assert entry["counts"] == dict(expected)
    # The largest messages list each message once, with what happened to it.
    largest = summary["largest_messages"]
    keys = [(e["body_sha256"], e["body_size"], e["exchange"], e["routing_key"]) for e in largest]
    assert len(keys) == len(set(keys))
    fanout = [e for e in largest if e["body_sha256"] == hashlib.sha256(FANOUT_BODY).hexdigest()]
    assert [e["counts"] for e in fanout] == [{"basic.deliver": 2, "basic.publish": 1}]
    assert [e["body_size"] for e in largest] == sorted(
        (e["body_size"] for e in largest), reverse=True
    )
    # The rate's buckets hold every message with a time, over the capture's own span.
    rate = summary["message_rate"]
    timed = Counter(_role(r) for r in messages if r["timestamp"] is not None)
    assert {k: sum(v) for k, v in rate["counts"].items()} == dict(timed)
    stamps = [r["timestamp"] for r in tables["frames"] if r["timestamp"] is not None]
    assert (rate["start"], rate["end"]) == (min(stamps), max(stamps))
    codes = [c["code"] for c in summary["reply_codes"]]
    assert codes == sorted(codes)
    # The inputs: every capture read, with its size; the pipe skipped.
    files = summary["inputs"]["files"]
    assert all(f["bytes"] == os.path.getsize(f["path"]) for f in files)
    assert {Path(f["path"]).name for f in files} >= {"built.pcap", "pika-session.pcap"}
    assert [Path(s["path"]).name for s in summary["inputs"]["skipped"]] == ["live.pcap"]
    # The page shows what the JSON holds.
    page = (analysis.out / "report.html").read_text(encoding="utf-8")
    for label in summary["message_labels"].values():
        assert label in page
    assert "live.pcap" in page and "named-pipe" in page


def test_paths_may_be_pathlib_paths(spark: Any, tmp_path: Path) -> None:
    captures = tmp_path / "captures"
    captures.mkdir()
    _built_captures(captures)
    summary = run([captures], tmp_path / "out", spark=spark, progress=False)
    assert summary.out == str(tmp_path / "out")
    assert summary.counts["frames"] > 0
    assert len(_rows(spark, tmp_path / "out" / "frames")) == summary.counts["frames"]


def test_a_master_the_running_session_cannot_honour_is_refused(spark: Any, tmp_path: Path) -> None:
    # One SparkContext per process: running silently on the session already open would
    # report a cluster run that never happened.
    with pytest.raises(ValueError, match="already running"):
        run(
            [str(SAMPLES / "pika-session.pcap")],
            str(tmp_path / "out"),
            master="spark://127.0.0.1:1",
            progress=False,
        )


# ------------------------------------------------------------------------------------------
# summary.json against the figures plain Spark SQL computes
# ------------------------------------------------------------------------------------------


def _figures(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary as JSON gives it back, without the tool's name."""
    text = json.loads(json.dumps({k: v for k, v in summary.items() if k != "generated_by"}))
    return dict(text)


def _captures_read(summary: dict[str, Any]) -> list[str]:
    return [f["path"] for f in summary["inputs"]["files"]]


def test_summary_holds_the_figures_plain_spark_sql_computes(spark: Any, analysis: Analysis) -> None:
    summary = json.loads((analysis.out / "summary.json").read_text(encoding="utf-8"))
    expected = report_reference.figures(spark, str(analysis.out), _captures_read(summary))
    assert _figures(summary) == _figures(expected)
    # Recomputed from the tables alone (rows counted, capture files named by the tables).
    again = summarize(spark, str(analysis.out))
    assert _figures(again) == _figures(report_reference.figures(spark, str(analysis.out)))


def test_summary_of_generated_traffic_holds_the_plain_spark_sql_figures(
    spark: Any, tmp_path: Path
) -> None:
    from tools.gen_captures import generate

    # Many connections publishing, consuming, fetching and getting messages returned, over
    # files the connections span: every figure has several entries.
    made = generate(tmp_path / "captures", 1_500_000, 3, seed=7, concurrency=12)
    result = run([str(p) for p in made.files], str(tmp_path / "out"), spark=spark, progress=False)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["messages"]["basic.publish"] == made.counts.published
    assert len(summary["top_routing_keys"]["by_messages"]) == 15
    assert summary["reply_codes"] and summary["largest_messages"]
    expected = report_reference.figures(spark, result.out, [str(p) for p in made.files])
    assert _figures(summary) == _figures(expected)


def _table_rows(table: str, rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Rows given by column name (the others None) as the table's tuples."""
    from amqp_codec.analyze.tables import TABLES

    names = [c.name for c in TABLES[table]]
    assert all(set(row) <= set(names) for row in rows)
    return [tuple(row.get(name) for name in names) for row in rows]


def test_summary_orders_ties_and_missing_values_as_spark_sql(spark: Any, tmp_path: Path) -> None:
    # Tables written by hand: missing exchanges, keys and sizes; counts tied across keys;
    # keys outside ASCII; 99-0 transfers by sender; every table spread over several files.
    from amqp_codec.analyze.parquet import TableWriters

    out = tmp_path / "out"
    keys = [None, "", "a", "b", "é", "z", "\u4e2d", "a.b", "A"] + [f"k{i}" for i in range(20)]
    methods = ["basic.publish", "basic.deliver", "basic.get-ok", "basic.return"]
    for part in range(3):
        writers = TableWriters(str(out), f"{part:05d}")
        for i in range(120):
            n = i + part * 1000
            transfer = n % 11 == 0
            writers.add(
                "messages",
                _table_rows(
                    "messages",
                    [
                        {
                            "capture": f"c{part}.pcap",
                            "connection": f"conn{n % 4}",
                            "direction": ["client", "server", None][n % 3],
                            "timestamp": None if n % 17 == 0 else 1000.0 + (n * 7919) % 500,
                            "offset": n % 9,
                            "method": "message.transfer" if transfer else methods[n % 4],
                            # An exchange and a key whose messages all lack a size.
                            "exchange": "sizeless" if n % 13 == 0 else keys[n % 5],
                            "routing_key": "sizeless" if n % 13 == 0 else keys[(n * 3) % len(keys)],
                            "body_size": None if n % 13 == 0 else (n * 37) % 60,
                            "body_sha256": f"h{(n * 37) % 60 % 7}",
                        }
                    ],
                )[0],
            )
            writers.add(
                "frames",
                _table_rows(
                    "frames",
                    [
                        {
                            "capture": f"c{part}.pcap",
                            "connection": f"conn{n % 4}",
                            "direction": ["client", "server", None][n % 3],
                            "timestamp": 999.0 + (n * 13) % 600,
                            "offset": n,
                            "frame_type": "method" if n % 5 else "body",
                            "method": ["channel.close", "basic.return", "connection.close"][n % 3]
                            if n % 4 == 0
                            else methods[n % 4],
                            "fields": json.dumps(
                                {
                                    "reply-code": [320, 404, None, "312"][n % 4],
                                    "reply-text": keys[n % 9],
                                }
                            )
                            if n % 7
                            else "not json",
                        }
                    ],
                )[0],
            )
            if n % 3 == 0:
                writers.add(
                    "problems",
                    _table_rows(
                        "problems",
                        [
                            {
                                "capture": None if n % 21 == 0 else f"c{n % 4}.pcap",
                                "packet": None if n % 5 == 0 else n % 6,
                                "connection": keys[n % 4],
                                "direction": ["client", None][n % 2],
                                "offset": n % 3,
                                "kind": ["decode", "gap", "capture"][n // 3 % 3],
                                "error": keys[n // 3 % 6],
                                "detail": f"d{n}",
                            }
                        ],
                    )[0],
                )
            if n % 4 == 0:
                writers.add(
                    "connections",
                    _table_rows(
                        "connections",
                        [
                            {
                                "connection": f"conn{n}",
                                "client_product": keys[n % 6],
                                "client_version": keys[n % 3],
                            }
                        ],
                    )[0],
                )
        writers.close()
    captures = ["c0.pcap", "c1.pcap", "c3.pcap", "elsewhere.pcap"]
    got = summarize(spark, str(out), None, captures)
    assert _figures(got) == _figures(report_reference.figures(spark, str(out), captures))
    assert got["inputs"]["skipped"] and got["problems"] and got["clients"]
    by_bytes = got["top_exchanges"]["by_bytes"]
    assert by_bytes[-1] == {
        "exchange": "sizeless",
        "counts": {r: 0 for r in by_bytes[-1]["counts"]},
    }


def test_the_report_read_by_spark_or_by_the_driver_is_the_same(
    spark: Any, analysis: Analysis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small tables are read by the driver (tops.DRIVER_BYTES); with no such allowance the
    same figures come from the Spark jobs."""
    from amqp_codec.analyze import tops

    here = summarize(spark, str(analysis.out))
    monkeypatch.setattr(tops, "DRIVER_BYTES", -1)
    assert summarize(spark, str(analysis.out)) == here
