"""Regular joins on the JVM (``io.planengine.jvm.ops.join``): inner, left, right, full, semi and anti.

Both sides are unioned into one stream keyed by the join key, as for the Python operator
(``operators/join.py``): ``_k0..`` (the equi-key values cast to the left key types), ``_side``, ``_rowkind``,
the left fields ``l0..`` and the right fields ``r0..`` (the other side's NULL), each cast to its plan type.

``refusal`` says why a join stays on the Python operator: a non-equi condition depends on rows of both sides,
so it cannot be computed in Spark expressions before the join, and the JVM side does not evaluate expressions.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planengine.runtime.jvm.movable import run_movable
from planengine.runtime.jvm.typed import spark_type
from planengine.runtime.stream import ROWKIND, Stream

SIDE = "_side"


def refusal(node: Any) -> str | None:
    """Why ``node`` runs on the Python operator rather than the JVM, or None. A pure function of the plan."""
    if node.non_equi_condition is not None:
        return "a non-equi join condition (evaluated per pair of rows; the JVM join evaluates no expressions)"
    return None


def _sides(left: Stream, right: Stream, node: Any) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    lt, rt = node.inputs[0].field_types, node.inputs[1].field_types
    key_types = [lt[i] for i in node.left_keys]

    def side_df(stream: Stream, side: int) -> Any:
        keys = node.left_keys if side == 0 else node.right_keys
        cols = [F.col(stream.columns[k]).cast(spark_type(t)).alias(f"_k{i}")
                for i, (k, t) in enumerate(zip(keys, key_types, strict=True))]
        cols.append(F.lit(side).cast("int").alias(SIDE))
        cols.append((F.col(ROWKIND) if stream.updating else F.lit("+I")).alias(ROWKIND))
        for i, t in enumerate(lt):
            cols.append((F.col(left.columns[i]) if side == 0 else F.lit(None)).cast(spark_type(t)).alias(f"l{i}"))
        for i, t in enumerate(rt):
            cols.append((F.col(right.columns[i]) if side == 1 else F.lit(None)).cast(spark_type(t)).alias(f"r{i}"))
        return stream.df.select(*cols)

    return side_df(left, 0).unionByName(side_df(right, 1))


def jvm_join(left: Stream, right: Stream, node: Any, ctx: Any) -> Stream:
    """``stream-exec-join`` without a non-equi condition on the JVM processor."""
    insert_only = node.changelog_mode.contains_only_inserts()
    spec = {
        "joinType": str(node.join_type).upper(),
        "leftWidth": len(node.inputs[0].field_types),
        "rightWidth": len(node.inputs[1].field_types),
        "leftKeys": list(node.left_keys),
        "rightKeys": list(node.right_keys),
        "filterNulls": [1 if f else 0 for f in node.filter_nulls],
        "insertOnly": insert_only,
        "stateTtlMs": int(ctx.state_ttl_ms(node)),
        "stateNames": list(type(node).STATE_NAMES),
    }
    df = run_movable(_sides(left, right, node), "join", spec, node, ctx, [f"_k{i}" for i in range(len(node.left_keys))])
    return Stream(df=df, fields=tuple(node.field_names), updating=not insert_only, rowtime=None,
                  facts=replace(left.facts, stateful=True))
