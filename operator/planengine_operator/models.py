"""Typed views of SparkPlanJob spec and status.

The CRD (``crds/sparkplanjobs.planengine.io.yaml``) is the source of truth; these models mirror it and a
test walks both trees so a field added on one side only fails CI (they cannot drift). Unknown fields are
ignored on read so an operator older than the CRD still runs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


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


class Storage(_Model):
    pvc: PvcStorage | None = None
    uri: str | None = None


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
    driver: DriverResources = Field(default_factory=DriverResources)
    executor: ExecutorResources = Field(default_factory=ExecutorResources)
    sparkConf: dict[str, str] = Field(default_factory=dict)
    image: str | None = None
    podTemplate: dict[str, Any] | None = None
    rollback: RollbackPolicy = Field(default_factory=RollbackPolicy)


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
    reason: str | None = None
    engineVersion: str | None = None
    runId: str | None = None


class Operation(_Model):
    type: str | None = None
    step: str | None = None
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
    phase: str | None = None
    observedGeneration: int | None = None
    engineVersion: str | None = None
    planId: str | None = None
    runId: str | None = None
    jobRoot: str | None = None
    specHash: str | None = None
    restartNonce: int | None = None
    snapshotNonce: int | None = None
    driver: DriverRef | None = None
    lastSnapshot: SnapshotRef | None = None
    snapshots: list[SnapshotRef] = Field(default_factory=list)
    operation: Operation | None = None
    upgrade: UpgradeRecord | None = None
    lastStableSpec: dict[str, Any] | None = None
    restarts: Restarts | None = None
    conditions: list[Condition] = Field(default_factory=list)
    error: str | None = None
    kopf: dict[str, Any] | None = None
