"""Deduplicate, changelog normalize and the sink's upsert materializer on the JVM (``io.planengine.jvm.ops.dedup``,
``.normalize``, ``.materialize``).

Each keeps typed rows per key (``keptRow`` / ``latestRow``: the input's own fields and the write time;
``materializedRows``: the rows alive per sink key) and emits Flink's changelog; their Javadoc spells out the
rules (the same as the Python operators' ``operators/deduplicate.py``, ``changelog_normalize.py`` and
``upsert_materializer.py``, which plans of the older node versions keep).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.jvm.movable import run_movable
from planengine.runtime.jvm.specs import ChangelogNormalizeSpec, DeduplicateSpec, UpsertMaterializeSpec
from planengine.runtime.jvm.typed import typed_input


def _stateful(stream: Stream, node: Any, df: Any, updating: bool) -> Stream:
    return Stream(df=df, fields=tuple(node.field_names), updating=updating, rowtime=None,
                  facts=replace(stream.facts, stateful=True))


def jvm_deduplicate(stream: Stream, node: Any, ctx: Any) -> Stream:
    """``stream-exec-deduplicate``: keyed by the unique key; insert-only output for proctime keep-first."""
    insert_only = node.changelog_mode.contains_only_inserts()
    spec = DeduplicateSpec(
        unique_keys=tuple(node.unique_keys),
        keep_last_row=bool(node.keep_last_row),
        is_rowtime=bool(node.is_rowtime),
        order_field=int(node.order_field),
        generate_update_before=bool(node.generate_update_before),
        insert_only=insert_only,
        state_ttl_ms=int(ctx.state_ttl_ms(node)),
        state_names=tuple(type(node).STATE_NAMES),
    )
    typed = typed_input(stream, node.field_types)
    df = run_movable(typed, "deduplicate", spec, node, ctx, [typed.columns[k] for k in node.unique_keys])
    return _stateful(stream, node, df, updating=not insert_only)


def jvm_changelog_normalize(stream: Stream, node: Any, ctx: Any) -> Stream:
    """``stream-exec-changelog-normalize``: keyed by the unique key, a full changelog with before-images."""
    spec = ChangelogNormalizeSpec(
        unique_keys=tuple(node.unique_keys),
        generate_update_before=bool(node.generate_update_before),
        state_ttl_ms=int(ctx.state_ttl_ms(node)),
        state_names=tuple(type(node).STATE_NAMES),
    )
    typed = typed_input(stream, node.field_types)
    df = run_movable(typed, "changelogNormalize", spec, node, ctx, [typed.columns[k] for k in node.unique_keys])
    return _stateful(stream, node, df, updating=True)


def jvm_upsert_materialize(stream: Stream, keys: Any, ctx: Any, node: Any) -> Stream:
    """The sink's upsert materializer: ``stream`` (the sink's input) keyed by the sink key positions ``keys``."""
    names = getattr(type(node), "STATE_NAMES", ()) or ("materializedRows",)
    spec = UpsertMaterializeSpec(upsert_keys=tuple(keys), state_ttl_ms=int(ctx.state_ttl_ms(node)),
                                 state_names=(names[0],))
    typed = typed_input(stream, node.inputs[0].field_types)
    df = run_movable(typed, "upsertMaterialize", spec, node, ctx, [typed.columns[k] for k in keys])
    return Stream(df=df, fields=tuple(stream.fields), updating=True, rowtime=None,
                  facts=replace(stream.facts, stateful=True))
