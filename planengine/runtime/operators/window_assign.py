"""Window assignment shared by the time-based operators: TUMBLE, HOP, CUMULATE (with offset) in milliseconds.

Flink assigns windows on the epoch-millisecond value of the time attribute: a window's start is
``t - ((t - offset) mod slide)`` and its end ``start + size``; ``window_time`` is ``window_end - 1 ms``.
The functions here build Spark SQL text over those millisecond values so every operator (window TVF,
window aggregate, legacy group window, window join) assigns windows identically.

Time representation: a rowtime column carries a Spark watermark and is therefore a Spark ``TIMESTAMP``
(Spark refuses watermarks on ``TIMESTAMP_NTZ``); non-time-attribute Flink ``TIMESTAMP`` columns are
``TIMESTAMP_NTZ``. With the engine's session time zone fixed to UTC both map to the same epoch millis.

>>> from datetime import timedelta as td
>>> from planengine.ir.windows import WindowSpec
>>> window_bounds_sql(WindowSpec("TUMBLE", 0, size=td(seconds=5)), "`t`")
('(`t` - pmod(`t` - 0, 5000))', None)
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from planengine.errors import ValidationError
from planengine.ir.types import DataType, Kind

# Spark's metadata key that marks a column as an event-time column with a watermark (EventTimeWatermark).
WATERMARK_DELAY_KEY = "spark.watermarkDelayMs"
# Internal column names used while windows are assigned (dropped before a stream leaves an operator).
START_MS = "_ws_ms"
END_MS = "_we_ms"


def ms(d: dt.timedelta | None) -> int:
    return 0 if d is None else int(d / dt.timedelta(milliseconds=1))


def millis_sql(column_sql: str) -> str:
    """Epoch milliseconds of a TIMESTAMP / TIMESTAMP_NTZ column (session time zone UTC)."""
    return f"unix_millis(CAST({column_sql} AS TIMESTAMP))"


def timestamp_sql(millis: str, dtype: DataType | None) -> str:
    """A Spark timestamp of the Spark type for ``dtype`` from epoch millis (rowtime => TIMESTAMP)."""
    return f"CAST(timestamp_millis({millis}) AS {spark_time_type(dtype)})"


def spark_time_type(dtype: DataType | None) -> str:
    if dtype is None or dtype.is_rowtime or dtype.kind is Kind.TIMESTAMP_LTZ:
        return "TIMESTAMP"
    return "TIMESTAMP_NTZ"


def window_bounds_sql(spec: Any, t: str) -> tuple[str, str | None]:
    """``(start, ends)`` for one row at epoch millis ``t``.

    ``start`` is a scalar for TUMBLE and CUMULATE (all of a row's cumulative windows share it); for HOP it
    is the *latest* start. ``ends`` is an array expression of window ends for CUMULATE, else None.
    """
    offset = ms(spec.offset)
    if spec.kind == "TUMBLE":
        return f"({t} - pmod({t} - {offset}, {ms(spec.size)}))", None
    if spec.kind == "HOP":
        return f"({t} - pmod({t} - {offset}, {ms(spec.slide)}))", None
    if spec.kind == "CUMULATE":
        size, step = ms(spec.size), ms(spec.step)
        start = f"({t} - pmod({t} - {offset}, {size}))"
        first_end = f"({start} + (({t} - {start}) div {step} + 1) * {step})"
        return start, f"sequence({first_end}, {start} + {size}, CAST({step} AS BIGINT))"
    raise ValidationError(f"window strategy {spec.kind} is not an aligned window")


def assign_windows(df: Any, spec: Any, time_column: str) -> Any:
    """``df`` with one row per (row, window) and bigint columns ``_ws_ms``/``_we_ms``.

    Rows whose time attribute is NULL belong to no window and are dropped, as in Flink.
    """
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    t = "_t_ms"
    out = df.filter(F.col(time_column).isNotNull()).withColumn(t, F.expr(millis_sql(f"`{time_column}`")))
    start, ends = window_bounds_sql(spec, f"`{t}`")
    if spec.kind == "TUMBLE":
        out = out.withColumn(START_MS, F.expr(start)).withColumn(END_MS, F.expr(f"`{START_MS}` + {ms(spec.size)}"))
    elif spec.kind == "HOP":
        size, slide = ms(spec.size), ms(spec.slide)
        count = -(-size // slide)
        starts = (f"filter(sequence({start} - {(count - 1) * slide}, {start}, CAST({slide} AS BIGINT)), "
                  f"s -> s + {size} > `{t}`)")
        out = (out.withColumn(START_MS, F.explode(F.expr(starts)))
               .withColumn(END_MS, F.expr(f"`{START_MS}` + {size}")))
    elif spec.kind == "CUMULATE":
        out = out.withColumn(START_MS, F.expr(start)).withColumn(END_MS, F.explode(F.expr(ends or "")))
    else:
        raise ValidationError(f"window strategy {spec.kind} cannot be assigned per row",
                              hint="SESSION windows are assigned by their aggregation")
    return out.drop(t)


def watermark_metadata(df: Any, column: str | None) -> dict[str, Any]:
    """The watermark metadata of ``column`` (to mark a derived column as event time), or a 0 ms delay."""
    if column is not None and column in df.columns:
        meta = dict(df.schema[column].metadata)
        if WATERMARK_DELAY_KEY in meta:
            return {WATERMARK_DELAY_KEY: meta[WATERMARK_DELAY_KEY]}
    return {WATERMARK_DELAY_KEY: 0}


def as_event_time(column: Any, name: str, metadata: dict[str, Any]) -> Any:
    """``column`` aliased as ``name`` and marked as an event-time column.

    Spark refuses a second ``withWatermark`` in one query ("Redefining watermark is disallowed"), but a
    stateful operator only needs *some* grouping/join attribute carrying the watermark metadata: it then
    evicts state and drops late rows by that attribute against the query's global watermark. Marking the
    window end this way gives Flink's rule exactly: a row is late when its window has already fired.
    """
    return column.alias(name, metadata=metadata)


