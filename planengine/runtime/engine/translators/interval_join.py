"""``stream-exec-interval-join``: event-time interval joins on Spark's stream-stream join (see operators)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.operators.interval_join import interval_join
from planengine.runtime.operators.window_state import after_stateful, mark_stateful


@translator("stream-exec-interval-join", 1)
def translate_interval_join(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    if not node.is_event_time:
        raise ValidationError("processing-time interval joins are not supported on this engine",
                              hint="join on rowtime attributes with a WATERMARK (processing time never goes "
                                   "idle on Spark)")
    left, right = (after_stateful(s, node, ctx) for s in inputs)
    out = interval_join(left, right, node.join_type, node.left_keys, node.right_keys, node.left_time_field,
                        node.right_time_field, node.left_lower_bound_ms, node.left_upper_bound_ms,
                        node.non_equi_condition)
    # Spark holds the joined rows for the later of the two watermarks: downstream channels re-derive that one.
    watermark = left.facts.watermark or right.facts.watermark
    if watermark is not None:
        watermark = replace(watermark, delay_ms=max(left.facts.watermark_delay_ms, right.facts.watermark_delay_ms))
    out = out.with_df(out.df, fields=tuple(node.field_names), facts=replace(left.facts, watermark=watermark))
    return mark_stateful(out, event_time=False)
