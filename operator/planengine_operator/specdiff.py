"""Classify what changed between the desired spec and what the job runs now.

Each class of change has its own procedure (upgrade, restart from a snapshot, refusal, ...), so the state
machine asks one question here instead of comparing fields itself. Pure: spec and status in, a verdict out.
"""

from __future__ import annotations

import enum
import hashlib
import json
from typing import Any

from planengine_operator.models import JobSpec, JobStatus, UpgradeRecord


class Change(enum.Enum):
    NONE = "none"
    START = "start"  # never started
    PLAN_CHANGED = "plan-changed"  # program text changed: refused unless stateless
    RECOMPILE = "recompile"  # program changed and upgradeMode stateless accepts losing state
    SUSPEND = "suspend"
    RESUME = "resume"
    UPGRADE = "upgrade"
    UPGRADE_BLOCKED = "upgrade-blocked"  # the same target was refused or rolled back before
    RESTART = "restart"  # runtime settings or restartNonce
    SNAPSHOT = "snapshot"  # snapshotNonce


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def program_hash(spec: JobSpec) -> str:
    """What the plan is compiled from: a change here means a different topology and state layout."""
    return _digest(
        {
            "plan": spec.plan.model_dump(exclude_none=True),
            "catalog": spec.catalog.model_dump(exclude_none=True) if spec.catalog else None,
            "planOptions": spec.planOptions,
        }
    )


def config_hash(spec: JobSpec) -> str:
    """Runtime settings that need a driver restart (same engine, same state) when they change."""
    return _digest(
        {
            "driver": spec.driver.model_dump(),
            "executor": spec.executor.model_dump(),
            "sparkConf": spec.sparkConf,
            "podTemplate": spec.podTemplate,
            "image": spec.image,
        }
    )


def target_engine(spec: JobSpec, default_engine: str) -> str:
    """Jobs without an explicit engineVersion follow the fleet default."""
    return spec.engineVersion or default_engine


def blocks(upgrade: UpgradeRecord | None, target: str) -> bool:
    """A refused or rolled-back upgrade to ``target`` holds until the spec asks for something else: retrying the
    same target on every reconcile would stop the job again for the same reason, but a user who set the version
    back and then asks for the target again (after fixing the cause) means it."""
    return (upgrade is not None and upgrade.to == target and upgrade.step in ("Refused", "RolledBack")
            and not upgrade.withdrawn)


def source_changed(status: JobStatus, source_hash: str | None) -> bool:
    """The program's text changed under an unchanged reference (a ConfigMap's content was edited).

    ``source_hash`` is the hash of what the referenced ConfigMaps hold now (``sources.observed_hash``); None
    when it is not known (a ConfigMap missing, a ``compiledPlanRef.uri``), which is never a change.
    """
    return bool(status.sourceHash and source_hash and source_hash != status.sourceHash)


def classify(spec: JobSpec, status: JobStatus, default_engine: str, source_hash: str | None = None) -> Change:
    """The single most important pending change, in the order they must be handled.

    Suspension wins over everything but a refused program change, because a suspended job must not be
    upgraded or restarted; the upgrade comes before a plain restart because it restarts anyway. A program
    change is a change of the spec's program (``specHash``) or of the text it references (``sourceHash``).
    """
    if not status.planId or not status.runId:
        if status.phase == "Suspended" and spec.state == "suspended":
            return Change.NONE
        return Change.START if spec.state == "running" else Change.NONE
    if (status.specHash and program_hash(spec) != status.specHash) or source_changed(status, source_hash):
        return Change.RECOMPILE if spec.upgradeMode == "stateless" else Change.PLAN_CHANGED
    suspended = status.phase == "Suspended"
    if spec.state == "suspended":
        return Change.NONE if suspended else Change.SUSPEND
    if suspended:
        return Change.RESUME
    target = target_engine(spec, default_engine)
    if target != status.engineVersion:
        upgrade = status.upgrade
        if blocks(upgrade, target):
            return Change.UPGRADE_BLOCKED
        return Change.UPGRADE
    if config_hash(spec) != (status.driver.configHash if status.driver else None):
        return Change.RESTART
    if spec.restartNonce is not None and spec.restartNonce != status.restartNonce:
        return Change.RESTART
    if spec.snapshotNonce is not None and spec.snapshotNonce != status.snapshotNonce:
        return Change.SNAPSHOT
    return Change.NONE
