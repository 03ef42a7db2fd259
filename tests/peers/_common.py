"""Pieces shared by the peer adapters."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from amqp_codec.table import Timestamp

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class PeerFrame:
    """One frame as a peer decoded it, in a shape common to all peers.

    ``kind`` is "method", "header", "body", "heartbeat" or "protocol-header". ``value`` is the
    peer's method object (method), a :class:`PeerHeader` (header), the payload bytes (body),
    the peer's object (protocol-header) or None (heartbeat).
    """

    kind: str
    channel: int
    value: Any
    size: int  # bytes the peer consumed for this frame


@dataclass(frozen=True)
class PeerHeader:
    """A content header as a peer decoded it; ``weight`` is None if the peer drops it."""

    class_id: int
    weight: int | None
    body_size: int
    properties: Any


def datetime_to_timestamp(value: dt.datetime) -> Timestamp:
    """Both peers hand out AMQP timestamps as ``datetime``; we keep the wire's integer seconds.

    A naive datetime is taken as UTC, as both peers do when encoding one.
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return Timestamp((value - _EPOCH) // dt.timedelta(seconds=1))
