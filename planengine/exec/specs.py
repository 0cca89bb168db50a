"""Applied abilities as plan data: one frozen spec per ability the planner used on a scan or sink.

A compiled plan stores, on each scan and sink node, the list of specs produced at compile time (DESIGN §4).
Restore builds a fresh source/sink from the table and replays each recorded spec on it, in order
(``planengine.connectors.restore``), so the restored topology is exactly the compiled one even if the
connector has since gained (or changed) abilities. The specs themselves are plain data, like the nodes that
carry them. JSON is declarative: ``{"type": "ProjectPushDown", ...}``, no class or module names, fixed key
order.

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

from planengine.errors import PlanIncompatible
from planengine.ir.expressions import SELF_CONTAINED, Expr, ExprJson
from planengine.ir.types import DataType, parse_type


class AbilitySpec(ABC):
    """Base of all specs. ``TYPE`` is the JSON discriminator; ``ctx`` says how expressions are written."""

    TYPE: ClassVar[str]

    @abstractmethod
    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]: ...

    @staticmethod
    @abstractmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> AbilitySpec: ...


# --- source specs -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProjectPushDownSpec(AbilitySpec):
    TYPE = "ProjectPushDown"
    projected_fields: tuple[tuple[int, ...], ...]
    produced_type: DataType

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {"type": self.TYPE, "projectedFields": [list(p) for p in self.projected_fields],
                "producedType": str(self.produced_type)}

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> ProjectPushDownSpec:
        return ProjectPushDownSpec(tuple(tuple(p) for p in data["projectedFields"]),
                                   parse_type(data["producedType"]))


@dataclass(frozen=True)
class FilterPushDownSpec(AbilitySpec):
    """The predicates the source *accepted* at compile time (the plan no longer evaluates them itself)."""

    TYPE = "FilterPushDown"
    predicates: tuple[Expr, ...]

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {"type": self.TYPE, "predicates": [p.to_json(ctx) for p in self.predicates]}

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> FilterPushDownSpec:
        return FilterPushDownSpec(tuple(Expr.from_json(p, ctx) for p in data["predicates"]))


@dataclass(frozen=True)
class LimitPushDownSpec(AbilitySpec):
    TYPE = "LimitPushDown"
    limit: int

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {"type": self.TYPE, "limit": self.limit}

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> LimitPushDownSpec:
        return LimitPushDownSpec(int(data["limit"]))


@dataclass(frozen=True)
class WatermarkPushDownSpec(AbilitySpec):
    TYPE = "WatermarkPushDown"
    watermark_expr: Expr
    idle_timeout_ms: int | None
    produced_type: DataType

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.TYPE, "watermarkExpr": self.watermark_expr.to_json(ctx)}
        if self.idle_timeout_ms is not None:
            out["idleTimeoutMillis"] = self.idle_timeout_ms
        out["producedType"] = str(self.produced_type)
        return out

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> WatermarkPushDownSpec:
        return WatermarkPushDownSpec(Expr.from_json(data["watermarkExpr"], ctx), data.get("idleTimeoutMillis"),
                                     parse_type(data["producedType"]))


@dataclass(frozen=True)
class PartitionPushDownSpec(AbilitySpec):
    TYPE = "PartitionPushDown"
    partitions: tuple[tuple[tuple[str, str], ...], ...]  # each partition: sorted (key, value) pairs

    @staticmethod
    def of(partitions: Sequence[dict[str, str]]) -> PartitionPushDownSpec:
        return PartitionPushDownSpec(tuple(tuple(sorted(p.items())) for p in partitions))

    def partition_dicts(self) -> list[dict[str, str]]:
        return [dict(p) for p in self.partitions]

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {"type": self.TYPE, "partitions": self.partition_dicts()}

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> PartitionPushDownSpec:
        return PartitionPushDownSpec.of(data["partitions"])


@dataclass(frozen=True)
class ReadingMetadataSpec(AbilitySpec):
    TYPE = "ReadingMetadata"
    metadata_keys: tuple[str, ...]
    produced_type: DataType

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {"type": self.TYPE, "metadataKeys": list(self.metadata_keys), "producedType": str(self.produced_type)}

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> ReadingMetadataSpec:
        return ReadingMetadataSpec(tuple(data["metadataKeys"]), parse_type(data["producedType"]))


# --- sink specs -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class OverwriteSpec(AbilitySpec):
    TYPE = "Overwrite"
    overwrite: bool

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {"type": self.TYPE, "overwrite": self.overwrite}

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> OverwriteSpec:
        return OverwriteSpec(bool(data["overwrite"]))


@dataclass(frozen=True)
class PartitioningSpec(AbilitySpec):
    TYPE = "Partitioning"
    partition: tuple[tuple[str, str], ...]  # static partition, sorted (key, value) pairs

    @staticmethod
    def of(partition: dict[str, str]) -> PartitioningSpec:
        return PartitioningSpec(tuple(sorted(partition.items())))

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {"type": self.TYPE, "partition": dict(self.partition)}

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> PartitioningSpec:
        return PartitioningSpec.of(data["partition"])


@dataclass(frozen=True)
class WritingMetadataSpec(AbilitySpec):
    TYPE = "WritingMetadata"
    metadata_keys: tuple[str, ...]
    consumed_type: DataType

    def to_json(self, ctx: ExprJson = SELF_CONTAINED) -> dict[str, Any]:
        return {"type": self.TYPE, "metadataKeys": list(self.metadata_keys), "consumedType": str(self.consumed_type)}

    @staticmethod
    def from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> WritingMetadataSpec:
        return WritingMetadataSpec(tuple(data["metadataKeys"]), parse_type(data["consumedType"]))


SPEC_TYPES: dict[str, type[AbilitySpec]] = {
    cls.TYPE: cls
    for cls in (ProjectPushDownSpec, FilterPushDownSpec, LimitPushDownSpec, WatermarkPushDownSpec,
                PartitionPushDownSpec, ReadingMetadataSpec, OverwriteSpec, PartitioningSpec, WritingMetadataSpec)
}


def spec_from_json(data: dict[str, Any], ctx: ExprJson = SELF_CONTAINED) -> AbilitySpec:
    kind = data.get("type")
    cls = SPEC_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise PlanIncompatible(f"unknown ability spec type {kind!r}",
                               hint=f"this engine knows {', '.join(sorted(SPEC_TYPES))}; was the plan written by a "
                                    "newer engine?")
    return cls.from_json(data, ctx)


def specs_from_json(data: Sequence[dict[str, Any]], ctx: ExprJson = SELF_CONTAINED) -> list[AbilitySpec]:
    return [spec_from_json(d, ctx) for d in data]


def specs_to_json(specs: Sequence[AbilitySpec], ctx: ExprJson = SELF_CONTAINED) -> list[dict[str, Any]]:
    return [s.to_json(ctx) for s in specs]
