"""Processing-time operators are refused at compile time, each saying what it is and what to write instead."""

from __future__ import annotations

import pytest

from planengine.api import TableEnvironment
from planengine.errors import UnsupportedQueryError

DDL = """
CREATE TABLE s (a INT, b BIGINT, pt AS PROCTIME()) WITH ('connector' = 'datagen');
CREATE TABLE t (a INT, b BIGINT, pt AS PROCTIME()) WITH ('connector' = 'datagen');
CREATE TABLE rates (a INT, r BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts, PRIMARY KEY (a) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/tmp/rates', 'format' = 'changelog-json');
CREATE TABLE dim (a INT, name STRING) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://localhost/db',
  'table-name' = 'dim');
CREATE TABLE out1 (a INT) WITH ('connector' = 'blackhole');
CREATE TABLE out2 (a INT, b BIGINT) WITH ('connector' = 'blackhole');
CREATE TABLE out3 (a INT, name STRING, pt TIMESTAMP_LTZ(3)) WITH ('connector' = 'blackhole');
"""


def _compile(insert: str) -> None:
    env = TableEnvironment()
    env.execute_sql(DDL)
    env.compile_plan_sql(insert)


@pytest.mark.parametrize(("insert", "what"), [
    ("INSERT INTO out2 SELECT a, COUNT(*) FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(pt), INTERVAL '1' MINUTE)) "
     "GROUP BY a, window_start, window_end", "a window aggregate over processing time"),
    ("INSERT INTO out2 SELECT a, COUNT(*) FROM s GROUP BY a, TUMBLE(pt, INTERVAL '1' MINUTE)",
     "a group window (GROUP BY TUMBLE/HOP/SESSION) over processing time"),
    ("INSERT INTO out2 SELECT a, SUM(b) OVER (PARTITION BY a ORDER BY pt ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) "
     "FROM s", "an OVER window ordered by processing time"),
    ("INSERT INTO out2 SELECT a, b FROM s ORDER BY pt", "an ORDER BY on processing time"),
    ("INSERT INTO out2 SELECT s.a, t.b FROM s, t WHERE s.a = t.a AND s.pt BETWEEN t.pt - INTERVAL '1' MINUTE "
     "AND t.pt", "an interval join on processing time"),
])
def test_a_processing_time_operator_is_refused_with_the_fix(insert: str, what: str) -> None:
    with pytest.raises(UnsupportedQueryError, match="is not supported by planengine") as refused:
        _compile(insert)
    assert str(refused.value).startswith(what)
    assert "WATERMARK" in (refused.value.hint or "")


@pytest.mark.parametrize("insert", [
    "INSERT INTO out3 SELECT a, CAST(NULL AS STRING), pt FROM s",  # a PROCTIME() column selected
    "INSERT INTO out3 SELECT s.a, d.name, s.pt FROM s JOIN dim FOR SYSTEM_TIME AS OF s.pt AS d ON s.a = d.a",
])
def test_processing_time_columns_and_lookup_joins_still_compile(insert: str) -> None:
    _compile(insert)


def test_a_temporal_table_function_says_to_join_the_versioned_table_instead() -> None:
    """Flink's ``LATERAL TABLE(Rates(o.rowtime))`` needs its Table API to define ``Rates``: the error says what SQL
    does the same (a versioned-table join)."""
    env = TableEnvironment()
    env.execute_sql(DDL + "CREATE TABLE o (a INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = "
                          "'datagen');")
    with pytest.raises(Exception, match="not a table function") as refused:
        env.compile_plan_sql("INSERT INTO out2 SELECT o.a, r.r FROM o, LATERAL TABLE (rates(o.ts)) AS r")
    assert "FOR SYSTEM_TIME AS OF o.rowtime" in (refused.value.hint or "")
