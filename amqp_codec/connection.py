"""A sans-IO AMQP connection: the protocol's state machine for a client or a server.

:class:`Connection` takes the bytes read from a socket and gives :mod:`~amqp_codec.events`;
it takes actions (open a channel, send a method, close) and gives the bytes to write. It has
no sockets, no clock and no threads: the caller reads, writes and tells it the time
(:meth:`Connection.tick`), as with h11 or wsproto::

    conn = Connection(role="client", username="guest", password="guest")
    sock.sendall(conn.data_to_send())               # the protocol header
    while True:
        for event in conn.receive_data(sock.recv(65536)):
            ...                                     # ConnectionOpened, MessageReceived, ...
        sock.sendall(conn.data_to_send())

What it does itself: the protocol header, SASL, tune, connection.open, channel.open and
channel.close handshakes, connection.close in both directions, heartbeats, content assembly and
splitting by the negotiated frame_max, publisher-confirm delivery tags, and every check the
spec asks for: which peer may send a method (the spec's chassis), one synchronous request at a
time per channel, no method on a channel that is not open. Everything else (declare-ok,
consume-ok, deliveries, a broker's every decision) is the application's, through
:class:`~amqp_codec.events.MethodReceived` and :meth:`Connection.send`.

Errors come in two kinds: :class:`~amqp_codec.errors.LocalProtocolError` for the caller's own
mistakes (nothing changes) and :class:`~amqp_codec.errors.RemoteProtocolError` for the peer's,
raised after the right close is queued. A soft error (a body over ``max_body_size``) closes only
its channel; every other one closes the connection.
"""

from __future__ import annotations

import enum
import sys
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from .assembly import MessageAssembler
from .base import Method, Properties
from .decoder import DEFAULT_MAX_BODY_SIZE, NEED_DATA, FrameDecoder, _resolve_spec
from .errors import (
    ACCESS_REFUSED,
    CHANNEL_ERROR,
    COMMAND_INVALID,
    NOT_ALLOWED,
    UNEXPECTED_FRAME,
    AMQPDecodeError,
    LocalProtocolError,
    RemoteProtocolError,
)
from .events import (
    ChannelClosed,
    ChannelOpened,
    ConnectionBlocked,
    ConnectionClosed,
    ConnectionOpened,
    ConnectionUnblocked,
    Event,
    HeartbeatTimeout,
    MessageReceived,
    MethodReceived,
    PublishConfirmed,
)
from .frames import (
    FRAME_OVERHEAD,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    encode_frame,
    encode_message,
)
from .protocol import ProtocolSpec, client_header, default_spec, spec_for_header
from .sasl import MECHANISMS, parse_response, response_for

__all__ = ["CLIENT_CAPABILITIES", "SERVER_CAPABILITIES", "Connection", "sent_by"]

Role = Literal["client", "server"]

#: What the client tells the server it can handle (RabbitMQ's capability names).
CLIENT_CAPABILITIES: Mapping[str, bool] = {
    "authentication_failure_close": True,
    "basic.nack": True,
    "connection.blocked": True,
    "consumer_cancel_notify": True,
    "exchange_exchange_bindings": True,
    "per_consumer_qos": True,
    "publisher_confirms": True,
}
#: What the server role announces; clients such as pika check them before using confirms.
SERVER_CAPABILITIES: Mapping[str, bool] = {
    "authentication_failure_close": True,
    "basic.nack": True,
    "connection.blocked": True,
    "consumer_cancel_notify": True,
    "exchange_exchange_bindings": True,
    "per_consumer_qos": True,
    "publisher_confirms": True,
}

_FRAME_MIN_SIZE = 4096  # the spec's frame-min-size: no peer may negotiate less
_CHANNEL_LIMIT = 65535  # channel_max 0 means "no limit": the 16-bit channel numbers are it
_DEFAULT_FRAME_MAX = 131072
_DEFAULT_CHANNEL_MAX = 2047
_DEFAULT_SERVER_HEARTBEAT = 60


class _State(enum.Enum):
    """Where the connection is. Handshake states are named after what they wait for."""

    AWAIT_HEADER = "await protocol header"  # server
    AWAIT_START = "await connection.start"  # client
    AWAIT_START_OK = "await connection.start-ok"  # server
    AWAIT_TUNE = "await connection.tune"  # client (or connection.secure)
    AWAIT_SECURE_OK = "await connection.secure-ok"  # server
    AWAIT_TUNE_OK = "await connection.tune-ok"  # server
    AWAIT_OPEN = "await connection.open"  # server
    AWAIT_OPEN_OK = "await connection.open-ok"  # client
    OPEN = "open"
    CLOSING = "closing"  # this side sent connection.close and waits for close-ok
    CLOSED = "closed"


#: The connection-class methods each role accepts from its peer in each state, and the
#: handler that takes them. connection.close and close-ok are taken in every state; any other
#: connection method not listed here is a 503 (command invalid).
_CONNECTION_TABLE: dict[tuple[Role, _State], dict[str, str]] = {
    ("client", _State.AWAIT_START): {"connection.start": "_on_start"},
    ("client", _State.AWAIT_TUNE): {
        "connection.secure": "_on_secure",
        "connection.tune": "_on_tune",
    },
    ("client", _State.AWAIT_OPEN_OK): {
        "connection.open-ok": "_on_open_ok",
        "connection.redirect": "_on_redirect",  # 0-8
    },
    ("client", _State.OPEN): {
        "connection.blocked": "_on_blocked",
        "connection.unblocked": "_on_unblocked",
        "connection.update-secret-ok": "_on_application_method",
    },
    ("server", _State.AWAIT_START_OK): {"connection.start-ok": "_on_start_ok"},
    ("server", _State.AWAIT_SECURE_OK): {"connection.secure-ok": "_on_secure_ok"},
    ("server", _State.AWAIT_TUNE_OK): {"connection.tune-ok": "_on_tune_ok"},
    ("server", _State.AWAIT_OPEN): {"connection.open": "_on_open"},
    ("server", _State.OPEN): {
        "connection.blocked": "_on_application_method",
        "connection.unblocked": "_on_application_method",
        "connection.update-secret": "_on_application_method",
    },
}

#: Where the spec's chassis is wrong about real traffic: RabbitMQ's XML has the client
#: implement connection.update-secret, but clients send it and RabbitMQ answers update-secret-ok.
_SENT_BY_CORRECTIONS: dict[str, frozenset[str]] = {
    "connection.update-secret": frozenset({"client"}),
    "connection.update-secret-ok": frozenset({"server"}),
}

#: Connection-class methods the application may send itself once the connection is open.
_APPLICATION_CONNECTION_METHODS = frozenset(
    {
        "connection.blocked",
        "connection.unblocked",
        "connection.update-secret",
        "connection.update-secret-ok",
    }
)
#: Channel-class methods the layer sends itself: the application uses open_channel() and
#: close_channel().
_LAYER_CHANNEL_METHODS = {
    "channel.open": "open_channel()",
    "channel.open-ok": "nothing: the layer answers channel.open",
    "channel.close": "close_channel()",
    "channel.close-ok": "nothing: the layer answers channel.close",
}
#: States in which heartbeats run (tune is over, the socket is still there).
_HEARTBEAT_STATES = frozenset(
    {_State.AWAIT_OPEN, _State.AWAIT_OPEN_OK, _State.OPEN, _State.CLOSING}
)


class _ChannelState(enum.Enum):
    OPENING = "opening"  # client: channel.open sent
    OPEN = "open"
    CLOSING = "closing"  # this side sent channel.close and waits for close-ok


@dataclass(slots=True)
class _Channel:
    number: int
    state: _ChannelState
    #: This side's synchronous request waiting for its reply.
    awaiting: type[Method] | None = None
    #: The peer's synchronous requests the application has not answered yet, oldest first.
    peer_requests: deque[type[Method]] = field(default_factory=deque)
    #: The close this side sent: (reply code, reply text, class id, method id).
    close: tuple[int, str, int, int] = (200, "", 0, 0)
    #: Confirm mode (client: confirm.select sent; server: received). Delivery tags of the
    #: publishes not confirmed yet, in order, and how many publishes were counted.
    confirm: bool = False
    published: int = 0
    unconfirmed: dict[int, None] = field(default_factory=dict)
    #: channel.flow from the peer: False while it asked this side to stop sending content.
    peer_flow_active: bool = True


class _PeerError(Exception):
    """Raised inside frame handling; receive_data turns it into the close and the error."""

    def __init__(
        self, reply_code: int, reason: str, channel: int = 0, method: Method | None = None
    ) -> None:
        super().__init__(reason)
        self.reply_code = reply_code
        self.reason = reason
        self.channel = channel  # non-zero: a soft error closing that channel only
        self.class_id = method.CLASS_ID if method is not None else 0
        self.method_id = method.METHOD_ID if method is not None else 0


def sent_by(method: Method) -> frozenset[str]:
    """Which peers may send ``method``: the spec's chassis, corrected where it is wrong."""
    return _SENT_BY_CORRECTIONS.get(method.NAME, method.SENT_BY)


def _no_wait(method: Method) -> bool:
    """The method's no-wait flag (``no_wait`` reads 0-8's and confirm.select's ``nowait`` too)."""
    return bool(getattr(method, "no_wait", False))


def _is_request(method: Method) -> bool:
    """A synchronous request: the sender waits for one of its RESPONSES."""
    return method.SYNCHRONOUS and bool(method.RESPONSES) and not _no_wait(method)


def _lower(own: int, proposed: int) -> int:
    """Tune negotiation for channel_max and frame_max: 0 is no limit, the lower limit wins."""
    if not own or not proposed:
        return own or proposed
    return min(own, proposed)


def _default_authenticate(mechanism: str, response: bytes) -> str | None:
    """RabbitMQ's out-of-the-box user: guest/guest by PLAIN or AMQPLAIN."""
    return "guest" if parse_response(mechanism, response) == ("guest", "guest") else None


class Connection:
    """One AMQP connection, client or server side, as a state machine over bytes.

    Args:
        role: ``"client"`` or ``"server"``.
        spec: the protocol version, ``amqp_codec.v0_9_1`` (default) or ``amqp_codec.v0_8``.
        max_body_size: the largest message body accepted from the peer (406 beyond, which
            closes that channel).
        accept_extended_tags: accept every field-table tag where the version defines fewer
            (0-8, see :class:`~amqp_codec.FrameDecoder`); ``None``: yes, as real 0-8 peers
            send them.

    Client options: ``username`` and ``password`` (``"guest"``), ``vhost`` (``"/"``),
    ``mechanism`` (``"PLAIN"``, ``"AMQPLAIN"`` or ``"EXTERNAL"``), ``heartbeat`` (seconds;
    ``None``: what the server proposes; 0: off), ``frame_max`` (131072), ``channel_max`` (2047),
    ``client_properties`` (merged over the defaults; ``capabilities`` included), ``insist``
    (0-8's connection.open flag). The protocol header is queued at construction.

    Server options: ``authenticate(mechanism, response) -> str | None`` (the user name, or
    None to refuse; the default accepts only guest/guest), ``mechanisms`` (offered, default
    PLAIN and AMQPLAIN), ``server_properties``, ``heartbeat`` (60), ``frame_max`` (131072),
    ``channel_max`` (2047).
    """

    def __init__(
        self,
        role: Role = "client",
        spec: ProtocolSpec | ModuleType | None = None,
        *,
        max_body_size: int = DEFAULT_MAX_BODY_SIZE,
        accept_extended_tags: bool | None = None,
        # client
        username: str = "guest",
        password: str = "guest",
        vhost: str = "/",
        mechanism: str = "PLAIN",
        client_properties: Mapping[str, Any] | None = None,
        insist: bool = False,
        # server
        authenticate: Callable[[str, bytes], str | None] | None = None,
        mechanisms: tuple[str, ...] = ("PLAIN", "AMQPLAIN"),
        server_properties: Mapping[str, Any] | None = None,
        # both
        heartbeat: int | None = None,
        frame_max: int = _DEFAULT_FRAME_MAX,
        channel_max: int = _DEFAULT_CHANNEL_MAX,
    ) -> None:
        if role not in ("client", "server"):
            raise ValueError(f"role must be 'client' or 'server', not {role!r}")
        resolved = _resolve_spec(spec) or default_spec()
        if resolved.wire_format != "0-9":
            raise ValueError(f"the connection layer speaks AMQP 0-8 and 0-9-1, not {resolved.name}")
        if role == "client" and mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, not {mechanism!r}")
        if frame_max and frame_max < _FRAME_MIN_SIZE:
            raise ValueError(f"frame_max must be 0 (no limit) or at least {_FRAME_MIN_SIZE}")
        if not 0 <= channel_max <= _CHANNEL_LIMIT:
            raise ValueError(f"channel_max must be 0..{_CHANNEL_LIMIT}")
        if heartbeat is not None and not 0 <= heartbeat <= 65535:
            raise ValueError("heartbeat must be 0..65535 seconds")
        self.role: Role = role
        self.spec = resolved
        self._peer_role: Role = "server" if role == "client" else "client"
        self._classes: dict[str, Any] = {c.NAME: c for c in resolved.methods.values()}
        self._responses = frozenset(r for c in resolved.methods.values() for r in c.RESPONSES)
        if accept_extended_tags is None:  # real 0-8 peers relay 0-9-1's tags (see FrameDecoder)
            accept_extended_tags = resolved.table_tags is not None
        self._decoder = FrameDecoder(
            resolved, max_body_size=max_body_size, accept_extended_tags=accept_extended_tags
        )
        # Body frames go only to the assembler: they may carry views of the received bytes,
        # so that a message's body is copied once (see amqp_codec.message_decoder).
        self._decoder._body_views = True
        self._assembler = MessageAssembler(max_body_size=max_body_size)
        self._outbound: list[bytes] = []
        self._events: list[Event] = []  # of the receive_data call in progress
        self._header_buf = b""  # server: the client's protocol header as it arrives
        self._channels: dict[int, _Channel] = {}
        self._close: tuple[int, str, int, int] = (200, "", 0, 0)  # this side's connection.close

        # Options, and the negotiated values once tune is over.
        self._username = username
        self._password = password
        self._vhost = vhost
        self._mechanism = mechanism
        self._insist = insist
        self._authenticate = authenticate or _default_authenticate
        self._mechanisms = mechanisms
        self._own_heartbeat = heartbeat
        self._own_frame_max = frame_max
        self._own_channel_max = channel_max
        self.frame_max = 0
        """The negotiated frame_max (0 until tune; 0 after it: no limit)."""
        self.channel_max = 0
        """The negotiated channel_max (0: no limit, channels 1..65535)."""
        self.heartbeat = 0
        """The negotiated heartbeat interval in seconds (0: off)."""
        self.peer_properties: Mapping[str, Any] = {}
        self.username = username if role == "client" else ""
        self.vhost = vhost if role == "client" else ""
        self.blocked = False
        """Client side: the server sent connection.blocked and not yet unblocked."""
        self.heartbeats_received = 0

        # Heartbeats: the layer has no clock, so it learns times from tick(now). Traffic since
        # the last tick counts as happening at the next one.
        self._last_received: float | None = None
        self._last_sent: float | None = None
        self._received_since_tick = False
        self._sent_since_tick = False

        if role == "client":
            props: dict[str, Any] = {
                "product": "amqp-codec",
                "platform": f"Python {sys.version.split()[0]}",
                "information": "https://pypi.org/project/amqp-codec/",
            }
            if resolved.table_tags is None:  # 0-8 has no capabilities, nor booleans to say them
                props["capabilities"] = dict(CLIENT_CAPABILITIES)
            props.update(client_properties or {})
            self._client_properties = props
            self._state = _State.AWAIT_START
            self._queue(b"AMQP" + client_header(resolved))
        else:
            props = {"product": "amqp-codec"}
            if resolved.table_tags is None:
                props["capabilities"] = dict(SERVER_CAPABILITIES)
            props.update(server_properties or {})
            self._server_properties = props
            if self._own_heartbeat is None:
                self._own_heartbeat = _DEFAULT_SERVER_HEARTBEAT
            self._state = _State.AWAIT_HEADER

    # -- what the caller reads -----------------------------------------------------------

    @property
    def state(self) -> str:
        """Where the connection is: ``"open"``, ``"closing"``, ``"closed"`` or a handshake
        step such as ``"await connection.tune"``."""
        return self._state.value

    @property
    def decoder(self) -> FrameDecoder:
        """The frame decoder reading the peer's bytes (its ``frame_max`` is the negotiated
        one; ``accept_extended_tags`` may be changed). Its frames are the connection's to
        take: its content body frames carry views of the received bytes for the connection's
        message assembly, not ``bytes`` payloads."""
        return self._decoder

    @property
    def is_open(self) -> bool:
        """True between ConnectionOpened and the start of a close."""
        return self._state is _State.OPEN

    def channel_is_open(self, channel: int) -> bool:
        """True while ``channel`` is open (after ChannelOpened, before a close starts)."""
        if self._state is not _State.OPEN:
            return False
        ch = self._channels.get(channel)
        return ch is not None and ch.state is _ChannelState.OPEN and channel != 0

    def data_to_send(self) -> bytes:
        """Everything queued to write now, in order; ``b""`` when nothing is."""
        if not self._outbound:
            return b""
        data = b"".join(self._outbound)
        self._outbound.clear()
        return data

    def next_deadline(self) -> float | None:
        """When :meth:`tick` must next be called (in the clock of the ``now`` given to tick),
        or None while no heartbeat runs. 0.0 before the first tick: call it now."""
        if not self.heartbeat or self._state not in _HEARTBEAT_STATES:
            return None
        if self._last_sent is None or self._last_received is None:
            return 0.0
        return min(self._last_sent + self.heartbeat, self._last_received + 2 * self.heartbeat)

    # -- input -------------------------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        """Take bytes read from the socket; ``b""`` means the peer closed it.

        Returns the events they complete, in order. Raises
        :class:`~amqp_codec.errors.RemoteProtocolError` when the peer broke the protocol
        (after queuing the answer; the error's ``events`` holds this call's other events).
        """
        self._events = events = list[Event]()
        if not data:
            self._on_eof()
            return events
        if self._state is _State.CLOSED:
            return events  # after the close handshake nothing more is read
        self._received_since_tick = True
        if self._state is _State.AWAIT_HEADER:
            data = self._on_header_bytes(data)
            if not data:
                return events
        self._decoder.receive_data(data)
        soft: RemoteProtocolError | None = None
        while not self._closed():
            try:
                frame = self._decoder.next_frame()
                if frame is NEED_DATA:
                    break
                self._on_frame(frame)
            except AMQPDecodeError as exc:
                if exc.reply_code is None:  # an unsupported protocol: cannot happen, spec given
                    raise self._fail(_PeerError(COMMAND_INVALID, str(exc))) from None
                if exc.hard or not exc.channel or exc.channel not in self._channels:
                    raise self._fail(_decode_error(exc)) from None
                exc = self._assembler.abandon(exc)
                error = self._soft_error(_decode_error(exc))
                soft = soft or error
            except _PeerError as exc:
                if not exc.channel:
                    raise self._fail(exc) from None
                error = self._soft_error(exc)
                soft = soft or error
        if soft is not None:
            soft.events = events
            raise soft
        return events

    def tick(self, now: float) -> list[Event]:
        """Tell the connection the time (seconds, any monotonic clock). Queues a heartbeat when
        nothing was sent for an interval; returns ``[HeartbeatTimeout()]`` (and closes the
        connection) when nothing arrived for two. Call it at :meth:`next_deadline`."""
        if not self.heartbeat or self._state not in _HEARTBEAT_STATES:
            return []
        if self._last_received is None or self._received_since_tick:
            self._last_received = now
            self._received_since_tick = False
        if self._last_sent is None or self._sent_since_tick:
            self._last_sent = now
            self._sent_since_tick = False
        if now - self._last_received >= 2 * self.heartbeat:
            self._state = _State.CLOSED
            return [HeartbeatTimeout()]
        if now - self._last_sent >= self.heartbeat:
            self._outbound.append(encode_frame(HeartbeatFrame(0)))
            self._last_sent = now
        return []

    # -- actions -------------------------------------------------------------------------------

    def open_channel(self) -> int:
        """Client: open the lowest free channel; ChannelOpened follows its open-ok."""
        if self.role != "client":
            raise LocalProtocolError("only a client opens channels; a server answers them")
        self._require_open()
        limit = self.channel_max or _CHANNEL_LIMIT
        number = next((n for n in range(1, limit + 1) if n not in self._channels), None)
        if number is None:
            raise LocalProtocolError(f"all {limit} channels are in use")
        open_ = self._classes["channel.open"]
        self._queue_method(number, open_())
        self._channels[number] = _Channel(number, _ChannelState.OPENING, awaiting=open_)
        return number

    def close_channel(self, channel: int, reply_code: int = 200, reply_text: str = "") -> None:
        """Send channel.close; ChannelClosed(by_peer=False) follows its close-ok."""
        self._require_open()
        ch = self._channels.get(channel)
        if channel == 0 or ch is None or ch.state is _ChannelState.CLOSING:
            raise LocalProtocolError(f"channel {channel} is not open")
        self._start_channel_close(ch, reply_code, reply_text, 0, 0)

    def close(self, reply_code: int = 200, reply_text: str = "") -> None:
        """Send connection.close; ConnectionClosed(by_peer=False) follows its close-ok."""
        if self._state in (_State.CLOSING, _State.CLOSED):
            raise LocalProtocolError(f"the connection is already {self._state.value}")
        if self._state in (_State.AWAIT_HEADER, _State.AWAIT_START):
            raise LocalProtocolError(
                "the handshake has not started: there is no close to send, close the socket"
            )
        self._start_close(reply_code, reply_text, 0, 0)

    def send(
        self,
        channel: int,
        method: Method,
        properties: Properties | None = None,
        body: bytes | None = None,
    ) -> None:
        """Queue any method the application sends; a content method with its properties and
        body (split by the negotiated frame_max). Raises LocalProtocolError, changing nothing,
        when the protocol does not allow it here."""
        name = method.NAME
        if self.role not in sent_by(method):
            raise LocalProtocolError(f"{name} is sent by the {self._peer_role} only")
        if type(method) is not self._classes.get(name):
            raise LocalProtocolError(f"{name} is not a method of AMQP {self.spec.name}")
        self._require_open()
        if channel == 0:
            if name not in _APPLICATION_CONNECTION_METHODS:
                raise LocalProtocolError(
                    f"{name} on channel 0: the layer sends the connection's own methods"
                )
            ch = self._channels[0]
        else:
            if name in _LAYER_CHANNEL_METHODS:
                raise LocalProtocolError(
                    f"not {name} by send(): use {_LAYER_CHANNEL_METHODS[name]}"
                )
            if method.CLASS_ID == self.spec.connection_class_id:
                raise LocalProtocolError(f"{name} belongs on channel 0")
            found = self._channels.get(channel)
            if found is None or found.state is not _ChannelState.OPEN:
                raise LocalProtocolError(f"channel {channel} is not open")
            ch = found
        if method.HAS_CONTENT:
            if not ch.peer_flow_active:
                raise LocalProtocolError(
                    f"the peer paused content on channel {channel} (channel.flow active=false)"
                )
            if properties is None:
                properties = self.spec.properties[method.CLASS_ID]()
            wire = encode_message(channel, method, properties, body or b"", self.frame_max)
            header_size = len(properties.encode()) + 12
            if self.frame_max and header_size + FRAME_OVERHEAD > self.frame_max:
                raise LocalProtocolError(
                    f"the content header ({header_size} bytes) does not fit frame_max {self.frame_max}"
                )
        else:
            if properties is not None or body is not None:
                raise LocalProtocolError(f"{name} carries no content: no properties or body")
            wire = encode_frame(MethodFrame(channel, method))
        if self.frame_max and not method.HAS_CONTENT and len(wire) > self.frame_max:
            raise LocalProtocolError(f"{name} encodes to {len(wire)} bytes, over frame_max")
        # Checks that depend on the channel's synchronous and confirm state.
        cls = type(method)
        answers = bool(ch.peer_requests) and cls in ch.peer_requests[0].RESPONSES
        if cls in self._responses and not answers and not _is_request(method):
            waiting = ch.peer_requests[0].NAME if ch.peer_requests else "nothing"
            raise LocalProtocolError(
                f"{name} answers no request of the peer on channel {channel} (it waits for "
                f"an answer to {waiting})"
            )
        if _is_request(method) and ch.awaiting is not None:
            raise LocalProtocolError(
                f"{name} on channel {channel} before the reply to {ch.awaiting.NAME}: one "
                "synchronous request at a time"
            )
        confirmed = self._check_outgoing_confirm(ch, method)
        # Everything is checked: change state and queue.
        if answers:
            ch.peer_requests.popleft()
        if _is_request(method):
            ch.awaiting = cls
        if confirmed is not None:
            for tag in confirmed:
                del ch.unconfirmed[tag]
        if self.role == "client":
            if name == "confirm.select":
                ch.confirm = True
            elif name == "basic.publish" and ch.confirm:
                ch.published += 1
                ch.unconfirmed[ch.published] = None
        if name == "channel.flow-ok" and self.role == "client":
            pass  # the server's flow request is answered; its active flag already applied
        self._queue(wire)

    # -- internals: output --------------------------------------------------------------------

    def _closed(self) -> bool:
        return self._state is _State.CLOSED

    def _queue(self, data: bytes) -> None:
        self._outbound.append(data)
        self._sent_since_tick = True

    def _queue_method(self, channel: int, method: Method) -> None:
        self._queue(encode_frame(MethodFrame(channel, method)))

    def _require_open(self) -> None:
        if self._state is not _State.OPEN:
            raise LocalProtocolError(f"the connection is not open ({self._state.value})")

    def _reply_text(self, reply_code: int, reason: str) -> str:
        name = self.spec.reply_names.get(reply_code, str(reply_code)).upper().replace("-", "_")
        return f"{name} - {reason}".encode()[:255].decode("utf-8", "ignore")

    def _start_close(self, reply_code: int, reply_text: str, class_id: int, method_id: int) -> None:
        close = self._classes["connection.close"]
        self._queue_method(
            0,
            close(
                reply_code=reply_code, reply_text=reply_text, class_id=class_id, method_id=method_id
            ),
        )
        self._close = (reply_code, reply_text, class_id, method_id)
        self._state = _State.CLOSING

    def _start_channel_close(
        self, ch: _Channel, reply_code: int, reply_text: str, class_id: int, method_id: int
    ) -> None:
        close = self._classes["channel.close"]
        self._queue_method(
            ch.number,
            close(
                reply_code=reply_code, reply_text=reply_text, class_id=class_id, method_id=method_id
            ),
        )
        ch.state = _ChannelState.CLOSING
        ch.close = (reply_code, reply_text, class_id, method_id)
        ch.awaiting = None
        ch.peer_requests.clear()
        self._assembler.forget(ch.number)

    def _fail(self, error: _PeerError) -> RemoteProtocolError:
        """A hard error: queue connection.close and build the exception to raise."""
        text = self._reply_text(error.reply_code, error.reason)
        if self._state not in (_State.CLOSING, _State.CLOSED):
            self._start_close(error.reply_code, text, error.class_id, error.method_id)
        return RemoteProtocolError(text, reply_code=error.reply_code, events=self._events)

    def _soft_error(self, error: _PeerError) -> RemoteProtocolError:
        """A soft error: queue channel.close for its channel and build the exception."""
        text = self._reply_text(error.reply_code, error.reason)
        ch = self._channels.get(error.channel)
        if ch is not None and ch.state is not _ChannelState.CLOSING:
            self._start_channel_close(ch, error.reply_code, text, error.class_id, error.method_id)
        return RemoteProtocolError(text, reply_code=error.reply_code, channel=error.channel)

    # -- internals: input -----------------------------------------------------------------------

    def _on_eof(self) -> None:
        if self._state is _State.CLOSED:
            return
        if self._state is _State.CLOSING:
            # This side closed; a peer may drop the socket instead of answering close-ok (the
            # Erlang client does): the close is just as complete.
            self._events.append(
                ConnectionClosed(self._close[0], self._close[1], False, *self._close[2:])
            )
        else:
            self._events.append(
                ConnectionClosed(
                    0, "the peer closed the socket without a close handshake", by_peer=True
                )
            )
        self._state = _State.CLOSED

    def _on_header_bytes(self, data: bytes) -> bytes:
        """Server: collect the client's 8-byte protocol header; returns the bytes after it."""
        need = 8 - len(self._header_buf)
        self._header_buf += data[:need]
        rest = data[need:]
        header = self._header_buf
        if header[:4] != b"AMQP"[: len(header)] or (
            len(header) == 8 and spec_for_header(header[4:]) is not self.spec
        ):
            # The spec's answer to a header it cannot speak: its own header, then close.
            self._queue(b"AMQP" + client_header(self.spec))
            self._state = _State.CLOSED
            raise RemoteProtocolError(
                f"the client sent {header!r}, not a protocol header for AMQP {self.spec.name}; "
                "answered with this server's header",
                reply_code=None,
                events=self._events,
            )
        if len(header) < 8:
            return b""
        start = self._classes["connection.start"]
        self._queue_method(
            0,
            start(
                server_properties=self._server_properties,
                mechanisms=" ".join(self._mechanisms).encode(),
                locales=b"en_US",
            ),
        )
        self._state = _State.AWAIT_START_OK
        return rest

    def _on_frame(self, frame: Frame) -> None:
        if type(frame) is MethodFrame:
            self._on_method(frame.channel, frame.method)
        elif type(frame) is ContentHeaderFrame or type(frame) is ContentBodyFrame:
            self._on_content(frame)
        elif type(frame) is HeartbeatFrame:
            self.heartbeats_received += 1  # as traffic, receive_data already noted it
        elif type(frame) is ProtocolHeader:  # client: the server refused our version
            self._state = _State.CLOSED
            version = " ".join(map(str, frame.version_bytes))
            self._events.append(
                ConnectionClosed(
                    0,
                    f"the server does not speak AMQP {self.spec.name}; it offers AMQP {version}",
                    by_peer=True,
                )
            )
        else:  # pragma: no cover - 99-0 frames need a 99-0 decoder, which is never built here
            raise _PeerError(UNEXPECTED_FRAME, f"unexpected {type(frame).__name__}")

    def _on_content(self, frame: ContentHeaderFrame | ContentBodyFrame) -> None:
        ch = self._channels.get(frame.channel)
        if ch is not None and ch.state is _ChannelState.CLOSING:
            return  # the spec: discard everything but close and close-ok on a closing channel
        if ch is None or ch.state is not _ChannelState.OPEN or self._state is not _State.OPEN:
            if self._state is _State.CLOSING:
                return
            raise _PeerError(
                CHANNEL_ERROR, f"content on channel {frame.channel}, which is not open"
            )
        message = self._assembler.feed(frame)
        if message is not None:
            self._events.append(
                MessageReceived(message.channel, message.method, message.properties, message.body)
            )

    def _on_method(self, channel: int, method: Any) -> None:
        name = method.NAME
        if self._state is _State.CLOSING:
            # The spec: after sending connection.close, discard everything but close/close-ok.
            if channel == 0 and name == "connection.close":
                self._queue_method(0, self._classes["connection.close-ok"]())
            elif channel == 0 and name == "connection.close-ok":
                self._state = _State.CLOSED
                self._events.append(
                    ConnectionClosed(self._close[0], self._close[1], False, *self._close[2:])
                )
            return
        if self._peer_role not in sent_by(method):
            raise _PeerError(
                COMMAND_INVALID,
                f"{name} is sent by the {self.role} only, not the {self._peer_role}",
                method=method,
            )
        if channel == 0:
            self._on_connection_method(method)
            return
        if self._state is not _State.OPEN:
            raise _PeerError(
                COMMAND_INVALID,
                f"{name} on channel {channel} before the connection is open",
                method=method,
            )
        ch = self._channels.get(channel)
        if name == "channel.open":
            if ch is not None:
                raise _PeerError(CHANNEL_ERROR, f"channel {channel} is already open", method=method)
            if self.channel_max and channel > self.channel_max:
                raise _PeerError(
                    CHANNEL_ERROR,
                    f"channel {channel} is over channel_max {self.channel_max}",
                    method=method,
                )
            self._channels[channel] = _Channel(channel, _ChannelState.OPEN)
            self._queue_method(channel, self._classes["channel.open-ok"]())
            self._events.append(ChannelOpened(channel))
            return
        if ch is None:
            raise _PeerError(
                CHANNEL_ERROR, f"{name} on channel {channel}, which is not open", method=method
            )
        if ch.state is _ChannelState.CLOSING:
            if name == "channel.close":  # both sides closed at once: each answers the other
                self._queue_method(channel, self._classes["channel.close-ok"]())
            elif name == "channel.close-ok":
                del self._channels[channel]
                self._events.append(ChannelClosed(channel, *ch.close[:2], False, *ch.close[2:]))
            return
        if name == "channel.close":
            self._queue_method(channel, self._classes["channel.close-ok"]())
            del self._channels[channel]
            self._assembler.forget(channel)
            self._events.append(
                ChannelClosed(
                    channel,
                    method.reply_code,
                    method.reply_text,
                    True,
                    method.class_id,
                    method.method_id,
                )
            )
            return
        if ch.state is _ChannelState.OPENING:
            if name != "channel.open-ok":
                raise _PeerError(
                    CHANNEL_ERROR,
                    f"{name} on channel {channel} before channel.open-ok",
                    method=method,
                )
            ch.state = _ChannelState.OPEN
            ch.awaiting = None
            self._events.append(ChannelOpened(channel))
            return
        self._check_incoming_sync(ch, method)
        self._assembler.feed(MethodFrame(channel, method))
        if self.role == "server" and ch.confirm and name == "basic.publish":
            ch.published += 1
            ch.unconfirmed[ch.published] = None
        if method.HAS_CONTENT:
            return  # MessageReceived once its content is complete
        if self.role == "client" and ch.confirm and name in ("basic.ack", "basic.nack"):
            self._on_confirm(ch, method)
            return
        if name == "channel.flow":
            ch.peer_flow_active = bool(method.active)
        elif name == "confirm.select" and self.role == "server":
            ch.confirm = True  # publishes are counted from here
        self._events.append(MethodReceived(channel, method))

    def _check_incoming_sync(self, ch: _Channel, method: Method) -> None:
        cls = type(method)
        if cls in self._responses:
            if ch.awaiting is not None and cls in ch.awaiting.RESPONSES:
                ch.awaiting = None
                return
            if not _is_request(method):
                asked = ch.awaiting.NAME if ch.awaiting is not None else "nothing"
                raise _PeerError(
                    COMMAND_INVALID,
                    f"{method.NAME} on channel {ch.number} answers no request (this side asked {asked})",
                    method=method,
                )
        if _is_request(method):
            # The peer should wait for each reply, but brokers such as RabbitMQ take requests
            # in a row and answer them in order: so does this layer, checking the answers.
            ch.peer_requests.append(cls)

    def _on_confirm(self, ch: _Channel, method: Any) -> None:
        # Reported as the server sends it, as other clients do: a tag this side never
        # published (or one already confirmed) is the server's to explain, not an error here.
        tag: int = method.delivery_tag
        multiple = bool(method.multiple)
        if multiple:
            done = [t for t in ch.unconfirmed if t <= tag or tag == 0]
        else:
            done = [tag] if tag in ch.unconfirmed else []
        for t in done:
            del ch.unconfirmed[t]
        self._events.append(PublishConfirmed(ch.number, tag, multiple, method.NAME == "basic.ack"))

    def _check_outgoing_confirm(self, ch: _Channel, method: Any) -> list[int] | None:
        """Server: the delivery tags a basic.ack or basic.nack confirms (checked)."""
        if self.role != "server" or method.NAME not in ("basic.ack", "basic.nack"):
            return None
        if not ch.confirm:
            raise LocalProtocolError(
                f"{method.NAME} from a server confirms publishes: channel {ch.number} is not in confirm mode"
            )
        tag: int = method.delivery_tag
        if method.multiple:
            if tag > ch.published:
                raise LocalProtocolError(
                    f"delivery tag {tag} is past the {ch.published} publishes counted"
                )
            return [t for t in ch.unconfirmed if t <= tag or tag == 0]
        if tag not in ch.unconfirmed:
            raise LocalProtocolError(
                f"delivery tag {tag} is not an unconfirmed publish on channel {ch.number}"
            )
        return [tag]

    # -- internals: the connection class ------------------------------------------------------

    def _on_connection_method(self, method: Any) -> None:
        name = method.NAME
        if name == "connection.close":
            self._queue_method(0, self._classes["connection.close-ok"]())
            self._state = _State.CLOSED
            self._events.append(
                ConnectionClosed(
                    method.reply_code,
                    method.reply_text,
                    True,
                    method.class_id,
                    method.method_id,
                )
            )
            return
        handler = _CONNECTION_TABLE.get((self.role, self._state), {}).get(name)
        if handler is None:
            raise _PeerError(
                COMMAND_INVALID, f"{name} is not expected ({self._state.value})", method=method
            )
        getattr(self, handler)(method)

    def _on_application_method(self, method: Method) -> None:
        ch = self._channels[0]
        self._check_incoming_sync(ch, method)
        self._events.append(MethodReceived(0, method))

    # client side

    def _on_start(self, method: Any) -> None:
        offered = bytes(method.mechanisms).decode("utf-8", "replace").split()
        if self._mechanism not in offered:
            raise _PeerError(
                NOT_ALLOWED,
                f"the server offers SASL {' '.join(offered) or 'nothing'}, not {self._mechanism}",
                method=method,
            )
        self.peer_properties = method.server_properties
        start_ok = self._classes["connection.start-ok"]
        self._queue_method(
            0,
            start_ok(
                client_properties=self._client_properties,
                mechanism=self._mechanism,
                response=response_for(self._mechanism, self._username, self._password),
                locale="en_US",
            ),
        )
        self._state = _State.AWAIT_TUNE

    def _on_secure(self, method: Any) -> None:
        # PLAIN, AMQPLAIN and EXTERNAL have a single step: a challenge gets the response again.
        secure_ok = self._classes["connection.secure-ok"]
        self._queue_method(
            0, secure_ok(response=response_for(self._mechanism, self._username, self._password))
        )

    def _on_tune(self, method: Any) -> None:
        self.channel_max = _lower(self._own_channel_max, method.channel_max)
        self.frame_max = _lower(self._own_frame_max, method.frame_max)
        if self.frame_max and self.frame_max < _FRAME_MIN_SIZE:
            raise _PeerError(
                NOT_ALLOWED,
                f"frame_max {self.frame_max} is under the minimum {_FRAME_MIN_SIZE}",
                method=method,
            )
        own = self._own_heartbeat
        if own is None:
            self.heartbeat = method.heartbeat
        else:  # 0 on either side switches heartbeats off, as the spec says
            self.heartbeat = min(own, method.heartbeat) if own and method.heartbeat else 0
        tune_ok = self._classes["connection.tune-ok"]
        self._queue_method(
            0,
            tune_ok(
                channel_max=self.channel_max, frame_max=self.frame_max, heartbeat=self.heartbeat
            ),
        )
        self._decoder.frame_max = self.frame_max
        open_ = self._classes["connection.open"]
        if any(f.attr == "insist" and not f.reserved for f in open_.FIELDS):  # 0-8
            self._queue_method(0, open_(virtual_host=self._vhost, insist=self._insist))
        else:
            self._queue_method(0, open_(virtual_host=self._vhost))
        self._state = _State.AWAIT_OPEN_OK

    def _on_open_ok(self, method: Method) -> None:
        self._open()
        self._events.append(
            ConnectionOpened(
                self.frame_max,
                self.channel_max,
                self.heartbeat,
                self.peer_properties,
                self.username,
            )
        )

    def _on_redirect(self, method: Any) -> None:
        # 0-8: the server sends the client to another host; this connection is over.
        self._state = _State.CLOSED
        self._events.append(MethodReceived(0, method))
        self._events.append(ConnectionClosed(0, f"redirected to {method.host}", by_peer=True))

    def _on_blocked(self, method: Any) -> None:
        self.blocked = True
        self._events.append(ConnectionBlocked(method.reason))

    def _on_unblocked(self, method: Method) -> None:
        self.blocked = False
        self._events.append(ConnectionUnblocked())

    # server side

    def _on_start_ok(self, method: Any) -> None:
        self.peer_properties = method.client_properties
        mechanism = method.mechanism
        if mechanism not in self._mechanisms:
            raise _PeerError(
                COMMAND_INVALID, f"unknown authentication mechanism {mechanism!r}", method=method
            )
        self._sasl_mechanism = mechanism
        if not method.response and mechanism != "EXTERNAL":
            # No initial response: ask for it with an empty challenge.
            secure = self._classes["connection.secure"]
            self._queue_method(0, secure(challenge=b""))
            self._state = _State.AWAIT_SECURE_OK
            return
        self._login(method.response)

    def _on_secure_ok(self, method: Any) -> None:
        self._login(method.response)

    def _login(self, response: bytes) -> None:
        username = self._authenticate(self._sasl_mechanism, bytes(response))
        if username is None:
            # A refused login is a normal outcome, not a protocol error: close and say why.
            text = self._reply_text(
                ACCESS_REFUSED,
                f"Login was refused using authentication mechanism {self._sasl_mechanism}",
            )
            self._start_close(ACCESS_REFUSED, text, 0, 0)
            return
        self.username = username
        tune = self._classes["connection.tune"]
        self._queue_method(
            0,
            tune(
                channel_max=self._own_channel_max,
                frame_max=self._own_frame_max,
                heartbeat=self._own_heartbeat or 0,
            ),
        )
        self._state = _State.AWAIT_TUNE_OK

    def _on_tune_ok(self, method: Any) -> None:
        frame_max, channel_max = method.frame_max, method.channel_max
        if frame_max and frame_max < _FRAME_MIN_SIZE:
            raise _PeerError(
                NOT_ALLOWED,
                f"frame_max {frame_max} is under the minimum {_FRAME_MIN_SIZE}",
                method=method,
            )
        if self._own_frame_max and frame_max > self._own_frame_max:
            raise _PeerError(
                NOT_ALLOWED,
                f"frame_max {frame_max} is over the {self._own_frame_max} proposed",
                method=method,
            )
        if self._own_channel_max and channel_max > self._own_channel_max:
            raise _PeerError(
                NOT_ALLOWED,
                f"channel_max {channel_max} is over the {self._own_channel_max} proposed",
                method=method,
            )
        # 0 from the client: no limit of its own, so the server's proposal stands.
        self.frame_max = frame_max or self._own_frame_max
        self.channel_max = channel_max or self._own_channel_max
        self.heartbeat = method.heartbeat
        self._decoder.frame_max = self.frame_max
        self._state = _State.AWAIT_OPEN

    def _on_open(self, method: Any) -> None:
        # 0-8's insist and the reserved fields 0-9-1 clients (.NET) still set are ignored:
        # this server redirects nobody.
        self.vhost = method.virtual_host
        self._queue_method(0, self._classes["connection.open-ok"]())
        self._open()
        self._events.append(
            ConnectionOpened(
                self.frame_max,
                self.channel_max,
                self.heartbeat,
                self.peer_properties,
                self.username,
            )
        )

    def _open(self) -> None:
        self._state = _State.OPEN
        self._channels[0] = _Channel(0, _ChannelState.OPEN)


def _decode_error(exc: AMQPDecodeError) -> _PeerError:
    reason = exc.reason if exc.field is None else f"{exc.reason} (field {exc.field})"
    error = _PeerError(
        exc.reply_code or COMMAND_INVALID, reason, channel=0 if exc.hard else exc.channel or 0
    )
    error.class_id, error.method_id = exc.class_id, exc.method_id
    return error
