"""Event-time OVER aggregates (ROWS / RANGE frames ordered by rowtime) on transformWithState.

Flink's rowtime over-aggregate buffers each row until the watermark passes its timestamp, then processes
the buffered rows in timestamp order (rows with equal timestamps in arrival order) and emits every input
row followed by its aggregate values:

* ``ROWS BETWEEN n PRECEDING AND CURRENT ROW``: the current row and the ``n`` rows processed before it;
* ``RANGE BETWEEN <interval> PRECEDING AND CURRENT ROW``: every row whose timestamp is within
  ``[t - interval, t]`` — all rows of one timestamp get the same values;
* ``UNBOUNDED PRECEDING``: everything processed so far in the partition.

A row whose timestamp is not after the last *triggered* timestamp (the largest one already processed in
its partition) is late and dropped — Flink's ``lastTriggeringTs`` rule, which is not the watermark: a row
behind the watermark whose timestamp never fired is still aggregated. State per partition key:
``pendingRows`` (rows waiting for the watermark, by timestamp) and ``accumulators`` (the rows the frame
may still reach, plus the last triggering time), pickled in versions 1-3 and tagged JSON (the versioned state
codec, ``window_state.JsonValue``) from version 4. Spark's watermark advances per micro-batch, so rows of
one batch are ordered by their timestamps. Spark fires due timers only after a batch's input rows, while
for Flink the watermark of the earlier batches came before them: a batch therefore first processes what
that watermark has made due and only then takes its rows, so lateness does not depend on whether Spark
ran a watermark-only batch in between. Below a per-record watermark assigner each row also brings the
watermark it met inside its batch: what that watermark made due is processed before the row is taken.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.dataflow.stream import RECORD_WATERMARK, Stream, column_name
from planengine.runtime.operators.window_aggs import evaluate
from planengine.runtime.operators.window_assign import as_event_time, millis_sql, watermark_metadata
from planengine.runtime.operators.window_state import TIME_MS, run_with_state, spark_type_name, value_state

PENDING = "pendingRows"
ACCUMULATORS = "accumulators"


def _processor_class() -> type:
    from pyspark.sql import Row  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.streaming import StatefulProcessor  # noqa: PLC0415 — pyspark is an optional extra

    class OverProcessor(StatefulProcessor):
        def __init__(self, n_fields: int, mode: str, lower: Any, aggregates: Sequence[Any], per_record: bool = False,
                     json_state: bool = True):
            self.n, self.mode, self.aggregates, self.per_record = n_fields, mode, tuple(aggregates), per_record
            self.lower = int(lower / dt.timedelta(milliseconds=1)) if isinstance(lower, dt.timedelta) else lower
            self.json_state = json_state

        def init(self, handle: Any) -> None:
            self.handle = handle
            state = value_state(self.json_state)
            self.pending = state(handle, PENDING, dict)  # {ts: [row, …]}
            self.acc = state(handle, ACCUMULATORS, lambda: {"last": -(2 ** 63), "rows": []})

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            wm = timerValues.getCurrentWatermarkInMs()
            out = self._process(wm)  # the earlier batches' watermark comes before this batch's rows
            pending = self.pending.get()
            last = self.acc.get()["last"]
            for r in rows:
                met = r[RECORD_WATERMARK] if self.per_record else None
                if met is not None and met > wm and any(t <= met for t in pending):
                    # the watermark this row met inside its batch fires the rows it passed first
                    self.pending.set(pending)
                    out.extend(self._process(met))
                    pending, last = self.pending.get(), self.acc.get()["last"]
                t = r[TIME_MS]
                if t is None or t <= last:
                    continue  # late: its timestamp's rows were already emitted
                pending.setdefault(t, []).append(tuple(r[column_name(i)] for i in range(self.n)))
                self.handle.registerTimer(t)
            self.pending.set(pending)
            return iter([*out, *self._process(wm)])

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:
            return iter(self._process(max(timerValues.getCurrentWatermarkInMs(),
                                          expiredTimerInfo.getExpiryTimeInMs())))

        def _process(self, wm: int) -> list[Any]:
            pending = self.pending.get()
            due = sorted(t for t in pending if t <= wm)
            if not due:
                return []
            acc = self.acc.get()
            history: list = acc["rows"]  # [(ts, row), …] in processing order
            out = []
            for t in due:
                group = pending.pop(t)
                if self.mode == "RANGE":
                    history.extend((t, row) for row in group)
                    if self.lower is not None:
                        history = [(ht, hr) for ht, hr in history if ht >= t - self.lower]
                    frame = [hr for _, hr in history]
                    values = [evaluate(a, frame) for a in self.aggregates]
                    out.extend(_row(Row, row, values) for row in group)
                else:
                    for row in group:
                        history.append((t, row))
                        if self.lower is not None:
                            history = history[-(self.lower + 1):]
                        frame = [hr for _, hr in history]
                        out.append(_row(Row, row, [evaluate(a, frame) for a in self.aggregates]))
            acc["rows"], acc["last"] = history, max(acc["last"], due[-1])  # Flink's lastTriggeringTs
            self.acc.set(acc)
            if pending:
                self.pending.set(pending)
            else:
                self.pending.clear()
            return out

    return OverProcessor


def _row(row_class: Any, values: Sequence[Any], aggregates: Sequence[Any]) -> Any:
    return row_class(**{f"_o{i}": v for i, v in enumerate((*values, *aggregates))})


def over_aggregate(stream: Stream, partition_keys: Sequence[int], order_keys: Sequence[Any], frame: Any,
                   aggregates: Sequence[Any], json_state: bool = True) -> Stream:
    """``json_state``: keep ``pendingRows`` and ``accumulators`` with the versioned state codec (version 4)
    instead of pickles (versions 1-3, whose snapshots hold pickles and keep them)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.types import StructField, StructType, _parse_datatype_string  # noqa: PLC0415 — pyspark is an optional extra

    time_col = rowtime_column(stream, order_keys)
    df = stream.df
    n = len(stream.fields)
    # Output names must not clash with the processor's row fields; the Row is positional.
    fields = [StructField(f"_o{i}", f.dataType, True) for i, f in enumerate(df.select(*stream.columns).schema.fields)]
    fields += [StructField(f"_o{n + i}", _parse_datatype_string(spark_type_name(a.type)), True)
               for i, a in enumerate(aggregates)]
    keys = [F.col(f"`{column_name(k)}`").alias(f"_p{i}") for i, k in enumerate(partition_keys)]
    keys = keys or [F.lit(0).alias("_p")]
    data = df.select(*[F.col(c) for c in stream.columns], F.expr(millis_sql(f"`{time_col}`")).alias(TIME_MS), *keys,
                     *([F.col(RECORD_WATERMARK)] if stream.record_watermark else []))
    key_names = [f"_p{i}" for i in range(len(partition_keys))] or ["_p"]
    processor = _processor_class()(n, frame.mode, frame.lower, aggregates, stream.record_watermark, json_state)
    out = run_with_state(data, [F.col(k) for k in key_names], processor, StructType(fields))
    return over_output(stream, out, "_o", len(aggregates), order_keys[0].field)


def rowtime_column(stream: Stream, order_keys: Sequence[Any]) -> str:
    """The rowtime column an OVER window orders by; refuses what Flink or this engine cannot run."""
    if stream.updating:
        raise ValidationError("an OVER aggregate over an updating input is not supported (in Flink either)")
    if not order_keys or not order_keys[0].ascending:
        raise ValidationError("an OVER window must be ordered by a time attribute ascending")
    time_col = column_name(order_keys[0].field)
    if stream.rowtime is None or stream.rowtime != time_col:
        raise ValidationError("OVER windows ordered by processing time are not supported on this engine",
                              hint="order by the rowtime attribute (processing-time timers never go idle on Spark)")
    return time_col


def over_output(stream: Stream, out: Any, prefix: str, n_aggregates: int, order_field: int) -> Stream:
    """The operator's output (``<prefix>0..``: the input's fields, then the aggregates) as ``f0..``, the order
    column marked as event time again with the input's watermark delay (the operator's output carries none)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    time_col = column_name(order_field)
    meta = watermark_metadata(stream.df, time_col)
    n = len(stream.fields) + n_aggregates
    cols = [F.col(f"{prefix}{i}").alias(column_name(i)) for i in range(n)]
    cols[order_field] = as_event_time(F.col(f"{prefix}{order_field}"), time_col, meta)
    return Stream(out.select(*cols), tuple(column_name(i) for i in range(len(cols))), rowtime=time_col)
