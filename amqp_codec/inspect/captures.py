"""The AMQP connections in a capture file, as byte streams for the decode command.

A pcap or pcapng file (plain or compressed: gzip, xz, bzip2, zstd, lz4) is recognised by its
first bytes; its TCP connections
are reassembled in memory (:mod:`amqp_codec.capture`), and each direction of each AMQP
connection (server port 5672, or a client that starts with the protocol header) becomes a
stream of its own. ``amqp-codec analyze`` reads large capture sets in parallel instead.
"""

from __future__ import annotations

from typing import BinaryIO, TextIO

from ..capture import CaptureProblem, Segment, connection_key, read_capture, reassemble
from ..capture.compressed import COMPRESSIONS, compression_of
from .reporter import display_name

__all__ = ["DECODE_PORTS", "capture_streams", "is_capture"]

#: Server port of the AMQP connections `decode` picks out of a capture file.
DECODE_PORTS = (5672,)
_CAPTURE_MAGICS = (
    b"\xd4\xc3\xb2\xa1",
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",
    b"\xa1\xb2\x3c\x4d",
    b"\x0a\x0d\x0d\x0a",
)


def is_capture(stream: BinaryIO) -> bool:
    """Whether a file starts like a pcap or pcapng file, or a compressed one (which no AMQP
    stream does)."""
    try:
        head = stream.read(8)
        stream.seek(0)
    except (OSError, ValueError):
        return False
    return head[:4] in _CAPTURE_MAGICS or compression_of(head) is not None


def _damaged(problem: CaptureProblem, compression: str) -> bool:
    """Whether ``problem`` is the reader's word on a damaged ``compression`` stream."""
    return problem.kind in ("corrupt-file", "truncated-file") and problem.detail.startswith(
        (f"corrupt {compression} stream", f"{compression} stream cut short")
    )


def capture_streams(name: str, err: TextIO) -> list[tuple[str, list[bytes]]] | None:
    """Each direction of each AMQP connection in a capture file, as (stream name, bytes).

    None (and one line on ``err``) when the file cannot be read as a capture or holds no
    AMQP connection.
    """
    groups: dict[tuple[tuple[str, int, str, int], str], list[Segment]] = {}
    problems: list[CaptureProblem] = []
    for item in read_capture(name):
        if isinstance(item, CaptureProblem):
            problems.append(item)
            continue
        key, direction = connection_key(item, DECODE_PORTS)
        groups.setdefault((key, direction), []).append(item)
    fatal = [p for p in problems if p.packet is None]
    # A damaged compressed file is that, whatever else the reader said about what came out.
    damage: list[tuple[CaptureProblem, str | None]] = [
        (p, c.name) for p in fatal for c in COMPRESSIONS if _damaged(p, c.name)
    ]
    for problem, compression in damage[:1] or [(p, None) for p in fatal[:1]]:
        what = problem.kind.replace("-", " ")
        detail = problem.detail
        if compression is not None:
            cut = "cut short" in detail
            what = f"{'truncated' if cut else 'corrupt'} {compression} file"
            detail = detail.removeprefix(f"corrupt {compression} stream: ")
        err.write(f"amqp-codec: {display_name(name)}: {what}: {detail}\n")
    if not groups:
        if not fatal:
            err.write(f"amqp-codec: {display_name(name)}: no TCP connections in the capture\n")
        return None
    streams = []
    connections = 0
    for key in sorted({k for k, _ in groups}):
        client_ip, client_port, server_ip, server_port = key
        client = reassemble(groups.get((key, "client"), []))
        server = reassemble(groups.get((key, "server"), []))
        client_bytes = b"".join(client.chunks())
        if server_port not in DECODE_PORTS and not client_bytes.startswith(b"AMQP"):
            continue  # not AMQP, as far as can be told
        connections += 1
        label = f"{name} {client_ip}:{client_port}-{server_ip}:{server_port}"
        streams.append((f"{label} client", [client_bytes]))
        streams.append((f"{label} server", list(server.chunks())))
    if not streams:
        err.write(
            f"amqp-codec: {display_name(name)}: no AMQP connections among its "
            f"{len({k for k, _ in groups})} TCP connections (server port "
            f"{DECODE_PORTS[0]} or a client starting with the AMQP header); "
            "amqp-codec analyze --port N reads other ports\n"
        )
        return None
    return streams
