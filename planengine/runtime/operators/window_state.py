"""transformWithState plumbing shared by the time-based operators that Spark cannot run natively.

Each operator keeps its state in named value-state variables (the names are the exec node's
``STATE_NAMES``, part of the plan contract) holding one Python value per grouping key: ``JsonValue`` (the
versioned state codec of ``state_codec.dump_state``, readable with Spark's state data source) for the node versions
that introduced it, ``PickledValue`` for the older versions, whose snapshots hold pickles and keep them. Event time
crosses the Python boundary as epoch milliseconds (BIGINT) so no time zone conversion happens in workers;
the operators convert back with ``timestamp_millis`` in Spark SQL.

Timers are event-time timers only (``timeMode="EventTime"``): a processing-time timer keeps a query busy
forever, so an ``--until-idle`` run would never finish.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from planengine.errors import InternalError
from planengine.functions.spark_types import render_spark_type
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.operators.state_codec import STATE_FORMAT, dump_state, load_state

TIME_MS = "_t_ms"


def blob_schema() -> Any:
    from pyspark.sql.types import BinaryType, StructField, StructType  # noqa: PLC0415 — pyspark is an optional extra

    return StructType([StructField("blob", BinaryType(), True)])


# The value schema of a JsonValue variable: the codec format each value was written in, then its text.
JSON_VALUE_SCHEMA = "format INT, json STRING"


class JsonValue:
    """A value-state variable holding one Python value as versioned tagged JSON (``state_codec.dump_state``)."""

    def __init__(self, handle: Any, name: str, default: Callable[[], Any]):
        self.state = handle.getValueState(name, JSON_VALUE_SCHEMA)
        self.name = name
        self.default = default

    def get(self) -> Any:
        if self.state.exists():
            value = self.state.get()
            if value is not None and value[1] is not None:
                if value[0] != STATE_FORMAT:
                    raise InternalError(
                        f"state variable {self.name!r} holds a value in state codec format {value[0]}; this engine "
                        f"reads format {STATE_FORMAT}: restore the snapshot with the engine version that wrote it")
                return load_state(value[1])
        return self.default()

    def set(self, value: Any) -> None:
        self.state.update((STATE_FORMAT, dump_state(value)))

    def clear(self) -> None:
        self.state.clear()


def value_state(json_state: bool) -> type[JsonValue] | type[PickledValue]:
    """The state variable class of a node version: JSON for the versions that introduced it, else pickles."""
    return JsonValue if json_state else PickledValue


class PickledValue:
    """A value-state variable holding one pickled Python object (node versions before the state codec)."""

    def __init__(self, handle: Any, name: str, default: Callable[[], Any]):
        self.state = handle.getValueState(name, blob_schema())
        self.default = default

    def get(self) -> Any:
        if self.state.exists():
            value = self.state.get()
            if value is not None and value[0] is not None:
                return pickle.loads(bytes(value[0]))
        return self.default()

    def set(self, value: Any) -> None:
        self.state.update((pickle.dumps(value, protocol=4),))

    def clear(self) -> None:
        self.state.clear()


def run_with_state(df: Any, keys: Sequence[Any], processor: Any, output_schema: Any,
                   event_time_column: str = "") -> Any:
    """``df.groupBy(keys).transformWithState(processor, …)`` in append mode with event-time timers.

    The event-time marks are stripped from the input columns first: in event-time mode Spark would drop
    rows older than the watermark *before* the processor sees them, but Flink's lateness depends on the
    operator (a session still open, a frame still pending), so each processor decides itself.
    """
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    df = df.select(*[F.col(f"`{c}`").alias(c, metadata={}) for c in df.columns])
    grouped = df.groupBy(*keys)
    return grouped.transformWithState(processor, output_schema, "Append", "EventTime",
                                      eventTimeColumnName=event_time_column)


def after_stateful(stream: Stream, node: Any, ctx: Any) -> Stream:
    """Cut the DAG before ``node`` when its input comes from a stateful operator Spark cannot chain with.

    Window outputs carry event time (a marked window_time column), which Spark chains in append mode; other
    stateful outputs (updating aggregates, ranks) go through the executor's changelog channel.
    """
    if stream.facts.stateful and not stream.facts.event_time_output and ctx is not None and ctx.cut:
        return ctx.cut(stream, ctx.uid(node, "input-channel"))
    return stream


def mark_stateful(stream: Stream, source: Stream | None = None, event_time: bool = True) -> Stream:
    """``stream`` below a stateful operator; ``source``: the operator's input, whose facts the operator's bare
    output (built without any) inherits."""
    facts = (source if source is not None else stream).facts
    return stream.with_df(stream.df, facts=replace(facts, stateful=True,
                                                   event_time_output=event_time and stream.rowtime is not None))


def spark_type_name(dtype: Any) -> str:
    return render_spark_type(dtype.without_time_attribute())
