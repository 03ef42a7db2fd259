"""The capture-analysis job on a real Spark standalone cluster: a master and two workers on
127.0.0.1 (see ``spark_cluster.py``), compared with local mode on the same captures.

Skipped only when there is no Java runtime. Each driver runs in a child process, so this
module neither needs nor disturbs a SparkSession of the test process.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from spark_cluster import SparkCluster, java_missing, spark_cluster

from amqp_codec.capture.synthetic import CaptureSet, generate

pytestmark = pytest.mark.skipif(java_missing() is not None, reason=str(java_missing()))

TABLES = ("frames", "messages", "connections", "problems")

# Runs on the executors: which Python they are, and that they decode with this checkout's codec.
_PROBE = """
import json, os, sys
from pyspark.sql import SparkSession

def probe(index):
    import amqp_codec
    from amqp_codec import FrameDecoder, encode_frame, MethodFrame
    from amqp_codec.v0_9_1 import Basic
    decoder = FrameDecoder()
    decoder.receive_data(b"AMQP\\x00\\x00\\x09\\x01" + encode_frame(MethodFrame(1, Basic.Ack(index))))
    decoder.next_frame()
    frame = decoder.next_frame()
    return [(index, sys.executable, amqp_codec.__file__, os.getppid(), frame.method.delivery_tag)]

spark = (
    SparkSession.builder.master(sys.argv[1])
    .appName("probe")
    .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")  # both executors first
    .getOrCreate()
)
rows = spark.sparkContext.parallelize(range(8), 8).flatMap(probe).collect()
print(json.dumps(rows))
spark.stop()
"""

# Runs the job: analyze CAPTURES into OUT on MASTER; prints the row counts.
_ANALYZE = """
import json, sys
from amqp_codec.analyze import run

summary = run(
    json.loads(sys.argv[1]),
    sys.argv[2],
    master=sys.argv[3],
    progress=False,
    split_bytes=int(sys.argv[4]),
)
print(json.dumps(summary.counts))
"""

# Runs the job in local mode into LOCAL_OUT, then reads every table of each output folder
# with a local session (one JVM for both): sorted canonical JSON rows per table.
_LOCAL_AND_DUMP = """
import datetime, decimal, json, sys
from pyspark.sql import SparkSession
from amqp_codec.analyze import run

tables, captures, local_out, *outs = sys.argv[1:]
run(json.loads(captures), local_out, master="local[2]", progress=False)

def plain(value):
    if isinstance(value, (bytes, bytearray)):
        return "bytes:" + bytes(value).hex()
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return "decimal:" + str(value)
    raise TypeError(type(value).__name__)

spark = SparkSession.builder.master("local[1]").appName("dump").getOrCreate()
result = {}
for out in [local_out, *outs]:
    result[out] = {}
    for table in json.loads(tables):
        frame = spark.read.parquet(f"{out}/{table}")
        rows = sorted(
            json.dumps(row.asDict(recursive=True), sort_keys=True, default=plain)
            for row in frame.collect()
        )
        result[out][table] = {"columns": sorted(frame.columns), "rows": rows}
spark.stop()
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    with spark_cluster(tmp_path_factory.mktemp("spark-cluster")) as running:
        yield running


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> CaptureSet:
    # Three rotated files (one pcapng), connections crossing file boundaries.
    # Seed 1 has publishes, deliveries, gets and returns at this size.
    return generate(tmp_path_factory.mktemp("captures"), 800_000, 3, seed=1, concurrency=8)


@pytest.fixture(scope="module")
def one_connection(tmp_path_factory: pytest.TempPathFactory) -> CaptureSet:
    # One file of a few long connections, one at a time.
    return generate(
        tmp_path_factory.mktemp("one"), 600_000, 1, seed=2, concurrency=1, max_messages=10**6
    )


def test_executors_run_this_python(cluster: SparkCluster) -> None:
    result = cluster.python(["-c", _PROBE, cluster.master_url])
    rows = json.loads(result.stdout.strip().splitlines()[-1])
    assert sorted(r[0] for r in rows) == list(range(8))
    assert {r[1] for r in rows} == {sys.executable}
    import amqp_codec

    assert {r[2] for r in rows} == {amqp_codec.__file__}
    assert [r[4] for r in sorted(rows)] == list(range(8))  # decoded on the executors
    # Both workers' executors took part: each has its own Python worker daemon.
    assert len({r[3] for r in rows}) == 2
    probes = [a for a in cluster.status()["completedapps"] if a["name"] == "probe"]
    assert len(probes) == 1 and probes[0]["cores"] == 2


@pytest.mark.timeout(900)  # two Spark jobs and a read-back, each with its own JVM
def test_cluster_run_equals_local_run(
    cluster: SparkCluster, captures: CaptureSet, one_connection: CaptureSet, tmp_path: Path
) -> None:
    assert one_connection.counts.connections <= 3
    files = json.dumps([str(p) for p in [*captures.files, *one_connection.files]])
    on_cluster, local = str(tmp_path / "cluster"), str(tmp_path / "local")
    # Splits of 64 KiB on the cluster: every connection, the single long one too, is
    # dissected in regions spread over both workers; the local run takes whole files.
    cluster.python(["-c", _ANALYZE, files, on_cluster, cluster.master_url, str(64 * 1024)])
    apps = cluster.status()["completedapps"]
    analyze_apps = [a for a in apps if a["name"] == "amqp-codec analyze"]
    assert len(analyze_apps) == 1 and analyze_apps[0]["state"] == "FINISHED"
    assert analyze_apps[0]["cores"] == 2  # it ran on both workers' executors
    output = cluster.python(["-c", _LOCAL_AND_DUMP, json.dumps(TABLES), files, local, on_cluster])
    dumped = json.loads(output.stdout.strip().splitlines()[-1])
    both = (captures.counts, one_connection.counts)
    # The generated traffic is complete and valid: every message and connection is there.
    local_tables = dumped[local]
    assert len(local_tables["messages"]["rows"]) == sum(
        c.published + c.delivered + c.got + c.returned for c in both
    )
    assert len(local_tables["connections"]["rows"]) == sum(c.connections for c in both)
    assert local_tables["problems"]["rows"] == []
    # Every frame, and each connection's protocol header, is a row.
    assert len(local_tables["frames"]["rows"]) == sum(c.frames + c.protocol_headers for c in both)
    for table in TABLES:
        ours, theirs = dumped[on_cluster][table], local_tables[table]
        assert ours["columns"] == theirs["columns"], table
        missing = sorted(set(theirs["rows"]) - set(ours["rows"]))[:3]
        extra = sorted(set(ours["rows"]) - set(theirs["rows"]))[:3]
        assert ours["rows"] == theirs["rows"], (
            f"{table}: only local {missing}, only cluster {extra}"
        )
