"""Capture analysis on Spark: ``amqp-codec analyze CAPTURES... --out DIR``.

pcap/pcapng files in; Parquet tables (``frames``, ``messages``, ``connections``,
``problems``), ``summary.json`` and a self-contained ``report.html`` out. Needs the
``analyze`` extra (pyspark) and Java 17 or newer; the codec itself does not.

* :mod:`~amqp_codec.analyze.job` wires the Spark stages and holds :func:`run`;
* :mod:`~amqp_codec.analyze.streams` turns one connection's segments into rows;
* :mod:`~amqp_codec.analyze.preflight` checks a run's arguments before Spark starts;
* :mod:`~amqp_codec.analyze.output` moves a finished run's outputs into place;
* :mod:`~amqp_codec.analyze.logs` keeps Spark's and Java's logs off the terminal;
* :mod:`~amqp_codec.analyze.tables` lists the tables' columns;
* :mod:`~amqp_codec.analyze.report` computes ``summary.json`` and renders the report from it,
  with :mod:`~amqp_codec.analyze.charts` (inline SVG).
"""

from amqp_codec.analyze.job import DEFAULT_PORTS, Summary, run
from amqp_codec.analyze.preflight import AnalyzeUsageError

__all__ = ["DEFAULT_PORTS", "AnalyzeUsageError", "Summary", "run"]
