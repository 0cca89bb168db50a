"""``stream-exec-window-aggregate``: windowed GROUP BY over a window TVF.

TUMBLE/HOP/CUMULATE and SESSION partitioned by the grouping keys run on Spark's native aggregation in
append mode (``operators/window_aggregate.py``); a SESSION over all keys, or partitioned by other columns
than the grouping keys, runs on transformWithState with one state per partition key; so does every SESSION
below a per-record watermark assigner, because a watermark inside a batch may close a session before a later
row of the batch would have extended it (Spark's session windows close only at batch ends). That session
operator is Python (``operators/window_session.py``) in versions 1 and 2, the JVM processor
(``runtime/jvm/session_window_processor.py``) from version 3 on unless a call has no JVM accumulator (a Python aggregate
function); version 4 is version 3 except that such a session keeps its Python state with the versioned state
codec instead of pickles. Output: grouping fields, aggregates, window_start, window_end, window_time (a rowtime
attribute).
"""

from __future__ import annotations

import logging
from typing import Any

from planengine.plan.strategies import state_type_refusal
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.jvm.session_window_processor import jvm_session_aggregate, refusal
from planengine.runtime.operators.window_aggregate import window_aggregate
from planengine.runtime.operators.window_session import global_session_aggregate
from planengine.runtime.operators.window_state import after_stateful, mark_stateful

log = logging.getLogger("planengine.runtime")


@translator("stream-exec-window-aggregate", 1, 2, 3, 4)
def translate_window_aggregate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    """Version 2 aggregates in the library's native forms (``runtime/operators/aggregates/library.py``), version 1 in
    its own (frozen with its state layout); sessions over other keys run on the Python operator in both, on the
    JVM from version 3 on (native forms as version 2)."""
    stream = after_stateful(inputs[0], node, ctx)
    library = list(node.inputs[0].field_types) if node.metadata.version >= 2 else None
    spec = node.window
    props = ("start", "end", "rowtime")
    if spec.kind == "SESSION" and (set(spec.partition_keys) != set(node.grouping) or stream.record_watermark):
        out = session_aggregate(stream, node, ctx, spec, props, "window-aggregate")
    else:
        out = window_aggregate(stream, node.grouping, node.aggregates, spec, props, node.field_types, library)
    return mark_stateful(out.with_df(out.df, fields=tuple(node.field_names)), inputs[0])


def session_aggregate(stream: Stream, node: Any, ctx: Any, spec: Any, props: tuple[str, ...], kind: str) -> Stream:
    """Sessions over other keys than the grouping: the JVM processor from version 3 on (unless ``refusal``),
    else the Python operator, which keeps its sessions as tagged JSON from version 4 on (pickles before: their
    snapshots hold pickles). Shared with the legacy group-window aggregate."""
    reason = "version 1-2 runs the Python operator" if node.metadata.version < 3 else (
        refusal(node.aggregates) or state_type_refusal(node.inputs[0].field_types))
    if reason is None:
        return jvm_session_aggregate(stream, node.grouping, node.aggregates, spec, props, node.field_types,
                                     node.inputs[0].field_types, ctx.state_ttl_ms(node), node, ctx)
    log.info("node %d (%s, SESSION): transformWithState (Python): %s", ctx.node_id(node), kind, reason)
    return global_session_aggregate(stream, node.grouping, node.aggregates, spec, props, node.field_types,
                                    ctx.uid(node, kind), json_state=node.metadata.version >= 4)
