"""Plan migration: rewrite nodes of retired versions into registered ones (``COMPILE PLAN 'new' FROM 'old'``).

A node version that must stay restorable keeps its class registered. When an engine retires a version, it
registers a migration from that version to a newer one (``planengine.plan.node_migrations``): a pure function on
the node's JSON. Migrating a plan applies them node by node (logging each decision), stamps this engine's
version and recomputes the plan id. Migration never re-plans: the topology, uids and state names are kept.

It also applies the engine's state moves (``planengine.plan.state_moves``): registered nodes on the Python
``transformWithState`` operator move to the JVM version of their node, and their state is converted when the
migrated plan first starts from a snapshot of the old one (``planengine.runtime.state.move``).
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from planengine.errors import InternalError, PlanIncompatible
from planengine.exec import base as B
from planengine.plan.node_migrations import migration_step
from planengine.plan.restore import INCOMPATIBLE, check_plan
from planengine.plan.serde import compute_plan_id
from planengine.plan.state_moves import apply_state_move, kept_reason, restored_strategies, state_move
from planengine.version import ENGINE_VERSION

log = logging.getLogger("planengine.migrate")

def _invariants(node: dict[str, Any]) -> tuple[Any, ...]:
    """What a migration must never change: identity, operator uids and state names (state is addressed by
    them), and the row the node produces (its consumers were planned for it)."""
    return (node.get("id"), node.get("uids"), [s.get("name") for s in node.get("state", [])],
            node.get("outputType"), node.get("changelogMode"))


def migrate_plan(plan: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Return the migrated plan and the list of decisions taken (also logged at INFO).

    Only plans this engine can read are migrated: a plan from a newer engine, from outside the supported
    window, or edited by hand (planId mismatch) is refused rather than re-stamped with this engine's version.
    """
    report = check_plan(plan)
    if report.status == INCOMPATIBLE:
        raise PlanIncompatible("this engine cannot migrate the plan:\n" + report.summary(),
                               hint="see the reasons above; a plan is migrated by an engine that can read it")
    new = copy.deepcopy(plan)
    decisions: list[str] = []
    strategies = restored_strategies(plan)
    for node in new.get("nodes", []):
        name, version = B.split_type_name(node["type"])
        while B.lookup(name, version) is None:
            step = migration_step(name, version)
            if step is None:
                raise PlanIncompatible(
                    f"node {node['id']}: no migration from {name} version {version}",
                    hint="migrate with an intermediate engine version that still knows this node version")
            target, fn = step
            migrated = fn(copy.deepcopy(node))
            if _invariants(migrated) != _invariants(node):
                raise InternalError(f"node {node['id']}: the migration of {name} from version {version} to {target} "
                                    "changed the node's id, uids, state names or output; migrations must keep them")
            migrated["type"] = f"{name}_{target}"
            node.clear()
            node.update(migrated)
            message = f"node {node['id']}: migrated {name} version {version} -> {target} (uids and state kept)"
            log.info(message)
            decisions.append(message)
            version = target
        move = state_move(node, strategies.get(int(node["id"])))
        if move is not None:
            before = copy.deepcopy(node)
            apply_state_move(node, strategies.get(int(node["id"])))
            if _invariants(node) != _invariants(before):
                raise InternalError(f"node {node['id']}: the state move changed the node's id, uids, state names "
                                    "or output")
            message = (f"{move.describe()}: the state moves from the Python operator to the JVM processor when "
                       "the migrated plan first starts from a snapshot of the old one (uids kept)")
            log.info(message)
            decisions.append(message)
        reason = kept_reason(node, strategies.get(int(node["id"])))
        if reason is not None:
            message = (f"node {node['id']}: {name} version {version} kept on the Python operator with its state: "
                       f"{reason}")
            log.info(message)
            decisions.append(message)
        if not decisions or not decisions[-1].startswith(f"node {node['id']}:"):
            message = f"node {node['id']}: {name} version {version} kept (registered)"
            log.info(message)
            decisions.append(message)
    if new.get("engineVersion") != ENGINE_VERSION:
        decisions.append(f"plan engine version {new.get('engineVersion')} -> {ENGINE_VERSION}")
        log.info(decisions[-1])
    new["engineVersion"] = ENGINE_VERSION
    new["planId"] = compute_plan_id(new)
    # The recorded topology (queries) is kept as it is: node ids do not change, and the queries own the state.
    ordered = {k: new[k] for k in ("formatVersion", "engineVersion", "sparkVersion", "planId", "config", "nodes",
                                   "edges", "queries") if k in new}
    return ordered, decisions
