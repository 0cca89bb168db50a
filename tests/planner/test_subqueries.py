"""Sub-queries inside expressions (mark joins) and correlated IN (planner/convert/subqueries.py)."""

from __future__ import annotations

import json

import pytest

from planengine.api import TableEnvironment
from planengine.errors import UnsupportedQueryError

DDL = """
CREATE TABLE l (a INT, b BIGINT, c STRING) WITH ('connector' = 'filesystem', 'path' = '/data/l', 'format' = 'json');
CREATE TABLE r (d INT, e BIGINT, f STRING) WITH ('connector' = 'filesystem', 'path' = '/data/r', 'format' = 'json');
CREATE TABLE t (i INT, j BIGINT, k STRING) WITH ('connector' = 'filesystem', 'path' = '/data/t', 'format' = 'json');
CREATE TABLE s (b BIGINT) WITH ('connector' = 'filesystem', 'path' = '/data/s', 'format' = 'changelog-json');
CREATE TABLE s2 (a INT, flag BOOLEAN)
  WITH ('connector' = 'filesystem', 'path' = '/data/s2', 'format' = 'changelog-json');
"""


def plan(statement: str) -> list[dict]:
    env = TableEnvironment()
    env.execute_sql(DDL)
    return json.loads(env.compile_plan_sql(statement).as_json())["nodes"]


def joins(nodes: list[dict]) -> list[str]:
    return sorted(n["joinType"] for n in nodes if n["type"].startswith("stream-exec-join"))


def test_literal_aggregate_in_case_inside_a_correlated_in() -> None:
    # Flink's SubQuerySemiJoinTest: the inner IN is a mark join (LEFT join with t grouped by its value), the
    # outer correlated IN a semi join keyed by the CASE value and l.c = r.f
    nodes = plan("INSERT INTO s SELECT b FROM l WHERE (CASE WHEN a IN (SELECT 1 FROM t) THEN 1 ELSE 2 END) "
                 "IN (SELECT d FROM r WHERE l.c = r.f)")
    assert joins(nodes) == ["LEFT", "SEMI"]
    semi = next(n for n in nodes if n.get("joinType") == "SEMI")
    assert len(semi["leftKeys"]) == 2 and len(semi["rightKeys"]) == 2
    assert any(n["type"].startswith("stream-exec-group-aggregate") for n in nodes)  # the literal aggregate


def test_correlated_not_in_is_a_null_aware_anti_join() -> None:
    nodes = plan("INSERT INTO s SELECT b FROM l WHERE a NOT IN (SELECT d FROM r WHERE l.c = r.f)")
    anti = next(n for n in nodes if n.get("joinType") == "ANTI")
    assert "nonEquiCondition" in anti  # a = d OR a IS NULL OR d IS NULL, under the correlation key


@pytest.mark.parametrize("statement, expected_joins", [
    ("INSERT INTO s SELECT b FROM l WHERE EXISTS (SELECT * FROM r WHERE r.d = l.a) OR b > 10", ["LEFT"]),
    ("INSERT INTO s SELECT b FROM l WHERE a IN (SELECT d FROM r) OR b > 10", ["LEFT"]),
    # a SELECT item needs SQL's three-valued IN: marks plus the sub-query's counts
    ("INSERT INTO s2 SELECT a, a IN (SELECT d FROM r) FROM l", ["LEFT", "LEFT"]),
    # inside CASE WHEN, UNKNOWN and FALSE are the same: the mark alone
    ("INSERT INTO s2 SELECT a, CASE WHEN a IN (SELECT d FROM r) THEN TRUE ELSE FALSE END FROM l", ["LEFT"]),
    ("INSERT INTO s SELECT b + (SELECT MAX(e) FROM r) FROM l", ["LEFT"]),
    ("INSERT INTO s SELECT b FROM l WHERE (SELECT MAX(d) FROM r WHERE e IN (SELECT j FROM t)) "
     "IN (SELECT i FROM t WHERE t.k = l.c)", ["LEFT", "SEMI", "SEMI"]),
], ids=["exists-or", "in-or", "in-value", "in-case", "scalar", "scalar-in-correlated-in"])
def test_subqueries_inside_expressions_plan_as_mark_joins(statement: str, expected_joins: list[str]) -> None:
    assert joins(plan(statement)) == expected_joins


@pytest.mark.parametrize("statement, message", [
    ("INSERT INTO s SELECT b FROM l WHERE EXISTS (SELECT * FROM r WHERE r.e > l.b) OR b > 10",
     "correlated condition"),
    ("INSERT INTO s SELECT (SELECT d FROM r) FROM l", "scalar sub-query must be an uncorrelated aggregate"),
    ("INSERT INTO s SELECT b FROM l WHERE a IN (SELECT MAX(d) FROM r WHERE r.f = l.c GROUP BY r.f)",
     "correlated IN sub-query with aggregation"),
])
def test_unsupported_shapes_say_what_to_do(statement: str, message: str) -> None:
    with pytest.raises(UnsupportedQueryError, match=message) as info:
        plan(statement)
    assert info.value.hint
