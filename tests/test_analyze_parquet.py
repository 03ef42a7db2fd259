"""Rows written by a task's TableWriters read back as they were given."""

from __future__ import annotations

from pathlib import Path

import pytest

pq = pytest.importorskip("pyarrow.parquet")

from amqp_codec.analyze.parquet import TableWriters  # noqa: E402
from amqp_codec.analyze.tables import PROPERTIES, TABLES, column_names  # noqa: E402


def _message_row(index: int, properties: tuple[object, ...] | None) -> tuple[object, ...]:
    names = column_names(TABLES["messages"])
    row: dict[str, object] = dict.fromkeys(names)
    row.update(connection="c", direction="client", offset=index, properties=properties)
    return tuple(row[name] for name in names)


def test_struct_columns_read_back_with_their_nulls(tmp_path: Path) -> None:
    """The message properties struct, set, partly set and absent, across two row groups."""
    width = len(PROPERTIES)
    full = tuple(f"v{i}" if column.type == "string" else i for i, column in enumerate(PROPERTIES))
    partial = ("text/plain",) + (None,) * (width - 1)
    given = [full, None, partial, (None,) * width, None]
    writers = TableWriters(str(tmp_path), "00000")
    for index, properties in enumerate(given):
        writers.add("messages", _message_row(index, properties))
        if index == 1:
            writers._write("messages")  # a row group of its own
    writers.close()
    table = pq.read_table(tmp_path / "messages" / "part-00000.parquet")
    names = column_names(PROPERTIES)
    expected = [None if p is None else dict(zip(names, p, strict=True)) for p in given]
    assert table.column("properties").to_pylist() == expected
    assert table.column("offset").to_pylist() == list(range(len(given)))


def test_a_row_group_with_no_absent_struct(tmp_path: Path) -> None:
    writers = TableWriters(str(tmp_path), "00001")
    properties = ("a",) + (None,) * (len(PROPERTIES) - 1)
    writers.add("messages", _message_row(0, properties))
    writers.close()
    table = pq.read_table(tmp_path / "messages" / "part-00001.parquet")
    assert table.column("properties").to_pylist()[0]["content_type"] == "a"
    assert table.column("properties").null_count == 0


def test_text_columns_read_back_whether_one_text_all_along_or_not(tmp_path: Path) -> None:
    """A text column that holds one value in every row of a row group reads back as written,
    and so do the columns beside it that change, hold absent values or start with one."""
    names = column_names(TABLES["frames"])
    given = []
    for index in range(6):
        row: dict[str, object] = dict.fromkeys(names)
        row.update(
            capture="one.pcap",  # the same text all along
            connection="c" if index else "d",  # changes after the first row
            direction="client",
            frame_type="body",
            method=None if index % 2 else "basic.publish",  # every other row absent
            problem=None if index < 5 else "late",  # absent but for the last row
            offset=index,
        )
        given.append(tuple(row[name] for name in names))
    writers = TableWriters(str(tmp_path), "00000")
    writers.add_rows("frames", given[:4])
    writers._write("frames")  # a row group of its own
    writers.add_rows("frames", given[4:])
    writers.close()
    table = pq.read_table(tmp_path / "frames" / "part-00000.parquet")
    assert [tuple(row.values()) for row in table.to_pylist()] == given
    assert table.schema.field("capture").type == "string"
