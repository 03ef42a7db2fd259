"""The settings of :class:`~amqp_codec.decoder.FrameDecoder` that can change while it runs.

They are properties with setters, which mypyc cannot compile in a class that stays an
ordinary Python class (see :mod:`amqp_codec._compiled`): they live here, in a base class that
is never compiled, and the decoder's hot paths in :mod:`amqp_codec.decoder` are.
"""

from __future__ import annotations

from .frames import FRAME_OVERHEAD
from .protocol import ProtocolSpec

__all__ = ["DecoderSettings"]


class DecoderSettings:
    """``strict_tags`` (and its former name ``accept_extended_tags``) and ``frame_max``."""

    _spec: ProtocolSpec | None
    _started: bool
    _strict_tags: bool
    _frame_max: int
    _limit: int  # the largest frame payload accepted: from frame_max, else max_frame_size
    max_frame_size: int

    def _enable_fast_path(self) -> None:
        raise NotImplementedError

    @property
    def strict_tags(self) -> bool:
        """Refuse field-table tags outside the version's own grammar (0-8: S I D T F); can be
        changed at any time, e.g. once connection.start shows which peer it is."""
        return self._strict_tags

    @strict_tags.setter
    def strict_tags(self, value: bool) -> None:
        self._strict_tags = value
        if self._started and self._spec is not None:
            self._enable_fast_path()

    @property
    def accept_extended_tags(self) -> bool:
        """``not strict_tags``, under its former name."""
        return not self._strict_tags

    @accept_extended_tags.setter
    def accept_extended_tags(self, value: bool) -> None:
        self.strict_tags = not value

    @property
    def frame_max(self) -> int:
        """The negotiated frame_max (0 = none); frames larger than it are refused (501)."""
        return self._frame_max

    @frame_max.setter
    def frame_max(self, value: int) -> None:
        if value and value <= FRAME_OVERHEAD:
            raise ValueError(f"frame_max {value} is too small to carry a frame")
        self._frame_max = value
        self._limit = value - FRAME_OVERHEAD if value else self.max_frame_size
