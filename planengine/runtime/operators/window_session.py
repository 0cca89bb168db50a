"""SESSION windows whose sessions span several grouping keys, on transformWithState.

Flink's SESSION TVF forms sessions over every row of a partition (all rows without PARTITION BY, else the
rows of one partition key) and then aggregates per grouping key inside each session. That is one state
per partition key (a constant without PARTITION BY), kept in the value state ``windowAccumulators``: the
open sessions ``[start, end)`` with their rows. A row at ``t`` opens ``[t, t + gap)`` and merges every
session it intersects (Flink's ``TimeWindow.intersects``: touching windows merge). As in Flink's
WindowOperator, lateness is judged on the *merged* window: a row is dropped when the session it would
belong to has already closed (``end <= watermark``; below a per-record watermark assigner also when the
watermark the row met inside its micro-batch had reached ``end - 1``, and such a watermark fires the
sessions it closes before the row is merged). An event-time timer at each session end fires it: one
``+I`` per grouping key with the session's bounds. Spark fires due timers only after a batch's input rows,
while for Flink the earlier batches' watermark came before them, so a batch first fires the sessions that
watermark closed (a row cannot reopen a fired session). Flink emits early per-record updates for the
non-partitioned TVF; the final (materialized) result is the same.

The state holds rows, never accumulators: a session's aggregates (a Python aggregate function's included) are
computed when it fires, with fresh accumulators that do not outlive the call. Node versions 1-3 pickle the
sessions (``PickledValue``: their snapshots hold pickles and keep them); version 4 keeps them with the versioned
state codec (``JsonValue``, tagged JSON that Spark's state data source shows), which represents every SQL value a
row can hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.runtime.dataflow.stream import RECORD_WATERMARK, Stream, column_name
from planengine.runtime.operators.window_aggregate import window_property_columns
from planengine.runtime.operators.window_aggs import evaluate
from planengine.runtime.operators.window_assign import millis_sql, ms, watermark_metadata
from planengine.runtime.operators.window_state import TIME_MS, run_with_state, spark_type_name, value_state

STATE = "windowAccumulators"


def _processor_class() -> type:
    from pyspark.sql import Row  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.streaming import StatefulProcessor  # noqa: PLC0415 — pyspark is an optional extra

    class GlobalSessionProcessor(StatefulProcessor):
        def __init__(self, n_fields: int, grouping: Sequence[int], aggregates: Sequence[Any], gap: int,
                     per_record: bool = False, json_state: bool = False):
            self.n, self.grouping, self.aggregates, self.gap = n_fields, tuple(grouping), tuple(aggregates), gap
            self.per_record = per_record
            self.json_state = json_state

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.sessions = value_state(self.json_state)(handle, STATE, list)

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            wm = timerValues.getCurrentWatermarkInMs()
            out = self._fire(self.sessions.get(), wm)  # the earlier batches' watermark comes first
            sessions = self.sessions.get()  # [[start, end, [row, …]], …]
            for r in rows:
                t = r[TIME_MS]
                if t is None:
                    continue
                met = r[RECORD_WATERMARK] if self.per_record else None
                if met is not None and met > wm and any(s[1] - 1 <= met for s in sessions):
                    # the watermark this row met inside the batch fires (end - 1 <= met) before the row counts
                    out.extend(self._fire(sessions, met + 1))
                    sessions = [s for s in sessions if s[1] - 1 > met]
                values = tuple(r[column_name(i)] for i in range(self.n))
                start, end, members = t, t + self.gap, [values]
                keep = []
                for s in sessions:
                    if s[0] <= end and s[1] >= start:
                        start, end, members = min(start, s[0]), max(end, s[1]), s[2] + members
                    else:
                        keep.append(s)
                if end <= wm or (met is not None and end - 1 <= met):
                    continue  # late: the (merged) session has closed
                keep.append([start, end, members])
                sessions = keep
                self.handle.registerTimer(end)
            self.sessions.set(sessions)
            return iter([*out, *self._fire(sessions, wm)])

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:
            sessions = self.sessions.get()
            return iter(self._fire(sessions, max(timerValues.getCurrentWatermarkInMs(),
                                                 expiredTimerInfo.getExpiryTimeInMs())))

        def _fire(self, sessions: list, wm: int) -> list[Any]:
            due = [s for s in sessions if s[1] <= wm]
            if not due:
                return []
            rest = [s for s in sessions if s[1] > wm]
            if rest:
                self.sessions.set(rest)
            else:
                self.sessions.clear()
            out = []
            for start, end, members in sorted(due):
                groups: dict[tuple, list] = {}
                for m in members:
                    groups.setdefault(tuple(m[g] for g in self.grouping), []).append(m)
                for k, group in groups.items():
                    values = {f"_k{i}": v for i, v in enumerate(k)}
                    values.update({f"_a{i}": evaluate(a, group) for i, a in enumerate(self.aggregates)})
                    out.append(Row(**values, _ws_ms=start, _we_ms=end))
            return out

    return GlobalSessionProcessor


def global_session_aggregate(stream: Stream, grouping: Sequence[int], aggregates: Sequence[Any], spec: Any,
                             properties: Sequence[str], output_types: Sequence[Any], uid: str,
                             json_state: bool = False) -> Stream:
    """Sessions per ``spec.partition_keys`` (over all rows without them), aggregated per grouping key;
    ``json_state``: the open sessions are kept as tagged JSON (node version 4 on), else pickled."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.types import LongType, StructField, StructType, _parse_datatype_string  # noqa: PLC0415 — pyspark is an optional extra

    df = stream.df
    time_col = column_name(spec.time_field)
    meta = watermark_metadata(df, stream.rowtime or time_col)
    in_types = {f.name: f.dataType for f in df.schema.fields}
    fields = [StructField(f"_k{i}", in_types[column_name(g)], True) for i, g in enumerate(grouping)]
    fields += [StructField(f"_a{i}", _parse_datatype_string(spark_type_name(a.type)), True)
               for i, a in enumerate(aggregates)]
    fields += [StructField("_ws_ms", LongType(), True), StructField("_we_ms", LongType(), True)]
    partition = [F.col(f"`{column_name(k)}`").alias(f"_p{i}") for i, k in enumerate(spec.partition_keys)]
    partition = partition or [F.lit(0).alias("_all")]  # the key column's name is part of the state schema
    data = df.select(*[F.col(c) for c in stream.columns], F.expr(millis_sql(f"`{time_col}`")).alias(TIME_MS),
                     *partition, *([F.col(RECORD_WATERMARK)] if stream.record_watermark else []))
    key_names = [f"_p{i}" for i in range(len(spec.partition_keys))] or ["_all"]
    processor = _processor_class()(len(stream.fields), grouping, aggregates, ms(spec.gap), stream.record_watermark,
                                   json_state)
    out = run_with_state(data, [F.col(k) for k in key_names], processor, StructType(fields)).drop(*key_names)
    cols = [F.col(f"_k{i}").alias(column_name(i)) for i in range(len(grouping))]
    cols += [F.col(f"_a{i}").alias(column_name(len(grouping) + i)) for i in range(len(aggregates))]
    cols += window_property_columns(properties, len(cols), output_types, meta)
    rowtime = next((column_name(len(grouping) + len(aggregates) + j) for j, p in enumerate(properties)
                    if p == "rowtime"), None)
    return Stream(out.select(*cols), tuple(column_name(i) for i in range(len(cols))), rowtime=rowtime)
