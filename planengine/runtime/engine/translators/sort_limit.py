"""``stream-exec-sort-limit`` (global Top-N, or a full sort without LIMIT) and ``stream-exec-limit``.

A sort-limit without a fetch is the planner's non-temporal ``ORDER BY`` (``table.exec.non-temporal-sort
.enabled``). Version 2 runs it as Flink's StreamSortOperator, sorted at the end of input: the operator reads
the drain's end-of-input marker from its own control stream (``<run>/control/<uid>/``, the same mechanism
as the watermark assigners', see ``translators/watermark.py``), as the input has no watermark to carry it.
Version 1 plans keep their strategy (a Top-N over everything, rows emitted as they arrive), because a
strategy is frozen per node version (DESIGN, "Translation strategies"). Version 3 runs the Top-N (with a fetch)
on the JVM processor (``runtime/jvm/rank_processor.py``) unless its typed state cannot hold the rows (a MAP with
non-STRING keys or an INTERVAL, ``strategies.state_type_refusal``); its full sort is version 2's.
"""

from __future__ import annotations

from typing import Any

from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.context import DrainControl
from planengine.runtime.engine.translators import translator
from planengine.runtime.engine.translators.watermark import EOI, control_directory
from planengine.runtime.jvm import holds_state_of
from planengine.runtime.jvm.rank_processor import jvm_sort_limit
from planengine.runtime.operators.rank import full_sort, is_full_sort, limit, sort_limit

EOI_TIME = "_end_of_input_time"


@translator("stream-exec-sort-limit", 1)
def translate_sort_limit_v1(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return sort_limit(stream, node, ctx)


@translator("stream-exec-sort-limit", 2)
def translate_sort_limit(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    if not is_full_sort(node):
        return sort_limit(stream, node, ctx)
    return _full_sort(stream, node, ctx)


@translator("stream-exec-sort-limit", 3)
def translate_sort_limit_v3(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    if not is_full_sort(node):
        if not holds_state_of(node, node.inputs[0].field_types, ctx, "sort-limit"):
            return sort_limit(stream, node, ctx)
        return jvm_sort_limit(stream, node, ctx)
    return _full_sort(stream, node, ctx)


def _full_sort(stream: Stream, node: Any, ctx: Any) -> Stream:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    data = stream.df.withColumn(EOI, F.lit(False)).withColumn(EOI_TIME, F.lit(None).cast("timestamp"))
    control_dir = control_directory(ctx, ctx.uid(node, "end-of-input"))
    markers = ctx.spark.readStream.schema(data.schema).parquet(control_dir)
    # write_end_of_input puts the end of time into the named timestamp column and True into EOI.
    ctx.drain_controls.append(DrainControl(control_dir, data.schema, EOI_TIME))
    return full_sort(stream, data.unionByName(markers).drop(EOI_TIME), EOI, node, ctx)


@translator("stream-exec-limit", 1)
def translate_limit(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return limit(stream, node, ctx)
