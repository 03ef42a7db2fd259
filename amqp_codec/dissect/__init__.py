"""Deprecated alias of :mod:`amqp_codec.inspect.dissector`, kept for one release.

Import :class:`~amqp_codec.inspect.StreamDissector` and its events from
:mod:`amqp_codec.inspect` instead.
"""

import warnings

from ..inspect.dissector import (
    DEFAULT_SPEC,
    PROTOCOL_HEADER_NAME,
    RESYNC_MAX_PAYLOAD,
    RESYNC_WORK_ALLOWANCE,
    RESYNC_WORK_PER_BYTE,
    Event,
    FileStats,
    FrameEvent,
    Problem,
    ProblemEvent,
    ResyncEvent,
    SpecEvent,
    StreamDissector,
    class_name,
    plausible_frame_end,
)

__all__ = [
    "DEFAULT_SPEC",
    "PROTOCOL_HEADER_NAME",
    "RESYNC_MAX_PAYLOAD",
    "RESYNC_WORK_ALLOWANCE",
    "RESYNC_WORK_PER_BYTE",
    "Event",
    "FileStats",
    "FrameEvent",
    "Problem",
    "ProblemEvent",
    "ResyncEvent",
    "SpecEvent",
    "StreamDissector",
    "class_name",
    "plausible_frame_end",
]

warnings.warn(
    "amqp_codec.dissect is deprecated and will be removed in the next release: "
    "import StreamDissector and its events from amqp_codec.inspect",
    DeprecationWarning,
    stacklevel=2,
)
