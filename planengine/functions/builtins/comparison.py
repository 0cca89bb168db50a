"""Comparison, null tests, pattern matching, BETWEEN / IN and boolean logic.

All comparisons are BOOLEAN, NOT NULL only when every operand is; the null tests (``IS NULL``, ``IS
TRUE``, ``IS DISTINCT FROM``, ...) are always NOT NULL. The converter inserts explicit CASTs so both
sides of a comparison have the same type before these functions see them; here we only reject pairs
Flink cannot compare at all. Spark needs help for: ``LIKE`` (Spark treats ``\\`` as the default escape,
Flink has no default escape) and ``SIMILAR TO`` (Spark has none; rendered as an anchored ``RLIKE``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from planengine.errors import ValidationError
from planengine.functions.builtins._support import (
    CallContext,
    FunctionRegistry,
    RenderContext,
    binary,
    check_arity,
    expect,
    fn,
    is_literal,
    nullable_if_args,
    paren,
    scalar,
    string,
)
from planengine.ir.types import BOOLEAN, CHARACTER, DataType, Kind

_TIME_KINDS = (Kind.TIMESTAMP, Kind.TIMESTAMP_LTZ)


def comparable(a: DataType, b: DataType) -> bool:
    """Whether Flink can compare the two types (after the converter's implicit casts)."""
    if Kind.NULL in (a.kind, b.kind):
        return True
    if a.is_numeric and b.is_numeric:
        return True
    if a.kind in CHARACTER and b.kind in CHARACTER:
        return True
    if a.kind in _TIME_KINDS and b.kind in _TIME_KINDS:
        return True
    if {a.kind, b.kind} <= {Kind.BINARY, Kind.VARBINARY}:
        return True
    return a.kind == b.kind


def _check_comparable(ctx: CallContext, *indices: int) -> None:
    types = [ctx.operand_types[i] for i in indices]
    for t in types[1:]:
        if not comparable(types[0], t):
            raise ctx.fail(f"cannot compare {types[0]} with {t}; CAST one side explicitly")


def _infer_compare(ctx: CallContext) -> DataType:
    check_arity(ctx, 2)
    _check_comparable(ctx, 0, 1)
    return nullable_if_args(BOOLEAN, ctx)


def _infer_distinct(ctx: CallContext) -> DataType:
    check_arity(ctx, 2)
    _check_comparable(ctx, 0, 1)
    return BOOLEAN.with_nullable(False)


def _infer_null_test(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    return BOOLEAN.with_nullable(False)


def _infer_truth_test(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    expect(ctx, 0, "BOOLEAN")
    return BOOLEAN.with_nullable(False)


def _infer_logic(ctx: CallContext) -> DataType:
    check_arity(ctx, 2, None)
    for i in range(len(ctx.operand_types)):
        expect(ctx, i, "BOOLEAN")
    return nullable_if_args(BOOLEAN, ctx)


def _infer_not(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    expect(ctx, 0, "BOOLEAN")
    return nullable_if_args(BOOLEAN, ctx)


def _infer_like(ctx: CallContext) -> DataType:
    check_arity(ctx, 2, 3)
    for i in range(len(ctx.operand_types)):
        expect(ctx, i, "STRING")
    if len(ctx.operand_types) == 3:
        escape = ctx.literal(2)
        if not isinstance(escape, str) or len(escape) != 1:
            raise ctx.fail("the ESCAPE character must be a string literal of length 1")
    return nullable_if_args(BOOLEAN, ctx)


def _infer_between(ctx: CallContext) -> DataType:
    check_arity(ctx, 3)
    _check_comparable(ctx, 0, 1, 2)
    return nullable_if_args(BOOLEAN, ctx)


def _infer_in(ctx: CallContext) -> DataType:
    check_arity(ctx, 2, None)
    _check_comparable(ctx, *range(len(ctx.operand_types)))
    return nullable_if_args(BOOLEAN, ctx)


# --- rendering ------------------------------------------------------------------------------------------
def _like_pattern(ctx: RenderContext) -> exp.Expression:
    """Flink has no default LIKE escape, Spark uses ``\\``: double every backslash in the pattern."""
    pattern = ctx.operands[1]
    value = ctx.literal(1)
    if isinstance(value, str):
        return string(value.replace("\\", "\\\\"))
    return fn("replace", pattern, string("\\"), string("\\\\"))


def _render_like(negate: bool) -> Callable[[RenderContext], exp.Expression]:
    def render(ctx: RenderContext) -> exp.Expression:
        if len(ctx.operands) == 3:
            like: exp.Expression = exp.Escape(
                this=exp.Like(this=paren(ctx.operands[0]), expression=ctx.operands[1]), expression=ctx.operands[2])
        else:
            like = exp.Like(this=paren(ctx.operands[0]), expression=_like_pattern(ctx))
        return exp.Not(this=exp.Paren(this=like)) if negate else like

    return render


_SIMILAR_META = set("|*+?{}()[]")


def similar_to_regex(pattern: str, escape: str | None = None) -> str:
    """Translate an SQL ``SIMILAR TO`` pattern to an anchored Java regex (as Calcite does)."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if escape is not None and c == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        elif c in _SIMILAR_META or (c == "^" and i > 0 and pattern[i - 1] == "["):
            out.append(c)
        else:
            out.append(re.escape(c))
        i += 1
    return "^(?:" + "".join(out) + ")$"


def _render_similar(ctx: RenderContext) -> exp.Expression:
    pattern = ctx.literal(1)
    if not isinstance(pattern, str):
        raise ValidationError("SIMILAR TO needs a literal pattern on Spark", hint="use REGEXP(s, pattern) instead")
    escape = ctx.literal(2) if len(ctx.operands) == 3 else None
    return exp.RegexpLike(this=paren(ctx.operands[0]),
                          expression=string(similar_to_regex(pattern, escape if isinstance(escape, str) else None)))


def _coalesce(value: exp.Expression, default: bool) -> exp.Expression:
    return exp.Coalesce(this=value, expressions=[exp.Boolean(this=default)])


def _render_truth(kind: str) -> Callable[[RenderContext], exp.Expression]:
    def render(ctx: RenderContext) -> exp.Expression:
        x = ctx.operands[0]
        if kind == "IS TRUE":
            return _coalesce(x, False)
        if kind == "IS NOT TRUE":
            return exp.Not(this=_coalesce(x, False))
        if kind == "IS FALSE":
            return exp.Not(this=_coalesce(x, True))
        return _coalesce(x, True)  # IS NOT FALSE

    return render


def _render_logic(cls: type[exp.Expression]) -> Callable[[RenderContext], exp.Expression]:
    def render(ctx: RenderContext) -> exp.Expression:
        out = paren(ctx.operands[0])
        for o in ctx.operands[1:]:
            out = cls(this=out, expression=paren(o))
        return exp.Paren(this=out)

    return render


def _render_between(negate: bool) -> Callable[[RenderContext], exp.Expression]:
    def render(ctx: RenderContext) -> exp.Expression:
        value, low, high = (paren(o) for o in ctx.operands)
        between = exp.Between(this=value, low=low, high=high)
        return exp.Not(this=exp.Paren(this=between)) if negate else exp.Paren(this=between)

    return render


def _render_in(negate: bool) -> Callable[[RenderContext], exp.Expression]:
    def render(ctx: RenderContext) -> exp.Expression:
        node = exp.In(this=paren(ctx.operands[0]), expressions=list(ctx.operands[1:]))
        return exp.Not(this=exp.Paren(this=node)) if negate else exp.Paren(this=node)

    return render


def register(registry: FunctionRegistry) -> None:
    for name, cls in (("=", exp.EQ), ("<>", exp.NEQ), ("<", exp.LT), ("<=", exp.LTE), (">", exp.GT),
                      (">=", exp.GTE)):
        scalar(registry, name, _infer_compare, lambda ctx, cls=cls: exp.Paren(this=binary(cls, *ctx.operands)),
               description=f"comparison {name}")
    scalar(registry, "IS DISTINCT FROM", _infer_distinct,
           lambda ctx: exp.Not(this=exp.Paren(this=binary(exp.NullSafeEQ, *ctx.operands))),
           description="null-safe inequality")
    scalar(registry, "IS NOT DISTINCT FROM", _infer_distinct,
           lambda ctx: exp.Paren(this=binary(exp.NullSafeEQ, *ctx.operands)), description="null-safe equality")
    scalar(registry, "IS NULL", _infer_null_test,
           lambda ctx: exp.Paren(this=exp.Is(this=paren(ctx.operands[0]), expression=exp.Null())))
    scalar(registry, "IS NOT NULL", _infer_null_test,
           lambda ctx: exp.Paren(this=exp.Not(this=exp.Is(this=paren(ctx.operands[0]), expression=exp.Null()))))
    for name in ("IS TRUE", "IS FALSE", "IS NOT TRUE", "IS NOT FALSE"):
        scalar(registry, name, _infer_truth_test, _render_truth(name), description="never NULL")
    scalar(registry, "AND", _infer_logic, _render_logic(exp.And), description="three-valued AND")
    scalar(registry, "OR", _infer_logic, _render_logic(exp.Or), description="three-valued OR")
    scalar(registry, "NOT", _infer_not, lambda ctx: exp.Not(this=paren(ctx.operands[0])))
    scalar(registry, "LIKE", _infer_like, _render_like(False), description="no default escape character")
    scalar(registry, "NOT LIKE", _infer_like, _render_like(True))
    scalar(registry, "SIMILAR TO", _infer_like, _render_similar, description="SQL regular expression, whole match")
    scalar(registry, "BETWEEN", _infer_between, _render_between(False), description="ASYMMETRIC")
    scalar(registry, "NOT BETWEEN", _infer_between, _render_between(True))
    scalar(registry, "IN", _infer_in, _render_in(False), description="value list")
    scalar(registry, "NOT IN", _infer_in, _render_in(True), description="value list")


__all__ = ["comparable", "is_literal", "register", "similar_to_regex"]
