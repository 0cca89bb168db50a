"""``stream-exec-sink``: the input reshaped to the table's columns, handed to a runtime sink writer.

The translator does not start anything: it returns the stream with ``query``, a
``SinkQuery`` the executor starts as one streaming query named by the sink's uid
(``<id>_stream-exec-sink-<version>_sink``). The writer receives ``f0..fn`` in the table's persisted column order and
``_rowkind`` when the input is updating (DESIGN §6).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planengine.catalog.objects import ObjectIdentifier
from planengine.connectors.base import SinkContext
from planengine.runtime.connectors import QueryOptions, get_sink_writer
from planengine.runtime.dataflow.expressions import render_spark_type
from planengine.runtime.dataflow.stream import ROWKIND, Stream, column_name
from planengine.runtime.engine.translators import translator
from planengine.runtime.engine.translators.source import runtime_sink
from planengine.runtime.jvm import holds_state_of
from planengine.runtime.jvm.changelog_processors import jvm_upsert_materialize


@dataclass
class SinkQuery:
    """One streaming query the executor starts; ``start(options)`` returns the StreamingQuery."""

    uid: str
    start: Callable[[QueryOptions], Any]
    kind: str = "sink"  # sink | channel | fan-out
    description: str = ""
    label: str = ""  # what progress and status show: the sink table('s names), or "channel <name>"


@translator("stream-exec-sink", 1, 2)
def translate_sink(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    """Version 2 materializes upserts on the JVM (``runtime/jvm/changelog_processors.py``) unless its typed state
    cannot hold the rows (``strategies.state_type_refusal``), version 1 on the Python operator; otherwise the versions
    are the same."""
    sink = runtime_sink(node, ctx)
    provider = sink.sink_runtime_provider(SinkContext(node_id=ctx.node_id(node)))
    writer = get_sink_writer(provider.connector)
    inp = inputs[0]
    if node.upsert_materialize and node.metadata.version >= 2 and holds_state_of(
            node, node.inputs[0].field_types, ctx, "upsert materializer"):
        inp = jvm_upsert_materialize(inp, tuple(node.upsert_keys), ctx, node)
    elif node.upsert_materialize:
        inp = _upsert_materialize(inp, node, ctx)
    out = table_rows(node, inp, ctx)
    uid = ctx.uid(node, "sink")
    query = SinkQuery(uid, lambda options: writer(out, sink, node, ctx, options), "sink", node.description,
                      sink_label(node))
    return out.with_df(out.df, query=query)


def sink_label(node: Any) -> str:
    """What progress lines and the status API call a sink: its table's name."""
    return ObjectIdentifier.parse(node.table.identifier).name


def table_rows(node: Any, inp: Stream, ctx: Any) -> Stream:
    """The sink's input reshaped to the table's persisted columns ``f0..fn`` (casts, NULLs for columns the
    INSERT does not fill, NOT NULL enforcement), ``_rowkind`` kept on updating input. Works on a streaming
    DataFrame and on one micro-batch alike (a fan-out query writes its sinks per batch)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    # The table as the plan resolved it (not the connector object: not every sink keeps its schema).
    columns = [c for c in node.table.resolved.table.schema.physical_columns]
    targets = list(node.target_columns) or list(range(len(inp.fields)))
    cols = []
    for j, column in enumerate(columns):
        spark_type = render_spark_type(column.type)
        if j in targets:
            # Cast: a rowtime edge carries Spark TIMESTAMP where the table says TIMESTAMP (NTZ).
            value = F.col(inp.columns[targets.index(j)]).cast(spark_type)
        else:
            value = F.lit(None).cast(spark_type)
        cols.append(_enforce_not_null(value, column, ctx, node).alias(column_name(j)))
    if inp.updating:
        cols.append(F.col(ROWKIND))
    return Stream(inp.df.select(*cols), tuple(c.name for c in columns), inp.updating, None, inp.facts)


def _enforce_not_null(value: Any, column: Any, ctx: Any, node: Any) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    if column.type.nullable:
        return value
    mode = (ctx.option(node, "table.exec.sink.not-null-enforcer", "ERROR") or "ERROR").upper()
    if mode == "ERROR":
        message = (f"column '{column.name}' of sink {node.table.identifier} is NOT NULL but the query produced a "
                   "null; filter nulls or SET 'table.exec.sink.not-null-enforcer' = 'DROP'")
        return F.when(value.isNull(), F.raise_error(F.lit(message))).otherwise(value)
    return value  # DROP: rows are filtered by the writer-independent filter below (not enforced per column)


def _upsert_materialize(stream: Stream, node: Any, ctx: Any) -> Stream:
    from planengine.runtime.operators.upsert_materializer import materialize  # noqa: PLC0415 — the Python operators load pandas/pyarrow; the executor imports this module (SinkQuery) without running a sink

    return materialize(stream, tuple(node.upsert_keys), ctx, node)
