"""Check a recorded AMQP 0-9-1 session: framing of the .bin files and the pcap.

Standard library only, independent of the codec under development::

    python -m tools.verify_sample samples/pika-session

reads ``<base>.client.bin``, ``<base>.server.bin`` and (if present)
``<base>.pcap``, and exits non-zero if anything is off:

* client.bin starts with the protocol header ``AMQP\\x00\\x00\\x09\\x01``;
* walking frames (type u8, channel u16, size u32, payload, 0xCE) consumes
  each file exactly;
* the pcap (classic libpcap, Ethernet) has valid IPv4/TCP checksums and its
  TCP streams, reassembled by sequence number, equal the .bin files.

It prints frame counts by type and method, and every frame larger than the
frame_max the client sent in connection.tune-ok.
"""

from __future__ import annotations

import struct
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
FRAME_END = 0xCE
FRAME_TYPES = {1: "method", 2: "header", 3: "body", 8: "heartbeat"}
METHOD_NAMES = {
    (10, 10): "connection.start",
    (10, 11): "connection.start-ok",
    (10, 20): "connection.secure",
    (10, 21): "connection.secure-ok",
    (10, 30): "connection.tune",
    (10, 31): "connection.tune-ok",
    (10, 40): "connection.open",
    (10, 41): "connection.open-ok",
    (10, 50): "connection.close",
    (10, 51): "connection.close-ok",
    (10, 60): "connection.blocked",
    (10, 61): "connection.unblocked",
    (20, 10): "channel.open",
    (20, 11): "channel.open-ok",
    (20, 20): "channel.flow",
    (20, 21): "channel.flow-ok",
    (20, 40): "channel.close",
    (20, 41): "channel.close-ok",
    (40, 10): "exchange.declare",
    (40, 11): "exchange.declare-ok",
    (40, 20): "exchange.delete",
    (40, 21): "exchange.delete-ok",
    (40, 30): "exchange.bind",
    (40, 31): "exchange.bind-ok",
    (40, 40): "exchange.unbind",
    (40, 51): "exchange.unbind-ok",
    (50, 10): "queue.declare",
    (50, 11): "queue.declare-ok",
    (50, 20): "queue.bind",
    (50, 21): "queue.bind-ok",
    (50, 30): "queue.purge",
    (50, 31): "queue.purge-ok",
    (50, 40): "queue.delete",
    (50, 41): "queue.delete-ok",
    (50, 50): "queue.unbind",
    (50, 51): "queue.unbind-ok",
    (60, 10): "basic.qos",
    (60, 11): "basic.qos-ok",
    (60, 20): "basic.consume",
    (60, 21): "basic.consume-ok",
    (60, 30): "basic.cancel",
    (60, 31): "basic.cancel-ok",
    (60, 40): "basic.publish",
    (60, 50): "basic.return",
    (60, 60): "basic.deliver",
    (60, 70): "basic.get",
    (60, 71): "basic.get-ok",
    (60, 72): "basic.get-empty",
    (60, 80): "basic.ack",
    (60, 90): "basic.reject",
    (60, 100): "basic.recover-async",
    (60, 110): "basic.recover",
    (60, 111): "basic.recover-ok",
    (60, 120): "basic.nack",
    (85, 10): "confirm.select",
    (85, 11): "confirm.select-ok",
    (90, 10): "tx.select",
    (90, 11): "tx.select-ok",
    (90, 20): "tx.commit",
    (90, 21): "tx.commit-ok",
    (90, 30): "tx.rollback",
    (90, 31): "tx.rollback-ok",
}


class CheckError(Exception):
    """The recording is not what it should be."""


@dataclass(frozen=True)
class Frame:
    offset: int
    type: int
    channel: int
    payload: bytes

    @property
    def method(self) -> str:
        class_id, method_id = struct.unpack_from("!HH", self.payload)
        return METHOD_NAMES.get((class_id, method_id), f"{class_id}.{method_id}")


def walk_frames(data: bytes, start: int) -> Iterator[Frame]:
    """Yield every frame of data[start:], which must end on a frame boundary."""
    offset = start
    while offset < len(data):
        if len(data) - offset < 8:
            raise CheckError(f"truncated frame header at offset {offset}")
        frame_type, channel, size = struct.unpack_from("!BHI", data, offset)
        end = offset + 7 + size
        if end >= len(data):
            raise CheckError(f"frame at offset {offset} runs past the end")
        if data[end] != FRAME_END:
            raise CheckError(f"frame at offset {offset}: end byte {data[end]:#04x}")
        yield Frame(offset, frame_type, channel, data[offset + 7 : end])
        offset = end + 1


def describe(name: str, frames: list[Frame], frame_max: int) -> None:
    by_type = Counter(FRAME_TYPES.get(f.type, str(f.type)) for f in frames)
    by_method = Counter(f.method for f in frames if f.type == 1)
    print(f"{name}: {len(frames)} frames: " + ", ".join(f"{k} {v}" for k, v in by_type.items()))
    for method, count in by_method.items():
        print(f"    {method:24} {count}")
    for frame in frames:
        if frame_max and len(frame.payload) + 8 > frame_max:
            what = frame.method if frame.type == 1 else FRAME_TYPES.get(frame.type, "?")
            print(
                f"    note: {what} frame at offset {frame.offset} is "
                f"{len(frame.payload) + 8} bytes > frame_max {frame_max}"
            )


def negotiated_frame_max(frames: list[Frame]) -> int:
    """frame_max from the client's connection.tune-ok (0 if none)."""
    for frame in frames:
        if frame.type == 1 and frame.method == "connection.tune-ok":
            _channel_max, frame_max, _heartbeat = struct.unpack_from("!HIH", frame.payload, 4)
            return int(frame_max)
    return 0


# --------------------------------------------------------------------------
# pcap
# --------------------------------------------------------------------------


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    words: tuple[int, ...] = struct.unpack(f"!{len(data) // 2}H", data)
    total = sum(words)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def read_pcap(path: Path) -> tuple[bytes, bytes, Counter[str]]:
    """Reassemble one TCP connection: (client bytes, server bytes, flag counts)."""
    data = path.read_bytes()
    magic, major, minor, _zone, _sigfigs, _snaplen, linktype = struct.unpack_from("<IHHiIII", data)
    if magic != 0xA1B2C3D4 or (major, minor) != (2, 4) or linktype != 1:
        raise CheckError(f"unexpected pcap header {magic:#x} {major}.{minor} linktype {linktype}")
    offset = 24
    client: tuple[bytes, int] | None = None
    isn: dict[tuple[bytes, int], int] = {}
    segments: dict[tuple[bytes, int], dict[int, bytes]] = {}
    flags_seen: Counter[str] = Counter()
    last_ts = 0.0
    while offset < len(data):
        seconds, micros, caplen, origlen = struct.unpack_from("<IIII", data, offset)
        ts = seconds + micros / 1e6
        if ts < last_ts:
            raise CheckError(f"timestamps go backwards at offset {offset}")
        last_ts = ts
        frame = data[offset + 16 : offset + 16 + caplen]
        offset += 16 + caplen
        if caplen != origlen or len(frame) != caplen:
            raise CheckError("truncated pcap record")
        if struct.unpack_from("!H", frame, 12)[0] != 0x0800:
            raise CheckError("not IPv4")
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        total_length, protocol = struct.unpack_from("!H", ip, 2)[0], ip[9]
        if protocol != 6 or _checksum(ip[:ihl]) != 0 or total_length != len(ip):
            raise CheckError("bad IPv4 header")
        src_ip, dst_ip = ip[12:16], ip[16:20]
        tcp = ip[ihl:total_length]
        pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, 6, len(tcp))
        if _checksum(pseudo + tcp) != 0:
            raise CheckError("bad TCP checksum")
        src_port, _dst_port, seq, _ack, data_offset, flags = struct.unpack_from("!HHIIBB", tcp)
        payload = tcp[(data_offset >> 4) * 4 :]
        src = (src_ip, src_port)
        names = [
            n
            for bit, n in ((2, "SYN"), (16, "ACK"), (8, "PSH"), (1, "FIN"), (4, "RST"))
            if flags & bit
        ]
        flags_seen["|".join(names)] += 1
        if flags & 0x02:
            isn[src] = seq + 1
            if not flags & 0x10:
                client = src
        if payload:
            segments.setdefault(src, {})[(seq - isn[src]) & 0xFFFFFFFF] = payload
    if client is None or len(isn) != 2:
        raise CheckError("no complete handshake")
    server = next(end for end in isn if end != client)

    def stream(end: tuple[bytes, int]) -> bytes:
        out = bytearray()
        for position, payload in sorted(segments.get(end, {}).items()):
            if position != len(out):
                raise CheckError(f"gap or overlap at stream offset {position}")
            out += payload
        return bytes(out)

    return stream(client), stream(server), flags_seen


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1:
        print("usage: python -m tools.verify_sample BASE  (e.g. samples/pika-session)")
        return 2
    base = args[0]
    client = Path(f"{base}.client.bin").read_bytes()
    server = Path(f"{base}.server.bin").read_bytes()
    try:
        if not client.startswith(PROTOCOL_HEADER):
            raise CheckError(f"client.bin starts with {client[:8]!r}")
        client_frames = list(walk_frames(client, len(PROTOCOL_HEADER)))
        server_frames = list(walk_frames(server, 0))
        frame_max = negotiated_frame_max(client_frames)
        print(f"negotiated frame_max: {frame_max}")
        describe("client.bin", client_frames, frame_max)
        describe("server.bin", server_frames, frame_max)
        pcap = Path(f"{base}.pcap")
        if pcap.exists():
            pcap_client, pcap_server, flags = read_pcap(pcap)
            if (pcap_client, pcap_server) != (client, server):
                raise CheckError("pcap streams differ from the .bin files")
            print(f"pcap: streams match the .bin files; packets by flags: {dict(flags)}")
    except CheckError as exc:
        print(f"FAILED: {exc}")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
