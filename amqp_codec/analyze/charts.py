"""The report's charts as inline SVG: no script, nothing fetched, a few kilobytes each.

Two shapes cover the report: horizontal bars, stacked by series (top-N charts, method mix,
reply codes, problems), and lines over time (the message rate). Count axes have integer
ticks only; every bar and point carries a ``<title>``, which browsers show on hover. Text is
escaped here; callers pass plain strings and numbers.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

__all__ = ["bars", "byte_ticks", "lines", "nice_ticks", "number"]

_WIDTH = 960
_PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5")
_FONT = 'font-family="system-ui, sans-serif" font-size="12"'
_LABEL_CHARS = 60  # longer labels are cut, the whole text is in the bar's title


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def nice_ticks(top: float, integer: bool, count: int = 6) -> list[float]:
    """Ticks from 0 to at least ``top``: steps of 1, 2 or 5 times a power of ten (whole
    numbers only when ``integer``: a count axis never shows 0.2)."""
    if top <= 0:
        return [0, 1] if integer else [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if integer:
        step = max(1, round(step))
    n = math.ceil(top / step - 1e-9)
    return [i * step for i in range(n + 1)]


def byte_ticks(top: float) -> list[float]:
    """Ticks for sizes: whole steps of the binary unit that fits (KiB, MiB...)."""
    base = 1
    while top / base >= 1024 and base < 1024**4:
        base *= 1024
    return [t * base for t in nice_ticks(top / base, integer=base == 1)]


def number(value: float, unit: str = "") -> str:
    """A tick or bar value: thousands separated; bytes with a binary prefix."""
    if unit == "bytes":
        size = float(value)
        for prefix in ("B", "KiB", "MiB", "GiB", "TiB"):
            if abs(size) < 1024 or prefix == "TiB":
                return f"{size:,.0f} {prefix}" if prefix == "B" else f"{size:,.3g} {prefix}"
            size /= 1024
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}"


def _legend(series: Sequence[str], y: int, x0: int) -> list[str]:
    parts = []
    x = x0
    for i, name in enumerate(series):
        color = _PALETTE[i % len(_PALETTE)]
        parts.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{color}"/>')
        parts.append(f'<text x="{x + 16}" y="{y}">{_e(name)}</text>')
        x += 28 + 7 * len(name)
    return parts


def bars(
    rows: Sequence[tuple[str, Mapping[str, float]]],
    series: Sequence[str],
    axis: str,
    unit: str = "",
    *,
    stacked: bool = False,
) -> str:
    """Horizontal bars, one group per ``(label, {series: value})`` row.

    Series are side by side, each with its own value, unless ``stacked`` (for parts of one
    whole: frames sent by the client and by the server). Counts of different things (a
    publish and its deliveries) are never added up. ``unit``: ``"bytes"`` formats values as
    sizes; anything else is a count (integer ticks).
    """
    label_chars = min(_LABEL_CHARS, max((len(label) for label, _ in rows), default=1))
    left = 16 + 7 * label_chars
    right = 90
    plot = _WIDTH - left - right
    if stacked or len(series) == 1:
        bar, per_row = 18, [1] * len(rows)
        largest = max((sum(v.get(s, 0) for s in series) for _, v in rows), default=0)
    else:
        bar = 12
        per_row = [max(1, sum(1 for s in series if v.get(s))) for _, v in rows]
        largest = max((v.get(s, 0) for _, v in rows for s in series), default=0)
    gap = 8
    top = 34 if len(series) > 1 else 12
    axis_y = top + sum(n * bar + gap for n in per_row)
    height = axis_y + 40
    ticks = byte_ticks(largest) if unit == "bytes" else nice_ticks(largest, integer=True)
    scale = plot / ticks[-1]
    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" '
        f'height="{height}" viewBox="0 0 {_WIDTH} {height}" {_FONT}>'
    ]
    if len(series) > 1:
        out += _legend(series, 16, left)
    for tick in ticks:
        x = left + tick * scale
        out.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{axis_y}" stroke="#e4e4e4"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{axis_y + 14}" text-anchor="middle">{number(tick, unit)}</text>'
        )
    out.append(
        f'<text x="{left + plot / 2:.1f}" y="{axis_y + 32}" text-anchor="middle">{_e(axis)}</text>'
    )
    y = top
    for (label, values), n in zip(rows, per_row, strict=True):
        shown = label if len(label) <= label_chars else label[: label_chars - 1] + "…"
        out.append(
            f'<text x="{left - 6}" y="{y + n * bar / 2 + 4:.1f}" text-anchor="end">'
            f"<title>{_e(label)}</title>{_e(shown)}</text>"
        )
        x = float(left)
        for j, name in enumerate(series):
            value = values.get(name, 0)
            if not value:
                continue
            w = value * scale
            what = f"{label}: {number(value, unit)}" + (f" {name}" if len(series) > 1 else "")
            out.append(
                f'<rect x="{x:.1f}" y="{y}" width="{max(w, 1):.1f}" height="{bar}" '
                f'fill="{_PALETTE[j % len(_PALETTE)]}"><title>{_e(what)}</title></rect>'
            )
            if stacked:
                x += w
            else:
                out.append(
                    f'<text x="{x + w + 4:.1f}" y="{y + bar - 2}">{number(value, unit)}</text>'
                )
                if len(series) > 1:
                    y += bar
        if stacked:
            total = sum(values.get(s, 0) for s in series)
            out.append(f'<text x="{x + 4:.1f}" y="{y + 13}">{number(total, unit)}</text>')
            y += bar
        elif len(series) == 1 or not any(values.get(s) for s in series):
            y += bar
        y += gap
    out.append("</svg>")
    return "".join(out)


def _time_label(span: float) -> Callable[[float], str]:
    if span >= 86400:
        return lambda ts: datetime.fromtimestamp(ts, UTC).strftime("%m-%d %H:%M")
    if span >= 60:
        return lambda ts: datetime.fromtimestamp(ts, UTC).strftime("%H:%M:%S")
    return lambda ts: datetime.fromtimestamp(ts, UTC).strftime("%H:%M:%S.%f")[:-3]


def lines(
    start: float,
    width: float,
    series: Mapping[str, Sequence[float]],
    axis: str,
) -> str:
    """One line per series over time: ``series[name][i]`` is the value of the bucket
    ``[start + i * width, start + (i + 1) * width)``, drawn at the bucket's middle."""
    left, right, top, bottom = 70, 20, 34, 46
    height = 320
    plot_w, plot_h = _WIDTH - left - right, height - top - bottom
    count = max((len(v) for v in series.values()), default=0)
    peak = max((max(v, default=0) for v in series.values()), default=0)
    ticks = nice_ticks(peak, integer=False)
    y_scale = plot_h / ticks[-1]
    span = width * count
    label = _time_label(span)

    def x_of(i: float) -> float:
        return left + plot_w * (i / count if count else 0.5)

    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" '
        f'height="{height}" viewBox="0 0 {_WIDTH} {height}" {_FONT}>'
    ]
    out += _legend(list(series), 16, left)
    for tick in ticks:
        y = top + plot_h - tick * y_scale
        out.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="#e4e4e4"/>'
        )
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{number(tick)}</text>')
    for k in range(6):
        i = count * k / 5
        anchor = "start" if k == 0 else "end" if k == 5 else "middle"
        out.append(
            f'<text x="{x_of(i):.1f}" y="{top + plot_h + 16}" text-anchor="{anchor}">'
            f"{_e(label(start + i * width))}</text>"
        )
    out.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">'
        f"time (UTC), {number(width)} s buckets</text>"
    )
    out.append(
        f'<text x="14" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">{_e(axis)}</text>'
    )
    for j, (name, values) in enumerate(series.items()):
        color = _PALETTE[j % len(_PALETTE)]
        points = " ".join(
            f"{x_of(i + 0.5):.1f},{top + plot_h - v * y_scale:.1f}" for i, v in enumerate(values)
        )
        out.append(
            f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.5">'
            f"<title>{_e(name)}</title></polyline>"
        )
        if count <= 60:  # few buckets: mark each (one bucket would be no line at all)
            for i, v in enumerate(values):
                out.append(
                    f'<circle cx="{x_of(i + 0.5):.1f}" cy="{top + plot_h - v * y_scale:.1f}" '
                    f'r="3" fill="{color}"><title>{_e(name)}: {number(v)}</title></circle>'
                )
    out.append("</svg>")
    return "".join(out)
