"""Deduplicate and changelog normalize on the JVM (``deduplicate_2``, ``changelog-normalize_2``): the cases of
``test_dedup.py`` and ``test_normalize.py`` (the Python operators' Flink changelogs) against the JVM processors,
plus typed state and TTL."""

from __future__ import annotations

from collections import Counter

import pytest

from planengine.exec import nodes as X
from planengine.ir.changelog import ALL, INSERT_ONLY
from planengine.ir.types import parse_type
from planengine.runtime.jvm.changelog import jvm_changelog_normalize, jvm_deduplicate
from tests.runtime.operators.test_aggregate import batches, flink, input_node, node_ctx

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DEDUP_ROW = "ROW<order_id BIGINT, `user` STRING, product STRING, order_time BIGINT>"
SCHEMA = "order_id BIGINT, user STRING, product STRING, order_time BIGINT"


def _dedup_node(*, last: bool, rowtime: bool, mode=ALL) -> X.Deduplicate:
    return X.Deduplicate(inputs=(input_node(DEDUP_ROW),), output_type=parse_type(DEDUP_ROW), changelog_mode=mode,
                         unique_keys=(2,), is_rowtime=rowtime, keep_last_row=last, order_field=3)


def test_dedup_proctime_keep_first_is_insert_only(spark, feed, runner):
    f = feed(SCHEMA)
    node = _dedup_node(last=False, rowtime=False, mode=INSERT_ONLY)
    out = jvm_deduplicate(f.stream(), node, node_ctx(spark, node))
    assert not out.updating and "_rowkind" not in out.df.columns
    got = batches(runner, f, out.df, [
        [(1, "terry", "pen", 1000), (2, "alice", "pen", 2000), (4, "bob", "apple", 4000)],
        [(6, "jerry", "pen", 6000), (8, "bill", "banana", 8000)]])
    assert Counter(got[0]) == Counter([(1, "terry", "pen", 1000), (4, "bob", "apple", 4000)])
    assert got[1] == [(8, "bill", "banana", 8000)]


def test_dedup_proctime_keep_last_updates(spark, feed, runner):
    f = feed(SCHEMA)
    node = _dedup_node(last=True, rowtime=False)
    got = batches(runner, f, jvm_deduplicate(f.stream(), node, node_ctx(spark, node)).df, [
        [(1, "terry", "pen", 1000), (2, "alice", "pen", 2000)], [(3, "bob", "pen", 500)]])
    assert flink(got[0]) == ["+I[1, terry, pen, 1000]", "-U[1, terry, pen, 1000]", "+U[2, alice, pen, 2000]"]
    assert flink(got[1]) == ["-U[2, alice, pen, 2000]", "+U[3, bob, pen, 500]"]


def test_dedup_rowtime_keep_first_and_last(spark, feed, runner):
    """Rowtime keep-first: a smaller rowtime arriving later replaces the kept row; keep-last: a larger or equal
    one does, a smaller one does not."""
    f = feed(SCHEMA, name="first")
    node = _dedup_node(last=False, rowtime=True)
    got = batches(runner, f, jvm_deduplicate(f.stream(), node, node_ctx(spark, node)).df, [
        [(1, "terry", "pen", 1000), (2, "alice", "pen", 2000)], [(3, "bob", "pen", 500)]])
    assert flink(got[0]) == ["+I[1, terry, pen, 1000]"]
    assert flink(got[1]) == ["-U[1, terry, pen, 1000]", "+U[3, bob, pen, 500]"]

    g = feed(SCHEMA, name="last")
    node2 = _dedup_node(last=True, rowtime=True)
    got2 = batches(lambda df: runner(df, name="ck2"), g, jvm_deduplicate(g.stream(), node2, node_ctx(spark, node2)).df,
                   [[(1, "terry", "pen", 1000), (2, "alice", "pen", 2000), (3, "bob", "pen", 500)]])
    assert flink(got2[0]) == ["+I[1, terry, pen, 1000]", "-U[1, terry, pen, 1000]", "+U[2, alice, pen, 2000]"]


NORM_ROW = "ROW<a STRING, b INT, c STRING>"


def _norm_node(ub: bool = True) -> X.ChangelogNormalize:
    return X.ChangelogNormalize(inputs=(input_node(NORM_ROW),), output_type=parse_type(NORM_ROW), changelog_mode=ALL,
                                unique_keys=(0,), generate_update_before=ub)


def test_normalize_upsert_and_key_only_deletes(spark, feed, runner, tmp_path):
    """kafka-with-non-key-filter's input: identical +U dropped, key-only -D emits the stored row, unknown -D
    dropped; state survives a restart and is readable as ``latestRow``."""
    f = feed("a STRING, b INT, c STRING, _rowkind STRING", changelog=True)
    node = _norm_node()
    df = jvm_changelog_normalize(f.stream(), node, node_ctx(spark, node)).df
    got = batches(runner, f, df, [[
        ("one", 1, "a", "+I"), ("one", 2, "bb", "+U"), ("three", 3, "ccc", "+U"), ("three", 3, "ccc", "+U"),
        ("two", 0, "dd", "+U"), ("two", 1, "dd", "+U"), ("one", 4, "aaaa", "+I"), ("one", 4, "aaaa", "+U"),
        ("three", None, None, "-D"), ("nobody", None, None, "-D")]])
    assert sorted(flink(got[0])) == sorted([
        "+I[one, 1, a]", "-U[one, 1, a]", "+U[one, 2, bb]", "-U[one, 2, bb]", "+U[one, 4, aaaa]",
        "+I[three, 3, ccc]", "-D[three, 3, ccc]", "+I[two, 0, dd]", "-U[two, 0, dd]", "+U[two, 1, dd]"])
    # order per key is Flink's
    assert [x for x in flink(got[0]) if "one" in x] == [
        "+I[one, 1, a]", "-U[one, 1, a]", "+U[one, 2, bb]", "-U[one, 2, bb]", "+U[one, 4, aaaa]"]
    state = spark.read.format("statestore").option("stateVarName", "latestRow").load(str(tmp_path / "ck"))
    assert state.count() == 2  # one, two


def test_normalize_retract_source_with_duplicates_and_restore(spark, feed, runner):
    """changelog-normalize-source: -U dropped (the +U brings the before-image from state); after a restart
    the stored rows still drive -U/+U and -D."""
    f = feed("a STRING, b INT, c STRING, _rowkind STRING", changelog=True)
    node = _norm_node()
    ctx = node_ctx(spark, node)
    r = runner(jvm_changelog_normalize(f.stream(), node, ctx).df)
    f.put([("one", 1, "a", "+I"), ("two", 2, "b", "+I"), ("one", 1, "a", "-U"), ("one", 1, "aa", "+U"),
           ("three", 3, "c", "+I"), ("two", 2, "b", "-D"), ("three", 3, "c", "-U"), ("three", 3, "cc", "+U")])
    before = flink(r.take())
    r.stop()
    assert sorted(before) == sorted(["+I[one, 1, a]", "+I[two, 2, b]", "-U[one, 1, a]", "+U[one, 1, aa]",
                                     "+I[three, 3, c]", "-D[two, 2, b]", "-U[three, 3, c]", "+U[three, 3, cc]"])
    r2 = runner(jvm_changelog_normalize(f.stream(), node, ctx).df)
    f.put([("one", 1, "aa", "-U"), ("one", 1, "x", "+U"), ("three", None, None, "-D")])
    assert flink(r2.take()) == ["-U[one, 1, aa]", "+U[one, 1, x]", "-D[three, 3, cc]"] or sorted(
        flink(r2.take())) == sorted(["-U[one, 1, aa]", "+U[one, 1, x]", "-D[three, 3, cc]"])


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
    from planengine.runtime.jvm.changelog import jvm_upsert_materialize

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
