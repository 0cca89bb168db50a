"""Every step of every operation as one table: ``(operation, step) -> act, on_ok, on_fail``.

``act`` is what the step does when ``decide`` meets it in ``status.operation`` (the first time, or again
after an operator crash, so it must be safe to repeat): usually one :class:`Action` for the reconciler, or a
status change when the world shows the step needs no action (the stability gate, a vanished standby).
``on_ok`` and ``on_fail`` turn that action's :class:`Result` into the next status: the next step (written
ahead of its side effect), or the end of the operation. A step missing from the table (written by another
operator version) is dropped and the job re-classified.

Operations and their steps (``status.operation.step``)::

    Start    Claim -> Compile -> [Check] -> Launch    (Check: spec.initialSnapshot readable by the engine)
    Restart  Stop -> [Fork] -> Launch              (runtime settings, restartNonce, automatic recovery)
    Suspend  Stop                                   -> Suspended
    Resume   Launch (from the last snapshot)
    Snapshot Snapshot                               (snapshotNonce, periodic)
    Upgrade  Check -> [Migrate] -> Standby -> Stop -> [Fork] -> Activate | Launch -> Stabilize -> [Publish] -> done
             failure in Launch/Stabilize -> RollbackStop -> [RollbackFork -> [RollbackCheck]] -> Rollback
                                            -> RolledBack        (RollbackCheck refuses: Failed, nothing started)

Where to add a step: write its ``act`` (which action, with which parameters from the operation), its
``on_ok`` (usually ``goto`` the next step) and ``on_fail`` (``retry``, ``fail``, ``refuse``...), add the row,
point the previous step's ``on_ok`` at it, give the reconciler an executor for a new action kind
(``Reconciler.executors``), and add its rows to ``tests/operator/test_statemachine.py`` (docs/operator.md,
"Where to add an upgrade step").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from planengine_operator import specdiff
from planengine_operator.config import parse_duration
from planengine_operator.models import DriverRef, JobStatus, Operation
from planengine_operator.vocabulary import (
    Action,
    Decision,
    DriverObservation,
    Event,
    JobView,
    Result,
    backoff_seconds,
    conditions,
    iso,
    new_operation,
    record_snapshot,
    seconds_since,
    stable_spec,
    target_engine,
    upgrade_record,
)

Act = Callable[[JobView, Operation, DriverObservation], Decision]
Then = Callable[[JobView, Operation, Result], Decision]


@dataclasses.dataclass(frozen=True)
class Step:
    act: Act
    on_ok: Then | None = None  # None: the step runs no action (it decides from the observation alone)
    on_fail: Then | None = None


# ---------------------------------------------------------------------------------------------- moving on
def goto(view: JobView, op: Operation, next_step: str, **fields: Any) -> Decision:
    """The operation at ``next_step`` (``fields`` updated; ``None`` clears one); an upgrade's record follows."""
    moved = op.model_copy(deep=True)
    for key, value in fields.items():
        setattr(moved, key, value)
    moved.step, moved.stepStarted, moved.attempt = next_step, iso(view.now), 0
    status = view.next_status(operation=moved)
    if moved.type == "Upgrade":
        upgrade = upgrade_record(view)
        upgrade.step = next_step
        upgrade.message = moved.message or upgrade.message
        if moved.snapshot:
            upgrade.snapshot = moved.snapshot
        status.upgrade = upgrade
    return Decision(status=status)


def fail(view: JobView, op: Operation, result: Result) -> Decision:
    """End the operation as ``Failed`` until the spec changes (a user error, a permanent tool failure)."""
    reason = result.reason or "StepFailed"
    message = f"{op.type} step {op.step} failed: {result.error}"
    status = view.next_status(operation=None, phase="Failed", error=message, observedGeneration=view.generation,
                              conditions=conditions(view, "Failed", degraded=(reason, message)))
    return Decision(status=status, events=[Event("Warning", reason, message)])


def retry(view: JobView, op: Operation, result: Result) -> Decision:
    """Try the same step again on a later tick (with backoff); a permanent failure ends the operation."""
    if result.permanent:
        return fail(view, op, result)
    reason = result.reason or "StepFailed"
    message = f"{op.type} step {op.step} failed: {result.error}"
    attempt = int(op.attempt or 0) + 1
    again = op.model_copy(update={"attempt": attempt, "message": message})
    # The failing step is the job's known problem while it is retried (e.g. a tool pod whose image cannot be
    # pulled: reason ErrImagePull), not only a line in status.error; the operation's end recomputes it.
    degraded = conditions(view, view.status.phase, progressing=True, upgrading=op.type == "Upgrade",
                          degraded=(reason, message))
    return Decision(status=view.next_status(operation=again, error=message, conditions=degraded),
                    events=[Event("Warning", reason, message)], delay=backoff_seconds(attempt, view.config))


def refuse(view: JobView, op: Operation, reason: str, *, condition: str = "UpgradeRefused") -> Decision:
    """The target engine will not run this plan: nothing was stopped, the old run keeps going."""
    upgrade = upgrade_record(view)
    message = (f"engine {upgrade.to} cannot run this plan: {reason}; the job keeps running on {upgrade.from_} and "
               f"{retry_advice(upgrade.from_, upgrade.to)}")
    upgrade.step, upgrade.finished, upgrade.message = "Refused", iso(view.now), message
    phase = "Running" if view.status.runId else "Failed"
    status = view.next_status(operation=None, upgrade=upgrade, phase=phase, error=message,
                              conditions=conditions(view, phase, degraded=(condition, message)))
    return Decision(status=status, events=[Event("Warning", "UpgradeRefused", message)])


def _refuse_result(view: JobView, op: Operation, result: Result) -> Decision:
    return refuse(view, op, result.error)


CHECK_ATTEMPTS = 3  # a check that could not run is tried this often before the target is refused


def _check_failed(view: JobView, op: Operation, result: Result) -> Decision:
    """A check that gave no verdict (its process killed, its pod never started, a time-out, exit 1) says nothing
    about the plan: try it again, with backoff, before refusing the target. A user error in the plan or the
    spec (exit 2: permanent) is refused at once, as is a verdict (exit 4 arrives as a result, not a failure).
    The fault campaign killed a check's pod and the target was refused as if it could not run the plan."""
    if not result.permanent and int(op.attempt or 0) + 1 < CHECK_ATTEMPTS:
        return retry(view, op, result)
    return refuse(view, op, result.error)


# ---------------------------------------------------------------------------------------------- Start
def _claim(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    return Decision(action=Action("claim", {"jobRoot": view.job_root}))


def _claimed(view: JobView, op: Operation, result: Result) -> Decision:
    return goto(view, op, "Compile")


def _compile(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    return Decision(action=Action("compile", {"engineVersion": op.engineVersion or target_engine(view),
                                              "force": bool(op.recompile)}))


def _compiled(view: JobView, op: Operation, result: Result) -> Decision:
    recompiled = bool(op.recompile)
    if op.snapshotPath and not recompiled:  # spec.initialSnapshot: the engine must accept it before the start
        decision = goto(view, op, "Check", planFile=None,
                        message=f"checking initial snapshot {op.snapshotPath} on engine {op.engineVersion}")
    else:
        decision = goto(view, op, "Launch", runId=view.new_run_id, planFile=None, recompile=None,
                        stateless=True if recompiled else None, snapshot=None if recompiled else op.snapshot,
                        snapshotPath=None)
    status = decision.status
    assert status is not None
    status.planId = result.values.get("planId")
    status.specHash = specdiff.program_hash(view.spec)
    status.sourceHash = result.values.get("sourceHash")
    status.jobRoot = view.job_root
    status.phase = "Starting"
    return decision


def _compile_failed(view: JobView, op: Operation, result: Result) -> Decision:
    """A ConfigMap the program or catalog is read from does not exist (yet): a GitOps tool may create it after
    the SparkPlanJob, so the start waits for it (the step runs again every tick; said once, as a Degraded
    condition with reason ``MissingConfigMap``) instead of failing. Anything else fails the start."""
    if result.reason != "MissingConfigMap":
        return fail(view, op, result)
    message = f"waiting for a ConfigMap: {result.error}"
    if op.message == message:
        return Decision()  # still missing: nothing new to say
    waiting = op.model_copy(update={"message": message})
    status = view.next_status(operation=waiting, error=message, observedGeneration=view.generation,
                              conditions=conditions(view, view.status.phase, progressing=True,
                                                    degraded=("MissingConfigMap", message)))
    return Decision(status=status, events=[Event("Warning", "MissingConfigMap", message)])


def _check_initial(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    return Decision(action=Action("check", {"engineVersion": op.engineVersion, "snapshotPath": op.snapshotPath}))


def _initial_checked(view: JobView, op: Operation, result: Result) -> Decision:
    """``check --snapshot`` answered: start from the snapshot (the engine forks it), or stop with the reason."""
    if result.values.get("verdict") != "compatible":
        reason = result.values.get("reason") or str(result.values.get("verdict"))
        return fail(view, op, Result(False, {"permanent": True},
                                     f"engine {op.engineVersion} cannot start this plan from initial snapshot "
                                     f"{op.snapshotPath}: {reason}; fix or remove spec.initialSnapshot (create the "
                                     "SparkPlanJob again: the field cannot change later)",
                                     "InitialSnapshotIncompatible"))
    return goto(view, op, "Launch", runId=view.new_run_id, message=f"starting from initial snapshot {op.snapshotPath}")


def _initial_check_failed(view: JobView, op: Operation, result: Result) -> Decision:
    if result.permanent:
        return fail(view, op, Result(False, {"permanent": True}, f"{result.error} (initial snapshot {op.snapshotPath})",
                                     "InitialSnapshotUnreadable"))
    return retry(view, op, result)


# ---------------------------------------------------------------------------------------------- Launch / Activate
def _launch(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    # Also after a crash that left this run's driver running: launchers are idempotent per run id (they answer
    # with the running driver instead of starting a second one), and the action's result carries what the
    # status must record for the new run (driver reference, the snapshot's batch count the gate subtracts).
    return Decision(action=Action("launch", {"runId": op.runId, "engineVersion": op.engineVersion,
                                             "snapshot": op.snapshot, "planFile": op.planFile,
                                             "stateless": bool(op.stateless), "snapshotPath": op.snapshotPath}))


def _activate(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    return Decision(action=Action("activate", {"runId": op.runId, "engineVersion": op.engineVersion,
                                               "snapshot": op.snapshot, "stateless": bool(op.stateless)}))


def _new_driver(view: JobView, result: Result) -> DriverRef:
    before = view.status.driver or DriverRef()
    return DriverRef(launcher=view.config.launcher, name=result.values.get("name") or before.name,
                     statusUrl=result.values.get("statusUrl") or before.statusUrl, startedAt=iso(view.now),
                     configHash=specdiff.config_hash(view.spec),
                     baselineBatches=int(result.values.get("baselineBatches") or 0))


def _started(view: JobView, op: Operation, result: Result) -> JobStatus:
    return view.next_status(runId=op.runId, engineVersion=op.engineVersion, driver=_new_driver(view, result),
                            restartNonce=view.spec.restartNonce)


def _launched(view: JobView, op: Operation, result: Result) -> Decision:
    """A Start/Restart/Resume run is up: Running (and the spec it runs is the stable one)."""
    status = _started(view, op, result)
    status.operation, status.phase = None, "Running"
    status.conditions = conditions(view, "Running")
    if op.type in ("Start", "Restart", "Resume"):
        status.lastStableSpec = stable_spec(view, op.engineVersion or "")
    origin = f" from initial snapshot {op.snapshotPath}" if op.snapshotPath else ""
    return Decision(status=status, events=[Event("Normal", "Started",
                                                 f"run {op.runId} on engine {op.engineVersion} ({op.type}){origin}")])


def _handed_over(view: JobView, op: Operation, result: Result) -> Decision:
    """The upgrade's target runs (activated standby or cold launch): the stability gate starts."""
    status = _started(view, op, result)
    status.operation = op.model_copy(update={"step": "Stabilize", "stepStarted": iso(view.now), "attempt": 0,
                                             "message": "waiting for the stability gate"})
    upgrade = upgrade_record(view)
    upgrade.step, upgrade.message = "Stabilize", status.operation.message
    status.upgrade = upgrade
    return Decision(status=status, events=[Event("Normal", "UpgradeHandover",
                                                 f"engine {op.engineVersion} started run {op.runId}")])


def _rolled_back(view: JobView, op: Operation, result: Result) -> Decision:
    status = _started(view, op, result)
    upgrade = upgrade_record(view)
    cause = op.cause or upgrade.message or "stability gate failed"
    message = f"{cause}; {rollback_advice(op.engineVersion, upgrade.to)}"
    upgrade.snapshot, upgrade.step, upgrade.finished = op.snapshot, "RolledBack", iso(view.now)
    upgrade.message = message
    status.operation, status.upgrade, status.phase = None, upgrade, "RolledBack"
    status.conditions = conditions(view, "RolledBack", degraded=("RolledBack", message))
    return Decision(status=status, events=[Event(
        "Warning", "RolledBack",
        f"upgrade to {upgrade.to} rolled back to {op.engineVersion} from snapshot {op.snapshot}: {message}")])


DRIVER_LOG_HINT = " (see the target driver's log)"


def rollback_advice(running: str | None, target: str | None) -> str:
    """What a user does after a rollback: the operator does not retry the same target by itself (it would fail the
    same way), so the message must say which field moves the job on (the fault campaign found the cause alone).

    >>> rollback_advice("0.1", "0.2")[:90]
    'the job runs engine 0.1 again and 0.2 is not retried until spec.engineVersion changes: set'
    """
    return f"the job runs engine {running} again and {retry_advice(running, target, hint=DRIVER_LOG_HINT)}"


def retry_advice(running: str | None, target: str | None, *, hint: str = "") -> str:
    """How a refused or rolled-back target is tried again (specdiff.blocks, status.upgrade.withdrawn): one text
    for both outcomes, so the advice and the mechanism cannot drift apart."""
    return (f"{target} is not retried until spec.engineVersion changes: set it to {running} to stay; once the cause "
            f"is fixed{hint}, setting it to {target} again, or to another engine, upgrades again")


def _activate_failed(view: JobView, op: Operation, result: Result) -> Decision:
    """The standby is gone or refused the start, and the old run is stopped: start the target cold instead."""
    message = f"the standby did not start ({result.error}); starting engine {op.engineVersion} cold"
    moved = op.model_copy(update={"step": "Launch", "runId": view.new_run_id, "standby": "lost",
                                  "stepStarted": iso(view.now), "attempt": 0, "message": message})
    upgrade = upgrade_record(view)
    upgrade.step, upgrade.message = "Launch", message
    return Decision(status=view.next_status(operation=moved, upgrade=upgrade),
                    events=[Event("Warning", "StandbyLost", message)])


def _target_launch_failed(view: JobView, op: Operation, result: Result) -> Decision:
    return gate_failed(view, op, f"the new engine failed to start: {result.error}")


# ---------------------------------------------------------------------------------------------- Stop / Fork
def _stop(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    mode = view.spec.upgradeMode
    live = observed.running and not observed.exception
    wants_snapshot = (op.type == "Upgrade" and mode == "snapshot") or op.type == "Suspend"
    how = "snapshot" if wants_snapshot or (op.type == "Restart" and mode == "snapshot" and live) else "kill"
    reason = {"Upgrade": "upgrade", "Suspend": "suspend"}.get(op.type or "", "restart")
    return Decision(action=Action("stop", {"how": how, "runId": view.status.runId, "since": op.started,
                                           "reason": reason}))


def _upgrade_stop(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    if op.standby == "ready" and observed.standby_run_id != op.runId:
        # The standby vanished before the handover (and the old run is still the writer): start it again.
        message = f"the standby of run {op.runId} is gone; starting it again"
        again = op.model_copy(update={"step": "Standby", "stepStarted": iso(view.now), "attempt": 0,
                                      "message": message})
        return Decision(status=view.next_status(operation=again), events=[Event("Warning", "StandbyLost", message)])
    return _stop(view, op, observed)


def _start_step(op: Operation) -> str:
    """How the new run starts after the stop: the ready standby, or a cold launch."""
    return "Activate" if op.type == "Upgrade" and op.standby == "ready" else "Launch"


def _stopped(view: JobView, op: Operation, result: Result) -> Decision:
    """The old driver is gone (with a snapshot when one was asked for): fork, or start the new run."""
    snapshot = result.values.get("snapshot")
    mode = view.spec.upgradeMode
    start = _start_step(op)
    if mode == "stateless" and op.type == "Upgrade":
        decision = goto(view, op, start, snapshot=None, stateless=True)
    elif mode == "last-checkpoint" or (not snapshot and op.type == "Restart"):
        decision = goto(view, op, "Fork")
    else:
        decision = goto(view, op, start, snapshot=snapshot)
    status = decision.status
    assert status is not None and status.operation is not None
    status.operation.runId = status.operation.runId or view.new_run_id
    status.operation.engineVersion = status.operation.engineVersion or view.status.engineVersion
    record_snapshot(view, status, result.values.get("snapshotRef"))
    return decision


def _suspended(view: JobView, op: Operation, result: Result) -> Decision:
    status = view.next_status(operation=None, phase="Suspended", conditions=conditions(view, "Suspended"),
                              driver=None)
    record_snapshot(view, status, result.values.get("snapshotRef"))
    return Decision(status=status, events=[Event("Normal", "Suspended",
                                                 f"stopped with snapshot {result.values.get('snapshot')}")])


def _fork(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    return Decision(action=Action("fork", {"runId": view.status.runId}))


def _forked(view: JobView, op: Operation, result: Result) -> Decision:
    decision = goto(view, op, _start_step(op), snapshot=result.values.get("snapshot"),
                    snapshotPath=result.values.get("snapshotPath"))
    assert decision.status is not None
    record_snapshot(view, decision.status, result.values.get("snapshotRef"))
    return decision


# ---------------------------------------------------------------------------------------------- Snapshot
def _snapshot(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    return Decision(action=Action("snapshot", {"reason": op.message or "manual"}))


def _snapshot_taken(view: JobView, op: Operation, result: Result) -> Decision:
    status = view.next_status(operation=None, snapshotNonce=view.spec.snapshotNonce)
    record_snapshot(view, status, result.values.get("snapshotRef"))
    return Decision(status=status, events=[
        Event("Normal", "SnapshotTaken", f"snapshot {result.values.get('snapshot')} ({op.message})")])


# ---------------------------------------------------------------------------------------------- Upgrade
def _check(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    return Decision(action=Action("check", {"engineVersion": op.engineVersion}))


def _checked(view: JobView, op: Operation, result: Result) -> Decision:
    verdict = result.values.get("verdict")
    if verdict == "incompatible":
        return refuse(view, op, result.values.get("reason") or "incompatible")
    if verdict == "migrate":
        return goto(view, op, "Migrate", runId=view.new_run_id, message="migrating the plan for the new run")
    moves = result.values.get("stateMoves") or []
    if moves and view.spec.upgrade.migrateOperators == "Auto":
        # The plan runs nodes on Python operators that the target engine runs on the JVM: migrate moves them and
        # the new run converts their state from the stop's snapshot, which stays as it is for a rollback.
        listed = "; ".join(str(m) for m in moves)
        return goto(view, op, "Migrate", runId=view.new_run_id,
                    message=f"moving {len(moves)} node(s) to the JVM operators with their state "
                            f"(spec.upgrade.migrateOperators: Auto): {listed[:400]}")
    return goto(view, op, "Standby", runId=view.new_run_id,
                message=f"plan compatible; starting engine {op.engineVersion} in standby")


def _migrate(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    return Decision(action=Action("migrate", {"engineVersion": op.engineVersion, "runId": op.runId}))


def _migrated(view: JobView, op: Operation, result: Result) -> Decision:
    return goto(view, op, "Standby", planFile=result.values.get("planFile"),
                message=f"plan migrated; starting engine {op.engineVersion} in standby")


def _standby(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    return Decision(action=Action("standby", {"runId": op.runId, "engineVersion": op.engineVersion,
                                              "planFile": op.planFile}))


def _standby_done(view: JobView, op: Operation, result: Result) -> Decision:
    if result.values.get("standby") == "ready":
        return goto(view, op, "Stop", standby="ready",
                    message=f"engine {op.engineVersion} in standby; stopping the old driver")
    return goto(view, op, "Stop", standby="unsupported",
                message=f"engine {op.engineVersion} has no standby mode; stopping the old driver, then a cold start")


def _standby_failed(view: JobView, op: Operation, result: Result) -> Decision:
    # The launcher killed the standby; the old run never paused.
    return refuse(view, op, f"it failed in standby: {result.error}", condition="StandbyFailed")


def _gate(view: JobView) -> tuple[int, float]:
    min_batches = view.spec.rollback.minBatches or view.config.stability.minBatches
    window = parse_duration(view.spec.rollback.stabilityWindow or view.config.stability.window)
    return min_batches, window


def _stabilize(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    """The stability gate: no query exception, driver alive, and within the window either N committed batches or,
    at its end, every query idle and caught up with its sources (no input arrived: nothing to commit)."""
    min_batches, window = _gate(view)
    baseline = (view.status.driver.baselineBatches if view.status.driver else None) or 0
    if observed.problem:  # its pod will not start by itself: roll back now rather than at the window's end
        return gate_failed(view, op, f"the new driver cannot start: {observed.problem}")
    if not observed.running or observed.run_id not in (None, op.runId):
        said = f": {observed.message}" if observed.message else ""
        return gate_failed(view, op, f"the new driver exited (exit code {observed.exit_code}){said}")
    if observed.exception:
        return gate_failed(view, op, f"query exception on the new engine: {observed.exception}")
    committed = (observed.batches or 0) - baseline
    if observed.healthy and committed >= min_batches:
        return _gate_passed(view, op, f"{committed} of {min_batches} batches committed", committed)
    if seconds_since(op.stepStarted, view.now) > window:
        # Progress that is possible: a source with no input during the window (a topic quiet at night) commits
        # nothing, and a target whose every query is active and caught up with its sources is healthy.
        if observed.healthy and observed.idle:
            return _gate_passed(view, op, f"idle: every query caught up, no input arrived in {window:g}s "
                                          f"({max(committed, 0)} of {min_batches} batches committed)", None)
        why = ("the driver's status API did not answer" if not observed.healthy else observed.not_idle
               or "the engine does not report whether its queries are caught up")
        return gate_failed(view, op, f"only {max(committed, 0)} of {min_batches} batches committed within "
                                     f"{window:g}s, and the job is not idle: {why}")
    return Decision()


def _gate_passed(view: JobView, op: Operation, verdict: str, committed: int | None) -> Decision:
    if op.planFile:  # the target runs a migrated plan, now the job root's plan in force: publish it
        return goto(view, op, "Publish", message=f"engine {op.engineVersion}: {verdict} without an exception; "
                                                 "publishing its migrated plan")
    return _upgrade_succeeded(view, op, committed, verdict=f"engine {op.engineVersion} passed the stability gate: "
                                                           f"{verdict}, no exception")


def _upgrade_succeeded(view: JobView, op: Operation, committed: int | None, plan_id: str | None = None,
                       verdict: str | None = None) -> Decision:
    upgrade = upgrade_record(view)
    message = (verdict if verdict is not None
               else f"engine {upgrade.to} committed {committed} batches without an exception" if committed is not None
               else op.message or f"engine {upgrade.to} passed the stability gate")
    if plan_id:
        message += f"; its migrated plan {plan_id[:12]} is the plan in force"
    upgrade.step, upgrade.finished, upgrade.message = "Succeeded", iso(view.now), message
    status = view.next_status(operation=None, upgrade=upgrade, phase="Running",
                              lastStableSpec=stable_spec(view, op.engineVersion or ""),
                              conditions=conditions(view, "Running"))
    if plan_id:
        status.planId = plan_id
    return Decision(status=status, events=[Event("Normal", "UpgradeSucceeded", message)])


def _publish(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    """The new run made its migrated plan the job root's plan in force
    (``planengine/runtime/storage/plan_in_force.py``); the ``<job>-plan`` ConfigMap and ``status.planId`` follow,
    so kubectl shows the plan that runs."""
    return Decision(action=Action("publish", {"planFile": op.planFile}))


def _published(view: JobView, op: Operation, result: Result) -> Decision:
    return _upgrade_succeeded(view, op, None, result.values.get("planId"))


def gate_failed(view: JobView, op: Operation, cause: str) -> Decision:
    """The target failed after the old run stopped: roll back (or fail, with rollback disabled)."""
    upgrade = upgrade_record(view)
    if not view.spec.rollback.enabled:
        upgrade.step, upgrade.finished, upgrade.message = "Failed", iso(view.now), cause
        status = view.next_status(operation=None, upgrade=upgrade, phase="Failed", error=cause,
                                  conditions=conditions(view, "Failed", degraded=("UpgradeFailed", cause)))
        return Decision(status=status, events=[Event("Warning", "UpgradeFailed", cause + "; rollback disabled")])
    upgrade.step, upgrade.message = "RollbackStop", cause
    snapshot = upgrade.snapshot or op.snapshot
    rollback = new_operation(view, "Upgrade", "RollbackStop", runId=view.new_run_id, engineVersion=upgrade.from_,
                             snapshot=snapshot, upgradeSnapshot=snapshot, targetEngine=upgrade.to or op.engineVersion,
                             targetRunId=op.runId, stateless=True if op.stateless else None, message=cause,
                             cause=cause)
    status = view.next_status(operation=rollback, upgrade=upgrade, phase="RollingBack",
                              conditions=conditions(view, "RollingBack", progressing=True, upgrading=True,
                                                    degraded=("UpgradeFailed", cause)))
    return Decision(status=status, events=[Event("Warning", "RollingBack", cause)])


# ---------------------------------------------------------------------------------------------- Rollback
def _rollback_stop(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    # The target driver may still run (query exception, gate timeout); an absent one is fine.
    return Decision(action=Action("stop", {"how": "kill", "runId": op.targetRunId, "since": op.started,
                                           "reason": "rollback"}))


def _rollback_stopped(view: JobView, op: Operation, result: Result) -> Decision:
    return goto(view, op, "Rollback" if op.stateless else "RollbackFork")


def _rollback_fork(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    # The target's CLI wrote the state, so it forks it.
    return Decision(action=Action("fork", {"engineVersion": op.targetEngine, "reason": "rollback",
                                           "base": op.upgradeSnapshot}))


def _rollback_forked(view: JobView, op: Operation, result: Result) -> Decision:
    if not result.values.get("forked"):  # the target committed nothing beyond S: S is its state too
        return goto(view, op, "Rollback", snapshot=op.upgradeSnapshot)
    decision = goto(view, op, "RollbackCheck", snapshot=result.values.get("snapshot"))
    assert decision.status is not None
    record_snapshot(view, decision.status, result.values.get("snapshotRef"))
    return decision


def _rollback_check(view: JobView, op: Operation, observed: DriverObservation) -> Decision:
    return Decision(action=Action("check", {"engineVersion": op.engineVersion, "snapshot": op.snapshot}))


def _rollback_checked(view: JobView, op: Operation, result: Result) -> Decision:
    if result.values.get("verdict") != "compatible":
        return rollback_blocked(view, op, result.values.get("reason") or str(result.values.get("verdict")))
    return goto(view, op, "Rollback")


def _rollback_check_failed(view: JobView, op: Operation, result: Result) -> Decision:
    if result.permanent:
        return rollback_blocked(view, op, result.error)
    return retry(view, op, result)


def rollback_blocked(view: JobView, op: Operation, reason: str) -> Decision:
    """The old engine cannot read the target's state: starting it from S would lose or duplicate output."""
    upgrade = upgrade_record(view)
    target, old = op.targetEngine or upgrade.to, op.engineVersion
    message = (
        f"rollback blocked: engine {target} committed output past the upgrade snapshot "
        f"{op.upgradeSnapshot} before it failed ({op.cause or upgrade.message}), and engine "
        f"{old} cannot read its state in snapshot {op.snapshot} ({reason}); restarting engine {old} from "
        f"the earlier snapshot would lose or duplicate that output, so nothing was started. Fix the target engine "
        f"or choose one that can run this job and set spec.engineVersion to it (that upgrade carries the target's "
        f"state on), or set spec.upgradeMode: stateless and choose the engine to start over without the state"
    )
    upgrade.step, upgrade.finished, upgrade.message, upgrade.snapshot = "Failed", iso(view.now), message, op.snapshot
    status = view.next_status(operation=None, upgrade=upgrade, phase="Failed", error=message,
                              observedGeneration=view.generation,
                              conditions=conditions(view, "Failed", degraded=("RollbackBlocked", message)))
    return Decision(status=status, events=[Event("Warning", "RollbackBlocked", message)])


# ---------------------------------------------------------------------------------------------- the table
STEPS: dict[tuple[str, str], Step] = {
    ("Start", "Claim"): Step(_claim, on_ok=_claimed, on_fail=fail),
    ("Start", "Compile"): Step(_compile, on_ok=_compiled, on_fail=_compile_failed),
    ("Start", "Check"): Step(_check_initial, on_ok=_initial_checked, on_fail=_initial_check_failed),
    ("Start", "Launch"): Step(_launch, on_ok=_launched, on_fail=retry),
    ("Restart", "Stop"): Step(_stop, on_ok=_stopped, on_fail=retry),
    ("Restart", "Fork"): Step(_fork, on_ok=_forked, on_fail=retry),
    ("Restart", "Launch"): Step(_launch, on_ok=_launched, on_fail=retry),
    ("Suspend", "Stop"): Step(_stop, on_ok=_suspended, on_fail=retry),
    ("Resume", "Launch"): Step(_launch, on_ok=_launched, on_fail=retry),
    ("Snapshot", "Snapshot"): Step(_snapshot, on_ok=_snapshot_taken, on_fail=retry),
    ("Upgrade", "Check"): Step(_check, on_ok=_checked, on_fail=_check_failed),
    ("Upgrade", "Migrate"): Step(_migrate, on_ok=_migrated, on_fail=_refuse_result),
    ("Upgrade", "Standby"): Step(_standby, on_ok=_standby_done, on_fail=_standby_failed),
    ("Upgrade", "Stop"): Step(_upgrade_stop, on_ok=_stopped, on_fail=retry),
    ("Upgrade", "Fork"): Step(_fork, on_ok=_forked, on_fail=retry),
    ("Upgrade", "Activate"): Step(_activate, on_ok=_handed_over, on_fail=_activate_failed),
    ("Upgrade", "Launch"): Step(_launch, on_ok=_handed_over, on_fail=_target_launch_failed),
    ("Upgrade", "Stabilize"): Step(_stabilize),
    ("Upgrade", "Publish"): Step(_publish, on_ok=_published, on_fail=retry),
    ("Upgrade", "RollbackStop"): Step(_rollback_stop, on_ok=_rollback_stopped, on_fail=retry),
    ("Upgrade", "RollbackFork"): Step(_rollback_fork, on_ok=_rollback_forked, on_fail=retry),
    ("Upgrade", "RollbackCheck"): Step(_rollback_check, on_ok=_rollback_checked, on_fail=_rollback_check_failed),
    ("Upgrade", "Rollback"): Step(_launch, on_ok=_rolled_back, on_fail=retry),
}
# Upgrade steps during which a standby of the operation's run is wanted (reused after an operator restart).
STANDBY_STEPS = ("Standby", "Stop", "Fork", "Activate")


def step_of(op: Operation) -> Step | None:
    return STEPS.get((op.type or "", op.step or ""))
