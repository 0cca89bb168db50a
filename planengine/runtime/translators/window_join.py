"""``stream-exec-window-join``: joins of two window TVFs on Spark's stream-stream join (see operators)."""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.window_join import window_join
from planengine.runtime.operators.window_state import after_stateful, mark_stateful
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-window-join", 1)
def translate_window_join(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    left, right = (after_stateful(s, node, ctx) for s in inputs)
    out = window_join(left, right, node.join_type, node.left_keys, node.right_keys, node.left_window_fields,
                      node.right_window_fields, node.non_equi_condition)
    out = out.with_df(out.df, fields=tuple(node.field_names), properties=dict(left.properties))
    return mark_stateful(out, event_time=False)
