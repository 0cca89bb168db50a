"""Exec DAG ⇄ plan JSON (DESIGN §3), byte-deterministic.

Writing: nodes in topological order get ids 1..n, edges follow each node's input order, every dict is
built in a fixed key order, and ``planId`` is the SHA-256 of the canonical body, so the same program always
yields the same bytes. Reading: node types are looked up by ``(name, version)`` in the registry and built
from their JSON fields, never re-planned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

from planengine.config import REGISTRY
from planengine.errors import PlanError, UserError
from planengine.exec import base as B
from planengine.exec.nodes import Sink
from planengine.ir.changelog import ChangelogMode
from planengine.ir.expressions import Call, ExprJson
from planengine.ir.types import DataType, parse_type
from planengine.plan.catalog_objects import CompileStrategy, RestoreContext, mask_options, read_plan_table
from planengine.plan.real_time import decide_real_time
from planengine.plan.topology import BATCH_NODE_NAMES, QUERIES_KEY, Dag, plan_topology
from planengine.version import ENGINE_VERSION, PLAN_FORMAT_VERSION


def _spark_version() -> str:
    """The Spark this engine runs on (plans and snapshot manifests record it); 4.3.0 without pyspark."""
    try:
        return version("pyspark")
    except Exception:  # no pyspark installed: a planning-only engine
        return "4.3.0"


SPARK_VERSION = _spark_version()

# Options a node may consume, with the defaults frozen into plans when the session does not set them: every
# plan-scoped option of the registry (planengine.config.options).
OPTION_DEFAULTS: dict[str, str] = {o.key: o.default for o in REGISTRY.options()
                                   if o.scope == "plan" and o.default is not None}
# Session options recorded in the plan envelope because they shape the topology or its semantics.
TOPOLOGY_PREFIXES = ("table.exec.", "table.optimizer.", "table.local-time-zone")
# The job's max parallelism (Flink's name): Spark's shuffle partitions, i.e. how many partitions every state
# store has, which a checkpoint fixes for good. Recorded only when set, so a plan compiled without it keeps
# its bytes and runs with the legacy 2 (``runtime.engine.session``).
MAX_PARALLELISM = "pipeline.max-parallelism"
# Planner option: record the shared topology for plans whose sinks share nodes (default on).
SHARED_QUERIES = "planengine.plan.shared-queries"


def max_parallelism(config: dict[str, str]) -> str | None:
    """The validated ``pipeline.max-parallelism`` of a session, or None when it is not set.

    >>> max_parallelism({"pipeline.max-parallelism": " 8 "}), max_parallelism({})
    ('8', None)
    """
    value = config.get(MAX_PARALLELISM)
    if value is None:
        return None
    text = str(value).strip()
    if not text.isdigit() or not 1 <= int(text) <= 32768:
        raise UserError(f"{MAX_PARALLELISM} must be a whole number from 1 to 32768, got {value!r}",
                        hint="it is the number of Spark shuffle (and state) partitions, fixed for the life of the "
                             "job's state: e.g. SET 'pipeline.max-parallelism' = '8' (about the total executor "
                             "cores the job may ever use)")
    return str(int(text))


_MINI_BATCH_DETAILS = ("table.exec.mini-batch.allow-latency", "table.exec.mini-batch.size")


def node_configuration(node: B.ExecNode, config: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The options a node consumes, frozen. Mini-batch latency and size only matter (and are only recorded)
    when mini-batching is enabled."""
    out = []
    mini_batch = str(config.get("table.exec.mini-batch.enabled", "false")).lower() == "true"
    for key in node.metadata.consumed_options:
        if key in _MINI_BATCH_DETAILS and not mini_batch:
            continue
        value = config.get(key, OPTION_DEFAULTS.get(key))
        if value is not None:
            out.append((key, str(value)))
    return tuple(out)


def write_plan(sinks: list[Sink], config: dict[str, str],
               sink_writes_batches: Callable[[Sink], bool] | None = None) -> dict[str, Any]:
    """The plan JSON of an exec DAG. ``sink_writes_batches`` (the planner's knowledge of its sinks) enables the
    shared topology (``planengine.plan.topology``): without it, or with ``planengine.plan.shared-queries``
    off, the plan runs one query per sink."""
    order = B.topological(list(sinks))
    ids = {id(n): i + 1 for i, n in enumerate(order)}
    nodes_json = []
    edges_json = []
    strategy = CompileStrategy.from_config(config)
    for node in order:
        nid = ids[id(node)]
        entry: dict[str, Any] = {"id": nid, "type": node.type_name}
        configuration = dict(node.configuration) or dict(node_configuration(node, config))
        if configuration:
            entry["configuration"] = configuration
        entry["outputType"] = str(node.output_type)
        entry["changelogMode"] = str(node.changelog_mode)
        if node.state:
            entry["state"] = [s.to_json() for s in node.state]
            entry["uids"] = list(node.uids) or [f"{nid}_{node.metadata.name}-{node.metadata.version}_{op}"
                                                for op in node.metadata.produced_operators]
        ctx = B.NodeJson(ExprJson(_input_row(node.inputs), strategy.writes_function_classes),
                         encode_table=strategy.encode_table)
        entry.update(node.specific_json(ctx))
        entry["description"] = node.description
        nodes_json.append(entry)
        props = node.input_properties or tuple(B.InputProperty() for _ in node.inputs)
        for child, prop in zip(node.inputs, props):
            edge: dict[str, Any] = {"source": ids[id(child)], "target": nid}
            if prop.distribution == "HASH":
                edge["shuffle"] = {"type": "HASH", "keys": list(prop.keys)}
            elif prop.distribution != "ANY":
                edge["shuffle"] = {"type": prop.distribution}
            edges_json.append(edge)  # no "shuffle": forward (same partitioning)
    topology_config = {k: v for k, v in sorted(mask_options(config).items()) if k.startswith(TOPOLOGY_PREFIXES)}
    recorded_parallelism = max_parallelism(config)
    if recorded_parallelism is not None:
        topology_config[MAX_PARALLELISM] = recorded_parallelism
    topology_config["pipeline.trigger-interval"] = infer_trigger_interval(config)
    topology_config.update(decide_real_time(list(sinks), config).recorded())
    topology = None
    if sink_writes_batches is not None and shared_queries(config):
        topology = plan_topology(exec_dag(order, ids, sink_writes_batches))
    body: dict[str, Any] = {
        # Format 1 unless the envelope carries a queries section: plans without one keep their exact bytes.
        "formatVersion": PLAN_FORMAT_VERSION if topology is not None else 1,
        "engineVersion": ENGINE_VERSION,
        "sparkVersion": SPARK_VERSION,
        "config": topology_config,
        "nodes": nodes_json,
        "edges": edges_json,
    }
    if topology is not None:
        body[QUERIES_KEY] = topology.to_json()
    plan_id = compute_plan_id(body)
    out = {"formatVersion": body["formatVersion"], "engineVersion": body["engineVersion"],
           "sparkVersion": body["sparkVersion"], "planId": plan_id, "config": body["config"],
           "nodes": nodes_json, "edges": edges_json}
    if topology is not None:
        out[QUERIES_KEY] = body[QUERIES_KEY]
    return out


def shared_queries(config: dict[str, str]) -> bool:
    return str(config.get(SHARED_QUERIES, "true")).strip().lower() != "false"


def exec_dag(order: list[B.ExecNode], ids: dict[int, int], sink_writes_batches: Callable[[Sink], bool]) -> Dag:
    """The exec DAG by plan node id, with the nodes a fan-out query could evaluate per micro-batch."""
    def batch_capable(node: B.ExecNode) -> bool:
        if node.metadata.name not in BATCH_NODE_NAMES:
            return False
        if isinstance(node, Sink):
            return not node.upsert_materialize and sink_writes_batches(node)
        # CURRENT_WATERMARK reads the streaming query's watermark, which a micro-batch DataFrame does not have.
        return not any(_calls(e, "CURRENT_WATERMARK") for e in _expressions(node))

    return Dag.of([ids[id(n)] for n in order], {ids[id(n)]: [ids[id(i)] for i in n.inputs] for n in order},
                  {ids[id(n)]: n.type_name for n in order},
                  batch_capable=[ids[id(n)] for n in order if batch_capable(n)])


def _expressions(node: B.ExecNode) -> list[Any]:
    exprs = list(getattr(node, "projection", ()) or ())
    condition = getattr(node, "condition", None)
    return exprs + ([condition] if condition is not None else [])


def _calls(expr: Any, name: str) -> bool:
    if isinstance(expr, Call) and expr.function.name.upper() == name:
        return True
    return any(_calls(c, name) for c in expr.children())


def compute_plan_id(plan: dict[str, Any]) -> str:
    body = {k: v for k, v in plan.items() if k != "planId"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def dumps(plan: dict[str, Any]) -> str:
    """One envelope key per line and one node / edge / query per line: small, yet a code-review diff shows
    exactly which nodes changed."""
    lines = ["{"]
    keys = list(plan)
    for i, key in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        value = plan[key]
        if key in ("nodes", "edges", QUERIES_KEY) and value:
            lines.append(f"  {json.dumps(key)}: [")
            for j, item in enumerate(value):
                sep = "," if j < len(value) - 1 else ""
                lines.append("    " + json.dumps(item, ensure_ascii=False, separators=(",", ":")) + sep)
            lines.append("  ]" + comma)
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False, separators=(',', ':'))}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def read_plan(plan: dict[str, Any], tables: RestoreContext | None = None) -> list[Sink]:
    """Build the exec DAG of a (checked) plan. Raise PlanError for structural problems.

    ``tables`` resolves the plan's tables under the restore strategies; without it the tables are what the
    plan alone says (inspection, explain)."""
    nodes_by_id: dict[int, B.ExecNode] = {}
    inputs_of: dict[int, list[int]] = {}
    shuffles_of: dict[int, list[B.InputProperty]] = {}
    for edge in plan.get("edges", []):
        inputs_of.setdefault(edge["target"], []).append(edge["source"])
        shuffle = edge.get("shuffle") or {"type": "ANY"}
        shuffles_of.setdefault(edge["target"], []).append(
            B.InputProperty(shuffle["type"], tuple(shuffle.get("keys", ()))))
    consumers: set[int] = {e["source"] for e in plan.get("edges", [])}
    for data in plan.get("nodes", []):
        nid = data["id"]
        try:
            name, version = B.split_type_name(data["type"])
        except ValueError as error:
            raise PlanError(f"node {nid}: {error}") from None
        cls = B.lookup(name, version)
        if cls is None:
            raise PlanError(f"node {nid}: exec node {data['type']} is not registered in this engine")
        try:
            inputs = tuple(nodes_by_id[i] for i in inputs_of.get(nid, []))
        except KeyError as error:
            raise PlanError(f"node {nid}: input node {error.args[0]} is not defined before it") from None
        try:
            ctx = B.NodeJson(ExprJson(_input_row(inputs)), decode_table=_table_reader(tables, nid))
            kwargs = cls.decode_specific(data, ctx)
            node = cls(
                inputs=inputs,
                output_type=parse_type(data["outputType"]),
                description=data.get("description", ""),
                changelog_mode=ChangelogMode.parse(data.get("changelogMode", "I")),
                configuration=tuple((k, str(v)) for k, v in (data.get("configuration") or {}).items()),
                input_properties=tuple(shuffles_of.get(nid, [])),
                state=tuple(B.StateDeclaration.from_json(s) for s in data.get("state", [])),
                uids=tuple(data.get("uids", [])),
                version=version,
                **kwargs,
            )
        except (KeyError, ValueError, TypeError, AttributeError, IndexError, OverflowError) as error:
            # A node's own fields come from an untrusted file: any of these means one has the wrong shape.
            raise PlanError(f"node {nid} ({data['type']}): malformed field: {type(error).__name__}: {error}",
                            hint="compile the program again instead of editing the plan") from None
        nodes_by_id[nid] = node
    sinks = [n for nid, n in nodes_by_id.items() if nid not in consumers]
    bad = [n for n in sinks if not isinstance(n, Sink)]
    if bad:
        raise PlanError(f"plan has dangling nodes that feed no sink: {[n.type_name for n in bad]}")
    return sinks  # type: ignore[return-value]


def _input_row(inputs: tuple[B.ExecNode, ...]) -> tuple[DataType, ...]:
    """The field types an INPUT_REF of a node reads: its inputs' fields, left ++ right."""
    return tuple(t for child in inputs for t in child.field_types)


def _table_reader(tables: RestoreContext | None, node_id: int) -> Callable[[dict[str, Any]], Any]:
    if tables is None:
        return read_plan_table
    return lambda data: tables.decode_table(data, node_id)


def infer_trigger_interval(config: dict[str, str]) -> str:
    """The micro-batch trigger interval (DESIGN §5, phase B): the session's ``pipeline.trigger-interval`` when set,
    else the mini-batch latency when mini-batching is on, else as fast as possible. Recorded in the plan's config
    so every engine version triggers the same way."""
    if config.get("pipeline.trigger-interval"):
        return str(config["pipeline.trigger-interval"])
    if str(config.get("table.exec.mini-batch.enabled", "false")).lower() == "true":
        return str(config.get("table.exec.mini-batch.allow-latency", "0 ms"))
    return "0 ms"


def node_ids(sinks: list[Sink]) -> dict[int, int]:
    order = B.topological(list(sinks))
    return {id(n): i + 1 for i, n in enumerate(order)}
