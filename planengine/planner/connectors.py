"""The connectors the planner creates, and which scan or sink node each belongs to.

FLIP-95's planner asks a table's factory for its source or sink to learn what it can do: push-down rules ask
for its abilities, changelog inference for the row kinds a source produces and a sink accepts. Physical
conversion returns the exec DAG together with a ``ConnectorMap`` from its scan and sink nodes to those
objects, instead of hiding them on the frozen nodes, so no pass has to carry them along.

The map is keyed by the node's ``TableSpec``: every rewrite after physical conversion keeps a scan's or
sink's table, so a node rebuilt by a pass (new inputs, another changelog mode, upsert keys) still finds its
connector, and a node without one is an error rather than a silently weaker check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from planengine.catalog.objects import TableRef
from planengine.connectors.base import DynamicTableSink, DynamicTableSource
from planengine.connectors.discovery import create_table_sink, create_table_source
from planengine.connectors.factories import FactoryContext
from planengine.errors import InternalError
from planengine.exec import nodes as X


def factory_context(ref: TableRef, config: Mapping[str, str]) -> FactoryContext:
    """What a factory sees: the table with its OPTIONS hints merged, and the session options."""
    return FactoryContext(ref.identifier, ref.table.with_options(ref.options), dict(config), ref.temporary)


def create_source(ref: TableRef, config: Mapping[str, str]) -> DynamicTableSource:
    return create_table_source(factory_context(ref, config))


def create_sink(ref: TableRef, config: Mapping[str, str]) -> DynamicTableSink:
    return create_table_sink(factory_context(ref, config))


@dataclass(frozen=True)
class ConnectorMap:
    """Scan and sink nodes of a physical DAG -> the source and sink objects the planner created for them."""

    sources: Mapping[X.TableSpec, DynamicTableSource] = field(default_factory=dict)
    sinks: Mapping[X.TableSpec, DynamicTableSink] = field(default_factory=dict)

    def source(self, scan: X.TableSourceScan) -> DynamicTableSource:
        try:
            return self.sources[scan.table]
        except KeyError:
            raise InternalError(f"scan of {scan.table.identifier} has no source in the connector map") from None

    def sink(self, sink: X.Sink) -> DynamicTableSink:
        try:
            return self.sinks[sink.table]
        except KeyError:
            raise InternalError(f"sink {sink.table.identifier} has no sink in the connector map") from None
