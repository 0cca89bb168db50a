"""Tab completion from the session's catalog: keywords, catalogs, databases, tables, and the columns of the tables the
statement being typed names (also by alias, also in a half-written statement), without Spark."""

from __future__ import annotations

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from planengine.api import TableEnvironment
from planengine.client.completion import SqlCompleter, candidates


@pytest.fixture(scope="module")
def env() -> TableEnvironment:
    env = TableEnvironment()
    env.execute_sql("""
        CREATE TABLE clicks (user_id BIGINT, page STRING, `select` INT) WITH ('connector' = 'datagen');
        CREATE TABLE users (user_id BIGINT, name STRING) WITH ('connector' = 'datagen');
        CREATE DATABASE shop;
        CREATE TABLE shop.orders (order_id BIGINT, amount DOUBLE) WITH ('connector' = 'datagen');
        CREATE TEMPORARY VIEW recent AS SELECT page FROM clicks;
    """)
    return env


def texts(env: TableEnvironment, typed: str, kind: str | None = None) -> list[str]:
    """Completions at the end of ``typed`` (or at ``|`` in it), optionally of one kind only."""
    cursor = typed.find("|")
    text = typed.replace("|", "") if cursor >= 0 else typed
    found = candidates(env.catalog_manager, text, cursor if cursor >= 0 else len(text))
    return [c.text for c in found if kind is None or c.kind.startswith(kind)]


@pytest.mark.parametrize(("typed", "kind", "expected"), [
    ("SEL", "keyword", ["SELECT"]),
    ("sel", "keyword", ["SELECT"]),  # case does not matter; keywords come back as Flink writes them
    ("SELECT * FROM cl", "table", ["clicks"]),
    ("SELECT * FROM ", "table", ["clicks", "recent", "users"]),  # views and temporary objects too
    ("SELECT * FROM sh", "database", ["shop"]),
    ("SELECT * FROM default_", "catalog", ["default_catalog"]),
    ("SELECT * FROM default_catalog.", "database", ["default_database", "shop"]),
    ("SELECT * FROM shop.", "table", ["orders"]),
    ("SELECT * FROM default_catalog.shop.o", "table", ["orders"]),
    # Columns of the tables the statement names: before FROM is typed too (the cursor is at |).
    ("SELECT u| FROM clicks", "column", ["user_id"]),
    ("SELECT | FROM clicks JOIN users ON TRUE", "column", ["user_id", "page", "`select`", "name"]),
    ("SELECT c.| FROM clicks AS c", "column", ["user_id", "page", "`select`"]),
    ("SELECT c.p| FROM clicks c WHERE", "column", ["page"]),
    ("SELECT clicks.pa| FROM clicks", "column", ["page"]),
    ("SELECT shop.orders.a| FROM shop.orders", "column", ["amount"]),
    ("SELECT | FROM recent", "column", ["page"]),
    # Only the statement at the cursor counts: users is named by the one before.
    ("SELECT name FROM users; SELECT | FROM clicks", "column", ["user_id", "page", "`select`"]),
    # Half-written: an open string or quote ends the statement where it starts.
    ("SELECT u| FROM clicks WHERE page = 'x", "column", ["user_id"]),
    ("SELECT `s| FROM clicks", "column", ["`select`"]),
    ("SELECT * FROM nowhere WHERE ", "column", []),
])
def test_candidates(env: TableEnvironment, typed: str, kind: str, expected: list[str]) -> None:
    assert texts(env, typed, kind) == expected


def test_columns_come_first_and_every_kind_is_offered(env: TableEnvironment) -> None:
    found = candidates(env.catalog_manager, "SELECT * FROM users WHERE n", len("SELECT * FROM users WHERE n"))
    assert [(c.text, c.kind) for c in found] == [("name", "column of users"), ("NOT", "keyword"),
                                                 ("NULL", "keyword")]


def test_the_completer_replaces_the_word_being_typed(env: TableEnvironment) -> None:
    completer = SqlCompleter(env.catalog_manager)
    [completion] = completer.get_completions(Document("SELECT * FROM default_catalog.shop.or"), CompleteEvent())
    assert (completion.text, completion.start_position, completion.display_meta_text) == ("orders", -2, "table")
    found = completer.get_completions(Document("SELECT `se FROM clicks", cursor_position=10), CompleteEvent())
    assert [(c.text, c.start_position) for c in found] == [("`select`", -3)]


def test_a_catalog_that_fails_offers_nothing_from_it_and_the_rest_still_completes(
        env: TableEnvironment, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreachable(*args: object) -> list[str]:
        raise OSError("connection refused")

    monkeypatch.setattr(env.catalog_manager, "list_tables", unreachable)
    assert texts(env, "SELECT * FROM cl") == []
    assert texts(env, "SELECT * FROM sh") == ["shop", "SHOW"]
