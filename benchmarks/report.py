"""The results table and the JSON file."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from . import TARGET_RATIO
from .timing import Timing
from .workloads import Verified, Workload


@dataclass
class Row:
    workload: Workload
    verified: dict[str, Verified]
    timings: dict[str, Timing] = field(default_factory=dict)

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
        status = "-" if ratio is None else ("ok" if ratio >= TARGET_RATIO else "BELOW")
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
            what = v.bench.note if v.bench else ""
            out.append(f"  {labels[key]:<11} {timing}")
            if what:
                out.append(f"  {'':<11} timed: {what}")
            if v.note:
                out.append(f"  {'':<11} check: {v.note}")
    return "\n".join(out)


def to_json(rows: list[Row], labels: dict[str, str], meta: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"meta": meta, "target_ratio": TARGET_RATIO, "workloads": []}
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
                "description": w.description,
                "libraries": libs,
                "fastest_peer": labels[fastest] if fastest else None,
                "ratio_to_fastest_peer": row.ratio_to_fastest(),
                "meets_target": (row.ratio_to_fastest() or 0) >= TARGET_RATIO,
            }
        )
    return data


def write_json(path: str, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
