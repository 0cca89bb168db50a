"""``ALTER TABLE t SET|RESET|ADD|MODIFY|DROP|RENAME col`` as a pure function: old table + statement → new table.

The new schema goes through the same validation as ``CREATE TABLE`` (``table_from_statement``): the table is
turned back into its column list, the change is applied there, and the result is resolved again, so a
computed column or watermark that no longer type-checks fails here, with the statement's location, and
the catalog keeps the old definition. Like Flink, a column that a computed column, the watermark, the
primary key or the partitioning refers to cannot be dropped or renamed.

``RENAME TO`` changes the identifier, not the table: the catalog manager does it.
"""

from __future__ import annotations

import difflib
from dataclasses import replace

from sqlglot import exp

from planengine.catalog.objects import CatalogTable
from planengine.errors import ValidationError
from planengine.functions.registry import FunctionRegistry
from planengine.planner.ddl import table_from_statement
from planengine.sql import parse_expression
from planengine.sql import statements as S


def altered_table(table: CatalogTable, stmt: S.AlterTable, registry: FunctionRegistry) -> CatalogTable:
    if stmt.action == "SET":
        return table.with_options({**table.options_dict, **dict(stmt.options)})
    if stmt.action == "RESET":
        return table.with_options(_reset(table.options_dict, stmt.keys))
    columns, watermark, key = _definition(table)
    partitions = list(table.partition_keys)
    if stmt.action == "ADD":
        columns, watermark, key = _add(columns, watermark, key, stmt)
    elif stmt.action == "MODIFY":
        columns, watermark, key = _modify(columns, watermark, key, stmt)
    elif stmt.action == "DROP":
        columns, watermark, key = _drop(columns, watermark, key, partitions, stmt)
    elif stmt.action == "RENAME COLUMN":
        columns, key, partitions = _rename(columns, watermark, key, partitions, stmt)
    else:
        raise ValueError(f"unexpected ALTER TABLE action {stmt.action}")
    create = S.CreateTable(index=stmt.index, location=stmt.location, text=stmt.text, name=stmt.name,
                           columns=tuple(columns), watermark=watermark, primary_key=key,
                           partitioned_by=tuple(partitions), options=table.options)
    resolved = table_from_statement(create, registry)
    return CatalogTable(resolved.schema, table.options, tuple(partitions), table.comment)


def _definition(table: CatalogTable) -> tuple[list[S.ColumnDef], S.WatermarkDef | None, tuple[str, ...] | None]:
    """The table as the column list of a CREATE TABLE statement."""
    columns = []
    for column in table.schema.columns:
        if column.kind == "computed":
            assert column.expression is not None
            columns.append(S.ColumnDef(column.name, None, parse_expression(column.expression), comment=column.comment))
        else:
            columns.append(S.ColumnDef(column.name, str(column.type.without_time_attribute()),
                                       metadata_key=column.metadata_key, is_metadata=column.kind == "metadata",
                                       virtual=column.virtual, comment=column.comment))
    watermark = None
    if table.schema.watermark_specs:
        spec = table.schema.watermark_specs[0]
        watermark = S.WatermarkDef(spec.rowtime_attribute, parse_expression(spec.expression))
    key = table.schema.primary_key.columns if table.schema.primary_key is not None else None
    return columns, watermark, key


def _reset(options: dict[str, str], keys: tuple[str, ...]) -> dict[str, str]:
    out = dict(options)
    for key in keys:
        if key == "connector":
            raise ValidationError("ALTER TABLE ... RESET cannot remove 'connector'",
                                  hint="change it with ALTER TABLE ... SET ('connector' = '...')")
        if key not in out:
            guess = difflib.get_close_matches(key, list(out), n=1)
            raise ValidationError(f"option '{key}' is not set on the table" +
                                  (f"; did you mean '{guess[0]}'?" if guess else ""),
                                  hint=f"its options: {', '.join(sorted(out))}")
        del out[key]
    return out


def _names(columns: list[S.ColumnDef]) -> list[str]:
    return [c.name for c in columns]


def _missing(name: str, columns: list[S.ColumnDef]) -> ValidationError:
    guess = difflib.get_close_matches(name, _names(columns), n=1)
    return ValidationError(f"column '{name}' does not exist" + (f"; did you mean '{guess[0]}'?" if guess else ""),
                           hint=f"columns: {', '.join(_names(columns))}")


def _place(columns: list[S.ColumnDef], column: S.ColumnDef) -> list[S.ColumnDef]:
    """Insert ``column`` where its position says (FIRST, AFTER c), else at the end."""
    placed = replace(column, position=None)
    if column.position is None:
        return [*columns, placed]
    where, after = column.position
    if where == "FIRST":
        return [placed, *columns]
    if after not in _names(columns):
        raise _missing(str(after), columns)
    index = _names(columns).index(str(after)) + 1
    return [*columns[:index], placed, *columns[index:]]


def _add(columns, watermark, key, stmt: S.AlterTable):  # type: ignore[no-untyped-def]
    for column in stmt.columns:
        if column.name in _names(columns):
            raise ValidationError(f"column '{column.name}' already exists",
                                  hint=f"change it with ALTER TABLE {'.'.join(stmt.name)} MODIFY {column.name} ...")
        columns = _place(columns, column)
    if stmt.watermark is not None:
        if watermark is not None:
            raise ValidationError("the table already defines a watermark",
                                  hint=f"change it with ALTER TABLE {'.'.join(stmt.name)} MODIFY WATERMARK FOR ...")
        watermark = stmt.watermark
    if stmt.primary_key is not None:
        if key is not None:
            raise ValidationError(f"the table already has a primary key ({', '.join(key)})",
                                  hint=f"change it with ALTER TABLE {'.'.join(stmt.name)} MODIFY PRIMARY KEY ...")
        key = stmt.primary_key
    return columns, watermark, key


def _modify(columns, watermark, key, stmt: S.AlterTable):  # type: ignore[no-untyped-def]
    for column in stmt.columns:
        if column.name not in _names(columns):
            raise _missing(column.name, columns)
        index = _names(columns).index(column.name)
        if column.position is None:
            columns = [*columns[:index], column, *columns[index + 1:]]
        else:
            columns = _place([c for c in columns if c.name != column.name], column)
    if stmt.watermark is not None:
        if watermark is None:
            raise ValidationError("the table has no watermark to modify",
                                  hint=f"add one with ALTER TABLE {'.'.join(stmt.name)} ADD WATERMARK FOR ...")
        watermark = stmt.watermark
    if stmt.primary_key is not None:
        if key is None:
            raise ValidationError("the table has no primary key to modify",
                                  hint=f"add one with ALTER TABLE {'.'.join(stmt.name)} ADD PRIMARY KEY (...) NOT "
                                       "ENFORCED")
        key = stmt.primary_key
    return columns, watermark, key


def _references(columns: list[S.ColumnDef], watermark: S.WatermarkDef | None) -> dict[str, str]:
    """Column name → what refers to it (a computed column or the watermark)."""
    found: dict[str, str] = {}
    for column in columns:
        if column.expression is not None:
            for ref in column.expression.find_all(exp.Column):
                found.setdefault(ref.name, f"computed column '{column.name}'")
    if watermark is not None:
        found.setdefault(watermark.column, "the watermark")
        for ref in watermark.expression.find_all(exp.Column):
            found.setdefault(ref.name, "the watermark")
    return found


def _check_unreferenced(name: str, columns, watermark, key, partitions, what: str) -> None:  # type: ignore[no-untyped-def]
    refs = _references([c for c in columns if c.name != name], watermark)
    if name in refs:
        raise ValidationError(f"cannot {what} column '{name}': {refs[name]} refers to it",
                              hint="change or drop what refers to it first")
    if key is not None and name in key and what == "drop":
        raise ValidationError(f"cannot drop column '{name}': it is part of the primary key",
                              hint="drop the primary key first (ALTER TABLE ... DROP PRIMARY KEY)")
    if name in partitions and what == "drop":
        raise ValidationError(f"cannot drop column '{name}': the table is partitioned by it")


def _drop(columns, watermark, key, partitions, stmt: S.AlterTable):  # type: ignore[no-untyped-def]
    if stmt.drop_primary_key:
        if key is None:
            raise ValidationError("the table has no primary key to drop")
        return columns, watermark, None
    if stmt.drop_watermark:
        if watermark is None:
            raise ValidationError("the table has no watermark to drop")
        return columns, None, key
    for name in stmt.keys:
        if name not in _names(columns):
            raise _missing(name, columns)
        _check_unreferenced(name, columns, watermark, key, partitions, "drop")
        columns = [c for c in columns if c.name != name]
    if not columns:
        raise ValidationError("cannot drop every column of a table", hint="DROP TABLE it instead")
    return columns, watermark, key


def _rename(columns, watermark, key, partitions, stmt: S.AlterTable):  # type: ignore[no-untyped-def]
    old, new = str(stmt.column), str(stmt.new_column)
    if old not in _names(columns):
        raise _missing(old, columns)
    if new in _names(columns):
        raise ValidationError(f"cannot rename column '{old}' to '{new}': a column '{new}' exists")
    _check_unreferenced(old, columns, watermark, key, partitions, "rename")
    columns = [replace(c, name=new) if c.name == old else c for c in columns]
    key = tuple(new if k == old else k for k in key) if key is not None else None
    return columns, key, [new if p == old else p for p in partitions]
