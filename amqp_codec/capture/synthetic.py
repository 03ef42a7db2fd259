"""Generate synthetic, protocol-valid AMQP 0-9-1 capture sets: rotated pcap and pcapng files.

Many concurrent client connections to one broker, as ``tcpdump -C`` would record them:

* every AMQP byte comes from the codec's own encoders (``encode_frame``, ``encode_message``,
  the ``amqp_codec.v0_9_1`` method classes): handshake (protocol header, start, start-ok
  with a PLAIN response, tune, tune-ok, open), channel opens, exchange and queue declares
  and binds, qos, consume, publishes with properties and bodies of varied sizes (some split
  into several body frames), publisher confirms, deliveries, gets, acks, returns of
  unroutable mandatory messages, heartbeats, channel errors, refused logins, broker-forced
  closes, normal closes;
* publishers, consumers and pollers (basic.get); some publishers interleave the frames of
  messages on two channels; several messages may share one TCP write;
* TCP as a real stack sends it: SYN / SYN-ACK / ACK with an MSS option, segments of at most
  MSS bytes that cut through frames, pure ACKs from the receiver, FIN from both sides (or an
  RST), valid IPv4 and TCP checksums, Ethernet link layer, microsecond timestamps that never
  go backwards across the whole set;
* packets go to N files of about equal size; connections span files; every ``pcapng_every``
  -th file is pcapng (section header and interface description with options, enhanced
  packet blocks), the rest classic little-endian pcap;
* the same arguments and seed give the same bytes.

Packets are built with ``struct`` straight into byte strings (no per-packet objects), so a
1 GB set takes a few minutes on one core.

From Python, :func:`generate` writes ``OUT_DIR/capture-00000.pcap`` ... and
``OUT_DIR/manifest.json`` (the arguments and the counts of what was generated: packets,
connections, frames, messages, bytes). From a checkout, the same from the command line
(``--size`` takes K, M and G suffixes, powers of 1024)::

    python -m tools.gen_captures OUT_DIR --size 1G --files 8 --seed 1

Tests and the pipeline benchmark build their capture sets with it.

The addresses are from the documentation ranges (198.51.100.0/24 for clients, 203.0.113.10
for the broker): nothing here touches a network.
"""

from __future__ import annotations

import heapq
import json
import random
import struct
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ..base import Method
from ..frames import HeartbeatFrame, MethodFrame, encode_frame, encode_message
from ..v0_9_1 import (
    Basic,
    BasicProperties,
    Channel,
    Confirm,
    Connection,
    Exchange,
    Queue,
)

__all__ = ["GENERATOR_VERSION", "MSS", "CaptureSet", "Counts", "generate", "parse_size"]

#: Bumped whenever the bytes generated for the same arguments change (cache key).
GENERATOR_VERSION = 2

MSS = 1460
BROKER_PORT = 5672
SNAPLEN = 262144
LINKTYPE_ETHERNET = 1
#: 2026-01-01T00:00:00Z: where the capture clock starts.
EPOCH_US = 1_767_225_600 * 1_000_000

_BROKER_IP = bytes((203, 0, 113, 10))
_BROKER_MAC = bytes.fromhex("020000cb710a")
_PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"

# TCP flags
_FIN, _SYN, _RST, _PSH, _ACK = 0x01, 0x02, 0x04, 0x08, 0x10

_ETH_TYPE_IPV4 = b"\x08\x00"
_IP = struct.Struct("!BBHHHBBH4s4s")
_TCP = struct.Struct("!HHIIBBHHH")
_PSEUDO = struct.Struct("!4s4sxBH")
_PCAP_GLOBAL = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)
_PCAP_RECORD = struct.Struct("<IIII")
_EPB_HEAD = struct.Struct("<IIIIIII")
_U32 = struct.Struct("<I")
_FRAME_SIZE = struct.Struct("!I")


def _checksum(*parts: bytes) -> int:
    """Internet checksum (RFC 1071) of the concatenation of ``parts`` (all but the last even).

    The one's-complement sum of 16-bit words is congruent to the big-endian integer of the
    bytes modulo 0xFFFF (2**16 is 1 modulo 0xFFFF), so one ``int.from_bytes`` per part does
    it without a Python loop over words.
    """
    total = 0
    for part in parts:
        value = int.from_bytes(part, "big")
        total += value << 8 if len(part) & 1 else value  # an odd tail is padded with a zero
    total %= 0xFFFF
    return 0xFFFF - total if total else 0  # a non-zero sum of 0 mod 0xFFFF is 0xFFFF


def _option(code: int, value: bytes) -> bytes:
    """One pcapng option, padded to 32 bits."""
    return struct.pack("<HH", code, len(value)) + value + b"\0" * (-len(value) % 4)


def _block(block_type: int, body: bytes) -> bytes:
    """One pcapng block around ``body`` (already padded)."""
    length = 12 + len(body)
    return struct.pack("<II", block_type, length) + body + _U32.pack(length)


_PCAPNG_HEAD = _block(
    0x0A0D0D0A,
    struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)
    + _option(4, b"amqp-codec capture.synthetic")  # shb_userappl
    + _option(0, b""),
) + _block(
    0x00000001,
    struct.pack("<HHI", LINKTYPE_ETHERNET, 0, SNAPLEN)
    + _option(2, b"eth0")  # if_name
    + _option(9, b"\x06")  # if_tsresol: microseconds
    + _option(0, b""),
)


@dataclass
class Counts:
    """What a generated set holds (the AMQP figures count both directions)."""

    files: int = 0
    file_bytes: int = 0
    packets: int = 0
    tcp_payload_bytes: int = 0
    connections: int = 0
    frames: int = 0  #: AMQP frames, protocol headers not included
    protocol_headers: int = 0
    published: int = 0
    delivered: int = 0  #: basic.deliver
    got: int = 0  #: basic.get-ok
    returned: int = 0  #: basic.return
    body_bytes: int = 0  #: bytes of message bodies, all content methods
    first_timestamp_us: int = 0
    last_timestamp_us: int = 0


@dataclass
class CaptureSet:
    """The files written by :func:`generate`, in capture order, and what they hold."""

    files: list[Path]
    counts: Counts
    arguments: dict[str, Any] = field(default_factory=dict)


class _Output:
    """Rotating capture writer: N files of about ``rotate_at`` bytes each."""

    def __init__(
        self, out_dir: Path, prefix: str, nfiles: int, rotate_at: int, pcapng_every: int
    ) -> None:
        self.out_dir = out_dir
        self.prefix = prefix
        self.nfiles = nfiles
        self.rotate_at = rotate_at
        self.pcapng_every = pcapng_every
        self.files: list[Path] = []
        self.total = 0  # bytes in finished files
        self.current = 0  # bytes in the open file
        self.packets = 0
        self._fh: BinaryIO | None = None
        self._pcapng = False
        self._chunks: list[bytes] = []
        self._buffered = 0
        self._open()

    def _open(self) -> None:
        index = len(self.files)
        self._pcapng = self.pcapng_every > 0 and index % self.pcapng_every == self.pcapng_every - 1
        path = self.out_dir / f"{self.prefix}{index:05d}.{'pcapng' if self._pcapng else 'pcap'}"
        self.files.append(path)
        self._fh = path.open("wb")
        head = _PCAPNG_HEAD if self._pcapng else _PCAP_GLOBAL
        self._fh.write(head)
        self.current = len(head)

    def _flush(self) -> None:
        assert self._fh is not None
        self._fh.write(b"".join(self._chunks))
        self._chunks.clear()
        self._buffered = 0

    def write(self, ts_us: int, packet: bytes) -> None:
        """Append one link-layer packet captured at ``ts_us`` (microseconds since 1970)."""
        if self.current >= self.rotate_at and len(self.files) < self.nfiles:
            self._flush()
            self._close_file()
            self._open()
        n = len(packet)
        if self._pcapng:
            pad = -n % 4
            record = (
                _EPB_HEAD.pack(6, 32 + n + pad, 0, ts_us >> 32, ts_us & 0xFFFFFFFF, n, n)
                + packet
                + b"\0" * pad
                + _U32.pack(32 + n + pad)
            )
        else:
            sec, usec = divmod(ts_us, 1_000_000)
            record = _PCAP_RECORD.pack(sec, usec, n, n) + packet
        self._chunks.append(record)
        self._buffered += len(record)
        self.current += len(record)
        self.packets += 1
        if self._buffered >= 1 << 20:
            self._flush()

    def _close_file(self) -> None:
        assert self._fh is not None
        self._fh.close()
        self.total += self.current
        self.current = 0
        self._fh = None

    def close(self) -> None:
        """Flush and close the last file."""
        self._flush()
        self._close_file()

    @property
    def written(self) -> int:
        """Bytes written so far, all files."""
        return self.total + self.current


class _Side:
    """One end of a TCP connection: its addresses, next sequence number and IP id."""

    __slots__ = ("eth", "ip", "ip_id", "port", "seq")

    def __init__(self, mac: bytes, peer_mac: bytes, ip: bytes, port: int, seq: int) -> None:
        self.eth = peer_mac + mac + _ETH_TYPE_IPV4
        self.ip = ip
        self.port = port
        self.seq = seq
        self.ip_id = seq & 0xFFFF


class _Tcp:
    """Packets of one TCP connection, written to the shared output at the shared clock."""

    def __init__(self, gen: _Generator, client_ip: bytes, client_port: int) -> None:
        rng = gen.rng
        client_mac = b"\x02\x00" + client_ip
        self.gen = gen
        self.client = _Side(client_mac, _BROKER_MAC, client_ip, client_port, rng.getrandbits(32))
        self.server = _Side(_BROKER_MAC, client_mac, _BROKER_IP, BROKER_PORT, rng.getrandbits(32))

    def _packet(self, src: _Side, dst: _Side, flags: int, payload: bytes = b"") -> None:
        gen = self.gen
        options = struct.pack("!BBH", 2, 4, gen.mss) if flags & _SYN else b""
        tcp_len = 20 + len(options) + len(payload)
        ack = dst.seq if flags & _ACK else 0
        header = _TCP.pack(
            src.port, dst.port, src.seq, ack, (5 + len(options) // 4) << 4, flags, 64240, 0, 0
        )
        csum = _checksum(_PSEUDO.pack(src.ip, dst.ip, 6, tcp_len), header, options, payload)
        header = header[:16] + csum.to_bytes(2, "big") + header[18:]
        ip = _IP.pack(0x45, 0, 20 + tcp_len, src.ip_id, 0x4000, 64, 6, 0, src.ip, dst.ip)
        ip = ip[:10] + _checksum(ip).to_bytes(2, "big") + ip[12:]
        src.ip_id = (src.ip_id + 1) & 0xFFFF
        gen.emit(src.eth + ip + header + options + payload)
        gen.counts.tcp_payload_bytes += len(payload)
        src.seq = (src.seq + len(payload) + (1 if flags & (_SYN | _FIN) else 0)) & 0xFFFFFFFF

    def open(self) -> None:
        """Three-way handshake."""
        c, s = self.client, self.server
        self._packet(c, s, _SYN)
        self.gen.tick(60)
        self._packet(s, c, _SYN | _ACK)
        self.gen.tick(40)
        self._packet(c, s, _ACK)

    def send(self, from_client: bool, data: bytes) -> None:
        """One application write: MSS-sized segments, a pure ACK for every two and the last."""
        src, dst = (self.client, self.server) if from_client else (self.server, self.client)
        view = memoryview(data)
        mss = self.gen.mss
        for segments, start in enumerate(range(0, len(data), mss), 1):
            end = start + mss
            last = end >= len(data)
            self._packet(src, dst, _ACK | _PSH if last else _ACK, bytes(view[start:end]))
            if last or segments % 2 == 0:
                self.gen.tick(25)
                self._packet(dst, src, _ACK)
            self.gen.tick(12)

    def close(self, from_client: bool, reset: bool) -> None:
        """FIN from each side and a last ACK, or one RST."""
        src, dst = (self.client, self.server) if from_client else (self.server, self.client)
        if reset:
            self._packet(src, dst, _RST | _ACK)
            return
        self._packet(src, dst, _FIN | _ACK)
        self.gen.tick(80)
        self._packet(dst, src, _FIN | _ACK)
        self.gen.tick(40)
        self._packet(src, dst, _ACK)


# A step of a connection's traffic: (gap in µs before it, sent by the client, bytes).
_Step = tuple[int, bool, bytes]

_CAPABILITIES = {
    "publisher_confirms": True,
    "exchange_exchange_bindings": True,
    "basic.nack": True,
    "consumer_cancel_notify": True,
    "connection.blocked": True,
    "authentication_failure_close": True,
}
_START = encode_frame(
    MethodFrame(
        0,
        Connection.Start(
            server_properties={
                "capabilities": {
                    **_CAPABILITIES,
                    "per_consumer_qos": True,
                    "direct_reply_to": True,
                },
                "cluster_name": "rabbit@broker-1",
                "copyright": "Copyright (c) 2007-2023 VMware, Inc. or its affiliates.",
                "information": "Licensed under the MPL 2.0.",
                "platform": "Erlang/OTP 25.3.2",
                "product": "RabbitMQ",
                "version": "3.10.25",
            },
            mechanisms=b"AMQPLAIN PLAIN",
            locales=b"en_US",
        ),
    )
)
_CLIENTS: tuple[dict[str, Any], ...] = (
    {"product": "Pika Python Client Library", "platform": "Python 3.11.2", "version": "1.3.2"},
    {"product": "py-amqp", "platform": "Python 3.11.2", "version": "5.2.0"},
    {"product": "RabbitMQ .NET Client", "platform": ".NET", "version": "6.8.1"},
    {"product": "RabbitMQ", "platform": "Java", "version": "5.20.0"},
    {"product": "AMQP 0.9.1 Client", "platform": "golang", "version": "1.9.0"},
)
_USERS = ("guest", "orders-svc", "billing", "telemetry-agent")
_VHOSTS = ("/", "/", "prod", "staging")
_EXCHANGES = (("orders", "topic"), ("billing.events", "fanout"), ("telemetry", "topic"), ("", ""))
_ROUTING = {
    "orders": ("orders.created.eu", "orders.created.us", "orders.paid.eu", "orders.cancelled.us"),
    "billing.events": ("invoice", "refund"),
    "telemetry": ("host-{n}.cpu", "host-{n}.mem", "host-{n}.disk"),
    "": ("rpc.queue", "jobs", "jobs.retry"),
}
_CONTENT_TYPES = ("application/json", "application/json", "text/plain", "application/octet-stream")
_REPLY_TEXT = {200: "Normal shutdown", 320: "CONNECTION_FORCED - broker forced connection closure"}


class _Budget:
    """Shared flag: once the output has its size, connections wind down."""

    exhausted = False


def _frames_in(data: bytes) -> list[bytes]:
    """Split concatenated AMQP frames."""
    frames = []
    pos = 0
    while pos < len(data):
        end = pos + 8 + _FRAME_SIZE.unpack_from(data, pos + 3)[0]
        frames.append(data[pos:end])
        pos = end
    return frames


class _Generator:
    """The schedule: many concurrent connections, steps taken in timestamp order."""

    def __init__(
        self,
        out: _Output,
        seed: int,
        concurrency: int,
        max_messages: int,
        max_body: int,
        *,
        mss: int = MSS,
        single: bool = False,
    ) -> None:
        self.out = out
        self.mss = mss
        self.single = single
        self.max_body = max_body
        self.rng = random.Random(seed)
        self.concurrency = concurrency
        self.max_messages = max_messages
        self.counts = Counts()
        self.budget = _Budget()
        self.target = 0
        self.clock = EPOCH_US
        self._next_client = 0
        # Bodies are slices of two pools: JSON-like text and random bytes.
        rng = self.rng
        record = '{{"id":{},"sku":"SKU-{:05d}","qty":{},"price":"{}.{:02d}","note":"{}"}},'
        text = "[" + "".join(
            record.format(
                i,
                rng.randrange(100000),
                rng.randrange(1, 20),
                rng.randrange(1000),
                rng.randrange(100),
                "x" * rng.randrange(40),
            )
            for i in range(60000)
        )
        self.text_pool = text.encode()
        self.binary_pool = rng.randbytes(1 << 21)

    # ----------------------------------------------------------------- clock and output
    def tick(self, us: int) -> None:
        """Advance the capture clock."""
        self.clock += us

    def emit(self, packet: bytes) -> None:
        """Write one packet at the current clock."""
        self.out.write(self.clock, packet)
        if self.out.written >= self.target:
            self.budget.exhausted = True

    # ----------------------------------------------------------------- the schedule
    def run(self, target: int) -> None:
        """Generate until the output holds ``target`` bytes, then close every connection."""
        self.target = target
        queue: list[tuple[int, int, _Tcp, Iterator[_Step], _Step]] = []
        order = 0

        def start(at: int) -> None:
            nonlocal order
            tcp, steps = self._connection()
            first = next(steps)
            heapq.heappush(queue, (at + first[0], order, tcp, steps, first))
            order += 1

        for _ in range(self.concurrency):
            start(self.clock + self.rng.randrange(20_000))
        while queue:
            when, _, tcp, steps, (_gap, from_client, data) = heapq.heappop(queue)
            self.clock = max(self.clock + 1, when)
            if data:
                tcp.send(from_client, data)
            step = next(steps, None)
            if step is not None:
                heapq.heappush(queue, (self.clock + step[0], order, tcp, steps, step))
                order += 1
            elif not self.budget.exhausted and not self.single:
                start(self.clock + self.rng.randrange(5_000, 200_000))
        self.counts.first_timestamp_us = EPOCH_US
        self.counts.last_timestamp_us = self.clock

    def _connection(self) -> tuple[_Tcp, Iterator[_Step]]:
        n = self._next_client
        self._next_client += 1
        ip = bytes((198, 51, 100, 1 + n % 200))
        port = 32768 + (n * 7919) % 28000
        tcp = _Tcp(self, ip, port)
        self.counts.connections += 1
        kind = self.rng.choices(("publish", "consume", "get", "refused"), (45, 40, 12, 3))[0]
        if self.single:
            kind = "publish"  # one connection that lasts: a publisher until the size is reached
        return tcp, self._traffic(tcp, kind)

    # ----------------------------------------------------------------- AMQP traffic
    def _method(self, channel: int, method: Method) -> bytes:
        self.counts.frames += 1
        return encode_frame(MethodFrame(channel, method))

    def _body(self) -> bytes:
        rng = self.rng
        pick = rng.random()
        if pick < 0.65:
            size = rng.randrange(16, 1024)
        elif pick < 0.92:
            size = rng.randrange(1024, 16384)
        elif pick < 0.995:
            size = rng.randrange(16384, 131072)
        else:
            size = rng.randrange(131072, 1 << 20)
        size = min(size, self.max_body)
        pool = self.text_pool if rng.random() < 0.7 else self.binary_pool
        start = rng.randrange(len(pool) - size)
        return pool[start : start + size]

    def _properties(self, n: int, app: str) -> BasicProperties:
        rng = self.rng
        headers: dict[str, Any] | None = None
        if rng.random() < 0.5:
            headers = {"attempt": rng.randrange(1, 4), "source": app}
            if rng.random() < 0.2:
                headers["trace"] = {"id": f"{rng.getrandbits(64):016x}", "sampled": True}
        return BasicProperties(
            content_type=rng.choice(_CONTENT_TYPES),
            content_encoding="utf-8" if rng.random() < 0.3 else None,
            headers=headers,
            delivery_mode=rng.choice((1, 2)),
            priority=rng.randrange(10) if rng.random() < 0.1 else None,
            correlation_id=f"corr-{n}" if rng.random() < 0.2 else None,
            reply_to="amq.rabbitmq.reply-to" if rng.random() < 0.1 else None,
            expiration="60000" if rng.random() < 0.05 else None,
            message_id=f"{app}-{n}",
            timestamp=self.clock // 1_000_000,
            type="order.created" if rng.random() < 0.2 else None,
            app_id=app,
        )

    def _content(
        self, channel: int, method: Method, props: BasicProperties, body: bytes, frame_max: int
    ) -> bytes:
        chunk = frame_max - 8
        self.counts.frames += 2 + (len(body) + chunk - 1) // chunk
        self.counts.body_bytes += len(body)
        return encode_message(channel, method, props, body, frame_max)

    def _routing(self, exchange: str) -> str:
        return self.rng.choice(_ROUTING[exchange]).format(n=self.rng.randrange(40))

    def _traffic(self, tcp: _Tcp, kind: str) -> Iterator[_Step]:
        """The steps of one connection; the TCP handshake and teardown come with it."""
        rng = self.rng
        m = self._method
        client = dict(rng.choice(_CLIENTS), capabilities=_CAPABILITIES)
        client["connection_name"] = f"{kind}-{self.counts.connections}"
        user = rng.choice(_USERS)
        frame_max = rng.choice((131072, 131072, 65536, 4096))
        heartbeat = rng.choice((0, 60, 60, 30))
        app = str(client["connection_name"])

        yield 0, True, b""  # the first step only schedules the connection
        tcp.open()
        self.counts.protocol_headers += 1
        yield 150, True, _PROTOCOL_HEADER
        self.counts.frames += 1
        yield 400, False, _START
        start_ok = Connection.StartOk(
            client_properties=client,
            mechanism="PLAIN",
            response=b"\0" + user.encode() + b"\0" + f"pw-{rng.getrandbits(32):08x}".encode(),
            locale="en_US",
        )
        yield 300, True, m(0, start_ok)
        if kind == "refused":
            text = (
                "ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. "
                "For details see the broker logfile."
            )
            yield 2000, False, m(0, Connection.Close(403, text, 0, 0))
            yield 200, True, m(0, Connection.CloseOk())
            tcp.close(from_client=False, reset=False)
            return
        yield 900, False, m(0, Connection.Tune(2047, 131072, 60))
        yield (
            200,
            True,
            m(0, Connection.TuneOk(2047, frame_max, heartbeat))
            + m(0, Connection.Open(virtual_host=rng.choice(_VHOSTS))),
        )
        yield 600, False, m(0, Connection.OpenOk())
        yield 200, True, m(1, Channel.Open())
        yield 300, False, m(1, Channel.OpenOk())

        planned = min(self.max_messages, int(rng.lognormvariate(4.0, 1.2)) + 1)
        if self.single:
            planned = self.max_messages
        if kind == "publish":
            yield from self._publisher(planned, frame_max, heartbeat, app)
        elif kind == "consume":
            yield from self._consumer(planned, frame_max, heartbeat, app)
        else:
            yield from self._poller(planned, frame_max, heartbeat)

        ending = rng.random()
        if ending < 0.03:  # the broker shuts the connection down
            yield 500, False, m(0, Connection.Close(320, _REPLY_TEXT[320], 0, 0))
            yield 200, True, m(0, Connection.CloseOk())
            tcp.close(from_client=False, reset=False)
        elif ending < 0.06:  # the client process dies
            yield 500, True, b""
            tcp.close(from_client=True, reset=True)
        else:
            yield 800, True, m(1, Channel.Close(200, "Normal shutdown", 0, 0))
            yield 300, False, m(1, Channel.CloseOk())
            yield 200, True, m(0, Connection.Close(200, _REPLY_TEXT[200], 0, 0))
            yield 300, False, m(0, Connection.CloseOk())
            tcp.close(from_client=True, reset=False)

    def _gap(self) -> int:
        """Microseconds between one application action and the next."""
        return 50 + int(self.rng.expovariate(1 / 4000))

    def _heartbeat(self, heartbeat: int) -> Iterator[_Step]:
        if heartbeat and self.rng.random() < 0.005:
            self.counts.frames += 2
            beat = encode_frame(HeartbeatFrame())
            yield self._gap(), True, beat
            yield self._gap(), False, beat

    def _publisher(self, planned: int, frame_max: int, heartbeat: int, app: str) -> Iterator[_Step]:
        rng, m = self.rng, self._method
        exchange, ex_type = rng.choice(_EXCHANGES)
        channels = [1]
        if rng.random() < 0.3:
            channels.append(2)
            yield 200, True, m(2, Channel.Open())
            yield 300, False, m(2, Channel.OpenOk())
        if exchange:
            declare = Exchange.Declare(exchange=exchange, type=ex_type, durable=True, arguments={})
            yield 200, True, m(1, declare)
            yield 400, False, m(1, Exchange.DeclareOk())
        confirms = rng.random() < 0.5
        if confirms:
            for ch in channels:
                yield 200, True, m(ch, Confirm.Select())
                yield 300, False, m(ch, Confirm.SelectOk())
        next_tag = dict.fromkeys(channels, 1)
        acked = dict.fromkeys(channels, 0)
        sent = 0
        while sent < planned and not self.budget.exhausted:
            burst = min(rng.choice((1, 1, 1, 2, 4)), planned - sent)
            pending: dict[int, list[bytes]] = {}  # frames waiting to be written, per channel
            for _ in range(burst):
                ch = rng.choice(channels)
                mandatory = rng.random() < 0.05
                publish = Basic.Publish(
                    exchange=exchange, routing_key=self._routing(exchange), mandatory=mandatory
                )
                body = self._body()
                props = self._properties(sent, app)
                wire = self._content(ch, publish, props, body, frame_max)
                self.counts.published += 1
                sent += 1
                next_tag[ch] += 1
                if mandatory and rng.random() < 0.5:  # unroutable: the broker returns it
                    ret = Basic.Return(312, "NO_ROUTE", exchange, publish.routing_key)
                    yield self._gap(), True, b"".join(pending.pop(ch, [])) + wire
                    yield 300, False, self._content(ch, ret, props, body, frame_max)
                    self.counts.returned += 1
                else:
                    pending.setdefault(ch, []).extend(_frames_in(wire))
            if pending:
                # Channels interleave frame by frame, as a client writing from two threads
                # does; each channel's own frames stay in order.
                queues = list(pending.values())
                frames: list[bytes] = []
                for i in range(max(len(q) for q in queues)):
                    frames.extend(q[i] for q in queues if i < len(q))
                yield self._gap(), True, b"".join(frames)
            if confirms:
                acks = []
                for ch in channels:
                    last = next_tag[ch] - 1
                    if last > acked[ch] and rng.random() < 0.7:
                        multiple = last - acked[ch] > 1
                        acks.append(m(ch, Basic.Ack(delivery_tag=last, multiple=multiple)))
                        acked[ch] = last
                if acks:
                    yield 300, False, b"".join(acks)
            yield from self._heartbeat(heartbeat)
        for ch in channels[1:]:
            yield 300, True, m(ch, Channel.Close(200, "Normal shutdown", 0, 0))
            yield 300, False, m(ch, Channel.CloseOk())

    def _consumer(self, planned: int, frame_max: int, heartbeat: int, app: str) -> Iterator[_Step]:
        rng, m = self.rng, self._method
        exchange, _ = rng.choice(_EXCHANGES[:3])
        queue = f"{exchange}.{app}"
        if rng.random() < 0.1:  # a passive declare of a queue that is not there
            yield 200, True, m(1, Queue.Declare(queue=queue + ".missing", passive=True))
            text = f"NOT_FOUND - no queue '{queue}.missing' in vhost '/'"
            yield 400, False, m(1, Channel.Close(404, text, 50, 10))
            yield 200, True, m(1, Channel.CloseOk())
            yield 200, True, m(1, Channel.Open())
            yield 300, False, m(1, Channel.OpenOk())
        yield 200, True, m(1, Queue.Declare(queue=queue, durable=True, arguments={}))
        yield 400, False, m(1, Queue.DeclareOk(queue, 0, 0))
        key = "#" if exchange != "billing.events" else ""
        yield 200, True, m(1, Queue.Bind(queue=queue, exchange=exchange, routing_key=key))
        yield 400, False, m(1, Queue.BindOk())
        prefetch = rng.choice((1, 10, 50, 250))
        yield 200, True, m(1, Basic.Qos(prefetch_count=prefetch))
        yield 300, False, m(1, Basic.QosOk())
        no_ack = rng.random() < 0.2
        tag = f"ctag-{app}"
        yield 200, True, m(1, Basic.Consume(queue=queue, consumer_tag=tag, no_ack=no_ack))
        yield 300, False, m(1, Basic.ConsumeOk(tag))
        delivered = acked = 0
        while delivered < planned and not self.budget.exhausted:
            batch = min(rng.randint(1, min(prefetch, 8)), planned - delivered)
            parts = []
            for _ in range(batch):
                delivered += 1
                deliver = Basic.Deliver(
                    consumer_tag=tag,
                    delivery_tag=delivered,
                    redelivered=rng.random() < 0.02,
                    exchange=exchange,
                    routing_key=self._routing(exchange),
                )
                body = self._body()
                props = self._properties(delivered, "producer")
                parts.append(self._content(1, deliver, props, body, frame_max))
                self.counts.delivered += 1
            yield self._gap(), False, b"".join(parts)
            if not no_ack:
                if rng.random() < 0.5:
                    acks = [m(1, Basic.Ack(delivery_tag=delivered, multiple=delivered - acked > 1))]
                else:
                    acks = [
                        m(1, Basic.Ack(delivery_tag=t)) for t in range(acked + 1, delivered + 1)
                    ]
                acked = delivered
                yield 200 + int(rng.expovariate(1 / 2000)), True, b"".join(acks)
            yield from self._heartbeat(heartbeat)
        yield 300, True, m(1, Basic.Cancel(consumer_tag=tag))
        yield 300, False, m(1, Basic.CancelOk(tag))

    def _poller(self, planned: int, frame_max: int, heartbeat: int) -> Iterator[_Step]:
        rng, m = self.rng, self._method
        queue = "jobs"
        tag = polls = 0
        while polls < planned and not self.budget.exhausted:
            polls += 1
            yield self._gap(), True, m(1, Basic.Get(queue=queue))
            if rng.random() < 0.25:
                yield 300, False, m(1, Basic.GetEmpty())
                continue
            tag += 1
            get_ok = Basic.GetOk(tag, False, "", queue, rng.randrange(500))
            body = self._body()
            yield (
                300,
                False,
                self._content(1, get_ok, self._properties(tag, "jobs"), body, frame_max),
            )
            self.counts.got += 1
            yield 300, True, m(1, Basic.Ack(delivery_tag=tag))
            yield from self._heartbeat(heartbeat)


def generate(
    out_dir: Path,
    total_bytes: int,
    files: int,
    *,
    seed: int = 1,
    concurrency: int | None = None,
    pcapng_every: int = 3,
    prefix: str = "capture-",
    max_messages: int = 2000,
    mss: int = MSS,
    single_connection: bool = False,
) -> CaptureSet:
    """Write ``files`` capture files of about ``total_bytes`` together into ``out_dir``.

    ``concurrency`` connections are open at any time (default: from 4 for tiny sets up to
    64); a connection carries up to ``max_messages`` messages, then closes and another opens.
    ``mss``: TCP payload bytes per segment (1460 on Ethernet; up to 65483 on loopback).
    ``single_connection``: the whole set is one publisher's connection, as long as the size
    asks (``max_messages`` permitting).
    Once the files hold ``total_bytes``, every open connection closes cleanly, so the set
    ends a little over the size asked for.
    """
    if files < 1:
        raise ValueError("files must be at least 1")
    if total_bytes < 1:
        raise ValueError("total_bytes must be positive")
    if not 536 <= mss <= 65483:
        raise ValueError("mss must be between 536 and 65483")
    if single_connection:
        concurrency, max_messages = 1, max(max_messages, 1 << 40)
    if concurrency is None:
        concurrency = max(4, min(64, total_bytes // (256 * 1024)))
    out_dir.mkdir(parents=True, exist_ok=True)
    arguments = {
        "total_bytes": total_bytes,
        "files": files,
        "seed": seed,
        "concurrency": concurrency,
        "pcapng_every": pcapng_every,
        "prefix": prefix,
        "max_messages": max_messages,
        "mss": mss,
        "single_connection": single_connection,
        "generator_version": GENERATOR_VERSION,
    }
    out = _Output(out_dir, prefix, files, -(-total_bytes // files), pcapng_every)
    # Bodies up to 1 MiB, but small sets get small bodies: one message must not be their size.
    max_body = max(1024, min(1 << 20, total_bytes // 64))
    gen = _Generator(
        out, seed, concurrency, max_messages, max_body, mss=mss, single=single_connection
    )
    try:
        gen.run(total_bytes)
    finally:
        out.close()
    counts = gen.counts
    counts.files = len(out.files)
    counts.file_bytes = out.total
    counts.packets = out.packets
    result = CaptureSet(out.files, counts, arguments)
    manifest = {
        "arguments": arguments,
        "files": [p.name for p in out.files],
        "counts": asdict(counts),
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return result


def parse_size(text: str) -> int:
    """``"1G"`` -> 1073741824; K, M and G are powers of 1024, a bare number is bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)
