"""What a stream's first bytes show: its version, its tuned frame_max and where the handshake
tunes it.

The first pass keeps each stream's first :data:`~.scan.HEAD_BYTES` bytes; the plan needs
what they show for every stream before any region can be dissected. :func:`head_facts`
works that out in the scan's own task, in parallel, rather than in the driver between the
two passes: on one file of 20,417 short connections, dissecting every head there took 2.8 s
of the plan's 3.8 s, alone in the driver while the executors waited.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..frames import FRAME_END, FRAME_METHOD, FRAME_OVERHEAD, MethodFrame, unpack_frame_header
from ..inspect.dissector import Event, FrameEvent, StreamDissector
from ..v0_9_1 import Connection
from .pickling import pickled_by_fields
from .rules import Negotiated, negotiated_in

__all__ = ["NO_FACTS", "TUNED_BY", "HeadFacts", "head_facts", "head_negotiation", "negotiation"]

#: The frame after which each side's frames answer to the negotiated limits.
TUNED_BY = {"client": "connection.tune-ok", "server": "connection.tune"}
_TUNING_SIDE = {name: side for side, name in TUNED_BY.items()}


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class HeadFacts:
    """What one stream's head shows, whichever side sent it."""

    spec: str | None
    """The protocol version the dissector found (None: none)."""
    tuned_frame_max: int
    """The frame_max of the head's first tune or tune-ok (0: none)."""
    tuned_at: dict[str, int]
    """Where the head's first :data:`TUNED_BY` frame (on channel 0) starts, under the side
    that sends it (the head's own side, in a stream that keeps to the protocol)."""
    negotiated: Negotiated | None
    """The limits of the head's first tune-ok: the client's, if this is the client's head."""
    size: int
    """The head's length: less than :data:`~.scan.HEAD_BYTES` when the stream (or the part
    of it that its scan read) ended sooner."""


NO_FACTS = HeadFacts(None, 0, {}, None, 0)


#: Bytes of a head its dissector is given at a time: it stops at the first tuning frame.
HEAD_STEP = 512

#: Facts a scan task keeps, by the head bytes that show them (see :func:`head_facts`).
KNOWN_HEADS_MAX = 256

#: The first four payload bytes of connection.tune and tune-ok (their class and method ids,
#: the same in 0-9-1 and 0-8).
_TUNING_METHODS = tuple(
    struct.pack(">HH", method.CLASS_ID, method.METHOD_ID)
    for method in (Connection.Tune, Connection.TuneOk)
)


def head_facts(head: bytes | None, known: dict[bytes, HeadFacts] | None = None) -> HeadFacts:
    """What ``head``, a stream's first bytes, shows, as far as its first :data:`TUNED_BY`
    frame of either side.

    Dissecting stops there: the tuning frame lies a few hundred bytes into a head of 8 KiB,
    and what follows it tells nothing more unless the head tunes twice, which the driver
    finds when it checks the stream (:func:`~.plan.check_stream`). On a file of short
    connections, whose heads are whole connections, dissecting whole heads took 40% of the
    scan.

    The facts depend only on the bytes up to the end of that frame, and those repeat: a
    broker sends every client the same connection.start and tune, an application the same
    start-ok and tune-ok on each of its connections. So where the frames before it are
    whole and in order (found by their headers alone, then confirmed by dissecting them),
    ``known`` keeps the facts by those bytes for the next head that starts with them (the
    last :data:`KNOWN_HEADS_MAX` heads, at most): on 20,417 short connections, whose
    clients' heads never repeat, dissecting the heads had been 31% of the scan, then 16%."""
    if not head:
        return NO_FACTS
    tuning = _tuning_frame(head)
    if tuning is not None:
        start, end = tuning
        shown = head[:end]
        found = None if known is None else known.get(shown)
        if found is None:
            found = _facts_through(shown, start)
            if found is not None and known is not None:
                if len(known) >= KNOWN_HEADS_MAX:
                    known.clear()  # heads that never repeat must not keep out those that do
                known[shown] = found
        if found is not None:
            return HeadFacts(
                found.spec, found.tuned_frame_max, dict(found.tuned_at), found.negotiated, len(head)
            )
    return _facts_by_steps(head)


def _tuning_frame(head: bytes) -> tuple[int, int] | None:
    """Where the first connection.tune or tune-ok on channel 0 starts and ends in ``head``,
    walking 0-9-1 frame headers (7 bytes, payload, frame end) from its start (after a
    protocol header); None if a frame before it is not whole or not ended as a frame ends."""
    pos = 8 if head[:4] == b"AMQP" else 0
    n = len(head)
    while pos + 7 <= n:
        kind, channel, size = unpack_frame_header(head, pos)
        end = pos + FRAME_OVERHEAD + size
        if end > n or head[end - 1] != FRAME_END:
            return None
        if kind == FRAME_METHOD and channel == 0 and head[pos + 7 : pos + 11] in _TUNING_METHODS:
            return pos, end
        pos = end
    return None


def _facts_through(shown: bytes, start: int) -> HeadFacts | None:
    """The facts of the head bytes ``shown``, which end with a tuning frame at ``start``;
    None if the dissector does not find that frame there (damage before it, another
    version's framing)."""
    dissector = StreamDissector()
    found = _first_tuning(dissector.feed(shown))
    if found is None or found[1] != start:
        return None
    direction, offset, frame = found
    negotiated = negotiated_in(frame.method) if direction == "client" else None
    return HeadFacts(
        _spec_name(dissector),
        dissector.tuned_frame_max,
        {direction: offset},
        negotiated,
        len(shown),
    )


def _facts_by_steps(head: bytes) -> HeadFacts:
    """:func:`head_facts` by dissecting ``head`` :data:`HEAD_STEP` bytes at a time, as far
    as the step that holds the first tuning frame."""
    dissector = StreamDissector()
    tuned_at: dict[str, int] = {}
    negotiated: Negotiated | None = None
    for start in range(0, len(head), HEAD_STEP):
        found = _first_tuning(dissector.feed(head[start : start + HEAD_STEP]))
        if found is not None:
            direction, offset, frame = found
            tuned_at[direction] = offset
            if direction == "client":
                negotiated = negotiated_in(frame.method)
            break
    return HeadFacts(
        _spec_name(dissector), dissector.tuned_frame_max, tuned_at, negotiated, len(head)
    )


def _spec_name(dissector: StreamDissector) -> str | None:
    """The version the dissector found, by name (None: none)."""
    return None if dissector.spec is None else dissector.spec.name


def _first_tuning(events: list[Event]) -> tuple[str, int, MethodFrame] | None:
    """The side, offset and frame of the first :data:`TUNED_BY` frame (on channel 0)."""
    for event in events:
        if not isinstance(event, FrameEvent) or not isinstance(event.frame, MethodFrame):
            continue
        side = _TUNING_SIDE.get(event.frame.method.NAME)
        if side is not None and event.frame.channel == 0:
            return side, event.offset, event.frame
    return None


def negotiation(facts: dict[str, HeadFacts]) -> tuple[Negotiated | None, dict[str, int]]:
    """The client's tune-ok and where each side's :data:`TUNED_BY` frame is, from the facts of
    each side's head (``direction -> facts``)."""
    negotiated: Negotiated | None = None
    tuned_at: dict[str, int] = {}
    for direction, found in facts.items():
        if direction in found.tuned_at:
            tuned_at[direction] = found.tuned_at[direction]
            if direction == "client":
                negotiated = found.negotiated
    return negotiated, tuned_at


def head_negotiation(
    client_head: bytes | None, server_head: bytes | None
) -> tuple[Negotiated | None, dict[str, int]]:
    """The client's tune-ok and where each side's :data:`TUNED_BY` frame is, as far as the
    heads show them. The spec holds frames to 4096 bytes until tune-ok, so a conforming
    client's tune-ok lies in its first 8 KiB; the driver checks the guess after the second
    pass (:func:`~.plan.negotiation_of`) and dissects again where it was wrong."""
    return negotiation({"client": head_facts(client_head), "server": head_facts(server_head)})
