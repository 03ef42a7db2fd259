"""Where a decoded basic.deliver frame's time goes: ``python -m benchmarks.floor``.

Workload 1 (decode a basic.deliver frame) sits below its 2.5x target in pure Python. This
times the same frame through layers of less and less of what ``FrameDecoder`` does, next to
pika (the fastest peer there), in one run, with the same clock and method as
``python -m benchmarks`` (calibrated loops, rotated repeats, median; see :mod:`.timing`):

1. ``floor``: one hand-written function that unpacks the frame header, the method's fields
   and builds two plain slotted objects (a frame and its method). It checks nothing but the
   frame-end octet: what pure Python can do for this frame at best.
2. ``decoder``: the generated decoder of basic.deliver (every check, a frozen method object)
   and a frozen ``MethodFrame``, found through a dispatch table by the method's index, as
   ``FrameDecoder.next_frame``'s fast path does; no stream state.
3. ``FrameDecoder``: workload 1 itself, ``receive_data`` then ``next_frame`` on one
   long-lived decoder: the stream's state on top (what was received and what is left, the
   negotiated limits, errors and the end of the stream).

Each layer's result is checked against the fixture's values before anything is timed.
"""

from __future__ import annotations

import argparse
import struct
from typing import Any

from . import fixtures as fx
from .peers import Bench
from .timing import measure

_HEADER = struct.Struct(">BHI").unpack_from
_FRAME_START = struct.Struct(">BHII").unpack_from
_TAG_AND_BITS = struct.Struct(">QB").unpack_from


class _PlainDeliver:
    __slots__ = ("consumer_tag", "delivery_tag", "exchange", "redelivered", "routing_key")
    consumer_tag: str
    delivery_tag: int
    redelivered: bool
    exchange: str
    routing_key: str


class _PlainFrame:
    __slots__ = ("channel", "method")
    channel: int
    method: _PlainDeliver


def _floor(buf: bytes) -> _PlainFrame:
    """Layer 1: the deliver frame in one function, plain objects, no checks."""
    _type, channel, size = _HEADER(buf, 0)
    if buf[7 + size] != 206:
        raise ValueError("frame end")
    o = 11  # past the header and the class and method ids
    n = buf[o]
    o += 1
    consumer_tag = buf[o : o + n].decode()
    o += n
    delivery_tag, bits = _TAG_AND_BITS(buf, o)
    o += 9
    n = buf[o]
    o += 1
    exchange = buf[o : o + n].decode()
    o += n
    n = buf[o]
    o += 1
    routing_key = buf[o : o + n].decode()
    method = _PlainDeliver()
    method.consumer_tag = consumer_tag
    method.delivery_tag = delivery_tag
    method.redelivered = bits == 1
    method.exchange = exchange
    method.routing_key = routing_key
    frame = _PlainFrame()
    frame.channel = channel
    frame.method = method
    return frame


def _decoder_layer() -> Any:
    """Layer 2: the generated decoder behind a dispatch table, a frozen frame made as
    ``FrameDecoder.next_frame`` makes it (a writable twin given the frozen class)."""
    from amqp_codec.base import writable_twin
    from amqp_codec.frames import MethodFrame
    from amqp_codec.table import DEFAULT_MAX_TABLE_DEPTH
    from amqp_codec.v0_9_1.decoders import decode_basic_deliver

    decoders = {(60 << 16) | 60: decode_basic_deliver}
    twin = writable_twin(MethodFrame)
    depth = DEFAULT_MAX_TABLE_DEPTH

    def decode(buf: bytes) -> MethodFrame:
        _type, channel, size, index = _FRAME_START(buf, 0)
        end = 7 + size
        if buf[end] != 206:
            raise ValueError("frame end")
        frame = twin()
        frame.channel = channel
        frame.method = decoders[index](buf, 11, end, depth)
        frame.__class__ = MethodFrame
        return frame  # type: ignore[no-any-return]

    return decode


def layers() -> dict[str, Bench]:
    """Layers 1 to 3, each a statement that leaves the decoded frame in ``_r``."""
    from amqp_codec import FrameDecoder, v0_9_1

    data = fx.DELIVER_FRAME
    stream = FrameDecoder(v0_9_1, frame_max=fx.FRAME_MAX)
    return {
        "1 floor": Bench("_r = decode(data)", {"decode": _floor, "data": data}),
        "2 decoder": Bench("_r = decode(data)", {"decode": _decoder_layer(), "data": data}),
        "3 FrameDecoder": Bench(
            "receive(data)\n_r = next_frame()",
            {"receive": stream.receive_data, "next_frame": stream.next_frame, "data": data},
        ),
    }


def benches() -> dict[str, Bench]:
    """The layers and pika's ``decode_frame`` (workload 1's statement for pika)."""
    import pika.frame

    pika_decode = Bench(
        "_r = decode(data)[1]", {"decode": pika.frame.decode_frame, "data": fx.DELIVER_FRAME}
    )
    return {**layers(), "pika": pika_decode}


def checked(bench: Bench) -> None:
    """Run ``bench`` once; its frame must carry the fixture's channel and method fields."""
    ns = dict(bench.ns)
    exec(bench.stmt, ns)
    frame = ns["_r"]
    channel = getattr(frame, "channel", None)
    if channel is None:  # pika's frames name it so
        channel = frame.channel_number
    got = {name: getattr(frame.method, name) for name in fx.DELIVER_FIELDS}
    if channel != fx.CHANNEL or got != fx.DELIVER_FIELDS:
        raise SystemExit(f"wrong result: channel {channel}, fields {got}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.floor", description=__doc__)
    parser.add_argument("--repeat", type=int, default=7, help="timed runs each (default 7)")
    parser.add_argument("--time", type=float, default=0.2, help="seconds per run (default 0.2)")
    args = parser.parse_args(argv)
    try:
        timed = benches()
    except ImportError:
        print("benchmarks.floor: pika, the peer it times against, is not installed: ", end="")
        print("pip install -e '.[bench]'")
        return 2
    for bench in timed.values():
        checked(bench)
    timings = measure(timed, args.repeat, args.time)
    pika = timings["pika"].median
    print("decode one basic.deliver frame, median of", args.repeat, "runs (process CPU time)")
    for name, timing in timings.items():
        print(
            f"  {name:16s} {timing.median * 1e6:6.3f} us  spread {timing.spread:5.1%}"
            f"  {pika / timing.median:5.2f}x pika"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
