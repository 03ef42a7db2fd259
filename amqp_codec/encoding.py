"""Helpers shared by the generated encoders."""

from __future__ import annotations

from typing import Any

from .base import FieldSpec, Properties
from .errors import AMQPEncodeError
from .table import encode_table

#: The 256 one-octet byte strings, by value: short-string length prefixes and bit octets.
#: Indexing past 255 (a short string over 255 bytes) raises IndexError, which the generated
#: encoders turn into an AMQPEncodeError naming the field.
OCTETS: tuple[bytes, ...] = tuple(bytes((n,)) for n in range(256))

_RANGES = {
    "octet": (">B", 0, 2**8 - 1),
    "short": (">H", 0, 2**16 - 1),
    "long": (">I", 0, 2**32 - 1),
    "longlong": (">Q", 0, 2**64 - 1),
    "timestamp": (">Q", 0, 2**64 - 1),
}


def check_value(spec: FieldSpec, value: Any) -> None:
    """Raise :class:`AMQPEncodeError` if ``value`` cannot be encoded as ``spec`` says."""
    wire = spec.wire_type
    if wire == "bit":
        return  # any truthiness encodes
    if wire in _RANGES:
        _fmt, low, high = _RANGES[wire]
        if isinstance(value, bool) or not isinstance(value, int):
            raise AMQPEncodeError(
                f"{wire} takes an int, not {type(value).__name__}", field=spec.attr
            )
        if not low <= value <= high:
            raise AMQPEncodeError(
                f"{value} is out of range for {wire} ({low}..{high})", field=spec.attr
            )
    elif wire == "shortstr":
        if not isinstance(value, str):
            raise AMQPEncodeError(
                f"shortstr takes str, not {type(value).__name__}", field=spec.attr
            )
        try:
            raw = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as exc:
            raise AMQPEncodeError(
                f"not encodable as UTF-8: {exc.reason}", field=spec.attr
            ) from None
        if len(raw) > 255:
            raise AMQPEncodeError(
                f"shortstr is {len(raw)} bytes encoded; the limit is 255", field=spec.attr
            )
    elif wire == "longstr":
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise AMQPEncodeError(
                f"longstr takes bytes, not {type(value).__name__}", field=spec.attr
            )
        if len(value) > 0xFFFFFFFF:
            raise AMQPEncodeError("longstr longer than 4 GiB", field=spec.attr)
    elif wire == "table":
        encode_table(value, spec.attr)


def encode_failure(obj: Any) -> AMQPEncodeError:
    """Find the field of ``obj`` (a method or properties) whose value broke encoding.

    Called only after a fast encoder failed, so it can afford to check every field.
    """
    for spec in obj.FIELDS:
        value = getattr(obj, spec.attr)
        if value is None and isinstance(obj, Properties):
            continue  # an absent property
        try:
            check_value(spec, value)
        except AMQPEncodeError as exc:
            exc.reason = f"{type(obj).__name__}: {exc.reason}"
            return exc
    return AMQPEncodeError(f"{type(obj).__name__} could not be encoded")


__all__ = ["OCTETS", "check_value", "encode_failure"]
