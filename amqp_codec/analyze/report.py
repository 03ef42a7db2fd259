"""``summary.json`` and ``report.html``: one analysis in figures, then as a page.

:func:`summarize` computes every figure the report shows from the Parquet tables just
written, into one JSON-ready dict; :func:`write_report` writes it as ``summary.json`` and
renders ``report.html`` from that file's content alone (:func:`render`), so the page never
shows a number the JSON does not hold. The page draws its charts as inline SVG
(:mod:`~amqp_codec.analyze.charts`): no script, nothing fetched, it opens offline.

Messages are counted by what happened to them: a message published once and delivered twice
is one publish and two deliveries, never "three messages". Each count is labelled with its
method (``basic.publish``, ``basic.deliver``, ``basic.get-ok``, ``basic.return``; 99-0's
``message.transfer`` by who sent it). Credentials never appear: the tables already hold
them redacted, and no field of a method is copied here.

How the figures are computed, and why so:

* **Two Spark jobs of Python tasks, no Spark SQL query.** The job's driver has run no SQL
  query before the report, and the first one pays for loading and compiling Spark SQL's
  machinery (with the quick JIT this job's driver runs): that, not the scanning, was most of
  the former dozen queries' cost. The Python workers, on the other hand, are already warm
  from the second pass, and Arrow groups a batch faster than a query is planned. Tables of
  at most :data:`~amqp_codec.analyze.tops.DRIVER_BYTES` (Parquet bytes) are read by the
  driver itself with the same functions, in one partition: for them, starting the two
  jobs' tasks and shuffle cost more than the reading.
* **Bounded figures** (rows per table, messages per role, the method mix, reply codes, the
  time span, per capture file figures, problems per kind, the first problems listed, and
  the fifteen largest distinct messages' sizes) come from a
  :class:`~amqp_codec.analyze.tally.Tally` per table file, added up here. Each has a bound
  that does not depend on the capture. In a run of the job, the tally of each file of the
  ``frames``, ``messages`` and ``connections`` tables was counted from the batches its
  writer wrote (:class:`~amqp_codec.analyze.parquet.TableWriters`), in the task that wrote
  it; the ``problems`` files, a file the check step rewrote after its task, and any file of
  an output folder given to :func:`summarize` alone are read instead, a Spark task per share
  of such files (only the columns needed).
* **Unbounded figures** (the top exchanges and routing keys, the clients, the largest
  messages) group by values a capture may hold millions of; they go through Spark's
  shuffle, which spills, and only each partition's best fifteen reach the driver
  (:func:`~amqp_codec.analyze.tops.top_figures`, which also counts the rate's buckets once
  the tally gave the span). The largest messages only count rows at least as large as the
  tally's fifteenth largest distinct message.
* Every figure is of the final tables: the job's check step removes rows from some files
  and dissects streams again after the second pass's tasks, and the tally of every file it
  rewrites is dropped, so that file is read again. Counted as written, the tallies take
  the report's first Spark job off the end of a run (the problems files left to read are
  small unless the capture is damaged, and the driver reads small files itself): on 1 GB
  of many connections the report went from 0.61 s to 0.17 to 0.20 s (the same
  ``summary.json``).

Measured side by side on 1 GB of generated captures (821 connections, 374,356 frames,
87,575 messages), two cores shared with other work: the former dozen queries (36 jobs, the
``frames`` table scanned four times) took 25 s in a fresh session, 12 s again in the same
one, and the first query alone about 4 s. The report step of a driver whose workers had run
tasks took 41 to 56 s with them and 3.0 to 4.6 s so (three runs each, load 7 to 10).

"""

from __future__ import annotations

import html
import json
import math
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from . import charts
from .tally import MESSAGE_KEYS, PROBLEM_COLUMNS, PROBLEMS_LISTED, Tally
from .tops import TOP, Tops, in_driver, role_counts, shares, table_files, top_figures

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

__all__ = ["REPORT_NAME", "SUMMARY_NAME", "render", "summarize", "tally_tables", "write_report"]

#: The report's file name in the output folder.
REPORT_NAME = "report.html"
#: The figures' file name, beside the report.
SUMMARY_NAME = "summary.json"
#: Time buckets of the message rate chart over the capture's span.
RATE_BUCKETS = 100
#: The tables, in the order ``summary.json`` lists them.
TABLE_NAMES = ("frames", "messages", "connections", "problems")
#: Where the tables' columns are described (in the source tree and on the project's pages).
TABLES_DOC = "docs/tables.md"
_PROBLEM_COLUMNS = PROBLEM_COLUMNS

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
# Figures
# ------------------------------------------------------------------------------------------


def tally_tables(sc: SparkContext, out: str, known: Mapping[str, Tally] | None = None) -> Tally:
    """The :class:`~amqp_codec.analyze.tally.Tally` of the tables in ``out``. ``known`` holds
    the tallies of files counted as they were written (by path); the other files are read, a
    Spark task per share of them, added up here (read here when they are few bytes, see
    :func:`~amqp_codec.analyze.tops.in_driver`)."""
    from .tally import tally_files

    known = known or {}
    files = [(table, path) for table in TABLE_NAMES for path in table_files(out, table)]
    parts = [known[path] for _, path in files if path in known]
    items = [(table, path) for table, path in files if path not in known]
    if items and in_driver(items):
        parts.append(tally_files(items))
    elif items:
        tasks = shares(items, sc.defaultParallelism)
        parts += sc.parallelize(tasks, len(tasks)).map(tally_files).collect()
    tally = Tally(rows=dict.fromkeys(TABLE_NAMES, 0))
    for part in parts:
        tally.merge(part)
    return tally


def _skipped(out: str, captures: Sequence[str] | None) -> list[dict[str, Any]]:
    """The inputs not read: ``capture`` problems naming a file the run did not read (as
    many as the inputs skipped)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from .parquet import arrow_schema
    from .tables import TABLES

    if captures is None:
        return []
    read = set(captures)
    found = []
    problems = ds.dataset(
        os.path.join(out, "problems"), format="parquet", schema=arrow_schema(TABLES["problems"])
    )
    for batch in problems.to_batches(
        columns=["capture", "error", "detail"], filter=pc.field("kind") == "capture"
    ):
        found += [row for row in batch.to_pylist() if row["capture"] not in read]
    # By input, then as Spark would order rows tied on it: every column.
    found.sort(key=lambda row: [(v is not None, v or "") for v in row.values()])
    return [{"path": r["capture"], "kind": r["error"], "detail": r["detail"]} for r in found]


def _method_mix(tally: Tally) -> list[dict[str, Any]]:
    mix: dict[Any, dict[str, int]] = {}
    for (method, direction), n in tally.methods.items():
        mix.setdefault(method, {})[direction or "unknown"] = n
    ordered = sorted(mix.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    return [{"method": m, "counts": c} for m, c in ordered]


def _reply_codes(tally: Tally) -> list[dict[str, Any]]:
    codes: dict[int | None, dict[str, Any]] = {}
    for (code, method), (n, text) in tally.replies.items():
        entry = codes.setdefault(code, {"code": code, "text": None, "counts": {}})
        entry["counts"][method] = n
        if entry["text"] is None or (text is not None and text < entry["text"]):
            entry["text"] = text
    ordered = sorted(codes.values(), key=lambda e: (e["code"] is None, e["code"] or 0))
    for entry in ordered:
        entry["counts"] = dict(sorted(entry["counts"].items()))
    return ordered


def _problem_kinds(tally: Tally) -> list[dict[str, Any]]:
    def order(item: tuple[tuple[str | None, str | None], int]) -> tuple[Any, ...]:
        (kind, error), n = item
        return (-n, kind is not None, kind or "", error is not None, error or "")

    return [
        {"kind": kind, "error": error, "count": n}
        for (kind, error), n in sorted(tally.problem_kinds.items(), key=order)
    ]


def _inputs(tally: Tally, captures: Sequence[str] | None) -> list[dict[str, Any]]:
    """The capture files read: size, time span, frames, problems."""
    names: list[Any] = sorted(captures) if captures is not None else sorted(tally.captures)
    files = []
    for name in names:
        lo, hi, frames, problems = tally.captures.get(name, [None, None, 0, 0])
        try:
            size: int | None = os.path.getsize(name)
        except OSError:
            size = None
        files.append(
            {
                "path": name,
                "bytes": size,
                "first_timestamp": lo if frames else None,
                "last_timestamp": hi if frames else None,
                "frames": frames,
                "problems": problems,
            }
        )
    return files


def _rate(tops: Tops, lo: float | None, hi: float | None, width: float) -> dict[str, Any] | None:
    """Messages per second, per role, in :data:`RATE_BUCKETS` equal buckets exactly covering
    the capture's span (its first to last frame): no partial bucket at either end."""
    if lo is None or hi is None or not tops.rate:
        return None
    return {
        "start": lo,
        "end": hi,
        "bucket_seconds": width,
        "counts": dict(sorted(tops.rate.items())),
    }


def _top(tops: Tops, column: str) -> dict[str, list[dict[str, Any]]]:
    """The top values of ``column`` by message count and by body bytes, per role."""
    return {
        name: [
            {column: key[1], "counts": role_counts(roles, measure)}
            for key, roles in tops.lists[f"{column} {name}"]
        ]
        for name, measure in (("by_messages", 0), ("by_bytes", 1))
    }


def _largest(tops: Tops) -> list[dict[str, Any]]:
    """The largest messages, each once: a publish and its deliveries (same body, exchange and
    routing key) are one entry, with how often each happened."""
    return [
        {
            **dict(zip(MESSAGE_KEYS, key[1:], strict=True)),
            "counts": role_counts(roles, 0),
            "first_seen": dict(zip(("timestamp", "connection", "offset"), first, strict=True)),
        }
        for key, (roles, first) in tops.lists["largest"]
    ]


def _clients(tops: Tops) -> list[dict[str, Any]]:
    return [
        {"product": product, "version": version, "connections": n}
        for (_, product, version), n in tops.lists["clients"]
    ]


def summarize(
    spark: SparkContext | SparkSession,
    out: str,
    counts: Mapping[str, int] | None = None,
    captures: Sequence[str] | None = None,
    tallies: Mapping[str, Tally] | None = None,
) -> dict[str, Any]:
    """Every figure of the report, computed from the tables in ``out``, JSON-ready.

    ``spark``: the context (or session) whose executors read the tables.
    ``counts``: the rows of each table when the caller knows them (else they are counted).
    ``captures``: the capture files the run read (else those the tables name).
    ``tallies``: the tallies of table files counted as they were written, by path
    (:attr:`~amqp_codec.analyze.job.Written.tallies`); the other files are read.
    """
    from importlib.metadata import PackageNotFoundError, version

    from pyspark import SparkContext

    sc = spark if isinstance(spark, SparkContext) else spark.sparkContext
    tally = tally_tables(sc, out, tallies)
    lo, hi = tally.span()
    span = (hi - lo) if lo is not None and hi is not None else 0.0
    buckets = RATE_BUCKETS if span > 0 else 1
    width = span / buckets if span > 0 else 1.0
    tops = top_figures(sc, out, tally.largest_threshold(), lo, width, buckets)
    if counts is None:
        counts = {name: tally.rows.get(name, 0) for name in TABLE_NAMES}
    try:
        tool = f"amqp-codec {version('amqp-codec')}"
    except PackageNotFoundError:
        tool = "amqp-codec"
    files = _inputs(tally, captures)
    known_sizes = [f["bytes"] for f in files if f["bytes"] is not None]
    message_counts: dict[Any, int] = tally.roles
    return {
        "generated_by": tool,
        "tables": dict(counts),
        "inputs": {
            "capture_files": len(files),
            "capture_bytes": sum(known_sizes),
            "first_timestamp": lo,
            "last_timestamp": hi,
            "files": files,
            "skipped": _skipped(out, captures),
        },
        "messages": dict(sorted(message_counts.items())),
        "message_labels": {k: _ROLE_LABELS.get(k, k) for k in sorted(message_counts)},
        "message_rate": _rate(tops, lo, hi, width),
        "top_exchanges": _top(tops, "exchange"),
        "top_routing_keys": _top(tops, "routing_key"),
        "method_mix": _method_mix(tally),
        "reply_codes": _reply_codes(tally),
        "largest_messages": _largest(tops),
        "clients": _clients(tops),
        "problems_by_kind": _problem_kinds(tally),
        "problems": tally.problem_rows(),
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
    spark: SparkContext | SparkSession,
    out: str,
    counts: Mapping[str, int] | None = None,
    captures: Sequence[str] | None = None,
    tallies: Mapping[str, Tally] | None = None,
) -> str:
    """Write ``summary.json`` and ``report.html`` (rendered from it) into ``out``; return the
    report's path. ``counts``, ``captures`` and ``tallies`` as for :func:`summarize`."""
    summary = summarize(spark, out, counts, captures, tallies)
    text = _dumps(summary)
    with open(os.path.join(out, SUMMARY_NAME), "w", encoding="utf-8") as file:
        file.write(text + "\n")
    path = os.path.join(out, REPORT_NAME)
    with open(path, "w", encoding="utf-8") as page:
        page.write(render(json.loads(text)))
    return path
