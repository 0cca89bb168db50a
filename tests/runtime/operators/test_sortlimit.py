"""Sort-limit (global Top-N without the rank number) and limit (first N rows)."""

from __future__ import annotations

from planengine.exec import nodes as X
from planengine.ir.changelog import ALL, INSERT_ONLY
from planengine.ir.sorting import SortKey
from planengine.ir.types import parse_type
from planengine.runtime.operators.rank import UNBOUNDED_FETCH, full_sort, limit, sort_limit
from tests.runtime.operators.test_aggregate import flink, input_node, node_ctx

ROW = "ROW<a INT, b STRING, c INT>"
ROWS = [(2, "a", 6), (4, "b", 8), (6, "c", 10), (1, "a", 5), (3, "b", 7), (5, "c", 9)]


def test_sort_limit_asc_across_restore(spark, feed, runner):
    """sort-limit-asc: -D/+I as rows enter and leave the top 3; the same rows replayed after a restart."""
    f = feed("a INT, b STRING, c INT")
    node = X.SortLimit(inputs=(input_node(ROW),), output_type=parse_type(ROW), changelog_mode=ALL,
                       order_keys=(SortKey(0, True),), offset=0, limit=3)
    ctx = node_ctx(spark, node)
    r = runner(sort_limit(f.stream(), node, ctx).df)
    f.put(ROWS)
    assert flink(r.take()) == ["+I[2, a, 6]", "+I[4, b, 8]", "+I[6, c, 10]", "-D[6, c, 10]", "+I[1, a, 5]",
                               "-D[4, b, 8]", "+I[3, b, 7]"]
    r.stop()
    r2 = runner(sort_limit(f.stream(), node, ctx).df)
    f.put([(2, "a", 6), (4, "b", 8), (1, "a", 5)])
    assert flink(r2.take()) == ["-D[3, b, 7]", "+I[2, a, 6]", "-D[2, a, 6]", "+I[1, a, 5]"]


def test_full_sort_emits_everything_sorted_once_at_the_end_of_input(spark, feed, runner):
    """sort-desc (ORDER BY a DESC without LIMIT): Flink's StreamSortOperator emits only in endInput; the
    buffer survives a restart, and the drain marker (a row flagged end-of-input) releases it in order."""
    from pyspark.sql import functions as F

    f = feed("a INT, b STRING, c INT")
    marker = feed("a INT, b STRING, c INT, eoi BOOLEAN")
    node = X.SortLimit(inputs=(input_node(ROW),), output_type=parse_type(ROW), changelog_mode=ALL,
                       order_keys=(SortKey(0, False),), offset=0, limit=UNBOUNDED_FETCH)
    ctx = node_ctx(spark, node)

    def query():
        data = f.stream().df.withColumn("_end_of_input", F.lit(False))
        markers = marker.stream().df.withColumnRenamed("f3", "_end_of_input")
        return full_sort(f.stream(), data.unionByName(markers), "_end_of_input", node, ctx).df

    r = runner(query())
    f.put(ROWS[:4])
    assert r.take() == []  # no row's position is final before the end of input
    r.stop()
    r2 = runner(query())
    f.put(ROWS[4:])
    assert r2.take() == []
    marker.put([(None, None, None, True)])
    assert flink(r2.take()) == ["+I[6, c, 10]", "+I[5, c, 9]", "+I[4, b, 8]", "+I[3, b, 7]", "+I[2, a, 6]",
                                "+I[1, a, 5]"]


def test_limit_with_offset(spark, feed, runner):
    f = feed("a INT, b STRING, c INT")
    node = X.Limit(inputs=(input_node(ROW),), output_type=parse_type(ROW), changelog_mode=INSERT_ONLY,
                   offset=1, limit=2)
    out = limit(f.stream(), node, node_ctx(spark, node))
    assert not out.updating
    r = runner(out.df)
    f.put(ROWS[:2])
    assert r.take() == [(4, "b", 8)]
    f.put(ROWS[2:])
    assert r.take() == [(6, "c", 10)]
