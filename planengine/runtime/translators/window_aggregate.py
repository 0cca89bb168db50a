"""``stream-exec-window-aggregate``: windowed GROUP BY over a window TVF.

TUMBLE/HOP/CUMULATE and SESSION partitioned by the grouping keys run on Spark's native aggregation in
append mode (``operators/window_aggregate.py``); a SESSION over all keys, or partitioned by other columns
than the grouping keys, runs on transformWithState with one state per partition key
(``operators/window_session.py``); so does every SESSION below a per-record watermark assigner, because a
watermark inside a batch may close a session before a later row of the batch would have extended it (Spark's
session windows close only at batch ends). Output: grouping fields, aggregates, window_start, window_end,
window_time (a rowtime attribute).
"""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.window_aggregate import window_aggregate
from planengine.runtime.operators.window_session import global_session_aggregate
from planengine.runtime.operators.window_state import after_stateful, mark_stateful
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-window-aggregate", 1, 2)
def translate_window_aggregate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    """Version 2 aggregates in the library's native forms (``runtime/aggregates/library.py``), version 1 in its
    own (frozen with its state layout); sessions over other keys are the same operator in both."""
    stream = after_stateful(inputs[0], node, ctx)
    library = list(node.inputs[0].field_types) if node.metadata.version >= 2 else None
    spec = node.window
    props = ("start", "end", "rowtime")
    if spec.kind == "SESSION" and (set(spec.partition_keys) != set(node.grouping) or stream.record_watermark):
        out = global_session_aggregate(stream, node.grouping, node.aggregates, spec, props, node.field_types,
                                       ctx.uid(node, "window-aggregate"))
    else:
        out = window_aggregate(stream, node.grouping, node.aggregates, spec, props, node.field_types, library)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), inputs[0])
