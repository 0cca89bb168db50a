"""``planengine snapshot --job-root DIR``: snapshot the job's latest run at its last committed batches.

Works whether or not a driver runs: Spark writes checkpoint files by write-then-rename and the snapshot
keeps only committed batches (``planengine.runtime.storage.snapshots``), so a snapshot of a live run is as
consistent as one of a stopped run. The last stdout line is ``{"snapshot": "<id>"}``.
"""

from __future__ import annotations

import argparse
import json

from planengine.errors import UserError
from planengine.runtime.engine.executor import SPARK_VERSION
from planengine.runtime.storage.job_root import JobRoot
from planengine.runtime.storage.snapshots import take_snapshot
from planengine.version import ENGINE_VERSION


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "snapshot", help="snapshot a job's latest run",
        description="Fork the job's latest run at its last committed batches into <job root>/snapshots/<id> "
                    "(hard links where possible); works while the job runs. Prints {\"snapshot\": \"<id>\"}.")
    p.add_argument("--job-root", required=True, metavar="DIR", help="the job's storage root (as given to run)")
    p.add_argument("--reason", default="manual", choices=("manual", "upgrade", "periodic", "stop"),
                   help="recorded in the snapshot's manifest (default: manual)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    root = JobRoot(args.job_root)
    run_ = root.live_run()
    if run_ is None:
        raise UserError(f"job root {root.location} has no run to snapshot", hint="start one with planengine run")
    plan_id = json.loads(root.read_plan_text()).get("planId")
    info = take_snapshot(root, run_, reason=args.reason, engine_version=ENGINE_VERSION, spark_version=SPARK_VERSION,
                         plan_id=plan_id, last_batch_ids={})
    print(json.dumps({"snapshot": info.snapshot_id, "runId": run_.run_id, "lastBatchIds": info.last_batch_ids}))
    print(json.dumps({"snapshot": info.snapshot_id}))
    return 0
