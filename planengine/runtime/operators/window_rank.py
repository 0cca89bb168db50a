"""Window Top-N and window deduplication on Spark's native aggregation (append mode).

Flink's window rank buffers each window's rows and ranks them when the watermark passes the window end.
Here that is one aggregation per (partition keys, window_start, window_end) with the window end marked as
the event-time grouping attribute: the group's rows are collected, sorted with the ORDER BY keys (a
comparator honouring ASC/DESC and NULLS FIRST/LAST; the sort is stable, so ties keep arrival order like
Flink's ROW_NUMBER) and exploded with their rank; rows outside ``[rank_start, rank_end]`` are dropped.
A row arriving after its window fired is late and dropped, as in Flink (below a per-record watermark
assigner also when the watermark it met inside its micro-batch had fired the window). Window deduplication is the
``ROW_NUMBER() = 1`` case ordered by the time attribute (ASC keeps the first row, DESC the last).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.dataflow.stream import Stream, column_name
from planengine.runtime.operators.record_watermark import late_filter
from planengine.runtime.operators.window_assign import as_event_time, millis_sql, watermark_metadata


def _compare_sql(keys: Sequence[Any], left: str, right: str) -> str:
    parts = []
    for k in keys:
        a, b = f"{left}.`{column_name(k.field)}`", f"{right}.`{column_name(k.field)}`"
        nulls_first = k.ascending if k.nulls_first is None else k.nulls_first
        nf = -1 if nulls_first else 1
        lt, gt = (-1, 1) if k.ascending else (1, -1)
        parts.append(f"(CASE WHEN {a} IS NULL AND {b} IS NULL THEN 0 WHEN {a} IS NULL THEN {nf} "
                     f"WHEN {b} IS NULL THEN {-nf} WHEN {a} < {b} THEN {lt} WHEN {a} > {b} THEN {gt} ELSE 0 END)")
    if not parts:
        return "0"
    out = parts[-1]
    for p in reversed(parts[:-1]):
        out = f"(CASE WHEN {p} <> 0 THEN {p} ELSE {out} END)"
    return out


def window_rank(stream: Stream, rank_type: str, partition_keys: Sequence[int], order_keys: Sequence[Any],
                rank_start: int, rank_end: int, output_rank: bool, window_start: int, window_end: int) -> Stream:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    if stream.updating:
        raise ValidationError("a window rank over an updating input is not supported on this engine")
    rank_type = rank_type.upper()
    if rank_type not in ("ROW_NUMBER", "RANK", "DENSE_RANK"):
        raise ValidationError(f"rank function {rank_type} is not supported")
    df = stream.df
    n = len(stream.fields)
    meta = watermark_metadata(df, stream.rowtime)
    end_col = column_name(window_end)
    keys = [F.col(f"`{column_name(k)}`").alias(f"_p{i}") for i, k in enumerate(partition_keys)]
    # The event-time mark must sit on a plain grouping column (Spark looks at the grouping attributes'
    # references), so the marked window end is projected first.
    keys.append(as_event_time(F.col(f"`{end_col}`").cast("timestamp"), "_wend", meta))
    keys.append(F.col(f"`{column_name(window_start)}`").alias("_wstart"))
    rows = F.collect_list(F.struct(*[F.col(f"`{c}`") for c in stream.columns])).alias("_rows")
    present = df.filter(F.col(f"`{end_col}`").isNotNull())
    if stream.record_watermark:
        present = present.filter(late_filter(F.expr(millis_sql(f"`{end_col}`"))))
    keyed = present.select("*", *keys)
    names = [f"_p{i}" for i in range(len(partition_keys))] + ["_wend", "_wstart"]
    grouped = keyed.groupBy(*[F.col(k) for k in names]).agg(rows)
    cmp = _compare_sql(order_keys, "l", "r")
    ranked = grouped.select(F.expr(f"array_sort(_rows, (l, r) -> {cmp})").alias("_rows"))
    if rank_type == "ROW_NUMBER":
        exploded = ranked.select(F.posexplode("_rows").alias("_pos", "_row"))
        exploded = exploded.withColumn("_rank", F.col("_pos") + 1)
    else:
        before = f"filter(_rows, l -> {cmp.replace('r.', '_cur.')} < 0)"
        exploded = ranked.select("_rows", F.explode("_rows").alias("_row"))
        if rank_type == "RANK":
            rank = f"1 + size({before})"
        else:
            key_struct = ", ".join(f"l.`{column_name(k.field)}`" for k in order_keys)
            rank = f"1 + size(array_distinct(transform({before}, l -> struct({key_struct}))))"
        exploded = exploded.withColumn("_rank", F.expr(rank.replace("_cur.", "_row.")))
    kept = exploded.filter((F.col("_rank") >= rank_start) & (F.col("_rank") <= rank_end))
    cols = [F.col(f"_row.`{c}`").alias(c) for c in stream.columns]
    if output_rank:
        cols.append(F.col("_rank").cast("bigint").alias(column_name(n)))
    out = kept.select(*cols)
    return Stream(out, tuple(column_name(i) for i in range(len(cols))))
