"""Arithmetic operators ``+ - * / %``, ``MOD`` and unary ``NEGATE``, including temporal ± interval.

Result types follow Flink (``LogicalTypeMerging``): exact integers keep the wider integer type (so
``7 / 2`` is ``3``), DECIMAL precision and scale follow the per-operator rules with Flink's (and
Spark's) "keep at least 6 fraction digits" adjustment above precision 38, and ``MOD`` takes the type of
its divisor. Spark differs in three places the renderers repair: integer ``/`` is fractional in Spark
(rendered with ``div``), approximate division by zero raises in ANSI Spark but gives ±Infinity/NaN in
Flink, and Spark widens ``BIGINT % INT`` to BIGINT where Flink answers INT.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from planengine.functions.builtins._support import (
    CallContext,
    FunctionRegistry,
    RenderContext,
    binary,
    case,
    cast,
    check_arity,
    is_null,
    nullable_if_args,
    number,
    paren,
    scalar,
    string,
)
from planengine.ir.types import (
    DATETIME,
    DOUBLE,
    FLOAT,
    INTEGRAL,
    DataType,
    Kind,
    decimal,
)

INTEGRAL_PRECISION = {Kind.TINYINT: 3, Kind.SMALLINT: 5, Kind.INT: 10, Kind.BIGINT: 19}
_INTEGRAL_RANK = {Kind.TINYINT: 1, Kind.SMALLINT: 2, Kind.INT: 3, Kind.BIGINT: 4}
MAX_PRECISION = 38
MINIMUM_ADJUSTED_SCALE = 6


def adjust_precision_scale(precision: int, scale: int) -> DataType:
    """Flink's ``LogicalTypeMerging.adjustPrecisionScale``: above 38 digits, give up fraction digits
    but keep at least 6 (or the original scale, if smaller)."""
    if precision <= MAX_PRECISION:
        return decimal(precision, scale)
    integer_digits = precision - scale
    min_scale = min(scale, MINIMUM_ADJUSTED_SCALE)
    return decimal(MAX_PRECISION, max(MAX_PRECISION - integer_digits, min_scale))


def as_decimal(t: DataType) -> tuple[int, int]:
    """Precision and scale of an exact numeric, integers as DECIMAL(n, 0)."""
    if t.kind is Kind.DECIMAL:
        return t.precision or 10, t.scale or 0
    return INTEGRAL_PRECISION[t.kind], 0


def _decimal_rule(op: str, a: DataType, b: DataType) -> DataType:
    p1, s1 = as_decimal(a)
    p2, s2 = as_decimal(b)
    if op in ("+", "-"):
        scale = max(s1, s2)
        return adjust_precision_scale(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "*":
        return adjust_precision_scale(p1 + p2 + 1, s1 + s2)
    if op == "/":
        scale = max(MINIMUM_ADJUSTED_SCALE, s1 + p2 + 1)
        return adjust_precision_scale(p1 - s1 + s2 + scale, scale)
    scale = max(s1, s2)  # MOD
    return adjust_precision_scale(min(p1 - s1, p2 - s2) + scale, scale)


def numeric_result(op: str, a: DataType, b: DataType) -> DataType:
    """The Flink result type of a binary numeric operator (nullability not applied)."""
    kinds = {a.kind, b.kind}
    if kinds & {Kind.FLOAT, Kind.DOUBLE}:
        if Kind.DOUBLE in kinds or Kind.DECIMAL in kinds:
            return DOUBLE
        return FLOAT
    if Kind.DECIMAL in kinds:
        return _decimal_rule(op, a, b)
    if op == "%":
        return DataType(b.kind)
    return DataType(max((a.kind, b.kind), key=lambda k: _INTEGRAL_RANK[k]))


def _concrete(t: DataType, other: DataType) -> DataType:
    """A NULL literal in arithmetic takes the other operand's type (Calcite does the same)."""
    if t.kind is Kind.NULL:
        return other if other.kind is not Kind.NULL else DataType(Kind.INT)
    return t


def _temporal_result(op: str, a: DataType, b: DataType, ctx: CallContext) -> DataType | None:
    interval = (Kind.INTERVAL_DAY_TIME, Kind.INTERVAL_YEAR_MONTH)
    if op == "+" and a.kind in interval and b.kind in DATETIME:
        return b.without_time_attribute()
    if op in ("+", "-") and a.kind in DATETIME and b.kind in interval:
        return a.without_time_attribute()
    if op in ("+", "-") and a.kind in interval and a.kind == b.kind:
        return a
    if op == "*" and a.kind in interval and b.kind in INTEGRAL:
        return a
    if op == "*" and b.kind in interval and a.kind in INTEGRAL:
        return b
    if a.kind in DATETIME or b.kind in DATETIME or a.kind in interval or b.kind in interval:
        hint = " (use TIMESTAMPDIFF to subtract timestamps)" if a.kind in DATETIME and b.kind in DATETIME else ""
        raise ctx.fail(f"cannot apply '{op}' to {a} and {b}{hint}")
    return None


def _infer(op: str) -> Callable[[CallContext], DataType]:
    def infer(ctx: CallContext) -> DataType:
        check_arity(ctx, 2)
        a0, b0 = ctx.operand_types
        a, b = _concrete(a0, b0), _concrete(b0, a0)
        temporal = _temporal_result(op, a, b, ctx)
        if temporal is not None:
            return nullable_if_args(temporal, ctx)
        if not (a.is_numeric and b.is_numeric):
            raise ctx.fail(f"cannot apply '{op}' to {a0} and {b0}; both operands must be numeric")
        return nullable_if_args(numeric_result(op, a, b), ctx)

    return infer


def _approximate_by_zero(ctx: RenderContext, fraction: exp.Expression, when_zero: exp.Expression) -> exp.Expression:
    a, b = ctx.operands
    zero = exp.EQ(this=paren(b), expression=number(0))
    return case((exp.And(this=zero, expression=exp.Not(this=is_null(a))), when_zero), default=fraction)


def _special(value: str) -> exp.Expression:
    return cast(string(value), DOUBLE)


def _render_plus_minus(cls: type[exp.Expression]) -> Callable[[RenderContext], exp.Expression]:
    def render(ctx: RenderContext) -> exp.Expression:
        out = binary(cls, *ctx.operands)
        result = ctx.result_type
        # Spark gives TIMESTAMP for DATE ± seconds, and may pick another DECIMAL: pin the Flink type.
        mixed = ctx.operand_types[0].kind != ctx.operand_types[1].kind
        if result.kind in (Kind.DATE, Kind.DECIMAL) or (result.kind in (Kind.TINYINT, Kind.SMALLINT) and mixed):
            return cast(out, result)
        return out

    return render


def _render_divide(ctx: RenderContext) -> exp.Expression:
    a, b = ctx.operands
    result = ctx.result_type
    if result.kind in INTEGRAL:
        return cast(exp.IntDiv(this=paren(a), expression=paren(b)), result)
    quotient = binary(exp.Div, a, b)
    if result.kind in (Kind.FLOAT, Kind.DOUBLE):
        positive = exp.GT(this=paren(a), expression=number(0))
        negative = exp.LT(this=paren(a), expression=number(0))
        infinite = case((positive, _special("Infinity")), (negative, _special("-Infinity")), default=_special("NaN"))
        return cast(_approximate_by_zero(ctx, quotient, infinite), result)
    return cast(quotient, result)


def _render_mod(ctx: RenderContext) -> exp.Expression:
    out = binary(exp.Mod, *ctx.operands)
    if ctx.result_type.kind in (Kind.FLOAT, Kind.DOUBLE):
        return cast(_approximate_by_zero(ctx, out, _special("NaN")), ctx.result_type)
    return cast(out, ctx.result_type)


def _infer_negate(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    t = ctx.operand_types[0]
    if not (t.is_numeric or t.kind in (Kind.INTERVAL_DAY_TIME, Kind.INTERVAL_YEAR_MONTH, Kind.NULL)):
        raise ctx.fail(f"cannot negate {t}")
    return t.without_time_attribute()


def register(registry: FunctionRegistry) -> None:
    scalar(registry, "+", _infer("+"), _render_plus_minus(exp.Add), description="addition; timestamp + interval")
    scalar(registry, "-", _infer("-"), _render_plus_minus(exp.Sub), description="subtraction; timestamp - interval")
    scalar(registry, "*", _infer("*"), lambda ctx: cast(binary(exp.Mul, *ctx.operands), ctx.result_type)
           if ctx.result_type.kind is Kind.DECIMAL else binary(exp.Mul, *ctx.operands), description="multiplication")
    scalar(registry, "/", _infer("/"), _render_divide, description="division; integer operands divide exactly")
    scalar(registry, "%", _infer("%"), _render_mod, description="remainder with the sign of the dividend")
    scalar(registry, "MOD", _infer("%"), _render_mod, description="MOD(a, b), same as a % b")
    scalar(registry, "NEGATE", _infer_negate, lambda ctx: exp.Neg(this=paren(ctx.operands[0])),
           description="unary minus")
