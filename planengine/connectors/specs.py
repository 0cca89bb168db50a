"""Applied abilities as plan data: one frozen spec per ability the planner used on a scan or sink.

A compiled plan stores, on each scan and sink node, the list of specs produced at compile time (DESIGN §4).
Restore builds a fresh source/sink from the table and calls ``spec.apply`` for each recorded spec, in
order, so the restored topology is exactly the compiled one even if the connector has since gained (or
changed) abilities. JSON is declarative: ``{"type": "ProjectPushDown", ...}``, no class or module names,
fixed key order.

>>> from planengine.ir import types as T
>>> spec = ProjectPushDownSpec(((0,), (2,)), T.row(("a", T.INT), ("c", T.STRING)))
>>> spec.to_json()
{'type': 'ProjectPushDown', 'projectedFields': [[0], [2]], 'producedType': 'ROW<`a` INT, `c` STRING>'}
>>> specs_from_json(specs_to_json([spec])) == [spec]
True
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

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
from planengine.errors import PlanIncompatible
from planengine.ir.expressions import Expr
from planengine.ir.types import DataType, parse_type


def _describe(target: object) -> str:
    summary = getattr(target, "as_summary_string", None)
    return summary() if callable(summary) else type(target).__name__


def _require(target: object, ability: type, spec_type: str) -> Any:
    if not isinstance(target, ability):
        raise PlanIncompatible(
            f"the plan applies {spec_type} to {_describe(target)}, but that connector no longer supports "
            f"{ability.__name__}",
            hint="recompile the pipeline from SQL (COMPILE PLAN … with table.plan.force-recompile = true), "
            "or run it on an engine whose connector still has the ability",
        )
    return target


class AbilitySpec(ABC):
    """Base of all specs. ``TYPE`` is the JSON discriminator."""

    TYPE: ClassVar[str]

    @abstractmethod
    def to_json(self) -> dict[str, Any]: ...

    @staticmethod
    @abstractmethod
    def from_json(data: dict[str, Any]) -> AbilitySpec: ...

    @abstractmethod
    def apply(self, target: Any) -> None:
        """Re-apply exactly this ability to a freshly created source or sink."""


# --- source specs -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProjectPushDownSpec(AbilitySpec):
    TYPE = "ProjectPushDown"
    projected_fields: tuple[tuple[int, ...], ...]
    produced_type: DataType

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "projectedFields": [list(p) for p in self.projected_fields],
                "producedType": str(self.produced_type)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> ProjectPushDownSpec:
        return ProjectPushDownSpec(tuple(tuple(p) for p in data["projectedFields"]),
                                   parse_type(data["producedType"]))

    def apply(self, target: Any) -> None:
        source = _require(target, SupportsProjectionPushDown, self.TYPE)
        if any(len(p) > 1 for p in self.projected_fields) and not source.supports_nested_projection():
            raise PlanIncompatible(f"the plan pushes a nested projection into {_describe(target)}, "
                                   "which no longer supports nested projection",
                                   hint="recompile the pipeline from SQL")
        source.apply_projection([list(p) for p in self.projected_fields], self.produced_type)


@dataclass(frozen=True)
class FilterPushDownSpec(AbilitySpec):
    """The predicates the source *accepted* at compile time (the plan no longer evaluates them itself)."""

    TYPE = "FilterPushDown"
    predicates: tuple[Expr, ...]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "predicates": [p.to_json() for p in self.predicates]}

    @staticmethod
    def from_json(data: dict[str, Any]) -> FilterPushDownSpec:
        return FilterPushDownSpec(tuple(Expr.from_json(p) for p in data["predicates"]))

    def apply(self, target: Any) -> None:
        source = _require(target, SupportsFilterPushDown, self.TYPE)
        result = source.apply_filters(list(self.predicates))
        if result.remaining:
            # The plan dropped these filters from its own operators: a source that no longer evaluates
            # them would silently let rows through.
            refused = ", ".join(str(p) for p in result.remaining)
            raise PlanIncompatible(f"{_describe(target)} no longer accepts the pushed-down filter(s) {refused}",
                                   hint="recompile the pipeline from SQL so the filter stays in the plan")


@dataclass(frozen=True)
class LimitPushDownSpec(AbilitySpec):
    TYPE = "LimitPushDown"
    limit: int

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "limit": self.limit}

    @staticmethod
    def from_json(data: dict[str, Any]) -> LimitPushDownSpec:
        return LimitPushDownSpec(int(data["limit"]))

    def apply(self, target: Any) -> None:
        _require(target, SupportsLimitPushDown, self.TYPE).apply_limit(self.limit)


@dataclass(frozen=True)
class WatermarkPushDownSpec(AbilitySpec):
    TYPE = "WatermarkPushDown"
    watermark_expr: Expr
    idle_timeout_ms: int | None
    produced_type: DataType

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.TYPE, "watermarkExpr": self.watermark_expr.to_json()}
        if self.idle_timeout_ms is not None:
            out["idleTimeoutMillis"] = self.idle_timeout_ms
        out["producedType"] = str(self.produced_type)
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> WatermarkPushDownSpec:
        return WatermarkPushDownSpec(Expr.from_json(data["watermarkExpr"]), data.get("idleTimeoutMillis"),
                                     parse_type(data["producedType"]))

    def apply(self, target: Any) -> None:
        source = _require(target, SupportsWatermarkPushDown, self.TYPE)
        source.apply_watermark(WatermarkStrategy(self.watermark_expr, self.idle_timeout_ms))


@dataclass(frozen=True)
class PartitionPushDownSpec(AbilitySpec):
    TYPE = "PartitionPushDown"
    partitions: tuple[tuple[tuple[str, str], ...], ...]  # each partition: sorted (key, value) pairs

    @staticmethod
    def of(partitions: Sequence[dict[str, str]]) -> PartitionPushDownSpec:
        return PartitionPushDownSpec(tuple(tuple(sorted(p.items())) for p in partitions))

    def partition_dicts(self) -> list[dict[str, str]]:
        return [dict(p) for p in self.partitions]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "partitions": self.partition_dicts()}

    @staticmethod
    def from_json(data: dict[str, Any]) -> PartitionPushDownSpec:
        return PartitionPushDownSpec.of(data["partitions"])

    def apply(self, target: Any) -> None:
        _require(target, SupportsPartitionPushDown, self.TYPE).apply_partitions(self.partition_dicts())


@dataclass(frozen=True)
class ReadingMetadataSpec(AbilitySpec):
    TYPE = "ReadingMetadata"
    metadata_keys: tuple[str, ...]
    produced_type: DataType

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "metadataKeys": list(self.metadata_keys), "producedType": str(self.produced_type)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> ReadingMetadataSpec:
        return ReadingMetadataSpec(tuple(data["metadataKeys"]), parse_type(data["producedType"]))

    def apply(self, target: Any) -> None:
        source = _require(target, SupportsReadingMetadata, self.TYPE)
        missing = [k for k in self.metadata_keys if k not in source.list_readable_metadata()]
        if missing:
            raise PlanIncompatible(f"{_describe(target)} no longer offers metadata {missing}",
                                   hint="recompile the pipeline from SQL")
        source.apply_readable_metadata(list(self.metadata_keys), self.produced_type)


# --- sink specs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OverwriteSpec(AbilitySpec):
    TYPE = "Overwrite"
    overwrite: bool

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "overwrite": self.overwrite}

    @staticmethod
    def from_json(data: dict[str, Any]) -> OverwriteSpec:
        return OverwriteSpec(bool(data["overwrite"]))

    def apply(self, target: Any) -> None:
        _require(target, SupportsOverwriting, self.TYPE).apply_overwrite(self.overwrite)


@dataclass(frozen=True)
class PartitioningSpec(AbilitySpec):
    TYPE = "Partitioning"
    partition: tuple[tuple[str, str], ...]  # static partition, sorted (key, value) pairs

    @staticmethod
    def of(partition: dict[str, str]) -> PartitioningSpec:
        return PartitioningSpec(tuple(sorted(partition.items())))

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "partition": dict(self.partition)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> PartitioningSpec:
        return PartitioningSpec.of(data["partition"])

    def apply(self, target: Any) -> None:
        _require(target, SupportsPartitioning, self.TYPE).apply_static_partition(dict(self.partition))


@dataclass(frozen=True)
class WritingMetadataSpec(AbilitySpec):
    TYPE = "WritingMetadata"
    metadata_keys: tuple[str, ...]
    consumed_type: DataType

    def to_json(self) -> dict[str, Any]:
        return {"type": self.TYPE, "metadataKeys": list(self.metadata_keys), "consumedType": str(self.consumed_type)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> WritingMetadataSpec:
        return WritingMetadataSpec(tuple(data["metadataKeys"]), parse_type(data["consumedType"]))

    def apply(self, target: Any) -> None:
        sink = _require(target, SupportsWritingMetadata, self.TYPE)
        missing = [k for k in self.metadata_keys if k not in sink.list_writable_metadata()]
        if missing:
            raise PlanIncompatible(f"{_describe(target)} no longer accepts metadata {missing}",
                                   hint="recompile the pipeline from SQL")
        sink.apply_writable_metadata(list(self.metadata_keys), self.consumed_type)


SPEC_TYPES: dict[str, type[AbilitySpec]] = {
    cls.TYPE: cls
    for cls in (ProjectPushDownSpec, FilterPushDownSpec, LimitPushDownSpec, WatermarkPushDownSpec,
                PartitionPushDownSpec, ReadingMetadataSpec, OverwriteSpec, PartitioningSpec, WritingMetadataSpec)
}


def spec_from_json(data: dict[str, Any]) -> AbilitySpec:
    kind = data.get("type")
    cls = SPEC_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise PlanIncompatible(f"unknown ability spec type {kind!r}",
                        hint=f"this engine knows {', '.join(sorted(SPEC_TYPES))}; was the plan written by a newer "
                        "engine?")
    return cls.from_json(data)


def specs_from_json(data: Sequence[dict[str, Any]]) -> list[AbilitySpec]:
    return [spec_from_json(d) for d in data]


def specs_to_json(specs: Sequence[AbilitySpec]) -> list[dict[str, Any]]:
    return [s.to_json() for s in specs]


def apply_specs(target: Any, specs: Sequence[AbilitySpec]) -> None:
    """Re-apply recorded specs in their recorded order (order matters: indices refer to the row so far)."""
    for spec in specs:
        spec.apply(target)
