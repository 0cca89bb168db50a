"""State moves: registered node versions that a migration moves to a newer version *with their state*.

Plan migrations (``planengine.plan.migrations``) rewrite node versions an engine no longer restores; their state
keeps its layout. A state move is the other kind: the old version stays registered and restorable, but a newer
version runs the same node on another operator whose state has another layout, so ``COMPILE PLAN 'new' FROM
'old'`` / ``planengine migrate`` rewrite the node and the runtime converts the state when the migrated plan
first starts from a snapshot of the old one (``planengine.runtime.jvm.state_move``).

Today's moves (issue 9): ``stream-exec-group-aggregate`` versions 1 and 2 on the Python ``transformWithState``
operator (version 1 always, version 2 with ``"strategy": "TRANSFORM_WITH_STATE"``) -> version 3 on the JVM
processor (``"strategy": "JVM"``), when every call has a JVM accumulator. Pure functions on the plan's JSON:
the node keeps its id, uids, state names, output type and changelog mode (``migrate._invariants``), so its
consumers and its query are untouched.

>>> node = {"id": 3, "type": "stream-exec-group-aggregate_1", "state": [{"name": "accumulators"}],
...         "aggCalls": [{"function": "COUNT", "version": 1}]}
>>> move = state_move(node)
>>> move.describe()
'node 3: stream-exec-group-aggregate version 1 (TRANSFORM_WITH_STATE) -> 3 (JVM), state accumulators'
>>> apply_state_move(node)["type"], node["strategy"]
('stream-exec-group-aggregate_3', 'JVM')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planengine.exec import base as B
from planengine.plan import serde
from planengine.plan.strategies import JVM, JVM_AGGREGATES, TRANSFORM_WITH_STATE, record_strategies

GROUP_AGGREGATE = "stream-exec-group-aggregate"
# (name, version) -> (target version, target strategy) for nodes running on the Python TWS operator.
_MOVES: dict[tuple[str, int], tuple[int, str]] = {
    (GROUP_AGGREGATE, 1): (3, JVM),
    (GROUP_AGGREGATE, 2): (3, JVM),
}
# Spark's operator names: what the snapshot's checkpoint holds before the move, and after it.
PYTHON_OPERATOR = "transformWithStateInPandasExec"
JVM_OPERATOR = "transformWithStateExec"


@dataclass(frozen=True)
class StateMove:
    """One node whose state moves from the Python operator to the JVM processor."""

    node_id: int
    name: str
    from_version: int
    to_version: int
    from_strategy: str
    to_strategy: str
    state: tuple[str, ...]

    def describe(self) -> str:
        return (f"node {self.node_id}: {self.name} version {self.from_version} ({self.from_strategy}) -> "
                f"{self.to_version} ({self.to_strategy}), state {', '.join(self.state)}")


def _strategy(node: dict[str, Any], version: int) -> str | None:
    # Version 1 records no strategy: it always ran on transformWithState.
    return TRANSFORM_WITH_STATE if version == 1 else node.get("strategy")


def state_move(node: dict[str, Any], strategy: str | None = None) -> StateMove | None:
    """The move ``node`` (plan JSON) takes, or None: not a Python TWS node with a registered move, or a call
    the JVM has no accumulator for (a Python aggregate function keeps the node where it is). ``strategy`` is
    the one restore gives a node whose plan predates recorded strategies (``restored_strategies``)."""
    try:
        name, version = B.split_type_name(str(node.get("type")))
    except ValueError:
        return None
    target = _MOVES.get((name, version))
    if target is None or (_strategy(node, version) or strategy) != TRANSFORM_WITH_STATE:
        return None
    for call in node.get("aggCalls", []):
        function = call.get("function")
        if not isinstance(function, str) or (function.upper(), call.get("version") or 1) not in JVM_AGGREGATES:
            return None
    return StateMove(int(node["id"]), name, version, target[0], TRANSFORM_WITH_STATE, target[1],
                     tuple(str(s.get("name")) for s in node.get("state", [])))


def restored_strategies(plan: dict[str, Any]) -> dict[int, str]:
    """Node id -> the strategy restore records for nodes whose plan has none (plans written before strategies
    were recorded: engine 0.1's version-2 group aggregates), by the same rule restore applies."""
    if all("strategy" in n for n in plan.get("nodes", []) if str(n.get("type")).startswith(GROUP_AGGREGATE + "_2")):
        return {}

    sinks = record_strategies(serde.read_plan(plan))
    ids = serde.node_ids(sinks)
    return {ids[id(n)]: n.strategy for n in B.topological(list(sinks)) if getattr(n, "strategy", None)}


def apply_state_move(node: dict[str, Any], strategy: str | None = None) -> dict[str, Any]:
    """Rewrite ``node`` in place to its move's target version and strategy (it must have a move)."""
    move = state_move(node, strategy)
    if move is None:
        raise ValueError(f"node {node.get('id')} has no state move")
    node["type"] = f"{move.name}_{move.to_version}"
    node["strategy"] = move.to_strategy
    return node


def moved_between(old: dict[str, Any], new: dict[str, Any], strategy: str | None = None) -> StateMove | None:
    """The move that turned plan node ``old`` into ``new`` (same id and state names), or None."""
    move = state_move(old, strategy)
    if move is None or old.get("id") != new.get("id") or old.get("state") != new.get("state"):
        return None
    if new.get("type") != f"{move.name}_{move.to_version}" or new.get("strategy") != move.to_strategy:
        return None
    return move
