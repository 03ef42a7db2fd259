"""The workloads, and the check that every library got them right before anything is timed.

Every workload knows its expected result in plain form (:mod:`benchmarks.normalize`),
computed from the fixture *values* -- not from any library's decoder:

* decode workloads: each library's decoded objects, normalised, must equal it (after the
  library's documented deviations, e.g. pika truncating floats, which are reported);
* encode workloads: each library's output bytes are decoded with amqp-codec and must equal
  it; whether the bytes are identical to ours is reported too (tags may legitimately differ:
  pamqp picks the narrowest integer tag and 32-bit floats, py-amqp writes bytes as 'S').

A library that fails verification is not timed for that workload.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import amqp_codec as ac
from amqp_codec import NEED_DATA, FrameDecoder, v0_9_1
from amqp_codec.table import decode_table

from . import LARGE_MESSAGE_TARGET_RATIO, TARGET_RATIO
from . import fixtures as fx
from . import normalize as norm
from .peers import Bench, Ours, Unsupported


@dataclass
class Workload:
    key: str
    title: str
    unit: str  # what one "op" is
    description: str
    kind: str  # "frames" | "message" | "table" | "encode-frames" | "encode-table"
    make: Callable[[Any], Bench]
    expected: Callable[[], Any]
    ops_scale: int = 1  # frames per op, for frames/s
    bytes_per_op: int = 0  # wire bytes per op, for MB/s (stream workloads)
    target: float = TARGET_RATIO  # ours / fastest peer that counts as met (pure Python)

    @property
    def decodes(self) -> bool:
        return self.kind in ("frames", "message", "table")


@dataclass
class Verified:
    ok: bool
    bench: Bench | None = None
    note: str = ""  # deviations, wire identity, or why unsupported / failed
    wire_identical: bool | None = None
    unsupported: bool = False


_OURS = Ours()


def _frames(objs: list[Any]) -> list[Any]:
    return [_OURS.norm_frame(o) for o in objs]


def _publish_expected() -> list[Any]:
    method = v0_9_1.Basic.Publish(**fx.PUBLISH_FIELDS)
    props = v0_9_1.BasicProperties(**fx.PUBLISH_PROPERTIES_VALUES)
    return _frames(
        [
            ac.MethodFrame(fx.CHANNEL, method),
            ac.ContentHeaderFrame(fx.CHANNEL, 60, len(fx.BODY_1K), props),
            ac.ContentBodyFrame(fx.CHANNEL, fx.BODY_1K),
        ]
    )


def build(stream: fx.Stream, large: fx.Stream) -> list[Workload]:
    return [
        Workload(
            "1-deliver-decode",
            "decode basic.deliver frame",
            "frame",
            "whole method frame bytes (7-byte header, payload, frame-end) -> method object",
            "frames",
            lambda p: p.deliver_decode(fx.DELIVER_FRAME),
            lambda: _frames([fx.DELIVER_FRAME_OBJ]),
        ),
        Workload(
            "2-header-decode",
            "decode content header (14 props, 10-entry table)",
            "frame",
            "whole content header frame -> properties object, incl. the mixed headers table",
            "frames",
            lambda p: p.header_decode(fx.HEADER_FRAME),
            lambda: _frames([fx.HEADER_FRAME_OBJ]),
        ),
        Workload(
            "3-message-decode",
            "decode deliver+header+1KiB body (1 buffer)",
            "3 frames",
            "one buffer holding the three frames of a delivery -> three decoded frames",
            "frames",
            lambda p: p.message_decode(fx.MESSAGE_BUFFER),
            lambda: _frames([fx.DELIVER_FRAME_OBJ, fx.HEADER_FRAME_OBJ, fx.BODY_FRAME_OBJ]),
            ops_scale=3,
        ),
        Workload(
            "4a-publish-encode",
            "encode publish+header+1KiB body (build objects)",
            "message",
            "construct the publish method and properties objects from plain values, then "
            "encode method + content header + body frames",
            "encode-frames",
            lambda p: p.publish_encode(construct=True),
            _publish_expected,
        ),
        Workload(
            "4b-publish-encode-prebuilt",
            "encode publish+header+1KiB body (prebuilt)",
            "message",
            "encode method + content header + body frames from already-built objects",
            "encode-frames",
            lambda p: p.publish_encode(construct=False),
            _publish_expected,
        ),
        Workload(
            "5a-table-encode",
            "field table encode (10 entries)",
            "table",
            "plain dict with str/int/bool/float/dict/list/bytes/datetime/Decimal/None -> bytes",
            "encode-table",
            lambda p: p.table_encode(fx.MIXED_TABLE),
            lambda: norm.value(fx.MIXED_TABLE),
        ),
        Workload(
            "5b-table-encode-nofloat",
            "field table encode (9 entries, no float)",
            "table",
            "the same table without its float, which pika cannot encode",
            "encode-table",
            lambda p: p.table_encode(fx.MIXED_TABLE_NO_FLOAT),
            lambda: norm.value(fx.MIXED_TABLE_NO_FLOAT),
        ),
        Workload(
            "5c-table-decode",
            "field table decode (10 entries)",
            "table",
            "bytes of the 10-entry table (size prefix included) -> mapping",
            "table",
            lambda p: p.table_decode(fx.MIXED_TABLE_BYTES),
            lambda: norm.value(fx.MIXED_TABLE),
        ),
        Workload(
            "6-stream-decode",
            f"{stream.frame_count:,} mixed frames in 4 KiB chunks",
            f"{stream.frame_count // 1000}k frames",
            f"{stream.counts['deliveries']:,} deliveries (deliver+header+body), "
            f"{stream.counts['acks']:,} acks, {stream.counts['heartbeats']:,} heartbeats; "
            f"{stream.counts['bytes']:,} bytes in {stream.counts['chunks']:,} chunks of "
            f"{fx.CHUNK_SIZE} B, fed to each library's receive path",
            "frames",
            lambda p: p.stream_decode(stream),
            lambda: _frames(stream.objects),
            ops_scale=stream.frame_count,
            bytes_per_op=stream.counts["bytes"],
        ),
        Workload(
            "7-large-message-decode",
            f"one {large.counts['body_bytes'] // 1024} KiB message in "
            f"{large.counts['chunks']} chunks",
            "message",
            f"basic.deliver, content header and {large.frame_count - 2} body frames of up to "
            f"{fx.FRAME_MAX} bytes ({large.counts['bytes']:,} bytes) in chunks of "
            f"{fx.LARGE_CHUNK_SIZE} B, fed to each library's receive path",
            "frames",
            lambda p: p.stream_decode(large),
            lambda: _frames(large.objects),
            ops_scale=large.frame_count,
            bytes_per_op=large.counts["bytes"],
            target=LARGE_MESSAGE_TARGET_RATIO,
        ),
        Workload(
            "7b-large-message-assemble",
            f"the same {large.counts['body_bytes'] // 1024} KiB message, assembled",
            "message",
            "workload 7's chunks to the whole message: method, properties and the body in one "
            "bytes object, by each library's own message assembly (pamqp has none: its body "
            "frames' values joined)",
            "message",
            lambda p: p.message_assemble(large),
            lambda: _whole_message(large),
            ops_scale=large.frame_count,
            bytes_per_op=large.counts["bytes"],
            target=LARGE_MESSAGE_TARGET_RATIO,
        ),
    ]


def _whole_message(stream: fx.Stream) -> list[Any]:
    """A stream of one message as its method frame, header frame and one body of them all."""
    method, header, *bodies = stream.objects
    body = b"".join(b.payload for b in bodies)
    return [*_frames([method, header]), ("body", header.channel, body)]


def _run_once(bench: Bench) -> Any:
    ns = bench.ns
    exec(compile(bench.stmt, "<bench>", "exec"), ns)
    return ns.pop("_r")


def _decode_frames_with_ours(data: bytes) -> list[Any]:
    dec = FrameDecoder(v0_9_1)
    dec.receive_data(data)
    out = []
    while (f := dec.next_frame()) is not NEED_DATA:
        out.append(f)
    dec.receive_data(b"")
    dec.next_frame()  # raises if bytes were left over
    return out


def verify(workload: Workload, peer: Any, ours_bytes: bytes | None = None) -> Verified:
    """Build the peer's bench for ``workload``, run it once and check its result."""
    try:
        bench = workload.make(peer)
    except Unsupported as exc:
        return Verified(False, note=f"n/a: {exc}", unsupported=True)
    try:
        result = _run_once(bench)
        expected = workload.expected()
        notes: list[str] = []
        wire_identical = None
        if workload.kind == "frames":
            got: Any = [
                peer.norm_frame(f) for f in (result if isinstance(result, list) else [result])
            ]
        elif workload.kind == "message":
            got = peer.norm_message(result)
        elif workload.kind == "table":
            got = peer.norm_table(result)
        elif workload.kind == "encode-frames":
            raw = peer.encoded(result)
            got = _frames(_decode_frames_with_ours(raw))
            if ours_bytes is not None:
                wire_identical = raw == ours_bytes
        elif workload.kind == "encode-table":
            raw = peer.encoded(result)
            table, end = decode_table(raw, 0, len(raw))
            if end != len(raw):
                raise ValueError(f"{len(raw) - end} bytes after the table")
            got = norm.value(table)
            if ours_bytes is not None:
                wire_identical = raw == ours_bytes
        else:
            raise ValueError(workload.kind)
        if workload.decodes and hasattr(peer, "expect_decoded"):
            expected, deviation = peer.expect_decoded(expected)
            if deviation:
                notes.append(f"known deviation accepted: {deviation}")
        diff = norm.first_difference(got, expected)
        if diff is not None:
            return Verified(False, note=f"WRONG RESULT, not timed: {diff}")
        if wire_identical is not None:
            notes.append(
                "bytes identical to amqp-codec's"
                if wire_identical
                else "bytes differ from amqp-codec's (tags/order), values equal"
            )
        return Verified(True, bench, "; ".join(notes), wire_identical)
    except Exception as exc:
        return Verified(False, note=f"FAILED, not timed: {type(exc).__name__}: {exc}")


def ours_output(workload: Workload, ours: Ours) -> bytes | None:
    """Our encoded bytes for an encode workload (for the wire-identity report)."""
    if workload.kind not in ("encode-frames", "encode-table"):
        return None
    return ours.encoded(_run_once(workload.make(ours)))


__all__ = ["Verified", "Workload", "build", "ours_output", "verify"]
