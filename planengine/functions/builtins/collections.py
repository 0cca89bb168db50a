"""Collection constructors and accessors: ``ARRAY``, ``MAP``, ``ROW``, ``ITEM``, ``CARDINALITY``,
``ELEMENT``.

Flink subscripts arrays from 1 and answers NULL for a missing index or key; Spark's ``arr[i]`` is 0-based
and ANSI ``element_at`` raises, so ``ITEM`` renders as ``try_element_at``. ``ROW(a, b)`` names its fields
``EXPR$0, EXPR$1`` as Flink does. A MULTISET is a Spark map from element to multiplicity, so its
cardinality is the sum of the counts.
"""

from __future__ import annotations

from sqlglot import exp

from planengine.functions.builtins._support import (
    CallContext,
    FunctionRegistry,
    RenderContext,
    case,
    check_arity,
    expect,
    fn,
    is_null,
    nullable_if_args,
    number,
    scalar,
    string,
)
from planengine.functions.builtins.conditional import unify
from planengine.ir.types import INT, DataType, Kind, RowField, array, map_


def _infer_item(ctx: CallContext) -> DataType:
    check_arity(ctx, 2)
    container = expect(ctx, 0, "ARRAY", "MAP")
    if container.kind is Kind.ARRAY:
        expect(ctx, 1, "INTEGER")
        assert container.element is not None
        return container.element.with_nullable(True)
    if container.kind is Kind.MAP:
        assert container.value is not None
        return container.value.with_nullable(True)
    return DataType(Kind.NULL)


def _infer_cardinality(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    expect(ctx, 0, "COLLECTION")
    return nullable_if_args(INT, ctx)


def _render_cardinality(ctx: RenderContext) -> exp.Expression:
    value = ctx.operands[0]
    if ctx.operand_types[0].kind is Kind.MULTISET:
        a, b = exp.column("__a"), exp.column("__b")
        total = fn("aggregate", fn("map_values", value), number(0),
                   exp.Lambda(this=exp.Add(this=a, expression=b),
                              expressions=[exp.to_identifier("__a"), exp.to_identifier("__b")]))
        return case((is_null(value), exp.Null()), default=total)
    return case((is_null(value), exp.Null()), default=fn("size", value))


def _infer_array(ctx: CallContext) -> DataType:
    check_arity(ctx, 1, None)
    return array(unify(ctx, list(ctx.operand_types), "ARRAY elements")).with_nullable(False)


def _infer_map(ctx: CallContext) -> DataType:
    types = ctx.operand_types
    if not types or len(types) % 2:
        raise ctx.fail("expects key/value pairs")
    key = unify(ctx, list(types[0::2]), "MAP keys")
    value = unify(ctx, list(types[1::2]), "MAP values")
    return map_(key, value).with_nullable(False)


def _infer_row(ctx: CallContext) -> DataType:
    check_arity(ctx, 1, None)
    if ctx.target_type is not None and ctx.target_type.kind is Kind.ROW:
        return ctx.target_type
    fields = tuple(RowField(f"EXPR${i}", t.without_time_attribute()) for i, t in enumerate(ctx.operand_types))
    return DataType(Kind.ROW, nullable=False, fields=fields)


def _render_row(ctx: RenderContext) -> exp.Expression:
    args: list[exp.Expression] = []
    for f, operand in zip(ctx.result_type.fields, ctx.operands):
        args.extend([string(f.name), operand])
    return fn("named_struct", *args)


def _infer_element(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    t = expect(ctx, 0, "ARRAY")
    return t.element.with_nullable(True) if t.element is not None else DataType(Kind.NULL)


def _render_element(ctx: RenderContext) -> exp.Expression:
    value = ctx.operands[0]
    too_many = exp.GT(this=fn("size", value), expression=number(1))
    return case((too_many, fn("raise_error", string("ELEMENT: the array has more than one element"))),
                default=fn("try_element_at", value, number(1)))


def register(registry: FunctionRegistry) -> None:
    scalar(registry, "ITEM", _infer_item, lambda ctx: fn("try_element_at", *ctx.operands),
           description="arr[i] (1-based) or map[key]; NULL when absent")
    scalar(registry, "CARDINALITY", _infer_cardinality, _render_cardinality)
    scalar(registry, "ARRAY", _infer_array, lambda ctx: fn("array", *ctx.operands), description="ARRAY[a, b]")
    scalar(registry, "MAP", _infer_map, lambda ctx: fn("map", *ctx.operands), description="MAP[k1, v1, ...]")
    scalar(registry, "ROW", _infer_row, _render_row, description="fields EXPR$0, EXPR$1, ...")
    scalar(registry, "ELEMENT", _infer_element, _render_element,
           description="the only element; NULL when empty, error when more")
