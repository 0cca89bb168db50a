"""Resolved table schemas: columns (physical, computed, metadata), watermark and primary key.

A schema is *resolved*: every column has a concrete type, computed columns keep their expression as
Flink SQL text (so it can be written into a plan and re-planned identically), and the rowtime column's type
carries the ``*ROWTIME*`` marker. The JSON form is what plans and the file catalog store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from planengine.ir.types import DataType, RowField, parse_type, row

ColumnKind = Literal["physical", "computed", "metadata"]


@dataclass(frozen=True)
class Column:
    name: str
    type: DataType
    kind: ColumnKind = "physical"
    expression: str | None = None  # computed columns: Flink SQL text
    metadata_key: str | None = None  # metadata columns: key, when it differs from the name
    virtual: bool = False  # metadata columns: read-only (not written by sinks)
    comment: str | None = None

    @property
    def is_persisted(self) -> bool:
        """Whether a sink writes this column (physical, or non-virtual metadata)."""
        return self.kind == "physical" or (self.kind == "metadata" and not self.virtual)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "dataType": str(self.type)}
        if self.kind != "physical":
            out["kind"] = self.kind.upper()
        if self.expression is not None:
            out["expression"] = self.expression
        if self.metadata_key is not None:
            out["metadataKey"] = self.metadata_key
        if self.virtual:
            out["isVirtual"] = True
        if self.comment:
            out["comment"] = self.comment
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> Column:
        return Column(
            name=data["name"],
            type=parse_type(data["dataType"]),
            kind=data.get("kind", "PHYSICAL").lower(),
            expression=data.get("expression"),
            metadata_key=data.get("metadataKey"),
            virtual=bool(data.get("isVirtual", False)),
            comment=data.get("comment"),
        )


@dataclass(frozen=True)
class WatermarkSpec:
    rowtime_attribute: str
    expression: str  # Flink SQL text, e.g. "`ts` - INTERVAL '5' SECOND"

    def to_json(self) -> dict[str, Any]:
        return {"rowtimeAttribute": self.rowtime_attribute, "expression": self.expression}

    @staticmethod
    def from_json(data: dict[str, Any]) -> WatermarkSpec:
        return WatermarkSpec(data["rowtimeAttribute"], data["expression"])


@dataclass(frozen=True)
class PrimaryKey:
    name: str
    columns: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "columns": list(self.columns)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> PrimaryKey:
        return PrimaryKey(data["name"], tuple(data["columns"]))


@dataclass(frozen=True)
class ResolvedSchema:
    columns: tuple[Column, ...]
    watermark_specs: tuple[WatermarkSpec, ...] = field(default=())
    primary_key: PrimaryKey | None = None

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(name)

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def physical_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.kind == "physical")

    def row_type(self) -> DataType:
        """All columns, in declared order (what a scan of the table produces after computed columns)."""
        return row(*(RowField(c.name, c.type) for c in self.columns))

    def physical_row_type(self) -> DataType:
        return row(*(RowField(c.name, c.type.without_time_attribute()) for c in self.physical_columns))

    def persisted_row_type(self) -> DataType:
        """The columns a sink receives: physical plus writable metadata columns."""
        return row(*(RowField(c.name, c.type.without_time_attribute()) for c in self.columns if c.is_persisted))


    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": [c.to_json() for c in self.columns]}
        if self.watermark_specs:
            out["watermarkSpecs"] = [w.to_json() for w in self.watermark_specs]
        if self.primary_key is not None:
            out["primaryKey"] = self.primary_key.to_json()
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> ResolvedSchema:
        pk = data.get("primaryKey")
        return ResolvedSchema(
            columns=tuple(Column.from_json(c) for c in data["columns"]),
            watermark_specs=tuple(WatermarkSpec.from_json(w) for w in data.get("watermarkSpecs", [])),
            primary_key=PrimaryKey.from_json(pk) if pk else None,
        )
