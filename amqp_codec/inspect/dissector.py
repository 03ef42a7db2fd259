"""Dissect a captured AMQP byte stream: frames with their offsets, problems, resynchronisation.

A :class:`StreamDissector` reads one direction of one connection, fed in chunks of any size,
and returns what it finds as events, in stream order::

    dissector = StreamDissector()            # or StreamDissector(v0_9_1.SPEC, frame_max=4096)
    for chunk in chunks:
        for event in dissector.feed(chunk):
            handle(event)
    for event in dissector.finish():         # the stream ended
        handle(event)
    dissector.stats                          # counts for the whole stream

The events are frozen dataclasses: :class:`SpecEvent` (the protocol version became known),
:class:`FrameEvent` (a frame and where it lies in the stream), :class:`ProblemEvent` (a
:class:`Problem`) and :class:`ResyncEvent` (bytes skipped after a problem).

Problems do not stop the dissector. A decode error is reported, then the dissector
resynchronises on the next plausible frame start (see :meth:`StreamDissector._scan`) and
carries on. Content out of sequence (a body without its header, a method before the previous
message is complete, a message unfinished at the end) is checked with a
:class:`~amqp_codec.MessageAssembler` (99-0 framesets with a
:class:`~amqp_codec.wire010.DraftMessageAssembler`) and reported as a 505 problem whose
source is ``content-sequence``. 99-0's 12-byte frame header has its own resync heuristic
(:mod:`amqp_codec.inspect.resync`, where the analysis finds its regions' first frames too).

Bytes missing from a capture (a TCP gap) are announced with :meth:`StreamDissector.gap`:
the dissector resynchronises after them as after a decode error.

Memory is bounded by the largest frame (or resync candidate) plus one chunk, and by the
bodies of messages in progress, which the assembler keeps until they complete (at most
:data:`~amqp_codec.DEFAULT_MAX_BODY_SIZE` per channel).

Nothing here prints or reads files: see :mod:`amqp_codec.inspect.command` for the command.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from .. import v0_9_1
from ..assembly import Message, MessageAssembler
from ..base import writable_twin
from ..decoder import NEED_DATA, FrameDecoder, stream_ended_error
from ..errors import AMQPDecodeError, UnsupportedProtocolError
from ..frames import (
    FRAME_END,
    FRAME_HEADER,
    FRAME_METHOD,
    FRAME_OVERHEAD,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    bad_frame_end,
)
from ..protocol import ProtocolSpec
from ..wire010 import frames as wire010
from ..wire010.assembly import DraftMessage, DraftMessageAssembler
from ..wire010.frames import DraftBodyFrame, DraftHeaderFrame, DraftHeartbeatFrame, DraftMethodFrame
from .resync import NINE, RESYNC_MAX_PAYLOAD, Framing, decodes_alone, framing, plausible_frame_end

__all__ = [
    "DEFAULT_SPEC",
    "FRAME_TYPE_NAMES",
    "PROTOCOL_HEADER_NAME",
    "RESYNC_MAX_PAYLOAD",
    "RESYNC_WORK_ALLOWANCE",
    "RESYNC_WORK_PER_BYTE",
    "Event",
    "FileStats",
    "FrameEvent",
    "Problem",
    "ProblemEvent",
    "ResyncEvent",
    "SpecEvent",
    "StreamDissector",
    "class_name",
    "plausible_frame_end",
]

#: Resynchronisation work budget, in bytes of candidate frames decoded on trial (or fed to a
#: decoder that resumed, before it catches up with the stream): this much to start with, plus
#: :data:`RESYNC_WORK_PER_BYTE` per byte of the stream passed. Trial decodes of overlapping
#: candidates could otherwise cost the square of the input; with it a whole stream costs
#: O(n). Real damage needs a few trial decodes; a candidate that would exceed the budget is
#: not believed (a resumed decoder's frame over it is skipped as part of the resync).
RESYNC_WORK_ALLOWANCE = 4 * 1024 * 1024
RESYNC_WORK_PER_BYTE = 8
#: The version problems are described in when the stream's own is not known.
DEFAULT_SPEC: ProtocolSpec = v0_9_1.SPEC
#: The protocol header's key in :attr:`FileStats.by_type`.
PROTOCOL_HEADER_NAME = "protocol-header"

_SEQUENCE = "content-sequence"
_DRAFT_TYPES: dict[type, str] = {
    DraftMethodFrame: "method",
    DraftHeaderFrame: "header",
    DraftBodyFrame: "body",
    DraftHeartbeatFrame: "heartbeat",
}
#: The name of each frame class's frame type, as ``by_type`` counts it and the analysis's
#: ``frame_type`` column holds it (subclasses are looked up by ``isinstance``).
FRAME_TYPE_NAMES: dict[type, str] = {
    ProtocolHeader: PROTOCOL_HEADER_NAME,
    MethodFrame: "method",
    ContentHeaderFrame: "header",
    ContentBodyFrame: "body",
    HeartbeatFrame: "heartbeat",
    **_DRAFT_TYPES,
}
_METHOD_TYPES = frozenset({MethodFrame, DraftMethodFrame})


def _type_name(frame: Frame) -> str:
    """The ``by_type`` name of a frame whose class is a subclass of a frame class."""
    for base, name in FRAME_TYPE_NAMES.items():
        if isinstance(frame, base):
            return name
    raise TypeError(f"not a frame: {frame!r}")


# ------------------------------------------------------------------------------------------
# What the dissector finds
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem in a stream: a decode error, or a broken content sequence."""

    offset: int
    """Stream offset where the problem was found (inside the frame when known)."""
    frame_offset: int
    """Stream offset of the frame that was being decoded."""
    reason: str
    error: str
    """Exception class name (``FrameError``, ``UnexpectedFrameError``...)."""
    reply_code: int | None
    reply_name: str | None
    channel: int | None
    class_id: int
    method_id: int
    method: str | None
    """Method name (or ``class N`` / ``N.M`` when not a known method), if known."""
    field: str | None
    source: str = "decoder"
    """``decoder`` (the FrameDecoder raised it) or ``content-sequence`` (the message assembler)."""
    note: str | None = None
    fatal: bool = False
    """Nothing after this problem is decoded (an unsupported protocol version)."""


@dataclass(frozen=True, slots=True)
class SpecEvent:
    """The stream's protocol version became known (once per stream, before its first frame)."""

    spec: ProtocolSpec
    detected_by: str | None
    """``given``, ``protocol header``, ``connection.start`` or ``assumed``; see
    :attr:`FrameDecoder.detected_by <amqp_codec.FrameDecoder.detected_by>`."""


@dataclass(frozen=True, slots=True)
class FrameEvent:
    """A decoded frame occupying stream bytes ``offset`` to ``end - 1``.

    ``message``: the message this frame completed, if any (its content checked in sequence);
    ``pending``: whether the frame's channel has a message in progress after it. Neither
    takes part in comparisons: they follow from the frames before.
    """

    offset: int
    end: int
    frame: Frame
    message: Message | DraftMessage | None = field(default=None, compare=False)
    pending: bool = field(default=False, compare=False)


# The dissector makes one FrameEvent per frame (in StreamDissector._frame): filled as its
# writable twin and then given its class, as the decoder makes frames (see writable_twin),
# not through the frozen dataclass's __init__, which goes through object.__setattr__ per
# field at twice the cost.
_FrameEventTwin = writable_twin(FrameEvent)


@dataclass(frozen=True, slots=True)
class ProblemEvent:
    """A problem (reported right after the frame it concerns, if that frame decoded)."""

    problem: Problem


@dataclass(frozen=True, slots=True)
class ResyncEvent:
    """Stream bytes ``start`` to ``stop - 1`` were skipped after a problem.

    ``resumed``: decoding resumed at ``stop``; otherwise no plausible frame start was found
    and ``stop`` is the end of the stream.
    """

    start: int
    stop: int
    resumed: bool


#: What :meth:`StreamDissector.feed` and :meth:`StreamDissector.finish` return.
Event: TypeAlias = SpecEvent | FrameEvent | ProblemEvent | ResyncEvent


@dataclass(slots=True)
class FileStats:
    """Counts for one stream."""

    name: str
    bytes: int = 0
    frames: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    """Frames by type: ``method``, ``header``, ``body``, ``heartbeat``, ``protocol-header``."""
    methods: Counter[str] = field(default_factory=Counter)
    """Method frames by method name."""
    problems: int = 0
    spec: str | None = None
    """The protocol version's name, set by :meth:`StreamDissector.finish` if it was known."""
    detected_by: str | None = None


def class_name(spec: ProtocolSpec, class_id: int) -> str | None:
    """The name of class ``class_id`` (``basic``), or None if ``spec`` has no such class."""
    for (cid, _mid), cls in spec.methods.items():
        if cid == class_id:
            return cls.NAME.split(".", 1)[0]
    return None


def _method_label(spec: ProtocolSpec, class_id: int, method_id: int) -> str | None:
    if not class_id:
        return None
    cls = spec.method_class(class_id, method_id)
    if cls is not None:
        return cls.NAME
    if not method_id:
        name = class_name(spec, class_id)
        return f"class {class_id}" + (f" ({name})" if name else "")
    return f"{class_id}.{method_id}"


def _printable(text: str) -> str:
    """``text`` with undecodable bytes as \\xNN and control characters escaped."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def _problem_from_error(
    exc: AMQPDecodeError,
    spec: ProtocolSpec,
    frame_offset: int,
    base: int,
    *,
    source: str = "decoder",
    note: str | None = None,
    fatal: bool = False,
) -> Problem:
    offset = frame_offset if exc.offset is None else base + exc.offset
    code = exc.reply_code
    return Problem(
        offset=offset,
        frame_offset=frame_offset,
        reason=_printable(exc.reason),
        error=type(exc).__name__,
        reply_code=code,
        reply_name=spec.reply_names.get(code) if code is not None else None,
        channel=exc.channel,
        class_id=exc.class_id,
        method_id=exc.method_id,
        method=_method_label(spec, exc.class_id, exc.method_id),
        field=None if exc.field is None else _printable(exc.field),
        source=source,
        note=note,
        fatal=fatal,
    )


# ------------------------------------------------------------------------------------------
# The dissector: decoder + resynchronisation + content sequence for one stream
# ------------------------------------------------------------------------------------------


class StreamDissector:
    """Dissect one stream (one direction of one connection), fed in chunks of any size.

    Args:
        spec: the protocol version; ``None`` detects it from the protocol header or
            connection.start (a stream starting with neither is read as 0-9-1).
        frame_max: the negotiated frame_max: larger frames are problems (501). ``None`` or
            0: no limit beyond the decoder's safety cap.
        name: the stream's name in :attr:`stats`.

    Feed the stream's bytes with :meth:`feed` and call :meth:`finish` at its end; both
    return the events found, in stream order. The events do not depend on how the stream
    is split into chunks.

    The stream's bytes from the start of the frame being decoded onwards are kept in a
    window; after a decode error the window is where resynchronisation scans. While frames
    decode, the window is only the chunks fed (the decoder was given the same chunks, so
    nothing is copied); a decode error or a gap joins them into one buffer for the scan.
    Decoded and skipped bytes are dropped from it after every chunk, so it holds at most one
    frame (or one resync candidate, see :data:`RESYNC_MAX_PAYLOAD`) plus one chunk.

    Work is linear in the stream however it is chunked and however many resyncs it needs:
    every byte is copied into the window at most once and handed to a decoder at most twice,
    and trial decodes are paid from a budget that grows with the stream
    (:data:`RESYNC_WORK_ALLOWANCE`).
    """

    def __init__(
        self,
        spec: ProtocolSpec | None = None,
        *,
        frame_max: int | None = None,
        name: str = "",
    ) -> None:
        self.frame_max = frame_max or 0
        #: Counts so far; complete once :meth:`finish` has returned.
        self.stats = FileStats(name)
        self._assembler = MessageAssembler()
        self._draft_assembler = DraftMessageAssembler()  # 99-0 framesets
        self._events: list[Event] = []
        self._decoder = FrameDecoder(spec, frame_max=self.frame_max or None)
        self._decoder_base = 0  # stream offset where the current decoder started
        # The window is _window followed by the chunks in _held, less the first _held_skip
        # bytes of _held[0]: chunks fed while frames decode are held as they are (the decoder
        # reads the same objects) and only joined into _window when a scan needs it.
        self._window = bytearray()
        self._held: list[bytes] = []
        self._held_skip = 0
        self._held_len = 0  # bytes in _held, _held_skip included
        self._window_base = 0  # stream offset of the window's first byte
        self._spec: ProtocolSpec | None = spec
        self._spec_reported = False
        self._scanning = False
        self._scan_pos = 0  # next candidate frame start (stream offset)
        self._skip_start = 0  # where the bytes being skipped began
        self._done = False  # nothing more to decode: unsupported protocol, or skipped to end
        self._eof = False
        self._tuned_frame_max = 0
        self._end = 0  # stream offset just after the last byte fed (lost bytes count too)
        # After a resync the new decoder is fed from the window one checked frame at a time
        # (see _feed_resumed) until it catches up with the stream; then chunks go to it directly.
        self._catching_up = False
        self._fed = 0  # stream offset up to which the decoder has been fed
        self._fed_end = 0  # while catching up: where the frame whose header was fed ends
        self._fed_channel = 0
        self._fed_charged = False  # a method or header frame: its bytes count as resync work
        self._work_spent = 0  # resynchronisation work, see RESYNC_WORK_ALLOWANCE
        self._resumed = False  # took over mid-stream (see resuming): no start-of-stream checks
        self._budget_refused = False  # a resync candidate was refused for want of budget

    @classmethod
    def resuming(
        cls,
        spec: ProtocolSpec,
        offset: int,
        *,
        tuned_frame_max: int = 0,
        forgotten: bool = False,
        name: str = "",
    ) -> StreamDissector:
        """A dissector taking over a stream at ``offset``, a frame start, as one that had
        dissected everything before would be there: the version known (no
        :class:`SpecEvent`), ``tuned_frame_max`` seen in connection.tune or tune-ok, and
        content sequences checked on every channel from a clean state, or, when
        ``forgotten``, unchecked until each channel's next method (as after a gap).

        A parallel reader decodes a long stream in parts this way, each part starting where
        the one before ended.
        """
        dissector = cls(spec, name=name)
        dissector._resumed = True
        dissector._spec_reported = True
        dissector._tuned_frame_max = tuned_frame_max
        dissector._decoder_base = dissector._window_base = dissector._end = offset
        dissector._scan_pos = dissector._skip_start = dissector._fed = offset
        if forgotten:
            dissector._forget()
        return dissector

    @property
    def tuned_frame_max(self) -> int:
        """The frame_max of the last connection.tune or tune-ok seen (0: none yet)."""
        return self._tuned_frame_max

    @property
    def budget_refused(self) -> bool:
        """A resync candidate was passed over because the resync work budget was spent: a
        dissector that took over mid-stream (:meth:`resuming`) may then differ from one that
        read the stream from its start, whose budget had grown with every byte before."""
        return self._budget_refused

    # -- public API -----------------------------------------------------------------------

    @property
    def spec(self) -> ProtocolSpec | None:
        """The stream's protocol version, once known."""
        return self._spec

    @property
    def buffered(self) -> int:
        """Stream bytes held for the frame being decoded or the resync scan."""
        return len(self._window) + self._held_len - self._held_skip

    @property
    def oldest_offset(self) -> int:
        """The smallest stream offset an event still to come can name: the bytes it holds
        start there (those of the frame being decoded, or the resync scan's), or the skipped
        range a resync will report does."""
        if self._scanning:
            return min(self._window_base, self._skip_start)
        return self._window_base

    @property
    def at_frame_boundary(self) -> bool:
        """Every byte fed so far was part of a whole frame: none is held for a frame still
        incomplete, and no resynchronisation is under way."""
        return not self._scanning and not self.buffered and not self._done

    def feed(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """Take the next bytes of the stream; return the events they complete, in order."""
        if self._eof:
            raise RuntimeError("feed() after finish()")
        if data:
            chunk = bytes(data)
            self.stats.bytes += len(chunk)
            self._end += len(chunk)
            if not self._done:
                if self._scanning or self._catching_up:
                    self._window += chunk
                else:
                    self._held.append(chunk)
                    self._held_len += len(chunk)
                    self._decoder.receive_data(chunk)
                self._run()
        return self._take_events()

    def gap(self, length: int) -> list[Event]:
        """The next ``length`` stream bytes were lost (a hole in a capture); return events.

        Stream offsets after the gap count the lost bytes; ``0`` says that an unknown number
        of bytes was lost and offsets go on as they were (a capture that starts in the middle
        of a connection: ``gap(0)`` before its first bytes). A frame cut by the gap is lost: the
        dissector resynchronises on the first plausible frame start after it (the skipped
        range, gap included, is a :class:`ResyncEvent`), and content sequence checks restart
        as for a capture that begins mid-stream. The gap itself is not reported: the caller
        knows where it lies.
        """
        if self._eof:
            raise RuntimeError("gap() after finish()")
        if length < 0:
            raise ValueError(f"gap length must be 0 or more, not {length}")
        if not self._done:
            if not self._scanning:
                # Every whole frame has been taken: the decoder holds at most a partial one.
                self._skip_start = self._decoder_base + self._decoder.offset
                self._scanning = True
                self._catching_up = False
            self._forget()
        self._end += length
        self._clear_window()
        self._window_base = self._end
        self._scan_pos = self._end
        return self._take_events()

    def finish(self) -> list[Event]:
        """The stream ended: return the last events (a truncated tail, unfinished messages).

        :attr:`stats` is complete afterwards.
        """
        if self._eof:
            raise RuntimeError("finish() called twice")
        self._eof = True
        if not self._done:
            if not self._scanning and not self._catching_up:
                self._decoder.receive_data(b"")
            self._run()
        for error in self._assembler.unfinished() + self._draft_assembler.unfinished():
            self._problem(
                _problem_from_error(
                    error, self._spec or DEFAULT_SPEC, self._end, 0, source=_SEQUENCE
                )
            )
        if self._spec is not None:
            self.stats.spec = self._spec.name
        return self._take_events()

    # -- events -----------------------------------------------------------------------------

    def _take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    def _forget(self) -> None:
        """Frames may have been lost: content sequence checks restart."""
        self._assembler.forget()
        self._draft_assembler.forget()

    def _problem(self, problem: Problem) -> None:
        self.stats.problems += 1
        self._events.append(ProblemEvent(problem))

    def _run(self) -> None:
        # A loop rather than mutual recursion: a stream may need thousands of resyncs.
        while not self._done:
            progressed = self._scan() if self._scanning else self._drain()
            if not progressed:
                return

    # -- decoding ---------------------------------------------------------------------------

    def _drain(self) -> bool:
        """Take frames until the decoder needs data (False) or fails (True: now scanning)."""
        decoder = self._decoder
        base = self._decoder_base
        # Only a decoded frame moves the decoder's offset: each frame starts where the one
        # before it ended.
        start = base + decoder.offset
        while True:
            try:
                frame = decoder.next_frame()
            except AMQPDecodeError as exc:
                self._note_spec(decoder)
                return self._decode_failed(exc, start, base)
            except Exception as exc:  # a codec bug: report it like a problem, keep going
                self._note_spec(decoder)
                error = AMQPDecodeError(
                    f"decoder crashed with {type(exc).__name__}: {exc} (a bug in amqp-codec)",
                    reply_code=None,
                    offset=start - base,
                )
                return self._decode_failed(error, start, base)
            if frame is NEED_DATA:
                if self._catching_up:
                    fed = self._feed_resumed()
                    if isinstance(fed, AMQPDecodeError):
                        return self._decode_failed(fed, start, base)
                    if fed == "fed":
                        continue
                    if fed == "skipped":
                        return True
                self._trim(base + decoder.offset)
                return False
            if not self._spec_reported:
                self._note_spec(decoder)
            end = base + decoder.offset
            self._frame(frame, start, end)
            start = end

    def _feed_resumed(self) -> AMQPDecodeError | Literal["fed", "wait", "skipped"]:
        """Give the decoder that resumed after a resync its next frame from the window.

        A header first, so that the decoder refuses a bad one itself; the rest of the frame
        only once its frame-end octet is known to be there (else the decoder's own error for
        it is returned). So a bogus size in the bytes after a resync point never makes a
        decoder copy the megabytes it announces, and every frame is copied once.
        """
        decoder = self._decoder
        window, window_base = self._window, self._window_base
        stream_end = window_base + len(window)
        fed = self._fed
        if self._fed_end:  # a header was fed: the frame ends at _fed_end
            end = self._fed_end
            frame_start = fed - self._framing().header_size
            if end >= stream_end:
                if not self._eof:
                    return "wait"
                # The decoder's own error, without handing it the rest of the stream.
                self._catching_up = False
                return stream_ended_error(
                    stream_end - frame_start, frame_start - self._decoder_base
                )
            octet = window[end - window_base]
            channel = self._fed_channel
            if octet != FRAME_END:
                return bad_frame_end(octet, end - self._decoder_base, channel)
            if self._fed_charged and not self._pay(end + 1 - frame_start, frame_start):
                self._catching_up = False
                self._scanning = True
                self._skip_start = frame_start
                self._scan_pos = frame_start + 1
                self._forget()
                return "skipped"
            decoder.receive_data(bytes(window[fed - window_base : end + 1 - window_base]))
            self._fed = end + 1
            self._fed_end = 0
            return "fed"
        layout = self._framing()
        header_size = layout.header_size
        if stream_end - fed < header_size:
            if fed == stream_end and not self._eof:
                self._catching_up = False  # caught up: chunks go straight to the decoder
                return "wait"
            return self._feed_rest_at_eof()
        i = fed - window_base
        frame_type, channel, end = layout.header(window, i)
        end += window_base
        decoder.receive_data(bytes(window[i : i + header_size]))
        self._fed = fed + header_size
        self._fed_end = max(end, self._fed)  # a size too small for a frame: the decoder refuses it
        self._fed_channel = channel
        self._fed_charged = frame_type in (FRAME_METHOD, FRAME_HEADER)
        return "fed"

    def _feed_rest_at_eof(self) -> Literal["fed", "wait"]:
        """While catching up: at the end of the stream hand the decoder all that is left."""
        if not self._eof:
            return "wait"
        rest = self._window[self._fed - self._window_base :]
        if rest:
            self._decoder.receive_data(bytes(rest))
        self._decoder.receive_data(b"")
        self._fed = self._window_base + len(self._window)
        self._fed_end = 0
        self._catching_up = False
        return "fed"

    def _framing(self) -> Framing:
        return framing(self._spec or DEFAULT_SPEC)

    def _pay(self, cost: int, offset: int) -> bool:
        """Spend ``cost`` bytes of resync work at stream ``offset``, if the budget allows."""
        budget = RESYNC_WORK_ALLOWANCE + RESYNC_WORK_PER_BYTE * offset - self._work_spent
        if cost > budget:
            self._budget_refused = True
            return False
        self._work_spent += cost
        return True

    def _note_spec(self, decoder: FrameDecoder) -> None:
        if self._spec_reported or decoder.spec is None:
            return
        self._spec_reported = True
        self._spec = decoder.spec
        self.stats.detected_by = decoder.detected_by
        self._events.append(SpecEvent(decoder.spec, decoder.detected_by))

    def _frame(self, frame: Frame, start: int, end: int) -> None:
        stats = self.stats
        kind = type(frame)
        if stats.frames == 0 and not stats.problems and not self._resumed:
            # Content sequence can only be checked from the start of a connection.
            starts = kind is ProtocolHeader or (
                kind in _METHOD_TYPES and frame.method.NAME == "connection.start"  # type: ignore[union-attr]
            )
            if not starts:
                self._forget()
        stats.frames += 1
        name = FRAME_TYPE_NAMES.get(kind)
        stats.by_type[name or _type_name(frame)] += 1
        if kind in _METHOD_TYPES or (
            name is None and isinstance(frame, (MethodFrame, DraftMethodFrame))
        ):
            method = frame.method  # type: ignore[union-attr]
            stats.methods[method.NAME] += 1
            if method.NAME in ("connection.tune", "connection.tune-ok"):
                self._tuned_frame_max = int(getattr(method, "frame_max", 0) or 0)
        if kind is ProtocolHeader:
            self._events.append(FrameEvent(start, end, frame))
            return
        # Each assembler ignores the other's frames, so only the frame's own is asked.
        message: Message | DraftMessage | None = None
        problem: Problem | None = None
        assembler, draft_assembler = self._assembler, self._draft_assembler
        try:
            if kind in _DRAFT_TYPES:
                message = draft_assembler.feed(frame)
            else:
                message = assembler.feed(frame)
        except AMQPDecodeError as error:
            spec = self._spec or DEFAULT_SPEC
            problem = _problem_from_error(error, spec, start, 0, source=_SEQUENCE)
        channel = frame.channel  # type: ignore[union-attr]
        event = _FrameEventTwin()  # see _FrameEventTwin: once per frame
        event.offset = start
        event.end = end
        event.frame = frame
        event.message = message
        event.pending = assembler.in_progress(channel) or draft_assembler.in_progress(channel)
        event.__class__ = FrameEvent
        self._events.append(event)
        if problem is not None:
            self._problem(problem)

    def _decode_failed(self, exc: AMQPDecodeError, start: int, base: int) -> bool:
        spec = self._decoder.spec
        fatal = isinstance(exc, UnsupportedProtocolError) and spec is None
        note = "the rest of the stream is not decoded" if fatal else None
        self._problem(
            _problem_from_error(exc, spec or DEFAULT_SPEC, start, base, note=note, fatal=fatal)
        )
        self._forget()
        if fatal:
            self._done = True
            self._clear_window()
            return False
        self._join_window()
        if self._spec is None:
            self._spec = spec or DEFAULT_SPEC
        self._scanning = True
        self._skip_start = start
        self._scan_pos = start + 1
        return True

    # -- resynchronisation ------------------------------------------------------------------

    def _resync_limit(self) -> int:
        if self.frame_max:
            return self.frame_max - FRAME_OVERHEAD
        return max(RESYNC_MAX_PAYLOAD, self._tuned_frame_max - FRAME_OVERHEAD)

    def _scan(self) -> bool:
        """Look for the next plausible frame start; True once decoding resumed there.

        Heuristic: a candidate at offset p is believed when

        * its first octet is a known frame type (1 method, 2 header, 3 body, 8 heartbeat);
        * its 4-byte size is at most the frame_max payload (the ``frame_max`` given, else
          the larger of 1 MiB and a frame_max seen in connection.tune/tune-ok): a corrupted
          length would otherwise make the scan wait for megabytes;
        * the octet at p + 7 + size is the frame end 0xCE;
        * and the frame decodes on its own with the stream's spec: a known method with
          well-formed arguments on a channel allowed for its class, a content header for a
          class with content on a non-zero channel, a body on a non-zero channel, a heartbeat
          on channel 0 with no payload.

        Trial decodes of method and header frames are paid from a work budget (see
        :data:`RESYNC_WORK_ALLOWANCE`); a candidate the budget cannot pay for is not believed,
        so that a resync storm costs time linear in the stream. Body and heartbeat candidates
        need no trial: their header says all the decoder would check.

        A fresh FrameDecoder for the stream's spec then takes over at p (the failed one stays
        failed), fed from the window a frame at a time until it catches up. A candidate whose end is not received yet is waited for; at the end of the
        stream it is passed over. Payload bytes that happen to look like a frame are a
        false positive this cannot rule out; they show up as frames inside the skipped range.
        """
        spec = self._spec or DEFAULT_SPEC
        layout = framing(spec)
        if layout is NINE:
            return self._scan_for(spec, layout, self._resync_limit())
        limit = min(self.frame_max or wire010.MAX_FRAME_SIZE, wire010.MAX_FRAME_SIZE)
        return self._scan_for(spec, layout, limit)

    def _scan_for(self, spec: ProtocolSpec, layout: Framing, limit: int) -> bool:
        """:meth:`_scan` in one framing (:mod:`amqp_codec.inspect.resync`), for candidates
        whose payload is at most ``limit``."""
        start, header_size, frame_end = layout.start, layout.header_size, layout.frame_end
        window = self._window
        base = self._window_base
        n = len(window)
        pos = self._scan_pos - base
        while True:
            match = start.search(window, pos)
            if match is None:
                pos = max(pos, n - layout.keep)
                break
            pos = match.start()
            if pos + header_size > n:
                break
            end = frame_end(window, pos, limit)
            if end is None:
                pos += 1
                continue
            if end >= n:
                if self._eof:
                    pos += 1
                    continue
                break  # wait for the rest of this candidate
            if window[end] != FRAME_END or not self._believable(window, pos, end, base, spec):
                pos += 1
                continue
            self._resume(base + pos, spec)
            return True
        return self._scan_waits(pos)

    def _scan_waits(self, pos: int) -> bool:
        """No frame start found before window position ``pos``: wait there, or give up at
        the end of the stream."""
        base = self._window_base
        n = len(self._window)
        self._scan_pos = base + pos
        if self._eof:
            self._events.append(ResyncEvent(self._skip_start, base + n, resumed=False))
            self._trim(base + n)
            self._done = True
            return False
        self._trim(self._scan_pos)
        return False

    def _believable(
        self, window: bytearray, pos: int, end: int, base: int, spec: ProtocolSpec
    ) -> bool:
        """Whether the plausible candidate ``window[pos : end + 1]`` decodes on its own.

        Body and heartbeat frames are decoded from their header alone, which the plausibility
        check has seen; method and header frames are decoded on trial, within the work budget.
        """
        frame_type = framing(spec).header(window, pos)[0]
        if frame_type not in (FRAME_METHOD, FRAME_HEADER):
            return True
        if not self._pay(end + 1 - pos, base + pos):
            return False
        return decodes_alone(bytes(window[pos : end + 1]), spec, self.frame_max or None)

    def _resume(self, offset: int, spec: ProtocolSpec) -> None:
        self._events.append(ResyncEvent(self._skip_start, offset, resumed=True))
        self._trim(offset)
        # Fed from the window frame by frame (_feed_resumed), not with a copy of the window:
        # resyncs may follow each other every few bytes of a large buffer.
        self._decoder = FrameDecoder(spec, frame_max=self.frame_max or None)
        self._decoder_base = offset
        self._scanning = False
        self._catching_up = True
        self._fed = offset
        self._fed_end = 0

    def _trim(self, offset: int) -> None:
        """Drop window bytes before stream ``offset``."""
        drop = offset - self._window_base
        if drop <= 0:
            return
        self._window_base = offset
        window = self._window
        if window:
            if drop <= len(window):
                del window[:drop]
                return
            drop -= len(window)
            self._window = bytearray()
        # Whole chunks go; a chunk partly decoded stays, its decoded bytes counted in
        # _held_skip (at most one chunk more than the window needs).
        # One deletion for all of them: a frame fed a byte at a time is thousands of chunks.
        held = self._held
        drop += self._held_skip
        gone = 0
        for chunk in held:
            if drop < len(chunk):
                break
            drop -= len(chunk)
            self._held_len -= len(chunk)
            gone += 1
        del held[:gone]
        self._held_skip = drop if held else 0

    def _join_window(self) -> None:
        """Make the window one buffer (``_window``): a scan is about to read it."""
        held = self._held
        if held:
            first = memoryview(held[0])[self._held_skip :]
            self._window += b"".join([first, *held[1:]]) if len(held) > 1 else first
            held.clear()
            self._held_len = self._held_skip = 0

    def _clear_window(self) -> None:
        self._window = bytearray()
        self._held.clear()
        self._held_len = self._held_skip = 0
