"""CREATE TABLE / VIEW statements → resolved catalog objects.

Computed columns and the watermark are validated here, against the physical and metadata columns, so a
typo in DDL fails at CREATE time with its location, not later inside some query that uses the table.
"""

from __future__ import annotations

from sqlglot import exp

from planengine.catalog.objects import CatalogTable, CatalogView
from planengine.errors import ValidationError
from planengine.functions.registry import FunctionRegistry
from planengine.ir.expressions import InputRef
from planengine.ir.schema import Column, PrimaryKey, ResolvedSchema, WatermarkSpec
from planengine.ir.types import Kind, RowField, TimeAttribute, parse_type
from planengine.planner.rex_converter import convert_expression
from planengine.sql import statements as S


class _ColumnScope:
    def __init__(self, columns: list[Column], location):  # type: ignore[no-untyped-def]
        self.columns = columns
        self.location = location

    def resolve_column(self, column: exp.Column):  # type: ignore[no-untyped-def]
        for i, c in enumerate(self.columns):
            if c.name == column.name:
                return InputRef(i, c.type)
        names = ", ".join(c.name for c in self.columns)
        raise ValidationError(f"column '{column.name}' not found in the table", location=self.location,
                              hint=f"a computed column or watermark may use the columns declared before it: {names}")

    def convert_special(self, node, convert):  # type: ignore[no-untyped-def]
        return None


def _sql(node: exp.Expression) -> str:
    return node.sql(dialect="flink")


def table_from_statement(stmt: S.CreateTable, registry: FunctionRegistry) -> CatalogTable:
    loc = stmt.location
    columns: list[Column] = []
    names = [c.name for c in stmt.columns]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValidationError(f"column '{sorted(duplicates)[0]}' is declared twice", location=loc)
    pk_columns = set(stmt.primary_key or ())
    for col in stmt.columns:
        if col.expression is not None:
            scope = _ColumnScope([c for c in columns if c.kind != "computed"], loc)
            expr = convert_expression(col.expression, scope, registry)
            columns.append(Column(col.name, expr.type, "computed", _sql(col.expression), comment=col.comment))
            continue
        assert col.type_text is not None
        t = parse_type(col.type_text)
        if col.name in pk_columns:
            t = t.with_nullable(False)
        if col.is_metadata:
            columns.append(Column(col.name, t, "metadata", metadata_key=col.metadata_key, virtual=col.virtual,
                                  comment=col.comment))
        else:
            columns.append(Column(col.name, t, "physical", comment=col.comment))
    watermarks: tuple[WatermarkSpec, ...] = ()
    if stmt.watermark is not None:
        wm = stmt.watermark
        if wm.column not in names:
            raise ValidationError(f"WATERMARK FOR '{wm.column}': no such column", location=loc,
                                  hint=f"columns: {', '.join(names)}")
        idx = names.index(wm.column)
        rowtime = columns[idx]
        if rowtime.type.kind not in (Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ) or (rowtime.type.precision or 0) > 3:
            raise ValidationError(
                f"the rowtime column '{wm.column}' must be TIMESTAMP(3) or TIMESTAMP_LTZ(3), but is {rowtime.type}",
                location=loc, hint=f"declare it as TIMESTAMP(3), or add a computed column such as "
                                   f"`ts AS CAST({wm.column} AS TIMESTAMP(3))`")
        scope = _ColumnScope(columns, loc)
        wm_expr = convert_expression(wm.expression, scope, registry)
        if wm_expr.type.kind not in (Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ):
            raise ValidationError(
                f"the watermark expression must return a timestamp, not {wm_expr.type}", location=loc,
                hint=f"e.g. WATERMARK FOR {wm.column} AS {wm.column} - INTERVAL '5' SECOND")
        columns[idx] = Column(rowtime.name, rowtime.type.with_time_attribute(TimeAttribute.ROWTIME), rowtime.kind,
                              rowtime.expression, rowtime.metadata_key, rowtime.virtual, rowtime.comment)
        watermarks = (WatermarkSpec(wm.column, _sql(wm.expression)),)
    primary_key = None
    if stmt.primary_key:
        for c in stmt.primary_key:
            if c not in names:
                raise ValidationError(f"PRIMARY KEY column '{c}' does not exist", location=loc,
                                      hint=f"columns: {', '.join(names)}")
            if columns[names.index(c)].kind == "computed":
                raise ValidationError(f"PRIMARY KEY column '{c}' is a computed column", location=loc,
                                      hint="a primary key must consist of physical columns")
        table_name = stmt.name[-1]
        primary_key = PrimaryKey(f"PK_{table_name}", tuple(stmt.primary_key))
    for p in stmt.partitioned_by:
        if p not in names:
            raise ValidationError(f"PARTITIONED BY column '{p}' does not exist", location=loc)
    options = dict(stmt.options)
    return CatalogTable(ResolvedSchema(tuple(columns), watermarks, primary_key), tuple(sorted(options.items())),
                        tuple(stmt.partitioned_by), stmt.comment)


def view_from_query(query: exp.Expression, row_type_fields: list[RowField], column_names: tuple[str, ...]
                    ) -> CatalogView:
    if column_names and len(column_names) != len(row_type_fields):
        raise ValidationError(f"the view lists {len(column_names)} column names but its query has "
                              f"{len(row_type_fields)} columns")
    columns = tuple(Column(column_names[i] if column_names else f.name, f.type) for i, f in enumerate(row_type_fields))
    text = query.sql(dialect="flink")
    if column_names:
        inner = ", ".join(f"`{f.name}` AS `{n}`" for f, n in zip(row_type_fields, column_names))
        text = f"SELECT {inner} FROM ({text})"
    return CatalogView(text, ResolvedSchema(columns))
