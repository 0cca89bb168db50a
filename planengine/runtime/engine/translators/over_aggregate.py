"""``stream-exec-over-aggregate``: OVER windows (see operators).

Version 1, ordered by a time attribute: ROWS/RANGE frames on the Python transformWithState operator with
event-time timers (``operators/over_aggregate.py``). Ordered by any other column: RANGE UNBOUNDED PRECEDING
over an append or retract stream, emitting updates of the rows that follow (``operators/over_non_time.py``).
The choice is the order key's type, recorded in the plan; plans before the non-time strategy could not order
by other columns.

Version 2: the rowtime frames on the JVM processor (``runtime/jvm/over_aggregate_processor.py``, typed state), unless
``refusal`` keeps the node on version 1's operators (a non-time order, a call without a JVM accumulator); the
choice reads only the plan. Version 3: DISTINCT calls on the JVM processor too. Version 4: LAG on the JVM
processor too, and the Python operators it still falls back to (a Python aggregate function) keep their state
with the versioned state codec instead of pickles (the non-time operator's state was JSON text in every version).
"""

from __future__ import annotations

import logging
from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.jvm.over_aggregate_processor import jvm_over_aggregate, refusal
from planengine.runtime.operators.over_aggregate import over_aggregate
from planengine.runtime.operators.over_non_time import non_time_over_aggregate
from planengine.runtime.operators.window_state import after_stateful, mark_stateful


@translator("stream-exec-over-aggregate", 1)
def translate_over_aggregate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    stream = after_stateful(inputs[0], node, ctx)
    in_types = node.inputs[0].field_types
    order = node.order_keys[0] if node.order_keys else None
    if order is not None and not in_types[order.field].is_time_attribute:
        out = non_time_over_aggregate(stream, node.partition_keys, order, node.aggregates, in_types,
                                      node.field_types, node.field_names, ctx.state_ttl_ms(node))
        return out
    out = over_aggregate(stream, node.partition_keys, node.order_keys, node.frame, node.aggregates,
                         json_state=node.metadata.version >= 4)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), stream)


@translator("stream-exec-over-aggregate", 2, 3, 4)
def translate_over_aggregate_v2(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    reason = refusal(node, node.metadata.version)
    if reason is not None:
        logging.getLogger("planengine.runtime").info("node %d (over aggregate): transformWithState (Python): %s",
                                                     ctx.node_id(node), reason)
        return translate_over_aggregate(node, inputs, ctx)
    stream = after_stateful(inputs[0], node, ctx)
    out = jvm_over_aggregate(stream, node.partition_keys, node.order_keys, node.frame, node.aggregates,
                             node.inputs[0].field_types, ctx.state_ttl_ms(node), node, ctx)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), stream)
