"""Restore corpus (DESIGN §8): every checked-in case restored by today's engine, and the completeness check.

Each case under ``corpus/<engineVersion>/<case>/`` holds the plan, the phase-1 snapshot and the phase-1 sink
output that engine version wrote (``generate.py``). The test copies the case into its own directory, puts
both phases' input in place (phase 1's files too: the restored source offsets must skip them), restores
the *checked-in* plan (never re-planned) from the checked-in snapshot with today's engine, runs phase 2
until idle with drain, and compares every sink's whole changelog with the program's expected rows:
phase 1's as checked in, phase 1's + phase 2's after the restore (nothing lost, nothing twice).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planengine.exec import base as B
from tests.restore_corpus.layout import JOB_ROOT, CorpusCase, corpus_cases, localized_copy, sink_rows
from tests.restore_corpus.pickles import scan_checkpoints

CASES = corpus_cases()

# Registered (name, version) pairs without a corpus case, each with the reason. Every entry must stay
# registered and uncovered (a stale or redundant entry fails), so the table cannot hide a gap.
EXEMPT: dict[tuple[str, int], str] = {}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_restores_with_todays_engine(case: CorpusCase, tmp_path: Path, spark) -> None:
    from planengine.api import TableEnvironment
    from planengine.plan.compiled_plan import CompiledPlan

    program = case.program()
    data = tmp_path / "data"
    snapshot = tmp_path / "snapshot"
    localized_copy(case.snapshot_dir, snapshot, data)
    for sink in program.sinks:
        localized_copy(case.output_dir / sink, data / sink, data)
    job_root = data / JOB_ROOT
    if case.job_inputs_dir.is_dir():
        localized_copy(case.job_inputs_dir, job_root / "inputs", data)
    env = TableEnvironment()
    env.execute_sql(program.ddl_for(data))
    program.write_inputs(data, "before")
    program.write_inputs(data, "after")

    plan = CompiledPlan.from_file(case.plan_path)
    assert plan.engine_version == case.engine_version
    assert plan.check().exit_code == 0, plan.check().summary()
    for sink in program.sinks:
        assert sink_rows(spark, env, data, sink) == program.expected(sink, "before"), f"{sink}: phase-1 output"

    result = env.execute_plan(plan, job_root=str(job_root), from_snapshot=str(snapshot), until_idle=True, drain=True)

    assert result.snapshot_id is not None
    run = json.loads((job_root / "runs" / result.run_id / "run.json").read_text(encoding="utf-8"))
    assert run["fromSnapshot"] == case.generated()["snapshotId"]
    assert (job_root / "plan.json").read_text(encoding="utf-8") == case.plan_path.read_text(encoding="utf-8")
    for sink in program.sinks:
        got, want = sink_rows(spark, env, data, sink), program.expected(sink, "before", "after")
        assert got == want, (f"{case.id} sink {sink} after restore\n  missing: {sorted((want - got).elements())}\n"
                             f"  unexpected: {sorted((got - want).elements())}")

    # No pickles in state beyond what the plan's node versions wrote before the state codec (pickles.py): the
    # state as restored (phase 1's batch) and as today's engine left it after phase 2 and the drain.
    checkpoints = job_root / "runs" / result.run_id / "checkpoints"
    for batch_ids in (case.generated()["lastBatchIds"], None):
        findings, _ = scan_checkpoints(spark, case.plan(), checkpoints, batch_ids)
        assert not findings, f"{case.id}: pickled state in node versions that use the state codec: {findings}"


def _registered() -> set[tuple[str, int]]:
    import planengine.exec.nodes  # noqa: F401  (registers the built-in nodes)

    return set(B.registered())


def _covered() -> set[tuple[str, int]]:
    return set().union(*(c.node_types() for c in CASES)) if CASES else set()


def test_every_registered_node_version_has_a_restore_case() -> None:
    missing = _registered() - _covered() - set(EXEMPT)
    assert not missing, (
        "registered exec node versions without a restore-corpus case: "
        + ", ".join(f"{n}_{v}" for n, v in sorted(missing))
        + " — add a program under tests/restore_corpus/programs/ that compiles to them and run "
        "`python -m tests.restore_corpus.generate --write <program>` (see docs/restore-corpus.md)")


def test_exemptions_are_registered_and_not_covered() -> None:
    assert not set(EXEMPT) - _registered(), "exempted node versions that are not registered (stale entries)"
    assert not set(EXEMPT) & _covered(), "exempted node versions that have a case (remove the exemption)"
    assert all(reason.strip() for reason in EXEMPT.values()), "every exemption needs its reason"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_records_who_wrote_it(case: CorpusCase) -> None:
    manifest = json.loads((case.snapshot_dir / "manifest.json").read_text(encoding="utf-8"))
    generated = case.generated()
    plan = case.plan()
    assert manifest["engineVersion"] == generated["engineVersion"] == plan["engineVersion"] == case.engine_version
    assert manifest["sparkVersion"] and generated["sparkVersion"]
    assert manifest["planId"] == plan["planId"] == generated["planId"]
    assert manifest["snapshotId"] == generated["snapshotId"]
    assert (case.snapshot_dir / "plan.json").read_text(encoding="utf-8") == case.plan_path.read_text(encoding="utf-8")
    assert sorted(n["type"] for n in {n["type"]: n for n in plan["nodes"]}.values()) == generated["nodeTypes"]
    program = case.program()
    # Every sink that committed output in phase 1 has it checked in (a sink with no phase-1 rows may have none).
    with_rows = {sink for sink in program.sinks if program.sinks[sink].get("before")}
    assert with_rows <= {p.name for p in case.output_dir.iterdir()} <= set(program.sinks)
