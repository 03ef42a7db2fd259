"""Capture files in, ordered TCP byte streams out: the first stage of capture analysis.

* :mod:`amqp_codec.capture.packets` reads pcap and pcapng files into TCP :class:`Segment`\\ s
  (and :class:`CaptureProblem`\\ s for whatever cannot be read);
* :mod:`amqp_codec.capture.compressed` recognises compressed captures (gzip, xz, bzip2, zstd,
  lz4) and decompresses them in bounded steps;
* :mod:`amqp_codec.capture.tcp` groups segments by connection and direction and reassembles
  each direction into a :class:`Stream` of pieces and gaps, ready for ``FrameDecoder``.

One process, whole capture set::

    from collections import defaultdict
    from amqp_codec import FrameDecoder
    from amqp_codec.capture import Segment, capture_files, connection_key, read_capture, reassemble

    groups = defaultdict(list)
    for path in capture_files(["captures/"]):
        for item in read_capture(path):
            if isinstance(item, Segment):
                groups[connection_key(item, {5672})].append(item)
            else:
                print(item.capture, item.packet, item.kind, item.detail)
    for (key, direction), segments in groups.items():
        stream = reassemble(segments)  # Piece and Gap items, in stream order
        decoder = FrameDecoder()  # chunks() joins across gaps: look at stream.gaps first
        for chunk in stream.chunks():
            decoder.receive_data(chunk)

Standard library only, but for zstd and lz4 captures (``backports.zstd`` before Python 3.14,
``lz4``: both in the ``analyze`` extra, imported only when a file needs them).
"""

from amqp_codec.capture.packets import (
    CaptureProblem,
    Segment,
    capture_files,
    is_capture_file,
    read_capture,
)
from amqp_codec.capture.tcp import (
    ConnectionKey,
    Gap,
    Piece,
    Stream,
    connection_key,
    incarnations,
    reassemble,
    syn_servers,
)

__all__ = [
    "CaptureProblem",
    "ConnectionKey",
    "Gap",
    "Piece",
    "Segment",
    "Stream",
    "capture_files",
    "connection_key",
    "incarnations",
    "is_capture_file",
    "read_capture",
    "reassemble",
    "syn_servers",
]
