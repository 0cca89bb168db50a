"""Merge a Calc into the Calc below it, so each stateless step is one projection plus one filter.

>>> from planengine.ir import types as T
>>> from planengine.planner import logical as L
>>> from planengine.ir.expressions import InputRef
>>> from planengine.planner.rules.context import RuleContext
>>> from planengine.functions.registry import FunctionRegistry
>>> v = L.LogicalValues((), T.row(("a", T.INT), ("b", T.INT)))
>>> inner = L.LogicalCalc(v, (InputRef(1, T.INT), InputRef(0, T.INT)), ("b", "a"))
>>> outer = L.LogicalCalc(inner, (InputRef(1, T.INT),), ("a",))
>>> merge_calcs(outer, RuleContext(FunctionRegistry())).explain_terms()
'select=[$0]'
"""

from __future__ import annotations

from planengine.ir.expressions import Call, FunctionRef, substitute
from planengine.ir.types import BOOLEAN
from planengine.planner import logical as L
from planengine.planner.rules.context import RuleContext


def merge_calcs(node: L.LogicalNode, ctx: RuleContext) -> L.LogicalNode:
    if not isinstance(node, L.LogicalCalc) or not isinstance(node.input, L.LogicalCalc):
        return node
    below = node.input
    nondeterministic = ctx.registry.nondeterministic_names()
    if any(_calls(e, nondeterministic) for e in below.projection):
        return node  # inlining would evaluate a non-deterministic expression more than once
    replacements = list(below.projection)
    projection = tuple(substitute(e, replacements) for e in node.projection)
    condition = below.condition
    if node.condition is not None:
        upper = substitute(node.condition, replacements)
        if condition is None:
            condition = upper
        else:
            condition = Call(FunctionRef("AND", 1), (condition, upper),
                             BOOLEAN.with_nullable(condition.type.nullable or upper.type.nullable))
    return L.LogicalCalc(below.input, projection, node.names, condition)


def _calls(expr, names) -> bool:  # type: ignore[no-untyped-def]
    if isinstance(expr, Call) and expr.function.name in names:
        return True
    return any(_calls(c, names) for c in expr.children())
