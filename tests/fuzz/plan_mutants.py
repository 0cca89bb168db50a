"""Seeded generators of hostile inputs: mutated compiled plans and malformed HTTP requests.

Shared by the bounded fuzz tests (``tests/fuzz/test_*_fuzz.py``, part of the normal suite) and the campaign
script (``benchmarks/fuzz/plan_campaign.py``), so a failure the campaign finds replays in a test with the same
seed and index. Every generator takes a ``random.Random`` and returns the input plus a short description of
what was done to it, which is what a failing assertion prints.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
from pathlib import Path
from typing import Any

from planengine.plan.serde import compute_plan_id, dumps

GOLDEN_PLANS = Path(__file__).resolve().parents[1] / "golden" / "plans"

# Values that break assumptions about a field's type or range.
_ODD_VALUES: tuple[Any, ...] = (None, "", " ", "-0.1", "0.1.", "x_1", -1, 0, 2**63, -(2**63), 1.5, float("inf"),
                                True, False, [], {}, [1, 2], {"a": 1}, "☃", "a" * 300, "stream-exec-calc_1",
                                "99.99", "4.3.0", "I,UB,UA,D", "ROW<`a` BIGINT>", "-5", "NaN")


def seed_plans() -> list[dict[str, Any]]:
    """The golden plans: every node type this engine compiles, as real plans."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(GOLDEN_PLANS.glob("*.json"))]


def reseal(plan: Any) -> Any:
    """Give a mutated plan the planId of its body, so the mutation gets past the edit detection."""
    if isinstance(plan, dict):
        with contextlib.suppress(TypeError, ValueError):  # a body json cannot encode: leave it
            plan["planId"] = compute_plan_id(plan)
    return plan


def _random_path(rng: random.Random, value: Any, depth: int = 0) -> list[Any]:
    """A path (keys / indexes) to a random container member inside ``value``."""
    path: list[Any] = []
    current = value
    while isinstance(current, dict | list) and current and (depth == 0 or rng.random() < 0.7):
        key = rng.choice(list(current)) if isinstance(current, dict) else rng.randrange(len(current))
        path.append(key)
        current = current[key]
        depth += 1
    return path


def _set(plan: Any, path: list[Any], value: Any) -> None:
    target = plan
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value


def _delete(plan: Any, path: list[Any]) -> None:
    target = plan
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]


def _nodes(plan: dict[str, Any]) -> list[Any]:
    nodes = plan.get("nodes")
    return nodes if isinstance(nodes, list) else []


def _edges(plan: dict[str, Any]) -> list[Any]:
    edges = plan.get("edges")
    return edges if isinstance(edges, list) else []


def _ids(plan: dict[str, Any]) -> list[Any]:
    return [n.get("id") for n in _nodes(plan) if isinstance(n, dict)] or [1]


def chain_plan(length: int) -> dict[str, Any]:
    """A well-formed plan ``length`` nodes deep: one source, ``length - 2`` calcs, one sink (sealed)."""
    nodes = [{"id": i, "type": "stream-exec-calc_1", "outputType": "ROW<`a` BIGINT>", "changelogMode": "I",
              "description": f"Calc({i})"} for i in range(1, length + 1)]
    nodes[0]["type"] = "stream-exec-table-source-scan_1"
    nodes[-1]["type"] = "stream-exec-sink_1"
    edges = [{"source": i, "target": i + 1} for i in range(1, length)]
    plan = {"formatVersion": 1, "engineVersion": "0.1", "sparkVersion": "4.3.0", "planId": "",
            "config": {"pipeline.trigger-interval": "0 ms"}, "nodes": nodes, "edges": edges}
    return reseal(plan)


def _mutate_once(plan: dict[str, Any], rng: random.Random) -> str:
    kind = rng.randrange(16)
    nodes, edges = _nodes(plan), _edges(plan)
    if kind == 0:
        path = _random_path(rng, plan)
        if path:
            _delete(plan, path)
            return f"delete {path}"
    if kind == 1:
        path = _random_path(rng, plan)
        if path:
            value = rng.choice(_ODD_VALUES)
            _set(plan, path, copy.deepcopy(value))
            return f"set {path} = {value!r:.40}"
    if kind == 2:
        plan["nodes"] = []
        return "empty nodes"
    if kind == 3:
        edges.append({"source": rng.choice(_ids(plan)), "target": rng.choice([0, -1, 10_000, "7", None])})
        plan["edges"] = edges
        return "edge to a missing node"
    if kind == 4:
        nid = rng.choice(_ids(plan))
        edges.append({"source": nid, "target": nid})
        plan["edges"] = edges
        return f"self-loop on {nid!r}"
    if kind == 5 and edges and isinstance(edges[-1], dict):
        last = edges[-1]
        edges.append({"source": last.get("target"), "target": last.get("source")})
        return "edge back along the last edge (a cycle)"
    if kind == 6 and nodes:
        victim = rng.randrange(len(nodes))
        if isinstance(nodes[victim], dict):
            nodes.append(copy.deepcopy(nodes[victim]))
            return f"duplicate node at {victim}"
    if kind == 7 and nodes:
        rng.shuffle(nodes)
        return "shuffle node order"
    if kind == 8:
        value = rng.choice(["-0.1", "", "0.1.2.3.4", "abc", "0", "1.0", "0.99", None, 1, "0.1-rc1"])
        plan["engineVersion"] = value
        return f"engineVersion = {value!r}"
    if kind == 9:
        config = plan.get("config") if isinstance(plan.get("config"), dict) else {}
        key = rng.choice(["pipeline.max-parallelism", "pipeline.trigger-interval", "table.exec.state.ttl",
                          "table.exec.mini-batch.enabled", "table.local-time-zone"])
        value = rng.choice(["-1", "0", "abc", "", "1 lightyear", None, -1, "99999999", "true", "1 h"])
        config[key] = value
        plan["config"] = config
        return f"config[{key}] = {value!r}"
    if kind == 10:
        choice = rng.choice(["delete", "", None, "0" * 64, 12])
        if choice == "delete":
            plan.pop("planId", None)
        else:
            plan["planId"] = choice
        return f"planId -> {choice!r}"
    if kind == 11 and nodes:
        victim = rng.randrange(len(nodes))
        del nodes[victim]
        return f"delete node at {victim}"
    if kind == 12:
        plan["formatVersion"] = rng.choice([0, -1, 3, "1", None, 1.0, True, 2])
        return f"formatVersion = {plan['formatVersion']!r}"
    if kind == 13 and nodes:
        node = rng.choice(nodes)
        if isinstance(node, dict):
            node["type"] = rng.choice(["stream-exec-calc", "stream-exec-calc_x", "_1", "stream-exec-calc_99",
                                       "stream-exec-sink_1", "stream-exec-group-aggregate_1", 7, None])
            return f"node type = {node['type']!r}"
    if kind == 14:
        plan["queries"] = rng.choice([[], None, "x", [{"uid": "q", "head": 999, "sinks": [1]}],
                                      [{"uid": 1, "head": 1, "sinks": "x"}], [{"head": 1}]])
        return f"queries = {plan['queries']!r:.40}"
    if kind == 15 and edges:
        edge = rng.choice(edges)
        if isinstance(edge, dict):
            edge["shuffle"] = rng.choice([{"type": "HASH", "keys": [-1]}, {"type": "NOPE"}, {"keys": [0]},
                                          {"type": "HASH", "keys": "0"}, "HASH", []])
            return f"shuffle = {edge['shuffle']!r}"
    return "unchanged"


_ENVELOPE_NODE_KEYS = ("id", "type", "outputType", "changelogMode", "description", "configuration", "state", "uids")


def _mutate_node_inside(plan: dict[str, Any], rng: random.Random, seeds: list[dict[str, Any]]) -> str:
    """A mutation below the envelope (a node's own fields, or its type swapped for another node's), which the
    structural validation lets through: it exercises restore, the runtime support check and explain."""
    nodes = [n for n in _nodes(plan) if isinstance(n, dict)]
    if not nodes:
        return "unchanged"
    node = rng.choice(nodes)
    roll = rng.random()
    if roll < 0.15:
        other = rng.choice([n for seed in seeds for n in seed["nodes"]])
        node["type"] = other["type"]
        return f"node {node.get('id')} type -> {other['type']}"
    if roll < 0.25:
        node["outputType"] = rng.choice(["ROW<>", "ROW<`a` NOPE>", "BIGINT", "ROW<`a` BIGINT, `a` INT>", "ROW<",
                                         "ROW<`x` ARRAY<MAP<INT, ROW<`y` DECIMAL(99, 2)>>>>"])
        return f"node {node.get('id')} outputType -> {node['outputType']!r}"
    own = [k for k in node if k not in _ENVELOPE_NODE_KEYS]
    if not own:
        return "unchanged"
    key = rng.choice(own)
    path = [key, *_random_path(rng, node[key], depth=1)]
    if rng.random() < 0.3 and len(path) > 1:
        _delete(node, path)
        return f"node {node.get('id')}: delete {path}"
    value = rng.choice(_ODD_VALUES)
    _set(node, path, copy.deepcopy(value))
    return f"node {node.get('id')}: set {path} = {value!r:.40}"


def mutated_plan(rng: random.Random, seeds: list[dict[str, Any]]) -> tuple[str, str]:
    """(plan file text, description): a golden plan with one to three mutations; resealed half of the time;
    now and then broken at the text level, or a very deep chain."""
    roll = rng.random()
    if roll < 0.02:
        length = rng.choice([2_000, 8_000])
        plan = chain_plan(length)
        if rng.random() < 0.5:
            plan["edges"].append({"source": length, "target": 1})
            return dumps(plan), f"chain of {length} nodes closed into a cycle"
        return dumps(plan), f"chain of {length} nodes"
    plan = copy.deepcopy(rng.choice(seeds))
    if rng.random() < 0.5:  # inside nodes, resealed: past the structural validation, into restore and explain
        steps = [_mutate_node_inside(plan, rng, seeds) for _ in range(rng.randint(1, 2))]
        reseal(plan)
        steps.append("resealed")
        return dumps(plan), "; ".join(steps)
    steps = [_mutate_once(plan, rng) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.5:
        reseal(plan)
        steps.append("resealed")
    try:
        text = dumps(plan)
    except (TypeError, ValueError):
        text = json.dumps(plan, default=str)
    if rng.random() < 0.05:
        cut = rng.randrange(max(1, len(text)))
        text = text[:cut] if rng.random() < 0.5 else text[:cut] + rng.choice(["\x00", "}", "]]", "\ufffd", ",,"]) \
            + text[cut:]
        steps.append(f"text damaged at {cut}")
    return text, "; ".join(steps)


# --- HTTP ---------------------------------------------------------------------------------------------------
_PATHS = ("/healthz", "/v1/status", "/v1/stop", "/v1/start", "/metrics", "/", "/v1/stop?x=1", "/%00", "/v1/../v1/stop",
          "*", "http://x/v1/stop", "/" + "a" * 5000)
_METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "BREW", "", "G\x00T", "POST POST")
_BODIES = (b"", b"{}", b'{"snapshot": true, "drain": false}', b'{"snapshot": "yes"}', b"[1]", b"null", b"\xff\xfe",
           b'{"fromSnapshot": "/etc"}', b'{"fromSnapshot": null}', b"{" * 1000, b'{"drain": true, "x": 1}')


def http_request(rng: random.Random, token: str) -> tuple[bytes, str, bool]:
    """(raw request bytes, description, whether it carries the right token: only such a request may stop or
    start the driver)."""
    method = rng.choice(_METHODS)
    path = rng.choice(_PATHS)
    version = rng.choice(["HTTP/1.1"] * 6 + ["HTTP/1.0", "HTTP/2.0", "HTTP/1.1 extra", "", "HTTP/9"])
    body = rng.choice(_BODIES)
    headers: list[tuple[str, str]] = [("Host", "driver")]
    auth = rng.choice(["right", "right", "none", "wrong", "basic", "bearer-empty", "long"])
    headers.append(("Authorization", {"right": f"Bearer {token}", "none": "", "wrong": "Bearer nope",
                                      "basic": "Basic dXNlcjpwYXNz", "bearer-empty": "Bearer ",
                                      "long": "Bearer " + "x" * 9000}[auth]))
    length_kind = rng.choice(["exact", "exact", "exact", "none", "negative", "text", "huge", "short", "double",
                              "spaces", "unicode"])
    length = {"exact": str(len(body)), "negative": "-5", "text": "five", "huge": str(10**12),
              "short": str(len(body) + 10), "double": str(len(body)), "spaces": f" {len(body)} ",
              "unicode": "\u0661\u0662"}.get(length_kind)
    if length is not None:
        headers.append(("Content-Length", length))
    if length_kind == "double":
        headers.append(("Content-Length", str(len(body) + 1)))
    if rng.random() < 0.1:
        headers.append(("Transfer-Encoding", "chunked"))
    if rng.random() < 0.05:
        headers += [(f"X-{i}", "y" * 100) for i in range(rng.choice([10, 200]))]
    head = f"{method} {path} {version}".rstrip() + "\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers if v != "" or k != "Authorization")
    raw = head.encode("utf-8", "surrogateescape") + b"\r\n" + (b"" if length_kind == "short" else body)
    if rng.random() < 0.03:
        raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        return raw, "random bytes", False
    description = f"{method!r} {path[:40]!r} {version!r} auth={auth} length={length_kind} body={body[:30]!r}"
    return raw, description, auth == "right"
