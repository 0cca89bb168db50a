"""The JVM group aggregate (``stream-exec-group-aggregate_3``'s processor): what only the JVM path has to get right.

The cases both implementations share (changelogs, retraction, DISTINCT, mini-batch and restore, typed state)
run on each in ``test_aggregate.py`` (its ``implementation`` fixture); the processor alone, without a streaming
query, in ``tests/jvm`` (``GroupAggregateProcessorTest``).
"""

from __future__ import annotations

from planengine.ir import types as T
from planengine.runtime.jvm.group_aggregate_processor import jvm_group_aggregate
from tests.runtime.operators.test_aggregate import agg, batches, flink, group_node, node_ctx


def test_variance_over_integers_is_integer_arithmetic_like_flink(spark, feed, runner):
    """Flink reduces VAR/STDDEV to SUM(x*x), SUM(x), COUNT(x) in the result type: over INT every step is
    integer arithmetic, so VAR_SAMP(0, 1) = (1 - 1/2) / 1 = 1 (a double computation would give 0.5 -> 0);
    over DOUBLE it is the double formula. SAMP of a single value is NULL."""
    f = feed("k STRING, v INT, d DOUBLE")
    node = group_node("ROW<k STRING, v INT, d DOUBLE>",
                      "ROW<k STRING, vs INT, ss INT, vp INT, sp INT, vsd DOUBLE, spd DOUBLE>", (0,),
                      (agg("VAR_SAMP", (1,), T.INT), agg("STDDEV_SAMP", (1,), T.INT), agg("VAR_POP", (1,), T.INT),
                       agg("STDDEV_POP", (1,), T.INT), agg("VAR_SAMP", (2,), T.DOUBLE),
                       agg("STDDEV_POP", (2,), T.DOUBLE)),
                      ub=False)
    ctx = node_ctx(spark, node, **{"table.exec.mini-batch.enabled": "true"})
    got = batches(runner, f, jvm_group_aggregate(f.stream(), node, ctx).df,
                  [[("a", 0, 0.0), ("a", 1, 1.0), ("b", 7, 7.0)]])
    assert sorted(flink(got[0])) == ["+I[a, 1, 1, 0, 0, 0.5, 0.5]", "+I[b, null, null, 0, 0, null, 0.0]"]
