"""``planengine check --plan P [--snapshot S] [--json] [--conf KEY=VALUE]...``: can this engine restore the
plan (and state)?

Exit 0 compatible, 3 needs migration, 4 incompatible; ``--json`` says why, and for a compatible plan which
nodes ``planengine migrate`` would move to the JVM with their state (``stateMoves``). Judged from the plan's JSON, then
by restoring it as ``run --plan`` would, with the same ``--catalog`` / ``-D`` (``planengine.plan.restorable``:
e.g. a masked secret no catalog supplies is incompatible), before anything starts. With ``--snapshot`` also
the snapshot's Spark state layout against the one
this engine creates for the plan, which costs a SparkSession and one batch per query over empty input in a
temporary directory (``planengine.runtime.state_check``); nothing of the job is touched. ``--conf`` sets
Spark settings of that session, as for ``run``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys

from planengine.commands._env import (
    add_session_arguments,
    add_spark_conf_argument,
    read_text,
    session,
    spark_conf_from_args,
)
from planengine.errors import UserError
from planengine.exec.base import lookup, split_type_name
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.restorable import check_restorable
from planengine.plan.state_moves import available_moves


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "check", help="check that this engine can restore a plan",
        description="Can this engine restore the plan (and the snapshot's state)? Exit 0 compatible, 3 needs "
                    "migration (planengine migrate), 4 incompatible; the reasons say what to do.")
    p.add_argument("--plan", required=True, metavar="PLAN", help="the compiled plan to check")
    p.add_argument("--snapshot", metavar="DIR", help="a snapshot directory whose state must also be restorable")
    p.add_argument("--json", action="store_true", help="print the verdict and reasons as JSON")
    add_session_arguments(p)
    add_spark_conf_argument(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    spark_conf_from_args(args)
    try:
        plan = CompiledPlan.from_json(read_text(args.plan), session(args).plan_session())
    except UserError as error:
        if not args.json:
            raise
        # Tooling reads --json's stdout whatever the verdict: a malformed plan answers a JSON body too (exit 2),
        # and people read stderr, as for every other user error.
        print(f"planengine: error: {error.render()}", file=sys.stderr)
        print(json.dumps({"status": "malformed", "exitCode": error.exit_code, "error": error.message,
                          "hint": error.hint, "reasons": [{"status": "malformed", "message": error.message,
                                                           **({"hint": error.hint} if error.hint else {})}]},
                         indent=2))
        return error.exit_code
    report = plan.check()
    _check_runtime_support(plan.data, report)
    check_restorable(plan, report)  # with the catalog and options `run --plan` would get
    if report.exit_code == 0:
        report.state_moves = [m.describe() for m in available_moves(plan.data)]
    if args.snapshot:
        if not spark_installed():
            report.add("incompatible", "this engine cannot inspect snapshots (the Spark runtime is not installed)",
                       hint=SPARK_EXTRA)
        else:
            from planengine.runtime.state_check import check_snapshot_state  # noqa: PLC0415 — the runtime loads only for the commands that use it (the CLI imports them all)

            check_snapshot_state(plan.data, args.snapshot, report, session=plan.session)  # the probe restores too
    print(json.dumps(report.to_json(), indent=2) if args.json else report.summary())
    return report.exit_code


SPARK_EXTRA = "pip install 'planengine[spark]'"


def spark_installed() -> bool:
    """Whether the ``spark`` extra is installed: plans can be checked where only the planner is (a base install).
    Asked of the one optional package itself, not by catching ImportError around our own modules, which would
    hide their bugs behind this answer."""
    return importlib.util.find_spec("pyspark") is not None


def _check_runtime_support(plan_json: dict, report) -> None:  # type: ignore[no-untyped-def,type-arg]
    """Every node must have a Spark translation in this engine, or the plan cannot run here (exit 4)."""
    if not spark_installed():
        report.add("incompatible", "this engine has no Spark runtime installed", hint=SPARK_EXTRA)
        return
    from planengine.runtime.engine.executor import unsupported_nodes  # noqa: PLC0415 — the runtime loads only for the commands that use it (the CLI imports them all)

    for missing in unsupported_nodes(plan_json):
        try:
            if lookup(*split_type_name(str(missing["type"]))) is None:
                continue  # an unknown node version is already reported by the plan check
        except ValueError:
            continue
        report.add("incompatible", f"the Spark runtime of this engine cannot run {missing['type']}",
                   node=missing["node"], hint="run the plan on an engine version that supports this node")
