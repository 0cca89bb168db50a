"""The state machine as a transition table: every step x success / failure / crash-and-restart.

A "crash" is modelled exactly as it happens: the write-ahead status of a step was written, its side effect
may or may not have run, and a fresh operator calls ``decide`` on that status. It must ask for the same
side effect again (each is idempotent) or, when the world shows it done, finish without repeating it.

Statuses here are the JSON the API server stores, and every write goes through the CRD's structural
schema exactly as the API server prunes it (``apply``): a field the state machine relied on but the CRD
does not declare would vanish between steps and fail these tests.
"""

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from planengine_operator.config import OperatorConfig
from planengine_operator.models import JobSpec, JobStatus, SnapshotRef
from planengine_operator.specdiff import config_hash, program_hash
from planengine_operator.statemachine import (
    STEPS,
    DriverObservation,
    JobView,
    Result,
    advance,
    backoff_seconds,
    decide,
    iso,
    retention,
)
from tests.operator.kapi import schema as crd_schema

CRD = Path(__file__).resolve().parents[2] / "crds" / "sparkplanjobs.planengine.io.yaml"
STATUS_SCHEMA = yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"][
    "properties"]["status"]
NOW = datetime(2026, 1, 1, tzinfo=UTC)
CONFIG = OperatorConfig.model_validate({
    "defaultEngineVersion": "0.1", "launcher": "local",
    "engines": {"0.1": {}, "0.2": {}}, "stability": {"minBatches": 3, "window": "60s"},
})
SPEC = {"plan": {"sql": "INSERT INTO s SELECT * FROM t"}, "engineVersion": "0.1"}
ALIVE = DriverObservation(running=True, run_id="r1", healthy=True, batches=10)
# The old driver alive plus a warm standby of the upgrade's new run ("r2", the views' default new run id).
WITH_STANDBY = DriverObservation(running=True, run_id="r1", healthy=True, batches=10, standby_run_id="r2")


def view(status, spec=None, now=NOW, run_id="r2", fleet_allowed=True, source_hash=None):
    return JobView(name="j", namespace="ns", generation=2, spec=JobSpec.model_validate(spec or SPEC),
                   status=JobStatus.model_validate(status), config=CONFIG, job_root="/jobs/ns/j", now=now,
                   new_run_id=run_id, fleet_allowed=fleet_allowed, source_hash=source_hash)


def stored(new: JobStatus) -> dict:
    """The status as the API server stores it: pruned to the CRD and validated against it."""
    data = new.dump()
    dropped = crd_schema.prune(data, STATUS_SCHEMA, "status")
    assert dropped == [], f"the CRD does not declare {dropped}: the API server would drop them"
    assert crd_schema.validate(data, STATUS_SCHEMA, "status") == []
    return data


def apply(status: dict, decision) -> dict:
    """Write a decision's status (in place), through the CRD as the API server would."""
    if decision.status is not None:
        data = stored(decision.status)
        status.clear()
        status.update(data)
    return status


def written(decision) -> dict:
    """What the decision writes (the whole stored status), or {} when it writes nothing."""
    return stored(decision.status) if decision.status is not None else {}


def running(**over):
    spec = JobSpec.model_validate(SPEC)
    status = {"phase": "Running", "planId": "p1", "runId": "r1", "engineVersion": "0.1",
              "specHash": program_hash(spec), "observedGeneration": 2,
              "driver": {"configHash": config_hash(spec), "baselineBatches": 0}}
    status.update(over)
    return status


def step(status, action_kind, result, spec=None, observed=None):
    """Decide (expecting ``action_kind``), then advance with ``result``; returns the new status."""
    status = dict(status)
    if observed is None:
        observed = ALIVE if status.get("runId") else DriverObservation.gone()
        if (status.get("operation") or {}).get("standby") == "ready" and status["operation"]["step"] != "Activate":
            observed = dataclasses.replace(observed, standby_run_id=status["operation"]["runId"])
    decision = decide(view(status, spec), observed)
    apply(status, decision)
    assert decision.action is not None and decision.action.kind == action_kind, decision
    apply(status, advance(view(status, spec), decision.action, result))
    return status


def begin(status, spec=None, observed=ALIVE):
    status = dict(status)
    decision = decide(view(status, spec), observed)
    apply(status, decision)
    return status, decision


# ------------------------------------------------------------------------------------------ start
def test_start_claims_compiles_launches_and_reports_running():
    status, _ = begin({}, observed=DriverObservation.gone())
    assert status["phase"] == "Pending" and status["operation"]["step"] == "Claim"
    status = step(status, "claim", Result(True))
    assert status["operation"]["step"] == "Compile"
    status = step(status, "compile", Result(True, {"planId": "abc"}))
    assert status["planId"] == "abc" and status["operation"]["step"] == "Launch"
    run_id = status["operation"]["runId"]
    status = step(status, "launch", Result(True, {"name": "123", "statusUrl": "http://x"}))
    assert status["phase"] == "Running" and status["runId"] == run_id and "operation" not in status
    assert status["lastStableSpec"]["engineVersion"] == "0.1"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"


@pytest.mark.parametrize("step_name,kind,reason", [
    ("Claim", "claim", "JobRootInUse"), ("Compile", "compile", "CompileFailed")])
def test_start_failures_are_permanent_until_the_spec_changes(step_name, kind, reason):
    status = {"phase": "Pending", "operation": {"type": "Start", "step": step_name, "engineVersion": "0.1"}}
    status = step(status, kind, Result(False, {"permanent": True}, "boom", reason))
    assert status["phase"] == "Failed" and "boom" in status["error"]
    assert {c["type"]: c["reason"] for c in status["conditions"]}["Degraded"] == reason
    assert decide(view(status), DriverObservation.gone()).action is None  # waits for a new generation


def test_launch_after_crash_with_the_driver_running_relaunches_the_same_run_id():
    """The launcher answers a launch of a running run id with that driver (no second one); going through
    the action lets the status record the new run's driver and the snapshot's batch baseline."""
    status = {"phase": "Starting", "planId": "p", "operation": {
        "type": "Start", "step": "Launch", "runId": "r9", "engineVersion": "0.1"}}
    decision = decide(view(status), DriverObservation(running=True, run_id="r9", healthy=True, batches=0))
    assert decision.action.kind == "launch" and decision.action.params["runId"] == "r9"
    status = step(status, "launch", Result(True, {"name": "9", "statusUrl": "http://r9", "baselineBatches": 4}))
    assert status["phase"] == "Running" and status["runId"] == "r9"
    assert status["driver"]["name"] == "9" and status["driver"]["baselineBatches"] == 4


def test_launch_after_crash_without_driver_launches_the_same_run_id():
    status = {"phase": "Starting", "planId": "p", "operation": {
        "type": "Start", "step": "Launch", "runId": "r9", "engineVersion": "0.1"}}
    decision = decide(view(status), DriverObservation.gone())
    assert decision.action.kind == "launch" and decision.action.params["runId"] == "r9"


# ------------------------------------------------------------------------------------------ upgrade
UPGRADE_SPEC = {**SPEC, "engineVersion": "0.2"}


def upgrade_until(step_name):
    """Drive a successful upgrade up to (and including the write-ahead of) ``step_name``."""
    status, _ = begin(running(), UPGRADE_SPEC)
    assert status["operation"]["step"] == "Check" and status["upgrade"]["step"] == "Check"
    script = [("Check", "check", Result(True, {"verdict": "compatible"})),
              ("Standby", "standby", Result(True, {"standby": "ready"})),
              ("Stop", "stop", Result(True, {"snapshot": "s1", "snapshotRef": {"id": "s1", "createdAt": iso(NOW)}})),
              ("Activate", "activate", Result(True, {"name": "2", "statusUrl": "http://y", "baselineBatches": 10}))]
    for name, kind, result in script:
        if name == step_name:
            return status
        status = step(status, kind, result, UPGRADE_SPEC)
    return status


def test_upgrade_happy_path_records_every_step_then_stable_spec():
    status = upgrade_until("Stabilize")
    assert status["operation"]["step"] == "Stabilize" and status["engineVersion"] == "0.2"
    assert status["upgrade"]["snapshot"] == "s1" and status["lastSnapshot"]["id"] == "s1"
    new_run = status["runId"]
    assert new_run != "r1"
    not_yet = DriverObservation(running=True, run_id=new_run, healthy=True, batches=11)
    assert decide(view(status, UPGRADE_SPEC), not_yet).status is None
    enough = DriverObservation(running=True, run_id=new_run, healthy=True, batches=13)
    decision = decide(view(status, UPGRADE_SPEC), enough)
    apply(status, decision)
    assert status["upgrade"]["step"] == "Succeeded" and status["phase"] == "Running"
    assert status["lastStableSpec"]["engineVersion"] == "0.2" and "operation" not in status
    assert [e.reason for e in decision.events] == ["UpgradeSucceeded"]


@pytest.mark.parametrize("verdict,next_step", [("compatible", "Standby"), ("migrate", "Migrate")])
def test_check_verdicts_lead_on(verdict, next_step):
    status, _ = begin(running(), UPGRADE_SPEC)
    status = step(status, "check", Result(True, {"verdict": verdict}), UPGRADE_SPEC)
    assert status["operation"]["step"] == next_step


MOVES = ["node 3: stream-exec-group-aggregate version 2 (TRANSFORM_WITH_STATE) -> 3 (JVM), state accumulators"]


@pytest.mark.parametrize("policy,moves,next_step", [
    ("Auto", MOVES, "Migrate"),  # the upgrade carries the move: migrate, then the new run converts the state
    ("Never", MOVES, "Standby"),  # the default: the plan keeps its node versions
    ("Auto", [], "Standby"),  # nothing on a Python operator: no migration
])
def test_an_upgrade_moves_python_operators_to_the_jvm_only_when_asked(policy, moves, next_step):
    spec = {**UPGRADE_SPEC, "upgrade": {"migrateOperators": policy}}
    status, _ = begin(running(), spec)
    status = step(status, "check", Result(True, {"verdict": "compatible", "stateMoves": moves}), spec)
    assert status["operation"]["step"] == next_step
    if next_step == "Migrate":
        assert "migrateOperators: Auto" in status["upgrade"]["message"] and "node 3" in status["upgrade"]["message"]
        migrate = decide(view(status, spec), ALIVE).action
        assert migrate.kind == "migrate" and migrate.params["runId"] == status["operation"]["runId"]


def test_an_upgrade_that_moved_operators_rolls_back_to_the_old_plan_from_the_untouched_snapshot():
    """The migrated plan lives in the new run only; a failed gate restores the old engine with the job's plan
    from the stop's snapshot, which the move never modified (it converts the state in the new run's fork)."""
    spec = {**UPGRADE_SPEC, "upgrade": {"migrateOperators": "Auto"}}
    status, _ = begin(running(), spec)
    status = step(status, "check", Result(True, {"verdict": "compatible", "stateMoves": MOVES}), spec)
    run_id = status["operation"]["runId"]
    status = step(status, "migrate", Result(True, {"planFile": f"/jobs/ns/j/runs/{run_id}/plan.json"}), spec)
    status = step(status, "standby", Result(True, {"standby": "unsupported"}), spec)
    status = step(status, "stop", Result(True, {"snapshot": "s1", "snapshotRef": {"id": "s1", "createdAt": iso(NOW)}}),
                  spec)
    launch = decide(view(status, spec), DriverObservation.gone()).action
    assert launch.params["planFile"].endswith(f"runs/{run_id}/plan.json") and launch.params["snapshot"] == "s1"
    status = step(status, "launch", Result(True, {"name": "2", "statusUrl": "http://y"}), spec)
    assert status["operation"]["step"] == "Stabilize"
    crashed = DriverObservation.gone(exit_code=1)
    apply(status, decide(view(status, spec, run_id="r3"), crashed))
    assert status["operation"]["step"] == "RollbackStop"
    stop = decide(view(status, spec), crashed).action
    apply(status, advance(view(status, spec), stop, Result(True, {})))
    fork = decide(view(status, spec), DriverObservation.gone()).action
    assert fork.kind == "fork" and fork.params["base"] == "s1"
    apply(status, advance(view(status, spec), fork, Result(True, {"snapshot": "s1", "forked": False})))
    launch = decide(view(status, spec), DriverObservation.gone()).action
    assert launch.kind == "launch" and launch.params["engineVersion"] == "0.1" and launch.params["snapshot"] == "s1"
    assert not launch.params.get("planFile")  # the old engine runs the job's own plan, not the migrated one


def test_a_migrated_upgrade_that_passes_the_gate_publishes_its_plan_as_the_plan_in_force():
    """The new run made its migrated plan the job root's plan in force; after the gate the operator publishes
    it (the <job>-plan ConfigMap) and status.planId names it. An upgrade without migration has no Publish."""
    spec = {**UPGRADE_SPEC, "upgrade": {"migrateOperators": "Auto"}}
    status, _ = begin(running(), spec)
    status = step(status, "check", Result(True, {"verdict": "compatible", "stateMoves": MOVES}), spec)
    run_id = status["operation"]["runId"]
    plan_file = f"/jobs/ns/j/runs/{run_id}/plan.json"
    status = step(status, "migrate", Result(True, {"planFile": plan_file}), spec)
    status = step(status, "standby", Result(True, {"standby": "unsupported"}), spec)
    status = step(status, "stop", Result(True, {"snapshot": "s1", "snapshotRef": {"id": "s1", "createdAt": iso(NOW)}}),
                  spec)
    status = step(status, "launch", Result(True, {"name": "2", "statusUrl": "http://y"}), spec)
    assert status["operation"]["step"] == "Stabilize"
    new_driver = DriverObservation(running=True, run_id=run_id, healthy=True, batches=5)
    apply(status, decide(view(status, spec, run_id="r3"), new_driver))
    assert status["operation"]["step"] == "Publish" and status["upgrade"]["step"] == "Publish"
    publish = decide(view(status, spec), new_driver).action
    assert publish.kind == "publish" and publish.params == {"planFile": plan_file}
    apply(status, advance(view(status, spec), publish, Result(True, {"planId": "p2"})))
    assert status.get("operation") is None and status["phase"] == "Running" and status["planId"] == "p2"
    assert status["upgrade"]["step"] == "Succeeded" and "migrated plan p2" in status["upgrade"]["message"]


def test_migration_writes_the_plan_into_the_new_run_only():
    status, _ = begin(running(), UPGRADE_SPEC)
    status = step(status, "check", Result(True, {"verdict": "migrate"}), UPGRADE_SPEC)
    decision = decide(view(status, UPGRADE_SPEC), ALIVE)
    run_id = status["operation"]["runId"]
    assert decision.action.kind == "migrate" and decision.action.params["runId"] == run_id
    status = step(status, "migrate", Result(True, {"planFile": f"/jobs/ns/j/runs/{run_id}/plan.json"}),
                  UPGRADE_SPEC)
    standby = decide(view(status, UPGRADE_SPEC), ALIVE).action
    assert standby.kind == "standby" and standby.params["planFile"].endswith(f"runs/{run_id}/plan.json")
    status = step(status, "standby", Result(True, {"standby": "unsupported"}), UPGRADE_SPEC)
    status = step(status, "stop", Result(True, {"snapshot": "s1"}), UPGRADE_SPEC)
    launch = decide(view(status, UPGRADE_SPEC), DriverObservation.gone()).action
    assert launch.params["planFile"].endswith(f"runs/{run_id}/plan.json") and launch.params["runId"] == run_id


@pytest.mark.parametrize("result", [
    Result(True, {"verdict": "incompatible", "reason": "state layout changed"}),
    Result(False, {"permanent": True}, "state layout changed", "CheckFailed")])
def test_incompatible_target_is_refused_and_the_old_job_keeps_running(result):
    status, _ = begin(running(), UPGRADE_SPEC)
    status = step(status, "check", result, UPGRADE_SPEC)
    assert status["upgrade"]["step"] == "Refused" and "state layout changed" in status["upgrade"]["message"]
    assert status["phase"] == "Running" and status["runId"] == "r1" and status["engineVersion"] == "0.1"
    assert {c["type"]: c["reason"] for c in status["conditions"]}["Degraded"] == "UpgradeRefused"
    again = decide(view(status, UPGRADE_SPEC), ALIVE)
    assert again.action is None and "operation" not in written(again)  # not retried


def test_a_check_that_gave_no_verdict_is_tried_again_before_the_target_is_refused():
    """A killed check pod (exit 137), a check that timed out or whose pod never started says nothing about the
    plan: the Check step is retried (CHECK_ATTEMPTS in all) and only then refused, with what to do."""
    killed = Result(False, {"permanent": False}, "planengine check exited 137: ", "CheckFailed")
    status, _ = begin(running(), UPGRADE_SPEC)
    for attempt in (1, 2):
        status = step(status, "check", killed, UPGRADE_SPEC)
        assert status["operation"]["step"] == "Check" and status["operation"]["attempt"] == attempt
        assert status["phase"] == "Upgrading" and status["runId"] == "r1"
    status = step(status, "check", killed, UPGRADE_SPEC)
    assert "operation" not in status and status["upgrade"]["step"] == "Refused"
    assert "exited 137" in status["upgrade"]["message"]
    assert "set it to 0.1 to stay" in status["upgrade"]["message"], status["upgrade"]["message"]


@pytest.mark.parametrize("outcome", ["Refused", "RolledBack"])
def test_a_blocked_target_set_back_and_asked_for_again_is_tried_again(outcome):
    """The message after a refusal or rollback says: set engineVersion back to stay, or fix the cause and ask
    again. Setting it back settles the job (Running, not Degraded); asking for the target again then starts a
    new upgrade instead of staying blocked by the old record for good (the fault campaign's round 2)."""
    upgrade = {"from": "0.1", "to": "0.2", "step": outcome, "message": "the new driver exited"}
    status = running(phase="Running" if outcome == "Refused" else "RolledBack", upgrade=upgrade)
    blocked = decide(view(status, UPGRADE_SPEC), ALIVE)
    assert blocked.action is None and "operation" not in apply(status, blocked)
    settled = decide(view(status, SPEC), ALIVE)
    apply(status, settled)
    assert status["phase"] == "Running" and status["upgrade"]["withdrawn"] == "2026-01-01T00:00:00.000000Z"
    assert {c["type"]: c["reason"] for c in status["conditions"]}["Degraded"] == "Healthy"
    again = decide(view(status, UPGRADE_SPEC), ALIVE)
    apply(status, again)
    assert status["phase"] == "Upgrading" and status["operation"]["step"] == "Check"
    assert status["upgrade"] == {"from": "0.1", "to": "0.2", "step": "Check", "started": status["upgrade"]["started"],
                                 "message": "checking the plan on engine 0.2", "fleet": False, "fromRunId": "r1"}


@pytest.mark.parametrize("observed,cause", [
    (DriverObservation.gone(exit_code=1), "exited"),
    (DriverObservation(exit_code=2, message="checkpoint f is damaged (hint: start from an earlier snapshot)"),
     "exited (exit code 2): checkpoint f is damaged (hint: start from an earlier snapshot)"),
    (DriverObservation(running=True, run_id=None, healthy=True, batches=10, exception="boom"), "boom"),
    (DriverObservation(running=True, run_id="r3", problem="pod j-r3: ErrImagePull: no such image"), "ErrImagePull"),
])
def test_gate_failure_rolls_back_to_the_old_engine_from_the_same_snapshot(observed, cause):
    """The target committed nothing beyond S: stop it, the fork shows nothing new, the old engine from S."""
    status = upgrade_until("Stabilize")
    decision = decide(view(status, UPGRADE_SPEC, run_id="r3"), observed)
    apply(status, decision)
    assert status["phase"] == "RollingBack" and status["operation"]["step"] == "RollbackStop"
    assert cause in status["upgrade"]["message"] and status["upgrade"]["step"] == "RollbackStop"
    stop = decide(view(status, UPGRADE_SPEC), observed).action
    assert stop.kind == "stop" and stop.params["how"] == "kill" and stop.params["runId"] == "r2"
    apply(status, advance(view(status, UPGRADE_SPEC), stop, Result(True, {})))
    assert status["operation"]["step"] == "RollbackFork"
    fork = decide(view(status, UPGRADE_SPEC), DriverObservation.gone()).action
    assert fork.kind == "fork" and fork.params == {"engineVersion": "0.2", "reason": "rollback", "base": "s1"}
    apply(status, advance(view(status, UPGRADE_SPEC), fork,
                                Result(True, {"snapshot": "s1", "forked": False})))
    assert status["operation"]["step"] == "Rollback" and status["operation"]["snapshot"] == "s1"
    launch = decide(view(status, UPGRADE_SPEC), DriverObservation.gone()).action
    assert launch.kind == "launch" and launch.params["engineVersion"] == "0.1"
    assert launch.params["snapshot"] == "s1" and launch.params["runId"] == "r3"
    apply(status, advance(view(status, UPGRADE_SPEC), launch, Result(True, {"name": "3"})))
    assert status["phase"] == "RolledBack" and status["engineVersion"] == "0.1"
    assert status["upgrade"]["step"] == "RolledBack" and cause in status["upgrade"]["message"]
    assert "not retried until spec.engineVersion changes: set it to 0.1 to stay" in status["upgrade"]["message"]
    assert status["upgrade"]["snapshot"] == "s1" and status["lastSnapshot"]["id"] == "s1"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"


def rollback_until(step_name, spec=UPGRADE_SPEC):
    """A target that died in Stabilize after committing past S (s1); the rollback driven up to ``step_name``."""
    status = upgrade_until("Stabilize")
    apply(status, decide(view(status, spec, run_id="r3"), DriverObservation.gone(exit_code=1)))
    script = [("RollbackStop", "stop", Result(True, {})),
              ("RollbackFork", "fork", Result(True, {"snapshot": "s2", "forked": True, "snapshotRef": {
                  "id": "s2", "createdAt": iso(NOW), "reason": "rollback", "engineVersion": "0.2"}})),
              ("RollbackCheck", "check", Result(True, {"verdict": "compatible"}))]
    for name, kind, result in script:
        if name == step_name:
            assert status["operation"]["step"] == name
            return status
        status = step(status, kind, result, spec, observed=DriverObservation.gone())
    return status


def test_rollback_resumes_from_the_targets_state_when_it_committed_past_the_upgrade_snapshot():
    status = rollback_until("RollbackCheck")
    assert status["operation"]["snapshot"] == "s2" and status["operation"]["upgradeSnapshot"] == "s1"
    assert status["upgrade"]["snapshot"] == "s2" and status["lastSnapshot"]["id"] == "s2"
    assert {s["id"] for s in status["snapshots"]} == {"s1", "s2"}
    check = decide(view(status, UPGRADE_SPEC), DriverObservation.gone()).action
    assert check.kind == "check" and check.params == {"engineVersion": "0.1", "snapshot": "s2"}
    status = step(status, "check", Result(True, {"verdict": "compatible"}), UPGRADE_SPEC,
                  observed=DriverObservation.gone())
    assert status["operation"]["step"] == "Rollback" and status["upgrade"]["step"] == "Rollback"
    launch = decide(view(status, UPGRADE_SPEC), DriverObservation.gone()).action
    assert launch.kind == "launch" and launch.params["engineVersion"] == "0.1"
    assert launch.params["snapshot"] == "s2" and launch.params["runId"] == "r3"
    decision = advance(view(status, UPGRADE_SPEC), launch, Result(True, {"name": "3", "baselineBatches": 12}))
    apply(status, decision)
    assert status["phase"] == "RolledBack" and status["runId"] == "r3" and status["engineVersion"] == "0.1"
    assert status["upgrade"]["snapshot"] == "s2" and "exited" in status["upgrade"]["message"]
    assert status["driver"]["baselineBatches"] == 12
    assert "from snapshot s2" in decision.events[0].message


def test_retention_keeps_the_snapshot_the_rollback_used():
    """After the rollback, ``upgrade.snapshot`` names the target's fork; later snapshots never drop it."""
    status = rollback_until("Rollback")
    apply(status, advance(view(status, UPGRADE_SPEC), decide(view(status, UPGRADE_SPEC),
                                DriverObservation.gone()).action, Result(True, {"name": "3"})))
    assert status["phase"] == "RolledBack" and status["upgrade"]["snapshot"] == "s2"
    aged = iso(NOW - timedelta(days=30))
    status["snapshots"] = [{"id": f"o{i}", "createdAt": aged} for i in range(12)] + [{"id": "s2", "createdAt": aged}]
    spec = {**SPEC, "snapshotNonce": 1}  # the user went back to 0.1; a manual snapshot
    status, _ = begin(status, spec, DriverObservation(running=True, run_id="r3", healthy=True, batches=20))
    status = step(status, "snapshot", Result(True, {"snapshot": "s9", "snapshotRef": {"id": "s9",
                                                                                       "createdAt": iso(NOW)}}),
                  spec, observed=DriverObservation(running=True, run_id="r3", healthy=True, batches=20))
    kept = [s["id"] for s in status["snapshots"]]
    assert kept == ["s2", "s9"], kept  # every aged snapshot dropped except the one the rollback used


@pytest.mark.parametrize("result,reason", [
    (Result(True, {"verdict": "incompatible", "reason": "state layout changed"}), "state layout changed"),
    (Result(False, {"permanent": True}, "planengine check exited 2: bad snapshot", "CheckFailed"), "bad snapshot"),
])
def test_rollback_is_blocked_when_the_old_engine_cannot_read_the_targets_state(result, reason):
    status = rollback_until("RollbackCheck")
    decision = decide(view(status, UPGRADE_SPEC), DriverObservation.gone())
    apply(status, decision)
    apply(status, (blocked := advance(view(status, UPGRADE_SPEC), decision.action, result)))
    assert status["phase"] == "Failed" and "operation" not in status and status["upgrade"]["step"] == "Failed"
    degraded = {c["type"]: c for c in status["conditions"]}["Degraded"]
    assert degraded["status"] == "True" and degraded["reason"] == "RollbackBlocked"
    message = status["error"]
    assert message == degraded["message"] == status["upgrade"]["message"] and reason in message
    for words in ("committed output past the upgrade snapshot s1", "lose or duplicate", "nothing was started",
                  "spec.engineVersion", "stateless"):
        assert words in message, (words, message)
    assert status["upgrade"]["snapshot"] == "s2" and status["runId"] == "r2"  # no rollback run was recorded
    assert [e.reason for e in blocked.events] == ["RollbackBlocked"]
    assert decide(view(status, UPGRADE_SPEC), DriverObservation.gone()).action is None  # waits for the user


def test_rollback_treats_a_migration_verdict_as_blocked():
    status = rollback_until("RollbackCheck")
    status = step(status, "check", Result(True, {"verdict": "migrate", "reason": "needs migration"}),
                  UPGRADE_SPEC, observed=DriverObservation.gone())
    assert status["phase"] == "Failed" and "needs migration" in status["error"]


@pytest.mark.parametrize("step_name,kind,result", [
    ("RollbackStop", "stop", Result(False, {}, "driver pid 7 did not exit within 30s", "StopTimeout")),
    ("RollbackFork", "fork", Result(False, {"permanent": False}, "planengine snapshot exited 1: io", "SnapshotFailed")),
    ("RollbackCheck", "check", Result(False, {"permanent": False}, "planengine check exited 1: oom", "CheckFailed")),
])
def test_transient_rollback_step_failures_retry_the_same_step(step_name, kind, result):
    status = rollback_until(step_name)
    status = step(status, kind, result, UPGRADE_SPEC, observed=DriverObservation.gone())
    assert status["operation"]["step"] == step_name and status["operation"]["attempt"] == 1
    assert status["phase"] == "RollingBack" and "runId" in status and status["runId"] == "r2"
    again = decide(view(status, UPGRADE_SPEC), DriverObservation.gone()).action
    assert again.kind == kind


TARGET_STILL_RUNNING = DriverObservation(running=True, run_id="r2", healthy=True, batches=14, exception="boom")


@pytest.mark.parametrize("step_name,kind,observed", [
    ("RollbackStop", "stop", TARGET_STILL_RUNNING), ("RollbackStop", "stop", DriverObservation.gone()),
    ("RollbackFork", "fork", DriverObservation.gone()), ("RollbackCheck", "check", DriverObservation.gone()),
    ("Rollback", "launch", DriverObservation.gone()),
    ("Rollback", "launch", DriverObservation(running=True, run_id="r3", healthy=True, batches=12)),
])
def test_crash_during_a_rollback_step_repeats_the_same_step(step_name, kind, observed):
    status = rollback_until(step_name)
    first = decide(view(status, UPGRADE_SPEC), observed)
    again = decide(view(dict(status), UPGRADE_SPEC, run_id="r7"), observed)  # a new operator process
    assert first.action == again.action and first.action.kind == kind and first.status is again.status is None
    if kind == "launch":
        assert first.action.params["runId"] == "r3" and first.action.params["snapshot"] == "s2"


def test_stateless_upgrade_rolls_back_without_a_fork():
    spec = {**UPGRADE_SPEC, "upgradeMode": "stateless"}
    status, _ = begin(running(), spec)
    status = step(status, "check", Result(True, {"verdict": "compatible"}), spec)
    status = step(status, "standby", Result(True, {"standby": "unsupported"}), spec)
    status = step(status, "stop", Result(True, {}), spec)
    status = step(status, "launch", Result(True, {"name": "2"}), spec, observed=DriverObservation.gone())
    assert status["operation"]["step"] == "Stabilize"
    apply(status, decide(view(status, spec, run_id="r3"), DriverObservation.gone(exit_code=1)))
    status = step(status, "stop", Result(True, {}), spec, observed=DriverObservation.gone())
    assert status["operation"]["step"] == "Rollback"
    launch = decide(view(status, spec), DriverObservation.gone()).action
    assert launch.kind == "launch" and launch.params["snapshot"] is None and launch.params["stateless"] is True


def test_rollback_disabled_fails_the_upgrade_without_starting_anything():
    spec = {**UPGRADE_SPEC, "rollback": {"enabled": False}}
    status = upgrade_until("Stabilize")
    apply(status, decide(view(status, spec), DriverObservation.gone(exit_code=1)))
    assert status["phase"] == "Failed" and "operation" not in status and status["upgrade"]["step"] == "Failed"


def test_gate_times_out_without_enough_batches():
    status = upgrade_until("Stabilize")
    later = NOW + timedelta(seconds=61)
    observed = DriverObservation(running=True, run_id=status["runId"], healthy=True, batches=11)
    decision = decide(view(status, UPGRADE_SPEC, now=later), observed)
    assert written(decision)["phase"] == "RollingBack" and "1 of 3 batches" in written(decision)["upgrade"]["message"]


def test_an_idle_target_passes_the_gate_at_the_end_of_its_window():
    """A source quiet during the window (a topic at night) commits nothing; every query active and caught up is
    healthy, and the message says the gate saw an idle job, not enough batches."""
    status = upgrade_until("Stabilize")
    observed = DriverObservation(running=True, run_id=status["runId"], healthy=True, batches=10, idle=True)
    assert decide(view(status, UPGRADE_SPEC, now=NOW + timedelta(seconds=30)), observed).status is None  # waits
    decision = decide(view(status, UPGRADE_SPEC, now=NOW + timedelta(seconds=61)), observed)
    apply(status, decision)
    assert status["phase"] == "Running" and status["upgrade"]["step"] == "Succeeded"
    assert "idle: every query caught up, no input arrived in 60s" in status["upgrade"]["message"]
    assert "0 of 3 batches committed" in status["upgrade"]["message"]


def test_enough_batches_pass_the_gate_before_the_window_ends():
    status = upgrade_until("Stabilize")
    observed = DriverObservation(running=True, run_id=status["runId"], healthy=True, batches=13, idle=True)
    apply(status, decide(view(status, UPGRADE_SPEC, now=NOW + timedelta(seconds=5)), observed))
    assert status["upgrade"]["step"] == "Succeeded"
    assert "3 of 3 batches committed, no exception" in status["upgrade"]["message"]


@pytest.mark.parametrize("observed,why", [
    (DriverObservation(running=True, run_id="r2", healthy=True, batches=11, idle=False,
                       not_idle="query q1 has input available"), "not idle: query q1 has input available"),
    (DriverObservation(running=True, run_id="r2", healthy=True, batches=11),
     "does not report whether its queries are caught up"),
    (DriverObservation(running=True, run_id="r2"), "status API did not answer"),
])
def test_a_target_neither_committing_nor_idle_rolls_back_saying_why(observed, why):
    status = upgrade_until("Stabilize")
    apply(status, decide(view(status, UPGRADE_SPEC, now=NOW + timedelta(seconds=61)), observed))
    assert status["phase"] == "RollingBack" and why in status["upgrade"]["message"]
    assert "only 1 of 3 batches committed within 60s" in status["upgrade"]["message"] or "only 0 of 3" in \
        status["upgrade"]["message"]


def test_an_idle_target_with_a_migrated_plan_publishes_it():
    status = upgrade_until("Stabilize")
    status["operation"]["planFile"] = "runs/r2/plan.json"
    observed = DriverObservation(running=True, run_id=status["runId"], healthy=True, batches=10, idle=True)
    decision = decide(view(status, UPGRADE_SPEC, now=NOW + timedelta(seconds=61)), observed)
    assert written(decision)["operation"]["step"] == "Publish"
    assert "idle: every query caught up" in written(decision)["operation"]["message"]


def cold_upgrade_until(step_name):
    """An upgrade to an engine without standby: Check -> Standby (unsupported) -> Stop -> Launch."""
    status, _ = begin(running(), UPGRADE_SPEC)
    status = step(status, "check", Result(True, {"verdict": "compatible"}), UPGRADE_SPEC)
    status = step(status, "standby", Result(True, {"standby": "unsupported"}), UPGRADE_SPEC)
    assert status["operation"]["standby"] == "unsupported" and status["operation"]["step"] == "Stop"
    if step_name == "Stop":
        return status
    return step(status, "stop", Result(True, {"snapshot": "s1"}), UPGRADE_SPEC)


def test_new_engine_failing_to_start_rolls_back():
    status = cold_upgrade_until("Launch")
    assert status["operation"]["step"] == "Launch"
    status = step(status, "launch", Result(False, {}, "image pull failed", "LaunchFailed"), UPGRADE_SPEC)
    assert status["operation"]["step"] == "RollbackStop" and status["operation"]["targetEngine"] == "0.2"


@pytest.mark.parametrize("step_name,kind,observed", [
    ("Check", "check", ALIVE), ("Standby", "standby", ALIVE), ("Standby", "standby", WITH_STANDBY),
    ("Stop", "stop", WITH_STANDBY), ("Activate", "activate", dataclasses.replace(WITH_STANDBY, running=False))])
def test_crash_after_the_write_ahead_repeats_the_same_step(step_name, kind, observed):
    status = upgrade_until(step_name)
    first = decide(view(status, UPGRADE_SPEC), observed).action
    again = decide(view(dict(status), UPGRADE_SPEC), observed).action  # a new operator process
    assert first == again and first.kind == kind


def test_cold_launch_after_crash_repeats_the_same_run():
    status = cold_upgrade_until("Launch")
    first = decide(view(status, UPGRADE_SPEC), DriverObservation.gone()).action
    again = decide(view(dict(status), UPGRADE_SPEC, run_id="r7"), DriverObservation.gone()).action
    assert first == again and first.kind == "launch" and first.params["runId"] == "r2"


def test_stop_after_crash_when_the_driver_is_already_gone_still_asks_for_the_snapshot():
    status = upgrade_until("Stop")
    gone_with_standby = DriverObservation(standby_run_id="r2")  # old driver gone, the standby still there
    action = decide(view(status, UPGRADE_SPEC), gone_with_standby).action
    assert action.kind == "stop" and action.params["how"] == "snapshot"
    assert action.params["since"] == status["operation"]["started"]


def test_transient_failure_retries_the_same_step_with_backoff():
    status = upgrade_until("Stop")
    status = step(status, "stop", Result(False, {}, "timeout", "StopTimeout"), UPGRADE_SPEC)
    assert status["operation"]["step"] == "Stop" and status["operation"]["attempt"] == 1


# ------------------------------------------------------------------------------------------ warm standby
def test_standby_is_started_after_the_check_and_before_the_stop():
    status, _ = begin(running(), UPGRADE_SPEC)
    status = step(status, "check", Result(True, {"verdict": "compatible"}), UPGRADE_SPEC)
    op = status["operation"]
    assert op["step"] == "Standby" and status["upgrade"]["step"] == "Standby" and op["runId"] == "r2"
    action = decide(view(status, UPGRADE_SPEC), ALIVE).action
    assert action.kind == "standby" and action.params == {"runId": "r2", "engineVersion": "0.2", "planFile": None}
    assert status["runId"] == "r1" and status["phase"] == "Upgrading"  # the old run is untouched so far
    status = step(status, "standby", Result(True, {"standby": "ready"}), UPGRADE_SPEC)
    assert status["operation"]["step"] == "Stop" and status["operation"]["standby"] == "ready"
    stop = decide(view(status, UPGRADE_SPEC), WITH_STANDBY).action
    assert stop.kind == "stop" and stop.params["runId"] == "r1" and stop.params["how"] == "snapshot"
    status = step(status, "stop", Result(True, {"snapshot": "s1", "snapshotRef": {"id": "s1"}}), UPGRADE_SPEC)
    activate = decide(view(status, UPGRADE_SPEC), dataclasses.replace(WITH_STANDBY, running=False)).action
    assert activate.kind == "activate"
    assert activate.params == {"runId": "r2", "engineVersion": "0.2", "snapshot": "s1", "stateless": False}
    status = step(status, "activate", Result(True, {"name": "7", "statusUrl": "http://s", "baselineBatches": 10}),
                  UPGRADE_SPEC)
    assert status["operation"]["step"] == "Stabilize" and status["runId"] == "r2"
    assert status["driver"]["name"] == "7" and status["driver"]["baselineBatches"] == 10


@pytest.mark.parametrize("error,reason", [("exited (code 1) before it was ready", "StandbyFailed"),
                                          ("not ready within 300s", "StandbyTimeout")])
def test_standby_failure_refuses_the_upgrade_and_keeps_the_old_run(error, reason):
    status = upgrade_until("Standby")
    status = step(status, "standby", Result(False, {}, error, reason), UPGRADE_SPEC)
    assert status["upgrade"]["step"] == "Refused" and error in status["upgrade"]["message"]
    assert status["phase"] == "Running" and status["runId"] == "r1" and status["engineVersion"] == "0.1"
    assert "operation" not in status and "lastSnapshot" not in status  # nothing was stopped
    assert {c["type"]: c["reason"] for c in status["conditions"]}["Degraded"] == "StandbyFailed"
    again = decide(view(status, UPGRADE_SPEC), ALIVE)
    assert again.action is None and "operation" not in written(again)  # not retried until the spec changes


def test_standby_unsupported_falls_back_to_a_cold_launch_after_the_stop():
    status = cold_upgrade_until("Launch")
    launch = decide(view(status, UPGRADE_SPEC), DriverObservation.gone()).action
    assert launch.kind == "launch" and launch.params["snapshot"] == "s1" and launch.params["runId"] == "r2"


def test_standby_lost_at_activate_falls_back_to_a_cold_launch_in_a_fresh_run():
    status = upgrade_until("Activate")
    assert status["operation"]["step"] == "Activate"
    decision = decide(view(status, UPGRADE_SPEC), DriverObservation.gone())
    apply(status, decision)
    apply(status, advance(view(status, UPGRADE_SPEC, run_id="r5"), decision.action,
                                Result(False, {}, "the standby of run r2 is gone", "StandbyLost")))
    op = status["operation"]
    assert op["step"] == "Launch" and op["runId"] == "r5" and op["standby"] == "lost" and op["snapshot"] == "s1"
    launch = decide(view(status, UPGRADE_SPEC), DriverObservation.gone()).action
    assert launch.kind == "launch" and launch.params["runId"] == "r5" and launch.params["snapshot"] == "s1"


def test_standby_vanished_before_the_stop_is_started_again_without_stopping_the_old_run():
    status = upgrade_until("Stop")
    decision = decide(view(status, UPGRADE_SPEC), ALIVE)  # no standby observed
    assert decision.action is None and written(decision)["operation"]["step"] == "Standby"
    assert [e.reason for e in decision.events] == ["StandbyLost"]
    apply(status, decision)
    action = decide(view(status, UPGRADE_SPEC), ALIVE).action
    assert action.kind == "standby" and action.params["runId"] == "r2"


@pytest.mark.parametrize("operation", [
    None,  # steady state after a restart: nothing wants a standby
    {"type": "Upgrade", "step": "Standby", "runId": "r9", "engineVersion": "0.2"},  # another run's standby
    {"type": "Upgrade", "step": "Stabilize", "runId": "r2", "engineVersion": "0.2"},  # past the handover
    {"type": "Restart", "step": "Stop"},
])
def test_a_standby_nobody_expects_is_killed_first(operation):
    status = running(operation=operation) if operation else running()
    decision = decide(view(status, UPGRADE_SPEC if operation else SPEC), WITH_STANDBY)
    assert decision.action.kind == "discard" and decision.action.params == {"runId": "r2"}
    assert decision.status is None
    assert advance(view(status), decision.action, Result(True)).status is None


@pytest.mark.parametrize("step_name", ["Standby", "Stop", "Fork", "Activate"])
def test_the_standby_of_the_operation_run_is_reused_after_a_restart(step_name):
    status = running(operation={"type": "Upgrade", "step": step_name, "runId": "r2", "engineVersion": "0.2",
                                "standby": "ready", "snapshot": "s1"})
    action = decide(view(status, UPGRADE_SPEC), WITH_STANDBY).action
    assert action.kind == {"Standby": "standby", "Stop": "stop", "Fork": "fork", "Activate": "activate"}[step_name]


@pytest.mark.parametrize("standby", ["ready", "unsupported"])
@pytest.mark.parametrize("mode,expected", [("snapshot", ("snapshot", "Launch")),
                                           ("last-checkpoint", ("kill", "Fork")),
                                           ("stateless", ("kill", "Launch"))])
def test_upgrade_modes(mode, expected, standby):
    spec = {**UPGRADE_SPEC, "upgradeMode": mode}
    status, _ = begin(running(), spec)
    status = step(status, "check", Result(True, {"verdict": "compatible"}), spec)
    status = step(status, "standby", Result(True, {"standby": standby}), spec)
    observed = WITH_STANDBY if standby == "ready" else ALIVE
    stop = decide(view(status, spec), observed).action
    assert stop.params["how"] == expected[0]
    snap = {"snapshot": "s1"} if mode == "snapshot" else {}
    apply(status, advance(view(status, spec), stop, Result(True, snap)))
    start = "Activate" if standby == "ready" else "Launch"
    assert status["operation"]["step"] == (expected[1] if expected[1] == "Fork" else start)
    if mode == "last-checkpoint":
        fork = decide(view(status, spec), dataclasses.replace(observed, running=False)).action
        apply(status, advance(view(status, spec), fork, Result(True, {"snapshot": "s2"})))
        assert status["operation"]["step"] == start and status["operation"]["snapshot"] == "s2"
    if mode == "stateless":
        launch = decide(view(status, spec), dataclasses.replace(observed, running=False)).action
        assert launch.kind == start.lower() and launch.params["stateless"] is True


# ------------------------------------------------------------------------------------------ fleet
def test_fleet_upgrade_waits_for_a_slot():
    spec = {"plan": SPEC["plan"]}
    status = running(specHash=program_hash(JobSpec.model_validate(spec)))
    cfg_view = view(status, spec, fleet_allowed=False)
    cfg = CONFIG.model_copy(update={"defaultEngineVersion": "0.2"})
    blocked = decide(JobView(**{**cfg_view.__dict__, "config": cfg}), ALIVE)
    assert blocked.action is None and "operation" not in written(blocked)
    allowed = decide(JobView(**{**cfg_view.__dict__, "config": cfg, "fleet_allowed": True}), ALIVE)
    assert written(allowed)["upgrade"]["fleet"] is True and written(allowed)["operation"]["type"] == "Upgrade"


# ------------------------------------------------------------------------------------------ others
def test_unknown_engine_version_is_reported_not_attempted():
    decision = decide(view(running(), {**SPEC, "engineVersion": "9.9"}), ALIVE)
    assert decision.action is None and "9.9 is not in the operator's engine catalog" in written(decision)["error"]
    assert [e.reason for e in decision.events] == ["UnknownEngineVersion"]


def test_plan_change_is_refused_with_advice():
    decision = decide(view(running(), {**SPEC, "plan": {"sql": "INSERT INTO s SELECT 1"}}), ALIVE)
    assert "new SparkPlanJob" in written(decision)["error"] and "stateless" in written(decision)["error"]
    assert decision.action is None


def test_suspend_stops_with_snapshot_and_resume_starts_from_it():
    spec = {**SPEC, "state": "suspended"}
    status, _ = begin(running(), spec)
    assert status["phase"] == "Suspending"
    status = step(status, "stop", Result(True, {"snapshot": "s7", "snapshotRef": {"id": "s7"}}), spec)
    assert status["phase"] == "Suspended" and status["lastSnapshot"]["id"] == "s7"
    status, _ = begin(status, SPEC, DriverObservation.gone())
    launch = decide(view(status), DriverObservation.gone()).action
    assert launch.kind == "launch" and launch.params["snapshot"] == "s7"


def test_dead_driver_restarts_from_a_fork_with_backoff():
    status, decision = begin(running(), observed=DriverObservation.gone(exit_code=137))
    assert status["operation"]["type"] == "Restart" and status["restarts"]["count"] == 1
    assert "exit code 137" in decision.events[0].message
    stop = decide(view(status), DriverObservation.gone()).action
    assert stop.params["how"] == "kill"
    apply(status, advance(view(status), stop, Result(True, {})))
    assert status["operation"]["step"] == "Fork"
    # A second failure right away waits for the backoff.
    crashed = running(restarts={"count": 1, "lastAt": iso(NOW)})
    assert decide(view(crashed), DriverObservation.gone()).action is None
    assert "operation" not in written(decide(view(crashed), DriverObservation.gone()))
    assert backoff_seconds(3, CONFIG) == 40.0


def test_a_driver_pod_that_cannot_start_is_a_failing_driver_with_its_reason():
    """A pod Pending in ErrImagePull is "running" to the launcher (it exists) but will not run by itself."""
    stuck = DriverObservation(running=True, run_id="r1", problem="pod j-r1: ErrImagePull: image x not found")
    status, decision = begin(running(), observed=stuck)
    assert status["operation"]["type"] == "Restart" and "cannot start" in status["restarts"]["reason"]
    assert "ErrImagePull" in decision.events[0].message
    degraded = {c["type"]: c for c in status["conditions"]}["Degraded"]
    assert degraded["reason"] == "DriverFailed" and "ErrImagePull" in degraded["message"]


def test_a_driver_that_exited_with_an_error_says_why_in_the_restart_reason_and_the_degraded_condition():
    """The driver's own error (its pod's termination message: ``failure_message``) is what a person needs; the exit
    code alone is not (campaign run 7, round 6: a damaged checkpoint restarted for minutes as "exit code 2")."""
    said = "the checkpoint file q/commits/7 is damaged (hint: start from a snapshot taken before the damage)"
    status, decision = begin(running(), observed=DriverObservation(exit_code=2, message=said))
    assert status["operation"]["type"] == "Restart"
    assert status["restarts"]["reason"] == f"driver of run r1 is gone (exit code 2): {said}"
    assert said in decision.events[0].message
    degraded = {c["type"]: c for c in status["conditions"]}["Degraded"]
    assert degraded["reason"] == "DriverFailed" and "taken before the damage" in degraded["message"]


def test_a_driver_failing_the_same_way_restart_after_restart_is_left_failed_with_its_error():
    """``timing.restartLimit`` (5) failures in a row with the same error and no batch between: the next one ends
    ``Failed`` with the error and how to start again, instead of a restart loop that never ends. Another error
    restarts as before, and a person's restart (``spec.restartNonce``) starts the count again."""
    said = "the checkpoint file q/commits/7 is damaged (hint: start from a snapshot taken before the damage)"
    failing = DriverObservation(exit_code=2, message=said)
    earlier = {"count": 5, "lastAt": iso(NOW - timedelta(hours=1)),
               "reason": f"driver of run r-20261207T225632Z-b9e3 is gone (exit code 2): {said}"}
    status, decision = begin(running(runId="r-20261207T225659Z-1f32", restarts=earlier), observed=failing)
    assert status["phase"] == "Failed" and "operation" not in status
    assert said in status["error"] and "6 times in a row" in status["error"] and "restartNonce" in status["error"]
    assert decision.events[0].reason == "DriverFailedRepeatedly"
    stays = decide(view(status), failing)  # it stays Failed until the spec changes
    assert stays.status is None and stays.action is None

    other = DriverObservation(exit_code=137)
    restarted, _ = begin(running(runId="r-20261207T225659Z-1f32", restarts=earlier), observed=other)
    assert restarted["operation"]["type"] == "Restart" and restarted["restarts"]["count"] == 6

    asked = {**SPEC, "restartNonce": 1}
    again, _ = begin({**status, "observedGeneration": 1}, asked, observed=DriverObservation.gone())
    assert again["operation"]["type"] == "Restart" and again["restarts"]["count"] == 0


def test_a_retried_step_shows_its_reason_as_the_degraded_condition():
    status, _ = begin(running(), observed=DriverObservation.gone(exit_code=137))
    stop = decide(view(status), DriverObservation.gone()).action
    apply(status, advance(view(status), stop, Result(False, {}, "tool pod j-snapshot cannot start: ErrImagePull: x",
                                                     "ErrImagePull")))
    assert status["operation"]["step"] == "Stop" and status["operation"]["attempt"] == 1
    degraded = {c["type"]: c for c in status["conditions"]}["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "ErrImagePull")
    assert "cannot start" in degraded["message"]


def test_snapshot_nonce_takes_a_snapshot_and_records_the_nonce():
    spec = {**SPEC, "snapshotNonce": 5}
    status, _ = begin(running(), spec)
    assert status["operation"]["type"] == "Snapshot"
    status = step(status, "snapshot", Result(True, {"snapshot": "s9", "snapshotRef": {"id": "s9"}}), spec)
    assert status["snapshotNonce"] == 5 and status["lastSnapshot"]["id"] == "s9"
    assert decide(view(status, spec), ALIVE).action is None


def test_retention_keeps_newest_and_pinned_and_drops_old():
    snaps = [SnapshotRef(id=f"s{i}", createdAt=iso(NOW - timedelta(days=10 - i))) for i in range(6)]
    keep, drop = retention(snaps, NOW, max_count=2, max_age=7 * 86400, pinned={"s0"})
    assert [s.id for s in keep] == ["s0", "s4", "s5"]
    assert [s.id for s in drop] == ["s1", "s2", "s3"]


# ------------------------------------------------------------------------------------------ the step table
# (operation, step) -> (action asked for, outcome after success, outcome after a transient failure); an
# outcome is the next step, or the phase once the operation ended. A row added to protocol.STEPS needs one here.
TABLE = {
    ("Start", "Claim"): ("claim", "Compile", "Failed"),
    ("Start", "Compile"): ("compile", "Launch", "Failed"),
    ("Start", "Check"): ("check", "Launch", "Check"),  # spec.initialSnapshot
    ("Start", "Launch"): ("launch", "Running", "Launch"),
    ("Restart", "Stop"): ("stop", "Launch", "Stop"),
    ("Restart", "Fork"): ("fork", "Launch", "Fork"),
    ("Restart", "Launch"): ("launch", "Running", "Launch"),
    ("Suspend", "Stop"): ("stop", "Suspended", "Stop"),
    ("Resume", "Launch"): ("launch", "Running", "Launch"),
    ("Snapshot", "Snapshot"): ("snapshot", "Running", "Snapshot"),
    ("Upgrade", "Check"): ("check", "Standby", "Check"),  # no verdict: tried again (refused after CHECK_ATTEMPTS)
    ("Upgrade", "Migrate"): ("migrate", "Standby", "Running"),
    ("Upgrade", "Standby"): ("standby", "Stop", "Running"),
    ("Upgrade", "Stop"): ("stop", "Activate", "Stop"),
    ("Upgrade", "Fork"): ("fork", "Activate", "Fork"),
    ("Upgrade", "Activate"): ("activate", "Stabilize", "Launch"),  # the standby is lost: cold launch
    ("Upgrade", "Launch"): ("launch", "Stabilize", "RollbackStop"),
    ("Upgrade", "Stabilize"): (None, None, None),  # decides from the observation alone
    ("Upgrade", "Publish"): ("publish", "Running", "Publish"),  # a migrated plan into the <job>-plan ConfigMap
    ("Upgrade", "RollbackStop"): ("stop", "RollbackFork", "RollbackStop"),
    ("Upgrade", "RollbackFork"): ("fork", "RollbackCheck", "RollbackFork"),
    ("Upgrade", "RollbackCheck"): ("check", "Rollback", "RollbackCheck"),
    ("Upgrade", "Rollback"): ("launch", "RolledBack", "Rollback"),
}
OK_VALUES = {"claim": {}, "compile": {"planId": "p9"}, "check": {"verdict": "compatible"},
             "migrate": {"planFile": "/jobs/ns/j/runs/r2/plan.json"}, "standby": {"standby": "ready"},
             "stop": {"snapshot": "s1", "snapshotRef": {"id": "s1"}}, "activate": {"name": "9"},
             "fork": {"snapshot": "s2", "forked": True, "snapshotRef": {"id": "s2"}},
             "snapshot": {"snapshot": "s3", "snapshotRef": {"id": "s3"}}, "launch": {"name": "9"},
             "publish": {"planId": "p9"}}


def table_status(type_, step):
    """A job whose status.operation is at (type_, step), with every field that operation carries."""
    op = {"type": type_, "step": step, "started": iso(NOW), "stepStarted": iso(NOW), "attempt": 0,
          "runId": "r2", "engineVersion": "0.2" if type_ == "Upgrade" else "0.1"}
    if type_ == "Upgrade":
        op.update(standby="ready", snapshot="s1")
        if step == "Publish":
            op.update(planFile="/jobs/ns/j/runs/r2/plan.json")
        if step.startswith("Rollback"):
            op.update(engineVersion="0.1", targetEngine="0.2", targetRunId="r2", upgradeSnapshot="s1", runId="r3",
                      cause="the new driver exited", standby=None)
        upgrade = {"from": "0.1", "to": "0.2", "step": step, "started": iso(NOW), "snapshot": "s1"}
        return running(operation={k: v for k, v in op.items() if v is not None}, upgrade=upgrade, phase="Upgrading")
    if type_ == "Start":
        if step == "Check":
            op["snapshotPath"] = "/jobs/ns/other/snapshots/s0"
        return {"phase": "Pending", "operation": op}
    return running(operation=op)


def observed_at(type_, step):
    if type_ == "Upgrade" and step in ("Standby", "Stop", "Fork", "Activate"):
        return WITH_STANDBY
    return ALIVE if type_ != "Start" else DriverObservation.gone()


def outcome(status):
    return (status.get("operation") or {}).get("step") or status.get("phase")


def test_every_step_of_the_protocol_has_a_row_here():
    assert set(TABLE) == set(STEPS)


@pytest.mark.parametrize("row", list(TABLE), ids=lambda row: "/".join(row))
def test_each_step_asks_for_its_action_again_after_a_crash(row):
    """The write-ahead status of a step, read by this operator and by a fresh one: the same action."""
    status = table_status(*row)
    first = decide(view(status, UPGRADE_SPEC), observed_at(*row))
    again = decide(view(dict(status), UPGRADE_SPEC, run_id="r7"), observed_at(*row))
    assert first.action == again.action
    assert (first.action.kind if first.action else None) == TABLE[row][0]


@pytest.mark.parametrize("row", [row for row, (kind, *_) in TABLE.items() if kind], ids=lambda row: "/".join(row))
@pytest.mark.parametrize("ok", [True, False], ids=["success", "transient-failure"])
def test_each_step_leads_to_its_next_step(row, ok):
    status = table_status(*row)
    decision = decide(view(status, UPGRADE_SPEC), observed_at(*row))
    apply(status, decision)
    kind = decision.action.kind
    result = Result(True, OK_VALUES[kind]) if ok else Result(False, {}, "boom", "SomethingFailed")
    apply(status, advance(view(status, UPGRADE_SPEC, run_id="r5"), decision.action, result))
    assert outcome(status) == TABLE[row][1 if ok else 2], status


def test_a_step_no_row_knows_is_dropped_and_the_job_reclassified():
    status = running(operation={"type": "Upgrade", "step": "Teleport", "runId": "r2"})
    decision = decide(view(status), ALIVE)
    assert decision.action is None and "operation" not in written(decision)
    assert "Teleport" in written(decision)["error"]


# ------------------------------------------------------------------------------------------ GitOps additions
CM_SPEC = {"plan": {"configMapRef": {"name": "etl"}}, "engineVersion": "0.1"}


def test_every_status_names_the_engine_the_job_is_steered_to():
    status, _ = begin({}, observed=DriverObservation.gone())
    assert status["desiredEngineVersion"] == "0.1"
    following = {k: v for k, v in SPEC.items() if k != "engineVersion"}  # follows the operator's default
    assert written(decide(view(running(), following), ALIVE))["desiredEngineVersion"] == "0.1"
    status, _ = begin(running(), UPGRADE_SPEC)
    assert status["desiredEngineVersion"] == "0.2" and status["engineVersion"] == "0.1"


def test_compile_records_the_source_hash():
    status, _ = begin({}, CM_SPEC, observed=DriverObservation.gone())
    status = step(status, "claim", Result(True), CM_SPEC)
    status = step(status, "compile", Result(True, {"planId": "abc", "sourceHash": "h1"}), CM_SPEC)
    assert status["sourceHash"] == "h1" and status["operation"]["step"] == "Launch"


def test_an_edited_script_configmap_is_a_refused_program_change_and_the_run_stays_supervised():
    spec = JobSpec.model_validate(CM_SPEC)
    status = running(specHash=program_hash(spec), sourceHash="h1")
    # The ConfigMap still holds what was compiled (or is not known): nothing to do.
    for observed_hash in ("h1", None):
        assert decide(view(status, CM_SPEC, source_hash=observed_hash), ALIVE).action is None
        assert "error" not in written(decide(view(status, CM_SPEC, source_hash=observed_hash), ALIVE))
    # Edited: refused (upgradeMode snapshot), said once, with the ConfigMap and both hashes.
    decision = decide(view(status, CM_SPEC, source_hash="h2"), ALIVE)
    assert decision.action is None
    apply(status, decision)
    assert "etl/script.sql" in status["error"] and "h1" in status["error"] and "h2" in status["error"]
    assert "stateless" in status["error"]
    degraded = {c["type"]: c for c in status["conditions"]}["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "PlanChangeRefused")
    assert [e.reason for e in decision.events] == ["PlanChangeRefused"]
    assert status["phase"] == "Running" and "operation" not in status
    # Afterwards the old run is still watched: a steady tick writes nothing, a dead driver is restarted.
    again = decide(view(status, CM_SPEC, source_hash="h2"), ALIVE)
    assert again.status is None and again.action is None and again.events == []
    restart = decide(view(status, CM_SPEC, source_hash="h2"), DriverObservation.gone(exit_code=1))
    assert written(restart)["operation"]["type"] == "Restart"
    # The old content back: the problem is gone.
    back = decide(view(status, CM_SPEC, source_hash="h1"), ALIVE)
    assert "error" not in written(back)
    assert {c["type"]: c for c in written(back)["conditions"]}["Degraded"]["status"] == "False"


def test_an_edited_script_configmap_under_stateless_recompiles():
    spec_dict = {**CM_SPEC, "upgradeMode": "stateless"}
    status = running(specHash=program_hash(JobSpec.model_validate(spec_dict)), sourceHash="h1")
    status, decision = begin(status, spec_dict)
    assert "operation" not in status  # unchanged content
    decision = decide(view(status, spec_dict, source_hash="h2"), ALIVE)
    op = written(decision)["operation"]
    assert (op["type"], op["step"], op["recompile"]) == ("Start", "Claim", True)


INITIAL = "/jobs/ns/source/snapshots/s7"
INITIAL_SPEC = {**SPEC, "initialSnapshot": {"uri": f"file://{INITIAL}"}}


def test_initial_snapshot_is_checked_then_forked_by_the_first_run():
    status, _ = begin({}, INITIAL_SPEC, observed=DriverObservation.gone())
    assert status["operation"]["snapshotPath"] == INITIAL  # file:// dropped: a path the engine opens
    status = step(status, "claim", Result(True), INITIAL_SPEC)
    status = step(status, "compile", Result(True, {"planId": "abc"}), INITIAL_SPEC)
    assert status["operation"]["step"] == "Check"
    decision = decide(view(status, INITIAL_SPEC), DriverObservation.gone())
    assert decision.action.kind == "check" and decision.action.params["snapshotPath"] == INITIAL
    status = step(status, "check", Result(True, {"verdict": "compatible"}), INITIAL_SPEC)
    assert status["operation"]["step"] == "Launch" and status["operation"]["runId"]
    decision = decide(view(status, INITIAL_SPEC), DriverObservation.gone())
    assert decision.action.kind == "launch" and decision.action.params["snapshotPath"] == INITIAL
    result = Result(True, {"name": "1", "statusUrl": "http://x"})
    advanced = advance(view(status, INITIAL_SPEC), decision.action, result)
    assert INITIAL in advanced.events[0].message
    apply(status, advanced)
    assert status["phase"] == "Running" and "operation" not in status
    # A later restart of the running job starts from the job's own state, never from the initial snapshot.
    restart, _ = begin(status, {**INITIAL_SPEC, "restartNonce": 1})
    assert "snapshotPath" not in restart["operation"]


@pytest.mark.parametrize(("result", "reason"), [
    (Result(True, {"verdict": "incompatible", "reason": "snapshot is incomplete: no manifest.json"}),
     "InitialSnapshotIncompatible"),
    (Result(False, {"permanent": True}, "planengine check exited 2: no such snapshot", "CheckFailed"),
     "InitialSnapshotUnreadable"),
])
def test_an_initial_snapshot_the_engine_refuses_fails_the_start(result, reason):
    status, _ = begin({}, INITIAL_SPEC, observed=DriverObservation.gone())
    status = step(status, "claim", Result(True), INITIAL_SPEC)
    status = step(status, "compile", Result(True, {"planId": "abc"}), INITIAL_SPEC)
    status = step(status, "check", result, INITIAL_SPEC)
    assert status["phase"] == "Failed" and INITIAL in status["error"]
    assert {c["type"]: c for c in status["conditions"]}["Degraded"]["reason"] == reason
    assert decide(view(status, INITIAL_SPEC), DriverObservation.gone()).action is None  # until the spec changes


def test_a_relative_initial_snapshot_that_got_in_is_reported():
    spec = {**SPEC, "initialSnapshot": {"uri": "snapshots/s1"}}
    decision = decide(view({}, spec), DriverObservation.gone())
    assert decision.action is None and "initialSnapshot.uri" in written(decision)["error"]


def test_per_job_snapshot_schedule_and_retention_override_the_operators():
    assert CONFIG.snapshots.interval == "0s"  # no periodic snapshots by default
    spec = {**SPEC, "snapshots": {"interval": "10m", "maxCount": 2}}
    long_ago = iso(NOW - timedelta(minutes=11))
    status = running(driver={"configHash": config_hash(JobSpec.model_validate(spec)), "startedAt": long_ago,
                             "baselineBatches": 0})
    assert decide(view(status, SPEC), ALIVE).action is None
    status, _ = begin(status, spec)
    assert (status["operation"]["type"], status["operation"]["message"]) == ("Snapshot", "periodic")
    for n in range(4):
        ref = {"id": f"s{n}", "createdAt": iso(NOW + timedelta(seconds=n))}
        status = step(status, "snapshot", Result(True, {"snapshot": ref["id"], "snapshotRef": ref}), spec)
        status, _ = begin(status, {**spec, "snapshotNonce": n + 1})
    assert [s["id"] for s in status["snapshots"]] == ["s2", "s3"]  # the job's maxCount, not the operator's 10
    # maxAge from the spec; the operator's maxCount still applies.
    aged = {**SPEC, "snapshots": {"maxAge": "1h"}}
    status = running(snapshots=[{"id": "old", "createdAt": iso(NOW - timedelta(hours=2))}])
    aged = {**aged, "snapshotNonce": 1}
    status, _ = begin(status, aged)
    ref = {"id": "new", "createdAt": iso(NOW)}
    status = step(status, "snapshot", Result(True, {"snapshot": "new", "snapshotRef": ref}), aged)
    assert [s["id"] for s in status["snapshots"]] == ["new"]


def test_a_missing_script_configmap_is_waited_for_not_failed():
    """GitOps tools may create the ConfigMap after the job: the start waits (said once), then goes on."""
    status, _ = begin({}, CM_SPEC, observed=DriverObservation.gone())
    status = step(status, "claim", Result(True), CM_SPEC)
    missing = Result(False, {"permanent": True}, "SQL script ConfigMap ns/etl does not exist; create it or fix the "
                                                  "reference", "MissingConfigMap")
    decision = decide(view(status, CM_SPEC), DriverObservation.gone())
    after = advance(view(status, CM_SPEC), decision.action, missing)
    apply(status, after)
    assert status["operation"]["step"] == "Compile" and status["phase"] == "Pending"
    degraded = {c["type"]: c for c in status["conditions"]}["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "MissingConfigMap") and "ns/etl" in status["error"]
    assert [e.reason for e in after.events] == ["MissingConfigMap"]
    again = advance(view(status, CM_SPEC), decide(view(status, CM_SPEC), DriverObservation.gone()).action, missing)
    assert again.status is None and again.events == []  # asked again every tick, said once
    status = step(status, "compile", Result(True, {"planId": "p1", "sourceHash": "h1"}), CM_SPEC)
    status = step(status, "launch", Result(True, {"name": "1"}), CM_SPEC, observed=DriverObservation.gone())
    assert status["phase"] == "Running"
    status = apply(status, decide(view(status, CM_SPEC), dataclasses.replace(ALIVE, run_id=status["runId"])))
    assert "error" not in status and {c["type"]: c for c in status["conditions"]}["Degraded"]["status"] == "False"
