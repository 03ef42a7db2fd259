"""Helpers for the capture-analysis tests: TCP conversations written as pcap files with dpkt,
AMQP sessions built with the codec, and one local SparkSession for the whole test run.
"""

from __future__ import annotations

import os
import socket
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dpkt
import pytest

from amqp_codec import encode_frame
from amqp_codec.frames import ContentBodyFrame, ContentHeaderFrame, MethodFrame
from amqp_codec.v0_9_1 import Basic, BasicProperties, Channel, Connection

PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
PASSWORD = b"s3cr3t-Pa55w0rd"


@dataclass
class Conversation:
    """One TCP connection as Ethernet/IPv4 packets, built segment by segment."""

    client: tuple[str, int] = ("10.1.0.1", 40001)
    server: tuple[str, int] = ("10.1.0.2", 5672)
    ts: float = 1_700_000_000.0
    seq: dict[str, int] = field(default_factory=lambda: {"client": 1000, "server": 900000})
    packets: list[tuple[float, bytes]] = field(default_factory=list)
    sent: dict[str, bytearray] = field(
        default_factory=lambda: {"client": bytearray(), "server": bytearray()}
    )

    def _packet(self, direction: str, flags: int, payload: bytes, seq: int) -> bytes:
        src, dst = (
            (self.client, self.server) if direction == "client" else (self.server, self.client)
        )
        tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=seq & 0xFFFFFFFF, flags=flags)
        tcp.data = payload
        ip = dpkt.ip.IP(
            src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=dpkt.ip.IP_PROTO_TCP
        )
        ip.data = tcp
        ip.len = len(ip)
        eth = dpkt.ethernet.Ethernet(
            src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip
        )
        return bytes(eth)

    def _emit(self, direction: str, flags: int, payload: bytes, seq: int) -> None:
        self.ts += 0.001
        self.packets.append((self.ts, self._packet(direction, flags, payload, seq)))

    def handshake(self) -> Conversation:
        self._emit("client", dpkt.tcp.TH_SYN, b"", self.seq["client"] - 1)
        self._emit("server", dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK, b"", self.seq["server"] - 1)
        return self

    def send(
        self, direction: str, data: bytes, *, mss: int = 1400, lose: tuple[int, ...] = ()
    ) -> Conversation:
        """Send ``data`` in segments of ``mss`` bytes; segments numbered in ``lose`` are not
        captured (the bytes still count in the stream)."""
        for i, start in enumerate(range(0, len(data), mss)):
            chunk = data[start : start + mss]
            if i not in lose:
                self._emit(
                    direction, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, chunk, self.seq[direction]
                )
            self.seq[direction] += len(chunk)
            self.sent[direction] += chunk
        return self

    def resend(self, direction: str, data: bytes, seq: int) -> Conversation:
        """Send ``data`` at sequence number ``seq``, as a retransmission (its bytes as given,
        which may differ from those first sent there)."""
        self._emit(direction, dpkt.tcp.TH_ACK | dpkt.tcp.TH_PUSH, data, seq)
        return self

    def fin(self, direction: str) -> Conversation:
        self._emit(direction, dpkt.tcp.TH_FIN | dpkt.tcp.TH_ACK, b"", self.seq[direction])
        return self


def write_pcap(path: Path, *conversations: Conversation) -> Path:
    """Write the conversations' packets, merged in time order, as a classic pcap file."""
    packets = sorted(p for c in conversations for p in c.packets)
    with open(path, "wb") as out:
        writer = dpkt.pcap.Writer(out)
        for ts, buf in packets:
            writer.writepkt(buf, ts=ts)
    return path


def frames(*items: object) -> bytes:
    """Encode frames (MethodFrame, ContentHeaderFrame, ...) back to back."""
    return b"".join(encode_frame(item) for item in items)  # type: ignore[arg-type]


def opening(channels: tuple[int, ...] = (1,)) -> tuple[bytes, bytes]:
    """Client and server bytes of a connection opening (PLAIN login) and channel opens."""
    client = PROTOCOL_HEADER + frames(
        MethodFrame(
            0,
            Connection.StartOk(
                client_properties={"product": "test-client", "version": "9.8.7"},
                mechanism="PLAIN",
                response=b"\x00analyst\x00" + PASSWORD,
            ),
        ),
        MethodFrame(0, Connection.TuneOk(channel_max=64, frame_max=4096, heartbeat=30)),
        MethodFrame(0, Connection.Open(virtual_host="/test")),
        *(MethodFrame(ch, Channel.Open()) for ch in channels),
    )
    server = frames(
        MethodFrame(0, Connection.Start(server_properties={"product": "test-broker"})),
        MethodFrame(0, Connection.Tune(channel_max=2047, frame_max=131072, heartbeat=60)),
        MethodFrame(0, Connection.OpenOk()),
        *(MethodFrame(ch, Channel.OpenOk()) for ch in channels),
    )
    return client, server


def message_frames(
    channel: int, exchange: str, key: str, body: bytes, frame_max: int = 4096
) -> list[object]:
    """The frames of one basic.publish: method, header, body frames of at most frame_max."""
    chunk = frame_max - 8
    items: list[object] = [
        MethodFrame(channel, Basic.Publish(exchange=exchange, routing_key=key)),
        ContentHeaderFrame(
            channel,
            60,
            len(body),
            BasicProperties(content_type="text/plain", headers={"n": len(body)}, priority=3),
        ),
    ]
    items += [ContentBodyFrame(channel, body[i : i + chunk]) for i in range(0, len(body), chunk)]
    return items


def interleave(*sequences: list[object]) -> list[object]:
    """Round-robin the frames of several channels' messages into one frame order."""
    out: list[object] = []
    iters = [iter(s) for s in sequences]
    while iters:
        for it in list(iters):
            try:
                out.append(next(it))
            except StopIteration:
                iters.remove(it)
    return out


def closing() -> tuple[bytes, bytes]:
    """Client-initiated connection.close and the server's close-ok."""
    client = frames(MethodFrame(0, Connection.Close(reply_code=200, reply_text="Goodbye")))
    server = frames(MethodFrame(0, Connection.CloseOk()))
    return client, server


def le32(n: int) -> bytes:
    return struct.pack("<I", n)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One small local SparkSession for every Spark test."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("amqp-codec tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
