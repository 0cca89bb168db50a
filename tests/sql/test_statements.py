"""Every statement form of DESIGN §2 becomes the right dataclass with the right fields."""

from __future__ import annotations

import pytest

from planengine.sql import parse_script
from planengine.sql import statements as st


def one(sql: str) -> st.Statement:
    (statement,) = parse_script(sql)
    return statement


CREATE_TABLE = """
CREATE TEMPORARY TABLE IF NOT EXISTS cat.db.orders (
  id BIGINT NOT NULL,
  price DECIMAL(10, 2),
  ts TIMESTAMP(3),
  total AS price * 2 COMMENT 'doubled',
  pt AS PROCTIME(),
  event_time TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
  `partition` INT METADATA,
  tags ARRAY<STRING NOT NULL>,
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,
  PRIMARY KEY (id) NOT ENFORCED
) COMMENT 'all orders' PARTITIONED BY (id, price) WITH ('connector' = 'kafka', 'format' = 'json')
"""


def test_create_table_all_parts():
    table = one(CREATE_TABLE)
    assert isinstance(table, st.CreateTable)
    assert table.name == ("cat", "db", "orders")
    assert (table.temporary, table.if_not_exists, table.comment) == (True, True, "all orders")
    assert [(c.name, c.type_text) for c in table.columns] == [
        ("id", "BIGINT NOT NULL"),
        ("price", "DECIMAL(10, 2)"),
        ("ts", "TIMESTAMP(3)"),
        ("total", None),
        ("pt", None),
        ("event_time", "TIMESTAMP_LTZ(3)"),
        ("partition", "INT"),
        ("tags", "ARRAY<STRING NOT NULL>"),
    ]
    total, pt, event_time, part = table.columns[3:7]
    assert total.expression.sql("flink") == "price * 2" and total.comment == "doubled"
    assert pt.expression.sql("flink") == "PROCTIME()"
    assert (event_time.is_metadata, event_time.metadata_key, event_time.virtual) == (True, "timestamp", True)
    assert (part.is_metadata, part.metadata_key, part.virtual) == (True, None, False)
    assert table.watermark.column == "ts"
    assert table.watermark.expression.sql("flink") == "ts - INTERVAL '5' SECOND"
    assert table.primary_key == ("id",)
    assert table.partitioned_by == ("id", "price")
    assert table.options == (("connector", "kafka"), ("format", "json"))
    assert table.index == 1 and table.text.startswith("CREATE TEMPORARY TABLE")


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE t (a INT, CONSTRAINT pk PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'print')",
        "CREATE TABLE t (a INT PRIMARY KEY NOT ENFORCED) WITH ('connector' = 'print')",
    ],
)
def test_primary_key_forms(sql):
    table = one(sql)
    assert table.primary_key == ("a",)
    assert (table.temporary, table.if_not_exists, table.watermark, table.partitioned_by) == (False, False, None, ())


def test_create_view():
    view = one("CREATE TEMPORARY VIEW IF NOT EXISTS v (a, b) AS SELECT x, y FROM t")
    assert isinstance(view, st.CreateView)
    assert (view.name, view.column_names, view.temporary, view.if_not_exists) == (("v",), ("a", "b"), True, True)
    assert view.query.sql("flink") == "SELECT x, y FROM t"
    plain = one("CREATE VIEW db.v AS SELECT 1")
    assert (plain.name, plain.column_names, plain.temporary) == (("db", "v"), (), False)


@pytest.mark.parametrize(
    ("sql", "name", "class_name", "language", "temporary", "system", "if_not_exists"),
    [
        ("CREATE FUNCTION f AS 'pkg.mod.F'", ("f",), "pkg.mod.F", "PYTHON", False, False, False),
        (
            "CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS f AS 'pkg.F' LANGUAGE PYTHON",
            ("f",),
            "pkg.F",
            "PYTHON",
            True,
            True,
            True,
        ),
        ("CREATE TEMPORARY FUNCTION db.f AS 'com.F' LANGUAGE JAVA", ("db", "f"), "com.F", "JAVA", True, False, False),
    ],
)
def test_create_function(sql, name, class_name, language, temporary, system, if_not_exists):
    function = one(sql)
    assert isinstance(function, st.CreateFunction)
    assert (function.name, function.class_name, function.language) == (name, class_name, language)
    assert (function.temporary, function.system, function.if_not_exists) == (temporary, system, if_not_exists)


def test_catalog_database_use():
    catalog, database, use_catalog, use_db, use_qualified = parse_script(
        "CREATE CATALOG c WITH ('type' = 'generic_in_memory', 'x' = 'y');"
        "CREATE DATABASE IF NOT EXISTS c.db; USE CATALOG c; USE db; USE c.db"
    )
    assert catalog == st.CreateCatalog(
        index=1,
        location=catalog.location,
        text=catalog.text,
        name="c",
        options=(("type", "generic_in_memory"), ("x", "y")),
    )
    assert isinstance(database, st.CreateDatabase) and database.name == ("c", "db") and database.if_not_exists
    assert isinstance(use_catalog, st.UseCatalog) and use_catalog.name == "c"
    assert isinstance(use_db, st.UseDatabase) and use_db.name == ("db",)
    assert use_qualified.name == ("c", "db")


@pytest.mark.parametrize(
    ("sql", "kind", "name", "if_exists", "temporary"),
    [
        ("DROP TABLE t", "TABLE", ("t",), False, False),
        ("DROP TEMPORARY TABLE IF EXISTS db.t", "TABLE", ("db", "t"), True, True),
        ("DROP VIEW IF EXISTS v", "VIEW", ("v",), True, False),
        ("DROP TEMPORARY VIEW v", "VIEW", ("v",), False, True),
        ("DROP FUNCTION c.db.f", "FUNCTION", ("c", "db", "f"), False, False),
        ("DROP TEMPORARY SYSTEM FUNCTION IF EXISTS f", "FUNCTION", ("f",), True, True),
        ("DROP CATALOG IF EXISTS c", "CATALOG", ("c",), True, False),
        ("DROP DATABASE db", "DATABASE", ("db",), False, False),
    ],
)
def test_drop(sql, kind, name, if_exists, temporary):
    drop = one(sql)
    assert isinstance(drop, st.Drop)
    assert (drop.kind, drop.name, drop.if_exists, drop.temporary) == (kind, name, if_exists, temporary)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SET 'table.exec.mini-batch.enabled' = 'true'", ("SetOption", "table.exec.mini-batch.enabled", "true")),
        ("SET pipeline.name = my-job", ("SetOption", "pipeline.name", "my-job")),
        ("SET", ("SetOption", None, None)),
        ("RESET 'k'", ("ResetOption", "k", None)),
        ("RESET", ("ResetOption", None, None)),
    ],
)
def test_set_and_reset(sql, expected):
    statement = one(sql)
    assert (type(statement).__name__, statement.key, getattr(statement, "value", None)) == expected


def test_insert_forms():
    insert = one("INSERT OVERWRITE db.t PARTITION (dt = '2024-01-01', h = '1') (a, b) SELECT x, y FROM s")
    assert isinstance(insert, st.Insert)
    assert (insert.table, insert.overwrite, insert.columns) == (("db", "t"), True, ("a", "b"))
    assert insert.static_partition == (("dt", "2024-01-01"), ("h", "1"))
    assert insert.query.sql("flink") == "SELECT x, y FROM s"

    values = one("INSERT INTO t /*+ OPTIONS('sink.parallelism' = '2') */ VALUES (1, 'a'), (2, 'b')")
    assert values.options_hint == (("sink.parallelism", "2"),)
    assert (values.overwrite, values.columns) == (False, ())
    assert values.query.sql("flink") == "VALUES (1, 'a'), (2, 'b')"

    executed = one("EXECUTE INSERT INTO t SELECT * FROM s")
    assert isinstance(executed, st.Insert) and executed.table == ("t",)


STATEMENT_SETS = """
EXECUTE STATEMENT SET
BEGIN
  INSERT INTO a SELECT CASE WHEN x > 0 THEN 'p' ELSE 'n' END FROM s;
  INSERT INTO b SELECT * FROM s;
END;
BEGIN STATEMENT SET;
INSERT INTO c SELECT 1;
INSERT INTO d SELECT 2;
END;
"""


def test_statement_sets_both_forms():
    modern, legacy = parse_script(STATEMENT_SETS)
    assert isinstance(modern, st.StatementSet) and isinstance(legacy, st.StatementSet)
    assert [i.table for i in modern.inserts] == [("a",), ("b",)]
    assert [i.table for i in legacy.inserts] == [("c",), ("d",)]
    first = modern.inserts[0]
    assert first.text == "INSERT INTO a SELECT CASE WHEN x > 0 THEN 'p' ELSE 'n' END FROM s"
    assert (first.location.statement, first.location.line, first.location.column) == (1, 4, 3)
    assert (legacy.index, legacy.location.line) == (2, 7)


def test_plan_statements():
    compiled, compiled_set, both, execute, migrate = parse_script(
        "COMPILE PLAN '/p.json' IF NOT EXISTS FOR INSERT INTO t SELECT 1;\n"
        "COMPILE PLAN 'q.json' FOR STATEMENT SET BEGIN INSERT INTO t SELECT 1; INSERT INTO u SELECT 2; END;\n"
        "COMPILE AND EXECUTE PLAN 'p' FOR INSERT INTO t SELECT 1;\n"
        "EXECUTE PLAN 'p';\n"
        "COMPILE PLAN 'new.json' FROM 'old.json'"
    )
    assert isinstance(compiled, st.CompilePlan) and compiled.path == "/p.json" and compiled.if_not_exists
    assert isinstance(compiled.body, st.Insert) and compiled.body.table == ("t",)
    assert isinstance(compiled_set.body, st.StatementSet) and not compiled_set.if_not_exists
    assert [i.table for i in compiled_set.body.inserts] == [("t",), ("u",)]
    assert isinstance(both, st.CompileAndExecutePlan) and both.path == "p" and isinstance(both.body, st.Insert)
    assert isinstance(execute, st.ExecutePlan) and execute.path == "p"
    assert isinstance(migrate, st.MigratePlan) and (migrate.new_path, migrate.old_path) == ("new.json", "old.json")


def test_explain_forms():
    details, plan_for, explain_plan, plain, statement_set = parse_script(
        "EXPLAIN ESTIMATED_COST, CHANGELOG_MODE, PLAN_ADVICE, JSON_EXECUTION_PLAN SELECT 1;"
        "EXPLAIN PLAN FOR INSERT INTO t SELECT 1;"
        "EXPLAIN PLAN '/p.json';"
        "EXPLAIN SELECT * FROM t;"
        "EXPLAIN STATEMENT SET BEGIN INSERT INTO t SELECT 1; END"
    )
    assert isinstance(details, st.Explain) and isinstance(details.body, st.Query)
    assert details.details == ("ESTIMATED_COST", "CHANGELOG_MODE", "PLAN_ADVICE", "JSON_EXECUTION_PLAN")
    assert isinstance(plan_for.body, st.Insert) and plan_for.details == ()
    assert isinstance(explain_plan, st.ExplainPlan) and explain_plan.path == "/p.json"
    assert plain.body.query.sql("flink") == "SELECT * FROM t"
    assert isinstance(statement_set.body, st.StatementSet)


@pytest.mark.parametrize("kind", ["TABLES", "VIEWS", "FUNCTIONS", "CATALOGS", "DATABASES"])
def test_show(kind):
    show = one(f"show {kind.lower()}")
    assert isinstance(show, st.Show) and show.kind == kind


@pytest.mark.parametrize(
    ("sql", "generated"),
    [
        ("SELECT a FROM t", "SELECT a FROM t"),
        ("VALUES (1, 'a'), (2, 'b')", "VALUES (1, 'a'), (2, 'b')"),
        ("WITH x AS (SELECT 1 AS a) SELECT a FROM x", "WITH x AS (SELECT 1 AS a) SELECT a FROM x"),
        ("SELECT a FROM t UNION ALL SELECT b FROM u", "SELECT a FROM t UNION ALL SELECT b FROM u"),
        ("(SELECT 1)", "(SELECT 1)"),
    ],
)
def test_bare_queries(sql, generated):
    query = one(sql)
    assert isinstance(query, st.Query)
    assert query.query.sql("flink") == generated


def test_statement_numbers_locations_and_text():
    script = "-- setup\nSET 'a' = 'b';\n\n  SELECT 1;;\nSHOW TABLES"
    statements = parse_script(script, source="job.sql")
    assert [s.index for s in statements] == [1, 2, 3]
    assert [(s.location.line, s.location.column) for s in statements] == [(2, 1), (4, 3), (5, 1)]
    assert [s.text for s in statements] == ["SET 'a' = 'b'", "SELECT 1", "SHOW TABLES"]
    assert statements[0].location.source == "job.sql"


def test_empty_script():
    assert parse_script("") == []
    assert parse_script("  -- only a comment\n;;") == []


def test_nested_statements_keep_their_own_text_and_position():
    compiled, explained = parse_script(
        "COMPILE PLAN 'p' FOR INSERT INTO t SELECT 1;\nEXPLAIN CHANGELOG_MODE\n  SELECT * FROM t"
    )
    assert compiled.body.text == "INSERT INTO t SELECT 1"
    assert (compiled.body.index, compiled.body.location.column) == (1, 22)
    assert explained.body.text == "SELECT * FROM t"
    assert (explained.body.index, explained.body.location.line, explained.body.location.column) == (2, 3, 3)
