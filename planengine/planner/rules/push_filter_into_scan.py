"""Offer a Calc's filter conjuncts to a source that can apply them (``SupportsFilterPushDown``).

Accepted predicates are recorded on the scan as a ``FilterPushDownSpec`` (re-applied exactly on restore);
the remaining ones stay in the Calc. Only tables whose scan row is exactly their physical row qualify, so
predicate field indices mean the same thing to the source.
"""

from __future__ import annotations

from planengine.connectors.abilities import SupportsFilterPushDown
from planengine.exec.specs import FilterPushDownSpec
from planengine.ir.expressions import Call, FunctionRef, conjunctions
from planengine.ir.types import BOOLEAN
from planengine.planner import logical as L
from planengine.planner.rules.context import RuleContext


def push_filter_into_scan(node: L.LogicalNode, ctx: RuleContext) -> L.LogicalNode:
    if not isinstance(node, L.LogicalCalc) or node.condition is None or not isinstance(node.input, L.LogicalScan):
        return node
    scan = node.input
    if any(isinstance(s, FilterPushDownSpec) for s in scan.ability_specs) or not _plain(scan):
        return node
    source = ctx.create_source(scan.table)
    if not isinstance(source, SupportsFilterPushDown):
        return node
    result = source.apply_filters(conjunctions(node.condition))
    if not result.accepted:
        return node
    new_scan = L.LogicalScan(scan.table, (*scan.ability_specs, FilterPushDownSpec(tuple(result.accepted))),
                             scan.produced_type)
    remaining = list(result.remaining)
    condition = None
    if len(remaining) == 1:
        condition = remaining[0]
    elif remaining:
        condition = Call(FunctionRef("AND", 1), tuple(remaining),
                         BOOLEAN.with_nullable(any(r.type.nullable for r in remaining)))
    return L.LogicalCalc(new_scan, node.projection, node.names, condition)


def _plain(scan: L.LogicalScan) -> bool:
    schema = scan.table.table.schema
    return scan.produced_type is None and all(c.kind == "physical" for c in schema.columns) and \
        not schema.watermark_specs
