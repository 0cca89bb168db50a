"""Restore checks: can this engine restore a plan, from its JSON alone? (DESIGN §3)

Every check says what to do when it fails. The verdict maps onto the CLI's exit codes: compatible (0),
needs migration (3: ``COMPILE PLAN 'new' FROM 'old'`` / ``planengine migrate``), incompatible (4).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from planengine.exec import base as B
from planengine.functions.defaults import default_registry
from planengine.plan import real_time, serde
from planengine.plan.node_migrations import migration_target
from planengine.plan.serde import compute_plan_id
from planengine.plan.strategies import NODE_STRATEGIES
from planengine.version import ENGINE_VERSION, READABLE_PLAN_FORMATS, SUPPORTED_MINOR_WINDOW

log = logging.getLogger("planengine.restore")

COMPATIBLE = "compatible"
NEEDS_MIGRATION = "needs-migration"
INCOMPATIBLE = "incompatible"
EXIT_CODES = {COMPATIBLE: 0, NEEDS_MIGRATION: 3, INCOMPATIBLE: 4}


@dataclass
class CheckReport:
    status: str = COMPATIBLE
    reasons: list[dict[str, Any]] = field(default_factory=list)
    plan_id: str | None = None
    plan_engine_version: str | None = None
    # What ``planengine migrate`` would move to the JVM with its state (``plan.state_moves``), so an upgrade
    # can carry the move out (the operator's ``spec.upgrade.migrateOperators: Auto``); no effect on the verdict.
    state_moves: list[str] = field(default_factory=list)

    def add(self, status: str, message: str, *, node: int | None = None, hint: str | None = None) -> None:
        rank = {COMPATIBLE: 0, NEEDS_MIGRATION: 1, INCOMPATIBLE: 2}
        if rank[status] > rank[self.status]:
            self.status = status
        entry: dict[str, Any] = {"status": status, "message": message}
        if node is not None:
            entry["node"] = node
        if hint:
            entry["hint"] = hint
        self.reasons.append(entry)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "exitCode": self.exit_code, "engineVersion": ENGINE_VERSION,
                "planEngineVersion": self.plan_engine_version, "planId": self.plan_id, "reasons": self.reasons,
                "stateMoves": self.state_moves}

    def summary(self) -> str:
        lines = [f"plan {self.plan_id or '?'}: {self.status}"]
        for r in self.reasons:
            where = f"node {r['node']}: " if "node" in r else ""
            lines.append(f"  - {where}{r['message']}" + (f" ({r['hint']})" if r.get("hint") else ""))
        return "\n".join(lines)


def _minor(version: str) -> tuple[int, int] | None:
    try:
        major, minor = version.split(".")[:2]
        return int(major), int(minor)
    except (ValueError, AttributeError):
        return None


def check_plan(plan: dict[str, Any]) -> CheckReport:
    report = CheckReport(plan_id=plan.get("planId"), plan_engine_version=plan.get("engineVersion"))
    fmt = plan.get("formatVersion")
    if fmt not in READABLE_PLAN_FORMATS:
        readable = ", ".join(str(f) for f in READABLE_PLAN_FORMATS)
        report.add(INCOMPATIBLE, f"plan format version {fmt!r} is not readable by this engine (reads {readable})",
                   hint="run the plan on the engine that wrote it")
        return report
    ours, theirs = _minor(ENGINE_VERSION), _minor(str(plan.get("engineVersion")))
    if theirs is None or ours is None:
        report.add(INCOMPATIBLE, f"plan engine version {plan.get('engineVersion')!r} is malformed")
    elif theirs > ours:
        report.add(INCOMPATIBLE, f"plan was compiled by a newer engine ({plan['engineVersion']}) than this one "
                                 f"({ENGINE_VERSION})", hint="restore it with that engine version or newer")
    elif theirs[0] != ours[0] or ours[1] - theirs[1] > SUPPORTED_MINOR_WINDOW:
        # Not "needs migration": this engine can neither restore nor migrate it (the operator answers exit 3 by
        # running this engine's migrate), so the steps must happen on intermediate engines.
        report.add(INCOMPATIBLE, f"plan engine version {plan['engineVersion']} is outside the supported window "
                                 f"of {ENGINE_VERSION} (this minor and the {SUPPORTED_MINOR_WINDOW} before it)",
                   hint="migrate it step by step with COMPILE PLAN 'new' FROM 'old' on intermediate engine versions, "
                        "each within the window of the one before")
    if plan.get("planId") and compute_plan_id(plan) != plan["planId"]:
        report.add(INCOMPATIBLE, "planId does not match the plan's content: the file was edited by hand or is "
                                 "corrupt", hint="recompile the plan, or migrate it, instead of editing it")
    config = plan.get("config")
    lacking = real_time.spark_lacks_mode(serde.SPARK_VERSION) if isinstance(config, dict) and real_time.enabled(
        config) else None
    if lacking:
        report.add(INCOMPATIBLE, f"the plan runs in Spark's Real-time Mode ('{real_time.ENABLED_KEY}' in its config), "
                                 f"but this engine cannot: {lacking}",
                   hint="restore it with an engine on Spark 4.3 or newer; a plan compiled with "
                        f"'{real_time.MODE_KEY}' = 'OFF' runs in micro-batches on any engine")
    registry = default_registry()
    for node in plan.get("nodes", []):
        nid = node.get("id")
        try:
            name, version = B.split_type_name(str(node.get("type")))
        except ValueError as error:
            report.add(INCOMPATIBLE, str(error), node=nid)
            continue
        if B.lookup(name, version) is not None:
            log.info("restore check: node %s %s-%s registered", nid, name, version)
        elif B.dropped(name, version) and migration_target(name, version) is not None:
            target = migration_target(name, version)
            log.info("restore check: node %s %s-%s needs migration to version %s", nid, name, version, target)
            report.add(NEEDS_MIGRATION, f"exec node {name} version {version} is no longer restorable by this engine; "
                                        f"this engine migrates it to version {target}", node=nid,
                       hint="migrate the plan with COMPILE PLAN 'new' FROM 'old' (or planengine migrate --plan OLD "
                            "-o NEW)")
        elif B.dropped(name, version):
            log.info("restore check: node %s %s-%s dropped, no migration", nid, name, version)
            report.add(INCOMPATIBLE, f"exec node {name} version {version} is no longer restorable by this engine, and "
                                     "this engine has no migration for it", node=nid,
                       hint="migrate the plan with COMPILE PLAN 'new' FROM 'old' on an intermediate engine version "
                            "that still knows this node version, then restore the migrated plan here")
        else:
            known = sorted(v for (n, v) in B.registered() if n == name)
            report.add(INCOMPATIBLE, f"exec node {name} version {version} is unknown to this engine"
                       + (f" (it has versions {known})" if known else ""), node=nid,
                       hint="restore with the engine version that compiled the plan")
        known_strategies = NODE_STRATEGIES.get((name, version), ())
        if "strategy" in node and node["strategy"] not in known_strategies:
            report.add(INCOMPATIBLE, f"translation strategy {node['strategy']!r} is unknown to this engine for "
                                     f"{name} version {version} (it knows {', '.join(known_strategies) or 'none'})",
                       node=nid, hint="restore with the engine version that compiled the plan")
        for ref in _function_refs(node):
            fn_name, fn_version = ref
            try:
                registry.get(fn_name, fn_version)
            except Exception:
                report.add(INCOMPATIBLE, f"built-in function {fn_name} version {fn_version} is not available",
                           node=nid, hint="restore with the engine version that compiled the plan")
    return report


def _function_refs(value: Any) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    if isinstance(value, dict):
        fn = value.get("function")
        # Malformed references are skipped here: restoring the plan (check_restorable) reports the node.
        if value.get("kind") == "CALL" and isinstance(fn, dict) and _is_version(fn.get("version")):
            found.append((str(fn.get("name")), int(fn["version"])))
        for agg in value.get("aggCalls") if isinstance(value.get("aggCalls"), list) else ():
            if isinstance(agg, dict) and _is_version(agg.get("version")):
                found.append((str(agg.get("function")), int(agg["version"])))
        for v in value.values():
            found.extend(_function_refs(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(_function_refs(v))
    return found


def _is_version(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, str) and value.isdigit())
