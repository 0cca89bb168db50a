"""``stream-exec-temporal-sort``: ORDER BY rowtime on a stream, on transformWithState (see operators).

Version 2 keeps ``bufferedRows`` with the versioned state codec; version 1 keeps it pickled for its plans."""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.operators.temporal_sort import temporal_sort
from planengine.runtime.operators.window_state import after_stateful, mark_stateful


@translator("stream-exec-temporal-sort", 1, 2)
def translate_temporal_sort(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    stream = after_stateful(inputs[0], node, ctx)
    out = temporal_sort(stream, node.order_keys, json_state=node.metadata.version >= 2)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), stream)
