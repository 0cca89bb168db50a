"""GROUPING SETS / ROLLUP / CUBE are planned as Flink plans them: Expand ($e) + a group aggregate on keys + $e."""

from __future__ import annotations

import pytest

from planengine.api import TableEnvironment
from planengine.errors import UnsupportedQueryError, ValidationError

DDL = """
CREATE TABLE src (k STRING, c STRING, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen');
CREATE TABLE dst (k STRING, c STRING, n BIGINT, nk BIGINT, g BIGINT) WITH ('connector' = 'blackhole');
"""


def plan(insert: str) -> dict:
    env = TableEnvironment()
    env.execute_sql(DDL)
    return env.compile_plan_sql(insert).data


def node(data: dict, kind: str) -> dict:
    return next(n for n in data["nodes"] if n["type"].startswith(f"stream-exec-{kind}_"))


def literal_or_ref(e: dict) -> object:
    return e.get("inputIndex") if e["kind"] == "INPUT_REF" else e.get("value", "null")


def test_rollup_expands_each_row_per_grouping_set_with_flinks_expand_ids() -> None:
    data = plan("INSERT INTO dst SELECT k, c, COUNT(*), COUNT(k), GROUPING_ID(k, c) FROM src GROUP BY ROLLUP (k, c)")
    expand = node(data, "expand")
    assert expand["outputType"] == "ROW<`k` STRING, `c` STRING, `$e` BIGINT NOT NULL, `k1` STRING>"
    # (k, c) -> $e 0, (k) -> 1, () -> 3 (first key = highest bit, set when the key is left out); the last field
    # is k untouched, for COUNT(k)
    assert [[literal_or_ref(e) for e in p] for p in expand["projects"]] == [
        [0, 1, 0, 0], [0, "null", 1, 0], ["null", "null", 3, 0]]
    aggregate = node(data, "group-aggregate")
    assert aggregate["grouping"] == [0, 1, 2]
    assert [c["argList"] for c in aggregate["aggCalls"]] == [[], [3]]  # COUNT(k) reads the copy
    assert [e["shuffle"] for e in data["edges"] if "shuffle" in e] == [{"type": "HASH", "keys": [0, 1, 2]}]
    calc = [n for n in data["nodes"] if n["type"] == "stream-exec-calc_1"][-1]
    assert "CASE(=($2, 0), 0, =($2, 1), 1, 3) AS g" in calc["description"]


def test_cube_and_grouping_sets_orders_and_cross_products() -> None:
    cube = plan("INSERT INTO dst SELECT k, c, COUNT(*), 0, 0 FROM src GROUP BY CUBE (k, c)")
    assert [p[2]["value"] for p in node(cube, "expand")["projects"]] == [0, 1, 2, 3]
    mixed = plan("INSERT INTO dst SELECT k, c, COUNT(*), 0, GROUPING(c) FROM src GROUP BY k, GROUPING SETS ((c), ())")
    assert [p[2]["value"] for p in node(mixed, "expand")["projects"]] == [0, 1]  # (k, c), (k)


def test_a_single_grouping_set_is_a_plain_group_by() -> None:
    data = plan("INSERT INTO dst SELECT k, c, COUNT(*), 0, GROUPING(k) FROM src GROUP BY GROUPING SETS ((k, c))")
    assert not [n for n in data["nodes"] if "expand" in n["type"]]
    assert node(data, "group-aggregate")["grouping"] == [0, 1]


@pytest.mark.parametrize(("query", "error", "message"), [
    ("SELECT k, COUNT(*) FROM src GROUP BY GROUPING SETS ((k), (k), ())", UnsupportedQueryError,
     "the grouping set (k) appears twice"),
    ("SELECT k, GROUP_ID() FROM src GROUP BY ROLLUP (k)", UnsupportedQueryError, "GROUP_ID() is not supported"),
    ("SELECT k, GROUPING(c) FROM src GROUP BY ROLLUP (k)", ValidationError, "c in GROUPING(c) is not a GROUP BY key"),
    ("SELECT k, COUNT(*) FROM src GROUP BY ROLLUP (k), TUMBLE(ts, INTERVAL '1' MINUTE)", UnsupportedQueryError,
     "cannot be combined with a group window"),
    ("SELECT window_start, k, COUNT(*) FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) "
     "GROUP BY window_start, window_end, ROLLUP (k)", UnsupportedQueryError, "over a window table function"),
])
def test_what_is_refused_says_why(query: str, error: type[Exception], message: str) -> None:
    env = TableEnvironment()
    env.execute_sql(DDL)
    with pytest.raises(error) as caught:
        env.execute_sql("EXPLAIN " + query)
    assert message in str(caught.value)
