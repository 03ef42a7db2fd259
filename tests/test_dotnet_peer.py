"""Live: the RabbitMQ .NET client 1.x under Mono, over AMQP 0-8 and 0-9, through the
recording proxy; both directions decode with the codec's defaults.

Debian's ``libmono-rabbitmq4.0-cil`` (with ``mono-mcs`` to compile ``peers/dotnet_peer.cs``)
writes the same field-table tags for every version, so its 0-8 connection carries 0-9-1 tags
in exchange.declare arguments and content headers, and RabbitMQ echoes them in basic.get-ok.
Skips without Mono or the library, unless ``AMQP_CODEC_REQUIRE_MONO=1`` (CI sets it).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from broker_support import run

from amqp_codec import (
    FrameDecoder,
    Message,
    MessageAssembler,
    MethodFrame,
    encode_frame,
    v0_8,
    v0_9_1,
)
from amqp_codec.inspect.dissector import FrameEvent, ProblemEvent, ResyncEvent, StreamDissector
from amqp_codec.table import reread_decimal
from tools.record_proxy import RecordingProxy

pytestmark = [pytest.mark.broker, pytest.mark.usefixtures("broker")]

CLIENT_LIBRARY = Path("/usr/lib/mono/4.5/RabbitMQ.Client.dll")
SOURCE = Path(__file__).parent / "peers" / "dotnet_peer.cs"
INSTALL = "apt-get install -y libmono-rabbitmq4.0-cil mono-mcs"


@pytest.fixture(scope="module")
def dotnet_peer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The compiled peer program; skips (or fails when required) without Mono."""
    mcs, mono = shutil.which("mcs"), shutil.which("mono")
    if mcs is None or mono is None or not CLIENT_LIBRARY.exists():
        reason = f"the Mono RabbitMQ client is not installed ({INSTALL})"
        if os.environ.get("AMQP_CODEC_REQUIRE_MONO") == "1":
            pytest.fail(f"{reason}, but AMQP_CODEC_REQUIRE_MONO=1")
        pytest.skip(reason)
    program = tmp_path_factory.mktemp("dotnet") / "dotnet_peer.exe"
    subprocess.run(
        [mcs, f"-r:{CLIENT_LIBRARY}", str(SOURCE), f"-out:{program}"],
        check=True,
        capture_output=True,
    )
    return program


async def record_session(program: Path, protocol: str, out: Path) -> tuple[bytes, bytes, str]:
    """Run the peer through the recording proxy: (client bytes, server bytes, its output)."""
    proxy = RecordingProxy(out, prefix=protocol)
    async with proxy:
        peer = await asyncio.create_subprocess_exec(
            "mono",
            str(program),
            protocol,
            "127.0.0.1",
            str(proxy.port),
            out.name,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await peer.communicate()
        assert peer.returncode == 0, stderr.decode(errors="replace")
        await proxy.wait_finished(1)
    (connection,) = proxy.connections
    return (
        connection.client_path.read_bytes(),
        connection.server_path.read_bytes(),
        stdout.decode(),
    )


def decode_both_ways(data: bytes) -> tuple[FrameDecoder, list[MethodFrame], list[Message]]:
    """Decoder (each frame re-encoding to its bytes), assembler and a quiet dissector."""
    decoder = FrameDecoder()
    decoder.receive_data(data)
    decoder.receive_data(b"")
    frames, offset = [], 0
    for frame in decoder:
        assert encode_frame(frame) == data[offset : decoder.offset]
        offset = decoder.offset
        frames.append(frame)
    assert offset == len(data)
    assembler = MessageAssembler()
    messages = [m for f in frames if (m := assembler.feed(f)) is not None]
    dissector = StreamDissector()
    events = [*dissector.feed(data), *dissector.finish()]
    assert [e for e in events if isinstance(e, (ProblemEvent, ResyncEvent))] == []
    assert [e.frame for e in events if isinstance(e, FrameEvent)] == frames
    return decoder, [f for f in frames if isinstance(f, MethodFrame)], messages


@pytest.mark.skipif(sys.platform != "linux", reason="Debian's Mono packages")
@pytest.mark.parametrize(
    ("protocol", "header", "spec"),
    [
        ("AMQP_0_8", b"AMQP\x01\x01\x08\x00", v0_8.SPEC),
        ("AMQP_0_9", b"AMQP\x01\x01\x00\x09", v0_9_1.SPEC),  # RabbitMQ answers 0-9 in 0-9-1
    ],
)
def test_dotnet_session_decodes_both_directions(dotnet_peer, tmp_path, protocol, header, spec):
    client, server, printed = run(record_session(dotnet_peer, protocol, tmp_path / protocol))
    assert client.startswith(header)
    client_decoder, client_methods, (published,) = decode_both_ways(client)
    server_decoder, server_methods, (fetched,) = decode_both_ways(server)
    assert client_decoder.spec is spec and server_decoder.spec is spec

    names = [f.method.NAME for f in client_methods]
    assert "access.request" not in names  # the channel is used straight away
    open_ = client_methods[names.index("connection.open")].method
    assert (open_.insist if spec is v0_8.SPEC else open_.reserved_2) is True
    arguments = client_methods[names.index("exchange.declare")].method.arguments
    tags = {tag for _key, tag, _value in arguments.entries()}
    assert tags - set("SIDTF")  # 0-9-1 tags, whatever the version
    assert fetched.method.NAME == "basic.get-ok" and fetched.body == published.body == b"hello"
    headers = published.properties.headers
    assert fetched.properties.headers == headers == arguments  # echoed with the same tags
    assert "basic.get-ok" in [f.method.NAME for f in server_methods]

    # What the client read back, against what the codec decoded.
    read = dict(line.split("\t", 2)[::2] for line in printed.splitlines())
    assert Decimal(read["decimal"]) == reread_decimal(headers["decimal"], "sign-magnitude")
    assert Decimal(read["decimal"]) != headers["decimal"]  # two's complement reads it otherwise
    assert int(read["int"]) == headers["int"] and int(read["long"]) == headers["long"]
    assert int(read["short"]) == headers["short"]
    assert float(read["double"]) == headers["double"] and float(read["float"]) == headers["float"]
    assert int(read["byte"]) == headers["byte"] & 0xFF  # its 'b' is an unsigned byte
    assert read["bool"] == str(headers["bool"]) and read["void"] == ""
