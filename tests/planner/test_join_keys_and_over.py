"""Join keys from expressions, empty interval joins and OVER ordered by a value column (planning only)."""

from __future__ import annotations

import json

import pytest

from planengine.api import TableEnvironment
from planengine.errors import UnsupportedQueryError, ValidationError

DDL = """
CREATE TABLE orders (amount BIGINT, nested ROW<currency STRING>, m MAP<STRING, STRING>, order_time STRING,
  rowtime AS TO_TIMESTAMP(order_time), WATERMARK FOR rowtime AS rowtime)
  WITH ('connector' = 'filesystem', 'path' = '/data/o', 'format' = 'json');
CREATE TABLE rates (currency STRING, rate BIGINT, rate_time STRING, rowtime AS TO_TIMESTAMP(rate_time),
  WATERMARK FOR rowtime AS rowtime, PRIMARY KEY (currency) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '/data/r', 'format' = 'changelog-json', 'changelog-mode' = 'I,UA,D');
CREATE TABLE vals (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '/data/v', 'format' = 'json');
CREATE TABLE out_amount (amount BIGINT) WITH ('connector' = 'filesystem', 'path' = '/data/s',
  'format' = 'changelog-json');
CREATE TABLE out_kv (k STRING, v BIGINT, s BIGINT) WITH ('connector' = 'filesystem', 'path' = '/data/kv',
  'format' = 'changelog-json');
CREATE TABLE out_pair (a BIGINT, b BIGINT) WITH ('connector' = 'filesystem', 'path' = '/data/p',
  'format' = 'changelog-json');
"""


def compile_json(statement: str) -> dict:
    env = TableEnvironment()
    env.execute_sql(DDL)
    return json.loads(env.compile_plan_sql(statement).as_json())


def nodes(statement: str) -> list[dict]:
    return compile_json(statement)["nodes"]


@pytest.mark.parametrize("key", ["o.nested.currency", "o.m['currency']", "UPPER(o.nested.currency)"])
def test_temporal_join_keyed_by_an_expression_of_the_probe_side(key: str) -> None:
    plan = compile_json(f"INSERT INTO out_amount SELECT amount * r.rate FROM orders AS o "
                        f"JOIN rates FOR SYSTEM_TIME AS OF o.rowtime AS r ON {key} = r.currency")
    by_id = {n["id"]: n for n in plan["nodes"]}
    join = next(n for n in plan["nodes"] if n["type"].startswith("stream-exec-temporal-join"))
    assert join["rightKeys"] == [0]  # the versioned table's primary key
    (left_key,) = join["leftKeys"]
    left_input = by_id[next(e["source"] for e in plan["edges"] if e["target"] == join["id"])]
    # the key is the expression computed as an extra field of the orders, last of their row
    assert left_input["outputType"].endswith("`$jk0` STRING>") and left_key == 5


def test_regular_join_on_an_expression_is_keyed() -> None:
    plan = nodes("INSERT INTO out_pair SELECT a.v, b.v FROM vals a JOIN vals b ON a.v + 1 = b.v")
    join = next(n for n in plan if n["type"].startswith("stream-exec-join"))
    assert join["leftKeys"] == [2] and join["rightKeys"] == [1]
    assert "nonEquiCondition" not in join


@pytest.mark.parametrize("kind", ["NOT EXISTS", "EXISTS"])
def test_semi_and_anti_joins_keyed_by_a_nested_field_output_the_left_side(kind: str) -> None:
    """The key ``o.nested.currency`` is computed into the left input; the join outputs the left row only, so
    the projection after it must not reach for the right side's columns (an IndexError before)."""
    plan = nodes(f"INSERT INTO out_amount SELECT amount FROM orders o WHERE {kind} "
                 "(SELECT 1 FROM rates r WHERE r.currency = o.nested.currency)")
    join = next(n for n in plan if n["type"].startswith("stream-exec-join"))
    assert join["joinType"] == ("ANTI" if kind.startswith("NOT") else "SEMI")
    assert join["leftKeys"] == [5]  # orders' 5 fields (the computed rowtime included), then `$jk0`


@pytest.mark.parametrize("connector", ["blackhole", "print"])
@pytest.mark.parametrize("query", [
    "SELECT amount FROM orders o WHERE NOT EXISTS (SELECT 1 FROM vals v WHERE v.v = o.amount)",  # I, D
    "SELECT k, SUM(v) FROM vals GROUP BY k",  # I, UB, UA
])
def test_sinks_without_a_key_take_deletes_and_updates_as_flink_gives_them(connector: str, query: str) -> None:
    """Flink sends a blackhole or print sink without a PRIMARY KEY whatever changelog its input is; planengine
    refused a semi/anti join's inserts and deletes there as 'accepts upserts (I,UA,D) but declares no PRIMARY
    KEY' (deletes without update-befores looked like upserts)."""
    env = TableEnvironment()
    env.execute_sql(DDL)
    columns = "amount BIGINT" if "orders" in query else "k STRING, s BIGINT"
    env.execute_sql(f"CREATE TABLE sink_{connector} ({columns}) WITH ('connector' = '{connector}')")
    plan = json.loads(env.compile_plan_sql(f"INSERT INTO sink_{connector} {query}").as_json())
    kinds = next(n for n in plan["nodes"] if n["type"].startswith("stream-exec-sink"))["changelogMode"].split(",")
    assert kinds == (["I", "UB", "UA"] if "GROUP BY" in query else ["I", "D"])


def test_interval_join_with_an_empty_window_keeps_no_state() -> None:
    plan = nodes("INSERT INTO out_pair SELECT a.amount, b.amount FROM orders a LEFT JOIN orders b "
                 "ON a.amount = b.amount AND a.rowtime BETWEEN b.rowtime + INTERVAL '10' SECOND "
                 "AND b.rowtime + INTERVAL '5' SECOND")
    assert not any(n.get("state") for n in plan)
    assert not any("join" in n["type"] for n in plan)


def test_over_ordered_by_a_value_column_updates_its_rows() -> None:
    plan = nodes("INSERT INTO out_kv SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY v) FROM vals")
    over = next(n for n in plan if n["type"].startswith("stream-exec-over-aggregate"))
    assert over["changelogMode"] == "I,UB,UA"


def test_over_ordered_by_a_value_column_refuses_bounded_frames() -> None:
    with pytest.raises(UnsupportedQueryError, match="RANGE BETWEEN UNBOUNDED PRECEDING"):
        nodes("INSERT INTO out_kv SELECT k, v, SUM(v) OVER (ORDER BY v ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) "
              "FROM vals")


def test_lag_compiles_to_over_aggregate_4_with_flinks_frame() -> None:
    plan = nodes("INSERT INTO out_pair SELECT amount, LAG(amount, 2, CAST(0 AS BIGINT)) OVER "
                 "(PARTITION BY nested.currency ORDER BY rowtime) FROM orders")
    over = next(n for n in plan if n["type"].startswith("stream-exec-over-aggregate"))
    assert over["type"] == "stream-exec-over-aggregate_4"  # LAG on the JVM processor
    assert over["frame"] == {"mode": "RANGE", "lowerUnbounded": True}  # as Calcite gives LAG
    assert [c["function"] for c in over["aggCalls"]] == ["LAG"]


@pytest.mark.parametrize("select,error", [
    # Flink: "LEAD Function is not supported in stream mode"
    ("LEAD(amount) OVER (ORDER BY rowtime) FROM orders", "LEAD is not supported in a streaming OVER window"),
    # Calcite's validator: "ROW/RANGE not allowed with RANK, DENSE_RANK, ROW_NUMBER or LAG/LEAD functions"
    ("LAG(amount) OVER (ORDER BY rowtime ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM orders",
     "a ROWS/RANGE frame is not allowed with LAG"),
    ("LAG(amount) OVER w FROM orders WINDOW w AS (ORDER BY rowtime ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
     "a ROWS/RANGE frame is not allowed with LAG"),
    # Flink's LagAggFunction: "Offset(-1) should be positive."
    ("LAG(amount, -1) OVER (ORDER BY rowtime) FROM orders", "the offset must be 0 or more, not -1"),
])
def test_lead_and_lag_outside_flinks_rules_are_refused_at_compile_time(select: str, error: str) -> None:
    with pytest.raises(ValidationError, match=error):
        nodes(f"INSERT INTO out_pair SELECT amount, {select}")
