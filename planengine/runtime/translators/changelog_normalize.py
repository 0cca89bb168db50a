"""``stream-exec-changelog-normalize`` → the ``changelog_normalize`` TWS operator."""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.changelog_normalize import changelog_normalize
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator


@translator("stream-exec-changelog-normalize", 1)
def translate_changelog_normalize(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return changelog_normalize(stream, node, ctx)
