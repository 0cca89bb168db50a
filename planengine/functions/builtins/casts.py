"""CAST, TRY_CAST and REINTERPRET.

The target type comes from the call site (``CallContext.target_type``); the only operand is the value.
Spark's casts agree with Flink's for numbers and for parsing strings, and ANSI Spark raises on bad input
as Flink (1.15+) does. They disagree on the *text* of values, which the renderer repairs: Flink prints
BOOLEAN as ``TRUE``/``FALSE``, pads a TIMESTAMP(p) fraction to exactly p digits (``00:00:05.000`` for
TIMESTAMP(3), no fraction for TIMESTAMP(0)), pads CHAR(n) with spaces and truncates VARCHAR(n).
"""

from __future__ import annotations

from sqlglot import exp

from planengine.functions.builtins._support import (
    CallContext,
    FunctionRegistry,
    RenderContext,
    cast,
    check_arity,
    fn,
    number,
    scalar,
    string,
)
from planengine.functions.spark_types import spark_data_type
from planengine.ir.types import BINARY_STRING, CHARACTER, DATETIME, MAX_LENGTH, STRING, DataType, Kind

_SCALAR_FAMILIES = {
    "numeric": lambda t: t.is_numeric,
    "string": lambda t: t.kind in CHARACTER,
    "boolean": lambda t: t.kind is Kind.BOOLEAN,
    "datetime": lambda t: t.kind in DATETIME,
    "binary": lambda t: t.kind in BINARY_STRING,
}


def _family(t: DataType) -> str:
    for name, test in _SCALAR_FAMILIES.items():
        if test(t):
            return name
    return t.kind.value


def can_cast(source: DataType, target: DataType) -> bool:
    """Flink's explicit cast matrix, coarsely: within a family, to/from strings, numeric <-> boolean,
    numeric -> TIMESTAMP_LTZ (epoch seconds), and structurally equal nested types."""
    if source.kind is Kind.NULL:
        return True
    a, b = _family(source), _family(target)
    if a == b and a in _SCALAR_FAMILIES:
        return True
    if ("string" in (a, b) and a != "binary") or (a, b) in (("binary", "string"), ("string", "binary")):
        return True
    if {a, b} == {"numeric", "boolean"}:
        return True
    if (a == "numeric" and target.kind is Kind.TIMESTAMP_LTZ) or (target.kind is Kind.BIGINT and source.is_timestamp):
        return True
    if source.kind == target.kind and source.kind in (Kind.ARRAY, Kind.MULTISET):
        return can_cast(source.element, target.element)  # type: ignore[arg-type]
    if source.kind == target.kind and source.kind is Kind.MAP:
        return can_cast(source.key, target.key) and can_cast(source.value, target.value)  # type: ignore[arg-type]
    if source.kind == target.kind and source.kind is Kind.ROW:
        return len(source.fields) == len(target.fields) and all(
            can_cast(f.type, g.type) for f, g in zip(source.fields, target.fields))
    return False


def _infer_cast(safe: bool):
    def infer(ctx: CallContext) -> DataType:
        check_arity(ctx, 1)
        target = ctx.target_type
        if target is None:
            raise ctx.fail("needs a target type")
        source = ctx.operand_types[0]
        if not can_cast(source, target):
            raise ctx.fail(f"cannot cast {source} to {target}")
        nullable = True if safe else (source.nullable or source.kind is Kind.NULL)
        return target.with_nullable(nullable).without_time_attribute()

    return infer


def timestamp_format(precision: int) -> str:
    """The Spark ``date_format`` pattern that prints a timestamp the way Flink's CAST does."""
    return "yyyy-MM-dd HH:mm:ss" + ("." + "S" * min(precision, 9) if precision > 0 else "")


def to_flink_string(value: exp.Expression, source: DataType) -> exp.Expression:
    """``CAST(value AS STRING)`` with Flink's text for booleans and timestamps."""
    if source.kind is Kind.BOOLEAN:
        return fn("upper", cast(value, STRING))
    if source.kind in (Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ):
        return fn("date_format", value, string(timestamp_format(source.precision or 0)))
    if source.kind in (Kind.CHAR, Kind.VARCHAR):
        return value
    return cast(value, STRING)


def _render_cast(ctx: RenderContext) -> exp.Expression:
    source = ctx.operand_types[0]
    target = ctx.result_type
    value = ctx.operands[0]
    if source.kind is Kind.NULL:
        return cast(exp.Null(), target)
    if target.kind in CHARACTER:
        text = to_flink_string(value, source)
        length = target.length or MAX_LENGTH
        if target.kind is Kind.CHAR:
            return fn("rpad", fn("substring", text, number(1), number(length)), number(length), string(" "))
        if length < MAX_LENGTH:
            return fn("substring", text, number(1), number(length))
        return text
    if target.kind in BINARY_STRING and source.kind in CHARACTER:
        return fn("encode", value, string("UTF-8"))
    if target.kind in CHARACTER and source.kind in BINARY_STRING:
        return fn("decode", value, string("UTF-8"))
    return cast(value, target)


def _render_try_cast(ctx: RenderContext) -> exp.Expression:
    if ctx.result_type.kind in CHARACTER or ctx.operand_types[0].kind is Kind.NULL:
        return _render_cast(ctx)  # casting to text cannot fail
    return exp.TryCast(this=ctx.operands[0], to=spark_data_type(ctx.result_type), safe=True)


def _infer_reinterpret(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    return ctx.target_type if ctx.target_type is not None else ctx.operand_types[0]


def register(registry: FunctionRegistry) -> None:
    scalar(registry, "CAST", _infer_cast(False), _render_cast, description="fails on invalid input")
    scalar(registry, "TRY_CAST", _infer_cast(True), _render_try_cast, description="NULL on invalid input")
    scalar(registry, "REINTERPRET", _infer_reinterpret, lambda ctx: ctx.operands[0],
           description="same value, another type view (time attributes); no conversion")
