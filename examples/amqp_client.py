"""A small asyncio AMQP client driven by nothing but the sans-IO codec.

It shows how to put :mod:`amqp_codec` behind your own I/O: one reader task feeds socket bytes
to a :class:`~amqp_codec.FrameDecoder` and routes the frames; writes are
:func:`~amqp_codec.encode_frame` / :func:`~amqp_codec.encode_message` bytes. Covered: the
protocol header, PLAIN and AMQPLAIN login, tune negotiation (with the decoder's ``frame_max``
set from it), heartbeats, channels, synchronous methods whose replies are matched by class,
and content in both directions::

    client = await AMQPClient.connect("127.0.0.1", 5672, username="guest", password="guest")
    channel = await client.channel()
    await channel.call(Queue.Declare(queue="jobs"))
    await channel.publish(Basic.Publish(routing_key="jobs"), BasicProperties(), b"hello")
    reply = await channel.call(Basic.Get(queue="jobs", no_ack=True))  # a Message, or get-empty
    await client.close()

The protocol version is a parameter (``spec=v0_9_1``, the generated package): the driver
finds every method it sends itself through that package's ``Connection``, ``Channel`` and
``Basic`` namespaces, so a package for another version with the same method names plugs in.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from amqp_codec import (
    NEED_DATA,
    AMQPDecodeError,
    ContentBodyFrame,
    ContentHeaderFrame,
    FrameDecoder,
    HeartbeatFrame,
    Message,
    MessageAssembler,
    Method,
    MethodFrame,
    ProtocolHeader,
    close_for_error,
    encode_frame,
    encode_message,
    v0_9_1,
)
from amqp_codec.frames import Frame
from amqp_codec.protocol import client_header
from amqp_codec.table import encode_table

__all__ = ["AMQPClient", "Channel", "ChannelClosed", "ClosedError", "ConnectionClosed"]

#: What the client tells the broker it can handle (server-sent blocked/cancel, nacks, ...).
CAPABILITIES = {
    "authentication_failure_close": True,
    "basic.nack": True,
    "connection.blocked": True,
    "consumer_cancel_notify": True,
    "exchange_exchange_bindings": True,
    "per_consumer_qos": True,
    "publisher_confirms": True,
}

#: A reply or an unsolicited event: a method, or a whole message for a content method.
Incoming = Method | Message


class ClosedError(Exception):
    """The peer closed the channel or connection; ``close`` is its close method (or None)."""

    def __init__(self, close: Any, reason: str = "") -> None:
        self.close = close
        self.reply_code: int = close.reply_code if close is not None else 0
        self.reply_text: str = close.reply_text if close is not None else reason
        self.class_id: int = close.class_id if close is not None else 0
        self.method_id: int = close.method_id if close is not None else 0
        super().__init__(f"{self.reply_code} {self.reply_text}".strip())


class ChannelClosed(ClosedError):
    """The broker sent channel.close (a soft error such as 404 or 406)."""


class ConnectionClosed(ClosedError):
    """The broker sent connection.close, or the connection ended."""


class Channel:
    """One channel: synchronous calls, publishing, and a queue of unsolicited events."""

    def __init__(self, client: AMQPClient, number: int) -> None:
        self.client = client
        self.number = number
        #: Deliveries, returns, publisher confirms, server-side cancels, flow: in arrival order;
        #: last, the error that closed the channel.
        self.events: asyncio.Queue[Incoming | ClosedError] = asyncio.Queue()
        self.closed: ClosedError | None = None
        self._waiters: list[tuple[tuple[type[Method], ...], asyncio.Future[Incoming]]] = []

    async def call(self, method: Method) -> Incoming:
        """Send ``method``; for a synchronous one wait for its reply (a ``Message`` for get-ok).

        ``no_wait`` methods and asynchronous ones return ``method`` itself at once.
        """
        # 0-8 spells the flag "nowait".
        if not method.SYNCHRONOUS or getattr(method, "no_wait", getattr(method, "nowait", False)):
            self.send(method)
            return method
        reply = self.expect(*method.RESPONSES)
        self.send(method)
        return await reply

    def expect(self, *classes: type[Method]) -> asyncio.Future[Incoming]:
        """A future for the next method (or message) of one of ``classes`` on this channel."""
        future: asyncio.Future[Incoming] = asyncio.get_running_loop().create_future()
        if self.closed is not None:
            future.set_exception(self.closed)
        else:
            self._waiters.append((classes, future))
        return future

    def send(self, method: Method) -> None:
        """Send one method frame without waiting for anything."""
        if self.closed is not None:
            raise self.closed
        self.client.write(encode_frame(MethodFrame(self.number, method)))

    async def publish(self, method: Method, properties: Any, body: bytes = b"") -> None:
        """Send a content method (basic.publish) with its header and body frames."""
        if self.closed is not None:
            raise self.closed
        self.client.write(
            encode_message(self.number, method, properties, body, self.client.frame_max)
        )
        await self.client.drain()

    async def next_event(self, timeout: float = 10.0) -> Incoming:
        """The next unsolicited method or message; raises if the channel closes meanwhile."""
        event = await asyncio.wait_for(self.events.get(), timeout)
        if isinstance(event, ClosedError):
            self.events.put_nowait(event)  # for the next caller too
            raise event
        return event

    async def close(self) -> None:
        """channel.close / close-ok."""
        spec = self.client.spec
        await self.call(spec.Channel.Close(reply_code=200, reply_text="bye"))
        self._shut(ChannelClosed(None, "closed by the client"))

    def _dispatch(self, incoming: Incoming) -> None:
        method = incoming.method if isinstance(incoming, Message) else incoming
        for i, (classes, future) in enumerate(self._waiters):
            if isinstance(method, classes):
                del self._waiters[i]
                if not future.done():
                    future.set_result(incoming)
                return
        self.events.put_nowait(incoming)

    def _shut(self, error: ClosedError) -> None:
        if self.closed is None:
            self.events.put_nowait(error)
        self.closed = error
        for _classes, future in self._waiters:
            if not future.done():
                future.set_exception(error)
        self._waiters.clear()


class AMQPClient:
    """One connection. Create it with :meth:`connect`."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, spec: ModuleType
    ) -> None:
        self.spec = spec
        self.decoder = FrameDecoder(spec)
        self.assembler = MessageAssembler()
        self.server_properties: Mapping[str, Any] = {}
        self.channel_max = 0
        self.frame_max = 0
        self.heartbeat = 0
        self.heartbeats_received = 0
        #: Connection-level events: connection.blocked / unblocked.
        self.events: asyncio.Queue[Method] = asyncio.Queue()
        self.closed: ConnectionClosed | None = None
        self._reader = reader
        self._writer = writer
        self._connection = Channel(self, 0)  # channel 0 carries the connection's methods
        self._channels: dict[int, Channel] = {0: self._connection}
        self._tasks: list[asyncio.Task[None]] = []
        self._last_received = 0.0
        self._last_sent = 0.0

    @classmethod
    async def connect(
        cls,
        host: str = "127.0.0.1",
        port: int = 5672,
        *,
        username: str = "guest",
        password: str = "guest",
        virtual_host: str = "/",
        mechanism: str = "PLAIN",
        channel_max: int = 0,
        frame_max: int = 0,
        heartbeat: int | None = None,
        spec: ModuleType = v0_9_1,
        client_properties: Mapping[str, Any] | None = None,
    ) -> AMQPClient:
        """Open a connection: header, start/start-ok, tune/tune-ok, open/open-ok.

        ``channel_max``, ``frame_max`` and ``heartbeat`` cap what the broker offers (0 for
        the first two means "what the broker offers"; ``heartbeat=None`` takes the broker's
        value and ``0`` turns heartbeats off). Raises :class:`ConnectionClosed` when the
        broker refuses (bad credentials 403, unknown virtual host 530).
        """
        reader, writer = await asyncio.open_connection(host, port)
        client = cls(reader, writer, spec)
        try:
            await client._open(
                username, password, virtual_host, mechanism, channel_max, frame_max, heartbeat,
                client_properties,
            )  # fmt: skip
        except BaseException:
            await client._abort()
            raise
        return client

    async def _open(
        self,
        username: str,
        password: str,
        virtual_host: str,
        mechanism: str,
        channel_max: int,
        frame_max: int,
        heartbeat: int | None,
        client_properties: Mapping[str, Any] | None,
    ) -> None:
        spec, conn = self.spec, self._connection
        started = conn.expect(spec.Connection.Start)
        self._tasks.append(asyncio.create_task(self._read_loop()))
        # 0-9-1 opens with AMQP 0 0 9 1; older versions with AMQP 1 1 <major> <minor>.
        self.write(encode_frame(ProtocolHeader(*client_header(spec.SPEC))))
        start: Any = await started
        if mechanism.encode() not in start.mechanisms.split():
            raise ConnectionClosed(None, f"broker does not offer {mechanism}: {start.mechanisms}")
        self.server_properties = start.server_properties
        if mechanism == "PLAIN":
            response = b"\x00" + username.encode() + b"\x00" + password.encode()
        elif mechanism == "AMQPLAIN":  # a field table without its size prefix
            response = encode_table({"LOGIN": username, "PASSWORD": password})[4:]
        else:
            raise ValueError(f"unsupported mechanism {mechanism}")
        properties: dict[str, Any] = {"product": "amqp-codec example"}
        if spec.SPEC.table_tags is None:  # 0-8 tables have no booleans, and 0-8 no capabilities
            properties["capabilities"] = CAPABILITIES
        properties.update(client_properties or {})
        tuned = conn.expect(spec.Connection.Tune)
        conn.send(
            spec.Connection.StartOk(
                client_properties=properties, mechanism=mechanism, response=response
            )
        )
        tune: Any = await tuned
        self.channel_max = _negotiate(channel_max, tune.channel_max)
        self.frame_max = _negotiate(frame_max, tune.frame_max)
        self.heartbeat = tune.heartbeat if heartbeat is None else heartbeat
        conn.send(
            spec.Connection.TuneOk(
                channel_max=self.channel_max, frame_max=self.frame_max, heartbeat=self.heartbeat
            )
        )
        # From here on a frame larger than frame_max is refused from its 7-byte header.
        self.decoder.frame_max = self.frame_max
        await conn.call(spec.Connection.Open(virtual_host=virtual_host))
        if self.heartbeat:
            self._tasks.append(asyncio.create_task(self._heartbeat_loop()))

    async def channel(self) -> Channel:
        """Open the lowest free channel number."""
        limit = self.channel_max or 65535
        number = next((n for n in range(1, limit + 1) if n not in self._channels), None)
        if number is None:
            raise RuntimeError(f"all {limit} channels are in use (channel_max)")
        channel = self._channels[number] = Channel(self, number)
        await channel.call(self.spec.Channel.Open())
        return channel

    async def update_secret(self, new_secret: bytes, reason: str) -> Incoming:
        """connection.update-secret (RabbitMQ's extension for expiring credentials)."""
        method = self.spec.Connection.UpdateSecret(new_secret=new_secret, reason=reason)
        return await self._connection.call(method)

    async def close(self) -> None:
        """connection.close / close-ok, then close the socket."""
        if self.closed is None:
            with contextlib.suppress(ClosedError):
                await self._connection.call(self.spec.Connection.Close(reply_code=200))
        await self._abort()

    def write(self, data: bytes) -> None:
        """Queue raw bytes for the broker (anything: tests use it to send bad frames)."""
        if self.closed is not None:
            raise self.closed
        self._writer.write(data)
        self._last_sent = asyncio.get_running_loop().time()

    async def drain(self) -> None:
        """Wait until the socket's write buffer is below its high-water mark."""
        await self._writer.drain()

    async def wait_closed(self) -> ConnectionClosed:
        """Wait until the connection ends; return why."""
        await asyncio.gather(self._tasks[0], return_exceptions=True)
        assert self.closed is not None
        return self.closed

    # -- the reader task: bytes in, frames out, routed by channel --------------------------

    async def _read_loop(self) -> None:
        error = ConnectionClosed(None, "connection lost")
        try:
            while data := await self._reader.read(65536):
                self._last_received = asyncio.get_running_loop().time()
                self.decoder.receive_data(data)
                while (frame := self.decoder.next_frame()) is not NEED_DATA:
                    self._route(frame)
        except ConnectionClosed as closed:
            error = closed
        except AMQPDecodeError as exc:  # the broker sent something we cannot accept
            with contextlib.suppress(ConnectionError):
                self._writer.write(encode_frame(close_for_error(exc, self.spec)))
            error = ConnectionClosed(None, f"decode error: {exc}")
        except ConnectionError as exc:
            error = ConnectionClosed(None, f"connection lost: {exc}")
        finally:
            self._shut(error)

    def _route(self, frame: Frame) -> None:
        if isinstance(frame, HeartbeatFrame):
            self.heartbeats_received += 1
            return
        if isinstance(frame, ProtocolHeader):  # the broker wants another protocol version
            raise ConnectionClosed(None, f"broker answered with protocol header {frame}")
        channel = self._channels.get(frame.channel)
        if channel is None:
            raise ConnectionClosed(None, f"frame on unknown channel: {frame!r}")
        if isinstance(frame, ContentHeaderFrame | ContentBodyFrame):
            if (message := self.assembler.feed(frame)) is not None:
                channel._dispatch(message)
            return
        assert isinstance(frame, MethodFrame)
        self.assembler.feed(frame)
        method, spec = frame.method, self.spec
        if isinstance(method, spec.Connection.Close):
            self._writer.write(encode_frame(MethodFrame(0, spec.Connection.CloseOk())))
            raise ConnectionClosed(method)
        if isinstance(method, spec.Channel.Close):
            self.write(encode_frame(MethodFrame(frame.channel, spec.Channel.CloseOk())))
            del self._channels[frame.channel]
            channel._shut(ChannelClosed(method))
        elif method.NAME in ("connection.blocked", "connection.unblocked"):  # not in 0-8
            self.events.put_nowait(method)
        elif isinstance(method, spec.Connection.CloseOk):
            channel._dispatch(method)
            raise ConnectionClosed(None, "closed by the client")
        elif isinstance(method, spec.Channel.CloseOk):
            channel._dispatch(method)
            self._channels.pop(frame.channel, None)
        elif not method.HAS_CONTENT:  # content methods are dispatched as whole messages
            channel._dispatch(method)

    async def _heartbeat_loop(self) -> None:
        """Send a heartbeat when idle for half the interval; give up after two silent ones."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.heartbeat / 2)
            now = loop.time()
            if now - self._last_received > 2 * self.heartbeat:
                self._shut(ConnectionClosed(None, "missed heartbeats"))
                self._writer.transport.abort()
                return
            if now - self._last_sent >= self.heartbeat / 2:
                self.write(encode_frame(HeartbeatFrame()))

    def _shut(self, error: ConnectionClosed) -> None:
        if self.closed is None:
            self.closed = error
        for channel in self._channels.values():
            channel._shut(error)

    async def _abort(self) -> None:
        for task in self._tasks:
            if task is not asyncio.current_task():
                task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._shut(ConnectionClosed(None, "closed by the client"))
        self._writer.close()
        with contextlib.suppress(ConnectionError):
            await self._writer.wait_closed()


def _negotiate(ours: int, theirs: int) -> int:
    """The smaller limit, where 0 means "no limit"."""
    return min(ours, theirs) if ours and theirs else ours or theirs
