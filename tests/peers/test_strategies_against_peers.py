"""A worked example of amqp_codec.testing: other libraries' decoders fed its streams.

Not part of the default run (the decoders are other projects'; what they do is recorded,
not required). Run with::

    AMQP_CODEC_PEER_FUZZ=1 .venv/bin/python -m pytest -q tests/peers/test_strategies_against_peers.py -s

Each test draws 0-9-1 streams (client and server side) or damaged streams and feeds them,
whole, to the decoders of pika (``pika.frame.decode_frame``), pamqp
(``pamqp.frame.unmarshal``) and py-amqp (its method signature table and
``amqp.serialization.loads``, ``Message._load_properties``), then prints what it saw.

What they found (pika 1.3, pamqp 3.3, py-amqp 5.4.2; 300 valid and 300 damaged 0-9-1
streams per peer, 25 Nov 2026):

* Valid streams. pika decodes all but about 2% of them, frame for frame; the rest fail on
  timestamps beyond the platform's ``time_t`` (``OverflowError``, a 64-bit AMQP timestamp
  such as year 4611129) or on a short string that is not UTF-8 (``ValueError``). pamqp fails
  on about half: every short string or table key that is not UTF-8 (``UnicodeDecodeError``
  inside ``UnmarshalingException``; the spec's short strings are octets, and the strategies
  draw such strings on purpose) and the same out-of-range timestamps (``ValueError``).
  py-amqp (server side only: as a client it has no table for client methods) fails on 3 of
  4 streams, all ``UnicodeDecodeError`` from non-UTF-8 short strings.
* Damaged streams. pika: a size that lies long or huge, or a stream cut short, only ever
  "needs more data", so a peer that lies about a size holds the connection open; an unknown
  class or method id raises ``KeyError`` from its method table (not its documented
  ``InvalidFrameError``); a frame over frame_max and tables nested past 32 levels decode
  without complaint (pika has no frame_max or depth check at this layer). pamqp: every
  damage surfaces as its ``UnmarshalingException``, except frames over frame_max and deep
  tables, which it accepts. py-amqp: damage surfaces as whatever its readers raise
  (``UnicodeDecodeError``, ``IndexError``, ``ValueError``, ``OverflowError``, ``KeyError``,
  its ``error``), and deep tables are followed to any depth. (Its frame reader is bound to a
  socket; the harness splits frames itself, so "no error" on a cut-short stream is the
  harness, not py-amqp.)
* The codec itself, under the same strategies (``tests/test_testing.py``): one finding, an
  error offset past the end of a 0-10 draft stream cut inside a frame; recorded there as a
  strict xfail.
* ``damaged()`` draws the first kinds more often (hypothesis favours the first element of a
  choice): about a third of the examples are ``cut-short``.

The figures printed by the tests (kind → exception types) are the evidence; they vary a
little from run to run with the drawn examples.
"""

from __future__ import annotations

import collections
import os
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from amqp_codec import testing as at
from amqp_codec import v0_9_1

pytestmark = pytest.mark.skipif(
    os.environ.get("AMQP_CODEC_PEER_FUZZ") != "1",
    reason="worked example against other libraries: set AMQP_CODEC_PEER_FUZZ=1",
)

EXAMPLES = int(os.environ.get("AMQP_CODEC_PEER_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


def split(data: bytes) -> list[tuple[int, int, bytes]]:
    """(type, channel, payload) of each 0-9-1 frame after an optional protocol header."""
    out, at_ = [], 8 if data.startswith(b"AMQP") else 0
    while at_ + 7 <= len(data):
        kind, channel, size = struct.unpack_from(">BHI", data, at_)
        out.append((kind, channel, data[at_ + 7 : at_ + 7 + size]))
        at_ += 8 + size
    return out


# -- the three decoders, as "decode a whole stream, raise what you raise" -------------------


def pika_decode(data: bytes) -> list[Any]:
    import pika.frame

    frames, offset = [], 0
    while offset < len(data):
        consumed, frame = pika.frame.decode_frame(data[offset:])
        if frame is None:
            frames.append("NEED-DATA")
            break
        frames.append(frame)
        offset += consumed
    return frames


def pamqp_decode(data: bytes) -> list[Any]:
    import pamqp.frame

    frames, offset = [], 0
    while offset < len(data):
        consumed, _channel, frame = pamqp.frame.unmarshal(data[offset:])
        frames.append(frame)
        offset += consumed
    return frames


def pyamqp_decode(data: bytes) -> list[Any]:
    import amqp.serialization
    from amqp.basic_message import Message
    from amqp.channel import Channel
    from amqp.connection import Connection

    signatures = {**Connection._METHODS, **Channel._METHODS}
    out: list[Any] = []
    for kind, _channel, payload in split(data):
        if kind == 1:
            class_id, method_id = struct.unpack_from(">HH", payload)
            method = signatures[(class_id, method_id)]
            out.append(amqp.serialization.loads(method.args, payload, 4) if method.args else ())
        elif kind == 2:
            message = Message()
            message._load_properties(struct.unpack_from(">H", payload)[0], payload, 12)
            out.append(message.properties)
    return out


PEERS = {"pika": pika_decode, "pamqp": pamqp_decode, "py-amqp": pyamqp_decode}


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize("direction", ["client", "server"])
def test_valid_streams(peer: str, direction: str) -> None:
    if peer == "py-amqp" and direction == "client":
        pytest.skip("py-amqp is a client: its method table has only what a server sends")
    failures: collections.Counter[str] = collections.Counter()

    @SETTINGS
    @given(at.streams(v0_9_1, direction=direction))
    def run(stream: at.StreamExample) -> None:
        try:
            decoded = PEERS[peer](stream.data)
        except Exception as exc:  # what the peer raises is what we record
            cause = exc.__cause__ or exc.__context__ or exc
            failures[f"{type(exc).__name__} ({type(cause).__name__})"] += 1
            return
        if peer != "py-amqp" and len(decoded) != len(stream.frames):
            failures["wrong frame count"] += 1

    run()
    print(f"\n{peer} {direction}: {sum(failures.values())} of {EXAMPLES} streams failed")
    for what, count in failures.most_common():
        print(f"  {count:4} {what}")


@pytest.mark.parametrize("peer", PEERS)
def test_damaged_streams(peer: str) -> None:
    outcome: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)

    @SETTINGS
    @given(at.damaged(at.streams(v0_9_1, direction="server")))
    def run(damage: at.DamagedStream) -> None:
        try:
            decoded = PEERS[peer](damage.data)
        except Exception as exc:  # what the peer raises is what we record
            outcome[damage.kind][type(exc).__name__] += 1
            return
        stuck = bool(decoded) and isinstance(decoded[-1], str)
        outcome[damage.kind]["waits for more data" if stuck else "no error"] += 1

    run()
    print(f"\n{peer}, damaged streams:")
    for kind in sorted(outcome):
        seen = ", ".join(f"{name} {n}" for name, n in outcome[kind].most_common())
        print(f"  {kind:16} {seen}")
