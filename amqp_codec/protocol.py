"""What the frame decoder needs to know about one protocol version, and how to find it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .base import Method, Properties

MethodDecoder = Callable[[bytes, int, int, int], Method]
PropertiesDecoder = Callable[[bytes, int, int, int], Properties]


@dataclass(frozen=True)
class ProtocolSpec:
    """One generated protocol version, as exported by its package (``v0_9_1.SPEC``)."""

    name: str
    major: int
    minor: int
    revision: int
    methods: Mapping[tuple[int, int], type[Method]]
    method_decoders: Mapping[int, MethodDecoder]
    properties: Mapping[int, type[Properties]]
    property_decoders: Mapping[int, PropertiesDecoder]
    connection_class_id: int
    connection_close: type[Method]
    channel_close: type[Method]
    soft_errors: frozenset[int]
    reply_names: Mapping[int, str]
    frame_end: int

    def method_class(self, class_id: int, method_id: int) -> type[Method] | None:
        """The method class for (class id, method id), or None if this version has none."""
        return self.methods.get((class_id, method_id))


# Protocol header bytes after "AMQP" → generated package. RabbitMQ reads the old-style
# "AMQP 1 1 0 9" header of pre-0-9-1 clients as 0-9-1, and so does the decoder.
_HEADERS: dict[bytes, str] = {
    b"\x00\x00\x09\x01": "amqp_codec.v0_9_1",
    b"\x01\x01\x00\x09": "amqp_codec.v0_9_1",
}
# connection.start's (version-major, version-minor) → generated package.
_START_VERSIONS: dict[tuple[int, int], str] = {
    (0, 9): "amqp_codec.v0_9_1",
}
DEFAULT_PACKAGE = "amqp_codec.v0_9_1"


def _load(package: str) -> ProtocolSpec:
    spec = importlib.import_module(package).SPEC
    if not isinstance(spec, ProtocolSpec):
        raise TypeError(f"{package}.SPEC is not a ProtocolSpec")
    return spec


def spec_for_header(version: bytes) -> ProtocolSpec | None:
    """The spec for the four version bytes of a protocol header, or None if unsupported."""
    package = _HEADERS.get(bytes(version))
    return _load(package) if package else None


def spec_for_start(major: int, minor: int) -> ProtocolSpec | None:
    """The spec for connection.start's version fields, or None if unsupported."""
    package = _START_VERSIONS.get((major, minor))
    return _load(package) if package else None


def default_spec() -> ProtocolSpec:
    """AMQP 0-9-1, used when a stream does not say which version it speaks."""
    return _load(DEFAULT_PACKAGE)
