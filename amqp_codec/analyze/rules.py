"""What the receiving peer would refuse: the negotiated limits, the channels, the chassis.

A frame can decode cleanly and still be one a broker answers with connection.close (or a
client with its own close). Beside the decoding, :class:`PeerRules` checks one direction's
frames against what the connection negotiated and what the spec allows, and names the reply
code the receiving peer would send:

======================  =====  ===========================================================
kind                    reply  when
======================  =====  ===========================================================
``frame-too-large``     501    a frame (header and end octet included, as the spec counts)
                               larger than the negotiated frame_max
``wrong-peer``          503    a method the spec's chassis lets only the other peer send
``channel-over-max``    530    channel.open on a channel number above the negotiated
                               channel_max (the spec's limit; RabbitMQ instead counts the
                               channels open, and answers 530 when they reach it)
``channel-not-open``    504    a frame on a channel this side has not opened, or closed
                               (once, until the channel opens again)
``heartbeat-missed``    none   nothing sent for over twice the negotiated heartbeat: the peer
                               closes the socket without connection.close
======================  =====  ===========================================================

**Negotiated** means the client's connection.tune-ok: it holds for the client's frames after
its tune-ok and for the server's frames after its connection.tune (the server sends nothing
between tune and the tune-ok it waits for). The checks are for AMQP 0-8 and 0-9-1; the 0-10
draft's sessions and limits work differently and are not checked.

**Channels.** A client opens a channel by sending channel.open, a server by answering
channel.open-ok; each side's close-ok ends it for that side. Frames sent after the peer's
channel.close but before this side's close-ok are in flight, not a problem; so are frames
after this side's own channel.close, which the peer discards until its close-ok (as
RabbitMQ does) and which one direction alone cannot tell from frames after it. Where frames were lost (a gap, damage, a capture that began mid-connection) the
channels' state is unknown until each is opened or closed again: nothing is claimed.

**Regions.** A later region of a long stream does not know the channels' state or the time
of the frame before it (see :mod:`~amqp_codec.analyze.plan`). It checks what it can alone
and hands the rest to the driver as :class:`Pending` findings, which :func:`fold` decides
from the regions before, exactly as one pass over the whole stream would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..base import Method
from ..connection import sent_by
from ..errors import CHANNEL_ERROR, COMMAND_INVALID, FRAME_ERROR, NOT_ALLOWED
from .pickling import pickled_by_fields

__all__ = [
    "Edge",
    "Finding",
    "Negotiated",
    "Pending",
    "PeerRules",
    "fold",
    "negotiated_in",
    "silence_at_end",
]

FRAME_TOO_LARGE = "frame-too-large"
WRONG_PEER = "wrong-peer"
CHANNEL_OVER_MAX = "channel-over-max"
CHANNEL_NOT_OPEN = "channel-not-open"
HEARTBEAT_MISSED = "heartbeat-missed"

# A channel's state as one side sees it.
OPEN = "open"
CLOSING = "closing"  # this side sent channel.close: the peer discards frames until close-ok
CLOSED = "closed"
REPORTED = "reported"  # closed, and a frame on it was already reported
LOST = "lost"  # frames were lost: unknown until opened or closed again
INHERIT = "inherit"  # a later region: whatever the regions before left
PENDING = "pending"  # a later region used it before knowing: the driver decides
#: The channel states in which a content frame is not refused (see PeerRules._channel).
_CONTENT_PASSES: frozenset[str | None] = frozenset({OPEN, CLOSING, REPORTED, LOST, PENDING})

_OPENS = {"client": "channel.open", "server": "channel.open-ok"}
_CONNECTION_ENDS = frozenset({"connection.close", "connection.close-ok"})


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class Negotiated:
    """The limits of the client's connection.tune-ok (0: none)."""

    frame_max: int
    channel_max: int
    heartbeat: int


def negotiated_in(method: Method | None) -> Negotiated | None:
    """The limits a connection.tune-ok states, or None for anything else."""
    if method is None or method.NAME != "connection.tune-ok":
        return None
    return Negotiated(
        int(getattr(method, "frame_max", 0) or 0),
        int(getattr(method, "channel_max", 0) or 0),
        int(getattr(method, "heartbeat", 0) or 0),
    )


@dataclass(frozen=True, slots=True)
class Finding:
    """A frame the receiving peer would refuse (or a silence it would not stand)."""

    kind: str
    reply_code: int | None
    detail: str
    channel: int | None = None
    method: str | None = None
    depends: bool = False
    """Holds only if the regions before left things so: the caller makes it a
    :class:`Pending` for the driver."""
    since: float | None = None
    """A later region's silence: the time of the frame before (None: the region's first
    frame, whose previous frame is in the regions before)."""


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class Pending:
    """A finding that holds only if the regions before left things so (see :func:`fold`)."""

    kind: str
    """:data:`CHANNEL_NOT_OPEN`: if the channel was closed; :data:`HEARTBEAT_MISSED`: if no
    connection.close came before, and for a region's first frame, if the frame before it
    came more than twice the heartbeat earlier."""
    offset: int
    channel: int | None
    ts: float
    since: float | None
    row: tuple[Any, ...]
    """The ``problems`` row to write if it holds; a silence's detail is written by
    :func:`fold`, which knows how long it was."""


@dataclass(slots=True)
class Edge:
    """What a region's rules leave for the driver (part of :class:`~.streams.Edge`)."""

    default: str = CLOSED
    """State of the channels not in :attr:`channels` at the region's end."""
    channels: dict[int, str] = field(default_factory=dict)
    pending: list[Pending] = field(default_factory=list)
    last_ts: float | None = None
    """Timestamp of the region's last frame while the limits held (since frames were last
    lost, when :attr:`default` is :data:`LOST`)."""
    closed: bool = False
    """This side sent connection.close or close-ok: silence after it is expected."""
    heartbeat: int = 0
    """The heartbeat in force at the region's end."""


class PeerRules:
    """The checks of one direction's frames (one region of them).

    Args:
        direction: ``client`` or ``server``.
        negotiated: the client's tune-ok, where the caller knows it (the server side needs
            it; the client side reads its own tune-ok as it goes).
        in_force: the limits hold from the first frame (a later region, whose stream's
            tune or tune-ok came before it); else from this side's tune or tune-ok.
        later: a later region: channel state, the previous frame's time and whether
            connection.close came before are unknown here.
    """

    def __init__(
        self,
        direction: str,
        negotiated: Negotiated | None = None,
        *,
        in_force: bool = False,
        later: bool = False,
    ) -> None:
        self.direction = direction
        self.negotiated = negotiated
        self.limits = negotiated if in_force else None
        self.later = later
        self.edge = Edge(default=INHERIT if later else CLOSED)
        if self.limits is not None:
            self.edge.heartbeat = self.limits.heartbeat
        self._last_ts: float | None = None
        self._first = True
        self._plain_kinds: dict[type[Method], bool] = {}  # see _plain

    def forget(self) -> None:
        """Frames were lost: the channels' state is unknown from here."""
        self.edge.default = LOST
        self.edge.channels.clear()
        # Nor can a silence be measured across the loss.
        self._last_ts = self.edge.last_ts = None
        self._first = False

    def frame(
        self,
        size: int,
        channel: int | None,
        method: Method | None,
        ts: float | None,
        *,
        checked: bool = True,
    ) -> list[Finding]:
        """Check one frame of ``size`` bytes (``checked``: of a version these rules apply to)."""
        edge = self.edge
        limits = self.limits
        if (
            checked
            and limits is not None
            and ts is not None
            and not self._first
            and channel
            and edge.channels.get(channel) in _CONTENT_PASSES
            and (method is None or self._plain(method))
        ):
            # The usual frame, content or a method on a channel in use (not of the connection or
            # channel class, whose methods change the state checked here) sent by a side that
            # may send it, takes this path when no check can fail: within frame_max, and no
            # heartbeat missed since the frame before.
            last, heartbeat = self._last_ts, limits.heartbeat
            if (not limits.frame_max or size <= limits.frame_max) and (
                not heartbeat or edge.closed or last is None or ts - last <= 2 * heartbeat
            ):
                self._last_ts = edge.last_ts = ts
                return []
        out: list[Finding] = []
        name = None if method is None else method.NAME
        first, self._first = self._first, False
        if checked and limits is not None and limits.heartbeat and ts is not None:
            out.extend(self._heartbeat(first, ts, limits.heartbeat))
        if limits is not None and ts is not None:
            self._last_ts = edge.last_ts = ts
        if not checked:
            return out
        if limits is not None and limits.frame_max and size > limits.frame_max:
            out.append(
                Finding(
                    FRAME_TOO_LARGE,
                    FRAME_ERROR,
                    f"a frame of {size} bytes is over the negotiated frame_max {limits.frame_max}",
                    channel,
                    name,
                )
            )
        if method is not None and self.direction not in sent_by(method):
            senders = " and ".join(sorted(sent_by(method)))
            out.append(
                Finding(
                    WRONG_PEER,
                    COMMAND_INVALID,
                    f"{name} is sent by the {senders} only, not the {self.direction}",
                    channel,
                    name,
                )
            )
        if channel:
            out.extend(self._channel(channel, name, limits))
        if name is not None and channel == 0:
            if name in _CONNECTION_ENDS:
                edge.closed = True
            elif self.limits is None:
                self._tuned(name, method)
        return out

    def _plain(self, method: Method) -> bool:
        """Whether ``method`` on a channel in use can fail no check but the heartbeat and
        frame_max: this side may send it, and it is not of the connection or channel class."""
        kind = type(method)
        plain = self._plain_kinds.get(kind)
        if plain is None:
            sent = self.direction in sent_by(method)
            plain = self._plain_kinds[kind] = sent and method.CLASS_ID not in (10, 20)
        return plain

    def _heartbeat(self, first: bool, ts: float, heartbeat: int) -> list[Finding]:
        if self.edge.closed:
            return []
        if self.later:  # whether connection.close came before is the driver's to say
            if first or (self._last_ts is not None and ts - self._last_ts > 2 * heartbeat):
                since = None if first else self._last_ts
                return [Finding(HEARTBEAT_MISSED, None, "", depends=True, since=since)]
            return []
        if self._last_ts is not None and ts - self._last_ts > 2 * heartbeat:
            return [_silence(self.direction, ts - self._last_ts, heartbeat)]
        return []

    def _channel(self, channel: int, name: str | None, limits: Negotiated | None) -> list[Finding]:
        states = self.edge.channels
        if name is None and states.get(channel) == OPEN:
            return []  # the usual case: content on an open channel
        if name == _OPENS[self.direction]:
            states[channel] = OPEN
            if name == "channel.open" and limits and 0 < limits.channel_max < channel:
                return [
                    Finding(
                        CHANNEL_OVER_MAX,
                        NOT_ALLOWED,
                        f"channel {channel} is over the negotiated channel_max "
                        f"{limits.channel_max}",
                        channel,
                        name,
                    )
                ]
            return []
        if name == "channel.close":
            states[channel] = CLOSING
            return []
        if name == "channel.close-ok":
            states[channel] = CLOSED
            return []
        if name == "channel.open" or name == "channel.open-ok":
            return []  # sent by the wrong peer: reported as such, changes nothing here
        state = states.get(channel, self.edge.default)
        if state == CLOSED:
            states[channel] = REPORTED
            return [not_open(channel, name)]
        if state == INHERIT:
            states[channel] = PENDING
            return [replace(not_open(channel, name), depends=True)]
        return []

    def _tuned(self, name: str, method: Method | None) -> None:
        """This side's tune (server) or tune-ok (client): the limits hold from the next frame."""
        if self.direction == "client" and name == "connection.tune-ok":
            self.limits = negotiated_in(method)
        elif self.direction == "server" and name == "connection.tune":
            self.limits = self.negotiated
        if self.limits is not None:
            self.edge.heartbeat = self.limits.heartbeat


def not_open(channel: int, name: str | None) -> Finding:
    what = name or "a content frame"
    return Finding(
        CHANNEL_NOT_OPEN,
        CHANNEL_ERROR,
        f"{what} on channel {channel}, which is not open",
        channel,
        name,
    )


def _silence(direction: str, seconds: float, heartbeat: int) -> Finding:
    return Finding(
        HEARTBEAT_MISSED,
        None,
        f"the {direction} sent nothing for {seconds:.1f} s, over twice the negotiated "
        f"heartbeat of {heartbeat} s: its peer closes the connection",
    )


def fold(
    direction: str, edges: Sequence[Edge], owners: Iterable[int]
) -> tuple[list[tuple[Any, ...]], dict[int, str], Edge]:
    """Decide the later regions' :class:`Pending` findings from the regions before them.

    ``edges``: every region's rules edge, in stream order; ``owners``: the indexes of the
    regions that decoded frames (see :func:`~amqp_codec.analyze.plan.check_stream`). Returns
    the ``problems`` rows that hold, the ``problem`` text of each frame (by offset) that a
    pending channel finding holds for, and the stream's end as one region would have left
    it (for :func:`silence_at_end`).
    """
    rows: list[tuple[Any, ...]] = []
    texts: dict[int, str] = {}
    default, states = CLOSED, dict[int, str]()
    last_ts: float | None = None
    closed = False
    heartbeat = 0
    for index in sorted(owners):
        edge = edges[index]
        for pending in edge.pending:
            if pending.kind == CHANNEL_NOT_OPEN:
                if states.get(pending.channel or 0, default) == CLOSED:
                    rows.append(pending.row)
                    texts[pending.offset] = str(pending.row[-1])
                continue
            since = last_ts if pending.since is None else pending.since
            if closed or since is None:
                continue
            seconds = pending.ts - since
            if edge.heartbeat and seconds > 2 * edge.heartbeat:
                rows.append(
                    (*pending.row[:-1], _silence(direction, seconds, edge.heartbeat).detail)
                )
        if index == 0 or edge.default == LOST:
            default = edge.default
            states = {c: (LOST if s == PENDING else s) for c, s in edge.channels.items()}
        else:
            merged = dict(states)
            for channel, state in edge.channels.items():
                if state == PENDING:
                    before = states.get(channel, default)
                    merged[channel] = REPORTED if before == CLOSED else before
                else:
                    merged[channel] = state
            states = merged
        if edge.last_ts is not None or edge.default == LOST:
            last_ts = edge.last_ts
        closed = closed or edge.closed
        heartbeat = edge.heartbeat or heartbeat
    return rows, texts, Edge(last_ts=last_ts, closed=closed, heartbeat=heartbeat)


def silence_at_end(direction: str, edge: Edge | None, end_ts: float | None) -> Finding | None:
    """A side silent from its last frame to the connection's last packet, where the
    heartbeat should have spoken (``edge``: its rules at the end of its stream)."""
    if edge is None or edge.closed or not edge.heartbeat or edge.last_ts is None:
        return None
    if end_ts is None or end_ts - edge.last_ts <= 2 * edge.heartbeat:
        return None
    return _silence(direction, end_ts - edge.last_ts, edge.heartbeat)
