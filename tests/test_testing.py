"""amqp_codec.testing: the public strategies, checked against the codec and the spec.

Per version: every method is reachable, valid methods pass the spec's checks and round-trip
byte-exact, streams decode frame for frame in any chunking, damaged streams give only the
documented errors at offsets inside the stream; a package generated from a user's own XML is
covered the same way; a planted bug shrinks to a small example.
"""

from __future__ import annotations

import contextlib
import importlib
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from amqp_codec import (
    NEED_DATA,
    AMQPDecodeError,
    FrameDecoder,
    MethodFrame,
    Properties,
    encode_frame,
    v0_8,
    v0_9_1,
    v0_10_draft,
)
from amqp_codec import testing as at
from amqp_codec.decoder import decode_method
from amqp_codec.testing.checks import violations
from amqp_codec.v0_9_1 import BasicProperties, Queue

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = [v0_9_1, v0_8, v0_10_draft]
IDS = ["0-9-1", "0-8", "0-10-draft"]
FAST = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))


def decode(data: bytes | tuple[bytes, ...], spec: Any, frame_max: int = 0) -> list[Any]:
    """Every frame of ``data`` (bytes or chunks), the end of the stream marked.

    Empty chunks are skipped: ``receive_data(b"")`` is how the end of the stream is told.
    """
    decoder = FrameDecoder(spec, frame_max=frame_max or None)
    out = []
    for piece in [*([data] if isinstance(data, bytes) else data), b""]:
        if not piece:
            continue
        decoder.receive_data(piece)
        while (frame := decoder.next_frame()) is not NEED_DATA:
            out.append(frame)
    decoder.receive_data(b"")
    while (frame := decoder.next_frame()) is not NEED_DATA:
        out.append(frame)
    return out


# -- import hygiene ---------------------------------------------------------------------------


def test_import_amqp_codec_does_not_import_hypothesis() -> None:
    script = textwrap.dedent(
        """
        import sys
        class Hide:
            def find_spec(self, name, path=None, target=None):
                if name == "hypothesis" or name.startswith("hypothesis."):
                    raise ImportError("hypothesis is hidden")
        sys.meta_path.insert(0, Hide())
        import amqp_codec, amqp_codec.v0_9_1, amqp_codec.v0_8, amqp_codec.v0_10_draft
        assert not any(m.split(".")[0] == "hypothesis" for m in sys.modules), "imported"
        assert "amqp_codec.testing" not in sys.modules
        try:
            import amqp_codec.testing
        except ImportError as exc:
            print("testing needs", exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "testing needs" in done.stdout  # the hiding works: testing does need hypothesis


# -- methods ----------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", VERSIONS, ids=IDS)
@FAST
@given(data=st.data())
def test_every_method_valid_and_byte_exact(spec: ModuleType, data: st.DataObject) -> None:
    """One draw of every method: it passes the spec's checks and decodes back byte-exact."""
    for cls in spec.SPEC.methods.values():
        method = data.draw(at.methods(spec, include=[cls]), label=cls.NAME)
        assert type(method) is cls
        assert violations(method) == []
        payload = method.encode()
        if spec is v0_10_draft:
            (frame,) = decode(
                encode_frame(
                    at._frames.method_frame(
                        at.resolve(spec), 1 if cls.CLASS_ID != 10 else 0, method
                    )
                ),
                spec,
            )
            decoded = frame.method
        else:
            decoded = decode_method(payload, spec)
        assert decoded == method
        assert decoded.encode() == payload


def drawn(strategy: st.SearchStrategy[Any], key: Any, examples: int) -> set[Any]:
    """``key`` of every example ``strategy`` generates in ``examples`` tries (no shrinking;
    derandomized, so the outcome does not vary from run to run)."""
    seen: set[Any] = set()

    @settings(
        max_examples=examples,
        deadline=None,
        phases=[Phase.generate],
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(example: Any) -> None:
        seen.add(key(example))

    collect()
    return seen


def test_methods_reach_every_method() -> None:
    """Without include, every method comes up (0-9-1 here; the other versions draw from the
    same code, and test_every_method_valid_and_byte_exact draws each of their methods)."""
    spec = v0_9_1
    wanted = {cls.NAME for cls in spec.SPEC.methods.values()}
    assert drawn(at.methods(spec), lambda m: m.NAME, 25 * len(wanted)) == wanted


@settings(max_examples=60, deadline=None)
@given(at.methods(include=["queue.declare", Queue.Bind, "exchange.declare"]))
def test_valid_names_follow_the_spec(method: Any) -> None:
    assert method.NAME in ("queue.declare", "queue.bind", "exchange.declare")
    for name in ("queue", "exchange"):
        value = getattr(method, name, None)
        if value is not None and method.NAME != "queue.bind":
            raw = value.encode()
            assert len(raw) <= 127
            assert all(c.isascii() and (c.isalnum() or c in "-_.:") for c in value), value


def test_violations_name_the_broken_checks() -> None:
    assert violations(Queue.Declare(queue="q " * 150)) == [
        "queue.declare queue: longer than 127 bytes",
        "queue.declare queue: does not match ^[a-zA-Z0-9-_.:]*$",
    ]
    assert violations(Queue.Declare(queue="a b")) == [
        "queue.declare queue: does not match ^[a-zA-Z0-9-_.:]*$"
    ]
    assert violations(Queue.Declare(queue="amq.gen-1")) == []
    assert "connection.open virtual-host: empty, must not be" in violations(
        v0_9_1.Connection.Open(virtual_host="")
    )


def test_include_names_an_unknown_method() -> None:
    with pytest.raises(ValueError, match=r"no method 'basic\.nope'"):
        at.methods(include=["basic.nope"])


@settings(max_examples=40, deadline=None)
@given(at.methods(valid=False))
def test_invalid_methods_still_encode(method: Any) -> None:
    payload = method.encode()
    decoded = decode_method(payload, v0_9_1)
    assert decoded.encode() == payload


@settings(max_examples=40, deadline=None)
@given(st.from_type(v0_9_1.Basic.Publish), st.from_type(BasicProperties))
def test_from_type(method: Any, properties: Any) -> None:
    assert isinstance(method, v0_9_1.Basic.Publish) and violations(method) == []
    assert isinstance(properties, BasicProperties)


@settings(max_examples=20, deadline=None)
@given(st.from_type(v0_8.Queue.Declare), st.from_type(v0_10_draft.Message.Transfer))
def test_from_type_other_versions(queue: Any, transfer: Any) -> None:
    assert violations(queue) == [] and violations(transfer) == []


# -- tables, properties, frames, messages ----------------------------------------------------


@pytest.mark.parametrize("spec", VERSIONS, ids=IDS)
@FAST
@given(data=st.data())
def test_properties_and_tables_roundtrip(spec: ModuleType, data: st.DataObject) -> None:
    props = data.draw(at.properties(spec))
    wire = props.encode()
    if isinstance(props, Properties):
        decoder = spec.SPEC.property_decoders[props.CLASS_ID]
        assert decoder(wire, 0, len(wire), 32) == props
    else:
        assert type(props).decode(wire, 0, len(wire), 32) == (props, len(wire))
    table = data.draw(at.field_tables(spec, max_depth=2))
    method = next(
        c for c in spec.SPEC.methods.values() if any(f.wire_type == "table" for f in c.FIELDS)
    )
    attr = next(f.attr for f in method.FIELDS if f.wire_type == "table")
    carrier = method(**{attr: table})
    frame = at._frames.method_frame(at.resolve(spec), 0 if method.CLASS_ID == 10 else 1, carrier)
    (decoded,) = decode(encode_frame(frame), spec)
    assert getattr(decoded.method, attr) == table


@pytest.mark.parametrize("spec", VERSIONS, ids=IDS)
@FAST
@given(data=st.data())
def test_frames_and_messages_decode(spec: ModuleType, data: st.DataObject) -> None:
    frame = data.draw(at.frames(spec, frame_max=4096))
    wire = encode_frame(frame)
    assert len(wire) <= 4096
    assert decode(wire, spec) == [frame]
    message = data.draw(at.messages(spec))
    assert decode(message.data, spec, message.frame_max) == list(message.frames)
    assert b"".join(encode_frame(f) for f in message.frames) == message.data


@settings(max_examples=25, deadline=None)
@given(at.frames(channel=0))
def test_channel_zero_frames(frame: Any) -> None:
    assert frame.channel == 0
    if isinstance(frame, MethodFrame):
        assert frame.method.CLASS_ID == 10


# -- streams ----------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["client", "server"])
@pytest.mark.parametrize("spec", VERSIONS, ids=IDS)
@FAST
@given(data=st.data())
def test_streams_decode_frame_for_frame(
    spec: ModuleType, direction: str, data: st.DataObject
) -> None:
    stream = data.draw(at.chunked(at.streams(spec, direction=direction)))
    assert b"".join(stream.chunks) == stream.data
    assert decode(stream.chunks, spec, stream.frame_max) == list(stream.frames)
    for frame in stream.frames:
        method = getattr(frame, "method", None)
        if method is not None:
            assert violations(method) == []
    # Without spec=, the decoder finds the version from the header or connection.start.
    assert decode(stream.chunks, None, stream.frame_max) == list(stream.frames)
    names = [f.method.NAME for f in stream.frames if hasattr(f, "method")]
    first = "connection.start-ok" if direction == "client" else "connection.start"
    assert names[0] == first


@settings(max_examples=30, deadline=None)
@given(at.chunked(b"0123456789"))
def test_chunked_bytes(chunks: tuple[bytes, ...]) -> None:
    assert b"".join(chunks) == b"0123456789"


# -- damaged streams --------------------------------------------------------------------------


def decode_error(
    data: bytes | tuple[bytes, ...], spec: Any, frame_max: int
) -> AMQPDecodeError | None:
    try:
        decode(data, spec, frame_max)
    except AMQPDecodeError as exc:
        return exc
    return None


@pytest.mark.parametrize("spec", VERSIONS, ids=IDS)
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_damaged_streams_give_documented_errors(spec: ModuleType, data: st.DataObject) -> None:
    damage = data.draw(at.chunked(at.damaged(at.streams(spec))))  # the stream knows its version
    assert damage.kind in at.DAMAGE_KINDS
    assert 0 <= damage.offset <= len(damage.data)
    exc = decode_error(damage.chunks, spec, damage.frame_max)
    if exc is None:
        # Only a flipped bit can leave a stream that still decodes (inside a string, say).
        assert damage.kind == "bit-flip", damage
    else:
        assert exc.offset is None or 0 <= exc.offset <= len(damage.data), (damage, exc)


def test_draft_error_offset_of_a_frame_cut_by_the_end_of_stream() -> None:
    # damaged() found the 0-10 draft's end-of-stream error relocated twice (past the end).
    start_ok = at._frames.method_frame(at.resolve(v0_10_draft), 0, v0_10_draft.Connection.StartOk())
    first = b"AMQP\x01\x01\x63\x00" + encode_frame(start_ok)
    heartbeat = bytearray(encode_frame(at._frames.heartbeat(at.resolve(v0_10_draft))))
    heartbeat[2:4] = (len(heartbeat) - 1 + 10).to_bytes(2, "big")  # the size lies by 10 bytes
    exc = decode_error((first, bytes(heartbeat)), v0_10_draft, 0)
    assert exc is not None and exc.offset == len(first)


# What each kind of damage must look like, and the error it must cause.
@pytest.mark.parametrize("spec", VERSIONS, ids=IDS)
@pytest.mark.parametrize("kind", at.DAMAGE_KINDS)
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_each_damage_kind_is_what_it_says(spec: ModuleType, kind: str, data: st.DataObject) -> None:
    if kind not in at._damage.kinds_for(at.resolve(spec)):
        with pytest.raises(ValueError, match="damage kinds"):
            at.damaged(spec=spec, kinds=[kind])
        return
    damage = data.draw(at.damaged(at.streams(spec), spec=spec, kinds=[kind]))
    original = damage.stream.data
    assert damage.kind == kind
    if kind == "cut-short":
        assert original.startswith(damage.data) and len(damage.data) == damage.offset
    elif kind in ("bit-flip", "frame-end", "size-short", "size-long", "size-huge"):
        assert len(damage.data) == len(original)
        assert damage.data[damage.offset] != original[damage.offset] or kind.startswith("size")
        assert damage.data != original
    elif kind in ("over-frame-max", "deep-tables", "void-array-count"):
        assert len(damage.data) > len(original)
        inserted_at = max(o for o in damage.stream.offsets if o <= damage.offset)
        assert damage.data[:inserted_at] == original[:inserted_at]
    exc = decode_error(damage.data, spec, damage.frame_max)
    if kind != "bit-flip":
        assert exc is not None, damage
        if kind in ("unknown-class", "unknown-method"):
            assert exc.reply_code in (503, 540), exc
        elif kind == "deep-tables":
            assert exc.reply_code == 502, exc


# -- a package generated from the user's own XML ---------------------------------------------

OVERLAY = """<?xml version="1.0"?>
<overlay>
  <class name="audit" handler="channel" index="200" label="audit trail">
    <method name="record" index="10" label="record an event">
      <chassis name="server" implement="MAY"/>
      <field name="source" domain="queue-name"/>
      <field name="detail" type="longstr"><assert check="notnull"/></field>
      <field name="level" type="octet"><assert check="ne" value="0"/></field>
    </method>
  </class>
</overlay>
"""


@pytest.fixture(scope="module")
def user_package(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    root = tmp_path_factory.mktemp("user")
    (root / "overlay.xml").write_text(OVERLAY)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "codegen",
            "--spec",
            str(ROOT / "specs/amqp0-9-1.extended.xml"),
            "--overlay",
            str(root / "overlay.xml"),
            "--out",
            str(root / "my_amqp"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module("my_amqp")
    finally:
        sys.path.remove(str(root))


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_user_generated_package(user_package: ModuleType, data: st.DataObject) -> None:
    record = data.draw(at.methods(user_package, include=["audit.record"]))
    assert record.detail and record.level != 0 and len(record.source.encode()) <= 127
    assert violations(record) == []
    assert decode_method(record.encode(), user_package) == record
    stream = data.draw(at.chunked(at.streams(user_package.SPEC, direction="server")))
    assert decode(stream.chunks, user_package, stream.frame_max) == list(stream.frames)
    damage = data.draw(at.damaged(at.streams(user_package), spec=user_package))
    with contextlib.suppress(AMQPDecodeError):
        decode(damage.data, user_package, damage.frame_max)


def test_user_package_methods_reach_the_overlay(user_package: ModuleType) -> None:
    wanted = len(user_package.SPEC.methods)
    assert "audit.record" in drawn(at.methods(user_package), lambda m: m.NAME, 15 * wanted)


# -- shrinking --------------------------------------------------------------------------------


def toy_parser(data: bytes) -> list[tuple[int, int, bytes]]:
    """A small 0-9-1 frame splitter with a planted bug: it trips over a heartbeat."""
    out, at_ = [], 8 if data.startswith(b"AMQP") else 0
    while at_ < len(data):
        kind, channel, size = (
            data[at_],
            int.from_bytes(data[at_ + 1 : at_ + 3], "big"),
            int.from_bytes(data[at_ + 3 : at_ + 7], "big"),
        )
        if kind == 8:
            raise RuntimeError("planted bug: heartbeats are not handled")
        out.append((kind, channel, data[at_ + 7 : at_ + 7 + size]))
        at_ += 8 + size
    return out


def test_a_planted_bug_shrinks_to_a_small_stream() -> None:
    def breaks(stream: Any) -> bool:
        try:
            toy_parser(stream.data)
        except RuntimeError:
            return True
        return False

    smallest = find(at.streams(), breaks, settings=settings(max_examples=500, database=None))
    # The handshake is always there; the shrunk stream adds nothing but the one heartbeat.
    names = [
        type(f).__name__ if not hasattr(f, "method") else f.method.NAME for f in smallest.frames
    ]
    assert names == [
        "ProtocolHeader",
        "connection.start-ok",
        "connection.tune-ok",
        "connection.open",
        "HeartbeatFrame",
    ]
    start_ok = smallest.frames[1].method
    assert start_ok.client_properties == {} and start_ok.response == b"\x00" * len(
        start_ok.response
    )
    assert len(smallest.data) < 120


# -- the docs' examples run as written --------------------------------------------------------


def test_docs_examples_run() -> None:
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    assert len(blocks) == 2
    for block in blocks:
        namespace: dict[str, Any] = {}
        exec(compile(block, "docs/testing.md", "exec"), namespace)
        tests = [f for name, f in namespace.items() if name.startswith("test_")]
        assert len(tests) == 1
        tests[0]()
