"""A state move's conversion of a group aggregate from the Python operator to the JVM processor.

The Python transformWithState operator (group-aggregate versions 1-2) runs a micro-batch and stops; its state
is read with Spark's state data source, converted to the JVM processor's typed layout and handed to a new
query through ``transformWithState(..., initialState)``. The next micro-batch must produce, on the JVM, exactly
the changelog the Python operator produces when it continues from its own checkpoint: accumulators, DISTINCT
multisets and MIN/MAX value multisets (retracted below) all crossed over.
"""

from __future__ import annotations

from collections import Counter

from planengine.exec import nodes as X
from planengine.ir import types as T
from planengine.ir.changelog import ALL
from planengine.ir.types import parse_type
from planengine.runtime.operators.group_aggregate import group_aggregate
from planengine.runtime.state.conversion import group_aggregate_with_initial_state, initial_state
from tests.runtime.operators.test_aggregate import BIGINT_NN, agg, flink, input_node, node_ctx

SCHEMA = "k STRING, v INT, tag STRING, _rowkind STRING"
IN_TYPE = "ROW<k STRING, v INT, tag STRING>"
BATCH1 = [("a", 1, "x", "+I"), ("a", 5, "y", "+I"), ("a", 3, "x", "+I"), ("b", 7, "z", "+I"), ("c", 2, "x", "+I")]
BATCH2 = [("a", 1, "x", "-D"), ("a", 5, "y", "-U"), ("a", 9, "y", "+U"), ("b", 7, "z", "-D"), ("c", 4, "w", "+I")]


def _node() -> X.GroupAggregate:
    calls = (agg("COUNT", (), BIGINT_NN), agg("SUM", (1,), T.INT), agg("AVG", (1,), T.INT), agg("MIN", (1,), T.INT),
             agg("MAX", (1,), T.INT), agg("COUNT", (2,), BIGINT_NN, distinct=True))
    return X.GroupAggregate(inputs=(input_node(IN_TYPE),), output_type=parse_type(
        "ROW<k STRING, c BIGINT NOT NULL, s INT, a INT, lo INT, hi INT, tags BIGINT NOT NULL>"),
        changelog_mode=ALL, grouping=(0,), aggregates=calls, need_retraction=True, generate_update_before=True)


def test_python_state_continues_on_the_jvm(spark, feed, runner, tmp_path):
    node = _node()
    ctx = node_ctx(spark, node)
    old = feed(SCHEMA, changelog=True, name="old")
    python = runner(group_aggregate(old.stream(), node, ctx).df, name="ck-python")
    old.put(BATCH1)
    python.take()
    python.stop()

    converted = initial_state(spark, str(tmp_path / "ck-python"), 0, node, old.stream(), ctx)
    assert sorted(r["f0"] for r in converted.collect()) == ["a", "b", "c"]

    # the reference: the Python operator continues from its own checkpoint
    python = runner(group_aggregate(old.stream(), node, ctx).df, name="ck-python")
    old.put(BATCH2)
    expected = flink(python.take())
    python.stop()

    # the migrated query: a new checkpoint, the JVM processor from the converted state, only the new rows
    new = feed(SCHEMA, changelog=True, name="new")
    jvm = runner(group_aggregate_with_initial_state(new.stream(), node, ctx, converted).df, name="ck-jvm")
    new.put(BATCH2)
    got = flink(jvm.take())
    assert Counter(got) == Counter(expected)
    assert [x for x in got if x.startswith(("+U[a", "-U[a"))] == [x for x in expected if x.startswith(("+U[a", "-U[a"))]
    assert "-U[a, 3, 9, 3, 1, 5, 2]" in got and "-D[b, 1, 7, 7, 7, 7, 1]" in got  # state crossed over
    state = spark.read.format("statestore").option("stateVarName", "accumulators").load(str(tmp_path / "ck-jvm"))
    assert sorted(r["key"][0] for r in state.collect()) == ["a", "c"]
