"""``planengine sql FILE``: run a script statement by statement (DDL, SET, COMPILE PLAN, EXECUTE …)."""

from __future__ import annotations

import argparse

from planengine.commands._env import add_session_arguments, read_text, session


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("sql", help="run a SQL script")
    p.add_argument("file")
    add_session_arguments(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    env = session(args)
    for result in env.execute_sql(read_text(args.file), source=args.file):
        text = str(result)
        if text:
            print(text)
    return 0
