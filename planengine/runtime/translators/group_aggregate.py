"""``stream-exec-group-aggregate`` → the ``group_aggregate`` TWS operator."""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.group_aggregate import group_aggregate
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-group-aggregate", 1)
def translate_group_aggregate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return group_aggregate(stream, node, ctx)
