"""Is the dissector linear? Time per MB of garbage and of valid traffic, 1 MB to 64 MB.

::

    .venv/bin/python -m benchmarks.linearity                   # every input, 1 to 64 MB
    .venv/bin/python -m benchmarks.linearity --max-mb 16 --inputs valid,random
    .venv/bin/python -m benchmarks.linearity --chunk 65536     # fed in 64 KiB pieces

Each input is built at each size and fed to a fresh ``StreamDissector`` (as one buffer by
default, the case that used to be superlinear), then ``finish()``; the process CPU time of
that is reported with the time per MB, which must stay flat as the size grows (the last
column compares it with the smallest size's). Inputs:

``valid``
    real traffic: the frames of the pika, py-amqp and aio-pika client streams in
    ``tests/data`` repeated after one protocol header.
``random``
    random bytes (a seeded generator): scanning, rarely a plausible frame start.
``candidates``
    every 16 bytes a method frame header announcing 16 KiB whose frame-end octet is there:
    every candidate of the resync scan needs a trial decode.
``resync-storm``
    a valid body frame, then a byte that breaks the next frame, repeated: a decode error, a
    resync and a frame every 10 bytes (the worst case per byte; it is slow, but linear).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from amqp_codec.inspect.dissector import StreamDissector

MB = 1024 * 1024
ROOT = Path(__file__).resolve().parent.parent


def _repeat(unit: bytes, size: int, head: bytes = b"") -> bytes:
    count = max(1, (size - len(head)) // len(unit))
    return head + unit * count


def valid(size: int) -> bytes:
    streams = [
        (ROOT / f"tests/data/{client}.client.bin").read_bytes()
        for client in ("pika", "py-amqp", "aio-pika")
    ]
    return _repeat(b"".join(s[8:] for s in streams), size, streams[0][:8])


def random_bytes(size: int) -> bytes:
    return random.Random(15).randbytes(size)


def candidates(size: int) -> bytes:
    return _repeat(b"\x01\x00\x01\x00\x00\x40\x00" + b"\xce" * 9, size, b"\xce" * 16)


def resync_storm(size: int) -> bytes:
    return _repeat(b"\x03\x00\x01\x00\x00\x00\x01\x00\xce\x02", size)


INPUTS: dict[str, Callable[[int], bytes]] = {
    "valid": valid,
    "random": random_bytes,
    "candidates": candidates,
    "resync-storm": resync_storm,
}


def dissect(data: bytes, chunk: int) -> tuple[float, int]:
    """CPU seconds to dissect ``data`` fed ``chunk`` bytes at a time, and the events."""
    start = time.process_time()
    dissector = StreamDissector()
    events = 0
    view = memoryview(data)
    for i in range(0, len(data), chunk):
        events += len(dissector.feed(view[i : i + chunk]))
    events += len(dissector.finish())
    return time.process_time() - start, events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", default=",".join(INPUTS), help="comma-separated inputs")
    parser.add_argument("--min-mb", type=int, default=1)
    parser.add_argument("--max-mb", type=int, default=64)
    parser.add_argument("--chunk", type=int, default=0, help="feed size (0: one buffer)")
    args = parser.parse_args(argv)
    names = [n for n in args.inputs.split(",") if n]
    unknown = [n for n in names if n not in INPUTS]
    if unknown:
        print(f"unknown input(s) {', '.join(unknown)}; known: {', '.join(INPUTS)}", file=sys.stderr)
        return 2
    sizes = []
    mb = args.min_mb
    while mb <= args.max_mb:
        sizes.append(mb)
        mb *= 4
    print(f"{'input':<13} {'MB':>4} {'CPU s':>8} {'s/MB':>7} {'vs first':>8} {'events':>9}")
    for name in names:
        first = None
        for mb in sizes:
            data = INPUTS[name](mb * MB)
            seconds, events = dissect(data, args.chunk or len(data))
            per_mb = seconds / (len(data) / MB)
            first = first or per_mb
            print(
                f"{name:<13} {mb:>4} {seconds:>8.2f} {per_mb:>7.3f} {per_mb / first:>7.2f}x "
                f"{events:>9}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
