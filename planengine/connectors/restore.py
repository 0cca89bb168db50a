"""Rebuild a plan's scan or sink: create it from the table, then replay the recorded ability specs.

This is the whole restore story for connectors (DESIGN §4): the optimizer is not consulted, so the
restored source reads exactly what the compiled one did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.connectors.base import DynamicTableSink, DynamicTableSource
from planengine.connectors.discovery import create_table_sink, create_table_source
from planengine.connectors.factories import FactoryContext
from planengine.connectors.specs import AbilitySpec, apply_specs, specs_from_json


def _specs(specs: Sequence[AbilitySpec] | Sequence[dict[str, Any]]) -> list[AbilitySpec]:
    return [s if isinstance(s, AbilitySpec) else specs_from_json([s])[0] for s in specs]


def restore_table_source(ctx: FactoryContext, specs: Sequence[AbilitySpec] | Sequence[dict[str, Any]]
                         ) -> DynamicTableSource:
    source = create_table_source(ctx)
    apply_specs(source, _specs(specs))
    return source


def restore_table_sink(ctx: FactoryContext, specs: Sequence[AbilitySpec] | Sequence[dict[str, Any]]
                       ) -> DynamicTableSink:
    sink = create_table_sink(ctx)
    apply_specs(sink, _specs(specs))
    return sink
