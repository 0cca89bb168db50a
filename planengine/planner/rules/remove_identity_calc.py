"""Drop a Calc that selects every input field in order, under the same names, without a filter.

>>> from planengine.ir import types as T
>>> from planengine.planner import logical as L
>>> from planengine.ir.expressions import InputRef
>>> from planengine.planner.rules.context import RuleContext
>>> from planengine.functions.registry import FunctionRegistry
>>> v = L.LogicalValues((), T.row(("a", T.INT)))
>>> remove_identity_calc(L.LogicalCalc(v, (InputRef(0, T.INT),), ("a",)), RuleContext(FunctionRegistry())) is v
True
"""

from __future__ import annotations

from planengine.planner import logical as L
from planengine.planner.rules.context import RuleContext


def remove_identity_calc(node: L.LogicalNode, ctx: RuleContext) -> L.LogicalNode:
    if isinstance(node, L.LogicalCalc) and node.is_identity():
        return node.input
    return node
