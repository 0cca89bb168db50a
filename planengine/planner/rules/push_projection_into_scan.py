"""Read only the columns a query uses from sources that can project (``SupportsProjectionPushDown``).

The scan records a ``ProjectPushDownSpec`` with the projected field paths and the produced row type, and
the Calc above is rewritten to the narrower row. Sources producing updates keep all columns, because
normalisation needs the primary key and the before/after images whole.
"""

from __future__ import annotations

from planengine.connectors.abilities import SupportsProjectionPushDown
from planengine.exec.specs import ProjectPushDownSpec
from planengine.ir.expressions import input_refs, remap_inputs
from planengine.ir.types import RowField, row
from planengine.planner import logical as L
from planengine.planner.rules.context import RuleContext


def push_projection_into_scan(node: L.LogicalNode, ctx: RuleContext) -> L.LogicalNode:
    if not isinstance(node, L.LogicalCalc) or not isinstance(node.input, L.LogicalScan):
        return node
    scan = node.input
    schema = scan.table.table.schema
    if scan.produced_type is not None or schema.watermark_specs or any(c.kind != "physical" for c in schema.columns):
        return node
    used: set[int] = set()
    for e in node.projection:
        used |= input_refs(e)
    if node.condition is not None:
        used |= input_refs(node.condition)
    width = len(scan.field_names)
    if len(used) == width:
        return node
    source = ctx.create_source(scan.table)
    if not isinstance(source, SupportsProjectionPushDown) or not source.changelog_mode().contains_only_inserts():
        return node
    keep = sorted(used) or [0]
    produced = row(*(RowField(scan.field_names[i], scan.field_types[i].without_time_attribute()) for i in keep))
    spec = ProjectPushDownSpec(tuple((i,) for i in keep), produced)
    new_scan = L.LogicalScan(scan.table, (*scan.ability_specs, spec), produced)
    mapping = {old: new for new, old in enumerate(keep)}
    projection = tuple(remap_inputs(e, mapping) for e in node.projection)
    condition = remap_inputs(node.condition, mapping) if node.condition is not None else None
    return L.LogicalCalc(new_scan, projection, node.names, condition)
