"""Window join (both inputs windowed by the same TVF) on Spark's native stream-stream join.

Rows join when their keys are equal *and* they are in the same window (equal window_start and
window_end). Each side's window end is marked as an event-time join key, so Spark keeps a side's rows only
until the watermark passes their window end and, for outer joins, emits the null-padded unmatched rows at
that moment — Flink's window join emits everything of a window when it fires, so the materialized result
is the same; inner matches may come out earlier than in Flink (as soon as both rows are present).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.expressions import render_spark_sql
from planengine.runtime.operators.interval_join import equi_condition, prefixed, spark_join_type
from planengine.runtime.operators.window_assign import as_event_time, watermark_metadata
from planengine.runtime.stream import Stream, column_name


def window_join(left: Stream, right: Stream, join_type: str, left_keys: Sequence[int], right_keys: Sequence[int],
                left_window: Sequence[int], right_window: Sequence[int], non_equi_condition: Any = None) -> Stream:
    from pyspark.sql import functions as F

    if left.updating or right.updating:
        raise ValidationError("a window join over an updating input is not supported on this engine")
    n, m = len(left.fields), len(right.fields)
    ldf, rdf = prefixed(left, "_l"), prefixed(right, "_r")
    (ls, le), (rs, re) = left_window[:2], right_window[:2]
    ldf = ldf.select("*", as_event_time(F.col(f"_l{le}").cast("timestamp"), "_lwe",
                                        watermark_metadata(left.df, left.rowtime)))
    rdf = rdf.select("*", as_event_time(F.col(f"_r{re}").cast("timestamp"), "_rwe",
                                        watermark_metadata(right.df, right.rowtime)))
    cond = (F.col("_lwe") == F.col("_rwe")) & (F.col(f"_l{ls}") == F.col(f"_r{rs}"))
    cond = cond & equi_condition(left_keys, right_keys)
    if non_equi_condition is not None:
        names = [f"_l{i}" for i in range(n)] + [f"_r{i}" for i in range(m)]
        cond = cond & F.expr(render_spark_sql(non_equi_condition, names))
    how = spark_join_type(join_type)
    joined = ldf.join(rdf, cond, how)
    if how in ("left_semi", "left_anti"):
        return Stream(joined.select(*[F.col(f"_l{i}").alias(column_name(i)) for i in range(n)]), left.fields)
    out = joined.select(*[F.col(f"_l{i}").alias(column_name(i)) for i in range(n)],
                        *[F.col(f"_r{i}").alias(column_name(n + i)) for i in range(m)])
    return Stream(out, left.fields + right.fields)
