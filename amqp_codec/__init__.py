"""amqp-codec: a generated, typed, sans-IO AMQP codec.

Bytes in, typed frames out; typed objects in, bytes out::

    from amqp_codec import FrameDecoder, NEED_DATA, encode_frame
    from amqp_codec.v0_9_1 import Basic, BasicProperties

    decoder = FrameDecoder()          # detects the protocol version from the stream
    decoder.receive_data(data)
    while (frame := decoder.next_frame()) is not NEED_DATA:
        ...

The generated protocol packages (``amqp_codec.v0_9_1``) hold the method and property
classes; this package holds the frame layer, field tables and errors they share.
"""

from typing import TYPE_CHECKING

# The generated protocol packages, so `amqp_codec.v0_9_1` works after `import amqp_codec`.
# The default version is imported now; the others when first named (see __getattr__ below).
from . import events, v0_9_1
from .assembly import Message, MessageAssembler
from .base import FieldSpec, Method, Properties
from .connection import Connection
from .decoder import (
    DEFAULT_MAX_BODY_SIZE,
    DEFAULT_MAX_FRAME_SIZE,
    NEED_DATA,
    FrameDecoder,
    NeedData,
    decode_method,
)
from .errors import (
    AMQPDecodeError,
    AMQPEncodeError,
    AMQPError,
    CommandInvalidError,
    FrameError,
    FrameSyntaxError,
    LimitExceededError,
    LocalProtocolError,
    RemoteProtocolError,
    ReplyError,
    UnexpectedFrameError,
    UnsupportedProtocolError,
)
from .frames import (
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    encode_frame,
    encode_message,
)
from .message_decoder import MessageDecoder
from .protocol import ProtocolSpec
from .replies import close_for_error
from .table import DEFAULT_MAX_TABLE_DEPTH, FieldArray, FieldTable, Tagged, Timestamp

if TYPE_CHECKING:
    from types import ModuleType

    from . import v0_8, v0_10_draft

__version__ = "0.1.0"

#: Generated packages imported when first named: each costs about a tenth of a second to
#: import (its method classes are made at import time), paid by every process that imports
#: the codec, most of which (a broker, a client, a Spark worker) never meet that version. The
#: decoder imports a version's package itself when a stream turns out to speak it.
_ON_FIRST_USE = frozenset({"v0_8", "v0_10_draft"})

if not TYPE_CHECKING:  # type checkers see the imports above, not a catch-all

    def __getattr__(name: str) -> "ModuleType":
        if name in _ON_FIRST_USE:
            import importlib

            return importlib.import_module(f"{__name__}.{name}")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_MAX_BODY_SIZE",
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_MAX_TABLE_DEPTH",
    "NEED_DATA",
    "AMQPDecodeError",
    "AMQPEncodeError",
    "AMQPError",
    "CommandInvalidError",
    "Connection",
    "ContentBodyFrame",
    "ContentHeaderFrame",
    "FieldArray",
    "FieldSpec",
    "FieldTable",
    "Frame",
    "FrameDecoder",
    "FrameError",
    "FrameSyntaxError",
    "HeartbeatFrame",
    "LimitExceededError",
    "LocalProtocolError",
    "Message",
    "MessageAssembler",
    "MessageDecoder",
    "Method",
    "MethodFrame",
    "NeedData",
    "Properties",
    "ProtocolHeader",
    "ProtocolSpec",
    "RemoteProtocolError",
    "ReplyError",
    "Tagged",
    "Timestamp",
    "UnexpectedFrameError",
    "UnsupportedProtocolError",
    "close_for_error",
    "decode_method",
    "encode_frame",
    "encode_message",
    "events",
    "v0_8",
    "v0_9_1",
    "v0_10_draft",
]
