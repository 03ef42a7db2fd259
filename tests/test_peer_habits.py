"""What real peers send, built byte by byte from their descriptions, decoded quietly.

Each vector goes through the default :class:`FrameDecoder` (every frame must re-encode to
its bytes), the :class:`MessageAssembler` and the :class:`StreamDissector` that ``amqp-codec
decode`` and ``analyze`` run, which must report no problem: a broker served these
connections without complaint.

* The RabbitMQ .NET client 1.x writes the same field-table tags for every version, so a 0-8
  connection carries 0-9-1 tags in exchange.declare arguments and content headers, which
  RabbitMQ echoes to 0-8 consumers in basic.get-ok; its decimals are sign and magnitude; it
  sends connection.open with insist set and, with the 0-9 header, no access.request.
* The Erlang client closes the socket after the server's connection.close (530), without
  connection.close-ok.
* node-amqp's timestamp property holds the low 32 bits of a millisecond count.
* RabbitMQ's shovel re-sorts forwarded headers and adds x-shovelled, an array of tables;
  federation binds with x-bound-from, an array of tables.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from pathlib import Path

import pytest

from amqp_codec import (
    FieldTable,
    Frame,
    FrameDecoder,
    FrameSyntaxError,
    Message,
    MessageAssembler,
    MethodFrame,
    Timestamp,
    cli,
    encode_frame,
    v0_8,
    v0_9_1,
)
from amqp_codec.inspect import command as decode_command
from amqp_codec.inspect.dissector import FrameEvent, ProblemEvent, ResyncEvent, StreamDissector
from amqp_codec.table import reread_decimal

HEADER_0_8 = b"AMQP\x01\x01\x08\x00"
HEADER_0_9 = b"AMQP\x01\x01\x00\x09"  # the .NET client's AMQP_0_9; RabbitMQ answers in 0-9-1
HEADERS_FLAG = 1 << 13
TIMESTAMP_FLAG = 1 << 6

# -- the wire, written out by hand --------------------------------------------------------


def shortstr(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return bytes([len(raw)]) + raw


def longstr(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack(">I", len(raw)) + raw


def entry(key: str, tag: str, value: bytes) -> bytes:
    return shortstr(key) + tag.encode() + value


def table(*entries: bytes) -> bytes:
    return longstr(b"".join(entries))


def array(*values: bytes) -> bytes:
    """A field array: each value is its tag and its bytes."""
    return longstr(b"".join(values))


def frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    return struct.pack(">BHI", frame_type, channel, len(payload)) + payload + b"\xce"


def method(channel: int, class_id: int, method_id: int, arguments: bytes) -> bytes:
    return frame(1, channel, struct.pack(">HH", class_id, method_id) + arguments)


def content(channel: int, body: bytes, flags: int, properties: bytes) -> bytes:
    """A basic content header (class 60, weight 0) and one body frame."""
    header = frame(2, channel, struct.pack(">HHQH", 60, 0, len(body), flags) + properties)
    return header + frame(3, channel, body)


def codec_frame(channel: int, value: object) -> bytes:
    """A frame of no interest here (connection.start-ok and the like), from the codec."""
    return encode_frame(MethodFrame(channel, value))  # type: ignore[arg-type]


# -- running a stream through the decoder, the assembler and the dissector -----------------


def decode_stream(data: bytes, **options: bool) -> tuple[FrameDecoder, list[Frame]]:
    """Every frame, each checked to re-encode to the bytes it came from."""
    decoder = FrameDecoder(**options)
    decoder.receive_data(data)
    decoder.receive_data(b"")
    frames, offset = [], 0
    for decoded in decoder:
        assert encode_frame(decoded) == data[offset : decoder.offset]
        offset = decoder.offset
        frames.append(decoded)
    assert offset == len(data)
    return decoder, frames


def assemble(frames: list[Frame]) -> list[Message]:
    assembler = MessageAssembler()
    return [message for f in frames if (message := assembler.feed(f)) is not None]


def dissect_quietly(data: bytes, chunk: int = 5) -> list[Frame]:
    """The frames the dissector finds, fed in small chunks; it must report no problem."""
    dissector = StreamDissector(name="stream")
    events = []
    for start in range(0, len(data), chunk):
        events += dissector.feed(data[start : start + chunk])
    events += dissector.finish()
    assert [e for e in events if isinstance(e, (ProblemEvent, ResyncEvent))] == []
    assert dissector.stats.problems == 0
    return [e.frame for e in events if isinstance(e, FrameEvent)]


def check_quiet(data: bytes) -> tuple[FrameDecoder, list[Frame], list[Message]]:
    decoder, frames = decode_stream(data)
    assert dissect_quietly(data) == frames
    return decoder, frames, assemble(frames)


def methods_of(frames: list[Frame]) -> list[str]:
    return [f.method.NAME for f in frames if isinstance(f, MethodFrame)]


def decode_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "stream.bin"
    path.write_bytes(data)
    status = cli.main(["decode", str(path)])
    out = capsys.readouterr().out
    assert status == decode_command.EXIT_OK, out
    assert "problems: 0" in out
    return out


# --------------------------------------------------------------------------------------------
# The .NET client 1.x on 0-8: 0-9-1 tags, sign-and-magnitude decimals, insist
# --------------------------------------------------------------------------------------------

# One value of each type the .NET client writes, as it writes them (-0.001 as scale 3 and
# digits 80 00 00 01).
DOTNET_VALUES = table(
    entry("string", "S", longstr("naïve")),
    entry("int", "I", struct.pack(">i", -7)),
    entry("long", "l", struct.pack(">q", 2**40)),
    entry("short", "s", struct.pack(">h", -2)),
    entry("byte", "b", b"\xc8"),
    entry("float", "f", struct.pack(">f", 1.5)),
    entry("double", "d", struct.pack(">d", -0.25)),
    entry("bool", "t", b"\x01"),
    entry("bytes", "x", longstr(b"\x00\xff")),
    entry("list", "A", array(b"I" + struct.pack(">i", 1), b"S" + longstr("two"))),
    entry("table", "F", table(entry("inner", "S", longstr("x")))),
    entry("void", "V", b""),
    entry("decimal", "D", b"\x03\x80\x00\x00\x01"),
    entry("timestamp", "T", struct.pack(">Q", 1_700_000_000)),
)
DOTNET_TAGS = ["S", "I", "l", "s", "b", "f", "d", "t", "x", "A", "F", "V", "D", "T"]


def dotnet_0_8_client() -> bytes:
    return b"".join(
        [
            HEADER_0_8,
            codec_frame(0, v0_8.Connection.StartOk(mechanism="PLAIN", response=b"\0guest\0guest")),
            codec_frame(0, v0_8.Connection.TuneOk(channel_max=256, frame_max=131072)),
            # connection.open: virtual host "/", capabilities "", insist set
            method(0, 10, 40, shortstr("/") + shortstr("") + b"\x01"),
            codec_frame(1, v0_8.Channel.Open()),
            # exchange.declare: ticket 0, "dotnet", "fanout", auto-delete, the values
            method(
                1,
                40,
                10,
                b"\0\0" + shortstr("dotnet") + shortstr("fanout") + b"\x04" + DOTNET_VALUES,
            ),
            # basic.publish: ticket 0, exchange "dotnet", routing key ""; the values as headers
            method(1, 60, 40, b"\0\0" + shortstr("dotnet") + shortstr("") + b"\x00"),
            content(1, b"hello", HEADERS_FLAG, DOTNET_VALUES),
            # basic.get: ticket 0, queue "dotnet", no-ack
            method(1, 60, 70, b"\0\0" + shortstr("dotnet") + b"\x01"),
            codec_frame(0, v0_8.Connection.Close(reply_code=200, reply_text="Goodbye")),
        ]
    )


def dotnet_0_8_server() -> bytes:
    return b"".join(
        [
            codec_frame(0, v0_8.Connection.Start(version_major=8, version_minor=0)),
            codec_frame(0, v0_8.Connection.Tune(channel_max=2047, frame_max=131072)),
            codec_frame(0, v0_8.Connection.OpenOk()),
            codec_frame(1, v0_8.Channel.OpenOk()),
            codec_frame(1, v0_8.Exchange.DeclareOk()),
            # basic.get-ok: delivery tag 1, not redelivered, "dotnet", "", 0 messages left;
            # the headers echoed unchanged to this 0-8 consumer
            method(
                1,
                60,
                71,
                struct.pack(">QB", 1, 0) + shortstr("dotnet") + shortstr("") + b"\0\0\0\0",
            ),
            content(1, b"hello", HEADERS_FLAG, DOTNET_VALUES),
            codec_frame(0, v0_8.Connection.CloseOk()),
        ]
    )


def test_dotnet_0_8_session_with_0_9_1_tags_decodes_quietly(capsys, tmp_path):
    client, server = dotnet_0_8_client(), dotnet_0_8_server()
    decoder, frames, messages = check_quiet(client)
    assert decoder.spec is v0_8.SPEC and decoder.detected_by == "protocol header"
    server_decoder, server_frames, server_messages = check_quiet(server)
    assert server_decoder.spec is v0_8.SPEC and server_decoder.detected_by == "connection.start"

    open_ = next(
        f.method
        for f in frames
        if isinstance(f, MethodFrame) and f.method.NAME == "connection.open"
    )
    assert open_.insist is True
    declare = next(
        f.method
        for f in frames
        if isinstance(f, MethodFrame) and f.method.NAME == "exchange.declare"
    )
    arguments = declare.arguments
    assert [tag for _key, tag, _value in arguments.entries()] == DOTNET_TAGS
    # Each tag with its 0-9-1 (RabbitMQ) meaning; b is signed there, the .NET client's
    # unsigned byte 200 reads -56.
    # to_dict() gives what json.dumps takes: bytes as text, a decimal as its exact string.
    assert arguments.to_dict() == {
        "string": "naïve",
        "int": -7,
        "long": 2**40,
        "short": -2,
        "byte": -56,
        "float": 1.5,
        "double": -0.25,
        "bool": True,
        "bytes": "\x00\\xff",
        "list": [1, "two"],
        "table": {"inner": "x"},
        "void": None,
        "decimal": "-2147483.647",
        "timestamp": Timestamp(1_700_000_000),
    }
    assert arguments["bytes"] == b"\x00\xff" and arguments["decimal"] == Decimal("-2147483.647")
    assert reread_decimal(arguments["decimal"], "sign-magnitude") == Decimal("-0.001")

    for message, name in ((messages, "basic.publish"), (server_messages, "basic.get-ok")):
        (got,) = message
        assert got.method.NAME == name and got.body == b"hello"
        assert got.properties.headers == arguments  # same entries, same tags

    assert "connection.close-ok" in methods_of(server_frames)
    for data in (client, server):
        decode_cli(capsys, tmp_path, data)


def test_dotnet_0_8_session_in_strict_mode_names_the_first_0_9_1_tag():
    decoder = FrameDecoder(strict_tags=True)
    decoder.receive_data(dotnet_0_8_client())
    with pytest.raises(FrameSyntaxError) as info:
        list(decoder)
    error = info.value
    assert error.field == 'arguments["long"]'
    assert "'l'" in error.reason and "AMQP 0-8" in error.reason
    assert (error.reply_code, error.channel, error.class_id, error.method_id) == (502, 1, 40, 10)


def test_dotnet_0_9_header_with_insist_and_no_access_request():
    client = b"".join(
        [
            HEADER_0_9,
            codec_frame(
                0, v0_9_1.Connection.StartOk(mechanism="PLAIN", response=b"\0guest\0guest")
            ),
            codec_frame(0, v0_9_1.Connection.TuneOk(channel_max=256, frame_max=131072)),
            # connection.open with the old insist bit (0-9-1's reserved-2) set
            method(0, 10, 40, shortstr("/") + shortstr("") + b"\x01"),
            codec_frame(1, v0_9_1.Channel.Open()),
            # straight to exchange.declare: no access.request before it
            method(
                1,
                40,
                10,
                b"\0\0" + shortstr("dotnet") + shortstr("fanout") + b"\x04" + DOTNET_VALUES,
            ),
            codec_frame(0, v0_9_1.Connection.Close(reply_code=200, reply_text="Goodbye")),
        ]
    )
    server = b"".join(
        [
            codec_frame(0, v0_9_1.Connection.Start()),
            codec_frame(0, v0_9_1.Connection.Tune(channel_max=2047, frame_max=131072)),
            codec_frame(0, v0_9_1.Connection.OpenOk()),
            codec_frame(1, v0_9_1.Channel.OpenOk()),
            codec_frame(1, v0_9_1.Exchange.DeclareOk()),
            codec_frame(0, v0_9_1.Connection.CloseOk()),
        ]
    )
    decoder, frames, _messages = check_quiet(client)
    assert decoder.spec is v0_9_1.SPEC and decoder.detected_by == "protocol header"
    assert methods_of(frames)[2:4] == ["connection.open", "channel.open"]
    assert methods_of(frames)[4] == "exchange.declare"
    open_ = frames[3].method  # type: ignore[union-attr]
    assert open_.virtual_host == "/" and open_.reserved_2 is True
    server_decoder, _frames, _ = check_quiet(server)
    assert server_decoder.spec is v0_9_1.SPEC


# --------------------------------------------------------------------------------------------
# The Erlang client: no connection.close-ok after the server's connection.close
# --------------------------------------------------------------------------------------------


def test_client_leaving_without_close_ok_is_quiet():
    client = b"".join(
        [
            b"AMQP\x00\x00\x09\x01",
            codec_frame(
                0, v0_9_1.Connection.StartOk(mechanism="PLAIN", response=b"\0guest\0guest")
            ),
            codec_frame(0, v0_9_1.Connection.TuneOk(channel_max=2047, frame_max=131072)),
            codec_frame(0, v0_9_1.Connection.Open(virtual_host="locked")),
        ]
    )  # ...and the socket closes: no close-ok
    refusal = "NOT_ALLOWED - access to vhost 'locked' refused for user 'guest'"
    server = b"".join(
        [
            codec_frame(0, v0_9_1.Connection.Start()),
            codec_frame(0, v0_9_1.Connection.Tune(channel_max=2047, frame_max=131072)),
            # connection.close 530, caused by connection.open (10.40)
            method(
                0, 10, 50, struct.pack(">H", 530) + shortstr(refusal) + struct.pack(">HH", 10, 40)
            ),
        ]
    )
    _decoder, client_frames, _ = check_quiet(client)
    assert methods_of(client_frames)[-1] == "connection.open"
    _decoder, server_frames, _ = check_quiet(server)
    close = server_frames[-1].method  # type: ignore[union-attr]
    assert (close.reply_code, close.reply_text, close.class_id, close.method_id) == (
        530,
        refusal,
        10,
        40,
    )


# --------------------------------------------------------------------------------------------
# node-amqp: the timestamp property holds the low 32 bits of a millisecond count
# --------------------------------------------------------------------------------------------


def test_timestamps_of_millisecond_counts_decode_and_print(capsys, tmp_path):
    sent_at_ms = 1_400_000_000_123  # May 2014, in milliseconds
    low_bits = sent_at_ms & 0xFFFFFFFF
    publish = method(1, 60, 40, b"\0\0" + shortstr("") + shortstr("q") + b"\x00")
    stream = b"".join(
        [
            b"AMQP\x00\x00\x09\x01",
            codec_frame(1, v0_9_1.Channel.Open()),
            publish,
            content(1, b"a", TIMESTAMP_FLAG, struct.pack(">Q", low_bits)),
            publish,  # the whole millisecond count, as other clients send it
            content(1, b"b", TIMESTAMP_FLAG, struct.pack(">Q", sent_at_ms)),
        ]
    )
    _decoder, _frames, messages = check_quiet(stream)
    low, whole = (m.properties.timestamp for m in messages)
    assert type(low) is Timestamp and low == low_bits
    assert low.to_datetime() == dt.datetime.fromtimestamp(low_bits, dt.UTC)
    assert low.to_datetime().year > 2070  # far from when it was sent, yet a valid timestamp
    assert whole.to_datetime(milliseconds=True) == dt.datetime(
        2014, 5, 13, 16, 53, 20, 123000, dt.UTC
    )
    with pytest.raises(OverflowError):
        whole.to_datetime()  # a millisecond count read as seconds is past year 9999
    out = decode_cli(capsys, tmp_path, stream)
    assert f"{low_bits} ({low.to_datetime():%Y-%m-%dT%H:%M:%SZ})" in out
    assert f"{sent_at_ms} (outside the datetime range)" in out


# --------------------------------------------------------------------------------------------
# Shovel and federation: re-sorted headers, arrays of tables
# --------------------------------------------------------------------------------------------

SHOVELLED = array(
    b"F"
    + table(
        entry("shovel-type", "S", longstr("dynamic")),
        entry("shovel-name", "S", longstr("move-orders")),
        entry("shovel-vhost", "S", longstr("/")),
        entry("src-uri", "S", longstr("amqp://")),
        entry("src-queue", "S", longstr("orders")),
        entry("dest-uri", "S", longstr("amqp://remote")),
        entry("dest-queue", "S", longstr("orders")),
    )
)
# The publisher sent z, a, m; the shovel forwards them sorted, with its own two headers.
SHOVELLED_HEADERS = table(
    entry("a", "S", longstr("first")),
    entry("m", "t", b"\x00"),
    entry("x-shovelled", "A", SHOVELLED),
    entry("x-shovelled-timestamp", "l", struct.pack(">q", 1_700_000_000)),
    entry("z", "I", struct.pack(">i", 26)),
)


@pytest.mark.parametrize("spec", [v0_8, v0_9_1], ids=["0-8", "0-9-1"])
def test_shovelled_message_reaches_consumers_of_each_version(spec):
    major, minor = (8, 0) if spec is v0_8 else (0, 9)
    deliver = (
        struct.pack(">B", 1) + b"c" + struct.pack(">QB", 7, 0) + shortstr("") + shortstr("orders")
    )
    stream = b"".join(
        [
            codec_frame(0, spec.Connection.Start(version_major=major, version_minor=minor)),
            codec_frame(1, spec.Channel.OpenOk()),
            method(1, 60, 60, deliver),  # basic.deliver to consumer "c"
            content(1, b"order", HEADERS_FLAG, SHOVELLED_HEADERS),
        ]
    )
    decoder, _frames, (message,) = check_quiet(stream)
    assert decoder.spec is spec.SPEC
    headers = message.properties.headers
    assert list(headers) == ["a", "m", "x-shovelled", "x-shovelled-timestamp", "z"]
    (shovelled,) = headers["x-shovelled"]
    assert isinstance(shovelled, FieldTable)
    assert shovelled["shovel-name"] == "move-orders" and shovelled["src-queue"] == "orders"
    assert headers.tag("x-shovelled-timestamp") == "l"


def test_federation_binds_with_x_bound_from():
    bound_from = table(
        entry(
            "x-bound-from",
            "A",
            array(
                b"F"
                + table(
                    entry("cluster-name", "S", longstr("rabbit@upstream")),
                    entry("vhost", "S", longstr("/")),
                    entry("exchange", "S", longstr("fed.x")),
                    entry("hops", "I", struct.pack(">i", 1)),
                )
            ),
        )
    )
    stream = b"".join(
        [
            b"AMQP\x00\x00\x09\x01",
            codec_frame(1, v0_9_1.Channel.Open()),
            # exchange.bind: destination, source, routing key, no-wait off, arguments
            method(
                1,
                40,
                30,
                b"\0\0"
                + shortstr("fed.internal")
                + shortstr("fed.x")
                + shortstr("k")
                + b"\0"
                + bound_from,
            ),
            # queue.bind: queue, exchange, routing key, no-wait off, arguments
            method(
                1,
                50,
                20,
                b"\0\0"
                + shortstr("fed.q")
                + shortstr("fed.internal")
                + shortstr("k")
                + b"\0"
                + bound_from,
            ),
        ]
    )
    _decoder, frames, _ = check_quiet(stream)
    binds = [
        f.method for f in frames if isinstance(f, MethodFrame) and f.method.NAME.endswith(".bind")
    ]
    assert [b.NAME for b in binds] == ["exchange.bind", "queue.bind"]
    for bind in binds:
        (origin,) = bind.arguments["x-bound-from"]
        assert origin.to_dict() == {
            "cluster-name": "rabbit@upstream",
            "vhost": "/",
            "exchange": "fed.x",
            "hops": 1,
        }
    # 0-9-1's grammar has every tag: strict mode changes nothing here.
    assert decode_stream(stream, strict_tags=True)[1] == frames
