"""SASL responses for connection.start-ok, and reading them back on the server side.

AMQP 0-9-1 clients log in with PLAIN (``\\0user\\0password``), AMQPLAIN (RabbitMQ's: a field
table's entries ``LOGIN`` and ``PASSWORD`` without the table's size prefix) or EXTERNAL (an
empty response: the server takes the identity from the TLS client certificate).
"""

from __future__ import annotations

from .errors import AMQPDecodeError
from .table import decode_table, encode_table

__all__ = ["MECHANISMS", "amqplain_response", "parse_response", "plain_response", "response_for"]

#: The mechanisms :func:`response_for` and :func:`parse_response` know.
MECHANISMS = ("PLAIN", "AMQPLAIN", "EXTERNAL")


def plain_response(username: str, password: str) -> bytes:
    """The PLAIN response (RFC 4616) with an empty authorization identity."""
    return b"\x00" + username.encode() + b"\x00" + password.encode()


def amqplain_response(username: str, password: str) -> bytes:
    """The AMQPLAIN response: a field table's entries, without its 4-byte size."""
    return encode_table({"LOGIN": username, "PASSWORD": password})[4:]


def response_for(mechanism: str, username: str, password: str) -> bytes:
    """The start-ok response for ``mechanism`` (one of :data:`MECHANISMS`)."""
    if mechanism == "PLAIN":
        return plain_response(username, password)
    if mechanism == "AMQPLAIN":
        return amqplain_response(username, password)
    if mechanism == "EXTERNAL":
        return b""
    raise ValueError(f"unknown SASL mechanism {mechanism!r}; known: {', '.join(MECHANISMS)}")


def parse_response(mechanism: str, response: bytes) -> tuple[str, str] | None:
    """The (username, password) in a PLAIN or AMQPLAIN response; None if it is malformed or
    the mechanism carries no password (EXTERNAL, unknown ones)."""
    try:
        if mechanism == "PLAIN":
            parts = response.split(b"\x00")
            if len(parts) != 3:
                return None
            return parts[1].decode(), parts[2].decode()
        if mechanism == "AMQPLAIN":
            data = len(response).to_bytes(4, "big") + response
            table, _ = decode_table(data, 0, len(data))
            login, password = table.get("LOGIN"), table.get("PASSWORD")
            if isinstance(login, bytes):
                login = login.decode()
            if isinstance(password, bytes):
                password = password.decode()
            if isinstance(login, str) and isinstance(password, str):
                return login, password
    except (UnicodeDecodeError, AMQPDecodeError, OverflowError):
        return None
    return None
