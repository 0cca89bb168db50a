"""CLI sub-commands, one module each; ``register(subparsers)`` adds them to the parser.

The CLI is a contract (DESIGN §6): the operator and the tests use only it. Commands are thin shells over
the Python API and print JSON where machines read them.
"""

from __future__ import annotations

import argparse
from importlib import import_module

COMMANDS = ("sql", "compile", "explain", "check", "migrate", "run", "snapshot", "snapshots")


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    for name in COMMANDS:
        try:
            module = import_module(f"planengine.commands.{name}")
        except ImportError:
            continue  # a command whose optional dependencies are missing is simply not offered
        module.register(subparsers)
