"""Evaluate deterministic calls whose operands are all literals, once, at compile time.

Folding happens in the plan, so the runtime never evaluates ``1 + 1`` per row and old plans keep the value
their engine computed.
"""

from __future__ import annotations

from planengine.ir.expressions import Call, Expr, FieldAccess, Literal
from planengine.planner import logical as L
from planengine.planner.rex_converter import fold_constant
from planengine.planner.rules.context import RuleContext


def fold_constants(node: L.LogicalNode, ctx: RuleContext) -> L.LogicalNode:
    if not isinstance(node, L.LogicalCalc):
        return node
    projection = tuple(_fold(e, ctx) for e in node.projection)
    condition = _fold(node.condition, ctx) if node.condition is not None else None
    if isinstance(condition, Literal) and condition.value is True:
        condition = None
    if projection == node.projection and condition == node.condition:
        return node
    return L.LogicalCalc(node.input, projection, node.names, condition)


def _fold(expr: Expr, ctx: RuleContext) -> Expr:
    if isinstance(expr, FieldAccess):
        return FieldAccess(_fold(expr.expr, ctx), expr.name, expr.type)
    if not isinstance(expr, Call):
        return expr
    operands = tuple(_fold(o, ctx) for o in expr.operands)
    call = Call(expr.function, operands, expr.type) if operands != expr.operands else expr
    if call.function.is_builtin and all(isinstance(o, Literal) for o in operands):
        folded = fold_constant(call)
        if folded is not None and folded.type.without_time_attribute() == call.type.without_time_attribute():
            return folded
    return call
