"""Write a synthetic capture set from the command line: :mod:`amqp_codec.capture.synthetic`.

::

    python -m tools.gen_captures OUT_DIR --size 1G --files 8 --seed 1

``--size`` takes K, M and G suffixes (powers of 1024).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from amqp_codec.capture.synthetic import MSS, generate, parse_size

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.gen_captures",
        description="Write a synthetic multi-file AMQP 0-9-1 capture set (pcap and pcapng).",
    )
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--size", type=parse_size, default=parse_size("64M"), help="e.g. 1G")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, help="connections open at once")
    parser.add_argument("--mss", type=int, default=MSS, help="TCP payload bytes per segment")
    parser.add_argument(
        "--single-connection", action="store_true", help="one long publisher connection"
    )
    parser.add_argument(
        "--pcapng-every", type=int, default=3, help="every N-th file is pcapng (0: none)"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = generate(
        args.out_dir,
        args.size,
        args.files,
        seed=args.seed,
        concurrency=args.concurrency,
        pcapng_every=args.pcapng_every,
        mss=args.mss,
        single_connection=args.single_connection,
    )
    elapsed = time.perf_counter() - started
    c = result.counts
    print(
        f"{c.files} files, {c.file_bytes / 1e6:.1f} MB, {c.packets} packets, "
        f"{c.connections} connections, {c.frames} frames, {c.published} published, "
        f"{c.delivered} delivered, {c.got} got, {c.returned} returned "
        f"in {elapsed:.1f} s ({c.file_bytes / 1e6 / elapsed:.1f} MB/s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
