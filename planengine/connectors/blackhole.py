"""``'connector' = 'blackhole'``: discards every row; accepts any changelog (for benchmarks and tests).

Its write is trivially known, so unlike other connectors the provider implements ``write``: a Spark
``noop`` sink. The runtime still owns the query name, trigger, checkpoint location and ``start()``.
"""

from __future__ import annotations

from typing import Any

from planengine.connectors.base import DynamicTableSink, SinkContext, SinkRuntimeProvider
from planengine.connectors.changelog import ChangelogMode
from planengine.connectors.factories import DynamicTableSinkFactory, FactoryContext
from planengine.connectors.helper import TableFactoryHelper


class BlackHoleRuntimeProvider(SinkRuntimeProvider):
    def write(self, df: Any, ctx: Any) -> Any:
        """A ``DataStreamWriter`` (streaming ``df``) or ``DataFrameWriter`` (batch) on Spark's noop sink."""
        writer = df.writeStream if getattr(df, "isStreaming", False) else df.write.mode("append")
        return writer.format("noop")


class BlackHoleTableSink(DynamicTableSink):
    def __init__(self, identifier: object):
        self.identifier = identifier

    def changelog_mode(self, requested: ChangelogMode) -> ChangelogMode:
        return requested

    def sink_runtime_provider(self, ctx: SinkContext) -> SinkRuntimeProvider:
        return BlackHoleRuntimeProvider("blackhole", self)

    def as_summary_string(self) -> str:
        return "blackhole()"


class BlackHoleTableFactory(DynamicTableSinkFactory):
    factory_identifier = "blackhole"
    description = "Discards every row. Accepts any changelog."
    changelog_doc = "Sink: accepts any changelog (returns the requested mode)."
    sink_class = BlackHoleTableSink

    def create_dynamic_table_sink(self, ctx: FactoryContext) -> BlackHoleTableSink:
        TableFactoryHelper(self, ctx).validate()
        return BlackHoleTableSink(ctx.identifier)
