"""Sink upsert materializer: a retraction of a non-latest row keeps the key."""

from __future__ import annotations

from planengine.exec import nodes as X
from planengine.ir.types import parse_type
from planengine.runtime.operators.upsert_materializer import materialize
from tests.runtime.operators.test_aggregate import batches, flink, input_node, node_ctx


def test_materializer_keeps_rows_per_sink_key(spark, feed, runner, tmp_path):
    f = feed("k INT, v STRING, _rowkind STRING", changelog=True)
    row = "ROW<k INT, v STRING>"
    sink = X.Sink(inputs=(input_node(row),), output_type=parse_type(row), table=X.TableSpec("t"),
                  upsert_materialize=True, upsert_keys=(0,))
    out = materialize(f.stream(), [0], node_ctx(spark, sink), sink)
    got = batches(runner, f, out.df, [
        [(1, "a", "+I"), (1, "b", "+I")],
        [(1, "a", "-D")],          # not the latest: nothing
        [(1, "b", "-U"), (1, "c", "+U")],
        [(1, "c", "-D")],
        [(2, "z", "-D")]])          # unknown: ignored
    assert [flink(g) for g in got] == [["+I[1, a]", "+U[1, b]"], [], ["-D[1, b]", "+I[1, c]"], ["-D[1, c]"], []]
    assert spark.read.format("statestore").option("stateVarName", "materializedRows").load(
        str(tmp_path / "ck")).count() == 0
