"""Deduplicate, changelog normalize and the upsert materializer on the JVM: what only the JVM processors have
(typed state, TTL by write time). Their Flink changelogs are one case table with the Python operators':
``test_dedup.py`` and ``test_normalize.py`` run every case on both strategies."""

from __future__ import annotations

from planengine.exec import nodes as X
from planengine.ir.changelog import ALL
from planengine.ir.types import parse_type
from planengine.runtime.jvm.changelog_processors import jvm_changelog_normalize
from tests.runtime.operators.test_aggregate import flink, input_node, node_ctx

NORM_ROW = "ROW<a STRING, b INT, c STRING>"


def _norm_node(ub: bool = True) -> X.ChangelogNormalize:
    return X.ChangelogNormalize(inputs=(input_node(NORM_ROW),), output_type=parse_type(NORM_ROW), changelog_mode=ALL,
                                unique_keys=(0,), generate_update_before=ub)


def test_normalize_state_is_the_typed_row_and_ttl_forgets_it(spark, feed, runner, tmp_path):
    """``latestRow`` holds the input's own fields (readable as such); while state TTL is on an unchanged row is
    re-emitted (Flink refreshes downstream TTL); an expired row is absent: the key starts over with +I."""
    import time

    f = feed("a STRING, b INT, c STRING, _rowkind STRING", changelog=True, name="refresh")
    node = _norm_node()
    r = runner(jvm_changelog_normalize(f.stream(), node, node_ctx(spark, node, **{"table.exec.state.ttl": "1 h"})).df)
    f.put([("one", 1, "a", "+I"), ("one", 1, "a", "+U")])
    assert flink(r.take()) == ["+I[one, 1, a]", "-U[one, 1, a]", "+U[one, 1, a]"]
    state = spark.read.format("statestore").option("stateVarName", "latestRow").load(str(tmp_path / "ck"))
    (stored,) = state.collect()
    assert stored["value"]["row"].asDict() == {"f0": "one", "f1": 1, "f2": "a"}

    g = feed("a STRING, b INT, c STRING, _rowkind STRING", changelog=True, name="expire")
    r2 = runner(jvm_changelog_normalize(g.stream(), node, node_ctx(spark, node, **{"table.exec.state.ttl": "2 s"})).df,
                name="ck2")
    g.put([("one", 1, "a", "+I")])
    assert flink(r2.take()) == ["+I[one, 1, a]"]
    time.sleep(3.0)
    g.put([("one", 2, "b", "+U")])
    assert flink(r2.take()) == ["+I[one, 2, b]"]  # the stored row expired


def test_materializer_keeps_rows_per_sink_key(spark, feed, runner, tmp_path):
    """sink_2's upsert materializer: a retraction of a non-latest row keeps the key; the rows alive are typed
    state (readable as the input's fields) and a key with none left holds no state."""
    from planengine.runtime.jvm.changelog_processors import jvm_upsert_materialize

    f = feed("k INT, v STRING, _rowkind STRING", changelog=True)
    row = "ROW<k INT, v STRING>"
    sink = X.Sink(inputs=(input_node(row),), output_type=parse_type(row), table=X.TableSpec("t"),
                  upsert_materialize=True, upsert_keys=(0,))
    out = jvm_upsert_materialize(f.stream(), (0,), node_ctx(spark, sink), sink)
    r = runner(out.df)
    f.put([(1, "a", "+I"), (1, "b", "+I")])
    assert flink(r.take()) == ["+I[1, a]", "+U[1, b]"]
    state = spark.read.format("statestore").option("stateVarName", "materializedRows").load(str(tmp_path / "ck"))
    (stored,) = state.collect()
    assert [x.asDict() for x in stored["value"]["rows"]] == [{"f0": 1, "f1": "a"}, {"f0": 1, "f1": "b"}]
    got = []
    for batch in ([(1, "a", "-D")], [(1, "b", "-U"), (1, "c", "+U")], [(1, "c", "-D")], [(2, "z", "-D")]):
        f.put(batch)
        got.append(flink(r.take()))
    assert got == [[], ["-D[1, b]", "+I[1, c]"], ["-D[1, c]"], []]
    assert spark.read.format("statestore").option("stateVarName", "materializedRows").load(
        str(tmp_path / "ck")).count() == 0
