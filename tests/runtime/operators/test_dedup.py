"""Deduplicate: keep-first / keep-last on proctime and rowtime (Flink's changelogs).

One case table for both strategies: ``deduplicate_1`` on the Python TWS operator and ``_2`` on the JVM processor
(``runtime/jvm/changelog_processors.py``); the JVM's typed state and TTL are in ``test_changelog_jvm.py``.
"""

from __future__ import annotations

from collections import Counter

import pytest

from planengine.exec import nodes as X
from planengine.ir.changelog import ALL, INSERT_ONLY
from planengine.ir.types import parse_type
from planengine.runtime.jvm.changelog_processors import jvm_deduplicate
from planengine.runtime.operators.deduplicate import deduplicate as python_deduplicate
from tests.runtime.operators.test_aggregate import batches, flink, input_node, node_ctx


@pytest.fixture(params=["python", "jvm"])
def deduplicate(request):
    """The translation under test: version 1 (Python operator) or version 2 (JVM processor)."""
    return python_deduplicate if request.param == "python" else jvm_deduplicate

ROW = "ROW<order_id BIGINT, `user` STRING, product STRING, order_time BIGINT>"
SCHEMA = "order_id BIGINT, user STRING, product STRING, order_time BIGINT"


def _node(*, last: bool, rowtime: bool, mode=ALL) -> X.Deduplicate:
    return X.Deduplicate(inputs=(input_node(ROW),), output_type=parse_type(ROW), changelog_mode=mode,
                         unique_keys=(2,), is_rowtime=rowtime, keep_last_row=last, order_field=3)


def test_proctime_keep_first_is_insert_only(spark, feed, runner, deduplicate):
    f = feed(SCHEMA)
    node = _node(last=False, rowtime=False, mode=INSERT_ONLY)
    out = deduplicate(f.stream(), node, node_ctx(spark, node))
    assert not out.updating and "_rowkind" not in out.df.columns
    got = batches(runner, f, out.df, [
        [(1, "terry", "pen", 1000), (2, "alice", "pen", 2000), (4, "bob", "apple", 4000)],
        [(6, "jerry", "pen", 6000), (8, "bill", "banana", 8000)]])
    assert Counter(got[0]) == Counter([(1, "terry", "pen", 1000), (4, "bob", "apple", 4000)])
    assert got[1] == [(8, "bill", "banana", 8000)]


def test_proctime_keep_last_updates(spark, feed, runner, deduplicate):
    f = feed(SCHEMA)
    node = _node(last=True, rowtime=False)
    got = batches(runner, f, deduplicate(f.stream(), node, node_ctx(spark, node)).df, [
        [(1, "terry", "pen", 1000), (2, "alice", "pen", 2000)], [(3, "bob", "pen", 500)]])
    assert flink(got[0]) == ["+I[1, terry, pen, 1000]", "-U[1, terry, pen, 1000]", "+U[2, alice, pen, 2000]"]
    assert flink(got[1]) == ["-U[2, alice, pen, 2000]", "+U[3, bob, pen, 500]"]


def test_rowtime_keep_first_and_last(spark, feed, runner, deduplicate):
    """Rowtime keep-first: a smaller rowtime arriving later replaces the kept row; keep-last: a larger or equal
    one does, a smaller one does not."""
    f = feed(SCHEMA, name="first")
    node = _node(last=False, rowtime=True)
    got = batches(runner, f, deduplicate(f.stream(), node, node_ctx(spark, node)).df, [
        [(1, "terry", "pen", 1000), (2, "alice", "pen", 2000)], [(3, "bob", "pen", 500)]])
    assert flink(got[0]) == ["+I[1, terry, pen, 1000]"]
    assert flink(got[1]) == ["-U[1, terry, pen, 1000]", "+U[3, bob, pen, 500]"]

    g = feed(SCHEMA, name="last")
    node2 = _node(last=True, rowtime=True)
    got2 = batches(lambda df: runner(df, name="ck2"), g, deduplicate(g.stream(), node2, node_ctx(spark, node2)).df,
                   [[(1, "terry", "pen", 1000), (2, "alice", "pen", 2000), (3, "bob", "pen", 500)]])
    assert flink(got2[0]) == ["+I[1, terry, pen, 1000]", "-U[1, terry, pen, 1000]", "+U[2, alice, pen, 2000]"]
