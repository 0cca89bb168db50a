"""Per-record watermarks inside a micro-batch: the watermark each row meets when it reaches an operator.

Flink's watermark assigner (``WatermarkAssignerOperator``) forwards a row, then updates its watermark from
it, and emits the new watermark *eagerly* when it moved more than ``pipeline.auto-watermark-interval``
(200 ms) past the last one it emitted. Downstream, a row is late when the watermark that arrived *before* it
already closed its window, so a row behind earlier rows of the same input is dropped even when they came in
one burst. Spark has one watermark per micro-batch (computed from the earlier batches); within a batch it
cannot tell these rows apart.

This module gives every row of a ``stream-exec-watermark-assigner_2`` with ``perRecordWatermark`` the
watermark emitted before it *within its micro-batch*, as the hidden BIGINT column ``_record_wm`` (epoch
millis, NULL while nothing was emitted yet in this batch). The rule, per Spark input partition in source
order (one partition per file split: a file's lines keep their order):

* the assigner restarts at every micro-batch with Flink's initial state (current and last emitted
  watermark 0): a job that reads one burst per batch, as every test and a restored job do, sees exactly
  Flink's sequence; between batches Flink's periodic timer would have emitted the current watermark,
  which is Spark's batch watermark;
* row ``i``'s candidate is ``rowtime - delay`` (milliseconds); the current watermark is the running
  maximum; it is emitted after row ``i`` when it exceeds the last emitted one by more than the interval.

Operators combine it with the batch watermark they already have: the watermark a row meets is
``max(batch watermark, _record_wm)``. A two-input operator uses each side's own ``_record_wm``: within one
batch the other input counts as progressing alongside it (Flink's restore tests feed both sources together;
their interleaving is not deterministic in Flink either).

>>> emitted_before([1000, 3000, 2000, 8000, 4000], delay=1000, interval=200)
[None, None, 2000, 2000, 7000]
>>> emitted_before([1000, 1100, 1300, 1500], delay=0, interval=200)
[None, 1000, 1000, 1300]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from planengine.runtime.stream import RECORD_WATERMARK

__all__ = ["RECORD_WATERMARK", "emitted_before", "late_filter", "with_record_watermarks"]
NO_WATERMARK = -(2**63)


def _emissions(running: Any, last: int, interval: int) -> tuple[Any, int]:
    """Watermark emitted after each row (``NO_WATERMARK`` where none) and the last one emitted.

    ``running`` is the non-decreasing current watermark after each row. The greedy rule (emit when more
    than ``interval`` past the last emission) jumps with ``searchsorted``, so the loop runs once per
    emission; when every increase is an emission (timestamps further apart than the interval) it is one
    vectorised step.
    """
    import numpy as np  # noqa: PLC0415 — numpy (Spark extra) loads only on Spark

    n = len(running)
    emitted = np.full(n, NO_WATERMARK, dtype=np.int64)
    if n == 0:
        return emitted, last
    previous = np.concatenate(([last], running[:-1]))
    rises = np.flatnonzero(running > previous)
    if rises.size == 0:
        return emitted, last
    values = running[rises]
    steps = np.diff(np.concatenate(([last], values)))
    if np.all(steps > interval):
        emitted[rises] = values
        return emitted, int(values[-1])
    i = 0
    while i < n:
        i += int(np.searchsorted(running[i:], last + interval, side="right"))
        if i >= n:
            break
        last = int(running[i])
        emitted[i] = last
        i += 1
    return emitted, last


def _watermarks_before(candidates: Any, state: list[int], interval: int) -> Any:
    """``_record_wm`` for one Arrow batch of candidates (NO_WATERMARK for NULL rowtimes); ``state`` is
    ``[current, last emitted]`` of this partition, updated in place."""
    import numpy as np  # noqa: PLC0415 — numpy (Spark extra) loads only on Spark

    current, last = state
    running = np.maximum.accumulate(np.concatenate(([current], candidates)))[1:]
    emitted, new_last = _emissions(running, last, interval)
    after = np.maximum.accumulate(np.maximum(emitted, last if last > 0 else NO_WATERMARK))
    before = np.concatenate(([last if last > 0 else NO_WATERMARK], after[:-1])) if len(after) else after
    state[0] = int(running[-1]) if len(running) else current
    state[1] = new_last
    return before


def emitted_before(rowtimes_ms: Sequence[int | None], delay: int, interval: int) -> list[int | None]:
    """The per-record rule on plain values (one partition, one batch); ``None`` = no watermark yet."""
    import numpy as np  # noqa: PLC0415 — numpy (Spark extra) loads only on Spark

    cand = np.array([NO_WATERMARK if t is None else t - delay for t in rowtimes_ms], dtype=np.int64)
    out = _watermarks_before(cand, [0, 0], interval)
    return [None if v == NO_WATERMARK else int(v) for v in out]


def _annotator(rowtime: str, delay: int, interval: int) -> Any:
    def annotate(batches: Iterator[Any]) -> Iterator[Any]:
        import numpy as np  # noqa: PLC0415 — numpy (Spark extra) loads only on Spark
        import pyarrow as pa  # noqa: PLC0415 — pyarrow (Spark extra) loads only on Spark
        import pyarrow.compute as pc  # noqa: PLC0415 — pyarrow (Spark extra) loads only on Spark

        state = [0, 0]  # Flink's assigner starts with current = last emitted = 0
        for batch in batches:
            column = batch.column(batch.schema.get_field_index(rowtime))
            micros = pc.cast(column.cast(pa.timestamp("us", tz="UTC")), pa.int64())
            micros = pc.fill_null(micros, NO_WATERMARK).to_numpy(zero_copy_only=False).astype(np.int64)
            cand = np.where(micros == NO_WATERMARK, NO_WATERMARK, np.floor_divide(micros, 1000) - delay)
            values = _watermarks_before(cand, state, interval)
            mask = values == NO_WATERMARK
            yield batch.append_column(RECORD_WATERMARK, pa.array(values, type=pa.int64(), mask=mask))

    return annotate


def with_record_watermarks(df: Any, rowtime: str, delay: int, interval: int) -> Any:
    """``df`` plus ``_record_wm``: per partition, in row order (a stateless ``mapInArrow`` pass)."""
    from pyspark.sql.types import LongType, StructField, StructType  # noqa: PLC0415 — pyspark is an optional extra

    schema = StructType([*df.schema.fields, StructField(RECORD_WATERMARK, LongType(), True)])
    return df.mapInArrow(_annotator(rowtime, delay, interval), schema)


def late_filter(window_end_ms: Any) -> Any:
    """Keep a (row, window) pair unless the watermark the row met had fired the window (``end - 1 <= wm``)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    wm = F.col(RECORD_WATERMARK)
    return wm.isNull() | (window_end_ms - F.lit(1) > wm)
