"""``'connector' = 'blackhole'``: discards every row; accepts any changelog (for benchmarks and tests).

Like Flink's ``BlackHoleSink``, a blackhole table with a PRIMARY KEY does not ask for UPDATE_BEFORE (Flink
drops it from the requested mode), so an aggregate keyed like it runs without before-images, as on Flink.
Without a key the requested mode is kept: the planner requires a key of sinks that take upserts only.

Its write is trivially known, so unlike other connectors the provider implements ``write``: a Spark
``noop`` sink. The runtime still owns the query name, trigger, checkpoint location and ``start()``.
"""

from __future__ import annotations

from planengine.connectors.base import DynamicTableSink, SinkContext, SinkRuntimeProvider
from planengine.connectors.factories import DynamicTableSinkFactory, FactoryContext
from planengine.connectors.helper import TableFactoryHelper
from planengine.ir.changelog import ChangelogMode, RowKind


class BlackHoleTableSink(DynamicTableSink):
    def __init__(self, identifier: object, keyed: bool = False):
        self.identifier = identifier
        self.keyed = keyed  # the table declares a PRIMARY KEY

    def changelog_mode(self, requested: ChangelogMode) -> ChangelogMode:
        if self.keyed and requested.contains(RowKind.UPDATE_BEFORE):
            return ChangelogMode(frozenset(k for k in requested.kinds if k is not RowKind.UPDATE_BEFORE))
        return requested

    def writes_micro_batches(self) -> bool:
        return True  # planengine.runtime.connectors: a batch writer next to the streaming one

    def sink_runtime_provider(self, ctx: SinkContext) -> SinkRuntimeProvider:
        return SinkRuntimeProvider("blackhole", self)

    def as_summary_string(self) -> str:
        return "blackhole()"


class BlackHoleTableFactory(DynamicTableSinkFactory):
    factory_identifier = "blackhole"
    description = "Discards every row. Accepts any changelog."
    changelog_doc = ("Sink: accepts any changelog (returns the requested mode; with a PRIMARY KEY without "
                     "UPDATE_BEFORE, like Flink).")
    sink_class = BlackHoleTableSink

    def create_dynamic_table_sink(self, ctx: FactoryContext) -> BlackHoleTableSink:
        TableFactoryHelper(self, ctx).validate()
        return BlackHoleTableSink(ctx.identifier, keyed=ctx.schema.primary_key is not None)
