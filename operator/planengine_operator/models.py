"""Typed views of SparkPlanJob spec and status: the only way the operator reads and writes them.

The CRD (``crds/sparkplanjobs.planengine.io.yaml``) is the schema the API server enforces, and these models
are that schema in Python: a test walks both trees so a field added on one side only fails CI (they cannot
drift). That matters for the status: the API server prunes every field the CRD does not declare, so a
status field that exists only in Python is lost on the next read, which for the write-ahead log means a
restarted operator acts on ``None``. The state machine therefore builds a new :class:`JobStatus` and the
reconciler writes the merge patch between the old and the new one (:func:`status_patch`). Unknown fields
are ignored on read so an operator older than the CRD still runs; new fields are added on both sides.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SnapshotReason = Literal["upgrade", "manual", "periodic", "restart", "suspend", "rollback"]
OperationType = Literal["Start", "Restart", "Suspend", "Resume", "Upgrade", "Snapshot"]
Phase = Literal["Pending", "Compiling", "Starting", "Running", "Upgrading", "RollingBack", "RolledBack", "Restarting",
                "Suspending", "Suspended", "Failed"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ConfigMapKeyRef(_Model):
    name: str
    key: str | None = None


class CompiledPlanRef(_Model):
    name: str | None = None
    key: str = "plan.json"
    uri: str | None = None


class PlanSource(_Model):
    sql: str | None = None
    configMapRef: ConfigMapKeyRef | None = None
    compiledPlanRef: CompiledPlanRef | None = None


class Catalog(_Model):
    configMapRef: ConfigMapKeyRef


class PvcStorage(_Model):
    claimName: str
    subPath: str | None = None


class S3Settings(_Model):
    """``spec.storage.s3``: how pods reach an ``s3a://`` job root (``storage.store_env``)."""

    endpoint: str | None = None
    region: str | None = None
    pathStyle: bool | None = None
    credentialsSecret: str | None = None


class Storage(_Model):
    pvc: PvcStorage | None = None
    uri: str | None = None
    s3: S3Settings | None = None


class InitialSnapshot(_Model):
    uri: str


class SnapshotPolicy(_Model):
    """``spec.snapshots``: per-job overrides of the operator's ``snapshots`` configuration (None: the default)."""

    interval: str | None = None
    maxCount: int | None = None
    maxAge: str | None = None


class DriverResources(_Model):
    cores: int = 1
    memory: str = "1Gi"


class ExecutorResources(_Model):
    instances: int = 1
    cores: int = 1
    memory: str = "1Gi"


class RollbackPolicy(_Model):
    enabled: bool = True
    stabilityWindow: str | None = None
    minBatches: int | None = None


class UpgradePolicy(_Model):
    # Auto: an engine upgrade also moves the plan's nodes that run on Python transformWithState operators to
    # their JVM versions with their state (check -> snapshot -> migrate -> start; the snapshot stays as it was,
    # so the rollback restores the old plan). Never (default): the plan keeps its node versions unless the
    # target engine requires a migration (check exit 3). Compiled plans are frozen by contract, so changing
    # the operators that run a job is the user's choice (docs/operator.md, "Upgrades").
    migrateOperators: Literal["Auto", "Never"] = "Never"


class JobSpec(_Model):
    engineVersion: str | None = None
    plan: PlanSource
    catalog: Catalog | None = None
    planOptions: dict[str, str] = Field(default_factory=dict)
    upgradeMode: Literal["snapshot", "last-checkpoint", "stateless"] = "snapshot"
    state: Literal["running", "suspended"] = "running"
    restartNonce: int | None = None
    snapshotNonce: int | None = None
    storage: Storage | None = None
    initialSnapshot: InitialSnapshot | None = None
    snapshots: SnapshotPolicy = Field(default_factory=SnapshotPolicy)
    driver: DriverResources = Field(default_factory=DriverResources)
    executor: ExecutorResources = Field(default_factory=ExecutorResources)
    sparkConf: dict[str, str] = Field(default_factory=dict)
    image: str | None = None
    podTemplate: dict[str, Any] | None = None
    rollback: RollbackPolicy = Field(default_factory=RollbackPolicy)
    upgrade: UpgradePolicy = Field(default_factory=UpgradePolicy)


class DriverRef(_Model):
    launcher: str | None = None
    name: str | None = None
    statusUrl: str | None = None
    startedAt: str | None = None
    configHash: str | None = None
    baselineBatches: int | None = None


class SnapshotRef(_Model):
    id: str
    createdAt: str | None = None
    reason: SnapshotReason | None = None
    engineVersion: str | None = None
    runId: str | None = None


class Operation(_Model):
    """``status.operation``: the write-ahead record of a multi-step operation (see ``statemachine``)."""

    type: OperationType | None = None
    step: str | None = None  # a string, not an enum: a step an older or newer operator wrote is dropped, not fatal
    started: str | None = None
    stepStarted: str | None = None
    snapshot: str | None = None
    runId: str | None = None
    engineVersion: str | None = None
    planFile: str | None = None
    attempt: int | None = None
    message: str | None = None
    standby: Literal["ready", "unsupported", "lost"] | None = None
    stateless: bool | None = None
    cause: str | None = None
    targetEngine: str | None = None
    targetRunId: str | None = None
    upgradeSnapshot: str | None = None
    recompile: bool | None = None
    snapshotPath: str | None = None


class StableSpec(_Model):
    """``status.lastStableSpec``: what the job last ran stably (an upgrade that never lands falls back to it)."""

    engineVersion: str | None = None
    specHash: str | None = None
    configHash: str | None = None
    upgradeMode: str | None = None


class UpgradeRecord(_Model):
    from_: str | None = Field(default=None, alias="from")
    to: str | None = None
    step: str | None = None
    started: str | None = None
    finished: str | None = None
    message: str | None = None
    fleet: bool | None = None
    fromRunId: str | None = None
    snapshot: str | None = None
    # When the spec stopped asking for ``to`` after a refusal or rollback (the user set engineVersion back):
    # from then on the same target is a new request and is tried again.
    withdrawn: str | None = None


class Restarts(_Model):
    count: int = 0
    lastAt: str | None = None
    reason: str | None = None


class Condition(_Model):
    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    lastTransitionTime: str | None = None
    observedGeneration: int | None = None


class JobStatus(_Model):
    phase: Phase | None = None
    observedGeneration: int | None = None
    engineVersion: str | None = None
    desiredEngineVersion: str | None = None
    planId: str | None = None
    runId: str | None = None
    jobRoot: str | None = None
    specHash: str | None = None
    sourceHash: str | None = None
    restartNonce: int | None = None
    snapshotNonce: int | None = None
    driver: DriverRef | None = None
    lastSnapshot: SnapshotRef | None = None
    snapshots: list[SnapshotRef] = Field(default_factory=list)
    operation: Operation | None = None
    upgrade: UpgradeRecord | None = None
    lastStableSpec: StableSpec | None = None
    restarts: Restarts | None = None
    conditions: list[Condition] = Field(default_factory=list)
    error: str | None = None
    kopf: dict[str, Any] | None = None  # kopf's own bookkeeping; never written by the operator

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    def dump(self) -> dict[str, Any]:
        """The JSON the API server stores (absent rather than null or empty; kopf's part left out)."""
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"kopf"})
        return {k: v for k, v in data.items() if v != []}

    @classmethod
    def read(cls, raw: Any) -> JobStatus:
        """The status of an object as stored (``None`` or ``{}`` for a new job)."""
        return cls.model_validate(dict(raw or {}))


def status_patch(old: JobStatus, new: JobStatus) -> dict[str, Any]:
    """The RFC 7386 merge patch that turns the stored ``old`` status into ``new`` (empty: nothing changed).

    >>> status_patch(JobStatus(phase="Running", error="x"), JobStatus(phase="Running", runId="r1"))
    {'error': None, 'runId': 'r1'}
    """
    return _diff(old.dump(), new.dump())


def _diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, dict) and isinstance(before, dict):
            inner = _diff(before, value)
            if inner:
                patch[key] = inner
        elif value != before:
            patch[key] = value
    return dict(sorted(patch.items()))
