"""Per-record watermarks on the JVM: the ``_record_wm`` column as a stateless pass over a DataFrame.

The rule, and its reference on plain values (``emitted_before``), are the Python operators'
(``operators/record_watermark.py``); the pass that applies it per partition, in row order, is
``io.planengine.jvm.ops.watermark.RecordWatermarks``. It lives in this room, above the operators, so neither room
needs a function-local import of the other.
"""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.stream import RECORD_WATERMARK
from planengine.runtime.jvm import run_operator
from planengine.runtime.jvm.specs import RecordWatermarkSpec


def with_record_watermarks(df: Any, rowtime: str, delay: int, interval: int) -> Any:
    """``df`` plus ``_record_wm``: per partition, in row order (see ``operators/record_watermark.py``)."""
    spec = RecordWatermarkSpec(rowtime=rowtime, delay_ms=delay, interval_ms=interval, column=RECORD_WATERMARK)
    return run_operator(df, "recordWatermarks", spec)
