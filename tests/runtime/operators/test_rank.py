"""Rank (Top-N): Flink's per-position updates with the row number, retraction, RANK ties.

One case table for both strategies: ``stream-exec-rank_1`` on the Python TWS operator and ``_2`` on the JVM
processor (``runtime/jvm/rank_processor.py``) must emit the same changelog for the same input.
"""

from __future__ import annotations

import pytest

from planengine.exec import nodes as X
from planengine.ir.changelog import ALL
from planengine.ir.sorting import SortKey
from planengine.ir.types import parse_type
from planengine.runtime.jvm.rank_processor import jvm_rank
from planengine.runtime.operators.rank import rank as python_rank
from tests.runtime.operators.test_aggregate import batches, flink, input_node, materialized, node_ctx


@pytest.fixture(params=["python", "jvm"])
def rank(request):
    """The Top-N translation under test: version 1 (Python operator) or version 2 (JVM processor)."""
    return python_rank if request.param == "python" else jvm_rank

ROW = "ROW<a INT, b STRING, c INT>"


def _node(end: int, *, number: bool = True, rank_type: str = "ROW_NUMBER", order: tuple = (SortKey(2, True),),
          start: int = 1) -> X.Rank:
    out = "ROW<a INT, b STRING, c INT, rn BIGINT NOT NULL>" if number else ROW
    return X.Rank(inputs=(input_node(ROW),), output_type=parse_type(out), changelog_mode=ALL, rank_type=rank_type,
                  partition_keys=(1,), order_keys=order, rank_start=start, rank_end=end, output_rank_number=number)


def test_append_fast_top1_with_row_number_and_restore(spark, feed, runner, tmp_path, rank):
    """rank-test-append-fast-strategy (the row number replaces c in the sink)."""
    f = feed("a INT, b STRING, c INT")
    node = _node(1)
    ctx = node_ctx(spark, node)
    r = runner(rank(f.stream(), node, ctx).df)
    f.put([(2, "a", 6), (4, "b", 8), (6, "c", 10), (1, "a", 5), (3, "b", 7), (5, "c", 9)])
    got = [(a, b, rn, k) for a, b, _, rn, k in r.take()]
    r.stop()
    assert sorted(flink(got)) == sorted(["+I[2, a, 1]", "+I[4, b, 1]", "+I[6, c, 1]", "-U[2, a, 1]", "+U[1, a, 1]",
                                         "-U[4, b, 1]", "+U[3, b, 1]", "-U[6, c, 1]", "+U[5, c, 1]"])
    assert spark.read.format("statestore").option("stateVarName", "rankedRows").load(
        str(tmp_path / "ck")).count() == 3
    r2 = runner(rank(f.stream(), node, ctx).df)
    f.put([(4, "d", 7), (3, "e", 8), (9, "a", 99)])
    assert sorted(flink([(a, b, rn, k) for a, b, _, rn, k in r2.take()])) == ["+I[3, e, 1]", "+I[4, d, 1]"]


def test_top2_shift_and_retraction(spark, feed, runner, rank):
    """A new best row shifts rank 1 → 2 (per-position -U/+U); retracting the best promotes the next one."""
    f = feed("a INT, b STRING, c INT, _rowkind STRING", changelog=True)
    node = _node(2)
    got = batches(runner, f, rank(f.stream(), node, node_ctx(spark, node)).df, [
        [(1, "x", 10, "+I"), (2, "x", 20, "+I"), (3, "x", 30, "+I")],
        [(0, "x", 5, "+I")],
        [(0, "x", 5, "-D")]])
    assert flink(got[0]) == ["+I[1, x, 10, 1]", "+I[2, x, 20, 2]"]
    assert flink(got[1]) == ["-U[1, x, 10, 1]", "+U[0, x, 5, 1]", "-U[2, x, 20, 2]", "+U[1, x, 10, 2]"]
    assert flink(got[2]) == ["-U[0, x, 5, 1]", "+U[1, x, 10, 1]", "-U[1, x, 10, 2]", "+U[2, x, 20, 2]"]


def test_rank_with_ties_materializes(spark, feed, runner, rank):
    f = feed("a INT, b STRING, c INT")
    node = _node(2, rank_type="RANK")
    got = batches(runner, f, rank(f.stream(), node, node_ctx(spark, node)).df, [
        [(1, "x", 10), (2, "x", 10), (3, "x", 20)], [(4, "x", 5)]])
    assert materialized(got[0]) == {(1, "x", 10, 1): 1, (2, "x", 10, 1): 1}
    assert materialized(got[0] + got[1]) == {(4, "x", 5, 1): 1, (1, "x", 10, 2): 1, (2, "x", 10, 2): 1}


def test_dense_rank_descending_nulls_last_and_retraction_of_an_unknown_row(spark, feed, runner, rank):
    """DENSE_RANK over c DESC (NULLs last, Flink's default descending); ties share a rank; a retraction of a row
    the operator never saw changes nothing."""
    f = feed("a INT, b STRING, c INT, _rowkind STRING", changelog=True)
    node = _node(2, rank_type="DENSE_RANK", order=(SortKey(2, False),))
    got = batches(runner, f, rank(f.stream(), node, node_ctx(spark, node)).df, [
        [(1, "x", None, "+I"), (2, "x", 10, "+I"), (3, "x", 10, "+I"), (4, "x", 7, "+I")],
        [(9, "x", 99, "-D"), (2, "x", 10, "-D")]])
    assert materialized(got[0]) == {(2, "x", 10, 1): 1, (3, "x", 10, 1): 1, (4, "x", 7, 2): 1}
    assert materialized(got[0] + got[1]) == {(3, "x", 10, 1): 1, (4, "x", 7, 2): 1}


def test_top_n_without_rank_number_emits_leaving_and_entering_rows(spark, feed, runner, rank):
    """Without the rank number a shift inside the top-N emits nothing; a row entering pushes the last one out."""
    f = feed("a INT, b STRING, c INT, _rowkind STRING", changelog=True)
    node = _node(2, number=False, start=1)
    got = batches(runner, f, rank(f.stream(), node, node_ctx(spark, node)).df, [
        [(1, "x", 10, "+I"), (2, "x", 20, "+I"), (3, "x", 30, "+I")],
        [(0, "x", 5, "+I")],
        [(0, "x", 5, "-D"), (1, "x", 10, "-U"), (1, "x", 40, "+U")]])
    assert flink(got[0]) == ["+I[1, x, 10]", "+I[2, x, 20]"]
    assert flink(got[1]) == ["-D[2, x, 20]", "+I[0, x, 5]"]
    assert flink(got[2]) == ["-D[0, x, 5]", "+I[2, x, 20]", "-D[1, x, 10]", "+I[3, x, 30]"]


def test_update_fast_emits_fewer_messages_and_keeps_fewer_rows_than_retract(spark, feed, runner, tmp_path):
    """Flink's UpdatableTopNFunction (``rank_3`` strategy ``UPDATE_FAST``): counts per key (unique key ``k``)
    only grow, so an update replaces its row by the key and the ``-U`` is skipped; rows below the top 2 are not
    kept (key c comes back through its own update). Same table as the retract strategy, fewer messages."""
    counts = "ROW<k STRING, cnt BIGINT>"
    input_batches = [
        [("a", 1, "+I"), ("b", 1, "+I"), ("c", 1, "+I")],
        [("a", 1, "-U"), ("a", 2, "+U")],
        [("c", 1, "-U"), ("c", 2, "+U"), ("c", 2, "-U"), ("c", 3, "+U")]]
    out, state_rows = {}, {}
    for strategy in ("RETRACT", "UPDATE_FAST"):
        f = feed("k STRING, cnt BIGINT, _rowkind STRING", changelog=True)
        node = X.Rank(inputs=(input_node(counts),), output_type=parse_type("ROW<k STRING, cnt BIGINT, rn BIGINT>"),
                      changelog_mode=ALL, rank_type="ROW_NUMBER", partition_keys=(), order_keys=(SortKey(1, False),),
                      rank_end=2, output_rank_number=True, strategy=strategy,
                      unique_key=(0,) if strategy == "UPDATE_FAST" else ())
        r = runner(jvm_rank(f.stream(), node, node_ctx(spark, node)).df, name=f"ck-{strategy}")
        out[strategy] = []
        for batch in input_batches:
            f.put(batch)
            out[strategy].append(r.take())
        r.stop()
        state = spark.read.format("statestore").option("stateVarName", "rankedRows").load(
            str(tmp_path / f"ck-{strategy}"))
        state_rows[strategy] = sum(len(row["value"]["rows"]) for row in state.collect())
    fast, retract = out["UPDATE_FAST"], out["RETRACT"]
    assert flink(fast[1]) == ["-U[a, 1, 1]", "+U[a, 2, 1]"]
    assert flink(fast[2]) == ["-U[b, 1, 2]", "+U[c, 2, 2]", "-U[a, 2, 1]", "+U[c, 3, 1]", "-U[c, 2, 2]",
                              "+U[a, 2, 2]"]
    assert len(flink(retract[1])) == 8 and len(flink(fast[1])) == 2
    everything = [r for batch in fast for r in batch]
    assert materialized(everything) == materialized([r for batch in retract for r in batch]) == {
        ("c", 3, 1): 1, ("a", 2, 2): 1}
    assert (state_rows["UPDATE_FAST"], state_rows["RETRACT"]) == (2, 3)


def test_update_fast_without_the_rank_number_updates_rows_in_place(spark, feed, runner):
    """Flink's UpdatableTopNFunction without the row number: a key already in the top-N is updated in place
    (``-U old``, ``+U new``); a key entering it deletes the row it pushes out and is inserted."""
    counts = "ROW<k STRING, cnt BIGINT>"
    f = feed("k STRING, cnt BIGINT, _rowkind STRING", changelog=True)
    node = X.Rank(inputs=(input_node(counts),), output_type=parse_type(counts), changelog_mode=ALL,
                  rank_type="ROW_NUMBER", partition_keys=(), order_keys=(SortKey(1, False),), rank_end=2,
                  output_rank_number=False, strategy="UPDATE_FAST", unique_key=(0,))
    r = runner(jvm_rank(f.stream(), node, node_ctx(spark, node)).df)
    out = []
    for batch in ([("a", 1, "+I"), ("b", 1, "+I"), ("c", 1, "+I")], [("a", 2, "+U")], [("c", 2, "+U"), ("c", 3, "+U")]):
        f.put(batch)
        out.append(flink(r.take()))
    r.stop()
    assert out == [["+I[a, 1]", "+I[b, 1]"], ["-U[a, 1]", "+U[a, 2]"],
                   ["-D[b, 1]", "+I[c, 2]", "-U[c, 2]", "+U[c, 3]"]]
