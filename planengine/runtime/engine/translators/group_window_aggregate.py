"""``stream-exec-group-window-aggregate``: legacy ``GROUP BY TUMBLE/HOP/SESSION(ts, …)``.

Same operators as the window TVF aggregate (version 3: sessions over other keys on the JVM; version 4: as 3, a
session left on the Python operator keeps tagged JSON instead of pickles; see ``window_aggregate``); the window
properties (TUMBLE_START/END/ROWTIME, …) are appended in the order the plan lists them. Processing-time group
windows are refused: Spark's processing-time timers never go idle, so such a job could never be stopped at an
idle point.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.engine.translators.window_aggregate import session_aggregate
from planengine.runtime.operators.window_aggregate import window_aggregate
from planengine.runtime.operators.window_state import after_stateful, mark_stateful


@translator("stream-exec-group-window-aggregate", 1, 2, 3, 4)
def translate_group_window_aggregate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    """Version 2 aggregates in the library's native forms, version 1 in its own (see window_aggregate)."""
    stream = after_stateful(inputs[0], node, ctx)
    library = list(node.inputs[0].field_types) if node.metadata.version >= 2 else None
    window = node.group_window
    spec = window.spec
    props = tuple(p for _, p in window.properties)
    if spec.kind == "SESSION" and (set(spec.partition_keys or node.grouping) != set(node.grouping)
                                   or stream.record_watermark):
        if not spec.partition_keys:
            spec = replace(spec, partition_keys=tuple(node.grouping))  # legacy sessions are per group key
        out = session_aggregate(stream, node, ctx, spec, props, "group-window-aggregate")
    else:
        if spec.kind == "SESSION" and not spec.partition_keys:
            # legacy SESSION group windows are always per group key

            spec = replace(spec, partition_keys=tuple(node.grouping))
        out = window_aggregate(stream, node.grouping, node.aggregates, spec, props, node.field_types, library)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), inputs[0])
