"""Seed inputs for the fuzz targets, built from the repository's test data and samples.

Every seed starts with the knob octet the targets read first (chunk sizes, table end).
"""

from __future__ import annotations

import gzip
from pathlib import Path

from amqp_codec.table import encode_table
from amqp_codec.wire010 import table as table010

ROOT = Path(__file__).resolve().parents[2]
KNOB = b"\x07"
# Large sample streams are cut: the targets decode every seed twice (whole and chunked).
MAX_SEED = 16 * 1024


def _files(*patterns: str) -> list[bytes]:
    out = []
    for pattern in patterns:
        for path in sorted(ROOT.glob(pattern)):
            out.append(path.read_bytes())
    return out


def _streams_0_9_1() -> list[bytes]:
    return [data[:MAX_SEED] for data in _files("tests/data/*.bin", "samples/*.bin")]


def _streams_0_8() -> list[bytes]:
    from version_streams import v08_streams

    return list(v08_streams())


def _streams_99_0() -> list[bytes]:
    from version_streams import draft_streams

    client, server = draft_streams()
    return [client[8:], server]  # the target adds the protocol header itself


_TABLE = {
    "x-death": [{"count": 3, "reason": "expired", "queue": "q", "time": 1.5}],
    "flag": True,
    "none": None,
    "bytes": b"\x00\xff",
    "big": 2**40,
}


def _tables_0_9_1() -> list[bytes]:
    return [encode_table(_TABLE), encode_table({}), encode_table({"a": {"b": {"c": [1, 2]}}})]


def _tables_99_0() -> list[bytes]:
    return [
        table010.encode_table(_TABLE),
        table010.encode_table({"array": table010.Array(0x21, (1, 2, 3))}),
        table010.encode_table({"void": table010.Array(0xF0, (None, None))}),
    ]


_ADDRESSES = [
    "xoxox ; {create: always}",
    "q/subject.#; {node: {type: topic, x-declare: {arguments: {a: 1}}}, link: {name: l}}",
    "xml; {link: {x-bindings: [{exchange: xml, key: weather}]}}",
    "'quoted name'/\"subj\\u0041\"; {k: [1, -2.5, .5, True, None, 'x',], 1: 010,}",
    "n\\x41me; {mode: browse, assert: never, delete: receiver}",
]


def _captures() -> list[bytes]:
    captures = _files("samples/captures/*.pcap", "samples/captures/*.pcapng")
    return [*captures, gzip.compress(captures[0][:MAX_SEED])]


def seeds(target: str) -> list[bytes]:
    """The seed inputs of ``target`` (a name in ``targets.TARGETS``)."""
    if target in ("decoder-0-9-1", "decoder-detect", "message-decoder"):
        raw = _streams_0_9_1()
    elif target == "decoder-0-8":
        raw = _streams_0_8()
    elif target == "decoder-99-0":
        raw = _streams_99_0()
    elif target == "dissector":
        from version_streams import draft_streams

        raw = [s[:4096] for s in _streams_0_9_1()] + _streams_0_8() + list(draft_streams())
    elif target == "table-0-9-1":
        return [b"\x00" + data for data in _tables_0_9_1()]  # knob 0: the table ends at the end
    elif target == "table-99-0":
        return [b"\x00" + data for data in _tables_99_0()]
    elif target == "capture":
        return _captures()  # a whole file: no knob
    elif target == "address":
        return [text.encode() for text in _ADDRESSES]  # no knob
    else:
        return [bytes(range(64)), b"\x00" * 64]
    return [KNOB + data for data in raw]
