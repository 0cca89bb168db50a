"""Move a filter above an inner join into it: one-side predicates below the join, the rest into its condition.

This is what turns ``FROM a, b WHERE a.k = b.k AND a.ts BETWEEN b.ts - … AND …`` into an equi-join (and
then an interval join), and filters rows before they reach join state.
"""

from __future__ import annotations

from planengine.ir.expressions import Call, Expr, FunctionRef, InputRef, conjunctions, input_refs, remap_inputs
from planengine.ir.types import BOOLEAN
from planengine.planner import logical as L
from planengine.planner.rules.context import RuleContext


def push_filter_into_join(node: L.LogicalNode, ctx: RuleContext) -> L.LogicalNode:
    if not isinstance(node, L.LogicalCalc) or node.condition is None or not isinstance(node.input, L.LogicalJoin):
        return node
    join = node.input
    if join.kind != "INNER":
        return node
    nl = len(join.left.field_names)
    nondeterministic = ctx.registry.nondeterministic_names()
    left_preds: list[Expr] = []
    right_preds: list[Expr] = []
    join_preds: list[Expr] = list(conjunctions(join.condition))
    for pred in conjunctions(node.condition):
        refs = input_refs(pred)
        if _calls(pred, nondeterministic):
            return node
        if refs and max(refs) < nl:
            left_preds.append(pred)
        elif refs and min(refs) >= nl:
            right_preds.append(remap_inputs(pred, {i: i - nl for i in refs}))
        else:
            join_preds.append(pred)
    left = _filter(join.left, left_preds)
    right = _filter(join.right, right_preds)
    new_join = L.LogicalJoin(left, right, join.kind, _and(join_preds), join.state_ttl_ms)
    return L.LogicalCalc(new_join, node.projection, node.names, None)


def _filter(node: L.LogicalNode, preds: list[Expr]) -> L.LogicalNode:
    if not preds:
        return node
    identity = tuple(InputRef(i, t) for i, t in enumerate(node.field_types))
    return L.LogicalCalc(node, identity, tuple(node.field_names), _and(preds))


def _and(preds: list[Expr]) -> Expr | None:
    if not preds:
        return None
    if len(preds) == 1:
        return preds[0]
    return Call(FunctionRef("AND", 1), tuple(preds), BOOLEAN.with_nullable(any(p.type.nullable for p in preds)))


def _calls(expr: Expr, names: frozenset[str]) -> bool:
    if isinstance(expr, Call) and expr.function.name in names:
        return True
    return any(_calls(c, names) for c in expr.children())
