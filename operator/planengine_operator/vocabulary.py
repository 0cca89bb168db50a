"""The vocabulary of the state machine: what it sees, what it decides, and the status pieces it builds.

Pure data and pure functions (no I/O). A :class:`Decision` carries the *whole* next status as a typed
:class:`~planengine_operator.models.JobStatus` (the reconciler writes the merge patch from the stored one),
at most one :class:`Action` to run after that write, and the events to post.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any, Literal

from planengine_operator import specdiff
from planengine_operator.config import OperatorConfig, parse_duration
from planengine_operator.models import Condition, JobSpec, JobStatus, Operation, SnapshotRef, StableSpec, UpgradeRecord
from planengine_operator.specdiff import Change

ActionKind = Literal["claim", "compile", "check", "migrate", "standby", "stop", "fork", "activate", "launch",
                     "snapshot", "discard"]
RUNNING_PHASES = ("Running", "RolledBack")


@dataclasses.dataclass(frozen=True)
class DriverObservation:
    """What the launcher saw of the job's driver right now."""

    running: bool = False
    run_id: str | None = None
    healthy: bool = False  # the status API answered
    batches: int | None = None  # committed batches summed over queries (lastBatchId + 1)
    exception: str | None = None
    exit_code: int | None = None
    message: str | None = None  # why an exited driver failed, in its own words (its last error line and hint)
    standby_run_id: str | None = None  # run id of a live standby driver (``run --standby``), if any
    problem: str | None = None  # why the driver's pod cannot start (image pull, missing claim): not a silent Pending
    # Every query active and caught up with its sources (``caughtUp`` in /v1/status): no input to commit, which
    # the stability gate counts as healthy. None: the driver does not say (an engine before the field).
    idle: bool | None = None
    not_idle: str | None = None  # when not idle: the first query that is not caught up, and why

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

    @property
    def permanent(self) -> bool:
        return bool(self.values.get("permanent"))


@dataclasses.dataclass(frozen=True)
class Event:
    type: Literal["Normal", "Warning"]
    reason: str
    message: str


@dataclasses.dataclass
class Decision:
    status: JobStatus | None = None  # the status to write before the action (None: unchanged)
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
    status: JobStatus
    config: OperatorConfig
    job_root: str
    now: datetime
    new_run_id: str  # used only if this decision starts a run
    fleet_allowed: bool = True  # the fleet rollout has a free slot and is not paused
    spec_job_root: str | None = None  # the job root the spec's storage names (immutable once in force)
    # Hash of what the program's ConfigMaps hold now (``sources.observed_hash``); None: not known.
    source_hash: str | None = None

    def next_status(self, **changes: Any) -> JobStatus:
        """A deep copy of the status with ``changes`` (typed values; ``None`` removes a field). Every status
        the operator writes names the engine version it is steering the job to (``kubectl get spj``)."""
        status = self.status.model_copy(deep=True)
        status.desiredEngineVersion = target_engine(self)
        for key, value in changes.items():
            setattr(status, key, value)
        return status


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def seconds_since(text: str | None, now: datetime) -> float:
    moment = parse_iso(text)
    return float("inf") if moment is None else (now - moment).total_seconds()


def target_engine(view: JobView) -> str:
    return specdiff.target_engine(view.spec, view.config.defaultEngineVersion)


def new_operation(view: JobView, type_: str, step: str, **fields: Any) -> Operation:
    now = iso(view.now)
    values = {k: v for k, v in fields.items() if v is not None}
    return Operation.model_validate({"type": type_, "step": step, "started": now, "stepStarted": now, "attempt": 0,
                                     **values})


def upgrade_record(view: JobView) -> UpgradeRecord:
    """A copy of ``status.upgrade`` to change (an empty record if there is none)."""
    return (view.status.upgrade or UpgradeRecord()).model_copy(deep=True)


def stable_spec(view: JobView, engine: str) -> StableSpec:
    return StableSpec(engineVersion=engine, specHash=specdiff.program_hash(view.spec),
                      configHash=specdiff.config_hash(view.spec), upgradeMode=view.spec.upgradeMode)


def backoff_seconds(count: int, config: OperatorConfig) -> float:
    """Exponential backoff between automatic restarts so a crash loop does not hammer the cluster."""
    if count <= 0:
        return 0.0
    return min(config.timing.restartBackoffBase * 2 ** (count - 1), config.timing.restartBackoffMax)


# ---------------------------------------------------------------------------------------------- snapshots
@dataclasses.dataclass(frozen=True)
class SnapshotPolicy:
    """The job's snapshot schedule and retention: ``spec.snapshots`` field by field over the operator's."""

    interval: float  # seconds; 0 = no periodic snapshots
    max_count: int
    max_age: float  # seconds


def snapshot_policy(view: JobView) -> SnapshotPolicy:
    own, default = view.spec.snapshots, view.config.snapshots
    return SnapshotPolicy(interval=parse_duration(own.interval or default.interval),
                          max_count=own.maxCount or default.maxCount,
                          max_age=parse_duration(own.maxAge or default.maxAge))


def record_snapshot(view: JobView, status: JobStatus, ref: dict[str, Any] | None) -> None:
    """Make ``ref`` the newest snapshot of ``status`` (in place) and apply the retention to the history."""
    if not ref or not ref.get("id"):
        return
    snapshot = SnapshotRef.model_validate(ref)
    history = [s for s in status.snapshots if s.id != snapshot.id] + [snapshot]
    policy = snapshot_policy(view)
    keep, _ = retention(history, view.now, policy.max_count, policy.max_age, pinned=_pinned(view, snapshot.id))
    status.lastSnapshot = snapshot
    status.snapshots = keep


def _pinned(view: JobView, newest: str) -> set[str]:
    pinned = {newest}
    for holder in (view.status.operation, view.status.upgrade):
        if holder is not None and holder.snapshot:
            pinned.add(holder.snapshot)
    return pinned


def retention(history: list[SnapshotRef], now: datetime, max_count: int, max_age: float,
              pinned: set[str]) -> tuple[list[SnapshotRef], list[SnapshotRef]]:
    """Split snapshot history (oldest first) into kept and dropped: newest ``max_count`` younger than
    ``max_age``, plus every pinned one (the newest, and any an operation may still hand over with)."""
    young = [s for s in history if seconds_since(s.createdAt, now) <= max_age or s.id in pinned]
    allowed = {s.id for s in young[-max_count:]} | pinned
    keep = [s for s in history if s.id in allowed]
    drop = [s for s in history if s.id not in allowed]
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
) -> list[Condition]:
    """Ready/Progressing/Degraded/UpgradeInProgress for a phase; transition times kept when unchanged."""
    status = view.status
    ready = phase in RUNNING_PHASES
    if degraded is None and phase == "RolledBack":
        degraded = ("RolledBack", (status.upgrade.message if status.upgrade else None) or "upgrade rolled back")
    if degraded is None and status.error and phase not in (None, "Pending"):
        blocked = specdiff.classify(view.spec, status, view.config.defaultEngineVersion, view.source_hash)
        if blocked is Change.PLAN_CHANGED:
            degraded = ("PlanChangeRefused", status.error)
        elif blocked is Change.UPGRADE_BLOCKED:
            degraded = ("ChangeRefused", status.error)
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
    result = []
    for type_, (state, reason, message) in wanted.items():
        old = status.condition(type_)
        since = old.lastTransitionTime if old is not None and old.status == state else None
        result.append(Condition.model_validate({
            "type": type_, "status": state, "reason": reason, "message": message,
            "lastTransitionTime": since or iso(view.now), "observedGeneration": view.generation,
        }))
    return result


def conditions_differ(old: list[Condition], new: list[Condition]) -> bool:
    def key(items: list[Condition]) -> list[tuple[Any, ...]]:
        return sorted((c.type, c.status, c.reason, c.message, c.observedGeneration) for c in items)
    return key(old) != key(new)
