"""The pipeline benchmark's check of a live set: a run counts only if its ``messages`` table
holds every body the recorder published, among the publishes and again among the deliveries.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from benchmarks.live import LiveCounts, bodies_digest  # noqa: E402
from benchmarks.pipeline import _shape, gzipped, live_check  # noqa: E402

BODIES = [b"first", b"second", b"second", b"a third body"]
DIGESTS = [hashlib.sha256(body).hexdigest() for body in BODIES]
RECORDED = LiveCounts(
    file_bytes=1,
    published=len(BODIES),
    delivered=len(BODIES),
    body_bytes=sum(map(len, BODIES)),
    bodies_digest=bodies_digest(DIGESTS),
)
GOOD_ROWS = {"frames": 20, "messages": 8, "connections": 1, "problems": 0}


def _tables(out: Path, rows: list[tuple[str, str]]) -> Path:
    folder = out / "messages"
    folder.mkdir(parents=True)
    methods, digests = zip(*rows, strict=True) if rows else ((), ())
    table = pa.table({"method": list(methods), "body_sha256": list(digests)})
    pq.write_table(table, folder / "part-00000.parquet")
    return out


def _rows(publishes: list[str], deliveries: list[str]) -> list[tuple[str, str]]:
    return [("basic.publish", d) for d in publishes] + [("basic.deliver", d) for d in deliveries]


def test_bodies_digest_is_of_the_multiset() -> None:
    first, second, _, third = DIGESTS
    assert bodies_digest(DIGESTS) == bodies_digest([third, second, first, second])
    # The same bodies, one of them twice instead of another: a different multiset.
    assert bodies_digest(DIGESTS) != bodies_digest([first, second, third, third])


def test_a_run_that_holds_every_body_twice_passes(tmp_path: Path) -> None:
    out = _tables(tmp_path, _rows(DIGESTS, list(reversed(DIGESTS))))
    assert live_check(RECORDED).wrong(GOOD_ROWS, out) == []


def test_a_missing_delivery_is_caught(tmp_path: Path) -> None:
    out = _tables(tmp_path, _rows(DIGESTS, DIGESTS[:-1]))
    assert live_check(RECORDED).wrong(GOOD_ROWS, out) == ["3 basic.deliver messages, 4 recorded"]


def test_a_changed_body_is_caught(tmp_path: Path) -> None:
    changed = [*DIGESTS[:-1], hashlib.sha256(b"a third bodY").hexdigest()]
    out = _tables(tmp_path, _rows(changed, DIGESTS))
    assert live_check(RECORDED).wrong(GOOD_ROWS, out) == [
        "the basic.publish messages' bodies differ from those recorded"
    ]


def test_problems_other_connections_and_other_messages_are_caught(tmp_path: Path) -> None:
    out = _tables(tmp_path, [*_rows(DIGESTS, DIGESTS), ("basic.get-ok", DIGESTS[0])])
    rows = {**GOOD_ROWS, "connections": 2, "problems": 3}
    assert live_check(RECORDED).wrong(rows, out) == [
        "connections 2 != 1",
        "3 problems (expected none)",
        "1 messages neither published nor delivered",
    ]


def test_a_generated_shape_can_be_gzipped(tmp_path: Path) -> None:
    import argparse
    import gzip

    assert _shape("one-65000+gz:1G") == ("one-65000", 65000, 1 << 30, True)
    assert _shape("rotated-1M:1G") == ("rotated-1M", 1 << 20, 1 << 30, False)
    with pytest.raises(argparse.ArgumentTypeError):
        _shape("live+gz:2G")
    with pytest.raises(argparse.ArgumentTypeError):
        _shape("many+xz:1G")
    (tmp_path / "set").mkdir()
    files = [tmp_path / "set" / f"capture-{i}.pcap" for i in range(2)]
    for i, path in enumerate(files):
        path.write_bytes(bytes([i]) * 5000)
    packed = gzipped(files, tmp_path / "cache")
    assert [gzip.decompress(p.read_bytes()) for p in packed] == [p.read_bytes() for p in files]
    assert gzipped(files, tmp_path / "cache") == packed  # kept: not compressed again
