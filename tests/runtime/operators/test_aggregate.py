"""Group aggregate on transformWithState: Flink's changelogs, retraction, distinct, restore, on both
implementations: the Python operator (which conformance proves against Flink) and the JVM processor
(``stream-exec-group-aggregate_3``), with the same expected changelogs. What only the JVM path has to get right
on its own is in ``test_group_aggregate_jvm.py``.

Also the shared helpers of the changelog-operator tests (``node_ctx``, ``flink``, ``materialized``), which
the other ``test_{normalize,dedup,rank,sortlimit,join,materializer}`` modules import.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from planengine.exec import nodes as X
from planengine.ir import types as T
from planengine.ir.aggregates import AggregateCall
from planengine.ir.changelog import ALL
from planengine.ir.expressions import Literal
from planengine.ir.types import parse_type
from planengine.runtime.engine.context import TranslationContext
from planengine.runtime.jvm.group_aggregate_processor import jvm_group_aggregate
from planengine.runtime.operators.group_aggregate import group_aggregate


# --- helpers shared by the changelog operator tests ---------------------------------------------------------
def input_node(row_type: str) -> X.Calc:
    """A stand-in upstream node: translators read the input's field types from ``node.inputs``."""
    return X.Calc(inputs=(), output_type=parse_type(row_type), projection=())


def node_ctx(spark: Any, node: Any, **config: str) -> TranslationContext:
    return TranslationContext(spark=spark, config=dict(config), node_ids={id(node): 7})


def _text(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def flink(rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """Collected rows (fields…, _rowkind) as Flink's ``Row.toString`` (``+U[2, 2, Hello]``)."""
    return [f"{r[-1]}[{', '.join(_text(v) for v in r[:-1])}]" for r in rows]


def materialized(rows: Sequence[tuple[Any, ...]]) -> Counter:
    """Apply a changelog: ``+I``/``+U`` add a row, ``-U``/``-D`` remove one."""
    table: Counter = Counter()
    for r in rows:
        if r[-1] in ("+I", "+U"):
            table[r[:-1]] += 1
        else:
            table[r[:-1]] -= 1
            assert table[r[:-1]] >= 0, f"retraction of an absent row {r}"
    return +table


def batches(runner_, feed_, stream_df, inputs: Sequence[Sequence[tuple[Any, ...]]]) -> list[list[tuple[Any, ...]]]:
    """Feed each batch (one file = one micro-batch) and collect the rows it produced."""
    r = runner_(stream_df)
    out = []
    for batch in inputs:
        feed_.put(batch)
        out.append(r.take())
    return out


def agg(function: str, args: tuple[int, ...], t: T.DataType, *, distinct: bool = False,
        filter_arg: int | None = None) -> AggregateCall:
    return AggregateCall(function, 1, args, t, function.lower(), distinct=distinct, filter_arg=filter_arg)


# --- group aggregate -----------------------------------------------------------------------------------------
BIGINT_NN = T.BIGINT.with_nullable(False)


def group_node(in_type: str, out_type: str, grouping, aggregates, *, retraction=False,
               ub=True) -> X.GroupAggregate:
    return X.GroupAggregate(inputs=(input_node(in_type),), output_type=parse_type(out_type), changelog_mode=ALL,
                            grouping=grouping, aggregates=aggregates, need_retraction=retraction,
                            generate_update_before=ub)


def _python_state(spark: Any, checkpoint: Path) -> None:
    """The Python operator's named state variables exist (their values are its own encoding)."""
    state = spark.read.format("statestore").option("stateVarName", "accumulators").load(str(checkpoint))
    assert state.count() == 3
    distinct = spark.read.format("statestore").option("stateVarName", "distinctValues").load(str(checkpoint))
    assert distinct.count() > 0


def _jvm_state(spark: Any, checkpoint: Path) -> None:
    """The JVM processor's state is typed rows: records, each accumulator's fields, the DISTINCT values."""
    state = spark.read.format("statestore").option("stateVarName", "accumulators").load(str(checkpoint))
    rows = {r["key"][0]: r["value"] for r in state.collect()}
    assert rows[3]["records"] == 3 and rows[3]["a4"]["count"] == 3 and rows[3]["a4"]["sum"] == 31
    distinct = spark.read.format("statestore").option("stateVarName", "distinctValues").load(str(checkpoint))
    keys = {(r["key"][0], r["user_map_key"]["agg"], r["user_map_key"]["v5"]) for r in distinct.collect()}
    assert (1, 5, "Hello") in keys  # COUNT(DISTINCT d) of group e=1 holds 'Hello' in its typed column


@dataclass(frozen=True)
class Implementation:
    """One implementation of the node: its translation and what its state must look like after a batch."""

    translate: Callable[..., Any]
    check_state: Callable[[Any, Path], None]


IMPLEMENTATIONS = {"python": Implementation(group_aggregate, _python_state),
                   "jvm": Implementation(jvm_group_aggregate, _jvm_state)}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def implementation(request: pytest.FixtureRequest) -> Implementation:
    return IMPLEMENTATIONS[request.param]


def test_simple_group_aggregate_changelog(spark, feed, runner, implementation):
    """group-aggregate-simple: COUNT(*), AVG FILTER, MIN(string) per b; per-record updates like Flink."""
    f = feed("a INT, b BIGINT, c STRING, flt BOOLEAN")
    node = group_node("ROW<a INT, b BIGINT, c STRING, flt BOOLEAN>",
                      "ROW<b BIGINT, cnt BIGINT NOT NULL, avg_a INT, min_c STRING>", (1,),
                      (agg("COUNT", (), BIGINT_NN), agg("AVG", (0,), T.INT, filter_arg=3), agg("MIN", (2,), T.STRING)),
                      ub=False)
    out = implementation.translate(f.stream(), node, node_ctx(spark, node))
    assert out.updating and out.fields == ("b", "cnt", "avg_a", "min_c")
    got = batches(runner, f, out.df, [
        [(1, 1, "Hi", False), (2, 2, "Hello", True), (2, 2, "Hello World", True)],
        [(1, 1, "Hi Again!", False), (2, 2, "Hello Again!", True), (2, 2, "Hello World Again!", True)]])
    assert Counter(flink(got[0])) == Counter(["+I[1, 1, null, Hi]", "+I[2, 1, 2, Hello]", "+U[2, 2, 2, Hello]"])
    assert Counter(flink(got[1])) == Counter(["+U[1, 2, null, Hi]", "+U[2, 3, 2, Hello]", "+U[2, 4, 2, Hello]"])


def test_retraction_min_max_distinct_and_delete(spark, feed, runner, implementation):
    """Updating input: MIN/MAX retract through the value multiset, COUNT/SUM DISTINCT retract, the group's last
    row retracted emits -D; -U/+U pairs when generateUpdateBefore."""
    f = feed("k STRING, v INT, _rowkind STRING", changelog=True)
    node = group_node("ROW<k STRING, v INT>",
                      "ROW<k STRING, mn INT, mx INT, cd BIGINT NOT NULL, sd INT, s INT, c BIGINT NOT NULL>", (0,),
                      (agg("MIN", (1,), T.INT), agg("MAX", (1,), T.INT), agg("COUNT", (1,), BIGINT_NN, distinct=True),
                       agg("SUM", (1,), T.INT, distinct=True), agg("SUM", (1,), T.INT), agg("COUNT", (), BIGINT_NN)),
                      retraction=True)
    out = implementation.translate(f.stream(), node, node_ctx(spark, node))
    got = batches(runner, f, out.df, [
        [("a", 1, "+I"), ("a", 5, "+I"), ("a", 5, "+I"), ("a", 3, "+I")],
        [("a", 5, "-D")],
        [("a", 1, "-U"), ("a", 5, "-D")],
        [("a", 3, "-D"), ("b", 7, "+I")],
        [("zzz", 1, "-D")],  # retraction for an unknown group: ignored
    ])
    assert flink(got[0]) == ["+I[a, 1, 1, 1, 1, 1, 1]", "-U[a, 1, 1, 1, 1, 1, 1]", "+U[a, 1, 5, 2, 6, 6, 2]",
                             "-U[a, 1, 5, 2, 6, 6, 2]", "+U[a, 1, 5, 2, 6, 11, 3]",
                             "-U[a, 1, 5, 2, 6, 11, 3]", "+U[a, 1, 5, 3, 9, 14, 4]"]
    assert flink(got[1]) == ["-U[a, 1, 5, 3, 9, 14, 4]", "+U[a, 1, 5, 3, 9, 9, 3]"]
    assert flink(got[2]) == ["-U[a, 1, 5, 3, 9, 9, 3]", "+U[a, 3, 5, 2, 8, 8, 2]",
                             "-U[a, 3, 5, 2, 8, 8, 2]", "+U[a, 3, 3, 1, 3, 3, 1]"]
    assert sorted(flink(got[3])) == ["+I[b, 7, 7, 1, 7, 7, 1]", "-D[a, 3, 3, 1, 3, 3, 1]"]
    assert got[4] == []


def test_distinct_filter_avg_mini_batch_and_restore(spark, feed, runner, tmp_path, implementation):
    """group-aggregate-distinct-mini-batch: folded per micro-batch, state survives a stop/restart, the named
    state variables are readable through the state data source."""
    schema = "a INT, b BIGINT, c INT, d STRING, e BIGINT, bf BOOLEAN"
    f = feed(schema)
    in_type = "ROW<a INT, b BIGINT, c INT, d STRING, e BIGINT, bf BOOLEAN>"
    node = group_node(in_type, "ROW<e BIGINT, c1 BIGINT NOT NULL, c2 BIGINT NOT NULL, sa INT, sb BIGINT, ab BIGINT, "
                               "cd BIGINT NOT NULL>", (4,),
                      (agg("COUNT", (0,), BIGINT_NN, distinct=True, filter_arg=5),
                       agg("COUNT", (0,), BIGINT_NN, distinct=True), agg("SUM", (0,), T.INT, distinct=True),
                       agg("SUM", (1,), T.BIGINT, distinct=True), agg("AVG", (1,), T.BIGINT),
                       agg("COUNT", (3,), BIGINT_NN, distinct=True)))
    ctx = node_ctx(spark, node, **{"table.exec.mini-batch.enabled": "true"})
    rows1 = [(2, 3, 2, "Hello World Like", 1), (3, 4, 3, "Hello World Its nice", 2), (2, 2, 1, "Hello World", 2),
             (1, 1, 0, "Hello", 1), (5, 11, 10, "GHI", 1), (3, 5, 4, "ABC", 2), (4, 10, 9, "FGH", 2),
             (4, 7, 6, "CDE", 2), (5, 14, 13, "JKL", 2), (4, 9, 8, "EFG", 1), (5, 15, 14, "KLM", 2),
             (5, 12, 11, "HIJ", 3), (4, 8, 7, "DEF", 1), (5, 13, 12, "IJK", 3), (3, 6, 5, "BCD", 3)]
    rows2 = [(1, 1, 0, "Hello", 1), (3, 5, 4, "ABC", 2), (4, 10, 9, "FGH", 2), (4, 7, 6, "CDE", 2),
             (7, 7, 7, "MNO", 7), (3, 6, 5, "BCD", 3), (7, 7, 7, "XYZ", 7)]

    def with_filter(rows):
        return [(*r, r[1] > 10) for r in rows]

    r = runner(implementation.translate(f.stream(), node, ctx).df, name="ck")
    f.put(with_filter(rows1))
    first = r.take()
    r.stop()
    assert flink(first) and all(k in ("+I",) for *_, k in first)
    assert Counter(flink(first)) == Counter(["+I[3, 1, 2, 8, 31, 10, 3]", "+I[2, 1, 4, 14, 57, 8, 7]",
                                             "+I[1, 1, 4, 12, 32, 6, 5]"])
    implementation.check_state(spark, tmp_path / "ck")

    r2 = runner(implementation.translate(f.stream(), node, ctx).df, name="ck")  # same checkpoint: restore
    f.put(with_filter(rows2))
    second = r2.take()
    final = {x[0]: x for x in first}
    for x in second:
        final[x[0]] = x
    assert sorted(flink([v for v in final.values() if v[-1] != "-U"])) == sorted(
        ["+U[1, 1, 4, 12, 32, 5, 5]", "+U[2, 1, 4, 14, 57, 7, 7]", "+U[3, 1, 2, 8, 31, 9, 3]",
         "+I[7, 0, 1, 7, 7, 7, 2]"])


def test_global_aggregate_listagg_first_last(spark, feed, runner, implementation):
    """No grouping keys (one global group); LISTAGG with a separator, FIRST/LAST_VALUE, SUM0, STDDEV."""
    f = feed("s STRING, v INT")
    sep = AggregateCall("LISTAGG", 1, (0,), T.STRING, "l", constants=(Literal("|", T.STRING),))
    node = group_node("ROW<s STRING, v INT>",
                      "ROW<l STRING, fv STRING, lv STRING, s0 INT NOT NULL, sd DOUBLE>", (),
                      (sep, agg("FIRST_VALUE", (0,), T.STRING), agg("LAST_VALUE", (0,), T.STRING),
                       agg("SUM0", (1,), T.INT.with_nullable(False)), agg("STDDEV_POP", (1,), T.DOUBLE)))
    ctx = node_ctx(spark, node, **{"table.exec.mini-batch.enabled": "true"})
    out = implementation.translate(f.stream(), node, ctx)
    got = batches(runner, f, out.df, [[("x", None), (None, 2), ("y", 4)]])
    assert flink(got[0]) == ["+I[x|y, x, y, 6, 1.0]"]
