"""Structural validation of a compiled plan document, before any reader trusts it.

Every reader of a plan (``check``, ``explain --plan``, ``run --plan``, ``migrate``, restore through the API)
goes through ``CompiledPlan.from_json``, which calls :func:`validate_plan` first, so the readers behind it
index fields, walk edges and follow the topological order without guarding every step. A plan that fails
here is malformed (a user error, exit 2); whether a *well-formed* plan is restorable (format readable,
engine version in the window, node versions registered, planId matching the body) stays the restore
check's verdict (``planengine.plan.restore``: exit 3 or 4).

The checks run in time linear in the plan's size and never recurse along edges, so a plan of thousands of
nodes, or a cyclic one, is judged in milliseconds instead of exhausting the stack or looping.

>>> validate_plan({"formatVersion": 1})
Traceback (most recent call last):
...
planengine.errors.PlanError: plan: 'engineVersion' is missing
  hint: this is not a plan planengine compile wrote; compile the program again instead of editing the JSON
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping
from typing import Any

from planengine.config import REGISTRY
from planengine.errors import PlanError

_RECOMPILE = "this is not a plan planengine compile wrote; compile the program again instead of editing the JSON"
_VERSION = re.compile(r"^\d{1,4}\.\d{1,4}(\.\d{1,4})?([.-][0-9A-Za-z.-]{1,40})?$")
_PLAN_ID = re.compile(r"^[0-9a-f]{64}$")
_NODE_TYPE = re.compile(r"^[a-z][a-z0-9-]*_\d{1,6}$")
_SHUFFLE_TYPES = ("HASH", "SINGLETON", "BROADCAST", "ANY", "FORWARD", "KEEP_INPUT_AS_IS", "UNKNOWN")


def _fail(path: str, message: str, hint: str = _RECOMPILE) -> PlanError:
    return PlanError(f"{path}: {message}", hint=hint)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _require(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: str) -> Any:
    if key not in doc:
        raise _fail(path, f"{key!r} is missing")
    value = doc[key]
    wanted = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
        names = " or ".join(_type_name(k()) if k is not type(None) else "null" for k in wanted)
        raise _fail(f"{path}.{key}" if path != "plan" else key, f"must be {names}, got {_type_name(value)} "
                    f"{_short(value)}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate_plan(plan: Any) -> None:
    """Raise :class:`PlanError` naming the JSON path of the first structural defect of ``plan``."""
    if not isinstance(plan, dict):
        raise _fail("plan", f"must be a JSON object, got {_type_name(plan)}")
    fmt = _require(plan, "formatVersion", int, "plan")
    if fmt < 1:
        raise _fail("formatVersion", f"must be a positive whole number, got {fmt}")
    for key in ("engineVersion", "sparkVersion"):
        value = _require(plan, key, str, "plan")
        if not _VERSION.match(value):
            raise _fail(key, f"{value!r} is not a version such as '0.1' or '4.0.1'")
    plan_id = plan.get("planId")
    if not isinstance(plan_id, str) or not _PLAN_ID.match(plan_id):
        raise _fail("planId", "is missing" if plan_id is None else f"must be the SHA-256 of the plan's body (64 "
                    f"lowercase hex digits), got {_short(plan_id)}",
                    hint="a plan without its planId cannot be told apart from a hand-edited one; compile the "
                         "program again (or migrate the plan) instead of editing it")
    _validate_options(_require(plan, "config", dict, "plan"), "config")
    nodes = _require(plan, "nodes", list, "plan")
    if not nodes:
        raise _fail("nodes", "is empty: a plan has at least one source and one sink")
    position = _validate_nodes(nodes)
    edges = _require(plan, "edges", list, "plan")
    inputs = _validate_edges(edges, position)
    _validate_order(nodes, inputs, position)
    if "queries" in plan:
        _validate_queries(plan["queries"], position)


def _validate_nodes(nodes: list[Any]) -> dict[int, int]:
    """Node id -> position in ``nodes``; every node an object with well-typed envelope fields."""
    position: dict[int, int] = {}
    for i, node in enumerate(nodes):
        path = f"nodes[{i}]"
        if not isinstance(node, dict):
            raise _fail(path, f"must be an object, got {_type_name(node)}")
        nid = _require(node, "id", int, path)
        if nid < 1:
            raise _fail(f"{path}.id", f"must be a positive whole number, got {nid}")
        if nid in position:
            raise _fail(f"{path}.id", f"node id {nid} is used twice (also by nodes[{position[nid]}])")
        position[nid] = i
        node_type = _require(node, "type", str, path)
        if not _NODE_TYPE.match(node_type):
            raise _fail(f"{path}.type", f"{_short(node_type)} is not an exec node type '<name>_<version>' "
                        "(e.g. 'stream-exec-calc_1')")
        _require(node, "outputType", str, path)
        for key in ("changelogMode", "description", "strategy"):
            if key in node:
                _require(node, key, str, path)
        if "configuration" in node:
            _validate_options(_require(node, "configuration", dict, path), f"{path}.configuration")
        if "state" in node:
            for j, state in enumerate(_require(node, "state", list, path)):
                if not isinstance(state, dict):
                    raise _fail(f"{path}.state[{j}]", f"must be an object, got {_type_name(state)}")
                _require(state, "name", str, f"{path}.state[{j}]")
        if "uids" in node:
            for j, uid in enumerate(_require(node, "uids", list, path)):
                if not isinstance(uid, str) or not uid:
                    raise _fail(f"{path}.uids[{j}]", f"must be a non-empty string, got {_short(uid)}")
    return position


def _validate_edges(edges: list[Any], position: dict[int, int]) -> dict[int, list[int]]:
    """Target id -> source ids; every edge an object naming two existing nodes, with a well-formed shuffle."""
    inputs: dict[int, list[int]] = {}
    for i, edge in enumerate(edges):
        path = f"edges[{i}]"
        if not isinstance(edge, dict):
            raise _fail(path, f"must be an object, got {_type_name(edge)}")
        for key in ("source", "target"):
            nid = _require(edge, key, int, path)
            if nid not in position:
                raise _fail(f"{path}.{key}", f"names node {nid}, which the plan does not have")
        if "shuffle" in edge and edge["shuffle"] is not None:
            shuffle = _require(edge, "shuffle", dict, path)
            kind = _require(shuffle, "type", str, f"{path}.shuffle")
            if kind not in _SHUFFLE_TYPES:
                raise _fail(f"{path}.shuffle.type", f"{_short(kind)} is not one of {', '.join(_SHUFFLE_TYPES)}")
            keys = shuffle.get("keys", [])
            if not isinstance(keys, list) or not all(_is_int(k) and k >= 0 for k in keys):
                raise _fail(f"{path}.shuffle.keys", f"must be an array of field indexes, got {_short(keys)}")
        inputs.setdefault(edge["target"], []).append(edge["source"])
    return inputs


def _validate_order(nodes: list[dict[str, Any]], inputs: dict[int, list[int]], position: dict[int, int]) -> None:
    """The edges form no cycle (Kahn's algorithm: iterative, linear) and every node comes after its inputs."""
    indegree = {nid: 0 for nid in position}
    consumers: dict[int, list[int]] = {}
    for target, sources in inputs.items():
        indegree[target] += len(sources)
        for source in sources:
            consumers.setdefault(source, []).append(target)
    ready = deque(nid for nid, degree in indegree.items() if degree == 0)
    seen = 0
    while ready:
        nid = ready.popleft()
        seen += 1
        for target in consumers.get(nid, ()):
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)
    if seen < len(position):
        in_cycle = sorted(nid for nid, degree in indegree.items() if degree > 0)
        shown = ", ".join(str(n) for n in in_cycle[:10]) + (", ..." if len(in_cycle) > 10 else "")
        raise _fail("edges", f"the edges form a cycle through nodes {shown}: a plan is a DAG")
    for target, sources in inputs.items():
        for source in sources:
            if position[source] >= position[target]:
                raise _fail(f"nodes[{position[target]}]", f"node {target} comes before its input node {source}: "
                            "nodes must be in topological order (inputs first)")


def _validate_queries(queries: Any, position: dict[int, int]) -> None:
    if not isinstance(queries, list):
        raise _fail("queries", f"must be an array, got {_type_name(queries)}")
    for i, query in enumerate(queries):
        path = f"queries[{i}]"
        if not isinstance(query, dict):
            raise _fail(path, f"must be an object, got {_type_name(query)}")
        _require(query, "uid", str, path)
        head = _require(query, "head", int, path)
        if head not in position:
            raise _fail(f"{path}.head", f"names node {head}, which the plan does not have")
        for j, sink in enumerate(_require(query, "sinks", list, path)):
            if not _is_int(sink) or sink not in position:
                raise _fail(f"{path}.sinks[{j}]", f"names node {_short(sink)}, which the plan does not have")
        if "channel" in query:
            _require(query, "channel", bool, path)


def _validate_options(options: dict[str, Any], path: str) -> None:
    """Option values are strings, and the ones this engine knows parse as their declared type."""
    for key, value in options.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise _fail(f"{path}[{key!r}]", f"must be a string, got {_type_name(value)} {_short(value)}")
        if key == "pipeline.max-parallelism":
            text = str(value).strip()
            if not text.isdigit() or not 1 <= int(text) <= 32768:
                raise _fail(f"{path}[{key!r}]", f"must be a whole number from 1 to 32768, got {_short(value)}",
                            hint="it fixes the number of state partitions; compile the program again")
        option = REGISTRY.find(key)
        if option is None:
            continue  # an option of another engine version: the restore check judges the node, not its options
        try:
            option.parse(str(value))
        except Exception as error:  # each option type explains itself ("expected ...")
            raise _fail(f"{path}[{key!r}]", f"{_short(value)} is not a valid value: {error}",
                        hint="compile the program again with a valid value (docs/options.md lists each option's "
                             "type)") from None
