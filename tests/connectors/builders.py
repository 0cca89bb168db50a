"""Builders for connector tests: catalog tables, factory contexts and expressions, built directly."""

from __future__ import annotations

from planengine.catalog.objects import CatalogTable, ObjectIdentifier
from planengine.connectors.factories import FactoryContext
from planengine.ir import types as T
from planengine.ir.expressions import Call, Expr, FunctionRef, InputRef, Literal
from planengine.ir.schema import Column, PrimaryKey, ResolvedSchema

IDENTIFIER = ObjectIdentifier("cat", "db", "t")


def build_ctx(columns: list[tuple[str, str]] | None = None, options: dict[str, str] | None = None, *,
              primary_key: tuple[str, ...] | None = None, partition_keys: tuple[str, ...] = (),
              metadata: tuple[tuple[str, str, str | None], ...] = ()) -> FactoryContext:
    cols = [Column(name, T.parse_type(t)) for name, t in (columns or [("id", "BIGINT"), ("name", "STRING")])]
    cols += [Column(name, T.parse_type(t), kind="metadata", metadata_key=key) for name, t, key in metadata]
    pk = PrimaryKey("pk", primary_key) if primary_key else None
    if pk:
        cols = [Column(c.name, c.type.with_nullable(False)) if c.name in primary_key else c for c in cols]
    schema = ResolvedSchema(tuple(cols), primary_key=pk)
    table = CatalogTable(schema, tuple(sorted((options or {}).items())), partition_keys)
    return FactoryContext(IDENTIFIER, table, {}, False)


def ref(i: int, t: T.DataType = T.INT) -> InputRef:
    return InputRef(i, t)


def lit(value: object, t: T.DataType = T.INT) -> Literal:
    return Literal(value, t)


def call(name: str, *operands: Expr) -> Call:
    return Call(FunctionRef(name), tuple(operands), T.BOOLEAN)
