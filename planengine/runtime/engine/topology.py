"""A plan's exec DAG as Spark streaming queries: the recorded shared topology, or one query per sink.

``translate_plan`` maps the DAG in dependency order (one translator call per node, cached by node, so a
shared sub-plan is one DataFrame) and hands every query it makes to ``register``, producers before their
consumers. The plan decides the queries (``planengine.plan.topology``):

* **no ``queries`` section** (format 1): each sink's translator returns its query, which computes everything
  the sink reads. Spark re-runs that lineage per query, so a node several sinks read runs once per sink.
* **a recorded topology** (format 2): a node a fan-out query computes is translated once, in that query's
  streaming part; its stateless tails to its sinks are *not* translated up front but per micro-batch, inside
  the query's ``foreachBatch`` over the persisted batch (the same translators: a Calc is a ``select`` on a
  static DataFrame as well); consumers in other queries read its output from the channel the fan-out writes.

``foreachBatch`` runs on the driver between Spark's planning of a batch and its commit, with the batch id
Spark replays after a failure, so each sink's own exactly-once rule (``runtime.connectors`` batch writers)
holds per sink; stateful operators all sit in streaming parts, so stop at a batch boundary, snapshots
(``checkpoints/<query uid>/``, the channel inside its producer's) and drain are unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from planengine.catalog.objects import ObjectIdentifier
from planengine.connectors.base import SinkContext
from planengine.exec import base as B
from planengine.plan.topology import Dag, Query, Topology
from planengine.runtime.connectors import BatchOptions, QueryOptions, get_batch_sink_writer
from planengine.runtime.connectors.filesystem import file_stream_sink
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.channels import channel_path, refuse_channels_on_object_store
from planengine.runtime.engine.translators import get_translator
from planengine.runtime.engine.translators.sink import SinkQuery, runtime_sink, sink_label, table_rows
from planengine.runtime.engine.translators.watermark import with_drainable_watermark

log = logging.getLogger("planengine.runtime")

SINK = "stream-exec-sink"
FAN_OUT = "fan-out"

Register = Callable[[SinkQuery, Stream], None]  # a query to start, and the stream it writes
# (head stream, fan-out uid, channel dir, consumer node, translation context) -> the stream the consumer reads
ChannelReader = Callable[[Stream, str, Path, Any, Any], Stream]
ScanHook = Callable[[Any, Stream], Stream]


def translate_plan(sinks: list[Any], plan_data: dict[str, Any], ctx: Any, register: Register, *,
                   read_channel: ChannelReader | None = None, on_scan: ScanHook | None = None) -> None:
    """Translate the plan's DAG and register its queries (see the module docstring). ``read_channel`` and
    ``on_scan`` let ``planengine check`` substitute empty inputs; by default channels are read from files."""
    topology = Topology.from_plan(plan_data)
    dag = Dag.from_plan(plan_data) if topology is not None else None
    fan_outs = topology.fan_outs() if topology is not None else {}
    channels = topology.channel_heads() if topology is not None else set()
    per_batch = {n for q in fan_outs.values() for n in topology.batch_nodes(dag, q)} \
        if topology is not None and dag is not None else set()
    sink_queries = {q.head: q for q in topology.queries if not q.fan_out} if topology is not None else {}
    reader = read_channel or read_channel_files
    nodes = B.topological(list(sinks))
    by_id = {ctx.node_id(n): n for n in nodes}
    cache: dict[int, Stream] = {}
    legacy_sinks: dict[int, tuple[SinkQuery, Stream]] = {}
    for node in nodes:
        nid = ctx.node_id(node)
        if nid in per_batch:
            continue  # evaluated per micro-batch by the fan-out query above it
        inputs = []
        for i in node.inputs:
            iid = ctx.node_id(i)
            if iid in channels:
                uid = fan_outs[iid].uid
                refuse_channels_on_object_store(ctx, uid)
                inputs.append(reader(cache[iid], uid, channel_path(ctx.run_dir, uid), node, ctx))
            else:
                inputs.append(cache[iid])
        out = _translate(node, inputs, ctx)
        if on_scan is not None and not node.inputs:
            out = on_scan(node, out)
        cache[nid] = out
        if nid in fan_outs:
            tails = [(n, by_id[n]) for n in topology.batch_nodes(dag, fan_outs[nid])]  # type: ignore[union-attr]
            fan_out = FanOutQuery(fan_outs[nid], out, tails, ctx, head_node=node)
            register(fan_out.spec(), out)
        elif node.metadata.name == SINK and topology is None:
            legacy_sinks[nid] = (out.query, out)
        elif node.metadata.name == SINK:
            # the recorded uid names the checkpoint
            register(replace(out.query, uid=sink_queries[nid].uid), out)
    # One query per sink, in the plan's sink order after the channel producers translators cut (as always).
    for s in sinks if topology is None else ():
        register(*legacy_sinks[ctx.node_id(s)])


def channel_label(head: Any) -> str:
    """What progress lines call a channel: the shared operator and the tables it reads, e.g.
    ``channel: watermark-assigner of clicks`` (users name tables, not node uids)."""
    tables: list[str] = []
    pending, seen = [head], set()
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if not node.inputs and getattr(node, "table", None) is not None:
            name = ObjectIdentifier.parse(node.table.identifier).name
            if name not in tables:
                tables.append(name)
        pending.extend(node.inputs)
    kind = head.metadata.name.removeprefix("stream-exec-")
    return f"channel: {kind} of {', '.join(sorted(tables))}" if tables else f"channel: {kind}"


def _translate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    meta = node.metadata
    fn = get_translator(meta.name, meta.version)
    assert fn is not None  # executor.check_runtime_support ran first
    return fn(node, inputs, ctx)


def read_channel_files(head: Stream, uid: str, path: Path, consumer: Any, ctx: Any) -> Stream:
    """The head's output as another query reads it: the channel's files (Spark's file source over the
    manifest the fan-out's file sink writes), with event time re-derived under the head's watermark delay
    and a drain control of its own (``--drain`` must reach the consumer's event-time operators too)."""
    path.mkdir(parents=True, exist_ok=True)
    df = ctx.spark.readStream.schema(head.df.schema).parquet(str(path))
    if head.rowtime is not None:
        delay = head.facts.watermark_delay_ms
        control = f"{uid}-read-{ctx.node_id(consumer)}"
        df = with_drainable_watermark(df, head.rowtime, delay, ctx, control)
    return head.with_df(df)


@dataclass
class FanOutQuery:
    """One query computing ``head`` once per micro-batch and writing the batch to every sink below it (and to
    the head's channel when other queries read it)."""

    query: Query
    head: Stream
    tails: list[tuple[int, Any]]  # (node id, exec node) evaluated per batch, in topological order
    ctx: Any
    head_node: Any = None  # the exec node ``head`` translates: names the channel in progress lines
    writers: dict[int, Callable[[Any, int], None]] = field(default_factory=dict)

    def spec(self) -> SinkQuery:
        sinks = [n for nid, n in self.tails if nid in self.query.sinks]
        names = [sink_label(n) for n in sinks] + ([channel_label(self.head_node)] if self.query.channel else [])
        return SinkQuery(self.query.uid, self.start, FAN_OUT, f"fan-out of node {self.query.head}",
                         ", ".join(names))

    def start(self, options: QueryOptions) -> Any:
        ctx = self.ctx
        for nid, node in self.tails:
            if nid in self.query.sinks:
                sink = runtime_sink(node, ctx)
                provider = sink.sink_runtime_provider(_sink_context(node, ctx))
                opener = get_batch_sink_writer(provider.connector)
                self.writers[nid] = opener(sink, node, ctx, BatchOptions(ctx.uid(node, "sink"), options.fence))
        channel = None
        if self.query.channel:
            refuse_channels_on_object_store(ctx, self.query.uid)
            path = channel_path(ctx.run_dir, self.query.uid)
            path.mkdir(parents=True, exist_ok=True)
            channel = file_stream_sink(ctx.spark, str(path), "parquet", {}, [])
        outputs = len(self.writers) + (1 if channel is not None else 0)
        head, tails, writers = self.head, self.tails, self.writers

        def process(batch: Any, batch_id: int) -> None:
            options.fence(batch_id)
            if outputs > 1:
                batch.persist()  # computed once, read by every output below
            try:
                local: dict[int, Stream] = {self.query.head: head.with_df(batch)}
                for nid, node in tails:
                    inputs = [local[ctx.node_id(i)] for i in node.inputs]
                    if nid in writers:
                        writers[nid](table_rows(node, inputs[0], ctx), batch_id)
                    else:
                        local[nid] = _translate(node, inputs, ctx)
                if channel is not None:
                    options.fence(batch_id)
                    channel.addBatch(batch_id, batch._jdf)
            finally:
                if outputs > 1:
                    batch.unpersist()

        writer = head.df.writeStream.foreachBatch(process).outputMode(head.output_mode)
        return options.configure(writer).start()


def _sink_context(node: Any, ctx: Any) -> Any:
    return SinkContext(node_id=ctx.node_id(node))
