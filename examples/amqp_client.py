"""A small asyncio AMQP client on the connection layer (:class:`amqp_codec.Connection`).

The protocol (header, PLAIN or AMQPLAIN login, tune, channel handshakes, synchronous replies
with deliveries interleaved, content assembly and splitting by frame_max, confirms, closes,
heartbeats) is the layer's; this file is only the asyncio driver around it: one reader task
hands socket bytes to ``receive_data`` and routes the events to futures and queues, writes are
``data_to_send()``, and a timer task calls ``tick`` at ``next_deadline()``::

    client = await AMQPClient.connect("127.0.0.1", 5672, username="guest", password="guest")
    channel = await client.channel()
    await channel.call(Queue.Declare(queue="jobs"))
    await channel.publish(Basic.Publish(routing_key="jobs"), BasicProperties(), b"hello")
    reply = await channel.call(Basic.Get(queue="jobs", no_ack=True))  # a Message, or get-empty
    await client.close()

The protocol version is a parameter (``spec=v0_9_1``, the generated package, or ``v0_8``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from amqp_codec import (
    Connection,
    FrameDecoder,
    LocalProtocolError,
    Message,
    Method,
    RemoteProtocolError,
    v0_9_1,
)
from amqp_codec.events import (
    ChannelClosed as ChannelClosedEvent,
)
from amqp_codec.events import (
    ChannelOpened,
    ConnectionBlocked,
    ConnectionOpened,
    ConnectionUnblocked,
    Event,
    HeartbeatTimeout,
    MessageReceived,
    MethodReceived,
    PublishConfirmed,
)
from amqp_codec.events import (
    ConnectionClosed as ConnectionClosedEvent,
)

__all__ = ["AMQPClient", "Channel", "ChannelClosed", "ClosedError", "ConnectionClosed"]

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
        #: Deliveries, returns, publisher confirms (as basic.ack / basic.nack), server-side
        #: cancels, flow: in arrival order; last, the error that closed the channel.
        self.events: asyncio.Queue[Incoming | ClosedError] = asyncio.Queue()
        self.closed: ClosedError | None = None
        self._waiters: list[tuple[tuple[type[Method], ...], asyncio.Future[Incoming]]] = []
        loop = asyncio.get_running_loop()
        self._opened: asyncio.Future[None] = loop.create_future()
        self._close_ok: asyncio.Future[None] = loop.create_future()

    async def call(self, method: Method) -> Incoming:
        """Send ``method``; for a synchronous one wait for its reply (a ``Message`` for get-ok).

        ``no_wait`` methods and asynchronous ones return ``method`` itself at once.
        """
        if not method.SYNCHRONOUS or getattr(method, "no_wait", False):
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
        self.client.conn.send(self.number, method)
        self.client.flush()

    async def publish(self, method: Method, properties: Any, body: bytes = b"") -> None:
        """Send a content method (basic.publish): the layer splits the body by frame_max."""
        if self.closed is not None:
            raise self.closed
        self.client.conn.send(self.number, method, properties, body)
        self.client.flush()
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
        if self.closed is not None:
            raise self.closed
        self.client.conn.close_channel(self.number, 200, "bye")
        self.client.flush()
        await self._close_ok

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
        for handshake in (self._opened, self._close_ok):
            if not handshake.done():
                handshake.set_exception(error)
                handshake.exception()  # retrieved: nobody may be waiting for it
        for _classes, future in self._waiters:
            if not future.done():
                future.set_exception(error)
        self._waiters.clear()


class AMQPClient:
    """One connection. Create it with :meth:`connect`."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        conn: Connection,
        spec: ModuleType,
    ) -> None:
        self.spec: Any = spec
        self.conn = conn
        #: Connection-level events: connection.blocked / unblocked, as methods.
        self.events: asyncio.Queue[Method] = asyncio.Queue()
        self.closed: ConnectionClosed | None = None
        self._reader = reader
        self._writer = writer
        self._connection = Channel(self, 0)  # channel 0 carries the connection's methods
        self._channels: dict[int, Channel] = {0: self._connection}
        self._tasks: list[asyncio.Task[None]] = []
        self._opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # What the handshake negotiated, and the decoder the layer reads with.
    @property
    def server_properties(self) -> Mapping[str, Any]:
        return self.conn.peer_properties

    @property
    def channel_max(self) -> int:
        return self.conn.channel_max

    @property
    def frame_max(self) -> int:
        return self.conn.frame_max

    @property
    def heartbeat(self) -> int:
        return self.conn.heartbeat

    @property
    def heartbeats_received(self) -> int:
        return self.conn.heartbeats_received

    @property
    def decoder(self) -> FrameDecoder:
        return self.conn.decoder

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
        accept_extended_tags: bool | None = None,
    ) -> AMQPClient:
        """Open a connection: header, start/start-ok, tune/tune-ok, open/open-ok.

        ``channel_max``, ``frame_max`` and ``heartbeat`` cap what the broker offers (0 for
        the first two means "what the broker offers"; ``heartbeat=None`` takes the broker's
        value and ``0`` turns heartbeats off). Field tables take every tag RabbitMQ relays,
        0-8's too, unless ``accept_extended_tags=False`` holds 0-8 to its own five. Raises :class:`ConnectionClosed` when the broker refuses
        (bad credentials 403, unknown virtual host 530).
        """
        conn = Connection(
            "client",
            spec=spec,
            username=username,
            password=password,
            vhost=virtual_host,
            mechanism=mechanism,
            channel_max=channel_max,
            frame_max=frame_max,
            heartbeat=heartbeat,
            client_properties={"product": "amqp-codec example", **(client_properties or {})},
            accept_extended_tags=accept_extended_tags,
        )
        reader, writer = await asyncio.open_connection(host, port)
        client = cls(reader, writer, conn, spec)
        try:
            client._tasks.append(asyncio.create_task(client._read_loop()))
            client.flush()  # the protocol header
            await client._opened
            client._tasks.append(asyncio.create_task(client._heartbeat_loop()))
        except BaseException:
            await client._abort()
            raise
        return client

    async def channel(self) -> Channel:
        """Open the lowest free channel number."""
        if self.closed is not None:
            raise self.closed
        try:
            number = self.conn.open_channel()
        except LocalProtocolError as exc:
            raise RuntimeError(f"{exc} (channel_max)") from None
        channel = self._channels[number] = Channel(self, number)
        self.flush()
        await channel._opened
        return channel

    async def update_secret(self, new_secret: bytes, reason: str) -> Incoming:
        """connection.update-secret (RabbitMQ's extension for expiring credentials)."""
        method = self.spec.Connection.UpdateSecret(new_secret=new_secret, reason=reason)
        return await self._connection.call(method)

    async def close(self) -> None:
        """connection.close / close-ok, then close the socket."""
        if self.closed is None and self.conn.is_open:
            self.conn.close()
            self.flush()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._ended), 10)
        await self._abort()

    def flush(self) -> None:
        """Write what the connection queued."""
        data = self.conn.data_to_send()
        if data and not self._writer.is_closing():
            self._writer.write(data)

    def write(self, data: bytes) -> None:
        """Write raw bytes past the layer (tests use it to send frames the layer refuses)."""
        if self.closed is not None:
            raise self.closed
        self._writer.write(data)

    async def drain(self) -> None:
        """Wait until the socket's write buffer is below its high-water mark."""
        await self._writer.drain()

    async def wait_closed(self) -> ConnectionClosed:
        """Wait until the connection ends; return why."""
        await asyncio.gather(self._tasks[0], return_exceptions=True)
        assert self.closed is not None
        return self.closed

    # -- the reader task: bytes in, events out, routed by channel ----------------------------

    async def _read_loop(self) -> None:
        error = ConnectionClosed(None, "connection lost")
        try:
            while self.closed is None:
                try:
                    data = await self._reader.read(65536)
                except ConnectionError as exc:
                    error = ConnectionClosed(None, f"connection lost: {exc}")
                    data = b""
                try:
                    events = self.conn.receive_data(data)
                except RemoteProtocolError as exc:  # the close is queued: send it and stop
                    self._route_all(exc.events)
                    if exc.channel:
                        self.flush()
                        continue
                    self.flush()
                    error = ConnectionClosed(None, f"decode error: {exc}")
                    break
                self._route_all(events)
                self.flush()
                if not data:
                    break
        finally:
            self._shut(error)

    def _route_all(self, events: list[Event]) -> None:
        for event in events:
            self._route(event)

    def _route(self, event: Event) -> None:
        spec = self.spec
        if isinstance(event, MethodReceived | MessageReceived | PublishConfirmed):
            channel = self._channels.get(event.channel)
            if channel is None:
                return
            if isinstance(event, MethodReceived):
                channel._dispatch(event.method)
            elif isinstance(event, MessageReceived):
                channel._dispatch(Message(*_fields(event)))
            else:  # the confirm as the broker sent it
                cls = spec.Basic.Ack if event.ack else spec.Basic.Nack
                channel._dispatch(cls(delivery_tag=event.delivery_tag, multiple=event.multiple))
        elif isinstance(event, ChannelOpened):
            opened = self._channels[event.channel]._opened
            if not opened.done():
                opened.set_result(None)
        elif isinstance(event, ChannelClosedEvent):
            channel = self._channels.pop(event.channel, None)
            if channel is None:
                return
            if event.by_peer:
                close = spec.Channel.Close(
                    reply_code=event.reply_code,
                    reply_text=event.reply_text,
                    class_id=event.class_id,
                    method_id=event.method_id,
                )
                channel._shut(ChannelClosed(close))
            else:
                if not channel._close_ok.done():
                    channel._close_ok.set_result(None)
                channel._shut(ChannelClosed(None, "closed by the client"))
        elif isinstance(event, ConnectionOpened):
            if not self._opened.done():
                self._opened.set_result(None)
        elif isinstance(event, ConnectionClosedEvent):
            if event.by_peer and event.reply_code:
                close = spec.Connection.Close(
                    reply_code=event.reply_code,
                    reply_text=event.reply_text,
                    class_id=event.class_id,
                    method_id=event.method_id,
                )
                self._shut(ConnectionClosed(close))
            elif event.by_peer:
                self._shut(ConnectionClosed(None, event.reply_text))
            else:
                self._shut(ConnectionClosed(None, "closed by the client"))
        elif isinstance(event, ConnectionBlocked):
            self.events.put_nowait(spec.Connection.Blocked(reason=event.reason))
        elif isinstance(event, ConnectionUnblocked):
            self.events.put_nowait(spec.Connection.Unblocked())
        elif isinstance(event, HeartbeatTimeout):
            self._shut(ConnectionClosed(None, "missed heartbeats"))
            self._writer.transport.abort()

    async def _heartbeat_loop(self) -> None:
        """Call ``tick`` at the connection's deadlines while heartbeats run."""
        loop = asyncio.get_running_loop()
        while self.closed is None:
            deadline = self.conn.next_deadline()
            if deadline is None:
                return
            await asyncio.sleep(max(0.0, deadline - loop.time()))
            self._route_all(self.conn.tick(loop.time()))
            self.flush()

    def _shut(self, error: ConnectionClosed) -> None:
        if self.closed is None:
            self.closed = error
        for channel in list(self._channels.values()):
            channel._shut(self.closed)
        if not self._opened.done():
            self._opened.set_exception(self.closed)
        if not self._ended.done():
            self._ended.set_result(None)

    async def _abort(self) -> None:
        for task in self._tasks:
            if task is not asyncio.current_task():
                task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._shut(ConnectionClosed(None, "closed by the client"))
        self._writer.close()
        with contextlib.suppress(ConnectionError):
            await self._writer.wait_closed()


def _fields(event: MessageReceived) -> tuple[int, Method, Any, bytes]:
    return event.channel, event.method, event.properties, event.body
