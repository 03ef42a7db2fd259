"""The exceptions the codec raises.

Everything raised for bad *incoming* bytes derives from :class:`AMQPDecodeError`; everything
raised for a bad *outgoing* value is an :class:`AMQPEncodeError`. Nothing else escapes the
decoder or the encoders for bad input.

A decode error already knows how the connection should answer: :attr:`AMQPDecodeError.reply_code`
is the AMQP reply code, :attr:`AMQPDecodeError.hard` tells whether it closes the connection
(``connection.close``) or only the channel (``channel.close``), and
:func:`amqp_codec.close_for_error` builds that method.
"""

from __future__ import annotations

from typing import Any

# AMQP 0-9-1 reply codes the decoder answers with (values from the spec's constants).
FRAME_ERROR = 501
SYNTAX_ERROR = 502
COMMAND_INVALID = 503
CHANNEL_ERROR = 504
UNEXPECTED_FRAME = 505
PRECONDITION_FAILED = 406
ACCESS_REFUSED = 403
NOT_ALLOWED = 530

# Soft errors close only the channel; everything else closes the connection.
_SOFT_REPLY_CODES = frozenset({311, 312, 313, 403, 404, 405, 406})


class AMQPError(Exception):
    """Root of every exception this library raises on purpose."""


class AMQPDecodeError(AMQPError):
    """The peer sent bytes that are not valid AMQP.

    Attributes:
        reply_code: the AMQP reply code to answer with (501 frame error, 502 syntax error,
            503 command invalid, 504 channel error, 505 unexpected frame, 406 precondition
            failed), or ``None`` when the right answer is a protocol header rather than a close
            (an unsupported protocol version).
        offset: byte offset in the stream where the problem was found, when known.
        channel: the frame's channel, when known.
        class_id, method_id: the method being decoded, when known (0 otherwise).
        field: the field (or the path inside a field table, such as
            ``headers["x-death"][0]["count"]``) that was bad, when known.
        reason: the message without the location details.
    """

    default_reply_code: int | None = SYNTAX_ERROR

    def __init__(
        self,
        reason: str,
        *,
        reply_code: int | None = None,
        offset: int | None = None,
        channel: int | None = None,
        class_id: int = 0,
        method_id: int = 0,
        field: str | None = None,
    ) -> None:
        self.reason = reason
        self.reply_code = self.default_reply_code if reply_code is None else reply_code
        self.offset = offset
        self.channel = channel
        self.class_id = class_id
        self.method_id = method_id
        self.field = field
        super().__init__(reason)

    @property
    def hard(self) -> bool:
        """True when the error closes the whole connection rather than one channel."""
        return self.reply_code not in _SOFT_REPLY_CODES

    def located(
        self,
        *,
        offset: int | None = None,
        channel: int | None = None,
        class_id: int | None = None,
        method_id: int | None = None,
    ) -> AMQPDecodeError:
        """Fill in location details that were not known where the error was raised."""
        if self.offset is None and offset is not None:
            self.offset = offset
        if self.channel is None and channel is not None:
            self.channel = channel
        if not self.class_id and class_id:
            self.class_id = class_id
        if not self.method_id and method_id:
            self.method_id = method_id
        return self

    def __str__(self) -> str:
        parts = [self.reason]
        where = []
        if self.field is not None:
            where.append(f"field {self.field}")
        if self.class_id:
            where.append(f"method {self.class_id}.{self.method_id}")
        if self.channel is not None:
            where.append(f"channel {self.channel}")
        if self.offset is not None:
            where.append(f"stream offset {self.offset}")
        if where:
            parts.append(f" ({', '.join(where)})")
        if self.reply_code is not None:
            parts.append(f" [reply code {self.reply_code}]")
        return "".join(parts)


class FrameError(AMQPDecodeError):
    """Bad framing: wrong frame-end octet, unknown frame type, oversized frame (501)."""

    default_reply_code = FRAME_ERROR


class FrameSyntaxError(AMQPDecodeError):
    """A frame's payload does not match the method's or table's layout (502)."""

    default_reply_code = SYNTAX_ERROR


class CommandInvalidError(AMQPDecodeError):
    """An unknown method, or a method on a channel where it is not allowed (503)."""

    default_reply_code = COMMAND_INVALID


class UnexpectedFrameError(AMQPDecodeError):
    """A frame that breaks the method/header/body sequence on its channel (505)."""

    default_reply_code = UNEXPECTED_FRAME


class LimitExceededError(AMQPDecodeError):
    """The peer exceeded a configured limit (frame size 501, body size 406, table depth 502)."""


class UnsupportedProtocolError(AMQPDecodeError):
    """The stream speaks a protocol version this codec was not generated for.

    ``reply_code`` is ``None``: the AMQP answer is to send the supported protocol header and
    close the socket.
    """

    default_reply_code = None


class AMQPEncodeError(AMQPError, ValueError):
    """A value given to an encoder cannot be put on the wire as asked.

    Attributes:
        field: the field or table path that held the bad value.
        reason: the message without the location.
    """

    def __init__(self, reason: str, *, field: str | None = None) -> None:
        self.reason = reason
        self.field = field
        super().__init__(reason)

    def __str__(self) -> str:
        if self.field is None:
            return self.reason
        return f"{self.reason} (field {self.field})"


# -- the connection layer (amqp_codec.connection) ------------------------------------------


class LocalProtocolError(AMQPError):
    """The caller asked the connection for something the protocol does not allow here.

    A method on a channel that is not open, a server-only method from a client, a second
    synchronous request before the first one's reply, an action after the connection closed.
    Nothing was queued and the connection's state is unchanged.
    """


class RemoteProtocolError(AMQPError):
    """The peer broke the protocol.

    The answer is already queued (fetch it with ``data_to_send()``): a ``connection.close`` for
    a hard error, a ``channel.close`` for a soft one, or this side's protocol header for an
    unsupported one (``reply_code`` is then ``None``; close the socket after sending it).

    Attributes:
        reply_code: the AMQP reply code of the close that was queued.
        channel: the channel that the soft error closes; 0 for a hard error.
        events: the events the same ``receive_data`` call produced besides the error; handle
            them as if the call had returned them. After a soft error the rest of the received
            bytes were still processed; after a hard one they were dropped, as the spec says.
    """

    def __init__(
        self,
        reason: str,
        *,
        reply_code: int | None,
        channel: int = 0,
        events: list[Any] | None = None,
    ) -> None:
        self.reason = reason
        self.reply_code = reply_code
        self.channel = channel
        self.events: list[Any] = events if events is not None else []
        super().__init__(reason)

    def __str__(self) -> str:
        return (
            self.reason
            if self.reply_code is None
            else f"{self.reason} [reply code {self.reply_code}]"
        )


class ReplyError(AMQPError):
    """A close the peer sent (or this side sent), as an exception to raise in your code.

    :meth:`amqp_codec.events.ChannelClosed.exception` and
    :meth:`amqp_codec.events.ConnectionClosed.exception` build one; :data:`REPLY_ERRORS` holds a
    subclass per reply code (404 :class:`NotFound`, 403 :class:`AccessRefused`,
    406 :class:`PreconditionFailed`, ...), :class:`ReplyError` itself serves other codes.
    """

    reply_code: int = 0
    soft: bool = False
    """True for the codes that close only a channel."""

    def __init__(
        self, reply_code: int, reply_text: str = "", class_id: int = 0, method_id: int = 0
    ) -> None:
        self.reply_code = reply_code
        self.reply_text = reply_text
        self.class_id = class_id
        self.method_id = method_id
        super().__init__(f"{reply_code} {reply_text}".strip())


def _reply_error(name: str, code: int, doc: str) -> type[ReplyError]:
    return type(
        name,
        (ReplyError,),
        {
            "__doc__": f"Reply code {code}: {doc}",
            "reply_code": code,
            "soft": code in _SOFT_REPLY_CODES,
        },
    )


ContentTooLarge = _reply_error("ContentTooLarge", 311, "content too large.")
NoRoute = _reply_error("NoRoute", 312, "no route for a mandatory message.")
NoConsumers = _reply_error("NoConsumers", 313, "no consumers for an immediate message.")
ConnectionForced = _reply_error("ConnectionForced", 320, "an operator closed the connection.")
InvalidPath = _reply_error("InvalidPath", 402, "unknown virtual host.")
AccessRefused = _reply_error("AccessRefused", 403, "access refused.")
NotFound = _reply_error("NotFound", 404, "the entity does not exist.")
ResourceLocked = _reply_error("ResourceLocked", 405, "another connection holds the entity.")
PreconditionFailed = _reply_error("PreconditionFailed", 406, "a precondition failed.")
# 501, 502 and 540 are prefixed: FrameError is the decoder's 501 and the others shadow builtins.
AMQPFrameError = _reply_error("AMQPFrameError", 501, "frame error.")
AMQPSyntaxError = _reply_error("AMQPSyntaxError", 502, "syntax error.")
CommandInvalid = _reply_error("CommandInvalid", 503, "command invalid.")
ChannelError = _reply_error("ChannelError", 504, "channel error.")
UnexpectedFrame = _reply_error("UnexpectedFrame", 505, "unexpected frame.")
ResourceError = _reply_error("ResourceError", 506, "resource error.")
NotAllowed = _reply_error("NotAllowed", 530, "not allowed.")
AMQPNotImplemented = _reply_error("AMQPNotImplemented", 540, "not implemented.")
InternalError = _reply_error("InternalError", 541, "internal error.")

#: Reply code → its :class:`ReplyError` subclass.
REPLY_ERRORS: dict[int, type[ReplyError]] = {
    cls.reply_code: cls
    for cls in (
        ContentTooLarge,
        NoRoute,
        NoConsumers,
        ConnectionForced,
        InvalidPath,
        AccessRefused,
        NotFound,
        ResourceLocked,
        PreconditionFailed,
        AMQPFrameError,
        AMQPSyntaxError,
        CommandInvalid,
        ChannelError,
        UnexpectedFrame,
        ResourceError,
        NotAllowed,
        AMQPNotImplemented,
        InternalError,
    )
}


def reply_error(
    reply_code: int, reply_text: str = "", class_id: int = 0, method_id: int = 0
) -> ReplyError:
    """The :class:`ReplyError` (subclass) instance for a close's reply code."""
    cls = REPLY_ERRORS.get(reply_code, ReplyError)
    return cls(reply_code, reply_text, class_id, method_id)
