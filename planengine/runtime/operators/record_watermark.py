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

The column is computed on the JVM (``jvm/record_watermark_pass.py`` runs
``io.planengine.jvm.ops.watermark.RecordWatermarks``: a nondeterministic UDF over the rowtime's epoch micros, per
task); ``emitted_before`` is the rule on plain values, the reference the JVM pass is tested against.

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

from collections.abc import Sequence
from typing import Any

from planengine.runtime.dataflow.stream import RECORD_WATERMARK

__all__ = ["RECORD_WATERMARK", "emitted_before", "late_filter"]


def emitted_before(rowtimes_ms: Sequence[int | None], delay: int, interval: int) -> list[int | None]:
    """The per-record rule on plain values (one partition, one batch); ``None`` = no watermark yet."""
    current = last = 0  # Flink's assigner starts with current = last emitted = 0
    out: list[int | None] = []
    for rowtime in rowtimes_ms:
        out.append(last if last > 0 else None)
        if rowtime is not None:
            current = max(current, rowtime - delay)
            if current > last + interval:
                last = current
    return out


def late_filter(window_end_ms: Any) -> Any:
    """Keep a (row, window) pair unless the watermark the row met had fired the window (``end - 1 <= wm``)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    wm = F.col(RECORD_WATERMARK)
    return wm.isNull() | (window_end_ms - F.lit(1) > wm)
