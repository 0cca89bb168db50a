"""Aggregate functions: type inference only; the runtime's aggregate operators evaluate them.

Flink's result types: ``COUNT`` is BIGINT NOT NULL; ``SUM`` and ``AVG`` keep the argument type for exact
and approximate numbers (``AVG(INT)`` is INT); DECIMAL sums widen to DECIMAL(38, s) and DECIMAL
averages to DECIMAL(38, max(6, s)); ``SUM0`` is SUM that answers 0 for no rows (NOT NULL).

``supports_retraction`` means the accumulator can take a value back without keeping every value
(COUNT, SUM, AVG, the variances). MIN, MAX, FIRST_VALUE, LAST_VALUE, LISTAGG and BOOL_AND/OR need the
multiset of all inputs to retract, so an updating input makes the runtime keep that state.
"""

from __future__ import annotations

from collections.abc import Callable

from planengine.functions.builtins._support import (
    BuiltinFunction,
    CallContext,
    FunctionKind,
    FunctionRegistry,
    check_arity,
    expect,
)
from planengine.ir.types import BIGINT, BOOLEAN, STRING, DataType, Kind, decimal, multiset


def aggregate(registry: FunctionRegistry, name: str, infer: Callable[[CallContext], DataType], *,
              retractable: bool, description: str = "") -> None:
    registry.register(BuiltinFunction(name=name, version=1, kind=FunctionKind.AGGREGATE, infer_type=infer,
                                      render_spark=None, supports_retraction=retractable, description=description))


def _plain(t: DataType) -> DataType:
    return t.without_time_attribute()


def _infer_count(ctx: CallContext) -> DataType:
    return BIGINT.with_nullable(False)


def _numeric_arg(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    t = expect(ctx, 0, "NUMERIC")
    return DataType(Kind.INT) if t.kind is Kind.NULL else _plain(t)


def _infer_sum(ctx: CallContext) -> DataType:
    t = _numeric_arg(ctx)
    if t.kind is Kind.DECIMAL:
        return decimal(38, t.scale or 0)
    return t.with_nullable(True)


def _infer_sum0(ctx: CallContext) -> DataType:
    return _infer_sum(ctx).with_nullable(False)


def _infer_avg(ctx: CallContext) -> DataType:
    t = _numeric_arg(ctx)
    if t.kind is Kind.DECIMAL:
        return decimal(38, max(6, t.scale or 0))
    return t.with_nullable(True)


def _infer_any(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    return _plain(ctx.operand_types[0]).with_nullable(True)


def _infer_listagg(ctx: CallContext) -> DataType:
    check_arity(ctx, 1, 2)
    for i in range(len(ctx.operand_types)):
        expect(ctx, i, "STRING")
    return STRING.with_nullable(True)


def _infer_collect(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    return multiset(_plain(ctx.operand_types[0])).with_nullable(False)


def _infer_bool(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    expect(ctx, 0, "BOOLEAN")
    return BOOLEAN.with_nullable(True)


def register(registry: FunctionRegistry) -> None:
    aggregate(registry, "COUNT", _infer_count, retractable=True, description="COUNT(*) has no operands")
    aggregate(registry, "SUM", _infer_sum, retractable=True)
    aggregate(registry, "SUM0", _infer_sum0, retractable=True, description="SUM, 0 for no rows")
    aggregate(registry, "AVG", _infer_avg, retractable=True, description="keeps the argument type")
    aggregate(registry, "MIN", _infer_any, retractable=False)
    aggregate(registry, "MAX", _infer_any, retractable=False)
    aggregate(registry, "FIRST_VALUE", _infer_any, retractable=False)
    aggregate(registry, "LAST_VALUE", _infer_any, retractable=False)
    aggregate(registry, "LISTAGG", _infer_listagg, retractable=False, description="separator ',' by default")
    aggregate(registry, "COLLECT", _infer_collect, retractable=True, description="MULTISET of the values")
    for name in ("STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP"):
        aggregate(registry, name, _infer_avg, retractable=True, description="keeps the argument type, like AVG")
    aggregate(registry, "BOOL_AND", _infer_bool, retractable=False)
    aggregate(registry, "BOOL_OR", _infer_bool, retractable=False)
