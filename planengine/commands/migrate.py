"""``planengine migrate --plan OLD -o NEW``: rewrite a plan's retired node versions (never re-plans)."""

from __future__ import annotations

import argparse
import sys

from planengine.commands._env import read_text, write_text
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.migrate import migrate_plan
from planengine.runtime.storage.object_store import is_object_store


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "migrate", help="migrate a plan to this engine's node versions",
        description="Rewrite the retired node versions of a compiled plan into ones this engine runs, keeping "
                    "node ids and state names (never re-plans). `check` exit code 3 says a plan needs this.")
    p.add_argument("--plan", required=True, metavar="PLAN", help="the plan to migrate")
    p.add_argument("-o", "--output", required=True, metavar="PLAN", help="where to write the migrated plan")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    old = CompiledPlan.from_json(read_text(args.plan))
    migrated, decisions = migrate_plan(old.data)
    if is_object_store(args.output):  # the operator's migration of an s3a:// job root's plan (a tool pod)
        write_text(args.output, CompiledPlan(migrated).as_json())
    else:
        CompiledPlan(migrated).write_to_file(args.output)
    for d in decisions:
        print(d, file=sys.stderr)
    print(f"plan {migrated['planId']} written to {args.output}", file=sys.stderr)
    return 0
