"""What rules may consult: session options, the function registry, and source factories."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planengine.catalog.objects import TableRef
from planengine.connectors.base import DynamicTableSource
from planengine.functions.registry import FunctionRegistry
from planengine.planner.connectors import create_source


@dataclass
class RuleContext:
    registry: FunctionRegistry
    config: dict[str, str] = field(default_factory=dict)
    # digest -> canonical node, for sharing common sub-plans across the whole DAG
    canonical: dict[str, Any] = field(default_factory=dict)

    def create_source(self, table_ref: TableRef) -> DynamicTableSource:
        return create_source(table_ref, self.config)
