"""``stream-exec-temporal-sort``: ORDER BY rowtime on a stream, on transformWithState (see operators)."""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.temporal_sort import temporal_sort
from planengine.runtime.operators.window_state import after_stateful, mark_stateful
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-temporal-sort", 1)
def translate_temporal_sort(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    stream = after_stateful(inputs[0], node, ctx)
    out = temporal_sort(stream, node.order_keys)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), stream)
