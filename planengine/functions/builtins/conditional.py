"""CASE, IF, COALESCE, IFNULL, NULLIF, GREATEST and LEAST.

Branch results unify with ``common_type`` (Flink's least restrictive type). Nullability differs per
function: CASE/IF are nullable when any branch is, COALESCE/IFNULL only when every operand is, and
GREATEST/LEAST return NULL as soon as one operand is NULL (Flink), where Spark's ``greatest`` skips
NULLs, so the renderer adds the NULL check.
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
    fn,
    null_if_any_null,
    scalar,
)
from planengine.ir.types import DataType, Kind, common_type


def unify(ctx: CallContext, types: list[DataType], what: str) -> DataType:
    result = common_type(types)
    if result is None:
        raise ctx.fail(f"{what} have no common type: {', '.join(str(t) for t in types)}")
    return result


def _infer_case(ctx: CallContext) -> DataType:
    n = len(ctx.operand_types)
    if n < 3 or n % 2 == 0:
        raise ctx.fail("expects condition/value pairs followed by the ELSE value")
    for i in range(0, n - 1, 2):
        expect(ctx, i, "BOOLEAN")
    values = [ctx.operand_types[i] for i in range(1, n - 1, 2)] + [ctx.operand_types[-1]]
    return unify(ctx, values, "CASE branches")


def _pin_decimal(ctx: RenderContext, value: exp.Expression) -> exp.Expression:
    """Spark may choose another DECIMAL for mixed branches; Flink's is in the plan, so use it."""
    return cast(value, ctx.result_type) if ctx.result_type.kind is Kind.DECIMAL else value


def _render_case(ctx: RenderContext) -> exp.Expression:
    ops = ctx.operands
    branches = [(ops[i], ops[i + 1]) for i in range(0, len(ops) - 1, 2)]
    return _pin_decimal(ctx, case(*branches, default=ops[-1]))


def _infer_if(ctx: CallContext) -> DataType:
    check_arity(ctx, 3)
    expect(ctx, 0, "BOOLEAN")
    return unify(ctx, list(ctx.operand_types[1:]), "IF branches")


def _infer_coalesce(ctx: CallContext) -> DataType:
    check_arity(ctx, 1, None)
    result = unify(ctx, list(ctx.operand_types), "COALESCE arguments")
    all_nullable = all(t.nullable or t.kind is Kind.NULL for t in ctx.operand_types)
    return result.with_nullable(all_nullable)


def _infer_ifnull(ctx: CallContext) -> DataType:
    check_arity(ctx, 2)
    return _infer_coalesce(ctx)


def _infer_nullif(ctx: CallContext) -> DataType:
    check_arity(ctx, 2)
    unify(ctx, list(ctx.operand_types), "NULLIF arguments")
    return ctx.operand_types[0].with_nullable(True).without_time_attribute()


def _infer_extreme(ctx: CallContext) -> DataType:
    check_arity(ctx, 1, None)
    result = unify(ctx, list(ctx.operand_types), f"{ctx.name} arguments")
    return result.with_nullable(any(t.nullable or t.kind is Kind.NULL for t in ctx.operand_types))


def _render_extreme(name: str) -> Callable[[RenderContext], exp.Expression]:
    def render(ctx: RenderContext) -> exp.Expression:
        return _pin_decimal(ctx, null_if_any_null(ctx.operands, fn(name, *ctx.operands)))

    return render


def register(registry: FunctionRegistry) -> None:
    scalar(registry, "CASE", _infer_case, _render_case, description="operands: cond1, val1, ..., else")
    scalar(registry, "IF", _infer_if, lambda ctx: _pin_decimal(ctx, case((ctx.operands[0], ctx.operands[1]),
                                                                           default=ctx.operands[2])))
    scalar(registry, "COALESCE", _infer_coalesce,
           lambda ctx: _pin_decimal(ctx, exp.Coalesce(this=ctx.operands[0], expressions=list(ctx.operands[1:]))))
    scalar(registry, "IFNULL", _infer_ifnull,
           lambda ctx: _pin_decimal(ctx, exp.Coalesce(this=ctx.operands[0], expressions=[ctx.operands[1]])))
    scalar(registry, "NULLIF", _infer_nullif, lambda ctx: fn("nullif", *ctx.operands))
    scalar(registry, "GREATEST", _infer_extreme, _render_extreme("greatest"), description="NULL if any is NULL")
    scalar(registry, "LEAST", _infer_extreme, _render_extreme("least"), description="NULL if any is NULL")
