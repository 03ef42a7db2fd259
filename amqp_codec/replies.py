"""Turn a decode error into the close method a peer should send in answer."""

from __future__ import annotations

from types import ModuleType

from .decoder import _resolve_spec
from .errors import AMQPDecodeError
from .frames import MethodFrame
from .protocol import ProtocolSpec, default_spec
from .wire010.frames import DraftMethodFrame

__all__ = ["close_for_error"]


def close_for_error(
    error: AMQPDecodeError, spec: ProtocolSpec | ModuleType | None = None
) -> MethodFrame | DraftMethodFrame:
    """The ``connection.close`` (hard errors) or ``channel.close`` (soft errors) to send.

    For 99-0 the soft-error answer is ``session.closed``, in a 99-0 frame.

    The reply text is ``"<REPLY-NAME> - <reason>"``, shortened at a character boundary to the
    255 bytes a short string holds. Raises ``ValueError`` for an error whose answer is not a
    close (an unsupported protocol version: send your protocol header instead).
    """
    if error.reply_code is None:
        raise ValueError("this error is answered with a protocol header, not a close method")
    resolved = _resolve_spec(spec) or default_spec()
    name = (
        resolved.reply_names.get(error.reply_code, str(error.reply_code)).upper().replace("-", "_")
    )
    text = f"{name} - {error.reason}".encode()[:255].decode("utf-8", "ignore")
    soft = error.reply_code in resolved.soft_errors and error.channel
    cls = resolved.channel_close if soft else resolved.connection_close
    values = {
        "reply_code": error.reply_code,
        "reply_text": text,
        "class_id": error.class_id,
        "method_id": error.method_id,
    }
    # 99-0's session.closed has no class and method ids: pass only the fields the close has.
    attrs = {f.attr for f in cls.FIELDS}
    method = cls(**{k: v for k, v in values.items() if k in attrs})
    channel = error.channel if soft else 0
    if resolved.wire_format != "0-9":
        return DraftMethodFrame(channel, method)  # type: ignore[arg-type]
    return MethodFrame(channel, method)  # type: ignore[arg-type]
