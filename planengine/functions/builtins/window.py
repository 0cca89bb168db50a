"""Functions that exist only inside ``OVER (...)``, and the legacy group-window functions.

Both are type inference only. ``TUMBLE``/``HOP``/``SESSION`` in GROUP BY and their auxiliaries
(``TUMBLE_START``, ``HOP_ROWTIME``, ...) are rewritten by the planner into window aggregates; they are
registered so the converter can type them and so unknown-function errors stay accurate.
"""

from __future__ import annotations

from planengine.functions.builtins._support import (
    BuiltinFunction,
    CallContext,
    FunctionKind,
    FunctionRegistry,
    check_arity,
    expect,
)
from planengine.ir.types import BIGINT, DataType, Kind, TimeAttribute, timestamp, timestamp_ltz

GROUP_WINDOWS = {"TUMBLE": 2, "HOP": 3, "SESSION": 2}


def _window(registry: FunctionRegistry, name: str, infer, description: str = "") -> None:
    registry.register(BuiltinFunction(name=name, version=1, kind=FunctionKind.WINDOW, infer_type=infer,
                                      render_spark=None, description=description))


def _infer_rank(ctx: CallContext) -> DataType:
    check_arity(ctx, 0)
    return BIGINT.with_nullable(False)


def _infer_ntile(ctx: CallContext) -> DataType:
    check_arity(ctx, 1)
    expect(ctx, 0, "INTEGER")
    return BIGINT.with_nullable(False)


def _infer_offset(ctx: CallContext) -> DataType:
    check_arity(ctx, 1, 3)
    if len(ctx.operand_types) > 1:
        expect(ctx, 1, "INTEGER")
        offset = ctx.literal(1)
        if isinstance(offset, int) and offset < 0:
            raise ctx.fail(f"the offset must be 0 or more, not {offset} (as in Flink)")
    return ctx.operand_types[0].without_time_attribute().with_nullable(True)


def _time_operand(ctx: CallContext, count: int) -> DataType:
    check_arity(ctx, count)
    t = expect(ctx, 0, "TIMESTAMP")
    for i in range(1, count):
        expect(ctx, i, "INTERVAL")
    if not t.is_time_attribute and t.kind is not Kind.NULL:
        raise ctx.fail("the first argument must be a time attribute (rowtime or proctime)")
    return t


def _group_window(count: int):
    return lambda ctx: _time_operand(ctx, count)


def _bound(count: int, attribute: TimeAttribute | None):
    def infer(ctx: CallContext) -> DataType:
        t = _time_operand(ctx, count)
        if attribute is TimeAttribute.PROCTIME:
            return timestamp_ltz(3).with_nullable(False).with_time_attribute(attribute)
        base = timestamp_ltz(3) if t.kind is Kind.TIMESTAMP_LTZ else timestamp(3)
        base = base.with_nullable(False)
        return base.with_time_attribute(attribute) if attribute else base

    return infer


def register(registry: FunctionRegistry) -> None:
    for name in ("ROW_NUMBER", "RANK", "DENSE_RANK"):
        _window(registry, name, _infer_rank)
    _window(registry, "NTILE", _infer_ntile)
    _window(registry, "LAG", _infer_offset, "LAG(x [, offset [, default]])")
    _window(registry, "LEAD", _infer_offset, "LEAD(x [, offset [, default]])")
    for window, count in GROUP_WINDOWS.items():
        _window(registry, window, _group_window(count), "legacy group window; rewritten by the planner")
        _window(registry, f"{window}_START", _bound(count, None))
        _window(registry, f"{window}_END", _bound(count, None))
        _window(registry, f"{window}_ROWTIME", _bound(count, TimeAttribute.ROWTIME))
        _window(registry, f"{window}_PROCTIME", _bound(count, TimeAttribute.PROCTIME))
