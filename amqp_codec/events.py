"""What a :class:`~amqp_codec.Connection` tells its user: one frozen dataclass per event.

``Connection.receive_data`` and ``Connection.tick`` return lists of these, in the order the
peer's frames produced them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .base import Method, Properties
from .errors import ReplyError, reply_error
from .frames import body_repr

__all__ = [
    "ChannelClosed",
    "ChannelOpened",
    "ConnectionBlocked",
    "ConnectionClosed",
    "ConnectionOpened",
    "ConnectionUnblocked",
    "Event",
    "HeartbeatTimeout",
    "MessageReceived",
    "MethodReceived",
    "PublishConfirmed",
]


@dataclass(frozen=True, slots=True)
class ConnectionOpened:
    """The handshake is over: channels may be opened.

    ``frame_max``, ``channel_max`` and ``heartbeat`` are the negotiated values (0: no limit, no
    heartbeat). ``peer_properties`` are the server's properties (client side) or the client's
    (server side); ``username`` is who logged in (server side: what ``authenticate`` returned).
    """

    frame_max: int
    channel_max: int
    heartbeat: int
    peer_properties: Mapping[str, Any]
    username: str


@dataclass(frozen=True, slots=True)
class ChannelOpened:
    """A channel is open: client side once channel.open-ok arrived, server side once the
    layer answered the client's channel.open."""

    channel: int


@dataclass(frozen=True, slots=True)
class MethodReceived:
    """A method the layer does not handle itself, without content (declare-ok, consume-ok,
    basic.ack from a consumer, basic.cancel, channel.flow, ...)."""

    channel: int
    method: Method


@dataclass(frozen=True, slots=True, repr=False)
class MessageReceived:
    """A content method with its content assembled: basic.publish (server side),
    basic.deliver, basic.get-ok and basic.return (client side). Its repr shows the body's
    first bytes."""

    channel: int
    method: Method
    properties: Properties
    body: bytes

    def __repr__(self) -> str:
        return (
            f"MessageReceived(channel={self.channel}, method={self.method!r}, "
            f"properties={self.properties!r}, body={body_repr(self.body)})"
        )


@dataclass(frozen=True, slots=True)
class PublishConfirmed:
    """The server confirmed publishes on a channel in confirm mode (client side).

    ``ack`` is False for a basic.nack. With ``multiple``, every unconfirmed publish up to and
    including ``delivery_tag`` is confirmed.
    """

    channel: int
    delivery_tag: int
    multiple: bool
    ack: bool


@dataclass(frozen=True, slots=True)
class ChannelClosed:
    """A channel closed and its number is free again.

    ``by_peer``: the peer sent channel.close (the layer answered close-ok); otherwise this side
    closed it (``close_channel`` or a soft error) and the peer's close-ok arrived.
    """

    channel: int
    reply_code: int
    reply_text: str
    by_peer: bool
    class_id: int = 0
    method_id: int = 0

    def exception(self) -> ReplyError:
        """The close as an exception (:class:`~amqp_codec.errors.NotFound` for 404, ...)."""
        return reply_error(self.reply_code, self.reply_text, self.class_id, self.method_id)


@dataclass(frozen=True, slots=True)
class ConnectionClosed:
    """The connection is over; close the socket once ``data_to_send()`` is written.

    ``by_peer``: the peer sent connection.close (the layer answered close-ok) or closed the
    socket (``reply_code`` 0 when it did so without a close handshake); otherwise this side
    closed it (``close()`` or a hard error) and the close-ok arrived, or the socket closed after
    this side's connection.close.
    """

    reply_code: int
    reply_text: str
    by_peer: bool
    class_id: int = 0
    method_id: int = 0

    def exception(self) -> ReplyError:
        """The close as an exception (:class:`~amqp_codec.errors.AccessRefused` for 403, ...)."""
        return reply_error(self.reply_code, self.reply_text, self.class_id, self.method_id)


@dataclass(frozen=True, slots=True)
class ConnectionBlocked:
    """The server stopped reading from this connection (RabbitMQ's resource alarms)."""

    reason: str


@dataclass(frozen=True, slots=True)
class ConnectionUnblocked:
    """The server reads from this connection again."""


@dataclass(frozen=True, slots=True)
class HeartbeatTimeout:
    """Nothing arrived for two heartbeat intervals: the peer is dead. The connection is closed;
    drop the socket."""


Event = (
    ConnectionOpened
    | ChannelOpened
    | MethodReceived
    | MessageReceived
    | PublishConfirmed
    | ChannelClosed
    | ConnectionClosed
    | ConnectionBlocked
    | ConnectionUnblocked
    | HeartbeatTimeout
)
