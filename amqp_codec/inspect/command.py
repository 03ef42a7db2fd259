"""``amqp-codec decode``: captured AMQP byte streams, frame by frame.

``amqp-codec decode FILE [FILE ...]`` reads raw captures (one direction of one connection,
as ``tools/record_proxy.py`` writes them) and prints every frame: its stream offset, type,
channel and size, a method's name and every field, a content header's properties, a body's
size and an escaped preview. Field tables are shown nested, each value with its wire tag.

Problems are shown, not fatal: a decode error is printed as a ``!!! PROBLEM`` line, the
dissector resynchronises on the next plausible frame start and carries on. ``--json``
prints one JSON object per line instead (bytes as hex, see ``amqp-codec decode --help``).
A pcap or pcapng file (plain or gzip) is recognised by its magic number: each direction of
every AMQP connection in it is decoded as a stream of its own
(:mod:`amqp_codec.inspect.captures`). Credentials (:mod:`amqp_codec.credentials`) are
redacted unless ``--show-secrets``. Exit status: 0 no problems, 1 problems found, 2 usage or
I/O error.

This module parses the command's arguments, reads the captures and wires things together:
streams are read in 64 KiB chunks and fed to a
:class:`~amqp_codec.inspect.dissector.StreamDissector`, whose events go to a reporter
(:mod:`amqp_codec.inspect.text` or :mod:`amqp_codec.inspect.jsonlines`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import BinaryIO, TextIO

from ..frames import FRAME_OVERHEAD
from ..protocol import ProtocolSpec
from .captures import capture_streams, is_capture
from .dissector import (
    DEFAULT_SPEC,
    Event,
    FileStats,
    FrameEvent,
    ProblemEvent,
    ResyncEvent,
    SpecEvent,
    StreamDissector,
)
from .jsonlines import JsonReporter
from .reporter import Reporter, display_name
from .text import HumanReporter

__all__ = ["DESCRIPTION", "EPILOG", "FORMATTER", "HELP", "add_arguments", "run"]

#: Bytes read from a capture at a time.
CHUNK_SIZE = 64 * 1024
#: Default number of body bytes shown per body frame.
DEFAULT_BODY_PREVIEW = 64
#: The protocol versions --spec accepts, and their generated packages (imported only when
#: asked for); "detect" lets the decoder find out.
SPECS: dict[str, str] = {
    "0-9-1": "amqp_codec.v0_9_1",
    "0-8": "amqp_codec.v0_8",
    "99-0": "amqp_codec.v0_10_draft",
}

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2

HELP = "dissect captured AMQP byte streams (or a pcap file's connections) frame by frame"
#: ``{versions}`` is the protocol versions the codec reads (see :mod:`amqp_codec.cli`).
DESCRIPTION = (
    "Print captured raw AMQP byte streams ({versions}; one direction of one "
    "connection each, as tools/record_proxy.py writes them) frame by frame. A pcap "
    "or pcapng file (plain or gzip) is read too: each direction of each of its AMQP "
    "connections is decoded."
)
#: Laid out by hand: argparse must not rewrap it.
FORMATTER = argparse.RawDescriptionHelpFormatter
EPILOG = """\
output:
  Each frame starts with its stream offset in decimal and hex, its type, channel and
  payload size. Methods list every field as name = value ([reserved] marks reserved
  fields); content headers list every present property; field tables nest, each value
  with its wire tag, e.g. "x-max-length (I) = 10". Problems are lines starting with
  "!!! PROBLEM" (reply code, offset, channel, method, field path); "~~~ RESYNC" lines
  say which bytes were skipped to find the next plausible frame. Besides decoder errors,
  content out of sequence on a channel (a body without a header, a method before the
  previous message's body is complete, a message unfinished at the end) is a problem
  with reply code 505 and source "content-sequence".

resynchronisation:
  After a decode error the bytes from the failed frame's start + 1 are scanned for a
  frame start: a known frame type octet, a size within --frame-max (else 1 MiB, or a
  larger frame_max seen in connection.tune/tune-ok), 0xCE at the end, and a frame that
  decodes on its own. A fresh decoder with the stream's spec resumes there. A frame cut
  off by the end of the stream is a problem too.

--json:
  One JSON object per line, each with "kind" ("spec", "frame", "problem", "resync",
  "summary", "total") and "file". Frames have offset, length (bytes on the wire), type,
  type_id, channel, size (payload bytes); methods add method, class_id, method_id,
  fields (by spec name) and reserved (names of reserved fields); headers add class_id,
  class, body_size, weight, property_flags and properties (present ones only); bodies add
  payload_hex (the first --max-body-preview bytes) and payload_truncated. Bytes are hex:
  every bytes value (long strings, 'x' values, non-UTF-8 strings) is {"hex": "..."}.
  Field tables are lists of {"key", "tag", "value"}, arrays lists of {"tag", "value"};
  decimals are strings, timestamps integers, NaN and infinities the strings "nan",
  "inf", "-inf".

99-0 (Qpid's 0-10 preview, 12-byte frame header):
  Frames also show their segment flags, e.g. "flags=0x0b[B.be]" (B first segment of the
  frameset, E last segment, b first frame of the segment, e last frame), and a non-zero
  track; size is still the payload size. A header frame lists its structs
  (delivery-properties, message-properties) with their present fields; a frameset ends
  at the first frame with E and e set. In --json every frame adds flags, flag_names and
  track, a header has "structs" (each {"struct", "type_code", "packing_flags", "fields"})
  instead of class and properties, uuids are strings and rfc1982-long-sets lists of
  [low, high]. Resynchronisation looks for the 12-byte header (reserved octets zero,
  size of at least 12 and within --frame-max or 65535, 0xCE after it).

pcap, pcapng (plain or gzip):
  A capture file's TCP connections are reassembled (in memory: for large capture sets use
  amqp-codec analyze) and each direction of each AMQP connection (server port 5672, or a
  client that starts with the protocol header) is shown as a stream named "FILE
  CLIENT-SERVER client|server".

credentials:
  The response of connection.start-ok and connection.secure-ok (a PLAIN password) and
  connection.update-secret's new-secret are shown as <redacted> unless --show-secrets.

exit status:
  0 no problems, 1 problems found, 2 usage or I/O error.
"""


def _positive_frame_max(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value != 0 and not FRAME_OVERHEAD < value <= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(
            f"frame_max must be 0 (no limit) or {FRAME_OVERHEAD + 1}..{0xFFFFFFFF}"
        )
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The decode command's arguments."""
    parser.add_argument(
        "files", nargs="+", metavar="FILE", help="capture file; - reads standard input"
    )
    parser.add_argument(
        "--spec",
        choices=["detect", *SPECS],
        default="detect",
        help="protocol version (default: detect from the protocol header or connection.start)",
    )
    parser.add_argument(
        "--frame-max",
        type=_positive_frame_max,
        default=0,
        metavar="N",
        help="negotiated frame_max: larger frames are problems (default 0: no limit)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument(
        "--show-secrets",
        action="store_true",
        help="show credentials (PLAIN passwords, update-secret tokens) instead of <redacted>",
    )
    parser.add_argument(
        "--max-body-preview",
        type=_non_negative,
        default=DEFAULT_BODY_PREVIEW,
        metavar="N",
        help=f"body bytes shown per body frame (default {DEFAULT_BODY_PREVIEW}; 0: none)",
    )


class _ReadError(Exception):
    """Reading a capture failed (as opposed to writing the output)."""


def _chunks(stream: BinaryIO) -> Iterator[bytes]:
    # read1 returns what is available, so a live pipe is shown as it arrives.
    read: Callable[[int], bytes] = getattr(stream, "read1", stream.read)
    while True:
        try:
            chunk = read(CHUNK_SIZE)
        except OSError as exc:
            raise _ReadError(str(exc)) from exc
        if not chunk:
            return
        yield chunk


def _open(name: str) -> BinaryIO:
    if name == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:
            raise OSError("standard input is not available as bytes")
        return stdin  # type: ignore[no-any-return]
    return open(name, "rb")


def _report(reporter: Reporter, name: str, events: list[Event], spec: ProtocolSpec) -> ProtocolSpec:
    """Pass ``events`` on to ``reporter``; returns the stream's spec as the events left it."""
    for event in events:
        if isinstance(event, FrameEvent):
            reporter.frame(name, spec, event.offset, event.end, event.frame)
        elif isinstance(event, ProblemEvent):
            problem = event.problem
            if problem.fatal:
                problem = replace(
                    problem,
                    note=f"{problem.note}; use --spec {DEFAULT_SPEC.name} to decode it as "
                    f"AMQP {DEFAULT_SPEC.name} anyway",
                )
            reporter.problem(name, problem)
        elif isinstance(event, ResyncEvent):
            reporter.resync(name, event.start, event.stop, event.resumed)
        elif isinstance(event, SpecEvent):
            spec = event.spec
            reporter.spec(name, event.spec, event.detected_by)
    return spec


def _dissect(
    name: str,
    chunks: Iterable[bytes],
    reporter: Reporter,
    spec: ProtocolSpec | None,
    frame_max: int,
) -> FileStats:
    """Dissect one byte stream and report it; raises :class:`_ReadError`."""
    reporter.start_file(name)
    dissector = StreamDissector(spec, frame_max=frame_max, name=name)
    shown_spec = spec or DEFAULT_SPEC
    for chunk in chunks:
        shown_spec = _report(reporter, name, dissector.feed(chunk), shown_spec)
    _report(reporter, name, dissector.finish(), shown_spec)
    reporter.end_file(dissector.stats)
    return dissector.stats


def _decode_one(
    name: str, reporter: Reporter, spec: ProtocolSpec | None, frame_max: int, err: TextIO
) -> list[FileStats] | None:
    try:
        stream = _open(name)
    except OSError as exc:
        err.write(f"amqp-codec: cannot read {display_name(name)}: {exc}\n")
        return None
    try:
        if name != "-" and is_capture(stream):
            stream.close()
            streams = capture_streams(name, err)
            if streams is None:
                return None
            return [_dissect(label, data, reporter, spec, frame_max) for label, data in streams]
        return [_dissect(name, _chunks(stream), reporter, spec, frame_max)]
    except _ReadError as exc:
        err.write(f"amqp-codec: cannot read {display_name(name)}: {exc}\n")
        return None
    finally:
        if name != "-":
            stream.close()


def _spec(name: str) -> ProtocolSpec:
    """The protocol version ``--spec`` names."""
    spec: ProtocolSpec = importlib.import_module(SPECS[name]).SPEC
    return spec


def _decode(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    spec = None if args.spec == "detect" else _spec(args.spec)
    reporter: Reporter
    if args.json:
        reporter = JsonReporter(out, args.max_body_preview, show_secrets=args.show_secrets)
    else:
        reporter = HumanReporter(out, args.max_body_preview, show_secrets=args.show_secrets)
    results: list[FileStats] = []
    io_error = False
    for name in args.files:
        stats = _decode_one(name, reporter, spec, args.frame_max, err)
        if stats is None:
            io_error = True
        else:
            results += stats
        out.flush()
    if len(results) > 1 or len(args.files) > 1:
        reporter.total(results)
    if io_error:
        return EXIT_ERROR
    return EXIT_PROBLEMS if any(s.problems for s in results) else EXIT_OK


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run the decode command; returns its exit status."""
    try:
        status = _decode(args, out, err)
        out.flush()
    except BrokenPipeError:
        # The reader went away (| head): stop quietly, and keep the interpreter from
        # complaining when it flushes stdout at exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_ERROR
    return status
