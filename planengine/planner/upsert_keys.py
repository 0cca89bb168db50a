"""The key that identifies the rows of an updating exec node's output, when the plan proves one.

Changelog inference needs it (an upsert sink keyed like its input needs no materialiser) and so does the Top-N
strategy (update-fast needs a unique key containing the partition keys); one module so neither imports the other.
"""

from __future__ import annotations

from planengine.exec import nodes as X
from planengine.exec.base import ExecNode
from planengine.ir.expressions import InputRef


def upsert_keys(node: ExecNode) -> tuple[int, ...] | None:
    """The key that identifies rows of an updating node's output, if known."""
    if isinstance(node, X.GroupAggregate):
        return tuple(range(len(node.grouping)))
    if isinstance(node, X.ChangelogNormalize):
        return node.unique_keys
    if isinstance(node, X.Deduplicate):
        return node.unique_keys
    if isinstance(node, X.Rank):
        if node.rank_end == 1 and node.rank_start == 1:
            return node.partition_keys
        if node.output_rank_number:
            return (*node.partition_keys, len(node.field_names) - 1)
        return None
    if isinstance(node, X.Calc):
        child = upsert_keys(node.inputs[0])
        if child is None:
            return None
        positions = {}
        for i, e in enumerate(node.projection):
            if isinstance(e, InputRef) and e.index not in positions:
                positions[e.index] = i
        if all(k in positions for k in child):
            return tuple(positions[k] for k in child)
        return None
    if isinstance(node, X.DropUpdateBefore | X.WatermarkAssigner | X.Exchange):
        return upsert_keys(node.inputs[0])
    return None
