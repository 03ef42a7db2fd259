"""The optional compiled build (``AMQP_CODEC_COMPILE=1``): what it needs from the source, and
that objects the decoders build without ``__init__`` are indistinguishable from constructed
ones, in either build.

CI runs the whole suite twice: on the pure-Python package, and on a compiled install with
``AMQP_CODEC_REQUIRE_COMPILED=1``, where the first test checks the extensions are the ones
running (a build that silently fell back to Python would otherwise pass everything).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import os
import pickle
from pathlib import Path

import pytest

import amqp_codec as ac
from amqp_codec import FrameDecoder, encode_frame
from amqp_codec._compiled import COMPILED_MODULES, compiled_modules
from amqp_codec.table import FieldArray, FieldTable, Timestamp, decode_table, encode_table
from amqp_codec.v0_9_1 import Basic, BasicProperties

ROOT = Path(__file__).resolve().parent.parent


def test_the_required_build_is_the_one_running() -> None:
    running = compiled_modules()
    if os.environ.get("AMQP_CODEC_REQUIRE_COMPILED") == "1":
        assert running == list(COMPILED_MODULES)
    else:
        # Either build may be installed; what runs is all compiled or all Python.
        assert running in ([], list(COMPILED_MODULES))


def test_compiled_modules_are_plain_python_sources() -> None:
    for name in COMPILED_MODULES:
        assert (ROOT / (name.replace(".", "/") + ".py")).is_file(), name


def _backend():
    spec = importlib.util.spec_from_file_location(
        "_amqp_codec_backend", ROOT / "build_backend" / "backend.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_compiler_is_a_build_requirement_only_when_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backend = _backend()
    seen: list[str | None] = []

    def setuptools_hook(_config_settings: object) -> list[str]:
        seen.append(os.environ.get(backend.COMPILE_ENV))  # setup.py must not compile here
        return ["wheel"]

    for value, wanted in (("", False), ("0", False), ("1", True), ("yes", True)):
        monkeypatch.setenv(backend.COMPILE_ENV, value)
        requires = backend._with_compiler(setuptools_hook, None)
        assert requires == (["wheel", backend.COMPILER_REQUIREMENT] if wanted else ["wheel"])
        assert os.environ[backend.COMPILE_ENV] == value  # restored afterwards
    assert seen == ["", "0", None, None]


def _decoded(frame: ac.Frame) -> ac.Frame:
    decoder = FrameDecoder(ac.v0_9_1)
    decoder.receive_data(encode_frame(frame))
    got = decoder.next_frame()
    assert got is not ac.NEED_DATA
    return got


DELIVER = Basic.Deliver("ctag", 7, True, "ex", "rk")
PROPERTIES = BasicProperties(
    content_type="text/plain",
    headers=FieldTable({"a": 1, "b": FieldArray([1, "x"])}),
    timestamp=Timestamp(5),
)


@pytest.mark.parametrize(
    "frame",
    [
        ac.MethodFrame(1, DELIVER),
        ac.MethodFrame(1, Basic.Ack(3, True)),
        ac.MethodFrame(1, Basic.QosOk()),
        ac.ContentHeaderFrame(1, 60, 10, PROPERTIES),
        ac.ContentBodyFrame(1, b"0123456789"),
    ],
    ids=["deliver", "ack", "no-fields", "header", "body"],
)
def test_decoded_objects_are_indistinguishable_from_constructed_ones(frame: ac.Frame) -> None:
    got = _decoded(frame)
    for decoded, built in (
        (got, frame),
        (getattr(got, "method", None), getattr(frame, "method", None)),
    ):
        if built is None:
            continue
        assert type(decoded) is type(built)
        assert decoded == built and repr(decoded) == repr(built)
        try:
            assert hash(decoded) == hash(built)
        except TypeError:  # a field table inside: unhashable, both alike
            with pytest.raises(TypeError):
                hash(decoded)
        assert not hasattr(decoded, "__dict__") or type(decoded).__name__.endswith("Properties")
        for field in dataclasses.fields(built)[:1]:  # type: ignore[arg-type]
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(decoded, field.name, getattr(built, field.name))
        for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
            again = pickle.loads(pickle.dumps(decoded, protocol))
            assert again == built and type(again) is type(built)
        assert copy.deepcopy(decoded) == built


def test_decoded_tables_are_indistinguishable_from_constructed_ones() -> None:
    built = FieldTable({"a": 1, "t": Timestamp(9), "f": FieldTable({"x": "y"})})
    decoded, _end = decode_table(encode_table(built), 0, len(encode_table(built)))
    assert type(decoded) is FieldTable and decoded == built and repr(decoded) == repr(built)
    assert FieldTable.__module__ == Timestamp.__module__ == "amqp_codec.table"
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(decoded, protocol)) == built
    assert repr(decoded["t"]) == "Timestamp(9)" and type(decoded["t"]) is Timestamp
