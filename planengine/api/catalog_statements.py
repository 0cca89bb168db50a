"""The statements users type first to look around and change tables (Flink SQL client conventions).

``DESCRIBE t`` / ``SHOW COLUMNS FROM t [LIKE 'p']``, ``SHOW CREATE TABLE|VIEW t``, ``SHOW CURRENT
CATALOG|DATABASE``, ``SHOW TABLES|VIEWS|[USER] FUNCTIONS|CATALOGS|DATABASES [FROM db] [[NOT] LIKE 'p']``,
``ALTER TABLE … SET|RESET|ADD|MODIFY|DROP|RENAME`` and ``CREATE [OR REPLACE] TABLE``. Listings come back as
``ROWS`` results with Flink's column headers, so ``planengine sql`` prints them as tables.

``CatalogStatements`` is a mix-in of ``TableEnvironment``: it only needs ``catalog_manager``, ``registry`` and
``config``.
"""

from __future__ import annotations

import re
from typing import Any

from planengine.api.results import TableResult
from planengine.catalog.describe import DESCRIBE_COLUMNS, create_statement, describe_rows
from planengine.catalog.manager import CatalogManager
from planengine.catalog.objects import CatalogTable, CatalogView
from planengine.config import REGISTRY
from planengine.errors import CatalogError, ValidationError
from planengine.functions.registry import FunctionRegistry
from planengine.planner.alter import altered_table
from planengine.planner.ddl import table_from_statement
from planengine.sql import statements as S

# SHOW kind -> the header Flink's SQL client prints
_LIST_HEADERS = {"TABLES": "table name", "VIEWS": "view name", "FUNCTIONS": "function name",
                 "USER FUNCTIONS": "function name", "CATALOGS": "catalog name", "DATABASES": "database name"}
_BUILTIN_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def like_matcher(pattern: str) -> re.Pattern[str]:
    """SQL LIKE (``%`` any run, ``_`` one character), case-insensitive like Flink's SHOW … LIKE.

    >>> bool(like_matcher("ord%").fullmatch("Orders")), bool(like_matcher("o_").fullmatch("orders"))
    (True, False)
    """
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(regex, re.IGNORECASE | re.DOTALL)


def _filter(names: list[str], like: str | None, not_like: bool) -> list[str]:
    if like is None:
        return names
    matcher = like_matcher(like)
    return [n for n in names if bool(matcher.fullmatch(n)) != not_like]


class CatalogStatements:
    catalog_manager: CatalogManager
    registry: FunctionRegistry
    config: dict[str, str]

    def _rows(self, columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> TableResult:
        width = int(REGISTRY.value(self.config, "table.display.max-column-width"))
        return TableResult("ROWS", rows=rows, columns=columns, max_width=width)

    # -- looking around -----------------------------------------------------------------------------------
    def _exec_Show(self, stmt: S.Show) -> TableResult:
        cm = self.catalog_manager
        catalog, database = self._listing_path(stmt.database)
        if stmt.kind == "TABLES":
            names = cm.list_tables(catalog, database)
        elif stmt.kind == "VIEWS":
            names = cm.list_views(catalog, database)
        elif stmt.kind == "USER FUNCTIONS":
            names = cm.list_functions(catalog, database)
        elif stmt.kind == "FUNCTIONS":
            builtins = {f.name.lower() for f in self.registry.all()
                        if f.internal_name is None and _BUILTIN_NAME.fullmatch(f.name)}
            names = sorted(builtins | set(cm.list_functions(catalog, database)))
        elif stmt.kind == "CATALOGS":
            names = cm.list_catalogs()
        else:
            names = cm.list_databases()
        names = _filter(names, stmt.like, stmt.not_like)
        return self._rows((_LIST_HEADERS[stmt.kind],), [(n,) for n in names])

    def _listing_path(self, database: tuple[str, ...]) -> tuple[str | None, str | None]:
        if not database:
            return None, None
        if len(database) == 1:
            return self.catalog_manager.current_catalog, database[0]
        return database[-2], database[-1]

    def _exec_ShowCurrent(self, stmt: S.ShowCurrent) -> TableResult:
        cm = self.catalog_manager
        if stmt.kind == "CATALOG":
            return self._rows(("current catalog name",), [(cm.current_catalog,)])
        return self._rows(("current database name",), [(cm.current_database,)])

    def _exec_Describe(self, stmt: S.Describe) -> TableResult:
        entry = self.catalog_manager.get_table(stmt.name)
        return self._rows(DESCRIBE_COLUMNS, describe_rows(entry.object.schema))

    def _exec_ShowColumns(self, stmt: S.ShowColumns) -> TableResult:
        entry = self.catalog_manager.get_table(stmt.name)
        keep = set(_filter(entry.object.schema.column_names(), stmt.like, stmt.not_like))
        return self._rows(DESCRIBE_COLUMNS, [r for r in describe_rows(entry.object.schema) if r[0] in keep])

    def _exec_ShowCreate(self, stmt: S.ShowCreate) -> TableResult:
        entry = self.catalog_manager.get_table(stmt.name)
        if entry.is_view != (stmt.kind == "VIEW"):
            actual = "view" if entry.is_view else "table"
            raise CatalogError(f"{entry.identifier} is a {actual}, not a {stmt.kind.lower()}",
                               hint=f"use SHOW CREATE {actual.upper()}")
        return TableResult("OK", create_statement(entry.identifier, entry.object, entry.is_temporary))

    # -- changing tables ----------------------------------------------------------------------------------
    def _exec_CreateTable(self, stmt: S.CreateTable) -> TableResult:
        table = table_from_statement(stmt, self.registry)
        cm = self.catalog_manager
        identifier = cm.qualify(stmt.name)
        existing = cm.find_table(identifier)
        if stmt.or_replace and existing is not None and existing.is_temporary == stmt.temporary:
            if existing.is_view:
                raise CatalogError(f"{identifier} is a view; CREATE OR REPLACE TABLE replaces tables only",
                                   hint="DROP VIEW it first, or pick another name")
            cm.alter_table(identifier, table)
            return TableResult("OK", f"table {identifier} replaced")
        cm.create_table(identifier, table, stmt.temporary, stmt.if_not_exists)
        return TableResult("OK", f"table {identifier} created")

    def _exec_AlterTable(self, stmt: S.AlterTable) -> TableResult:
        cm = self.catalog_manager
        identifier = cm.qualify(stmt.name)
        entry = cm.find_table(identifier)
        if entry is None:
            if stmt.if_exists:
                return TableResult("OK", f"table {identifier} does not exist; nothing altered (IF EXISTS)")
            cm.get_table(identifier)  # raises "not found" with a did-you-mean
        assert entry is not None
        if isinstance(entry.object, CatalogView):
            raise CatalogError(f"{identifier} is a view; ALTER TABLE changes tables only",
                               hint="re-create the view with DROP VIEW and CREATE VIEW")
        if stmt.action == "RENAME":
            target = cm.rename_table(identifier, stmt.new_name)
            return TableResult("OK", f"table {identifier} renamed to {target}")
        assert isinstance(entry.object, CatalogTable)
        try:
            table = altered_table(entry.object, stmt, self.registry)
        except ValidationError as error:
            raise type(error)(f"ALTER TABLE {identifier}: {error.message}", location=stmt.location,
                              hint=error.hint) from None
        cm.alter_table(identifier, table)
        return TableResult("OK", f"table {identifier} altered")
