"""SQL → logical plan: the query shapes (SELECT, set operations, VALUES, FROM, joins).

Concerns with their own rules live in the mixins: aggregates, windows, sub-queries, functions."""

from __future__ import annotations

from sqlglot import exp

from planengine.catalog.objects import CatalogTable, CatalogView, ObjectIdentifier, TableRef
from planengine.errors import SourceLocation, UnsupportedQueryError, ValidationError
from planengine.ir.expressions import Call, Expr, InputRef, Literal, input_refs
from planengine.ir.sorting import SortKey
from planengine.ir.types import BIGINT, Kind, RowField, common_type, row
from planengine.planner import logical as L
from planengine.planner.convert.aggregates import AggregateConversion
from planengine.planner.convert.functions import FunctionConversion
from planengine.planner.convert.scope import PlannerContext, Relation, _Field, _Scope
from planengine.planner.convert.subqueries import SubqueryConversion
from planengine.planner.convert.support import (
    _cast_literal,
    _column,
    _dedupe,
    _output_name,
    and_all,
    cast_to,
    equals,
    token_start_column,
)
from planengine.planner.convert.windows import WindowConversion
from planengine.planner.rex_converter import convert_expression, fold_constant
from planengine.sql import accessors, parse_query
from planengine.sql.ast import WindowTableFunction


class QueryConverter(AggregateConversion, WindowConversion, SubqueryConversion, FunctionConversion):
    """Converts one query (and the views it uses) into a logical node."""

    def __init__(self, context: PlannerContext):
        self.ctx = context
        self.ctes: list[dict[str, L.LogicalNode]] = []
        self.view_stack: list[ObjectIdentifier] = []

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

    def expr(self, node: exp.Expression, scope: _Scope) -> Expr:
        return convert_expression(node, scope, self.ctx.registry)

    def convert_query(self, node: exp.Expression) -> L.LogicalNode:
        if isinstance(node, exp.Subquery):
            return self.convert_query(node.this)
        if node is None:  # e.g. a CREATE VIEW cut off after AS
            raise ValidationError("expected a query (SELECT, VALUES, WITH or UNION)")
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

    def _select(self, select: exp.Select) -> L.LogicalNode:
        if select.args.get("order") is not None or select.args.get("windows"):
            select = select.copy()  # ORDER BY targets and named windows are rewritten below
        self._inline_named_windows(select)
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
            # sub-queries in SELECT items are mark joins (subqueries.py); the joined columns are projected away
            relation, special = self.expand_subqueries(relation, projections, filtering=False)
            scope = _Scope(relation, self, special)
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

    def _inline_named_windows(self, select: exp.Select) -> None:
        """``OVER w`` with ``WINDOW w AS (...)``: copy the definition into each window call."""
        named = {w.this.name: w for w in select.args.get("windows") or [] if isinstance(w.this, exp.Identifier)}
        if not named:
            return
        for window in select.find_all(exp.Window):
            alias = window.args.get("alias")
            if alias is None or alias.name not in named:
                continue
            if window.args.get("partition_by") or window.args.get("order") or window.args.get("spec"):
                continue
            definition = named[alias.name]
            for key in ("partition_by", "order", "spec"):
                value = definition.args.get(key)
                if value is not None:
                    window.set(key, [v.copy() for v in value] if isinstance(value, list) else value.copy())
            window.set("alias", None)
        select.set("windows", None)

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
        keys: list[SortKey] = []
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
                keys.append(SortKey(idx, not desc, nulls_first))
        fetch = self._row_count(limit.expression, "LIMIT") if limit is not None else None
        skip = self._row_count(offset.expression, "OFFSET") if offset is not None else 0
        return L.LogicalSort(node, tuple(keys), skip, fetch)

    def _row_count(self, node: exp.Expression, clause: str) -> int:
        """The number of a LIMIT / OFFSET: a non-negative integer literal, as in Flink."""
        text = node.name if isinstance(node, exp.Literal) and not node.is_string else ""
        if not text.isdigit() or len(text) > 18:
            raise ValidationError(f"{clause} takes a non-negative integer literal, not {node.sql('flink')[:40]}",
                                  location=self.location(node), hint=f"e.g. {clause} 10")
        return int(text)

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
                raise UnsupportedQueryError(f"table function {item.this.sql('flink')} is not supported",
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
        # Point at the name, not at the statement's first word; inside a view's body positions are the view's own
        # text, which the statement being reported is not, so there the statement's position it is.
        at = None if self.view_stack else table.parts[0]
        identifier = self._qualify(parts, at)
        try:
            entry = self.ctx.catalogs.get_table(identifier)
        except ValidationError as error:
            raise type(error)(error.message, location=self.location(at), hint=error.hint) from None
        obj = entry.object
        if isinstance(obj, CatalogView):
            if identifier in self.view_stack:
                raise ValidationError(f"view {identifier} refers to itself", location=self.location(table))

            self.view_stack.append(identifier)
            try:
                return self.convert_query(parse_query(obj.query))
            finally:
                self.view_stack.pop()
        assert isinstance(obj, CatalogTable)
        hint_options = accessors.table_options_hint(table)
        ref = TableRef(identifier, obj, entry.is_temporary, tuple(sorted(hint_options.items())))
        return L.LogicalScan(ref)

    def _qualify(self, parts: tuple[str, ...], node: exp.Expression | None) -> ObjectIdentifier:
        try:
            return self.ctx.catalogs.qualify(parts)
        except ValidationError as error:
            raise type(error)(error.message, location=self.location(node), hint=error.hint) from None

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
