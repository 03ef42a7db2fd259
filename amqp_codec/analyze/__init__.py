"""Capture analysis on Spark: ``amqp-codec analyze CAPTURES... --out DIR``.

pcap/pcapng files in; Parquet tables (``frames``, ``messages``, ``connections``,
``problems``) and a self-contained ``report.html`` out. Needs the ``analyze`` extra
(pyspark, plotly); the codec itself does not.

* :mod:`~amqp_codec.analyze.job` wires the Spark stages and holds :func:`run`;
* :mod:`~amqp_codec.analyze.streams` turns one connection's segments into rows;
* :mod:`~amqp_codec.analyze.tables` lists the tables' columns;
* :mod:`~amqp_codec.analyze.report` draws the report.
"""

from amqp_codec.analyze.job import DEFAULT_PORTS, Summary, run

__all__ = ["DEFAULT_PORTS", "Summary", "run"]
