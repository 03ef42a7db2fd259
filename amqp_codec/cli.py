"""The ``amqp-codec`` command line: a packet-dissector view of captured AMQP byte streams.

``amqp-codec decode FILE [FILE ...]`` reads raw captures (one direction of one connection,
as ``tools/record_proxy.py`` writes them) and prints every frame: its stream offset, type,
channel and size, a method's name and every field, a content header's properties, a body's
size and an escaped preview. Field tables are shown nested, each value with its wire tag.

Problems are shown, not fatal: a decode error is printed as a ``!!! PROBLEM`` line, the
dissector resynchronises on the next plausible frame start and carries on. ``--json``
prints one JSON object per line instead (bytes as hex, see ``amqp-codec decode --help``).
A pcap or pcapng file (plain or gzip) is recognised by its magic number: its TCP
connections are reassembled and each direction of every AMQP connection (server port 5672,
or a client that starts with the protocol header) is decoded as a stream of its own.
Credentials (:mod:`amqp_codec.credentials`) are redacted unless ``--show-secrets``.
Exit status: 0 no problems, 1 problems found, 2 usage or I/O error.

``amqp-codec analyze CAPTURE... --out DIR`` runs the capture analysis on Spark (see
:mod:`amqp_codec.analyze`): Parquet tables and ``report.html`` from pcap/pcapng files. A
mistake (missing input, unusable ``--out``, no Java...) is one line and exit status 2, found
before Spark starts; Ctrl-C stops Spark and exits with 130; an error of ours is one line
naming the log file that holds the details, and exit status 1.

This module only parses arguments, reads the captures and wires things together: streams
are read in 64 KiB chunks and fed to a :class:`~amqp_codec.inspect.dissector.StreamDissector`
(decoding, resynchronisation, content checks), whose events go to a reporter from
:mod:`amqp_codec.inspect.text` (text or JSON).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import BinaryIO, NoReturn, TextIO

from . import v0_8, v0_9_1, v0_10_draft
from .analyze.job import add_arguments, run_from_args
from .frames import FRAME_OVERHEAD
from .inspect.dissector import (
    DEFAULT_SPEC,
    Event,
    FileStats,
    FrameEvent,
    ProblemEvent,
    ResyncEvent,
    SpecEvent,
    StreamDissector,
)
from .inspect.jsonlines import JsonReporter
from .inspect.reporter import Reporter, display_name
from .inspect.text import HumanReporter
from .protocol import ProtocolSpec

__all__ = ["main"]

#: Bytes read from a capture at a time.
CHUNK_SIZE = 64 * 1024
#: Default number of body bytes shown per body frame.
DEFAULT_BODY_PREVIEW = 64

#: The protocol versions --spec accepts; "detect" lets the decoder find out.
SPECS: dict[str, ProtocolSpec] = {
    "0-9-1": v0_9_1.SPEC,
    "0-8": v0_8.SPEC,
    "99-0": v0_10_draft.SPEC,
}

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_ERROR = 2
#: analyze: a bug of ours (the details are in the log file named).
EXIT_BUG = 1
#: Interrupted (Ctrl-C), as shells report a process ended by SIGINT.
EXIT_INTERRUPTED = 130

#: The protocol versions the codec reads, as the help names them.
VERSIONS_TEXT = "AMQP 0-9-1, 0-8 and the 0-10 draft 99-0"
#: Server port of the AMQP connections `decode` picks out of a pcap file.
_DECODE_PORTS = (5672,)
_CAPTURE_MAGICS = (
    b"\xd4\xc3\xb2\xa1",
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",
    b"\xa1\xb2\x3c\x4d",
    b"\x0a\x0d\x0d\x0a",
)
_GZIP_MAGIC = b"\x1f\x8b"

_DECODE_EPILOG = """\
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


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("amqp-codec")
    except PackageNotFoundError:
        return "unknown"


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit status 2), not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


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


def build_parser() -> argparse.ArgumentParser:
    """The ``amqp-codec`` argument parser."""
    parser = _Parser(
        prog="amqp-codec",
        description=f"Tools of amqp-codec, the sans-IO codec for {VERSIONS_TEXT}.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"amqp-codec {_version()} ({VERSIONS_TEXT})",
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    decode = commands.add_parser(
        "decode",
        help="dissect captured AMQP byte streams (or a pcap file's connections) frame by frame",
        description=(
            f"Print captured raw AMQP byte streams ({VERSIONS_TEXT}; one direction of one "
            "connection each, as tools/record_proxy.py writes them) frame by frame. A pcap "
            "or pcapng file (plain or gzip) is read too: each direction of each of its AMQP "
            "connections is decoded."
        ),
        epilog=_DECODE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    decode.add_argument(
        "files", nargs="+", metavar="FILE", help="capture file; - reads standard input"
    )
    decode.add_argument(
        "--spec",
        choices=["detect", *SPECS],
        default="detect",
        help="protocol version (default: detect from the protocol header or connection.start)",
    )
    decode.add_argument(
        "--frame-max",
        type=_positive_frame_max,
        default=0,
        metavar="N",
        help="negotiated frame_max: larger frames are problems (default 0: no limit)",
    )
    decode.add_argument("--json", action="store_true", help="one JSON object per line")
    decode.add_argument(
        "--show-secrets",
        action="store_true",
        help="show credentials (PLAIN passwords, update-secret tokens) instead of <redacted>",
    )
    decode.add_argument(
        "--max-body-preview",
        type=_non_negative,
        default=DEFAULT_BODY_PREVIEW,
        metavar="N",
        help=f"body bytes shown per body frame (default {DEFAULT_BODY_PREVIEW}; 0: none)",
    )
    analyze = commands.add_parser(
        "analyze",
        help="analyse pcap/pcapng captures on Spark into Parquet tables and report.html",
        description=(
            f"Analyse captured AMQP traffic ({VERSIONS_TEXT}; pcap or pcapng files, or "
            "folders of them) on Spark: writes the Parquet tables frames, messages, "
            "connections and problems, summary.json and a self-contained report.html into "
            "--out. Needs the 'analyze' extra and Java 17 or newer."
        ),
        epilog=(
            "exit status: 0 done; 1 an internal error (details in the log file named); "
            "2 usage error (nothing written); 130 interrupted (--out left as it was)"
        ),
    )
    add_arguments(analyze)
    return parser


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


def _is_capture(stream: BinaryIO) -> bool:
    """Whether a file starts like a pcap, pcapng or gzip file (which no AMQP stream does)."""
    try:
        head = stream.read(4)
        stream.seek(0)
    except (OSError, ValueError):
        return False
    return head in _CAPTURE_MAGICS or head[:2] == _GZIP_MAGIC


def _capture_streams(name: str, err: TextIO) -> list[tuple[str, list[bytes]]] | None:
    """Each direction of each AMQP connection in a capture file, as (stream name, bytes).

    None (and one line on ``err``) when the file cannot be read as a capture or holds no
    AMQP connection.
    """
    from .capture import CaptureProblem, Segment, connection_key, read_capture, reassemble

    groups: dict[tuple[tuple[str, int, str, int], str], list[Segment]] = {}
    problems: list[CaptureProblem] = []
    for item in read_capture(name):
        if isinstance(item, CaptureProblem):
            problems.append(item)
            continue
        key, direction = connection_key(item, _DECODE_PORTS)
        groups.setdefault((key, direction), []).append(item)
    fatal = [p for p in problems if p.packet is None]
    # A damaged gzip file is that, whatever else the reader said about what came out of it.
    gzip_damage = [
        p for p in fatal if p.kind in ("corrupt-file", "truncated-file") and "gzip" in p.detail
    ]
    for problem in gzip_damage[:1] or fatal[:1]:
        what = problem.kind.replace("-", " ")
        if gzip_damage:
            what = "truncated gzip file" if "cut short" in problem.detail else "corrupt gzip file"
        detail = problem.detail.removeprefix("corrupt gzip stream: ").removeprefix("gzip stream: ")
        err.write(f"amqp-codec: {display_name(name)}: {what}: {detail}\n")
    if not groups:
        if not fatal:
            err.write(f"amqp-codec: {display_name(name)}: no TCP connections in the capture\n")
        return None
    streams = []
    connections = 0
    for key in sorted({k for k, _ in groups}):
        client_ip, client_port, server_ip, server_port = key
        client = reassemble(groups.get((key, "client"), []))
        server = reassemble(groups.get((key, "server"), []))
        client_bytes = b"".join(client.chunks())
        if server_port not in _DECODE_PORTS and not client_bytes.startswith(b"AMQP"):
            continue  # not AMQP, as far as can be told
        connections += 1
        label = f"{name} {client_ip}:{client_port}-{server_ip}:{server_port}"
        streams.append((f"{label} client", [client_bytes]))
        streams.append((f"{label} server", list(server.chunks())))
    if not streams:
        err.write(
            f"amqp-codec: {display_name(name)}: no AMQP connections among its "
            f"{len({k for k, _ in groups})} TCP connections (server port "
            f"{_DECODE_PORTS[0]} or a client starting with the AMQP header); "
            "amqp-codec analyze --port N reads other ports\n"
        )
        return None
    return streams


def _decode_one(
    name: str, reporter: Reporter, spec: ProtocolSpec | None, frame_max: int, err: TextIO
) -> list[FileStats] | None:
    try:
        stream = _open(name)
    except OSError as exc:
        err.write(f"amqp-codec: cannot read {display_name(name)}: {exc}\n")
        return None
    try:
        if name != "-" and _is_capture(stream):
            stream.close()
            streams = _capture_streams(name, err)
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


def _decode(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    spec = None if args.spec == "detect" else SPECS[args.spec]
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


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was raised while handling, a Ctrl-C (py4j may wrap it)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _bug(exc: BaseException, err: TextIO) -> int:
    """An error of ours: the traceback into the log file, one line naming it on ``err``."""
    from .analyze.logs import log_path

    path = log_path()
    try:
        with open(path, "a", encoding="utf-8") as log:
            log.write("amqp-codec analyze failed:\n")
            traceback.print_exception(exc, file=log)
        where = f"details in {path}"
    except OSError:
        where = "run with --verbose for details"
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    err.write(
        f"amqp-codec analyze: internal error ({type(exc).__name__}"
        f"{': ' + first if first else ''}); {where}\n"
    )
    return EXIT_BUG


def _forget_log() -> None:
    from .analyze.logs import log_path

    with contextlib.suppress(OSError):
        os.remove(log_path())


def _stopped(err: TextIO) -> int:
    """Ctrl-C: Spark was stopped and the staging folder removed on the way out."""
    _forget_log()
    err.write("amqp-codec analyze: interrupted; Spark stopped, --out left as it was\n")
    return EXIT_INTERRUPTED


def _analyze(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        err.write(f"amqp-codec analyze needs the 'analyze' extra ('amqp-codec[analyze]'): {exc}\n")
        return EXIT_ERROR
    from .analyze.preflight import AnalyzeUsageError

    try:
        status = run_from_args(args, out)
        _forget_log()  # a clean run's Spark and Java logs are of no use to anyone
        return status
    except AnalyzeUsageError as exc:
        err.write(f"amqp-codec analyze: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return _stopped(err)
    except OSError as exc:
        if _interrupted(exc):
            return _stopped(err)
        err.write(f"amqp-codec analyze: {exc}\n")
        return EXIT_ERROR
    except Exception as exc:
        if _interrupted(exc):
            return _stopped(err)
        if args.verbose:
            traceback.print_exception(exc, file=err)
        return _bug(exc, err)


def main(argv: list[str] | None = None) -> int:
    """Run ``amqp-codec``; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    out, err = sys.stdout, sys.stderr
    if args.command == "analyze":
        try:
            return _analyze(args, out, err)
        except KeyboardInterrupt:  # a second Ctrl-C, while Spark was stopping
            err.write("amqp-codec analyze: interrupted\n")
            return EXIT_INTERRUPTED
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
