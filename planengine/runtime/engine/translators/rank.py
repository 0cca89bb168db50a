"""``stream-exec-rank``: version 1 on the Python Top-N TWS operator (``planengine.runtime.operators.rank``),
version 2 on the JVM processor (``runtime/jvm/rank_processor.py``; same rules, typed state), version 3 on the JVM
processor with Flink's strategy recorded in the plan (append-fast, retract or update-fast). Rows the JVM's typed state
cannot hold (a MAP with non-STRING keys or an INTERVAL, ``strategies.state_type_refusal``) run on version 1's
operator."""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.jvm import holds_state_of
from planengine.runtime.jvm.rank_processor import jvm_rank
from planengine.runtime.operators.rank import rank


@translator("stream-exec-rank", 1)
def translate_rank(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return rank(stream, node, ctx)


@translator("stream-exec-rank", 2, 3)
def translate_rank_v2(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    """Version 3 hands the processor its recorded strategy (``planner/rank_strategy.py``)."""
    (stream,) = inputs
    if not holds_state_of(node, node.inputs[0].field_types, ctx, "rank"):
        return rank(stream, node, ctx)
    return jvm_rank(stream, node, ctx)
