"""``CURRENT_WATERMARK(rowtime)``: the watermark a row meets when it arrives, as a column.

Spark has no expression for the current watermark; only stateful operators see it. This operator is a
transformWithState pass-through (keyed by a hash bucket of nothing: one key per stream, no state kept)
that appends the watermark of the micro-batch (Spark's watermark for late events, i.e. the one computed
from all earlier batches) as epoch millis, NULL before the first watermark — Flink's CURRENT_WATERMARK is
NULL until the first watermark too. A Calc whose expressions call CURRENT_WATERMARK can be translated as
``with_current_watermark`` followed by the Calc with the call replaced by a reference to that column.
"""

from __future__ import annotations

from typing import Any

from planengine.runtime.operators.window_assign import as_event_time, watermark_metadata
from planengine.runtime.operators.window_state import run_with_state
from planengine.runtime.stream import Stream

WATERMARK_COLUMN = "_current_watermark"


def _processor_class() -> type:
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

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
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

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
