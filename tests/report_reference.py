"""The report's figures as plain Spark SQL computes them: the reference the report's own
computation (Arrow tallies and a shuffle of partial counts) must match figure for figure.

One query per figure, straight from the tables, as an analyst would write them. Where Spark
leaves the order of tied rows open, the order is completed with the remaining columns, as
the report completes it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from amqp_codec.analyze.report import _ROLE_LABELS, RATE_BUCKETS, TOP

PROBLEMS_LISTED = 100


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
        .orderBy(f.desc("body_size"), "first", "body_sha256", "exchange", "routing_key")
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
        problems.orderBy(
            "capture", "connection", "direction", "offset", "packet", "kind", "error", "detail"
        )
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
            .orderBy("capture", "error", "detail")
            .collect()
            if r["capture"] not in read
        ]
    return {"files": files, "skipped": skipped}


def figures(spark: SparkSession, out: str, captures: Sequence[str] | None = None) -> dict[str, Any]:
    """Every figure of ``summary.json`` but ``generated_by``, one query each."""
    tables = {
        name: spark.read.parquet(os.path.join(out, name))
        for name in ("frames", "messages", "connections", "problems")
    }
    frames, connections, problems = tables["frames"], tables["connections"], tables["problems"]
    messages = _role(tables["messages"])
    counts: Mapping[str, int] = {name: table.count() for name, table in tables.items()}
    lo, hi = _span(frames)
    message_counts = {r["role"]: r["count"] for r in messages.groupBy("role").count().collect()}
    inputs = _inputs(frames, problems, captures)
    return {
        "tables": dict(counts),
        "inputs": {
            "capture_files": len(inputs["files"]),
            "capture_bytes": sum(f["bytes"] for f in inputs["files"] if f["bytes"] is not None),
            "first_timestamp": lo,
            "last_timestamp": hi,
            "files": inputs["files"],
            "skipped": inputs["skipped"],
        },
        "messages": dict(sorted(message_counts.items())),
        "message_labels": {k: _ROLE_LABELS.get(k, k) for k in sorted(message_counts)},
        "message_rate": _rate(messages, lo, hi),
        "top_exchanges": _top(messages, "exchange"),
        "top_routing_keys": _top(messages, "routing_key"),
        "method_mix": _method_mix(frames),
        "reply_codes": _reply_codes(frames),
        "largest_messages": _largest(messages),
        "clients": _clients(connections),
        "problems_by_kind": _problem_kinds(problems),
        "problems": _first_problems(problems),
    }
