"""GROUP BY, aggregate calls (incl. FILTER, DISTINCT, Python UDAFs), legacy group windows and
the STATE_TTL hint: pulled out of SELECT into a pre-projection, an Aggregate and a post-projection."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from sqlglot import exp

from planengine.connectors.options import parse_duration_ms
from planengine.errors import UnsupportedQueryError, ValidationError
from planengine.functions.registry import NO_LITERAL, CallContext, FunctionKind
from planengine.ir.aggregates import AggregateCall
from planengine.ir.expressions import Expr, InputRef, Literal
from planengine.ir.types import BIGINT
from planengine.ir.windows import GroupWindow, WindowSpec
from planengine.planner import logical as L
from planengine.planner.convert.grouping_sets import expand, grouping_call, grouping_sets
from planengine.planner.convert.scope import Relation, _Scope
from planengine.planner.convert.support import (
    _AGGREGATES,
    _GROUP_WINDOW_PROPERTIES,
    _GROUP_WINDOWS,
    SqlLengthBound,
    _dedupe,
    _inside_window,
    _norm,
    _validate_window,
)


def _over_window_tvf(node: L.LogicalNode) -> bool:
    while isinstance(node, L.LogicalCalc):
        node = node.input
    return isinstance(node, L.LogicalWindowTableFunction)


class AggregateConversion:
    """Mixin of ``QueryConverter``."""

    def _contains_aggregate(self, node: exp.Expression) -> bool:
        for n in node.walk():
            if isinstance(n, exp.Window):
                continue
            if self._aggregate_name(n) is not None and not _inside_window(n) and not _inside_subquery(n, node):
                return True
        return False

    def _aggregate_name(self, node: exp.Expression) -> str | None:
        if isinstance(node, exp.Filter):
            return None
        for cls, name in _AGGREGATES.items():
            if type(node) is cls:
                return name
        if isinstance(node, exp.Anonymous):
            fn = self.ctx.registry.resolve(node.name)
            if fn is not None and fn.kind is FunctionKind.AGGREGATE:
                return fn.name
            if fn is None:
                user = self.resolve_user_function(node)
                if user is not None and user[1].kind == "aggregate":
                    return node.name
        return None

    def _aggregate(self, select: exp.Select, relation: Relation, projections: list[exp.Expression],
                   having: exp.Expression | None, ttl_hint: dict[str, str] | None):
        scope = _Scope(relation, self)
        group = select.args.get("group")
        group_exprs: list[exp.Expression] = list(group.expressions) if group is not None else []
        expanded = grouping_sets(group_exprs)  # GROUPING SETS / ROLLUP / CUBE: keys and sets
        sets: list[tuple[int, ...]] | None = None
        if expanded is not None:
            group_exprs, sets = expanded
            if len(sets) == 1:  # one grouping set is a plain GROUP BY (as in Flink: no Expand)
                sets = None
            elif _over_window_tvf(relation.node):
                raise UnsupportedQueryError(
                    "GROUPING SETS, ROLLUP and CUBE over a window table function are not supported yet",
                    location=self.location(group), hint="aggregate per window first (GROUP BY window_start, "
                    "window_end, ...) into a view, then apply GROUPING SETS to that view's rows")
        # Group-by may name a SELECT alias (Flink allows it for convenience).
        aliases = {p.alias: p.this for p in projections if isinstance(p, exp.Alias)}
        resolved_groups: list[exp.Expression] = []
        window_call: exp.Anonymous | None = None
        for g in group_exprs:
            if isinstance(g, exp.Anonymous) and g.name.upper() in _GROUP_WINDOWS:
                if window_call is not None:
                    raise UnsupportedQueryError("only one group window per GROUP BY", location=self.location(g))
                window_call = g
                continue
            if isinstance(g, exp.Column) and not g.table and g.name in aliases and \
                    g.name not in [f.name for f in relation.fields]:
                g = aliases[g.name]
            resolved_groups.append(g)

        pre_exprs: list[Expr] = []
        pre_names: list[str] = []

        def pre_field(e: Expr, name: str) -> int:
            for i, existing in enumerate(pre_exprs):
                if existing == e:
                    return i
            pre_exprs.append(e)
            pre_names.append(name)
            return len(pre_exprs) - 1

        group_keys: list[int] = []
        group_sql: dict[str, int] = {}
        for i, g in enumerate(resolved_groups):
            e = self.expr(g, scope)
            idx = pre_field(e, g.alias_or_name if isinstance(g, exp.Column) else f"$f{len(pre_exprs)}")
            group_keys.append(idx)
            group_sql[_norm(g)] = i

        group_window = None
        if window_call is not None:
            group_window, _ = self._group_window(window_call, scope, pre_field)
        aggs: list[AggregateCall] = []
        agg_sql: dict[str, int] = {}
        property_sql: dict[str, int] = {}

        def collect(node: exp.Expression) -> None:
            # Pruned at windows (OVER aggregates are planned apart); not a parent walk per node, which is
            # quadratic in a deep expression.
            for n in node.walk(prune=lambda m: isinstance(m, exp.Window)):
                if isinstance(n, exp.Window):
                    continue
                target = n
                filter_expr = None
                if isinstance(n, exp.Filter):
                    target = n.this
                    filter_expr = n.expression.this if isinstance(n.expression, exp.Where) else n.expression
                name = self._aggregate_name(target)
                if name is None:
                    continue
                if target is not n and isinstance(n, exp.Filter):
                    key = _norm(n)
                elif isinstance(n.parent, exp.Filter):
                    continue
                else:
                    key = _norm(n)
                if key in agg_sql:
                    continue
                agg_sql[key] = len(aggs)
                aggs.append(self._aggregate_call(target, name, filter_expr, scope, pre_field, len(aggs)))

        for p in projections:
            collect(p)
        if having is not None:
            collect(having.this)
        if group_window is not None:
            props = []
            for p in [*projections, *([having.this] if having is not None else [])]:
                for n in p.walk():
                    if isinstance(n, exp.Anonymous) and n.name.upper() in _GROUP_WINDOW_PROPERTIES:
                        _, prop = _GROUP_WINDOW_PROPERTIES[n.name.upper()]
                        key = _norm(n)
                        if key not in property_sql:
                            property_sql[key] = len(props)
                            props.append((f"w${prop}", prop))
            group_window = GroupWindow(group_window.spec, tuple(props), group_window.time_type)

        pre = L.LogicalCalc(relation.node, tuple(pre_exprs), tuple(_dedupe(pre_names)))
        ttl_ms = self._state_ttl(ttl_hint, relation)
        agg_input: L.LogicalNode = pre
        agg_keys = tuple(group_keys)
        if sets is not None:
            if group_window is not None:
                raise UnsupportedQueryError("GROUPING SETS, ROLLUP and CUBE cannot be combined with a group window",
                                            location=self.location(group), hint="group by the window alone, or "
                                            "aggregate the window's result again with GROUPING SETS")
            agg_input, agg_keys, aggs = expand(pre, group_keys, sets, aggs)
        agg_node = L.LogicalAggregate(agg_input, agg_keys, tuple(aggs), group_window, ttl_ms)
        n_keys = len(agg_keys)  # with grouping sets: the keys and $e
        agg_relation = Relation.of(agg_node, None)
        agg_types = agg_node.field_types

        longest_key = max(map(len, [*group_sql, *agg_sql, *property_sql]), default=0)
        length_bound = SqlLengthBound()

        def special(node: exp.Expression, convert: Callable[[exp.Expression], Expr]) -> Expr | None:
            if isinstance(node, exp.Grouping | exp.GroupingId):
                return self._grouping(node, group_sql, len(group_keys), sets, agg_types)
            if isinstance(node, exp.Anonymous) and node.name.upper() == "GROUP_ID":
                raise UnsupportedQueryError("GROUP_ID() is not supported: planengine refuses duplicate grouping sets",
                                            location=self.location(node), hint="list each grouping set once and "
                                            "drop GROUP_ID()")
            key = _norm(node) if length_bound(node) <= longest_key else None
            if key in group_sql:
                i = group_sql[key]
                return InputRef(i, agg_types[i])
            if isinstance(node, exp.Column) and not node.table:
                # A group key referenced by its unqualified name.
                for g_sql, i in group_sql.items():
                    if g_sql.split(".")[-1] == _norm(node):
                        return InputRef(i, agg_types[i])
            if isinstance(node, exp.Column):
                for g_sql, i in group_sql.items():
                    if g_sql.split(".")[-1] == node.name.lower():
                        return InputRef(i, agg_types[i])
            if key in agg_sql:
                i = n_keys + agg_sql[key]
                return InputRef(i, agg_types[i])
            if key in property_sql:
                i = n_keys + len(aggs) + property_sql[key]
                return InputRef(i, agg_types[i])
            if isinstance(node, exp.Column):
                raise ValidationError(
                    f"column '{node.sql()}' must appear in GROUP BY or be used in an aggregate function",
                    location=self.location(node),
                    hint=f"add {node.sql()} to GROUP BY, or wrap it in an aggregate such as MAX({node.sql()})",
                )
            return None

        return agg_relation, projections, (having.this if having is not None else None), _Scope(
            agg_relation, self, special)

    def _grouping(self, node: exp.Expression, group_sql: dict[str, int], key_count: int,
                  sets: list[tuple[int, ...]] | None, agg_types: list) -> Expr:  # type: ignore[type-arg]
        """``GROUPING(k)`` / ``GROUPING_ID(k1, …)``: which keys a result row's grouping set left out."""
        positions = []
        for arg in node.expressions:
            position = group_sql.get(_norm(arg))
            if position is None:
                raise ValidationError(f"{arg.sql('flink')} in {node.sql('flink')} is not a GROUP BY key",
                                      location=self.location(node), hint="GROUPING takes GROUP BY expressions")
            positions.append(position)
        if sets is None:  # a plain GROUP BY: every key is in the one grouping set
            return Literal(0, BIGINT.with_nullable(False))
        return grouping_call(self.ctx.registry, InputRef(key_count, agg_types[key_count]), positions, key_count, sets)

    def _aggregate_call(self, node: exp.Expression, name: str, filter_expr: exp.Expression | None, scope: _Scope,
                        pre_field: Callable[[Expr, str], int], ordinal: int) -> AggregateCall:
        distinct = False
        operands: list[exp.Expression] = []
        this = node.this if "this" in node.args else None
        if isinstance(this, exp.Distinct):
            distinct = True
            operands = list(this.expressions)
        elif isinstance(node, exp.Anonymous):
            operands = list(node.expressions)
        elif this is not None and not isinstance(this, exp.Star):
            operands = [this]
        if isinstance(node, exp.GroupConcat) and node.args.get("separator") is not None:
            operands.append(node.args["separator"])
        for key in ("expressions",):
            if not isinstance(node, exp.Anonymous) and node.args.get(key) and not isinstance(this, exp.Distinct):
                operands.extend(node.args[key])
        converted = [self.expr(o, scope) for o in operands]
        constants: list[Literal] = []
        args: list[int] = []
        for i, (o, e) in enumerate(zip(operands, converted)):
            if name == "LISTAGG" and i == 1 and isinstance(e, Literal):
                constants.append(e)
                continue
            args.append(pre_field(e, o.alias_or_name if isinstance(o, exp.Column) else f"$f{i}"))
        filter_arg = None
        if filter_expr is not None:
            f = self.expr(filter_expr, scope)
            filter_arg = pre_field(f, f"$f_filter{ordinal}")
        fn = self.ctx.registry.resolve(name)
        if fn is None and isinstance(node, exp.Anonymous):
            user = self.resolve_user_function(node)
            if user is not None:
                return AggregateCall(user[0].name, None, tuple(args), user[1].result_type, f"EXPR${ordinal}",
                                       distinct, filter_arg, user_function=user[0])
        if fn is None:
            raise ValidationError(f"unknown aggregate function {name}", location=self.location(node))
        arg_types = tuple(converted[i].type for i in range(len(converted)) if not (name == "LISTAGG" and i == 1))
        try:
            result = fn.infer_type(CallContext(name, arg_types, tuple(NO_LITERAL for _ in arg_types)))
        except ValidationError as error:
            raise ValidationError(error.message, location=self.location(node), hint=error.hint) from None
        return AggregateCall(fn.name, fn.version, tuple(args), result, f"EXPR${ordinal}",
                               distinct, filter_arg, constants=tuple(constants))

    def _group_window(self, call: exp.Anonymous, scope: _Scope, pre_field: Callable[[Expr, str], int]):
        kind = call.name.upper()
        args = [self.expr(a, scope) for a in call.expressions]
        time = args[0] if args else None
        if not isinstance(time, InputRef) or not time.type.is_time_attribute:
            raise ValidationError(f"the first argument of {kind} must be a time attribute column",
                                  location=self.location(call))
        intervals = []
        for a in args[1:]:
            if not isinstance(a, Literal) or not isinstance(a.value, dt.timedelta):
                raise ValidationError(f"{kind} takes interval literals", location=self.location(call))
            intervals.append(a.value)
        time_idx = pre_field(time, "$rowtime")
        if kind == "TUMBLE":
            spec = WindowSpec("TUMBLE", time_idx, size=intervals[0],
                                offset=intervals[1] if len(intervals) > 1 else None, is_rowtime=time.type.is_rowtime)
        elif kind == "HOP":
            spec = WindowSpec("HOP", time_idx, slide=intervals[0], size=intervals[1],
                                is_rowtime=time.type.is_rowtime)
        else:
            spec = WindowSpec("SESSION", time_idx, gap=intervals[0], is_rowtime=time.type.is_rowtime)
        _validate_window(spec, self.location(call))
        return GroupWindow(spec, (), time.type), time_idx

    def _state_ttl(self, hint: dict[str, str] | None, relation: Relation) -> int | None:
        if not hint:
            return None

        qualifiers = {f.qualifier for f in relation.fields}
        for key, value in hint.items():
            if key in qualifiers or len(hint) == 1:
                return parse_duration_ms(value)
        return None


def _inside_subquery(n: exp.Expression, root: exp.Expression) -> bool:
    """An aggregate of a sub-query belongs to that sub-query's SELECT, not to the query around it."""
    if n is root:
        return False
    parent = n.parent
    while parent is not None and parent is not root:
        if isinstance(parent, exp.Select | exp.Subquery):
            return True
        parent = parent.parent
    return False
