"""Which Spark streaming queries run a plan, and where the DAG is cut between them (issue 12).

Spark re-executes a DataFrame's lineage in every query that uses it, so the runtime's first topology, one
query per sink, ran every node shared by several sinks once per sink and per micro-batch: a 5-sink statement
set read its source 5 times, and a group aggregate feeding two sinks kept two state stores that could
disagree. The *shared topology* runs every node once per micro-batch:

* A **fan-out query** per *head*: a node shared by several sinks where the DAG diverges (two or more
  consumers reaching two or more sinks), or whose stateless tail fans out to several sinks. Its streaming
  part computes the head (and everything above it that no other query computes) once per micro-batch; Spark
  then hands the micro-batch to ``foreachBatch``, which persists it and writes it through the stateless
  tails (Calc, Exchange, DropUpdateBefore, Sink) to each of its sinks, keyed by the batch id (each sink's
  own exactly-once: the file sink's manifest, the JDBC commit table).
* Consumers of a head that are not stateless tails (stateful nodes, sinks that materialise upserts or cannot
  write a micro-batch) run in their own queries and read the head's output from an internal **channel**
  (parquet files with Spark's file-sink manifest, inside the fan-out query's checkpoint), which the fan-out
  query writes once per batch, with the same batch id, next to its sinks.
* Every other sink is a plain **sink query** of its own, as before.

Stateful operators stay in the streaming part of exactly one query (Spark allows no state inside
``foreachBatch``), so a shared stateful node has one state store, addressed by its uid as before.

The topology is decided once, at compile time, and **recorded** in the plan as the envelope key
``"queries"`` (plan format 2), so a restored plan runs the very same queries whatever a later engine would
decide; a plan without the key (format 1: every plan without a shared node, and every plan compiled before)
runs one query per sink. Old engines refuse format 2 instead of silently running it the old way.

>>> dag = Dag.of([1, 2, 3, 4], {2: (1,), 3: (2,), 4: (2,)}, {1: "stream-exec-table-source-scan_1",
...               2: "stream-exec-group-aggregate_2", 3: "stream-exec-sink_1", 4: "stream-exec-sink_1"},
...               batch_capable={3, 4})
>>> [q.to_json() for q in plan_topology(dag).queries]
[{'uid': '2_stream-exec-group-aggregate-2_fan-out', 'head': 2, 'sinks': [3, 4]}]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from planengine.errors import PlanError

QUERIES_KEY = "queries"
SINK = "stream-exec-sink"
# Stateless nodes a fan-out query can evaluate on a persisted micro-batch (a static DataFrame). Decided at
# compile time and recorded, so widening this set later changes only plans compiled afterwards.
BATCH_NODE_NAMES = frozenset({"stream-exec-calc", "stream-exec-exchange", "stream-exec-drop-update-before", SINK})


@dataclass(frozen=True)
class Dag:
    """The plan's DAG by node id: what the topology is computed from and checked against."""

    order: tuple[int, ...]  # topological
    inputs: Mapping[int, tuple[int, ...]]
    types: Mapping[int, str]  # node id -> "<name>_<version>"
    batch_capable: frozenset[int] = frozenset()  # nodes a fan-out may evaluate per micro-batch (compile only)
    consumers: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    # node id -> the plan's recorded operator uids: a node moved to a newer version keeps the uids its state
    # was written under (runtime.engine.context.uid does the same), so its query keeps its checkpoint.
    uids: Mapping[int, tuple[str, ...]] = field(default_factory=dict)

    @staticmethod
    def of(order: Sequence[int], inputs: Mapping[int, Sequence[int]], types: Mapping[int, str],
           batch_capable: Iterable[int] = ()) -> Dag:
        consumers: dict[int, list[int]] = {n: [] for n in order}
        for n in order:
            for i in inputs.get(n, ()):
                consumers[i].append(n)
        return Dag(tuple(order), {n: tuple(inputs.get(n, ())) for n in order}, dict(types),
                   frozenset(batch_capable), {n: tuple(c) for n, c in consumers.items()})

    @staticmethod
    def from_plan(plan: Mapping[str, Any]) -> Dag:
        order = [int(n["id"]) for n in plan.get("nodes", [])]
        inputs: dict[int, list[int]] = {}
        for e in plan.get("edges", []):
            inputs.setdefault(int(e["target"]), []).append(int(e["source"]))
        dag = Dag.of(order, inputs, {int(n["id"]): str(n["type"]) for n in plan.get("nodes", [])})
        uids = {int(n["id"]): tuple(str(u) for u in n.get("uids") or ()) for n in plan.get("nodes", [])}
        return replace(dag, uids=uids)

    def name(self, node: int) -> str:
        return self.types[node].rsplit("_", 1)[0]

    def is_sink(self, node: int) -> bool:
        return self.name(node) == SINK

    def sinks(self) -> list[int]:
        return [n for n in self.order if not self.consumers[n]]

    def operator_uid(self, node: int, operator: str) -> str:
        for recorded in self.uids.get(node, ()):
            if recorded.endswith(f"_{operator}"):
                return recorded
        name, version = self.types[node].rsplit("_", 1)
        return f"{node}_{name}-{version}_{operator}"


@dataclass(frozen=True)
class Query:
    """One streaming query: ``head`` is the node whose output it computes; for a fan-out query, ``sinks`` are
    written from its ``foreachBatch`` and ``channel`` says whether the head's output also goes to the channel
    other queries read; for a sink query, ``head`` is the sink (``sinks == (head,)``)."""

    uid: str
    head: int
    sinks: tuple[int, ...]
    channel: bool = False

    @property
    def fan_out(self) -> bool:
        return self.sinks != (self.head,)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uid": self.uid, "head": self.head, "sinks": list(self.sinks)}
        if self.channel:
            out["channel"] = True
        return out

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Query:
        return Query(str(data["uid"]), int(data["head"]), tuple(int(s) for s in data["sinks"]),
                     bool(data.get("channel", False)))


@dataclass(frozen=True)
class Topology:
    queries: tuple[Query, ...]

    def to_json(self) -> list[dict[str, Any]]:
        return [q.to_json() for q in self.queries]

    @staticmethod
    def from_plan(plan: Mapping[str, Any]) -> Topology | None:
        """The recorded topology, or None for a plan that runs one query per sink."""
        data = plan.get(QUERIES_KEY)
        if data is None:
            return None
        try:
            topology = Topology(tuple(Query.from_json(q) for q in data))
        except (KeyError, TypeError, ValueError) as error:
            raise PlanError(f"plan 'queries' section is malformed: {error}",
                            hint="compile the plan again; do not edit the queries section by hand") from None
        topology.check(Dag.from_plan(plan))
        return topology

    # --- derived views (runtime and explain) -------------------------------------------------------------
    def fan_outs(self) -> dict[int, Query]:
        return {q.head: q for q in self.queries if q.fan_out}

    def channel_heads(self) -> set[int]:
        return {q.head for q in self.queries if q.channel}

    def batch_nodes(self, dag: Dag, query: Query) -> list[int]:
        """Nodes a fan-out query evaluates per micro-batch (its tails to its sinks), in topological order."""
        if not query.fan_out:
            return []
        found: set[int] = set()
        stack = list(query.sinks)
        while stack:
            n = stack.pop()
            if n == query.head or n in found:
                continue
            found.add(n)
            stack.extend(dag.inputs[n])
        return [n for n in dag.order if n in found]

    def streaming_nodes(self, dag: Dag, query: Query) -> list[int]:
        """Nodes the query's streaming part computes: its head and everything above it up to (not including)
        the heads of other queries' channels, which it reads instead."""
        channels = self.channel_heads() - {query.head}
        found: set[int] = set()
        stack = [query.head]
        while stack:
            n = stack.pop()
            if n in found or n in channels:
                continue
            found.add(n)
            stack.extend(dag.inputs[n])
        return [n for n in dag.order if n in found]

    def channel_inputs(self, dag: Dag, query: Query) -> list[int]:
        """Channel heads the query reads."""
        nodes = set(self.streaming_nodes(dag, query))
        channels = self.channel_heads() - {query.head}
        return sorted({i for n in nodes for i in dag.inputs[n] if i in channels})

    def check(self, dag: Dag) -> None:
        """Every node runs in exactly one query; every sink is written by exactly one query."""
        owner: dict[int, str] = {}
        for q in self.queries:
            if q.head not in dag.types or any(s not in dag.types or not dag.is_sink(s) for s in q.sinks):
                raise PlanError(f"plan query {q.uid} names nodes that are not in the plan (or sinks that are not "
                                "sinks)", hint="compile the plan again")
            for n in self.streaming_nodes(dag, q) + self.batch_nodes(dag, q):
                if n in owner:
                    raise PlanError(f"plan queries {owner[n]} and {q.uid} both compute node {n}",
                                    hint="compile the plan again")
                owner[n] = q.uid
        missing = [n for n in dag.order if n not in owner]
        if missing:
            raise PlanError(f"plan queries compute no query for nodes {missing}", hint="compile the plan again")


def legacy_topology(dag: Dag) -> Topology:
    """What a plan without a recorded topology runs: one query per sink, each computing all its sink reads."""
    return Topology(tuple(Query(dag.operator_uid(s, "sink"), s, (s,)) for s in dag.sinks()))


def plan_topology(dag: Dag) -> Topology | None:
    """The shared topology of a DAG, or None when no node is shared by several sinks (one query per sink is
    then already "every node once per batch", and the plan keeps format 1)."""
    sinks_of: dict[int, frozenset[int]] = {}
    for n in reversed(dag.order):
        reached = {n} if not dag.consumers[n] else set()
        for c in dag.consumers[n]:
            reached |= sinks_of[c]
        sinks_of[n] = frozenset(reached)
    shared = {n for n in dag.order if len(dag.consumers[n]) >= 2 and len(sinks_of[n]) >= 2}
    if not shared:
        return None
    # The stateless tails: single-input batch-capable nodes whose consumers all are tails too (sinks that
    # write micro-batches included), evaluated on the persisted micro-batch of the head above them.
    tail: set[int] = set()
    for n in reversed(dag.order):
        if n in dag.batch_capable and len(dag.inputs[n]) == 1 and all(c in tail for c in dag.consumers[n]):
            tail.add(n)
    heads = [n for n in dag.order if n not in tail and dag.consumers[n] and (
        n in shared or any(c in tail and len(sinks_of[c]) >= 2 for c in dag.consumers[n]))]
    queries: list[Query] = []
    written: set[int] = set()
    for h in heads:
        region: set[int] = set()
        stack = [c for c in dag.consumers[h] if c in tail]
        while stack:
            n = stack.pop()
            if n not in region:
                region.add(n)
                stack.extend(dag.consumers[n])
        sinks = tuple(n for n in dag.order if n in region and not dag.consumers[n])
        channel = any(c not in tail for c in dag.consumers[h])
        queries.append(Query(dag.operator_uid(h, "fan-out"), h, sinks, channel))
        written |= set(sinks)
    for s in dag.sinks():
        if s not in written:
            queries.append(Query(dag.operator_uid(s, "sink"), s, (s,)))
    order = {n: i for i, n in enumerate(dag.order)}
    topology = Topology(tuple(sorted(queries, key=lambda q: order[q.head])))
    topology.check(dag)
    return topology
