"""Human-readable descriptions of plans: the exec DAG with changelog modes and sharing."""

from __future__ import annotations

from typing import Any


def plan_summary(plan: dict[str, Any]) -> dict[str, Any]:
    """The machine-readable summary behind ``planengine explain --json``."""
    consumers: dict[int, list[int]] = {}
    inputs: dict[int, list[int]] = {}
    for e in plan.get("edges", []):
        consumers.setdefault(e["source"], []).append(e["target"])
        inputs.setdefault(e["target"], []).append(e["source"])
    by_id = {n["id"]: n for n in plan.get("nodes", [])}
    sinks = [n["id"] for n in plan.get("nodes", []) if n["id"] not in consumers]

    def reaches(nid: int) -> set[int]:
        out: set[int] = set()
        stack = [nid]
        while stack:
            cur = stack.pop()
            if cur in sinks:
                out.add(cur)
            stack.extend(consumers.get(cur, []))
        return out

    nodes = []
    for n in plan.get("nodes", []):
        feeds = sorted(reaches(n["id"]))
        nodes.append({
            "id": n["id"], "type": n["type"], "changelogMode": n.get("changelogMode"),
            "inputs": inputs.get(n["id"], []), "stateful": bool(n.get("state")),
            "sinks": feeds, "shared": len(feeds) > 1, "description": n.get("description", ""),
        })
    return {"planId": plan.get("planId"), "engineVersion": plan.get("engineVersion"),
            "sinks": [{"id": s, "table": by_id[s].get("table", {}).get("identifier")} for s in sinks],
            "nodes": nodes}


def explain_plan_json(plan: dict[str, Any]) -> str:
    summary = plan_summary(plan)
    by_id = {n["id"]: n for n in summary["nodes"]}
    lines = [f"== Compiled plan {summary['planId'][:12] if summary['planId'] else ''} "
             f"(engine {summary['engineVersion']}) =="]
    printed: set[int] = set()

    def visit(nid: int, depth: int) -> None:
        n = by_id[nid]
        mode = f"changelogMode=[{n['changelogMode']}]"
        shared = f", shared by sinks {n['sinks']}" if n["shared"] else ""
        if nid in printed:
            lines.append("  " * depth + f"#{nid} (see above)")
            return
        printed.add(nid)
        lines.append("  " * depth + f"#{nid} {n['description'] or n['type']} [{n['type']}], {mode}{shared}")
        for i in n["inputs"]:
            visit(i, depth + 1)

    for s in summary["sinks"]:
        visit(s["id"], 0)
    return "\n".join(lines)
