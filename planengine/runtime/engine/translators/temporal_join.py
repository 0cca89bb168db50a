"""``stream-exec-temporal-join``: event-time joins with a versioned table, on transformWithState.

Version 2 keeps its state with the versioned state codec; version 1 keeps it pickled for its plans."""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.operators.temporal_join import temporal_join
from planengine.runtime.operators.window_state import after_stateful, mark_stateful


@translator("stream-exec-temporal-join", 1, 2)
def translate_temporal_join(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    left, right = (after_stateful(s, node, ctx) for s in inputs)
    out = temporal_join(left, right, node.join_type, node.left_keys, node.right_keys, node.left_time_field,
                        node.right_time_field if node.is_event_time else None, node.non_equi_condition,
                        json_state=node.metadata.version >= 2)
    out = out.with_df(out.df, fields=tuple(node.field_names), facts=left.facts)
    return mark_stateful(out, event_time=False)
