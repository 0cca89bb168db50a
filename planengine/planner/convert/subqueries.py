"""WHERE with IN / EXISTS sub-queries decorrelated into semi/anti joins (Calcite-style expansion)."""

from __future__ import annotations

from sqlglot import exp

from planengine.errors import ValidationError
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


class SubqueryConversion:
    """Mixin of ``QueryConverter``."""

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
            if negated and (left_ref.type.nullable or right_ref.type.nullable):
                cond = self._null_aware(cond, left_ref, right_ref)
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
