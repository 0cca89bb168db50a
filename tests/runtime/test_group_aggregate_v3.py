"""``stream-exec-group-aggregate_3``: which strategy a plan gets, what Spark runs, and its state across a stop.

Version 3 keeps version 2's native decision and moves what version 2 ran on the Python transformWithState
operator to the JVM processor, except Python aggregate functions. The choice is a pure function of the plan
(tested on compiled plans); the Spark tests check the physical plan of the running query, the changelog
before and after a restore from a snapshot, and that ``check --snapshot`` finds the JVM operator's stored
state layout equal to the one this engine creates.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from planengine.api import TableEnvironment
from planengine.exec import base as B
from planengine.exec import nodes as X
from planengine.plan import serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.restore import COMPATIBLE, CheckReport
from planengine.plan.strategies import JVM, NATIVE
from planengine.plan.strategies import TRANSFORM_WITH_STATE as TWS
from planengine.runtime.engine.context import TranslationContext

DDL = """
CREATE FUNCTION weighted_avg AS 'tests.golden.udfs.WeightedAvg' LANGUAGE PYTHON;
CREATE TABLE src (k STRING, v BIGINT, w BIGINT) WITH ('connector' = 'filesystem', 'path' = '{dir}/src',
  'format' = 'json');
CREATE TABLE cdc (k STRING, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'filesystem',
  'path' = '{dir}/cdc', 'format' = 'changelog-json', 'changelog-mode' = 'I,UB,UA,D');
CREATE TABLE keyed (k STRING, c BIGINT, s BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'blackhole');
CREATE TABLE log (k STRING, c BIGINT, s BIGINT) WITH ('connector' = 'filesystem', 'path' = '{dir}/log',
  'format' = 'changelog-json');
CREATE TABLE udf_log (k STRING, a BIGINT) WITH ('connector' = 'filesystem', 'path' = '{dir}/udf_log',
  'format' = 'changelog-json');
CREATE TABLE tagged (k STRING, m MAP<INT, STRING>) WITH ('connector' = 'filesystem', 'path' = '{dir}/tagged',
  'format' = 'json');
CREATE TABLE tag_log (k STRING, m MAP<INT, STRING>) WITH ('connector' = 'filesystem', 'path' = '{dir}/tag_log',
  'format' = 'changelog-json');
"""


def compile_plan(tmp_path: Path, statement: str) -> tuple[TableEnvironment, Any]:
    env = TableEnvironment()
    env.execute_sql(DDL.replace("{dir}", str(tmp_path)))
    return env, env.compile_plan_sql(statement)


def strategy(tmp_path: Path, statement: str) -> str:
    """The strategy compilation recorded in the node (version 4 decides as version 3); EXPLAIN shows it, restore
    keeps it."""
    env, plan = compile_plan(tmp_path, statement)
    (recorded,) = [n.get("strategy") for n in plan.data["nodes"] if n["type"].startswith("stream-exec-group-agg")]
    assert f"strategy=[{recorded}]" in plan.explain()
    unrecorded = json.loads(json.dumps(plan.data))
    for n in unrecorded["nodes"]:
        n.pop("strategy", None)
    unrecorded["planId"] = serde.compute_plan_id(unrecorded)
    sinks = CompiledPlan(unrecorded, env.plan_session()).restore()  # a plan written before the field
    (node,) = [n for n in B.topological(list(sinks)) if isinstance(n, X.GroupAggregate)]
    assert node.type_name == "stream-exec-group-aggregate_4" and node.strategy == recorded
    return recorded


@pytest.mark.parametrize("statement,expected", [
    ("INSERT INTO keyed SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k", NATIVE),
    ("INSERT INTO log SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k", JVM),  # the file sink takes -U
    ("INSERT INTO keyed SELECT k, COUNT(DISTINCT v), SUM(v) FROM src GROUP BY k", JVM),
    ("INSERT INTO keyed SELECT k, COUNT(*), SUM(v) FROM cdc GROUP BY k", JVM),  # retractions
    ("INSERT INTO udf_log SELECT k, weighted_avg(v, w) FROM src GROUP BY k", TWS),
    ("INSERT INTO tag_log SELECT k, LAST_VALUE(m) FROM tagged GROUP BY k", TWS),  # no JVM state for MAP<INT, _>
], ids=["native", "update-before", "distinct", "retracting-input", "python-aggregate", "map-with-int-keys"])
def test_strategy_is_chosen_from_the_plan(tmp_path: Path, statement: str, expected: str) -> None:
    assert strategy(tmp_path, statement) == expected


# --- Spark ---------------------------------------------------------------------------------------------------
def run(env: Any, plan: Any, root: Path, **options: Any) -> Any:
    return env.execute_plan(plan, job_root=str(root), until_idle=True, **options)


def changelog(spark: Any, path: Path) -> list[str]:
    from planengine.runtime.connectors.print_sink import flink_row

    rows = spark.read.schema("k STRING, c BIGINT, s BIGINT, op STRING").json(str(path)).collect()
    return [flink_row(r["op"], [r["k"], r["c"], r["s"]]) for r in rows]


def write(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> None:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / f"{name}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_jvm_strategy_end_to_end_across_a_snapshot_with_a_compatible_state_check(tmp_path: Path, spark: Any) -> None:
    from planengine.runtime.state_check import check_snapshot_state

    env, plan = compile_plan(tmp_path, "INSERT INTO log SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")
    write(tmp_path, "1", [{"k": "a", "v": 1}, {"k": "b", "v": 2}, {"k": "a", "v": 3}])
    first = run(env, plan, tmp_path / "job")
    explained = [q for q in (tmp_path / "job").rglob("*") if q.name == "metadata"]
    assert explained  # the query ran with a checkpoint
    assert Counter(changelog(spark, tmp_path / "log")) == Counter(
        ["+I[a, 1, 1]", "-U[a, 1, 1]", "+U[a, 2, 4]", "+I[b, 1, 2]"])

    snapshot = tmp_path / "job" / "snapshots" / first.snapshot_id
    report = CheckReport(plan_id=plan.plan_id)
    check_snapshot_state(plan.data, str(snapshot), report, spark=spark)
    assert report.status == COMPATIBLE and report.reasons == [], report.summary()

    write(tmp_path, "2", [{"k": "a", "v": 5}, {"k": "c", "v": None}])
    run(env, plan, tmp_path / "job", drain=True)
    assert Counter(changelog(spark, tmp_path / "log")) == Counter(
        ["+I[a, 1, 1]", "-U[a, 1, 1]", "+U[a, 2, 4]", "+I[b, 1, 2]",
         "-U[a, 2, 4]", "+U[a, 3, 9]", "+I[c, 1, null]"])


def test_the_native_strategy_passes_the_state_check_too(tmp_path: Path, spark: Any) -> None:
    """The probe behind ``check --snapshot`` must translate version 3 as the run did (native here)."""
    from planengine.runtime.state_check import check_snapshot_state

    env, plan = compile_plan(tmp_path, "INSERT INTO keyed SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")
    write(tmp_path, "1", [{"k": "a", "v": 1}])
    first = run(env, plan, tmp_path / "job")
    report = CheckReport(plan_id=plan.plan_id)
    check_snapshot_state(plan.data, str(tmp_path / "job" / "snapshots" / first.snapshot_id), report, spark=spark)
    assert report.status == COMPATIBLE and report.reasons == [], report.summary()


def executed(env: Any, plan: Any, root: Path) -> str:
    job = env.execute_plan(plan, job_root=str(root))
    try:
        job.process_available()
        (query,) = job.queries
        return query.query._jsq.explainInternal(False)
    finally:
        job.stop(snapshot=False)


def test_version_3_runs_the_jvm_processor_and_version_2_keeps_python(tmp_path: Path, spark: Any) -> None:
    env, plan = compile_plan(tmp_path, "INSERT INTO keyed SELECT k, COUNT(DISTINCT v), SUM(v) FROM src GROUP BY k")
    write(tmp_path, "1", [{"k": "a", "v": 1}])
    jvm = executed(env, plan, tmp_path / "v3")
    assert "TransformWithState" in jvm and "TransformWithStateInP" not in jvm, jvm

    text = plan.as_json().replace("stream-exec-group-aggregate_4", "stream-exec-group-aggregate_2").replace(
        "stream-exec-group-aggregate-4_", "stream-exec-group-aggregate-2_").replace(',"strategy":"JVM"', "")
    data = json.loads(text)  # a version-2 plan: restore records version 2's strategy (TRANSFORM_WITH_STATE)
    data["planId"] = serde.compute_plan_id(data)
    python = executed(env, CompiledPlan(data), tmp_path / "v2")
    assert "TransformWithStateInP" in python, python


def test_a_plan_recording_jvm_for_state_the_jvm_cannot_hold_runs_the_python_operator(tmp_path: Path, spark: Any
                                                                                     ) -> None:
    """Plans compiled before the state-type rule recorded ``JVM`` for a LAST_VALUE of a ``MAP<INT, _>``; Spark
    failed such a query at its start (no Avro form for the state), so the runtime runs the Python operator."""
    env, plan = compile_plan(tmp_path, "INSERT INTO tag_log SELECT k, LAST_VALUE(m) FROM tagged GROUP BY k")
    data = json.loads(plan.as_json().replace('"strategy":"TRANSFORM_WITH_STATE"', '"strategy":"JVM"'))
    data["planId"] = serde.compute_plan_id(data)
    (tmp_path / "tagged").mkdir()
    (tmp_path / "tagged" / "1.json").write_text('{"k": "a", "m": {"1": "x"}}\n')
    python = executed(env, CompiledPlan(data), tmp_path / "job")
    assert "TransformWithStateInP" in python, python


def test_bigint_sums_wrap_like_java_on_both_strategies(tmp_path: Path, spark: Any) -> None:
    """Flink's BIGINT SUM/AVG wrap like Java's long; Spark's ANSI sum fails the query instead. Version 3's
    native form and the JVM processor both wrap, batch by batch, and agree."""
    from pyspark.sql import functions as F

    from planengine.runtime.dataflow.stream import ROWKIND, Stream
    from planengine.runtime.jvm.group_aggregate_processor import jvm_group_aggregate
    from planengine.runtime.operators.native_group_aggregate import native_group_aggregate

    env, plan = compile_plan(tmp_path, "INSERT INTO keyed SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")
    sinks = CompiledPlan(plan.data, env.plan_session()).restore()
    (node,) = [n for n in B.topological(list(sinks)) if isinstance(n, X.GroupAggregate)]
    top = 9223372036854775807
    feed = tmp_path / "feed"
    feed.mkdir()
    batches = [[("a", top), ("b", -top), ("a", 1)], [("a", 5), ("b", -2), ("c", None)]]
    import dataclasses

    # Mini-batch folds the JVM's per-record changelog per micro-batch, like the native update mode.
    folded = dataclasses.replace(node, configuration=(("table.exec.mini-batch.enabled", "true"),))
    ctx = TranslationContext(spark, {}, {id(folded): 4})
    results: dict[str, list[list[str]]] = {}
    for name in ("native", "jvm"):
        got: list[list[str]] = []
        for i, batch in enumerate(batches):
            (feed / f"{i}.json").write_text("".join(json.dumps({"f0": k, "f1": v}) + "\n" for k, v in batch))
            df = spark.readStream.schema("f0 STRING, f1 BIGINT").json(str(feed))
            stream = Stream(df, ("k", "v"))
            out = (native_group_aggregate(stream, node, library_forms=True) if name == "native"
                   else jvm_group_aggregate(stream, folded, ctx))
            rows: list[str] = []
            query = (out.df.writeStream.outputMode(out.output_mode)
                     .option("checkpointLocation", str(tmp_path / f"ck-{name}"))
                     .foreachBatch(lambda b, _, rows=rows: rows.extend(
                         f"{r[ROWKIND]}{[r['f0'], r['f1'], r['f2']]}" for r in b.orderBy(F.col("f0")).collect()))
                     .start())
            try:
                query.processAllAvailable()
            finally:
                query.stop()
            got.append(rows)
        for f in feed.iterdir():
            f.unlink()
        results[name] = got
    wrapped = -9223372036854775808 + 5  # top + 1 wraps to Long.MIN_VALUE, + 5
    assert results["jvm"] == results["native"] == [
        [f"+I['a', 2, {-9223372036854775808}]", f"+I['b', 1, {-top}]"],
        [f"+U['a', 3, {wrapped}]", f"+U['b', 2, {top}]", "+I['c', 1, None]"]]
