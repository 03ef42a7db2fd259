"""The incremental frame decoder: chunking, protocol detection, limits and located errors.

Streams are written by hand (see strategies.raw_frame); error offsets are checked exactly:
``PH`` is 8 bytes, ``HB`` (a heartbeat) 8 bytes, so the frame after ``PH + HB`` starts at
stream offset 16 and its payload at 23.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    PROTOCOL_HEADER,
    content_header_payload,
    examples,
    frame_lists,
    longlong,
    method_payload,
    raw_frame,
    short,
    shortstr,
)

import amqp_codec as ac
from amqp_codec import (
    NEED_DATA,
    AMQPDecodeError,
    CommandInvalidError,
    ContentBodyFrame,
    ContentHeaderFrame,
    FrameDecoder,
    FrameError,
    FrameSyntaxError,
    HeartbeatFrame,
    LimitExceededError,
    MethodFrame,
    ProtocolHeader,
    UnexpectedFrameError,
    UnsupportedProtocolError,
    encode_frame,
)
from amqp_codec import v0_9_1 as v091
from amqp_codec.v0_9_1 import Basic, BasicProperties, Connection, Exchange, Queue

PH = PROTOCOL_HEADER
HB = raw_frame(8, 0, b"")
PREFIX = PH + HB  # the frame under test starts at offset 16
AT = len(PREFIX)
PAYLOAD_AT = AT + 7

ACK = method_payload(60, 80, longlong(5) + b"\x00")  # basic.ack, 13 bytes
ONE_BYTE = [bytes([i]) for i in range(256)]


def decode_all(data: bytes, decoder: FrameDecoder | None = None) -> list:
    decoder = decoder or FrameDecoder()
    decoder.receive_data(data)
    return list(decoder)


def first_error(data: bytes, **kwargs) -> AMQPDecodeError:
    """Decode ``data`` and return the error it raises (after the frames before it)."""
    decoder = FrameDecoder(**kwargs)
    decoder.receive_data(data)
    with pytest.raises(AMQPDecodeError) as info:
        for _ in range(1000):
            if decoder.next_frame() is NEED_DATA:
                break
    return info.value


# --------------------------------------------------------------------------------------------
# Chunking
# --------------------------------------------------------------------------------------------


def _decode_chunks(chunks: list[bytes]) -> list:
    decoder = FrameDecoder()
    frames = []
    for chunk in chunks:
        decoder.receive_data(chunk)
        frames.extend(decoder)
    decoder.receive_data(b"")
    assert decoder.next_frame() is NEED_DATA
    return frames


@settings(max_examples=examples(60))
@given(frame_lists(), st.data())
def test_any_chunking_gives_the_same_frames(frames, data):
    stream = PH + b"".join(encode_frame(f) for f in frames)
    expected = [ProtocolHeader(), *frames]
    cuts = data.draw(
        st.lists(st.integers(1, len(stream) - 1), max_size=min(40, len(stream)), unique=True)
    )
    cuts = sorted(cuts)
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert b"".join(chunks) == stream
    assert _decode_chunks(chunks) == expected


@settings(max_examples=examples(15))
@given(frame_lists(max_frames=4))
def test_one_byte_chunks_give_the_same_frames(frames):
    stream = PH + b"".join(encode_frame(f) for f in frames)
    assert _decode_chunks([stream[i : i + 1] for i in range(len(stream))]) == [
        ProtocolHeader(),
        *frames,
    ]


@settings(max_examples=examples(30))
@given(frame_lists(), st.sampled_from([bytes, bytearray, memoryview]))
def test_whole_stream_and_buffer_types(frames, kind):
    stream = PH + b"".join(encode_frame(f) for f in frames)
    decoder = FrameDecoder()
    decoder.receive_data(kind(stream))
    assert list(decoder) == [ProtocolHeader(), *frames]
    assert decoder.offset == len(stream)
    # The decoded frames re-encode to exactly the stream.
    assert PH + b"".join(encode_frame(f) for f in frames) == stream


def test_offset_advances_frame_by_frame():
    stream = PH + HB + raw_frame(1, 1, ACK) + raw_frame(3, 1, b"xyz")
    decoder = FrameDecoder()
    decoder.receive_data(stream)
    offsets = []
    while decoder.next_frame() is not NEED_DATA:
        offsets.append(decoder.offset)
    assert offsets == [8, 16, 16 + 8 + len(ACK), len(stream)]


def test_partial_frame_returns_need_data_until_complete():
    frame = raw_frame(1, 1, ACK)
    decoder = FrameDecoder(v091)
    for i in range(len(frame) - 1):
        decoder.receive_data(frame[i : i + 1])
        assert decoder.next_frame() is NEED_DATA
        assert decoder.offset == 0
    decoder.receive_data(frame[-1:])
    assert decoder.next_frame() == MethodFrame(1, Basic.Ack(delivery_tag=5))
    assert decoder.next_frame() is NEED_DATA


# --------------------------------------------------------------------------------------------
# Linear work, checked without timing
# --------------------------------------------------------------------------------------------


class _CopyCounter(FrameDecoder):
    """Counts the bytes the decoder materialises into its buffer (its only joining step).

    A subclass rather than a patched instance: the compiled build's methods call each other
    directly, past any instance attribute, but an interpreted subclass's override is called.
    """

    def __init__(self) -> None:
        super().__init__()
        assert hasattr(self, "_fill"), "decoder internals changed: update this probe"
        self.copied = 0
        self.calls = 0

    def _fill(self, needed: int) -> bool:
        before = self._buf
        ok = super()._fill(needed)
        if self._buf is not before:  # a join happened, whatever the result
            self.calls += 1
            self.copied += len(self._buf)
        return ok


@pytest.mark.timeout(120)
def test_four_mib_body_one_byte_at_a_time_is_linear():
    body = bytes(range(256)) * (4 * 1024 * 1024 // 256)
    stream = PH + raw_frame(3, 1, body)
    decoder = counter = _CopyCounter()
    frames = []
    receive = decoder.receive_data
    next_frame = decoder.next_frame
    for byte in stream:
        receive(ONE_BYTE[byte])
        frame = next_frame()
        if frame is not NEED_DATA:
            frames.append(frame)
    assert frames == [ProtocolHeader(), ContentBodyFrame(1, body)]
    # Each byte is joined into the buffer a bounded number of times, not once per chunk.
    assert counter.copied <= 3 * len(stream)
    assert counter.calls <= 8


def test_many_small_frames_one_byte_at_a_time_is_linear():
    frames = [raw_frame(1, 1, ACK), raw_frame(3, 2, b"payload"), HB] * 2000
    stream = PH + b"".join(frames)
    decoder = counter = _CopyCounter()
    count = 0
    for byte in stream:
        decoder.receive_data(ONE_BYTE[byte])
        for _ in decoder:
            count += 1
    assert count == 1 + len(frames)
    assert counter.copied <= 3 * len(stream)


def test_large_chunks_with_frames_straddling_boundaries_is_linear():
    body = b"b" * 100_000
    stream = PH + (raw_frame(3, 1, body) + raw_frame(1, 1, ACK)) * 40
    decoder = counter = _CopyCounter()
    count = 0
    for i in range(0, len(stream), 4093):
        decoder.receive_data(stream[i : i + 4093])
        count += len(list(decoder))
    assert count == 81
    assert counter.copied <= 3 * len(stream)


def test_body_frame_spanning_chunks_is_joined_once_from_them():
    # A large body frame arriving in socket-sized reads: its payload is joined straight
    # from the queued chunks (one copy), never by joining the buffer first.
    body = bytes(range(256)) * 1024  # 256 KiB
    stream = PH + raw_frame(1, 1, ACK) + raw_frame(3, 1, body) + raw_frame(1, 1, ACK)
    decoder = counter = _CopyCounter()
    frames = []
    for i in range(0, len(stream), 65536):
        decoder.receive_data(stream[i : i + 65536])
        for frame in decoder:
            frames.append(frame)
            if type(frame) is ContentBodyFrame:
                assert decoder.offset == len(PH) + 2 * 8 + len(ACK) + len(body)
    assert [type(f) for f in frames] == [ProtocolHeader, MethodFrame, ContentBodyFrame, MethodFrame]
    assert frames[2] == ContentBodyFrame(1, body) and type(frames[2].payload) is bytes
    assert decoder.offset == len(stream) and decoder.buffered == 0
    assert counter.calls == 0


def test_body_frame_spanning_chunks_with_a_bad_frame_end():
    body = b"x" * 5000
    stream = PREFIX + raw_frame(3, 1, body, end=b"\x00")
    decoder = FrameDecoder()
    with pytest.raises(FrameError) as caught:
        for i in range(0, len(stream), 1000):
            decoder.receive_data(stream[i : i + 1000])
            list(decoder)
    assert caught.value.offset == AT + 7 + len(body)
    assert caught.value.channel == 1


# --------------------------------------------------------------------------------------------
# Protocol detection
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header, fields",
    [(b"AMQP\x00\x00\x09\x01", (0, 0, 9, 1)), (b"AMQP\x01\x01\x00\x09", (1, 1, 0, 9))],
)
def test_detect_from_protocol_header(header, fields):
    decoder = FrameDecoder()
    assert decoder.spec is None
    assert decoder.detected_by is None
    decoder.receive_data(header + raw_frame(1, 1, ACK))
    assert decoder.next_frame() == ProtocolHeader(*fields)
    assert decoder.detected_by == "protocol header"
    assert decoder.spec is v091.SPEC
    assert decoder.next_frame() == MethodFrame(1, Basic.Ack(delivery_tag=5))


def test_detect_protocol_header_split_in_bytes():
    decoder = FrameDecoder()
    for i, byte in enumerate(PH):
        decoder.receive_data(bytes([byte]))
        frame = decoder.next_frame()
        if i < 7:
            assert frame is NEED_DATA
    assert frame == ProtocolHeader()
    assert decoder.detected_by == "protocol header"


def test_detect_from_connection_start():
    start = Connection.Start(version_major=0, version_minor=9, mechanisms=b"PLAIN")
    stream = raw_frame(1, 0, start.encode()) + HB
    decoder = FrameDecoder()
    assert decode_all(stream, decoder) == [MethodFrame(0, start), HeartbeatFrame()]
    assert decoder.detected_by == "connection.start"
    assert decoder.spec is v091.SPEC


def test_detect_from_connection_start_in_small_chunks():
    start = Connection.Start()
    stream = raw_frame(1, 0, start.encode())
    assert _decode_chunks([stream[i : i + 3] for i in range(0, len(stream), 3)]) == [
        MethodFrame(0, start)
    ]


@pytest.mark.parametrize("major, minor", [(0, 8), (0, 10), (1, 0), (9, 1)])  # 8-0: 0-8
def test_connection_start_with_unsupported_version(major, minor):
    payload = method_payload(10, 10, bytes([major, minor]) + b"\x00\x00\x00\x00" * 3)
    error = first_error(raw_frame(1, 0, payload))
    assert isinstance(error, UnsupportedProtocolError)
    assert error.reply_code is None
    assert error.offset == 0


def test_mid_stream_is_assumed_0_9_1():
    stream = raw_frame(1, 1, ACK) + HB
    decoder = FrameDecoder()
    assert decode_all(stream, decoder) == [
        MethodFrame(1, Basic.Ack(delivery_tag=5)),
        HeartbeatFrame(),
    ]
    assert decoder.detected_by == "assumed"
    assert decoder.spec is v091.SPEC


def test_mid_stream_body_frame_first_is_assumed():
    decoder = FrameDecoder()
    assert decode_all(raw_frame(3, 4, b"tail of a body"), decoder) == [
        ContentBodyFrame(4, b"tail of a body")
    ]
    assert decoder.detected_by == "assumed"


def test_given_spec():
    decoder = FrameDecoder(v091)
    assert decoder.detected_by == "given"
    assert decoder.spec is v091.SPEC
    assert FrameDecoder(v091.SPEC).spec is v091.SPEC
    assert decode_all(raw_frame(1, 1, ACK), decoder) == [MethodFrame(1, Basic.Ack(delivery_tag=5))]


@pytest.mark.parametrize(
    "header",
    [
        b"AMQP\x00\x01\x00\x00",
        b"AMQP\x03\x01\x00\x00",
        b"AMQP\x00\x00\x08\x00",
        b"AMQP\x01\x01\x08\x01",  # AMQP 1 1 8 0 and 1 1 9 1 are 0-8 (test_v0_8.py)
    ],
)
def test_unsupported_protocol_header(header):
    error = first_error(header + HB)
    assert isinstance(error, UnsupportedProtocolError)
    assert error.reply_code is None
    assert error.offset == 0


# --------------------------------------------------------------------------------------------
# Framing errors (501) and channel rules (503, 505)
# --------------------------------------------------------------------------------------------


def test_bad_frame_end():
    error = first_error(PREFIX + raw_frame(3, 1, b"abc", end=b"\x00"))
    assert isinstance(error, FrameError)
    assert error.reply_code == 501
    assert error.offset == AT + 7 + 3  # the frame-end octet itself
    assert error.channel == 1


def test_bad_frame_end_on_empty_frame():
    error = first_error(PREFIX + raw_frame(8, 0, b"", end=b"\xcf"))
    assert error.reply_code == 501
    assert error.offset == AT + 7


@pytest.mark.parametrize("frame_type", [0, 4, 5, 7, 9, 65, 255])
def test_unknown_frame_type(frame_type):
    error = first_error(PREFIX + raw_frame(frame_type, 2, b"xx"))
    assert isinstance(error, FrameError)
    assert error.reply_code == 501
    assert error.offset == AT
    assert error.channel == 2


def test_heartbeat_on_channel_1():
    error = first_error(PREFIX + raw_frame(8, 1, b""))
    assert isinstance(error, FrameError)
    assert error.reply_code == 501
    assert error.offset == AT
    assert error.channel == 1


def test_heartbeat_with_payload():
    error = first_error(PREFIX + raw_frame(8, 0, b"\x00"))
    assert error.reply_code == 501
    assert error.offset == AT


def test_connection_method_on_channel_1():
    error = first_error(PREFIX + raw_frame(1, 1, Connection.Tune(frame_max=4096).encode()))
    assert isinstance(error, CommandInvalidError)
    assert error.reply_code == 503
    assert error.offset == AT
    assert (error.channel, error.class_id, error.method_id) == (1, 10, 30)


def test_basic_method_on_channel_0():
    error = first_error(PREFIX + raw_frame(1, 0, Basic.Publish(routing_key="q").encode()))
    assert isinstance(error, CommandInvalidError)
    assert error.reply_code == 503
    assert error.offset == AT
    assert (error.channel, error.class_id, error.method_id) == (0, 60, 40)


@pytest.mark.parametrize("frame_type", [2, 3])
def test_content_on_channel_0(frame_type):
    payload = content_header_payload(60, 0, b"\x00\x00") if frame_type == 2 else b"body"
    error = first_error(PREFIX + raw_frame(frame_type, 0, payload))
    assert isinstance(error, UnexpectedFrameError)
    assert error.reply_code == 505
    assert error.offset == AT
    assert error.channel == 0


@pytest.mark.parametrize("class_id, method_id", [(60, 999), (99, 1), (10, 12), (30, 12)])
def test_unknown_method(class_id, method_id):
    error = first_error(PREFIX + raw_frame(1, 1, method_payload(class_id, method_id)))
    assert isinstance(error, CommandInvalidError)
    assert error.reply_code == 503
    assert error.offset == PAYLOAD_AT  # where the class and method ids are
    assert (error.class_id, error.method_id) == (class_id, method_id)
    assert error.channel == 1


# --------------------------------------------------------------------------------------------
# Syntax errors (502): the field and its stream offset
# --------------------------------------------------------------------------------------------


def test_method_payload_without_ids():
    error = first_error(PREFIX + raw_frame(1, 1, b"\x00\x3c"))
    assert isinstance(error, FrameSyntaxError)
    assert error.reply_code == 502
    assert error.offset == PAYLOAD_AT


def test_truncated_longlong():
    payload = method_payload(60, 60, shortstr("ctag") + longlong(5)[:3])
    error = first_error(PREFIX + raw_frame(1, 1, payload))
    assert isinstance(error, FrameSyntaxError)
    assert error.reply_code == 502
    assert error.field == "delivery_tag"
    assert error.offset == PAYLOAD_AT + 4 + 5  # after ids and "\x04ctag"
    assert (error.channel, error.class_id, error.method_id) == (1, 60, 60)


def test_shortstr_running_past_the_frame():
    # consumer-tag claims 9 bytes, 2 are there; the next frame's bytes must not be used.
    payload = method_payload(60, 60, b"\x09ab")
    error = first_error(PREFIX + raw_frame(1, 1, payload) + HB + HB)
    assert error.reply_code == 502
    assert error.field == "consumer_tag"
    assert error.offset == PAYLOAD_AT + 4


def test_truncated_short_after_shortstr():
    # basic.return: reply-code short cut to one byte
    payload = method_payload(60, 50, b"\x01")
    error = first_error(PREFIX + raw_frame(1, 1, payload))
    assert error.field == "reply_code"
    assert error.offset == PAYLOAD_AT + 4


def test_missing_bit_octet():
    payload = method_payload(60, 80, longlong(1))  # basic.ack without its bit octet
    error = first_error(PREFIX + raw_frame(1, 1, payload))
    assert error.reply_code == 502
    assert error.field == "multiple"
    assert error.offset == PAYLOAD_AT + 4 + 8


def test_longstr_running_past_the_frame():
    payload = method_payload(10, 20, b"\x00\x00\x01\x00abc")  # connection.secure
    error = first_error(PREFIX + raw_frame(1, 0, payload))
    assert error.reply_code == 502
    assert error.field == "challenge"
    assert error.offset == PAYLOAD_AT + 4


def test_table_size_running_past_the_frame():
    args = short(0) + shortstr("q") + b"\x00" + b"\x00\x00\x00\x40" + b"\x01kV"
    error = first_error(PREFIX + raw_frame(1, 1, method_payload(50, 10, args)))
    assert error.reply_code == 502
    assert error.field is not None and error.field.startswith("arguments")
    assert error.offset == PAYLOAD_AT + 4 + 2 + 2 + 1


def test_bad_value_inside_a_table_names_the_path():
    table = b"\x00\x00\x00\x04" + b"\x01kZ\x00"  # unknown tag Z
    args = short(0) + shortstr("q") + b"\x00" + table
    error = first_error(PREFIX + raw_frame(1, 1, method_payload(50, 10, args)))
    assert error.reply_code == 502
    assert error.field == 'arguments["k"]'
    assert error.offset is not None
    assert PAYLOAD_AT + 4 + 5 <= error.offset <= PAYLOAD_AT + len(args) + 4


def test_leftover_bytes():
    error = first_error(PREFIX + raw_frame(1, 1, ACK + b"\x00\x00"))
    assert isinstance(error, FrameSyntaxError)
    assert error.reply_code == 502
    assert error.offset == PAYLOAD_AT + len(ACK)  # the first byte after the last field
    assert (error.class_id, error.method_id) == (60, 80)


def test_leftover_bytes_after_empty_method():
    error = first_error(PREFIX + raw_frame(1, 1, method_payload(90, 10, b"\x07")))
    assert error.reply_code == 502
    assert error.offset == PAYLOAD_AT + 4


def test_bit_octet_with_unused_bits_points_at_the_octet():
    # basic.ack has one bit; 0x02 sets a bit no field uses.
    error = first_error(PREFIX + raw_frame(1, 1, method_payload(60, 80, longlong(5) + b"\x02")))
    assert error.reply_code == 502
    assert error.field == "multiple"
    assert error.offset == PAYLOAD_AT + 4 + 8


def test_content_header_too_short():
    error = first_error(PREFIX + raw_frame(2, 1, b"\x00\x3c\x00\x00\x00"))
    assert error.reply_code == 502
    assert error.offset == PAYLOAD_AT


def test_content_header_for_class_without_content():
    error = first_error(PREFIX + raw_frame(2, 1, content_header_payload(10, 0, b"\x00\x00")))
    assert error.reply_code == 503
    assert error.channel == 1


def test_truncated_property():
    # content-type flagged present but cut off
    props = b"\x80\x00\x05ab"
    # the frames after it must not be read as the rest of the property
    frame = raw_frame(2, 1, content_header_payload(60, 0, props))
    error = first_error(PREFIX + frame + raw_frame(3, 1, b"xyz") + HB)
    assert error.reply_code == 502
    assert error.field == "content_type"
    assert error.offset == PAYLOAD_AT + 12 + 2
    assert error.channel == 1


def test_property_flags_with_unused_bits():
    error = first_error(PREFIX + raw_frame(2, 1, content_header_payload(60, 0, b"\x00\x01")))
    assert error.reply_code == 502
    assert error.offset == PAYLOAD_AT + 12


def test_leftover_bytes_after_properties():
    props = b"\x10\x00\x02" + b"\xaa"
    error = first_error(PREFIX + raw_frame(2, 1, content_header_payload(60, 0, props)))
    assert error.reply_code == 502
    assert error.offset == PAYLOAD_AT + 12 + 3


# --------------------------------------------------------------------------------------------
# Limits
# --------------------------------------------------------------------------------------------


def test_frame_max_checked_from_the_header_alone():
    decoder = FrameDecoder(v091, frame_max=4096)
    decoder.receive_data(PREFIX[8:] + b"\x03\x00\x01" + (4096 - 7).to_bytes(4, "big"))
    assert decoder.next_frame() == HeartbeatFrame()
    with pytest.raises(FrameError) as info:
        decoder.next_frame()  # only the 7-byte header of the big frame is here
    assert info.value.reply_code == 501
    assert info.value.offset == 8
    assert info.value.channel == 1


def test_frame_of_exactly_frame_max_is_fine():
    body = b"z" * (4096 - 8)
    decoder = FrameDecoder(v091, frame_max=4096)
    decoder.receive_data(raw_frame(3, 1, body)[:7])
    assert decoder.next_frame() is NEED_DATA
    decoder.receive_data(raw_frame(3, 1, body)[7:])
    assert decoder.next_frame() == ContentBodyFrame(1, body)


def test_frame_max_set_later():
    decoder = FrameDecoder()
    decoder.receive_data(PH + raw_frame(3, 1, b"a" * 100))
    assert len(list(decoder)) == 2
    decoder.frame_max = 100
    assert decoder.frame_max == 100
    decoder.receive_data(b"\x03\x00\x01\x00\x00\x00\x5d")  # 93 > 100 - 8
    with pytest.raises(FrameError) as info:
        decoder.next_frame()
    assert info.value.reply_code == 501
    assert info.value.offset == 8 + 108


@pytest.mark.parametrize("value", [1, 7, 8])
def test_frame_max_too_small(value):
    with pytest.raises(ValueError):
        FrameDecoder(frame_max=value)
    decoder = FrameDecoder()
    with pytest.raises(ValueError):
        decoder.frame_max = value


def test_safety_cap_without_frame_max():
    decoder = FrameDecoder(max_frame_size=1000)
    decoder.receive_data(PH + b"\x03\x00\x01" + (1001).to_bytes(4, "big"))
    assert decoder.next_frame() == ProtocolHeader()
    with pytest.raises(LimitExceededError) as info:
        decoder.next_frame()
    assert info.value.reply_code == 501
    assert info.value.offset == 8

    decoder = FrameDecoder(max_frame_size=1000)
    decoder.receive_data(PH + b"\x03\x00\x01" + (1000).to_bytes(4, "big"))
    assert decoder.next_frame() == ProtocolHeader()
    assert decoder.next_frame() is NEED_DATA


def test_default_safety_cap_from_header_alone():
    decoder = FrameDecoder()
    decoder.receive_data(PH + b"\x03\x00\x01\xff\xff\xff\xff")
    decoder.next_frame()
    with pytest.raises(AMQPDecodeError) as info:
        decoder.next_frame()
    assert info.value.reply_code == 501
    assert ac.DEFAULT_MAX_FRAME_SIZE < 0xFFFFFFFF


def test_negotiated_frame_max_replaces_the_safety_cap():
    decoder = FrameDecoder(frame_max=131072, max_frame_size=1000)
    body = b"q" * 2000
    assert decode_all(PH + raw_frame(3, 1, body), decoder)[1] == ContentBodyFrame(1, body)


def test_max_body_size():
    props = b"\x00\x00"
    ok = raw_frame(2, 3, content_header_payload(60, 100, props))
    too_big = raw_frame(2, 3, content_header_payload(60, 101, props))
    assert decode_all(PREFIX + ok, FrameDecoder(max_body_size=100))[2] == ContentHeaderFrame(
        3, 60, 100, BasicProperties()
    )
    error = first_error(PREFIX + too_big, max_body_size=100)
    assert isinstance(error, LimitExceededError)
    assert error.reply_code == 406
    assert error.channel == 3
    assert error.class_id == 60
    assert error.hard is False


def _nested_table(levels: int) -> bytes:
    table = b"\x00\x00\x00\x03\x01vV"
    for _ in range(levels):
        table = (len(table) + 3).to_bytes(4, "big") + b"\x01nF" + table
    return table


def test_max_table_depth_in_properties():
    def header(levels: int) -> bytes:
        return raw_frame(2, 1, content_header_payload(60, 0, b"\x20\x00" + _nested_table(levels)))

    frames = decode_all(PREFIX + header(3), FrameDecoder(max_table_depth=3))
    assert isinstance(frames[2], ContentHeaderFrame)
    error = first_error(PREFIX + header(4), max_table_depth=3)
    assert isinstance(error, LimitExceededError)
    assert error.reply_code == 502
    assert error.field is not None and error.field.startswith("headers")


def test_max_table_depth_in_method_arguments_and_arrays():
    # arrays count as nesting too: A inside A inside A
    array = b"\x00\x00\x00\x00"
    for _ in range(3):
        array = (len(array) + 1).to_bytes(4, "big") + b"A" + array
    table = (len(array) + 3).to_bytes(4, "big") + b"\x01aA" + array
    payload = method_payload(50, 10, short(0) + shortstr("q") + b"\x00" + table)
    assert isinstance(decode_all(PREFIX + raw_frame(1, 1, payload), FrameDecoder())[2], MethodFrame)
    assert isinstance(
        decode_all(PREFIX + raw_frame(1, 1, payload), FrameDecoder(max_table_depth=4))[2],
        MethodFrame,
    )
    error = first_error(PREFIX + raw_frame(1, 1, payload), max_table_depth=3)
    assert error.reply_code == 502
    assert error.field is not None and error.field.startswith("arguments")


def test_default_table_depth_limit_stops_deep_nesting():
    payload = method_payload(
        50, 10, short(0) + shortstr("q") + b"\x00" + _nested_table(ac.DEFAULT_MAX_TABLE_DEPTH + 5)
    )
    error = first_error(PREFIX + raw_frame(1, 1, payload))
    assert error.reply_code == 502


# --------------------------------------------------------------------------------------------
# Error latching and end of stream
# --------------------------------------------------------------------------------------------


def test_error_latches():
    decoder = FrameDecoder()
    decoder.receive_data(PREFIX + raw_frame(9, 0, b""))
    assert decoder.next_frame() == ProtocolHeader()
    assert decoder.next_frame() == HeartbeatFrame()
    with pytest.raises(FrameError) as first:
        decoder.next_frame()
    decoder.receive_data(HB + raw_frame(1, 1, ACK))
    for _ in range(3):
        with pytest.raises(FrameError) as again:
            decoder.next_frame()
        assert again.value is first.value
    with pytest.raises(FrameError):
        list(decoder)


def test_error_latches_after_a_fast_path_frame():
    decoder = FrameDecoder(v091)
    decoder.receive_data(raw_frame(1, 1, ACK) + raw_frame(1, 1, ACK + b"\x00"))
    assert decoder.next_frame() == MethodFrame(1, Basic.Ack(delivery_tag=5))
    with pytest.raises(FrameSyntaxError) as first:
        decoder.next_frame()
    decoder.receive_data(raw_frame(1, 1, ACK) * 3)
    with pytest.raises(FrameSyntaxError) as again:
        decoder.next_frame()
    assert again.value is first.value


def test_end_of_stream_mid_frame():
    decoder = FrameDecoder()
    decoder.receive_data(PREFIX + raw_frame(1, 1, ACK)[:10])
    assert decoder.next_frame() == ProtocolHeader()
    assert decoder.next_frame() == HeartbeatFrame()
    assert decoder.next_frame() is NEED_DATA
    decoder.receive_data(b"")
    with pytest.raises(FrameError) as info:
        decoder.next_frame()
    assert info.value.reply_code == 501
    assert info.value.offset == AT


def test_end_of_stream_mid_frame_header():
    decoder = FrameDecoder(v091)
    decoder.receive_data(b"\x01\x00")
    decoder.receive_data(b"")
    with pytest.raises(FrameError) as info:
        decoder.next_frame()
    assert info.value.offset == 0


def test_end_of_stream_at_frame_boundary():
    decoder = FrameDecoder()
    decoder.receive_data(PREFIX)
    decoder.receive_data(b"")
    assert list(decoder) == [ProtocolHeader(), HeartbeatFrame()]
    assert decoder.next_frame() is NEED_DATA
    with pytest.raises(RuntimeError):
        decoder.receive_data(b"more")


# --------------------------------------------------------------------------------------------
# Odd but valid input
# --------------------------------------------------------------------------------------------


def test_body_frames_on_high_channels_and_empty_body():
    stream = raw_frame(3, 65535, b"") + raw_frame(3, 1, b"\xce" * 3)
    assert decode_all(stream, FrameDecoder(v091)) == [
        ContentBodyFrame(65535, b""),
        ContentBodyFrame(1, b"\xce\xce\xce"),
    ]


def test_content_header_weight_and_huge_body_size_kept():
    payload = content_header_payload(60, 2**40, b"\x00\x00", weight=3)
    frame = decode_all(raw_frame(2, 1, payload), FrameDecoder(v091, max_body_size=2**41))[0]
    assert frame == ContentHeaderFrame(1, 60, 2**40, BasicProperties(), weight=3)
    assert encode_frame(frame) == raw_frame(2, 1, payload)


def test_decode_method_offsets_are_payload_positions():
    with pytest.raises(FrameSyntaxError) as info:
        ac.decode_method(method_payload(60, 60, shortstr("ctag") + b"\x00"))
    assert info.value.field == "delivery_tag"
    assert info.value.offset == 4 + 5


def test_decode_method_accepts_memoryview_and_spec():
    payload = Exchange.Declare(exchange="e").encode()
    assert ac.decode_method(memoryview(payload), v091) == Exchange.Declare(exchange="e")
    assert ac.decode_method(bytearray(payload), v091.SPEC) == Exchange.Declare(exchange="e")
    assert isinstance(ac.decode_method(Queue.DeclareOk().encode()), Queue.DeclareOk)


# --------------------------------------------------------------------------------------------
# Error location does not depend on how the stream was chunked
# --------------------------------------------------------------------------------------------

GOOD = PH + HB + raw_frame(1, 1, ACK) + raw_frame(3, 1, b"body") + HB  # 16 + 21 + 12 + 8
GOOD_LEN = len(GOOD)
BAD_STREAMS = [
    # (stream, reply code, offset, field)
    (GOOD + raw_frame(3, 1, b"abc", end=b"\x00"), 501, GOOD_LEN + 10, None),
    (GOOD + raw_frame(6, 1, b"abc"), 501, GOOD_LEN, None),
    (GOOD + raw_frame(1, 0, ACK), 503, GOOD_LEN, None),
    (
        GOOD + raw_frame(1, 1, method_payload(60, 60, shortstr("ctag") + b"\x00")),
        502,
        GOOD_LEN + 7 + 4 + 5,
        "delivery_tag",
    ),
    (GOOD + raw_frame(1, 1, ACK + b"\x00"), 502, GOOD_LEN + 7 + len(ACK), None),
    (
        GOOD + raw_frame(2, 1, content_header_payload(60, 0, b"\x80\x00\x05ab")),
        502,
        GOOD_LEN + 7 + 14,
        "content_type",
    ),
]


@settings(max_examples=examples(40))
@given(st.sampled_from(BAD_STREAMS), st.lists(st.integers(1, 200), max_size=20))
def test_error_offsets_do_not_depend_on_chunking(case, cuts):
    stream, reply_code, offset, field = case
    stream += HB * 3  # trailing valid frames change nothing
    points = sorted({c for c in cuts if c < len(stream)})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    decoder = FrameDecoder()
    frames = []
    with pytest.raises(AMQPDecodeError) as info:
        for chunk in chunks:
            decoder.receive_data(chunk)
            frames.extend(decoder)
    assert len(frames) == 5  # everything before the bad frame decoded
    assert info.value.reply_code == reply_code
    assert info.value.offset == offset
    assert info.value.field == field


def test_data_after_an_error_is_not_kept() -> None:
    decoder = ac.FrameDecoder(v091)
    decoder.receive_data(b"\x09\x00\x00\x00\x00\x00\x00\xce")  # unknown frame type 9
    with pytest.raises(ac.FrameError):
        decoder.next_frame()
    decoder.receive_data(b"\x00" * 1_000_000)
    assert decoder.buffered < 1_000_000
    with pytest.raises(ac.FrameError):
        decoder.next_frame()
