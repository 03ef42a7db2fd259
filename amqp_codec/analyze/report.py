"""``report.html``: the tables of one analysis as charts, in one self-contained page.

Every aggregate is computed by Spark from the Parquet tables just written; only the small
results (tens of rows) are collected to the driver and plotted with plotly. The page inlines
plotly.js once and fetches nothing: it opens offline, from a mail attachment or a CI artefact.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plotly.graph_objects import Figure
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["REPORT_NAME", "write_report"]

#: The report's file name in the output folder.
REPORT_NAME = "report.html"
#: Bars shown in the top-N charts.
TOP = 15
#: Problems listed one by one at the end of the page.
PROBLEMS_LISTED = 100
#: Report queries run at the same time.
_QUERIES_AT_ONCE = 4
#: Time bucket widths (seconds) for the message rate; the smallest giving at most ~150 buckets.
_BUCKETS = (0.001, 0.01, 0.1, 1, 5, 10, 30, 60, 300, 600, 1800, 3600, 6 * 3600, 86400)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
.counts td:nth-child(2) { text-align: right; }
"""


def _label(value: Any, empty: str = "(none)") -> str:
    if value is None:
        return empty
    text = str(value)
    return text if text else "(empty)"


def _empty(title: str, why: str) -> Figure:
    import plotly.graph_objects as go

    figure = go.Figure()
    figure.add_annotation(text=why, showarrow=False, font={"size": 16})
    figure.update_layout(title=title, xaxis={"visible": False}, yaxis={"visible": False})
    return figure


def _bars(title: str, labels: Sequence[str], values: Sequence[float], axis: str) -> Figure:
    import plotly.graph_objects as go

    figure = go.Figure(go.Bar(x=list(values), y=list(labels), orientation="h"))
    figure.update_layout(
        title=title,
        xaxis_title=axis,
        yaxis={"autorange": "reversed", "automargin": True},
        height=max(300, 40 + 24 * len(labels)),
    )
    return figure


def _top_pair(frame: DataFrame, column: str, title: str, what: str) -> Figure:
    """Top values of ``column`` by message count and by body bytes, side by side."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    from pyspark.sql import functions as f

    totals = frame.groupBy(column).agg(
        f.count(f.lit(1)).alias("messages"), f.sum("body_size").alias("bytes")
    )
    by_count = totals.orderBy(f.desc("messages"), f.asc(column)).limit(TOP).collect()
    by_bytes = totals.orderBy(f.desc("bytes"), f.asc(column)).limit(TOP).collect()
    if not by_count:
        return _empty(title, "no messages in the capture")
    # One above the other: long exchange names and routing keys need the whole width.
    figure = make_subplots(
        rows=2,
        cols=1,
        subplot_titles=(f"{what} by messages", f"{what} by body bytes"),
        vertical_spacing=0.15,
    )
    figure.add_trace(
        go.Bar(
            x=[r["messages"] for r in by_count],
            y=[_label(r[column]) for r in by_count],
            orientation="h",
            name="messages",
        ),
        row=1,
        col=1,
    )
    figure.add_trace(
        go.Bar(
            x=[r["bytes"] or 0 for r in by_bytes],
            y=[_label(r[column]) for r in by_bytes],
            orientation="h",
            name="bytes",
        ),
        row=2,
        col=1,
    )
    figure.update_yaxes(autorange="reversed", automargin=True)
    rows = max(len(by_count), len(by_bytes))
    figure.update_layout(title=title, showlegend=False, height=max(480, 140 + 48 * rows))
    return figure


def _rate(messages: DataFrame) -> Figure:
    import plotly.graph_objects as go
    from pyspark.sql import functions as f

    title = "Messages over time"
    span = messages.agg(f.min("timestamp").alias("lo"), f.max("timestamp").alias("hi")).first()
    if span is None or span["lo"] is None:
        return _empty(title, "no messages in the capture")
    width = next((b for b in _BUCKETS if (span["hi"] - span["lo"]) / b <= 150), _BUCKETS[-1])
    rows = (
        messages.where(f.col("timestamp").isNotNull())
        .withColumn("bucket", f.floor(f.col("timestamp") / width))
        .groupBy("bucket", "method")
        .agg(f.count(f.lit(1)).alias("n"))
        .orderBy("bucket", "method")
        .collect()
    )
    counts: dict[str, dict[int, int]] = {}
    for row in rows:
        counts.setdefault(row["method"], {})[row["bucket"]] = row["n"]
    # Every bucket of the span, empty ones as 0: a line across a quiet stretch would
    # otherwise suggest traffic that never happened (a 1-day bucket bounds the count).
    first, last = min(r["bucket"] for r in rows), max(r["bucket"] for r in rows)
    buckets = (
        range(first, last + 1) if last - first <= 10_000 else sorted({r["bucket"] for r in rows})
    )
    xs = [datetime.fromtimestamp(b * width, UTC) for b in buckets]
    figure = go.Figure()
    for method, per_bucket in sorted(counts.items()):
        ys = [per_bucket.get(b, 0) / width for b in buckets]
        figure.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=method))
    figure.update_layout(
        title=f"{title} (messages per second, {width:g} s buckets, UTC)",
        yaxis_title="messages/s",
    )
    return figure


def _method_mix(frames: DataFrame) -> Figure:
    import plotly.graph_objects as go
    from pyspark.sql import functions as f

    title = "Method mix (method frames by sender)"
    rows = (
        frames.where(f.col("frame_type") == "method")
        .groupBy("method", "direction")
        .agg(f.count(f.lit(1)).alias("n"))
        .collect()
    )
    if not rows:
        return _empty(title, "no method frames in the capture")
    totals: dict[str, int] = {}
    for row in rows:
        totals[row["method"]] = totals.get(row["method"], 0) + row["n"]
    order = sorted(totals, key=lambda m: (-totals[m], m))
    figure = go.Figure()
    for direction in ("client", "server"):
        counts = {r["method"]: r["n"] for r in rows if r["direction"] == direction}
        figure.add_trace(
            go.Bar(
                x=[counts.get(m, 0) for m in order],
                y=order,
                orientation="h",
                name=f"sent by {direction}",
            )
        )
    figure.update_layout(
        title=title,
        barmode="stack",
        xaxis_title="frames",
        yaxis={"autorange": "reversed", "automargin": True},
        height=max(300, 60 + 22 * len(order)),
    )
    return figure


def _reply_codes(frames: DataFrame) -> Figure:
    import plotly.graph_objects as go
    from pyspark.sql import functions as f

    title = "Reply codes of closes and returns"
    rows = (
        frames.where(f.col("method").isin("connection.close", "channel.close", "basic.return"))
        .withColumn("code", f.get_json_object("fields", "$.reply-code"))
        .withColumn("text", f.get_json_object("fields", "$.reply-text"))
        .groupBy("method", "code")
        .agg(f.count(f.lit(1)).alias("n"), f.min("text").alias("text"))
        .orderBy("method", "code")
        .collect()
    )
    if not rows:
        return _empty(title, "no connection.close, channel.close or basic.return")
    figure = go.Figure()
    for method in sorted({r["method"] for r in rows}):
        mine = [r for r in rows if r["method"] == method]
        figure.add_trace(
            go.Bar(
                x=[f"{r['code']}" for r in mine],
                y=[r["n"] for r in mine],
                name=method,
                hovertext=[_label(r["text"]) for r in mine],
            )
        )
    figure.update_layout(
        title=title, barmode="group", xaxis={"type": "category", "title": "reply code"}
    )
    return figure


def _largest(messages: DataFrame) -> Figure:
    from pyspark.sql import functions as f

    title = f"Largest messages (top {TOP})"
    rows = (
        messages.orderBy(f.desc("body_size"), "connection", "offset")
        .select("method", "exchange", "routing_key", "body_size", "connection", "offset")
        .limit(TOP)
        .collect()
    )
    if not rows:
        return _empty(title, "no messages in the capture")
    labels = [
        f"{i + 1}. {r['method']} {_label(r['exchange'], '-')} / {_label(r['routing_key'], '-')}"
        for i, r in enumerate(rows)
    ]
    return _bars(title, labels, [r["body_size"] for r in rows], "body bytes")


def _clients(connections: DataFrame) -> Figure:
    from pyspark.sql import functions as f

    title = "Clients by library and version (connections)"
    rows = (
        connections.groupBy("client_product", "client_version")
        .agg(f.count(f.lit(1)).alias("n"))
        .orderBy(f.desc("n"), "client_product", "client_version")
        .limit(TOP)
        .collect()
    )
    if not rows:
        return _empty(title, "no AMQP connections in the capture")
    labels = [
        f"{_label(r['client_product'], 'unknown')} {_label(r['client_version'], '')}".strip()
        for r in rows
    ]
    return _bars(title, labels, [r["n"] for r in rows], "connections")


def _problem_kinds(problems: DataFrame) -> Figure:
    from pyspark.sql import functions as f

    title = "Problems by kind"
    rows = (
        problems.groupBy("kind", "error")
        .agg(f.count(f.lit(1)).alias("n"))
        .orderBy(f.desc("n"), "kind", "error")
        .collect()
    )
    if not rows:
        return _empty(title, "no problems found")
    labels = [f"{r['kind']}: {r['error']}" for r in rows]
    return _bars(title, labels, [r["n"] for r in rows], "problems")


def _table(rows: Sequence[Any], columns: Sequence[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape('' if r[c] is None else str(r[c]))}</td>" for c in columns)
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _when(ts: float | None) -> str:
    if ts is None or not math.isfinite(ts):
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def write_report(spark: SparkSession, out: str, counts: Mapping[str, int] | None = None) -> str:
    """Write ``report.html`` for the tables in ``out``; return its path.

    ``counts``: the rows of each table when the caller knows them (else they are counted).
    """
    import plotly.io as pio
    from pyspark.sql import functions as f

    tables = {
        name: spark.read.parquet(os.path.join(out, name))
        for name in ("frames", "messages", "connections", "problems")
    }
    frames, messages = tables["frames"], tables["messages"]
    connections, problems = tables["connections"], tables["problems"]
    if counts is None:
        counts = {name: table.count() for name, table in tables.items()}
    # Each query is small: its cost is planning and scheduling on the driver, so they run a
    # few at a time (Spark runs concurrent jobs from several threads).
    with ThreadPoolExecutor(max_workers=_QUERIES_AT_ONCE) as pool:
        spanned = pool.submit(
            lambda: frames.agg(
                f.min("timestamp").alias("lo"), f.max("timestamp").alias("hi")
            ).first()
        )
        charts = [
            ("Message rate", pool.submit(_rate, messages)),
            (
                "Top exchanges",
                pool.submit(_top_pair, messages, "exchange", "Top exchanges", "exchanges"),
            ),
            (
                "Top routing keys",
                pool.submit(_top_pair, messages, "routing_key", "Top routing keys", "keys"),
            ),
            ("Method mix", pool.submit(_method_mix, frames)),
            ("Reply codes", pool.submit(_reply_codes, frames)),
            ("Largest messages", pool.submit(_largest, messages)),
            ("Clients", pool.submit(_clients, connections)),
            ("Problems", pool.submit(_problem_kinds, problems)),
        ]
        first_problems = pool.submit(
            lambda: (
                problems.orderBy("capture", "connection", "direction", "offset", "packet")
                .limit(PROBLEMS_LISTED)
                .collect()
            )
        )
        span = spanned.result()
        figures = [(heading, chart.result()) for heading, chart in charts]
        listed = first_problems.result()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>amqp-codec analyze report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>AMQP capture analysis</h1>",
        f"<p>Frames from {_when(span['lo'] if span else None)} to "
        f"{_when(span['hi'] if span else None)}.</p>",
        '<table class="counts">'
        + "".join(
            f"<tr><td>{html.escape(name)}</td><td>{count:,}</td></tr>"
            for name, count in counts.items()
        )
        + "</table>",
    ]
    for i, (heading, figure) in enumerate(figures):
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(
            pio.to_html(
                figure,
                include_plotlyjs=i == 0,  # plotly.js inlined once, for the whole page
                full_html=False,
                config={"displaylogo": False},
            )
        )
    parts.append(f"<h2>Problems (first {PROBLEMS_LISTED})</h2>")
    parts.append(
        _table(
            listed,
            ["capture", "packet", "connection", "direction", "offset", "kind", "error", "detail"],
        )
        if listed
        else "<p>No problems.</p>"
    )
    parts.append("</body></html>")
    path = os.path.join(out, REPORT_NAME)
    with open(path, "w", encoding="utf-8") as page:
        page.write("\n".join(parts))
    return path
