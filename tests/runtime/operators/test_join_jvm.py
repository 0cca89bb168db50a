"""Regular joins on the JVM (``join_2`` without a non-equi condition): the cases of ``test_join.py`` (the Python
operator's Flink changelogs) against the JVM processor, plus its typed state."""

from __future__ import annotations

from collections import Counter

import pytest

from planengine.exec import nodes as X
from planengine.ir.changelog import ALL, INSERT_ONLY
from planengine.ir.types import parse_type
from planengine.runtime.jvm.join import jvm_join, refusal
from tests.runtime.operators.test_aggregate import flink, input_node, materialized, node_ctx
from tests.runtime.operators.test_join import GT, OUT, L, R

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _node(join_type: str, out: str, mode=ALL) -> X.Join:
    return X.Join(inputs=(input_node(L), input_node(R)), output_type=parse_type(out), changelog_mode=mode,
                  join_type=join_type, left_keys=(0,), right_keys=(0,), filter_nulls=(True,))


def _feeds(feed, changelog=False):
    extra = ", _rowkind STRING" if changelog else ""
    return feed("a INT, b BIGINT, c STRING" + extra, name="left", changelog=changelog), feed(
        "a INT, b BIGINT, c STRING" + extra, name="right", changelog=changelog)


def test_a_non_equi_condition_stays_on_the_python_operator():
    conditioned = X.Join(inputs=(input_node(L), input_node(R)), output_type=parse_type(OUT), changelog_mode=ALL,
                         join_type="INNER", left_keys=(0,), right_keys=(0,), filter_nulls=(True,),
                         non_equi_condition=GT)
    assert "non-equi" in refusal(conditioned)
    assert refusal(_node("INNER", OUT)) is None


def test_inner_join_null_keys_and_insert_only_output(spark, feed, runner):
    lf, rf = _feeds(feed)
    node = _node("INNER", OUT, mode=INSERT_ONLY)
    out = jvm_join(lf.stream(), rf.stream(), node, node_ctx(spark, node))
    assert not out.updating and "_rowkind" not in out.df.columns
    r = runner(out.df)
    lf.put([(1, 1, "Baker1"), (1, 2, "Baker2"), (1, 2, "Baker2"), (2, 7, "Baker5"), (None, 8, "Baker9")])
    rf.put([(1, 1, "BakerBaker"), (2, 2, "HeHe"), (None, 2, "HeHe")])
    got = Counter((x[2], x[5]) for x in r.take())
    assert got == Counter([("Baker1", "BakerBaker"), ("Baker2", "BakerBaker"), ("Baker2", "BakerBaker"),
                           ("Baker5", "HeHe")])
    lf.put([(2, 1, "Later")])
    assert [(x[2], x[5]) for x in r.take()] == [("Later", "HeHe")]


def test_left_join_padding_retracted_when_match_arrives(spark, feed, runner, tmp_path):
    lf, rf = _feeds(feed)
    node = _node("LEFT", OUT)
    ctx = node_ctx(spark, node)
    r = runner(jvm_join(lf.stream(), rf.stream(), node, ctx).df)
    lf.put([(2, 10, "x"), (None, 11, "n")])
    assert sorted(flink(r.take())) == ["+I[2, 10, x, null, null, null]", "+I[null, 11, n, null, null, null]"]
    r.stop()
    r2 = runner(jvm_join(lf.stream(), rf.stream(), node, ctx).df)  # restore
    rf.put([(2, 20, "y"), (2, 21, "z")])
    assert flink(r2.take()) == ["-D[2, 10, x, null, null, null]", "+I[2, 10, x, 2, 20, y]", "+I[2, 10, x, 2, 21, z]"]
    left = spark.read.format("statestore").option("stateVarName", "leftRows").load(str(tmp_path / "ck"))
    (entry,) = left.collect()
    assert entry["user_map_key"]["row"].asDict() == {"l0": 2, "l1": 10, "l2": "x"}
    assert (entry["user_map_value"]["count"], entry["user_map_value"]["associations"]) == (1, 2)
    assert spark.read.format("statestore").option("stateVarName", "rightRows").load(
        str(tmp_path / "ck")).count() == 2


def test_full_join_with_updating_inputs(spark, feed, runner):
    lf, rf = _feeds(feed, changelog=True)
    node = _node("FULL", OUT)
    r = runner(jvm_join(lf.stream(), rf.stream(), node, node_ctx(spark, node)).df)
    lf.put([(1, 10, "x", "+I")])
    rf.put([(1, 20, "y", "+I"), (2, 30, "w", "+I")])
    out = r.take()
    rf.put([(1, 20, "y", "-D")])
    out2 = r.take()
    assert flink(out2) == ["-D[1, 10, x, 1, 20, y]", "+I[1, 10, x, null, null, null]"]
    assert materialized(out + out2) == {(1, 10, "x", None, None, None): 1, (None, None, None, 2, 30, "w"): 1}


def test_semi_and_anti(spark, feed, runner):
    for jt, expect_first, expect_second in (
            ("SEMI", [], ["+I[1, 10, x]"]),
            ("ANTI", ["+I[1, 10, x]", "+I[2, 5, q]"], ["-D[1, 10, x]"])):
        lf = feed("a INT, b BIGINT, c STRING", name=f"l{jt}")
        rf = feed("a INT, b BIGINT, c STRING", name=f"r{jt}")
        node = _node(jt, L)
        r = runner(jvm_join(lf.stream(), rf.stream(), node, node_ctx(spark, node)).df, name=f"ck{jt}")
        lf.put([(1, 10, "x"), (2, 5, "q")])
        assert sorted(flink(r.take())) == expect_first, jt
        rf.put([(1, 0, "r"), (1, 1, "s")])
        assert flink(r.take()) == expect_second, jt


def test_semi_join_forwards_the_right_row_kind_on_both_transitions(spark, feed, runner):
    lf = feed("a INT, b BIGINT, c STRING", name="left")
    rf = feed("a INT, b BIGINT, c STRING, _rowkind STRING", name="right", changelog=True)
    node = _node("SEMI", L)
    r = runner(jvm_join(lf.stream(), rf.stream(), node, node_ctx(spark, node)).df)
    lf.put([(1, 10, "x")])
    assert flink(r.take()) == []
    rf.put([(1, 0, "r", "+I")])
    assert flink(r.take()) == ["+I[1, 10, x]"]
    rf.put([(1, 0, "r", "-U"), (1, 5, "r", "+U")])
    assert flink(r.take()) == ["-U[1, 10, x]", "+U[1, 10, x]"]
