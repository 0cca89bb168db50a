"""SESSION windows over other keys than the grouping (``stream-exec-window-aggregate`` and
``stream-exec-group-window-aggregate`` versions 3 and 4) on the JVM
(``io.planengine.jvm.ops.session.SessionAggregate``).

The rules are the Python operator's (``runtime/operators/window_session.py``, which versions 1 and 2 keep):
sessions per partition key merge as rows arrive, lateness is judged on the merged session (and on the watermark
a row met inside its batch below a per-record watermark assigner), a session fires when the watermark passes
its end with one row per grouping key. The aggregates run through the JVM library; the state
(``windowAccumulators``: the open sessions with their rows) is typed.

``refusal`` says why a node stays on the Python operator; it reads only the plan (frozen for versions 3 and 4): a
call without a JVM accumulator (a Python aggregate function).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.ir.types import DataType
from planengine.plan.strategies import jvm_calls_refusal
from planengine.runtime.dataflow.stream import RECORD_WATERMARK, Stream, column_name
from planengine.runtime.jvm import run_operator
from planengine.runtime.jvm.group_aggregate_processor import call_spec
from planengine.runtime.jvm.movable import run_movable
from planengine.runtime.jvm.specs import SessionAggregateSpec
from planengine.runtime.jvm.typed import typed_input
from planengine.runtime.operators.window_aggregate import window_property_columns
from planengine.runtime.operators.window_assign import END_MS, START_MS, millis_sql, ms, watermark_metadata
from planengine.runtime.operators.window_state import TIME_MS

STATE_NAMES = ("windowAccumulators",)


# Why a session aggregate runs on the Python operator, or None: the group aggregate's rule for its calls.
refusal = jvm_calls_refusal


def jvm_session_aggregate(stream: Stream, grouping: Sequence[int], aggregates: Sequence[Any], spec: Any,
                          properties: Sequence[str], output_types: Sequence[Any],
                          in_types: Sequence[DataType] | None = None, ttl_ms: int = 0, node: Any = None,
                          ctx: Any = None) -> Stream:
    """Sessions per ``spec.partition_keys`` (over all rows without them), aggregated per grouping key, on the
    JVM processor; ``in_types``: the plan's input types (the columns are cast to them), else the stream's own.
    With ``node`` and ``ctx`` the operator is a state move candidate (a migrated version-2 node starts from
    its Python sessions)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    time_col = column_name(spec.time_field)
    meta = watermark_metadata(stream.df, stream.rowtime or time_col)
    n = len(stream.fields)
    extra = [F.expr(millis_sql(f"`{time_col}`")).alias(TIME_MS)]
    if stream.record_watermark:
        extra.append(F.col(RECORD_WATERMARK).cast("bigint"))
    df = stream.df.select(*stream.columns, *extra) if in_types is None else typed_input(stream, in_types, extra)
    # Event-time marks off: the processor judges lateness on the merged session, not Spark on the row.
    df = df.select(*[F.col(f"`{c}`").alias(c, metadata={}) for c in df.columns])
    session_spec = SessionAggregateSpec(
        width=n,
        time_field=n,
        record_watermark_field=n + 1 if stream.record_watermark else None,
        partition_keys=tuple(spec.partition_keys),
        grouping=tuple(grouping),
        gap_ms=ms(spec.gap),
        agg_calls=tuple(call_spec(call) for call in aggregates),
        state_ttl_ms=int(ttl_ms),
        state_names=STATE_NAMES,
    )
    if node is None:
        out = run_operator(df, "sessionAggregate", session_spec)
    else:
        out = run_movable(df, "sessionAggregate", session_spec, node, ctx,
                          [df.columns[k] for k in spec.partition_keys])
    width = len(grouping) + len(aggregates)
    out = out.select(*[F.col(column_name(i)) for i in range(width)], F.col(column_name(width)).alias(START_MS),
                     F.col(column_name(width + 1)).alias(END_MS))
    cols = [F.col(column_name(i)) for i in range(width)]
    cols += window_property_columns(properties, width, output_types, meta)
    rowtime = next((column_name(width + j) for j, p in enumerate(properties) if p == "rowtime"), None)
    return Stream(out.select(*cols), tuple(column_name(i) for i in range(len(cols))), rowtime=rowtime)
