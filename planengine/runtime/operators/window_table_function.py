"""Window table functions (TUMBLE/HOP/CUMULATE) as a stateless projection: input columns + window columns.

Each row is emitted once per window it belongs to, immediately, with ``window_start``, ``window_end`` and
``window_time`` (= end - 1 ms, a rowtime attribute of the output: it carries the input's watermark
metadata, so a downstream window operator can group on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.runtime.dataflow.stream import Stream, column_name, hidden_columns
from planengine.runtime.operators.window_aggregate import window_property_columns
from planengine.runtime.operators.window_assign import assign_windows, watermark_metadata


def window_table_function(stream: Stream, spec: Any, output_types: Sequence[Any]) -> Stream:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    if spec.kind == "SESSION":
        raise ValidationError("a SESSION window table function must be followed by an aggregation on this engine",
                              hint="aggregate the SESSION windows (GROUP BY window_start, window_end)")
    n = len(stream.fields)
    time_col = column_name(spec.time_field)
    meta = watermark_metadata(stream.df, stream.rowtime or time_col)
    windows = assign_windows(stream.df, spec, time_col)
    cols = [F.col(f"`{c}`") for c in stream.columns]
    out = windows.select(*cols, *window_property_columns(("start", "end", "rowtime"), n, output_types, meta),
                         *[F.col(c) for c in hidden_columns(stream)])
    return Stream(out, tuple(column_name(i) for i in range(n + 3)), updating=stream.updating,
                  rowtime=column_name(n + 2), facts=stream.facts,
                  record_watermark=stream.record_watermark)
