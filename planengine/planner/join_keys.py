"""Join keys computed from expressions: ``o.nested.id = r.id``, ``o.m['k'] = r.k``, ``l.a + 1 = r.b``.

A join (and a temporal join, whose right key must be the versioned table's primary key) can only key its
state by input fields. Like Calcite's JoinPushExpressionsRule, an equality whose operands are each computed
from one side only gets each non-field operand projected as an extra field of its side; the join compares
those fields, and a projection above the join drops them again, so the join's output is unchanged.

>>> from planengine.ir.expressions import Call, FieldAccess, FunctionRef, InputRef
>>> from planengine.ir.types import BIGINT, BOOLEAN, row
>>> nested = row(("id", BIGINT))
>>> cond = Call(FunctionRef("=", 1), (FieldAccess(InputRef(0, nested), "id", BIGINT), InputRef(1, BIGINT)), BOOLEAN)
>>> [str(e) for e in key_expressions(cond, 1)[0]], [str(e) for e in key_expressions(cond, 1)[1]]
(['$0.id'], [])
"""

from __future__ import annotations

from dataclasses import replace

from planengine.ir.expressions import Call, Expr, InputRef, conjunctions, input_refs, map_input_refs
from planengine.planner import logical as L


def _side(e: Expr, nl: int) -> str | None:
    refs = input_refs(e)
    if not refs:
        return None
    if all(i < nl for i in refs):
        return "left"
    if all(i >= nl for i in refs):
        return "right"
    return None


def _strip_cast(e: Expr) -> Expr:
    if isinstance(e, Call) and e.function.name == "CAST" and len(e.operands) == 1:
        return e.operands[0]
    return e


def key_expressions(condition: Expr | None, nl: int) -> tuple[list[Expr], list[Expr]]:
    """The non-field operands of ``left-only = right-only`` conjuncts, per side (right ones still over ``left ++
    right``), in order of appearance, without duplicates."""
    left: list[Expr] = []
    right: list[Expr] = []
    for c in conjunctions(condition):
        if not (isinstance(c, Call) and c.function.name == "=" and len(c.operands) == 2):
            continue
        a, b = (_strip_cast(o) for o in c.operands)
        sides = (_side(a, nl), _side(b, nl))
        if sides not in (("left", "right"), ("right", "left")):
            continue
        for operand, side in zip((a, b), sides, strict=True):
            target = left if side == "left" else right
            if not isinstance(operand, InputRef) and operand not in target:
                target.append(operand)
    return left, right


def push_key_expressions(left: L.LogicalNode, right: L.LogicalNode, condition: Expr | None
                         ) -> tuple[L.LogicalNode, L.LogicalNode, Expr | None, tuple[int, ...]] | None:
    """``(left', right', condition', output positions)`` with computed keys as fields, or None when there is
    nothing to push. ``output positions`` pick the original ``left ++ right`` columns out of ``left' ++ right'``."""
    nl, nr = len(left.field_names), len(right.field_names)
    left_exprs, right_exprs = key_expressions(condition, nl)
    if not left_exprs and not right_exprs:
        return None
    el, er = len(left_exprs), len(right_exprs)

    def shift(e: Expr) -> Expr:  # a reference into left ++ right, re-pointed into left' ++ right'
        return map_input_refs(e, lambda r: replace(r, index=r.index + el) if r.index >= nl else r)

    new_left = L.LogicalCalc(left, (*_identity(left), *left_exprs),
                             (*left.field_names, *[f"$jk{i}" for i in range(el)])) if el else left
    right_local = [map_input_refs(e, lambda r: replace(r, index=r.index - nl)) for e in right_exprs]
    new_right = L.LogicalCalc(right, (*_identity(right), *right_local),
                              (*right.field_names, *[f"$jk{el + i}" for i in range(er)])) if er else right
    replacements = {e: InputRef(nl + i, e.type) for i, e in enumerate(left_exprs)}
    replacements.update({shift(e): InputRef(nl + el + nr + i, e.type) for i, e in enumerate(right_exprs)})

    def rewrite(e: Expr) -> Expr:
        if e in replacements:
            return replacements[e]
        if isinstance(e, Call):
            return replace(e, operands=tuple(rewrite(o) for o in e.operands))
        return e

    new_condition = rewrite(shift(condition)) if condition is not None else None
    positions = (*range(nl), *range(nl + el, nl + el + nr))
    return new_left, new_right, new_condition, positions


def _identity(node: L.LogicalNode) -> tuple[Expr, ...]:
    return tuple(InputRef(i, t) for i, t in enumerate(node.field_types))
