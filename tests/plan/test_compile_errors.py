"""Compile-time failures (DESIGN §2, §5): a query the engine cannot run fails while planning, naming the
statement, line and column, the node, and what to do; the CLI prints the same message and exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.cli import main as cli_main
from planengine.errors import UserError
from tests.plan._support import cli

BASE = """CREATE TABLE clicks (user_id BIGINT, page STRING, ts TIMESTAMP(3), proc AS PROCTIME(),
  WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem', 'path' = '/d', 'format' = 'json');
CREATE TABLE json_out (page STRING, cnt BIGINT) WITH ('connector' = 'filesystem', 'path' = '/o', 'format' = 'json');
CREATE TABLE jdbc_out (page STRING, cnt BIGINT)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://db/x', 'table-name' = 't');
CREATE TABLE users (user_id BIGINT, name STRING, PRIMARY KEY (user_id) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://db/x', 'table-name' = 'users');
CREATE TABLE rates (currency STRING, rate BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'filesystem', 'path' = '/r', 'format' = 'json');
CREATE TABLE w_out (page STRING, ws TIMESTAMP(3), cnt BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '/w', 'format' = 'changelog-json');
"""

# name -> (extra DDL, the failing statement, fragments of message + hint, token the location points at or None
#          for the start of the INSERT)
CASES: dict[str, tuple[str, str, tuple[str, ...], str | None]] = {
    "insert-only-sink-fed-by-group-by": (
        "", "INSERT INTO json_out SELECT page, COUNT(*) FROM clicks GROUP BY page",
        ("sink `default_catalog`.`default_database`.`json_out` accepts insert-only rows", "produces updates",
         "give `default_catalog`.`default_database`.`json_out` a PRIMARY KEY", "or use a connector/format that "
         "accepts a changelog"), None),
    "window-aggregate-over-updates": (
        "CREATE VIEW latest AS SELECT page, MAX(ts) AS ts FROM clicks GROUP BY page;\n",
        "INSERT INTO w_out SELECT page, window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE latest, DESCRIPTOR(ts), "
        "INTERVAL '1' MINUTE)) GROUP BY page, window_start, window_end",
        ("WindowTableFunction(TUMBLE", "doesn't support consuming update and delete changes", "insert-only input",
         "aggregate after them instead of before"), None),
    "over-ordered-by-non-time-column": (
        "", "INSERT INTO json_out SELECT page, COUNT(*) OVER (PARTITION BY page ORDER BY user_id "
            "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM clicks",
        ("an OVER window ordered by a non-time column supports only one ORDER BY column with RANGE BETWEEN "
         "UNBOUNDED PRECEDING AND CURRENT ROW", "order by the rowtime column for bounded frames"), None),
    "order-by-without-limit": (
        "", "INSERT INTO json_out SELECT page, user_id FROM clicks ORDER BY user_id",
        ("streaming ORDER BY must start with a time attribute", "add LIMIT n"), None),
    "upsert-sink-without-primary-key": (
        "", "INSERT INTO jdbc_out SELECT page, COUNT(*) FROM clicks GROUP BY page",
        ("`jdbc_out` accepts insert-only rows", "a PRIMARY KEY (upsert)"), None),
    "lookup-join-without-equality": (
        "", "INSERT INTO json_out SELECT u.name, c.user_id FROM clicks AS c "
            "JOIN users FOR SYSTEM_TIME AS OF c.proc AS u ON c.user_id > u.user_id",
        ("lookup join needs an equality condition", "join ON o.key = d.key"), None),
    "unknown-table": (
        "", "INSERT INTO json_out SELECT page, user_id FROM clickz",
        ("`clickz` does not exist; did you mean `clicks`?", "check the name"), "clickz"),
    "insert-column-count": (
        "", "INSERT INTO json_out SELECT page, user_id, ts FROM clicks",
        ("the query produces 3 columns but `default_catalog`.`default_database`.`json_out` expects 2",
         "sink columns: [page, cnt]"), None),
    "insert-type-mismatch": (
        "", "INSERT INTO json_out SELECT user_id, page FROM clicks",
        ("column 'page' of `default_catalog`.`default_database`.`json_out` has type STRING but the query gives "
         "BIGINT", "CAST the expression to STRING"), None),
    "bad-connector-options": (
        "CREATE TABLE t (a INT) WITH ('connector' = 'filesystem', 'formatt' = 'json');\n",
        "INSERT INTO json_out SELECT 'a', CAST(a AS BIGINT) FROM t",
        ("unknown option 'formatt': did you mean 'format'?", "missing required option 'path'",
         "missing required option 'format'", "supported options:"), None),
    "unknown-function": (
        "", "INSERT INTO json_out SELECT UPPPER(page), user_id FROM clicks",
        ("unknown function UPPPER", "did you mean UPPER?"), "UPPPER"),
}
XFAIL: dict[str, str] = {}


def script(extra_ddl: str, statement: str, plan_path: Path) -> tuple[str, str]:
    """The script, and the text of its failing statement (``COMPILE PLAN ... FOR <statement>``)."""
    failing = f"COMPILE PLAN '{plan_path}' FOR {statement}"
    return BASE + extra_ddl + failing + ";\n", failing


def expected_locations(text: str, failing: str, statement_text: str, token: str | None) -> tuple[int, set]:
    """Where the error may point: at the token; else at the COMPILE PLAN statement or the INSERT it plans."""
    start = text.index(failing)
    statement = text[:start].count(";") + 1
    offsets = [text.index(token, start)] if token else [start, text.index(statement_text, start)]
    return statement, {(text[:o].count("\n") + 1, o - (text.rfind("\n", 0, o) + 1) + 1) for o in offsets}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=XFAIL[c]))
                                  if c in XFAIL else c for c in CASES])
def test_compile_error(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra, statement, fragments, token = CASES[case]
    text, failing = script(extra, statement, tmp_path / "p.json")
    with pytest.raises(UserError) as info:
        TableEnvironment().execute_sql(text)
    error = info.value
    rendered = error.render()
    for fragment in fragments:
        assert fragment in rendered, f"{fragment!r} not in {rendered!r}"
    assert error.hint
    assert not (tmp_path / "p.json").exists()
    # The CLI: same message, exit 2, nothing written.
    path = tmp_path / "job.sql"
    path.write_text(text)
    assert cli_main(["compile", str(path), "-o", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert error.message in err and error.hint in err
    assert not (tmp_path / "out.json").exists()
    statement_no, allowed = expected_locations(text, failing, statement, token)
    assert error.location is not None
    assert error.location.statement == statement_no
    assert (error.location.line, error.location.column) in allowed
    assert f"statement {statement_no}, line {error.location.line}, column {error.location.column}" in err


@pytest.mark.usefixtures("engine_process")
def test_primary_key_must_be_not_enforced(tmp_path: Path) -> None:
    text = BASE + "CREATE TABLE t (a INT,\n  PRIMARY KEY (a)) WITH ('connector' = 'print');\n"
    with pytest.raises(UserError) as info:
        TableEnvironment().execute_sql(text)
    assert "PRIMARY KEY must be declared NOT ENFORCED" in info.value.message
    assert "write PRIMARY KEY (...) NOT ENFORCED" in info.value.render()
    assert info.value.location.statement == 7
    assert (info.value.location.line, info.value.location.column) == (text.count("\n"), 3)
    path = tmp_path / "job.sql"
    path.write_text(text + "INSERT INTO t SELECT 1;\n")
    out = cli("compile", str(path))
    assert out.returncode == 2 and "PRIMARY KEY must be declared NOT ENFORCED" in out.stderr
    assert f"{path}, statement 7, line {text.count(chr(10))}, column 3" in out.stderr


def test_temporal_join_needs_a_versioned_table() -> None:
    env = TableEnvironment()
    env.execute_sql(BASE)
    with pytest.raises(UserError, match="PRIMARY KEY"):
        env.compile_plan_sql("INSERT INTO json_out SELECT c.page, r.rate FROM clicks AS c "
                             "JOIN rates FOR SYSTEM_TIME AS OF c.ts AS r ON c.page = r.currency")


def test_insert_only_sink_error_names_the_updating_node() -> None:
    """DESIGN §5: the error names the node that produces the updates, not a Calc above it."""
    env = TableEnvironment()
    env.execute_sql(BASE)
    with pytest.raises(UserError, match=r"but GroupAggregate\(groupBy=\[page\]"):
        env.compile_plan_sql("INSERT INTO json_out SELECT page, COUNT(*) FROM clicks GROUP BY page")
