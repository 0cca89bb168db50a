"""Plan migration: rewrite nodes of retired versions into registered ones (``COMPILE PLAN 'new' FROM 'old'``).

A node version that must stay restorable keeps its class registered. When an engine retires a version, it
registers a migration from that version to a newer one: a pure function on the node's JSON. Migrating a
plan applies them node by node (logging each decision), stamps this engine's version and recomputes the
plan id. Migration never re-plans: the topology, uids and state names are kept.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

from planengine.errors import PlanIncompatible
from planengine.exec import base as B
from planengine.plan.serde import compute_plan_id
from planengine.version import ENGINE_VERSION

log = logging.getLogger("planengine.migrate")

NodeMigration = Callable[[dict[str, Any]], dict[str, Any]]
_MIGRATIONS: dict[tuple[str, int], tuple[int, NodeMigration]] = {}


def migration(name: str, from_version: int, to_version: int) -> Callable[[NodeMigration], NodeMigration]:
    def register(fn: NodeMigration) -> NodeMigration:
        _MIGRATIONS[(name, from_version)] = (to_version, fn)
        return fn

    return register


def unregister_migration(name: str, from_version: int) -> None:
    _MIGRATIONS.pop((name, from_version), None)


def migrate_plan(plan: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Return the migrated plan and the list of decisions taken (also logged at INFO)."""
    new = copy.deepcopy(plan)
    decisions: list[str] = []
    for node in new.get("nodes", []):
        name, version = B.split_type_name(node["type"])
        while B.lookup(name, version) is None:
            step = _MIGRATIONS.get((name, version))
            if step is None:
                raise PlanIncompatible(
                    f"node {node['id']}: no migration from {name} version {version}",
                    hint="migrate with an intermediate engine version that still knows this node version")
            target, fn = step
            migrated = fn(copy.deepcopy(node))
            migrated["type"] = f"{name}_{target}"
            node.clear()
            node.update(migrated)
            message = f"node {node['id']}: migrated {name} version {version} -> {target}"
            log.info(message)
            decisions.append(message)
            version = target
        if not decisions or not decisions[-1].startswith(f"node {node['id']}:"):
            log.info("node %s: %s version %s kept", node["id"], name, version)
    if new.get("engineVersion") != ENGINE_VERSION:
        decisions.append(f"plan engine version {new.get('engineVersion')} -> {ENGINE_VERSION}")
        log.info(decisions[-1])
    new["engineVersion"] = ENGINE_VERSION
    new["planId"] = compute_plan_id(new)
    ordered = {k: new[k] for k in ("formatVersion", "engineVersion", "sparkVersion", "planId", "config", "nodes",
                                   "edges") if k in new}
    return ordered, decisions
