"""``stream-exec-window-join``: joins of two window TVFs (see operators/window_join.py).

Version 1 runs on Spark's stream-stream join (inner matches leave as soon as both rows are there; no anti
join); version 2 is Flink's window join operator on transformWithState: one emission per window when the
watermark reaches its end; version 3 is version 2 with its state kept by the versioned state codec
instead of pickles.
"""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.operators.window_join import window_join, window_join_at_window_end
from planengine.runtime.operators.window_state import after_stateful, mark_stateful


@translator("stream-exec-window-join", 1, 2, 3)
def translate_window_join(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    left, right = (after_stateful(s, node, ctx) for s in inputs)
    args = (left, right, node.join_type, node.left_keys, node.right_keys, node.left_window_fields,
            node.right_window_fields, node.non_equi_condition)
    if node.metadata.version >= 2:
        out = window_join_at_window_end(*args, json_state=node.metadata.version >= 3)
    else:
        out = window_join(*args)
    out = out.with_df(out.df, fields=tuple(node.field_names), facts=left.facts)
    return mark_stateful(out, event_time=False)
