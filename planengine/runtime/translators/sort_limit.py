"""``stream-exec-sort-limit`` (global Top-N) and ``stream-exec-limit`` (first N rows)."""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.rank import limit, sort_limit
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-sort-limit", 1)
def translate_sort_limit(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return sort_limit(stream, node, ctx)


@translator("stream-exec-limit", 1)
def translate_limit(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return limit(stream, node, ctx)
