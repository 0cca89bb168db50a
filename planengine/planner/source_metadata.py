"""METADATA columns of a source table: which metadata the scan asks its source for, and where each lands.

Flink reads a ``METADATA [FROM 'key']`` column by applying ``SupportsReadingMetadata`` to the source: the scan
produces the physical columns, then one field per metadata key the columns read, in the order the source lists
its readable metadata (``DynamicSourceUtils.pushMetadataProjection``), and a projection puts every column back
in its declared place, cast to its declared type. The compiled plan records the keys as a ``ReadingMetadata``
ability, so a restored plan asks the source for exactly the same fields (``connectors/restore.py``) without
re-planning. A source without the ability, or a key it does not offer, is refused at compile time with the
table and the column, not at run time.

>>> from planengine.ir.schema import Column, ResolvedSchema
>>> from planengine.ir.types import parse_type
>>> class Topic(SupportsReadingMetadata):
...     def list_readable_metadata(self): return {"topic": parse_type("STRING"), "offset": parse_type("BIGINT")}
...     def apply_readable_metadata(self, keys, produced): self.keys = keys
>>> schema = ResolvedSchema((Column("v", parse_type("INT")), Column("o", parse_type("BIGINT"), "metadata",
...                         metadata_key="offset"), Column("topic", parse_type("STRING"), "metadata")))
>>> read = reading_metadata("t", schema, Topic())
>>> str(read.produced_type), read.spec.metadata_keys, read.positions
('ROW<`v` INT, `topic` STRING, `o` BIGINT>', ('topic', 'offset'), {'v': 0, 'o': 2, 'topic': 1})
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planengine.connectors.abilities import SupportsReadingMetadata
from planengine.errors import ValidationError
from planengine.exec.specs import ReadingMetadataSpec
from planengine.ir.types import DataType, RowField, row


@dataclass(frozen=True)
class MetadataRead:
    """The scan's produced row (physical columns, then the metadata keys), the ability that asks the source for
    it, and each non-computed column's position in that row."""

    produced_type: DataType
    spec: ReadingMetadataSpec
    positions: dict[str, int]


def metadata_key(column: Any) -> str:
    """``METADATA FROM 'key'`` reads ``key``; a bare ``METADATA`` column reads the key of its own name."""
    return str(column.metadata_key or column.name)


def reading_metadata(identifier: object, schema: Any, source: Any) -> MetadataRead | None:
    """What the scan of a table with METADATA columns reads; None when the table declares none."""
    columns = [c for c in schema.columns if c.kind == "metadata"]
    if not columns:
        return None
    if not isinstance(source, SupportsReadingMetadata):
        raise ValidationError(
            f"table {identifier}: column `{columns[0].name}` is a METADATA column, but its connector provides no "
            "metadata", hint="remove the METADATA column, or compute the value from the table's physical columns")
    readable = source.list_readable_metadata()
    for column in columns:
        if metadata_key(column) not in readable:
            raise ValidationError(
                f"table {identifier}: column `{column.name}` reads metadata '{metadata_key(column)}', which its "
                "connector does not provide",
                hint=f"readable metadata: {', '.join(readable) or 'none'}; write METADATA FROM '<key>'")
    wanted = {metadata_key(c) for c in columns}
    keys = [k for k in readable if k in wanted]  # the source's order, as Flink asks for them
    physical = [c for c in schema.columns if c.kind == "physical"]
    named = {k: next(c.name for c in columns if metadata_key(c) == k) for k in keys}
    produced = row(*(RowField(c.name, c.type.without_time_attribute()) for c in physical),
                   *(RowField(named[k], readable[k]) for k in keys))
    positions = {c.name: i for i, c in enumerate(physical)}
    positions.update({c.name: len(physical) + keys.index(metadata_key(c)) for c in columns})
    return MetadataRead(produced, ReadingMetadataSpec(tuple(keys), produced), positions)
