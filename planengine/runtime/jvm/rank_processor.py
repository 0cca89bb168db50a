"""Top-N (``stream-exec-rank`` version 2, and ``stream-exec-sort-limit`` version 3 with a fetch) on the JVM
(``io.planengine.jvm.ops.rank.Rank``). A sort-limit is Flink's global Top-N: the same processor as a ROW_NUMBER
without partition keys (one constant key) and without the rank number.

The spec is the node's plan facts: partition keys, sort keys with Flink's null ordering, rank function and
range, whether the rank number is output, the input's and output's changelog kinds, TTL and state name. The
rules are those of the Python operator (``runtime/operators/rank.py``), which version-1 plans keep; the
state is typed (``rankedRows``: the partition's rows in sort order with their arrival numbers).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypedDict

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.jvm.movable import run_movable
from planengine.runtime.jvm.specs import RankSpec, SortKeySpec
from planengine.runtime.jvm.typed import typed_input
from planengine.runtime.operators.rank import is_full_sort, sort_order


def spec(node: Any, stream: Stream, ctx: Any) -> RankSpec:
    """The spec ``Rank.apply`` reads (``io.planengine.jvm.spec.RankSpec``)."""
    return RankSpec(
        partition_keys=tuple(node.partition_keys),
        rank_type=str(node.rank_type).upper(),
        rank_start=int(node.rank_start),
        rank_end=int(node.rank_end),
        output_rank_number=bool(node.output_rank_number),
        **_common(node, stream, ctx),
        # version 3 records Flink's strategy; version 2 lets the processor derive it from inputUpdating
        strategy=node.strategy or None,
        unique_key=tuple(node.unique_key) if node.strategy else None,
    )


def jvm_rank(stream: Stream, node: Any, ctx: Any) -> Stream:
    """The node on the JVM processor: the input's columns (then the rank number) and ``_rowkind``."""
    s = spec(node, stream, ctx)
    typed = typed_input(stream, node.inputs[0].field_types)
    df = run_movable(typed, "rank", s, node, ctx, [typed.columns[k] for k in node.partition_keys])
    return Stream(df=df, fields=tuple(node.field_names), updating=not s.insert_only, rowtime=None,
                  facts=replace(stream.facts, stateful=True))


def sort_limit_spec(node: Any, stream: Stream, ctx: Any) -> RankSpec:
    """``Rank.apply``'s spec for a sort-limit (a fetch: ``OFFSET o FETCH n`` ranks ``o + 1 .. o + n``)."""
    if is_full_sort(node):
        raise ValueError("a full sort (no fetch) is not a Top-N")
    return RankSpec(
        partition_keys=(),
        rank_type="ROW_NUMBER",
        rank_start=int(node.offset) + 1,
        rank_end=int(node.offset) + int(node.limit),
        output_rank_number=False,
        **_common(node, stream, ctx),
    )


class _Common(TypedDict):
    order: tuple[SortKeySpec, ...]
    generate_update_before: bool
    input_updating: bool
    insert_only: bool
    state_ttl_ms: int
    state_names: tuple[str, ...]


def _common(node: Any, stream: Stream, ctx: Any) -> _Common:
    """The spec fields a rank and a sort-limit read alike: sort order, changelog kinds, TTL, state name."""
    return _Common(
        order=tuple(SortKeySpec(field=f, ascending=asc, nulls_first=first) for f, asc, first in sort_order(node)),
        generate_update_before=bool(node.generate_update_before),
        input_updating=bool(stream.updating),
        insert_only=node.changelog_mode.contains_only_inserts(),
        state_ttl_ms=int(ctx.state_ttl_ms(node)),
        state_names=tuple(type(node).STATE_NAMES),
    )


def jvm_sort_limit(stream: Stream, node: Any, ctx: Any) -> Stream:
    """The sort-limit on the JVM processor: the input's columns and ``_rowkind`` (unless insert-only)."""
    s = sort_limit_spec(node, stream, ctx)
    df = run_movable(typed_input(stream, node.field_types), "rank", s, node, ctx, [])
    return Stream(df=df, fields=tuple(node.field_names), updating=not s.insert_only, rowtime=None,
                  facts=replace(stream.facts, stateful=True))
