"""Event-time interval join on Spark's native stream-stream join.

Flink's bounds ``right.t + lower <= left.t <= right.t + upper`` (ms, inclusive) become a join condition
Spark recognises as a time-range constraint, so each side's state is evicted once the other side's
watermark makes a match impossible, and outer joins emit their null-padded rows at that point (Flink also
emits them when the row's matching interval has passed the watermark). Both inputs must be insert-only and
carry a watermark; Spark's query watermark is the minimum over the inputs, like Flink's two-input
operators.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.dataflow.expressions import render_spark_sql
from planengine.runtime.dataflow.stream import Stream, column_name

_JOIN_TYPES = {"INNER": "inner", "LEFT": "left_outer", "RIGHT": "right_outer", "FULL": "full_outer",
               "SEMI": "left_semi", "ANTI": "left_anti"}


def spark_join_type(join_type: str) -> str:
    key = join_type.upper().replace("_OUTER", "").replace(" OUTER", "")
    if key not in _JOIN_TYPES:
        raise ValidationError(f"join type {join_type} is not supported by this join on this engine")
    return _JOIN_TYPES[key]


def prefixed(stream: Stream, prefix: str) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    return stream.df.select(*[F.col(f"`{c}`").alias(f"{prefix}{i}") for i, c in enumerate(stream.columns)])


def equi_condition(left_keys: Sequence[int], right_keys: Sequence[int]) -> Any:
    """``l.k = r.k`` for every key pair, where a NULL key never matches.

    Spark's symmetric hash join compares its equi-join keys as binary rows, in which NULL equals NULL.
    SQL (and Flink) never match a NULL key, so each side also joins on a marker that is 0 for complete
    keys and differs between the sides (1 left, 2 right) when a key is NULL: such rows stay unmatched,
    and outer joins still pad them when they expire.
    """
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    cond = F.lit(True)
    for lk, rk in zip(left_keys, right_keys, strict=True):
        cond = cond & (F.col(f"_l{lk}") == F.col(f"_r{rk}"))
    if left_keys:
        l_null = F.greatest(*[F.col(f"_l{k}").isNull().cast("int") for k in left_keys], F.lit(0))
        r_null = F.greatest(*[F.col(f"_r{k}").isNull().cast("int") for k in right_keys], F.lit(0))
        cond = cond & (l_null == r_null * 2)
    return cond


def interval_join(left: Stream, right: Stream, join_type: str, left_keys: Sequence[int], right_keys: Sequence[int],
                  left_time: int, right_time: int, lower_ms: int, upper_ms: int,
                  non_equi_condition: Any = None) -> Stream:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    if left.updating or right.updating:
        raise ValidationError("an interval join over an updating input is not supported on this engine",
                              hint="join insert-only streams (interval joins need append-only inputs in Flink too)")
    if left.rowtime is None or right.rowtime is None:
        raise ValidationError("an interval join needs a watermark on both inputs",
                              hint="declare WATERMARK FOR on both tables' time attributes")
    n, m = len(left.fields), len(right.fields)
    ldf, rdf = prefixed(left, "_l"), prefixed(right, "_r")
    lt, rt = F.col(f"_l{left_time}"), F.col(f"_r{right_time}")
    cond = (lt >= rt + F.expr(f"INTERVAL {lower_ms} MILLISECONDS")) & \
           (lt <= rt + F.expr(f"INTERVAL {upper_ms} MILLISECONDS"))
    cond = cond & equi_condition(left_keys, right_keys)
    if non_equi_condition is not None:
        names = [f"_l{i}" for i in range(n)] + [f"_r{i}" for i in range(m)]
        cond = cond & F.expr(render_spark_sql(non_equi_condition, names))
    how = spark_join_type(join_type)
    joined = ldf.join(rdf, cond, how)
    if how in ("left_semi", "left_anti"):
        out = joined.select(*[F.col(f"_l{i}").alias(column_name(i)) for i in range(n)])
        return Stream(out, left.fields, rowtime=column_name(left_time))
    out = joined.select(*[F.col(f"_l{i}").alias(column_name(i)) for i in range(n)],
                        *[F.col(f"_r{i}").alias(column_name(n + i)) for i in range(m)])
    # The output keeps both time attributes as plain timestamps in Flink; the left one still carries
    # Spark's event-time mark for a downstream window (inner joins only keep it monotone enough).
    return Stream(out, left.fields + right.fields, rowtime=column_name(left_time) if how == "inner" else None)
