"""Event-time OVER aggregates (``stream-exec-over-aggregate`` versions 2 to 4) on the JVM
(``io.planengine.jvm.ops.over.OverAggregate``).

The rules are the Python operator's (``runtime/operators/over_aggregate.py``, which version-1 plans keep):
rows wait for the watermark, are processed in timestamp order, and a row not after the last processed
timestamp is late. The aggregate calls run through the JVM aggregate library (the group aggregate's
accumulators), the state is typed (``pendingRows``, ``accumulators``).

``refusal`` says why a node stays on the Python operators; it reads only the plan, so a plan is translated
the same way by every later engine (frozen for version 2):

* ordered by a non-time column: Flink's non-time RANGE over values (``operators/over_non_time.py``);
* input rows holding a MAP with non-STRING keys or an INTERVAL (``strategies.jvm_state_holds``: Spark fails a
  query whose typed state holds one at its start, so this rule moved no running job when versions 2 and 3 took it
  too);
* a call without a JVM accumulator (a Python aggregate function; ``LAG`` before version 4) or, in version 2,
  with DISTINCT (version 3 runs DISTINCT calls on the JVM: a value multiset per call; version 4 runs ``LAG``
  there too: the library's accumulator of the last ``offset + 1`` values, Flink's ``LagAggFunction``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from planengine.ir.types import DataType
from planengine.plan.strategies import JVM_AGGREGATES, JVM_OVER_FUNCTIONS, state_type_refusal
from planengine.runtime.dataflow.stream import RECORD_WATERMARK, Stream
from planengine.runtime.jvm import run_operator
from planengine.runtime.jvm.group_aggregate_processor import call_spec
from planengine.runtime.jvm.movable import run_movable
from planengine.runtime.jvm.specs import OverAggregateSpec
from planengine.runtime.jvm.typed import typed_input
from planengine.runtime.operators.over_aggregate import over_output, rowtime_column
from planengine.runtime.operators.window_assign import millis_sql
from planengine.runtime.operators.window_state import TIME_MS

STATE_NAMES = ("pendingRows", "accumulators")


def refusal(node: Any, version: int = 2) -> str | None:
    """Why ``node`` (of node ``version``) runs on a Python operator rather than the JVM, or None. A pure
    function of the plan; each version's rule is frozen."""
    in_types = node.inputs[0].field_types
    if node.order_keys and not in_types[node.order_keys[0].field].is_time_attribute:
        return "ordered by a non-time column (the non-time RANGE operator is Python only)"
    held = state_type_refusal(in_types)
    if held is not None:
        return held
    for call in node.aggregates:
        if call.user_function is not None:
            return f"{call}: a Python aggregate function"
        if call.distinct and version < 3:
            return f"{call}: DISTINCT (no value multiset in the JVM OVER operator)"
        key = (str(call.function).upper(), call.version or 1)
        if key not in JVM_AGGREGATES and not (version >= 4 and key in JVM_OVER_FUNCTIONS):
            return f"{call}: {key[0]} version {key[1]} has no JVM accumulator"
    return None


def _lower(frame: Any) -> int | None:
    if isinstance(frame.lower, dt.timedelta):
        return int(frame.lower / dt.timedelta(milliseconds=1))
    return None if frame.lower is None else int(frame.lower)


def jvm_over_aggregate(stream: Stream, partition_keys: Sequence[int], order_keys: Sequence[Any], frame: Any,
                       aggregates: Sequence[Any], in_types: Sequence[DataType] | None = None,
                       ttl_ms: int = 0, node: Any = None, ctx: Any = None) -> Stream:
    """The OVER window on the JVM processor; ``in_types``: the plan's input types (the columns are cast to
    them, so the accumulators follow the plan), or the stream's own Spark types when None. With ``node`` and
    ``ctx`` (a plan's node) the operator is a state move candidate (``movable.py``: a migrated version-1 node
    starts from its Python state)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    time_col = rowtime_column(stream, order_keys)
    n = len(stream.fields)
    extra = [F.expr(millis_sql(f"`{time_col}`")).alias(TIME_MS)]
    if stream.record_watermark:
        extra.append(F.col(RECORD_WATERMARK).cast("bigint"))
    if in_types is None:
        df = stream.df.select(*stream.columns, *extra)
    else:
        df = typed_input(stream, in_types, extra)
    # Event-time marks off: Spark would drop rows behind the watermark before the processor decides (Flink's
    # lateness here is the last processed timestamp, not the watermark).
    df = df.select(*[F.col(f"`{c}`").alias(c, metadata={}) for c in df.columns])
    spec = OverAggregateSpec(
        width=n,
        time_field=n,
        record_watermark_field=n + 1 if stream.record_watermark else None,
        partition_keys=tuple(partition_keys),
        mode=str(frame.mode).upper(),
        lower=_lower(frame),
        agg_calls=tuple(call_spec(call) for call in aggregates),
        state_ttl_ms=int(ttl_ms),
        state_names=STATE_NAMES,
    )
    if node is None:
        out = run_operator(df, "overAggregate", spec)
    else:
        out = run_movable(df, "overAggregate", spec, node, ctx, [df.columns[k] for k in partition_keys])
    return over_output(stream, out, "f", len(aggregates), order_keys[0].field)
