"""``stream-exec-changelog-normalize``: version 1 on the Python ``changelog_normalize`` TWS operator, version 2 on
the JVM processor (``runtime/jvm/changelog_processors.py``; same rules, typed state) unless its typed state cannot
hold the rows (a MAP with non-STRING keys or an INTERVAL, ``strategies.state_type_refusal``)."""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.jvm import holds_state_of
from planengine.runtime.jvm.changelog_processors import jvm_changelog_normalize
from planengine.runtime.operators.changelog_normalize import changelog_normalize


@translator("stream-exec-changelog-normalize", 1)
def translate_changelog_normalize(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return changelog_normalize(stream, node, ctx)


@translator("stream-exec-changelog-normalize", 2)
def translate_changelog_normalize_v2(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    if not holds_state_of(node, node.inputs[0].field_types, ctx, "changelog normalize"):
        return changelog_normalize(stream, node, ctx)
    return jvm_changelog_normalize(stream, node, ctx)
