"""Malformed input: each error names statement, line and column, shows a caret and says what was expected."""

from __future__ import annotations

import pytest

from planengine.errors import SqlParseError
from planengine.sql import parse_expression, parse_query, parse_script, parse_type

# script, expected reason (exact), statement, line, column
MALFORMED = [
    ("CRATE TABLE t (a INT)", "unknown statement 'CRATE'; did you mean CREATE?", 1, 1, 1),
    ("SELECT 1; SELEC 2", "unknown statement 'SELEC'; did you mean SELECT?", 2, 1, 11),
    (
        "SELECT 1;\nCREATE TABLE t (a INT, b STRING WITH ('connector' = 'x')",
        "expected ')' after column list, found 'WITH'",
        2,
        2,
        33,
    ),
    (
        "CREATE TABLE t (\n  a INT,\n  PRIMARY KEY (a)\n) WITH ('connector' = 'print')",
        "PRIMARY KEY must be declared NOT ENFORCED: Flink does not own the data, so it cannot enforce the key "
        "(write PRIMARY KEY (...) NOT ENFORCED)",
        1,
        3,
        3,
    ),
    ("SELECT a FROM t\nSELECT b FROM u",
     "missing ';' before line 2 column 1: the statement before 'SELECT' does not end with ';'", 1, 2, 1),
    # sqlglot gives up on the CREATE TABLE and would keep it as an opaque command (with a raw warning)
    ("CREATE TABLE t (a INT) WITH ('connector' = 'datagen')\nCREATE TABLE s (a INT) WITH ('connector' = 'print');",
     "missing ';' before line 2 column 1: the statement before 'CREATE' does not end with ';'", 1, 2, 1),
    ("SELECT 1;\nCREATE TABLE s (a INT) WITH ('connector' = 'print')\n  INSERT INTO s SELECT 1;",
     "missing ';' before line 3 column 3: the statement before 'INSERT' does not end with ';'", 2, 3, 3),
    ("SET 'table.exec.state.ttl' = '1 h'\nINSERT INTO s SELECT 1",
     "missing ';' before line 2 column 1: the statement before 'INSERT' does not end with ';'", 1, 2, 1),
    ("SELECT 1;\nSELECT 'abc FROM t", "unterminated string literal", 2, 2, 8),
    ("SELECT `abc FROM t", "unterminated quoted identifier", 1, 1, 8),
    (
        "SELECT 1;\nBEGIN STATEMENT SET;\nINSERT INTO a SELECT 1;",
        "unbalanced BEGIN … END: statement set is not closed with END",
        2,
        2,
        1,
    ),
    (
        "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1;",
        "unbalanced BEGIN … END: statement set is not closed with END",
        1,
        1,
        23,
    ),
    (
        "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; SELECT 2; END",
        "only INSERT statements are allowed in a statement set, found 'SELECT'",
        1,
        1,
        53,
    ),
    ("BEGIN; INSERT INTO a SELECT 1; END", "expected STATEMENT SET after BEGIN (Flink has no transactions)", 1, 1, 6),
    ("SET 'k' 'v'", "expected '=' after the option key 'k' in SET", 1, 1, 9),
    ("SHOW TABLE", "did you mean SHOW TABLES? expected TABLES, VIEWS, [USER] FUNCTIONS, CATALOGS, DATABASES, "
     "COLUMNS FROM <table>, CREATE TABLE|VIEW <name> or CURRENT CATALOG|DATABASE after SHOW", 1, 1, 6),
    (
        "CREATE TABLE t (a INT) WITH ('connector' = 1)",
        "the value of option 'connector' must be a quoted string, found '1'",
        1,
        1,
        44,
    ),
    (
        "CREATE TABLE t (a INT) WITH (connector = 'x')",
        "expected an option key like 'connector' as a quoted string, found 'connector'",
        1,
        1,
        30,
    ),
    ("CREATE TABLE t (a INT) WITH ('a' = 'b'", "expected ')' after the WITH options, found end of input", 1, 1, 39),
    ("SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts)))", "TUMBLE is missing its SIZE argument", 1, 1, 21),
    (
        "SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), SIZEE => INTERVAL '1' MINUTE))",
        "unknown argument 'SIZEE' for TUMBLE; expected DATA, TIMECOL, SIZE, OFFSET",
        1,
        1,
        21,
    ),
    (
        "SELECT * FROM TABLE(SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' MINUTE))",
        "too many arguments for SESSION: expected DATA, TIMECOL, GAP",
        1,
        1,
        21,
    ),
    (
        "SELECT * FROM TABLE(TUMBLE(t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))",
        "the DATA argument of TUMBLE must be TABLE <name>",
        1,
        1,
        21,
    ),
    (
        "COMPILE PLAN p.json FOR INSERT INTO t SELECT 1",
        "expected the plan path as a quoted string, found 'p'",
        1,
        1,
        14,
    ),
    (
        "COMPILE PLAN 'p.json' INSERT INTO t SELECT 1",
        "expected FOR <insert | statement set> or FROM '<old plan>'",
        1,
        1,
        23,
    ),
    ("COMPILE 'p'", "expected PLAN or AND EXECUTE PLAN after COMPILE", 1, 1, 9),
    ("EXPLAIN PLAN", "expected FOR <statement> or a plan path after EXPLAIN PLAN", 1, 1, 13),
    ("EXECUTE SELECT 1", "expected INSERT, STATEMENT SET or PLAN after EXECUTE", 1, 1, 9),
    (
        "CREATE FUNCTION f AS com.Cls",
        "expected the implementation class name as a quoted string, found 'com'",
        1,
        1,
        22,
    ),
    ("CREATE FUNCTION f AS 'com.Cls' LANGUAGE RUST", "expected PYTHON, JAVA or SCALA after LANGUAGE", 1, 1, 41),
    ("SELECT CAST(a AS ROW<a INT, b STRING) FROM t", "expected '>' after ROW fields", 1, 1, 37),
    ("SELECT (1 + 2", "expected ')', found end of input", 1, 1, 14),
    ("INSERT INTO t", "expected SELECT or VALUES after the INSERT target", 1, 1, 14),
    ("CREATE TABLE t (a INT, WATERMARK ts AS ts)", "expected FOR <column> after WATERMARK", 1, 1, 34),
    ("DROP SCHEMAX foo", "expected TABLE, VIEW, FUNCTION, CATALOG or DATABASE after DROP", 1, 1, 6),
    ("USE", "expected CATALOG <name> or a database name after USE", 1, 1, 1),
    (
        "CREATE TABLE t AS SELECT 1",
        "CREATE TABLE ... AS SELECT is not supported; create the table, then INSERT",
        1,
        1,
        1,
    ),
]


@pytest.mark.parametrize(("script", "reason", "statement", "line", "column"), MALFORMED)
def test_malformed_input_is_reported_precisely(script, reason, statement, line, column):
    with pytest.raises(SqlParseError) as caught:
        parse_script(script, source="job.sql")
    error = caught.value
    assert error.reason == reason
    location = error.location
    assert (location.statement, location.line, location.column, location.source) == (statement, line, column, "job.sql")
    assert error.exit_code == 2
    # The rendered message leads with the location, then the reason, then the source line and a caret.
    rendered = str(error)
    assert rendered.startswith(f"job.sql, statement {statement}, line {line}, column {column}: {reason}")
    source_line = script.split("\n")[line - 1]
    excerpt, caret = rendered.split("\n")[-2:]
    assert excerpt == f"  {source_line}"
    assert caret == "  " + " " * (column - 1) + "^"


def test_match_recognize_is_refused_by_name_where_it_stands_with_what_to_use_instead():
    script = ("SELECT 1;\nINSERT INTO s\nSELECT * FROM t\n"
              "  MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts MEASURES A.v AS v PATTERN (A B) DEFINE A AS A.v > 1) AS m")
    with pytest.raises(SqlParseError) as caught:
        parse_script(script, source="job.sql")
    error = caught.value
    assert error.reason == "MATCH_RECOGNIZE is not supported by planengine"
    location = error.location
    assert (location.statement, location.line, location.column) == (2, 4, 3)
    assert "LAG(...) OVER (PARTITION BY <key> ORDER BY <time attribute>)" in (error.hint or "")
    assert error.exit_code == 2


def test_a_column_quoted_as_match_recognize_is_still_a_column():
    assert parse_script("SELECT `match_recognize` FROM t")


def test_a_missing_semicolon_leaks_no_library_warning(caplog):
    with caplog.at_level("DEBUG"), pytest.raises(SqlParseError, match="missing ';' before line 2 column 1"):
        parse_script("CREATE TABLE t (a INT) WITH ('connector' = 'datagen')\nCREATE TABLE s (a INT)")
    assert [r.getMessage() for r in caplog.records if r.name.startswith("sqlglot")] == []


def test_single_query_entry_points_reject_other_input():
    with pytest.raises(SqlParseError, match="expected exactly one query"):
        parse_query("SET 'a' = 'b'")
    with pytest.raises(SqlParseError, match="expected exactly one query"):
        parse_query("SELECT 1; SELECT 2")
    with pytest.raises(SqlParseError) as caught:
        parse_expression("a +")
    assert caught.value.reason == "incomplete expression, found end of input"
    assert caught.value.location.column == 4
    with pytest.raises(SqlParseError) as caught:
        parse_type("ARRAY<INT")
    assert caught.value.location.line == 1


def test_parse_expression_and_type_entry_points():
    assert parse_expression("ts - INTERVAL '5' SECOND").sql("flink") == "ts - INTERVAL '5' SECOND"
    assert parse_expression("CAST(x AS BIGINT) + 1").sql("flink") == "CAST(x AS BIGINT) + 1"
    assert parse_type("TIMESTAMP(3) NOT NULL").args["nullable"] is False
