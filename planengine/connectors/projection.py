"""Bookkeeping shared by sources that read a subset of their physical columns (and maybe metadata).

Projection indices index the table's *physical* row; metadata fields (if any) are appended after the
projected physical fields, as in Flink. Sources keep one ``ProducedRow`` and ask it which table column a
produced field is, which is what filter push-down needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planengine.connectors.abilities import SupportsProjectionPushDown
from planengine.errors import ValidationError
from planengine.ir.types import DataType


@dataclass
class ProducedRow:
    physical_type: DataType
    projection: list[int] | None = None  # physical indices read, in produced order; None = all
    metadata_keys: list[str] = field(default_factory=list)
    produced_type: DataType | None = None

    def __post_init__(self) -> None:
        if self.produced_type is None:
            self.produced_type = self.physical_type

    @property
    def physical_indices(self) -> list[int]:
        return list(range(len(self.physical_type.fields))) if self.projection is None else list(self.projection)

    @property
    def physical_names(self) -> list[str]:
        """Names of the physical columns read, in produced order."""
        names = self.physical_type.field_names()
        return [names[i] for i in self.physical_indices]

    def physical_index_of(self, produced_index: int) -> int | None:
        """The table's physical column behind a produced field, or None for a metadata field."""
        indices = self.physical_indices
        return indices[produced_index] if produced_index < len(indices) else None

    def project(self, projected_fields: list[list[int]], produced_type: DataType) -> None:
        nested = [p for p in projected_fields if len(p) != 1]
        if nested:
            raise ValidationError(f"nested projection {nested} was pushed into a source that reads top-level "
                                  "columns only", hint="this is a planner bug: check supports_nested_projection()")
        base = self.physical_indices
        # Indices refer to the physical row produced so far (restore replays specs in their recorded order).
        bad = [p[0] for p in projected_fields if not 0 <= p[0] < len(base)]
        if bad:
            raise ValidationError(f"projection indices {bad} are out of range for {self.physical_type}")
        self.projection = [base[p[0]] for p in projected_fields]
        self.produced_type = produced_type

    def with_metadata(self, keys: list[str], produced_type: DataType) -> None:
        self.metadata_keys = list(keys)
        self.produced_type = produced_type


class TopLevelProjection(SupportsProjectionPushDown):
    """Projection push-down for sources holding a ``ProducedRow`` in ``self.row``."""

    row: ProducedRow

    def supports_nested_projection(self) -> bool:
        return False

    def apply_projection(self, projected_fields: list[list[int]], produced_type: DataType) -> None:
        self.row.project(projected_fields, produced_type)
