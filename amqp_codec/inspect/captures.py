"""The AMQP connections in a capture file, as byte streams for the decode command.

A pcap or pcapng file (plain or gzip) is recognised by its first bytes; its TCP connections
are reassembled in memory (:mod:`amqp_codec.capture`), and each direction of each AMQP
connection (server port 5672, or a client that starts with the protocol header) becomes a
stream of its own. ``amqp-codec analyze`` reads large capture sets in parallel instead.
"""

from __future__ import annotations

from typing import BinaryIO, TextIO

from ..capture import CaptureProblem, Segment, connection_key, read_capture, reassemble
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
_GZIP_MAGIC = b"\x1f\x8b"


def is_capture(stream: BinaryIO) -> bool:
    """Whether a file starts like a pcap, pcapng or gzip file (which no AMQP stream does)."""
    try:
        head = stream.read(4)
        stream.seek(0)
    except (OSError, ValueError):
        return False
    return head in _CAPTURE_MAGICS or head[:2] == _GZIP_MAGIC


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
    # A damaged gzip file is that, whatever else the reader said about what came out of it.
    gzip_damage = [
        p for p in fatal if p.kind in ("corrupt-file", "truncated-file") and "gzip" in p.detail
    ]
    for problem in gzip_damage[:1] or fatal[:1]:
        what = problem.kind.replace("-", " ")
        if gzip_damage:
            what = "truncated gzip file" if "cut short" in problem.detail else "corrupt gzip file"
        detail = problem.detail.removeprefix("corrupt gzip stream: ").removeprefix("gzip stream: ")
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
