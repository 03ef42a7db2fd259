"""Compressed capture files: which compression a file's first bytes name, and its bytes
decompressed in bounded steps.

Captures come compressed when they are rotated (``tcpdump -z gzip``, ``-z xz``, ``-z zstd``,
logrotate) or as they are written (dumpcap writes gzip and lz4), and Wireshark reads gzip,
zstd and lz4 files as they are. Each compression is recognised by its magic number, never by
the file's name. The standard library decompresses gzip, xz and bzip2; zstd needs
``compression.zstd`` (Python 3.14) or its backport ``backports.zstd``, and lz4 the ``lz4``
package. Both come with the ``analyze`` extra and are imported only when a file needs them;
where one is missing, :meth:`Compression.missing` says what to install or which command
decompresses the file instead.

Decompressing costs bounded memory whatever the input: output comes in steps of at most
1 MiB, each checked against :data:`MAX_INFLATED_SIZE` and :data:`MAX_INFLATE_RATIO` before
the next is asked for. Every byte that came out before damage or a cut is kept, so that a
reader can read it and say where it stopped.
"""

from __future__ import annotations

import bz2
import importlib
import lzma
import os
import tempfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO, NamedTuple

__all__ = [
    "COMPRESSIONS",
    "INFLATE_RATIO_FLOOR",
    "MAX_INFLATED_SIZE",
    "MAX_INFLATE_RATIO",
    "Compression",
    "CorruptStream",
    "Damage",
    "compression_of",
    "decompress",
    "first_bytes",
    "in_memory",
    "scratch_folder",
]

#: A compressed capture is decompressed up to this many bytes (the temporary file's size).
MAX_INFLATED_SIZE = 8 * 1024**3
#: ... and, past :data:`INFLATE_RATIO_FLOOR` decompressed bytes, up to this many times the
#: compressed bytes read so far. Real captures compress 2-20 times; a stream of zeros 1000 times.
MAX_INFLATE_RATIO = 200
INFLATE_RATIO_FLOOR = 1024 * 1024

_STEP = 1 << 20  # at most this much output per call, however well the input compresses
_READ = 1 << 16


class Damage(NamedTuple):
    """Why decompressing stopped early: a capture problem's kind and detail."""

    kind: str
    """``corrupt-file``, ``truncated-file`` or ``too-large``."""
    detail: str


class CorruptStream(ValueError):
    """The compressed stream is damaged; ``str()`` says how."""

    def __init__(self, compression: str, cause: str) -> None:
        super().__init__(f"corrupt {compression} stream: {cause}")
        self.compression = compression
        """The compression's name."""
        self.cause = cause
        """What its decompressor said."""


class _Gzip:
    """zlib's gzip decompressor behind the interface the other decompressors share
    (``decompress(data, max_length)``, ``needs_input``, ``eof``, ``unused_data``): zlib
    keeps the input it has not used in ``unconsumed_tail`` instead."""

    def __init__(self) -> None:
        self._zlib = zlib.decompressobj(wbits=31)
        self._full = False  # the last call filled max_length: output may be pending

    def decompress(self, data: bytes, max_length: int) -> bytes:
        tail = self._zlib.unconsumed_tail
        out = self._zlib.decompress(tail + data if tail else data, max_length)
        self._full = len(out) == max_length
        return out

    @property
    def needs_input(self) -> bool:
        return not self._zlib.unconsumed_tail and not self._full

    @property
    def eof(self) -> bool:
        return self._zlib.eof

    @property
    def unused_data(self) -> bytes:
        return self._zlib.unused_data


#: A compression's decompressor class and the errors it raises on damaged input.
_Loaded = tuple[Callable[[], Any], tuple[type[Exception], ...]]


def _gzip() -> _Loaded:
    return _Gzip, (zlib.error,)


def _xz() -> _Loaded:
    return lzma.LZMADecompressor, (lzma.LZMAError,)


def _bzip2() -> _Loaded:
    # bz2 says OSError ("Invalid data stream") for damage, EOFError for data past the end.
    return bz2.BZ2Decompressor, (OSError, EOFError)


def _zstd() -> _Loaded:
    try:
        zstd = importlib.import_module("compression.zstd")  # Python 3.14
    except ImportError:
        zstd = importlib.import_module("backports.zstd")
    return zstd.ZstdDecompressor, (zstd.ZstdError,)


def _lz4() -> _Loaded:
    frame = importlib.import_module("lz4.frame")
    # lz4.frame says RuntimeError ("LZ4F_decompress failed with code: ...").
    return frame.LZ4FrameDecompressor, (RuntimeError,)


@dataclass(frozen=True, slots=True)
class Compression:
    """One compression a capture file can come in."""

    name: str
    """As its tool names it: ``gzip``, ``xz``, ``bzip2``, ``zstd``, ``lz4``."""
    magic: bytes
    """The first bytes of each of its streams (members, frames)."""
    command: str
    """The command that decompresses a file of it, for messages."""
    load: Callable[[], _Loaded]
    """Its decompressor class and errors; :class:`ImportError` where its module is missing."""
    package: str | None = None
    """What to install for it (None: the standard library has it)."""
    then: bytes = b""
    """Where not empty, one of these bytes follows :attr:`magic` (bzip2's block size, a
    digit): a text that happens to start ``BZh`` is no bzip2 file."""

    def starts(self, head: bytes) -> bool:
        """Whether ``head``, a file's first bytes, starts a stream of this compression."""
        if not head.startswith(self.magic):
            return False
        after = head[len(self.magic) : len(self.magic) + 1]
        return not self.then or (len(after) == 1 and after in self.then)

    def _loaded(self) -> _Loaded | None:
        """:attr:`load`'s answer, asked once; None where its module is missing."""
        if self.name not in _LOADED:
            try:
                _LOADED[self.name] = self.load()
            except ImportError:
                _LOADED[self.name] = None
        return _LOADED[self.name]

    def missing(self) -> str | None:
        """What a file of this compression needs to be read here, in words, or None if it
        can be read."""
        if self._loaded() is not None:
            return None
        return (
            f"{self.name}-compressed: reading it needs the {self.package} package "
            f"(pip install {self.package}, or the analyze extra), "
            f"or decompress it first ({self.command})"
        )

    def decompressor(self) -> Any:
        """A new decompressor of one stream; :class:`LookupError` if its module is missing."""
        loaded = self._loaded()
        if loaded is None:
            raise LookupError(self.missing())
        return loaded[0]()

    def error_types(self) -> tuple[type[Exception], ...]:
        loaded = self._loaded()
        return () if loaded is None else loaded[1]


_LOADED: dict[str, _Loaded | None] = {}

COMPRESSIONS = (
    Compression("gzip", b"\x1f\x8b", "gzip -d", _gzip),
    Compression("xz", b"\xfd7zXZ\x00", "xz -d", _xz),
    Compression("bzip2", b"BZh", "bzip2 -d", _bzip2, then=b"123456789"),
    Compression("zstd", b"\x28\xb5\x2f\xfd", "zstd -d", _zstd, "backports.zstd"),
    Compression("lz4", b"\x04\x22\x4d\x18", "lz4 -d", _lz4, "lz4"),
)


def compression_of(head: bytes) -> Compression | None:
    """The compression whose magic number ``head`` (a file's first bytes, six or more)
    starts with, or None: not compressed, or compressed in a way not read here."""
    for compression in COMPRESSIONS:
        if compression.starts(head):
            return compression
    return None


def _step(compression: Compression, decompressor: Any, data: bytes) -> bytes:
    try:
        out: bytes = decompressor.decompress(data, _STEP)
    except compression.error_types() as exc:
        raise CorruptStream(compression.name, str(exc)) from None
    return out


def decompress(compression: Compression, src: BinaryIO, dst: BinaryIO) -> Damage | None:
    """Decompress every stream (gzip member, xz stream, zstd or lz4 frame...) of ``src``
    into ``dst``; why it stopped early, if it did.

    Zero bytes between or after streams are skipped, as the tools tolerate padding. Every
    byte decompressed before damage, a cut or a limit reaches ``dst``. Raises
    :class:`LookupError` if the compression's module is missing (see
    :meth:`Compression.missing`) and :class:`OSError` for reading or writing the files.
    """
    decompressor = None  # of the stream in progress
    read = written = 0

    def write(out: bytes) -> Damage | None:
        nonlocal written
        dst.write(out)
        written += len(out)
        if written > MAX_INFLATED_SIZE:
            why = f"past {MAX_INFLATED_SIZE} bytes"
        elif written > INFLATE_RATIO_FLOOR and written > MAX_INFLATE_RATIO * read:
            why = f"{written} bytes from {read}, more than {MAX_INFLATE_RATIO} times"
        else:
            return None
        return Damage(
            "too-large", f"{compression.name} stream decompresses {why}: read up to there only"
        )

    try:
        while chunk := src.read(_READ):
            read += len(chunk)
            while chunk:
                if decompressor is None:
                    chunk = chunk.lstrip(b"\0")
                    if not chunk:
                        break
                    decompressor = compression.decompressor()
                out = _step(compression, decompressor, chunk)
                while True:
                    if (damage := write(out)) is not None:
                        return damage
                    if decompressor.eof or decompressor.needs_input:
                        break
                    out = _step(compression, decompressor, b"")
                if decompressor.eof:  # the end of a stream: another one may follow
                    chunk = decompressor.unused_data or b""
                    decompressor = None
                else:
                    chunk = b""
        if decompressor is not None:
            # The input ended inside a stream: what it still holds comes out, then the cut.
            while not decompressor.eof and (out := _step(compression, decompressor, b"")):
                if (damage := write(out)) is not None:
                    return damage
            if not decompressor.eof:
                return Damage("truncated-file", f"{compression.name} stream cut short")
    except CorruptStream as exc:
        return Damage("corrupt-file", str(exc))
    return None


#: Filesystems held in memory: a decompressed copy there takes its size in memory.
_IN_MEMORY = frozenset({"tmpfs", "ramfs"})


def in_memory(path: str, mounts: str = "/proc/self/mounts") -> bool:
    """Whether ``path`` lies on a filesystem held in memory, by the mount table ``mounts``
    (where there is none to read, outside Linux, it is taken to be a disk)."""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as f:
            table = [line.split()[1:3] for line in f if len(line.split()) >= 3]
    except OSError:
        return False
    real = os.path.realpath(path)
    longest, kind = "", ""
    for point, fstype in table:
        point = point.replace("\\040", " ")  # the table writes a space as \040
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(longest):
            longest, kind = point, fstype
    return kind in _IN_MEMORY


def scratch_folder(near: str) -> str:
    """Where a decompressed copy is written: the system's temporary folder (``TMPDIR``),
    unless that is held in memory (a tmpfs ``/tmp``, as Debian 13 and Fedora mount it),
    where a copy of a capture of gigabytes would take that much memory: then ``near``."""
    base = tempfile.gettempdir()
    return near if in_memory(base) else base


def first_bytes(compression: Compression, read: Callable[[int], bytes], size: int) -> bytes:
    """The first ``size`` decompressed bytes of the stream that ``read`` (a file's read)
    gives, fewer if it holds fewer; reading no more of it than they need.

    Raises :class:`CorruptStream` for a damaged stream, :class:`LookupError` if the
    compression's module is missing, :class:`OSError` from ``read``."""
    decompressor = compression.decompressor()
    out = b""
    while len(out) < size and not decompressor.eof:
        if decompressor.needs_input:
            chunk = read(_READ)
            if not chunk:
                break
        else:
            chunk = b""
        out += _step(compression, decompressor, chunk)
    return out[:size]
