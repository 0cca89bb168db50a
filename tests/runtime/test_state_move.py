"""Jobs moved from the Python operators to the JVM processors with their state (issue 9, migration).

End to end through real Spark and the CLI a user runs: a plan on the Python ``transformWithState`` operators
runs and stops with a snapshot; ``planengine migrate`` moves its nodes to their JVM versions and
``planengine check --snapshot`` explains what moves; the migrated plan starts from the snapshot and reads new
input. Its sinks' changelogs must equal those of the same plan run without interruption on the Python
operators: nothing lost, nothing twice, the state carried over (a group aggregate's accumulators, DISTINCT
values and MIN/MAX multisets under retraction; a join's rows of both sides with their association counts and
an upsert materializer's rows alive per sink key). The restore corpus's engine-0.1 plans and snapshots move too
(Top-N, keep-first and keep-last deduplicate, changelog normalize, the global Top-N of a sort-limit, a join with
a non-equi condition, which ``join_3`` evaluates on the JVM).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planengine.api import TableEnvironment
from planengine.cli import main as cli_main
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.serde import compute_plan_id, dumps
from tests.restore_corpus.layout import JOB_ROOT, CorpusCase, localized_copy, sink_rows

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
    [node] = [n for n in plan["nodes"] if n["type"].startswith("stream-exec-group-aggregate_")]
    assert node["strategy"] == "JVM"  # today's newest version, on the JVM processor
    node["type"], node["strategy"] = "stream-exec-group-aggregate_2", "TRANSFORM_WITH_STATE"
    plan["planId"] = compute_plan_id(plan)
    path.write_text(dumps(plan), encoding="utf-8")
    return plan


def _downgraded(plan: dict, versions: dict[str, int]) -> dict:
    """``plan`` as the engine before the JVM versions wrote it: node name -> the Python version, for nodes whose
    JSON is the same in both versions; their uids (and the queries named after them) too. Whatever version
    today's compiler wrote is replaced, so a newer node version does not break the tests that use this."""
    text = dumps(plan)
    for name, old in versions.items():
        text = re.sub(rf'"{name}_\d+"', f'"{name}_{old}"', text)
        text = re.sub(rf"_{name}-\d+_", f"_{name}-{old}_", text)
    out = json.loads(text)
    out["planId"] = compute_plan_id(out)
    return out


def _old_plan(env: TableEnvironment, tmp_path: Path, insert: str,
              versions: dict[str, int]) -> tuple[dict, CompiledPlan]:
    """Today's plan of ``insert`` downgraded to the Python ``versions`` (``_downgraded``), written to ``old.json``
    for the CLI's ``migrate``: its JSON and the plan to run."""
    env.execute_sql(f"COMPILE PLAN '{tmp_path / 'compiled.json'}' FOR {insert}")
    old = _downgraded(json.loads((tmp_path / "compiled.json").read_text(encoding="utf-8")), versions)
    (tmp_path / "old.json").write_text(dumps(old), encoding="utf-8")
    return old, CompiledPlan.from_file(tmp_path / "old.json")


def _uninterrupted(spark: Any, env: TableEnvironment, plan: CompiledPlan, data: Path,
                   phases: list[Callable[[], None]], sinks: tuple[str, ...]) -> dict[str, Any]:
    """The reference: ``plan`` run without a stop, each phase's input written while it runs, then each sink's
    rows. A moved job must end with the same rows."""
    job = env.execute_plan(plan, job_root=str(data / JOB_ROOT))
    try:
        for write in phases:
            write()
            job.process_available()
    finally:
        job.stop(snapshot=False)
    return {sink: sink_rows(spark, env, data, sink) for sink in sinks}


def _operator_names(job_root: Path, run_id: str) -> list[str]:
    """The stateful operators of the run's checkpoints, as their newest operator metadata names them."""
    names = []
    for op in sorted((job_root / "runs" / run_id / "checkpoints").glob("*/state/*")):
        newest = max((p for p in (op / "_metadata" / "v2").glob("*") if p.name.isdigit()), key=lambda p: int(p.name))
        names.append(json.loads(newest.read_text().partition("\n")[2])["operatorInfo"]["operatorName"])
    return names


def _migrate_and_check(tmp_path: Path, data: Path, ddl: str, snapshot: Path,
                       capsys: Any) -> tuple[Path, str, list[str]]:
    """``planengine migrate`` of ``old.json`` and ``check --snapshot`` of the result through the CLI, as the
    operator's upgrade runs them: the migrated plan's path, migrate's messages and check's state migrations."""
    new_path = tmp_path / "new.json"
    assert cli_main(["migrate", "--plan", str(tmp_path / "old.json"), "-o", str(new_path)]) == 0
    err = capsys.readouterr().err
    catalog = tmp_path / "catalog.sql"
    catalog.write_text(ddl.replace("{dir}", str(data)), encoding="utf-8")
    assert cli_main(["check", "--plan", str(new_path), "--snapshot", str(snapshot), "--catalog", str(catalog),
                     "--json"]) == 0, capsys.readouterr().out
    moves = [r["message"] for r in json.loads(capsys.readouterr().out)["reasons"] if "state migration" in r["message"]]
    return new_path, err, moves


def _continue_on_the_jvm(spark: Any, env: TableEnvironment, new_path: Path, snapshot: Path,
                         data: Path, expected: dict[str, Any]) -> list[dict]:
    """Run the migrated plan from ``snapshot`` in the job root the snapshot belongs to, as the operator's upgrade
    does, until idle: the migrated plan becomes the plan in force and every sink must end as the uninterrupted
    run's. Returns the run's record of the state it moved."""
    root = snapshot.parent.parent
    new_plan = CompiledPlan.from_file(new_path)
    second = env.execute_plan(new_plan, job_root=str(root), from_snapshot=str(snapshot), until_idle=True)
    assert json.loads((root / "plan.json").read_text())["planId"] == new_plan.plan_id
    assert set(_operator_names(root, second.run_id)) == {"transformWithStateExec"}
    for sink, want in expected.items():
        got = sink_rows(spark, env, data, sink)
        assert got == want, (f"{sink} missing: {sorted((want - got).elements())}\n"
                             f"unexpected: {sorted((got - want).elements())}")
    return json.loads((root / "runs" / second.run_id / "state-moves.json").read_text())


def test_python_job_migrated_to_the_jvm_continues_with_its_state(tmp_path: Path, spark, capsys) -> None:
    # The reference: the Python plan without interruption, phase 2's input arriving while it runs.
    ref = tmp_path / "ref"
    ref_env = _env(ref)
    old_plan = CompiledPlan.from_json(json.dumps(_python_plan(ref_env, tmp_path / "old.json")))
    expected = _uninterrupted(spark, ref_env, old_plan, ref, [lambda: _write(ref, "phase1", PHASE1),
                                                               lambda: _write(ref, "phase2", PHASE2)], ("out",))["out"]

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

    # ... and continue on the JVM with new input, from the snapshot in the same job root (the operator's upgrade).
    _write(data, "phase2", PHASE2)
    moved = _continue_on_the_jvm(spark, env, new_path, snapshot, data, {"out": expected})
    assert [(m["node"], m["groups"]) for m in moved] == [(3, 3)]
    got = sink_rows(spark, env, data, "out")
    assert "-U[a, 3, 9, 1, 5, 2]" in got and "+U[a, 2, 12, 3, 9, 2]" in got  # MIN/MAX, DISTINCT carried over
    assert Counter(x for x in got.elements() if x.startswith("-D[b")) == Counter({"-D[b, 1, 7, 7, 7, 1]": 1})


JOIN_DDL = """
CREATE TABLE o (id INT, cust INT, amount BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'filesystem',
  'path' = '{dir}/o', 'format' = 'changelog-json', 'changelog-mode' = 'I,UB,UA,D');
CREATE TABLE c (cust INT, name STRING, PRIMARY KEY (cust) NOT ENFORCED) WITH ('connector' = 'filesystem',
  'path' = '{dir}/c', 'format' = 'changelog-json', 'changelog-mode' = 'I,UB,UA,D');
CREATE TABLE left_out (id INT, amount BIGINT, name STRING) WITH ('connector' = 'filesystem',
  'path' = '{dir}/left_out', 'format' = 'changelog-json');
CREATE TABLE by_name (name STRING, id INT, amount BIGINT, PRIMARY KEY (name) NOT ENFORCED) WITH (
  'connector' = 'filesystem', 'path' = '{dir}/by_name', 'format' = 'changelog-json');
"""
# by_name is keyed by the customer's name, the join's rows by order id: several rows are alive per sink key,
# so the sink materializes upserts (an upsert materializer in the join's query).
JOIN_INSERT = """EXECUTE STATEMENT SET BEGIN
INSERT INTO left_out SELECT o.id, o.amount, c.name FROM o LEFT JOIN c ON o.cust = c.cust;
INSERT INTO by_name SELECT c.name, o.id, o.amount FROM o JOIN c ON o.cust = c.cust;
END"""
# Phase 1 in two batches (customers, then their orders) and phase 2's changes on one side per join key: the
# order in which a micro-batch interleaves the two sides' rows of one key is not deterministic.
JOIN_PHASE1 = [{"c": [{"op": "+I", "cust": 1, "name": "Ann"}, {"op": "+I", "cust": 2, "name": "Bob"},
                      {"op": "+I", "cust": 5, "name": "Eve"}]},
               {"o": [{"op": "+I", "id": 11, "cust": 3, "amount": 50}, {"op": "+I", "id": 12, "cust": 1, "amount": 70},
                      {"op": "+I", "id": 13, "cust": 5, "amount": 30}]}]
# Retractions of rows kept since phase 1, on both sides: a padded order becomes joined (11), a joined order goes
# (12), a customer is renamed (Eve: her joined rows are retracted and padded, then joined again), a second row
# becomes alive for the sink key Bob (10 and 11).
JOIN_PHASE2 = {"o": [{"op": "+I", "id": 10, "cust": 2, "amount": 100}, {"op": "-U", "id": 11, "cust": 3, "amount": 50},
                     {"op": "+U", "id": 11, "cust": 2, "amount": 60}, {"op": "-D", "id": 12, "cust": 1, "amount": 70}],
               "c": [{"op": "-U", "cust": 5, "name": "Eve"}, {"op": "+U", "cust": 5, "name": "Eva"},
                     {"op": "+I", "cust": 4, "name": "Dan"}]}


def _write_tables(data: Path, name: str, tables: dict[str, list[dict]]) -> None:
    for table, rows in tables.items():
        (data / table).mkdir(parents=True, exist_ok=True)
        (data / table / f"{name}.json").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_python_join_and_upsert_materializer_migrated_to_the_jvm_continue_with_their_state(
        tmp_path: Path, spark, capsys) -> None:
    def env_for(data: Path) -> TableEnvironment:
        env = TableEnvironment()
        env.execute_sql(JOIN_DDL.replace("{dir}", str(data)))
        env.execute_sql("SET 'table.plan.compile.catalog-objects' = 'SCHEMA'")
        return env

    ref = tmp_path / "ref"
    ref_env = env_for(ref)
    old, old_plan = _old_plan(ref_env, tmp_path, JOIN_INSERT, {"stream-exec-join": 1, "stream-exec-sink": 1})
    assert sorted(n["type"] for n in old["nodes"] if n.get("state")) == [
        "stream-exec-join_1", "stream-exec-join_1", "stream-exec-sink_1"]

    # The reference: the Python plan without interruption.
    phases = [lambda part=part, i=i: _write_tables(ref, f"phase1-{i}", part) for i, part in enumerate(JOIN_PHASE1)]
    phases.append(lambda: _write_tables(ref, "phase2", JOIN_PHASE2))
    expected = _uninterrupted(spark, ref_env, old_plan, ref, phases, ("left_out", "by_name"))

    data = tmp_path / "data"
    env = env_for(data)
    job = env.execute_plan(old_plan, job_root=str(data / JOB_ROOT))
    try:
        for i, part in enumerate(JOIN_PHASE1):
            _write_tables(data, f"phase1-{i}", part)
            job.process_available()
    finally:
        snapshot_id = job.stop(snapshot=True)
    snapshot = data / JOB_ROOT / "snapshots" / str(snapshot_id)

    new_path, err, moves = _migrate_and_check(tmp_path, data, JOIN_DDL, snapshot, capsys)
    assert "stream-exec-join version 1 (TRANSFORM_WITH_STATE) -> 3 (JVM), state leftRows, rightRows" in err
    assert "stream-exec-sink version 1 (TRANSFORM_WITH_STATE) -> 2 (JVM), state materializedRows" in err
    assert len(moves) == 3, moves  # two joins, one upsert materializer
    assert any("stream-exec-sink version 1" in m and "2 rows in materializedRows" in m for m in moves), moves

    _write_tables(data, "phase2", JOIN_PHASE2)
    moved = _continue_on_the_jvm(spark, env, new_path, snapshot, data, expected)
    assert len(moved) == 3, moved
    assert "-D[11, 50, null]" in expected["left_out"] and "+I[11, 60, Bob]" in expected["left_out"]
    assert "+I[13, 30, null]" in expected["left_out"] and "+I[13, 30, Eva]" in expected["left_out"]


# case -> (node id -> its type after the migration), the nodes whose state moved
CORPUS_MOVES = {
    "group_aggregate_v2": ({3: "stream-exec-group-aggregate_3", 8: "stream-exec-group-aggregate_2"}, {3}),
    "rank_deduplicate": ({4: "stream-exec-rank_2", 8: "stream-exec-deduplicate_2", 12: "stream-exec-deduplicate_2"},
                         {4, 8, 12}),
    "changelog": ({3: "stream-exec-changelog-normalize_2", 8: "stream-exec-changelog-normalize_2"}, {3, 8}),
    # the global Top-N moves to the JVM; LIMIT and the temporal sort have no JVM version
    "sorts": ({5: "stream-exec-limit_1", 8: "stream-exec-sort-limit_3", 12: "stream-exec-temporal-sort_1"}, {8}),
    # a non-equi condition (t1.b > t2.b): join_3 evaluates it on the JVM
    "joins": ({5: "stream-exec-join_3"}, {5}),
    # a RANGE frame's history and the row pending at the snapshot (waiting for the watermark) move
    "over_aggregate": ({4: "stream-exec-over-aggregate_3"}, {4}),
    # TUMBLE windows: Spark's native aggregation in every version, nothing to move
    "time_windows": ({5: "stream-exec-window-aggregate_1", 10: "stream-exec-group-window-aggregate_1"}, set()),
}


@pytest.mark.parametrize("name", sorted(CORPUS_MOVES))
def test_corpus_plan_written_by_engine_0_1_moves_to_the_jvm(tmp_path: Path, spark, name: str) -> None:
    """Restore corpus cases (plan and snapshot written by engine 0.1 on the Python operators; group_aggregate_v2
    before plans recorded the strategy): migrated, restored from their snapshot, every changelog is the
    program's (phase 2's rows meet the moved state)."""
    case = CorpusCase(CORPUS / "0.1" / name)
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
    want_types, want_moved = CORPUS_MOVES[name]
    assert {i: types[i] for i in want_types} == want_types

    result = env.execute_plan(CompiledPlan.from_file(migrated), job_root=str(data / JOB_ROOT),
                              from_snapshot=str(snapshot), until_idle=True, drain=True)
    record = data / JOB_ROOT / "runs" / result.run_id / "state-moves.json"
    moved = json.loads(record.read_text()) if record.is_file() else []
    assert {m["node"] for m in moved} == want_moved
    assert all(m["groups"] > 0 for m in moved), moved
    for sink in program.sinks:
        got, want = sink_rows(spark, env, data, sink), program.expected(sink, "before", "after")
        assert got == want, (f"{sink} missing: {sorted((want - got).elements())}\n"
                             f"unexpected: {sorted((got - want).elements())}")


EVENT_DDL = """
CREATE TABLE ev (k STRING, g STRING, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{dir}/ev', 'format' = 'json');
CREATE TABLE over_out (k STRING, ts TIMESTAMP(3), v INT, total INT, lo INT, n BIGINT, d BIGINT, prev INT) WITH (
  'connector' = 'filesystem', 'path' = '{dir}/over_out', 'format' = 'changelog-json');
CREATE TABLE sess_out (g STRING, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, total INT) WITH (
  'connector' = 'filesystem', 'path' = '{dir}/sess_out', 'format' = 'changelog-json');
"""
# An unbounded frame (LAG allows no other; the Python operator keeps every row, the JVM folds them into
# accumulators, for DISTINCT the values seen so far and for LAG the last two values) and
# sessions per k aggregated per g (the Python session operator: sessions span several grouping keys).
EVENT_INSERT = """EXECUTE STATEMENT SET BEGIN
INSERT INTO over_out SELECT k, ts, v,
  SUM(v) OVER w, MIN(v) OVER w, COUNT(*) OVER w, COUNT(DISTINCT v) OVER w, LAG(v) OVER w FROM ev
  WINDOW w AS (PARTITION BY k ORDER BY ts);
INSERT INTO sess_out SELECT g, window_start, window_end, COUNT(*), SUM(v)
  FROM TABLE(SESSION(TABLE ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL '5' SECOND))
  GROUP BY g, window_start, window_end;
END"""
# At the snapshot (watermark :08): a's row at :09 pending in the OVER operator, the others processed (the
# history of a and b); the sessions of a [:01, :14) and b [:03, :09) open.
EVENT_PHASE1 = [{"k": "a", "g": "x", "v": 5, "ts": "2020-10-10 00:00:01"},
                {"k": "b", "g": "y", "v": 7, "ts": "2020-10-10 00:00:03"},
                {"k": "a", "g": "y", "v": 2, "ts": "2020-10-10 00:00:04"},
                {"k": "b", "g": "x", "v": 1, "ts": "2020-10-10 00:00:04"},
                {"k": "a", "g": "x", "v": 9, "ts": "2020-10-10 00:00:09"}]
# Phase 2 extends a's open session and closes it; b's session closes on the moved timer alone (no b rows).
EVENT_PHASE2 = [{"k": "a", "g": "x", "v": 5, "ts": "2020-10-10 00:00:12"},  # a's 5 again: not a new value
                {"k": "c", "g": "x", "v": 3, "ts": "2020-10-10 00:00:30"}]


def test_python_over_and_sessions_migrated_to_the_jvm_continue_with_their_state(tmp_path: Path, spark,
                                                                                 capsys) -> None:
    def env_for(data: Path) -> TableEnvironment:
        env = TableEnvironment()
        env.execute_sql(EVENT_DDL.replace("{dir}", str(data)))
        env.execute_sql("SET 'table.plan.compile.catalog-objects' = 'SCHEMA'")
        return env

    def write(data: Path, name: str, rows: list[dict]) -> None:
        (data / "ev").mkdir(parents=True, exist_ok=True)
        (data / "ev" / f"{name}.json").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    ref = tmp_path / "ref"
    ref_env = env_for(ref)
    old, old_plan = _old_plan(ref_env, tmp_path, EVENT_INSERT,
                              {"stream-exec-over-aggregate": 1, "stream-exec-window-aggregate": 2})
    assert sorted(n["type"] for n in old["nodes"] if n.get("state")) == [
        "stream-exec-over-aggregate_1", "stream-exec-window-aggregate_2"]

    expected = _uninterrupted(spark, ref_env, old_plan, ref, [lambda: write(ref, "phase1", EVENT_PHASE1),
                                                               lambda: write(ref, "phase2", EVENT_PHASE2)],
                              ("over_out", "sess_out"))

    data = tmp_path / "data"
    env = env_for(data)
    job = env.execute_plan(old_plan, job_root=str(data / JOB_ROOT))
    try:
        write(data, "phase1", EVENT_PHASE1)
        job.process_available()
    finally:
        snapshot_id = job.stop(snapshot=True)
    snapshot = data / JOB_ROOT / "snapshots" / str(snapshot_id)
    before = {sink: sink_rows(spark, env, data, sink) for sink in ("over_out", "sess_out")}
    assert "+I[a, 2020-10-10T00:00:09, 9, 16, 2, 3, 3, 2]" not in before["over_out"]  # pending at the snapshot
    assert not before["sess_out"]  # every session open at the snapshot

    new_path, err, moves = _migrate_and_check(tmp_path, data, EVENT_DDL, snapshot, capsys)
    assert "stream-exec-over-aggregate version 1 (TRANSFORM_WITH_STATE) -> 4 (JVM)" in err  # LAG: version 4
    assert "stream-exec-window-aggregate version 2 (TRANSFORM_WITH_STATE) -> 3 (JVM)" in err
    assert len(moves) == 2, moves
    assert any("over-aggregate version 1 (TRANSFORM_WITH_STATE) -> 4" in m and "rows in pendingRows" in m
               for m in moves), moves

    write(data, "phase2", EVENT_PHASE2)
    moved = _continue_on_the_jvm(spark, env, new_path, snapshot, data, expected)
    assert sorted(m["groups"] for m in moved) == [2, 2], moved  # partitions a and b in both operators
    # the moved history (a: 5, 2) and pending row (a :09) meet phase 2's row (LAG: the row before, 9); a's
    # session spans both phases
    assert "+I[a, 2020-10-10T00:00:12, 5, 21, 2, 4, 3, 9]" in expected["over_out"]
    assert "+I[x, 2020-10-10T00:00:01, 2020-10-10T00:00:17, 3, 19]" in expected["sess_out"]
