"""Hypothesis strategies for AMQP, generated from the spec: fuzz your broker or client.

Install with ``pip install 'amqp-codec[testing]'``. Every strategy takes ``spec=``: a
generated package (``amqp_codec.v0_8``, ``amqp_codec.v0_9_1`` (the default),
``amqp_codec.v0_10_draft``, or one generated from your own XML with ``python -m codegen
--spec ... --out ...``) or its ``SPEC``. The per-field strategies are read from the package's
``FIELDS`` and the spec's checks on them (``FieldSpec.checks``), so nothing is kept by hand.

Importing this module registers every generated method, property and struct class with
``st.from_type``; :func:`register` does the same for a package of your own.

``import amqp_codec`` never imports this module (nor hypothesis).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from hypothesis import strategies as st

from amqp_codec.base import Method
from amqp_codec.frames import Frame
from amqp_codec.protocol import ProtocolSpec

from . import _damage, _draft, _frames, _model, _streams
from ._damage import DamagedStream
from ._frames import MessageExample
from ._streams import StreamExample
from ._version import resolve
from .checks import violations
from .tables import build_table, build_value, table_models, tvs

__all__ = [
    "DamagedStream",
    "MessageExample",
    "StreamExample",
    "chunked",
    "damaged",
    "field_tables",
    "field_values",
    "frames",
    "messages",
    "methods",
    "properties",
    "register",
    "streams",
    "violations",
]

Spec = ModuleType | ProtocolSpec | None


def methods(
    spec: Spec = None,
    *,
    include: Iterable[str | type[Method]] | None = None,
    valid: bool = True,
) -> st.SearchStrategy[Method]:
    """Method instances of any method of ``spec`` (or of those ``include`` names:
    ``"basic.publish"`` or method classes).

    ``valid=True`` honours every check the spec states on a field (lengths, regexps,
    ``notnull``, value ranges) and leaves reserved fields at their required values;
    ``valid=False`` ignores the checks and sets reserved fields to anything (still
    encodable). Shrinks towards the first method in (class id, method id) order.
    """
    version = resolve(spec)
    return _frames.any_method(version, _frames.pick_classes(version, include), valid)


def properties(spec: Spec = None) -> st.SearchStrategy[Any]:
    """Content-header property objects (``BasicProperties`` and the other content classes'),
    each property present or absent; for the 0-10 draft, its header structs
    (``DeliveryProperties``, ``MessageProperties``)."""
    version = resolve(spec)
    if version.draft:
        return st.sampled_from(version.header_structs).flatmap(
            lambda cls: _model.structs(version, cls)
        )
    return st.sampled_from(version.properties).flatmap(lambda cls: _model.properties(version, cls))


def field_values(spec: Spec = None, *, max_depth: int = 3) -> st.SearchStrategy[Any]:
    """Field-table values of every tag (0-10 draft: type code) the version knows, nested
    tables and arrays at most ``max_depth`` deep: plain Python values where the codec's
    default mapping gives the tag, :class:`~amqp_codec.Tagged` (draft:
    :class:`~amqp_codec.wire010.Typed`) where it must be forced."""
    version = resolve(spec)
    if version.draft:
        return _draft.typed_values(version, max_depth)
    return tvs(tags=version.tags, max_depth=max_depth).map(build_value)


def field_tables(spec: Spec = None, *, max_depth: int = 3) -> st.SearchStrategy[Any]:
    """Field tables (:class:`~amqp_codec.FieldTable`; draft: ``wire010.FieldTable``) holding
    :func:`field_values`, duplicate keys included, nested at most ``max_depth`` deep."""
    version = resolve(spec)
    if version.draft:
        return _draft.tables(version, max_depth=max(0, max_depth - 1))
    models = table_models(max_size=6, tags=version.tags, max_depth=max(0, max_depth - 1))
    return models.map(build_table)


def frames(
    spec: Spec = None, *, channel: int | None = None, frame_max: int | None = None
) -> st.SearchStrategy[Frame]:
    """Method, content header, body and heartbeat frames on the channels the spec allows:
    the connection class and heartbeats on channel 0, everything else on ``channel`` (any
    of 1..65535 when None; ``channel=0`` gives only channel-0 frames). With ``frame_max``
    every frame fits it."""
    return _frames.frames(resolve(spec), channel, frame_max)


def messages(
    spec: Spec = None, *, frame_max: int | None = None
) -> st.SearchStrategy[MessageExample]:
    """A content method with its properties and body, and the frames it is split into for
    ``frame_max`` (drawn when None) with their bytes: a :class:`MessageExample`."""
    return _frames.messages(resolve(spec), frame_max)


def streams(spec: Spec = None, *, direction: str = "client") -> st.SearchStrategy[StreamExample]:
    """A whole valid one-direction byte stream of a connection: a :class:`StreamExample`
    with ``.data`` and ``.frames`` (what a decoder must return, in order).

    The client side opens with the protocol header; then the handshake in order
    (start-ok, secure-ok rounds, tune-ok within the server's limits, open; the server side:
    start, secure, tune, open-ok), channels opened before use, content after its method and
    split within the negotiated frame_max, heartbeats, and a connection.close at the end or
    not. Shrinks towards the handshake alone.
    """
    if direction not in _streams.DIRECTIONS:
        raise ValueError(f"direction must be 'client' or 'server', not {direction!r}")
    return _streams.streams(resolve(spec), direction)


def chunked(data: Any) -> st.SearchStrategy[Any]:
    """``data`` cut into random pieces, empty pieces included.

    Given bytes, draws a tuple of pieces; given a strategy of streams (:func:`streams`,
    :func:`damaged`), draws the same examples with ``.chunks`` set.
    """
    if isinstance(data, st.SearchStrategy):
        return data.flatmap(_streams.with_chunks)
    return _streams.cut(bytes(data))


def damaged(
    streams_strategy: st.SearchStrategy[StreamExample] | None = None,
    *,
    spec: Spec = None,
    kinds: Iterable[str] | None = None,
) -> st.SearchStrategy[DamagedStream]:
    """The streams of ``streams_strategy`` (default ``streams(spec)``) broken in one way.

    A :class:`DamagedStream` with ``.data``, ``.kind`` (one of :data:`DAMAGE_KINDS`: cut
    short, a flipped bit, a frame size that lies short, long or huge, a wrong frame-end
    octet, an unknown class or method id, a frame over frame_max, tables nested too deep,
    and for the 0-10 draft an array of void elements with a huge count), ``.offset`` (the
    stream offset of the damage) and ``.frame_max`` (the limit the decoder must enforce).
    The kind is recorded with ``hypothesis.event`` and shown in a failing example.
    ``kinds`` restricts the damage to some kinds. The version is the streams' own; ``spec``
    names it when the streams come from elsewhere (and picks the default streams).
    """
    version = resolve(spec) if spec is not None or streams_strategy is None else None
    if streams_strategy is None:
        streams_strategy = _streams.streams(resolve(spec), "client")
    chosen = None if kinds is None else tuple(kinds)
    if chosen is not None:
        available = _damage.kinds_for(version) if version else _damage.KINDS
        unknown = [k for k in chosen if k not in available]
        if unknown or not chosen:
            raise ValueError(f"damage kinds are {', '.join(available)}, not {unknown or 'none'}")
    return _damage.damaged(version, streams_strategy, chosen)


DAMAGE_KINDS = _damage.KINDS


def register(spec: Spec = None) -> None:
    """Register ``spec``'s method, property and struct classes with ``st.from_type``."""
    version = resolve(spec)

    # Resolvers, not strategies: nothing is built until from_type asks for a class.
    def method_of(cls: type[Any]) -> st.SearchStrategy[Any]:
        return _model.methods(version, cls)

    def properties_of(cls: type[Any]) -> st.SearchStrategy[Any]:
        return _model.properties(version, cls)

    def struct_of(cls: type[Any]) -> st.SearchStrategy[Any]:
        return _model.structs(version, cls)

    for cls in version.methods:
        st.register_type_strategy(cls, method_of)
    for props in version.properties:
        st.register_type_strategy(props, properties_of)
    for struct in version.structs.values():
        st.register_type_strategy(struct, struct_of)


def _register_builtins() -> None:
    from amqp_codec import v0_8, v0_9_1, v0_10_draft

    for package in (v0_9_1, v0_8, v0_10_draft):
        register(package)


_register_builtins()
