"""``stream-exec-window-join``: joins of two window TVFs (see operators/window_join.py).

Version 1 runs on Spark's stream-stream join (inner matches leave as soon as both rows are there; no anti
join); version 2 is Flink's window join operator on transformWithState: one emission per window when the
watermark reaches its end.
"""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.window_join import window_join, window_join_at_window_end
from planengine.runtime.operators.window_state import after_stateful, mark_stateful
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-window-join", 1, 2)
def translate_window_join(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    left, right = (after_stateful(s, node, ctx) for s in inputs)
    join = window_join_at_window_end if node.metadata.version >= 2 else window_join
    out = join(left, right, node.join_type, node.left_keys, node.right_keys, node.left_window_fields,
                      node.right_window_fields, node.non_equi_condition)
    out = out.with_df(out.df, fields=tuple(node.field_names), facts=left.facts)
    return mark_stateful(out, event_time=False)
