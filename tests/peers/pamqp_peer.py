"""pamqp 4 as a differential-testing peer.

``pamqp.commands`` has one ``base.Frame`` subclass per method with ``__slots__`` in wire order
and the wire type of each in ``amqp_type(attr)``; ``pamqp.frame.marshal``/``unmarshal`` handle
whole frames, ``pamqp.encode``/``pamqp.decode`` the primitive types and field tables.
"""

from __future__ import annotations

import datetime as dt
import struct
import warnings
from collections.abc import Mapping
from typing import Any

import pamqp.base
import pamqp.body
import pamqp.commands
import pamqp.constants
import pamqp.decode
import pamqp.encode
import pamqp.frame
import pamqp.header
import pamqp.heartbeat

from amqp_codec.table import Timestamp

from ._common import PeerFrame, PeerHeader, datetime_to_timestamp

NAME = "pamqp"

Properties = pamqp.commands.Basic.Properties

# pamqp's validate() runs in every constructor and in marshal(). These are what it checks on
# short strings (exchange/queue names against a pattern and a length, the vhost length).
NAME_PATTERN = pamqp.constants.DOMAIN_REGEX["exchange-name"]
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:@#,/+ "
assert NAME_PATTERN.pattern == r"^[a-zA-Z0-9-_.:@#,/+ ]*$"  # NAME_CHARS mirrors it
assert pamqp.constants.DOMAIN_REGEX["queue-name"].pattern == NAME_PATTERN.pattern
MAX_VALIDATED_NAME = 127  # len() limit for exchange/source/destination/virtual_host (queue: 256)


# -- registry -----------------------------------------------------------------------------


def method_registry() -> dict[tuple[int, int], type]:
    """pamqp's own method table, ``pamqp.commands.INDEX_MAPPING``, keyed by (class, method)."""
    return {
        (index >> 16, index & 0xFFFF): cls for index, cls in pamqp.commands.INDEX_MAPPING.items()
    }


def attrs(cls: type) -> tuple[str, ...]:
    """The field attributes of a pamqp method or properties class, in wire order."""
    return tuple(cls.__slots__)


def wire_types(cls: type) -> tuple[str, ...]:
    """pamqp's own wire type of each field (its generated ``_attr`` class attributes)."""
    return tuple(cls.amqp_type(name) for name in attrs(cls))


PROPERTY_ATTRS = attrs(Properties)


def _construct(cls: type, kwargs: dict[str, Any]) -> Any:
    with warnings.catch_warnings():
        # Basic.RecoverAsync warns that it is deprecated each time it is constructed.
        warnings.simplefilter("ignore", DeprecationWarning)
        return cls(**kwargs)


# -- methods ------------------------------------------------------------------------------


def build_method(cls: type, values: Mapping[int, Any]) -> Any:
    names = attrs(cls)
    return _construct(cls, {names[i]: v for i, v in values.items()})


def method_values(method: Any) -> list[Any]:
    return [getattr(method, name) for name in attrs(type(method))]


def encode_method_frame(channel: int, method: Any) -> bytes:
    return pamqp.frame.marshal(method, channel)


def encode_method_payload(method: Any) -> bytes:
    return struct.pack(">I", method.index) + method.marshal()


def decode_method_payload(payload: bytes) -> Any:
    (index,) = struct.unpack_from(">I", payload)
    method = _construct(pamqp.commands.INDEX_MAPPING[index], {})
    method.unmarshal(payload[4:])
    return method


# -- content ------------------------------------------------------------------------------


def build_properties(values: Mapping[int, Any]) -> Any:
    return Properties(**{PROPERTY_ATTRS[i]: v for i, v in values.items()})


def properties_values(properties: Any) -> list[Any]:
    return [getattr(properties, name) for name in PROPERTY_ATTRS]


def encode_header_frame(channel: int, body_size: int, properties: Any) -> bytes:
    return pamqp.frame.marshal(pamqp.header.ContentHeader(0, body_size, properties), channel)


def encode_body_frame(channel: int, payload: bytes) -> bytes:
    return pamqp.frame.marshal(pamqp.body.ContentBody(payload), channel)


def encode_protocol_header() -> bytes:
    return pamqp.frame.marshal(pamqp.header.ProtocolHeader(), 0)


def encode_heartbeat() -> bytes:
    return pamqp.frame.marshal(pamqp.heartbeat.Heartbeat(), 0)


def decode_frames(data: bytes) -> list[PeerFrame]:
    """Every frame in ``data``, through ``pamqp.frame.unmarshal``."""
    frames = []
    offset = 0
    while offset < len(data):
        with warnings.catch_warnings():  # unmarshal constructs the method: see _construct
            warnings.simplefilter("ignore", DeprecationWarning)
            consumed, channel, frame = pamqp.frame.unmarshal(data[offset:])
        offset += consumed
        frames.append(_peer_frame(frame, channel, consumed))
    return frames


def _peer_frame(frame: Any, channel: int, size: int) -> PeerFrame:
    if isinstance(frame, pamqp.base.Frame):
        return PeerFrame("method", channel, frame, size)
    if isinstance(frame, pamqp.header.ContentHeader):
        header = PeerHeader(frame.class_id, frame.weight, frame.body_size, frame.properties)
        return PeerFrame("header", channel, header, size)
    if isinstance(frame, pamqp.body.ContentBody):
        return PeerFrame("body", channel, frame.value, size)
    if isinstance(frame, pamqp.heartbeat.Heartbeat):
        return PeerFrame("heartbeat", channel, None, size)
    if isinstance(frame, pamqp.header.ProtocolHeader):
        return PeerFrame("protocol-header", channel, frame, size)
    raise AssertionError(f"unexpected pamqp frame {frame!r}")


# -- field tables -------------------------------------------------------------------------


def encode_table(table: dict[str, Any]) -> bytes:
    return pamqp.encode.field_table(table)


def decode_table(buf: bytes) -> tuple[dict[str, Any], int]:
    """The table and the offset just after it."""
    consumed, table = pamqp.decode.field_table(buf)
    return table, consumed


def sorted_like_pamqp(value: Any) -> Any:
    """pamqp.encode.field_table writes a table's entries sorted by key (``sorted(items())``),
    at every nesting level, instead of in the dict's order: what reaches the wire, and so
    what any decoder sees, is the sorted table."""
    if isinstance(value, dict):
        return {k: sorted_like_pamqp(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [sorted_like_pamqp(v) for v in value]
    return value


# -- normalisation: pamqp's representation -> amqp_codec's --------------------------------


def longstr(value: str | bytes) -> bytes:
    """pamqp decodes a long string to ``str`` when it is valid UTF-8 (``bytes`` otherwise)
    and only sends ``str``; amqp_codec's long strings are always ``bytes``."""
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def byte_array(value: bytearray) -> bytes:
    """pamqp decodes field-table byte arrays ('x') to ``bytearray`` and encodes only
    ``bytearray`` as 'x'; amqp_codec uses ``bytes``."""
    return bytes(value)


def cluster_id(value: str | None) -> str | None:
    """pamqp's Basic.Properties defaults cluster_id to '' (not None) and its marshal() drops
    empty strings, so for pamqp '' means "absent"."""
    return None if value == "" else value


def table_value(value: Any) -> Any:
    """A field-table value (or whole table) as pamqp represents it -> amqp_codec's form."""
    if isinstance(value, bytearray):
        return byte_array(value)
    if isinstance(value, dt.datetime):
        return datetime_to_timestamp(value)
    if isinstance(value, dict):
        return {k: table_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [table_value(v) for v in value]
    return value


def field(wire_type: str, value: Any) -> Any:
    """A method field value as pamqp represents it -> amqp_codec's form."""
    if wire_type == "longstr":
        return longstr(value)
    if wire_type == "table":
        return table_value(value if value is not None else {})
    if wire_type == "timestamp":
        return timestamp(value)
    return value


def timestamp(value: dt.datetime) -> Timestamp:
    """pamqp decodes the timestamp property to an aware datetime."""
    return datetime_to_timestamp(value)


def property_value(wire_type: str, attr: str, value: Any) -> Any:
    """A content property as pamqp represents it (None = absent) -> amqp_codec's form."""
    if attr == "cluster_id":
        value = cluster_id(value)
    if value is None:
        return None
    return field(wire_type, value)
