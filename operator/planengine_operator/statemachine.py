"""The job's state machine: pure decisions over (spec, status, observation, clock).

Nothing here performs I/O. ``decide`` looks at the desired spec, the status (our write-ahead log) and what
the launcher observed, and returns a :class:`Decision`: the next status to write *first* and at most one
side effect to run after it. ``advance`` turns that side effect's result into the next status. A crashed
operator re-reads the status and ``decide`` hands it the same step again, and every step is written so that
repeating it is safe (launch is keyed by run id, stop tolerates an absent driver, tools are re-runnable), so
a restart resumes the protocol instead of repeating completed side effects. The steps of every operation
are one table, ``protocol.STEPS`` (its docstring draws the operations); this module starts operations and
keeps a job without one healthy (health checks, periodic snapshots, conditions).

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

import re
from typing import Any

from planengine_operator import specdiff, validation
from planengine_operator.models import Operation, Restarts, UpgradeRecord
from planengine_operator.protocol import STANDBY_STEPS, STEPS, step_of
from planengine_operator.specdiff import Change
from planengine_operator.vocabulary import (
    RUNNING_PHASES,
    Action,
    Decision,
    DriverObservation,
    Event,
    JobView,
    Result,
    backoff_seconds,
    conditions,
    conditions_differ,
    iso,
    new_operation,
    parse_iso,
    retention,
    seconds_since,
    snapshot_policy,
    target_engine,
)

__all__ = ["STEPS", "Action", "Decision", "DriverObservation", "Event", "JobView", "Result", "advance",
           "backoff_seconds", "decide", "iso", "parse_iso", "retention"]


# ---------------------------------------------------------------------------------------------- decide
def decide(view: JobView, observed: DriverObservation) -> Decision:
    """The next step for this job: a write-ahead status and at most one side effect."""
    status = view.status
    op = status.operation if status.operation is not None and status.operation.type else None
    if observed.standby_run_id and not _wants_standby(op, observed.standby_run_id):
        return Decision(action=Action("discard", {"runId": observed.standby_run_id}))
    if op is not None:
        step = step_of(op)
        if step is None:  # a step another operator version wrote: drop the operation, the next tick re-classifies
            return Decision(status=view.next_status(operation=None,
                                                    error=f"abandoned unknown operation step {op.step!r}"))
        return step.act(view, op, observed)
    if status.phase == "Failed" and status.observedGeneration == view.generation:
        return Decision()  # a permanent failure waits for a spec change
    problems = validation.problems(view.spec, status, view.config, view.spec_job_root, view.source_hash)
    if problems:  # the admission webhook's rules: a spec that got past it is reported, not attempted
        if _keeps_running(view, problems[0]):
            return _steady(view, observed)
        return _refuse_invalid(view, problems[0])
    change = specdiff.classify(view.spec, status, view.config.defaultEngineVersion, view.source_hash)
    if change is Change.START:
        initial = view.spec.initialSnapshot
        return _begin(view, "Start", "Claim", phase="Pending", engineVersion=target_engine(view),
                      snapshotPath=initial.uri.removeprefix("file://") if initial is not None else None)
    if change is Change.RECOMPILE:
        return _begin(view, "Start", "Claim", phase="Restarting", engineVersion=target_engine(view),
                      recompile=True)
    if change is Change.SUSPEND:
        return _begin(view, "Suspend", "Stop", phase="Suspending")
    if change is Change.RESUME:
        return _begin(view, "Resume", "Launch", phase="Starting", runId=view.new_run_id,
                      snapshot=status.lastSnapshot.id if status.lastSnapshot else None,
                      engineVersion=status.engineVersion or target_engine(view))
    if change is Change.UPGRADE:
        if view.spec.engineVersion is None and not view.fleet_allowed:
            return _steady(view, observed, waiting="fleet rollout waiting for a free slot or paused")
        return _begin_upgrade(view)
    if change is Change.RESTART:  # a person asked: the automatic restarts' count starts again (restartLimit)
        decision = _begin(view, "Restart", "Stop", phase="Restarting", reason="spec")
        if decision.status is not None and decision.status.restarts is not None:
            decision.status.restarts = decision.status.restarts.model_copy(update={"count": 0})
        return decision
    if change is Change.SNAPSHOT:
        return _begin(view, "Snapshot", "Snapshot", reason="manual")
    return _steady(view, observed)


def _wants_standby(op: Operation | None, standby_run_id: str) -> bool:
    """The restart rule: a standby is reused only by the upgrade step that expects it, else killed."""
    return op is not None and op.type == "Upgrade" and op.step in STANDBY_STEPS and op.runId == standby_run_id


def _begin(view: JobView, type_: str, step: str, *, phase: str | None = None, reason: str | None = None,
           **fields: Any) -> Decision:
    """Record the new operation; the next decide() performs its first step."""
    message = f"{type_} requested" + (f" ({reason})" if reason else "")
    op = new_operation(view, type_, step, message=reason or message, **fields)
    status = view.next_status(operation=op, observedGeneration=view.generation, error=None)
    if phase:
        status.phase = phase  # type: ignore[assignment]
    status.conditions = conditions(view, phase or view.status.phase, progressing=True)
    return Decision(status=status, events=[Event("Normal", type_, message)])


def _begin_upgrade(view: JobView) -> Decision:
    target = target_engine(view)
    source = view.status.engineVersion
    message = f"checking the plan on engine {target}"
    upgrade = UpgradeRecord.model_validate({
        "from": source, "to": target, "step": "Check", "started": iso(view.now), "message": message,
        "fleet": view.spec.engineVersion is None, "fromRunId": view.status.runId})
    op = new_operation(view, "Upgrade", "Check", engineVersion=target, message=message)
    status = view.next_status(operation=op, upgrade=upgrade, phase="Upgrading", observedGeneration=view.generation,
                              conditions=conditions(view, "Upgrading", progressing=True, upgrading=True))
    return Decision(status=status, events=[Event("Normal", "UpgradeStarted", f"upgrade {source} -> {target}")])


def _keeps_running(view: JobView, problem: validation.Problem) -> bool:
    """A refused program change on a running job, already reported: keep supervising the run it has (health,
    automatic restarts, periodic snapshots) with the problem shown, instead of leaving the job unwatched."""
    return (problem.reason == "PlanChangeRefused" and view.status.phase in RUNNING_PHASES
            and (view.status.error or "") == problem.message)


def _refuse_invalid(view: JobView, problem: validation.Problem) -> Decision:
    """Report a broken rule once (error, Degraded condition, Warning event) and do nothing else."""
    if (view.status.error or "") == problem.message:
        return Decision()
    status = view.next_status(error=problem.message, observedGeneration=view.generation,
                              conditions=conditions(view, view.status.phase,
                                                    degraded=(problem.reason, problem.message)))
    if not view.status.phase:
        status.phase = "Pending"
    return Decision(status=status, events=[Event("Warning", problem.reason, problem.message)])


# ---------------------------------------------------------------------------------------------- steady
def _steady(view: JobView, observed: DriverObservation, waiting: str | None = None) -> Decision:
    """No operation in flight: health checks, periodic snapshots and condition upkeep."""
    status = view.status
    phase = status.phase
    if phase in RUNNING_PHASES and view.spec.state == "running":
        failure = _driver_failure(view, observed)
        if failure:
            return _auto_restart(view, failure)
        interval = snapshot_policy(view).interval
        last = (status.lastSnapshot.createdAt if status.lastSnapshot else None) or (
            status.driver.startedAt if status.driver else None)
        if interval > 0 and seconds_since(last, view.now) >= interval:
            return _begin(view, "Snapshot", "Snapshot", reason="periodic")
    new = view.next_status()
    if _upgrade_withdrawn(view):
        assert status.upgrade is not None
        new.upgrade = status.upgrade.model_copy(update={"withdrawn": iso(view.now)})
        if phase == "RolledBack":  # the user chose to stay on the engine the job runs: nothing is degraded
            new.phase = phase = "Running"
    restarts = status.restarts
    baseline = (status.driver.baselineBatches if status.driver else None) or 0
    if restarts is not None and restarts.count and observed.batches is not None and observed.batches > baseline:
        new.restarts = Restarts(count=0, lastAt=restarts.lastAt, reason=restarts.reason)
    new.observedGeneration = view.generation
    wanted = conditions(view, phase, waiting=waiting)
    if conditions_differ(status.conditions, wanted):
        new.conditions = wanted
    if status.error and not waiting and phase in RUNNING_PHASES:
        blocked = specdiff.classify(view.spec, status, view.config.defaultEngineVersion, view.source_hash)
        if blocked not in (Change.UPGRADE_BLOCKED, Change.PLAN_CHANGED):
            new.error = None
    return Decision(status=None if new == status else new)


def _upgrade_withdrawn(view: JobView) -> bool:
    """The spec no longer asks for the target a refusal or rollback blocked (engineVersion was set back, or
    changed to another version): remember it, so asking for that target again later tries it again."""
    upgrade = view.status.upgrade
    return (upgrade is not None and upgrade.step in ("Refused", "RolledBack") and not upgrade.withdrawn
            and upgrade.to != target_engine(view))


def _driver_failure(view: JobView, observed: DriverObservation) -> str | None:
    run_id = view.status.runId
    if observed.problem:
        return f"driver of run {run_id} cannot start: {observed.problem}"
    if not observed.running or (observed.run_id and observed.run_id != run_id):
        code = "" if observed.exit_code is None else f" (exit code {observed.exit_code})"
        said = f": {observed.message}" if observed.message else ""
        return f"driver of run {run_id} is gone{code}{said}"
    if observed.exception:
        return f"query failed: {observed.exception}"
    return None


def _same_failure(a: str | None, b: str) -> bool:
    """Two restart reasons that differ only in the run they name (each restart is a new run).

    >>> _same_failure("driver of run r-20261207T225632Z-b9e3 is gone (exit code 2): x",
    ...               "driver of run r-20261207T225659Z-1f32 is gone (exit code 2): x")
    True
    """
    return a is not None and _RUN_ID.sub("r-…", a) == _RUN_ID.sub("r-…", b)


_RUN_ID = re.compile(r"\br-\d{8}T\d{6}Z-[0-9a-f]{4}\b")


def _auto_restart(view: JobView, failure: str) -> Decision:
    restarts = view.status.restarts or Restarts()
    count = int(restarts.count or 0)
    limit = view.config.timing.restartLimit
    if limit and count >= limit and _same_failure(restarts.reason, failure):
        return _give_up(view, failure, count + 1)
    wait = backoff_seconds(count, view.config) - seconds_since(restarts.lastAt, view.now)
    degraded = ("DriverFailed", failure)
    if wait > 0:
        wanted = conditions(view, view.status.phase, degraded=degraded)
        if not conditions_differ(view.status.conditions, wanted):
            return Decision(delay=wait)
        return Decision(status=view.next_status(conditions=wanted), delay=wait)
    decision = _begin(view, "Restart", "Stop", phase="Restarting", reason=failure)
    assert decision.status is not None
    decision.status.restarts = Restarts(count=count + 1, lastAt=iso(view.now), reason=failure)
    decision.status.conditions = conditions(view, "Restarting", progressing=True, degraded=degraded)
    decision.events = [Event("Warning", "DriverFailed", f"{failure}; restarting from the latest snapshot")]
    return decision


def _give_up(view: JobView, failure: str, times: int) -> Decision:
    """The driver failed ``times`` times in a row the same way: another restart would too. ``Failed`` keeps the
    engine's own error (what was wrong and its hint) where a person looks, and says how to start again."""
    message = (f"{failure}; the driver failed {times} times in a row the same way, so it is not restarted again "
               "(timing.restartLimit): fix what the error says, then set spec.restartNonce to a new value to start "
               "again")
    status = view.next_status(operation=None, phase="Failed", error=message, observedGeneration=view.generation,
                              conditions=conditions(view, "Failed", degraded=("DriverFailed", message)))
    return Decision(status=status, events=[Event("Warning", "DriverFailedRepeatedly", message)])


# ---------------------------------------------------------------------------------------------- advance
def advance(view: JobView, action: Action, result: Result) -> Decision:
    """The status after an action ran (or failed): the next step, or the end of the operation."""
    if action.kind == "discard":
        return Decision()  # a stray standby is gone (or is killed again on the next tick); nothing to record
    op = view.status.operation
    step = step_of(op) if op is not None else None
    if op is None or step is None:
        return Decision(status=view.next_status(operation=None))
    then = step.on_ok if result.ok else step.on_fail
    if then is None:  # the step runs no action; nothing to record
        return Decision()
    return then(view, op, result)
