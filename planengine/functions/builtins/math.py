"""Numeric functions, and ``FLOOR``/``CEIL`` of a datetime to a unit.

Flink keeps the argument type where rounding cannot change it (``ABS``, ``SIGN``, ``CEIL(INT)``) and
shrinks DECIMAL scales for ``CEIL``/``FLOOR``/``ROUND``/``TRUNCATE``; Spark returns BIGINT or DOUBLE in
those places, so results are cast back to the planned type. Spark's logarithms return NULL for
non-positive input where Java's ``Math.log`` (Flink) returns -Infinity or NaN; the renderer restores
Flink's values.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from planengine.functions.builtins._support import (
    CallContext,
    FunctionRegistry,
    RenderContext,
    case,
    cast,
    check_arity,
    expect,
    fixed,
    fn,
    is_null,
    literal_str,
    nullable_if_args,
    number,
    paren,
    scalar,
    string,
)
from planengine.functions.builtins.arithmetic import MAX_PRECISION, adjust_precision_scale
from planengine.ir.types import DATE, DOUBLE, INTEGRAL, DataType, Kind, decimal

TIME_UNITS = ("MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR")


def _infer_same_numeric(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    t = expect(ctx, 0, "NUMERIC")
    return DataType(Kind.INT).with_nullable(True) if t.kind is Kind.NULL else t.without_time_attribute()


def _double(*families: str, optional: int = 0):
    return fixed(DOUBLE, *families, optional=optional)


def _special(value: str) -> exp.Expression:
    return cast(string(value), DOUBLE)


def flink_ln(x: exp.Expression) -> exp.Expression:
    """``Math.log``: -Infinity at 0 and NaN below, where Spark's ``ln`` answers NULL."""
    return case((is_null(x), exp.Null()),
                (exp.GT(this=paren(x), expression=number(0)), fn("ln", x)),
                (exp.EQ(this=paren(x), expression=number(0)), _special("-Infinity")),
                default=_special("NaN"))


def _render_log(base: float | None) -> Callable[[RenderContext], exp.Expression]:
    def render(ctx: RenderContext) -> exp.Expression:
        if base is None and len(ctx.operands) == 2:  # LOG(base, x)
            b, x = ctx.operands
            return exp.Div(this=paren(flink_ln(x)), expression=paren(flink_ln(b)))
        x = ctx.operands[-1]
        if base is None:
            return flink_ln(x)
        return exp.Div(this=paren(flink_ln(x)), expression=fn("ln", number(base)))

    return render


def _scale_zero(t: DataType) -> DataType:
    """Flink's DECIMAL_SCALE_0: CEIL/FLOOR of DECIMAL(p, s) is DECIMAL(p - s + (s > 0), 0)."""
    p, s = t.precision or 10, t.scale or 0
    return decimal(min(MAX_PRECISION, max(1, p - s + (1 if s > 0 else 0))), 0)


def _infer_ceil_floor(ctx: CallContext) -> DataType:
    check_arity(ctx, 1, 2)
    if len(ctx.operand_types) == 2:
        unit = literal_str(ctx, 1)
        if unit not in TIME_UNITS:
            raise ctx.fail(f"unit must be one of {', '.join(TIME_UNITS)}")
        t = expect(ctx, 0, "DATETIME")
        return t.without_time_attribute()
    t = expect(ctx, 0, "NUMERIC")
    if t.kind is Kind.DECIMAL:
        return _scale_zero(t).with_nullable(t.nullable)
    return t.without_time_attribute()


def _floor_to(value: exp.Expression, t: DataType, unit: str) -> exp.Expression:
    if t.kind is Kind.DATE:
        if unit in ("DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND"):
            return value
        return fn("trunc", value, string(unit))
    return cast(fn("date_trunc", string(unit), value), t)


def _render_ceil_floor(ceil: bool) -> Callable[[RenderContext], exp.Expression]:
    def render(ctx: RenderContext) -> exp.Expression:
        value = ctx.operands[0]
        t = ctx.operand_types[0]
        result = ctx.result_type
        if len(ctx.operands) == 2:
            unit = ctx.literal(1).upper()
            floored = _floor_to(value, t, unit)
            if not ceil:
                return floored
            bumped = fn("timestampadd", exp.Var(this=unit), number(1), floored)
            return case((exp.EQ(this=paren(floored), expression=paren(value)), value),
                        default=cast(bumped, result) if t.kind is Kind.DATE else bumped)
        if t.kind in INTEGRAL:
            return value
        return cast(fn("ceil" if ceil else "floor", value), result)

    return render


def round_type(t: DataType, digits: object) -> DataType:
    """Flink's ``findRoundDecimalType`` for DECIMAL; other numerics keep their type."""
    if t.kind is not Kind.DECIMAL:
        return t
    p, s = t.precision or 10, t.scale or 0
    r = digits if isinstance(digits, int) else 0
    if r >= s:
        return decimal(p, s)
    if r < 0:
        return decimal(min(MAX_PRECISION, 1 + p - s), 0)
    return adjust_precision_scale(1 + p - s + r, r)


def _infer_round(ctx: CallContext) -> DataType:
    check_arity(ctx, 1, 2)
    t = expect(ctx, 0, "NUMERIC")
    if len(ctx.operand_types) == 2:
        expect(ctx, 1, "INTEGER")
    if t.kind is Kind.NULL:
        return DataType(Kind.INT)
    digits = ctx.literal(1) if len(ctx.operand_types) == 2 else 0
    return nullable_if_args(round_type(t, digits).without_time_attribute(), ctx)


def _digits(ctx: RenderContext) -> exp.Expression:
    return ctx.operands[1] if len(ctx.operands) == 2 else number(0)


def _render_round(ctx: RenderContext) -> exp.Expression:
    return cast(fn("round", ctx.operands[0], _digits(ctx)), ctx.result_type)


def _render_truncate(ctx: RenderContext) -> exp.Expression:
    value, digits = ctx.operands[0], _digits(ctx)
    t = ctx.operand_types[0]
    if t.kind in INTEGRAL:
        # TRUNCATE(1234, -2) = 1200: drop the remainder of 10^-d (a no-op for d >= 0).
        step = cast(fn("power", number(10), exp.Neg(this=paren(digits))), DataType(Kind.BIGINT))
        positive = exp.GTE(this=paren(digits), expression=number(0))
        return cast(case((positive, value), default=exp.Sub(this=paren(value), expression=exp.Paren(
            this=exp.Mod(this=paren(value), expression=step)))), ctx.result_type)
    toward_zero = case((exp.GTE(this=paren(value), expression=number(0)), fn("floor", value, digits)),
                       default=fn("ceil", value, digits))
    return cast(toward_zero, ctx.result_type)


def _render_sign(ctx: RenderContext) -> exp.Expression:
    return cast(fn("sign", ctx.operands[0]), ctx.result_type)


def _infer_rand(ctx: CallContext) -> DataType:
    check_arity(ctx, 0, 1)
    if ctx.operand_types:
        expect(ctx, 0, "INTEGER")
    return DOUBLE.with_nullable(False)


def register(registry: FunctionRegistry) -> None:
    n = "NUMERIC"
    scalar(registry, "ABS", _infer_same_numeric, lambda ctx: fn("abs", ctx.operands[0]))
    scalar(registry, "POWER", _double(n, n), lambda ctx: fn("power", *ctx.operands))
    scalar(registry, "SQRT", _double(n), lambda ctx: fn("sqrt", *ctx.operands), description="NaN below zero")
    scalar(registry, "EXP", _double(n), lambda ctx: fn("exp", *ctx.operands))
    scalar(registry, "LN", _double(n), _render_log(None), description="-Infinity at 0, NaN below")
    scalar(registry, "LOG10", _double(n), _render_log(10))
    scalar(registry, "LOG2", _double(n), _render_log(2))
    scalar(registry, "LOG", _double(n, n, optional=1), _render_log(None), description="LOG(x) or LOG(base, x)")
    scalar(registry, "CEIL", _infer_ceil_floor, _render_ceil_floor(True), description="numeric, or CEIL(t TO unit)")
    scalar(registry, "FLOOR", _infer_ceil_floor, _render_ceil_floor(False),
           description="numeric, or FLOOR(t TO unit)")
    scalar(registry, "ROUND", _infer_round, _render_round, description="HALF_UP")
    scalar(registry, "TRUNCATE", _infer_round, _render_truncate, description="toward zero")
    scalar(registry, "SIGN", _infer_same_numeric, _render_sign)
    scalar(registry, "RAND", _infer_rand, lambda ctx: fn("rand", *ctx.operands), deterministic=False)
    scalar(registry, "PI", fixed(DOUBLE.with_nullable(False)), lambda ctx: fn("pi"))


__all__ = ["DATE", "TIME_UNITS", "flink_ln", "register", "round_type"]
