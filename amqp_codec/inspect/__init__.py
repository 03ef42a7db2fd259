"""The ``amqp-codec decode`` command's pieces: a captured stream, frame by frame.

* :mod:`amqp_codec.inspect.dissector`: :class:`StreamDissector` turns one direction of a
  connection into frame, problem and resync events, never stopping on bad input;
* :mod:`amqp_codec.inspect.text`: the command's output, as indented text or JSON lines.

The codec core never imports this package: it is a tool built on the core.
"""

from .dissector import (
    DEFAULT_SPEC,
    Event,
    FileStats,
    FrameEvent,
    Problem,
    ProblemEvent,
    ResyncEvent,
    SpecEvent,
    StreamDissector,
)

__all__ = [
    "DEFAULT_SPEC",
    "Event",
    "FileStats",
    "FrameEvent",
    "Problem",
    "ProblemEvent",
    "ResyncEvent",
    "SpecEvent",
    "StreamDissector",
]
