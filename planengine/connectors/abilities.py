"""Ability mix-ins (FLIP-95): optional things a source or sink can do for the planner.

A connector opts in by inheriting a mix-in. The planner checks ``isinstance``, calls the method, and
records what it applied as a spec (``planengine.exec.specs``) so that restoring a plan re-applies
exactly those abilities; it never re-runs the search. Indices in filters and projections refer to the
source's row *as produced at the time of the call* (after earlier abilities), as in Flink.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from planengine.ir.expressions import Expr
from planengine.ir.types import DataType


@dataclass(frozen=True)
class FilterResult:
    """Which predicates the source evaluates itself (``accepted``) and which the planner must keep."""

    accepted: list[Expr]
    remaining: list[Expr]


@dataclass(frozen=True)
class WatermarkStrategy:
    """A watermark pushed into a source: the watermark expression over the produced row, and idleness."""

    watermark_expr: Expr
    idle_timeout_ms: int | None = None


class SupportsFilterPushDown(ABC):
    @abstractmethod
    def apply_filters(self, filters: list[Expr]) -> FilterResult:
        """Offer conjunctive predicates; the source keeps what it can evaluate."""


class SupportsProjectionPushDown(ABC):
    @abstractmethod
    def supports_nested_projection(self) -> bool: ...

    @abstractmethod
    def apply_projection(self, projected_fields: list[list[int]], produced_type: DataType) -> None:
        """Read only ``projected_fields`` (paths into the physical row; length > 1 only if nested)."""


class SupportsLimitPushDown(ABC):
    @abstractmethod
    def apply_limit(self, limit: int) -> None:
        """Read at most ``limit`` rows; the planner keeps its own limit too, so this is a hint."""


class SupportsWatermarkPushDown(ABC):
    @abstractmethod
    def apply_watermark(self, strategy: WatermarkStrategy) -> None:
        """Generate watermarks inside the source (per Kafka partition, say) instead of after it."""


class SupportsPartitionPushDown(ABC):
    @abstractmethod
    def list_partitions(self) -> list[dict[str, str]] | None:
        """All partitions, or None when listing is impossible (the planner then prunes by filters)."""

    @abstractmethod
    def apply_partitions(self, partitions: list[dict[str, str]]) -> None:
        """Read only these partitions (each a ``{partition key: value}`` map)."""


class SupportsPartitioning(ABC):
    @abstractmethod
    def apply_static_partition(self, partition: dict[str, str]) -> None:
        """``INSERT INTO t PARTITION (k = 'v')``: the static part of the target partition."""

    def requires_partition_grouping(self, supports_sorting: bool) -> bool:
        """Whether rows should reach the sink grouped by partition (fewer open files)."""
        return False


class SupportsOverwriting(ABC):
    @abstractmethod
    def apply_overwrite(self, overwrite: bool) -> None:
        """``INSERT OVERWRITE``: replace existing data (of the written partitions) instead of appending."""


class SupportsReadingMetadata(ABC):
    @abstractmethod
    def list_readable_metadata(self) -> dict[str, DataType]:
        """Metadata keys and their types, in a stable order (``topic``, ``partition``, …)."""

    @abstractmethod
    def apply_readable_metadata(self, metadata_keys: list[str], produced_type: DataType) -> None:
        """Append these metadata fields to the produced row (after the physical fields), as Flink does."""


class SupportsWritingMetadata(ABC):
    @abstractmethod
    def list_writable_metadata(self) -> dict[str, DataType]: ...

    @abstractmethod
    def apply_writable_metadata(self, metadata_keys: list[str], consumed_type: DataType) -> None:
        """The sink receives these metadata fields appended to the physical fields."""
