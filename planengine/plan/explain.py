"""Human-readable descriptions of plans: the exec DAG with changelog modes and sharing."""

from __future__ import annotations

from typing import Any

from planengine.plan.real_time import BLOCKED_BY_KEY, ENABLED_KEY, INTERVAL_KEY, MODE_KEY
from planengine.plan.topology import Dag, Topology, legacy_topology

_MAX_INDENT = 40


def plan_summary(plan: dict[str, Any]) -> dict[str, Any]:
    """The machine-readable summary behind ``planengine explain --json``."""
    consumers: dict[int, list[int]] = {}
    inputs: dict[int, list[int]] = {}
    for e in plan.get("edges", []):
        consumers.setdefault(e["source"], []).append(e["target"])
        inputs.setdefault(e["target"], []).append(e["source"])
    by_id = {n["id"]: n for n in plan.get("nodes", [])}
    sinks = [n["id"] for n in plan.get("nodes", []) if n["id"] not in consumers]
    # The sinks each node feeds, in one pass from the sinks up (nodes are in topological order, checked by
    # ``planengine.plan.validate``): linear in the plan for the usual few sinks, never a walk per node.
    feeds_of: dict[int, frozenset[int]] = {}
    for n in reversed(plan.get("nodes", [])):
        nid = n["id"]
        below = consumers.get(nid)
        if not below:
            feeds_of[nid] = frozenset((nid,))
        elif len(below) == 1:
            feeds_of[nid] = feeds_of[below[0]]
        else:
            feeds_of[nid] = frozenset().union(*(feeds_of[c] for c in below))

    nodes = []
    for n in plan.get("nodes", []):
        feeds = sorted(feeds_of[n["id"]])
        nodes.append({
            "id": n["id"], "type": n["type"], "changelogMode": n.get("changelogMode"),
            "inputs": inputs.get(n["id"], []), "stateful": bool(n.get("state")),
            "sinks": feeds, "shared": len(feeds) > 1, "description": n.get("description", ""),
            **({"strategy": n["strategy"]} if "strategy" in n else {}),
        })
    return {"planId": plan.get("planId"), "engineVersion": plan.get("engineVersion"),
            "sinks": [{"id": s, "table": _table_identifier(by_id[s])} for s in sinks],
            "nodes": nodes, "topology": "shared" if "queries" in plan else "per-sink", "queries": queries(plan)}


def _table_identifier(node: dict[str, Any]) -> Any:
    table = node.get("table")
    return table.get("identifier") if isinstance(table, dict) else None


def queries(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The Spark queries that run the plan: what each computes in its streaming part, what it evaluates per
    micro-batch (a fan-out's stateless tails), the channels it reads and writes, the sinks it writes. A plan
    without a recorded topology runs one query per sink, each computing everything its sink reads."""
    dag = Dag.from_plan(plan)
    topology = Topology.from_plan(plan) or legacy_topology(dag)
    out = []
    for q in topology.queries:
        out.append({"uid": q.uid, "kind": "fan-out" if q.fan_out else "sink", "head": q.head,
                    "computes": topology.streaming_nodes(dag, q), "perBatch": topology.batch_nodes(dag, q),
                    "readsChannels": topology.channel_inputs(dag, q), "writesChannel": q.channel,
                    "sinks": list(q.sinks)})
    return out


def explain_plan_json(plan: dict[str, Any]) -> str:
    summary = plan_summary(plan)
    by_id = {n["id"]: n for n in summary["nodes"]}
    lines = [f"== Compiled plan {summary['planId'][:12] if summary['planId'] else ''} "
             f"(engine {summary['engineVersion']}) =="]
    printed: set[int] = set()
    # Depth-first from each sink with an explicit stack (a plan may be thousands of nodes deep).
    stack: list[tuple[int, int]] = [(s["id"], 0) for s in reversed(summary["sinks"])]
    while stack:
        nid, depth = stack.pop()
        n = by_id[nid]
        if nid in printed:
            lines.append(_indent(depth) + f"#{nid} (see above)")
            continue
        printed.add(nid)
        mode = f"changelogMode=[{n['changelogMode']}]"
        if "strategy" in n:
            mode += f", strategy=[{n['strategy']}]"
        shared = f", shared by sinks {n['sinks']}" if n["shared"] else ""
        lines.append(_indent(depth) + f"#{nid} {n['description'] or n['type']} [{n['type']}], {mode}{shared}")
        stack.extend((i, depth + 1) for i in reversed(n["inputs"]))
    mode = real_time_line(plan.get("config") or {})
    if mode:
        lines += ["", mode]
    if len(summary["queries"]) < 2 and summary["topology"] != "shared":
        return "\n".join(lines)  # one sink, one query: nothing to say about the topology
    lines += ["", _queries_title(summary)]
    computed: dict[int, int] = {}
    for q in summary["queries"]:
        for n in q["computes"]:
            computed[n] = computed.get(n, 0) + 1
    for q in summary["queries"]:
        parts = []
        if q["readsChannels"]:
            parts.append("reads channel of " + ", ".join(f"#{c}" for c in q["readsChannels"]))
        parts.append("computes " + ", ".join(f"#{n}" + (" (again)" if computed[n] > 1 and n in _again(
            summary, q, n) else "") for n in q["computes"]))
        if q["kind"] == "fan-out":
            targets = [f"#{s} {by_id[s]['description'] or by_id[s]['type']}" for s in q["sinks"]]
            if q["writesChannel"]:
                targets.append(f"channel of #{q['head']}")
            tail = [f"#{n}" for n in q["perBatch"] if n not in q["sinks"]]
            parts.append("per micro-batch" + (f" ({', '.join(tail)})" if tail else "") + " -> " + ", ".join(targets))
        lines.append(f"{q['uid']}: " + "; ".join(parts))
    return "\n".join(lines)


def real_time_line(config: dict[str, Any]) -> str | None:
    """How the plan's queries run, when the plan asked for Real-time Mode (``plan/real_time.py``); None otherwise."""
    if MODE_KEY not in config:
        return None
    asked = f"{MODE_KEY} = {config[MODE_KEY]}"
    if str(config.get(ENABLED_KEY)) == "true":
        return f"Execution: Real-time Mode ({asked}; one checkpoint every {config.get(INTERVAL_KEY)})"
    return f"Execution: micro-batches ({asked}, but {config.get(BLOCKED_BY_KEY, 'a node cannot run in it')})"


def _indent(depth: int) -> str:
    """Two spaces a level, up to a bound: a plan thousands of nodes deep must not print megabytes of blanks."""
    if depth <= _MAX_INDENT:
        return "  " * depth
    return "  " * _MAX_INDENT + f"[depth {depth}] "


def _queries_title(summary: dict[str, Any]) -> str:
    if summary["topology"] == "shared":
        return f"== {_count(summary)} (shared topology: every node runs once per micro-batch) =="
    return f"== {_count(summary)} (one per sink: a node several sinks read runs in each) =="


def _again(summary: dict[str, Any], query: dict[str, Any], node: int) -> set[int]:
    """``{node}`` when an earlier query already computes ``node`` (legacy plans: shared nodes run per sink)."""
    for q in summary["queries"]:
        if q is query:
            return set()
        if node in q["computes"]:
            return {node}
    return set()



def _count(summary: dict[str, Any]) -> str:
    n = len(summary["queries"])
    return f"{n} quer{'y' if n == 1 else 'ies'}"
