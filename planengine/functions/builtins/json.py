"""JSON built-ins on top of Spark's ``get_json_object`` and ``to_json``.

Flink's ``JSON_VALUE`` returns only scalars (an object or array is "empty", i.e. NULL by default) and
``JSON_QUERY`` only objects and arrays; ``get_json_object`` returns either as text, so the renderer
splits them by the first character. Paths are SQL/JSON paths; the ``lax`` mode prefix is dropped
(Spark's paths are lax). ``JSON_VALUE ... RETURNING <type>`` arrives as the call's target type and is
rendered as a TRY_CAST, matching Flink's default ``NULL ON ERROR``.
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
    fixed,
    fn,
    is_null,
    nullable_if_args,
    number,
    scalar,
    string,
)
from planengine.functions.builtins.casts import can_cast
from planengine.functions.spark_types import spark_data_type
from planengine.ir.types import BOOLEAN, CHARACTER, STRING, DataType


def _path(ctx: RenderContext) -> exp.Expression:
    value = ctx.literal(1)
    if isinstance(value, str):
        text = value.strip()
        for prefix in ("lax ", "LAX "):
            text = text.removeprefix(prefix)
        return string(text.strip())
    return ctx.operands[1]


def _raw(ctx: RenderContext) -> exp.Expression:
    return fn("get_json_object", ctx.operands[0], _path(ctx))


def _is_container(text: exp.Expression) -> exp.Expression:
    first = fn("left", fn("ltrim", text), number(1))
    return exp.In(this=first, expressions=[string("{"), string("[")])


def _infer_json_value(ctx: CallContext) -> DataType:
    check_arity(ctx, 2)
    expect(ctx, 0, "STRING")
    expect(ctx, 1, "STRING")
    target = ctx.target_type or STRING
    if not can_cast(STRING, target):
        raise ctx.fail(f"cannot return {target}")
    return target.with_nullable(True)


def _render_json_value(ctx: RenderContext) -> exp.Expression:
    raw = _raw(ctx)
    scalar_text = case((_is_container(raw), exp.Null()), default=raw)
    if ctx.result_type.kind in CHARACTER:
        return scalar_text
    return exp.TryCast(this=scalar_text, to=spark_data_type(ctx.result_type), safe=True)


def _render_json_query(ctx: RenderContext) -> exp.Expression:
    raw = _raw(ctx)
    return case((_is_container(raw), raw), default=exp.Null())


def _render_json_exists(ctx: RenderContext) -> exp.Expression:
    found = exp.Not(this=is_null(_raw(ctx)))
    return case((is_null(ctx.operands[0]), exp.Null()), default=found)


def _infer_json_string(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    return nullable_if_args(STRING, ctx)


def _render_json_string(ctx: RenderContext) -> exp.Expression:
    value = ctx.operands[0]
    wrapped = fn("to_json", fn("named_struct", string("v"), value))
    return case((is_null(value), exp.Null()),
                default=fn("regexp_extract", wrapped, string('^\\{"v":(.*)\\}$'), number(1)))


def register(registry: FunctionRegistry) -> None:
    scalar(registry, "JSON_VALUE", _infer_json_value, _render_json_value,
           description="scalar at a path; RETURNING type via the call's target type")
    scalar(registry, "JSON_QUERY", fixed(STRING, "STRING", "STRING", always_nullable=True), _render_json_query,
           description="object or array at a path (WITHOUT WRAPPER)")
    scalar(registry, "JSON_EXISTS", fixed(BOOLEAN, "STRING", "STRING"), _render_json_exists,
           description="whether a path holds a non-null value")
    scalar(registry, "JSON_STRING", _infer_json_string, _render_json_string, description="value as JSON text")
