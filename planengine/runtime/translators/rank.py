"""``stream-exec-rank`` → the Top-N TWS operator (``planengine.runtime.operators.rank``)."""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.rank import rank
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-rank", 1)
def translate_rank(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return rank(stream, node, ctx)
