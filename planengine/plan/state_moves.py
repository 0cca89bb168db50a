"""State moves: registered node versions that a plan migration moves to a newer version *with their state*.

Node migrations (``planengine.plan.node_migrations``) rewrite node versions an engine no longer restores; their
state keeps its layout. A state move is the other kind: the old version stays registered and restorable, but a newer
version runs the same node on another operator whose state has another layout, so ``COMPILE PLAN 'new' FROM
'old'`` / ``planengine migrate`` rewrite the node and the runtime converts the state when the migrated plan
first starts from a snapshot of the old one (``planengine.runtime.state.move``).

Today's moves (issue 9), each from the Python ``transformWithState`` operator to the JVM processor:

* ``stream-exec-group-aggregate`` versions 1 and 2 (version 1 always, version 2 with ``"strategy":
  "TRANSFORM_WITH_STATE"``) -> version 3 (``"strategy": "JVM"``), when every call has a JVM accumulator;
* ``stream-exec-deduplicate``, ``-changelog-normalize`` and ``-rank`` version 1 -> 2;
* ``stream-exec-join`` version 1 -> 3, and version 2 -> 3 when it has a non-equi condition (version 2 runs such a
  join on the Python operator; version 3 evaluates the condition on the JVM), unless the condition calls a user
  function (a Python function, which the JVM cannot call);
* ``stream-exec-sink`` version 1 -> 2 when it materializes upserts (``requireUpsertMaterialize``), and
  ``stream-exec-sort-limit`` versions 1 and 2 -> 3 when it has a fetch (a global Top-N);
* ``stream-exec-over-aggregate`` version 1 -> 3, and version 2 with a DISTINCT call (on the Python operator in
  version 2) -> 3, when version 3 runs it on the JVM (ordered by a time attribute, every call with a JVM
  accumulator: ``runtime/jvm/over_aggregate_processor.refusal(node, 3)``'s rule); versions 1, 2 and 3 with a
  ``LAG`` call (on the Python operator before version 4) -> 4 (``refusal(node, 4)``: LAG on the JVM), the frame's
  history the Python operator kept becoming LAG's accumulator (``OverAggregate.loadInitialState`` folds it);
* ``stream-exec-window-aggregate`` and ``stream-exec-group-window-aggregate`` version 2 -> 3 for a SESSION
  window partitioned by other keys than the grouping (the Python session operator), every call with a JVM
  accumulator. Other windows keep version 2: Spark's native aggregation, nothing to move. Version 4 changes
  only how a session left on the Python operator (a Python aggregate function) keeps its state (tagged JSON
  instead of pickles), so there is no move to it: a version-3 session on the JVM runs the same in version 4
  and keeps version 3, and a version-2 or -3 session on the Python operator keeps its version and its pickled
  state (its snapshots hold pickles, which only that version reads).

Pure functions on the plan's JSON: the node keeps its id, uids, state names, output type and changelog mode
(``migrate._invariants``), so its consumers and its query are untouched. A node with a move registered for its
version that cannot take it says why (``kept_reason``), so a migration never drops state silently.

>>> node = {"id": 3, "type": "stream-exec-group-aggregate_1", "state": [{"name": "accumulators"}],
...         "aggCalls": [{"function": "COUNT", "version": 1}]}
>>> move = state_move(node)
>>> move.describe()
'node 3: stream-exec-group-aggregate version 1 (TRANSFORM_WITH_STATE) -> 3 (JVM), state accumulators'
>>> apply_state_move(node)["type"], node["strategy"]
('stream-exec-group-aggregate_3', 'JVM')
>>> join = {"id": 4, "type": "stream-exec-join_2", "state": [{"name": "leftRows"}, {"name": "rightRows"}],
...         "nonEquiCondition": {"kind": "CALL", "function": {"name": ">", "version": 1}, "operands": []}}
>>> state_move(join).describe()
'node 4: stream-exec-join version 2 (TRANSFORM_WITH_STATE) -> 3 (JVM), state leftRows, rightRows'
>>> join["nonEquiCondition"]["operands"] = [{"kind": "CALL", "function": {"identifier": "`c`.`d`.`f`"}}]
>>> state_move(join) is None, kept_reason(join)
(True, 'the non-equi join condition calls the user function `c`.`d`.`f` (the JVM join cannot call Python)')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planengine.exec import base as B
from planengine.exec.nodes import FULL_SORT_FETCH
from planengine.ir.types import parse_type
from planengine.plan import serde
from planengine.plan.strategies import (
    JVM,
    JVM_AGGREGATES,
    JVM_OVER_FUNCTIONS,
    NO_JVM_STATE,
    TRANSFORM_WITH_STATE,
    record_strategies,
    state_type_refusal,
    unheld_field,
)

GROUP_AGGREGATE = "stream-exec-group-aggregate"
OVER_AGGREGATE = "stream-exec-over-aggregate"
# The OVER version that runs the OVER-only functions (LAG) on the JVM: a node calling one moves there.
_OVER_FUNCTIONS_TARGET = 4
# (name, version) -> target version, for nodes running on the Python TWS operator. Only the group aggregate
# records its strategy in the plan (versions 2 and 3 have several); the others' target versions always run on
# the JVM processor.
_MOVES: dict[tuple[str, int], int] = {
    (GROUP_AGGREGATE, 1): 3,
    (GROUP_AGGREGATE, 2): 3,
    ("stream-exec-deduplicate", 1): 2,
    ("stream-exec-changelog-normalize", 1): 2,
    ("stream-exec-rank", 1): 2,
    ("stream-exec-join", 1): 3,
    ("stream-exec-join", 2): 3,
    ("stream-exec-sink", 1): 2,
    ("stream-exec-sort-limit", 1): 3,
    ("stream-exec-sort-limit", 2): 3,
    (OVER_AGGREGATE, 1): 3,
    (OVER_AGGREGATE, 2): 3,
    (OVER_AGGREGATE, 3): _OVER_FUNCTIONS_TARGET,  # only with a LAG call (_candidate)
    ("stream-exec-window-aggregate", 2): 3,
    ("stream-exec-group-window-aggregate", 2): 3,
}


def registered_moves() -> dict[tuple[str, int], int]:
    """``(name, retired version) -> target version`` of every move: the retired versions docs/jvm-operators.md
    lists (restorable, never written by a compile, left only by a move)."""
    return dict(_MOVES)


_SESSIONS = frozenset({"stream-exec-window-aggregate", "stream-exec-group-window-aggregate"})

_RECORDS_STRATEGY = frozenset({GROUP_AGGREGATE})
# Spark's operator names: what the snapshot's checkpoint holds before the move, and after it.
PYTHON_OPERATOR = "transformWithStateInPandasExec"
# The event-time operators (OVER, sessions) run on PySpark's row-based ``transformWithState``, named otherwise.
PYTHON_OPERATORS = frozenset({PYTHON_OPERATOR, "transformWithStateInPySparkExec"})
JVM_OPERATOR = "transformWithStateExec"


def user_state(names: Any) -> set[str]:
    """A stored operator's state variables without Spark's own (``$eventTimers_...``: timers, which a move
    replaces with the JVM processor's)."""
    return {str(n) for n in names if not str(n).startswith("$")}


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


def _candidate(node: dict[str, Any], strategy: str | None) -> tuple[str, int, int] | None:
    """``(name, version, target version)`` when ``node`` runs on the Python TWS operator and a move is
    registered for its version; None otherwise (nothing to move)."""
    try:
        name, version = B.split_type_name(str(node.get("type")))
    except ValueError:
        return None
    target = _MOVES.get((name, version))
    if target is None:
        return None
    if name == GROUP_AGGREGATE and (_strategy(node, version) or strategy) != TRANSFORM_WITH_STATE:
        return None  # native: no Python operator, nothing to move
    if name == "stream-exec-sink" and not node.get("requireUpsertMaterialize"):
        return None  # no upsert materializer: the sink keeps no state
    if (name, version) == ("stream-exec-join", 2) and node.get("nonEquiCondition") is None:
        return None  # an equi join_2 already runs on the JVM
    if name == OVER_AGGREGATE and _calls_over_function(node):
        return name, version, _OVER_FUNCTIONS_TARGET  # LAG: on Python before version 4
    if (name, version) == (OVER_AGGREGATE, 2) and not any(c.get("distinct") for c in node.get("aggCalls", [])):
        return None  # without DISTINCT, over-aggregate_2 already runs on the JVM (or keeps Python for good)
    if (name, version) == (OVER_AGGREGATE, 3):
        return None  # without LAG, over-aggregate_3 already runs on the JVM (or keeps Python for good)
    if name in _SESSIONS and not _python_session(node):
        return None  # Spark's native window aggregation in both versions: nothing to move
    return name, version, target


def _python_session(node: dict[str, Any]) -> bool:
    """Whether a window aggregate's JSON is a SESSION over other keys than the grouping (the sessions the
    Python operator keeps in versions 1 and 2; ``runtime/engine/translators/window_aggregate.py``). A session
    partitioned by its grouping keys runs natively unless below a per-record watermark assigner, which the node
    does not say: such a node keeps version 2 (and its Python state)."""
    grouping = set(node.get("grouping", []))
    if node.get("windowing"):
        spec, default = node["windowing"], set()  # a SESSION TVF without PARTITION BY: sessions over all rows
    else:
        spec, default = (node.get("window") or {}).get("spec") or {}, grouping  # legacy: per group key
    return spec.get("strategy") == "SESSION" and (set(spec.get("partitionKeys", [])) or default) != grouping


def _over_function(call: dict[str, Any]) -> bool:
    """Whether an aggregate call (plan JSON) is an OVER-only function the JVM runs from over-aggregate_4."""
    function = call.get("function")
    return isinstance(function, str) and (function.upper(), call.get("version") or 1) in JVM_OVER_FUNCTIONS


def _calls_over_function(node: dict[str, Any]) -> bool:
    return any(_over_function(c) for c in node.get("aggCalls", []))


def _call_reason(call: dict[str, Any]) -> str | None:
    """Why one aggregate call (plan JSON) has no JVM accumulator, or None."""
    function = call.get("function")
    if isinstance(function, dict):
        return (f"aggregate function {function.get('identifier', function)} is a Python function, which the JVM "
                "processor cannot call (its accumulators are Python values)")
    if not isinstance(function, str) or (function.upper(), call.get("version") or 1) not in JVM_AGGREGATES:
        return f"aggregate function {function} has no JVM accumulator"
    return None


def _over_reason(node: dict[str, Any]) -> str | None:
    """Why an OVER node stays on the Python operators in its move's target version (``runtime/jvm/
    over_aggregate.refusal``, read from the JSON: the input's fields lead the node's output type); a node calling
    LAG moves to version 4, which runs it on the JVM."""
    order = node.get("orderBy") or []
    fields = parse_type(str(node.get("outputType"))).fields
    if order:
        index = int(order[0].get("index", -1))
        if not 0 <= index < len(fields) or not fields[index].type.is_time_attribute:
            return "ordered by a non-time column (the non-time RANGE operator is Python only)"
    inputs = fields[:len(fields) - len(node.get("aggCalls", []))]
    held = state_type_refusal([f.type for f in inputs])  # every version's rule (jvm/over_aggregate_processor.refusal)
    if held is not None:
        return held
    return next(filter(None, (_call_reason(c) for c in node.get("aggCalls", []) if not _over_function(c))), None)


def kept_reason(node: dict[str, Any], strategy: str | None = None) -> str | None:
    """Why a node on the Python operator with a registered move keeps its version (and its state where it
    is), or None when it moves or has nothing to move. A pure function of the node's JSON."""
    found = _candidate(node, strategy)
    if found is None:
        return None
    if found[0] == GROUP_AGGREGATE or found[0] in _SESSIONS:
        reason = next(filter(None, (_call_reason(c) for c in node.get("aggCalls", []))), None)
        if reason is not None:
            return reason
    if found[0] != OVER_AGGREGATE and node.get("outputType"):  # OVER: _over_reason
        # What the JVM state would hold shows in the output (rows kept, grouping keys and results; both sides'
        # rows of a join): the target's rule (strategies.state_type_refusal) keeps such a node on Python. (A
        # session keeps input rows a projection may drop; should the runtime refuse a moved node, its Python
        # operator reads the unmoved state as it is.)
        fields = parse_type(str(node["outputType"])).fields
        i = unheld_field([f.type for f in fields])
        if i is not None:
            return f"field {fields[i].name} is {fields[i].type}, {NO_JVM_STATE}"
    if found[0] == OVER_AGGREGATE:
        return _over_reason(node)
    if found[0] == "stream-exec-sort-limit" and int(node.get("limit", FULL_SORT_FETCH)) >= FULL_SORT_FETCH:
        return "a full sort (ORDER BY without a fetch) runs on the Python operator in every version"
    if found[0] == "stream-exec-join" and (user := user_function_in(node.get("nonEquiCondition"))) is not None:
        return f"the non-equi join condition calls the user function {user} (the JVM join cannot call Python)"
    return None


def user_function_in(expr: Any) -> str | None:
    """The identifier of a user (catalog or temporary) function an expression's JSON calls, or None: what keeps a
    non-equi join off the JVM (``runtime/jvm/join_processor.py refusal_v3`` asks this too, so the two cannot
    disagree)."""
    if isinstance(expr, dict):
        function = expr.get("function")
        if isinstance(function, dict) and ("identifier" in function or "systemName" in function):
            return str(function.get("identifier") or function.get("systemName"))
        children: Any = list(expr.values())
    elif isinstance(expr, list):
        children = expr
    else:
        return None
    for child in children:
        found = user_function_in(child)
        if found is not None:
            return found
    return None


def state_move(node: dict[str, Any], strategy: str | None = None) -> StateMove | None:
    """The move ``node`` (plan JSON) takes, or None: not a Python TWS node with a registered move, or one
    that cannot take it (``kept_reason``). ``strategy`` is the one restore gives a node whose plan predates
    recorded strategies (``restored_strategies``)."""
    found = _candidate(node, strategy)
    if found is None or kept_reason(node, strategy) is not None:
        return None
    name, version, target = found
    return StateMove(int(node["id"]), name, version, target, TRANSFORM_WITH_STATE, JVM,
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
    if move.name in _RECORDS_STRATEGY:
        node["strategy"] = move.to_strategy
    return node


def moved_between(old: dict[str, Any], new: dict[str, Any], strategy: str | None = None) -> StateMove | None:
    """The move that turned plan node ``old`` into ``new`` (same id and state names), or None."""
    move = state_move(old, strategy)
    if move is None or old.get("id") != new.get("id") or old.get("state") != new.get("state"):
        return None
    if new.get("type") != f"{move.name}_{move.to_version}":
        return None
    if move.name in _RECORDS_STRATEGY and new.get("strategy") != move.to_strategy:
        return None
    return move


def available_moves(plan: dict[str, Any]) -> list[StateMove]:
    """The moves ``planengine migrate`` would apply to ``plan`` (a readable plan's JSON), in node order."""
    strategies = restored_strategies(plan)
    moves = (state_move(n, strategies.get(int(n["id"]))) for n in plan.get("nodes", []))
    return [m for m in moves if m is not None]
