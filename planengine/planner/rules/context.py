"""What rules may consult: session options, the function registry, and source factories."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planengine.functions.registry import FunctionRegistry


@dataclass
class RuleContext:
    registry: FunctionRegistry
    config: dict[str, str] = field(default_factory=dict)
    # digest -> canonical node, for sharing common sub-plans across the whole DAG
    canonical: dict[str, Any] = field(default_factory=dict)

    def create_source(self, table_ref: Any) -> Any:
        from planengine.connectors.discovery import create_table_source
        from planengine.connectors.factories import FactoryContext

        table = table_ref.table.with_options(table_ref.options)
        return create_table_source(FactoryContext(table_ref.identifier, table, self.config, table_ref.temporary))
