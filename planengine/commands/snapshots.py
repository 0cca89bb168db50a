"""``planengine snapshots list|inspect|delete [ID] --job-root DIR``: what snapshots a job has and what they hold.

``inspect`` prints the manifest, per query the committed batch ids on disk, and (through Spark's
``state-metadata`` and ``statestore`` sources) each stateful operator's state stores and row counts.
``delete`` removes one snapshot (the operator's retention on Kubernetes, where it cannot reach the job root
itself): the directory is first renamed out of the snapshot namespace, so a delete cut short never leaves a
half-deleted snapshot that looks complete.
"""

from __future__ import annotations

import argparse
import json

from planengine.errors import UserError
from planengine.runtime.engine.session import get_spark
from planengine.runtime.state_check import state_operators
from planengine.runtime.storage.job_root import JobRoot
from planengine.runtime.storage.snapshots import inspect_snapshot, list_snapshots
from planengine.runtime.storage.store_snapshots import inspect_store_snapshot


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "snapshots", help="list, inspect or delete a job's snapshots",
        description="list: one JSON line per snapshot of the job. inspect: a snapshot's manifest, committed "
                    "batches and (through Spark) its state stores and row counts. delete: remove one snapshot.")
    p.add_argument("action", choices=("list", "inspect", "delete"),
                   help="list the snapshots, inspect one, or delete one")
    p.add_argument("snapshot_id", nargs="?", help="inspect: the snapshot id (default: the newest); delete: the id")
    p.add_argument("--job-root", required=True, metavar="DIR", help="the job's storage root (as given to run)")
    p.add_argument("--no-state", action="store_true", help="inspect: skip reading state through Spark")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    root = JobRoot(args.job_root)
    if not root.exists():
        raise UserError(f"job root {args.job_root} does not exist",
                        hint="give the --job-root that `planengine run` used")
    if args.action == "delete":
        return _delete(root, args.snapshot_id)
    if args.action == "list":
        for info in list_snapshots(root):
            print(json.dumps({"snapshot": info.snapshot_id, "complete": info.complete, "createdAt": info.created_at,
                              "reason": info.reason, "runId": info.run_id, "lastBatchIds": info.last_batch_ids,
                              **({"problem": info.problem} if info.problem else {})}))
        return 0
    snap = root.snapshot(args.snapshot_id) if args.snapshot_id else root.latest_snapshot()
    if snap is None:
        raise UserError(f"job root {root.location} has no snapshot")
    details = inspect_store_snapshot(snap) if root.on_object_store else inspect_snapshot(snap.path)
    if not args.no_state:
        details["state"] = _state(snap)
    print(json.dumps(details, indent=2, default=str))
    return 0


def _delete(root, snapshot_id: str | None) -> int:  # type: ignore[no-untyped-def]

    if not snapshot_id:
        raise UserError("snapshots delete needs the snapshot id", hint="planengine snapshots delete ID --job-root D")
    root.delete_snapshot(snapshot_id)  # refuses ids this job root does not have
    print(json.dumps({"deleted": snapshot_id}))
    return 0


def _state(snap) -> dict:  # type: ignore[no-untyped-def]

    spark = get_spark()
    out: dict = {}
    for uid in sorted(snap.last_batch_ids):
        cp = str(snap.checkpoint_dir(uid))
        operators = []
        for op in state_operators(spark, cp):
            entry = dict(op)
            try:
                reader = spark.read.format("statestore").option("operatorId", op["operatorId"]).option(
                    "storeName", op.get("stateStoreName") or "default")
                entry["rows"] = reader.load(cp).count()
            except Exception as error:  # state variables of transformWithState need stateVarName
                entry["rows"] = None
                entry["note"] = str(error).splitlines()[0][:200]
            operators.append(entry)
        out[uid] = operators
    return out
