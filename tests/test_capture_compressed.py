"""Compressed captures: every compression rotation and dumpcap use (gzip, xz, bzip2, zstd, lz4)
reads as the plain capture does, and damage, cuts, bombs and missing libraries become
documented problems, never exceptions or files dropped unseen."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct
from collections.abc import Callable
from pathlib import Path

import lz4.frame
import pytest
from backports import zstd
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_codec.analyze.preflight import resolve_captures
from amqp_codec.capture import (
    CaptureProblem,
    Segment,
    capture_files,
    compressed,
    is_capture_file,
    read_capture,
)
from amqp_codec.capture.compressed import COMPRESSIONS, Compression, compression_of
from amqp_codec.capture.synthetic import generate
from amqp_codec.inspect.captures import is_capture

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "samples" / "captures" / "pika.pcap"
COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "xz": lzma.compress,
    "bzip2": bz2.compress,
    "zstd": zstd.compress,
    "lz4": lz4.frame.compress,
}
NAMES = [c.name for c in COMPRESSIONS]
#: Every problem kind the reader documents (amqp_codec.capture.packets).
KINDS = {
    "unreadable",
    "not-a-capture",
    "truncated-file",
    "corrupt-file",
    "unsupported-link-type",
    "malformed-packet",
    "truncated-packet",
    "ip-fragment",
    "too-large",
    "too-many-problems",
}


def _compression(name: str) -> Compression:
    return next(c for c in COMPRESSIONS if c.name == name)


def _segments(path: Path | str) -> list[tuple[object, ...]]:
    """The segments read from ``path``, without the path they name."""
    return [tuple(s)[1:] for s in read_capture(str(path)) if isinstance(s, Segment)]


@pytest.fixture(scope="module")
def larger(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A plain capture of some 400 kB: several connections, many packets."""
    folder = tmp_path_factory.mktemp("larger")
    generate(folder, 400_000, 1, seed=3)
    (path,) = sorted(folder.glob("*.pcap*"))
    return path.read_bytes()


@pytest.mark.parametrize("name", NAMES)
def test_a_compressed_capture_reads_as_the_plain_one(tmp_path: Path, name: str) -> None:
    plain = SAMPLE.read_bytes()
    expected = _segments(SAMPLE)
    assert expected
    whole = tmp_path / f"whole.pcap.{name}"
    whole.write_bytes(COMPRESS[name](plain))
    # Several streams one after the other, zero padding between (pigz, pbzip2, zstd -T,
    # a rotation appending to a file): one file, as the tools read it.
    half = len(plain) // 2
    streams = tmp_path / f"streams.pcap.{name}"
    streams.write_bytes(COMPRESS[name](plain[:half]) + bytes(8) + COMPRESS[name](plain[half:]))
    for path in (whole, streams):
        items = list(read_capture(str(path)))
        assert not [i for i in items if isinstance(i, CaptureProblem)], items
        assert _segments(path) == expected
        assert is_capture_file(str(path))
        with path.open("rb") as f:
            assert is_capture(f)
    # Found in a folder, by the reader's walk and by the analysis's.
    assert capture_files([str(tmp_path)]) == sorted([str(streams), str(whole)])
    files, skipped = resolve_captures([str(tmp_path)])
    assert files == sorted([str(streams), str(whole)]) and not skipped


def test_a_text_that_starts_like_a_magic_is_not_taken_for_it() -> None:
    assert compression_of(b"BZh9" + bytes(4)) is not None
    assert compression_of(b"BZhttp://example") is None  # no block size after BZh
    assert compression_of(b"BZh") is None
    assert compression_of(b"plain text") is None


def test_a_folder_of_mixed_compressions_is_read_whole(tmp_path: Path) -> None:
    """Each file counts: a folder of rotated files in several compressions lost all but
    the gzip ones, unsaid."""
    plain = SAMPLE.read_bytes()
    paths = []
    for name in NAMES:
        path = tmp_path / f"capture.pcap.{name}"
        path.write_bytes(COMPRESS[name](plain))
        paths.append(str(path))
    (tmp_path / "notes.txt.xz").write_bytes(lzma.compress(b"not a capture"))
    files, skipped = resolve_captures([str(tmp_path)])
    assert files == sorted(paths) and not skipped


@pytest.mark.parametrize("name", NAMES)
def test_a_cut_stream_keeps_what_came_before_and_says_so(
    tmp_path: Path, name: str, larger: bytes
) -> None:
    path = tmp_path / f"cut.pcap.{name}"
    # bzip2 gives out whole blocks only: at -1 they are 100 kB, at its default 900 kB.
    data = bz2.compress(larger, 1) if name == "bzip2" else COMPRESS[name](larger)
    path.write_bytes(data[: len(data) // 2])
    items = list(read_capture(str(path)))
    assert isinstance(items[-1], CaptureProblem)
    assert (items[-1].kind, items[-1].detail) == ("truncated-file", f"{name} stream cut short")
    got = [tuple(s)[1:] for s in items if isinstance(s, Segment)]
    whole = tmp_path / "whole.pcap"
    whole.write_bytes(larger)
    expected = _segments(whole)
    assert got and len(got) < len(expected)
    # What came out is the capture's start: the last segment read may be cut short.
    assert got[:-1] == expected[: len(got) - 1]


@pytest.mark.parametrize("name", NAMES)
def test_a_stream_damaged_from_its_start_is_called_corrupt(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"broken.pcap.{name}"
    compression = _compression(name)
    path.write_bytes(compression.magic + compression.then[:1] + b"\xff" * 64)
    (problem,) = read_capture(str(path))
    assert isinstance(problem, CaptureProblem)
    assert problem.kind == "corrupt-file"
    assert problem.detail.startswith(f"corrupt {name} stream: ")
    assert not is_capture_file(str(path))
    (tmp_path / "good.pcap").write_bytes(SAMPLE.read_bytes())
    files, skipped = resolve_captures([str(tmp_path)])
    assert files == [str(tmp_path / "good.pcap")]
    assert [(s.capture, s.kind) for s in skipped] == [(str(path), f"corrupt-{name}")]
    assert skipped[0].detail.startswith(f"corrupt {name} file: ")


@pytest.mark.parametrize("name", NAMES)
def test_a_bomb_stops_at_the_ratio_limit(tmp_path: Path, name: str) -> None:
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    path = tmp_path / f"bomb.pcap.{name}"
    path.write_bytes(COMPRESS[name](header + bytes(32 << 20)))
    out = io.BytesIO()
    with path.open("rb") as f:
        damage = compressed.decompress(_compression(name), f, out)
    assert damage is not None and damage.kind == "too-large"
    # Stopped within a step of the limit: it did not decompress the 32 MiB first.
    limit = max(compressed.INFLATE_RATIO_FLOOR, compressed.MAX_INFLATE_RATIO * path.stat().st_size)
    assert out.tell() <= limit + (2 << 20) < 32 << 20
    kinds = [getattr(i, "kind", "segment") for i in read_capture(str(path))]
    assert "too-large" in kinds and set(kinds) <= KINDS


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    name=st.sampled_from(NAMES),
    edits=st.lists(
        st.tuples(
            st.floats(0, 1),
            st.sampled_from(["set", "cut", "insert"]),
            st.binary(min_size=1, max_size=40),
        ),
        min_size=1,
        max_size=6,
    ),
    keep=st.floats(0.05, 1),
)
def test_hostile_compressed_bytes_give_only_documented_problems(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    edits: list[tuple[float, str, bytes]],
    keep: float,
) -> None:
    data = bytearray(COMPRESS[name](SAMPLE.read_bytes()))
    for where, how, octets in edits:
        at = int(where * (len(data) - 1))
        if how == "set":
            data[at : at + len(octets)] = octets
        elif how == "cut":
            del data[at : at + len(octets)]
        else:
            data[at:at] = octets
    path = tmp_path_factory.mktemp("hostile") / f"x.{name}"
    path.write_bytes(bytes(data[: max(1, int(keep * len(data)))]))
    for item in read_capture(str(path)):  # never raises
        assert isinstance(item, Segment) or item.kind in KINDS
    is_capture_file(str(path))


def test_a_missing_library_is_named_with_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zstd needs backports.zstd before Python 3.14: without it a zstd capture is a problem
    that says what to install, and is not dropped from a folder unseen."""
    monkeypatch.setitem(compressed._LOADED, "zstd", None)
    path = tmp_path / "capture.pcap.zst"
    path.write_bytes(zstd.compress(SAMPLE.read_bytes()))
    (problem,) = read_capture(str(path))
    assert isinstance(problem, CaptureProblem) and problem.kind == "unreadable"
    assert "backports.zstd" in problem.detail and "zstd -d" in problem.detail
    assert is_capture_file(str(path))  # read_capture says why it cannot be read
    assert capture_files([str(tmp_path)]) == [str(path)]
    (tmp_path / "other.pcap").write_bytes(SAMPLE.read_bytes())
    files, skipped = resolve_captures([str(tmp_path)])
    assert files == [str(tmp_path / "other.pcap")]
    assert [(s.capture, s.kind) for s in skipped] == [(str(path), "unreadable")]
    assert "backports.zstd" in skipped[0].detail


def test_the_reader_does_not_decompress_into_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the temporary folder is held in memory (a tmpfs /tmp), the reader's anonymous
    copy goes beside the capture; where that folder cannot be written, to /tmp after all."""
    import tempfile

    folders: list[str | None] = []
    real = tempfile.TemporaryFile

    def recorded(*args: object, dir: str | None = None, **kwargs: object) -> object:
        folders.append(dir)
        if dir is not None and "unwritable" in dir:
            raise PermissionError(dir)
        return real(*args, dir=dir, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(tempfile, "TemporaryFile", recorded)
    path = tmp_path / "capture.pcap.xz"
    path.write_bytes(lzma.compress(SAMPLE.read_bytes()))
    expected = _segments(SAMPLE)
    monkeypatch.setattr(compressed, "in_memory", lambda folder: False)
    assert _segments(path) == expected
    monkeypatch.setattr(compressed, "in_memory", lambda folder: True)
    assert _segments(path) == expected
    (tmp_path / "unwritable").mkdir()
    other = tmp_path / "unwritable" / "capture.pcap.xz"
    other.write_bytes(path.read_bytes())
    assert _segments(other) == expected
    assert folders == [
        tempfile.gettempdir(),
        str(tmp_path),
        str(tmp_path / "unwritable"),
        None,
    ]
