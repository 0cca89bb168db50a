"""Which Spark operator family runs a node, recorded in the plan (DESIGN §6, "Translation strategies").

State written by one strategy (Spark's native operators, a ``transformWithState`` operator's named variables)
cannot be read by another, so the choice is part of the plan: compilation decides it once, from facts of the
exec DAG, and writes it into the node (``"strategy"``, visible in EXPLAIN and in golden plans). The runtime
only reads it. A rule here is frozen per node version: changing it means a new node version.

``stream-exec-group-aggregate_2`` runs on Spark's native streaming aggregation in update mode
(``NATIVE``) when that is exactly Flink, and on the ``transformWithState`` operator
(``TRANSFORM_WITH_STATE``) otherwise; version 1 always runs on ``transformWithState`` and records nothing.
``stream-exec-group-aggregate_3`` takes the same native decision (``NATIVE``, run with the aggregate library's
native forms); where version 2 records ``TRANSFORM_WITH_STATE`` it records ``JVM`` (the JVM processor) unless a
call has no JVM accumulator (``group_aggregate_jvm_refusal``: a Python aggregate function), which keeps
``TRANSFORM_WITH_STATE``. The JVM accumulator set (``JVM_AGGREGATES``) is frozen for version 3.
``stream-exec-group-aggregate_4`` decides exactly as version 3; it differs only in how the Python operator keeps a
Python aggregate function's accumulator (tagged JSON instead of a pickle).
Plans written before the field existed (the restore corpus, every 0.1 plan) have no ``strategy`` on their
version-2 nodes: restore fills it with the same rule, which reads only facts those plans record (the node's
fields, its input's changelog mode, its neighbours), so they keep exactly the strategy they ran with.

Native is exact only when every one of these holds (``group_aggregate_refusal`` names the first that does
not):

* the input is insert-only (``needRetraction`` false, an insert-only input edge): Spark cannot retract;
* ``generateUpdateBefore`` is false: update mode has no before-image;
* no state TTL: Spark's aggregation state never expires;
* every aggregate has a Spark form with Flink's result type and null rules and an order-independent result
  (``COUNT``; ``SUM``/``SUM0`` over integers and decimals — integers wrap at the result width like Java;
  ``MIN``/``MAX`` over integers, decimals, strings, booleans, dates and timestamps; ``AVG`` over integers
  as Java's truncating long division), ``FILTER`` allowed, no ``DISTINCT``, no Python aggregates.
  Floating point is refused: Spark adds partial sums in another order than Flink and orders ``NaN``/``-0.0``
  differently, and groups ``-0.0`` with ``0.0``;
* the plan around the node fits one update-mode query: only stateless nodes upstream (Spark refuses other
  stateful operators before an update-mode aggregation), and downstream only projections leading to sinks
  that need no upsert materialisation and are keyed by exactly the group key (so per-batch folding yields
  the table Flink's per-record changelog yields).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from planengine.exec import nodes as X
from planengine.exec.base import ExecNode, rebuild, topological
from planengine.ir.aggregates import AggregateCall
from planengine.ir.expressions import InputRef
from planengine.ir.types import CHARACTER, INTEGRAL, DataType, Kind

log = logging.getLogger("planengine.plan")

NATIVE = "NATIVE"
JVM = "JVM"
TRANSFORM_WITH_STATE = "TRANSFORM_WITH_STATE"
# Flink's Top-N strategies (stream-exec-rank_3, decided by planner/rank_strategy.py).
APPEND_FAST = "APPEND_FAST"
RETRACT = "RETRACT"
UPDATE_FAST = "UPDATE_FAST"
# The strategies each node version can run; any other recorded value is incompatible (restore.check_plan).
NODE_STRATEGIES: dict[tuple[str, int], tuple[str, ...]] = {
    ("stream-exec-group-aggregate", 2): (NATIVE, TRANSFORM_WITH_STATE),
    ("stream-exec-group-aggregate", 3): (NATIVE, JVM, TRANSFORM_WITH_STATE),
    ("stream-exec-group-aggregate", 4): (NATIVE, JVM, TRANSFORM_WITH_STATE),
    ("stream-exec-rank", 3): (APPEND_FAST, RETRACT, UPDATE_FAST),
}

# (name, version) of the built-in aggregates with a JVM accumulator (io.planengine.jvm.agg.AggregateFunctions).
# Frozen for stream-exec-group-aggregate_3 and _4: adding one changes which plans run on the JVM, so a new
# entry needs a new node version.
JVM_AGGREGATES = frozenset((name, 1) for name in (
    "COUNT", "SUM", "SUM0", "$SUM0", "AVG", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE", "LISTAGG", "COLLECT",
    "STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP", "STDDEV", "VARIANCE", "BOOL_AND", "BOOL_OR"))
# (name, version) of the functions only an OVER window calls that have a JVM accumulator
# (io.planengine.jvm.agg.AggregateFunctions.OVER_ONLY). Frozen for stream-exec-over-aggregate_4, the first version
# that runs them on the JVM (versions 1-3 keep them on the Python operator).
JVM_OVER_FUNCTIONS = frozenset({("LAG", 1)})


# Why a node whose rows hold such a type stays off the JVM processors (``jvm_state_holds``).
NO_JVM_STATE = ("which Spark's typed transformWithState state cannot hold (it has no Avro form for a MAP with "
                "non-STRING keys or an INTERVAL)")
_NO_AVRO_FORM = frozenset((Kind.INTERVAL_DAY_TIME, Kind.INTERVAL_YEAR_MONTH))


def jvm_state_holds(t: DataType) -> bool:
    """Whether a JVM processor's typed state can hold values of ``t``: Spark derives an Avro schema from every
    state schema of ``transformWithState`` (``StateSchemaMetadata``) and fails the query at its start on a MAP
    whose key is not a string (``DataType.has_non_string_map_key``) and on INTERVAL types ("Unexpected type
    DayTimeIntervalType"), anywhere in the type. No plan with such state ever ran on the JVM, so every JVM node
    version may keep those nodes on its Python operator without moving anyone's state.

    >>> from planengine.ir.types import parse_type
    >>> [jvm_state_holds(parse_type(t)) for t in ("ROW<a MAP<STRING, INT>>", "ARRAY<MAP<INT, INT>>",
    ...                                           "ROW<d INTERVAL DAY TO SECOND>")]
    [True, False, False]
    """
    return not t.has_non_string_map_key and not any(c.kind in _NO_AVRO_FORM for c in t.walk())


def unheld_field(types: Sequence[DataType]) -> int | None:
    """The position of the first of ``types`` a JVM processor's typed state cannot hold (``jvm_state_holds``)."""
    return next((i for i, t in enumerate(types) if not jvm_state_holds(t)), None)


def state_type_refusal(types: Sequence[DataType], what: str = "input") -> str | None:
    """Why a JVM processor cannot keep rows or values of ``types`` in its typed state (the first field
    ``jvm_state_holds`` refuses), or None. Every JVM family asks it before choosing its processor, in every node
    version: such a query failed at its start, so the rule moves no running job's state, and the Python
    operator it falls back to is the one the node's earlier versions ran (it reads their state as it is)."""
    i = unheld_field(types)
    return None if i is None else f"the {what}'s field {i} is {types[i]}, {NO_JVM_STATE}"


_KEY_KINDS = frozenset((*INTEGRAL, Kind.DECIMAL, *CHARACTER, Kind.BOOLEAN, Kind.DATE, Kind.TIMESTAMP,
                        Kind.TIMESTAMP_LTZ, Kind.BINARY, Kind.VARBINARY))
_MIN_MAX_KINDS = frozenset((*INTEGRAL, Kind.DECIMAL, Kind.VARCHAR, Kind.BOOLEAN, Kind.DATE, Kind.TIMESTAMP,
                            Kind.TIMESTAMP_LTZ))
# Nodes a native aggregate may follow in its query: Spark refuses stateful operators before update mode.
_STATELESS_UPSTREAM = frozenset(("stream-exec-table-source-scan", "stream-exec-calc", "stream-exec-exchange",
                                 "stream-exec-watermark-assigner", "stream-exec-union", "stream-exec-correlate"))
# Nodes between the aggregate and its sinks that keep one output row per input row and the row kind.
_PASS_THROUGH = frozenset(("stream-exec-calc", "stream-exec-exchange", "stream-exec-drop-update-before"))


def record_strategies(sinks: list[X.Sink]) -> list[X.Sink]:
    """Every node whose version chooses a strategy, with its choice recorded (nodes that have one keep it).

    Compilation calls it on the final DAG; restore calls it on plans written before strategies were recorded.
    """
    order = topological(list(sinks))
    ids = {id(n): i + 1 for i, n in enumerate(order)}
    consumers = consumer_map(sinks)
    decided: dict[int, str] = {}
    for node in order:
        if isinstance(node, X.GroupAggregate) and node.metadata.version >= 2 and node.strategy is None:
            reason = group_aggregate_refusal(node, consumers)
            jvm_reason = "version 2 has no JVM strategy"
            if node.metadata.version >= 3:
                jvm_reason = group_aggregate_jvm_refusal(node)
            if reason is None:
                decided[id(node)], why = NATIVE, "native update-mode aggregation"
            elif jvm_reason is None:
                decided[id(node)], why = JVM, f"JVM processor (not native: {reason})"
            else:
                decided[id(node)], why = TRANSFORM_WITH_STATE, f"transformWithState ({reason})"
            log.info("node %d (group aggregate): %s", ids[id(node)], why)
    if not decided:
        return sinks

    def fn(node: ExecNode, inputs: tuple[ExecNode, ...]) -> ExecNode:
        changes: dict[str, object] = {} if inputs == node.inputs else {"inputs": inputs}
        if id(node) in decided:
            changes["strategy"] = decided[id(node)]
        return dataclasses.replace(node, **changes) if changes else node  # type: ignore[arg-type]

    return rebuild(list(sinks), fn)  # type: ignore[return-value]


def consumer_map(sinks: list[X.Sink]) -> dict[int, list[ExecNode]]:
    """``id(node)`` -> the nodes reading it, for a whole DAG (exec nodes only point at their inputs)."""
    consumers: dict[int, list[ExecNode]] = {}
    for node in topological(list(sinks)):
        for child in node.inputs:
            consumers.setdefault(id(child), []).append(node)
    return consumers


def group_aggregate_refusal(node: X.GroupAggregate, consumers: dict[int, list[ExecNode]]) -> str | None:
    """Why ``node`` must run on transformWithState, or None when Spark's native aggregation is exact.

    ``consumers`` maps ``id(node)`` to the nodes reading it, for the whole DAG."""
    if node.need_retraction:
        return "needRetraction is set"
    if not node.inputs or not node.inputs[0].changelog_mode.contains_only_inserts():
        return "the input is not insert-only"
    if node.generate_update_before:
        return "generateUpdateBefore is set (a consumer needs UPDATE_BEFORE)"
    if any(s.ttl_ms for s in node.state):
        return "state TTL is configured (Spark's aggregation state does not expire)"
    in_types = node.inputs[0].field_types
    for g in node.grouping:
        if in_types[g].kind not in _KEY_KINDS:
            return f"grouping key ${g} has type {in_types[g]} (Spark normalises it differently)"
    for call in node.aggregates:
        reason = _call_refusal(call, in_types)
        if reason:
            return f"{call}: {reason}"
    return _topology_refusal(node, consumers)


def group_aggregate_jvm_refusal(node: X.GroupAggregate) -> str | None:
    """Why a version-3 or -4 ``node`` cannot run on the JVM processor, or None (then it does where not native).

    Besides the calls: a grouping key or call argument of a type the JVM's typed state cannot hold
    (``jvm_state_holds``), which would fail the query at its start; such a plan never ran on the JVM, so the
    rule could join the decision later without moving anyone's state."""
    reason = jvm_calls_refusal(node.aggregates)
    if reason is not None:
        return reason
    in_types = node.inputs[0].field_types
    held = [*node.grouping, *(a for call in node.aggregates for a in call.args)]
    return next((f"the input's field {i} is {in_types[i]}, {NO_JVM_STATE}" for i in held
                 if not jvm_state_holds(in_types[i])), None)


def jvm_calls_refusal(aggregates: Sequence[AggregateCall]) -> str | None:
    """Why one of ``aggregates`` has no JVM accumulator (a Python aggregate function, an unported function
    version), or None. Reads only the plan, so a node version's strategy stays what it was compiled to."""
    for call in aggregates:
        if call.user_function is not None:
            return f"{call}: a Python aggregate function"
        key = (str(call.function).upper(), call.version or 1)
        if key not in JVM_AGGREGATES:
            return f"{call}: {key[0]} version {key[1]} has no JVM accumulator"
    return None


def _call_refusal(call: AggregateCall, in_types: Sequence[DataType]) -> str | None:
    fn = str(call.function).upper()
    if call.user_function is not None:
        return "a Python aggregate function"
    if call.distinct:
        return "DISTINCT"
    if fn == "COUNT":
        return None
    if len(call.args) != 1:
        return "not a one-argument aggregate"
    arg, out = in_types[call.args[0]].kind, call.type.kind
    if fn in ("SUM", "SUM0"):
        if (arg in INTEGRAL and out in INTEGRAL) or (arg is Kind.DECIMAL and out is Kind.DECIMAL):
            return None
        return f"{fn} over {arg} is not exact natively (summation order)"
    if fn == "AVG":
        return None if arg in INTEGRAL and out in INTEGRAL else f"AVG over {arg} is not exact natively (rounding)"
    if fn in ("MIN", "MAX"):
        return None if arg in _MIN_MAX_KINDS else f"{fn} over {arg} orders differently in Spark"
    return f"{fn} has no exact native form"


def _topology_refusal(node: X.GroupAggregate, consumers: dict[int, list[ExecNode]]) -> str | None:
    stack, seen = list(node.inputs), set()
    while stack:
        up = stack.pop()
        if id(up) in seen:
            continue
        seen.add(id(up))
        if up.state or up.metadata.name not in _STATELESS_UPSTREAM:
            return f"{_describe(up)} upstream is not stateless"
        stack.extend(up.inputs)

    paths = [(c, tuple(range(len(node.grouping)))) for c in consumers.get(id(node), [])]
    if not paths:
        return "the node has no consumer"
    while paths:
        down, keys = paths.pop()
        if isinstance(down, X.Sink):
            if down.upsert_materialize:
                return f"sink {down.table.identifier} needs upsert materialisation"
            if not keys or sorted(down.upsert_keys) != sorted(keys):
                return f"sink {down.table.identifier} is not keyed by exactly the group key"
            continue
        if down.metadata.name not in _PASS_THROUGH:
            return f"consumer {_describe(down)} is not a projection or a sink"
        if isinstance(down, X.Calc):
            if down.condition is not None:
                return f"consumer {_describe(down)} filters an upsert stream"
            refs = {p.index: j for j, p in enumerate(down.projection) if isinstance(p, InputRef)}
            if any(k not in refs for k in keys):
                return f"consumer {_describe(down)} drops a group key column"
            keys = tuple(refs[k] for k in keys)
        paths.extend((c, keys) for c in consumers.get(id(down), []))
    return None


def _describe(node: ExecNode) -> str:
    return f"{node.description or type(node).__name__} ({node.metadata.name})"
