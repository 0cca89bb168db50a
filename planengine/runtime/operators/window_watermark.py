"""``CURRENT_WATERMARK(rowtime)``: the watermark a row meets when it arrives, as a column.

Spark has no expression for the current watermark; only stateful operators see it. This operator is a
transformWithState pass-through (keyed by a hash bucket of nothing: one key per stream, no state kept)
that appends the watermark of the micro-batch (Spark's watermark for late events, i.e. the one computed
from all earlier batches) as epoch millis, NULL before the first watermark — Flink's CURRENT_WATERMARK is
NULL until the first watermark too. A Calc whose expressions call CURRENT_WATERMARK can be translated as
``with_current_watermark`` followed by the Calc with the call replaced by a reference to that column.

Below a ``stream-exec-watermark-assigner_2`` the Calc sees exactly Flink's value instead
(``with_assigner_watermark``): the watermark the assigner emitted before the row, replayed row by row with
Flink's emission rule, so rows of one micro-batch see the watermark advance between them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.operators.window_assign import as_event_time, watermark_metadata
from planengine.runtime.operators.window_state import run_with_state, value_state

WATERMARK_COLUMN = "_current_watermark"


def _processor_class() -> type:
    from pyspark.sql import Row  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.streaming import StatefulProcessor  # noqa: PLC0415 — pyspark is an optional extra

    class WatermarkProcessor(StatefulProcessor):
        def __init__(self, columns: list[str]):
            self.columns = columns

        def init(self, handle: Any) -> None:
            self.handle = handle

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            wm = timerValues.getCurrentWatermarkInMs()
            value = wm if wm is not None and wm > 0 else None
            for r in rows:
                yield Row(**{c: r[c] for c in self.columns}, **{WATERMARK_COLUMN: value})

    return WatermarkProcessor


def with_current_watermark(stream: Stream, time_type: str = "TIMESTAMP") -> Stream:
    """``stream`` plus a ``_current_watermark`` column of ``time_type`` (TIMESTAMP or TIMESTAMP_NTZ)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.types import LongType, StructField, StructType  # noqa: PLC0415 — pyspark is an optional extra

    meta = watermark_metadata(stream.df, stream.rowtime)
    cols = list(stream.df.columns)
    schema = StructType([*stream.df.schema.fields, StructField(WATERMARK_COLUMN, LongType(), True)])
    schema = StructType([StructField(f.name, f.dataType, True) for f in schema.fields])
    data = stream.df.select("*", F.lit(0).alias("_wm_key"))
    out = run_with_state(data, [F.col("_wm_key")], _processor_class()(cols), schema)
    out = out.withColumn(WATERMARK_COLUMN, F.expr(f"CAST(timestamp_millis({WATERMARK_COLUMN}) AS {time_type})"))
    if stream.rowtime is not None:  # keep the rowtime an event-time column for downstream operators
        out = out.withColumn(stream.rowtime, as_event_time(F.col(stream.rowtime), stream.rowtime, meta))
    return stream.with_df(out)


# --- CURRENT_WATERMARK below a watermark-assigner_2: the assigner's own sequence ----------------------------
ASSIGNER_STATE = "emittedWatermark"


def _assigner_processor_class() -> type:
    from pyspark.sql import Row  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.streaming import StatefulProcessor  # noqa: PLC0415 — pyspark is an optional extra

    class AssignerReplica(StatefulProcessor):
        """Replays Flink's ``WatermarkAssignerOperator`` row by row over the stream (one key): the value for a
        row is the watermark emitted before it in this run, NULL until the first one."""

        def __init__(self, columns: list[str], rowtime: str, delay: int, interval: int, run_id: str,
                     json_state: bool = True):
            self.columns, self.rowtime, self.delay, self.interval = columns, rowtime, delay, interval
            self.run_id, self.json_state = run_id, json_state

        def init(self, handle: Any) -> None:
            self.state = value_state(self.json_state)(handle, ASSIGNER_STATE, dict)

        def handleInputRows(self, key: Any, rows: Any, timerValues: Any) -> Any:
            state = self.state.get()
            if state.get("run") != self.run_id:  # a new run starts like a restarted Flink assigner
                state = {"run": self.run_id, "current": 0, "last": 0}
            out = []
            for r in rows:
                out.append(Row(**{c: r[c] for c in self.columns},
                               **{WATERMARK_COLUMN: state["last"] if state["last"] > 0 else None}))
                t = r[self.rowtime]
                if t is not None:
                    state["current"] = max(state["current"], _millis(t) - self.delay)
                if state["current"] - state["last"] > self.interval:
                    state["last"] = state["current"]
            self.state.set(state)
            return iter(out)

    return AssignerReplica


def _millis(t: Any) -> int:
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return int((t - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) / dt.timedelta(milliseconds=1))


def with_assigner_watermark(stream: Stream, delay: int, interval: int, run_id: str, time_type: str,
                            json_state: bool = True) -> Stream:
    """``stream`` plus ``_current_watermark``: Flink's CURRENT_WATERMARK for a Calc right below the assigner —
    the watermark the assigner emitted before each row, per run (a restored job starts again from NULL, as
    Flink's operators do not keep their watermark across a restore). ``json_state``: the replay's state is
    kept with the versioned state codec (below a watermark-assigner_3), not pickled."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql.types import LongType, StructField, StructType  # noqa: PLC0415 — pyspark is an optional extra

    meta = watermark_metadata(stream.df, stream.rowtime)
    cols = [c for c in stream.df.columns]
    fields = [StructField(f.name, f.dataType, True) for f in stream.df.schema.fields]
    schema = StructType([*fields, StructField(WATERMARK_COLUMN, LongType(), True)])
    data = stream.df.select("*", F.lit(0).alias("_wm_key"))
    processor = _assigner_processor_class()(cols, stream.rowtime, delay, interval, run_id, json_state)
    out = run_with_state(data, [F.col("_wm_key")], processor, schema)
    out = out.withColumn(WATERMARK_COLUMN, F.expr(f"CAST(timestamp_millis({WATERMARK_COLUMN}) AS {time_type})"))
    if stream.rowtime is not None:
        out = out.withColumn(stream.rowtime, as_event_time(F.col(stream.rowtime), stream.rowtime, meta))
    return stream.with_df(out)
