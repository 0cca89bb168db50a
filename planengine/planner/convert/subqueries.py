"""Sub-queries: IN / EXISTS in WHERE as semi/anti joins, and sub-queries inside expressions as mark joins.

A WHERE conjunct that *is* ``[NOT] IN (SELECT …)`` or ``[NOT] EXISTS (…)`` becomes a semi or anti join
(Calcite's expansion); correlated conditions of the sub-query (``WHERE r.f = l.c``) become join conditions.

A sub-query anywhere else — ``CASE WHEN a IN (SELECT 1 FROM t) …``, ``EXISTS (…) OR b > 10``, a SELECT item,
the left operand of another IN, a scalar ``(SELECT MAX(x) FROM t)`` — is a *mark join* (Calcite's
SubQueryRemoveRule, what Flink plans with ``LITERAL_AGG``): the outer relation is LEFT-joined with the
sub-query reduced to one row per value (``SELECT v, TRUE AS m … GROUP BY v``, the literal aggregate), and
the sub-query is replaced by an expression over the joined columns:

* ``x IN (sub)`` is ``m IS NOT NULL`` where UNKNOWN and FALSE mean the same (a WHERE condition, a CASE WHEN
  condition, AND/OR of those) or neither side can be NULL. Elsewhere SQL's three-valued result needs the
  sub-query's row counts too (a second LEFT join with ``COUNT(*)``, ``COUNT(v)``): FALSE when it is empty,
  TRUE when found, UNKNOWN when ``x`` is NULL or the sub-query has a NULL, else FALSE.
* ``EXISTS (sub)`` is ``m IS NOT NULL`` (correlated by equalities, ``m`` per correlation key) or ``COUNT(*) > 0``.
* a scalar sub-query must be an aggregate without GROUP BY (at most one row); its value is its column.

Correlation in a mark join must be equalities between an outer and an inner expression (they become join
keys); anything else is refused with a hint. In a stream the joined sub-query is an updating aggregate, so
the query's result updates when the sub-query's input changes, as in Flink.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sqlglot import exp

from planengine.errors import UnsupportedQueryError, ValidationError
from planengine.ir.expressions import Call, Expr, FunctionRef, InputRef
from planengine.ir.types import BOOLEAN
from planengine.planner import logical as L
from planengine.planner.convert.scope import Relation, _Field, _Scope
from planengine.planner.convert.support import (
    _identity,
    _is_subquery_predicate,
    _split_and,
    and_all,
    equals,
)

Special = Callable[[exp.Expression, Callable[[exp.Expression], Expr]], Expr | None]


def _is_subquery(node: exp.Expression) -> bool:
    return isinstance(node, exp.Exists | exp.Subquery) or (isinstance(node, exp.In) and node.args.get("query")
                                                           is not None)


def outer_subqueries(node: exp.Expression) -> Iterator[exp.Expression]:
    """Sub-query nodes of an expression that belong to its own scope, inner ones first: the left operand of
    an ``IN`` comes before the ``IN`` (it may hold sub-queries itself); bodies of sub-queries are not entered."""
    if _is_subquery(node):
        if isinstance(node, exp.In):
            yield from outer_subqueries(node.this)
        yield node
        return
    for child in node.iter_expressions():
        yield from outer_subqueries(child)


def contains_subquery(node: exp.Expression) -> bool:
    return next(outer_subqueries(node), None) is not None


def _own_columns(node: exp.Expression) -> Iterator[exp.Column]:
    """Columns of ``node`` outside the SELECTs of sub-queries nested in it (those resolve in their own scope)."""
    for column in node.find_all(exp.Column):
        current: exp.Expression | None = column
        while current is not None and current is not node:
            current = current.parent
            if current is not None and current is not node and isinstance(current, exp.Select):
                break
        else:
            yield column


def _unknown_is_false(node: exp.Expression, root: exp.Expression, filtering: bool) -> bool:
    """True when an UNKNOWN result of ``node`` acts like FALSE: below only AND/OR/parentheses up to a filter
    (``filtering``) or up to the condition of a CASE WHEN."""
    current = node
    while current is not root:
        parent = current.parent
        if isinstance(parent, exp.And | exp.Or | exp.Paren):
            current = parent
            continue
        return isinstance(parent, exp.If) and parent.this is current
    return filtering


def _body(query: exp.Expression) -> exp.Expression:
    return query.this if isinstance(query, exp.Subquery) else query


def _alias(expression: exp.Expression, name: str) -> exp.Alias:
    return exp.alias_(expression, exp.to_identifier(name, quoted=True))


def _ref(qualifier: str, name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True), table=exp.to_identifier(qualifier, quoted=True))


def _derived(select: exp.Expression, alias: str) -> exp.Subquery:
    return exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))


class SubqueryConversion:
    """Mixin of ``QueryConverter``."""

    # --- WHERE ------------------------------------------------------------------------------------------
    def _where(self, relation: Relation, predicate: exp.Expression) -> Relation:
        plain: list[exp.Expression] = []
        marked: list[exp.Expression] = []
        subquery_preds: list[exp.Expression] = []
        for conjunct in _split_and(predicate):
            if _is_subquery_predicate(conjunct):
                subquery_preds.append(conjunct)
            elif contains_subquery(conjunct):
                marked.append(conjunct)
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
        if marked:
            width = len(relation.fields)
            widened, special = self.expand_subqueries(relation, marked, filtering=True)
            scope = _Scope(widened, self, special)
            cond = and_all([self.expr(p, scope) for p in marked], self.ctx.registry)
            node = L.LogicalCalc(widened.node, _identity(widened.node), tuple(widened.node.field_names), cond)
            relation = self._project_prefix(node, relation.fields, width)
        return relation

    def _decorrelate(self, relation: Relation, pred: exp.Expression) -> Relation:
        negated = isinstance(pred, exp.Not)
        inner = pred.this if negated else pred
        if isinstance(inner, exp.Paren):
            inner = inner.this
        join_type = "ANTI" if negated else "SEMI"
        if isinstance(inner, exp.In):
            return self._in_join(relation, inner, join_type)
        assert isinstance(inner, exp.Exists)
        subselect = _body(inner.this)
        correlated, local, inner_from = self._split_correlation(subselect)
        sub_relation = self._sub_relation(subselect, local, inner_from)
        combined = Relation(relation.node, relation.fields + sub_relation.fields)
        scope = _Scope(combined, self)
        cond = and_all([self.expr(c, scope) for c in correlated], self.ctx.registry) if correlated else None
        join = L.LogicalJoin(relation.node, sub_relation.node, join_type, cond)
        return self._restore_fields(join, relation)

    def _in_join(self, relation: Relation, node: exp.In, join_type: str) -> Relation:
        """``x [NOT] IN (SELECT v FROM … [WHERE correlated AND local])`` as a semi (anti) join on ``x = v``."""
        negated = join_type == "ANTI"
        width = len(relation.fields)
        relation, special = self.expand_subqueries(relation, [node.this], filtering=False)
        left_expr = self.expr(node.this, _Scope(relation, self, special))
        left_ref, relation = self._as_field(relation, left_expr)
        subselect = _body(node.args["query"])
        correlated, local, inner_from = self._split_correlation(subselect) if isinstance(subselect, exp.Select) \
            else ([], [], None)
        if not correlated:
            sub = self.convert_query(subselect)
            if len(sub.field_names) != 1:
                raise ValidationError("an IN sub-query must select exactly one column", location=self.location(node))
            sub_relation = Relation.of(sub, None)
            value_index = 0
        else:
            assert isinstance(subselect, exp.Select) and inner_from is not None
            self._plain_correlated(subselect, node)
            sub_relation = self._sub_relation(subselect, local, inner_from)
            items = list(subselect.expressions)
            if len(items) != 1 or isinstance(items[0], exp.Star):
                raise ValidationError("an IN sub-query must select exactly one column", location=self.location(node))
            value = self.expr(items[0].this if isinstance(items[0], exp.Alias) else items[0],
                              _Scope(sub_relation, self))
            value_ref, sub_relation = self._as_field(sub_relation, value)
            value_index = value_ref.index
        right_ref = InputRef(len(relation.fields) + value_index, sub_relation.fields[value_index].type)
        cond = equals(left_ref, right_ref, self.ctx.registry)
        if negated and (left_ref.type.nullable or right_ref.type.nullable):
            cond = self._null_aware(cond, left_ref, right_ref)
        if correlated:
            combined = Relation(relation.node, relation.fields + sub_relation.fields)
            scope = _Scope(combined, self)
            cond = and_all([cond, *[self.expr(c, scope) for c in correlated]], self.ctx.registry) or cond
        join = L.LogicalJoin(relation.node, sub_relation.node, join_type, cond)
        return self._project_prefix(join, relation.fields[:width], width)

    # --- sub-queries inside expressions: mark joins -------------------------------------------------------
    def expand_subqueries(self, relation: Relation, expressions: list[exp.Expression], filtering: bool
                          ) -> tuple[Relation, Special | None]:
        """LEFT-join ``relation`` with every sub-query of ``expressions`` (a mark join each) and return the
        widened relation plus a converter hook that turns each sub-query node into its value expression.
        The original fields stay first, so references to them are unchanged."""
        values: dict[int, exp.Expression] = {}

        def special(node: exp.Expression, convert: Callable[[exp.Expression], Expr]) -> Expr | None:
            replacement = values.get(id(node))
            return convert(replacement) if replacement is not None else None

        found = [(root, node) for root in expressions for node in outer_subqueries(root)]
        if not found:
            return relation, None
        for root, node in found:
            relation, values[id(node)] = self._mark_join(relation, node, root, filtering, special)
        return relation, special

    def _mark_join(self, relation: Relation, node: exp.Expression, root: exp.Expression, filtering: bool,
                   special: Special) -> tuple[Relation, exp.Expression]:
        tag = f"$sq{len(relation.fields)}"
        if isinstance(node, exp.Subquery):
            return self._scalar_join(relation, node, tag)
        body = _body(node.args["query"] if isinstance(node, exp.In) else node.this)
        if not isinstance(body, exp.Select):
            raise UnsupportedQueryError("a set operation inside a sub-query expression is not supported",
                                        location=self.location(node), hint="move the UNION into a view or a join")
        correlated, local, inner_from = self._split_correlation(body)
        pairs = self._correlation_pairs(correlated, inner_from, node)
        outer_keys: list[InputRef] = []
        for outer_sql, _ in pairs:
            ref, relation = self._as_field(relation, self.expr(outer_sql, _Scope(relation, self, special)))
            outer_keys.append(ref)
        inner = body.copy()
        inner.set("where", exp.Where(this=exp.and_(*local)) if local else None)
        keys = [f"$k{i}" for i in range(len(pairs))]
        key_items = [_alias(inner_sql.copy(), k) for (_, inner_sql), k in zip(pairs, keys, strict=True)]
        if isinstance(node, exp.Exists):
            if not pairs:  # uncorrelated: does the sub-query have a row at all
                inner.set("expressions", [_alias(exp.Literal.number(1), "$one")])
                counts = exp.select(_alias(exp.Count(this=exp.Star()), "$c")).from_(_derived(inner, "$s"))
                relation = self._left_join(relation, counts, tag, [], [])
                return relation, exp.and_(exp.Not(this=exp.Is(this=_ref(tag, "$c"), expression=exp.Null())),
                                          exp.GT(this=_ref(tag, "$c"), expression=exp.Literal.number(0)))
            inner.set("expressions", key_items)
            marks = (exp.select(*[_ref("$s", k) for k in keys], _alias(exp.true(), "$m"))
                     .from_(_derived(inner, "$s")).group_by(*[_ref("$s", k) for k in keys]))
            relation = self._left_join(relation, marks, tag, outer_keys, list(range(len(keys))))
            return relation, exp.Not(this=exp.Is(this=_ref(tag, "$m"), expression=exp.Null()))
        # x IN (SELECT v …)
        items = list(body.expressions)
        if len(items) != 1 or isinstance(items[0], exp.Star):
            raise ValidationError("an IN sub-query must select exactly one column", location=self.location(node))
        item = items[0].this if isinstance(items[0], exp.Alias) else items[0]
        x, relation = self._as_field(relation, self.expr(node.this, _Scope(relation, self, special)))
        inner.set("expressions", [_alias(item.copy(), "$v"), *key_items])
        group = [_ref("$s", "$v"), *[_ref("$s", k) for k in keys]]
        marks = exp.select(*group, _alias(exp.true(), "$m")).from_(_derived(inner, "$s")).group_by(*group)
        relation = self._left_join(relation, marks, tag, [x, *outer_keys], list(range(len(keys) + 1)))
        value_type = relation.fields[-2 - len(keys)].type  # $v of the marks just joined
        found = exp.Not(this=exp.Is(this=_ref(tag, "$m"), expression=exp.Null()))
        if _unknown_is_false(node, root, filtering) or not (x.type.nullable or value_type.nullable):
            return relation, found
        counted = f"{tag}c"
        counts = exp.select(*[_ref("$s", k) for k in keys], _alias(exp.Count(this=exp.Star()), "$c"),
                            _alias(exp.Count(this=_ref("$s", "$v")), "$ck")).from_(_derived(inner.copy(), "$s"))
        if keys:
            counts = counts.group_by(*[_ref("$s", k) for k in keys])
        relation = self._left_join(relation, counts, counted, outer_keys, list(range(len(keys))))
        c, ck = _ref(counted, "$c"), _ref(counted, "$ck")
        x_name = f"{tag}x"  # the left operand under a name of its own, for the CASE below
        relation = self._with_field(relation, x, x_name)
        x_sql = exp.column(exp.to_identifier(x_name, quoted=True))
        three_valued = (exp.Case()
                        .when(exp.or_(exp.Is(this=c.copy(), expression=exp.Null()),
                                      exp.EQ(this=c.copy(), expression=exp.Literal.number(0))), exp.false())
                        .when(found, exp.true())
                        .when(exp.Is(this=x_sql, expression=exp.Null()), exp.Null())
                        .when(exp.LT(this=ck, expression=c.copy()), exp.Null())
                        .else_(exp.false()))
        return relation, exp.Cast(this=three_valued, to=exp.DataType.build("BOOLEAN"))

    def _scalar_join(self, relation: Relation, node: exp.Subquery, tag: str) -> tuple[Relation, exp.Expression]:
        body = node.this
        if isinstance(body, exp.Select):
            correlated, _, _ = self._split_correlation(body)
            aggregate = body.args.get("group") is None and any(self._contains_aggregate(p) for p in body.expressions)
        else:
            correlated, aggregate = [], False
        if correlated or not aggregate:
            raise UnsupportedQueryError(
                "a scalar sub-query must be an uncorrelated aggregate without GROUP BY (at most one row)",
                location=self.location(node), hint="rewrite it as a JOIN with the aggregated table")
        sub = self.convert_query(body)
        if len(sub.field_names) != 1:
            raise ValidationError("a scalar sub-query must select exactly one column", location=self.location(node))
        values = exp.select(_alias(exp.column(exp.to_identifier(sub.field_names[0], quoted=True)), "$v")).from_(
            _derived(body.copy(), "$s"))
        relation = self._left_join(relation, values, tag, [], [])
        return relation, _ref(tag, "$v")

    def _left_join(self, relation: Relation, select: exp.Select, tag: str, left_keys: list[InputRef],
                   right_keys: list[int]) -> Relation:
        right = Relation.of(self.convert_query(select), tag)
        n = len(relation.fields)
        conds = [equals(lk, InputRef(n + rk, right.fields[rk].type), self.ctx.registry)
                 for lk, rk in zip(left_keys, right_keys, strict=True)]
        join = L.LogicalJoin(relation.node, right.node, "LEFT", and_all(conds, self.ctx.registry))
        fields = relation.fields + [_Field(tag, f.name, f.type.with_nullable(True)) for f in right.fields]
        return Relation(join, fields)

    # --- correlation --------------------------------------------------------------------------------------
    def _split_correlation(self, subselect: exp.Select) -> tuple[list[exp.Expression], list[exp.Expression],
                                                                  Relation]:
        """The sub-query's WHERE conjuncts that refer to the outer query, the local ones, and its FROM."""
        where = subselect.args.get("where")
        inner_from = self._from(subselect)
        correlated: list[exp.Expression] = []
        local: list[exp.Expression] = []
        for conj in _split_and(where.this) if where is not None else []:
            (correlated if self._refers_outside(conj, inner_from) else local).append(conj)
        return correlated, local, inner_from

    def _correlation_pairs(self, correlated: list[exp.Expression], inner: Relation, node: exp.Expression
                           ) -> list[tuple[exp.Expression, exp.Expression]]:
        """``(outer expression, inner expression)`` for each correlated ``outer = inner`` conjunct."""
        pairs = []
        for conj in correlated:
            sides = (conj.this, conj.expression) if isinstance(conj, exp.EQ) else None
            if sides is not None:
                a_outer = self._refers_outside(sides[0], inner) and not self._refers_inside(sides[0], inner)
                b_outer = self._refers_outside(sides[1], inner) and not self._refers_inside(sides[1], inner)
                if a_outer and not b_outer and self._refers_inside(sides[1], inner):
                    pairs.append((sides[0], sides[1]))
                    continue
                if b_outer and not a_outer and self._refers_inside(sides[0], inner):
                    pairs.append((sides[1], sides[0]))
                    continue
            raise UnsupportedQueryError(
                f"correlated condition {conj.sql()} of a sub-query inside an expression is not supported",
                location=self.location(node),
                hint="correlate with equalities between an outer and an inner column, or move the sub-query into "
                     "WHERE as its own IN / EXISTS condition")
        return pairs

    def _plain_correlated(self, subselect: exp.Select, node: exp.Expression) -> None:
        if subselect.args.get("group") is not None or subselect.args.get("distinct") is not None or \
                subselect.args.get("limit") is not None or any(self._contains_aggregate(p)
                                                               for p in subselect.expressions):
            raise UnsupportedQueryError(
                "a correlated IN sub-query with aggregation, DISTINCT or LIMIT is not supported",
                location=self.location(node), hint="aggregate in a view and join it, or remove the correlation")

    def _sub_relation(self, subselect: exp.Select, local: list[exp.Expression], inner_from: Relation) -> Relation:
        if local:
            return self._where(inner_from, exp.and_(*local))
        return inner_from

    def _refers_outside(self, conj: exp.Expression, inner: Relation) -> bool:
        inner_qualifiers = {f.qualifier for f in inner.fields}
        inner_names = {f.name for f in inner.fields}
        for column in _own_columns(conj):
            if column.table and column.table not in inner_qualifiers:
                return True
            if not column.table and column.name not in inner_names:
                return True
        return False

    def _refers_inside(self, conj: exp.Expression, inner: Relation) -> bool:
        inner_qualifiers = {f.qualifier for f in inner.fields}
        inner_names = {f.name for f in inner.fields}
        return any((column.table in inner_qualifiers) if column.table else (column.name in inner_names)
                   for column in _own_columns(conj))

    # --- helpers ----------------------------------------------------------------------------------------
    def _null_aware(self, cond: Expr, left: InputRef, right: InputRef) -> Expr:
        """``x NOT IN (sub)`` is UNKNOWN (the row is dropped) when ``x`` is NULL or ``sub`` yields a NULL, unless
        ``sub`` is empty: an anti join whose condition also matches those NULLs (Calcite's and Flink's
        expansion, ``x = y OR x IS NULL OR y IS NULL``). It has no equi key, so it runs on one key."""
        nulls = [Call(FunctionRef("IS NULL", self._version("IS NULL")), (ref,), BOOLEAN.with_nullable(False))
                 for ref in (left, right) if ref.type.nullable]
        return Call(FunctionRef("OR", self._version("OR")), (cond, *nulls), BOOLEAN.with_nullable(True))

    def _version(self, name: str) -> int:
        fn = self.ctx.registry.resolve(name)
        return fn.version if fn else 1

    def _as_field(self, relation: Relation, expr: Expr) -> tuple[InputRef, Relation]:
        if isinstance(expr, InputRef):
            return expr, relation
        node = relation.node
        proj = (*_identity(node), expr)
        name = f"$f{len(node.field_names)}"
        calc = L.LogicalCalc(node, proj, (*node.field_names, name))
        fields_ = [*relation.fields, _Field(None, name, expr.type)]
        return InputRef(len(node.field_names), expr.type), Relation(calc, fields_)

    def _with_field(self, relation: Relation, expr: Expr, name: str) -> Relation:
        node = relation.node
        calc = L.LogicalCalc(node, (*_identity(node), expr), (*node.field_names, name))
        return Relation(calc, [*relation.fields, _Field(None, name, expr.type)])

    def _project_prefix(self, node: L.LogicalNode, fields: list[_Field], width: int) -> Relation:
        if len(node.field_names) == width:
            return Relation(node, fields)
        proj = tuple(InputRef(i, t) for i, t in enumerate(node.field_types[:width]))
        return Relation(L.LogicalCalc(node, proj, tuple(node.field_names[:width])), fields)

    def _restore_fields(self, join: L.LogicalJoin, relation: Relation) -> Relation:
        return self._project_prefix(join, relation.fields, len(relation.fields))
