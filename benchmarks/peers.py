"""One adapter per library: the code that is timed, and how its results are normalised.

Every timed operation is a :class:`Bench`: a ``timeit`` statement (inlined into timeit's
loop, so no extra Python call wraps it) and the namespace it runs in. Names a client would
hoist (bound methods, imported functions, prebuilt inputs) live in the namespace, for every
library alike. The statement leaves its result in ``_r``; the verification step runs it once
and normalises ``_r`` with the adapter's ``norm_*`` methods (see :mod:`benchmarks.normalize`).

For each workload each adapter uses the library's fastest honest path: its public API, or
what its own client does (pika's ``Connection._on_data_available`` / ``_send_message``,
py-amqp's ``Transport.read_frame`` / ``frame_writer`` / ``serialization.loads``, an aiorabbit-
style receive buffer around ``pamqp.frame.unmarshal``). Where we had a choice we picked the
cheaper variant for the peer, never for us; the README lists every such decision.
"""

from __future__ import annotations

import collections
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from struct import unpack_from
from typing import Any

from . import fixtures as fx
from . import normalize as norm


@dataclass
class Bench:
    """One timed operation: ``stmt`` executed in ``ns``; the result is left in ``_r``."""

    stmt: str
    ns: dict[str, Any]
    note: str = ""


class Unsupported(Exception):
    """The library has no way to do this workload (the reason is the message)."""


def _kwargs(values: dict[str, Any], prefix: str, rename: dict[str, str] | None = None) -> str:
    """Source text ``a=P_a, b=P_b`` for keyword arguments read from the namespace."""
    rename = rename or {}
    return ", ".join(f"{rename.get(k, k)}={prefix}{k}" for k in values)


def _ns_values(values: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {f"{prefix}{k}": v for k, v in values.items()}


def _chunks_bench(run: Callable[[list[bytes]], list[Any]], stream: fx.Stream, note: str) -> Bench:
    """``run``, a library's whole receive path, over the stream's chunks (4 KiB in workload 6, 64 KiB in 7)."""
    return Bench("_r = run(chunks)", {"run": run, "chunks": stream.chunks}, note)


def _slicing_loop(decode: str, consumed: str) -> str:
    """Timed statement: decode the frames in ``data`` into the list ``_r``, trimming the buffer
    ``_b`` by slicing off ``consumed`` bytes after each one.

    ``decode`` (loop-body lines, indented) leaves the next frame in ``_f`` or breaks.
    """
    return f"_b = data\n_r = []\nwhile _b:\n{decode}\n    _b = _b[{consumed}:]\n    _r.append(_f)"


#: Basic.Publish from the ``M_*`` values, for the libraries that have a method class for it.
_PUBLISH_METHOD = f"Publish({_kwargs(fx.PUBLISH_FIELDS, 'M_')})"


def _publish_bench(
    construct: bool,
    names: dict[str, Any],
    props: dict[str, Any],
    template: str,
    note: str,
    **built: str,
) -> Bench:
    """A ``publish_encode`` bench.

    The namespace is ``names`` (the library's callables, classes and constants), then the
    method fields as ``M_*`` and the property values ``props`` as ``P_*``. ``built`` maps each
    ``{NAME}`` in ``template`` to the source that builds that object from those values: with
    ``construct`` the source is inlined into the timed statement; without, it is evaluated
    once (in ``built``'s order) into ``NAME`` in the namespace, and the statement uses that.
    """
    ns = {**names, **_ns_values(fx.PUBLISH_FIELDS, "M_"), **_ns_values(props, "P_")}
    if construct:
        stmt = template.format(**built)
    else:
        for name, source in built.items():
            ns[name] = eval(source, ns)
        stmt = template.format(**{name: name for name in built})
    return Bench(stmt, ns, note)


class _Adapter:
    """What the adapters share: tables normalise as they are; an encoding result is bytes-like."""

    key: str
    label: str
    version: str

    def norm_table(self, t: Any) -> Any:
        return norm.value(t)

    def encoded(self, r: Any) -> bytes:
        return bytes(r)

    def norm_frame(self, f: Any) -> tuple[Any, ...]:
        raise NotImplementedError

    def norm_message(self, r: Any) -> list[Any]:
        """A whole message as ``(method frame, header frame, channel, body)`` in the library's
        own frame forms: normalised as the three frames of a message with one body frame."""
        method, header, channel, body = r
        return [self.norm_frame(method), self.norm_frame(header), ("body", channel, bytes(body))]


class _FrameListAdapter(_Adapter):
    """An adapter whose publish result is a list of marshalled frames (pika, pamqp)."""

    def encoded(self, r: Any) -> bytes:
        return b"".join(r) if isinstance(r, list) else bytes(r)


def _norm_object_frame(
    f: Any, kinds: tuple[type[Any], ...], channel: str, payload: str
) -> tuple[Any, ...]:
    """``norm_frame`` for a library with one class per frame type.

    ``kinds`` are its method, content header, content body and heartbeat frame classes;
    ``channel`` and ``payload`` name the attributes holding the channel and the body bytes.
    """
    method, header, body, heartbeat = kinds
    if isinstance(f, method):
        return ("method", getattr(f, channel), norm.method_from_attrs(f.method.INDEX, f.method))
    if isinstance(f, header):
        p = f.properties
        return (
            "header",
            getattr(f, channel),
            f.body_size,
            norm.properties({a: getattr(p, a) for a in norm.PROPERTY_ATTRS}),
        )
    if isinstance(f, body):
        return ("body", getattr(f, channel), bytes(getattr(f, payload)))
    if isinstance(f, heartbeat):
        return ("heartbeat", 0)
    raise TypeError(f)


# ============================================================================================
# amqp-codec (ours)
# ============================================================================================


class Ours(_Adapter):
    key = "ours"
    label = "amqp-codec"

    def __init__(self) -> None:
        import amqp_codec as ac
        from amqp_codec import v0_9_1

        self.ac = ac
        self.spec = v0_9_1
        self.version = version("amqp-codec")

    # -- decoding -----------------------------------------------------------------------

    def _decoder_ns(self, data: Any) -> dict[str, Any]:
        dec = self.ac.FrameDecoder(self.spec, frame_max=fx.FRAME_MAX)
        return {
            "receive": dec.receive_data,
            "next_frame": dec.next_frame,
            "NEED_DATA": self.ac.NEED_DATA,
            "data": data,
        }

    def deliver_decode(self, frame: bytes) -> Bench:
        return Bench(
            "receive(data)\n_r = next_frame()",
            self._decoder_ns(frame),
            "FrameDecoder.receive_data + next_frame (one long-lived decoder)",
        )

    header_decode = deliver_decode

    def message_decode(self, buf: bytes) -> Bench:
        stmt = (
            "receive(data)\n_r = []\nwhile (f := next_frame()) is not NEED_DATA:\n    _r.append(f)"
        )
        return Bench(stmt, self._decoder_ns(buf), "receive_data, then next_frame until NEED_DATA")

    def stream_decode(self, stream: fx.Stream) -> Bench:
        return _chunks_bench(
            self._stream,
            stream,
            "new FrameDecoder per run; receive_data per chunk, next_frame until NEED_DATA",
        )

    def _stream(self, chunks: list[bytes]) -> list[Any]:
        dec = self.ac.FrameDecoder(self.spec, frame_max=fx.FRAME_MAX)
        receive = dec.receive_data
        next_frame = dec.next_frame
        need_data = self.ac.NEED_DATA
        out: list[Any] = []
        append = out.append
        for data in chunks:
            receive(data)
            while (frame := next_frame()) is not need_data:
                append(frame)
        return out

    def message_assemble(self, stream: fx.Stream) -> Bench:
        return _chunks_bench(
            self._message,
            stream,
            "new MessageDecoder per run; receive_data per chunk, next_item until NEED_DATA",
        )

    def _message(self, chunks: list[bytes]) -> Any:
        dec = self.ac.MessageDecoder(self.spec, frame_max=fx.FRAME_MAX)
        receive = dec.receive_data
        next_item = dec.next_item
        need_data = self.ac.NEED_DATA
        out: list[Any] = []
        for data in chunks:
            receive(data)
            while (item := next_item()) is not need_data:
                out.append(item)
        (message,) = out
        return message

    def table_decode(self, buf: bytes) -> Bench:
        from amqp_codec.table import decode_table

        return Bench(
            "_r = decode_table(data, 0, len(data))[0]",
            {"decode_table": decode_table, "data": buf},
            "amqp_codec.table.decode_table -> FieldTable",
        )

    # -- encoding -----------------------------------------------------------------------

    def table_encode(self, table: dict[str, Any]) -> Bench:
        from amqp_codec.table import encode_table

        return Bench(
            "_r = encode_table(table)",
            {"encode_table": encode_table, "table": table},
            "amqp_codec.table.encode_table(plain dict)",
        )

    def publish_encode(self, construct: bool) -> Bench:
        from amqp_codec.v0_9_1 import Basic, BasicProperties

        values = fx.PUBLISH_PROPERTIES_VALUES
        return _publish_bench(
            construct,
            {
                "encode_message": self.ac.encode_message,
                "Publish": Basic.Publish,
                "BasicProperties": BasicProperties,
                "BODY": fx.BODY_1K,
                "FRAME_MAX": fx.FRAME_MAX,
            },
            values,
            "_r = encode_message(1, {METHOD}, {PROPS}, BODY, FRAME_MAX)",
            "encode_message(channel, Basic.Publish, BasicProperties, body, frame_max) -> bytes",
            METHOD=_PUBLISH_METHOD,
            PROPS=f"BasicProperties({_kwargs(values, 'P_')})",
        )

    # -- normalisation --------------------------------------------------------------------

    def norm_frame(self, f: Any) -> tuple[Any, ...]:
        ac = self.ac
        kinds = (ac.MethodFrame, ac.ContentHeaderFrame, ac.ContentBodyFrame, ac.HeartbeatFrame)
        return _norm_object_frame(f, kinds, "channel", "payload")

    def norm_message(self, r: Any) -> list[Any]:
        ac = self.ac
        header = ac.ContentHeaderFrame(r.channel, r.method.CLASS_ID, len(r.body), r.properties)
        return super().norm_message(
            (ac.MethodFrame(r.channel, r.method), header, r.channel, r.body)
        )


# ============================================================================================
# pika 1.x
# ============================================================================================


def _pika_send_message(
    channel_number: int,
    method: Any,
    properties: Any,
    body: bytes,
    body_max_length: int = fx.FRAME_MAX - 8,
) -> list[bytes]:
    """pika.connection.Connection._send_message, minus the output queue (returns the frames)."""
    from pika import frame

    length = len(body)
    marshaled_body_frames = []
    frame_method = frame.Method(channel_number, method)
    frame_header = frame.Header(channel_number, length, properties)
    marshaled_body_frames.append(frame_method.marshal())
    marshaled_body_frames.append(frame_header.marshal())
    if body:
        chunks = int(math.ceil(float(length) / body_max_length))  # noqa: RUF046 (verbatim pika)
        for chunk in range(0, chunks):
            start = chunk * body_max_length
            end = start + body_max_length
            if end > length:
                end = length
            frame_body = frame.Body(channel_number, body[start:end])
            marshaled_body_frames.append(frame_body.marshal())
    return marshaled_body_frames


def _pika_buffer_loop(chunks: list[bytes]) -> list[Any]:
    """pika.connection.Connection._on_data_available over a list of received chunks.

    Same buffer handling (``bytes +=``, ``decode_frame``, trim by slicing), minus the
    attribute lookups on the connection object and the frame dispatch.
    """
    from pika.frame import decode_frame

    out: list[Any] = []
    append = out.append
    buf = b""
    for data_in in chunks:
        buf += data_in
        while buf:
            consumed_count, frame_value = decode_frame(buf)
            if not frame_value:
                break
            buf = buf[consumed_count:]
            append(frame_value)
    return out


def _pika_message(chunks: list[bytes]) -> Any:
    """pika's receive path for one message: the buffer loop, then each frame to the channel's
    ContentFrameAssembler, which joins the body fragments when the last one comes."""
    from pika.channel import ContentFrameAssembler

    process = ContentFrameAssembler().process
    for frame_value in _pika_buffer_loop(chunks):
        message = process(frame_value)
        if message is not None:
            method, header, body = message
            return method, header, header.channel_number, body
    raise ValueError("no whole message")


class Pika(_FrameListAdapter):
    key = "pika"
    label = "pika"

    def __init__(self) -> None:
        import pika.compat
        import pika.data
        import pika.frame
        import pika.spec

        self.pika = pika
        self.version = version("pika")
        self.long = pika.compat.long

    def deliver_decode(self, frame: bytes) -> Bench:
        return Bench(
            "_c, _r = decode_frame(data)",
            {"decode_frame": self.pika.frame.decode_frame, "data": frame},
            "pika.frame.decode_frame",
        )

    header_decode = deliver_decode

    def message_decode(self, buf: bytes) -> Bench:
        decode = "    _c, _f = decode_frame(_b)\n    if not _f:\n        break"
        return Bench(
            _slicing_loop(decode, "_c"),
            {"decode_frame": self.pika.frame.decode_frame, "data": buf},
            "Connection._on_data_available loop: decode_frame, trim buffer by slicing",
        )

    def stream_decode(self, stream: fx.Stream) -> Bench:
        return _chunks_bench(
            _pika_buffer_loop,
            stream,
            "Connection._on_data_available per chunk (bytes +=, decode_frame, slice)",
        )

    def message_assemble(self, stream: fx.Stream) -> Bench:
        return _chunks_bench(
            _pika_message,
            stream,
            "Connection._on_data_available per chunk, then channel.ContentFrameAssembler",
        )

    def table_decode(self, buf: bytes) -> Bench:
        return Bench(
            "_r = decode_table(data, 0)[0]",
            {"decode_table": self.pika.data.decode_table, "data": buf},
            "pika.data.decode_table",
        )

    def table_encode(self, table: dict[str, Any]) -> Bench:
        if any(type(v) is float for v in _walk(table)):
            raise Unsupported(
                "pika.data.encode_value has no float branch (raises UnsupportedAMQPFieldException)"
            )
        stmt = "_p = []\nencode_table(_p, table)\n_r = b''.join(_p)"
        return Bench(
            stmt,
            {"encode_table": self.pika.data.encode_table, "table": table},
            "pika.data.encode_table(pieces, dict) + b''.join(pieces)",
        )

    def publish_encode(self, construct: bool) -> Bench:
        spec = self.pika.spec
        values = fx.PUBLISH_PROPERTIES_VALUES
        return _publish_bench(
            construct,
            {
                "send_message": _pika_send_message,
                "Publish": spec.Basic.Publish,
                "BasicProperties": spec.BasicProperties,
                "BODY": fx.BODY_1K,
            },
            values,
            "_r = send_message(1, {METHOD}, {PROPS}, BODY)",
            "Connection._send_message: frame.Method/Header/Body.marshal() -> list of frame bytes",
            METHOD=_PUBLISH_METHOD,
            PROPS=f"BasicProperties({_kwargs(values, 'P_')})",
        )

    def norm_frame(self, f: Any) -> tuple[Any, ...]:
        frame = self.pika.frame
        if isinstance(f, tuple):  # (consumed, frame) from decode_frame
            f = f[1]
        kinds = (frame.Method, frame.Header, frame.Body, frame.Heartbeat)
        return _norm_object_frame(f, kinds, "channel_number", "fragment")

    def expect_decoded(self, plain: Any) -> tuple[Any, str | None]:
        """What pika is known to decode instead of ``plain`` (documented deviations)."""
        changed = norm.map_floats(plain, lambda v: int(self.long(v)))
        if norm.same(changed, plain):
            return plain, None
        return changed, (
            "pika decodes field-table floats ('f'/'d') as truncated ints: "
            "pika.data.decode_value wraps them in compat.long()"
        )


def _walk(v: Any) -> Any:
    yield v
    if isinstance(v, dict):
        for x in v.values():
            yield from _walk(x)
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _walk(x)


# ============================================================================================
# pamqp 4.x
# ============================================================================================


def _pamqp_buffer_loop(chunks: list[bytes]) -> list[Any]:
    """An aiorabbit-style ``data_received``: append to a bytes buffer, ``frame.unmarshal``
    until it reports an incomplete frame, trim by slicing."""
    from pamqp.exceptions import UnmarshalingException
    from pamqp.frame import unmarshal

    out: list[Any] = []
    append = out.append
    buf = b""
    for data in chunks:
        buf += data
        while buf:
            try:
                count, channel, value = unmarshal(buf)
            except UnmarshalingException:
                break
            buf = buf[count:]
            append((count, channel, value))
    return out


def _pamqp_message(chunks: list[bytes]) -> Any:
    """pamqp has no message assembly: the buffer loop, then the body frames' values joined."""
    from pamqp.body import ContentBody

    frames = _pamqp_buffer_loop(chunks)
    body = b"".join([v.value for _count, _channel, v in frames if type(v) is ContentBody])
    return frames[0], frames[1], frames[1][1], body


def _pamqp_publish(
    channel: int, method: Any, properties: Any, body_value: bytes, frame_max: int = fx.FRAME_MAX
) -> list[bytes]:
    """What a pamqp client (aiorabbit) does to publish: build the frames, marshal each."""
    from pamqp.body import ContentBody
    from pamqp.frame import marshal
    from pamqp.header import ContentHeader

    frames = [
        marshal(method, channel),
        marshal(ContentHeader(0, len(body_value), properties), channel),
    ]
    max_size = frame_max - 8
    for offset in range(0, len(body_value), max_size):
        frames.append(marshal(ContentBody(body_value[offset : offset + max_size]), channel))
    return frames


class Pamqp(_FrameListAdapter):
    key = "pamqp"
    label = "pamqp"

    def __init__(self) -> None:
        import pamqp.body
        import pamqp.commands
        import pamqp.decode
        import pamqp.encode
        import pamqp.frame
        import pamqp.header
        import pamqp.heartbeat

        self.pamqp = pamqp
        self.version = version("pamqp")

    def deliver_decode(self, frame: bytes) -> Bench:
        return Bench(
            "_r = unmarshal(data)",
            {"unmarshal": self.pamqp.frame.unmarshal, "data": frame},
            "pamqp.frame.unmarshal",
        )

    header_decode = deliver_decode

    def message_decode(self, buf: bytes) -> Bench:
        decode = (
            "    try:\n        _f = unmarshal(_b)\n    except UnmarshalingException:\n        break"
        )
        return Bench(
            _slicing_loop(decode, "_f[0]"),
            {
                "unmarshal": self.pamqp.frame.unmarshal,
                "data": buf,
                "UnmarshalingException": self.pamqp.exceptions.UnmarshalingException,
            },
            "unmarshal until the buffer is empty, trim by slicing",
        )

    def stream_decode(self, stream: fx.Stream) -> Bench:
        return _chunks_bench(
            _pamqp_buffer_loop,
            stream,
            "aiorabbit-style buffer per chunk (bytes +=, unmarshal, slice; "
            "UnmarshalingException = incomplete)",
        )

    def message_assemble(self, stream: fx.Stream) -> Bench:
        return _chunks_bench(
            _pamqp_message,
            stream,
            "the buffer loop per chunk (as stream decode), then the body values joined",
        )

    def table_decode(self, buf: bytes) -> Bench:
        return Bench(
            "_r = field_table(data)[1]",
            {"field_table": self.pamqp.decode.field_table, "data": buf},
            "pamqp.decode.field_table",
        )

    def table_encode(self, table: dict[str, Any]) -> Bench:
        return Bench(
            "_r = field_table(table)",
            {"field_table": self.pamqp.encode.field_table, "table": _pamqp_table(table)},
            "pamqp.encode.field_table (bytes values passed as bytearray, "
            "the only byte type it encodes)",
        )

    def publish_encode(self, construct: bool) -> Bench:
        commands = self.pamqp.commands
        values = dict(fx.PUBLISH_PROPERTIES_VALUES)
        values["timestamp"] = fx.SENT_AT  # pamqp encodes only datetime / struct_time
        return _publish_bench(
            construct,
            {
                "publish": _pamqp_publish,
                "Publish": commands.Basic.Publish,
                "Properties": commands.Basic.Properties,
                "BODY": fx.BODY_1K,
            },
            values,
            "_r = publish(1, {METHOD}, {PROPS}, BODY)",
            "frame.marshal(Basic.Publish), marshal(ContentHeader), "
            "marshal(ContentBody) -> list of frame bytes",
            METHOD=_PUBLISH_METHOD,
            PROPS=f"Properties({_kwargs(values, 'P_', {'type': 'message_type'})})",
        )

    def norm_frame(self, f: Any) -> tuple[Any, ...]:
        p = self.pamqp
        _count, channel, v = f
        if isinstance(v, p.base.Frame):
            return ("method", channel, norm.method_from_attrs(v.index, v))
        if isinstance(v, p.header.ContentHeader):
            props = v.properties
            values = {a: getattr(props, a) for a in norm.PROPERTY_ATTRS if a != "type"}
            values["type"] = props.message_type
            if values["cluster_id"] == "":  # pamqp's default for an absent cluster_id
                values["cluster_id"] = None
            return ("header", channel, v.body_size, norm.properties(values))
        if isinstance(v, p.body.ContentBody):
            return ("body", channel, bytes(v.value))
        if isinstance(v, p.heartbeat.Heartbeat):
            return ("heartbeat", 0)
        raise TypeError(v)


def _pamqp_table(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _pamqp_table(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_pamqp_table(x) for x in v]
    if isinstance(v, bytes):
        return bytearray(v)
    return v


# ============================================================================================
# py-amqp 5.x
# ============================================================================================


class _Sink:
    """Stands in for py-amqp's connection and transport in ``frame_writer``."""

    def __init__(self) -> None:
        self.frame_max = fx.FRAME_MAX
        self.bytes_sent = 0
        self.last: collections.deque[Any] = collections.deque(maxlen=1)
        self.write = self.last.append  # C-level: keeps the memoryview py-amqp would send


def _pyamqp_method_args() -> dict[tuple[int, int], str | None]:
    from amqp.channel import Channel
    from amqp.connection import Connection

    args: dict[tuple[int, int], str | None] = {}
    for methods in (Connection._METHODS, Channel._METHODS):
        for sig, m in methods.items():
            args[sig] = m.args
    return args


def _pyamqp_transport() -> Any:
    from amqp.transport import TCPTransport

    t = TCPTransport("127.0.0.1:5672")  # never connected
    t._quick_recv = _closed  # replaced by a reader where data comes through recv
    return t


def _closed(n: int) -> bytes:
    return b""  # py-amqp turns this into "Server unexpectedly closed connection"


#: Timed prefix of py-amqp's decode benches: the frame is in the transport's read buffer.
_PYAMQP_READ_FRAME = "transport._read_buffer = data\n_t, _ch, _p = read_frame()\n"

#: A method frame read into ``_t, _ch, _p``, as Channel.dispatch_method decodes it; the
#: ``(type, channel, (sig, args))`` tuple goes into the name filled in with ``format``.
_PYAMQP_METHOD = (
    "_sig = unpack_from('>HH', _p, 0)\n{} = (_t, _ch, (_sig, loads(ARGS[_sig], _p, 4)[0]))"
)


class PyAmqp(_Adapter):
    key = "py-amqp"
    label = "py-amqp"

    def __init__(self) -> None:
        import amqp.basic_message
        import amqp.method_framing
        import amqp.serialization

        self.amqp = amqp
        self.version = version("amqp")
        self.args = _pyamqp_method_args()

    def _ns(self, **extra: Any) -> dict[str, Any]:
        return {
            "unpack_from": unpack_from,
            "loads": self.amqp.serialization.loads,
            "ARGS": self.args,
            "Message": self.amqp.basic_message.Message,
            **extra,
        }

    def _read_frame_bench(self, data: bytes, stmt: str, note: str) -> Bench:
        """``stmt`` after putting ``data`` in a fresh transport's read buffer and reading one
        frame into ``_t, _ch, _p`` (type, channel, payload)."""
        t = _pyamqp_transport()
        return Bench(
            _PYAMQP_READ_FRAME + stmt,
            self._ns(transport=t, read_frame=t.read_frame, data=data),
            note,
        )

    def deliver_decode(self, frame: bytes) -> Bench:
        return self._read_frame_bench(
            frame,
            _PYAMQP_METHOD.format("_r"),
            "Transport.read_frame (frame already in its read buffer), method sig, "
            "serialization.loads(args) as Channel.dispatch_method does",
        )

    def header_decode(self, frame: bytes) -> Bench:
        return self._read_frame_bench(
            frame,
            "_m = Message()\n_m.inbound_header(_p)\n_r = (_t, _ch, _m)",
            "Transport.read_frame, Message().inbound_header (decode_properties_basic)",
        )

    def message_decode(self, buf: bytes) -> Bench:
        stmt = (
            _PYAMQP_METHOD.format("_f1") + "\n"
            "_m = Message(frame_method=_sig, frame_args=_p)\n"
            "_t, _ch, _p = read_frame()\n"
            "_m.inbound_header(_p)\n"
            "_f2 = (_t, _ch, _m)\n"
            "_t, _ch, _p = read_frame()\n"
            "_m.inbound_body(_p)\n"
            "_r = [_f1, _f2, (_t, _ch, _m.body)]"
        )
        return self._read_frame_bench(
            buf,
            stmt,
            "3x Transport.read_frame; loads(args); Message.inbound_header; "
            "Message.inbound_body (py-amqp's own frame_handler steps)",
        )

    def stream_decode(self, stream: fx.Stream) -> Bench:
        return Bench(
            "_r = run(data, count)",
            {"run": self._stream, "data": stream.data, "count": stream.frame_count},
            "Transport.read_frame over an in-memory socket (io.BytesIO.read as recv: "
            "C speed, never a short read), then per frame type: loads(args) / "
            "Message().inbound_header / payload",
        )

    def _stream(self, data: bytes, count: int) -> list[Any]:
        loads = self.amqp.serialization.loads
        message = self.amqp.basic_message.Message
        args = self.args
        t = _pyamqp_transport()
        t._quick_recv = io.BytesIO(data).read
        read_frame = t.read_frame
        out: list[Any] = []
        append = out.append
        for _ in range(count):
            frame_type, channel, payload = read_frame()
            if frame_type == 1:
                sig = unpack_from(">HH", payload, 0)
                fmt = args[sig]
                append((1, channel, (sig, loads(fmt, payload, 4)[0] if fmt else [])))
            elif frame_type == 2:
                msg = message()
                msg.inbound_header(payload)
                append((2, channel, msg))
            else:
                append((frame_type, channel, payload))
        return out

    def message_assemble(self, stream: fx.Stream) -> Bench:
        return Bench(
            "_r = run(data)",
            {"run": self._message, "data": stream.data},
            "Transport.read_frame over an in-memory socket (as stream decode), then "
            "method_framing.frame_handler's steps: loads(args), Message.inbound_header, "
            "Message.inbound_body (which joins the body)",
        )

    def _message(self, data: bytes) -> Any:
        loads = self.amqp.serialization.loads
        t = _pyamqp_transport()
        t._quick_recv = io.BytesIO(data).read
        read_frame = t.read_frame
        _frame_type, channel, payload = read_frame()
        sig = unpack_from(">HH", payload, 0)
        method = (1, channel, (sig, loads(self.args[sig], payload, 4)[0]))
        msg = self.amqp.basic_message.Message(frame_method=sig, frame_args=payload)
        _frame_type, channel, payload = read_frame()
        msg.inbound_header(payload)
        while not msg.ready:
            _frame_type, channel, payload = read_frame()
            msg.inbound_body(payload)
        return method, (2, channel, msg), channel, msg.body

    def table_decode(self, buf: bytes) -> Bench:
        return Bench(
            "_r = loads('F', data, 0)[0][0]",
            {"loads": self.amqp.serialization.loads, "data": buf},
            "amqp.serialization.loads('F', ...)",
        )

    def table_encode(self, table: dict[str, Any]) -> Bench:
        return Bench(
            "_r = dumps('F', args)",
            {"dumps": self.amqp.serialization.dumps, "args": (table,)},
            "amqp.serialization.dumps('F', (dict,))",
        )

    def publish_encode(self, construct: bool) -> Bench:
        sink = _Sink()
        values = fx.PUBLISH_PROPERTIES_VALUES
        return _publish_bench(
            construct,
            {
                "write_frame": self.amqp.method_framing.frame_writer(sink, sink),
                "dumps": self.amqp.serialization.dumps,
                "Message": self.amqp.basic_message.Message,
                "sink": sink.last,
                "SIG": (60, 40),
                "BODY": fx.BODY_1K,
            },
            values,
            "write_frame(1, 1, SIG, dumps('Bssbb', {ARGS}), {MSG})\n_r = sink[0]",
            "Channel.basic_publish's send_method: dumps('Bssbb', args) + "
            "method_framing.frame_writer(1, channel, sig, args, Message) -> "
            "memoryview handed to transport.write",
            MSG=f"Message(BODY, {_kwargs(values, 'P_', {'headers': 'application_headers'})})",
            ARGS="(0, M_exchange, M_routing_key, False, False)",
        )

    def norm_frame(self, f: Any) -> tuple[Any, ...]:
        frame_type, channel, x = f
        if frame_type == 1:
            sig, args = x
            return ("method", channel, norm.method_from_args(sig, args))
        if frame_type == 2:
            values = dict(x.properties)
            if "application_headers" in values:
                values["headers"] = values.pop("application_headers")
            return ("header", channel, x.body_size, norm.properties(values))
        if frame_type == 3:
            return ("body", channel, bytes(x))
        if frame_type == 8:
            return ("heartbeat", 0)
        raise TypeError(f)


def all_peers() -> list[Any]:
    """Ours first, then the peers."""
    return [Ours(), Pamqp(), Pika(), PyAmqp()]
