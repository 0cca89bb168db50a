"""The registry of node migrations: ``(name, retired version) -> (target version, fn on the node's JSON)``.

A node migration rewrites one node of a retired version into a registered one; migrating a plan
(``planengine.plan.migrate``) applies them node by node. Its own module because both the restore checks (does
this engine migrate a dropped version?) and the plan migration read it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planengine.exec import base as B

NodeMigration = Callable[[dict[str, Any]], dict[str, Any]]
_MIGRATIONS: dict[tuple[str, int], tuple[int, NodeMigration]] = {}


def migration(name: str, from_version: int, to_version: int) -> Callable[[NodeMigration], NodeMigration]:
    def register(fn: NodeMigration) -> NodeMigration:
        _MIGRATIONS[(name, from_version)] = (to_version, fn)
        return fn

    return register


def unregister_migration(name: str, from_version: int) -> None:
    _MIGRATIONS.pop((name, from_version), None)


def migration_step(name: str, version: int) -> tuple[int, NodeMigration] | None:
    """The registered migration from ``(name, version)``: its target version and function."""
    return _MIGRATIONS.get((name, version))


def migration_target(name: str, version: int) -> int | None:
    """The registered version a chain of migrations takes ``(name, version)`` to, or None if there is none."""
    seen: set[int] = set()
    while B.lookup(name, version) is None:
        step = _MIGRATIONS.get((name, version))
        if step is None or version in seen:
            return None
        seen.add(version)
        version = step[0]
    return version
