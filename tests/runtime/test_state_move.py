"""A job moved from the Python group aggregate to the JVM processor with its state (issue 9, migration).

End to end through real Spark and the CLI a user runs: a plan on the Python ``transformWithState`` operator
runs and stops with a snapshot; ``planengine migrate`` moves its group aggregate to version 3 on the JVM and
``planengine check --snapshot`` explains what moves; the migrated plan starts from the snapshot and reads new
input. Its sink's changelog must equal the changelog of the same plan run without interruption on the
Python operator: nothing lost, nothing twice, the state (accumulators, DISTINCT values, MIN/MAX multisets
under retraction) carried over.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.cli import main as cli_main
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.serde import compute_plan_id, dumps
from tests.restore_corpus.layout import JOB_ROOT, CorpusCase, localized_copy, sink_rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CORPUS = Path(__file__).parents[1] / "restore_corpus" / "corpus"

DDL = """
CREATE TABLE src (k STRING, v INT, tag STRING) WITH ('connector' = 'filesystem', 'path' = '{dir}/src',
  'format' = 'changelog-json');
CREATE TABLE `out` (k STRING, c BIGINT, s INT, lo INT, hi INT, tags BIGINT) WITH ('connector' = 'filesystem',
  'path' = '{dir}/out', 'format' = 'changelog-json');
"""
INSERT = "INSERT INTO `out` SELECT k, COUNT(*), SUM(v), MIN(v), MAX(v), COUNT(DISTINCT tag) FROM src GROUP BY k"
PHASE1 = [("+I", "a", 1, "x"), ("+I", "a", 5, "y"), ("+I", "a", 3, "x"), ("+I", "b", 7, "z"), ("+I", "c", 2, "x")]
# Retractions of phase-1 rows: the new MIN/MAX and DISTINCT counts come only from the moved multisets.
PHASE2 = [("-D", "a", 1, "x"), ("-U", "a", 5, "y"), ("+U", "a", 9, "y"), ("-D", "b", 7, "z"), ("+I", "c", 4, "w")]


def _write(data: Path, name: str, rows: list[tuple[str, str, int, str]]) -> None:
    (data / "src").mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"k": k, "v": v, "tag": tag, "op": op}) for op, k, v, tag in rows]
    (data / "src" / f"{name}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _env(data: Path) -> TableEnvironment:
    env = TableEnvironment()
    env.execute_sql(DDL.replace("{dir}", str(data)))
    return env


def _python_plan(env: TableEnvironment, path: Path) -> dict:
    """The plan as an engine before the JVM operators wrote it: the group aggregate at version 2 on the
    Python operator (the node's JSON is the same in both versions)."""
    env.execute_sql("SET 'table.plan.compile.catalog-objects' = 'SCHEMA'")  # each run's catalog has the paths
    env.execute_sql(f"COMPILE PLAN '{path}' FOR {INSERT}")
    plan = json.loads(path.read_text(encoding="utf-8"))
    [node] = [n for n in plan["nodes"] if n["type"] == "stream-exec-group-aggregate_3"]
    assert node["strategy"] == "JVM"
    node["type"], node["strategy"] = "stream-exec-group-aggregate_2", "TRANSFORM_WITH_STATE"
    plan["planId"] = compute_plan_id(plan)
    path.write_text(dumps(plan), encoding="utf-8")
    return plan


def _operator_names(job_root: Path, run_id: str) -> list[str]:
    """The stateful operators of the run's checkpoints, as their newest operator metadata names them."""
    names = []
    for op in sorted((job_root / "runs" / run_id / "checkpoints").glob("*/state/*")):
        newest = max((p for p in (op / "_metadata" / "v2").glob("*") if p.name.isdigit()), key=lambda p: int(p.name))
        names.append(json.loads(newest.read_text().partition("\n")[2])["operatorInfo"]["operatorName"])
    return names


def test_python_job_migrated_to_the_jvm_continues_with_its_state(tmp_path: Path, spark, capsys) -> None:
    # The reference: the Python plan without interruption, phase 2's input arriving while it runs.
    ref = tmp_path / "ref"
    ref_env = _env(ref)
    old_plan = CompiledPlan.from_json(json.dumps(_python_plan(ref_env, tmp_path / "old.json")))
    _write(ref, "phase1", PHASE1)
    job = ref_env.execute_plan(old_plan, job_root=str(ref / JOB_ROOT))
    try:
        job.process_available()
        _write(ref, "phase2", PHASE2)
        job.process_available()
    finally:
        job.stop(snapshot=False)
    expected = sink_rows(spark, ref_env, ref, "out")

    # The migrated job: phase 1 on the Python operator, stop with a snapshot ...
    data = tmp_path / "data"
    env = _env(data)
    _write(data, "phase1", PHASE1)
    first = env.execute_plan(old_plan, job_root=str(data / JOB_ROOT), until_idle=True)
    snapshot = data / JOB_ROOT / "snapshots" / first.snapshot_id
    assert _operator_names(data / JOB_ROOT, first.run_id) == ["transformWithStateInPandasExec"]

    # ... migrate the plan and check it against the snapshot, as the operator's upgrade does ...
    new_path = tmp_path / "new.json"
    assert cli_main(["migrate", "--plan", str(tmp_path / "old.json"), "-o", str(new_path)]) == 0
    assert "stream-exec-group-aggregate version 2 (TRANSFORM_WITH_STATE) -> 3 (JVM)" in capsys.readouterr().err
    new_plan = json.loads(new_path.read_text(encoding="utf-8"))
    assert [n["strategy"] for n in new_plan["nodes"] if n["type"] == "stream-exec-group-aggregate_3"] == ["JVM"]
    catalog = tmp_path / "catalog.sql"
    catalog.write_text(DDL.replace("{dir}", str(data)), encoding="utf-8")
    assert cli_main(["check", "--plan", str(new_path), "--snapshot", str(snapshot), "--catalog", str(catalog),
                     "--json"]) == 0, capsys.readouterr().out
    reasons = [r["message"] for r in json.loads(capsys.readouterr().out)["reasons"]]
    [move] = [r for r in reasons if "state migration" in r]
    assert "version 2 (TRANSFORM_WITH_STATE) -> 3 (JVM)" in move and "3 rows in accumulators" in move, reasons

    # ... and continue on the JVM with new input, in a new job root started from the snapshot.
    _write(data, "phase2", PHASE2)
    second = env.execute_plan(CompiledPlan.from_file(new_path), job_root=str(tmp_path / "job2"),
                              from_snapshot=str(snapshot), until_idle=True)
    assert _operator_names(tmp_path / "job2", second.run_id) == ["transformWithStateExec"]
    moved = json.loads((tmp_path / "job2" / "runs" / second.run_id / "state-moves.json").read_text())
    assert [(m["node"], m["groups"]) for m in moved] == [(3, 3)]

    got = sink_rows(spark, env, data, "out")
    assert got == expected, (f"missing: {sorted((expected - got).elements())}\n"
                             f"unexpected: {sorted((got - expected).elements())}")
    assert "-U[a, 3, 9, 1, 5, 2]" in got and "+U[a, 2, 12, 3, 9, 2]" in got  # MIN/MAX, DISTINCT carried over
    assert Counter(x for x in got.elements() if x.startswith("-D[b")) == Counter({"-D[b, 1, 7, 7, 7, 1]": 1})


def test_corpus_plan_written_by_engine_0_1_moves_to_the_jvm(tmp_path: Path, spark) -> None:
    """The restore corpus's group-aggregate_2 case (plan and snapshot written by engine 0.1, where plans did
    not record the strategy yet): migrated, restored from its snapshot, the changelog is the program's."""
    case = CorpusCase(CORPUS / "0.1" / "group_aggregate_v2")
    program = case.program()
    data, snapshot = tmp_path / "data", tmp_path / "snapshot"
    localized_copy(case.snapshot_dir, snapshot, data)
    for sink in program.sinks:
        localized_copy(case.output_dir / sink, data / sink, data)
    env = TableEnvironment()
    env.execute_sql(program.ddl_for(data))
    program.write_inputs(data, "before")
    program.write_inputs(data, "after")
    migrated = tmp_path / "migrated.json"
    env.execute_sql(f"COMPILE PLAN '{migrated}' FROM '{case.plan_path}'")
    types = {n["id"]: n["type"] for n in json.loads(migrated.read_text())["nodes"]}
    assert types[3] == "stream-exec-group-aggregate_3" and types[8] == "stream-exec-group-aggregate_2"  # native

    result = env.execute_plan(CompiledPlan.from_file(migrated), job_root=str(data / JOB_ROOT),
                              from_snapshot=str(snapshot), until_idle=True, drain=True)
    moved = json.loads((data / JOB_ROOT / "runs" / result.run_id / "state-moves.json").read_text())
    assert [(m["node"], m["groups"]) for m in moved] == [(3, 2)]
    got, want = sink_rows(spark, env, data, "agg_out"), program.expected("agg_out", "before", "after")
    assert got == want, f"missing: {sorted((want - got).elements())}\nunexpected: {sorted((got - want).elements())}"
