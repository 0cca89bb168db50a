"""Generated Flink SQL re-parses to the same text (and, where no normalisation applies, the same tree)."""

from __future__ import annotations

import pytest
import sqlglot

from planengine.sql import Flink, parse_script

# SQL already in generated normal form: generating it must give it back verbatim.
CANONICAL = [
    "SELECT a, b AS c FROM t WHERE a > 1 AND NOT b IS NULL",
    "SELECT CAST(a AS STRING), TRY_CAST(b AS BYTES), CAST(c AS TIMESTAMP_LTZ(3)) FROM t",
    "SELECT CAST(r AS ROW<`a` INT, `b` ARRAY<STRING NOT NULL>>), CAST(m AS MAP<STRING, BIGINT>) FROM t",
    "SELECT INTERVAL '1' MINUTE, INTERVAL '10' SECOND(3), INTERVAL '1 00:00:00' DAY TO SECOND",
    "SELECT PROCTIME(), CURRENT_WATERMARK(ts), TO_TIMESTAMP(s, 'yyyy-MM-dd'), TO_TIMESTAMP_LTZ(n, 3)",
    "SELECT DATE_FORMAT(ts, 'yyyy'), TIMESTAMPADD(MINUTE, 1, ts), TIMESTAMPDIFF(SECOND, a, b)",
    "SELECT JSON_VALUE(j, '$.a'), IF(a, b, c), COALESCE(a, b), CONCAT(a, b), a || b",
    "SELECT SUBSTRING(s, 1, 2), TRIM(s), TRIM(BOTH ' ' FROM s), TRIM(LEADING 'x' FROM s)",
    "SELECT EXTRACT(MINUTE FROM ts), FLOOR(ts TO HOUR), CEIL(ts TO DAY), ARRAY[1, 2], MAP['a', 1]",
    "SELECT a IS NOT DISTINCT FROM b, a IS DISTINCT FROM b, a LIKE 'x%', a SIMILAR TO 'x', a IN (1, 2)",
    "SELECT EXISTS(SELECT 1), (SELECT MAX(x) FROM t), 'it''s', `My Col`, `a``b` FROM `T`",
    "SELECT COUNT(DISTINCT a) FILTER(WHERE b > 1) FROM t GROUP BY k HAVING COUNT(*) > 2",
    "SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '10' SECOND)) AS w",
    "SELECT * FROM TABLE(HOP(TABLE db.t, DESCRIPTOR(ts), INTERVAL '5' MINUTE, INTERVAL '10' MINUTE))",
    "SELECT * FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '2' MINUTE, INTERVAL '10' MINUTE))",
    "SELECT * FROM TABLE(SESSION(TABLE t PARTITION BY (a, b), DESCRIPTOR(ts), INTERVAL '5' MINUTE)) AS s",
    "SELECT * FROM o JOIN c FOR SYSTEM_TIME AS OF o.pt AS c ON o.k = c.k",
    "SELECT /*+ STATE_TTL('o' = '1d') */ * FROM o /*+ OPTIONS('a' = 'b') */ AS x"
    " LEFT JOIN c /*+ OPTIONS('lookup.cache' = 'PARTIAL') */ FOR SYSTEM_TIME AS OF x.pt AS c ON x.k = c.k",
    "SELECT * FROM o CROSS JOIN UNNEST(o.arr) AS t(a, b)",
    "SELECT * FROM o LEFT JOIN UNNEST(o.arr) AS t(a) ON TRUE",
    "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY a ORDER BY b DESC) AS rn FROM t) WHERE rn <= 3",
    "SELECT SUM(x) OVER (PARTITION BY a ORDER BY pt RANGE BETWEEN INTERVAL '1' HOUR PRECEDING AND CURRENT ROW) FROM t",
    "SELECT SUM(x) OVER w FROM t WINDOW w AS (PARTITION BY a ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
    "SELECT TUMBLE_START(ts, INTERVAL '5' SECOND), COUNT(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '5' SECOND)",
    "SELECT a FROM t UNION ALL SELECT b FROM u",
    "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
    "VALUES (1, 'a'), (2, 'b')",
    "INSERT OVERWRITE t /*+ OPTIONS('sink.parallelism' = '2') */ PARTITION(dt = '1') (a, b) SELECT 1, 2",
    "INSERT INTO t VALUES (1)",
    "CREATE TEMPORARY TABLE IF NOT EXISTS t (id BIGINT NOT NULL, ts TIMESTAMP(3), total AS price * 2,"
    " m STRING METADATA FROM 'k' VIRTUAL, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,"
    " PRIMARY KEY (id) NOT ENFORCED) COMMENT 'c' PARTITIONED BY (id) WITH ('connector' = 'kafka')",
    "CREATE TEMPORARY VIEW v (a) AS SELECT 1",
    "CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS f AS 'pkg.F' LANGUAGE PYTHON",
    "CREATE CATALOG c WITH ('type' = 'generic_in_memory')",
    "DROP CATALOG IF EXISTS c",
    "SET 'k' = 'v'",
    "RESET 'k'",
    "RESET",
    "SHOW TABLES",
    "SHOW TABLES FROM c.d NOT LIKE 'x%'",
    "SHOW USER FUNCTIONS LIKE 'my%'",
    "SHOW COLUMNS FROM t LIKE '%id'",
    "SHOW CREATE TABLE db.t",
    "SHOW CREATE VIEW v",
    "SHOW CURRENT CATALOG",
    "SHOW CURRENT DATABASE",
    "DESCRIBE c.d.t",
    "ALTER TABLE IF EXISTS t RENAME TO u",
    "ALTER TABLE t RENAME a TO b",
    "ALTER TABLE t SET ('a' = 'b', 'c' = 'd')",
    "ALTER TABLE t RESET ('a', 'c')",
    "ALTER TABLE t ADD (x INT FIRST, z STRING AFTER a, y AS x + 1, WATERMARK FOR ts AS ts,"
    " PRIMARY KEY (x) NOT ENFORCED)",
    "ALTER TABLE t MODIFY (x BIGINT NOT NULL COMMENT 'c')",
    "ALTER TABLE t DROP (a, b)",
    "ALTER TABLE t DROP PRIMARY KEY",
    "ALTER TABLE t DROP WATERMARK",
    "CREATE OR REPLACE TABLE t (a INT) WITH ('connector' = 'datagen')",
    "EXECUTE INSERT INTO t SELECT 1",
    "EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; INSERT INTO b SELECT 2; END",
    "BEGIN STATEMENT SET; INSERT INTO a SELECT 1; END",
    "COMPILE PLAN '/p.json' IF NOT EXISTS FOR STATEMENT SET BEGIN INSERT INTO a SELECT 1; END",
    "COMPILE AND EXECUTE PLAN 'p' FOR INSERT INTO a SELECT 1",
    "COMPILE PLAN 'new' FROM 'old'",
    "EXECUTE PLAN 'p'",
    "EXPLAIN CHANGELOG_MODE, ESTIMATED_COST SELECT 1",
    "EXPLAIN PLAN 'p'",
]


@pytest.mark.parametrize("sql", CANONICAL)
def test_generation_is_a_fixpoint_and_trees_match(sql):
    tree = sqlglot.parse_one(sql, read="flink")
    generated = tree.sql("flink")
    assert generated == sql
    assert sqlglot.parse_one(generated, read=Flink) == tree


# Non-canonical spellings: generated once, they become canonical and stay stable.
@pytest.mark.parametrize(
    ("sql", "generated"),
    [
        ("select cast(a as varchar) from t", "SELECT CAST(a AS STRING) FROM t"),
        ("SELECT ARRAY[1,2] FROM t", "SELECT ARRAY[1, 2] FROM t"),
        ("SELECT SUBSTRING(s FROM 1 FOR 2)", "SELECT SUBSTRING(s, 1, 2)"),
        ("SELECT DATE '2024-01-01'", "SELECT CAST('2024-01-01' AS DATE)"),
        (
            "SELECT * FROM TABLE(TUMBLE(SIZE => INTERVAL '1' MINUTE, DATA => TABLE t, TIMECOL => DESCRIPTOR(ts))) w",
            "SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) AS w",
        ),
        ("SET a.b = c", "SET 'a.b' = 'c'"),
        ("EXPLAIN PLAN FOR SELECT 1", "EXPLAIN SELECT 1"),
        ("CREATE TABLE t (a ROW(x INT)) WITH ('k'='v')", "CREATE TABLE t (a ROW<`x` INT>) WITH ('k' = 'v')"),
    ],
)
def test_generation_normalises(sql, generated):
    first = sqlglot.parse_one(sql, read="flink").sql("flink")
    assert first == generated
    assert sqlglot.parse_one(first, read="flink").sql("flink") == first


def test_view_query_from_script_generates_back():
    (view,) = parse_script("CREATE VIEW v AS SELECT `a`, TUMBLE_END(ts, INTERVAL '1' HOUR) FROM t")
    assert view.query.sql("flink") == "SELECT `a`, TUMBLE_END(ts, INTERVAL '1' HOUR) FROM t"
