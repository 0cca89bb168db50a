"""Group aggregate on Spark's native streaming aggregation in ``update`` mode, where that is exactly Flink.

Spark's ``StateStoreSave`` keeps one row of partial aggregates per key and, in update mode, emits each key
updated by a micro-batch once with its new result. That is Flink's ``GroupAggFunction`` with
``generateUpdateBefore = false`` folded per micro-batch (what Flink's mini-batch does per bundle): an upsert
stream keyed by the group key. It is exact only when every one of these holds (``refusal`` names the first
that does not; the TWS operator in ``group_aggregate.py`` runs the node otherwise):

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

Row kinds: ``+I`` for a key's first emission, ``+U`` afterwards, as Flink emits them. Spark does not say
whether a key is new, so two hidden aggregates keep the first and the last micro-batch timestamp that
touched the key (``current_timestamp()`` is the batch's timestamp, recorded in the offset log, so a replayed
batch gets the same one): equal means the key was only seen by the current batch.

Known difference: an overflowing ``SUM``/``AVG`` over ``BIGINT`` or ``DECIMAL`` fails the query (Spark's ANSI
arithmetic) where Flink wraps (``BIGINT``) or yields null (``DECIMAL``); the TWS operator fails there too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from planengine.ir.types import CHARACTER, INTEGRAL, DataType, Kind
from planengine.runtime.stream import OUTPUT_MODE, ROWKIND, UPDATE, Stream, column_name

_BATCH_TIME = "_bt"
_FIRST, _LAST = "_bt_first", "_bt_last"

_KEY_KINDS = frozenset((*INTEGRAL, Kind.DECIMAL, *CHARACTER, Kind.BOOLEAN, Kind.DATE, Kind.TIMESTAMP,
                        Kind.TIMESTAMP_LTZ, Kind.BINARY, Kind.VARBINARY))
_MIN_MAX_KINDS = frozenset((*INTEGRAL, Kind.DECIMAL, Kind.VARCHAR, Kind.BOOLEAN, Kind.DATE, Kind.TIMESTAMP,
                            Kind.TIMESTAMP_LTZ))
_INTEGER_BITS = {Kind.TINYINT: 8, Kind.SMALLINT: 16, Kind.INT: 32, Kind.BIGINT: 64}
# Nodes a native aggregate may follow in its query: Spark refuses stateful operators before update mode.
_STATELESS_UPSTREAM = frozenset(("stream-exec-table-source-scan", "stream-exec-calc", "stream-exec-exchange",
                                 "stream-exec-watermark-assigner", "stream-exec-union", "stream-exec-correlate"))
# Nodes between the aggregate and its sinks that keep one output row per input row and the row kind.
_PASS_THROUGH = frozenset(("stream-exec-calc", "stream-exec-exchange", "stream-exec-drop-update-before"))


# --- the decision ---------------------------------------------------------------------------------------------
def refusal(node: Any, plan_json: dict[str, Any] | None, node_id: int, ttl_ms: int) -> str | None:
    """Why ``node`` (plan node ``node_id``) must run on transformWithState, or None when native is exact.

    A pure function of the plan: a restored plan always gets the strategy it was first run with.
    """
    if node.need_retraction:
        return "needRetraction is set"
    if not node.inputs or not node.inputs[0].changelog_mode.contains_only_inserts():
        return "the input is not insert-only"
    if node.generate_update_before:
        return "generateUpdateBefore is set (a consumer needs UPDATE_BEFORE)"
    if ttl_ms:
        return "state TTL is configured (Spark's aggregation state does not expire)"
    in_types = node.inputs[0].field_types
    for g in node.grouping:
        if in_types[g].kind not in _KEY_KINDS:
            return f"grouping key ${g} has type {in_types[g]} (Spark normalises it differently)"
    for call in node.aggregates:
        reason = _call_refusal(call, in_types)
        if reason:
            return f"{call}: {reason}"
    if plan_json is None:
        return "the plan's topology is unknown here"
    return _topology_refusal(plan_json, node_id, len(node.grouping))


def _call_refusal(call: Any, in_types: Sequence[DataType]) -> str | None:
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


def _topology_refusal(plan: dict[str, Any], node_id: int, key_count: int) -> str | None:
    from planengine.exec.base import split_type_name

    nodes = {n["id"]: n for n in plan.get("nodes", [])}
    inputs: dict[int, list[int]] = {}
    consumers: dict[int, list[int]] = {}
    for e in plan.get("edges", []):
        inputs.setdefault(e["target"], []).append(e["source"])
        consumers.setdefault(e["source"], []).append(e["target"])

    def name(nid: int) -> str:
        return split_type_name(str(nodes[nid]["type"]))[0]

    stack, seen = list(inputs.get(node_id, [])), set()
    while stack:
        nid = stack.pop()
        if nid in seen:
            continue
        seen.add(nid)
        if nodes[nid].get("state") or name(nid) not in _STATELESS_UPSTREAM:
            return f"node {nid} ({name(nid)}) upstream is not stateless"
        stack.extend(inputs.get(nid, []))

    paths = [(c, tuple(range(key_count))) for c in consumers.get(node_id, [])]
    if not paths:
        return "the node has no consumer"
    while paths:
        nid, keys = paths.pop()
        node, kind = nodes[nid], name(nid)
        if kind == "stream-exec-sink":
            if node.get("requireUpsertMaterialize"):
                return f"sink node {nid} needs upsert materialisation"
            if not keys or sorted(node.get("upsertKeys") or ()) != sorted(keys):
                return f"sink node {nid} is not keyed by exactly the group key"
            continue
        if kind not in _PASS_THROUGH:
            return f"consumer node {nid} ({kind}) is not a projection or a sink"
        if kind == "stream-exec-calc":
            if node.get("condition") is not None:
                return f"consumer node {nid} filters an upsert stream"
            refs = {p.get("inputIndex"): j for j, p in enumerate(node.get("projection", []))
                    if p.get("kind") == "INPUT_REF"}
            if any(k not in refs for k in keys):
                return f"consumer node {nid} drops a group key column"
            keys = tuple(refs[k] for k in keys)
        paths.extend((c, keys) for c in consumers.get(nid, []))
    return None


# --- the operator ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _NativeCall:
    aggregates: tuple[Any, ...]  # Spark aggregate columns, already aliased
    result: Any  # the output column over those aliases


def _native_call(i: int, call: Any, columns: Sequence[str]) -> _NativeCall:
    from pyspark.sql import functions as F

    from planengine.runtime.operators.window_state import spark_type_name

    fn = str(call.function).upper()
    args = [F.col(f"`{columns[a]}`") for a in call.args]
    cond = F.col(f"`{columns[call.filter_arg]}`") if call.filter_arg is not None else None

    def only_if(col: Any) -> Any:
        return col if cond is None else F.when(cond, col)  # Flink's FILTER: rows where it is TRUE

    alias, target = f"_a{i}", spark_type_name(call.type)
    if fn == "COUNT":
        if not args:
            counted = only_if(F.lit(1))
        elif len(args) == 1:
            counted = only_if(args[0])
        else:  # COUNT(a, b): rows where every argument is non-null
            counted = only_if(F.when(F.greatest(*[a.isNull() for a in args]) == F.lit(False), F.lit(1)))
        return _NativeCall((F.count(counted).alias(alias),), F.col(alias).cast(target))
    arg = only_if(args[0])
    if fn == "AVG":  # Flink: BIGINT sum and count, Java long division (truncates toward zero)
        total, count = f"{alias}_sum", f"{alias}_count"
        result = F.when(F.col(count) == 0, F.lit(None)).otherwise(F.expr(f"`{total}` div `{count}`"))
        return _NativeCall((F.sum(arg.cast("bigint")).alias(total), F.count(arg).alias(count)),
                           result.cast(target))
    if fn in ("MIN", "MAX"):
        return _NativeCall(((F.min if fn == "MIN" else F.max)(arg).alias(alias),), F.col(alias).cast(target))
    # SUM / SUM0
    summed = F.col(alias)
    if fn == "SUM0":
        summed = F.coalesce(summed, F.lit(0))
    bits = _INTEGER_BITS.get(call.type.kind)
    if bits is not None and bits < 64:  # Java arithmetic wraps at the result width
        half, full = 1 << (bits - 1), 1 << bits
        summed = F.pmod(summed + F.lit(half), F.lit(full)) - F.lit(half)
    return _NativeCall((F.sum(arg).alias(alias),), summed.cast(target))


def native_group_aggregate(stream: Stream, node: Any) -> Stream:
    """The node as one update-mode streaming aggregation: columns keys ++ aggregates ++ ``_rowkind``."""
    from pyspark.sql import functions as F

    from planengine.runtime.operators.window_state import spark_type_name

    # Event-time marks are dropped: the aggregation must not treat the watermark as a grouping deadline.
    df = stream.df.select(*[F.col(f"`{c}`").alias(c, metadata={}) for c in stream.columns])
    df = df.withColumn(_BATCH_TIME, F.current_timestamp())  # the micro-batch's timestamp
    calls = [_native_call(i, c, stream.columns) for i, c in enumerate(node.aggregates)]
    keys = [F.col(f"`{stream.columns[g]}`").alias(f"_g{i}") for i, g in enumerate(node.grouping)]
    aggregated = df.groupBy(*keys).agg(
        *[a for c in calls for a in c.aggregates], F.min(_BATCH_TIME).alias(_FIRST), F.max(_BATCH_TIME).alias(_LAST))
    types = node.field_types
    out = [F.col(f"_g{i}").cast(spark_type_name(types[i])).alias(column_name(i)) for i in range(len(keys))]
    out += [c.result.alias(column_name(len(keys) + i)) for i, c in enumerate(calls)]
    kind = F.when(F.col(_FIRST) == F.col(_LAST), F.lit("+I")).otherwise(F.lit("+U")).alias(ROWKIND)
    props = {**stream.properties, "stateful": True, "event_time_output": False, OUTPUT_MODE: UPDATE}
    props.pop("channel", None)
    return Stream(aggregated.select(*out, kind), tuple(node.field_names), updating=True, rowtime=None,
                  properties=props)
