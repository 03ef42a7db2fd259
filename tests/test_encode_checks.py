"""Encoding refuses bad values with AMQPEncodeError naming the field, for every type.

Every field of every method and property class of the three versions is given values of the
wrong type or range; the frame classes and ``encode_message`` are given bad frames, channels,
payloads and methods. Nothing but :class:`AMQPEncodeError` may escape, and it names the field.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from amqp_codec import (
    ContentBodyFrame,
    ContentHeaderFrame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    encode_frame,
    encode_message,
    v0_8,
    v0_9_1,
)
from amqp_codec import v0_10_draft as draft
from amqp_codec.errors import AMQPEncodeError
from amqp_codec.wire010 import encode_draft_message
from amqp_codec.wire010.frames import (
    DraftBodyFrame,
    DraftHeaderFrame,
    DraftHeartbeatFrame,
    DraftMethodFrame,
    encode_draft_frame,
)
from amqp_codec.wire010.structs import PackedStruct

BAD_VALUES: list[Any] = [
    None,
    "text",
    b"bytes",
    1.5,
    -1,
    2**70,
    object(),
    [object()],
    {"k": object()},
    {1: 2},
    "é" * 200,
]


def _fields(package: Any) -> list[tuple[str, type, str]]:
    """(version, class, field attribute) for every non-reserved field of every class."""
    classes: list[type] = list(package.METHODS.values())
    classes += [
        cls
        for name in dir(package)
        if isinstance(cls := getattr(package, name), type) and hasattr(cls, "FIELDS")
    ]
    out = []
    for cls in dict.fromkeys(classes):
        for spec in cls.FIELDS:
            if not spec.reserved:
                out.append((package.__name__.rsplit(".", 1)[1], cls, spec.attr))
    return out


FIELDS = _fields(v0_9_1) + _fields(v0_8) + _fields(draft)


def _encode(obj: Any) -> bytes:
    if isinstance(obj, PackedStruct):
        return obj.encode()
    if hasattr(obj, "METHOD_ID"):
        if type(obj).__module__.startswith("amqp_codec.v0_10_draft"):
            return encode_draft_frame(DraftMethodFrame(1, obj))
        return encode_frame(MethodFrame(1, obj))
    return encode_frame(ContentHeaderFrame(1, obj.CLASS_ID, 0, obj))


@pytest.mark.parametrize(
    ("version", "cls", "attr"), FIELDS, ids=[f"{v}-{c.__qualname__}-{a}" for v, c, a in FIELDS]
)
def test_bad_field_values_raise_encode_errors_naming_the_field(
    version: str, cls: type, attr: str
) -> None:
    for value in BAD_VALUES:
        try:
            obj = cls(**{attr: value})
        except AMQPEncodeError:
            continue  # refused at construction: fine too
        try:
            _encode(obj)
        except AMQPEncodeError as exc:
            assert exc.field is not None and exc.field.startswith(attr), (value, exc)
        except Exception as exc:  # pragma: no cover - what this test is for
            pytest.fail(f"{cls.__qualname__}({attr}={value!r}) raised {exc!r}")


FRAME_CASES: list[tuple[str, Callable[[], bytes], str | None]] = [
    ("method not a method", lambda: encode_frame(MethodFrame(1, "x")), "method"),  # type: ignore[arg-type]
    ("method None", lambda: encode_frame(MethodFrame(1, None)), "method"),  # type: ignore[arg-type]
    ("channel str", lambda: encode_frame(MethodFrame("1", v0_9_1.Basic.Ack())), "channel"),  # type: ignore[arg-type]
    ("channel bool", lambda: encode_frame(HeartbeatFrame(True)), "channel"),
    ("channel range", lambda: encode_frame(ContentBodyFrame(70000, b"")), "channel"),
    ("payload None", lambda: encode_frame(ContentBodyFrame(1, None)), "payload"),  # type: ignore[arg-type]
    ("payload int", lambda: encode_frame(ContentBodyFrame(1, 5)), "payload"),  # type: ignore[arg-type]
    (
        "properties None",
        lambda: encode_frame(ContentHeaderFrame(1, 60, 0, None)),  # type: ignore[arg-type]
        "properties",
    ),
    (
        "body size str",
        lambda: encode_frame(ContentHeaderFrame(1, 60, "0", v0_9_1.BasicProperties())),  # type: ignore[arg-type]
        "body_size",
    ),
    ("protocol header", lambda: encode_frame(ProtocolHeader(None)), None),  # type: ignore[arg-type]
    ("not a frame", lambda: encode_frame("frame"), None),  # type: ignore[arg-type]
    (
        "message body None",
        lambda: encode_message(1, v0_9_1.Basic.Publish(), v0_9_1.BasicProperties(), None),  # type: ignore[arg-type]
        "body",
    ),
    (
        "message frame_max str",
        lambda: encode_message(
            1,
            v0_9_1.Basic.Publish(),
            v0_9_1.BasicProperties(),
            b"x",
            "9",  # type: ignore[arg-type]
        ),
        "frame_max",
    ),
    (
        "message properties None",
        lambda: encode_message(1, v0_9_1.Basic.Publish(), None, b"x"),  # type: ignore[arg-type]
        "properties",
    ),
    (
        "message method None",
        lambda: encode_message(1, None, v0_9_1.BasicProperties(), b"x"),  # type: ignore[arg-type]
        None,
    ),
    (
        "message channel None",
        lambda: encode_message(None, v0_9_1.Basic.Publish(), v0_9_1.BasicProperties(), b"x"),  # type: ignore[arg-type]
        "channel",
    ),
    (
        "draft method None",
        lambda: encode_draft_frame(DraftMethodFrame(1, None)),  # type: ignore[arg-type]
        "method",
    ),
    (
        "draft channel None",
        lambda: encode_draft_frame(DraftMethodFrame(None, draft.Session.Open())),  # type: ignore[arg-type]
        "channel",
    ),
    ("draft flags", lambda: encode_draft_frame(DraftBodyFrame(1, b"", 16)), "flags"),
    ("draft track", lambda: encode_draft_frame(DraftHeartbeatFrame(0, 15, "0")), "track"),  # type: ignore[arg-type]
    ("draft payload", lambda: encode_draft_frame(DraftBodyFrame(1, None)), "payload"),  # type: ignore[arg-type]
    ("draft structs", lambda: encode_draft_frame(DraftHeaderFrame(1, None)), "structs"),  # type: ignore[arg-type]
    (
        "draft struct item",
        lambda: encode_draft_frame(DraftHeaderFrame(1, ("x",))),  # type: ignore[arg-type]
        "structs[0]",
    ),
    (
        "draft message body",
        lambda: encode_draft_message(1, draft.Message.Transfer(), (), None),  # type: ignore[arg-type]
        "body",
    ),
]


@pytest.mark.parametrize(("case", "encode", "field"), FRAME_CASES, ids=[c[0] for c in FRAME_CASES])
def test_frames_are_type_checked_at_the_door(
    case: str, encode: Callable[[], bytes], field: str | None
) -> None:
    with pytest.raises(AMQPEncodeError) as caught:
        encode()
    if field is not None:
        assert caught.value.field == field


def test_nested_table_paths_name_the_bad_value() -> None:
    declare = v0_9_1.Queue.Declare(queue="q", arguments={"a": {"b": [1, object()]}})
    with pytest.raises(AMQPEncodeError) as caught:
        encode_frame(MethodFrame(1, declare))
    assert caught.value.field == 'arguments["a"]["b"][1]'
    draft_declare = draft.Queue.Declare(queue="q", arguments={"a": {"b": [1, object()]}})
    with pytest.raises(AMQPEncodeError) as caught:
        encode_draft_frame(DraftMethodFrame(1, draft_declare))
    assert caught.value.field == 'arguments["a"]["b"][1]'


def _nested(depth: int) -> dict[str, object]:
    table: dict[str, object] = {}
    inner = table
    for _ in range(depth):
        inner["a"] = {}
        inner = inner["a"]  # type: ignore[assignment]
    return table


def test_tables_nested_past_the_stack_or_containing_themselves_are_refused() -> None:
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    for table in (_nested(10_000), cyclic):
        with pytest.raises(AMQPEncodeError, match="nests too deeply"):
            encode_frame(MethodFrame(1, v0_9_1.Queue.Declare(arguments=table)))
        with pytest.raises(AMQPEncodeError, match="nests too deeply"):
            encode_draft_frame(DraftMethodFrame(1, draft.Queue.Declare(arguments=table)))


def test_docstrings_say_what_encoding_checks() -> None:
    # The generated field docstrings promise only what the encoders enforce, and say that
    # the spec's own rules (non-empty, patterns) are left to the peer.
    source = inspect.getsource(v0_9_1.Queue.Declare)
    start = source.index("    queue: str")
    text = " ".join(source[start : source.index("passive:", start)].split())
    assert "Encoding takes a str of at most 255 bytes" in text
    assert "Spec checks" not in text and "Not checked by this codec" in text
    for value in ("q" * 256, 7):  # what the docstring says is refused, is
        with pytest.raises(AMQPEncodeError):
            encode_frame(MethodFrame(1, v0_9_1.Queue.Declare(queue=value)))  # type: ignore[arg-type]
