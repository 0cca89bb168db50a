"""What ``DESCRIBE t``, ``SHOW COLUMNS FROM t`` and ``SHOW CREATE TABLE|VIEW t`` print, in Flink's shapes.

``describe_rows`` gives DESCRIBE's six columns (name, type, null, key, extras, watermark; empty when not
applicable); ``create_statement`` gives DDL that re-creates the object (secrets masked, ``${env:…}``
references kept), so the output of ``SHOW CREATE TABLE`` can be pasted into another script.

>>> from planengine.ir.schema import Column, PrimaryKey, ResolvedSchema, WatermarkSpec
>>> from planengine.ir.types import parse_type
>>> schema = ResolvedSchema(
...     (Column("id", parse_type("BIGINT NOT NULL")), Column("ts", parse_type("TIMESTAMP(3) *ROWTIME*")),
...      Column("d", parse_type("INT"), "computed", "id % 7")),
...     (WatermarkSpec("ts", "ts - INTERVAL '5' SECOND"),), PrimaryKey("PK_id", ("id",)))
>>> for row in describe_rows(schema): print(row)
('id', 'BIGINT', False, 'PRI(id)', '', '')
('ts', 'TIMESTAMP(3) *ROWTIME*', True, '', '', "ts - INTERVAL '5' SECOND")
('d', 'INT', True, '', 'AS id % 7', '')
"""

from __future__ import annotations

from typing import Any

from planengine.catalog.objects import CatalogTable, CatalogView, ObjectIdentifier
from planengine.catalog.secret_options import mask_options
from planengine.ir.schema import Column, ResolvedSchema
from planengine.ir.types import quote_identifier

DESCRIBE_COLUMNS = ("name", "type", "null", "key", "extras", "watermark")


def describe_rows(schema: ResolvedSchema) -> list[tuple[Any, ...]]:
    key = schema.primary_key
    watermarks = {w.rowtime_attribute: w.expression for w in schema.watermark_specs}
    rows = []
    for column in schema.columns:
        in_key = key is not None and column.name in key.columns
        rows.append((
            column.name,
            str(column.type.with_nullable(True)),
            column.type.nullable,
            f"PRI({', '.join(key.columns)})" if in_key and key is not None else "",
            _extras(column) or "",
            watermarks.get(column.name, ""),
        ))
    return rows


def _extras(column: Column) -> str | None:
    if column.kind == "computed":
        return f"AS {column.expression}"
    if column.kind == "metadata":
        text = "METADATA"
        if column.metadata_key is not None:
            text += f" FROM '{_escape(column.metadata_key)}'"
        return text + (" VIRTUAL" if column.virtual else "")
    return None


def _escape(text: str) -> str:
    return text.replace("'", "''")


def _column_ddl(column: Column) -> str:
    name = quote_identifier(column.name)
    if column.kind == "computed":
        text = f"{name} AS {column.expression}"
    else:
        text = f"{name} {column.type.without_time_attribute()}"
        if column.kind == "metadata":
            text += " " + (_extras(column) or "")
    if column.comment:
        text += f" COMMENT '{_escape(column.comment)}'"
    return text


def create_statement(identifier: ObjectIdentifier, obj: CatalogTable | CatalogView, temporary: bool) -> str:
    """``CREATE [TEMPORARY] TABLE|VIEW`` text that re-creates ``obj`` under ``identifier``."""
    temporary_word = "TEMPORARY " if temporary else ""
    if isinstance(obj, CatalogView):
        columns = ",\n".join(f"  {quote_identifier(c.name)}" for c in obj.schema.columns)
        comment = f"COMMENT '{_escape(obj.comment)}'\n" if obj.comment else ""
        return f"CREATE {temporary_word}VIEW {identifier} (\n{columns}\n)\n{comment}AS {obj.query}"
    schema = obj.schema
    parts = [_column_ddl(c) for c in schema.columns]
    parts += [f"WATERMARK FOR {quote_identifier(w.rowtime_attribute)} AS {w.expression}"
              for w in schema.watermark_specs]
    if schema.primary_key is not None:
        columns = ", ".join(quote_identifier(c) for c in schema.primary_key.columns)
        parts.append(f"CONSTRAINT {quote_identifier(schema.primary_key.name)} PRIMARY KEY ({columns}) NOT ENFORCED")
    text = f"CREATE {temporary_word}TABLE {identifier} (\n" + ",\n".join(f"  {p}" for p in parts) + "\n)"
    if obj.comment:
        text += f"\nCOMMENT '{_escape(obj.comment)}'"
    if obj.partition_keys:
        text += f"\nPARTITIONED BY ({', '.join(quote_identifier(k) for k in obj.partition_keys)})"
    options = mask_options(obj.options_dict)
    if options:
        text += "\nWITH (\n" + ",\n".join(f"  '{_escape(k)}' = '{_escape(v)}'" for k, v in options.items()) + "\n)"
    return text
