"""Compressed captures decompressed once, so that they are split as plain ones are.

A compressed file cannot be entered in the middle, so read as it is, it is one split: one
task decompresses and scans it, another decompresses it again and dissects it, the other
cores wait, and the task maps the whole decompressed file (one connection of 1 GB, ``gzip
-1``: 14.5 to 15.3 s and 1,095 MiB in its largest process, against 6.0 s plain). When every task
sees the driver's disk (a local master), each compressed input is decompressed once (small
ones several to a task, as small files are scanned) into a temporary folder of the run's
(:func:`decompress_splits`, which the driver's ``job`` runs as a stage); the
file is then split from that copy like any plain capture (the rows still name the
compressed file: :attr:`~amqp_codec.capture.packets.CaptureLayout.read_from`), and the
folder goes when the run ends. A copy takes the disk space of the decompressed capture: the
folder is made in the system's temporary folder (``TMPDIR``), unless that is held in memory
(a tmpfs ``/tmp``, as Debian 13 and Fedora mount it), where a copy would take that much
memory; it is then made in the run's output folder, on the disk the tables go to.

A stream that is damaged, cut short or over the limits of
:mod:`amqp_codec.capture.compressed`, a file whose decompressor is missing, or a disk
without room leaves its file to be read whole, as before, so its problems are reported as
they always were.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence

from amqp_codec.analyze.scan import Split
from amqp_codec.capture.compressed import compression_of, decompress, scratch_folder

__all__ = [
    "compressed_files",
    "copies_folder",
    "decompress_split",
    "decompress_splits",
]


@contextlib.contextmanager
def copies_folder(wanted: bool, out: str) -> Iterator[str | None]:
    """A temporary folder for the run's decompressed copies, deleted when the block ends
    (None when not ``wanted``: the tasks would not see it); in ``out``, the run's output
    folder, where the system's temporary folder is held in memory."""
    if not wanted:
        yield None
        return
    base = scratch_folder(out)
    os.makedirs(base, exist_ok=True)
    folder = tempfile.mkdtemp(prefix=".amqp-codec-decompressed-", dir=base)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def compressed_files(files: Sequence[str]) -> list[Split]:
    """The compressed ones of ``files``, each as one split of the whole file (``index`` its
    place among them, ``file`` its place in ``files``), to give :func:`decompress_splits`."""
    wanted = [(file, path, size) for file, path in enumerate(files) if (size := _compressed(path))]
    return [
        Split(i, file, path, None, 0, size, 0, True) for i, (file, path, size) in enumerate(wanted)
    ]


def _compressed(path: str) -> int | None:
    """The size of ``path`` if it is compressed, else None (one that cannot be read is left
    to read_capture, which reports it)."""
    try:
        with open(path, "rb") as f:
            if compression_of(f.read(8)) is None:
                return None
            return os.fstat(f.fileno()).st_size
    except OSError:
        return None


def decompress_splits(folder: str, splits: Sequence[Split]) -> list[str | None]:
    """:func:`decompress_split` of each of ``splits`` (a batch of small files, one task)."""
    return [decompress_split(folder, split) for split in splits]


def decompress_split(folder: str, split: Split) -> str | None:
    """Decompress ``split``'s file (the whole file) into a new file in ``folder``; its path,
    or None where the file is better read whole (see the module's text)."""
    copy: str | None = None
    try:
        with open(split.path, "rb") as src:
            compression = compression_of(src.read(8))
            if compression is None or compression.missing() is not None:
                return None
            src.seek(0)
            fd, copy = tempfile.mkstemp(dir=folder, suffix=".pcap")
            with os.fdopen(fd, "wb") as dst:
                if decompress(compression, src, dst) is None:
                    return copy
    except OSError:
        pass  # unreadable, or no room for the copy: read whole, as before
    if copy is not None:
        with contextlib.suppress(OSError):
            os.unlink(copy)
    return None
