"""docs/tables.md: generated from the tables' schema, and current."""

from __future__ import annotations

from amqp_codec.analyze.tables import TABLES, markdown, spark_schema
from codegen.__main__ import TABLES_DOC


def test_tables_doc_matches_the_schema() -> None:
    assert TABLES_DOC.read_text(encoding="utf-8") == markdown(), "stale: run `python -m codegen`"


def test_every_column_is_described_and_in_the_doc() -> None:
    text = markdown()
    for name, columns in TABLES.items():
        assert f"## `{name}`" in text
        for column in columns:
            assert column.description.strip(), (name, column.name)
            assert f"| `{column.name}` | " in text
            if not isinstance(column.type, str):
                for sub in column.type:
                    assert sub.description.strip()
                    assert f"| `{column.name}.{sub.name}` | {sub.type} | " in text


def test_spark_schema_keeps_the_column_order() -> None:
    for columns in TABLES.values():
        schema = spark_schema(columns)
        assert [f.name for f in schema.fields] == [c.name for c in columns]
