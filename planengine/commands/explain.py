"""``planengine explain (FILE | --plan P) [--json]``: the DAG with changelog modes and shared nodes."""

from __future__ import annotations

import argparse
import json

from planengine.commands._env import add_session_arguments, read_text, session
from planengine.commands.compile import split_program
from planengine.errors import UserError
from planengine.plan import serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.plan.explain import plan_summary


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "explain", help="explain a script or a compiled plan",
        description="Show the plan of a script's INSERT / statement set (abstract syntax tree, optimized plan, "
                    "execution DAG with changelog modes) or of a compiled plan file.")
    p.add_argument("file", nargs="?", help="SQL script to plan and explain (or give --plan)")
    p.add_argument("--plan", metavar="PLAN", help="a compiled plan file to explain instead of a script")
    p.add_argument("--json", action="store_true", help="machine-readable: nodes, changelog modes, sharing")
    p.add_argument("--verbose-rules", action="store_true", help="also print the plan after every rule")
    add_session_arguments(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if bool(args.file) == bool(args.plan):
        raise UserError("give either a script FILE or --plan P")
    if args.plan:
        plan = CompiledPlan.from_json(read_text(args.plan))
        print(json.dumps(plan_summary(plan.data), indent=2) if args.json else plan.explain())
        return 0
    env = session(args)
    inserts = split_program(env, read_text(args.file), args.file)
    if args.json:
        result = env.plan_inserts(inserts)
        plan = serde.write_plan(result.sinks, env.config, result.sink_writes_batches)
        print(json.dumps(plan_summary(plan), indent=2))
    else:
        print(env.explain_inserts(inserts, ("PLAN_ADVICE",) if args.verbose_rules else ()))
    return 0
