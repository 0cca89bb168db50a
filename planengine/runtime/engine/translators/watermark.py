"""``stream-exec-watermark-assigner``: Spark's ``withWatermark`` on the rowtime column, plus drain.

Flink's watermark expression ``ts - INTERVAL 'x'`` is a bounded-out-of-orderness watermark, which is what
Spark's ``withWatermark(ts, x)`` computes per micro-batch (max event time seen minus the delay). ``ts``
alone is a delay of 0. Other expressions (e.g. on another column) are not expressible in Spark and are
refused with the expression in the message.

Drain (end of input): every watermark assigner also reads an always-empty *control* stream (a parquet
directory ``<run>/control/<uid>/``). ``--drain`` writes one marker row there whose rowtime is the largest
timestamp; it passes through ``withWatermark`` (so the watermark jumps to the end of time, firing every
window and timer downstream) and is filtered out right after, so no consumer ever sees it. The control
stream is part of every plan's topology whether or not a run drains, so draining never changes the
checkpoint layout.

Version 2 with ``perRecordWatermark`` also gives every row the watermark it meets inside its micro-batch
(``operators/record_watermark.py``, the hidden ``_record_wm`` column), computed before ``withWatermark`` so
the rowtime keeps its event-time mark; version 1 (and version 2 without the flag) has only Spark's watermark
per micro-batch. Version 3 is version 2; a Calc computing CURRENT_WATERMARK below it keeps the assigner's
replay state (``emittedWatermark``) with the versioned state codec instead of pickles.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from dataclasses import replace
from typing import Any

from planengine.connectors.options import parse_duration_ms
from planengine.errors import ValidationError
from planengine.ir.expressions import Call, InputRef, Literal
from planengine.runtime.dataflow.stream import RECORD_WATERMARK, Stream, WatermarkFacts
from planengine.runtime.engine.context import DrainControl
from planengine.runtime.engine.translators import translator
from planengine.runtime.jvm.record_watermark_pass import with_record_watermarks

EOI = "_end_of_input"
MAX_EVENT_TIME = dt.datetime(9999, 12, 31, 23, 59, 59)


def watermark_delay_ms(expr: Any, rowtime_field: int) -> int:
    """The delay of ``rowtime - INTERVAL`` (or 0 for ``rowtime``); raises for other expressions."""
    if isinstance(expr, Call) and expr.function.name.upper() in ("CAST",) and len(expr.operands) == 1:
        return watermark_delay_ms(expr.operands[0], rowtime_field)
    if isinstance(expr, InputRef) and expr.index == rowtime_field:
        return 0
    if (isinstance(expr, Call) and expr.function.name in ("-", "MINUS") and len(expr.operands) == 2
            and isinstance(expr.operands[1], Literal)):
        base = watermark_delay_ms(expr.operands[0], rowtime_field)
        value = expr.operands[1].value
        if isinstance(value, dt.timedelta):
            return base + int(value / dt.timedelta(milliseconds=1))
        if isinstance(value, int):
            return base + value
    raise ValidationError(f"watermark expression {expr} cannot run on Spark",
                          hint="use WATERMARK FOR ts AS ts - INTERVAL '<n>' SECOND (bounded out-of-orderness)")


@translator("stream-exec-watermark-assigner", 1, 2, 3)
def translate_watermark(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    inp = inputs[0]
    delay = watermark_delay_ms(node.watermark, node.rowtime_field)
    interval = parse_duration_ms(ctx.option(node, "pipeline.auto-watermark-interval", "200 ms") or "200 ms")
    rowtime = inp.columns[node.rowtime_field]
    uid = ctx.uid(node, "watermark-assigner")
    data = inp.df
    if data.schema[rowtime].dataType.typeName() == "timestamp_ntz":
        # Spark keeps event time only on TIMESTAMP (an instant); the session zone is UTC, so the wall clock
        # of the Flink TIMESTAMP is unchanged. Sinks cast back to the table's declared type.
        data = data.withColumn(rowtime, F.col(rowtime).cast("timestamp"))
    per_record = node.metadata.version >= 2 and node.per_record
    if inp.record_watermark:  # a second assigner downstream of one: its own rule replaces the first's
        data = data.drop(RECORD_WATERMARK)
    if per_record:
        data = with_record_watermarks(data, rowtime, delay, interval)
    df = with_drainable_watermark(data, rowtime, delay, ctx, uid)
    facts = replace(inp.facts, watermark=WatermarkFacts(delay, interval, node.metadata.version))
    return inp.with_df(df, rowtime=rowtime, facts=facts, record_watermark=per_record)


def with_drainable_watermark(data: Any, rowtime: str, delay: int, ctx: Any, uid: str) -> Any:
    """``data.withWatermark(rowtime, delay)`` that ``--drain`` can move to the end of time: the control stream
    ``<run>/control/<uid>/`` is unioned in below the watermark and its marker filtered out above it."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    data = data.withColumn(EOI, F.lit(False))
    control_dir = control_directory(ctx, uid)
    schema = data.schema
    markers = ctx.spark.readStream.schema(schema).parquet(control_dir)
    ctx.drain_controls.append(DrainControl(control_dir, schema, rowtime))
    # The filter must stay ABOVE the watermark operator, or the marker never reaches it: Spark pushes
    # predicates through EventTimeWatermark unless they reference the event-time column, so this one does
    # (the second disjunct is never true for a marker, whose rowtime is the end of time).
    keep = ~F.col(EOI) | (F.col(rowtime) < F.lit(dt.datetime(1, 1, 2)).cast("timestamp"))
    return data.unionByName(markers).withWatermark(rowtime, f"{delay} milliseconds").filter(keep).drop(EOI)


def control_directory(ctx: Any, uid: str) -> str:
    base = ctx.run_dir if ctx.run_dir is not None else tempfile.mkdtemp(prefix="planengine-control-")
    path = os.path.join(str(base), "control", uid)
    os.makedirs(path, exist_ok=True)
    return path


def write_end_of_input(spark: Any, control_dir: str, schema: Any, rowtime: str) -> None:
    """Drop the end-of-input marker into one control directory (atomically: write aside, then rename)."""
    from pyspark.sql.types import TimestampNTZType  # noqa: PLC0415 — pyspark is an optional extra

    values = []
    for f in schema.fields:
        if f.name == rowtime:
            values.append(MAX_EVENT_TIME if isinstance(f.dataType, TimestampNTZType)
                          else MAX_EVENT_TIME.replace(tzinfo=dt.UTC))
        elif f.name == EOI:
            values.append(True)
        else:
            values.append(None)
    tmp = control_dir + ".tmp-marker"
    shutil.rmtree(tmp, ignore_errors=True)
    nullable = schema.__class__([f.__class__(f.name, f.dataType, True) for f in schema.fields])
    spark.createDataFrame([tuple(values)], nullable).coalesce(1).write.parquet(tmp)
    for name in os.listdir(tmp):
        if name.endswith(".parquet"):
            os.replace(os.path.join(tmp, name), os.path.join(control_dir, f"end-of-input-{name}"))
    shutil.rmtree(tmp, ignore_errors=True)
