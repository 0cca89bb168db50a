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
from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.jvm.movable import run_movable
from planengine.runtime.jvm.typed import typed_input
from planengine.runtime.operators.rank import is_full_sort, sort_order


def spec(node: Any, stream: Stream, ctx: Any) -> dict[str, Any]:
    """The JSON spec ``Rank.apply`` reads (see its Javadoc)."""
    return {
        "partitionKeys": list(node.partition_keys),
        "rankType": str(node.rank_type).upper(),
        "rankStart": int(node.rank_start),
        "rankEnd": int(node.rank_end),
        "outputRankNumber": bool(node.output_rank_number),
        **_common(node, stream, ctx),
        # version 3 records Flink's strategy; version 2 lets the processor derive it from inputUpdating
        **({"strategy": node.strategy, "uniqueKey": list(node.unique_key)} if node.strategy else {}),
    }


def jvm_rank(stream: Stream, node: Any, ctx: Any) -> Stream:
    """The node on the JVM processor: the input's columns (then the rank number) and ``_rowkind``."""
    s = spec(node, stream, ctx)
    typed = typed_input(stream, node.inputs[0].field_types)
    df = run_movable(typed, "rank", s, node, ctx, [typed.columns[k] for k in node.partition_keys])
    return Stream(df=df, fields=tuple(node.field_names), updating=not s["insertOnly"], rowtime=None,
                  facts=replace(stream.facts, stateful=True))


def sort_limit_spec(node: Any, stream: Stream, ctx: Any) -> dict[str, Any]:
    """``Rank.apply``'s spec for a sort-limit (a fetch: ``OFFSET o FETCH n`` ranks ``o + 1 .. o + n``)."""
    if is_full_sort(node):
        raise ValueError("a full sort (no fetch) is not a Top-N")
    return {
        "partitionKeys": [],
        "rankType": "ROW_NUMBER",
        "rankStart": int(node.offset) + 1,
        "rankEnd": int(node.offset) + int(node.limit),
        "outputRankNumber": False,
        **_common(node, stream, ctx),
    }


def _common(node: Any, stream: Stream, ctx: Any) -> dict[str, Any]:
    """The spec fields a rank and a sort-limit read alike: sort order, changelog kinds, TTL, state name."""
    return {
        "order": [{"field": f, "ascending": asc, "nullsFirst": first} for f, asc, first in sort_order(node)],
        "generateUpdateBefore": bool(node.generate_update_before),
        "inputUpdating": bool(stream.updating),
        "insertOnly": node.changelog_mode.contains_only_inserts(),
        "stateTtlMs": int(ctx.state_ttl_ms(node)),
        "stateNames": list(type(node).STATE_NAMES),
    }


def jvm_sort_limit(stream: Stream, node: Any, ctx: Any) -> Stream:
    """The sort-limit on the JVM processor: the input's columns and ``_rowkind`` (unless insert-only)."""
    s = sort_limit_spec(node, stream, ctx)
    df = run_movable(typed_input(stream, node.field_types), "rank", s, node, ctx, [])
    return Stream(df=df, fields=tuple(node.field_names), updating=not s["insertOnly"], rowtime=None,
                  facts=replace(stream.facts, stateful=True))
