"""The tables ``amqp-codec analyze`` writes: their columns, in order, and their Spark schemas.

Rows travel through Spark as plain tuples in the column order given here (see
:mod:`amqp_codec.analyze.streams`, which builds them); :func:`spark_schema` turns a column
list into the ``StructType`` used to write the Parquet table.

Types are written as short names: ``string``, ``int``, ``long``, ``double``, ``boolean``,
``binary``, or a nested column list (a struct). Timestamps are seconds since the epoch
(``double``), exactly as the capture records them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias, Union

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = [
    "CONNECTIONS",
    "FRAMES",
    "MESSAGES",
    "PROBLEMS",
    "PROPERTIES",
    "TABLES",
    "Columns",
    "column_names",
    "spark_schema",
]

Columns: TypeAlias = tuple[tuple[str, Union[str, "Columns"]], ...]

#: One row per decoded frame.
FRAMES: Columns = (
    ("capture", "string"),  # the capture file holding the frame's first byte
    ("connection", "string"),  # "client_ip:port-server_ip:port", "#2"... for a reused port pair
    ("direction", "string"),  # who sent it: "client" or "server"
    ("timestamp", "double"),  # of the packet holding the frame's first byte
    ("offset", "long"),  # stream offset of the frame's first byte
    ("channel", "int"),  # None for the protocol header
    ("frame_type", "string"),  # method, header, body, heartbeat, protocol-header
    ("method", "string"),  # class.method of a method frame
    ("fields", "string"),  # JSON: decoded fields, as `amqp-codec decode --json` shows them
    ("size", "long"),  # bytes on the wire, frame header and end octet included
    ("problem", "string"),  # the problem found in this frame, if any
)

#: The content properties of a message (class basic), one struct column of :data:`MESSAGES`.
PROPERTIES: Columns = (
    ("content_type", "string"),
    ("content_encoding", "string"),
    ("headers", "string"),  # JSON, as in FRAMES.fields
    ("delivery_mode", "int"),
    ("priority", "int"),
    ("correlation_id", "string"),
    ("reply_to", "string"),  # 99-0: the reply-to struct as JSON
    ("expiration", "string"),
    ("message_id", "string"),
    ("timestamp", "long"),
    ("type", "string"),
    ("user_id", "string"),
    ("app_id", "string"),
    ("cluster_id", "string"),
)

#: One row per whole message: a content method joined with its header and body frames.
MESSAGES: Columns = (
    ("capture", "string"),
    ("connection", "string"),
    ("direction", "string"),
    ("timestamp", "double"),  # of the content method
    ("offset", "long"),  # stream offset of the content method
    ("channel", "int"),
    ("method", "string"),  # basic.publish, basic.deliver, ...; 99-0: message.transfer
    ("exchange", "string"),
    ("routing_key", "string"),
    ("consumer_tag", "string"),  # deliver
    ("delivery_tag", "long"),  # deliver, get-ok
    ("redelivered", "boolean"),  # deliver, get-ok
    ("reply_code", "int"),  # return
    ("reply_text", "string"),  # return
    ("properties", PROPERTIES),
    ("body_size", "long"),
    ("body_sha256", "string"),
    ("body", "binary"),  # only with --bodies
)

#: One row per connection, both directions joined.
CONNECTIONS: Columns = (
    ("capture", "string"),  # the capture file of the connection's first packet
    ("connection", "string"),
    ("client_ip", "string"),
    ("client_port", "int"),
    ("server_ip", "string"),
    ("server_port", "int"),
    ("protocol", "string"),  # "0-9-1", "0-8", "99-0"; None when not detected
    ("detected_by", "string"),  # protocol header, connection.start, assumed
    ("first_timestamp", "double"),
    ("last_timestamp", "double"),
    ("client_properties", "string"),  # JSON
    ("server_properties", "string"),  # JSON
    ("client_product", "string"),
    ("client_version", "string"),  # "version", else "product_version" (py-amqp)
    ("client_platform", "string"),
    ("server_product", "string"),
    ("server_version", "string"),
    ("mechanism", "string"),
    ("locale", "string"),
    ("channel_max", "int"),  # negotiated: tune-ok, else the server's tune
    ("frame_max", "long"),
    ("heartbeat", "int"),
    ("vhost", "string"),
    ("user", "string"),  # from the PLAIN/AMQPLAIN response; the password is never kept
    ("closed_by", "string"),  # client, server (connection.close), tcp-fin, tcp-rst, open
    ("close_reply_code", "int"),
    ("close_reply_text", "string"),
    ("close_method", "string"),  # the method the close names as its cause
    ("client_bytes", "long"),
    ("server_bytes", "long"),
    ("frames", "long"),
    ("messages", "long"),
    ("problems", "long"),
)

#: One row per problem: malformed frames, gaps, protocol violations, unreadable captures.
PROBLEMS: Columns = (
    ("capture", "string"),
    ("packet", "long"),  # packet number in the capture, 1-based as Wireshark shows it
    ("connection", "string"),
    ("direction", "string"),
    ("timestamp", "double"),
    ("offset", "long"),  # stream offset, for problems in a stream
    ("kind", "string"),  # capture, tcp, gap, decode, content-sequence, resync, unknown-protocol
    ("error", "string"),  # exception class or capture problem kind
    ("reply_code", "int"),
    ("channel", "int"),
    ("method", "string"),
    ("field", "string"),
    ("detail", "string"),
)

#: Every table, by name (the Parquet directory's name in the output folder).
TABLES: dict[str, Columns] = {
    "frames": FRAMES,
    "messages": MESSAGES,
    "connections": CONNECTIONS,
    "problems": PROBLEMS,
}


def column_names(columns: Columns) -> list[str]:
    """The top-level column names of a table."""
    return [name for name, _ in columns]


def spark_schema(columns: Columns) -> StructType:
    """The Spark schema of a table (every column nullable)."""
    from pyspark.sql import types as t

    simple = {
        "string": t.StringType(),
        "int": t.IntegerType(),
        "long": t.LongType(),
        "double": t.DoubleType(),
        "boolean": t.BooleanType(),
        "binary": t.BinaryType(),
    }
    fields = []
    for name, kind in columns:
        data_type = simple[kind] if isinstance(kind, str) else spark_schema(kind)
        fields.append(t.StructField(name, data_type, nullable=True))
    return t.StructType(fields)
