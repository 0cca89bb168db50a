"""The catalog interface: databases holding tables, views and functions.

``Catalog`` implements every public operation once — argument checks, existence rules, the error
messages — on top of a handful of abstract storage hooks (``_list_objects``, ``_load_object``, …). A
storage backend (memory, files) then only decides *where* objects live, so all catalogs behave and fail
the same way. This mirrors Flink's ``Catalog`` API with ``(database, name)`` paths.

Flink rules kept here: tables and views share one namespace per database; ``list_tables`` lists tables
*and* views (``list_views`` only views); function names are case-insensitive (stored lower-case); a
catalog's default database cannot be dropped.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Literal

from planengine.catalog import messages
from planengine.catalog.objects import (
    CatalogDatabase,
    CatalogFunction,
    CatalogTable,
    CatalogView,
    ObjectIdentifier,
)
from planengine.errors import CatalogError
from planengine.ir.types import quote_identifier

ObjectPath = tuple[str, str]  # (database, name)
ObjectKind = Literal["table", "view", "function"]
CatalogRelation = CatalogTable | CatalogView
CatalogObject = CatalogTable | CatalogView | CatalogFunction


def kind_of(obj: CatalogObject) -> ObjectKind:
    if isinstance(obj, CatalogTable):
        return "table"
    if isinstance(obj, CatalogView):
        return "view"
    if isinstance(obj, CatalogFunction):
        return "function"
    raise TypeError(f"not a catalog object: {type(obj).__name__}")


def normalize_function_name(name: str) -> str:
    """Flink resolves function names case-insensitively; one spelling is stored."""
    return name.lower()


class Catalog(ABC):
    """A named namespace of databases. Its name is the one it is registered under in the manager."""

    def __init__(self, name: str, default_database: str):
        self.name = name
        self.default_database = default_database

    # --- storage hooks: the only thing a backend implements ------------------------------------
    @abstractmethod
    def _database_names(self) -> list[str]: ...

    @abstractmethod
    def _load_database(self, name: str) -> CatalogDatabase | None: ...

    @abstractmethod
    def _store_database(self, name: str, database: CatalogDatabase) -> None: ...

    @abstractmethod
    def _delete_database(self, name: str) -> None:
        """Remove the database and everything in it (the caller has checked CASCADE)."""

    @abstractmethod
    def _list_objects(self, database: str, kind: ObjectKind) -> list[str]: ...

    @abstractmethod
    def _load_object(self, database: str, kind: ObjectKind, name: str) -> CatalogObject | None: ...

    @abstractmethod
    def _store_object(self, database: str, kind: ObjectKind, name: str, obj: CatalogObject) -> None:
        """Create or replace; the caller has checked existence and kind."""

    @abstractmethod
    def _delete_object(self, database: str, kind: ObjectKind, name: str) -> None: ...

    def _ensure_writable(self, action: str) -> None:  # noqa: B027 - optional hook, writable by default
        """Raise a CatalogError if this catalog cannot be changed; ``action`` names the attempted change."""

    # --- identifiers -----------------------------------------------------------------------------
    def identifier(self, path: ObjectPath) -> ObjectIdentifier:
        database, name = _check_path(path)
        return ObjectIdentifier(self.name, database, name)

    # --- databases -------------------------------------------------------------------------------
    def list_databases(self) -> list[str]:
        return sorted(self._database_names())

    def database_exists(self, name: str) -> bool:
        return name in self._database_names()

    def get_database(self, name: str) -> CatalogDatabase:
        database = self._load_database(name)
        if database is None:
            raise messages.database_not_found(self.name, name, self._database_names())
        return database

    def create_database(
        self, name: str, database: CatalogDatabase | None = None, ignore_if_exists: bool = False
    ) -> None:
        self._ensure_writable(f"CREATE DATABASE {quote_identifier(name)}")
        if not name:
            raise CatalogError("a database name cannot be empty")
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise CatalogError(
                f"database {quote_identifier(name)} already exists in catalog {quote_identifier(self.name)}",
                hint="use CREATE DATABASE IF NOT EXISTS, or DROP DATABASE first",
            )
        self._store_database(name, database or CatalogDatabase())

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        self._ensure_writable(f"DROP DATABASE {quote_identifier(name)}")
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise messages.database_not_found(self.name, name, self._database_names())
        if name == self.default_database:
            raise CatalogError(
                f"cannot drop {quote_identifier(name)}: it is the default database of catalog "
                f"{quote_identifier(self.name)}",
                hint="drop the objects in it instead, or configure another 'default-database'",
            )
        contents = {kind: self._list_objects(name, kind) for kind in ("table", "view", "function")}
        if any(contents.values()) and not cascade:
            counts = ", ".join(f"{len(names)} {kind}(s)" for kind, names in contents.items() if names)
            raise CatalogError(
                f"database {quote_identifier(name)} in catalog {quote_identifier(self.name)} is not empty "
                f"({counts})",
                hint=f"drop its objects first, or use DROP DATABASE {name} CASCADE",
            )
        self._delete_database(name)

    # --- tables and views ------------------------------------------------------------------------
    def list_tables(self, database: str) -> list[str]:
        """Tables and views (Flink's ``listTables``), sorted."""
        self._require_database(database)
        return sorted({*self._list_objects(database, "table"), *self._list_objects(database, "view")})

    def list_views(self, database: str) -> list[str]:
        self._require_database(database)
        return sorted(self._list_objects(database, "view"))

    def get_table(self, path: ObjectPath) -> CatalogRelation:
        """The table or view at ``path``; CatalogError (with a did-you-mean) if there is none."""
        found = self.find_table(path)
        if found is None:
            database, _ = path
            raise messages.object_not_found("table or view", self.identifier(path), self.list_tables(database))
        return found

    def find_table(self, path: ObjectPath) -> CatalogRelation | None:
        """Like ``get_table`` but None when the database exists and the object does not."""
        database, name = _check_path(path)
        self._require_database(database)
        for kind in ("table", "view"):
            obj = self._load_object(database, kind, name)
            if obj is not None:
                return obj  # type: ignore[return-value]
        return None

    def table_exists(self, path: ObjectPath) -> bool:
        database, name = _check_path(path)
        if not self.database_exists(database):
            return False
        return self._relation_kind(database, name) is not None

    def create_table(self, path: ObjectPath, obj: CatalogRelation, ignore_if_exists: bool = False) -> None:
        """Create a table or a view (``obj`` decides which)."""
        kind = kind_of(obj)
        if kind == "function":
            raise TypeError("use create_function for functions")
        identifier = self.identifier(path)
        self._ensure_writable(f"CREATE {kind.upper()} {identifier}")
        self._require_database(identifier.database)
        existing = self._relation_kind(identifier.database, identifier.name)
        if existing is not None:
            if ignore_if_exists:
                return
            if existing != kind:
                raise messages.wrong_kind(identifier, existing, kind, "DROP")
            raise messages.already_exists(kind, identifier)
        self._store_object(identifier.database, kind, identifier.name, obj)

    def alter_table(self, path: ObjectPath, obj: CatalogRelation, ignore_if_not_exists: bool = False) -> None:
        """Replace a table (or view) by a new definition of the same kind."""
        kind = kind_of(obj)
        identifier = self.identifier(path)
        self._ensure_writable(f"ALTER {kind.upper()} {identifier}")
        self._require_database(identifier.database)
        existing = self._relation_kind(identifier.database, identifier.name)
        if existing is None:
            if ignore_if_not_exists:
                return
            raise messages.object_not_found(kind, identifier, self.list_tables(identifier.database))
        if existing != kind:
            raise CatalogError(
                f"cannot alter {identifier}: it is a {existing} and the new definition is a {kind}",
                hint=f"DROP {existing.upper()} it and CREATE {kind.upper()} instead",
            )
        self._store_object(identifier.database, kind, identifier.name, obj)

    def drop_table(self, path: ObjectPath, ignore_if_not_exists: bool = False) -> None:
        """Drop a table or a view (the manager checks DROP TABLE vs DROP VIEW)."""
        identifier = self.identifier(path)
        self._ensure_writable(f"DROP TABLE {identifier}")
        if not self.database_exists(identifier.database):
            if ignore_if_not_exists:
                return
            raise messages.database_not_found(self.name, identifier.database, self._database_names())
        existing = self._relation_kind(identifier.database, identifier.name)
        if existing is None:
            if ignore_if_not_exists:
                return
            raise messages.object_not_found("table or view", identifier, self.list_tables(identifier.database))
        self._delete_object(identifier.database, existing, identifier.name)

    # --- functions -------------------------------------------------------------------------------
    def list_functions(self, database: str) -> list[str]:
        self._require_database(database)
        return sorted(self._list_objects(database, "function"))

    def get_function(self, path: ObjectPath) -> CatalogFunction:
        found = self.find_function(path)
        if found is None:
            database, _ = path
            raise messages.object_not_found("function", self._function_identifier(path), self.list_functions(database))
        return found

    def find_function(self, path: ObjectPath) -> CatalogFunction | None:
        identifier = self._function_identifier(path)
        self._require_database(identifier.database)
        return self._load_object(identifier.database, "function", identifier.name)  # type: ignore[return-value]

    def function_exists(self, path: ObjectPath) -> bool:
        identifier = self._function_identifier(path)
        if not self.database_exists(identifier.database):
            return False
        return identifier.name in self._list_objects(identifier.database, "function")

    def create_function(self, path: ObjectPath, function: CatalogFunction, ignore_if_exists: bool = False) -> None:
        identifier = self._function_identifier(path)
        self._ensure_writable(f"CREATE FUNCTION {identifier}")
        self._require_database(identifier.database)
        if identifier.name in self._list_objects(identifier.database, "function"):
            if ignore_if_exists:
                return
            raise messages.already_exists("function", identifier)
        self._store_object(identifier.database, "function", identifier.name, function)

    def drop_function(self, path: ObjectPath, ignore_if_not_exists: bool = False) -> None:
        identifier = self._function_identifier(path)
        self._ensure_writable(f"DROP FUNCTION {identifier}")
        if not self.function_exists(path):
            if ignore_if_not_exists:
                return
            self._require_database(identifier.database)
            raise messages.object_not_found("function", identifier, self.list_functions(identifier.database))
        self._delete_object(identifier.database, "function", identifier.name)

    # --- helpers ---------------------------------------------------------------------------------
    def _require_database(self, database: str) -> None:
        if not self.database_exists(database):
            raise messages.database_not_found(self.name, database, self._database_names())

    def _relation_kind(self, database: str, name: str) -> ObjectKind | None:
        for kind in ("table", "view"):
            if name in self._list_objects(database, kind):
                return kind  # type: ignore[return-value]
        return None

    def _function_identifier(self, path: ObjectPath) -> ObjectIdentifier:
        database, name = _check_path(path)
        return ObjectIdentifier(self.name, database, normalize_function_name(name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, default_database={self.default_database!r})"


def _check_path(path: ObjectPath) -> ObjectPath:
    if not (isinstance(path, tuple) and len(path) == 2 and all(isinstance(p, str) and p for p in path)):
        raise CatalogError(
            f"not an object path: {path!r}", hint="a catalog addresses objects as (database, name), both non-empty"
        )
    return path
