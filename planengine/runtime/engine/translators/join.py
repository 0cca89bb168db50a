"""``stream-exec-join``: version 1 on the Python regular-join TWS operator (``planengine.runtime.operators.join``),
version 2 on the JVM processor (``runtime/jvm/join_processor.py``) unless the join has a non-equi condition (then the
Python operator; the choice reads only the plan), version 3 on the JVM processor with its non-equi condition
evaluated there, unless the condition has no Spark form the JVM can evaluate (``refusal_v3``).

Spark 4.3 accepts a TWS in Append mode after another TWS, after a watermarked window aggregate, after
``dropDuplicates`` and after a stream-stream join in one query, so no cut is needed before this operator;
only an update-mode native aggregate upstream is refused (the executor cuts there).
"""

from __future__ import annotations

import logging
from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.jvm.join_processor import jvm_join, refusal, refusal_v3
from planengine.runtime.operators.join import join


@translator("stream-exec-join", 1)
def translate_join(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    left, right = inputs
    return join(left, right, node, ctx)


@translator("stream-exec-join", 2)
def translate_join_v2(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    return _jvm_unless(refusal(node), node, inputs, ctx)


@translator("stream-exec-join", 3)
def translate_join_v3(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    return _jvm_unless(refusal_v3(node), node, inputs, ctx)


def _jvm_unless(reason: str | None, node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    """The JVM processor, or the Python operator when ``reason`` (the version's refusal) says why not."""
    left, right = inputs
    if reason is None:
        return jvm_join(left, right, node, ctx)
    logging.getLogger("planengine.runtime").info("node %d (join): transformWithState (Python): %s",
                                                 ctx.node_id(node), reason)
    return join(left, right, node, ctx)
