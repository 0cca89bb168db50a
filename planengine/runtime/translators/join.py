"""``stream-exec-join`` → the regular-join TWS operator (``planengine.runtime.operators.join``).

Spark 4.3 accepts a TWS in Append mode after another TWS, after a watermarked window aggregate, after
``dropDuplicates`` and after a stream-stream join in one query, so no cut is needed before this operator;
only an update-mode native aggregate upstream is refused (the executor cuts there).
"""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.join import join
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-join", 1)
def translate_join(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    left, right = inputs
    return join(left, right, node, ctx)
