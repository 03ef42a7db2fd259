"""A client and a server Connection in memory, driven by hypothesis with random valid actions
and the bytes between them cut into random chunks: both sides must always agree.

Each side's application is simulated here: the server answers queue.declare and
confirm.select and acks publishes in confirm mode; the model records what each side sent and
checks that the other side received exactly that, in order, on the same channel incarnation.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from amqp_codec import Connection, v0_8, v0_9_1
from amqp_codec.events import (
    ChannelClosed,
    ChannelOpened,
    ConnectionClosed,
    ConnectionOpened,
    MessageReceived,
    MethodReceived,
    PublishConfirmed,
)

Key = tuple[int, int]  # (channel, incarnation): channel numbers are reused


class ClientServerPair(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.to_server = b""
        self.to_client = b""
        # Per side: channel -> incarnation of the channel as that side counts opens.
        self.client_inc: dict[int, int] = defaultdict(int)
        self.server_inc: dict[int, int] = defaultdict(int)
        self.client_open: set[int] = set()  # after ChannelOpened, until a close starts
        self.client_closing: set[int] = set()
        self.client_opening: set[int] = set()
        self.client_awaiting: set[int] = set()  # a declare or select not answered yet
        self.client_confirm: set[int] = set()
        self.sent: dict[str, dict[Key, list[bytes]]] = {
            "c2s": defaultdict(list),
            "s2c": defaultdict(list),
        }
        self.received: dict[str, dict[Key, list[bytes]]] = {
            "c2s": defaultdict(list),
            "s2c": defaultdict(list),
        }
        self.server_confirm: set[int] = set()
        self.server_published: dict[Key, int] = defaultdict(int)
        self.server_unacked: dict[Key, list[int]] = defaultdict(list)
        self.acks_sent: dict[Key, list[tuple[int, bool, bool]]] = defaultdict(list)
        self.acks_received: dict[Key, list[tuple[int, bool, bool]]] = defaultdict(list)
        self.opened: list[ConnectionOpened] = []
        self.closed: list[ConnectionClosed] = []

    @initialize(
        spec=st.sampled_from([v0_9_1, v0_8]),
        frame_max=st.sampled_from([4096, 5000, 131072, 0]),
        channel_max=st.sampled_from([3, 0]),
    )
    def start(self, spec: Any, frame_max: int, channel_max: int) -> None:
        self.spec = spec
        self.client = Connection(
            "client", spec=spec, frame_max=frame_max, channel_max=channel_max, heartbeat=10
        )
        self.now = 1000.0
        self.server = Connection("server", spec=spec)
        self._collect()

    # -- the transport ------------------------------------------------------------------------

    def _collect(self) -> None:
        self.to_server += self.client.data_to_send()
        self.to_client += self.server.data_to_send()

    @rule(size=st.integers(1, 9000))
    def deliver_to_server(self, size: int) -> None:
        chunk, self.to_server = self.to_server[:size], self.to_server[size:]
        if chunk:
            for event in self.server.receive_data(chunk):
                self._on_server_event(event)
        self._collect()

    @rule(size=st.integers(1, 9000))
    def deliver_to_client(self, size: int) -> None:
        chunk, self.to_client = self.to_client[:size], self.to_client[size:]
        if chunk:
            for event in self.client.receive_data(chunk):
                self._on_client_event(event)
        self._collect()

    def _settle(self) -> None:
        while self.to_server or self.to_client:
            self.deliver_to_server(len(self.to_server) or 1)
            self.deliver_to_client(len(self.to_client) or 1)

    # -- the applications --------------------------------------------------------------------

    def _on_server_event(self, event: Any) -> None:
        if isinstance(event, ConnectionOpened):
            self.opened.append(event)
        elif isinstance(event, ChannelOpened):
            self.server_inc[event.channel] += 1
            self.server_confirm.discard(event.channel)
        elif isinstance(event, MethodReceived):
            ch, method = event.channel, event.method
            if not self.server.channel_is_open(ch):
                # A later event of the same batch closed the channel: nothing to answer.
                return
            if isinstance(method, self.spec.Queue.Declare):
                self.server.send(ch, self.spec.Queue.DeclareOk(queue=method.queue))
            elif method.NAME == "confirm.select":
                self.server_confirm.add(ch)
                self.server.send(ch, self.spec.Confirm.SelectOk())
        elif isinstance(event, MessageReceived):
            key = (event.channel, self.server_inc[event.channel])
            self.received["c2s"][key].append(event.body)
            if event.channel in self.server_confirm:
                self.server_published[key] += 1
                self.server_unacked[key].append(self.server_published[key])
        elif isinstance(event, ChannelClosed):
            self.server_confirm.discard(event.channel)
        elif isinstance(event, ConnectionClosed):
            self.closed.append(event)
        else:
            raise AssertionError(f"unexpected server event {event}")

    def _on_client_event(self, event: Any) -> None:
        if isinstance(event, ConnectionOpened):
            self.opened.append(event)
        elif isinstance(event, ChannelOpened):
            self.client_opening.discard(event.channel)
            self.client_open.add(event.channel)
        elif isinstance(event, MethodReceived):
            assert event.method.NAME in ("queue.declare-ok", "confirm.select-ok"), event
            self.client_awaiting.discard(event.channel)
        elif isinstance(event, MessageReceived):
            key = (event.channel, self.client_inc[event.channel])
            self.received["s2c"][key].append(event.body)
        elif isinstance(event, PublishConfirmed):
            key = (event.channel, self.client_inc[event.channel])
            self.acks_received[key].append((event.delivery_tag, event.multiple, event.ack))
        elif isinstance(event, ChannelClosed):
            for group in (
                self.client_open,
                self.client_closing,
                self.client_opening,
                self.client_awaiting,
                self.client_confirm,
            ):
                group.discard(event.channel)
        elif isinstance(event, ConnectionClosed):
            self.closed.append(event)
        else:
            raise AssertionError(f"unexpected client event {event}")

    # -- actions -------------------------------------------------------------------------------

    def _client_usable(self) -> list[int]:
        return sorted(self.client_open - self.client_closing)

    @precondition(lambda self: self.client.is_open)
    @rule()
    def open_channel(self) -> None:
        limit = self.client.channel_max or 65535
        if len(self.client_open | self.client_closing | self.client_opening) >= min(limit, 6):
            return
        ch = self.client.open_channel()
        self.client_inc[ch] += 1
        self.client_opening.add(ch)
        self._collect()

    @precondition(lambda self: self.client.is_open)
    @rule(data=st.data(), size=st.sampled_from([0, 1, 100, 4088, 4089, 9000]))
    def client_publishes(self, data: st.DataObject, size: int) -> None:
        channels = self._client_usable()
        if not channels:
            return
        ch = data.draw(st.sampled_from(channels))
        body = bytes([ch]) * size
        self.client.send(
            ch, self.spec.Basic.Publish(routing_key="q"), self.spec.BasicProperties(), body
        )
        self.sent["c2s"][(ch, self.client_inc[ch])].append(body)
        self._collect()

    @precondition(lambda self: self.client.is_open)
    @rule(data=st.data(), confirm=st.booleans())
    def client_sync_request(self, data: st.DataObject, confirm: bool) -> None:
        channels = [c for c in self._client_usable() if c not in self.client_awaiting]
        if not channels:
            return
        ch = data.draw(st.sampled_from(channels))
        if confirm and self.spec is v0_9_1 and ch not in self.client_confirm:
            self.client.send(ch, self.spec.Confirm.Select())
            self.client_confirm.add(ch)
        else:
            self.client.send(ch, self.spec.Queue.Declare(queue=f"q{ch}"))
        self.client_awaiting.add(ch)
        self._collect()

    @precondition(lambda self: self.server.is_open)
    @rule(data=st.data(), size=st.sampled_from([0, 7, 5000]))
    def server_delivers(self, data: st.DataObject, size: int) -> None:
        channels = [c for c in range(1, 8) if self.server.channel_is_open(c)]
        if not channels:
            return
        ch = data.draw(st.sampled_from(channels))
        body = bytes([ch + 100]) * size
        deliver = self.spec.Basic.Deliver(consumer_tag="c", delivery_tag=1, routing_key="q")
        self.server.send(ch, deliver, self.spec.BasicProperties(), body)
        self.sent["s2c"][(ch, self.server_inc[ch])].append(body)
        self._collect()

    @precondition(lambda self: self.server.is_open)
    @rule(data=st.data(), multiple=st.booleans(), ack=st.booleans())
    def server_confirms(self, data: st.DataObject, multiple: bool, ack: bool) -> None:
        keys = [
            (c, self.server_inc[c])
            for c in self.server_confirm
            if self.server.channel_is_open(c) and self.server_unacked[(c, self.server_inc[c])]
        ]
        if not keys:
            return
        key = data.draw(st.sampled_from(sorted(keys)))
        unacked = self.server_unacked[key]
        tag = data.draw(st.sampled_from(unacked))
        method = (
            self.spec.Basic.Ack(delivery_tag=tag, multiple=multiple)
            if ack
            else self.spec.Basic.Nack(delivery_tag=tag, multiple=multiple)
        )
        self.server.send(key[0], method)
        self.server_unacked[key] = [t for t in unacked if (t > tag if multiple else t != tag)]
        self.acks_sent[key].append((tag, multiple, ack))
        self._collect()

    @precondition(lambda self: self.client.is_open)
    @rule(data=st.data())
    def client_closes_a_channel(self, data: st.DataObject) -> None:
        channels = sorted((self.client_open | self.client_opening) - self.client_closing)
        if not channels:
            return
        ch = data.draw(st.sampled_from(channels))
        self.client.close_channel(ch)
        self.client_closing.add(ch)
        self._collect()

    @precondition(lambda self: self.server.is_open)
    @rule(data=st.data())
    def server_closes_a_channel(self, data: st.DataObject) -> None:
        channels = [c for c in range(1, 8) if self.server.channel_is_open(c)]
        if not channels:
            return
        self.server.close_channel(
            data.draw(st.sampled_from(channels)), 406, "PRECONDITION_FAILED - test"
        )
        self._collect()

    @rule(seconds=st.floats(0.5, 5.0))
    def time_passes(self, seconds: float) -> None:
        # Both sides tick on one clock and the bytes keep flowing: heartbeats (10 s) go out
        # when a side is idle, and neither ever reports HeartbeatTimeout (the handlers fail on
        # any event they do not expect).
        self.now += seconds
        for event in self.client.tick(self.now):
            self._on_client_event(event)
        for event in self.server.tick(self.now):
            self._on_server_event(event)
        self._collect()
        self._settle()

    # -- agreement -------------------------------------------------------------------------------

    @invariant()
    def each_side_received_what_the_other_sent_in_order(self) -> None:
        for direction in ("c2s", "s2c"):
            for key, got in self.received[direction].items():
                sent = self.sent[direction][key]
                assert got == sent[: len(got)], (direction, key)
        for key, got_acks in self.acks_received.items():
            assert got_acks == self.acks_sent[key][: len(got_acks)], key

    @invariant()
    def both_sides_agree_once_settled(self) -> None:
        if self.to_server or self.to_client:
            return
        client_channels = {c for c in range(1, 8) if self.client.channel_is_open(c)}
        server_channels = {c for c in range(1, 8) if self.server.channel_is_open(c)}
        # With nothing in flight, a channel is open on both sides or on neither, except one
        # the client is still closing (its close-ok cannot be outstanding: nothing is in flight).
        assert client_channels == server_channels
        for ch in client_channels:
            for direction in ("c2s", "s2c"):
                key = (ch, self.client_inc[ch])
                assert self.received[direction][key] == self.sent[direction][key]
            assert self.acks_received[key] == self.acks_sent[key]
        if len(self.opened) == 2:
            client_view, server_view = self.opened
            assert (client_view.frame_max, client_view.channel_max, client_view.heartbeat) == (
                server_view.frame_max,
                server_view.channel_max,
                server_view.heartbeat,
            )

    def teardown(self) -> None:
        if not hasattr(self, "client"):
            return
        self._settle()
        self.both_sides_agree_once_settled()
        if self.client.is_open:
            self.client.close()
            self._collect()
            self._settle()
            assert [c.by_peer for c in self.closed] == [True, False]


# The profile's settings, with shorter runs of steps: each step moves real bytes both ways.
ClientServerPair.TestCase.settings = settings(stateful_step_count=30)
test_client_and_server_agree = ClientServerPair.TestCase
