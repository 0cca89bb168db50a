"""Regular joins on one TWS over the unioned sides: inner with a non-equi condition, outer padding and its
retraction, semi/anti, updating inputs.

The equi-join cases are one case table for both strategies: ``join_1`` on the Python TWS operator and ``_2`` on
the JVM processor (``runtime/jvm/join_processor.py``; a non-equi condition stays on Python, so those cases run there
only).
``test_join_jvm.py`` keeps what only the JVM has (its refusal rule, insert-only output).
"""

from __future__ import annotations

from collections import Counter

import pytest

from planengine.exec import nodes as X
from planengine.ir import types as T
from planengine.ir.changelog import ALL, INSERT_ONLY
from planengine.ir.expressions import Call, FunctionRef, InputRef, Literal
from planengine.ir.types import parse_type
from planengine.runtime.jvm.join_processor import jvm_join
from planengine.runtime.operators.join import join
from tests.runtime.operators.test_aggregate import flink, input_node, materialized, node_ctx


@pytest.fixture(params=["python", "jvm"])
def strategy(request):
    """``(name, join translation)``: version 1 (Python operator) or version 2 (JVM processor)."""
    return request.param, (join if request.param == "python" else jvm_join)

L = "ROW<a INT, b BIGINT, c STRING>"
R = "ROW<a INT, b BIGINT, c STRING>"


def _node(join_type: str, out: str, condition=None, mode=ALL) -> X.Join:
    return X.Join(inputs=(input_node(L), input_node(R)), output_type=parse_type(out), changelog_mode=mode,
                  join_type=join_type, left_keys=(0,), right_keys=(0,), filter_nulls=(True,),
                  non_equi_condition=condition)


OUT = "ROW<a INT, b BIGINT, c STRING, a0 INT, b0 BIGINT, c0 STRING>"
GT = Call(FunctionRef(">", 1), (InputRef(1, T.BIGINT), InputRef(4, T.BIGINT)), T.BOOLEAN)


def _feeds(feed, changelog=False):
    extra = ", _rowkind STRING" if changelog else ""
    return feed("a INT, b BIGINT, c STRING" + extra, name="left", changelog=changelog), feed(
        "a INT, b BIGINT, c STRING" + extra, name="right", changelog=changelog)


def test_inner_join_non_equi_and_null_keys(spark, feed, runner):
    """join-non-window-inner-join: t1.a = t2.a AND t1.b > t2.b; NULL keys never match; insert-only output."""
    lf, rf = _feeds(feed)
    node = _node("INNER", OUT, GT, mode=INSERT_ONLY)
    out = join(lf.stream(), rf.stream(), node, node_ctx(spark, node))
    assert not out.updating
    r = runner(out.df)
    lf.put([(1, 1, "Baker1"), (1, 2, "Baker2"), (1, 2, "Baker2"), (1, 5, "Baker3"), (2, 7, "Baker5"),
            (1, 9, "Baker6"), (1, 8, "Baker8"), (None, 8, "Baker9")])
    rf.put([(1, 1, "BakerBaker"), (2, 2, "HeHe"), (None, 2, "HeHe")])
    got = Counter((x[3], x[5], x[2]) for x in r.take())
    assert got == Counter([(1, "BakerBaker", "Baker2"), (1, "BakerBaker", "Baker2"), (1, "BakerBaker", "Baker3"),
                           (2, "HeHe", "Baker5"), (1, "BakerBaker", "Baker6"), (1, "BakerBaker", "Baker8")])


def test_inner_join_second_batch(spark, feed, runner):
    """A NULL key in the first batch shares its Arrow batch with key 2 (same shuffle partition): Spark hands
    the integer key column over as float64 and its state server filed key 2's rows under the NULL key, so
    the second batch's right row found no left row."""
    lf, rf = _feeds(feed)
    node = _node("INNER", OUT, GT, mode=INSERT_ONLY)
    r = runner(join(lf.stream(), rf.stream(), node, node_ctx(spark, node)).df)
    lf.put([(1, 1, "Baker1"), (1, 2, "Baker2"), (2, 7, "Baker5"), (None, 8, "Baker9")])
    rf.put([(1, 1, "BakerBaker"), (2, 2, "HeHe"), (None, 2, "HeHe")])
    r.take()
    lf.put([(1, 1, "PostRestore")])
    rf.put([(2, 1, "PostRestoreRight")])
    assert [(x[3], x[5], x[2]) for x in r.take()] == [(2, "PostRestoreRight", "Baker5")]


def test_left_join_padding_retracted_when_match_arrives(spark, feed, runner, tmp_path, strategy):
    """Key 2 and the NULL key share a shuffle partition (with any partition count), so key 2's padded row
    must be kept under key 2 although its batch also holds a NULL key."""
    kind, join_ = strategy
    lf, rf = _feeds(feed)
    node = _node("LEFT", OUT)
    ctx = node_ctx(spark, node)
    r = runner(join_(lf.stream(), rf.stream(), node, ctx).df)
    lf.put([(2, 10, "x"), (None, 11, "n")])
    first = flink(r.take())
    assert sorted(first) == ["+I[2, 10, x, null, null, null]", "+I[null, 11, n, null, null, null]"]
    r.stop()
    r2 = runner(join_(lf.stream(), rf.stream(), node, ctx).df)  # restore
    rf.put([(2, 20, "y"), (2, 21, "z")])
    second = flink(r2.take())
    assert second == ["-D[2, 10, x, null, null, null]", "+I[2, 10, x, 2, 20, y]", "+I[2, 10, x, 2, 21, z]"]
    left = spark.read.format("statestore").option("stateVarName", "leftRows").load(str(tmp_path / "ck"))
    if kind == "python":
        assert [(row["key"][0], row["user_map_value"]["assoc"]) for row in left.collect()] == [(2, 2)]
    else:  # typed: the row, its multiplicity and Flink's numOfAssociations
        (entry,) = left.collect()
        assert entry["user_map_key"]["row"].asDict() == {"l0": 2, "l1": 10, "l2": "x"}
        assert (entry["user_map_value"]["count"], entry["user_map_value"]["associations"]) == (1, 2)
    assert spark.read.format("statestore").option("stateVarName", "rightRows").load(
        str(tmp_path / "ck")).count() == 2


def test_full_join_with_updating_inputs(spark, feed, runner, strategy):
    """Retracting the only match re-emits the padded row; materialized result equals the batch join."""
    _, join_ = strategy
    lf, rf = _feeds(feed, changelog=True)
    node = _node("FULL", OUT)
    r = runner(join_(lf.stream(), rf.stream(), node, node_ctx(spark, node)).df)
    lf.put([(1, 10, "x", "+I")])
    rf.put([(1, 20, "y", "+I"), (2, 30, "w", "+I")])
    out = r.take()
    rf.put([(1, 20, "y", "-D")])
    out2 = r.take()
    assert flink(out2) == ["-D[1, 10, x, 1, 20, y]", "+I[1, 10, x, null, null, null]"]
    assert materialized(out + out2) == {(1, 10, "x", None, None, None): 1, (None, None, None, 2, 30, "w"): 1}


def test_semi_and_anti(spark, feed, runner, strategy):
    _, join_ = strategy
    for jt, expect_first, expect_second in (
            ("SEMI", [], ["+I[1, 10, x]"]),
            ("ANTI", ["+I[1, 10, x]", "+I[2, 5, q]"], ["-D[1, 10, x]"])):
        lf = feed("a INT, b BIGINT, c STRING", name=f"l{jt}")
        rf = feed("a INT, b BIGINT, c STRING", name=f"r{jt}")
        node = _node(jt, L)
        r = runner(join_(lf.stream(), rf.stream(), node, node_ctx(spark, node)).df, name=f"ck{jt}")
        lf.put([(1, 10, "x"), (2, 5, "q")])
        assert sorted(flink(r.take())) == expect_first, jt
        rf.put([(1, 0, "r"), (1, 1, "s")])
        assert flink(r.take()) == expect_second, jt


def test_semi_join_forwards_the_right_row_kind_on_both_transitions(spark, feed, runner, strategy):
    """StreamingSemiAntiJoinOperator: a right-side update that takes a left row's matches 1 -> 0 -> 1 emits the
    left row with the right row's kinds (-U then +U), not a delete and an insert."""
    _, join_ = strategy
    lf = feed("a INT, b BIGINT, c STRING", name="left")
    rf = feed("a INT, b BIGINT, c STRING, _rowkind STRING", name="right", changelog=True)
    node = _node("SEMI", L)
    r = runner(join_(lf.stream(), rf.stream(), node, node_ctx(spark, node)).df)
    lf.put([(1, 10, "x")])
    assert flink(r.take()) == []
    rf.put([(1, 0, "r", "+I")])
    assert flink(r.take()) == ["+I[1, 10, x]"]
    rf.put([(1, 0, "r", "-U"), (1, 5, "r", "+U")])
    assert flink(r.take()) == ["-U[1, 10, x]", "+U[1, 10, x]"]


# l.b < r.b + 5: NULL in either b makes it NULL (no match).
LT_PLUS_5 = Call(FunctionRef("<", 1), (InputRef(1, T.BIGINT), Call(FunctionRef("+", 1), (
    InputRef(4, T.BIGINT), Literal(5, T.BIGINT.with_nullable(False))), T.BIGINT)), T.BOOLEAN)
# (side, rows) per micro-batch, both inputs updating: matches come and go as the condition's inputs change.
NON_EQUI_BATCHES = (
    ("left", [(1, 10, "x", "+I"), (1, None, "n", "+I"), (2, 3, "q", "+I"), (None, 1, "k", "+I")]),
    ("right", [(1, 8, "a", "+I"), (1, 20, "b", "+I"), (1, None, "c", "+I"), (2, 1, "d", "+I")]),
    # x keeps b only, then has no match left
    ("right", [(1, 8, "a", "-U"), (1, 2, "a", "+U"), (1, 20, "b", "-D"), (3, 0, "e", "+I")]),
    ("left", [(2, 3, "q", "-U"), (2, 9, "q", "+U"), (1, 0, "z", "+I")]),  # q loses d; z matches a only
)


def _batch_join(join_type: str) -> Counter:
    """The join of the inputs' final rows, computed here: what the changelog must materialize to."""
    rows: dict[str, Counter] = {"left": Counter(), "right": Counter()}
    for side, batch in NON_EQUI_BATCHES:
        for *row, kind in batch:
            rows[side][tuple(row)] += 1 if kind in ("+I", "+U") else -1
    left, right = (list((+rows[s]).elements()) for s in ("left", "right"))

    def ok(lr, rr):
        return lr[0] is not None and lr[0] == rr[0] and None not in (lr[1], rr[1]) and lr[1] < rr[1] + 5

    out: Counter = Counter()
    for lr in left:
        matched = [rr for rr in right if ok(lr, rr)]
        if join_type in ("SEMI", "ANTI"):
            out[lr] += (join_type == "SEMI") == bool(matched)
            continue
        out.update((*lr, *rr) for rr in matched)
        if not matched and join_type in ("LEFT", "FULL"):
            out[(*lr, None, None, None)] += 1
    if join_type in ("RIGHT", "FULL"):
        out.update((None, None, None, *rr) for rr in right if not any(ok(lr, rr) for lr in left))
    return +out


@pytest.mark.parametrize("join_type", ["INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI"])
def test_non_equi_join_changelogs_are_the_same_on_both_operators(spark, feed, runner, join_type):
    """join_3 evaluates the non-equi condition on the JVM (a Catalyst predicate per pair of rows): its changelog,
    batch by batch and per join key in order, is the Python operator's, over updating inputs whose updates make
    and break matches and with NULLs in the condition's columns; both materialize to the batch join."""
    node = _node(join_type, L if join_type in ("SEMI", "ANTI") else OUT, LT_PLUS_5)
    changelogs = {}
    for kind, join_ in (("python", join), ("jvm", jvm_join)):
        lf, rf = (feed("a INT, b BIGINT, c STRING, _rowkind STRING", name=f"{kind}-{s}", changelog=True)
                  for s in ("left", "right"))
        r = runner(join_(lf.stream(), rf.stream(), node, node_ctx(spark, node)).df, name=f"ck-{kind}")
        batches = []
        for side, rows in NON_EQUI_BATCHES:
            (lf if side == "left" else rf).put(rows)
            per_key: dict = {}
            for row, text in zip(out := r.take(), flink(out), strict=True):
                per_key.setdefault(_join_key(row), []).append(text)
            batches.append(per_key)
        r.stop()
        changelogs[kind] = batches
    assert changelogs["jvm"] == changelogs["python"]
    everything = [row for batch in changelogs["jvm"] for rows in batch.values() for row in rows]
    assert everything, "the case must produce output"
    assert materialized(_parse(everything)) == _batch_join(join_type)


def _join_key(row: tuple) -> object:
    """The join key of an output row (kind last): the left ``a``, else (right-only row) the right ``a``."""
    return row[0] if row[0] is not None or len(row) == 4 else row[3]


def _parse(texts: list[str]) -> list[tuple]:
    """Flink row strings back to rows (ints, strings, None) with their kind last, for ``materialized``."""
    out = []
    for text in texts:
        kind, body = text[:2], text[3:-1]
        values = [None if v == "null" else int(v) if v.lstrip("-").isdigit() else v for v in body.split(", ")]
        out.append((*values, kind))
    return out
