"""``stream-exec-over-aggregate``: rowtime OVER windows (ROWS/RANGE) on transformWithState (see operators)."""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.over_aggregate import over_aggregate
from planengine.runtime.operators.window_state import after_stateful, mark_stateful
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-over-aggregate", 1)
def translate_over_aggregate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    stream = after_stateful(inputs[0], node, ctx)
    out = over_aggregate(stream, node.partition_keys, node.order_keys, node.frame, node.aggregates)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), stream)
