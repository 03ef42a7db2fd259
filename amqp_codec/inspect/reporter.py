"""What the decode command's output formats receive: one call per thing the dissector finds.

:mod:`amqp_codec.inspect.text` and :mod:`amqp_codec.inspect.jsonlines` implement it; the
command (:mod:`amqp_codec.inspect.command`) passes the dissector's events on to one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from ..frames import Frame
from ..protocol import ProtocolSpec
from .dissector import FileStats, Problem

__all__ = ["Reporter", "display_name"]


class Reporter:
    """Receives what the dissector finds and writes it out."""

    def __init__(self, out: TextIO, body_preview: int, *, show_secrets: bool = False) -> None:
        self.out = out
        self.body_preview = body_preview
        #: Show credential fields (:mod:`amqp_codec.credentials`) instead of redacting them.
        self.show_secrets = show_secrets

    def start_file(self, name: str) -> None:
        """A new stream begins."""

    def spec(self, name: str, spec: ProtocolSpec, detected_by: str | None) -> None:
        """The stream's protocol version became known."""

    def frame(self, name: str, spec: ProtocolSpec, offset: int, end: int, frame: Frame) -> None:
        """One decoded frame at ``offset``; ``end`` is the offset just after it."""

    def problem(self, name: str, problem: Problem) -> None:
        """One problem."""

    def resync(self, name: str, start: int, stop: int, resumed: bool) -> None:
        """Bytes ``start..stop-1`` were skipped; decoding resumed at ``stop`` if ``resumed``."""

    def end_file(self, stats: FileStats) -> None:
        """The stream is done."""

    def total(self, stats: Sequence[FileStats]) -> None:
        """All streams are done (called for more than one stream)."""


def display_name(name: str) -> str:
    """How a stream's name is shown: ``-`` is standard input."""
    return "<stdin>" if name == "-" else name
