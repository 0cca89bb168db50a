"""Which stateful nodes each query of a plan computes: where a node's state lives in a run's checkpoints.

Spark keeps state per query (under the query's uid) and addresses it by operator position, so the owner of a
node's state is the query that computes it. Both the state move (``move.py``, before a run starts) and the state
check (``planengine.runtime.state_check``, a plan against a snapshot) ask this, so it sits here, in the room
below the engine, and the check above the engine imports it.
"""

from __future__ import annotations

from typing import Any

from planengine.plan.topology import Dag, Topology, legacy_topology


def stateful_lineage(plan_json: dict[str, Any]) -> dict[str, list[tuple[int, str, tuple[str, ...]]]]:
    """Query uid -> the stateful nodes (id, type, state names) the query computes, by id: the plan's recorded
    queries (a fan-out query holds the state of everything in its streaming part, a channel consumer only what
    lies below the channel), or one query per sink holding everything upstream of the sink."""
    nodes = {int(n["id"]): n for n in plan_json.get("nodes", [])}
    dag = Dag.from_plan(plan_json)
    topology = Topology.from_plan(plan_json) or legacy_topology(dag)
    out: dict[str, list[tuple[int, str, tuple[str, ...]]]] = {}
    for query in topology.queries:
        found = [(n, str(nodes[n]["type"]), tuple(s["name"] for s in nodes[n]["state"]))
                 for n in topology.streaming_nodes(dag, query) if nodes[n].get("state")]
        out[query.uid] = sorted(found)
    return out
