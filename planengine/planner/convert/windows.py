"""Window table functions (TUMBLE/HOP/CUMULATE/SESSION) and OVER windows (ranking and aggregate
window functions, ROWS/RANGE frames)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable

from sqlglot import exp

from planengine.errors import SourceLocation, UnsupportedQueryError, ValidationError
from planengine.functions.registry import NO_LITERAL, CallContext
from planengine.ir.aggregates import AggregateCall
from planengine.ir.expressions import Expr, InputRef, Literal
from planengine.ir.sorting import SortKey
from planengine.ir.types import row
from planengine.ir.windows import OverFrame, WindowSpec
from planengine.planner import logical as L
from planengine.planner.convert.scope import Relation, _Field, _Scope
from planengine.planner.convert.support import (
    _RANKING,
    _dedupe,
    _identity,
    _norm,
    _validate_window,
    _window_key,
)
from planengine.sql.ast import WindowTableFunction


class WindowConversion:
    """Mixin of ``QueryConverter``."""

    def _window_tvf(self, tvf: WindowTableFunction) -> L.LogicalNode:
        source = tvf.this
        if isinstance(source, exp.Table):
            node = self._table(source)
        else:
            node = self.convert_query(source)
        scope = _Scope(Relation.of(node, source.alias_or_name if isinstance(source, exp.Table) else None), self)
        time_ref = self.expr(tvf.args["time_col"], scope)
        plain_timestamp = isinstance(time_ref, InputRef) and time_ref.type.is_timestamp and tvf.kind != "SESSION"
        if not isinstance(time_ref, InputRef) or not (time_ref.type.is_time_attribute or plain_timestamp):
            raise ValidationError(
                f"the DESCRIPTOR column of {tvf.kind} must be a time attribute (a rowtime column with a "
                f"WATERMARK, or PROCTIME()), but '{tvf.args['time_col'].sql()}' is {time_ref.type}",
                location=self.location(tvf),
                hint="declare WATERMARK FOR <column> AS ... on the source table",
            )

        def interval(key: str) -> dt.timedelta | None:
            value = tvf.args.get(key)
            if value is None:
                return None
            lit = self.expr(value, scope)
            if not isinstance(lit, Literal) or not isinstance(lit.value, dt.timedelta):
                raise ValidationError(f"{tvf.kind} {key.upper()} must be an interval literal such as "
                                      f"INTERVAL '1' MINUTE", location=self.location(value))
            return lit.value

        partition_keys = tuple(self._field_index(c, scope) for c in tvf.args.get("partition_by") or [])
        spec = WindowSpec(
            kind=tvf.kind, time_field=time_ref.index, size=interval("size"), slide=interval("slide"),
            step=interval("step"), gap=interval("gap"), offset=interval("offset"),
            partition_keys=partition_keys, is_rowtime=not time_ref.type.is_proctime,
        )
        _validate_window(spec, self.location(tvf))
        return L.LogicalWindowTableFunction(node, spec)

    def _over(self, relation: Relation, projections: list[exp.Expression], scope: _Scope):
        windows: list[exp.Window] = []
        for p in projections:
            windows.extend(p.find_all(exp.Window))
        base = relation.node
        node = base
        base_fields = list(relation.fields)
        width = len(base.field_names)
        # Pre-projection: inputs plus window-call arguments and partition/order expressions.
        pre_exprs: list[Expr] = list(_identity(base))
        pre_names: list[str] = list(base.field_names)

        def pre_field(e: Expr) -> int:
            for i, existing in enumerate(pre_exprs):
                if existing == e:
                    return i
            pre_exprs.append(e)
            pre_names.append(f"$f{len(pre_exprs) - 1}")
            return len(pre_exprs) - 1

        specs: dict[str, list[exp.Window]] = {}
        for w in windows:
            specs.setdefault(_window_key(w), []).append(w)
        plans = []
        for group in specs.values():
            w0 = group[0]
            partition = tuple(pre_field(self.expr(p, scope)) for p in w0.args.get("partition_by") or [])
            order_keys = []
            order = w0.args.get("order")
            for o in order.expressions if order is not None else []:
                order_keys.append(SortKey(pre_field(self.expr(o.this, scope)), not o.args.get("desc"),
                                            o.args.get("nulls_first")))
            calls = []
            for w in group:
                calls.append(self._window_call(w, scope, pre_field))
            frame = self._frame(w0)
            plans.append((group, partition, tuple(order_keys), frame, calls))
        if len(pre_exprs) > width:
            node = L.LogicalCalc(base, tuple(pre_exprs), tuple(_dedupe(pre_names)))
        mapping: dict[int, int] = {}
        for group, partition, order_keys, frame, calls in plans:
            start = len(node.field_names)
            named = tuple(dataclasses.replace(c, name=f"w{start + i}$o") for i, c in enumerate(calls))
            node = L.LogicalOver(node, partition, order_keys, frame, named)
            for i, w in enumerate(group):
                mapping[id(w)] = start + i
        over_types = node.field_types
        key_to_index = {}
        for w in windows:
            key_to_index[_norm(w)] = mapping[id(w)]
        outer_special = scope.special

        def special(n: exp.Expression, convert: Callable[[exp.Expression], Expr]) -> Expr | None:
            if isinstance(n, exp.Window):
                i = key_to_index[_norm(n)]
                return InputRef(i, over_types[i])
            if outer_special is not None:
                return outer_special(n, convert)
            return None

        fields_ = base_fields + [_Field(None, name, t) for name, t in zip(node.field_names[width:],
                                                                           over_types[width:])]
        new_relation = Relation(node, fields_)
        return new_relation, _Scope(new_relation, self, special)

    def _window_call(self, w: exp.Window, scope: _Scope, pre_field: Callable[[Expr], int]) -> AggregateCall:
        func = w.this
        name = None
        for cls, n in _RANKING.items():
            if type(func) is cls:
                name = n
        if name is None:
            name = self._aggregate_name(func)
        if name is None:
            raise UnsupportedQueryError(f"{func.sql()} cannot be used with OVER", location=self.location(w))
        _check_offset_function(name, w, self.location(w))
        distinct = isinstance(func.args.get("this"), exp.Distinct)
        operands = []
        this = func.args.get("this")
        if isinstance(this, exp.Distinct):
            operands = list(this.expressions)
        elif isinstance(func, exp.Anonymous):
            operands = list(func.expressions)
        elif this is not None and not isinstance(this, exp.Star):
            operands = [this]
            if func.args.get("offset") is not None:
                operands.append(func.args["offset"])
            if func.args.get("default") is not None:
                operands.append(func.args["default"])
        converted = [self.expr(o, scope) for o in operands]
        args = tuple(pre_field(c) for c in converted)
        fn = self.ctx.registry.resolve(name)
        if fn is None and isinstance(func, exp.Anonymous):
            user = self.resolve_user_function(func)
            if user is not None:
                return AggregateCall(user[0].name, None, args, user[1].result_type, "", distinct,
                                       user_function=user[0])
        if fn is None:
            raise ValidationError(f"unknown window function {name}", location=self.location(w))
        result = fn.infer_type(CallContext(name, tuple(c.type for c in converted),
                                           tuple(c.value if isinstance(c, Literal) else NO_LITERAL
                                                 for c in converted)))
        return AggregateCall(fn.name, fn.version, args, result, "", distinct)

    def _frame(self, w: exp.Window) -> OverFrame:
        spec = w.args.get("spec")
        if spec is None:
            return OverFrame("RANGE" if w.args.get("order") else "ROWS", None)
        mode = (spec.args.get("kind") or "ROWS").upper()
        start = spec.args.get("start")
        if isinstance(start, str) and start.upper() == "UNBOUNDED":
            return OverFrame(mode, None)
        if isinstance(start, str) and start.upper() == "CURRENT ROW":
            return OverFrame(mode, 0)
        empty = _Scope(Relation(L.LogicalValues((), row()), []), self)
        value = self.expr(start, empty) if isinstance(start, exp.Expression) else None
        if isinstance(value, Literal) and isinstance(value.value, dt.timedelta):
            return OverFrame("RANGE", value.value)
        if isinstance(value, Literal) and isinstance(value.value, int):
            return OverFrame(mode, value.value)
        raise UnsupportedQueryError(f"unsupported OVER frame {spec.sql()}", location=self.location(w))


def _check_offset_function(name: str, w: exp.Window, location: SourceLocation | None) -> None:
    """Flink's rules for LAG and LEAD in a streaming OVER window: LEAD needs rows that have not arrived (Flink:
    "LEAD Function is not supported in stream mode"), and LAG takes no frame (Calcite's validator: its frame is
    always the partition's rows up to the current one, so an explicit ROWS/RANGE clause is an error)."""
    if name == "LEAD":
        raise UnsupportedQueryError(
            "LEAD is not supported in a streaming OVER window (as in Flink): it needs rows that have not arrived yet",
            location=location, hint="use LAG, which looks at the rows before the current one")
    if name == "LAG" and w.args.get("spec") is not None:
        raise ValidationError(
            "a ROWS/RANGE frame is not allowed with LAG (as in Flink): LAG looks back from the current row over the "
            "partition's rows so far, whatever the frame",
            location=location, hint="remove the frame from LAG's OVER clause (or give LAG a window without one)")
