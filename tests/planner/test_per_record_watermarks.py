"""Which watermark assigners carry per-record watermarks (planner/per_record_watermarks.py), and the rule itself."""

from __future__ import annotations

import json

import pytest

from planengine.api import TableEnvironment
from planengine.runtime.operators.record_watermark import emitted_before

DDL = """
CREATE TABLE src (k STRING, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '/data/src', 'format' = 'json');
CREATE TABLE agg_out (k STRING, ws TIMESTAMP(3), cnt BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '/data/agg', 'format' = 'changelog-json');
CREATE TABLE rows_out (k STRING, v INT)
  WITH ('connector' = 'filesystem', 'path' = '/data/rows', 'format' = 'changelog-json');
"""


def assigners(statement: str) -> list[dict]:
    env = TableEnvironment()
    env.execute_sql(DDL)
    plan = json.loads(env.compile_plan_sql(statement).as_json())
    return [n for n in plan["nodes"] if n["type"].startswith("stream-exec-watermark-assigner")]


@pytest.mark.parametrize("statement", [
    "INSERT INTO agg_out SELECT k, window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), "
    "INTERVAL '5' SECOND)) GROUP BY k, window_start, window_end",
    "INSERT INTO agg_out SELECT k, TUMBLE_START(ts, INTERVAL '5' SECOND), COUNT(*) FROM src "
    "GROUP BY k, TUMBLE(ts, INTERVAL '5' SECOND)",
    "INSERT INTO rows_out SELECT k, v FROM src ORDER BY ts",
    "INSERT INTO rows_out SELECT k, CAST(COUNT(*) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING "
    "AND CURRENT ROW) AS INT) FROM src",
], ids=["window-tvf-aggregate", "group-window", "temporal-sort", "over"])
def test_event_time_operators_below_stateless_nodes_get_per_record_watermarks(statement: str) -> None:
    (node,) = assigners(statement)
    assert node["type"] == "stream-exec-watermark-assigner_3"
    assert node["perRecordWatermark"] is True
    assert node["configuration"]["pipeline.auto-watermark-interval"] == "200 ms"


@pytest.mark.parametrize("statement", [
    "INSERT INTO rows_out SELECT k, v FROM src WHERE v > 0",
    "INSERT INTO agg_out SELECT k, MAX(ts), COUNT(*) FROM src GROUP BY k",
], ids=["stateless", "group-aggregate"])
def test_no_per_record_pass_without_a_lateness_decision(statement: str) -> None:
    (node,) = assigners(statement)
    assert "perRecordWatermark" not in node  # no pass over every row for nothing


def test_flink_emits_eagerly_after_a_row_that_moves_the_watermark_past_the_interval() -> None:
    # candidates ts - 1 s: 0 (not > 0 + 200 ms: nothing emitted), 2 s, 1 s (behind), 7 s, 3 s
    assert emitted_before([1000, 3000, 2000, 8000, 4000], delay=1000, interval=200) == [None, None, 2000, 2000, 7000]
    # steps of 100-200 ms are held back until the watermark is more than 200 ms past the last emitted one
    assert emitted_before([1000, 1100, 1300, 1500, 1501], delay=0, interval=200) == [None, 1000, 1000, 1300, 1300]
    # interval 0: every increase is emitted; NULL rowtimes do not move it
    assert emitted_before([1000, None, 1001, 1001], delay=0, interval=0) == [None, 1000, 1000, 1001]
