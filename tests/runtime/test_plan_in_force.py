"""Which plan a run executes in a job root that already has one (``runtime/storage/plan_in_force.py``): the rules an
upgrade that migrated its plan relies on, with real compiled plans and this engine's ``migrate`` (no Spark)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.errors import UserError
from planengine.plan import serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.migrate import migrate_plan
from planengine.runtime.storage.job_root import JobRoot
from planengine.runtime.storage.plan_in_force import install_run_plan, plan_to_run

DDL = """CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '/tmp/in', 'format' = 'json');
CREATE TABLE out1 (k STRING, c BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'filesystem',
  'path' = '/tmp/out', 'format' = 'changelog-json')"""


@pytest.fixture(scope="module")
def plans() -> dict[str, CompiledPlan]:
    """``old``: a group aggregate on the Python operator (version 1, as an engine before the JVM versions wrote
    it); ``migrated``: this engine's ``migrate`` of it; ``other``: an unrelated plan (another statement)."""
    env = TableEnvironment()
    env.execute_sql(DDL)
    today = env.compile_plan_sql("INSERT INTO out1 SELECT k, COUNT(*) FROM src GROUP BY k").as_json()
    text = re.sub(r',"strategy":"[A-Z_]+"', "", today)
    old = json.loads(re.sub(r"stream-exec-group-aggregate_\d+", "stream-exec-group-aggregate_1", text))
    old["planId"] = serde.compute_plan_id(old)
    migrated, _ = migrate_plan(old)
    other = env.compile_plan_sql("INSERT INTO out1 SELECT k, SUM(v) FROM src GROUP BY k")
    found = {"old": CompiledPlan(old), "migrated": CompiledPlan(migrated), "other": other}
    assert len({p.plan_id for p in found.values()}) == 3
    return found


def _root(tmp_path: Path, in_force: CompiledPlan | None) -> JobRoot:
    root = JobRoot(str(tmp_path / "root"))
    root.path.mkdir(parents=True, exist_ok=True)
    if in_force is not None:
        root.write_plan_text(in_force.as_json())
    return root


def _snapshot(tmp_path: Path, plan: CompiledPlan) -> str:
    snapshot = tmp_path / "root" / "snapshots" / "s-1"
    snapshot.mkdir(parents=True)
    (snapshot / "plan.json").write_text(plan.as_json(), encoding="utf-8")
    return str(snapshot)


def test_a_root_without_a_plan_runs_the_given_one_and_the_same_plan_runs_again(tmp_path: Path, plans) -> None:
    assert plan_to_run(_root(tmp_path / "a", None), plans["other"], None) is plans["other"]
    assert plan_to_run(_root(tmp_path / "b", plans["old"]), plans["old"], None) is plans["old"]


def test_an_upgrade_runs_the_snapshots_plan_migrated_and_a_rollback_its_plan_again(tmp_path: Path, plans) -> None:
    root = _root(tmp_path, plans["old"])
    snapshot = _snapshot(tmp_path, plans["old"])
    assert plan_to_run(root, plans["migrated"], snapshot) is plans["migrated"]
    install_run_plan(root, plans["migrated"])  # what the upgrade's run does once it holds the run lock
    assert json.loads(root.read_plan_text())["planId"] == plans["migrated"].plan_id
    # The rollback to the snapshot before the upgrade: its own plan, which becomes the plan in force again.
    assert plan_to_run(root, plans["old"], snapshot) is plans["old"]
    install_run_plan(root, plans["old"])
    assert json.loads(root.read_plan_text())["planId"] == plans["old"].plan_id


def test_a_plan_that_is_neither_the_snapshots_nor_its_migration_is_refused(tmp_path: Path, plans) -> None:
    root = _root(tmp_path, plans["old"])
    with pytest.raises(UserError, match=rf"plan {plans['other'].plan_id} is neither the plan of snapshot .*"
                                        rf"\({plans['old'].plan_id}\) nor this engine's migration of it"):
        plan_to_run(root, plans["other"], _snapshot(tmp_path, plans["old"]))


def test_without_a_snapshot_only_the_plan_in_force_or_its_original_runs(tmp_path: Path, plans) -> None:
    root = _root(tmp_path, plans["migrated"])
    # A restart given the plan the job started with (a Kubernetes driver's plan ConfigMap): the plan in force,
    # its migration, runs.
    assert plan_to_run(root, plans["old"], None).plan_id == plans["migrated"].plan_id
    with pytest.raises(UserError, match=f"already runs plan {plans['migrated'].plan_id}; the given plan is "
                                        f"{plans['other'].plan_id}"):
        plan_to_run(root, plans["other"], None)
    # The migrated plan against a root still holding the old one needs the snapshot it converts state from,
    # except for a standby, whose snapshot comes with POST /v1/start (checked again then).
    old_root = _root(tmp_path / "old", plans["old"])
    with pytest.raises(UserError, match="upgrade through a snapshot"):
        plan_to_run(old_root, plans["migrated"], None)
    assert plan_to_run(old_root, plans["migrated"], None, snapshot_pending=True) is plans["migrated"]


def test_a_malformed_plan_in_force_or_snapshot_plan_is_refused_with_its_json_path(tmp_path: Path, plans) -> None:
    """The job root's plan.json and a snapshot's are plans a run may restore: validated like any plan read."""
    broken = json.loads(plans["other"].as_json())
    broken["edges"].append({"source": broken["nodes"][-1]["id"], "target": broken["nodes"][0]["id"]})
    broken["planId"] = serde.compute_plan_id(broken)
    root = JobRoot(str(tmp_path / "root"))
    root.path.mkdir(parents=True)
    root.write_plan_text(serde.dumps(broken))
    with pytest.raises(UserError, match=r"edges: the edges form a cycle"):
        plan_to_run(root, plans["old"], None)
    root.write_plan_text(plans["old"].as_json(), overwrite=True)
    snapshot = tmp_path / "root" / "snapshots" / "s-1"
    snapshot.mkdir(parents=True)
    (snapshot / "plan.json").write_text(serde.dumps(broken))
    with pytest.raises(UserError, match=r"snapshot .* has no readable plan.json: .*edges: the edges form a cycle"):
        plan_to_run(root, plans["migrated"], str(snapshot))
