"""Plan expressions rendered as Spark SQL text.

Stateless exec nodes hand their expressions to ``render_spark_sql`` and use the text in
``selectExpr``/``filter``. Each built-in renders itself (``BuiltinFunction.render_spark``) into a
Spark-dialect sqlglot tree; this module only renders the leaves (input references by column name,
literals with their exact Spark type) and walks the tree, then lets sqlglot print it.

>>> from planengine.ir import types as T
>>> from planengine.ir.expressions import Call, FunctionRef, InputRef, Literal
>>> e = Call(FunctionRef("/", 1), (InputRef(0, T.INT), Literal(2, T.INT.with_nullable(False))), T.INT)
>>> render_spark_sql(e, ["qty"])
'CAST(`qty` DIV 2 AS INT)'
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from typing import Any

from sqlglot import exp

from planengine.errors import ValidationError
from planengine.functions.defaults import default_registry
from planengine.functions.registry import NO_LITERAL, FunctionRegistry, RenderContext
from planengine.functions.spark_types import render_spark_type, spark_data_type
from planengine.ir.expressions import Call, CorrelatedRef, Expr, FieldAccess, InputRef, Literal
from planengine.ir.types import DataType, Kind

__all__ = ["render_spark_expression", "render_spark_sql", "render_spark_type"]


def render_spark_sql(expr: Expr, input_columns: Sequence[str], registry: FunctionRegistry | None = None) -> str:
    """Spark SQL text for ``expr`` over a DataFrame whose columns are ``input_columns`` (by position)."""
    return render_spark_expression(expr, input_columns, registry).sql(dialect="spark")


def render_spark_expression(expr: Expr, input_columns: Sequence[str],
                            registry: FunctionRegistry | None = None) -> exp.Expression:
    """The Spark-dialect sqlglot tree for ``expr`` (for callers that combine expressions further)."""
    return _Renderer(list(input_columns), registry or default_registry()).render(expr)


class _Renderer:
    def __init__(self, columns: list[str], registry: FunctionRegistry):
        self.columns = columns
        self.registry = registry

    def render(self, expr: Expr) -> exp.Expression:
        if isinstance(expr, InputRef):
            if not 0 <= expr.index < len(self.columns):
                raise ValidationError(f"input reference ${expr.index} is outside the input's "
                                      f"{len(self.columns)} columns")
            return exp.column(self.columns[expr.index], quoted=True)
        if isinstance(expr, Literal):
            return render_literal(expr.value, expr.type)
        if isinstance(expr, FieldAccess):
            return exp.Dot(this=self.render(expr.expr), expression=exp.to_identifier(expr.name, quoted=True))
        if isinstance(expr, Call):
            return self._call(expr)
        if isinstance(expr, CorrelatedRef):
            raise ValidationError("a correlated reference can only be rendered by the UNNEST translation")
        raise ValidationError(f"cannot render expression {expr!r} for Spark")

    def _call(self, call: Call) -> exp.Expression:
        operands = tuple(self.render(o) for o in call.operands)
        ref = call.function
        if not ref.is_builtin:
            # Catalog and temporary Python functions are registered with Spark under their simple name.
            return exp.Anonymous(this=ref.name, expressions=list(operands))
        fn = self.registry.get(ref.name, ref.version or 1)
        if fn.render_spark is None:
            raise ValidationError(
                f"{fn.name} is a {fn.kind.value.lower()} function and cannot appear in a row expression",
                hint="aggregate and window functions are evaluated by their operators")
        literals = tuple(o.value if isinstance(o, Literal) else NO_LITERAL for o in call.operands)
        ctx = RenderContext(operands=operands, operand_types=tuple(o.type for o in call.operands),
                            result_type=call.type, literals=literals)
        return fn.render_spark(ctx)


def render_literal(value: Any, t: DataType) -> exp.Expression:
    """A Spark literal of exactly the Spark type of ``t`` (so ``1.50`` stays DECIMAL(3, 2))."""
    k = t.kind
    if value is None:
        return exp.Null() if k is Kind.NULL else exp.Cast(this=exp.Null(), to=spark_data_type(t))
    if k is Kind.BOOLEAN:
        return exp.Boolean(this=bool(value))
    if k is Kind.INT:
        return exp.Literal.number(int(value))
    if k in (Kind.TINYINT, Kind.SMALLINT, Kind.BIGINT):
        return exp.Cast(this=exp.Literal.number(int(value)), to=spark_data_type(t))
    if k is Kind.DECIMAL:
        scale = t.scale or 0
        text = str(decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-scale)))
        return exp.Cast(this=exp.Literal.string(text), to=spark_data_type(t))
    if k in (Kind.FLOAT, Kind.DOUBLE):
        return exp.Cast(this=exp.Literal.string(repr(float(value))), to=spark_data_type(t))
    if k in (Kind.CHAR, Kind.VARCHAR):
        return exp.Literal.string(str(value))
    if k in (Kind.BINARY, Kind.VARBINARY):
        return exp.Anonymous(this="unhex", expressions=[exp.Literal.string(bytes(value).hex())])
    if k is Kind.DATE:
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=spark_data_type(t))
    if k is Kind.TIME:
        return exp.Var(this=f"TIME'{value.isoformat()}'")
    if k in (Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ):
        text = value.isoformat(sep=" ") if isinstance(value, dt.datetime) else str(value)
        return exp.Cast(this=exp.Literal.string(text), to=spark_data_type(t))
    if k is Kind.INTERVAL_DAY_TIME:
        millis = int(value / dt.timedelta(milliseconds=1)) if isinstance(value, dt.timedelta) else int(value)
        seconds = decimal.Decimal(millis).scaleb(-3)
        return exp.Interval(this=exp.Literal.string(f"{seconds:.3f}"), unit=exp.Var(this="SECOND"))
    if k is Kind.INTERVAL_YEAR_MONTH:
        return exp.Interval(this=exp.Literal.string(str(int(value))), unit=exp.Var(this="MONTH"))
    if k is Kind.ARRAY and t.element is not None:
        return exp.Anonymous(this="array", expressions=[render_literal(v, t.element) for v in value])
    if k is Kind.NULL:
        return exp.Null()
    raise ValidationError(f"cannot render a literal of type {t} ({render_spark_type(t) if k else ''})")
