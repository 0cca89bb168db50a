"""Behaviour every catalog backend must share (run against memory and file catalogs)."""

from __future__ import annotations

import pytest

from planengine.catalog.objects import CatalogDatabase, CatalogFunction
from planengine.errors import CatalogError


def test_default_database_exists(catalog):
    assert catalog.list_databases() == ["db"]
    assert catalog.database_exists("db")
    assert not catalog.database_exists("other")


def test_rich_table_round_trips(catalog, rich_table):
    catalog.create_table(("db", "orders"), rich_table)
    assert catalog.get_table(("db", "orders")) == rich_table
    assert catalog.table_exists(("db", "orders"))
    assert catalog.list_tables("db") == ["orders"]


def test_duplicate_table_is_refused_with_advice(catalog, small_table):
    catalog.create_table(("db", "orders"), small_table())
    with pytest.raises(CatalogError) as error:
        catalog.create_table(("db", "orders"), small_table({"connector": "print"}))
    assert error.value.message == (
        "table `c`.`db`.`orders` already exists; use CREATE TABLE IF NOT EXISTS or DROP TABLE first"
    )
    catalog.create_table(("db", "orders"), small_table({"connector": "print"}), ignore_if_exists=True)
    assert catalog.get_table(("db", "orders")).options_dict == {"connector": "datagen"}


def test_tables_and_views_share_one_namespace(catalog, small_table, view):
    catalog.create_table(("db", "orders"), small_table())
    with pytest.raises(CatalogError, match=r"`c`\.`db`\.`orders` is a table, not a view"):
        catalog.create_table(("db", "orders"), view)
    catalog.create_table(("db", "per_id"), view)
    assert catalog.get_table(("db", "per_id")) == view
    assert catalog.list_tables("db") == ["orders", "per_id"]  # Flink: listTables includes views
    assert catalog.list_views("db") == ["per_id"]


def test_missing_table_suggests_a_close_name(catalog, small_table):
    catalog.create_table(("db", "orders"), small_table())
    with pytest.raises(CatalogError) as error:
        catalog.get_table(("db", "order"))
    assert error.value.message == "table or view `c`.`db`.`order` does not exist; did you mean `orders`?"
    assert "`orders`" in error.value.hint
    assert catalog.find_table(("db", "order")) is None


def test_missing_database_lists_the_available_ones(catalog, small_table):
    with pytest.raises(CatalogError) as error:
        catalog.create_table(("dbx", "orders"), small_table())
    assert error.value.message == "database `dbx` does not exist in catalog `c`; did you mean `db`?"
    assert error.value.hint.startswith("available: `db`")


def test_databases_create_and_drop(catalog, small_table):
    catalog.create_database("sales", CatalogDatabase(comment="the sales team", properties=(("owner", "ann"),)))
    assert catalog.list_databases() == ["db", "sales"]
    assert catalog.get_database("sales").comment == "the sales team"
    with pytest.raises(CatalogError, match="database `sales` already exists in catalog `c`"):
        catalog.create_database("sales")
    catalog.create_database("sales", ignore_if_exists=True)

    catalog.create_table(("sales", "orders"), small_table())
    catalog.create_function(("sales", "f"), CatalogFunction("m.F"))
    with pytest.raises(CatalogError) as error:
        catalog.drop_database("sales")
    assert "is not empty (1 table(s), 1 function(s))" in error.value.message
    assert "CASCADE" in error.value.hint
    catalog.drop_database("sales", cascade=True)
    assert catalog.list_databases() == ["db"]
    catalog.drop_database("sales", ignore_if_not_exists=True)


def test_the_default_database_cannot_be_dropped(catalog):
    with pytest.raises(CatalogError, match="it is the default database of catalog `c`"):
        catalog.drop_database("db", cascade=True)


def test_alter_table_replaces_a_definition_of_the_same_kind(catalog, small_table, view):
    catalog.create_table(("db", "orders"), small_table())
    catalog.alter_table(("db", "orders"), small_table({"connector": "print"}, comment="now printed"))
    assert catalog.get_table(("db", "orders")).comment == "now printed"
    with pytest.raises(CatalogError, match="it is a table and the new definition is a view"):
        catalog.alter_table(("db", "orders"), view)
    with pytest.raises(CatalogError, match=r"table `c`\.`db`\.`nope` does not exist"):
        catalog.alter_table(("db", "nope"), small_table())
    catalog.alter_table(("db", "nope"), small_table(), ignore_if_not_exists=True)
    assert not catalog.table_exists(("db", "nope"))


def test_drop_table(catalog, small_table):
    catalog.create_table(("db", "orders"), small_table())
    catalog.drop_table(("db", "orders"))
    assert not catalog.table_exists(("db", "orders"))
    with pytest.raises(CatalogError, match="does not exist"):
        catalog.drop_table(("db", "orders"))
    catalog.drop_table(("db", "orders"), ignore_if_not_exists=True)
    catalog.drop_table(("nodb", "orders"), ignore_if_not_exists=True)


def test_functions_are_case_insensitive(catalog, function):
    catalog.create_function(("db", "Shout"), function)
    assert catalog.list_functions("db") == ["shout"]
    assert catalog.get_function(("db", "SHOUT")) == function
    assert catalog.function_exists(("db", "shout"))
    with pytest.raises(CatalogError, match=r"function `c`\.`db`\.`shout` already exists; use CREATE FUNCTION IF"):
        catalog.create_function(("db", "shout"), CatalogFunction("other.F"))
    with pytest.raises(CatalogError, match=r"function `c`\.`db`\.`shot` does not exist; did you mean `shout`"):
        catalog.get_function(("db", "shot"))
    catalog.drop_function(("db", "sHoUt"))
    assert catalog.list_functions("db") == []
    catalog.drop_function(("db", "shout"), ignore_if_not_exists=True)


def test_paths_must_be_database_and_name(catalog, small_table):
    with pytest.raises(CatalogError, match="a catalog addresses objects as"):
        catalog.create_table(("orders",), small_table())  # type: ignore[arg-type]
