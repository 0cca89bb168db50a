"""``planengine check --plan P --snapshot S``: can the plan's queries restore the snapshot's state?

Judged without starting anything:

* every node needs a translator in this runtime (``executor.unsupported_nodes``);
* per query (one per sink, named by the sink's uid), the stateful nodes feeding it in the new plan must be
  those of the snapshot's plan (same node id, exec node name and state names, a version that is still
  registered). Spark addresses operator state by position within a query, so a query whose stateful
  operators changed cannot reuse its checkpoint;
* the snapshot's queries that the new plan no longer has would lose their state.

When the Spark runtime is importable, ``state_operators(checkpoint)`` reads Spark's ``state-metadata``
source to list what a checkpoint actually holds (``planengine snapshots inspect`` shows it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planengine.plan.restore import INCOMPATIBLE, CheckReport


def stateful_lineage(plan_json: dict[str, Any]) -> dict[str, list[tuple[int, str, tuple[str, ...]]]]:
    """Query uid -> the stateful nodes (id, type, state names) upstream of its sink, by id."""
    nodes = {n["id"]: n for n in plan_json.get("nodes", [])}
    inputs: dict[int, list[int]] = {}
    consumers: set[int] = set()
    for e in plan_json.get("edges", []):
        inputs.setdefault(e["target"], []).append(e["source"])
        consumers.add(e["source"])
    out: dict[str, list[tuple[int, str, tuple[str, ...]]]] = {}
    for nid, node in nodes.items():
        if nid in consumers:
            continue
        name, _, version = str(node["type"]).rpartition("_")
        uid = f"{nid}_{name}-{version}_sink"
        seen: set[int] = set()
        stack = [nid]
        found = []
        while stack:
            cur = stack.pop()
            if cur in seen:
                continue
            seen.add(cur)
            n = nodes[cur]
            if n.get("state"):
                found.append((cur, str(n["type"]), tuple(s["name"] for s in n["state"])))
            stack.extend(inputs.get(cur, []))
        out[uid] = sorted(found)
    return out


def check_snapshot_state(plan_json: dict[str, Any], snapshot_dir: str, report: CheckReport) -> None:
    from planengine.runtime.executor import unsupported_nodes
    from planengine.runtime.snapshots import read_snapshot

    for missing in unsupported_nodes(plan_json):
        report.add(INCOMPATIBLE, f"exec node {missing['type']} has no Spark translation in this engine",
                   node=missing["node"], hint="run the plan on an engine version that supports this node")
    info = read_snapshot(snapshot_dir)
    if not info.complete:
        report.add(INCOMPATIBLE, f"snapshot {snapshot_dir} is incomplete: {info.problem}",
                   hint="restore from another snapshot")
        return
    old_plan = json.loads(Path(info.plan_path).read_text(encoding="utf-8"))
    if old_plan.get("planId") == plan_json.get("planId"):
        return
    old, new = stateful_lineage(old_plan), stateful_lineage(plan_json)
    snapshot_queries = set(info.last_batch_ids)
    for uid in sorted(snapshot_queries - set(new)):
        if old.get(uid):
            report.add(INCOMPATIBLE, f"the snapshot holds state of query {uid}, which the plan no longer has",
                       hint="keep the sink in the plan, or start without the snapshot (state is lost)")
    for uid, operators in sorted(new.items()):
        if uid not in snapshot_queries:
            continue
        before = old.get(uid, [])
        if [(i, t, s) for i, t, s in before] != operators:
            report.add(INCOMPATIBLE,
                       f"query {uid}: stateful operators changed from {_describe(before)} to {_describe(operators)}",
                       hint="Spark addresses state by operator position; migrate with the old topology or start "
                            "the query without state")


def _describe(ops: list[tuple[int, str, tuple[str, ...]]]) -> str:
    return "[" + ", ".join(f"{i}:{t}({', '.join(s)})" for i, t, s in ops) + "]" if ops else "[]"


def state_operators(spark: Any, checkpoint: str) -> list[dict[str, Any]]:
    """Spark's ``state-metadata`` rows for one query checkpoint (operator id, name, store, partitions)."""
    if not (Path(checkpoint) / "state").is_dir():
        return []
    rows = spark.read.format("state-metadata").load(checkpoint).collect()
    return [r.asDict(recursive=True) for r in rows]
