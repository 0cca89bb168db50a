"""The catalog manager: qualification, USE, catalogs from options, temporary objects, function resolution."""

from __future__ import annotations

import pytest

from planengine.catalog.file_catalog import FileCatalog
from planengine.catalog.manager import CatalogManager, FunctionLookup
from planengine.catalog.memory import InMemoryCatalog
from planengine.catalog.objects import CatalogFunction, ObjectIdentifier
from planengine.errors import CatalogError


@pytest.fixture
def manager() -> CatalogManager:
    return CatalogManager()


def ident(text: str) -> ObjectIdentifier:
    return ObjectIdentifier(*text.split("."))


# --- qualification and USE ---------------------------------------------------------------------------
def test_starts_in_the_default_catalog_and_database(manager):
    assert (manager.current_catalog, manager.current_database) == ("default_catalog", "default_database")
    assert manager.list_catalogs() == ["default_catalog"]
    assert manager.list_databases() == ["default_database"]


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("t",), "cat2.sales.t"),
        (("db2", "t"), "cat2.db2.t"),
        (("default_catalog", "default_database", "t"), "default_catalog.default_database.t"),
    ],
)
def test_qualify_is_relative_to_use_catalog_and_use(manager, parts, expected):
    manager.create_catalog_from_options("cat2", {"type": "memory"})
    manager.use_catalog("cat2")
    assert manager.current_database == "default"  # USE CATALOG switches to the catalog's default database
    manager.create_database("sales")
    manager.use_database("sales")
    assert manager.qualify(parts) == ident(expected)


def test_use_database_with_a_catalog_prefix(manager):
    manager.create_catalog_from_options("cat2", {"type": "memory", "default-database": "main"})
    manager.create_database(("cat2", "sales"))
    manager.use_database(("cat2", "sales"))
    assert (manager.current_catalog, manager.current_database) == ("cat2", "sales")


@pytest.mark.parametrize("parts", [(), ("a", "b", "c", "d"), ("a", "")])
def test_qualify_rejects_bad_identifiers(manager, parts):
    with pytest.raises(CatalogError, match="expected 1 to 3 non-empty parts"):
        manager.qualify(parts)


def test_use_of_unknown_catalog_or_database_is_explained(manager):
    manager.create_catalog_from_options("sales", {"type": "memory"})
    with pytest.raises(CatalogError) as error:
        manager.use_catalog("sale")
    assert error.value.message == "catalog `sale` does not exist; did you mean `sales`?"
    assert "available catalogs: `default_catalog`, `sales`" in error.value.hint
    with pytest.raises(CatalogError, match="database `nope` does not exist in catalog `default_catalog`"):
        manager.use_database("nope")


# --- catalogs from options ---------------------------------------------------------------------------
def test_file_catalog_from_options(manager, tmp_path, small_table):
    catalog = manager.create_catalog_from_options(
        "shared", {"type": "file", "path": str(tmp_path / "cat"), "default-database": "main"}
    )
    assert isinstance(catalog, FileCatalog) and catalog.name == "shared" and not catalog.read_only
    manager.create_table(("shared", "main", "orders"), small_table())
    assert (tmp_path / "cat" / "main" / "tables" / "orders.yaml").is_file()

    again = CatalogManager()
    again.create_catalog_from_options("shared", {"type": "file", "path": str(tmp_path / "cat"), "read-only": "true"})
    assert again.get_table(("shared", "main", "orders")).object == small_table()
    with pytest.raises(CatalogError, match="is read-only"):
        again.drop_table(("shared", "main", "orders"))


def test_unknown_catalog_type_lists_the_types(manager):
    with pytest.raises(CatalogError) as error:
        manager.create_catalog_from_options("c", {"type": "hive"})
    assert error.value.message == "unknown catalog type 'hive' for catalog `c`"
    assert error.value.hint == "available types: 'file', 'generic_in_memory', 'memory'"
    with pytest.raises(CatalogError, match="catalog `c` has no 'type' option"):
        manager.create_catalog_from_options("c", {})


def test_all_option_problems_are_reported_at_once(manager):
    with pytest.raises(CatalogError) as error:
        manager.create_catalog_from_options("c", {"type": "file", "read-only": "yes", "default_database": "x"})
    assert error.value.message == (
        "invalid options for catalog `c` of type 'file': unknown option 'default_database' (did you mean "
        "'default-database'?); missing required option 'path'; option 'read-only' must be 'true' or 'false', "
        "not 'yes'"
    )


def test_catalog_names_are_unique(manager):
    manager.create_catalog_from_options("c", {"type": "memory"})
    with pytest.raises(CatalogError, match="catalog `c` already exists"):
        manager.create_catalog_from_options("c", {"type": "memory"})
    with pytest.raises(CatalogError, match="catalog `c` already exists"):
        manager.register_catalog("c", InMemoryCatalog())
    first = manager.get_catalog("c")
    assert manager.create_catalog_from_options("c", {"type": "memory"}, ignore_if_exists=True) is first


def test_register_catalog_names_it(manager):
    manager.register_catalog("mine", InMemoryCatalog("whatever", "db"))
    assert manager.get_catalog("mine").name == "mine"


def test_current_catalog_and_database_cannot_be_dropped(manager):
    with pytest.raises(CatalogError, match="it is the current catalog"):
        manager.drop_catalog("default_catalog")
    with pytest.raises(CatalogError, match="it is the current database"):
        manager.drop_database("default_database")
    manager.create_catalog_from_options("c", {"type": "memory"})
    manager.drop_catalog("c")
    manager.drop_catalog("c", if_exists=True)
    assert manager.list_catalogs() == ["default_catalog"]


# --- tables, views and temporary objects -------------------------------------------------------------
def test_missing_table_error_suggests_from_the_same_database(manager, small_table):
    manager.create_table("orders", small_table())
    manager.create_table("clicks", small_table(), temporary=True)
    with pytest.raises(CatalogError) as error:
        manager.get_table(("ordres",))
    assert error.value.message == (
        "table or view `default_catalog`.`default_database`.`ordres` does not exist; did you mean `orders`?"
    )
    assert "`clicks`, `orders`" in error.value.hint
    with pytest.raises(CatalogError, match="database `nodb` does not exist in catalog `default_catalog`"):
        manager.get_table(("nodb", "orders"))
    with pytest.raises(CatalogError, match="catalog `nocat` does not exist"):
        manager.get_table(("nocat", "db", "orders"))
    assert manager.find_table(("nocat", "db", "orders")) is None


def test_duplicate_permanent_table_message(manager, small_table):
    manager.create_table("orders", small_table())
    with pytest.raises(CatalogError) as error:
        manager.create_table("orders", small_table())
    assert error.value.message == (
        "table `default_catalog`.`default_database`.`orders` already exists; "
        "use CREATE TABLE IF NOT EXISTS or DROP TABLE first"
    )


def test_temporary_table_shadows_the_permanent_one(manager, small_table):
    permanent = small_table({"connector": "datagen"})
    temporary = small_table({"connector": "print"})
    manager.create_table("orders", permanent)
    manager.create_table("orders", temporary, temporary=True)

    entry = manager.get_table(("orders",))
    assert entry.object == temporary and entry.is_temporary
    assert entry.identifier == ident("default_catalog.default_database.orders")
    assert manager.is_temporary(("orders",))
    assert manager.list_tables() == ["orders"]

    with pytest.raises(CatalogError) as error:
        manager.drop_table("orders")
    assert "a temporary table with the same identifier shadows it" in error.value.message
    assert "DROP TEMPORARY TABLE" in error.value.hint

    manager.drop_table("orders", temporary=True)
    entry = manager.get_table(("orders",))
    assert entry.object == permanent and not entry.is_temporary
    assert not manager.is_temporary(("orders",))
    manager.drop_table("orders")
    assert not manager.table_exists("orders")


def test_temporary_objects_never_reach_the_catalog(manager, tmp_path, small_table):
    manager.create_catalog_from_options("ro", {"type": "file", "path": str(tmp_path), "read-only": "true"})
    manager.use_catalog("ro")
    manager.create_table("scratch", small_table({"connector": "print", "password": "plain"}), temporary=True)
    assert manager.get_table("scratch").is_temporary
    assert manager.list_tables() == ["scratch"]
    assert manager.get_catalog("ro").list_tables("default") == []
    assert not list(tmp_path.rglob("*.yaml"))


def test_temporary_duplicates_and_missing_ones(manager, small_table, view):
    manager.create_table("t", small_table(), temporary=True)
    with pytest.raises(CatalogError, match=r"temporary table `default_catalog`\.`default_database`\.`t` already"):
        manager.create_table("t", small_table(), temporary=True)
    manager.create_table("t", small_table(), temporary=True, ignore_if_exists=True)
    with pytest.raises(CatalogError, match="is a temporary table, not a view"):
        manager.create_view("t", view, temporary=True)
    with pytest.raises(CatalogError, match=r"temporary table `default_catalog`\.`default_database`\.`u` does not"):
        manager.drop_table("u", temporary=True)
    manager.drop_table("u", temporary=True, if_exists=True)
    with pytest.raises(CatalogError, match="database `nodb` does not exist"):
        manager.create_table(("nodb", "t"), small_table(), temporary=True)


def test_drop_table_and_drop_view_check_the_kind(manager, small_table, view):
    manager.create_table("orders", small_table())
    manager.create_view("per_id", view)
    manager.create_view("tmp_view", view, temporary=True)
    assert manager.list_tables() == ["orders", "per_id", "tmp_view"]
    assert manager.list_views() == ["per_id", "tmp_view"]
    assert manager.get_table("per_id").is_view
    with pytest.raises(CatalogError, match="`per_id` is a view, not a table") as error:
        manager.drop_table("per_id")
    assert "DROP VIEW" in error.value.hint
    with pytest.raises(CatalogError, match="`orders` is a table, not a view"):
        manager.drop_view("orders")
    with pytest.raises(CatalogError, match="is a view, not a table"):
        manager.drop_table("tmp_view", temporary=True)
    manager.drop_view("per_id")
    manager.drop_view("tmp_view", temporary=True)
    manager.drop_view("per_id", if_exists=True)
    manager.drop_table(("nodb", "x"), if_exists=True)
    manager.drop_table(("nocat", "db", "x"), if_exists=True)
    assert manager.list_tables() == ["orders"]


# --- functions ---------------------------------------------------------------------------------------
def test_function_resolution_follows_flinks_order(manager):
    catalog_fn = CatalogFunction("udfs.CatalogShout")
    temp_fn = CatalogFunction("udfs.TempShout")
    system_fn = CatalogFunction("udfs.SystemShout")
    full = ident("default_catalog.default_database.shout")

    assert manager.resolve_function(("shout",)) is None
    manager.create_function("shout", catalog_fn)
    assert manager.resolve_function(("SHOUT",)) == FunctionLookup("catalog", full, catalog_fn)
    manager.create_function("Shout", temp_fn, temporary=True)
    assert manager.resolve_function(("shout",)) == ("catalog", full, temp_fn)
    assert manager.is_temporary("SHOUT")
    manager.create_function("shout", system_fn, temporary=True, system=True)
    assert manager.resolve_function(("shout",)) == ("system", "shout", system_fn)
    assert manager.get_system_function("SHOUT") == system_fn
    # a qualified name never resolves to a system function
    assert manager.resolve_function(("default_database", "shout")) == ("catalog", full, temp_fn)
    assert manager.list_functions() == ["shout"]

    with pytest.raises(CatalogError, match="a temporary function with the same identifier shadows it"):
        manager.drop_function("shout")
    manager.drop_system_function("shout")
    manager.drop_function("shout", temporary=True)
    assert manager.resolve_function(("shout",)) == ("catalog", full, catalog_fn)
    manager.drop_function("shout")
    assert manager.resolve_function(("shout",)) is None
    assert manager.resolve_function(("nocat", "db", "shout")) is None


def test_system_functions_are_temporary_and_unqualified(manager):
    fn = CatalogFunction("udfs.F")
    with pytest.raises(CatalogError, match="system functions are always temporary"):
        manager.create_function("f", fn, system=True)
    with pytest.raises(CatalogError, match="a system function has a plain name"):
        manager.create_function(("db", "f"), fn, temporary=True, system=True)
    manager.create_function("f", fn, temporary=True, system=True)
    with pytest.raises(CatalogError, match="temporary system function `f` already exists"):
        manager.create_function("F", fn, temporary=True, system=True)
    with pytest.raises(CatalogError, match="temporary system function `g` does not exist"):
        manager.drop_system_function("g")
    manager.drop_system_function("g", if_exists=True)


def test_functions_in_a_file_catalog_survive_the_manager(tmp_path):
    options = {"type": "file", "path": str(tmp_path)}
    first = CatalogManager()
    first.create_catalog_from_options("files", options)
    first.create_function(("files", "default", "Shout"), CatalogFunction("udfs.Shout"))
    second = CatalogManager()
    second.create_catalog_from_options("files", options)
    second.use_catalog("files")
    assert second.resolve_function(("shout",)) == (
        "catalog", ident("files.default.shout"), CatalogFunction("udfs.Shout")
    )
