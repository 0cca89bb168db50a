"""Which Top-N strategy the planner records for stream-exec-rank_3 (planner/rank_strategy.py), from SQL."""

from __future__ import annotations

import json

import pytest

from planengine.api import TableEnvironment

DDL = """
CREATE TABLE clicks (user_id BIGINT, page STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '/data/c',
  'format' = 'json');
CREATE TABLE cdc (user_id BIGINT, page STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '/data/cdc',
  'format' = 'changelog-json');
CREATE TABLE out4 (user_id BIGINT, page STRING, x BIGINT, rn BIGINT) WITH ('connector' = 'filesystem',
  'path' = '/data/o', 'format' = 'changelog-json');
"""


def rank_node(statement: str) -> dict:
    env = TableEnvironment()
    env.execute_sql(DDL)
    plan = json.loads(env.compile_plan_sql(statement).as_json())
    (node,) = [n for n in plan["nodes"] if n["type"].startswith("stream-exec-rank")]
    return node


def top(source: str, aggregate: str, order: str) -> str:
    inner = f"SELECT user_id, page, {aggregate} AS x FROM {source} GROUP BY user_id, page" if aggregate else \
        f"SELECT user_id, page, CAST(v AS BIGINT) AS x FROM {source}"
    return (f"INSERT INTO out4 SELECT user_id, page, x, rn FROM (SELECT user_id, page, x, ROW_NUMBER() OVER "
            f"(PARTITION BY user_id ORDER BY x {order}) AS rn FROM ({inner})) WHERE rn <= 2")


@pytest.mark.parametrize("statement,strategy", [
    (top("clicks", "", "DESC"), "APPEND_FAST"),  # insert-only input
    (top("clicks", "COUNT(*)", "DESC"), "UPDATE_FAST"),  # counts only grow
    (top("clicks", "MAX(v)", "DESC"), "UPDATE_FAST"),
    (top("clicks", "MIN(v)", "ASC"), "UPDATE_FAST"),  # minimums only fall
    (top("clicks", "COUNT(*)", "ASC"), "RETRACT"),  # a growing count moves rows down an ascending order
    (top("clicks", "SUM(v)", "DESC"), "RETRACT"),  # a sum of signed values moves both ways
    (top("cdc", "COUNT(*)", "DESC"), "RETRACT"),  # an aggregate that retracts can shrink
], ids=["insert-only", "count-desc", "max-desc", "min-asc", "count-asc", "sum", "retracting-input"])
def test_the_strategy_follows_flinks_rules(statement: str, strategy: str) -> None:
    node = rank_node(statement)
    assert node["type"] == "stream-exec-rank_3"
    assert node["strategy"] == strategy
    assert (node.get("uniqueKey") is not None) == (strategy == "UPDATE_FAST")


@pytest.mark.parametrize("aggregate,order,strategy,update_before", [
    ("COUNT(*)", "DESC", "UPDATE_FAST", False),  # update-fast asks for update-afters only (Flink's trait)
    ("SUM(v)", "DESC", "RETRACT", True),  # a retracting Top-N needs the before-images
], ids=["update-fast", "retract"])
def test_update_fast_asks_its_input_for_update_afters_only(aggregate: str, order: str, strategy: str,
                                                           update_before: bool) -> None:
    env = TableEnvironment()
    env.execute_sql(DDL)
    plan = json.loads(env.compile_plan_sql(top("clicks", aggregate, order)).as_json())
    (rank,) = [n for n in plan["nodes"] if n["type"].startswith("stream-exec-rank")]
    (aggregate_node,) = [n for n in plan["nodes"] if n["type"].startswith("stream-exec-group-aggregate")]
    assert rank["strategy"] == strategy
    assert aggregate_node["generateUpdateBefore"] is update_before
