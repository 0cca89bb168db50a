"""Which plan a run executes, and when it becomes the job root's plan in force.

``<job root>/plan.json`` is the plan in force: the plan the job's checkpoints were written by. ``run --plan P``
installs P into a job root without one and refuses a different plan, so a second plan never runs against
checkpoints it did not write. An upgrade is the exception the contract allows (DESIGN §6 "Job storage"): it
starts a new run *from a snapshot*, and the snapshot names the plan its state belongs to
(``snapshots/<id>/plan.json``).
The plan of such a run may be

* the snapshot's own plan (an upgrade that keeps the plan, or a rollback to the plan before an upgrade), or
* this engine's migration of it (``planengine migrate``: an upgrade that moved operators, whose new run
  converts their state from the snapshot),

and that run makes it the plan in force once it holds the run lock (``install_run_plan``), so later
snapshots, restarts and rollbacks name the plan that wrote their state. Without a snapshot a run continues
the newest run's checkpoints, which only the plan in force wrote; a plan whose migration *is* the plan in
force names the same job (a Kubernetes driver's plan ConfigMap keeps the plan it was first given), so the
plan in force runs and the driver says so. Anything else is refused with both plan ids.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

from planengine.errors import UserError
from planengine.plan.compiled_plan import CompiledPlan
from planengine.runtime.storage.files import PLAN_FILE
from planengine.runtime.storage.job_root import JobRoot

log = logging.getLogger("planengine.runtime")


def migrated_plan_id(data: dict[str, Any]) -> str | None:
    """The planId of this engine's migration of a plan (``planengine migrate``), or None if it has none."""
    from planengine.plan.migrate import migrate_plan  # noqa: PLC0415 — the planner's registry, loaded on demand

    try:
        migrated, _ = migrate_plan(data)
    except Exception:  # a plan this engine cannot migrate is simply not a migration of anything
        return None
    return str(migrated.get("planId") or "") or None


def _snapshot_plan(root: JobRoot, from_snapshot: str) -> dict[str, Any]:
    try:
        return CompiledPlan.from_json(root.snapshot_plan_text(from_snapshot)).data  # validated like every plan read
    except (OSError, UserError) as exc:
        raise UserError(f"snapshot {from_snapshot} has no readable {PLAN_FILE}: {exc}",
                        hint="start from a complete snapshot (planengine snapshots list)") from None


def plan_to_run(root: JobRoot, plan: CompiledPlan, from_snapshot: str | None, *,
                snapshot_pending: bool = False) -> CompiledPlan:
    """The plan a run of ``plan`` (``run --plan``) executes in ``root`` (read only; see the module docstring).

    ``snapshot_pending``: a warm standby, whose snapshot comes with ``POST /v1/start``; it also accepts this
    engine's migration of the plan in force (the upgrade's migrated plan) and is checked again at the start."""
    if not root.has_plan():
        return plan
    in_force = CompiledPlan.from_json(root.read_plan_text(), plan.session).data  # validated: it may be restored
    in_force_id = in_force.get("planId")
    if in_force_id == plan.plan_id:
        return plan
    if from_snapshot is not None:
        snapshot_plan = _snapshot_plan(root, from_snapshot)
        if plan.plan_id in (snapshot_plan.get("planId"), migrated_plan_id(snapshot_plan)):
            return plan
        raise UserError(f"plan {plan.plan_id} is neither the plan of snapshot {from_snapshot} "
                        f"({snapshot_plan.get('planId')}) nor this engine's migration of it",
                        hint="start from the snapshot with its own plan, or with `planengine migrate --plan "
                             f"{Path(from_snapshot) / PLAN_FILE}` of it")
    if snapshot_pending and plan.plan_id == migrated_plan_id(in_force):
        return plan
    if migrated_plan_id(plan.data) == in_force_id:
        print(f"[planengine] running the plan in force {in_force_id[:12]}: this engine's migration of --plan "
              f"{plan.plan_id[:12]}", file=sys.stderr)
        return CompiledPlan(in_force, plan.session)
    raise UserError(f"job root {root.location} already runs plan {in_force_id}; the given plan is {plan.plan_id}",
                    hint="use a new job root, or upgrade through a snapshot: run --plan P --from-snapshot S "
                         "with S's plan or its migration (the operator's upgrade does this)")


def install_run_plan(root: JobRoot, plan: CompiledPlan) -> None:
    """Make ``plan`` the plan in force; called by a run holding the run lock (the one writer of the root)."""
    if root.has_plan() and json.loads(root.read_plan_text()).get("planId") == plan.plan_id:
        return
    before = json.loads(root.read_plan_text()).get("planId") if root.has_plan() else None
    root.write_plan_text(plan.as_json(), overwrite=True)
    if before is not None:
        log.info("plan %s is now the plan in force (was %s)", plan.plan_id, before)
