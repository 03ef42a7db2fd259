"""The tables ``amqp-codec analyze`` writes: their columns, in order, with type and meaning.

This is the one place the tables are described: rows travel through Spark as plain tuples in
the column order given here (see :mod:`amqp_codec.analyze.streams`, which builds them),
:func:`spark_schema` turns a column list into the ``StructType`` each Parquet table is written
with, and :func:`markdown` into ``docs/tables.md`` (``python -m codegen`` writes it and
``--check`` fails when it is stale).

Types are written as short names: ``string``, ``int``, ``long``, ``double``, ``boolean``,
``binary``, or a nested column list (a struct). Timestamps are seconds since the epoch
(``double``), exactly as the capture records them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, TypeAlias

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

__all__ = [
    "CONNECTIONS",
    "FRAMES",
    "MESSAGES",
    "PROBLEMS",
    "PROPERTIES",
    "TABLES",
    "TABLE_DESCRIPTIONS",
    "Column",
    "Columns",
    "column_names",
    "markdown",
    "spark_schema",
]


class Column(NamedTuple):
    """One column: its name, its type (a short name, or the columns of a struct), its meaning."""

    name: str
    type: str | Columns
    description: str


Columns: TypeAlias = tuple[Column, ...]

#: One row per decoded frame.
FRAMES: Columns = (
    Column("capture", "string", "the capture file holding the frame's first byte"),
    Column(
        "connection",
        "string",
        "client_ip:port-server_ip:port (IPv6 in brackets), with #2, #3... appended when a port pair is reused",
    ),
    Column("direction", "string", "who sent it: client or server"),
    Column("timestamp", "double", "time of the packet holding the frame's first byte"),
    Column("offset", "long", "stream offset of the frame's first byte"),
    Column("channel", "int", "the channel; null for the protocol header"),
    Column("frame_type", "string", "method, header, body, heartbeat, protocol-header"),
    Column("method", "string", "class.method of a method frame"),
    Column("fields", "string", "JSON: decoded fields, as `amqp-codec decode --json` shows them"),
    Column("size", "long", "bytes on the wire, frame header and end octet included"),
    Column("problem", "string", "the problem found in this frame, if any"),
)

#: The content properties of a message (class basic), one struct column of :data:`MESSAGES`.
PROPERTIES: Columns = (
    Column("content_type", "string", "MIME content type (content-type)"),
    Column("content_encoding", "string", "content-encoding"),
    Column("headers", "string", "JSON, as in FRAMES.fields"),
    Column("delivery_mode", "int", "1 transient, 2 persistent"),
    Column("priority", "int", "message priority, 0 to 9"),
    Column("correlation_id", "string", "correlation-id"),
    Column("reply_to", "string", "99-0: the reply-to struct as JSON"),
    Column("expiration", "string", "expiration, as sent (a string of milliseconds)"),
    Column("message_id", "string", "message-id"),
    Column(
        "timestamp", "long", "the timestamp property, as sent (usually seconds since the epoch)"
    ),
    Column("type", "string", "the type property"),
    Column("user_id", "string", "user-id (checked against the login by RabbitMQ)"),
    Column("app_id", "string", "app-id"),
    Column("cluster_id", "string", "cluster-id (0-8; deprecated in 0-9-1)"),
)

#: One row per whole message: a content method joined with its header and body frames.
MESSAGES: Columns = (
    Column("capture", "string", "the capture file holding the content method's first byte"),
    Column("connection", "string", "as in frames.connection"),
    Column(
        "direction", "string", "who sent it: client (publish) or server (deliver, get-ok, return)"
    ),
    Column("timestamp", "double", "time of the content method"),
    Column("offset", "long", "stream offset of the content method"),
    Column("channel", "int", "the channel it was sent on"),
    Column("method", "string", "basic.publish, basic.deliver, ...; 99-0: message.transfer"),
    Column(
        "exchange", "string", "the exchange published to (a deliver, get-ok or return names it too)"
    ),
    Column("routing_key", "string", "the routing key"),
    Column("consumer_tag", "string", "deliver"),
    Column("delivery_tag", "long", "deliver, get-ok"),
    Column("redelivered", "boolean", "deliver, get-ok"),
    Column("reply_code", "int", "return"),
    Column("reply_text", "string", "return"),
    Column(
        "properties",
        PROPERTIES,
        "the content header's properties (class basic; 99-0: its header structs)",
    ),
    Column("body_size", "long", "body bytes, as the content header announced"),
    Column(
        "body_sha256",
        "string",
        "SHA-256 of the body, hex: the same body delivered twice has the same hash",
    ),
    Column("body", "binary", "only with --bodies"),
)

#: One row per connection, both directions joined.
CONNECTIONS: Columns = (
    Column("capture", "string", "the capture file of the connection's first packet"),
    Column("connection", "string", "as in frames.connection"),
    Column("client_ip", "string", "the client's address"),
    Column("client_port", "int", "the client's port"),
    Column("server_ip", "string", "the server's address"),
    Column("server_port", "int", "the server's port"),
    Column("protocol", "string", "'0-9-1', '0-8', '99-0'; None when not detected"),
    Column("detected_by", "string", "protocol header, connection.start, assumed"),
    Column("first_timestamp", "double", "time of the connection's first packet"),
    Column("last_timestamp", "double", "time of its last packet"),
    Column("client_properties", "string", "JSON"),
    Column("server_properties", "string", "JSON"),
    Column("client_product", "string", "client-properties product"),
    Column("client_version", "string", "'version', else 'product_version' (py-amqp)"),
    Column("client_platform", "string", "client-properties platform"),
    Column("server_product", "string", "server-properties product"),
    Column("server_version", "string", "server-properties version"),
    Column(
        "mechanism", "string", "the SASL mechanism the client chose (PLAIN, AMQPLAIN, EXTERNAL...)"
    ),
    Column("locale", "string", "the locale the client chose"),
    Column("channel_max", "int", "negotiated: tune-ok, else the server's tune"),
    Column("frame_max", "long", "negotiated maximum frame size in bytes (0: no limit)"),
    Column("heartbeat", "int", "negotiated heartbeat interval in seconds (0: none)"),
    Column("vhost", "string", "the virtual host of connection.open"),
    Column("user", "string", "from the PLAIN/AMQPLAIN response; the password is never kept"),
    Column("closed_by", "string", "client, server (connection.close), tcp-fin, tcp-rst, open"),
    Column("close_reply_code", "int", "the reply code of connection.close"),
    Column("close_reply_text", "string", "the reply text of connection.close"),
    Column("close_method", "string", "the method the close names as its cause"),
    Column("client_bytes", "long", "bytes the client sent (TCP payload)"),
    Column("server_bytes", "long", "bytes the server sent (TCP payload)"),
    Column("frames", "long", "rows of this connection in frames"),
    Column("messages", "long", "rows of this connection in messages"),
    Column("problems", "long", "rows of this connection in problems"),
)

#: One row per problem: malformed frames, gaps, protocol violations, unreadable captures.
PROBLEMS: Columns = (
    Column("capture", "string", "the capture file (or skipped input) the problem is in"),
    Column("packet", "long", "packet number in the capture, 1-based as Wireshark shows it"),
    Column(
        "connection",
        "string",
        "as in frames.connection; None for a problem of a whole capture file",
    ),
    Column("direction", "string", "client or server, for problems in a stream"),
    Column("timestamp", "double", "time of the packet concerned"),
    Column("offset", "long", "stream offset, for problems in a stream"),
    Column(
        "kind",
        "string",
        "capture, tcp, gap, decode, content-sequence, resync, unknown-protocol; what the "
        "receiving peer would refuse: frame-too-large, wrong-peer, channel-over-max, "
        "channel-not-open, heartbeat-missed",
    ),
    Column("error", "string", "exception class, capture problem kind, or the kind again"),
    Column(
        "reply_code", "int", "the AMQP reply code a peer would answer with (501, 502, 503, 505...)"
    ),
    Column("channel", "int", "the channel of the frame concerned"),
    Column("method", "string", "the method being decoded"),
    Column("field", "string", 'the field path being decoded, e.g. headers["x-death"][0]'),
    Column("detail", "string", "what is wrong, in words, with byte offsets where they help"),
)

#: Every table, by name (the Parquet directory's name in the output folder).
TABLES: dict[str, Columns] = {
    "frames": FRAMES,
    "messages": MESSAGES,
    "connections": CONNECTIONS,
    "problems": PROBLEMS,
}


#: What one row of each table is.
TABLE_DESCRIPTIONS: dict[str, str] = {
    "frames": "One row per decoded frame, both directions of every AMQP connection.",
    "messages": "One row per whole message: a content method (publish, deliver, get-ok, "
    "return; 99-0 message.transfer) joined with its header and body frames. A message "
    "published once and delivered twice is three rows: one publish, two deliveries.",
    "connections": "One row per AMQP connection, what both directions said joined.",
    "problems": "One row per problem: unreadable or skipped inputs, TCP gaps, decode errors, "
    "content out of sequence, unknown protocols, and frames that decode but that the "
    "receiving peer would refuse (over the negotiated frame_max or channel_max, on a channel "
    "not open, sent by the wrong peer, or after a silence over twice the negotiated "
    "heartbeat), with the reply code it would answer with. A problem is a row, never a "
    "failed run.",
}


def column_names(columns: Columns) -> list[str]:
    """The top-level column names of a table."""
    return [column.name for column in columns]


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
    for name, kind, _ in columns:
        data_type = simple[kind] if isinstance(kind, str) else spark_schema(kind)
        fields.append(t.StructField(name, data_type, nullable=True))
    return t.StructType(fields)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown() -> str:
    """``docs/tables.md``: every table's columns with type and meaning."""
    out = [
        "# The tables of `amqp-codec analyze`",
        "",
        "<!-- generated from amqp_codec/analyze/tables.py by `python -m codegen`; do not edit -->",
        "",
        "`amqp-codec analyze CAPTURES --out DIR` writes each table as a Parquet folder in `DIR`,",
        "plus `summary.json` (every figure of the report) and `report.html`. Every column may be",
        "null. Timestamps are seconds since the epoch (UTC), as the capture recorded them.",
        "Credentials (connection.start-ok and secure-ok `response`, update-secret `new-secret`)",
        "are never stored: `fields` shows them as `<redacted>`.",
        "",
    ]
    for name, columns in TABLES.items():
        out += [f"## `{name}`", "", TABLE_DESCRIPTIONS[name], "", "| column | type | meaning |"]
        out.append("|---|---|---|")
        for column in columns:
            kind = column.type if isinstance(column.type, str) else "struct"
            out.append(f"| `{column.name}` | {kind} | {_cell(column.description)} |")
            if not isinstance(column.type, str):
                for sub in column.type:
                    out.append(
                        f"| `{column.name}.{sub.name}` | {sub.type} | {_cell(sub.description)} |"
                    )
        out.append("")
    return "\n".join(out)
