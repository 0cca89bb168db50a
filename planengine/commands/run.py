"""``planengine run (--script FILE | --plan P) --job-root DIR [--from-snapshot S] [--until-idle] [--drain]
[--status-port N] [--standby [--no-warm-up]] [--conf KEY=VALUE]...``: compile-or-restore, then run (DESIGN §6).

Compile-and-execute semantics: when ``<job root>/plan.json`` exists it is the plan in force and is
restored, never re-planned (a script's DDL still runs first, so temporary objects exist). Otherwise the
script's program is compiled and ``plan.json`` written atomically. ``--plan P`` installs P when the job
root has no plan and refuses a different one, except from a snapshot whose plan P is or migrates to (an
upgrade: that run makes P the plan in force; ``runtime/storage/plan_in_force.py``). Progress goes to stderr.
Without ``--until-idle`` the driver runs until SIGTERM / SIGINT / ``POST /v1/stop``, then stops at a batch
boundary with a snapshot.

``--standby`` (with ``--plan`` and ``--status-port``) starts a warm standby for an upgrade: JVM, session,
plan and warm-up now, the run at ``POST /v1/start {"fromSnapshot": ...}``; it writes nothing in the job
root before that (``planengine.runtime.engine.standby``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from planengine.commands._env import (
    add_session_arguments,
    add_spark_conf_argument,
    read_text,
    session,
    spark_conf_from_args,
)
from planengine.commands.compile import split_program
from planengine.errors import UserError
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.serde import MAX_PARALLELISM
from planengine.runtime.engine.control_token import TOKEN_FILE_ENV, control_token
from planengine.runtime.engine.session import SHUFFLE_PARTITIONS_KEY, cli_conf, plan_shuffle_partitions
from planengine.runtime.engine.standby import run_standby as serve
from planengine.runtime.storage.job_root import JobRoot
from planengine.runtime.storage.plan_in_force import plan_to_run


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "run", help="compile (or restore) a plan and run it on Spark",
        description="Run a job on Spark with checkpoints in its job root. The job root's plan.json, when present, "
                    "is the plan in force and is restored, never re-planned. SIGTERM / Ctrl-C / POST /v1/stop "
                    "stop it at a batch boundary with a snapshot.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--script", metavar="FILE", help="SQL script: DDL, then one INSERT or statement set")
    src.add_argument("--plan", metavar="PLAN", help="compiled plan JSON (from planengine compile)")
    p.add_argument("--job-root", required=True, metavar="DIR", help="job storage root (plan.json, runs/, snapshots/)")
    p.add_argument("--from-snapshot", metavar="SNAPSHOT", help="snapshot id of the job root, or a snapshot directory")
    p.add_argument("--until-idle", action="store_true", help="stop after all available input is processed")
    p.add_argument("--drain", action="store_true", help="advance event time to the end before stopping")
    p.add_argument("--status-port", type=int, metavar="PORT", help="serve the driver status API on this port (0 = any)")
    p.add_argument("--standby", action="store_true",
                   help="warm standby: start Spark and load the plan, then wait for POST /v1/start on the status "
                        "port (needs --plan and --status-port; writes nothing in the job root until started)")
    p.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                   help="with --standby: skip the warm-up query (faster to Standby, slower first batch)")
    p.add_argument("--spark-log", metavar="FILE",
                   help="append Spark's own log lines (and its Python workers' output) to FILE instead of stderr; "
                        "planengine's progress lines stay on stderr (default: $PLANENGINE_SPARK_LOG, else stderr, "
                        "which is what `kubectl logs` shows for a driver pod)")
    p.add_argument("--control-token-file", metavar="FILE",
                   help="file holding the token POST /v1/stop and /v1/start must carry as 'Authorization: Bearer' "
                        f"(default: the file ${TOKEN_FILE_ENV} names; without one, only a loopback status port "
                        "accepts them)")
    add_session_arguments(p)
    add_spark_conf_argument(p)
    p.set_defaults(handler=run)


def load_or_compile(args: argparse.Namespace):  # type: ignore[no-untyped-def]

    env = session(args)
    partitions = spark_conf_from_args(args).get(SHUFFLE_PARTITIONS_KEY)
    if partitions is not None:  # the Spark spelling of the max parallelism a new plan records
        env.config.setdefault(MAX_PARALLELISM, partitions)
    root = JobRoot(args.job_root)
    if args.script:
        inserts = split_program(env, read_text(args.script), args.script)
        if root.has_plan():
            print(f"[planengine] restoring the plan in force {root.plan_path} (not re-planning)", file=sys.stderr)
            return env, root, CompiledPlan.from_json(root.read_plan_text())
        plan = env.compile_plan(inserts)
        root.write_plan_text(plan.as_json())
        print(f"[planengine] compiled plan {plan.plan_id[:12]} into {root.plan_path}", file=sys.stderr)
        return env, root, plan
    # Which plan runs when the job root already has one (the snapshot's plan or its migration may replace it):
    # runtime/storage/plan_in_force.py, applied by execute_plan before anything is written.
    return env, root, plan_to_run(root, CompiledPlan.from_json(read_text(args.plan)), args.from_snapshot)


def warn_ignored_partitions(args: argparse.Namespace, plan_config: dict[str, str]) -> None:
    """A ``--conf spark.sql.shuffle.partitions`` the plan in force overrides is said, not silently dropped."""

    asked = cli_conf().get(SHUFFLE_PARTITIONS_KEY)
    kept = plan_shuffle_partitions(plan_config)
    if asked is not None and asked.strip() != str(kept):
        print(f"[planengine] --conf {SHUFFLE_PARTITIONS_KEY}={asked} ignored: the plan runs with {kept} shuffle "
              f"partitions ({MAX_PARALLELISM}, fixed when it was compiled, because its state is split that way)",
              file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("PLANENGINE_PROGRESS", "1")
    if args.spark_log:
        os.environ["PLANENGINE_SPARK_LOG"] = str(Path(args.spark_log).resolve())  # read when the JVM starts
    if args.control_token_file:
        os.environ[TOKEN_FILE_ENV] = args.control_token_file  # the status server reads the file it names
    control_token()  # an unreadable or weak token file fails now (exit 2), before Spark starts
    if args.standby:
        return run_standby(args)
    env, root, plan = load_or_compile(args)
    warn_ignored_partitions(args, dict(plan.data.get("config") or {}))
    result = env.execute_plan(plan, job_root=root.location, from_snapshot=args.from_snapshot,
                              until_idle=args.until_idle, drain=args.drain, status_port=args.status_port, block=True)
    summary = {"runId": result.run_id, "snapshot": result.snapshot_id, "lastBatchIds": result.queries}
    print(f"[planengine] run {result.run_id} stopped; snapshot {result.snapshot_id}", file=sys.stderr)
    print(json.dumps(summary))
    return 0


def run_standby(args: argparse.Namespace) -> int:
    """``--standby``: the plan is read, never written (the start installs it); see ``runtime.engine.standby``."""
    if not args.plan or args.status_port is None or args.from_snapshot or args.until_idle:
        raise UserError("--standby needs --plan and --status-port, and takes the snapshot from POST /v1/start",
                        hint="planengine run --plan P --job-root D --standby --status-port N; then "
                             'POST /v1/start {"fromSnapshot": "<snapshot dir>"}')

    env = session(args)
    spark_conf_from_args(args)
    plan = CompiledPlan.from_json(read_text(args.plan), env.plan_session())
    warn_ignored_partitions(args, dict(plan.data.get("config") or {}))
    result = serve(plan, job_root=args.job_root, status_port=args.status_port, drain=args.drain,
                   warm_up=args.warm_up)
    if result is None:
        print(json.dumps({"runId": None, "snapshot": None, "lastBatchIds": {}}))
        return 0
    print(f"[planengine] run {result.run_id} stopped; snapshot {result.snapshot_id}", file=sys.stderr)
    print(json.dumps({"runId": result.run_id, "snapshot": result.snapshot_id, "lastBatchIds": result.queries}))
    return 0
