"""PostgreSQL SQL text for the jdbc connector: pushed-down filters, scans, lookups, upserts.

Rendered here, on the planner side, so the rules for which predicates PostgreSQL evaluates and how they
are written live next to the code that accepts them; the runtime only executes the statements. Values are
always parameters (``%s``, psycopg style), never inlined, so literals cannot inject SQL; identifiers are
double-quoted with ``"`` doubled and ``%`` escaped for psycopg.

>>> from planengine.ir import types as T
>>> from planengine.ir.expressions import Call, FunctionRef, InputRef, Literal
>>> gt = Call(FunctionRef(">"), (InputRef(0, T.INT), Literal(5, T.INT)), T.BOOLEAN)
>>> isnull = Call(FunctionRef("IS NULL"), (InputRef(1, T.STRING),), T.BOOLEAN)
>>> render_postgres_where([gt, isnull], ["a", "b"])
('"a" > %s AND "b" IS NULL', [5])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.ir.expressions import Call, Expr, InputRef, Literal
from planengine.ir.types import Kind

COMPARISONS = {"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
NULL_TESTS = {"IS NULL": "IS NULL", "IS NOT NULL": "IS NOT NULL"}
LOGICAL = ("AND", "OR")
_NOT_BINDABLE = (Kind.INTERVAL_DAY_TIME, Kind.INTERVAL_YEAR_MONTH, Kind.ROW, Kind.MAP, Kind.MULTISET, Kind.ARRAY,
                 Kind.DESCRIPTOR)


def quote_identifier(name: str) -> str:
    """``a"b%`` → ``"a""b%%"`` (``%`` doubled because psycopg treats it as a placeholder)."""
    return '"' + name.replace('"', '""').replace("%", "%%") + '"'


def quote_table_name(table_name: str) -> str:
    """``public.orders`` → ``"public"."orders"`` (a dot separates schema and table, as in Flink's jdbc)."""
    return ".".join(quote_identifier(part) for part in table_name.split("."))


def _name(expr: Expr) -> str:
    return expr.name.upper() if isinstance(expr, Call) else ""


def _is_column(expr: Expr) -> bool:
    return isinstance(expr, InputRef) and expr.type.kind not in _NOT_BINDABLE


def _is_operand(expr: Expr) -> bool:
    return _is_column(expr) or (isinstance(expr, Literal) and expr.type.kind not in _NOT_BINDABLE)


def is_pushable(expr: Expr) -> bool:
    """Comparisons of columns and literals, ``IS [NOT] NULL`` on columns, and AND/OR/NOT of those."""
    if not isinstance(expr, Call) or not expr.function.is_builtin:
        return False
    name = _name(expr)
    ops = expr.operands
    if name in COMPARISONS:
        return len(ops) == 2 and all(_is_operand(o) for o in ops) and any(_is_column(o) for o in ops)
    if name in NULL_TESTS:
        return len(ops) == 1 and _is_column(ops[0])
    if name in LOGICAL:
        return len(ops) >= 2 and all(is_pushable(o) for o in ops)
    if name == "NOT":
        return len(ops) == 1 and is_pushable(ops[0])
    return False


def _render(expr: Expr, columns: Sequence[str], params: list[Any], nested: bool) -> str:
    if isinstance(expr, InputRef):
        return quote_identifier(columns[expr.index])
    if isinstance(expr, Literal):
        params.append(expr.value)
        return "%s"
    if not isinstance(expr, Call) or not is_pushable(expr):
        raise ValidationError(f"filter {expr} cannot be rendered for PostgreSQL")
    name = _name(expr)
    if name in COMPARISONS:
        left = _render(expr.operands[0], columns, params, True)
        right = _render(expr.operands[1], columns, params, True)
        return f"{left} {COMPARISONS[name]} {right}"
    if name in NULL_TESTS:
        return f"{_render(expr.operands[0], columns, params, True)} {NULL_TESTS[name]}"
    if name == "NOT":
        return f"NOT ({_render(expr.operands[0], columns, params, False)})"
    text = f" {name} ".join(_render(o, columns, params, True) for o in expr.operands)
    return f"({text})" if nested else text


def render_postgres_where(filters: Sequence[Expr], column_names: Sequence[str]) -> tuple[str, list[Any]]:
    """The conjunction of ``filters`` as parameterised SQL; ``InputRef(i)`` is ``column_names[i]``.

    Returns ``("", [])`` for no filters. OR groups are parenthesised so the top-level AND binds correctly.
    """
    params: list[Any] = []
    parts = [_render(f, column_names, params, nested=len(filters) > 1) for f in filters]
    return " AND ".join(parts), params


def render_postgres_select(table_name: str, columns: Sequence[str], where: str = "",
                           limit: int | None = None) -> str:
    sql = f"SELECT {', '.join(quote_identifier(c) for c in columns)} FROM {quote_table_name(table_name)}"
    if where:
        sql += f" WHERE {where}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return sql


def render_postgres_lookup(table_name: str, columns: Sequence[str], key_columns: Sequence[str]) -> str:
    where = " AND ".join(f"{quote_identifier(k)} = %s" for k in key_columns)
    return render_postgres_select(table_name, columns, where)


def render_postgres_upsert(table_name: str, columns: Sequence[str], key_columns: Sequence[str]) -> str:
    """``INSERT … ON CONFLICT (key) DO UPDATE``; the key needs a unique index or primary key in PostgreSQL."""
    insert = render_postgres_insert(table_name, columns)
    conflict = ", ".join(quote_identifier(k) for k in key_columns)
    updates = [c for c in columns if c not in key_columns]
    if not updates:
        return f"{insert} ON CONFLICT ({conflict}) DO NOTHING"
    assignments = ", ".join(f"{quote_identifier(c)} = EXCLUDED.{quote_identifier(c)}" for c in updates)
    return f"{insert} ON CONFLICT ({conflict}) DO UPDATE SET {assignments}"


def render_postgres_insert(table_name: str, columns: Sequence[str]) -> str:
    names = ", ".join(quote_identifier(c) for c in columns)
    values = ", ".join("%s" for _ in columns)
    return f"INSERT INTO {quote_table_name(table_name)} ({names}) VALUES ({values})"


def render_postgres_delete(table_name: str, key_columns: Sequence[str]) -> str:
    where = " AND ".join(f"{quote_identifier(k)} = %s" for k in key_columns)
    return f"DELETE FROM {quote_table_name(table_name)} WHERE {where}"


def postgres_conninfo(url: str) -> str:
    """``jdbc:postgresql://h:5432/db?sslmode=require`` → the libpq URI psycopg connects with."""
    if not url.startswith("jdbc:postgresql://"):
        raise ValidationError(f"not a PostgreSQL JDBC URL: {url!r}", hint="use jdbc:postgresql://host:port/database")
    return "postgresql:" + url[len("jdbc:postgresql:"):]
