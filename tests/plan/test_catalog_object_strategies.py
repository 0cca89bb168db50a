"""Catalog-object strategies (DESIGN §3, Flink's ``table.plan.*`` options): how much of a table a plan stores,
and where restore takes the rest from.

The matrix compiles ``clicks -> out`` under each compile strategy in one session, changes the ``clicks``
table in a second session per scenario, and restores there under each restore strategy and enrichment
setting. ``EXPECTED`` is the whole contract as data, one row per (compile, restore, enrich):

* ``ALL`` restore: plan first, catalog for what the plan lacks; when the catalog has the table its schema
  must agree with the plan's; with enrichment catalog options are merged over the plan's, and only a
  factory's ``mutable_options()`` may differ.
* ``ALL_ENFORCED``: the plan only (the catalog is never read, so a changed or dropped table does not
  matter); a plan that lacks options is an error.
* ``IDENTIFIER``: the catalog only (the user opted out of the plan's copy: changed options are taken as
  they are), but a schema change is still refused because the nodes were planned for the old rows.
"""

from __future__ import annotations

import itertools
import logging
import re
from dataclasses import dataclass

import pytest

from planengine.errors import PlanIncompatible
from planengine.plan.catalog_objects import MASK
from tests.plan._support import env_with, restore, restored_tables

CLICKS = ("CREATE TABLE clicks (user_id BIGINT, page STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) "
          "WITH ('connector' = 'filesystem', 'path' = '/data/clicks', 'format' = 'json', "
          "'source.monitor-interval' = '10 s' {extra_options})")
OUT = "CREATE TABLE out_t (page STRING, user_id BIGINT) WITH ('connector' = 'filesystem', 'path' = '/out', " \
      "'format' = 'json');"
PROGRAM = "INSERT INTO out_t SELECT page, user_id FROM clicks WHERE page <> ''"

ORIGINAL = {"connector": "filesystem", "format": "json", "path": "/data/clicks", "source.monitor-interval": "10 s"}
MUTATED = {**ORIGINAL, "source.monitor-interval": "1 min"}
MOVED = {**ORIGINAL, "path": "/data/clicks-v2"}
ORIGINAL_COLUMNS = ["user_id", "page", "ts"]

# Scenario -> DDL of the restoring session (the sink table is always unchanged).
SCENARIOS = {
    "unchanged": CLICKS.format(extra_options="") + ";" + OUT,
    "removed": OUT,
    "mutable-option": CLICKS.replace("'10 s'", "'1 min'").format(extra_options="") + ";" + OUT,
    "non-mutable-option": CLICKS.replace("/data/clicks", "/data/clicks-v2").format(extra_options="") + ";" + OUT,
    "schema": CLICKS.replace("page STRING,", "page STRING, country STRING,").format(extra_options="") + ";" + OUT,
}


@dataclass(frozen=True)
class Ok:
    options: dict[str, str]


@dataclass(frozen=True)
class Err:
    fragments: tuple[str, ...]  # what went wrong and how to fix it (message and hint)


PLAN = Ok(ORIGINAL)
SCHEMA_ERR = Err(("changed its schema", "country", "same schema"))
NOT_IN_CATALOG_SCHEMA = Err(("not in the catalog", "stores only its schema", "create the table in the catalog"))
NOT_IN_CATALOG_ID = Err(("not in the catalog", "stores only its identifier", "create the table in the catalog"))
NOT_IN_CATALOG = Err(("is not in the catalog", "'IDENTIFIER' reads tables from the catalog only", "create the table"))
NOT_IN_PLAN = Err(("not fully stored in the plan", "'ALL_ENFORCED' needs plans compiled with",
                   "restore with 'ALL'"))
PATH_CHANGED = Err(("option 'path' changed from '/data/clicks' (plan) to '/data/clicks-v2' (catalog)",
                    "not mutable", "revert 'path' in the catalog",
                    "'table.plan.restore.enrich-table-options' = 'false'"))
CATALOG_ONLY = {"unchanged": Ok(ORIGINAL), "removed": NOT_IN_CATALOG, "mutable-option": Ok(MUTATED),
                "non-mutable-option": Ok(MOVED), "schema": SCHEMA_ERR}
ENFORCED_FROM_PLAN = dict.fromkeys(SCENARIOS, PLAN)
ENFORCED_MISSING = dict.fromkeys(SCENARIOS, NOT_IN_PLAN)

# (compile, restore, enrich) -> scenario -> outcome.
EXPECTED: dict[tuple[str, str, bool], dict[str, Ok | Err]] = {
    ("ALL", "ALL", True): {"unchanged": PLAN, "removed": PLAN, "mutable-option": Ok(MUTATED),
                           "non-mutable-option": PATH_CHANGED, "schema": SCHEMA_ERR},
    ("ALL", "ALL", False): {"unchanged": PLAN, "removed": PLAN, "mutable-option": PLAN,
                            "non-mutable-option": PLAN, "schema": SCHEMA_ERR},
    ("ALL", "ALL_ENFORCED", True): ENFORCED_FROM_PLAN,
    ("ALL", "ALL_ENFORCED", False): ENFORCED_FROM_PLAN,
    ("ALL", "IDENTIFIER", True): CATALOG_ONLY,
    ("ALL", "IDENTIFIER", False): CATALOG_ONLY,
    # SCHEMA plans have no options to compare: the catalog's are taken whatever changed, enrichment or not.
    ("SCHEMA", "ALL", True): {**CATALOG_ONLY, "removed": NOT_IN_CATALOG_SCHEMA},
    ("SCHEMA", "ALL", False): {**CATALOG_ONLY, "removed": NOT_IN_CATALOG_SCHEMA},
    ("SCHEMA", "ALL_ENFORCED", True): ENFORCED_MISSING,
    ("SCHEMA", "ALL_ENFORCED", False): ENFORCED_MISSING,
    ("SCHEMA", "IDENTIFIER", True): CATALOG_ONLY,
    ("SCHEMA", "IDENTIFIER", False): CATALOG_ONLY,
    # IDENTIFIER plans have no schema either: a schema change is caught against the rows the nodes read.
    ("IDENTIFIER", "ALL", True): {**CATALOG_ONLY, "removed": NOT_IN_CATALOG_ID},
    ("IDENTIFIER", "ALL", False): {**CATALOG_ONLY, "removed": NOT_IN_CATALOG_ID},
    ("IDENTIFIER", "ALL_ENFORCED", True): ENFORCED_MISSING,
    ("IDENTIFIER", "ALL_ENFORCED", False): ENFORCED_MISSING,
    ("IDENTIFIER", "IDENTIFIER", True): CATALOG_ONLY,
    ("IDENTIFIER", "IDENTIFIER", False): CATALOG_ONLY,
}
IDENTIFIER_SCHEMA_ERR = Err(("changed its schema", "country", "recreate it with that schema"))

CELLS = [(c, r, e, s) for (c, r, e), row in EXPECTED.items() for s in row]


def test_the_table_covers_every_cell() -> None:
    combos = set(itertools.product(("ALL", "SCHEMA", "IDENTIFIER"), ("ALL", "ALL_ENFORCED", "IDENTIFIER"),
                                   (True, False)))
    assert set(EXPECTED) == combos
    assert all(set(row) == set(SCENARIOS) for row in EXPECTED.values())
    assert len(CELLS) == 90


_PLANS: dict[str, str] = {}


def compiled(strategy: str) -> str:
    if strategy not in _PLANS:
        env = env_with(CLICKS.format(extra_options="") + ";" + OUT, **{"table.plan.compile.catalog-objects": strategy})
        _PLANS[strategy] = env.compile_plan_sql(PROGRAM).as_json()
    return _PLANS[strategy]


def test_compile_strategies_store_what_they_say() -> None:
    import json

    tables = {s: json.loads(compiled(s))["nodes"][0]["table"] for s in ("ALL", "SCHEMA", "IDENTIFIER")}
    assert tables["ALL"]["resolvedTable"]["options"] == ORIGINAL
    assert [c["name"] for c in tables["ALL"]["resolvedTable"]["schema"]["columns"]] == ORIGINAL_COLUMNS
    assert "options" not in tables["SCHEMA"]["resolvedTable"]
    assert [c["name"] for c in tables["SCHEMA"]["resolvedTable"]["schema"]["columns"]] == ORIGINAL_COLUMNS
    assert tables["IDENTIFIER"] == {"identifier": "`default_catalog`.`default_database`.`clicks`"}


@pytest.mark.parametrize(("compile_strategy", "restore_strategy", "enrich", "scenario"), CELLS,
                         ids=[f"{c}-{r}-enrich_{str(e).lower()}-{s}" for c, r, e, s in CELLS])
def test_strategy_matrix(compile_strategy: str, restore_strategy: str, enrich: bool, scenario: str,
                         caplog: pytest.LogCaptureFixture) -> None:
    expected = EXPECTED[(compile_strategy, restore_strategy, enrich)][scenario]
    if compile_strategy == "IDENTIFIER" and scenario == "schema" and restore_strategy != "ALL_ENFORCED":
        expected = IDENTIFIER_SCHEMA_ERR
    env = env_with(SCENARIOS[scenario], **{"table.plan.restore.catalog-objects": restore_strategy,
                                           "table.plan.restore.enrich-table-options": str(enrich).lower()})
    text = compiled(compile_strategy)
    if isinstance(expected, Err):
        with pytest.raises(PlanIncompatible) as info:
            restore(text, env)
        rendered = info.value.render()
        assert "clicks" in rendered
        for fragment in expected.fragments:
            assert fragment in rendered, f"{fragment!r} not in {rendered!r}"
        assert info.value.hint, "an error must say how to fix it"
        return
    with caplog.at_level(logging.INFO, logger="planengine.restore"):
        plan, sinks = restore(text, env)
    tables = restored_tables(sinks)
    assert tables["clicks"].options_dict == expected.options
    assert [c.name for c in tables["clicks"].schema.columns] == ORIGINAL_COLUMNS
    assert tables["out_t"].options_dict["path"] == "/out"
    clicks_decisions = [d for d in plan.restore_decisions if "`clicks`" in d]
    assert clicks_decisions, "every table resolution is a logged decision"
    assert all(d.startswith("node 1: table `default_catalog`.`default_database`.`clicks`") for d in clicks_decisions)
    assert any(d in r.getMessage() for r in caplog.records for d in clicks_decisions)


# --- enrichment details -------------------------------------------------------------------------------------
def test_enrichment_is_logged_with_old_and_new_value(caplog: pytest.LogCaptureFixture) -> None:
    env = env_with(SCENARIOS["mutable-option"])
    with caplog.at_level(logging.INFO, logger="planengine.restore"):
        restore(compiled("ALL"), env)
    assert "option 'source.monitor-interval' enriched from the catalog ('10 s' -> '1 min', mutable)" in caplog.text


def test_a_non_mutable_option_added_in_the_catalog_is_refused() -> None:
    env = env_with(CLICKS.format(extra_options=", 'source.path.regex-pattern' = '.*json'") + ";" + OUT)
    with pytest.raises(PlanIncompatible, match=re.escape("'source.path.regex-pattern' was added in the catalog")):
        restore(compiled("ALL"), env)


def test_wildcard_mutable_options_are_mutable() -> None:
    """filesystem lists ``sink.rolling-policy.*`` as mutable: a rolling-policy change must not be refused."""
    sink = OUT.replace("'format' = 'json'", "'format' = 'json', 'sink.rolling-policy.file-size' = '1MB'")
    env = env_with(CLICKS.format(extra_options="") + ";" + sink)
    _, sinks = restore(compiled("ALL"), env)
    assert restored_tables(sinks)["out_t"].options_dict["sink.rolling-policy.file-size"] == "1MB"


# --- jdbc: lookup cache, credentials, secrets -----------------------------------------------------------------
USERS = ("CREATE TABLE users (user_id BIGINT, name STRING, PRIMARY KEY (user_id) NOT ENFORCED) WITH ("
         "'connector' = 'jdbc', 'url' = '{url}', 'table-name' = 'users', 'username' = 'reader', "
         "'password' = '{password}', 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '{rows}')")
PROC_CLICKS = ("CREATE TABLE pclicks (user_id BIGINT, page STRING, proc AS PROCTIME()) "
               "WITH ('connector' = 'filesystem', 'path' = '/data/clicks', 'format' = 'json')")
LOOKUP = ("INSERT INTO out_t SELECT u.name, c.user_id FROM pclicks AS c "
          "JOIN users FOR SYSTEM_TIME AS OF c.proc AS u ON c.user_id = u.user_id")
URL = "jdbc:postgresql://db:5432/shop"
SECRET = "s3cr3t-at-compile"


def users_ddl(url: str = URL, password: str = SECRET, rows: str = "1000") -> str:
    return ";".join([PROC_CLICKS, USERS.format(url=url, password=password, rows=rows), OUT])


def lookup_plan(**config: str) -> str:
    return env_with(users_ddl(), **config).compile_plan_sql(LOOKUP).as_json()


def test_secrets_are_masked_in_the_plan() -> None:
    text = lookup_plan()
    assert SECRET not in text
    assert f'"password":"{MASK}"' in text


@pytest.mark.parametrize(("restore_strategy", "enrich"), [("ALL", "true"), ("ALL", "false"),
                                                          ("IDENTIFIER", "true"), ("IDENTIFIER", "false")])
def test_secrets_come_from_the_catalog(restore_strategy: str, enrich: str) -> None:
    env = env_with(users_ddl(password="rotated"), **{"table.plan.restore.catalog-objects": restore_strategy,
                                                     "table.plan.restore.enrich-table-options": enrich})
    _, sinks = restore(lookup_plan(), env)
    assert restored_tables(sinks)["users"].options_dict["password"] == "rotated"


def test_masked_secret_under_all_enforced_is_an_error_that_points_to_all() -> None:
    env = env_with(users_ddl(), **{"table.plan.restore.catalog-objects": "ALL_ENFORCED"})
    with pytest.raises(PlanIncompatible) as info:
        restore(lookup_plan(), env)
    assert "password" in info.value.message and "masked" in info.value.message
    assert "restore with 'ALL'" in info.value.hint


def test_masked_secret_without_catalog_entry_is_an_error() -> None:
    env = env_with(";".join([PROC_CLICKS, OUT]))
    with pytest.raises(PlanIncompatible) as info:
        restore(lookup_plan(), env)
    assert "password" in info.value.message and "catalog does not provide" in info.value.message
    assert "register the table" in info.value.hint


def test_masked_secret_missing_from_the_catalog_entry_is_an_error() -> None:
    ddl = users_ddl().replace(f"'password' = '{SECRET}', ", "")
    for enrich in ("true", "false"):
        env = env_with(ddl, **{"table.plan.restore.enrich-table-options": enrich})
        with pytest.raises(PlanIncompatible, match="password"):
            restore(lookup_plan(), env)


def test_jdbc_lookup_cache_is_mutable() -> None:
    env = env_with(users_ddl(rows="50000"))
    _, sinks = restore(lookup_plan(), env)
    assert restored_tables(sinks)["users"].options_dict["lookup.partial-cache.max-rows"] == "50000"


def test_jdbc_url_is_not_mutable() -> None:
    env = env_with(users_ddl(url="jdbc:postgresql://other:5432/shop"))
    with pytest.raises(PlanIncompatible, match="option 'url' changed"):
        restore(lookup_plan(), env)


# --- temporary tables ----------------------------------------------------------------------------------------
TEMP = CLICKS.format(extra_options="").replace("CREATE TABLE", "CREATE TEMPORARY TABLE") + ";" + OUT


@pytest.mark.parametrize("compile_strategy", ["ALL", "SCHEMA", "IDENTIFIER"])
def test_temporary_tables_are_stored_by_identifier_only(compile_strategy: str) -> None:
    import json

    env = env_with(TEMP, **{"table.plan.compile.catalog-objects": compile_strategy})
    table = json.loads(env.compile_plan_sql(PROGRAM).as_json())["nodes"][0]["table"]
    assert table == {"identifier": "`default_catalog`.`default_database`.`clicks`", "temporary": True}


@pytest.mark.parametrize("restore_strategy", ["ALL", "ALL_ENFORCED", "IDENTIFIER"])
def test_temporary_table_must_be_redeclared(restore_strategy: str) -> None:
    text = env_with(TEMP).compile_plan_sql(PROGRAM).as_json()
    with pytest.raises(PlanIncompatible) as info:
        restore(text, env_with(OUT, **{"table.plan.restore.catalog-objects": restore_strategy}))
    assert "temporary table `default_catalog`.`default_database`.`clicks`" in info.value.message
    assert "CREATE TEMPORARY TABLE" in info.value.hint
    _, sinks = restore(text, env_with(TEMP, **{"table.plan.restore.catalog-objects": restore_strategy}))
    assert restored_tables(sinks)["clicks"].options_dict == ORIGINAL


def test_redeclared_temporary_table_with_another_schema_is_refused() -> None:
    text = env_with(TEMP).compile_plan_sql(PROGRAM).as_json()
    changed = TEMP.replace("page STRING,", "page STRING, country STRING,")
    with pytest.raises(PlanIncompatible, match="changed its schema"):
        restore(text, env_with(changed))
