"""Catalog objects: identifiers, tables, views and functions, as data.

These are what catalogs store and what compiled plans embed (under the ``ALL``/``SCHEMA`` strategies), so
each has a stable JSON form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planengine.ir.schema import ResolvedSchema
from planengine.ir.types import quote_identifier

DEFAULT_CATALOG = "default_catalog"
DEFAULT_DATABASE = "default_database"


@dataclass(frozen=True, order=True)
class ObjectIdentifier:
    catalog: str
    database: str
    name: str

    def __str__(self) -> str:
        """Flink's summary form: `cat`.`db`.`name`."""
        return ".".join(quote_identifier(p) for p in (self.catalog, self.database, self.name))

    def as_path(self) -> tuple[str, str, str]:
        return (self.catalog, self.database, self.name)

    @staticmethod
    def parse(text: str) -> ObjectIdentifier:
        """Inverse of ``str()``: three back-quoted parts separated by dots."""
        parts: list[str] = []
        i = 0
        while i < len(text):
            if text[i] == "`":
                j = i + 1
                buf = []
                while j < len(text):
                    if text[j] == "`":
                        if j + 1 < len(text) and text[j + 1] == "`":
                            buf.append("`")
                            j += 2
                            continue
                        break
                    buf.append(text[j])
                    j += 1
                parts.append("".join(buf))
                i = j + 2  # skip closing backtick and the dot
            else:
                j = text.find(".", i)
                j = len(text) if j < 0 else j
                parts.append(text[i:j])
                i = j + 1
        if len(parts) != 3:
            raise ValueError(f"not a full object identifier: {text!r}")
        return ObjectIdentifier(*parts)


@dataclass(frozen=True)
class CatalogTable:
    schema: ResolvedSchema
    options: tuple[tuple[str, str], ...]  # sorted by key; a tuple so tables stay hashable and immutable
    partition_keys: tuple[str, ...] = ()
    comment: str | None = None

    @property
    def options_dict(self) -> dict[str, str]:
        return dict(self.options)

    def with_options(self, options: dict[str, str]) -> CatalogTable:
        return CatalogTable(self.schema, tuple(sorted(options.items())), self.partition_keys, self.comment)

    def to_json(self, options: dict[str, str] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": self.schema.to_json()}
        if self.partition_keys:
            out["partitionKeys"] = list(self.partition_keys)
        opts = self.options_dict if options is None else options
        out["options"] = dict(sorted(opts.items()))
        if self.comment:
            out["comment"] = self.comment
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> CatalogTable:
        return CatalogTable(
            schema=ResolvedSchema.from_json(data["schema"]),
            options=tuple(sorted((data.get("options") or {}).items())),
            partition_keys=tuple(data.get("partitionKeys", [])),
            comment=data.get("comment"),
        )


@dataclass(frozen=True)
class TableRef:
    """A resolved table as a scan or sink sees it."""

    identifier: ObjectIdentifier
    table: CatalogTable
    temporary: bool = False
    # /*+ OPTIONS(...) */ dynamic options merged over the catalog options
    hint_options: tuple[tuple[str, str], ...] = ()
    inline: bool = False  # an anonymous/inline table, always written in full

    @property
    def options(self) -> dict[str, str]:
        merged = self.table.options_dict
        merged.update(dict(self.hint_options))
        return merged


@dataclass(frozen=True)
class CatalogView:
    query: str  # Flink SQL, fully qualified when stored
    schema: ResolvedSchema
    comment: str | None = None


@dataclass(frozen=True)
class CatalogFunction:
    class_name: str
    language: str = "PYTHON"


@dataclass(frozen=True)
class CatalogDatabase:
    comment: str | None = None
    properties: tuple[tuple[str, str], ...] = field(default=())
