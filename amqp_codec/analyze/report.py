"""``summary.json`` and ``report.html``: one analysis in figures, then as a page.

:func:`summarize` computes every figure the report shows with Spark, from the Parquet
tables just written (only small results, tens of rows, reach the driver), into one
JSON-ready dict; :func:`write_report` writes it as ``summary.json`` and renders
``report.html`` from that file's content alone (:func:`render`), so the page never shows a
number the JSON does not hold. The page draws its charts as inline SVG
(:mod:`~amqp_codec.analyze.charts`): no script, nothing fetched, it opens offline.

Messages are counted by what happened to them: a message published once and delivered twice
is one publish and two deliveries, never "three messages". Each count is labelled with its
method (``basic.publish``, ``basic.deliver``, ``basic.get-ok``, ``basic.return``; 99-0's
``message.transfer`` by who sent it). Credentials never appear: the tables already hold
them redacted, and no field of a method is copied here.
"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from . import charts

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["REPORT_NAME", "SUMMARY_NAME", "render", "summarize", "write_report"]

#: The report's file name in the output folder.
REPORT_NAME = "report.html"
#: The figures' file name, beside the report.
SUMMARY_NAME = "summary.json"
#: Bars shown in the top-N charts.
TOP = 15
#: Problems listed one by one at the end of the page.
PROBLEMS_LISTED = 100
#: Time buckets of the message rate chart over the capture's span.
RATE_BUCKETS = 100
#: Report queries run at the same time.
_QUERIES_AT_ONCE = 4
#: Where the tables' columns are described (in the source tree and on the project's pages).
TABLES_DOC = "docs/tables.md"

#: How each kind of message count is labelled: method, or method and sender for 99-0.
_ROLE_LABELS = {
    "basic.publish": "published (basic.publish)",
    "basic.deliver": "delivered (basic.deliver)",
    "basic.get-ok": "fetched (basic.get-ok)",
    "basic.return": "returned (basic.return)",
    "message.transfer client": "sent by client (message.transfer)",
    "message.transfer server": "sent by server (message.transfer)",
}

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
td.n { text-align: right; }
p.empty { color: #666; font-style: italic; }
svg.chart { max-width: 100%; height: auto; }
"""


# ------------------------------------------------------------------------------------------
# Figures (Spark)
# ------------------------------------------------------------------------------------------


def _role(frame: DataFrame) -> DataFrame:
    """``messages`` with a ``role`` column: the method, and for 99-0 its sender too."""
    from pyspark.sql import functions as f

    return frame.withColumn(
        "role",
        f.when(
            f.col("method") == "message.transfer", f.concat_ws(" ", "method", "direction")
        ).otherwise(f.col("method")),
    )


def _per_role(frame: DataFrame, keys: Sequence[str]) -> DataFrame:
    """One row per distinct ``keys``: ``roles`` (role, messages and body bytes of each),
    ``n`` and ``b`` (those of the role with the most) and ``first`` (timestamp, connection,
    offset)."""
    from pyspark.sql import functions as f

    return (
        frame.groupBy(*keys, "role")
        .agg(
            f.count(f.lit(1)).alias("n"),
            f.sum("body_size").alias("b"),
            f.min(f.struct("timestamp", "connection", "offset")).alias("first"),
        )
        .groupBy(*keys)
        .agg(
            f.collect_list(f.struct("role", "n", "b")).alias("roles"),
            # Ranked by the busiest role: a publish and its two deliveries are not three.
            f.max("n").alias("n"),
            f.max("b").alias("b"),
            f.min("first").alias("first"),
        )
    )


def _top(messages: DataFrame, column: str) -> dict[str, list[dict[str, Any]]]:
    """The top values of ``column`` by message count and by body bytes, per role."""
    from pyspark.sql import functions as f

    grouped = _per_role(messages, [column])
    result = {}
    for name, order in (("by_messages", "n"), ("by_bytes", "b")):
        rows = grouped.orderBy(f.desc(order), f.asc(column)).limit(TOP).collect()
        result[name] = [
            {
                column: row[column],
                "counts": {r["role"]: int(r[order] or 0) for r in sorted(row["roles"])},
            }
            for row in rows
        ]
    return result


def _span(frames: DataFrame) -> tuple[float | None, float | None]:
    from pyspark.sql import functions as f

    row = frames.agg(f.min("timestamp").alias("lo"), f.max("timestamp").alias("hi")).first()
    if row is None or row["lo"] is None:
        return None, None
    return float(row["lo"]), float(row["hi"])


def _rate(messages: DataFrame, lo: float | None, hi: float | None) -> dict[str, Any] | None:
    """Messages per second, per role, in :data:`RATE_BUCKETS` equal buckets exactly covering
    the capture's span (its first to last frame): no partial bucket at either end."""
    from pyspark.sql import functions as f

    if lo is None or hi is None:
        return None
    span = hi - lo
    buckets = RATE_BUCKETS if span > 0 else 1
    width = span / buckets if span > 0 else 1.0
    index = f.least(f.floor((f.col("timestamp") - f.lit(lo)) / f.lit(width)), f.lit(buckets - 1))
    rows = (
        messages.where(f.col("timestamp").isNotNull())
        .withColumn("bucket", index.cast("int"))
        .groupBy("role", "bucket")
        .agg(f.count(f.lit(1)).alias("n"))
        .collect()
    )
    if not rows:
        return None
    counts: dict[str, list[int]] = {}
    for row in rows:
        bucket = min(max(row["bucket"], 0), buckets - 1)
        counts.setdefault(row["role"], [0] * buckets)[bucket] += row["n"]
    return {
        "start": lo,
        "end": hi,
        "bucket_seconds": width,
        "counts": dict(sorted(counts.items())),
    }


def _method_mix(frames: DataFrame) -> list[dict[str, Any]]:
    from pyspark.sql import functions as f

    rows = (
        frames.where(f.col("frame_type") == "method")
        .groupBy("method", "direction")
        .agg(f.count(f.lit(1)).alias("n"))
        .collect()
    )
    mix: dict[str, dict[str, int]] = {}
    for row in rows:
        mix.setdefault(row["method"], {})[row["direction"] or "unknown"] = row["n"]
    ordered = sorted(mix.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    return [{"method": m, "counts": c} for m, c in ordered]


def _reply_codes(frames: DataFrame) -> list[dict[str, Any]]:
    from pyspark.sql import functions as f

    rows = (
        frames.where(f.col("method").isin("connection.close", "channel.close", "basic.return"))
        .withColumn("code", f.get_json_object("fields", "$.reply-code").cast("int"))
        .withColumn("text", f.get_json_object("fields", "$.reply-text"))
        .groupBy("code", "method")
        .agg(f.count(f.lit(1)).alias("n"), f.min("text").alias("text"))
        .collect()
    )
    codes: dict[int | None, dict[str, Any]] = {}
    for row in rows:
        entry = codes.setdefault(row["code"], {"code": row["code"], "text": None, "counts": {}})
        entry["counts"][row["method"]] = row["n"]
        if entry["text"] is None or (row["text"] is not None and row["text"] < entry["text"]):
            entry["text"] = row["text"]
    ordered = sorted(codes.values(), key=lambda e: (e["code"] is None, e["code"] or 0))
    for entry in ordered:
        entry["counts"] = dict(sorted(entry["counts"].items()))
    return ordered


def _largest(messages: DataFrame) -> list[dict[str, Any]]:
    """The largest messages, each once: a publish and its deliveries (same body, exchange and
    routing key) are one entry, with how often each happened."""
    from pyspark.sql import functions as f

    keys = ["body_size", "body_sha256", "exchange", "routing_key"]
    rows = (
        _per_role(messages, keys)
        .orderBy(f.desc("body_size"), "first", "body_sha256")
        .limit(TOP)
        .collect()
    )
    return [
        {
            **{k: row[k] for k in keys},
            "counts": {r["role"]: r["n"] for r in sorted(row["roles"])},
            "first_seen": {
                "timestamp": row["first"]["timestamp"],
                "connection": row["first"]["connection"],
                "offset": row["first"]["offset"],
            },
        }
        for row in rows
    ]


def _clients(connections: DataFrame) -> list[dict[str, Any]]:
    from pyspark.sql import functions as f

    rows = (
        connections.groupBy("client_product", "client_version")
        .agg(f.count(f.lit(1)).alias("n"))
        .orderBy(f.desc("n"), "client_product", "client_version")
        .limit(TOP)
        .collect()
    )
    return [
        {"product": r["client_product"], "version": r["client_version"], "connections": r["n"]}
        for r in rows
    ]


def _problem_kinds(problems: DataFrame) -> list[dict[str, Any]]:
    from pyspark.sql import functions as f

    rows = (
        problems.groupBy("kind", "error")
        .agg(f.count(f.lit(1)).alias("n"))
        .orderBy(f.desc("n"), "kind", "error")
        .collect()
    )
    return [{"kind": r["kind"], "error": r["error"], "count": r["n"]} for r in rows]


_PROBLEM_COLUMNS = ("capture", "packet", "connection", "direction", "offset", "kind", "error")


def _first_problems(problems: DataFrame) -> list[dict[str, Any]]:
    rows = (
        problems.orderBy("capture", "connection", "direction", "offset", "packet")
        .select(*_PROBLEM_COLUMNS, "detail")
        .limit(PROBLEMS_LISTED)
        .collect()
    )
    return [r.asDict() for r in rows]


def _inputs(
    frames: DataFrame, problems: DataFrame, captures: Sequence[str] | None
) -> dict[str, Any]:
    """The capture files read (size, time span, frames, problems) and the inputs skipped."""
    from pyspark.sql import functions as f

    spans = {
        r["capture"]: r
        for r in frames.groupBy("capture")
        .agg(
            f.min("timestamp").alias("lo"), f.max("timestamp").alias("hi"), f.count("*").alias("n")
        )
        .collect()
    }
    troubles = {
        r["capture"]: r["n"]
        for r in problems.groupBy("capture").agg(f.count("*").alias("n")).collect()
    }
    names = sorted(captures) if captures is not None else sorted(set(spans) | set(troubles))
    files = []
    for name in names:
        span = spans.get(name)
        try:
            size: int | None = os.path.getsize(name)
        except OSError:
            size = None
        files.append(
            {
                "path": name,
                "bytes": size,
                "first_timestamp": span["lo"] if span else None,
                "last_timestamp": span["hi"] if span else None,
                "frames": span["n"] if span else 0,
                "problems": troubles.get(name, 0),
            }
        )
    skipped: list[dict[str, Any]] = []
    if captures is not None:
        read = set(captures)
        skipped = [
            {"path": r["capture"], "kind": r["error"], "detail": r["detail"]}
            for r in problems.where(f.col("kind") == "capture")
            .select("capture", "error", "detail")
            .orderBy("capture")
            .collect()
            if r["capture"] not in read
        ]
    return {"files": files, "skipped": skipped}


def summarize(
    spark: SparkSession,
    out: str,
    counts: Mapping[str, int] | None = None,
    captures: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Every figure of the report, computed from the tables in ``out``, JSON-ready.

    ``counts``: the rows of each table when the caller knows them (else they are counted).
    ``captures``: the capture files the run read (else those the tables name).
    """
    from importlib.metadata import PackageNotFoundError, version

    tables = {
        name: spark.read.parquet(os.path.join(out, name))
        for name in ("frames", "messages", "connections", "problems")
    }
    frames, connections, problems = tables["frames"], tables["connections"], tables["problems"]
    messages = _role(tables["messages"])
    if counts is None:
        counts = {name: table.count() for name, table in tables.items()}
    # Each query is small: its cost is planning and scheduling on the driver, so they run a
    # few at a time (Spark runs concurrent jobs from several threads).
    with ThreadPoolExecutor(max_workers=_QUERIES_AT_ONCE) as pool:
        span = pool.submit(_span, frames)
        roles = pool.submit(lambda: messages.groupBy("role").count().collect())
        parts: dict[str, Any] = {
            "top_exchanges": pool.submit(_top, messages, "exchange"),
            "top_routing_keys": pool.submit(_top, messages, "routing_key"),
            "method_mix": pool.submit(_method_mix, frames),
            "reply_codes": pool.submit(_reply_codes, frames),
            "largest_messages": pool.submit(_largest, messages),
            "clients": pool.submit(_clients, connections),
            "problems_by_kind": pool.submit(_problem_kinds, problems),
            "problems": pool.submit(_first_problems, problems),
            "inputs": pool.submit(_inputs, frames, problems, captures),
        }
        lo, hi = span.result()
        rate = pool.submit(_rate, messages, lo, hi)
        figures = {name: future.result() for name, future in parts.items()}
        figures["message_rate"] = rate.result()
        message_counts = {r["role"]: r["count"] for r in roles.result()}
    try:
        tool = f"amqp-codec {version('amqp-codec')}"
    except PackageNotFoundError:
        tool = "amqp-codec"
    inputs = figures.pop("inputs")
    known_sizes = [f["bytes"] for f in inputs["files"] if f["bytes"] is not None]
    return {
        "generated_by": tool,
        "tables": dict(counts),
        "inputs": {
            "capture_files": len(inputs["files"]),
            "capture_bytes": sum(known_sizes),
            "first_timestamp": lo,
            "last_timestamp": hi,
            "files": inputs["files"],
            "skipped": inputs["skipped"],
        },
        "messages": dict(sorted(message_counts.items())),
        "message_labels": {k: _ROLE_LABELS.get(k, k) for k in sorted(message_counts)},
        **figures,
    }


# ------------------------------------------------------------------------------------------
# The page (from summary.json alone)
# ------------------------------------------------------------------------------------------


def _when(ts: float | None) -> str:
    if ts is None or not math.isfinite(ts):
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _text(value: Any, empty: str = "(none)") -> str:
    if value is None:
        return empty
    return str(value) if str(value) else "(empty)"


def _table(rows: Sequence[Sequence[Any]], head: Sequence[str], numeric: Sequence[int] = ()) -> str:
    def cell(i: int, value: Any) -> str:
        css = ' class="n"' if i in numeric else ""
        text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else value
        return f"<td{css}>{html.escape('' if text is None else str(text))}</td>"

    body = "".join(
        "<tr>" + "".join(cell(i, v) for i, v in enumerate(row)) + "</tr>" for row in rows
    )
    titles = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return f"<table><tr>{titles}</tr>{body}</table>"


def _empty(what: str) -> str:
    return f'<p class="empty">{html.escape(what)}</p>'


def _series(entries: Sequence[Mapping[str, Any]], labels: Mapping[str, str]) -> list[str]:
    found = {role for entry in entries for role in entry["counts"]}
    return [labels.get(role, role) for role in sorted(found)]


def _labelled(counts: Mapping[str, float], labels: Mapping[str, str]) -> dict[str, float]:
    return {labels.get(role, role): value for role, value in counts.items()}


def _top_section(
    title: str, figure: Mapping[str, Any], column: str, labels: Mapping[str, str]
) -> str:
    if not figure["by_messages"]:
        return f"<h2>{title}</h2>" + _empty("No messages in the capture.")
    parts = [f"<h2>{title}</h2>", f"<h3>by messages (top {TOP})</h3>"]
    rows = [(_text(e[column]), _labelled(e["counts"], labels)) for e in figure["by_messages"]]
    parts.append(charts.bars(rows, _series(figure["by_messages"], labels), "messages"))
    parts.append(f"<h3>by body bytes (top {TOP})</h3>")
    rows = [(_text(e[column]), _labelled(e["counts"], labels)) for e in figure["by_bytes"]]
    parts.append(charts.bars(rows, _series(figure["by_bytes"], labels), "body bytes", "bytes"))
    return "".join(parts)


def _section(title: str, body: str) -> str:
    return f"<h2>{html.escape(title)}</h2>{body}"


def render(summary: Mapping[str, Any]) -> str:
    """``report.html`` for a :func:`summarize` result (as read back from ``summary.json``)."""
    labels: dict[str, str] = summary["message_labels"]
    inputs = summary["inputs"]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>amqp-codec analyze report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>AMQP capture analysis</h1>",
        f"<p>{inputs['capture_files']:,} capture file"
        f"{'s' if inputs['capture_files'] != 1 else ''} "
        f"({charts.number(inputs['capture_bytes'], 'bytes')}), frames from "
        f"{_when(inputs['first_timestamp'])} to {_when(inputs['last_timestamp'])}. "
        f"Every figure here is in <code>summary.json</code> beside this page; the tables' "
        f"columns are described in <code>{TABLES_DOC}</code> of amqp-codec. "
        f"{html.escape(summary['generated_by'])}.</p>",
    ]
    table_rows = [(name, count) for name, count in summary["tables"].items()]
    parts.append(_section("Tables", _table(table_rows, ["table", "rows"], numeric=[1])))
    message_rows = [(labels[role], n) for role, n in summary["messages"].items()]
    parts.append(
        _section(
            "Messages",
            _table(message_rows, ["what happened", "messages"], numeric=[1])
            if message_rows
            else _empty("No messages in the capture."),
        )
    )

    rate = summary["message_rate"]
    if rate is None:
        body = _empty("No messages in the capture.")
    else:
        width = rate["bucket_seconds"]
        series = {labels.get(k, k): [n / width for n in v] for k, v in rate["counts"].items()}
        body = charts.lines(rate["start"], width, series, "messages per second")
    parts.append(_section("Messages over time", body))
    parts.append(_top_section("Top exchanges", summary["top_exchanges"], "exchange", labels))
    parts.append(
        _top_section("Top routing keys", summary["top_routing_keys"], "routing_key", labels)
    )

    mix = summary["method_mix"]
    body = (
        charts.bars(
            [(m["method"], {f"sent by {k}": v for k, v in m["counts"].items()}) for m in mix],
            sorted({f"sent by {k}" for m in mix for k in m["counts"]}),
            "method frames",
            stacked=True,
        )
        if mix
        else _empty("No method frames in the capture.")
    )
    parts.append(_section("Method mix (method frames by sender)", body))

    codes = summary["reply_codes"]
    body = (
        charts.bars(
            [
                (f"{_text(c['code'], '?')} {_text(c['text'], '')}".strip(), c["counts"])
                for c in codes
            ],
            sorted({m for c in codes for m in c["counts"]}),
            "frames",
        )
        if codes
        else _empty("No connection.close, channel.close or basic.return in the capture.")
    )
    parts.append(_section("Reply codes of closes and returns", body))

    largest = summary["largest_messages"]
    if largest:
        rows = [
            (
                f"{i + 1}. {_text(e['exchange'], '-')} / {_text(e['routing_key'], '-')}",
                {"body bytes": e["body_size"] or 0},
            )
            for i, e in enumerate(largest)
        ]
        listing = _table(
            [
                (
                    i + 1,
                    e["body_size"],
                    _text(e["exchange"], "-"),
                    _text(e["routing_key"], "-"),
                    ", ".join(f"{labels.get(k, k)} {v}" for k, v in e["counts"].items()),
                    e["first_seen"]["connection"],
                )
                for i, e in enumerate(largest)
            ],
            ["#", "body bytes", "exchange", "routing key", "seen", "first in connection"],
            numeric=[0, 1],
        )
        body = charts.bars(rows, ["body bytes"], "body bytes", "bytes") + listing
    else:
        body = _empty("No messages in the capture.")
    parts.append(_section(f"Largest messages (top {TOP}, each message once)", body))

    clients = summary["clients"]
    body = (
        charts.bars(
            [
                (
                    f"{_text(c['product'], 'unknown')} {_text(c['version'], '')}".strip(),
                    {"connections": c["connections"]},
                )
                for c in clients
            ],
            ["connections"],
            "connections",
        )
        if clients
        else _empty("No AMQP connections in the capture.")
    )
    parts.append(_section("Clients by library and version", body))

    kinds = summary["problems_by_kind"]
    body = (
        charts.bars(
            [(f"{k['kind']}: {k['error']}", {"problems": k["count"]}) for k in kinds],
            ["problems"],
            "problems",
        )
        if kinds
        else _empty("No problems found.")
    )
    parts.append(_section("Problems by kind", body))

    files = [
        (
            f["path"],
            f["bytes"],
            _when(f["first_timestamp"]),
            _when(f["last_timestamp"]),
            f["frames"],
            f["problems"],
        )
        for f in inputs["files"]
    ]
    body = _table(
        files, ["capture", "bytes", "first frame", "last frame", "frames", "problems"], [1, 4, 5]
    )
    if inputs["skipped"]:
        body += "<p>Skipped (not read):</p>" + _table(
            [(s["path"], s["kind"], s["detail"]) for s in inputs["skipped"]],
            ["input", "why", "detail"],
        )
    parts.append(_section("Inputs", body))

    listed = summary["problems"]
    body = (
        _table(
            [[p[c] for c in (*_PROBLEM_COLUMNS, "detail")] for p in listed],
            [*_PROBLEM_COLUMNS, "detail"],
            numeric=[1, 4],
        )
        if listed
        else _empty("No problems.")
    )
    parts.append(_section(f"Problems (first {PROBLEMS_LISTED})", body))
    parts.append("</body></html>")
    return "\n".join(parts)


def _dumps(summary: Mapping[str, Any]) -> str:
    def finite(value: Any) -> Any:
        raise TypeError(f"not JSON: {value!r}")

    return json.dumps(summary, indent=1, ensure_ascii=False, allow_nan=False, default=finite)


def write_report(
    spark: SparkSession,
    out: str,
    counts: Mapping[str, int] | None = None,
    captures: Sequence[str] | None = None,
) -> str:
    """Write ``summary.json`` and ``report.html`` (rendered from it) into ``out``; return the
    report's path. ``counts`` and ``captures`` as for :func:`summarize`."""
    summary = summarize(spark, out, counts, captures)
    text = _dumps(summary)
    with open(os.path.join(out, SUMMARY_NAME), "w", encoding="utf-8") as file:
        file.write(text + "\n")
    path = os.path.join(out, REPORT_NAME)
    with open(path, "w", encoding="utf-8") as page:
        page.write(render(json.loads(text)))
    return path
