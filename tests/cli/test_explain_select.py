"""EXPLAIN of a bare SELECT: the optimized plan with changelog modes, and no trace of the collect table."""

from __future__ import annotations

from planengine.api import TableEnvironment

DDL = """
CREATE TABLE clicks (user_id BIGINT, page STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
  WITH ('connector' = 'datagen');
"""


def explain(sql: str) -> str:
    env = TableEnvironment()
    env.execute_sql(DDL)
    text = str(env.execute_sql(sql)[0])
    assert env.execute_sql("SHOW TABLES")[0].rows == [("clicks",)]  # the collect table is gone
    return text


def test_explain_select_shows_the_optimized_plan_with_changelog_modes() -> None:
    text = explain("EXPLAIN SELECT page, COUNT(*) AS n FROM clicks WHERE user_id > 1 GROUP BY page")
    sections = [line for line in text.splitlines() if line.startswith("== ")]
    assert sections == ["== Abstract Syntax Tree ==", "== Optimized Logical Plan ==", "== Physical Execution Plan =="]
    physical = text.split("== Physical Execution Plan ==\n")[1].splitlines()
    assert physical[0].startswith("#5 GroupAggregate(groupBy=[page], select=[COUNT(*) AS EXPR$0]) "
                                  "[stream-exec-group-aggregate_4], changelogMode=[I,UB,UA], strategy=[JVM]")
    assert physical[1].startswith("  #4 Exchange(distribution=[hash[page]])")
    assert physical[-1].startswith("        #1 TableSourceScan(table=[clicks])")
    assert "__preview" not in text and "Sink(" not in text


def test_explain_select_of_an_insert_only_query() -> None:
    text = explain("EXPLAIN CHANGELOG_MODE SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE clicks, "
                   "DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end")
    physical = text.split("== Physical Execution Plan ==\n")[1].splitlines()
    assert "WindowAggregate(window=[TUMBLE(" in physical[1] and physical[1].endswith("changelogMode=[I]")
    assert not physical[0].startswith(" ")
