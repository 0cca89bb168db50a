"""Shared CLI helpers: building a session from files and options."""

from __future__ import annotations

import argparse
from pathlib import Path

from planengine.api import TableEnvironment
from planengine.errors import UserError


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--catalog", action="append", default=[], metavar="FILE",
                        help="SQL script with catalog DDL (CREATE TABLE/VIEW/FUNCTION/CATALOG) run first; repeatable")
    parser.add_argument("-D", "--set", dest="options", action="append", default=[], metavar="KEY=VALUE",
                        help="session option, e.g. -D table.plan.compile.catalog-objects=SCHEMA; repeatable")


def session(args: argparse.Namespace) -> TableEnvironment:
    config = {}
    for item in args.options:
        if "=" not in item:
            raise UserError(f"option {item!r} is not KEY=VALUE", hint="e.g. -D table.exec.state.ttl='1 h'")
        key, value = item.split("=", 1)
        config[key.strip()] = value.strip()
    env = TableEnvironment(config)
    for path in args.catalog:
        env.execute_sql(read_text(path), source=path)
    return env


def read_text(path: str) -> str:
    p = Path(path)
    if not p.exists():
        raise UserError(f"file {path} does not exist")
    return p.read_text(encoding="utf-8")
