"""Which watermark assigners must give their rows per-record watermarks (``perRecordWatermark``).

Flink judges lateness per record: a row is late when the watermark that reached the operator *before it*
already closed its window, even when both came in one burst. The runtime reproduces that with a hidden
per-row watermark column (``runtime/operators/record_watermark.py``), which costs one Arrow pass over every
row of the source. It is switched on only where a row-by-row lateness decision is made downstream: an
event-time operator fed by the assigner through stateless nodes only (Calc, Exchange, Union, window TVF,
Correlate, DropUpdateBefore). Stateful operators in between emit at their own pace and break the chain.

The flag is recorded in the plan, so a restored plan keeps the behaviour it was compiled with.
"""

from __future__ import annotations

from dataclasses import replace

from planengine.exec import nodes as X
from planengine.exec.base import ExecNode, rebuild, topological

# Nodes that pass rows (and so the per-record watermark column) through unchanged in time.
_STATELESS = (X.Calc, X.Exchange, X.Union, X.WindowTableFunction, X.Correlate, X.DropUpdateBefore)


def _judges_lateness(node: ExecNode) -> bool:
    """Event-time operators whose result depends on the watermark each row meets."""
    if isinstance(node, X.WindowAggregate):
        return node.window.is_rowtime
    if isinstance(node, X.GroupWindowAggregate):
        return node.group_window.spec.is_rowtime
    if isinstance(node, X.OverAggregate):
        return bool(node.order_keys) and node.inputs[0].field_types[node.order_keys[0].field].is_rowtime
    return isinstance(node, X.WindowJoin | X.WindowRank | X.WindowDeduplicate | X.TemporalSort)


def per_record_watermarks(sinks: list[X.Sink]) -> list[X.Sink]:
    """Set ``per_record`` on every WatermarkAssigner with a lateness-judging consumer below stateless nodes."""
    consumers: dict[int, list[ExecNode]] = {}
    for node in topological(list(sinks)):
        for child in node.inputs:
            consumers.setdefault(id(child), []).append(node)

    def needed(node: ExecNode, seen: set[int]) -> bool:
        for parent in consumers.get(id(node), []):
            if id(parent) in seen:
                continue
            seen.add(id(parent))
            if _judges_lateness(parent) or (isinstance(parent, _STATELESS) and needed(parent, seen)):
                return True
        return False

    wanted = {id(n) for n in topological(list(sinks)) if isinstance(n, X.WatermarkAssigner) and needed(n, set())}

    def fn(node: ExecNode, inputs: tuple[ExecNode, ...]) -> ExecNode:
        new = replace(node, inputs=inputs) if inputs != node.inputs else node
        if id(node) in wanted:
            new = replace(new, per_record=True)
        return new

    return rebuild(list(sinks), fn)  # type: ignore[return-value]
