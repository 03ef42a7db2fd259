"""The ``amqp-codec decode`` command line: human and JSON output, problems, resync, exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from amqp_codec import (
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    Tagged,
    Timestamp,
    cli,
    encode_frame,
    encode_message,
)
from amqp_codec.inspect import command as decode_command
from amqp_codec.inspect.dissector import StreamDissector
from amqp_codec.v0_9_1 import Basic, BasicProperties, Channel, Connection, Queue

REPO = Path(__file__).resolve().parent.parent

ARGUMENTS: dict[str, Any] = {
    "x-max-length": 10,
    "x-nested": {"level": {"deep": Tagged("b", -3)}},
    "x-list": [1, "two", {"k": True}],
    "x-bytes": b"\x00\xff",
    "x-dec": Decimal("3.14"),
    "x-ts": Timestamp(1700000000),
    "x-void": None,
    "x-float": 1.5,
    "x-nan": float("nan"),
    "x-latin1": Tagged("S", b"caf\xe9"),
}
BODY = b"hello world " * 500  # 6000 bytes: two body frames at frame_max 4096
PROPERTIES = BasicProperties(
    content_type="text/plain",
    headers={"x-death": [{"count": 1, "queue": "q0"}]},
    delivery_mode=2,
    timestamp=Timestamp(1700000000),
)
PUBLISH = Basic.Publish(exchange="", routing_key="q1")


def client_frames() -> list[Frame]:
    """A client stream with every frame type, tables nested three deep and a split body."""
    return [
        ProtocolHeader(),
        MethodFrame(
            0,
            Connection.StartOk(
                client_properties={"product": "test", "capabilities": {"basic.nack": True}},
                mechanism="PLAIN",
                response=b"\x00guest\x00guest",
            ),
        ),
        MethodFrame(0, Connection.TuneOk(channel_max=2047, frame_max=4096, heartbeat=60)),
        MethodFrame(0, Connection.Open(virtual_host="/")),
        MethodFrame(1, Channel.Open()),
        MethodFrame(1, Queue.Declare(queue="q1", durable=True, arguments=ARGUMENTS)),
        MethodFrame(1, PUBLISH),
        ContentHeaderFrame(1, 60, len(BODY), PROPERTIES),
        ContentBodyFrame(1, BODY[:4088]),
        ContentBodyFrame(1, BODY[4088:]),
        HeartbeatFrame(),
        MethodFrame(0, Connection.Close(reply_code=200, reply_text="bye")),
    ]


def encode_all(frames: list[Frame]) -> tuple[bytes, list[int]]:
    """The stream and the offset of each frame in it."""
    parts = [encode_frame(frame) for frame in frames]
    offsets = []
    position = 0
    for part in parts:
        offsets.append(position)
        position += len(part)
    return b"".join(parts), offsets


CLIENT, OFFSETS = encode_all(client_frames())
# Indexes into client_frames()
I_DECLARE, I_PUBLISH, I_HEADER, I_BODY1, I_BODY2, I_HEARTBEAT, I_CLOSE = 5, 6, 7, 8, 9, 10, 11


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def write(tmp_path: Path, data: bytes, name: str = "stream.bin") -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def at(offset: int) -> str:
    """How a frame line starts in the human output."""
    return f"{offset:>10} 0x{offset:08x}  "


def frame_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line[:1] == " " and "0x" in line[:22]]


def json_lines(out: str) -> list[dict[str, Any]]:
    def no_constants(name: str) -> None:
        raise AssertionError(f"invalid JSON constant {name}")

    return [json.loads(line, parse_constant=no_constants) for line in out.splitlines()]


def test_encoded_message_matches_the_frames_used() -> None:
    expected = encode_message(1, PUBLISH, PROPERTIES, BODY, frame_max=4096)
    assert CLIENT[OFFSETS[I_PUBLISH] : OFFSETS[I_HEARTBEAT]] == expected


# -- human output -------------------------------------------------------------------------


def test_human_output_every_frame_type_with_offsets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, err = run(capsys, "decode", write(tmp_path, CLIENT))
    assert status == 0, out
    assert err == ""
    assert "spec: AMQP 0-9-1 (detected from the protocol header)" in out
    lines = frame_lines(out)
    assert len(lines) == len(OFFSETS)
    for line, offset in zip(lines, OFFSETS, strict=True):
        assert line.startswith(at(offset))
    assert "PROTOCOL-HEADER  AMQP 0.0.9.1 (8 bytes)" in lines[0]
    assert "METHOD    ch=0     size=" in lines[1]
    assert "connection.start-ok (10.11)" in lines[1]
    assert "queue.declare (50.10)" in lines[I_DECLARE]
    assert "basic.publish (60.40)" in lines[I_PUBLISH]
    assert "HEADER    ch=1" in lines[I_HEADER]
    assert "class 60 (basic), body-size 6000, weight 0, property flags 0xb040" in lines[I_HEADER]
    assert f"BODY      ch=1     size={4088:<7} b'hello world hello" in lines[I_BODY1]
    assert "... (+" in lines[I_BODY1]
    assert "HEARTBEAT ch=0     size=0" in lines[I_HEARTBEAT]
    assert "connection.close (10.50)" in lines[I_CLOSE]


def test_human_output_fields_and_nested_tables(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, out, _ = run(capsys, "decode", write(tmp_path, CLIENT))
    assert status == 0
    text = out.splitlines()
    # every field of a method, by spec name, reserved ones marked
    for line in [
        "    mechanism = 'PLAIN'",
        "    response = <redacted> (12 bytes)",
        "    locale = 'en_US'",
        "    frame-max = 4096",
        "    virtual-host = '/'",
        "    reserved-1 [reserved] = ''",
        "    reserved-2 [reserved] = False",
        "    reserved-1 [reserved] = 0",
        "    queue = 'q1'",
        "    durable = True",
        "    exclusive = False",
        "    routing-key = 'q1'",
        "    mandatory = False",
        "    reply-code = 200",
        "    reply-text = 'bye'",
    ]:
        assert line in text, line
    # field tables nest, every value with its wire tag
    start = text.index("    arguments: table, 10 entries")
    block = text[start + 1 : start + 24]
    for line in [
        "        x-max-length (I) = 10",
        "        x-nested (F): table, 1 entry",
        "            level (F): table, 1 entry",
        "                deep (b) = -3",
        "        x-list (A): array, 3 items",
        "            [0] (I) = 1",
        "            [1] (S) = 'two'",
        "            [2] (F): table, 1 entry",
        "                k (t) = True",
        "        x-bytes (x) = b'\\x00\\xff'",
        "        x-dec (D) = 3.14",
        "        x-ts (T) = 1700000000 (2023-11-14T22:13:20Z)",
        "        x-void (V) = None",
        "        x-float (d) = 1.5",
        "        x-nan (d) = nan",
        "        x-latin1 (S) = b'caf\\xe9'",
    ]:
        assert line in block, line
    # content header: present properties only
    for line in [
        "    content-type = 'text/plain'",
        "    headers: table, 1 entry",
        "        x-death (A): array, 1 item",
        "            [0] (F): table, 2 entries",
        "                count (I) = 1",
        "                queue (S) = 'q0'",
        "    delivery-mode = 2",
        "    timestamp = 1700000000 (2023-11-14T22:13:20Z)",
    ]:
        assert line in text, line
    assert not any(line.startswith("    priority") for line in text)
    # the summary
    assert "--- summary for " in out
    assert f"{len(CLIENT)} bytes, 12 frames, 0 problems" in out
    assert "frames by type: body 2, header 1, heartbeat 1, method 7, protocol-header 1" in out
    assert "basic.publish 1, channel.open 1, connection.close 1, connection.open 1" in out
    assert "    problems: 0" in out


def test_non_utf8_short_string(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    frame = MethodFrame(1, Basic.Publish(exchange="x", routing_key="k\udcff"))
    path = write(tmp_path, encode_frame(ProtocolHeader()) + encode_frame(frame))
    status, out, _ = run(capsys, "decode", path)
    assert status == 1  # the stream ends before basic.publish's content
    assert "    routing-key = b'k\\xff' (not UTF-8)" in out
    _, out, _ = run(capsys, "decode", "--json", path)
    method = next(obj for obj in json_lines(out) if obj.get("type") == "method")
    assert method["fields"]["routing-key"] == {"hex": "6bff"}
    assert method["fields"]["exchange"] == "x"


# -- JSON output ---------------------------------------------------------------------------


def test_json_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, CLIENT)
    status, out, _ = run(capsys, "decode", "--json", path)
    assert status == 0
    objects = json_lines(out)
    assert objects[0] == {
        "kind": "spec",
        "file": path,
        "spec": "0-9-1",
        "detected_by": "protocol header",
    }
    frames = [obj for obj in objects if obj["kind"] == "frame"]
    assert [f["offset"] for f in frames] == OFFSETS
    assert [f["type"] for f in frames] == [
        "protocol-header",
        *["method"] * 6,
        "header",
        "body",
        "body",
        "heartbeat",
        "method",
    ]
    for frame, offset, end in zip(frames, OFFSETS, [*OFFSETS[1:], len(CLIENT)], strict=True):
        assert frame["length"] == end - offset
        assert frame["file"] == path
        if frame["type"] != "protocol-header":
            assert frame["size"] == end - offset - 8
    assert frames[0]["version"] == [0, 9, 1]
    start_ok = frames[1]
    assert start_ok["channel"] == 0
    assert start_ok["method"] == "connection.start-ok"
    assert (start_ok["class_id"], start_ok["method_id"]) == (10, 11)
    assert start_ok["fields"]["response"] == "<redacted>"
    assert start_ok["fields"]["client-properties"] == [
        {"key": "product", "tag": "S", "value": "test"},
        {
            "key": "capabilities",
            "tag": "F",
            "value": [{"key": "basic.nack", "tag": "t", "value": True}],
        },
    ]
    assert frames[3]["reserved"] == ["reserved-1", "reserved-2"]
    assert frames[3]["fields"] == {"virtual-host": "/", "reserved-1": "", "reserved-2": False}
    declare = frames[I_DECLARE]
    assert declare["fields"]["queue"] == "q1"
    assert declare["fields"]["durable"] is True
    arguments = {entry["key"]: entry for entry in declare["fields"]["arguments"]}
    assert list(arguments) == list(ARGUMENTS)
    assert arguments["x-max-length"] == {"key": "x-max-length", "tag": "I", "value": 10}
    assert arguments["x-nested"]["value"] == [
        {
            "key": "level",
            "tag": "F",
            "value": [{"key": "deep", "tag": "b", "value": -3}],
        }
    ]
    assert arguments["x-list"]["value"] == [
        {"tag": "I", "value": 1},
        {"tag": "S", "value": "two"},
        {"tag": "F", "value": [{"key": "k", "tag": "t", "value": True}]},
    ]
    assert arguments["x-bytes"]["value"] == {"hex": "00ff"}
    assert arguments["x-dec"]["value"] == "3.14"
    assert arguments["x-ts"] == {"key": "x-ts", "tag": "T", "value": 1700000000}
    assert arguments["x-void"]["value"] is None
    assert arguments["x-float"]["value"] == 1.5
    assert arguments["x-nan"]["value"] == "nan"
    assert arguments["x-latin1"] == {"key": "x-latin1", "tag": "S", "value": {"hex": "636166e9"}}
    header = frames[I_HEADER]
    assert header["class_id"] == 60
    assert header["class"] == "basic"
    assert header["body_size"] == 6000
    assert header["weight"] == 0
    assert header["property_flags"] == PROPERTIES.flags
    assert header["properties"] == {
        "content-type": "text/plain",
        "headers": [
            {
                "key": "x-death",
                "tag": "A",
                "value": [
                    {
                        "tag": "F",
                        "value": [
                            {"key": "count", "tag": "I", "value": 1},
                            {"key": "queue", "tag": "S", "value": "q0"},
                        ],
                    }
                ],
            }
        ],
        "delivery-mode": 2,
        "timestamp": 1700000000,
    }
    body = frames[I_BODY1]
    assert body["channel"] == 1
    assert body["size"] == 4088
    assert body["payload_hex"] == BODY[:64].hex()
    assert body["payload_truncated"] is True
    assert frames[I_HEARTBEAT] == {
        "kind": "frame",
        "file": path,
        "offset": OFFSETS[I_HEARTBEAT],
        "length": 8,
        "type": "heartbeat",
        "type_id": 8,
        "channel": 0,
        "size": 0,
    }
    summary = objects[-1]
    assert summary["kind"] == "summary"
    assert summary["bytes"] == len(CLIENT)
    assert summary["frames"] == 12
    assert summary["frames_by_type"] == {
        "body": 2,
        "header": 1,
        "heartbeat": 1,
        "method": 7,
        "protocol-header": 1,
    }
    assert summary["methods"]["basic.publish"] == 1
    assert summary["methods"]["connection.start-ok"] == 1
    assert summary["problems"] == 0


def test_json_body_preview_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, CLIENT)
    _, out, _ = run(capsys, "decode", "--json", "--max-body-preview", "10000", path)
    bodies = [obj for obj in json_lines(out) if obj.get("type") == "body"]
    assert bytes.fromhex(bodies[0]["payload_hex"]) + bytes.fromhex(bodies[1]["payload_hex"]) == BODY
    assert not bodies[0]["payload_truncated"]
    _, out, _ = run(capsys, "decode", "--json", "--max-body-preview", "0", path)
    bodies = [obj for obj in json_lines(out) if obj.get("type") == "body"]
    assert bodies[0]["payload_hex"] == ""
    assert bodies[0]["payload_truncated"] is True


def test_human_body_preview_option(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, CLIENT)
    _, out, _ = run(capsys, "decode", "--max-body-preview", "5", path)
    assert frame_lines(out)[I_BODY1].endswith("size=4088    b'hello'... (+4083 bytes)")
    _, out, _ = run(capsys, "decode", "--max-body-preview", "0", path)
    assert frame_lines(out)[I_BODY1].endswith("size=4088")


# -- problems and resynchronisation -----------------------------------------------------------


def corrupt(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + bytes([value]) + data[offset + 1 :]


def test_corrupted_frame_end_resumes_at_next_frame(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad_end = OFFSETS[I_PUBLISH] - 1  # frame-end octet of queue.declare
    path = write(tmp_path, corrupt(CLIENT, bad_end, 0x00))
    status, out, _ = run(capsys, "decode", path)
    assert status == 1
    text = out.splitlines()
    problem = text.index(
        f"!!! PROBLEM at {bad_end} (0x{bad_end:x}) [501 frame-error] "
        "frame-end octet is 0x00, not 0xce"
    )
    assert text[problem + 1] == (
        f"    FrameError (decoder): frame at {OFFSETS[I_DECLARE]} (0x{OFFSETS[I_DECLARE]:x}), "
        "channel 1, method -, field -"
    )
    resume = OFFSETS[I_PUBLISH]
    skipped = resume - OFFSETS[I_DECLARE]
    assert text[problem + 2] == (
        f"~~~ RESYNC: skipped {skipped} bytes ({OFFSETS[I_DECLARE]} (0x{OFFSETS[I_DECLARE]:x}) "
        f"to {resume - 1} (0x{resume - 1:x})), resuming at {resume} (0x{resume:x})"
    )
    lines = frame_lines(out)
    expected = OFFSETS[:I_DECLARE] + OFFSETS[I_PUBLISH:]
    assert [int(line.split()[0]) for line in lines] == expected
    assert lines[I_DECLARE].startswith(at(resume))
    assert lines[I_DECLARE].endswith("basic.publish (60.40)")
    assert "connection.close (10.50)" in lines[-1]
    assert "11 frames, 1 problem" in out
    assert "    problems: 1" in out


def test_bad_table_value_reports_field_path_and_resumes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    start, stop = OFFSETS[I_DECLARE], OFFSETS[I_PUBLISH]
    bad = CLIENT[start:stop].index(b"\x04deepb") + 5 + start
    path = write(tmp_path, corrupt(CLIENT, bad, ord("Z")))
    status, out, _ = run(capsys, "decode", "--json", path)
    assert status == 1
    objects = json_lines(out)
    problems = [obj for obj in objects if obj["kind"] == "problem"]
    assert len(problems) == 1
    problem = problems[0]
    assert problem["reply_code"] == 502
    assert problem["reply_name"] == "syntax-error"
    assert problem["error"] == "FrameSyntaxError"
    assert problem["source"] == "decoder"
    assert problem["reason"] == "unknown field-table value tag 0x5a"
    assert problem["channel"] == 1
    assert (problem["class_id"], problem["method_id"]) == (50, 10)
    assert problem["method"] == "queue.declare"
    assert problem["field"] == 'arguments["x-nested"]["level"]["deep"]'
    assert problem["frame_offset"] == start
    assert start < problem["offset"] <= bad
    resync = [obj for obj in objects if obj["kind"] == "resync"]
    assert resync == [
        {
            "kind": "resync",
            "file": path,
            "skipped_from": start,
            "skipped_to": stop,
            "skipped": stop - start,
            "resumed": True,
        }
    ]
    offsets = [obj["offset"] for obj in objects if obj["kind"] == "frame"]
    assert offsets == OFFSETS[:I_DECLARE] + OFFSETS[I_PUBLISH:]
    assert objects[-1]["problems"] == 1
    # the same problem in the human output
    status, out, _ = run(capsys, "decode", path)
    assert status == 1
    assert "[502 syntax-error] unknown field-table value tag 0x5a" in out
    assert (
        f"    FrameSyntaxError (decoder): frame at {start} (0x{start:x}), channel 1, "
        'method queue.declare, field arguments["x-nested"]["level"]["deep"]'
    ) in out


def test_garbage_between_frames_is_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    garbage = b"\x00\x01\x02garbage\xce\x08\x00"
    cut = OFFSETS[I_HEARTBEAT]
    data = CLIENT[:cut] + garbage + CLIENT[cut:]
    status, out, _ = run(capsys, "decode", "--json", write(tmp_path, data))
    assert status == 1
    objects = json_lines(out)
    assert [obj["kind"] for obj in objects if obj["kind"] in ("problem", "resync")] == [
        "problem",
        "resync",
    ]
    problem = next(obj for obj in objects if obj["kind"] == "problem")
    assert problem["frame_offset"] == cut
    assert problem["reply_code"] == 501
    resync = next(obj for obj in objects if obj["kind"] == "resync")
    assert (resync["skipped_from"], resync["skipped_to"]) == (cut, cut + len(garbage))
    offsets = [obj["offset"] for obj in objects if obj["kind"] == "frame"]
    shifted = [o + len(garbage) for o in OFFSETS[I_HEARTBEAT:]]
    assert offsets == OFFSETS[:I_HEARTBEAT] + shifted
    types = [obj["type"] for obj in objects if obj["kind"] == "frame"]
    assert types[-2:] == ["heartbeat", "method"]


def test_several_corruptions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = corrupt(CLIENT, OFFSETS[3] + 0, 0x07)  # unknown frame type for connection.open
    data = corrupt(data, OFFSETS[I_HEADER + 1] - 1, 0xCD)  # content header's frame end
    status, out, _ = run(capsys, "decode", "--json", write(tmp_path, data))
    assert status == 1
    objects = json_lines(out)
    problems = [obj for obj in objects if obj["kind"] == "problem"]
    assert [p["frame_offset"] for p in problems[:2]] == [OFFSETS[3], OFFSETS[I_HEADER]]
    assert problems[0]["reason"] == "unknown frame type 7"
    # The lost content header leaves channel 1 unchecked until its next method: the body
    # frames after it are decoded and not reported as out of sequence.
    assert len(problems) == 2
    offsets = [obj["offset"] for obj in objects if obj["kind"] == "frame"]
    assert offsets == [o for i, o in enumerate(OFFSETS) if i not in (3, I_HEADER)]


def test_truncated_tail(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path, CLIENT[:-3])
    status, out, _ = run(capsys, "decode", path)
    assert status == 1
    last = OFFSETS[I_CLOSE]
    left = len(CLIENT) - 3 - last
    assert (
        f"!!! PROBLEM at {last} (0x{last:x}) [501 frame-error] stream ended inside a frame "
        f"({left} bytes left over)"
    ) in out
    assert (
        f"~~~ RESYNC: no plausible frame start in the last {left} bytes (from {last} "
        f"(0x{last:x})); skipped to the end of the stream"
    ) in out
    assert [int(line.split()[0]) for line in frame_lines(out)] == OFFSETS[:-1]
    assert "11 frames, 1 problem" in out


def test_truncated_inside_a_message(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    end = OFFSETS[I_BODY2] + 100
    status, out, _ = run(capsys, "decode", "--json", write(tmp_path, CLIENT[:end]))
    assert status == 1
    problems = [obj for obj in json_lines(out) if obj["kind"] == "problem"]
    # the lost frame makes the content sequence unknown: only the truncation is reported
    assert len(problems) == 1
    assert problems[0]["source"] == "decoder"
    assert problems[0]["frame_offset"] == OFFSETS[I_BODY2]
    assert problems[0]["reason"] == "stream ended inside a frame (100 bytes left over)"


def test_stream_ends_between_frames_of_a_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    end = OFFSETS[I_BODY2]
    status, out, _ = run(capsys, "decode", "--json", write(tmp_path, CLIENT[:end]))
    assert status == 1
    problems = [obj for obj in json_lines(out) if obj["kind"] == "problem"]
    assert len(problems) == 1
    problem = problems[0]
    assert problem["source"] == "content-sequence"
    assert problem["reply_code"] == 505
    assert problem["method"] == "basic.publish"
    assert problem["channel"] == 1
    assert problem["offset"] == end
    assert problem["reason"] == (
        "stream ended before the content of basic.publish was complete (4088 of 6000 body bytes)"
    )


def test_content_sequence_problems(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    frames: list[Frame] = [
        ProtocolHeader(),
        ContentBodyFrame(2, b"orphan"),
        MethodFrame(1, PUBLISH),
        MethodFrame(1, Basic.Ack(delivery_tag=1)),
    ]
    data, offsets = encode_all(frames)
    status, out, _ = run(capsys, "decode", write(tmp_path, data))
    assert status == 1
    assert (
        f"!!! PROBLEM at {offsets[1]} (0x{offsets[1]:x}) [505 unexpected-frame] "
        "content body without a content header before it"
    ) in out
    assert (
        "[505 unexpected-frame] basic.ack arrived before the content of basic.publish was "
        "complete (no content header yet)"
    ) in out
    assert "UnexpectedFrameError (content-sequence)" in out
    assert "4 frames, 2 problems" in out


def test_frame_max(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    body = b"x" * 6000
    data = (
        encode_frame(ProtocolHeader())
        + encode_message(1, PUBLISH, BasicProperties(), body, frame_max=8192)
        + encode_frame(HeartbeatFrame())
    )
    path = write(tmp_path, data)
    status, out, _ = run(capsys, "decode", path)
    assert status == 0
    status, out, _ = run(capsys, "decode", "--json", "--frame-max", "4096", path)
    assert status == 1
    objects = json_lines(out)
    problems = [obj for obj in objects if obj["kind"] == "problem"]
    assert problems[0]["reply_code"] == 501
    assert "exceeds the negotiated frame_max 4096" in problems[0]["reason"]
    # the oversized body frame is skipped; the heartbeat after it is still decoded
    assert [obj["type"] for obj in objects if obj["kind"] == "frame"][-1] == "heartbeat"
    assert status == 1


def test_unsupported_protocol_header(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = b"AMQP\x00\x01\x00\x00" + CLIENT[8:]
    path = write(tmp_path, data)
    status, out, _ = run(capsys, "decode", path)
    assert status == 1
    assert "!!! PROBLEM at 0 (0x0) [no reply code] protocol header AMQP 0 1 0 0" in out
    assert "use --spec 0-9-1" in out
    assert frame_lines(out) == []
    # forcing the version decodes the rest
    status, out, _ = run(capsys, "decode", "--spec", "0-9-1", path)
    assert status == 0
    assert "spec: AMQP 0-9-1 (given with --spec)" in out
    assert "PROTOCOL-HEADER  AMQP 0.1.0.0" in out
    assert len(frame_lines(out)) == len(OFFSETS)


def test_garbage_only(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, _ = run(capsys, "decode", write(tmp_path, bytes(range(256)) * 4))
    assert status == 1
    assert "!!! PROBLEM at 0 (0x0)" in out
    assert "skipped to the end of the stream" in out
    assert "0 frames" in out


def test_empty_stream(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, out, _ = run(capsys, "decode", write(tmp_path, b""))
    assert status == 0
    assert "0 bytes, 0 frames, 0 problems" in out


# -- version detection ---------------------------------------------------------------------


def test_detects_server_stream_from_connection_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    frames: list[Frame] = [
        MethodFrame(0, Connection.Start(server_properties={"product": "RabbitMQ"})),
        MethodFrame(0, Connection.Tune(channel_max=2047, frame_max=131072, heartbeat=60)),
        MethodFrame(1, Basic.Deliver(consumer_tag="c", delivery_tag=1, routing_key="q1")),
        ContentHeaderFrame(1, 60, 2, BasicProperties()),
        ContentBodyFrame(1, b"hi"),
    ]
    data, offsets = encode_all(frames)
    status, out, _ = run(capsys, "decode", write(tmp_path, data))
    assert status == 0
    assert "spec: AMQP 0-9-1 (detected from connection.start's version fields)" in out
    assert "    version-minor = 9" in out
    assert "    mechanisms = b'PLAIN'" in out
    assert "    delivery-tag = 1" in out
    assert [int(line.split()[0]) for line in frame_lines(out)] == offsets


def test_stream_starting_mid_connection(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # starts with body frames whose method and header are not in the capture
    data = CLIENT[OFFSETS[I_BODY1] :]
    path = write(tmp_path, data)
    status, out, _ = run(capsys, "decode", path)
    assert status == 0, out
    assert "spec: AMQP 0-9-1 (assumed: the stream starts with neither" in out
    status, out, _ = run(capsys, "decode", "--json", "--spec", "0-9-1", path)
    assert status == 0
    assert json_lines(out)[0]["detected_by"] == "given"


# -- input handling and exit codes -----------------------------------------------------------


def test_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CLIENT)))
    status, out, _ = run(capsys, "decode", "-")
    assert status == 0
    assert out.startswith("=== <stdin>\n")
    assert [int(line.split()[0]) for line in frame_lines(out)] == OFFSETS
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CLIENT[:-1])))
    status, out, _ = run(capsys, "decode", "--json", "-")
    assert status == 1
    assert json_lines(out)[-1]["file"] == "-"


@pytest.mark.parametrize("chunk_size", [1, 2, 7, 13, 4096])
def test_chunking_does_not_change_the_output(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    chunk_size: int,
) -> None:
    data = corrupt(CLIENT, OFFSETS[I_PUBLISH] - 1, 0x00)
    data = data[: OFFSETS[I_HEARTBEAT]] + b"\x08\x00\x00junk" + data[OFFSETS[I_HEARTBEAT] : -2]
    path = write(tmp_path, data)
    expected = run(capsys, "decode", path)
    monkeypatch.setattr(decode_command, "CHUNK_SIZE", chunk_size)
    assert run(capsys, "decode", path) == expected
    assert expected[0] == 1
    assert expected[1].count("!!! PROBLEM") == 3


def test_large_stream_is_read_in_chunks(tmp_path: Path) -> None:
    message = encode_message(1, PUBLISH, PROPERTIES, BODY, frame_max=4096)
    count = 400  # about 2.5 MB
    data = CLIENT[: OFFSETS[I_PUBLISH]] + message * count
    dissector = StreamDissector(name="big")
    largest = 0
    for start in range(0, len(data), decode_command.CHUNK_SIZE):
        dissector.feed(data[start : start + decode_command.CHUNK_SIZE])
        largest = max(largest, dissector.buffered)
    dissector.finish()
    stats = dissector.stats
    assert stats.problems == 0
    assert stats.methods["basic.publish"] == count
    assert stats.by_type["body"] == 2 * count
    assert largest <= 4096  # at most the bytes of one unfinished frame


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = write(tmp_path, CLIENT)
    missing = str(tmp_path / "missing.bin")
    status, out, err = run(capsys, "decode", missing, good)
    assert status == 2
    assert f"amqp-codec: cannot read {missing}: " in err
    assert "No such file" in err
    assert f"=== {good}" in out  # the other file is still decoded
    assert "=== total: 1 stream," in out


def test_directory_is_an_io_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run(capsys, "decode", str(tmp_path))
    assert status == 2
    assert "cannot read" in err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["decode"],
        ["frobnicate", "x"],
        ["decode", "--frame-max", "abc", "x"],
        ["decode", "--frame-max", "8", "x"],
        ["decode", "--max-body-preview", "-1", "x"],
        ["decode", "--spec", "0-7", "x"],  # 0-8 and 0-9-1 are supported
    ],
)
def test_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2
    assert out == ""
    assert err.startswith("amqp-codec") and err.count("\n") == 1, err
    assert "--help" in err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "decode", "--help")
    assert status == 0
    assert "--max-body-preview" in out
    assert "Bytes are hex" in out


def test_problem_exit_code_wins_over_clean_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = write(tmp_path, CLIENT, "good.bin")
    bad = write(tmp_path, CLIENT[:-1], "bad.bin")
    status, out, _ = run(capsys, "decode", good, bad)
    assert status == 1
    assert "=== total: 2 streams" in out
    status, out, _ = run(capsys, "decode", "--json", good, bad)
    assert json_lines(out)[-1] == {
        "kind": "total",
        "files": [good, bad],
        "bytes": 2 * len(CLIENT) - 1,
        "frames": 2 * len(OFFSETS) - 1,
        "problems": 1,
    }


def test_python_dash_m(tmp_path: Path) -> None:
    path = write(tmp_path, CLIENT)
    result = subprocess.run(
        [sys.executable, "-m", "amqp_codec", "decode", path],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "queue.declare (50.10)" in result.stdout


@pytest.mark.parametrize("name", ["pika-session.client.bin", "pika-session.server.bin"])
def test_recorded_samples(capsys: pytest.CaptureFixture[str], name: str) -> None:
    path = REPO / "samples" / name
    if not path.exists():
        pytest.skip(f"{path} not recorded yet")
    status, out, _ = run(capsys, "decode", str(path))
    assert status == 0, out
    assert "!!! PROBLEM" not in out
    assert "basic.publish" in out if "client" in name else "basic.deliver" in out


def test_field_paths_are_escaped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    declare = encode_frame(MethodFrame(1, Queue.Declare(queue="q", arguments={"a\nb": 1})))
    declare = declare.replace(b"\x03a\nbI", b"\x03a\nbZ")
    path = write(tmp_path, encode_frame(ProtocolHeader()) + declare)
    status, out, _ = run(capsys, "decode", path)
    assert status == 1
    assert 'field arguments["a\\nb"]\n' in out
    _, out, _ = run(capsys, "decode", "--json", path)
    problem = next(obj for obj in json_lines(out) if obj["kind"] == "problem")
    assert problem["field"] == 'arguments["a\\nb"]'


def _overrunning_table_stream() -> bytes:
    # queue.declare whose arguments table (3 bytes) holds an entry with a 5-byte key
    table = b"\x05ab"
    payload = b"\x00\x32\x00\x0a\x00\x00\x00\x00" + len(table).to_bytes(4, "big") + table
    frame = b"\x01\x00\x01" + len(payload).to_bytes(4, "big") + payload + b"\xce"
    return encode_frame(ProtocolHeader()) + frame + encode_frame(HeartbeatFrame())


def test_problem_details_do_not_depend_on_chunking(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write(tmp_path, _overrunning_table_stream())
    expected = run(capsys, "decode", path)
    monkeypatch.setattr(decode_command, "CHUNK_SIZE", 1)
    assert run(capsys, "decode", path) == expected


# -- other versions: 0-8 and 99-0 -----------------------------------------------------------


def test_draft_human_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from version_streams import draft_streams

    client, server = draft_streams()
    status, out, _ = run(capsys, "decode", write(tmp_path, client), write(tmp_path, server, "s"))
    assert status == 0, out
    assert "spec: AMQP 99-0 (detected from the protocol header)" in out
    assert "spec: AMQP 99-0 (detected from connection.start's version fields)" in out
    lines = frame_lines(out)
    assert "HEARTBEAT" not in out
    transfer = next(line for line in lines if "message.transfer" in line)
    assert "METHOD    ch=1     size=17      flags=0x0b[B.be] message.transfer (120.10)" in transfer
    header = lines[lines.index(transfer) + 1]
    assert "HEADER    ch=1     size=60      flags=0x03[..be] 2 structs" in header
    body = lines[lines.index(transfer) + 2]
    assert body.endswith("BODY      ch=1     size=5       flags=0x07[.Ebe] b'hello'")
    block = out[out.index(header) : out.index(body)]
    assert "    delivery-properties (type 0), packing flags 0x0801\n" in block
    assert "        routing-key = 'q'\n" in block
    assert "    message-properties (type 1), packing flags 0x1908\n" in block
    assert "        reply-to: struct reply-to, 2 fields\n" in block
    assert "            exchange-name = 'ex'\n" in block
    assert "        application-headers: table, 1 entry\n" in block
    assert "            k (long-string) = 'v'\n" in block
    assert "    destination = 'amq.direct'\n" in out
    assert "connection.tune (10.30)" in out and "    frame-max = 65535\n" in out
    assert "frames by type: body 1, header 1, method 6, protocol-header 1" in out


def test_draft_json_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from version_streams import draft_streams

    client, _server = draft_streams()
    status, out, _ = run(capsys, "decode", "--json", write(tmp_path, client))
    assert status == 0
    frames = [o for o in json_lines(out) if o["kind"] == "frame"]
    transfer = next(i for i, o in enumerate(frames) if o.get("method") == "message.transfer")
    method, header, body = frames[transfer : transfer + 3]
    assert method["type"] == "method" and method["type_id"] == 1
    assert (method["length"], method["size"], method["flags"], method["track"]) == (30, 17, 11, 0)
    assert method["flag_names"] == ["first-segment", "first-frame", "last-frame"]
    assert (method["class_id"], method["method_id"]) == (120, 10)
    assert method["fields"] == {
        "ticket": 0,
        "destination": "amq.direct",
        "confirm-mode": 1,
        "acquire-mode": 0,
    }
    assert header["type"] == "header" and (header["length"], header["size"]) == (73, 60)
    assert header["structs"] == [
        {
            "struct": "delivery-properties",
            "type_code": 0,
            "packing_flags": 0x0801,
            "fields": {"delivery-mode": 2, "routing-key": "q"},
        },
        {
            "struct": "message-properties",
            "type_code": 1,
            "packing_flags": 0x1908,
            "fields": {
                "content-length": 5,
                "reply-to": {
                    "struct": "reply-to",
                    "type_code": None,
                    "packing_flags": 0x0300,
                    "fields": {"exchange-name": "ex", "routing-key": "rk"},
                },
                "content-type": "text/plain",
                "application-headers": [{"key": "k", "tag": "long-string", "value": "v"}],
            },
        },
    ]
    assert body["type"] == "body" and body["payload_hex"] == b"hello".hex()
    assert (body["size"], body["flag_names"]) == (5, ["last-segment", "first-frame", "last-frame"])
    summary = json_lines(out)[-1]
    assert summary["frames_by_type"] == {"body": 1, "header": 1, "method": 6, "protocol-header": 1}


def test_draft_method_values_uuid_and_range_set(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import uuid

    from version_streams import draft_frames

    from amqp_codec import v0_10_draft as draft
    from amqp_codec.wire010 import DraftMethodFrame

    session = uuid.UUID("12345678-1234-5678-1234-567812345678")
    data = draft_frames(
        DraftMethodFrame(1, draft.Session.Attached(session_id=session, detached_lifetime=9)),
        DraftMethodFrame(
            1,
            draft.Execution.Complete(
                cumulative_execution_mark=4, ranged_execution_set=((6, 7), (9, 9))
            ),
        ),
    )
    path = write(tmp_path, data)
    status, out, _ = run(capsys, "decode", "--spec", "99-0", path)
    assert status == 0, out
    assert f"    session-id = UUID('{session}')\n" in out
    assert "    ranged-execution-set = 6-7, 9\n" in out
    status, out, _ = run(capsys, "decode", "--json", "--spec", "99-0", path)
    attached, complete = [o for o in json_lines(out) if o["kind"] == "frame"]
    assert attached["fields"]["session-id"] == str(session)
    assert complete["fields"]["ranged-execution-set"] == [[6, 7], [9, 9]]


def test_v0_8_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from version_streams import v08_streams

    client, _server = v08_streams()
    status, out, _ = run(capsys, "decode", write(tmp_path, client))
    assert status == 0, out
    assert "spec: AMQP 0-8 (detected from the protocol header)" in out
    lines = frame_lines(out)
    assert "PROTOCOL-HEADER  AMQP 1.1.8.0 (8 bytes)" in lines[0]
    assert "basic.publish (60.40)" in lines[5]
    assert "HEADER    ch=1     size=" in lines[6]
    assert "class 60 (basic), body-size 300, weight 0" in lines[6]
    assert "BODY      ch=1     size=200" in lines[7] and "BODY      ch=1     size=100" in lines[8]
    assert "connection.close (10.60)" in lines[9]
    assert "    cluster-id = 'c1'\n" in out
    status, out, _ = run(capsys, "decode", "--json", write(tmp_path, client))
    objs = json_lines(out)
    assert objs[0] == {
        "kind": "spec",
        "file": objs[0]["file"],
        "spec": "0-8",
        "detected_by": "protocol header",
    }
    close = [o for o in objs if o.get("method") == "connection.close"]
    assert close and close[0]["fields"]["method-id"] == 50


# -- pcap files given to decode ------------------------------------------------------------


def _decode_subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amqp_codec", "decode", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize("compress", [False, True])
def test_decode_reads_the_amqp_connections_of_a_pcap(tmp_path: Path, compress: bool) -> None:
    import gzip

    sample = REPO / "samples" / "pika-session.pcap"
    path = tmp_path / ("session.pcap.gz" if compress else "session.pcap")
    data = sample.read_bytes()
    path.write_bytes(gzip.compress(data) if compress else data)
    result = _decode_subprocess(str(path))
    assert result.returncode == 0, result.stderr
    heads = [line for line in result.stdout.splitlines() if line.startswith("=== ")]
    assert len(heads) == 3  # client, server, total
    assert heads[0].endswith(" client") and heads[1].endswith(" server")
    assert ":5672 client" in heads[0]
    assert "connection.start-ok" in result.stdout and "connection.start (10.10)" in result.stdout
    assert "<redacted>" in result.stdout
    assert "guest\\x00guest" not in result.stdout


def test_decode_names_a_corrupt_gzip(tmp_path: Path) -> None:
    path = tmp_path / "broken.pcap.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 40)
    result = _decode_subprocess(str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert "corrupt gzip file" in result.stderr and "empty" not in result.stderr


def test_decode_of_a_pcap_without_amqp_points_to_analyze(tmp_path: Path) -> None:
    import dpkt

    tcp = dpkt.tcp.TCP(sport=40000, dport=80, seq=1, flags=dpkt.tcp.TH_ACK, data=b"GET / HTTP/1.1")
    ip = dpkt.ip.IP(src=b"\x0a\x00\x00\x01", dst=b"\x0a\x00\x00\x02", p=6, data=tcp)
    ip.len = len(ip)
    eth = dpkt.ethernet.Ethernet(type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    path = tmp_path / "web.pcap"
    with open(path, "wb") as out:
        dpkt.pcap.Writer(out).writepkt(bytes(eth), ts=1.0)
    result = _decode_subprocess(str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert "no AMQP connections" in result.stderr and "amqp-codec analyze" in result.stderr


def test_version_and_help_name_the_versions() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "amqp_codec", "--version"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0
    assert result.stdout.startswith("amqp-codec ")
    for version in ("0-9-1", "0-8", "99-0"):
        assert version in result.stdout
    parser_help = cli.build_parser().format_help()
    assert "0-9-1, 0-8 and the 0-10 draft 99-0" in " ".join(parser_help.split())
