"""Temporal sort (``ORDER BY rowtime [, …]`` on a stream) on transformWithState.

Rows wait in ``bufferedRows`` until the watermark passes their time, then leave sorted by the time
attribute and the secondary keys. One state for the whole stream: a sort is global.

Lateness is Flink's RowTimeSortOperator rule: a row is late, and dropped, when its time is not after the
last *triggered* time (the largest row time already emitted), not the watermark itself — a row at 00:06
behind a watermark of 00:06 whose timer at 00:06 never fired is still sorted in. Spark fires due timers
only after a batch's input rows, while for Flink the watermark of earlier batches came before them; so a
batch first emits what the current watermark has made due, then takes its rows. The result no longer
depends on whether Spark ran a watermark-only batch between two data batches. Below a per-record watermark
assigner each row also brings the watermark it met inside its batch, which emits what it made due first.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cmp_to_key
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.dataflow.stream import RECORD_WATERMARK, Stream, column_name
from planengine.runtime.operators.window_assign import as_event_time, millis_sql, watermark_metadata
from planengine.runtime.operators.window_state import TIME_MS, run_with_state, value_state

BUFFERED = "bufferedRows"


def _compare(keys: Sequence[tuple[int, bool, bool]]) -> Any:
    def cmp(a: Any, b: Any) -> int:
        for index, ascending, nulls_first in keys:
            x, y = a[index], b[index]
            if x == y:
                continue
            if x is None or y is None:
                return (-1 if nulls_first else 1) * (1 if x is None else -1)
            return (-1 if x < y else 1) * (1 if ascending else -1)
        return 0

    return cmp_to_key(cmp)


def _processor_class() -> type:
    from pyspark.sql import Row  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.streaming import StatefulProcessor  # noqa: PLC0415 — pyspark is an optional extra

    class SortProcessor(StatefulProcessor):
        def __init__(self, n: int, keys: Sequence[tuple[int, bool, bool]], per_record: bool = False,
                     json_state: bool = True):
            self.n, self.keys, self.per_record, self.json_state = n, tuple(keys), per_record, json_state

        def init(self, handle: Any) -> None:
            self.handle = handle
            self.buffer = value_state(self.json_state)(handle, BUFFERED, lambda: {"last": -(2 ** 63), "rows": []})

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            wm = timerValues.getCurrentWatermarkInMs()
            state = self.buffer.get()
            out = self._due(state, wm)  # the earlier batches' watermark comes before this batch's rows
            for r in rows:
                met = r[RECORD_WATERMARK] if self.per_record else None
                if met is not None and met > wm:
                    out += self._due(state, met)  # the watermark this row met inside its batch comes first
                t = r[TIME_MS]
                if t is None or t <= state["last"]:
                    continue
                state["rows"].append((t, tuple(r[column_name(i)] for i in range(self.n))))
                self.handle.registerTimer(t)
            out += self._due(state, wm)
            self.buffer.set(state)
            return iter(out)

        def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Any:
            state = self.buffer.get()
            out = self._due(state, max(timerValues.getCurrentWatermarkInMs(), expiredTimerInfo.getExpiryTimeInMs()))
            if out:
                self.buffer.set(state)
            return iter(out)

        def _due(self, state: dict[str, Any], wm: int) -> list[Any]:
            """Take the rows whose time the watermark ``wm`` has passed out of ``state``, sorted, as output."""
            due = [(t, row) for t, row in state["rows"] if t <= wm]
            if not due:
                return []
            state["rows"] = [(t, row) for t, row in state["rows"] if t > wm]
            state["last"] = max(state["last"], max(t for t, _ in due))  # Flink's lastTriggeringTs
            rows = sorted((row for _, row in due), key=_compare(self.keys))
            return [Row(**{f"_o{i}": v for i, v in enumerate(row)}) for row in rows]

    return SortProcessor


def temporal_sort(stream: Stream, order_keys: Sequence[Any], json_state: bool = True) -> Stream:
    """``json_state``: keep ``bufferedRows`` with the versioned state codec (version 2) instead of pickles."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.types import StructField, StructType  # noqa: PLC0415 — pyspark is an optional extra

    if not order_keys or not order_keys[0].ascending or stream.rowtime != column_name(order_keys[0].field):
        raise ValidationError("a streaming ORDER BY must start with the rowtime attribute ascending",
                              hint="ORDER BY rowtime [, other columns]; processing-time sorts are not supported")
    n = len(stream.fields)
    time_col = column_name(order_keys[0].field)
    meta = watermark_metadata(stream.df, time_col)
    keys = [(k.field, k.ascending, k.ascending if k.nulls_first is None else k.nulls_first) for k in order_keys]
    data = stream.df.select(*[F.col(c) for c in stream.columns], F.expr(millis_sql(f"`{time_col}`")).alias(TIME_MS),
                            F.lit(0).alias("_all"), *([F.col(RECORD_WATERMARK)] if stream.record_watermark else []))
    schema = StructType([StructField(f"_o{i}", f.dataType, True)
                         for i, f in enumerate(stream.df.select(*stream.columns).schema.fields)])
    out = run_with_state(data, [F.col("_all")], _processor_class()(n, keys, stream.record_watermark, json_state),
                         schema)
    cols = [F.col(f"_o{i}").alias(column_name(i)) for i in range(n)]
    cols[order_keys[0].field] = as_event_time(F.col(f"_o{order_keys[0].field}"), time_col, meta)
    return Stream(out.select(*cols), stream.fields, rowtime=time_col)
