"""``stream-exec-deduplicate`` → the ``deduplicate`` TWS operator."""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.deduplicate import deduplicate
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-deduplicate", 1)
def translate_deduplicate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return deduplicate(stream, node, ctx)
