"""Regular joins on the JVM (``join_2`` without a non-equi condition, ``join_3`` with one too): what only the JVM
strategy has (its refusal rules, the insert-only output without ``_rowkind``). The Flink changelogs and the state
after a restore are one case table with the Python operator's: ``test_join.py`` runs its cases on both strategies."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from planengine.exec import nodes as X
from planengine.ir import types as T
from planengine.ir.changelog import ALL, INSERT_ONLY
from planengine.ir.expressions import Call, FunctionRef, InputRef, Literal
from planengine.ir.types import parse_type
from planengine.runtime.jvm.join_processor import jvm_join, refusal, refusal_v3
from tests.runtime.operators.test_aggregate import input_node, node_ctx
from tests.runtime.operators.test_join import GT, OUT, L, R


def _node(join_type: str, out: str, mode=ALL) -> X.Join:
    return X.Join(inputs=(input_node(L), input_node(R)), output_type=parse_type(out), changelog_mode=mode,
                  join_type=join_type, left_keys=(0,), right_keys=(0,), filter_nulls=(True,))


def _feeds(feed, changelog=False):
    extra = ", _rowkind STRING" if changelog else ""
    return feed("a INT, b BIGINT, c STRING" + extra, name="left", changelog=changelog), feed(
        "a INT, b BIGINT, c STRING" + extra, name="right", changelog=changelog)


def test_a_non_equi_condition_stays_on_the_python_operator_in_version_2_only():
    """join_2's refusal is frozen (its plans translate the same forever); join_3 refuses only a condition the JVM
    cannot evaluate: one that calls a Python user function."""
    def conditioned(condition):
        return X.Join(inputs=(input_node(L), input_node(R)), output_type=parse_type(OUT), changelog_mode=ALL,
                      join_type="INNER", left_keys=(0,), right_keys=(0,), filter_nulls=(True,),
                      non_equi_condition=condition)

    assert "non-equi" in refusal(conditioned(GT))
    assert refusal(_node("INNER", OUT)) is None
    assert refusal_v3(conditioned(GT)) is None and refusal_v3(_node("INNER", OUT)) is None
    udf = Call(FunctionRef("near", None, catalog_identifier="`c`.`d`.`near`"),
               (InputRef(1, T.BIGINT), InputRef(4, T.BIGINT)), T.BOOLEAN)
    assert refusal_v3(conditioned(udf)) == ("the non-equi join condition calls the user function `c`.`d`.`near` "
                                            "(a Python function; the JVM join evaluates Spark expressions only)")


def test_rows_holding_a_map_with_non_string_keys_stay_on_the_python_operator():
    """Spark fails a query at its start when the JVM's typed state holds a MAP whose key is not a string, so both
    versions keep such a join on the Python operator (no such plan ever ran on the JVM)."""
    mapped = "ROW<a INT, m MAP<INT, STRING>>"
    node = X.Join(inputs=(input_node(L), input_node(mapped)),
                  output_type=parse_type("ROW<a INT, b BIGINT, c STRING, a0 INT, m MAP<INT, STRING>>"),
                  changelog_mode=ALL, join_type="INNER", left_keys=(0,), right_keys=(0,), filter_nulls=(True,))
    want = "the right input's field 1 is MAP<INT, STRING>, which Spark's typed transformWithState state cannot hold"
    assert want in refusal(node) and want in refusal_v3(node)


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


def test_a_non_equi_condition_with_time_arithmetic_and_functions_runs_as_spark_evaluates_it(spark, feed, runner):
    """join_3's condition is whatever Spark SQL the renderer gives (here interval arithmetic on TIMESTAMP(3) and
    UPPER), resolved by the session's analyzer: ``l.t BETWEEN r.t - INTERVAL '1' HOUR AND r.t AND UPPER(l.c) =
    r.c``; a NULL time makes it NULL (no match)."""
    row = "ROW<a INT, t TIMESTAMP(3), c STRING>"
    ts = parse_type("TIMESTAMP(3)")
    hour_before = Call(FunctionRef("-", 1), (InputRef(4, ts), Literal(dt.timedelta(hours=1), T.INTERVAL_DAY_TIME)), ts)
    condition = Call(FunctionRef("AND", 1), (
        Call(FunctionRef(">=", 1), (InputRef(1, ts), hour_before), T.BOOLEAN),
        Call(FunctionRef("<=", 1), (InputRef(1, ts), InputRef(4, ts)), T.BOOLEAN),
        Call(FunctionRef("=", 1), (Call(FunctionRef("UPPER", 1), (InputRef(2, T.STRING),), T.STRING),
                                   InputRef(5, T.STRING)), T.BOOLEAN)), T.BOOLEAN)
    node = X.Join(inputs=(input_node(row), input_node(row)), changelog_mode=INSERT_ONLY, join_type="INNER",
                  output_type=parse_type("ROW<a INT, t TIMESTAMP(3), c STRING, a0 INT, t0 TIMESTAMP(3), c0 STRING>"),
                  left_keys=(0,), right_keys=(0,), filter_nulls=(True,), non_equi_condition=condition)
    assert refusal_v3(node) is None
    lf, rf = (feed("a INT, t TIMESTAMP, c STRING", name=name) for name in ("left", "right"))
    r = runner(jvm_join(lf.stream(), rf.stream(), node, node_ctx(spark, node)).df)
    lf.put([(1, "2020-01-01 10:30:00", "x"), (1, "2020-01-01 08:00:00", "x"), (1, "2020-01-01 10:30:00", "y"),
            (1, None, "x")])
    rf.put([(1, "2020-01-01 11:00:00", "X")])
    got = r.take()
    assert [(str(x[1]).replace("T", " ")[:16], x[2], x[5]) for x in got] == [("2020-01-01 10:30", "x", "X")]
