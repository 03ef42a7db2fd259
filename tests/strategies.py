"""What the test suite uses of amqp_codec.testing, under the names the tests know.

The strategies, the field-table model and the independent wire helpers live in the public
module; this file only re-exports them and adapts two signatures (``methods(cls, tags)`` and
``properties(cls, tags)``, which take a class rather than a version).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from hypothesis import strategies as st

from amqp_codec import ContentBodyFrame, ContentHeaderFrame, HeartbeatFrame, MethodFrame, testing
from amqp_codec.testing import _model
from amqp_codec.testing._version import ALL_TAGS, resolve
from amqp_codec.testing.tables import *  # noqa: F403
from amqp_codec.testing.tables import TV
from amqp_codec.testing.wire import *  # noqa: F403
from amqp_codec.v0_9_1 import BasicProperties

__all__ = ["ALL_TAGS", "TV", "examples", "frame_lists", "methods", "properties", "spec_tags"]

#: Multiplier for every test's example count: AMQP_TEST_SCALE=20 for a long bug hunt.
SCALE = max(1, int(os.environ.get("AMQP_TEST_SCALE", "1")))


def examples(n: int) -> int:
    """``n`` hypothesis examples, times AMQP_TEST_SCALE."""
    return n * SCALE


def spec_tags(spec: Any) -> str:
    """The field-table tags a generated version's ``SPEC`` defines."""
    return resolve(spec).tags


def _version_of(cls: type) -> Any:
    return resolve(sys.modules[cls.__module__.rpartition(".")[0]])


def methods(cls: type, tags: str = ALL_TAGS) -> st.SearchStrategy[Any]:
    """Instances of ``cls`` with any encodable field values (the spec's checks ignored)."""
    return _model.methods(_version_of(cls), cls, valid=False)


def any_method(spec: Any = None) -> st.SearchStrategy[Any]:
    """Any method of ``spec`` (a generated version's ``SPEC``; default 0-9-1)."""
    return testing.methods(spec, valid=False)


def properties(cls: type = BasicProperties, tags: str = ALL_TAGS) -> st.SearchStrategy[Any]:
    """Property lists of ``cls``, each property independently present or absent."""
    return _model.properties(_version_of(cls), cls)


@st.composite
def frame_lists(draw: st.DrawFn, max_frames: int = 8) -> list[Any]:
    """Valid 0-9-1 frames (channel rules respected) for building streams."""
    frames: list[Any] = []
    for _ in range(draw(st.integers(1, max_frames))):
        kind = draw(st.sampled_from(["method", "method", "header", "body", "heartbeat"]))
        channel = draw(st.integers(1, 65535))
        if kind == "method":
            method = draw(any_method())
            frames.append(MethodFrame(0 if method.CLASS_ID == 10 else channel, method))
        elif kind == "header":
            size = draw(st.integers(0, 2**20))
            frames.append(ContentHeaderFrame(channel, 60, size, draw(properties())))
        elif kind == "body":
            frames.append(ContentBodyFrame(channel, draw(st.binary(max_size=300))))
        else:
            frames.append(HeartbeatFrame())
    return frames
