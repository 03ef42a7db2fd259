"""The results table and the JSON file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from . import COMPILED_DECODE_TARGET_RATIO
from .timing import Timing
from .workloads import Verified, Workload


@dataclass
class Row:
    workload: Workload
    verified: dict[str, Verified]
    timings: dict[str, Timing] = field(default_factory=dict)
    compiled: bool = False  # our side ran the compiled build

    def target(self) -> float:
        """The ratio to the fastest peer this workload is held to, for the build that ran."""
        if self.compiled and self.workload.decodes:
            return COMPILED_DECODE_TARGET_RATIO
        return self.workload.target

    def meets_target(self) -> bool:
        return (self.ratio_to_fastest() or 0) >= self.target()

    def ops(self, key: str) -> float | None:
        t = self.timings.get(key)
        return t.ops_per_sec if t else None

    def ratio(self, key: str) -> float | None:
        ours, peer = self.ops("ours"), self.ops(key)
        return ours / peer if ours and peer else None

    def fastest_peer(self) -> str | None:
        peers = [(self.ops(k), k) for k in self.timings if k != "ours"]
        peers = [(v, k) for v, k in peers if v]
        return max(peers)[1] if peers else None

    def ratio_to_fastest(self) -> float | None:
        best = self.fastest_peer()
        return self.ratio(best) if best else None


NOISY = 0.10  # repeats spreading more than this are marked with "~"


def _fmt_ops(v: float | None, verified: Verified | None, timing: Timing | None) -> str:
    if v is None:
        if verified is not None and verified.unsupported:
            return "n/a"
        return "FAIL"
    mark = "~" if timing is not None and timing.spread > NOISY else ""
    return f"{mark}{v:,.1f}" if v < 1000 else f"{mark}{v:,.0f}"


def _fmt_ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def table(rows: list[Row], labels: dict[str, str]) -> str:
    keys = list(labels)
    peers = [k for k in keys if k != "ours"]
    head = (
        f"{'workload':<30} {'op':<9}"
        + "".join(f" {labels[k]:>12}" for k in keys)
        + " |"
        + "".join(f" {'/' + labels[k]:>9}" for k in peers)
        + f" | {'/fastest':>8}  target"
    )
    lines = [
        "ops/s (median of repeats; higher is better) and ours/peer ratio",
        head,
        "-" * len(head),
    ]
    for row in rows:
        ratio = row.ratio_to_fastest()
        status = "-" if ratio is None else ("ok" if row.meets_target() else "BELOW")
        status += f" ({row.target():g}x)"
        lines.append(
            f"{row.workload.key:<30} {row.workload.unit:<9}"
            + "".join(
                f" {_fmt_ops(row.ops(k), row.verified.get(k), row.timings.get(k)):>12}"
                for k in keys
            )
            + " |"
            + "".join(f" {_fmt_ratio(row.ratio(k)):>9}" for k in peers)
            + f" | {_fmt_ratio(ratio):>8}  {status}"
        )
    return "\n".join(lines)


def details(rows: list[Row], labels: dict[str, str]) -> str:
    out = []
    for row in rows:
        w = row.workload
        out.append(f"[{w.key}] {w.title}: {w.description}")
        for key, v in row.verified.items():
            t = row.timings.get(key)
            timing = ""
            if t:
                timing = (
                    f"{t.median * 1e6:,.2f} us/op, spread {t.spread:.1%}, "
                    f"{t.number:,} ops x {len(t.runs)} runs"
                )
                if w.ops_scale > 1:
                    timing += f", {t.ops_per_sec * w.ops_scale:,.0f} frames/s"
                if w.bytes_per_op:
                    timing += f", {t.ops_per_sec * w.bytes_per_op / 1e6:,.1f} MB/s"
            what = v.bench.note if v.bench else ""
            out.append(f"  {labels[key]:<11} {timing}")
            if what:
                out.append(f"  {'':<11} timed: {what}")
            if v.note:
                out.append(f"  {'':<11} check: {v.note}")
    return "\n".join(out)


def to_json(rows: list[Row], labels: dict[str, str], meta: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"meta": meta, "workloads": []}
    for row in rows:
        w = row.workload
        libs = {}
        for key, v in row.verified.items():
            t = row.timings.get(key)
            libs[labels[key]] = {
                "verified": v.ok,
                "unsupported": v.unsupported,
                "check": v.note,
                "wire_identical_to_ours": v.wire_identical,
                "timed": v.bench.note if v.bench else None,
                "stmt": v.bench.stmt if v.bench else None,
                "ops_per_sec": t.ops_per_sec if t else None,
                "median_s": t.median if t else None,
                "runs_s": t.runs if t else None,
                "ops_per_run": t.number if t else None,
                "spread": t.spread if t else None,
                "ratio_ours_over_this": row.ratio(key) if key != "ours" else None,
            }
        fastest = row.fastest_peer()
        data["workloads"].append(
            {
                "key": w.key,
                "title": w.title,
                "op": w.unit,
                "frames_per_op": w.ops_scale,
                "bytes_per_op": w.bytes_per_op or None,
                "description": w.description,
                "libraries": libs,
                "fastest_peer": labels[fastest] if fastest else None,
                "ratio_to_fastest_peer": row.ratio_to_fastest(),
                "target_ratio": row.target(),
                "meets_target": row.meets_target(),
            }
        )
    return data


def write_json(path: str, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")


def read_json(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


REGRESSION = 0.10  # a ratio to the fastest peer this much below the saved one is flagged


def compare(
    rows: list[Row], saved: dict[str, Any], saved_name: str, tolerance: float = REGRESSION
) -> str:
    """This run against a saved ``--json`` result: our ops/s and our ratio to the fastest
    peer, then and now. The ratio is what to watch: both libraries ran on the same machine
    in the same run, so it hardly moves with the load, where ops/s do."""
    then = {w["key"]: w for w in saved.get("workloads", [])}
    meta = saved.get("meta", {})
    lines = [
        f"compared with {saved_name} ({meta.get('date', '?')}, amqp-codec at "
        f"{meta.get('amqp_codec_git', '?')}, build {meta.get('amqp_codec_build', 'pure Python')})",
        f"{'workload':<30} {'ours ops/s then':>16} {'now':>12} {'now/then':>9} |"
        f" {'/fastest then':>13} {'now':>7} {'now/then':>9}",
    ]
    lines.append("-" * len(lines[-1]))
    for row in rows:
        old = then.get(row.workload.key)
        if old is None:
            lines.append(f"{row.workload.key:<30} (not in the saved result)")
            continue
        ours_then = (old["libraries"].get("amqp-codec") or {}).get("ops_per_sec")
        ours_now = row.ops("ours")
        ratio_then = old.get("ratio_to_fastest_peer")
        ratio_now = row.ratio_to_fastest()
        flag = ""
        if ratio_then and ratio_now and ratio_now < ratio_then * (1 - tolerance):
            flag = "  REGRESSED"
        lines.append(
            f"{row.workload.key:<30} {_fmt_ops(ours_then, None, None):>16}"
            f" {_fmt_ops(ours_now, None, None):>12} {_fmt_ratio(_div(ours_now, ours_then)):>9} |"
            f" {_fmt_ratio(ratio_then):>13} {_fmt_ratio(ratio_now):>7}"
            f" {_fmt_ratio(_div(ratio_now, ratio_then)):>9}{flag}"
        )
    return "\n".join(lines)


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None
