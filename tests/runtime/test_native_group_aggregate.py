"""The native update-mode group aggregate: when it is chosen, what Spark runs, and its rows across a restart.

The choice (``planengine.plan.strategies``) is made at compile time and recorded in the plan, so it is tested
on plans (and on old plans without the field, which restore fills with the same rule); the Spark tests check
the physical plan of the running query (``StateStoreSave`` for native, a ``TransformWithStateInPandas``
otherwise) and the changelog the operator emits before and after a restart from its checkpoint. Results
through a real upsert sink across a snapshot are in ``tests/e2e_cases/group_aggregate/postgres/``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from planengine.api import TableEnvironment
from planengine.exec import base as B
from planengine.exec import nodes as X
from planengine.plan import serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.strategies import JVM, NATIVE, TRANSFORM_WITH_STATE, consumer_map, group_aggregate_refusal

SOURCE = ("CREATE TABLE src (k STRING, v BIGINT, x DOUBLE, ts TIMESTAMP(3), "
          "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
          "WITH ('connector' = 'filesystem', 'path' = '{dir}/src', 'format' = 'json');")
CDC = ("CREATE TABLE cdc (k STRING, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'filesystem', "
       "'path' = '{dir}/cdc', 'format' = 'changelog-json', 'changelog-mode' = 'I,UB,UA,D');")
JDBC = "'connector' = 'jdbc', 'url' = 'jdbc:postgresql://localhost/db', 'table-name' = 't'"


def sink(columns: str, key: str | None, options: str) -> str:
    pk = f", PRIMARY KEY ({key}) NOT ENFORCED" if key else ""
    return f"CREATE TABLE snk ({columns}{pk}) WITH ({options});"


def compile_plan(tmp_path: Path, ddl: str, statement: str, config: dict[str, str] | None = None) -> Any:
    env = TableEnvironment()
    for k, v in (config or {}).items():
        env.execute_sql(f"SET '{k}' = '{v}'")
    env.execute_sql((SOURCE + CDC + ddl).replace("{dir}", str(tmp_path)))
    return env, env.compile_plan_sql(statement)


def aggregates(plan: Any, env: Any) -> list[tuple[X.GroupAggregate, list[X.Sink]]]:
    sinks = CompiledPlan(plan.data, env.plan_session()).restore()
    return [(n, sinks) for n in B.topological(list(sinks)) if isinstance(n, X.GroupAggregate)]


def decision(tmp_path: Path, ddl: str, statement: str, config: dict[str, str] | None = None) -> str | None:
    """Why the aggregate feeding the sink runs on transformWithState (None: native), checked against the
    strategy compilation recorded in the plan."""
    env, plan = compile_plan(tmp_path, ddl, statement, config)
    *_, (node, sinks) = aggregates(plan, env)
    assert node.metadata.version >= 2  # version 3 takes version 2's native decision unchanged
    reason = group_aggregate_refusal(node, consumer_map(sinks))
    recorded = [n["strategy"] for n in plan.data["nodes"] if n["type"].startswith("stream-exec-group-aggregate_")]
    assert (recorded[-1] == NATIVE) == (reason is None) and recorded[-1] in (NATIVE, JVM, TRANSFORM_WITH_STATE)
    return reason


COUNTS = "k STRING, c BIGINT, s BIGINT"
CASES = {
    "jdbc upsert sink keyed by the group key": (
        sink(COUNTS, "k", JDBC), "INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k", {}, None),
    "keyed blackhole, projection and FILTER": (
        sink(COUNTS, "k", "'connector' = 'blackhole'"),
        "INSERT INTO snk SELECT k, COUNT(v) FILTER (WHERE v > 0), MAX(v) FROM src GROUP BY k", {}, None),
    "state TTL": (sink(COUNTS, "k", JDBC), "INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k",
                  {"table.exec.state.ttl": "1 h"}, "TTL"),
    "DISTINCT": (sink(COUNTS, "k", JDBC),
                 "INSERT INTO snk SELECT k, COUNT(DISTINCT v), SUM(v) FROM src GROUP BY k", {}, "DISTINCT"),
    "SUM over DOUBLE": (sink("k STRING, c BIGINT, s DOUBLE", "k", JDBC),
                        "INSERT INTO snk SELECT k, COUNT(*), SUM(x) FROM src GROUP BY k", {}, "DOUBLE"),
    "retracting input": (sink(COUNTS, "k", JDBC), "INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM cdc GROUP BY k",
                         {}, "insert-only"),
    "-U needed by a changelog file sink": (
        sink(COUNTS, "k", "'connector' = 'filesystem', 'path' = '/tmp/x', 'format' = 'changelog-json'"),
        "INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k", {}, "generateUpdateBefore"),
    "sink keyed by another column": (
        sink(COUNTS, "c", JDBC), "INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k", {},
        "materialisation"),
    "stateful operator upstream": (
        sink("c BIGINT, n BIGINT, s BIGINT", "c", JDBC),
        "INSERT INTO snk SELECT c, COUNT(*), SUM(c) FROM (SELECT window_start, k, COUNT(*) AS c FROM "
        "TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, k) "
        "GROUP BY c", {}, "upstream"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_native_is_chosen_only_where_exact(tmp_path: Path, case: str) -> None:
    ddl, statement, config, expected = CASES[case]
    reason = decision(tmp_path, ddl, statement, config)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason, reason


def test_the_strategy_is_recorded_and_explained(tmp_path: Path) -> None:
    env, plan = compile_plan(tmp_path, sink(COUNTS, "k", JDBC),
                             "INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")
    (node,) = [n for n in plan.data["nodes"] if n["type"].startswith("stream-exec-group-aggregate_")]
    assert node["strategy"] == NATIVE
    assert "strategy=[NATIVE]" in plan.explain()
    assert "strategy=[NATIVE]" in env.explain_sql("INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")


def test_a_plan_without_the_field_gets_the_rule_at_restore(tmp_path: Path) -> None:
    """Plans compiled before the strategy was recorded (the restore corpus) keep the strategy they ran with."""
    env, plan = compile_plan(tmp_path, sink(COUNTS, "k", JDBC),
                             "INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")
    data = json.loads(plan.as_json())
    for n in data["nodes"]:
        n.pop("strategy", None)
    data["planId"] = serde.compute_plan_id(data)
    (node, _), = aggregates(CompiledPlan(data), env)
    assert node.strategy == NATIVE


def test_an_unknown_strategy_is_incompatible(tmp_path: Path) -> None:
    _, plan = compile_plan(tmp_path, sink(COUNTS, "k", JDBC),
                             "INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")
    data = json.loads(plan.as_json().replace('"strategy":"NATIVE"', '"strategy":"GPU"'))
    data["planId"] = serde.compute_plan_id(data)
    report = CompiledPlan(data).check()
    assert report.exit_code == 4 and "strategy 'GPU' is unknown" in report.summary()


def test_a_strategy_of_another_node_version_is_incompatible(tmp_path: Path) -> None:
    """JVM is a strategy of group-aggregate_3 and _4 only: a version-2 node recording it cannot be translated."""
    _, plan = compile_plan(tmp_path, sink(COUNTS, "k", JDBC),
                           "INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")
    data = json.loads(plan.as_json().replace('"strategy":"NATIVE"', '"strategy":"JVM"'))
    data["planId"] = serde.compute_plan_id(data)
    assert "group-aggregate_4" in plan.as_json()  # today's version; its strategies are _3's
    assert CompiledPlan(data).check().exit_code == 0  # versions 3 and 4 run JVM
    data = json.loads(re.sub(r"group-aggregate([_-])[34]", r"group-aggregate\g<1>2", json.dumps(data)))
    data["planId"] = serde.compute_plan_id(data)
    report = CompiledPlan(data).check()
    assert report.exit_code == 4 and "'JVM' is unknown to this engine for stream-exec-group-aggregate version 2" \
        in report.summary()


# --- Spark ---------------------------------------------------------------------------------------------------
def executed_plans(plan: Any, env: Any, root: Path) -> list[str]:
    job = env.execute_plan(plan, job_root=str(root))
    try:
        job.process_available()
        return [q.query._jsq.explainInternal(False) for q in job.queries]
    finally:
        job.stop(snapshot=False)


def write_source(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> None:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / f"{name}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize("statement,native", [
    ("INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k", True),
    ("INSERT INTO snk SELECT k, COUNT(DISTINCT v), SUM(v) FROM src GROUP BY k", False),
], ids=["native", "distinct-on-tws"])
def test_physical_plan(tmp_path: Path, spark: Any, statement: str, native: bool) -> None:
    write_source(tmp_path, "a", [{"k": "a", "v": 1}, {"k": "a", "v": 2}, {"k": "b", "v": 3}])
    env, plan = compile_plan(tmp_path, sink(COUNTS, "k", "'connector' = 'blackhole'"), statement)
    (executed,) = executed_plans(plan, env, tmp_path / "job")
    assert ("StateStoreSave" in executed) is native, executed
    assert ("TransformWithState" in executed) is not native, executed


def test_version_1_keeps_transform_with_state(tmp_path: Path, spark: Any) -> None:
    """The strategy of a (name, version) is frozen: a version-1 plan that qualifies still runs on TWS."""
    write_source(tmp_path, "a", [{"k": "a", "v": 1}])
    env, plan = compile_plan(tmp_path, sink(COUNTS, "k", "'connector' = 'blackhole'"),
                             "INSERT INTO snk SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")
    text = re.sub(r',"strategy":"[A-Z_]+"', "", re.sub(r"stream-exec-group-aggregate([_-])\d+",
                                                      r"stream-exec-group-aggregate\g<1>1", plan.as_json()))
    data = json.loads(text)
    data["planId"] = serde.compute_plan_id(data)
    old = CompiledPlan(data)
    (executed,) = executed_plans(old, env, tmp_path / "job")
    assert "TransformWithState" in executed and "StateStoreSave" not in executed, executed


def test_changelog_is_plus_i_then_plus_u_across_a_restart(tmp_path: Path, spark: Any) -> None:
    """Flink's kinds for an upsert stream: +I on a key's first emission, +U after, also across a restart."""
    from planengine.runtime.connectors import spark_schema_ddl
    from planengine.runtime.dataflow.stream import ROWKIND, Stream, column_names
    from planengine.runtime.operators.native_group_aggregate import native_group_aggregate

    env, plan = compile_plan(tmp_path, sink("k STRING, c BIGINT, s BIGINT, lo BIGINT", "k", JDBC),
                             "INSERT INTO snk SELECT k, COUNT(*), SUM(v), MIN(v) FROM src GROUP BY k")
    ((node, _),) = aggregates(plan, env)
    in_types = node.inputs[0].field_types
    columns = column_names(len(in_types))
    feed = tmp_path / "feed"
    feed.mkdir()
    got: list[tuple[int, str]] = []

    def run() -> None:
        df = spark.readStream.schema(spark_schema_ddl(columns, in_types)).json(str(feed))
        out = native_group_aggregate(Stream(df, tuple(node.inputs[0].field_names)), node)
        assert out.updating and out.output_mode == "update"

        def collect(batch: Any, batch_id: int) -> None:
            got.extend((batch_id, f"{r[ROWKIND]}{[r[c] for c in out.columns]}") for r in batch.collect())

        query = (out.df.writeStream.foreachBatch(collect).outputMode(out.output_mode)
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    def put(name: str, rows: list[tuple[str, int | None]]) -> None:
        k, v = node.inputs[0].field_names.index("k"), node.inputs[0].field_names.index("v")
        lines = [json.dumps({columns[k]: a, columns[v]: b}) for a, b in rows]
        (feed / f"{name}.json").write_text("\n".join(lines) + "\n")

    put("1", [("x", 5), ("x", 2), ("y", None)])
    run()
    put("2", [("x", 1), ("z", 7)])
    run()  # a new query on the same checkpoint: the state restores
    assert sorted(got) == [(0, "+I['x', 2, 7, 2]"), (0, "+I['y', 1, None, None]"),
                           (1, "+I['z', 1, 7, 7]"), (1, "+U['x', 3, 8, 1]")]


def test_keyed_blackhole_drops_update_before_like_flink() -> None:
    from planengine.connectors.discovery import create_table_sink
    from planengine.ir.changelog import ALL, UPSERT
    from tests.connectors.builders import build_ctx

    keyed = create_table_sink(build_ctx(options={"connector": "blackhole"}, primary_key=("id",)))
    assert keyed.changelog_mode(ALL) == UPSERT
    assert create_table_sink(build_ctx(options={"connector": "blackhole"})).changelog_mode(ALL) == ALL


def test_file_sink_refuses_an_update_mode_stream(tmp_path: Path) -> None:
    """Spark's file sink is append-only; the planner never sends it an update-mode stream, and if it did the
    writer says so instead of failing inside Spark."""
    from planengine.connectors.discovery import create_table_sink
    from planengine.errors import ValidationError
    from planengine.runtime.connectors import QueryOptions
    from planengine.runtime.connectors.filesystem import write_filesystem
    from planengine.runtime.dataflow.stream import UPDATE, Stream, StreamFacts
    from tests.connectors.builders import build_ctx

    target = create_table_sink(build_ctx(options={"connector": "filesystem", "path": str(tmp_path),
                                                  "format": "changelog-json"}))
    stream = Stream(None, ("id", "name"), updating=True, facts=StreamFacts(output_mode=UPDATE))
    with pytest.raises(ValidationError, match="cannot write a stream in update output mode"):
        write_filesystem(stream, target, None, None, QueryOptions("q", str(tmp_path / "checkpoint")))
