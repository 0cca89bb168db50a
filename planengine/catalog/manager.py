"""The catalog manager: registered catalogs, the current catalog and database, and temporary objects.

This is the one place names written in SQL become full identifiers (``qualify``), and where Flink's
lookup rules live:

* a temporary table, view or function *shadows* a permanent object with the same identifier; the
  permanent one cannot be dropped while shadowed (drop the temporary one first);
* temporary objects exist only in this manager (never in a catalog, never in a plan beyond their
  identifier), so they must be re-declared by every script that uses them;
* functions resolve in Flink's order: temporary system function → built-in (checked by the planner before
  it asks here) → temporary catalog function → catalog function; function names are case-insensitive.

A script starts in ``default_catalog.default_database``, an in-memory catalog.

>>> from planengine.catalog.objects import CatalogFunction
>>> m = CatalogManager()
>>> str(m.qualify(("orders",)))
'`default_catalog`.`default_database`.`orders`'
>>> m.create_function("Shout", CatalogFunction("udfs.Shout"), temporary=True, system=True)
>>> m.resolve_function(("SHOUT",))
FunctionLookup(kind='system', identifier='shout', function=CatalogFunction(class_name='udfs.Shout', language='PYTHON'))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from planengine.catalog import messages
from planengine.catalog.base import Catalog, CatalogRelation, kind_of, normalize_function_name
from planengine.catalog.factories import create_catalog
from planengine.catalog.memory import InMemoryCatalog
from planengine.catalog.objects import (
    CatalogDatabase,
    CatalogFunction,
    CatalogTable,
    CatalogView,
    ObjectIdentifier,
)
from planengine.errors import CatalogError
from planengine.ir.types import quote_identifier

IdentifierLike = ObjectIdentifier | Sequence[str] | str  # a full identifier, or name parts as written


@dataclass(frozen=True)
class ResolvedTableEntry:
    """A table or view found by the manager, with the identifier it was found under."""

    identifier: ObjectIdentifier
    object: CatalogRelation
    is_temporary: bool

    @property
    def is_view(self) -> bool:
        return isinstance(self.object, CatalogView)


class FunctionLookup(NamedTuple):
    """How a function name resolved: a temporary system function (by plain name) or a catalog function."""

    kind: Literal["system", "catalog"]
    identifier: ObjectIdentifier | str
    function: CatalogFunction


class CatalogManager:
    def __init__(self, default_catalog: Catalog | None = None):
        catalog = default_catalog if default_catalog is not None else InMemoryCatalog()
        self._catalogs: dict[str, Catalog] = {}
        self.register_catalog(catalog.name, catalog)
        self._current_catalog = catalog.name
        self._current_database = catalog.default_database
        self._temporary_relations: dict[ObjectIdentifier, CatalogRelation] = {}
        self._temporary_functions: dict[ObjectIdentifier, CatalogFunction] = {}
        self._temporary_system_functions: dict[str, CatalogFunction] = {}

    # --- catalogs ----------------------------------------------------------------------------------
    def register_catalog(self, name: str, catalog: Catalog, ignore_if_exists: bool = False) -> None:
        """Register ``catalog`` under ``name`` (which becomes its name in identifiers and messages)."""
        if not name:
            raise CatalogError("a catalog name cannot be empty")
        if name in self._catalogs:
            if ignore_if_exists:
                return
            raise _catalog_exists(name)
        catalog.name = name
        self._catalogs[name] = catalog

    def create_catalog_from_options(
        self, name: str, options: Mapping[str, str], ignore_if_exists: bool = False
    ) -> Catalog:
        """``CREATE CATALOG name WITH (options)``: ``'type'`` is ``memory`` or ``file`` (see factories)."""
        if name in self._catalogs:
            if ignore_if_exists:
                return self._catalogs[name]
            raise _catalog_exists(name)
        catalog = create_catalog(name, options)
        self.register_catalog(name, catalog)
        return catalog

    def drop_catalog(self, name: str, if_exists: bool = False) -> None:
        if name not in self._catalogs:
            if if_exists:
                return
            raise messages.catalog_not_found(name, self._catalogs)
        if name == self._current_catalog:
            raise CatalogError(
                f"cannot drop catalog {quote_identifier(name)}: it is the current catalog",
                hint="USE CATALOG another one first",
            )
        del self._catalogs[name]

    def get_catalog(self, name: str) -> Catalog:
        catalog = self._catalogs.get(name)
        if catalog is None:
            raise messages.catalog_not_found(name, self._catalogs)
        return catalog

    def list_catalogs(self) -> list[str]:
        return sorted(self._catalogs)

    # --- current catalog and database -------------------------------------------------------------
    @property
    def current_catalog(self) -> str:
        return self._current_catalog

    @property
    def current_database(self) -> str:
        return self._current_database

    def use_catalog(self, name: str) -> None:
        """``USE CATALOG c``: the current database becomes the catalog's default database (as in Flink)."""
        catalog = self.get_catalog(name)
        self._current_catalog = name
        self._current_database = catalog.default_database

    def use_database(self, parts: Sequence[str] | str) -> None:
        """``USE db`` or ``USE cat.db``."""
        catalog_name, database = self._database_path(parts)
        catalog = self.get_catalog(catalog_name)
        if not catalog.database_exists(database):
            raise messages.database_not_found(catalog_name, database, catalog.list_databases())
        self._current_catalog = catalog_name
        self._current_database = database

    def qualify(self, parts: Sequence[str]) -> ObjectIdentifier:
        """Complete ``name``, ``db.name`` or ``cat.db.name`` with the current catalog and database."""
        parts = tuple(parts)
        if not 1 <= len(parts) <= 3 or not all(isinstance(p, str) and p for p in parts):
            written = ".".join(quote_identifier(str(p)) for p in parts) or "(empty)"
            raise CatalogError(
                f"cannot resolve identifier {written}: expected 1 to 3 non-empty parts",
                hint="write name, database.name or catalog.database.name",
            )
        if len(parts) == 3:
            return ObjectIdentifier(*parts)
        if len(parts) == 2:
            return ObjectIdentifier(self._current_catalog, parts[0], parts[1])
        return ObjectIdentifier(self._current_catalog, self._current_database, parts[0])

    # --- databases ---------------------------------------------------------------------------------
    def list_databases(self, catalog: str | None = None) -> list[str]:
        return self.get_catalog(catalog or self._current_catalog).list_databases()

    def create_database(
        self, parts: Sequence[str] | str, database: CatalogDatabase | None = None, if_not_exists: bool = False
    ) -> None:
        catalog_name, name = self._database_path(parts)
        self.get_catalog(catalog_name).create_database(name, database, ignore_if_exists=if_not_exists)

    def drop_database(self, parts: Sequence[str] | str, if_exists: bool = False, cascade: bool = False) -> None:
        catalog_name, name = self._database_path(parts)
        if (catalog_name, name) == (self._current_catalog, self._current_database):
            raise CatalogError(
                f"cannot drop database {quote_identifier(name)}: it is the current database",
                hint="USE another database first",
            )
        catalog = self._catalogs.get(catalog_name)
        if catalog is None and if_exists:
            return
        self.get_catalog(catalog_name).drop_database(name, ignore_if_not_exists=if_exists, cascade=cascade)

    # --- tables and views --------------------------------------------------------------------------
    def create_table(
        self, identifier: IdentifierLike, table: CatalogTable, temporary: bool = False, ignore_if_exists: bool = False
    ) -> None:
        if not isinstance(table, CatalogTable):
            raise TypeError("create_table takes a CatalogTable; use create_view for views")
        self._create_relation(self._identifier(identifier), table, temporary, ignore_if_exists)

    def create_view(
        self, identifier: IdentifierLike, view: CatalogView, temporary: bool = False, ignore_if_exists: bool = False
    ) -> None:
        if not isinstance(view, CatalogView):
            raise TypeError("create_view takes a CatalogView; use create_table for tables")
        self._create_relation(self._identifier(identifier), view, temporary, ignore_if_exists)

    def get_table(self, identifier: IdentifierLike) -> ResolvedTableEntry:
        """The temporary object if there is one, else the catalog's; CatalogError with a did-you-mean."""
        ident = self._identifier(identifier)
        entry = self.find_table(ident)
        if entry is not None:
            return entry
        catalog = self.get_catalog(ident.catalog)
        if not catalog.database_exists(ident.database):
            raise messages.database_not_found(ident.catalog, ident.database, catalog.list_databases())
        raise messages.object_not_found("table or view", ident, self._relation_names(ident.catalog, ident.database))

    def find_table(self, identifier: IdentifierLike) -> ResolvedTableEntry | None:
        """Like ``get_table`` but None when nothing (or no such catalog or database) is there."""
        ident = self._identifier(identifier)
        temporary = self._temporary_relations.get(ident)
        if temporary is not None:
            return ResolvedTableEntry(ident, temporary, True)
        catalog = self._catalogs.get(ident.catalog)
        if catalog is None or not catalog.database_exists(ident.database):
            return None
        found = catalog.find_table((ident.database, ident.name))
        return None if found is None else ResolvedTableEntry(ident, found, False)

    def table_exists(self, identifier: IdentifierLike) -> bool:
        return self.find_table(identifier) is not None

    def is_temporary(self, identifier: IdentifierLike) -> bool:
        """Whether a temporary table, view or catalog function has this identifier."""
        ident = self._identifier(identifier)
        return ident in self._temporary_relations or self._function_identifier(ident) in self._temporary_functions

    def drop_table(self, identifier: IdentifierLike, temporary: bool = False, if_exists: bool = False) -> None:
        self._drop_relation(self._identifier(identifier), "table", temporary, if_exists)

    def alter_table(self, identifier: IdentifierLike, table: CatalogTable) -> None:
        """Replace the definition of the table the identifier resolves to (the temporary one if it is shadowed)."""
        ident = self._identifier(identifier)
        if ident in self._temporary_relations:
            if isinstance(self._temporary_relations[ident], CatalogView):
                raise messages.wrong_kind(ident, "temporary view", "table", "ALTER")
            self._temporary_relations[ident] = table
            return
        self.get_catalog(ident.catalog).alter_table((ident.database, ident.name), table)

    def rename_table(self, identifier: IdentifierLike, new_name: IdentifierLike) -> ObjectIdentifier:
        """``ALTER TABLE t RENAME TO u``: the same table under a new name in the same catalog."""
        ident, target = self._identifier(identifier), self._identifier(new_name)
        entry = self.get_table(ident)
        if entry.is_view:
            raise messages.wrong_kind(ident, "view", "table", "ALTER TABLE")
        if target.catalog != ident.catalog:
            raise CatalogError(f"cannot rename {ident} to {target}: a table cannot move to another catalog",
                               hint="create the table in the other catalog and drop this one")
        if self.find_table(target) is not None:
            raise CatalogError(f"cannot rename {ident} to {target}: a table or view of that name exists",
                               hint="pick another name, or drop the existing one first")
        table = entry.object
        assert isinstance(table, CatalogTable)
        if entry.is_temporary:
            del self._temporary_relations[ident]
            self._temporary_relations[target] = table
        else:
            catalog = self.get_catalog(ident.catalog)
            catalog.create_table((target.database, target.name), table)
            catalog.drop_table((ident.database, ident.name))
        return target

    def drop_view(self, identifier: IdentifierLike, temporary: bool = False, if_exists: bool = False) -> None:
        self._drop_relation(self._identifier(identifier), "view", temporary, if_exists)

    def list_tables(self, catalog: str | None = None, database: str | None = None) -> list[str]:
        """``SHOW TABLES``: tables and views, temporary and permanent, of one database (default: current)."""
        catalog_name, database_name = self._listing_path(catalog, database)
        return sorted(self._relation_names(catalog_name, database_name))

    def list_views(self, catalog: str | None = None, database: str | None = None) -> list[str]:
        catalog_name, database_name = self._listing_path(catalog, database)
        permanent = self.get_catalog(catalog_name).list_views(database_name)
        temporary = [
            i.name for i, obj in self._temporary_relations.items()
            if (i.catalog, i.database) == (catalog_name, database_name) and isinstance(obj, CatalogView)
        ]
        return sorted({*permanent, *temporary})

    # --- functions ---------------------------------------------------------------------------------
    def create_function(
        self,
        identifier: IdentifierLike,
        function: CatalogFunction,
        temporary: bool = False,
        system: bool = False,
        ignore_if_exists: bool = False,
    ) -> None:
        """``CREATE [TEMPORARY [SYSTEM]] FUNCTION``; a system function is addressed by its plain name."""
        if system:
            if not temporary:
                raise CatalogError("system functions are always temporary",
                                   hint="write CREATE TEMPORARY SYSTEM FUNCTION")
            name = self._system_function_name(identifier)
            if name in self._temporary_system_functions:
                if ignore_if_exists:
                    return
                raise CatalogError(
                    f"temporary system function {quote_identifier(name)} already exists",
                    hint="use CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS, or DROP TEMPORARY SYSTEM FUNCTION first",
                )
            self._temporary_system_functions[name] = function
            return
        ident = self._function_identifier(self._identifier(identifier))
        catalog = self.get_catalog(ident.catalog)
        if not temporary:
            catalog.create_function((ident.database, ident.name), function, ignore_if_exists)
            return
        if not catalog.database_exists(ident.database):
            raise messages.database_not_found(ident.catalog, ident.database, catalog.list_databases())
        if ident in self._temporary_functions:
            if ignore_if_exists:
                return
            raise messages.already_exists("temporary function", ident)
        self._temporary_functions[ident] = function

    def get_system_function(self, name: str) -> CatalogFunction | None:
        return self._temporary_system_functions.get(normalize_function_name(name))

    def resolve_function(self, parts: Sequence[str]) -> FunctionLookup | None:
        """Flink's order: temporary system, (built-ins: the planner's job), temporary catalog, catalog."""
        parts = tuple(parts)
        if len(parts) == 1:
            system = self.get_system_function(parts[0])
            if system is not None:
                return FunctionLookup("system", normalize_function_name(parts[0]), system)
        ident = self._function_identifier(self.qualify(parts))
        temporary = self._temporary_functions.get(ident)
        if temporary is not None:
            return FunctionLookup("catalog", ident, temporary)
        catalog = self._catalogs.get(ident.catalog)
        if catalog is None or not catalog.database_exists(ident.database):
            return None
        found = catalog.find_function((ident.database, ident.name))
        return None if found is None else FunctionLookup("catalog", ident, found)

    def is_temporary_function(self, identifier: ObjectIdentifier) -> bool:
        """Whether a catalog function identifier names a temporary function (persisted in plans by name only)."""
        return self._function_identifier(identifier) in self._temporary_functions

    def drop_function(self, identifier: IdentifierLike, temporary: bool = False, if_exists: bool = False) -> None:
        ident = self._function_identifier(self._identifier(identifier))
        if temporary:
            if ident in self._temporary_functions:
                del self._temporary_functions[ident]
            elif not if_exists:
                raise CatalogError(
                    f"temporary function {ident} does not exist",
                    hint="DROP FUNCTION without TEMPORARY drops a catalog function; "
                    "DROP TEMPORARY SYSTEM FUNCTION a system function",
                )
            return
        if ident in self._temporary_functions:
            raise self._shadowed("function", ident)
        catalog = self._catalogs.get(ident.catalog)
        if if_exists and (catalog is None or not catalog.database_exists(ident.database)):
            return
        self.get_catalog(ident.catalog).drop_function((ident.database, ident.name), ignore_if_not_exists=if_exists)

    def drop_system_function(self, name: str, if_exists: bool = False) -> None:
        key = normalize_function_name(name)
        if key in self._temporary_system_functions:
            del self._temporary_system_functions[key]
        elif not if_exists:
            raise CatalogError(
                f"temporary system function {quote_identifier(key)} does not exist",
                hint=f"existing: {messages.listing(self._temporary_system_functions)}",
            )

    def list_functions(self, catalog: str | None = None, database: str | None = None) -> list[str]:
        """User-defined functions visible here: temporary system ones, plus the database's (not built-ins)."""
        catalog_name, database_name = self._listing_path(catalog, database)
        temporary = [
            i.name for i in self._temporary_functions if (i.catalog, i.database) == (catalog_name, database_name)
        ]
        permanent = self.get_catalog(catalog_name).list_functions(database_name)
        return sorted({*self._temporary_system_functions, *temporary, *permanent})

    # --- internals ---------------------------------------------------------------------------------
    def _identifier(self, identifier: IdentifierLike) -> ObjectIdentifier:
        if isinstance(identifier, ObjectIdentifier):
            return identifier
        if isinstance(identifier, str):
            return self.qualify((identifier,))
        return self.qualify(tuple(identifier))

    @staticmethod
    def _function_identifier(ident: ObjectIdentifier) -> ObjectIdentifier:
        return ObjectIdentifier(ident.catalog, ident.database, normalize_function_name(ident.name))

    @staticmethod
    def _system_function_name(identifier: IdentifierLike) -> str:
        if isinstance(identifier, ObjectIdentifier) or (not isinstance(identifier, str) and len(identifier) != 1):
            raise CatalogError(
                f"a system function has a plain name, not {identifier}",
                hint="write CREATE TEMPORARY SYSTEM FUNCTION name AS '…', or drop SYSTEM to create it in a database",
            )
        name = identifier if isinstance(identifier, str) else identifier[0]
        return normalize_function_name(name)

    def _database_path(self, parts: Sequence[str] | str) -> tuple[str, str]:
        parts = (parts,) if isinstance(parts, str) else tuple(parts)
        if len(parts) == 1 and parts[0]:
            return self._current_catalog, parts[0]
        if len(parts) == 2 and all(parts):
            return parts[0], parts[1]
        raise CatalogError(f"not a database name: {'.'.join(parts) or '(empty)'}",
                           hint="write database or catalog.database")

    def _listing_path(self, catalog: str | None, database: str | None) -> tuple[str, str]:
        if catalog is None:
            return self._current_catalog, database or self._current_database
        return catalog, database or self.get_catalog(catalog).default_database

    def _relation_names(self, catalog_name: str, database: str) -> set[str]:
        permanent = self.get_catalog(catalog_name).list_tables(database)
        temporary = [i.name for i in self._temporary_relations if (i.catalog, i.database) == (catalog_name, database)]
        return {*permanent, *temporary}

    def _create_relation(
        self, ident: ObjectIdentifier, obj: CatalogRelation, temporary: bool, ignore_if_exists: bool
    ) -> None:
        catalog = self.get_catalog(ident.catalog)
        if not temporary:
            catalog.create_table((ident.database, ident.name), obj, ignore_if_exists)
            return
        if not catalog.database_exists(ident.database):
            raise messages.database_not_found(ident.catalog, ident.database, catalog.list_databases())
        existing = self._temporary_relations.get(ident)
        if existing is not None:
            if ignore_if_exists:
                return
            kind = kind_of(obj)
            if kind_of(existing) != kind:
                raise messages.wrong_kind(ident, f"temporary {kind_of(existing)}", kind, "DROP TEMPORARY")
            raise messages.already_exists(f"temporary {kind}", ident)
        self._temporary_relations[ident] = obj

    def _drop_relation(self, ident: ObjectIdentifier, kind: str, temporary: bool, if_exists: bool) -> None:
        statement = f"DROP {'TEMPORARY ' if temporary else ''}{kind.upper()}"
        if temporary:
            existing = self._temporary_relations.get(ident)
            if existing is None:
                if if_exists:
                    return
                raise CatalogError(
                    f"temporary {kind} {ident} does not exist",
                    hint=f"{statement} only drops temporary {kind}s; use DROP {kind.upper()} for a permanent one",
                )
            if kind_of(existing) != kind:
                raise messages.wrong_kind(ident, kind_of(existing), kind, "DROP TEMPORARY")
            del self._temporary_relations[ident]
            return
        if ident in self._temporary_relations:
            raise self._shadowed(kind, ident)
        catalog = self._catalogs.get(ident.catalog)
        if catalog is None or not catalog.database_exists(ident.database):
            if if_exists:
                return
            self.get_table(ident)  # raises the catalog / database not found error
        found = catalog.find_table((ident.database, ident.name)) if catalog else None
        if found is None:
            if if_exists:
                return
            raise messages.object_not_found(kind, ident, self._relation_names(ident.catalog, ident.database))
        if kind_of(found) != kind:
            raise messages.wrong_kind(ident, kind_of(found), kind, "DROP")
        catalog.drop_table((ident.database, ident.name))  # type: ignore[union-attr]

    @staticmethod
    def _shadowed(kind: str, ident: ObjectIdentifier) -> CatalogError:
        return CatalogError(
            f"cannot drop the permanent {kind} {ident}: a temporary {kind} with the same identifier shadows it",
            hint=f"drop the temporary one first with DROP TEMPORARY {kind.upper()}, then drop the permanent one",
        )


def _catalog_exists(name: str) -> CatalogError:
    return CatalogError(
        f"catalog {quote_identifier(name)} already exists",
        hint="use CREATE CATALOG IF NOT EXISTS, or DROP CATALOG first, or pick another name",
    )
