"""Client and server byte streams of a whole 0-8 and a whole 99-0 connection, for the tests of
the diagnostic layer (dissector, ``decode`` CLI, message assembly, the analysis pipeline).

The 99-0 message is the worked example of the wire note (``amqp0-10-draft-WIRE.md`` §11):
message.transfer to ``amq.direct``, a header segment with delivery-properties and
message-properties, and the body ``hello``. :data:`DRAFT_EXAMPLE` holds the note's bytes;
the streams are built with the codec's encoders, and a test checks that they agree.
"""

from __future__ import annotations

from amqp_codec import v0_8
from amqp_codec import v0_10_draft as draft
from amqp_codec.frames import (
    ContentBodyFrame,
    ContentHeaderFrame,
    MethodFrame,
    ProtocolHeader,
    encode_frame,
)
from amqp_codec.wire010 import FieldTable, encode_draft_frame
from amqp_codec.wire010.frames import DraftBodyFrame, DraftHeaderFrame, DraftMethodFrame

PASSWORD = b"s3cret-draft"


def _hex(text: str) -> bytes:
    return bytes.fromhex(text.replace("|", " "))


#: The wire note's §11 frames, byte for byte.
DRAFT_EXAMPLE = {
    "start": _hex(
        "0f 01 00 26 00 00 00 00 00 00 00 00"
        "0a 0a 63 00 | 00 00 00 00 | 00 00 00 05 50 4c 41 49 4e | 00 00 00 05 65 6e 5f 55 53 ce"
    ),
    "tune": _hex("0f 01 00 16 00 00 00 00 00 00 00 00 | 0a 1e 7f ff 00 00 ff ff 00 00 | ce"),
    "session.open": _hex("0f 01 00 12 00 00 00 01 00 00 00 00 | 14 0a 00 00 00 00 | ce"),
    "transfer": _hex(
        "0b 01 00 1d 00 00 00 01 00 00 00 00"
        "| 78 0a 00 00 0a 61 6d 71 2e 64 69 72 65 63 74 01 00 | ce"
    ),
    "header": _hex(
        "03 02 00 48 00 00 00 01 00 00 00 00"
        "00 00 00 07 00 00 08 01 02 01 71"
        "00 00 00 2d 00 01 19 08 00 00 00 00 00 00 00 05 00 08 03 00 02 65 78 02 72 6b"
        "0a 74 65 78 74 2f 70 6c 61 69 6e 00 00 00 08 01 6b a4 00 00 00 01 76"
        "ce"
    ),
    "body": _hex("07 03 00 11 00 00 00 01 00 00 00 00 | 68 65 6c 6c 6f | ce"),
}

DRAFT_TRANSFER = draft.Message.Transfer(destination="amq.direct", confirm_mode=1, acquire_mode=0)
DRAFT_STRUCTS = (
    draft.DeliveryProperties(delivery_mode=2, routing_key="q"),
    draft.MessageProperties(
        content_length=5,
        reply_to=draft.ReplyTo(exchange_name="ex", routing_key="rk"),
        content_type="text/plain",
        application_headers=FieldTable({"k": "v"}),
    ),
)
#: 99-0 frames of the §11 message on channel 1, in order.
DRAFT_MESSAGE = (
    DraftMethodFrame(1, DRAFT_TRANSFER),
    DraftHeaderFrame(1, DRAFT_STRUCTS, 0x03),
    DraftBodyFrame(1, b"hello", 0x07),
)
#: connection.close naming message.transfer (120.10: no such method in 0-9-1).
DRAFT_CLOSE = draft.Connection.Close(
    reply_code=530, reply_text="not allowed", class_id=120, method_id=10
)


def draft_frames(*frames: object) -> bytes:
    """Encode 99-0 frames back to back."""
    return b"".join(encode_draft_frame(f) for f in frames)  # type: ignore[arg-type]


def draft_streams() -> tuple[bytes, bytes]:
    """Client and server bytes of a 99-0 connection: opening, one message, connection.close."""
    client = b"AMQP\x01\x01\x63\x00" + draft_frames(
        DraftMethodFrame(
            0,
            draft.Connection.StartOk(
                client_properties=FieldTable({"product": "qpid.py"}),
                mechanism="PLAIN",
                response=b"\x00draftuser\x00" + PASSWORD,
                locale="en_US",
            ),
        ),
        DraftMethodFrame(0, draft.Connection.TuneOk(channel_max=100, frame_max=4096)),
        DraftMethodFrame(0, draft.Connection.Open(virtual_host="/draft")),
        DraftMethodFrame(1, draft.Session.Open()),
        *DRAFT_MESSAGE,
        DraftMethodFrame(0, DRAFT_CLOSE),
    )
    server = DRAFT_EXAMPLE["start"] + draft_frames(
        DraftMethodFrame(0, draft.Connection.Tune(channel_max=32767, frame_max=65535)),
        DraftMethodFrame(0, draft.Connection.OpenOk()),
        DraftMethodFrame(0, draft.Connection.CloseOk()),
    )
    return client, server


#: connection.close naming 10.50: connection.redirect in 0-8, connection.close in 0-9-1.
V08_CLOSE = v0_8.Connection.Close(
    reply_code=320, reply_text="redirected", class_id=10, method_id=50
)
V08_PROPERTIES = v0_8.BasicProperties(content_type="text/plain", priority=4, cluster_id="c1")


def v08_streams(body: bytes = b"x" * 300) -> tuple[bytes, bytes]:
    """Client and server bytes of a 0-8 connection: opening, one publish (two body frames),
    connection.close."""
    client = encode_frame(ProtocolHeader(1, 1, 8, 0)) + b"".join(
        encode_frame(frame)
        for frame in (
            MethodFrame(
                0,
                v0_8.Connection.StartOk(
                    client_properties={"product": "old-client"},
                    mechanism="PLAIN",
                    response=b"\x00olduser\x00" + PASSWORD,
                ),
            ),
            MethodFrame(0, v0_8.Connection.TuneOk(channel_max=10, frame_max=2048, heartbeat=5)),
            MethodFrame(0, v0_8.Connection.Open(virtual_host="/old")),
            MethodFrame(1, v0_8.Channel.Open()),
            MethodFrame(1, v0_8.Basic.Publish(exchange="amq.topic", routing_key="a.b")),
            ContentHeaderFrame(1, 60, len(body), V08_PROPERTIES),
            ContentBodyFrame(1, body[:200]),
            ContentBodyFrame(1, body[200:]),
            MethodFrame(0, V08_CLOSE),
        )
    )
    server = b"".join(
        encode_frame(frame)
        for frame in (
            MethodFrame(0, v0_8.Connection.Start(server_properties={"product": "RabbitMQ"})),
            MethodFrame(0, v0_8.Connection.Tune(channel_max=0, frame_max=131072, heartbeat=0)),
            MethodFrame(0, v0_8.Connection.OpenOk()),
            MethodFrame(1, v0_8.Channel.OpenOk()),
            MethodFrame(0, v0_8.Connection.CloseOk()),
        )
    )
    return client, server
