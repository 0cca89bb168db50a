"""``stream-exec-over-aggregate``: OVER windows (see operators).

Ordered by a time attribute: ROWS/RANGE frames on transformWithState with event-time timers
(``operators/over_aggregate.py``). Ordered by any other column: RANGE UNBOUNDED PRECEDING over an append or
retract stream, emitting updates of the rows that follow (``operators/over_non_time.py``). The choice is the
order key's type, recorded in the plan; plans before the non-time strategy could not order by other columns.
"""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.over_aggregate import over_aggregate
from planengine.runtime.operators.over_non_time import non_time_over_aggregate
from planengine.runtime.operators.window_state import after_stateful, mark_stateful
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-over-aggregate", 1)
def translate_over_aggregate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    stream = after_stateful(inputs[0], node, ctx)
    in_types = node.inputs[0].field_types
    order = node.order_keys[0] if node.order_keys else None
    if order is not None and not in_types[order.field].is_time_attribute:
        out = non_time_over_aggregate(stream, node.partition_keys, order, node.aggregates, in_types,
                                      node.field_types, node.field_names, ctx.state_ttl_ms(node))
        return out
    out = over_aggregate(stream, node.partition_keys, node.order_keys, node.frame, node.aggregates)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), stream)
