"""Rebuild a plan's scan or sink: create it from the table, then replay the recorded ability specs.

This is the whole restore story for connectors (DESIGN §4): the optimizer is not consulted, so the
restored source reads exactly what the compiled one did. The specs are plan data
(``planengine.exec.specs``); replaying one calls the ability it records on the fresh connector, and fails
with what to do when the connector no longer has that ability.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from planengine.connectors.abilities import (
    SupportsFilterPushDown,
    SupportsLimitPushDown,
    SupportsOverwriting,
    SupportsPartitioning,
    SupportsPartitionPushDown,
    SupportsProjectionPushDown,
    SupportsReadingMetadata,
    SupportsWatermarkPushDown,
    SupportsWritingMetadata,
    WatermarkStrategy,
)
from planengine.connectors.base import DynamicTableSink, DynamicTableSource
from planengine.connectors.discovery import create_table_sink, create_table_source
from planengine.connectors.factories import FactoryContext
from planengine.errors import PlanIncompatible
from planengine.exec import specs as S


def restore_table_source(ctx: FactoryContext, specs: Sequence[S.AbilitySpec]) -> DynamicTableSource:
    source = create_table_source(ctx)
    apply_specs(source, specs)
    return source


def restore_table_sink(ctx: FactoryContext, specs: Sequence[S.AbilitySpec]) -> DynamicTableSink:
    sink = create_table_sink(ctx)
    apply_specs(sink, specs)
    return sink


def apply_specs(target: Any, specs: Sequence[S.AbilitySpec]) -> None:
    """Re-apply recorded specs in their recorded order (order matters: indices refer to the row so far)."""
    for spec in specs:
        apply_spec(target, spec)


def apply_spec(target: Any, spec: S.AbilitySpec) -> None:
    """Re-apply exactly this ability to a freshly created source or sink."""
    _APPLY[type(spec)](target, spec)


def _describe(target: object) -> str:
    summary = getattr(target, "as_summary_string", None)
    return summary() if callable(summary) else type(target).__name__


def _require(target: object, ability: type, spec: S.AbilitySpec) -> Any:
    if not isinstance(target, ability):
        raise PlanIncompatible(
            f"the plan applies {spec.TYPE} to {_describe(target)}, but that connector no longer supports "
            f"{ability.__name__}",
            hint="recompile the pipeline from SQL (COMPILE PLAN … with table.plan.force-recompile = true), "
            "or run it on an engine whose connector still has the ability",
        )
    return target


def _project(target: Any, spec: S.ProjectPushDownSpec) -> None:
    source = _require(target, SupportsProjectionPushDown, spec)
    if any(len(p) > 1 for p in spec.projected_fields) and not source.supports_nested_projection():
        raise PlanIncompatible(f"the plan pushes a nested projection into {_describe(target)}, "
                               "which no longer supports nested projection",
                               hint="recompile the pipeline from SQL")
    source.apply_projection([list(p) for p in spec.projected_fields], spec.produced_type)


def _filter(target: Any, spec: S.FilterPushDownSpec) -> None:
    source = _require(target, SupportsFilterPushDown, spec)
    result = source.apply_filters(list(spec.predicates))
    if result.remaining:
        # The plan dropped these filters from its own operators: a source that no longer evaluates
        # them would silently let rows through.
        refused = ", ".join(str(p) for p in result.remaining)
        raise PlanIncompatible(f"{_describe(target)} no longer accepts the pushed-down filter(s) {refused}",
                               hint="recompile the pipeline from SQL so the filter stays in the plan")


def _limit(target: Any, spec: S.LimitPushDownSpec) -> None:
    _require(target, SupportsLimitPushDown, spec).apply_limit(spec.limit)


def _watermark(target: Any, spec: S.WatermarkPushDownSpec) -> None:
    source = _require(target, SupportsWatermarkPushDown, spec)
    source.apply_watermark(WatermarkStrategy(spec.watermark_expr, spec.idle_timeout_ms))


def _partitions(target: Any, spec: S.PartitionPushDownSpec) -> None:
    _require(target, SupportsPartitionPushDown, spec).apply_partitions(spec.partition_dicts())


def _reading_metadata(target: Any, spec: S.ReadingMetadataSpec) -> None:
    source = _require(target, SupportsReadingMetadata, spec)
    missing = [k for k in spec.metadata_keys if k not in source.list_readable_metadata()]
    if missing:
        raise PlanIncompatible(f"{_describe(target)} no longer offers metadata {missing}",
                               hint="recompile the pipeline from SQL")
    source.apply_readable_metadata(list(spec.metadata_keys), spec.produced_type)


def _overwrite(target: Any, spec: S.OverwriteSpec) -> None:
    _require(target, SupportsOverwriting, spec).apply_overwrite(spec.overwrite)


def _partitioning(target: Any, spec: S.PartitioningSpec) -> None:
    _require(target, SupportsPartitioning, spec).apply_static_partition(dict(spec.partition))


def _writing_metadata(target: Any, spec: S.WritingMetadataSpec) -> None:
    sink = _require(target, SupportsWritingMetadata, spec)
    missing = [k for k in spec.metadata_keys if k not in sink.list_writable_metadata()]
    if missing:
        raise PlanIncompatible(f"{_describe(target)} no longer accepts metadata {missing}",
                               hint="recompile the pipeline from SQL")
    sink.apply_writable_metadata(list(spec.metadata_keys), spec.consumed_type)


# One replay per spec type; tests/connectors/test_specs.py checks every type in exec.specs.SPEC_TYPES has one.
_APPLY: dict[type[S.AbilitySpec], Callable[[Any, Any], None]] = {
    S.ProjectPushDownSpec: _project,
    S.FilterPushDownSpec: _filter,
    S.LimitPushDownSpec: _limit,
    S.WatermarkPushDownSpec: _watermark,
    S.PartitionPushDownSpec: _partitions,
    S.ReadingMetadataSpec: _reading_metadata,
    S.OverwriteSpec: _overwrite,
    S.PartitioningSpec: _partitioning,
    S.WritingMetadataSpec: _writing_metadata,
}
