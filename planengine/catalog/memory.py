"""A catalog kept in process memory: Flink's ``GenericInMemoryCatalog``.

It backs ``default_catalog`` and ``CREATE CATALOG … WITH ('type' = 'memory')``. Nothing survives the
process, which is what a script-scoped catalog wants; use the file catalog for shared definitions.
"""

from __future__ import annotations

from planengine.catalog.base import Catalog, CatalogObject, ObjectKind
from planengine.catalog.objects import DEFAULT_CATALOG, DEFAULT_DATABASE, CatalogDatabase


class InMemoryCatalog(Catalog):
    def __init__(self, name: str = DEFAULT_CATALOG, default_database: str = DEFAULT_DATABASE):
        super().__init__(name, default_database)
        self._databases: dict[str, CatalogDatabase] = {}
        self._objects: dict[str, dict[ObjectKind, dict[str, CatalogObject]]] = {}
        self._store_database(default_database, CatalogDatabase())

    def _database_names(self) -> list[str]:
        return list(self._databases)

    def _load_database(self, name: str) -> CatalogDatabase | None:
        return self._databases.get(name)

    def _store_database(self, name: str, database: CatalogDatabase) -> None:
        self._databases[name] = database
        self._objects.setdefault(name, {"table": {}, "view": {}, "function": {}})

    def _delete_database(self, name: str) -> None:
        del self._databases[name]
        del self._objects[name]

    def _list_objects(self, database: str, kind: ObjectKind) -> list[str]:
        return list(self._objects.get(database, {}).get(kind, {}))

    def _load_object(self, database: str, kind: ObjectKind, name: str) -> CatalogObject | None:
        return self._objects.get(database, {}).get(kind, {}).get(name)

    def _store_object(self, database: str, kind: ObjectKind, name: str, obj: CatalogObject) -> None:
        self._objects[database][kind][name] = obj

    def _delete_object(self, database: str, kind: ObjectKind, name: str) -> None:
        del self._objects[database][kind][name]
