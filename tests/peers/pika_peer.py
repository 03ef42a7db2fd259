"""pika 1.4 as a differential-testing peer.

pika's generated ``pika.spec`` has one class per method with ``encode() -> list[bytes]`` and
``decode(buf, offset)``; ``pika.frame`` builds and parses whole frames and ``pika.data``
holds the field-table codec. Fields are the ``__init__`` parameters, in wire order.
"""

from __future__ import annotations

import datetime as dt
import inspect
import struct
from collections.abc import Mapping
from functools import cache
from typing import Any

import pika.compat
import pika.data
import pika.frame
import pika.spec

from amqp_codec.table import Timestamp

from ._common import PeerFrame, PeerHeader, datetime_to_timestamp

NAME = "pika"

#: pika.compat.long: an int subclass that makes pika encode a table value as 'l'.
LONG = pika.compat.long


# -- registry -----------------------------------------------------------------------------


def method_registry() -> dict[tuple[int, int], type]:
    """pika's own method table, ``pika.spec.methods``, keyed by (class id, method id)."""
    return {(index >> 16, index & 0xFFFF): cls for index, cls in pika.spec.methods.items()}


@cache
def attrs(cls: type) -> tuple[str, ...]:
    """The field attributes of a pika method or property class, in wire order."""
    return tuple(p for p in inspect.signature(cls.__init__).parameters if p != "self")


PROPERTY_ATTRS = attrs(pika.spec.BasicProperties)


# -- methods ------------------------------------------------------------------------------


def build_method(cls: type, values: Mapping[int, Any]) -> Any:
    """An instance of ``cls`` with field number ``i`` set to ``values[i]`` (others default)."""
    names = attrs(cls)
    return cls(**{names[i]: v for i, v in values.items()})


def method_values(method: Any) -> list[Any]:
    if isinstance(method, pika.spec.Connection.UpdateSecret):
        return update_secret_values(method)
    return [getattr(method, name) for name in attrs(type(method))]


def update_secret_values(method: Any) -> list[Any]:
    """pika's Connection.UpdateSecret.decode() stores the new-secret it reads in
    ``self.mechanisms`` (a slip copied from Connection.Start) and never sets ``new_secret``;
    the bytes it reads are right, so a decoded instance is read from there."""
    if "mechanisms" in vars(method):  # decoded
        return [method.mechanisms, method.reason]
    return [method.new_secret, method.reason]


def encode_method_frame(channel: int, method: Any) -> bytes:
    return pika.frame.Method(channel, method).marshal()


def encode_method_payload(method: Any) -> bytes:
    return struct.pack(">I", method.INDEX) + b"".join(method.encode())


def decode_method_payload(payload: bytes) -> Any:
    (index,) = struct.unpack_from(">I", payload)
    return _blank(pika.spec.methods[index]).decode(payload, 4)


@cache
def needs_arguments(cls: type) -> bool:
    """pika's Connection.UpdateSecret.__init__ has required parameters (new_secret, reason),
    while pika.frame.decode_frame builds every method with ``cls()`` before ``decode()``: it
    raises TypeError on an update-secret frame. For such classes the adapter splits the frame
    itself and calls pika's ``decode()`` on an instance made without ``__init__``."""
    parameters = inspect.signature(cls.__init__).parameters.values()
    return any(p.default is inspect.Parameter.empty for p in parameters if p.name != "self")


def _blank(cls: type) -> Any:
    return cls.__new__(cls) if needs_arguments(cls) else cls()


# -- content ------------------------------------------------------------------------------


def build_properties(values: Mapping[int, Any]) -> Any:
    return pika.spec.BasicProperties(**{PROPERTY_ATTRS[i]: v for i, v in values.items()})


def properties_values(properties: Any) -> list[Any]:
    return [getattr(properties, name) for name in PROPERTY_ATTRS]


def encode_header_frame(channel: int, body_size: int, properties: Any) -> bytes:
    return pika.frame.Header(channel, body_size, properties).marshal()


def encode_body_frame(channel: int, payload: bytes) -> bytes:
    return pika.frame.Body(channel, payload).marshal()


def encode_protocol_header() -> bytes:
    return pika.frame.ProtocolHeader().marshal()


def encode_heartbeat() -> bytes:
    return pika.frame.Heartbeat().marshal()


def decode_frames(data: bytes) -> list[PeerFrame]:
    """Every frame in ``data``, through ``pika.frame.decode_frame``."""
    frames = []
    offset = 0
    while offset < len(data):
        consumed, frame = _decode_frame(data[offset:])
        if not consumed or frame is None:
            raise AssertionError(f"pika could not decode a frame at offset {offset}")
        offset += consumed
        frames.append(_peer_frame(frame, consumed))
    return frames


def _decode_frame(data: bytes) -> tuple[int, Any]:
    frame_type, channel, size = struct.unpack_from(">BHI", data)
    if frame_type == pika.spec.FRAME_METHOD and len(data) >= 12:
        cls = pika.spec.methods.get(struct.unpack_from(">I", data, 7)[0])
        if cls is not None and needs_arguments(cls):  # see needs_arguments
            if data[7 + size] != pika.spec.FRAME_END:
                raise AssertionError("bad frame end")
            method = _blank(cls).decode(data[7 : 7 + size], 4)
            return 8 + size, pika.frame.Method(channel, method)
    return pika.frame.decode_frame(data)


def _peer_frame(frame: Any, size: int) -> PeerFrame:
    if isinstance(frame, pika.frame.Method):
        return PeerFrame("method", frame.channel_number, frame.method, size)
    if isinstance(frame, pika.frame.Header):
        # pika reads the class id only to pick the properties class and drops the weight.
        header = PeerHeader(frame.properties.INDEX, None, frame.body_size, frame.properties)
        return PeerFrame("header", frame.channel_number, header, size)
    if isinstance(frame, pika.frame.Body):
        return PeerFrame("body", frame.channel_number, frame.fragment, size)
    if isinstance(frame, pika.frame.Heartbeat):
        return PeerFrame("heartbeat", frame.channel_number, None, size)
    if isinstance(frame, pika.frame.ProtocolHeader):
        return PeerFrame("protocol-header", 0, frame, size)
    raise AssertionError(f"unexpected pika frame {frame!r}")


# -- field tables -------------------------------------------------------------------------


def encode_table(table: dict[str, Any]) -> bytes:
    pieces: list[bytes] = []
    pika.data.encode_table(pieces, table)
    return b"".join(pieces)


def decode_table(buf: bytes) -> tuple[dict[Any, Any], int]:
    """The table and the offset just after it."""
    return pika.data.decode_table(buf, 0)


# -- normalisation: pika's representation -> amqp_codec's ---------------------------------


def shortstr(value: str | bytes) -> str:
    """pika returns a short string as ``bytes`` when it is not valid UTF-8 (and accepts bytes
    to send); amqp_codec keeps every short string a ``str``, undecodable bytes as
    surrogateescapes."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return value


def longstr(value: str | bytes) -> bytes:
    """pika's generated spec shadows ``str`` with ``bytes``, so a decoded long string is
    ``bytes`` already; a ``str`` (what pika accepts to send) is its UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8")
    return value


def long_marker(value: pika.compat.long) -> int:
    """pika decodes 'l'/'L' table values as ``pika.compat.long``, an int subclass that only
    marks "send as 'l'"; the number is the same."""
    return int(value)


def property_timestamp(value: int) -> Timestamp:
    """pika hands the timestamp *property* out as a plain int of seconds (tables give a
    datetime); amqp_codec gives a Timestamp (an int subclass) in both places."""
    return Timestamp(value)


def table_value(value: Any) -> Any:
    """A field-table value (or whole table) as pika represents it -> amqp_codec's form."""
    if isinstance(value, dt.datetime):
        return datetime_to_timestamp(value)
    if isinstance(value, pika.compat.long):
        return long_marker(value)
    if isinstance(value, dict):
        return {shortstr(k): table_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [table_value(v) for v in value]
    return value


def field(wire_type: str, value: Any) -> Any:
    """A method field value as pika represents it -> amqp_codec's form."""
    if wire_type == "shortstr":
        return shortstr(value)
    if wire_type == "longstr":
        return longstr(value)
    if wire_type == "table":
        return table_value(value if value is not None else {})
    if wire_type == "timestamp":
        return property_timestamp(value)
    return value


def property_value(wire_type: str, attr: str, value: Any) -> Any:
    """A content property as pika represents it (None = absent) -> amqp_codec's form."""
    if value is None:
        return None
    return field(wire_type, value)
