"""A short run of every fuzz target, and the findings of fuzzing replayed through them.

Each target runs on its seeds and a fixed number of mutated inputs (a deterministic random
driver: the same inputs every run), a few seconds at most. Longer, coverage-guided runs:
``python tests/fuzz/run.py TARGET --minutes N`` (see tests/fuzz/README.md).
"""

from __future__ import annotations

import gzip
import struct

import pytest
from corpus import seeds
from run import run_random
from targets import TARGETS, capture, decoder_99_0, table_0_9_1, table_99_0

from amqp_codec import v0_10_draft as draft
from amqp_codec.wire010 import encode_draft_frame
from amqp_codec.wire010.frames import DraftBodyFrame, DraftMethodFrame

RUNS = 400
MAX_SECONDS = 4.0


@pytest.mark.parametrize("name", list(TARGETS))
def test_short_fuzz_run(name: str) -> None:
    done = run_random(
        TARGETS[name], seeds(name), runs=RUNS, seconds=MAX_SECONDS, seed=15, name=name
    )
    assert done >= len(seeds(name))


# The findings, replayed through the targets: each of these inputs broke an invariant before.


def test_target_replays_void_array_amplification() -> None:
    array = b"\x00\x00\x00\x05\xf0\x00\x01\x00\x00"  # 9 bytes claiming 65,536 Nones
    entries = b"\x01a\xaa" + array
    table_99_0(b"\x00" + len(entries).to_bytes(4, "big") + entries)


def test_target_replays_draft_offsets_that_depended_on_chunking() -> None:
    frame = bytearray(
        encode_draft_frame(DraftMethodFrame(1, draft.Message.Transfer(destination="amq.direct")))
    )
    frame[16] = 0xFF
    stream = bytes(frame) + encode_draft_frame(DraftBodyFrame(1, b"x" * 300))
    for knob in range(8):
        decoder_99_0(bytes([knob]) + stream)


def test_target_replays_table_size_read_past_end() -> None:
    table_0_9_1(b"\x07" + b"\x00" * 5 + b"\xff" * 3)


def test_target_replays_gzip_bomb() -> None:
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    capture(gzip.compress(header + bytes(4 * 1024 * 1024), 9))
