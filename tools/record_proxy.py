"""Recording TCP proxy: capture the exact bytes of real AMQP sessions.

The proxy listens on a local port and forwards every accepted connection to an
upstream server (by default a RabbitMQ broker on 127.0.0.1:5672).  For the
connection numbered ``n`` (counting from 1) it writes, byte for byte:

* ``<out>/<prefix>-<n>.client.bin`` -- everything the client sent to the server;
* ``<out>/<prefix>-<n>.server.bin`` -- everything the server sent to the client.

With ``--pcap FILE`` it additionally writes every connection into one classic
libpcap file so that ordinary packet tools (Wireshark, tshark, scapy, dpkt)
can reassemble and dissect the streams.  The packets are *synthetic*: the
proxy never sees real packets, only the byte chunks each ``read()`` returns.

pcap format details:

* classic libpcap, microsecond timestamps, little-endian, magic 0xa1b2c3d4;
* link type 1 (``LINKTYPE_ETHERNET``) with made-up MAC addresses, chosen over
  101 (``LINKTYPE_RAW``) because every reader supports it;
* IPv4 + TCP, no options, valid IP and TCP checksums;
* the endpoints are the real client address and the real upstream address
  (a non-IPv4 address is replaced by 192.0.2.1 / 192.0.2.2, from TEST-NET-1);
* each connection starts with SYN, SYN-ACK, ACK and ends with a FIN from each
  side (or an RST from a side whose read failed) and a last ACK;
* one data packet per chunk read, split into segments of at most 65000 bytes,
  each followed by a pure ACK from the receiver; timestamps are the
  wall-clock times at which the proxy read the chunks.

Use it from the command line::

    python -m tools.record_proxy --listen-port 5673 --out /tmp/rec \
        --pcap /tmp/rec/all.pcap

or from a test, on an ephemeral port::

    async with RecordingProxy(tmp_path, listen_port=0) as proxy:
        ...  # connect a client to ("127.0.0.1", proxy.port)
    # leaving the block waits for open connections, then closes the files

Standard library only; Python 3.11+.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import itertools
import signal
import struct
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Self

__all__ = ["ConnectionRecord", "PcapWriter", "RecordingProxy", "TcpFlow", "main"]

#: Most bytes requested from a socket per ``read()``.  Larger than
#: MAX_SEGMENT on purpose, so that big chunks are split in the pcap.
READ_SIZE = 256 * 1024
#: Most payload bytes in one synthetic TCP segment (IPv4 total length <= 65535).
MAX_SEGMENT = 65000

PCAP_MAGIC = 0xA1B2C3D4  # classic pcap, microsecond timestamps
PCAP_SNAPLEN = 262144
LINKTYPE_ETHERNET = 1

_ETHERTYPE_IPV4 = 0x0800
_IPPROTO_TCP = 6
_TCP_FIN, _TCP_SYN, _TCP_RST, _TCP_PSH, _TCP_ACK = 0x01, 0x02, 0x04, 0x08, 0x10
_TCP_WINDOW = 65535
_SEQ_MASK = 0xFFFFFFFF
# Fixed initial sequence numbers keep captures easy to compare.
_CLIENT_ISN = 0x10000000
_SERVER_ISN = 0x20000000
# Stand-ins for non-IPv4 endpoints (TEST-NET-1, RFC 5737).
_FALLBACK_CLIENT_IP = "192.0.2.1"
_FALLBACK_SERVER_IP = "192.0.2.2"


# --------------------------------------------------------------------------
# pcap output
# --------------------------------------------------------------------------


class PcapWriter:
    """Write Ethernet frames to a classic libpcap file."""

    def __init__(self, path: Path) -> None:
        self._file: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed in close()
        # Global header: magic, version 2.4, thiszone, sigfigs, snaplen, linktype.
        self._file.write(
            struct.pack("<IHHiIII", PCAP_MAGIC, 2, 4, 0, 0, PCAP_SNAPLEN, LINKTYPE_ETHERNET)
        )

    def write(self, timestamp: float, frame: bytes) -> None:
        """Append one record stamped with ``timestamp`` (seconds since the epoch)."""
        micros = int(timestamp * 1_000_000)
        seconds, micros = divmod(micros, 1_000_000)
        self._file.write(struct.pack("<IIII", seconds, micros, len(frame), len(frame)))
        self._file.write(frame)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _checksum(data: bytes) -> int:
    """Internet checksum (RFC 1071) of ``data``."""
    if len(data) % 2:
        data += b"\x00"
    words: tuple[int, ...] = struct.unpack(f"!{len(data) // 2}H", data)
    total = sum(words)
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _ipv4_or(host: str, fallback: str) -> bytes:
    """Packed IPv4 address of ``host``, or of ``fallback`` when it has none."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        address = ipaddress.ip_address(fallback)
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped
        address = mapped if mapped is not None else ipaddress.ip_address(fallback)
    return address.packed


@dataclass
class _Endpoint:
    """One side of a synthetic TCP connection."""

    mac: bytes
    ip: bytes
    port: int
    seq: int  # next sequence number this side will send
    ip_id: int = 0
    closed: bool = False  # FIN or RST sent
    reset: bool = False  # RST sent


class TcpFlow:
    """Synthesise the TCP packets of one proxied connection into a pcap file.

    ``from_client`` selects the sending side in every call.  Sequence and
    acknowledgement numbers follow the bytes recorded so far, so a reader can
    reassemble each direction exactly.
    """

    def __init__(self, pcap: PcapWriter, client: tuple[str, int], server: tuple[str, int]) -> None:
        self._pcap = pcap
        self._client = _Endpoint(
            b"\x02\x00\x00\x00\x00\x01",
            _ipv4_or(client[0], _FALLBACK_CLIENT_IP),
            client[1],
            _CLIENT_ISN,
        )
        self._server = _Endpoint(
            b"\x02\x00\x00\x00\x00\x02",
            _ipv4_or(server[0], _FALLBACK_SERVER_IP),
            server[1],
            _SERVER_ISN,
        )
        self._first_closer: _Endpoint | None = None

    def _sides(self, from_client: bool) -> tuple[_Endpoint, _Endpoint]:
        if from_client:
            return self._client, self._server
        return self._server, self._client

    def _emit(self, src: _Endpoint, dst: _Endpoint, flags: int, payload: bytes = b"") -> None:
        """Write one packet from ``src`` to ``dst`` and advance ``src.seq``."""
        ack = dst.seq if flags & _TCP_ACK else 0
        tcp_length = 20 + len(payload)
        tcp = struct.pack(
            "!HHIIBBHHH",
            src.port,
            dst.port,
            src.seq,
            ack,
            5 << 4,
            flags,
            _TCP_WINDOW,
            0,
            0,
        )
        pseudo = src.ip + dst.ip + struct.pack("!BBH", 0, _IPPROTO_TCP, tcp_length)
        checksum = _checksum(pseudo + tcp + payload)
        tcp = tcp[:16] + struct.pack("!H", checksum) + tcp[18:]
        ip = struct.pack(
            "!BBHHHBBH4s4s",
            0x45,  # version 4, header length 5 words
            0,
            20 + tcp_length,
            src.ip_id,
            0x4000,  # don't fragment
            64,  # TTL
            _IPPROTO_TCP,
            0,
            src.ip,
            dst.ip,
        )
        ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
        ethernet = dst.mac + src.mac + struct.pack("!H", _ETHERTYPE_IPV4)
        self._pcap.write(time.time(), ethernet + ip + tcp + payload)
        src.ip_id = (src.ip_id + 1) & 0xFFFF
        advance = len(payload) + (1 if flags & (_TCP_SYN | _TCP_FIN) else 0)
        src.seq = (src.seq + advance) & _SEQ_MASK

    def handshake(self) -> None:
        """SYN, SYN-ACK, ACK."""
        self._emit(self._client, self._server, _TCP_SYN)
        self._emit(self._server, self._client, _TCP_SYN | _TCP_ACK)
        self._emit(self._client, self._server, _TCP_ACK)

    def data(self, from_client: bool, payload: bytes) -> None:
        """One chunk read from the sender, split into segments, each ACKed."""
        src, dst = self._sides(from_client)
        for start in range(0, len(payload), MAX_SEGMENT):
            self._emit(src, dst, _TCP_PSH | _TCP_ACK, payload[start : start + MAX_SEGMENT])
            self._emit(dst, src, _TCP_ACK)

    def close(self, from_client: bool, *, reset: bool = False) -> None:
        """The sender finished (FIN) or failed (RST); idempotent per side."""
        src, dst = self._sides(from_client)
        if src.closed:
            return
        src.closed = True
        src.reset = reset
        self._emit(src, dst, (_TCP_RST if reset else _TCP_FIN) | _TCP_ACK)
        if self._first_closer is None:
            self._first_closer = src

    def finish(self) -> None:
        """Close both sides if still open and ACK the last FIN (if no RST)."""
        self.close(True)
        self.close(False)
        first = self._first_closer
        if first is not None and not (self._client.reset or self._server.reset):
            other = self._server if first is self._client else self._client
            self._emit(first, other, _TCP_ACK)


# --------------------------------------------------------------------------
# The proxy
# --------------------------------------------------------------------------


def _create(path: Path) -> BinaryIO:
    """Open ``path`` for writing bytes (synchronously; see RecordingProxy._proxy)."""
    return open(path, "wb")


@dataclass
class ConnectionRecord:
    """What was recorded for one finished connection."""

    number: int
    client_path: Path
    server_path: Path
    client_bytes: int = 0
    server_bytes: int = 0
    #: The client / server reset its connection (a failed read on that side).
    #: RabbitMQ closes its sockets with SO_LINGER 0, so ``server_reset`` is
    #: normal at the very end of a session.
    client_reset: bool = False
    server_reset: bool = False
    #: Every socket error, prefixed by direction and operation.
    errors: list[str] = field(default_factory=list)


class RecordingProxy:
    """An asyncio TCP proxy that records each connection's raw bytes.

    Start it with ``await proxy.start()`` (returns the bound port) or
    ``async with proxy``; stop it with ``await proxy.aclose()``, which stops
    accepting, waits up to ``close_grace`` seconds for open connections to
    end, aborts the rest and closes all files.  A client whose upstream
    connection fails (or takes over ``connect_timeout`` seconds) is dropped
    and leaves no files.
    """

    def __init__(
        self,
        out_dir: Path | str,
        *,
        prefix: str = "conn",
        upstream: tuple[str, int] = ("127.0.0.1", 5672),
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        pcap_path: Path | str | None = None,
        close_grace: float = 5.0,
        connect_timeout: float = 10.0,
    ) -> None:
        self.out_dir = Path(out_dir)
        self.prefix = prefix
        self.upstream = upstream
        self.listen_host = listen_host
        self.listen_port = listen_port
        self.pcap_path = Path(pcap_path) if pcap_path is not None else None
        self.close_grace = close_grace
        self.connect_timeout = connect_timeout
        #: Finished connections, in the order they ended.
        self.connections: list[ConnectionRecord] = []
        self._server: asyncio.Server | None = None
        self._pcap: PcapWriter | None = None
        self._numbers = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()  # both ends, open ones
        self._finished = asyncio.Condition()

    # -- lifecycle ---------------------------------------------------------

    async def start(self) -> int:
        """Create the output files' folder, start listening, return the port."""
        if self._server is not None:
            raise RuntimeError("proxy already started")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self.pcap_path is not None:
            self.pcap_path.parent.mkdir(parents=True, exist_ok=True)
            self._pcap = PcapWriter(self.pcap_path)
        self._server = await asyncio.start_server(self._handle, self.listen_host, self.listen_port)
        return self.port

    @property
    def port(self) -> int:
        """The port actually listened on (useful with ``listen_port=0``)."""
        if self._server is None or not self._server.sockets:
            raise RuntimeError("proxy is not listening")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def wait_finished(self, count: int) -> None:
        """Wait until at least ``count`` connections have finished.

        Bound it with ``asyncio.timeout()`` in tests.
        """
        async with self._finished:
            await self._finished.wait_for(lambda: len(self.connections) >= count)

    async def aclose(self) -> None:
        """Stop accepting, let open connections end, then close everything."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        if self._tasks:
            _done, pending = await asyncio.wait(set(self._tasks), timeout=self.close_grace)
            if pending:
                # Still open after the grace period: abort the sockets, which
                # ends every pump's read, and give the handlers a moment.
                for writer in list(self._writers):
                    writer.transport.abort()
                _done, pending = await asyncio.wait(pending, timeout=1.0)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self._pcap is not None:
            self._pcap.close()
            self._pcap = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- one connection ----------------------------------------------------

    async def _handle(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(client_writer)
        try:
            await self._proxy(next(self._numbers), client_reader, client_writer)
        except asyncio.CancelledError:
            # Only aclose() cancels handlers, as a last resort.  Ending
            # normally spares Python 3.11's start_server a spurious traceback
            # (it calls task.exception() on the finished handler task).
            client_writer.transport.abort()
        finally:
            self._writers.discard(client_writer)
            self._tasks.discard(task)

    async def _proxy(
        self,
        number: int,
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
    ) -> None:
        base = self.out_dir / f"{self.prefix}-{number}"
        record = ConnectionRecord(number, Path(f"{base}.client.bin"), Path(f"{base}.server.bin"))
        try:
            async with asyncio.timeout(self.connect_timeout):
                upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        except OSError as exc:  # includes TimeoutError
            print(f"record_proxy: connection {number}: upstream: {exc}", file=sys.stderr)
            client_writer.transport.abort()
            return

        flow: TcpFlow | None = None
        if self._pcap is not None:
            client_peer = client_writer.get_extra_info("peername") or ("", 0)
            server_peer = upstream_writer.get_extra_info("peername") or ("", 0)
            flow = TcpFlow(
                self._pcap,
                (client_peer[0], client_peer[1]),
                (server_peer[0], server_peer[1]),
            )
            flow.handshake()

        writers = (client_writer, upstream_writer)
        self._writers.add(upstream_writer)
        try:
            # Disk writes are deliberately synchronous (a chunk is at most
            # READ_SIZE bytes): writing each chunk before forwarding it keeps
            # the files and the pcap in exact order.
            with (
                _create(record.client_path) as client_file,
                _create(record.server_path) as server_file,
            ):
                await asyncio.gather(
                    self._pump(
                        client_reader,
                        upstream_writer,
                        client_file,
                        flow,
                        True,
                        record,
                        writers,
                    ),
                    self._pump(
                        upstream_reader,
                        client_writer,
                        server_file,
                        flow,
                        False,
                        record,
                        writers,
                    ),
                )
        finally:
            if flow is not None:
                flow.finish()
            if self._pcap is not None:
                self._pcap.flush()
            self._writers.discard(upstream_writer)
            for writer in writers:
                writer.close()
            for writer in writers:
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
            async with self._finished:
                self.connections.append(record)
                self._finished.notify_all()

    @staticmethod
    async def _pump(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        sink: BinaryIO,
        flow: TcpFlow | None,
        from_client: bool,
        record: ConnectionRecord,
        writers: tuple[asyncio.StreamWriter, ...],
    ) -> None:
        """Copy one direction until EOF, recording each chunk before forwarding it.

        Recording first keeps the pcap causally ordered: a request is always
        written before the response it provokes.
        """
        direction = "client->server" if from_client else "server->client"
        while True:
            try:
                data = await reader.read(READ_SIZE)
            except OSError as exc:
                # The sender reset: pass the reset on (abort sends RST) to
                # both sockets, which also ends the other direction's read.
                record.errors.append(f"{direction} read: {exc!r}")
                if from_client:
                    record.client_reset = True
                else:
                    record.server_reset = True
                if flow is not None:
                    flow.close(from_client, reset=True)
                for each in writers:
                    each.transport.abort()
                return
            if not data:
                break
            sink.write(data)
            if from_client:
                record.client_bytes += len(data)
            else:
                record.server_bytes += len(data)
            if flow is not None:
                flow.data(from_client, data)
            try:
                writer.write(data)
                await writer.drain()
            except OSError as exc:
                # The receiver is gone: show it as a reset and tear down both.
                record.errors.append(f"{direction} write: {exc!r}")
                if flow is not None:
                    flow.close(not from_client, reset=True)
                for each in writers:
                    each.transport.abort()
                return
        # Clean EOF: pass the half-close on and keep the other direction going.
        if flow is not None:
            flow.close(from_client)
        if writer.can_write_eof() and not writer.is_closing():
            with contextlib.suppress(OSError):
                writer.write_eof()


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def _host_port(text: str) -> tuple[str, int]:
    """Parse ``HOST:PORT`` or ``[IPV6]:PORT``."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="record_proxy",
        description="TCP proxy that records each connection's raw bytes (and optionally a pcap).",
    )
    parser.add_argument(
        "--listen-host",
        default="127.0.0.1",
        help="address to listen on (default %(default)s)",
    )
    parser.add_argument(
        "--listen-port",
        type=int,
        default=5673,
        help="port to listen on; 0 picks a free one (default %(default)s)",
    )
    parser.add_argument(
        "--upstream",
        type=_host_port,
        default=("127.0.0.1", 5672),
        metavar="HOST:PORT",
        help="server to forward to (default 127.0.0.1:5672)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="folder for the .bin files",
    )
    parser.add_argument("--prefix", default="conn", help="file name prefix (default %(default)s)")
    parser.add_argument(
        "--pcap",
        type=Path,
        metavar="FILE",
        help="also write a libpcap file (link type 1, Ethernet)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=0,
        metavar="N",
        help="exit after N connections have finished (default 0: run until SIGINT/SIGTERM)",
    )
    return parser.parse_args(argv)


async def _stop_after(proxy: RecordingProxy, count: int, stop: asyncio.Event) -> None:
    await proxy.wait_finished(count)
    stop.set()


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    proxy = RecordingProxy(
        args.out,
        prefix=args.prefix,
        upstream=args.upstream,
        listen_host=args.listen_host,
        listen_port=args.listen_port,
        pcap_path=args.pcap,
    )
    async with proxy:
        print(
            f"record_proxy: {args.listen_host}:{proxy.port}"
            f" -> {args.upstream[0]}:{args.upstream[1]},"
            f" writing {args.out}/{args.prefix}-N.{{client,server}}.bin",
            file=sys.stderr,
            flush=True,
        )
        counter: asyncio.Task[None] | None = None
        if args.max_connections > 0:
            counter = asyncio.create_task(_stop_after(proxy, args.max_connections, stop))
        await stop.wait()
        if counter is not None:
            counter.cancel()
            await asyncio.gather(counter, return_exceptions=True)
    for record in proxy.connections:
        print(
            f"record_proxy: connection {record.number}:"
            f" {record.client_bytes} bytes from client,"
            f" {record.server_bytes} bytes from server" + "".join(f"; {e}" for e in record.errors),
            file=sys.stderr,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    asyncio.run(_serve(_parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
