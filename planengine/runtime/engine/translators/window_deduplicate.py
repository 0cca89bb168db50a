"""``stream-exec-window-deduplicate``: first/last row per window and key (ROW_NUMBER = 1 window rank)."""

from __future__ import annotations

from typing import Any

from planengine.ir.sorting import SortKey
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.operators.window_rank import window_rank
from planengine.runtime.operators.window_state import after_stateful, mark_stateful


@translator("stream-exec-window-deduplicate", 1)
def translate_window_deduplicate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    stream = after_stateful(inputs[0], node, ctx)
    order = (SortKey(node.order_field, ascending=not node.keep_last_row),)
    out = window_rank(stream, "ROW_NUMBER", node.partition_keys, order, 1, 1, False, node.window_start_field,
                      node.window_end_field)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), stream, event_time=False)
