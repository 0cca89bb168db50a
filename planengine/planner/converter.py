"""SQL → logical plan: resolves names against catalogs and builds typed logical nodes.

This is the only place that walks sqlglot query trees. Views are inlined here (a view is planned from its
stored query), ``IN``/``EXISTS`` sub-queries in WHERE are decorrelated into semi/anti joins, and
aggregates, window functions and legacy group windows are pulled out of SELECT into their own nodes, so
every later phase sees plain relational operators.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from planengine.catalog.objects import CatalogTable, CatalogView, ObjectIdentifier
from planengine.errors import SourceLocation, UnsupportedQueryError, ValidationError
from planengine.functions.registry import NO_LITERAL, CallContext, FunctionKind, FunctionRegistry
from planengine.planner import logical as L
from planengine.planner.expressions import Call, Expr, FieldAccess, FunctionRef, InputRef, Literal, conjunctions
from planengine.planner.rex_converter import convert_expression
from planengine.sql import accessors
from planengine.sql.ast import WindowTableFunction
from planengine.types import BIGINT, BOOLEAN, DataType, Kind, RowField, TimeAttribute, common_type, row

# sqlglot aggregate classes → built-in aggregate names.
_AGGREGATES: dict[type[exp.Expression], str] = {
    exp.Count: "COUNT",
    exp.Sum: "SUM",
    exp.Avg: "AVG",
    exp.Min: "MIN",
    exp.Max: "MAX",
    exp.FirstValue: "FIRST_VALUE",
    exp.LastValue: "LAST_VALUE",
    exp.Stddev: "STDDEV_SAMP",
    exp.StddevPop: "STDDEV_POP",
    exp.StddevSamp: "STDDEV_SAMP",
    exp.Variance: "VAR_SAMP",
    exp.VariancePop: "VAR_POP",
    exp.GroupConcat: "LISTAGG",
    exp.ArrayAgg: "COLLECT",
    exp.LogicalAnd: "BOOL_AND",
    exp.LogicalOr: "BOOL_OR",
}
_RANKING: dict[type[exp.Expression], str] = {
    exp.RowNumber: "ROW_NUMBER",
    exp.Rank: "RANK",
    exp.DenseRank: "DENSE_RANK",
    exp.Lag: "LAG",
    exp.Lead: "LEAD",
}
_GROUP_WINDOWS = {"TUMBLE", "HOP", "SESSION"}
_GROUP_WINDOW_PROPERTIES = {
    f"{w}_{p}": (w, p.lower()) for w in _GROUP_WINDOWS for p in ("START", "END", "ROWTIME", "PROCTIME")
}


class CatalogAccess:
    """What the converter needs from the catalog manager (kept narrow so tests can plan without one)."""

    def qualify(self, parts: tuple[str, ...]) -> ObjectIdentifier:  # pragma: no cover - protocol
        raise NotImplementedError

    def get_table(self, identifier: ObjectIdentifier) -> Any:  # returns an entry with .object, .is_temporary
        raise NotImplementedError


@dataclass
class _Field:
    qualifier: str | None
    name: str
    type: DataType


@dataclass
class Relation:
    """A converted FROM item: the node plus the names it can be referred to by."""

    node: L.LogicalNode
    fields: list[_Field]

    @staticmethod
    def of(node: L.LogicalNode, qualifier: str | None) -> Relation:
        return Relation(node, [_Field(qualifier, f.name, f.type) for f in node.row_type.fields])


class _Scope:
    """Column resolution over one relation, plus an optional outer scope for correlated sub-queries."""

    def __init__(self, relation: Relation, converter: QueryConverter,
                 special: Callable[[exp.Expression, Callable[[exp.Expression], Expr]], Expr | None] | None = None):
        self.relation = relation
        self.converter = converter
        self.special = special

    def resolve_column(self, column: exp.Column) -> Expr:
        name = column.name
        qualifier = column.table or None
        parts = [p.name for p in column.parts]
        matches = [i for i, f in enumerate(self.relation.fields)
                   if f.name == name and (qualifier is None or f.qualifier == qualifier)]
        if len(matches) == 1:
            f = self.relation.fields[matches[0]]
            return InputRef(matches[0], f.type)
        if len(matches) > 1:
            raise ValidationError(
                f"column '{name}' is ambiguous", location=self.converter.location(column),
                hint="qualify it with a table name or alias, e.g. "
                     + " or ".join(f"{f.qualifier}.{name}" for f in (self.relation.fields[i] for i in matches)
                                   if f.qualifier),
            )
        # Nested field access: `r.f` where r is a ROW column, or `t.r.f`.
        if len(parts) >= 2:
            for start in range(len(parts) - 1):
                head_qualifier = parts[start - 1] if start > 0 else None
                head = parts[start]
                idx = [i for i, f in enumerate(self.relation.fields)
                       if f.name == head and (head_qualifier is None or f.qualifier == head_qualifier)]
                if len(idx) == 1:
                    expr: Expr = InputRef(idx[0], self.relation.fields[idx[0]].type)
                    for part in parts[start + 1:]:
                        t = expr.type
                        if t.kind is not Kind.ROW or part not in t.field_names():
                            break
                        ft = t.fields[t.field_index(part)].type
                        expr = FieldAccess(expr, part, ft.with_nullable(ft.nullable or t.nullable))
                    else:
                        return expr
        available = ", ".join(sorted({(f"{f.qualifier}." if f.qualifier else "") + f.name
                                      for f in self.relation.fields}))
        from difflib import get_close_matches

        close = get_close_matches(name, [f.name for f in self.relation.fields], n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ValidationError(
            f"column '{column.sql()}' not found", location=self.converter.location(column),
            hint=f"{hint}available columns: {available}",
        )

    def convert_special(self, node: exp.Expression, convert: Callable[[exp.Expression], Expr]) -> Expr | None:
        if self.special is not None:
            result = self.special(node, convert)
            if result is not None:
                return result
        if isinstance(node, exp.Anonymous):
            user = self.converter.user_function(node, convert)
            if user is not None:
                return user
        if isinstance(node, exp.Subquery | exp.Exists) or (isinstance(node, exp.In) and node.args.get("query")):
            raise UnsupportedQueryError(
                "sub-queries are supported only as IN / EXISTS predicates in WHERE (combined with AND)",
                location=self.converter.location(node),
                hint="rewrite the scalar sub-query as a JOIN",
            )
        return None


@dataclass
class PlannerContext:
    catalogs: CatalogAccess
    registry: FunctionRegistry
    config: dict[str, str] = field(default_factory=dict)
    statement_location: SourceLocation | None = None
    # Python/catalog functions: name parts -> (FunctionRef, result type resolver) — resolved by the env.
    function_resolver: Callable[[str, Sequence[DataType]], tuple[FunctionRef, DataType] | None] | None = None


class QueryConverter:
    """Converts one query (and the views it uses) into a logical node."""

    def __init__(self, context: PlannerContext):
        self.ctx = context
        self.ctes: list[dict[str, L.LogicalNode]] = []
        self.view_stack: list[ObjectIdentifier] = []

    # --- locations ------------------------------------------------------------------------------------
    def location(self, node: exp.Expression | None) -> SourceLocation | None:
        base = self.ctx.statement_location
        if node is None:
            return base
        meta = getattr(node, "meta", None) or {}
        if meta.get("line") is None and isinstance(node, exp.Column) and node.this is not None:
            meta = getattr(node.this, "meta", None) or {}
        line = meta.get("line")
        if line is None:
            return base
        col = token_start_column(meta)
        # sqlglot positions are absolute in the script (the front end parses with script offsets)
        if base is not None:
            return SourceLocation(base.statement, line, col, base.source)
        return SourceLocation(None, line, col)

    # --- expressions ------------------------------------------------------------------------------------
    def expr(self, node: exp.Expression, scope: _Scope) -> Expr:
        return convert_expression(node, scope, self.ctx.registry)

    def resolve_user_function(self, node: exp.Anonymous) -> tuple[FunctionRef, Any] | None:
        """A catalog or temporary (system) Python function, resolved Flink's way (built-ins first)."""
        name = node.name
        if self.ctx.registry.resolve(name) is not None:
            return None
        resolve = getattr(self.ctx.catalogs, "resolve_function", None)
        found = resolve((name,)) if resolve is not None else None
        if found is None:
            return None
        from planengine.functions import python_udf

        kind, ident, function = found
        try:
            loaded = python_udf.load(function.class_name)
        except ValidationError as error:
            raise ValidationError(error.message, location=self.location(node), hint=error.hint) from None
        if kind == "system":
            ref = FunctionRef(str(ident), None, system=True, class_name=function.class_name, temporary=True)
        else:
            temporary = bool(getattr(self.ctx.catalogs, "is_temporary_function", lambda _i: False)(ident))
            ref = FunctionRef(ident.name, None, catalog_identifier=str(ident), class_name=function.class_name,
                              temporary=temporary)
        return ref, loaded

    def user_function(self, node: exp.Anonymous, convert: Callable[[exp.Expression], Expr]) -> Expr | None:
        resolved = self.resolve_user_function(node)
        if resolved is None:
            return None
        ref, loaded = resolved
        if loaded.kind != "scalar":
            raise ValidationError(
                f"{node.name} is a {loaded.kind} function and cannot be called as a scalar here",
                location=self.location(node),
                hint="call table functions with LATERAL TABLE(...) and aggregate functions in an aggregation")
        return Call(ref, tuple(convert(a) for a in node.expressions), loaded.result_type)

    # --- queries ------------------------------------------------------------------------------------------
    def convert_query(self, node: exp.Expression) -> L.LogicalNode:
        if isinstance(node, exp.Subquery):
            return self.convert_query(node.this)
        with_ = node.args.get("with") or node.args.get("with_")
        pushed = False
        if with_ is not None:
            self.ctes.append({})
            pushed = True
            for cte in with_.expressions:
                self.ctes[-1][cte.alias] = self._rename(self.convert_query(cte.this), cte.args["alias"])
        try:
            if isinstance(node, exp.Select):
                return self._select(node)
            if isinstance(node, exp.Union):
                return self._union(node)
            if isinstance(node, exp.Values):
                return self._values(node)
            if isinstance(node, exp.Intersect | exp.Except):
                raise UnsupportedQueryError(f"{node.key.upper()} is not supported in streaming queries yet",
                                            location=self.location(node), hint="rewrite it with a semi/anti join")
            raise UnsupportedQueryError(f"unsupported query form {node.key.upper()}", location=self.location(node))
        finally:
            if pushed:
                self.ctes.pop()

    def _rename(self, node: L.LogicalNode, alias: exp.TableAlias | None) -> L.LogicalNode:
        if alias is None or not alias.columns:
            return node
        names = [c.name for c in alias.columns]
        if len(names) != len(node.field_names):
            raise ValidationError(
                f"alias lists {len(names)} columns but the query has {len(node.field_names)}",
                location=self.location(alias),
            )
        proj = tuple(InputRef(i, t) for i, t in enumerate(node.field_types))
        return L.LogicalCalc(node, proj, tuple(names))

    def _values(self, node: exp.Values) -> L.LogicalNode:
        empty = _Scope(Relation(L.LogicalValues((), row()), []), self)
        rows: list[tuple[Expr, ...]] = []
        for tup in node.expressions:
            items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
            rows.append(tuple(self.expr(i, empty) for i in items))
        width = len(rows[0])
        if any(len(r) != width for r in rows):
            raise ValidationError("VALUES rows have different numbers of columns", location=self.location(node))
        types = []
        for c in range(width):
            t = common_type([r[c].type for r in rows])
            if t is None:
                raise ValidationError(f"VALUES column {c + 1} mixes incompatible types", location=self.location(node))
            types.append(t)
        alias = node.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else \
            [f"EXPR${i}" for i in range(width)]
        from planengine.planner.expressions import input_refs
        from planengine.planner.rex_converter import fold_constant

        out_rows = []
        for r in rows:
            out = []
            for i, v in enumerate(r):
                if isinstance(v, Call):
                    v = fold_constant(v) or v
                if isinstance(v, Literal):
                    v = _cast_literal(v, types[i])
                elif input_refs(v):
                    raise UnsupportedQueryError("VALUES rows must be constant expressions",
                                                location=self.location(node))
                elif v.type != types[i]:
                    v = cast_to(v, types[i])
                out.append(v)
            out_rows.append(tuple(out))
        return L.LogicalValues(tuple(out_rows), row(*(RowField(n, t) for n, t in zip(names, types))))

    def _union(self, node: exp.Union) -> L.LogicalNode:
        inputs: list[L.LogicalNode] = []
        distinct = bool(node.args.get("distinct"))

        def collect(n: exp.Expression) -> None:
            if isinstance(n, exp.Union) and bool(n.args.get("distinct")) == distinct and not n.args.get("with"):
                collect(n.this)
                collect(n.expression)
            else:
                inputs.append(self.convert_query(n))

        collect(node)
        width = len(inputs[0].field_names)
        for i, other in enumerate(inputs[1:], start=2):
            if len(other.field_names) != width:
                raise ValidationError(
                    f"UNION input {i} has {len(other.field_names)} columns but the first has {width}",
                    location=self.location(node),
                )
        union = L.LogicalUnion(tuple(self._coerce_union_inputs(inputs)), all=True)
        if distinct:
            return L.LogicalAggregate(union, tuple(range(width)), ())
        return union

    def _coerce_union_inputs(self, inputs: list[L.LogicalNode]) -> list[L.LogicalNode]:
        target = []
        for c in range(len(inputs[0].field_names)):
            t = common_type([i.field_types[c] for i in inputs])
            if t is None:
                raise ValidationError(f"UNION column {c + 1} mixes incompatible types")
            target.append(t)
        out = []
        for node in inputs:
            if [str(t.without_time_attribute()) for t in node.field_types] == [
                    str(t.without_time_attribute()) for t in target]:
                out.append(node)
                continue
            proj = tuple(cast_to(InputRef(i, t), target[i]) for i, t in enumerate(node.field_types))
            out.append(L.LogicalCalc(node, proj, tuple(inputs[0].field_names)))
        return out

    # --- SELECT ---------------------------------------------------------------------------------------------
    def _select(self, select: exp.Select) -> L.LogicalNode:
        if select.args.get("order") is not None:
            select = select.copy()  # ORDER BY targets may be rewritten to hidden columns below
        relation = self._from(select)
        hints = accessors.query_hints(select)
        ttl_hint = {h.name: h.options for h in hints}.get("STATE_TTL")

        where = select.args.get("where")
        if where is not None:
            relation = self._where(relation, where.this)

        group = select.args.get("group")
        projections = list(select.expressions)
        if len(projections) == 1 and isinstance(projections[0], exp.Star) and not group:
            node = relation.node
            names = [f.name for f in relation.fields]
            node = self._distinct_order_limit(select, node, relation, names)
            return node
        projections = self._expand_stars(projections, relation)

        having = select.args.get("having")
        has_aggregates = any(self._contains_aggregate(p) for p in projections) or (
            having is not None and self._contains_aggregate(having))
        if group is not None or has_aggregates:
            relation, projections, having_expr, scope = self._aggregate(select, relation, projections, having,
                                                                        ttl_hint)
        else:
            scope = _Scope(relation, self)
            having_expr = None

        if any(p.find(exp.Window) for p in projections):
            relation, scope = self._over(relation, projections, scope)

        exprs = []
        names = []
        for i, p in enumerate(projections):
            exprs.append(self.expr(p.this if isinstance(p, exp.Alias) else p, scope))
            names.append(_output_name(p, i))
        names = _dedupe(names)
        condition = self.expr(having_expr, scope) if having_expr is not None else None
        hidden = self._hidden_order_columns(select, exprs, names, scope)
        hidden_names = [f"$order{i}" for i in range(len(hidden))]
        node: L.LogicalNode = L.LogicalCalc(relation.node, tuple(exprs + hidden), tuple(names + hidden_names),
                                            condition)
        node = self._distinct_order_limit(select, node, Relation.of(node, None), names + hidden_names)
        if hidden:
            width = len(names)
            node = L.LogicalCalc(node, tuple(InputRef(i, t) for i, t in enumerate(node.field_types[:width])),
                                 tuple(names))
        return node

    def _hidden_order_columns(self, select: exp.Select, exprs: list[Expr], names: list[str], scope: _Scope
                              ) -> list[Expr]:
        """ORDER BY may name input columns that SELECT does not output: carry them as hidden columns."""
        order = select.args.get("order")
        if order is None or select.args.get("distinct"):
            return []
        hidden: list[Expr] = []
        for ordered in order.expressions:
            target = ordered.this
            if isinstance(target, exp.Literal) or (isinstance(target, exp.Column) and not target.table
                                                   and target.name in names):
                continue
            e = self.expr(target, scope)
            if e in exprs:
                ordered.set("this", exp.column(names[exprs.index(e)], quoted=True))
                continue
            hidden.append(e)
            ordered.set("this", exp.column(f"$order{len(hidden) - 1}", quoted=True))
        return hidden

    def _distinct_order_limit(self, select: exp.Select, node: L.LogicalNode, relation: Relation,
                              names: list[str]) -> L.LogicalNode:
        if select.args.get("distinct"):
            node = L.LogicalAggregate(node, tuple(range(len(node.field_names))), ())
        order = select.args.get("order")
        limit = select.args.get("limit")
        offset = select.args.get("offset")
        if order is None and limit is None and offset is None:
            return node
        keys: list[L.SortKey] = []
        if order is not None:
            scope = _Scope(Relation.of(node, None), self)
            for ordered in order.expressions:
                target = ordered.this
                if isinstance(target, exp.Literal) and not target.is_string:
                    idx = int(target.this) - 1
                else:
                    e = self.expr(target, scope)
                    if not isinstance(e, InputRef):
                        raise UnsupportedQueryError("ORDER BY supports output columns only",
                                                    location=self.location(ordered),
                                                    hint="add the expression to SELECT and order by its alias")
                    idx = e.index
                desc = bool(ordered.args.get("desc"))
                nulls_first = ordered.args.get("nulls_first")
                keys.append(L.SortKey(idx, not desc, nulls_first))
        fetch = int(limit.expression.this) if limit is not None else None
        skip = int(offset.expression.this) if offset is not None else 0
        return L.LogicalSort(node, tuple(keys), skip, fetch)

    def _expand_stars(self, projections: list[exp.Expression], relation: Relation) -> list[exp.Expression]:
        out: list[exp.Expression] = []
        for p in projections:
            if isinstance(p, exp.Star):
                for f in relation.fields:
                    out.append(_column(f.name, f.qualifier))
            elif isinstance(p, exp.Column) and isinstance(p.this, exp.Star):
                qualifier = p.table
                matched = [f for f in relation.fields if f.qualifier == qualifier]
                if not matched:
                    raise ValidationError(f"unknown table alias '{qualifier}' in '{qualifier}.*'",
                                          location=self.location(p))
                out.extend(_column(f.name, f.qualifier) for f in matched)
            else:
                out.append(p)
        return out

    # --- FROM -----------------------------------------------------------------------------------------------
    def _from(self, select: exp.Select) -> Relation:
        from_ = select.args.get("from") or select.args.get("from_")
        if from_ is None:
            one = L.LogicalValues(((Literal(0, BIGINT.with_nullable(False)),),),
                                  row(("ZERO", BIGINT.with_nullable(False))))
            return Relation(one, [])
        relation = self._from_item(from_.this)
        for join in select.args.get("joins") or []:
            relation = self._join(relation, join)
        return relation

    def _from_item(self, item: exp.Expression) -> Relation:
        if isinstance(item, exp.Table):
            if isinstance(item.this, exp.Anonymous | exp.Func) and not isinstance(item.this, exp.Identifier):
                raise UnsupportedQueryError(f"table function {item.this.sql()} is not supported",
                                            location=self.location(item))
            alias = item.alias or item.name
            node = self._table(item)
            return Relation.of(self._rename(node, item.args.get("alias")), alias)
        if isinstance(item, WindowTableFunction):
            return Relation.of(self._window_tvf(item), item.alias or None)
        if isinstance(item, exp.Subquery):
            node = self.convert_query(item.this)
            return Relation.of(self._rename(node, item.args.get("alias")), item.alias or None)
        if isinstance(item, exp.Unnest):
            raise UnsupportedQueryError("UNNEST must be joined to a table: FROM t CROSS JOIN UNNEST(t.arr) AS x (e)",
                                        location=self.location(item))
        if isinstance(item, exp.Values):
            node = self._values(item)
            return Relation.of(node, item.alias or None)
        raise UnsupportedQueryError(f"unsupported FROM item {item.sql()!r}", location=self.location(item))

    def _table(self, table: exp.Table) -> L.LogicalNode:
        parts = tuple(p.name for p in table.parts)
        if len(parts) == 1:
            for frame in reversed(self.ctes):
                if parts[0] in frame:
                    return frame[parts[0]]
        identifier = self._qualify(parts, table)
        entry = self.ctx.catalogs.get_table(identifier)
        obj = entry.object
        if isinstance(obj, CatalogView):
            if identifier in self.view_stack:
                raise ValidationError(f"view {identifier} refers to itself", location=self.location(table))
            from planengine.sql import parse_query

            self.view_stack.append(identifier)
            try:
                return self.convert_query(parse_query(obj.query))
            finally:
                self.view_stack.pop()
        assert isinstance(obj, CatalogTable)
        hint_options = accessors.table_options_hint(table)
        ref = L.TableRef(identifier, obj, entry.is_temporary, tuple(sorted(hint_options.items())))
        return L.LogicalScan(ref)

    def _qualify(self, parts: tuple[str, ...], node: exp.Expression) -> ObjectIdentifier:
        try:
            return self.ctx.catalogs.qualify(parts)
        except ValidationError as error:
            raise type(error)(error.message, location=self.location(node), hint=error.hint) from None

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
        spec = L.WindowSpec(
            kind=tvf.kind, time_field=time_ref.index, size=interval("size"), slide=interval("slide"),
            step=interval("step"), gap=interval("gap"), offset=interval("offset"),
            partition_keys=partition_keys, is_rowtime=not time_ref.type.is_proctime,
        )
        _validate_window(spec, self.location(tvf))
        return L.LogicalWindowTableFunction(node, spec)

    def _field_index(self, column: exp.Expression, scope: _Scope) -> int:
        e = self.expr(column, scope)
        if not isinstance(e, InputRef):
            raise ValidationError(f"expected a column, got {column.sql()}", location=self.location(column))
        return e.index

    def _join(self, left: Relation, join: exp.Join) -> Relation:
        side = (join.args.get("side") or "").upper()
        kind = (join.args.get("kind") or "").upper()
        target = join.this
        on = join.args.get("on")
        using = join.args.get("using")
        if isinstance(target, exp.Unnest) or (isinstance(target, exp.Table) and isinstance(target.this, exp.Unnest)):
            return self._unnest(left, target if isinstance(target, exp.Unnest) else target.this, side)
        if isinstance(target, exp.Lateral):
            return self._lateral_table(left, target, side, join.args.get("on"))
        if kind == "CROSS":
            join_type = "INNER"
        elif side in ("LEFT", "RIGHT", "FULL"):
            join_type = side
        elif kind in ("SEMI", "ANTI"):
            join_type = kind
        else:
            join_type = "INNER"

        as_of = accessors.system_time_as_of(target) if isinstance(target, exp.Table) else None
        right = self._from_item(target)
        combined_fields = left.fields + right.fields
        combined = Relation(left.node, combined_fields)  # node placeholder for resolution only
        scope = _Scope(combined, self)
        condition: Expr | None = None
        if on is not None:
            condition = self.expr(on, scope)
        elif using:
            eqs = []
            for ident in using:
                name = ident.name
                li = [i for i, f in enumerate(left.fields) if f.name == name]
                ri = [i for i, f in enumerate(right.fields) if f.name == name]
                if len(li) != 1 or len(ri) != 1:
                    raise ValidationError(f"USING column '{name}' must appear once on each side",
                                          location=self.location(join))
                lt, rt = left.fields[li[0]].type, right.fields[ri[0]].type
                eqs.append(equals(InputRef(li[0], lt), InputRef(len(left.fields) + ri[0], rt), self.ctx.registry))
            condition = and_all(eqs, self.ctx.registry)
        if condition is not None and condition.type.kind is not Kind.BOOLEAN:
            raise ValidationError("join condition must be a BOOLEAN expression", location=self.location(on))

        if as_of is not None:
            if join_type not in ("INNER", "LEFT"):
                raise UnsupportedQueryError(
                    "FOR SYSTEM_TIME AS OF joins support INNER and LEFT joins only", location=self.location(join))
            period = self.expr(as_of, _Scope(left, self))
            right_ref = right.node.table if isinstance(right.node, L.LogicalScan) else None
            node: L.LogicalNode = L.LogicalSnapshotJoin(left.node, right.node, join_type, condition, period,
                                                        right_ref)
        else:
            node = L.LogicalJoin(left.node, right.node, join_type, condition)
        fields_ = [_Field(f.qualifier, f.name, t.type) for f, t in zip(combined_fields, node.row_type.fields)]
        return Relation(node, fields_)

    def _unnest(self, left: Relation, unnest: exp.Unnest, side: str) -> Relation:
        scope = _Scope(left, self)
        operands = unnest.expressions
        if len(operands) != 1:
            raise UnsupportedQueryError("UNNEST takes exactly one array, map or multiset",
                                        location=self.location(unnest))
        arg = self.expr(operands[0], scope)
        if arg.type.kind not in (Kind.ARRAY, Kind.MAP, Kind.MULTISET):
            raise ValidationError(f"UNNEST needs an ARRAY, MAP or MULTISET, got {arg.type}",
                                  location=self.location(unnest))
        alias = unnest.args.get("alias")
        ordinality = bool(unnest.args.get("offset"))
        if arg.type.kind is Kind.MAP:
            width = 2
        elif arg.type.element is not None and arg.type.element.kind is Kind.ROW:
            width = len(arg.type.element.fields)
        else:
            width = 1
        width += 1 if ordinality else 0
        if alias is not None and alias.columns:
            names = [c.name for c in alias.columns]
        elif arg.type.element is not None and arg.type.element.kind is Kind.ROW:
            names = arg.type.element.field_names()
        else:
            names = [f"EXPR${i}" for i in range(width)]
        if len(names) != width:
            raise ValidationError(f"UNNEST produces {width} columns but the alias names {len(names)}",
                                  location=self.location(unnest))
        node = L.LogicalCorrelate(left.node, arg, tuple(names), "LEFT" if side == "LEFT" else "INNER", ordinality)
        qualifier = alias.name if alias is not None and alias.name else None
        fields_ = left.fields + [_Field(qualifier, f.name, f.type) for f in node.element_fields()]
        return Relation(node, fields_)

    def _lateral_table(self, left: Relation, lateral: exp.Lateral, side: str, on: exp.Expression | None
                       ) -> Relation:
        """``LATERAL TABLE(f(args)) AS T(a, b)``: a correlated call of a Python table function."""
        inner = lateral.this
        call = inner.expressions[0] if isinstance(inner, exp.Anonymous) and inner.name.upper() == "TABLE" \
            and inner.expressions else inner
        if not isinstance(call, exp.Anonymous):
            raise UnsupportedQueryError(f"unsupported LATERAL {inner.sql()}", location=self.location(lateral))
        resolved = self.resolve_user_function(call)
        if resolved is None or resolved[1].kind != "table":
            raise ValidationError(f"{call.name} is not a table function", location=self.location(lateral),
                                  hint="register a Python generator with @udtf(result_type='ROW<...>') via "
                                       "CREATE TEMPORARY FUNCTION ... LANGUAGE PYTHON")
        if on is not None and not (isinstance(on, exp.Boolean) and on.this is True):
            raise UnsupportedQueryError("LEFT JOIN LATERAL TABLE supports only ON TRUE", location=self.location(on))
        ref, loaded = resolved
        scope = _Scope(left, self)
        invocation = Call(ref, tuple(self.expr(a, scope) for a in call.expressions), loaded.result_type)
        t = loaded.result_type
        produced = t.field_names() if t.kind is Kind.ROW else ["f0"]
        alias = lateral.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else produced
        if len(names) != len(produced):
            raise ValidationError(f"{call.name} produces {len(produced)} columns but the alias names {len(names)}",
                                  location=self.location(lateral))
        node = L.LogicalCorrelate(left.node, invocation, tuple(names), "LEFT" if side == "LEFT" else "INNER",
                                  False, table_function=True)
        qualifier = alias.name if alias is not None and alias.name else None
        return Relation(node, left.fields + [_Field(qualifier, f.name, f.type) for f in node.element_fields()])

    # --- WHERE (with IN / EXISTS decorrelation) --------------------------------------------------------------
    def _where(self, relation: Relation, predicate: exp.Expression) -> Relation:
        plain: list[exp.Expression] = []
        subquery_preds: list[exp.Expression] = []
        for conjunct in _split_and(predicate):
            if _is_subquery_predicate(conjunct):
                subquery_preds.append(conjunct)
            else:
                plain.append(conjunct)
        node = relation.node
        if plain:
            scope = _Scope(relation, self)
            cond = and_all([self.expr(p, scope) for p in plain], self.ctx.registry)
            node = L.LogicalCalc(node, _identity(node), tuple(node.field_names), cond)
            relation = Relation(node, relation.fields)
        for pred in subquery_preds:
            relation = self._decorrelate(relation, pred)
        return relation

    def _decorrelate(self, relation: Relation, pred: exp.Expression) -> Relation:
        negated = isinstance(pred, exp.Not)
        inner = pred.this if negated else pred
        join_type = "ANTI" if negated else "SEMI"
        if isinstance(inner, exp.In):
            query = inner.args["query"]
            sub = self.convert_query(query.this if isinstance(query, exp.Subquery) else query)
            if len(sub.field_names) != 1:
                raise ValidationError("an IN sub-query must select exactly one column", location=self.location(inner))
            left_expr = self.expr(inner.this, _Scope(relation, self))
            right_ref = InputRef(len(relation.fields), sub.field_types[0])
            left_ref, node_left = self._as_field(relation, left_expr)
            cond = equals(left_ref, right_ref, self.ctx.registry)
            join = L.LogicalJoin(node_left.node, sub, join_type, cond)
            return self._restore_fields(join, relation)
        assert isinstance(inner, exp.Exists)
        subselect = inner.this.this if isinstance(inner.this, exp.Subquery) else inner.this
        # Correlated EXISTS: conditions referring to the outer query become the join condition.
        where = subselect.args.get("where")
        correlated: list[exp.Expression] = []
        local: list[exp.Expression] = []
        inner_from = self._from(subselect)
        for conj in _split_and(where.this) if where is not None else []:
            if self._refers_outside(conj, inner_from):
                correlated.append(conj)
            else:
                local.append(conj)
        stripped = subselect.copy()
        stripped.set("where", exp.Where(this=exp.and_(*local)) if local else None)
        stripped.set("expressions", [exp.Star()])
        sub_relation = self._from(stripped)
        if local:
            sub_relation = self._where(sub_relation, exp.and_(*local))
        combined = Relation(relation.node, relation.fields + sub_relation.fields)
        scope = _Scope(combined, self)
        cond = and_all([self.expr(c, scope) for c in correlated], self.ctx.registry) if correlated else None
        join = L.LogicalJoin(relation.node, sub_relation.node, join_type, cond)
        return self._restore_fields(join, relation)

    def _refers_outside(self, conj: exp.Expression, inner: Relation) -> bool:
        inner_qualifiers = {f.qualifier for f in inner.fields}
        inner_names = {f.name for f in inner.fields}
        for column in conj.find_all(exp.Column):
            if column.table and column.table not in inner_qualifiers:
                return True
            if not column.table and column.name not in inner_names:
                return True
        return False

    def _as_field(self, relation: Relation, expr: Expr) -> tuple[InputRef, Relation]:
        if isinstance(expr, InputRef):
            return expr, relation
        node = relation.node
        proj = (*_identity(node), expr)
        calc = L.LogicalCalc(node, proj, (*node.field_names, f"$f{len(node.field_names)}"))
        fields_ = [*relation.fields, _Field(None, f"$f{len(node.field_names)}", expr.type)]
        return InputRef(len(node.field_names), expr.type), Relation(calc, fields_)

    def _restore_fields(self, join: L.LogicalJoin, relation: Relation) -> Relation:
        width = len(relation.fields)
        if len(join.field_names) == width:
            return Relation(join, relation.fields)
        proj = tuple(InputRef(i, t) for i, t in enumerate(join.field_types[:width]))
        calc = L.LogicalCalc(join, proj, tuple(join.field_names[:width]))
        return Relation(calc, relation.fields)

    # --- aggregation ------------------------------------------------------------------------------------------
    def _contains_aggregate(self, node: exp.Expression) -> bool:
        for n in node.walk():
            if isinstance(n, exp.Window):
                continue
            if self._aggregate_name(n) is not None and not _inside_window(n):
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
        aggs: list[L.AggregateCall] = []
        agg_sql: dict[str, int] = {}
        property_sql: dict[str, int] = {}

        def collect(node: exp.Expression) -> None:
            for n in node.walk():
                if _inside_window(n) or isinstance(n, exp.Window):
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
            group_window = L.GroupWindow(group_window.spec, tuple(props), group_window.time_type)

        pre = L.LogicalCalc(relation.node, tuple(pre_exprs), tuple(_dedupe(pre_names)))
        ttl_ms = self._state_ttl(ttl_hint, relation)
        agg_node = L.LogicalAggregate(pre, tuple(group_keys), tuple(aggs), group_window, ttl_ms)
        n_keys = len(group_keys)
        agg_relation = Relation.of(agg_node, None)
        agg_types = agg_node.field_types

        def special(node: exp.Expression, convert: Callable[[exp.Expression], Expr]) -> Expr | None:
            key = _norm(node)
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

    def _aggregate_call(self, node: exp.Expression, name: str, filter_expr: exp.Expression | None, scope: _Scope,
                        pre_field: Callable[[Expr, str], int], ordinal: int) -> L.AggregateCall:
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
                return L.AggregateCall(user[0].name, None, tuple(args), user[1].result_type, f"EXPR${ordinal}",
                                       distinct, filter_arg, user_function=user[0])
        if fn is None:
            raise ValidationError(f"unknown aggregate function {name}", location=self.location(node))
        arg_types = tuple(converted[i].type for i in range(len(converted)) if not (name == "LISTAGG" and i == 1))
        try:
            result = fn.infer_type(CallContext(name, arg_types, tuple(NO_LITERAL for _ in arg_types)))
        except ValidationError as error:
            raise ValidationError(error.message, location=self.location(node), hint=error.hint) from None
        return L.AggregateCall(fn.name, fn.version, tuple(args), result, f"EXPR${ordinal}" if True else "",
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
            spec = L.WindowSpec("TUMBLE", time_idx, size=intervals[0],
                                offset=intervals[1] if len(intervals) > 1 else None, is_rowtime=time.type.is_rowtime)
        elif kind == "HOP":
            spec = L.WindowSpec("HOP", time_idx, slide=intervals[0], size=intervals[1],
                                is_rowtime=time.type.is_rowtime)
        else:
            spec = L.WindowSpec("SESSION", time_idx, gap=intervals[0], is_rowtime=time.type.is_rowtime)
        _validate_window(spec, self.location(call))
        return L.GroupWindow(spec, (), time.type), time_idx

    def _state_ttl(self, hint: dict[str, str] | None, relation: Relation) -> int | None:
        if not hint:
            return None
        from planengine.connectors.options import parse_duration_ms

        qualifiers = {f.qualifier for f in relation.fields}
        for key, value in hint.items():
            if key in qualifiers or len(hint) == 1:
                return parse_duration_ms(value)
        return None

    # --- OVER windows ------------------------------------------------------------------------------------
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
                order_keys.append(L.SortKey(pre_field(self.expr(o.this, scope)), not o.args.get("desc"),
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

    def _window_call(self, w: exp.Window, scope: _Scope, pre_field: Callable[[Expr], int]) -> L.AggregateCall:
        func = w.this
        name = None
        for cls, n in _RANKING.items():
            if type(func) is cls:
                name = n
        if name is None:
            name = self._aggregate_name(func)
        if name is None:
            raise UnsupportedQueryError(f"{func.sql()} cannot be used with OVER", location=self.location(w))
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
                return L.AggregateCall(user[0].name, None, args, user[1].result_type, "", distinct,
                                       user_function=user[0])
        if fn is None:
            raise ValidationError(f"unknown window function {name}", location=self.location(w))
        result = fn.infer_type(CallContext(name, tuple(c.type for c in converted),
                                           tuple(c.value if isinstance(c, Literal) else NO_LITERAL
                                                 for c in converted)))
        return L.AggregateCall(fn.name, fn.version, args, result, "", distinct)

    def _frame(self, w: exp.Window) -> L.OverFrame:
        spec = w.args.get("spec")
        if spec is None:
            return L.OverFrame("RANGE" if w.args.get("order") else "ROWS", None)
        mode = (spec.args.get("kind") or "ROWS").upper()
        start = spec.args.get("start")
        if isinstance(start, str) and start.upper() == "UNBOUNDED":
            return L.OverFrame(mode, None)
        if isinstance(start, str) and start.upper() == "CURRENT ROW":
            return L.OverFrame(mode, 0)
        empty = _Scope(Relation(L.LogicalValues((), row()), []), self)
        value = self.expr(start, empty) if isinstance(start, exp.Expression) else None
        if isinstance(value, Literal) and isinstance(value.value, dt.timedelta):
            return L.OverFrame("RANGE", value.value)
        if isinstance(value, Literal) and isinstance(value.value, int):
            return L.OverFrame(mode, value.value)
        raise UnsupportedQueryError(f"unsupported OVER frame {spec.sql()}", location=self.location(w))


# --- helpers ---------------------------------------------------------------------------------------------
def token_start_column(meta: dict[str, Any]) -> int | None:
    """sqlglot records a token's *end* column; report where it starts."""
    col = meta.get("col")
    if col is None:
        return None
    start, end = meta.get("start"), meta.get("end")
    if start is not None and end is not None:
        return max(1, col - (end - start))
    return col


def _identity(node: L.LogicalNode) -> tuple[Expr, ...]:
    return tuple(InputRef(i, t) for i, t in enumerate(node.field_types))


def _column(name: str, qualifier: str | None) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True),
                      table=exp.to_identifier(qualifier, quoted=True) if qualifier else None)


def _output_name(p: exp.Expression, i: int) -> str:
    if isinstance(p, exp.Alias):
        return p.alias
    if isinstance(p, exp.Column):
        return p.name
    if isinstance(p, exp.Dot):
        return p.name
    return f"EXPR${i}"


def _dedupe(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            candidate = f"{n}{seen[n] - 1}"
            while candidate in seen:
                seen[n] += 1
                candidate = f"{n}{seen[n] - 1}"
            seen[candidate] = 1
            out.append(candidate)
        else:
            seen[n] = 1
            out.append(n)
    return out


def _norm(node: exp.Expression) -> str:
    """A comparable form of an expression (case-insensitive identifiers, no aliases)."""
    return node.sql(normalize=False, comments=False).lower().replace("`", "").replace('"', "")


def _window_key(w: exp.Window) -> str:
    parts = [w.args.get("partition_by") or [], w.args.get("order"), w.args.get("spec")]
    return repr([(_norm(p) if isinstance(p, exp.Expression) else [_norm(x) for x in p]) if p is not None else None
                 for p in parts])


def _inside_window(node: exp.Expression) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Window):
            return True
        parent = parent.parent
    return False


def _split_and(predicate: exp.Expression) -> list[exp.Expression]:
    if isinstance(predicate, exp.Paren):
        return _split_and(predicate.this)
    if isinstance(predicate, exp.And):
        return _split_and(predicate.this) + _split_and(predicate.expression)
    return [predicate]


def _is_subquery_predicate(pred: exp.Expression) -> bool:
    inner = pred.this if isinstance(pred, exp.Not) else pred
    if isinstance(inner, exp.Paren):
        inner = inner.this
    return isinstance(inner, exp.Exists) or (isinstance(inner, exp.In) and inner.args.get("query") is not None)


def _validate_window(spec: L.WindowSpec, location: SourceLocation | None) -> None:
    def positive(value: dt.timedelta | None, label: str) -> None:
        if value is not None and value <= dt.timedelta(0):
            raise ValidationError(f"{spec.kind} {label} must be positive", location=location)

    positive(spec.size, "size")
    positive(spec.slide, "slide")
    positive(spec.step, "step")
    positive(spec.gap, "gap")
    if spec.kind == "HOP" and spec.size and spec.slide and spec.size % spec.slide:
        raise ValidationError("HOP size must be an integral multiple of the slide", location=location,
                              hint=f"size {spec.size} is not a multiple of slide {spec.slide}")
    if spec.kind == "CUMULATE" and spec.size and spec.step and spec.size % spec.step:
        raise ValidationError("CUMULATE max size must be an integral multiple of the step", location=location)


def _cast_literal(value: Expr, target: DataType) -> Literal:
    assert isinstance(value, Literal)
    if value.type == target:
        return value
    v = value.value
    if v is not None and target.is_numeric and not isinstance(v, bool):
        import decimal

        if target.kind is Kind.DECIMAL:
            v = decimal.Decimal(str(v))
        elif target.kind in (Kind.FLOAT, Kind.DOUBLE):
            v = float(v)
    return Literal(v, target.with_nullable(value.value is None or target.nullable))


def cast_to(expr: Expr, target: DataType) -> Expr:
    """An explicit CAST, unless the types already agree (ignoring time-attribute markers)."""
    if expr.type.without_time_attribute() == target.without_time_attribute():
        return expr
    if expr.type.without_time_attribute().with_nullable(True) == target.with_nullable(True) and target.nullable:
        return expr
    return Call(FunctionRef("CAST", 1), (expr,), target.without_time_attribute().with_nullable(
        target.nullable or expr.type.nullable))


def equals(left: Expr, right: Expr, registry: FunctionRegistry) -> Expr:
    nullable = left.type.nullable or right.type.nullable
    if left.type.without_time_attribute().with_nullable(True) != right.type.without_time_attribute().with_nullable(
            True):
        common = common_type([left.type.without_time_attribute(), right.type.without_time_attribute()])
        if common is not None:
            left, right = cast_to(left, common), cast_to(right, common)
    fn = registry.resolve("=")
    return Call(FunctionRef("=", fn.version if fn else 1), (left, right), BOOLEAN.with_nullable(nullable))


def and_all(preds: list[Expr], registry: FunctionRegistry) -> Expr | None:
    flat: list[Expr] = []
    for p in preds:
        flat.extend(conjunctions(p))
    if not flat:
        return None
    if len(flat) == 1:
        return flat[0]
    fn = registry.resolve("AND")
    return Call(FunctionRef("AND", fn.version if fn else 1), tuple(flat),
                BOOLEAN.with_nullable(any(p.type.nullable for p in flat)))


def rowtime_type(t: DataType) -> DataType:
    return t.with_time_attribute(TimeAttribute.ROWTIME)
