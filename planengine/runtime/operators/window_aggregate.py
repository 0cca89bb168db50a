"""Window aggregation on Spark's native streaming aggregation (append mode, watermark-driven).

Used for TUMBLE, HOP and CUMULATE (any offset) and for SESSION windows partitioned by exactly the grouping
keys: windows are assigned per row in epoch millis (``window_assign``), the window end is marked as the
event-time grouping attribute, and Spark's aggregation then behaves as Flink's window operator:

* a window's single ``+I`` row is emitted once the watermark reaches its end (Spark evicts groups whose end
  ``<=`` watermark; Flink fires at ``end - 1 <= watermark``, which only differs when a watermark falls
  exactly 1 ms before a window end);
* a row is late, and dropped, when the window it falls into has already fired;
* the watermark is Spark's: per micro-batch, computed from the rows seen so far; below a per-record
  watermark assigner a (row, window) pair is also dropped when the watermark the row met inside its batch
  had fired the window (``window_end - 1 <= _record_wm``, Flink's ``isWindowFired``), a stateless filter
  before the aggregation. SESSION windows below a per-record assigner run on transformWithState instead
  (``window_session``): a watermark inside a batch can close a session that a later row would have extended.

SESSION windows over *all* keys (no PARTITION BY) or partitioned differently from the grouping run on
transformWithState (``window_session``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.dataflow.stream import Stream, column_name
from planengine.runtime.operators.record_watermark import late_filter
from planengine.runtime.operators.window_aggs import native_aggregate
from planengine.runtime.operators.window_assign import (
    END_MS,
    START_MS,
    as_event_time,
    assign_windows,
    ms,
    spark_time_type,
    timestamp_sql,
    watermark_metadata,
)


def window_aggregate(stream: Stream, grouping: Sequence[int], aggregates: Sequence[Any], spec: Any,
                     properties: Sequence[str], output_types: Sequence[Any],
                     input_types: Sequence[Any] | None = None) -> Stream:
    """Aggregate ``stream`` per (grouping keys, window); output = keys, aggregates, window properties.

    ``properties`` lists the window columns to append, each ``start``, ``end`` or ``rowtime`` (Flink's
    ``window_time`` / ``TUMBLE_ROWTIME``: end - 1 ms, an event-time column of the output).

    With ``input_types`` (the node's input field types; version 2 of the window aggregates) each call runs in
    the aggregate library's native form (``runtime/operators/aggregates/library.py``: integer sums wrap like Java's,
    VAR/STDDEV as Flink reduces them); without, in version 1's ``window_aggs.native_aggregate`` (its state
    layout is frozen).
    """
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    if stream.updating:
        raise ValidationError("a window aggregate over an updating input is not supported on this engine",
                              hint="aggregate an insert-only stream (e.g. the source before normalisation)")
    if not spec.is_rowtime:
        raise ValidationError("processing-time windows are not supported on this engine",
                              hint="declare a WATERMARK and window over the rowtime attribute")
    df = stream.df
    time_col = column_name(spec.time_field)
    meta = watermark_metadata(df, stream.rowtime or time_col)
    keys = [F.col(f"`{column_name(g)}`").alias(f"_k{i}") for i, g in enumerate(grouping)]
    if input_types is not None:
        from planengine.runtime.operators.aggregates.library import native_form  # noqa: PLC0415 — aggregates.library loads pandas/pyarrow/numpy

        forms = [native_form(i, call, stream.columns, input_types) for i, call in enumerate(aggregates)]
        aggs = [a for form in forms for a in form.aggregates]
        results = [form.result for form in forms]
    else:
        aggs = [native_aggregate(call, stream.columns).alias(f"_a{i}") for i, call in enumerate(aggregates)]
        results = [F.col(f"_a{i}") for i in range(len(aggregates))]
    if spec.kind == "SESSION":
        if set(spec.partition_keys) != set(grouping):
            raise ValidationError("session window partition keys differ from the grouping keys")
        gap = ms(spec.gap)
        session = F.session_window(F.col(f"`{time_col}`"), f"{gap} milliseconds").alias("_session")
        agg = df.groupBy(*keys, session).agg(*aggs)
        agg = (agg.withColumn(START_MS, F.expr("unix_millis(`_session`.start)"))
               .withColumn(END_MS, F.expr("unix_millis(`_session`.end)")))
    else:
        windows = assign_windows(df, spec, time_col)
        if stream.record_watermark:
            windows = windows.filter(late_filter(F.col(END_MS)))
        windows = windows.select("*", as_event_time(F.expr(f"timestamp_millis(`{END_MS}`)"), "_we", meta))
        agg = (windows.groupBy(*keys, F.col("_we"), F.col(f"`{START_MS}`")).agg(*aggs)
               .withColumn(END_MS, F.expr("unix_millis(`_we`)")))
    out = [F.col(f"_k{i}").alias(column_name(i)) for i in range(len(grouping))]
    out += [result.alias(column_name(len(grouping) + i)) for i, result in enumerate(results)]
    out += window_property_columns(properties, len(out), output_types, meta)
    rowtime = next((column_name(len(grouping) + len(aggregates) + j) for j, p in enumerate(properties)
                    if p == "rowtime"), None)
    return Stream(agg.select(*out), tuple(column_name(i) for i in range(len(out))), rowtime=rowtime)


def window_property_columns(properties: Sequence[str], first: int, output_types: Sequence[Any],
                            meta: dict[str, Any]) -> list[Any]:
    """Columns ``f<first>…`` for window properties over bigint ``_ws_ms``/``_we_ms`` columns."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    out = []
    for j, prop in enumerate(properties):
        name = column_name(first + j)
        dtype = output_types[first + j] if first + j < len(output_types) else None
        if prop == "start":
            out.append(F.expr(timestamp_sql(f"`{START_MS}`", dtype)).alias(name))
        elif prop == "end":
            out.append(F.expr(timestamp_sql(f"`{END_MS}`", dtype)).alias(name))
        elif prop == "rowtime":
            col = F.expr(f"CAST(timestamp_millis(`{END_MS}` - 1) AS {spark_time_type(dtype)})")
            out.append(as_event_time(col, name, meta))
        else:
            raise ValidationError(f"window property {prop} is not supported on this engine",
                                  hint="PROCTIME properties need processing-time windows")
    return out
