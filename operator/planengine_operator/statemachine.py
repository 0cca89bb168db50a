"""The job's state machine: pure decisions over (spec, status, observation, clock).

Nothing here performs I/O. ``decide`` looks at the desired spec, the status (our write-ahead log) and what
the launcher observed, and returns a :class:`Decision`: a status patch to write *first* and at most one
side effect to run after it. ``advance`` turns that side effect's result into the next status patch. A
crashed operator re-reads the status and ``decide`` hands it the same step again, and every step is
written so that repeating it is safe (launch is keyed by run id, stop tolerates an absent driver, tools
are re-runnable), so a restart resumes the protocol instead of repeating completed side effects.

Operations and their steps (``status.operation.step``)::

    Start    Claim -> Compile -> Launch
    Restart  Stop -> [Fork] -> Launch              (runtime settings, restartNonce, automatic recovery)
    Suspend  Stop                                   -> Suspended
    Resume   Launch (from the last snapshot)
    Snapshot Snapshot                               (snapshotNonce, periodic)
    Upgrade  Check -> [Migrate] -> Standby -> Stop -> [Fork] -> Activate | Launch -> Stabilize -> done
             failure in Launch/Stabilize -> RollbackStop -> [RollbackFork -> [RollbackCheck]] -> Rollback
                                            -> RolledBack        (RollbackCheck refuses: Failed, nothing started)

Warm standby (upgrades only): ``Standby`` starts the target engine with ``run --standby`` *before* the old
driver is stopped (JVM, session, plan and warm-up happen while the old run still commits) and records
``operation.standby``: ``ready``, or ``unsupported`` for an engine without the mode (then ``Launch`` is the
cold start after the stop, as before). ``Activate`` is ``POST /v1/start`` on the standby with the snapshot.
A standby that fails before ``Activate`` ends the upgrade as ``Refused`` with the old run untouched; a
standby lost at ``Activate`` falls back to a cold ``Launch`` in a fresh run. After an operator restart the
rule for a standby the launcher observes is: it is *reused* when the operation is an upgrade at
Standby/Stop/Fork/Activate and the standby carries the operation's ``runId``; any other standby is
*killed* (action ``discard``) before anything else happens. A ``ready`` standby that vanished before the
stop sends the operation back to ``Standby`` (the old run is still the writer).

Rollback: the target may have committed batches (and sink output) after the upgrade snapshot S before it
failed. Restarting the old engine from S would re-plan those batch ids with other input, and a sink that
is idempotent by batch id (Spark's file sink) skips them as already committed: rows lost. So the rollback
resumes from the target's newest state. ``RollbackStop`` kills the target driver (tolerates an absent one);
``RollbackFork`` forks the newest checkpoint with the *target's* CLI (it wrote that state) and keeps S when
the fork holds no batch beyond S (the fork is deleted, ``Rollback`` follows); ``RollbackCheck`` asks the
old engine's ``check --snapshot`` whether it can read the fork; ``Rollback`` launches the old engine from
the snapshot in ``operation.snapshot`` (mirrored in ``upgrade.snapshot``, which retention pins). If the old
engine cannot read the target's state nothing is started: phase ``Failed``, Degraded ``RollbackBlocked``.
A stateless upgrade (no state to carry) goes ``RollbackStop -> Rollback`` without a snapshot.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any, Literal

from planengine_operator import specdiff, validation
from planengine_operator.config import OperatorConfig, parse_duration
from planengine_operator.models import JobSpec
from planengine_operator.specdiff import Change

ActionKind = Literal["claim", "compile", "check", "migrate", "standby", "stop", "fork", "activate", "launch",
                     "snapshot", "discard"]
RUNNING_PHASES = ("Running", "RolledBack")
# Upgrade steps during which a standby of the operation's run is wanted (reused after an operator restart).
STANDBY_STEPS = ("Standby", "Stop", "Fork", "Activate")


@dataclasses.dataclass(frozen=True)
class DriverObservation:
    """What the launcher saw of the job's driver right now."""

    running: bool = False
    run_id: str | None = None
    healthy: bool = False  # the status API answered
    batches: int | None = None  # committed batches summed over queries (lastBatchId + 1)
    exception: str | None = None
    exit_code: int | None = None
    standby_run_id: str | None = None  # run id of a live standby driver (``run --standby``), if any

    @classmethod
    def gone(cls, exit_code: int | None = None) -> DriverObservation:
        return cls(exit_code=exit_code)


@dataclasses.dataclass(frozen=True)
class Action:
    kind: ActionKind
    params: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Result:
    """Outcome of an action: ``ok`` plus values (planId, snapshot id, exit code) or an error message."""

    ok: bool
    values: dict[str, Any] = dataclasses.field(default_factory=dict)
    error: str = ""
    reason: str = ""


@dataclasses.dataclass(frozen=True)
class Event:
    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclasses.dataclass
class Decision:
    patch: dict[str, Any] = dataclasses.field(default_factory=dict)
    action: Action | None = None
    events: list[Event] = dataclasses.field(default_factory=list)
    delay: float | None = None  # when to look again sooner than the timer (informational)


@dataclasses.dataclass(frozen=True)
class JobView:
    """Everything ``decide`` may look at, gathered by the reconciler."""

    name: str
    namespace: str
    generation: int
    spec: JobSpec
    status: dict[str, Any]
    config: OperatorConfig
    job_root: str
    now: datetime
    new_run_id: str  # used only if this decision starts a run
    fleet_allowed: bool = True  # the fleet rollout has a free slot and is not paused
    spec_job_root: str | None = None  # the job root the spec's storage names (immutable once in force)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _seconds_since(text: str | None, now: datetime) -> float:
    moment = parse_iso(text)
    return float("inf") if moment is None else (now - moment).total_seconds()


# ---------------------------------------------------------------------------------------------- decide
def decide(view: JobView, observed: DriverObservation) -> Decision:
    """The next step for this job: a write-ahead status patch and at most one side effect."""
    op = view.status.get("operation") or None
    if observed.standby_run_id and not _wants_standby(op, observed.standby_run_id):
        return Decision(action=Action("discard", {"runId": observed.standby_run_id}))
    if op and op.get("type"):
        return _continue(view, op, observed)
    if view.status.get("phase") == "Failed" and view.status.get("observedGeneration") == view.generation:
        return Decision()  # a permanent failure waits for a spec change
    problems = validation.problems(view.spec, view.status, view.config, view.spec_job_root)
    if problems:  # the admission webhook's rules: a spec that got past it is reported, not attempted
        return _refuse_invalid(view, problems[0])
    change = specdiff.classify(view.spec, view.status, view.config.defaultEngineVersion)
    if change is Change.START:
        return _begin(view, "Start", "Claim", phase="Pending", extra={"engineVersion": _target(view)})
    if change is Change.RECOMPILE:
        return _begin(
            view, "Start", "Claim", phase="Restarting",
            extra={"engineVersion": _target(view), "recompile": True},
        )
    if change is Change.SUSPEND:
        return _begin(view, "Suspend", "Stop", phase="Suspending")
    if change is Change.RESUME:
        return _begin(view, "Resume", "Launch", phase="Starting", extra=_launch_fields(view, _snap_id(view)))
    if change is Change.UPGRADE:
        if view.spec.engineVersion is None and not view.fleet_allowed:
            return _steady(view, observed, waiting="fleet rollout waiting for a free slot or paused")
        return _begin_upgrade(view)
    if change is Change.RESTART:
        return _begin(view, "Restart", "Stop", phase="Restarting", extra={"reason": "spec"})
    if change is Change.SNAPSHOT:
        return _begin(view, "Snapshot", "Snapshot", extra={"reason": "manual"})
    return _steady(view, observed)


def _wants_standby(op: dict[str, Any] | None, standby_run_id: str) -> bool:
    """The restart rule: a standby is reused only by the upgrade step that expects it, else killed."""
    return bool(op) and op.get("type") == "Upgrade" and op.get("step") in STANDBY_STEPS and (
        op.get("runId") == standby_run_id)


def _target(view: JobView) -> str:
    return specdiff.target_engine(view.spec, view.config.defaultEngineVersion)


def _snap_id(view: JobView) -> str | None:
    return (view.status.get("lastSnapshot") or {}).get("id")


def _launch_fields(view: JobView, snapshot: str | None, engine: str | None = None) -> dict[str, Any]:
    return {
        "runId": view.new_run_id,
        "snapshot": snapshot,
        "engineVersion": engine or view.status.get("engineVersion") or _target(view),
    }


def _op(view: JobView, type_: str, step: str, **fields: Any) -> dict[str, Any]:
    now = iso(view.now)
    base = {"type": type_, "step": step, "started": now, "stepStarted": now, "attempt": 0}
    base.update({k: v for k, v in fields.items() if v is not None})
    return base


def _begin(
    view: JobView, type_: str, step: str, *, phase: str | None = None, extra: dict[str, Any] | None = None
) -> Decision:
    """Record the new operation; the next decide() performs its first step."""
    extra = dict(extra or {})
    reason = extra.pop("reason", None)
    recompile = extra.pop("recompile", None)
    message = f"{type_} requested" + (f" ({reason})" if reason else "")
    op = _op(view, type_, step, message=message, **extra)
    if recompile:
        op["planFile"] = "recompile"
    if reason:
        op["message"] = reason
    patch: dict[str, Any] = {"operation": op, "observedGeneration": view.generation, "error": None}
    if phase:
        patch["phase"] = phase
    patch["conditions"] = conditions(view, phase or view.status.get("phase"), progressing=True)
    return Decision(patch=patch, events=[Event("Normal", type_, message)])


def _begin_upgrade(view: JobView) -> Decision:
    target = _target(view)
    source = view.status.get("engineVersion")
    upgrade = {
        "from": source, "to": target, "step": "Check", "started": iso(view.now), "finished": None,
        "message": f"checking the plan on engine {target}", "fleet": view.spec.engineVersion is None,
        "fromRunId": view.status.get("runId"), "snapshot": None,
    }
    op = _op(view, "Upgrade", "Check", engineVersion=target, message=upgrade["message"])
    patch = {
        "operation": op, "upgrade": upgrade, "phase": "Upgrading", "observedGeneration": view.generation,
        "conditions": conditions(view, "Upgrading", progressing=True, upgrading=True),
    }
    return Decision(patch=patch, events=[Event("Normal", "UpgradeStarted", f"upgrade {source} -> {target}")])


def _refuse_invalid(view: JobView, problem: validation.Problem) -> Decision:
    """Report a broken rule once (error, Degraded condition, Warning event) and do nothing else."""
    if (view.status.get("error") or "") == problem.message:
        return Decision()
    patch = {
        "error": problem.message, "observedGeneration": view.generation,
        "conditions": conditions(view, view.status.get("phase"), degraded=(problem.reason, problem.message)),
    }
    if not view.status.get("phase"):
        patch["phase"] = "Pending"
    return Decision(patch=patch, events=[Event("Warning", problem.reason, problem.message)])


# ---------------------------------------------------------------------------------------------- steady
def _steady(view: JobView, observed: DriverObservation, waiting: str | None = None) -> Decision:
    """No operation in flight: health checks, periodic snapshots and condition upkeep."""
    status = view.status
    phase = status.get("phase")
    if phase in RUNNING_PHASES and view.spec.state == "running":
        failure = _driver_failure(status, observed)
        if failure:
            return _auto_restart(view, failure)
        interval = parse_duration(view.config.snapshots.interval)
        last = (status.get("lastSnapshot") or {}).get("createdAt") or (status.get("driver") or {}).get(
            "startedAt"
        )
        if interval > 0 and _seconds_since(last, view.now) >= interval:
            return _begin(view, "Snapshot", "Snapshot", extra={"reason": "periodic"})
    patch: dict[str, Any] = {}
    restarts = status.get("restarts") or {}
    baseline = (status.get("driver") or {}).get("baselineBatches") or 0
    if restarts.get("count") and observed.batches is not None and observed.batches > baseline:
        patch["restarts"] = {"count": 0, "lastAt": restarts.get("lastAt"), "reason": restarts.get("reason")}
    if status.get("observedGeneration") != view.generation:
        patch["observedGeneration"] = view.generation
    wanted = conditions(view, phase, waiting=waiting)
    if _conditions_differ(status.get("conditions") or [], wanted):
        patch["conditions"] = wanted
    if status.get("error") and not waiting and phase in RUNNING_PHASES:
        blocked = specdiff.classify(view.spec, status, view.config.defaultEngineVersion)
        if blocked not in (Change.UPGRADE_BLOCKED, Change.PLAN_CHANGED):
            patch["error"] = None
    return Decision(patch=patch)


def _driver_failure(status: dict[str, Any], observed: DriverObservation) -> str | None:
    run_id = status.get("runId")
    if not observed.running or (observed.run_id and observed.run_id != run_id):
        code = "" if observed.exit_code is None else f" (exit code {observed.exit_code})"
        return f"driver of run {run_id} is gone{code}"
    if observed.exception:
        return f"query failed: {observed.exception}"
    return None


def backoff_seconds(count: int, config: OperatorConfig) -> float:
    """Exponential backoff between automatic restarts so a crash loop does not hammer the cluster."""
    if count <= 0:
        return 0.0
    return min(config.timing.restartBackoffBase * 2 ** (count - 1), config.timing.restartBackoffMax)


def _auto_restart(view: JobView, failure: str) -> Decision:
    restarts = view.status.get("restarts") or {}
    count = int(restarts.get("count") or 0)
    wait = backoff_seconds(count, view.config) - _seconds_since(restarts.get("lastAt"), view.now)
    degraded = ("DriverFailed", failure)
    if wait > 0:
        patch = {"conditions": conditions(view, view.status.get("phase"), degraded=degraded)}
        if not _conditions_differ(view.status.get("conditions") or [], patch["conditions"]):
            patch = {}
        return Decision(patch=patch, delay=wait)
    decision = _begin(view, "Restart", "Stop", phase="Restarting", extra={"reason": failure})
    decision.patch["restarts"] = {"count": count + 1, "lastAt": iso(view.now), "reason": failure}
    decision.patch["conditions"] = conditions(view, "Restarting", progressing=True, degraded=degraded)
    decision.events = [Event("Warning", "DriverFailed", f"{failure}; restarting from the latest snapshot")]
    return decision


# ---------------------------------------------------------------------------------------------- continue
def _continue(view: JobView, op: dict[str, Any], observed: DriverObservation) -> Decision:
    """Perform (again, after a crash) the recorded step, or finish it when the world shows it is done."""
    step = op.get("step")
    type_ = op.get("type")
    mode = view.spec.upgradeMode
    if step == "Claim":
        return Decision(action=Action("claim", {"jobRoot": view.job_root}))
    if step == "Compile":
        return Decision(action=Action("compile", {
            "engineVersion": op.get("engineVersion") or _target(view),
            "force": op.get("planFile") == "recompile",
        }))
    if step == "Check":
        return Decision(action=Action("check", {"engineVersion": op["engineVersion"]}))
    if step == "Migrate":
        return Decision(action=Action("migrate", {"engineVersion": op["engineVersion"], "runId": op["runId"]}))
    if step == "Standby":
        return Decision(action=Action("standby", {
            "runId": op["runId"], "engineVersion": op["engineVersion"], "planFile": op.get("planFile"),
        }))
    if step == "Stop" and op.get("standby") == "ready" and observed.standby_run_id != op.get("runId"):
        # The standby vanished before the handover (and the old run is still the writer): start it again.
        op = {**op, "step": "Standby", "stepStarted": iso(view.now), "attempt": 0,
              "message": f"the standby of run {op.get('runId')} is gone; starting it again"}
        return Decision(patch={"operation": op}, events=[Event("Warning", "StandbyLost", op["message"])])
    if step == "Activate":
        return Decision(action=Action("activate", {
            "runId": op["runId"], "engineVersion": op["engineVersion"], "snapshot": op.get("snapshot"),
            "stateless": bool(op.get("stateless")),
        }))
    if step == "Stop":
        live = observed.running and not observed.exception
        wants_snapshot = (type_ == "Upgrade" and mode == "snapshot") or type_ == "Suspend"
        how = "snapshot" if wants_snapshot or (type_ == "Restart" and mode == "snapshot" and live) else "kill"
        reason = {"Upgrade": "upgrade", "Suspend": "suspend"}.get(type_ or "", "restart")
        return Decision(action=Action("stop", {
            "how": how, "runId": view.status.get("runId"), "since": op.get("started"), "reason": reason,
        }))
    if step == "Fork":
        return Decision(action=Action("fork", {"runId": view.status.get("runId")}))
    if step == "RollbackStop":  # the target driver may still run (query exception, gate timeout)
        return Decision(action=Action("stop", {
            "how": "kill", "runId": op.get("targetRunId"), "since": op.get("started"), "reason": "rollback",
        }))
    if step == "RollbackFork":  # the target's CLI wrote the state, so it forks it
        return Decision(action=Action("fork", {
            "engineVersion": op.get("targetEngine"), "reason": "rollback", "base": op.get("upgradeSnapshot"),
        }))
    if step == "RollbackCheck":
        return Decision(action=Action("check", {"engineVersion": op["engineVersion"], "snapshot": op.get("snapshot")}))
    if step == "Snapshot":
        return Decision(action=Action("snapshot", {"reason": op.get("message") or "manual"}))
    if step in ("Launch", "Rollback"):
        # Also after a crash that left this run's driver running: launchers are idempotent per run id
        # (they answer with the running driver instead of starting a second one), and the action's result
        # carries what the status must record for the new run (driver reference, the snapshot's batch
        # count that the stability gate subtracts), which the old run's status does not have.
        return Decision(action=Action("launch", {
            "runId": op["runId"], "engineVersion": op["engineVersion"], "snapshot": op.get("snapshot"),
            "planFile": op.get("planFile"), "stateless": bool(op.get("stateless")),
        }))
    if step == "Stabilize":
        return _stabilize(view, op, observed)
    # An unknown step (older operator wrote it): drop the operation, the next tick re-classifies.
    return Decision(patch={"operation": None, "error": f"abandoned unknown operation step {step!r}"})


def _gate(view: JobView) -> tuple[int, float]:
    min_batches = view.spec.rollback.minBatches or view.config.stability.minBatches
    window = parse_duration(view.spec.rollback.stabilityWindow or view.config.stability.window)
    return min_batches, window


def _stabilize(view: JobView, op: dict[str, Any], observed: DriverObservation) -> Decision:
    """The stability gate: N committed batches, no query exception, driver alive, within the window."""
    min_batches, window = _gate(view)
    baseline = (view.status.get("driver") or {}).get("baselineBatches") or 0
    if not observed.running or observed.run_id not in (None, op.get("runId")):
        return _gate_failed(view, op, f"the new driver exited (exit code {observed.exit_code})")
    if observed.exception:
        return _gate_failed(view, op, f"query exception on the new engine: {observed.exception}")
    committed = (observed.batches or 0) - baseline
    if observed.healthy and committed >= min_batches:
        return _upgrade_succeeded(view, op, committed)
    if _seconds_since(op.get("stepStarted"), view.now) > window:
        return _gate_failed(
            view, op, f"only {max(committed, 0)} of {min_batches} batches committed within {window:g}s"
        )
    return Decision()


def _upgrade_succeeded(view: JobView, op: dict[str, Any], committed: int) -> Decision:
    upgrade = dict(view.status.get("upgrade") or {})
    message = f"engine {upgrade.get('to')} committed {committed} batches without an exception"
    upgrade.update(step="Succeeded", finished=iso(view.now), message=message)
    patch = {
        "operation": None, "upgrade": upgrade, "phase": "Running",
        "lastStableSpec": stable_spec(view, op["engineVersion"]),
        "conditions": conditions(view, "Running"),
    }
    return Decision(patch=patch, events=[Event("Normal", "UpgradeSucceeded", message)])


def _gate_failed(view: JobView, op: dict[str, Any], cause: str) -> Decision:
    upgrade = dict(view.status.get("upgrade") or {})
    if not view.spec.rollback.enabled:
        upgrade.update(step="Failed", finished=iso(view.now), message=cause)
        patch = {"operation": None, "upgrade": upgrade, "phase": "Failed", "error": cause,
                 "conditions": conditions(view, "Failed", degraded=("UpgradeFailed", cause))}
        return Decision(patch=patch, events=[Event("Warning", "UpgradeFailed", cause + "; rollback disabled")])
    upgrade.update(step="RollbackStop", message=cause)
    snapshot = upgrade.get("snapshot") or op.get("snapshot")
    rollback = _op(
        view, "Upgrade", "RollbackStop", runId=view.new_run_id, engineVersion=upgrade.get("from"),
        snapshot=snapshot, upgradeSnapshot=snapshot, targetEngine=upgrade.get("to") or op.get("engineVersion"),
        targetRunId=op.get("runId"), stateless=True if op.get("stateless") else None, message=cause, cause=cause,
    )
    patch = {"operation": rollback, "upgrade": upgrade, "phase": "RollingBack",
             "conditions": conditions(view, "RollingBack", progressing=True, upgrading=True,
                                      degraded=("UpgradeFailed", cause))}
    return Decision(patch=patch, events=[Event("Warning", "RollingBack", cause)])


def stable_spec(view: JobView, engine: str) -> dict[str, Any]:
    return {
        "engineVersion": engine,
        "specHash": specdiff.program_hash(view.spec),
        "configHash": specdiff.config_hash(view.spec),
        "upgradeMode": view.spec.upgradeMode,
    }


# ---------------------------------------------------------------------------------------------- advance
def advance(view: JobView, action: Action, result: Result) -> Decision:
    """The status after an action ran (or failed): the next step, or the end of the operation."""
    if action.kind == "discard":
        return Decision()  # a stray standby is gone (or is killed again on the next tick); nothing to record
    op = dict(view.status.get("operation") or {})
    step = op.get("step")
    type_ = op.get("type")
    now = iso(view.now)

    def goto(next_step: str, **fields: Any) -> Decision:
        op.update(fields, step=next_step, stepStarted=now, attempt=0)
        patch: dict[str, Any] = {"operation": op}
        if type_ == "Upgrade":
            upgrade = dict(view.status.get("upgrade") or {})
            upgrade.update(step=next_step, message=op.get("message") or upgrade.get("message"))
            if op.get("snapshot"):
                upgrade["snapshot"] = op["snapshot"]
            patch["upgrade"] = upgrade
        return Decision(patch=patch)

    if not result.ok:
        return _failed(view, op, result)

    if step == "Claim":
        return goto("Compile")
    if step == "Compile":
        decision = goto("Launch", runId=view.new_run_id, planFile=None,
                        stateless=True if op.get("planFile") == "recompile" else None)
        decision.patch.update(
            planId=result.values.get("planId"), specHash=specdiff.program_hash(view.spec),
            jobRoot=view.job_root, phase="Starting",
        )
        if op.get("planFile") == "recompile":
            decision.patch["operation"]["snapshot"] = None
        return decision
    if step == "Check":
        verdict = result.values.get("verdict")
        if verdict == "incompatible":
            return _refused(view, op, result.values.get("reason") or "incompatible")
        if verdict == "migrate":
            return goto("Migrate", runId=view.new_run_id, message="migrating the plan for the new run")
        return goto("Standby", runId=view.new_run_id,
                    message=f"plan compatible; starting engine {op.get('engineVersion')} in standby")
    if step == "Migrate":
        return goto("Standby", planFile=result.values.get("planFile"),
                    message=f"plan migrated; starting engine {op.get('engineVersion')} in standby")
    if step == "Standby":
        if result.values.get("standby") == "ready":
            return goto("Stop", standby="ready",
                        message=f"engine {op.get('engineVersion')} in standby; stopping the old driver")
        return goto("Stop", standby="unsupported",
                    message=f"engine {op.get('engineVersion')} has no standby mode; stopping the old driver, then "
                            "a cold start")
    if step == "Stop":
        snapshot = result.values.get("snapshot")
        patch_snap = _record_snapshot(view, result.values.get("snapshotRef"))
        if type_ == "Suspend":
            decision = Decision(patch={
                "operation": None, "phase": "Suspended", "conditions": conditions(view, "Suspended"),
                "driver": None,
            }, events=[Event("Normal", "Suspended", f"stopped with snapshot {snapshot}")])
            decision.patch.update(patch_snap)
            return decision
        needs_fork = view.spec.upgradeMode == "last-checkpoint" or (not snapshot and type_ == "Restart")
        stateless = view.spec.upgradeMode == "stateless" and type_ == "Upgrade"
        start = _start_step(op)
        if stateless:
            decision = goto(start, snapshot=None, stateless=True)
        elif needs_fork:
            decision = goto("Fork")
        else:
            decision = goto(start, snapshot=snapshot)
        decision.patch["operation"].setdefault("runId", None)
        if not decision.patch["operation"].get("runId"):
            decision.patch["operation"]["runId"] = view.new_run_id
        decision.patch["operation"].setdefault("engineVersion", view.status.get("engineVersion"))
        if not decision.patch["operation"].get("engineVersion"):
            decision.patch["operation"]["engineVersion"] = view.status.get("engineVersion")
        decision.patch.update(patch_snap)
        return decision
    if step == "Fork":
        decision = goto(_start_step(op), snapshot=result.values.get("snapshot"))
        decision.patch.update(_record_snapshot(view, result.values.get("snapshotRef")))
        return decision
    if step == "RollbackStop":
        return goto("Rollback" if op.get("stateless") else "RollbackFork")
    if step == "RollbackFork":
        if not result.values.get("forked"):  # the target committed nothing beyond S: S is its state too
            return goto("Rollback", snapshot=op.get("upgradeSnapshot"))
        decision = goto("RollbackCheck", snapshot=result.values.get("snapshot"))
        decision.patch.update(_record_snapshot(view, result.values.get("snapshotRef")))
        return decision
    if step == "RollbackCheck":
        if result.values.get("verdict") != "compatible":
            return _rollback_blocked(view, op, result.values.get("reason") or str(result.values.get("verdict")))
        return goto("Rollback")
    if step == "Snapshot":
        patch = {"operation": None, "snapshotNonce": view.spec.snapshotNonce,
                 **_record_snapshot(view, result.values.get("snapshotRef"))}
        return Decision(patch=patch, events=[
            Event("Normal", "SnapshotTaken", f"snapshot {result.values.get('snapshot')} ({op.get('message')})")
        ])
    if step in ("Launch", "Rollback"):
        return _launched(view, op, step, result)
    if step == "Activate":
        return _launched(view, op, "Launch", result)
    return Decision(patch={"operation": None})


def _start_step(op: dict[str, Any]) -> str:
    """How the new run starts after the stop: the ready standby, or a cold launch."""
    return "Activate" if op.get("type") == "Upgrade" and op.get("standby") == "ready" else "Launch"


def _launched(view: JobView, op: dict[str, Any], step: str, result: Result) -> Decision:
    driver = {
        "launcher": view.config.launcher,
        "name": result.values.get("name") or (view.status.get("driver") or {}).get("name"),
        "statusUrl": result.values.get("statusUrl") or (view.status.get("driver") or {}).get("statusUrl"),
        "startedAt": iso(view.now),
        "configHash": specdiff.config_hash(view.spec),
        "baselineBatches": int(result.values.get("baselineBatches") or 0),
    }
    patch: dict[str, Any] = {
        "runId": op["runId"], "engineVersion": op["engineVersion"], "driver": driver,
        "restartNonce": view.spec.restartNonce,
    }
    type_ = op.get("type")
    if type_ == "Upgrade" and step == "Launch":
        op.update(step="Stabilize", stepStarted=iso(view.now), attempt=0,
                  message="waiting for the stability gate")
        upgrade = dict(view.status.get("upgrade") or {})
        upgrade.update(step="Stabilize", message=op["message"])
        patch.update(operation=op, upgrade=upgrade)
        return Decision(patch=patch, events=[Event("Normal", "UpgradeHandover",
                                                   f"engine {op['engineVersion']} started run {op['runId']}")])
    if step == "Rollback":
        upgrade = dict(view.status.get("upgrade") or {})
        cause = op.get("cause") or upgrade.get("message") or "stability gate failed"
        upgrade["snapshot"] = op.get("snapshot")
        upgrade.update(step="RolledBack", finished=iso(view.now), message=cause)
        patch.update(
            operation=None, upgrade=upgrade, phase="RolledBack",
            conditions=conditions(view, "RolledBack", degraded=("RolledBack", cause)),
        )
        return Decision(patch=patch, events=[Event(
            "Warning", "RolledBack",
            f"upgrade to {upgrade.get('to')} rolled back to {op['engineVersion']} from snapshot "
            f"{op.get('snapshot')}: {cause}",
        )])
    patch.update(operation=None, phase="Running", conditions=conditions(view, "Running"))
    if type_ in ("Start", "Restart", "Resume"):
        patch["lastStableSpec"] = stable_spec(view, op["engineVersion"])
    return Decision(patch=patch, events=[Event("Normal", "Started", f"run {op['runId']} on engine "
                                                                  f"{op['engineVersion']} ({type_})")])


def _refused(view: JobView, op: dict[str, Any], reason: str, *, condition: str = "UpgradeRefused") -> Decision:
    upgrade = dict(view.status.get("upgrade") or {})
    message = f"engine {upgrade.get('to')} cannot run this plan: {reason}; the job keeps running on " \
              f"{upgrade.get('from')}"
    upgrade.update(step="Refused", finished=iso(view.now), message=message)
    phase = "Running" if view.status.get("runId") else "Failed"
    patch = {"operation": None, "upgrade": upgrade, "phase": phase, "error": message,
             "conditions": conditions(view, phase, degraded=(condition, message))}
    return Decision(patch=patch, events=[Event("Warning", "UpgradeRefused", message)])


def _rollback_blocked(view: JobView, op: dict[str, Any], reason: str) -> Decision:
    """The old engine cannot read the target's state: starting it from S would lose or duplicate output."""
    upgrade = dict(view.status.get("upgrade") or {})
    target, old = op.get("targetEngine") or upgrade.get("to"), op.get("engineVersion")
    message = (
        f"rollback blocked: engine {target} committed output past the upgrade snapshot "
        f"{op.get('upgradeSnapshot')} before it failed ({op.get('cause') or upgrade.get('message')}), and engine "
        f"{old} cannot read its state in snapshot {op.get('snapshot')} ({reason}); restarting engine {old} from "
        f"the earlier snapshot would lose or duplicate that output, so nothing was started. Fix the target engine "
        f"or choose one that can run this job and set spec.engineVersion to it (that upgrade carries the target's "
        f"state on), or set spec.upgradeMode: stateless and choose the engine to start over without the state"
    )
    upgrade.update(step="Failed", finished=iso(view.now), message=message, snapshot=op.get("snapshot"))
    patch = {"operation": None, "upgrade": upgrade, "phase": "Failed", "error": message,
             "observedGeneration": view.generation,
             "conditions": conditions(view, "Failed", degraded=("RollbackBlocked", message))}
    return Decision(patch=patch, events=[Event("Warning", "RollbackBlocked", message)])


def _failed(view: JobView, op: dict[str, Any], result: Result) -> Decision:
    """A failed side effect: transient ones retry (same step), permanent ones end the operation."""
    step = op.get("step")
    type_ = op.get("type")
    reason = result.reason or "StepFailed"
    message = f"{type_} step {step} failed: {result.error}"
    if type_ == "Upgrade" and step in ("Check", "Migrate"):
        return _refused(view, op, result.error)
    if type_ == "Upgrade" and step == "Standby":  # the launcher killed the standby; the old run never paused
        return _refused(view, op, f"it failed in standby: {result.error}", condition="StandbyFailed")
    if type_ == "Upgrade" and step == "Activate":  # the old run is stopped: start the target cold instead
        op.update(step="Launch", runId=view.new_run_id, standby="lost", stepStarted=iso(view.now), attempt=0,
                  message=f"the standby did not start ({result.error}); starting engine {op.get('engineVersion')} "
                          "cold")
        upgrade = dict(view.status.get("upgrade") or {})
        upgrade.update(step="Launch", message=op["message"])
        return Decision(patch={"operation": op, "upgrade": upgrade},
                        events=[Event("Warning", "StandbyLost", op["message"])])
    if type_ == "Upgrade" and step == "Launch":
        return _gate_failed(view, op, f"the new engine failed to start: {result.error}")
    if type_ == "Upgrade" and step == "RollbackCheck" and result.values.get("permanent"):
        return _rollback_blocked(view, op, result.error)
    if step in ("Claim", "Compile") or result.values.get("permanent"):
        patch = {"operation": None, "phase": "Failed", "error": message, "observedGeneration": view.generation,
                 "conditions": conditions(view, "Failed", degraded=(reason, message))}
        return Decision(patch=patch, events=[Event("Warning", reason, message)])
    attempt = int(op.get("attempt") or 0) + 1
    op.update(attempt=attempt, message=message)
    return Decision(patch={"operation": op, "error": message}, events=[Event("Warning", reason, message)],
                    delay=backoff_seconds(attempt, view.config))


# ---------------------------------------------------------------------------------------------- snapshots
def _record_snapshot(view: JobView, ref: dict[str, Any] | None) -> dict[str, Any]:
    if not ref or not ref.get("id"):
        return {}
    history = [s for s in (view.status.get("snapshots") or []) if s.get("id") != ref["id"]]
    history.append(ref)
    keep, _ = retention(history, view.now, view.config.snapshots.maxCount,
                        parse_duration(view.config.snapshots.maxAge), pinned=_pinned(view, ref["id"]))
    return {"lastSnapshot": ref, "snapshots": keep}


def _pinned(view: JobView, newest: str) -> set[str]:
    pinned = {newest}
    for holder in (view.status.get("operation") or {}, view.status.get("upgrade") or {}):
        if holder.get("snapshot"):
            pinned.add(holder["snapshot"])
    return pinned


def retention(
    history: list[dict[str, Any]], now: datetime, max_count: int, max_age: float, pinned: set[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split snapshot history (oldest first) into kept and dropped: newest ``max_count`` younger than
    ``max_age``, plus every pinned one (the newest, and any an operation may still hand over with)."""
    keep: list[dict[str, Any]] = []
    drop: list[dict[str, Any]] = []
    young = [s for s in history if _seconds_since(s.get("createdAt"), now) <= max_age or s["id"] in pinned]
    allowed = {s["id"] for s in young[-max_count:]} | pinned
    for snap in history:
        (keep if snap["id"] in allowed else drop).append(snap)
    return keep, drop


# ---------------------------------------------------------------------------------------------- conditions
def conditions(
    view: JobView,
    phase: str | None,
    *,
    progressing: bool = False,
    upgrading: bool = False,
    degraded: tuple[str, str] | None = None,
    waiting: str | None = None,
) -> list[dict[str, Any]]:
    """Ready/Progressing/Degraded/UpgradeInProgress for a phase; transition times kept when unchanged."""
    ready = phase in RUNNING_PHASES
    if degraded is None and phase == "RolledBack":
        upgrade = view.status.get("upgrade") or {}
        degraded = ("RolledBack", upgrade.get("message") or "upgrade rolled back")
    if degraded is None and view.status.get("error") and phase not in (None, "Pending"):
        blocked = specdiff.classify(view.spec, view.status, view.config.defaultEngineVersion)
        if blocked in (Change.UPGRADE_BLOCKED, Change.PLAN_CHANGED):
            degraded = ("ChangeRefused", view.status["error"])
    wanted = {
        "Ready": ("True" if ready else "False", phase or "Pending", f"phase {phase or 'Pending'}"),
        "Progressing": ("True" if progressing or waiting else "False",
                        "RolloutWaiting" if waiting else ("Reconciling" if progressing else "Idle"),
                        waiting or ("an operation is in progress" if progressing else "nothing to do")),
        "Degraded": ("True" if degraded else "False", degraded[0] if degraded else "Healthy",
                     degraded[1] if degraded else "no known problem"),
        "UpgradeInProgress": ("True" if upgrading else "False", "Upgrading" if upgrading else "NoUpgrade",
                              "engine upgrade in progress" if upgrading else "no upgrade in progress"),
    }
    previous = {c.get("type"): c for c in view.status.get("conditions") or []}
    result = []
    for type_, (status, reason, message) in wanted.items():
        old = previous.get(type_) or {}
        since = old.get("lastTransitionTime") if old.get("status") == status else None
        result.append({
            "type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": since or iso(view.now), "observedGeneration": view.generation,
        })
    return result


def _conditions_differ(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> bool:
    def key(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return sorted((c.get("type"), c.get("status"), c.get("reason"), c.get("message"),
                       c.get("observedGeneration")) for c in items)
    return key(old) != key(new)
