"""Where a frame may start in the middle of a stream, for both framings.

The dissector's resynchronisation after a decode error and the analysis's search for a
region's first frame ask the same question of a byte position: could a frame start here?
A :class:`Framing` holds each framing's answer: 0-8 and 0-9-1's 7-byte header (type octet,
channel, size) and the 0-10 draft's 12-byte one (flags, type, size, track, channel; see
:mod:`amqp_codec.wire010.frames`).

A candidate is found by :attr:`Framing.start` (its first octets), judged by its header alone
with :attr:`Framing.frame_end` (a plausible header gives the offset of its frame-end octet),
and believed once that octet is 0xCE and the frame decodes on its own
(:func:`decodes_alone`). Each caller adds its own policy on top: the dissector a work budget
and one frame, the analysis a chain of frames.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..decoder import NEED_DATA, FrameDecoder
from ..errors import AMQPDecodeError
from ..frames import FRAME_OVERHEAD, frame_header_error, unpack_frame_header
from ..protocol import ProtocolSpec
from ..wire010 import frames as wire010

__all__ = [
    "DRAFT",
    "NINE",
    "RESYNC_MAX_PAYLOAD",
    "Framing",
    "decodes_alone",
    "framing",
    "plausible_frame_end",
]

#: After a decode error, a candidate frame start with a payload larger than this is not
#: believed unless ``frame_max`` (or a connection.tune / tune-ok seen in the stream) allows it.
RESYNC_MAX_PAYLOAD = 1024 * 1024


@dataclass(frozen=True)
class Framing:
    """How one framing's frames are found in the middle of a stream."""

    #: Bytes of a frame header.
    header_size: int
    #: Where a candidate may start: its first octet(s).
    start: re.Pattern[bytes]
    #: Octets at the end of the bytes scanned that may begin a start not whole yet.
    keep: int
    #: ``frame_end(window, pos, limit)``: the offset of the frame-end octet of a plausible
    #: header at ``window[pos:]`` whose size is within ``limit``, else None.
    frame_end: Callable[[bytearray, int, int], int | None]
    #: ``header(window, pos)``: the frame type, channel and frame-end offset a whole header at
    #: ``window[pos:]`` announces, plausible or not.
    header: Callable[[bytearray, int], tuple[int, int, int]]


def _frame_end(window: bytearray, pos: int, limit: int) -> int | None:
    """The frame-end offset of a plausible 0-9 frame header at ``window[pos:]``, else None:
    one the frame decoder would not refuse before reading its payload."""
    frame_type, channel, size = unpack_frame_header(window, pos)
    if size > limit or frame_header_error(frame_type, channel, size, pos) is not None:
        return None
    end: int = pos + 7 + size
    return end


def _header(window: bytearray, pos: int) -> tuple[int, int, int]:
    frame_type, channel, size = unpack_frame_header(window, pos)
    return frame_type, channel, pos + 7 + size


def _draft_frame_end(window: bytearray, pos: int, limit: int) -> int | None:
    """The frame-end offset of a plausible 99-0 frame header at ``window[pos:]``, else None.

    A candidate at offset p is believed when its flags octet has a zero upper nibble and
    its type octet is a known segment type; the header's reserved octets are zero and its
    size (header included) is at least 12 and at most the ``frame_max`` given (else the
    16-bit field's own limit); a method or header frame holds a whole segment (b and e set);
    a header or body frame is on a non-zero channel, a heartbeat has no payload; the octet
    at p + size is 0xCE; and the frame decodes on its own with the stream's spec. All but
    the last two are the checks :func:`amqp_codec.wire010.frames.decode_frame` makes first.
    """
    try:
        size = wire010.frame_size(window, pos)
    except AMQPDecodeError:
        return None
    flags, frame_type, channel, _size = wire010.frame_header(window, pos)
    if size > limit or wire010.segment_error(flags, frame_type, channel, size, pos) is not None:
        return None
    return pos + size


def _draft_header(window: bytearray, pos: int) -> tuple[int, int, int]:
    _flags, frame_type, channel, size = wire010.frame_header(window, pos)
    return frame_type, channel, pos + size


#: 0-8 and 0-9-1: a frame can only start on one of the known frame-type octets.
NINE = Framing(7, re.compile(b"[\x01\x02\x03\x08]"), 0, _frame_end, _header)
#: 99-0: a flags octet (upper nibble zero) followed by a known segment type octet.
DRAFT = Framing(
    wire010.HEADER_SIZE,
    re.compile(b"[\x00-\x0f][\x01\x02\x03\x08]"),
    1,
    _draft_frame_end,
    _draft_header,
)


def framing(spec: ProtocolSpec) -> Framing:
    """The framing ``spec``'s frames are laid out in."""
    return NINE if spec.wire_format == "0-9" else DRAFT


def plausible_frame_end(
    spec: ProtocolSpec, data: bytes | bytearray, pos: int, tuned_frame_max: int = 0
) -> int | None:
    """The offset of the frame-end octet of a frame starting at ``data[pos]`` if its header
    is plausible for ``spec``'s framing (as the dissector's resync judges it, for a stream
    whose connection.tune said ``tuned_frame_max``), else None. The header must be whole in
    ``data``; the end may lie beyond it."""
    layout = framing(spec)
    if pos + layout.header_size > len(data):
        return None
    if layout is NINE:
        limit = max(RESYNC_MAX_PAYLOAD, tuned_frame_max - FRAME_OVERHEAD)
    else:
        limit = wire010.MAX_FRAME_SIZE
    end = layout.frame_end(bytearray(data[pos : pos + layout.header_size]), 0, limit)
    return None if end is None else pos + end


def decodes_alone(candidate: bytes, spec: ProtocolSpec, frame_max: int | None = None) -> bool:
    """Whether ``candidate``, one whole frame, decodes on its own with ``spec``."""
    trial = FrameDecoder(spec, frame_max=frame_max)
    trial.receive_data(candidate)
    try:
        return trial.next_frame() is not NEED_DATA
    except Exception as error:  # AMQPDecodeError, or a codec bug: either way not believable
        # The decoder keeps the error it raised, whose traceback holds the decoder's frame:
        # a cycle, which only the collector would free, with the candidate's bytes in it. A
        # resync tries candidates by the thousand in a damaged stream.
        error.__traceback__ = None
        return False
