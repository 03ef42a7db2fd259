"""What the frame decoder needs to know about one protocol version, and how to find it."""

from __future__ import annotations

import functools
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
    wire_format: str = "0-9"
    """How frames are laid out: ``"0-9"`` (0-8, 0-9-1) or ``"0-10-draft"`` (99-0, see
    :mod:`amqp_codec.wire010`)."""
    table_tags: frozenset[str] | None = None
    """The field-table value tags the version defines (0-8: S I D T F); ``None``: every tag
    the codec knows. :class:`~amqp_codec.FrameDecoder` enforces it unless told otherwise."""

    def method_class(self, class_id: int, method_id: int) -> type[Method] | None:
        """The method class for (class id, method id), or None if this version has none."""
        return self.methods.get((class_id, method_id))


# Protocol header bytes after "AMQP" → generated package. RabbitMQ reads the old-style
# "AMQP 1 1 0 9" header of pre-0-9-1 clients as 0-9-1, and so does the decoder. 0-8 clients
# send "AMQP 1 1 8 0"; old ones sent "AMQP 1 1 9 1" for 0-8, which RabbitMQ answers in 0-8.
_HEADERS: dict[bytes, str] = {
    b"\x00\x00\x09\x01": "amqp_codec.v0_9_1",
    b"\x01\x01\x00\x09": "amqp_codec.v0_9_1",
    b"\x01\x01\x08\x00": "amqp_codec.v0_8",
    b"\x01\x01\x09\x01": "amqp_codec.v0_8",
    # 99-0, Qpid's 0-10 preview; its builds from Nov 2007 to Feb 2008 sent 0-10 for it.
    b"\x01\x01\x63\x00": "amqp_codec.v0_10_draft",
    b"\x01\x01\x00\x0a": "amqp_codec.v0_10_draft",
}
# connection.start's (version-major, version-minor) → generated package. A 0-8 server
# sends major 8, minor 0 (as its XML's root says).
_START_VERSIONS: dict[tuple[int, int], str] = {
    (0, 9): "amqp_codec.v0_9_1",
    (8, 0): "amqp_codec.v0_8",
}
# The same, for a connection.start in 99-0's 12-byte frame (Qpid sent 0-10 before 99-0).
_DRAFT_START_VERSIONS: dict[tuple[int, int], str] = {
    (99, 0): "amqp_codec.v0_10_draft",
    (0, 10): "amqp_codec.v0_10_draft",
}
DEFAULT_PACKAGE = "amqp_codec.v0_9_1"


# Cached: the analysis looks versions up four times a connection (``spec_named`` took 2.4 us
# through ``importlib`` each time).
@functools.cache
def _load(package: str) -> ProtocolSpec:
    spec = importlib.import_module(package).SPEC
    if not isinstance(spec, ProtocolSpec):
        raise TypeError(f"{package}.SPEC is not a ProtocolSpec")
    return spec


def spec_for_header(version: bytes) -> ProtocolSpec | None:
    """The spec for the four version bytes of a protocol header, or None if unsupported."""
    package = _HEADERS.get(bytes(version))
    return _load(package) if package else None


def spec_for_start(major: int, minor: int, draft_frame: bool = False) -> ProtocolSpec | None:
    """The spec for connection.start's version fields, or None if unsupported.

    ``draft_frame``: the connection.start came in 99-0's 12-byte frame.
    """
    package = (_DRAFT_START_VERSIONS if draft_frame else _START_VERSIONS).get((major, minor))
    return _load(package) if package else None


def client_header(spec: ProtocolSpec) -> bytes:
    """The four version bytes a client sends after ``AMQP`` to speak ``spec``: the first
    header registered for it (0-9-1: ``0 0 9 1``; 0-8: ``1 1 8 0``)."""
    for version, package in _HEADERS.items():
        if _load(package) is spec:
            return version
    raise ValueError(f"no protocol header is registered for AMQP {spec.name}")


def spec_named(name: str | None) -> ProtocolSpec | None:
    """The built-in version called ``name`` (``0-9-1``, ``0-8``, ``99-0``), or None."""
    for package in dict.fromkeys(_HEADERS.values()):
        spec = _load(package)
        if spec.name == name:
            return spec
    return None


def default_spec() -> ProtocolSpec:
    """AMQP 0-9-1, used when a stream does not say which version it speaks."""
    return _load(DEFAULT_PACKAGE)
