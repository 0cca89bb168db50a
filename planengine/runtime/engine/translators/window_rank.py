"""``stream-exec-window-rank``: window Top-N on Spark's native aggregation (see operators/window_rank.py)."""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.operators.window_rank import window_rank
from planengine.runtime.operators.window_state import after_stateful, mark_stateful


@translator("stream-exec-window-rank", 1)
def translate_window_rank(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    stream = after_stateful(inputs[0], node, ctx)
    out = window_rank(stream, node.rank_type, node.partition_keys, node.order_keys, node.rank_start, node.rank_end,
                      node.output_rank_number, node.window_start_field, node.window_end_field)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), stream, event_time=False)
