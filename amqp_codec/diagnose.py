"""Locate the field that broke a decode.

The generated decoders are straight-line code with no per-field bookkeeping, so when one
fails (a read past the buffer, a length past the frame, a bad table) the frame decoder asks
this module to walk the same payload field by field and name the culprit. It runs only on
the error path.
"""

from __future__ import annotations

import struct

from .base import FieldSpec, Method, Properties
from .errors import AMQPDecodeError, FrameSyntaxError
from .table import decode_table

_FIXED = {"octet": 1, "short": 2, "long": 4, "longlong": 8, "timestamp": 8}
_U16 = struct.Struct(">H").unpack_from
_U32 = struct.Struct(">I").unpack_from


def _skip(spec: FieldSpec, buf: bytes, o: int, end: int, depth: int) -> int:
    """Check one field at ``o``; return the offset after it or raise FrameSyntaxError."""
    wire = spec.wire_type
    if wire in _FIXED:
        size = _FIXED[wire]
        if o + size > end:
            raise FrameSyntaxError(f"{wire} cut off by the end of the frame")
        return o + size
    if wire == "shortstr":
        if o >= end:
            raise FrameSyntaxError("short string length cut off by the end of the frame")
        stop = o + 1 + buf[o]
        if stop > end:
            raise FrameSyntaxError(f"short string of {buf[o]} bytes runs past the frame")
        return stop
    if wire == "longstr":
        if o + 4 > end:
            raise FrameSyntaxError("long string length cut off by the end of the frame")
        stop = o + 4 + int(_U32(buf, o)[0])
        if stop > end:
            raise FrameSyntaxError(f"long string of {stop - o - 4} bytes runs past the frame")
        return stop
    if wire == "table":
        if o + 4 > end:
            raise FrameSyntaxError("field table size cut off by the end of the frame")
        return decode_table(buf, o, end, depth)[1]
    raise FrameSyntaxError(f"unknown wire type {wire}")


def _walk(fields: list[FieldSpec], buf: bytes, o: int, end: int, depth: int) -> int:
    i = 0
    while i < len(fields):
        spec = fields[i]
        if spec.wire_type == "bit":
            # Consecutive bits share an octet, eight at most; other bits of it must be clear.
            group = [spec]
            while len(group) < 8 and i + len(group) < len(fields):
                if fields[i + len(group)].wire_type != "bit":
                    break
                group.append(fields[i + len(group)])
            if o >= end:
                raise _at(FrameSyntaxError("bit octet cut off by the end of the frame"), spec, o)
            if buf[o] >> len(group):
                names = ", ".join(f.attr for f in group)
                raise _at(
                    FrameSyntaxError(
                        f"bit octet 0x{buf[o]:02x} of ({names}) sets bits no field uses"
                    ),
                    group[-1],
                    o,
                )
            o += 1
            i += len(group)
            continue
        try:
            o = _skip(spec, buf, o, end, depth)
        except AMQPDecodeError as exc:
            raise _at(exc, spec, o) from None
        i += 1
    return o


def _at(exc: AMQPDecodeError, spec: FieldSpec, offset: int) -> AMQPDecodeError:
    exc.field = spec.attr + (exc.field or "")
    exc.offset = offset  # relative to the buffer; the frame decoder makes it a stream offset
    return exc


def locate_method_error(
    cls: type[Method], buf: bytes, o: int, end: int, depth: int, original: BaseException
) -> AMQPDecodeError:
    """The located error for ``cls``'s arguments in ``buf[o:end]`` that failed with ``original``."""
    return _locate(list(cls.FIELDS), f"{cls.NAME} arguments", buf, o, o, end, depth, original)


def locate_properties_error(
    cls: type[Properties], buf: bytes, o: int, end: int, depth: int, original: BaseException
) -> AMQPDecodeError:
    """The located error for a property list of ``cls`` in ``buf[o:end]``."""
    if o + 2 > end:
        return FrameSyntaxError("property flags cut off by the end of the frame", offset=o)
    flags = _U16(buf, o)[0]
    used = 0
    for bit in cls.FLAGS:
        used |= bit
    if flags & ~used:
        return FrameSyntaxError(f"property flags 0x{flags:04x} set bits no property uses", offset=o)
    present = [spec for spec, bit in zip(cls.FIELDS, cls.FLAGS, strict=True) if flags & bit]
    return _locate(present, "property list", buf, o, o + 2, end, depth, original)


def _locate(
    fields: list[FieldSpec],
    what: str,
    buf: bytes,
    start: int,
    o: int,
    end: int,
    depth: int,
    original: BaseException,
) -> AMQPDecodeError:
    try:
        stop = _walk(fields, buf, o, end, depth)
    except AMQPDecodeError as exc:
        return exc
    if stop != end:
        return FrameSyntaxError(f"{end - stop} bytes left over after the {what}", offset=stop)
    if isinstance(original, AMQPDecodeError):
        return original
    return FrameSyntaxError(f"malformed {what} ({original})", offset=start)
