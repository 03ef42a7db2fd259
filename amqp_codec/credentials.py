"""Which method fields carry credentials: the one list every output redacts by.

``amqp-codec decode`` (text and JSON), the ``frames`` table of ``amqp-codec analyze``, its
report and ``summary.json`` all ask :func:`secret_fields` before showing a method's fields,
so a password never reaches a terminal, a log or a Parquet file unless asked for
(``decode --show-secrets``).

The spec XML does not mark secrets, so they are listed here by method and field name, in
every version the codec reads: the SASL ``response`` of connection.start-ok and
connection.secure-ok (PLAIN's is the password in clear) and the ``new-secret`` of
connection.update-secret (RabbitMQ's token refresh). A field of any method whose name says
it is a secret or a password (``secret``, ``password``, ``passwd``, ``token``) is treated the
same, so a spec or overlay that adds one is redacted without a change here.
"""

from __future__ import annotations

import re

from .base import Method

__all__ = ["REDACTED", "SECRET_FIELDS", "is_secret", "redacted_text", "secret_fields"]

#: What a redacted credential is replaced with.
REDACTED = "<redacted>"

#: (method name, field name) of every known credential field.
SECRET_FIELDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("connection.start-ok", "response"),
        ("connection.secure-ok", "response"),
        ("connection.update-secret", "new-secret"),
    }
)

_SECRET_NAME = re.compile(r"secret|password|passwd|token", re.IGNORECASE)


def is_secret(method_name: str, field_name: str) -> bool:
    """Whether the field ``field_name`` (spec name) of ``method_name`` holds a credential."""
    return (method_name, field_name) in SECRET_FIELDS or bool(_SECRET_NAME.search(field_name))


_by_type: dict[type[Method], frozenset[str]] = {}


def secret_fields(method: Method | type[Method]) -> frozenset[str]:
    """The spec names of ``method``'s fields that hold credentials (usually none)."""
    method_type = method if isinstance(method, type) else type(method)
    found = _by_type.get(method_type)
    if found is None:
        found = _by_type[method_type] = frozenset(
            s.name for s in method_type.FIELDS if is_secret(method_type.NAME, s.name)
        )
    return found


def redacted_text(value: object) -> str:
    """How decode's text output shows a redacted value: its size, not its content."""
    if isinstance(value, (bytes, str)):
        return f"{REDACTED} ({len(value)} bytes)" if isinstance(value, bytes) else REDACTED
    return REDACTED
