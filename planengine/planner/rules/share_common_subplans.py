"""Make structurally identical sub-plans the same node, so a statement set reads a source once.

Applied bottom-up over the whole multi-sink DAG: the first node seen with a digest becomes canonical and
every later node with the same digest is replaced by it. Physical conversion memoises by node identity, so
shared logical nodes become shared exec nodes.
"""

from __future__ import annotations

from planengine.planner import logical as L
from planengine.planner.rules.context import RuleContext


def share_common_subplans(node: L.LogicalNode, ctx: RuleContext) -> L.LogicalNode:
    if isinstance(node, L.LogicalSink):
        return node
    return ctx.canonical.setdefault(node.digest, node)
