"""A small in-memory AMQP 0-9-1 broker on the connection layer's server role.

Real clients (pika, py-amqp, aio-pika, kombu) connect to it: direct, fanout and topic
exchanges, queues with bindings, publish (mandatory returns), consume, get, ack, nack, reject,
recover, qos prefetch, publisher confirms and heartbeats. Nothing is persisted; there is one
virtual host. The protocol itself (handshake, channels, content, closes, heartbeats, the
checks) is :class:`amqp_codec.Connection`'s; this file is only the broker's decisions::

    python -m examples.amqp_broker --port 5673      # guest/guest, like RabbitMQ

The asyncio driver is the part to copy: read bytes, hand them to ``receive_data``, act on the
events, write ``data_to_send()``, and call ``tick`` at ``next_deadline()``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import sys
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from amqp_codec import Connection, RemoteProtocolError
from amqp_codec.base import Properties
from amqp_codec.events import (
    ChannelClosed,
    ChannelOpened,
    ConnectionClosed,
    Event,
    HeartbeatTimeout,
    MessageReceived,
    MethodReceived,
)
from amqp_codec.v0_9_1 import Basic, Channel, Confirm, Exchange, Queue

__all__ = ["Broker", "main", "serve"]


@dataclass
class Stored:
    """A message in a queue (or delivered and not yet acked)."""

    exchange: str
    routing_key: str
    properties: Properties
    body: bytes
    redelivered: bool = False


@dataclass
class ExchangeState:
    name: str
    type: str
    durable: bool = False
    bindings: list[tuple[str, str]] = field(default_factory=list)  # (queue, binding key)


@dataclass
class Consumer:
    session: Session
    channel: int
    tag: str
    queue: str
    no_ack: bool


@dataclass
class QueueState:
    name: str
    durable: bool = False
    exclusive: Session | None = None
    auto_delete: bool = False
    messages: deque[Stored] = field(default_factory=deque)
    consumers: list[Consumer] = field(default_factory=list)
    had_consumer: bool = False


@dataclass
class ChannelState:
    prefetch: int = 0
    next_tag: int = 1
    unacked: dict[int, tuple[str, Stored]] = field(default_factory=dict)  # tag -> (queue, msg)
    consumers: dict[str, Consumer] = field(default_factory=dict)
    confirm: bool = False
    published: int = 0  # publishes counted in confirm mode: the next delivery tag to ack


def topic_matches(pattern: str, key: str) -> bool:
    """RabbitMQ's topic rule: words split by dots, ``*`` one word, ``#`` zero or more."""
    words, keys = pattern.split("."), key.split(".")

    def match(i: int, j: int) -> bool:
        if i == len(words):
            return j == len(keys)
        if words[i] == "#":
            return any(match(i + 1, k) for k in range(j, len(keys) + 1))
        if j == len(keys):
            return False
        return (words[i] == "*" or words[i] == keys[j]) and match(i + 1, j + 1)

    return match(0, 0)


class Broker:
    """The broker's state, shared by every connection."""

    def __init__(self) -> None:
        self.exchanges: dict[str, ExchangeState] = {
            "": ExchangeState("", "direct", durable=True),
            "amq.direct": ExchangeState("amq.direct", "direct", durable=True),
            "amq.fanout": ExchangeState("amq.fanout", "fanout", durable=True),
            "amq.topic": ExchangeState("amq.topic", "topic", durable=True),
        }
        self.queues: dict[str, QueueState] = {}
        self.sessions: set[Session] = set()

    def route(self, exchange: ExchangeState, routing_key: str) -> list[QueueState]:
        if exchange.name == "":
            queue = self.queues.get(routing_key)
            return [queue] if queue is not None else []
        names: dict[str, None] = {}
        for queue_name, key in exchange.bindings:
            if (
                exchange.type == "fanout"
                or (exchange.type == "direct" and key == routing_key)
                or (exchange.type == "topic" and topic_matches(key, routing_key))
            ):
                names[queue_name] = None
        return [self.queues[n] for n in names if n in self.queues]

    def dispatch(self, queue: QueueState) -> None:
        """Deliver queued messages to consumers with room under their channel's prefetch."""
        turn = itertools.count()
        while queue.messages and queue.consumers:
            ready = [c for c in queue.consumers if c.session.has_room(c)]
            if not ready:
                return
            consumer = ready[next(turn) % len(ready)]
            queue.consumers.remove(consumer)  # round robin: to the back of the line
            queue.consumers.append(consumer)
            consumer.session.deliver(consumer, queue, queue.messages.popleft())

    def delete_queue(self, queue: QueueState) -> int:
        self.queues.pop(queue.name, None)
        for exchange in self.exchanges.values():
            exchange.bindings = [b for b in exchange.bindings if b[0] != queue.name]
        for consumer in list(queue.consumers):
            consumer.session.forget_consumer(consumer)
        return len(queue.messages)


class Session:
    """One client connection: a server-role Connection and the socket under it."""

    def __init__(
        self, broker: Broker, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.broker = broker
        self.reader = reader
        self.writer = writer
        self.conn = Connection("server", heartbeat=60)
        self.channels: dict[int, ChannelState] = {}

    # -- the asyncio driver ----------------------------------------------------------------

    async def run(self) -> None:
        self.broker.sessions.add(self)
        loop = asyncio.get_running_loop()
        try:
            while self.conn.state != "closed":
                deadline = self.conn.next_deadline()
                timeout = None if deadline is None else max(0.0, deadline - loop.time())
                try:
                    data = await asyncio.wait_for(self.reader.read(65536), timeout)
                except TimeoutError:
                    data = None
                except ConnectionError:
                    data = b""
                if data is not None:
                    self.handle(self.receive(data))
                self.handle(self.conn.tick(loop.time()))
                self.flush()  # this session may have left the broker's set already
                self.broker_flush()
        finally:
            self.teardown()
            self.flush()
            self.broker_flush()
            self.writer.close()
            with contextlib.suppress(ConnectionError):
                await self.writer.wait_closed()

    def receive(self, data: bytes) -> list[Event]:
        try:
            return self.conn.receive_data(data)
        except RemoteProtocolError as exc:  # the close is queued; keep what came before it
            print(f"amqp_broker: {exc}", file=sys.stderr)
            return exc.events

    def broker_flush(self) -> None:
        for session in list(self.broker.sessions):
            session.flush()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data and not self.writer.is_closing():
            self.writer.write(data)

    # -- events -----------------------------------------------------------------------------------

    def handle(self, events: list[Event]) -> None:
        for event in events:
            if isinstance(event, ChannelOpened):
                self.channels[event.channel] = ChannelState()
            elif isinstance(event, MethodReceived):
                if self.conn.channel_is_open(event.channel):
                    self.on_method(event.channel, event.method)
            elif isinstance(event, MessageReceived):
                if self.conn.channel_is_open(event.channel):
                    self.on_publish(event.channel, event.method, event.properties, event.body)
            elif isinstance(event, ChannelClosed):
                self.drop_channel(event.channel)
            elif isinstance(event, ConnectionClosed | HeartbeatTimeout):
                self.teardown()

    def fail(self, channel: int, code: int, text: str) -> None:
        """A soft error: close the channel, as RabbitMQ does (404, 405, 406)."""
        self.conn.close_channel(channel, code, text)
        self.drop_channel(channel)

    def on_method(self, ch: int, m: Any) -> None:
        broker, send = self.broker, self.conn.send
        state = self.channels[ch]
        if isinstance(m, Exchange.Declare):
            existing = broker.exchanges.get(m.exchange)
            if existing is None and m.passive:
                return self.fail(ch, 404, f"NOT_FOUND - no exchange '{m.exchange}' in vhost '/'")
            if existing is not None and not m.passive and existing.type != m.type:
                return self.fail(
                    ch,
                    406,
                    f"PRECONDITION_FAILED - inequivalent arg 'type' for exchange '{m.exchange}'",
                )
            if m.type not in ("direct", "fanout", "topic"):
                return self.conn.close(503, f"COMMAND_INVALID - unknown exchange type '{m.type}'")
            if existing is None:
                broker.exchanges[m.exchange] = ExchangeState(m.exchange, m.type, m.durable)
            if not m.no_wait:
                send(ch, Exchange.DeclareOk())
        elif isinstance(m, Exchange.Delete):
            broker.exchanges.pop(m.exchange, None)
            if not m.no_wait:
                send(ch, Exchange.DeleteOk())
        elif isinstance(m, Queue.Declare):
            self.declare_queue(ch, m)
        elif isinstance(m, Queue.Bind | Queue.Unbind):
            queue, exchange = broker.queues.get(m.queue), broker.exchanges.get(m.exchange)
            if queue is None or exchange is None:
                what = f"queue '{m.queue}'" if queue is None else f"exchange '{m.exchange}'"
                return self.fail(ch, 404, f"NOT_FOUND - no {what} in vhost '/'")
            binding = (m.queue, m.routing_key)
            if isinstance(m, Queue.Bind):
                if binding not in exchange.bindings:
                    exchange.bindings.append(binding)
                if not m.no_wait:
                    send(ch, Queue.BindOk())
            else:
                with contextlib.suppress(ValueError):
                    exchange.bindings.remove(binding)
                send(ch, Queue.UnbindOk())
        elif isinstance(m, Queue.Purge | Queue.Delete):
            queue = broker.queues.get(m.queue)
            if queue is None:
                if isinstance(m, Queue.Delete):  # deleting a missing queue is fine
                    if not m.no_wait:
                        send(ch, Queue.DeleteOk(message_count=0))
                    return None
                return self.fail(ch, 404, f"NOT_FOUND - no queue '{m.queue}' in vhost '/'")
            if isinstance(m, Queue.Purge):
                count = len(queue.messages)
                queue.messages.clear()
                if not m.no_wait:
                    send(ch, Queue.PurgeOk(message_count=count))
            else:
                count = broker.delete_queue(queue)
                if not m.no_wait:
                    send(ch, Queue.DeleteOk(message_count=count))
        elif isinstance(m, Basic.Qos):
            state.prefetch = m.prefetch_count
            send(ch, Basic.QosOk())
            self.dispatch_all()
        elif isinstance(m, Basic.Consume):
            queue = broker.queues.get(m.queue)
            if queue is None:
                return self.fail(ch, 404, f"NOT_FOUND - no queue '{m.queue}' in vhost '/'")
            tag = m.consumer_tag or f"amq.ctag-{uuid.uuid4().hex[:22]}"
            if tag in state.consumers:
                return self.conn.close(530, f"NOT_ALLOWED - attempt to reuse consumer tag '{tag}'")
            consumer = Consumer(self, ch, tag, queue.name, m.no_ack)
            state.consumers[tag] = consumer
            queue.consumers.append(consumer)
            queue.had_consumer = True
            if not m.no_wait:
                send(ch, Basic.ConsumeOk(consumer_tag=tag))
            broker.dispatch(queue)
        elif isinstance(m, Basic.Cancel):
            cancelled = state.consumers.get(m.consumer_tag)
            if cancelled is not None:
                self.forget_consumer(cancelled)
            if not m.no_wait:
                send(ch, Basic.CancelOk(consumer_tag=m.consumer_tag))
        elif isinstance(m, Basic.Get):
            queue = broker.queues.get(m.queue)
            if queue is None:
                return self.fail(ch, 404, f"NOT_FOUND - no queue '{m.queue}' in vhost '/'")
            if not queue.messages:
                return send(ch, Basic.GetEmpty())
            message = queue.messages.popleft()
            delivery_tag = self.take_tag(ch, queue, message, m.no_ack)
            get_ok = Basic.GetOk(
                delivery_tag=delivery_tag,
                redelivered=message.redelivered,
                exchange=message.exchange,
                routing_key=message.routing_key,
                message_count=len(queue.messages),
            )
            send(ch, get_ok, message.properties, message.body)
        elif isinstance(m, Basic.Ack | Basic.Nack | Basic.Reject):
            self.settle(ch, m)
        elif isinstance(m, Basic.Recover | Basic.RecoverAsync):
            self.requeue(ch, list(state.unacked))
            if isinstance(m, Basic.Recover):
                send(ch, Basic.RecoverOk())
        elif isinstance(m, Confirm.Select):
            state.confirm = True
            if not m.nowait:
                send(ch, Confirm.SelectOk())
        elif isinstance(m, Channel.Flow):
            send(ch, Channel.FlowOk(active=m.active))
        else:
            self.conn.close(540, f"NOT_IMPLEMENTED - {m.NAME} is not implemented")
        return None

    def declare_queue(self, ch: int, m: Any) -> None:
        broker = self.broker
        name = m.queue or f"amq.gen-{uuid.uuid4().hex[:22]}"
        queue = broker.queues.get(name)
        if queue is None and m.passive:
            return self.fail(ch, 404, f"NOT_FOUND - no queue '{name}' in vhost '/'")
        if queue is not None and queue.exclusive not in (None, self):
            return self.fail(
                ch,
                405,
                f"RESOURCE_LOCKED - cannot obtain exclusive access to locked queue '{name}'",
            )
        if queue is not None and not m.passive and queue.durable != m.durable:
            return self.fail(
                ch, 406, f"PRECONDITION_FAILED - inequivalent arg 'durable' for queue '{name}'"
            )
        if queue is None:
            queue = broker.queues[name] = QueueState(
                name, m.durable, self if m.exclusive else None, m.auto_delete
            )
        if not m.no_wait:
            self.conn.send(
                ch,
                Queue.DeclareOk(
                    queue=name,
                    message_count=len(queue.messages),
                    consumer_count=len(queue.consumers),
                ),
            )
        return None

    def on_publish(self, ch: int, m: Any, properties: Properties, body: bytes) -> None:
        state = self.channels[ch]
        exchange = self.broker.exchanges.get(m.exchange)
        if exchange is None:
            return self.fail(ch, 404, f"NOT_FOUND - no exchange '{m.exchange}' in vhost '/'")
        queues = self.broker.route(exchange, m.routing_key)
        if not queues and m.mandatory:
            returned = Basic.Return(
                reply_code=312,
                reply_text="NO_ROUTE",
                exchange=m.exchange,
                routing_key=m.routing_key,
            )
            self.conn.send(ch, returned, properties, body)
        for queue in queues:
            queue.messages.append(Stored(m.exchange, m.routing_key, properties, body))
        if state.confirm:
            state.published += 1
            self.conn.send(ch, Basic.Ack(delivery_tag=state.published))
        for queue in queues:
            self.broker.dispatch(queue)
        return None

    # -- deliveries and acknowledgements ----------------------------------------------------------

    def has_room(self, consumer: Consumer) -> bool:
        state = self.channels.get(consumer.channel)
        if state is None or not self.conn.channel_is_open(consumer.channel):
            return False
        return consumer.no_ack or not state.prefetch or len(state.unacked) < state.prefetch

    def take_tag(self, ch: int, queue: QueueState, message: Stored, no_ack: bool) -> int:
        state = self.channels[ch]
        tag = state.next_tag
        state.next_tag += 1
        if not no_ack:
            state.unacked[tag] = (queue.name, message)
        return tag

    def deliver(self, consumer: Consumer, queue: QueueState, message: Stored) -> None:
        tag = self.take_tag(consumer.channel, queue, message, consumer.no_ack)
        deliver = Basic.Deliver(
            consumer_tag=consumer.tag,
            delivery_tag=tag,
            redelivered=message.redelivered,
            exchange=message.exchange,
            routing_key=message.routing_key,
        )
        self.conn.send(consumer.channel, deliver, message.properties, message.body)

    def settle(self, ch: int, m: Any) -> None:
        state = self.channels[ch]
        multiple = getattr(m, "multiple", False)
        if multiple:
            tags = [t for t in state.unacked if t <= m.delivery_tag or m.delivery_tag == 0]
        elif m.delivery_tag in state.unacked:
            tags = [m.delivery_tag]
        else:
            return self.fail(
                ch, 406, f"PRECONDITION_FAILED - unknown delivery tag {m.delivery_tag}"
            )
        if isinstance(m, Basic.Ack) or not m.requeue:
            for tag in tags:
                del state.unacked[tag]
            self.dispatch_all()
        else:
            self.requeue(ch, tags)
        return None

    def requeue(self, ch: int, tags: list[int]) -> None:
        state = self.channels.get(ch)
        if state is None:
            return
        touched = []
        for tag in sorted(tags, reverse=True):  # back to the front of the queue, in order
            queue_name, message = state.unacked.pop(tag)
            queue = self.broker.queues.get(queue_name)
            if queue is not None:
                message.redelivered = True
                queue.messages.appendleft(message)
                touched.append(queue)
        for queue in touched:
            self.broker.dispatch(queue)

    def dispatch_all(self) -> None:
        for queue in list(self.broker.queues.values()):
            self.broker.dispatch(queue)

    def forget_consumer(self, consumer: Consumer) -> None:
        state = self.channels.get(consumer.channel)
        if state is not None:
            state.consumers.pop(consumer.tag, None)
        queue = self.broker.queues.get(consumer.queue)
        if queue is not None and consumer in queue.consumers:
            queue.consumers.remove(consumer)
            if queue.auto_delete and queue.had_consumer and not queue.consumers:
                self.broker.delete_queue(queue)

    def drop_channel(self, ch: int) -> None:
        """The channel closed: its consumers go, its unacked messages return to their queues."""
        state = self.channels.get(ch)
        if state is None:
            return
        for consumer in list(state.consumers.values()):
            self.forget_consumer(consumer)
        self.requeue(ch, list(state.unacked))
        del self.channels[ch]

    def teardown(self) -> None:
        for ch in list(self.channels):
            self.drop_channel(ch)
        for queue in list(self.broker.queues.values()):
            if queue.exclusive is self:
                self.broker.delete_queue(queue)
        self.broker.sessions.discard(self)


async def serve(host: str = "127.0.0.1", port: int = 5673) -> asyncio.Server:
    """Start the broker; the returned server's sockets tell the port (``port=0``: any free)."""
    broker = Broker()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await Session(broker, reader, writer).run()

    return await asyncio.start_server(on_connect, host, port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A small in-memory AMQP 0-9-1 broker.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5673)
    args = parser.parse_args(argv)

    async def run() -> None:
        server = await serve(args.host, args.port)
        print(f"amqp_broker: listening on {args.host}:{args.port}", file=sys.stderr)
        async with server:
            await server.serve_forever()

    try:
        asyncio.run(run())
    except OSError as exc:
        print(f"amqp_broker: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
