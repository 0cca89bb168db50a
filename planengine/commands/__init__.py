"""CLI sub-commands, one module each; ``register(subparsers)`` adds them to the parser.

The CLI is a contract (DESIGN §6): the operator and the tests use only it. Commands are thin shells over
the Python API and print JSON where machines read them.
"""

from __future__ import annotations

import argparse

from planengine.commands import check, compile, explain, job_root, migrate, run, snapshot, snapshots, sql

# In the order ``planengine --help`` lists them. No command imports an optional dependency when it loads (each
# imports Spark, or the runtime, only inside the step that needs it), so every command is always offered.
COMMANDS = (sql, compile, explain, check, migrate, run, snapshot, snapshots, job_root)


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    for module in COMMANDS:
        module.register(subparsers)
