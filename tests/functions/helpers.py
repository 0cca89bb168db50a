"""Shared helpers: parse Flink SQL text, resolve columns against a small fixed input row."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from planengine.errors import ValidationError
from planengine.ir.expressions import Expr, InputRef
from planengine.ir.types import parse_type
from planengine.planner.rex_converter import convert_expression
from planengine.sql import parse_expression

# The input row every converter and evaluation test reads from: name -> Flink type.
COLUMNS: dict[str, str] = {
    "s": "STRING",
    "s2": "STRING",
    "i": "INT",
    "i2": "INT",
    "b": "BIGINT",
    "n": "BIGINT NOT NULL",
    "d": "DOUBLE",
    "m": "DECIMAL(10, 2)",
    "ts": "TIMESTAMP(3)",
    "lts": "TIMESTAMP_LTZ(3)",
    "dt": "DATE",
    "j": "STRING",
    "arr": "ARRAY<INT>",
    "mp": "MAP<STRING, INT>",
    "flag": "BOOLEAN",
    "r": "ROW<`x` INT, `y` STRING>",
    "rt": "TIMESTAMP(3) *ROWTIME*",
}


class RowScope:
    """A scope over ``COLUMNS``; unknown columns fail like the planner's scope does."""

    def __init__(self, columns: dict[str, str] | None = None):
        self.columns = {k: parse_type(v) for k, v in (columns or COLUMNS).items()}
        self.names = list(self.columns)

    def resolve_column(self, column: exp.Column) -> Expr:
        if column.table and column.table in self.columns:  # r.x: a field of a ROW column
            raise ValidationError("nested access is not supported by the test scope")
        if column.name not in self.columns:
            raise ValidationError(f"column {column.name!r} not found", hint=f"known: {', '.join(self.names)}")
        return InputRef(self.names.index(column.name), self.columns[column.name])

    def convert_special(self, node: exp.Expression, convert: Callable[[exp.Expression], Expr]) -> Expr | None:
        return None


def parse(text: str) -> exp.Expression:
    return parse_expression(text)


def convert(text: str) -> Expr:
    return convert_expression(parse(text), RowScope())
