"""A state move's conversion: the state a Python ``transformWithState`` operator kept, as its JVM processor's
initial state.

The group aggregate's accumulators need per-function conversion (below). Every other moved family
(deduplicate, changelog normalize, upsert materializer, Top-N and sort-limit, join, OVER, sessions) keeps rows,
and its JVM processor's initial state has one generic shape learnt from the processor itself
(``io.planengine.jvm.core.StateVariables``: ``state STRUCT<variable: value | ARRAY<STRUCT<key, value>>>``);
``keyed_initial_state`` fills it from the Python state through one small table (``_PYTHON_STATE``: how each
family's JSON text reads as typed values).

Plans written before ``group-aggregate_3`` run their aggregates on the Python transformWithState operator,
whose state is JSON text (``operators/group_aggregate.py``: ``accumulators`` = ``{"n", "a": [acc...], "out",
"g"}``, ``distinctValues`` = ``[aggregate index, value] -> count``). Moving such a node to version 3 with its
state means: read that state with Spark's state data source (``format("statestore")``), convert every
accumulator into the JVM's typed layout, and start the JVM processor from it through
``transformWithState(..., initialState)``.

Spark applies initial state in a query's first batch only (batch id 0), so the converted state starts a
query without a checkpoint. ``initial_state`` and ``group_aggregate_with_initial_state`` are the two steps;
``move.move_pending_state`` runs them in a scratch checkpoint and puts the result into a job's restored
checkpoint (docs/jvm-operators.md, "State moves").

The conversion is exact: each Python accumulator holds the same facts as its JVM counterpart (``SUM``: sum and
count, ``AVG``: sum and count, ``MIN``/``MAX``: the extreme, with the value multiset in ``distinctValues``...).
"""

from __future__ import annotations

import json
import pickle
from dataclasses import replace
from typing import Any

from planengine.errors import InternalError, PlanIncompatible
from planengine.ir.types import INTEGRAL, DataType, Kind
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.jvm import operators
from planengine.runtime.jvm.group_aggregate_processor import refusal, spec
from planengine.runtime.jvm.movable import MovableGroupAggregate, MovableOperator
from planengine.runtime.jvm.typed import typed_input
from planengine.runtime.operators.aggregates.accumulators import in_type
from planengine.runtime.operators.aggregates.library import canonical_name
from planengine.runtime.operators.state_codec import decode, decode_row


def _state_rows(spark: Any, checkpoint: str, variable: str, operator_id: int) -> list[Any]:
    reader = spark.read.format("statestore").option("operatorId", operator_id).option("stateVarName", variable)
    return reader.load(checkpoint).collect()


def _sum_type(call: Any, arg_type: DataType | None) -> DataType:
    """The JVM AVG's sum type (``io.planengine.jvm.agg.Avg``)."""
    kind = (arg_type or call.type).kind
    if kind in INTEGRAL:
        return DataType(Kind.BIGINT)
    if kind is Kind.DECIMAL:
        return DataType(Kind.DECIMAL, precision=38, scale=(arg_type or call.type).scale or 0)
    return DataType(Kind.DOUBLE)


def _accumulator(call: Any, acc: Any, arg_type: DataType | None, retraction: bool) -> tuple[Any, ...]:
    """One Python accumulator (its JSON form) as the JVM function's accumulator row."""
    name = canonical_name(call)
    if name == "COUNT":
        return (int(acc),)
    if name in ("SUM", "SUM0"):
        total, count = acc
        return (in_type(total, call.type), int(count))
    if name == "AVG":
        total, count = acc
        sum_type = _sum_type(call, arg_type)
        return (in_type(0 if total is None and count == 0 else total, sum_type), int(count))
    if name in ("MIN", "MAX"):
        return (acc,)
    if name in ("FIRST_VALUE", "LAST_VALUE"):
        return (list(acc),) if retraction else (acc,)
    if name == "LISTAGG":
        return ([str(v) for v in acc],)
    if name == "COLLECT":
        return ([(v, int(c)) for v, c in acc],)
    if name.startswith(("VAR", "STDDEV")):
        n, total, squares = acc
        if call.type.kind in INTEGRAL:
            return (int(n), in_type(int(total), call.type), in_type(int(squares), call.type))
        return (int(n), float(total), float(squares))
    if name in ("BOOL_AND", "BOOL_OR"):
        return (int(acc[0]), int(acc[1]))
    raise PlanIncompatible(f"{call}: no state migration for {name}")


def initial_state(spark: Any, checkpoint: str, operator_id: int, node: Any, stream: Stream, ctx: Any) -> Any:
    """The Python operator's state of ``node`` (in ``checkpoint``, Spark operator ``operator_id``) as a DataFrame
    of the JVM processor's initial state: the grouping columns, then ``state``.

    Collected on the driver: a migration is a one-off step, bounded by the driver's memory."""
    from pyspark.sql.types import StructType  # noqa: PLC0415 — pyspark is an optional extra

    if refusal(node) is not None:
        raise PlanIncompatible(f"node {ctx.node_id(node)} cannot move to the JVM: {refusal(node)}")
    in_types = list(node.inputs[0].field_types)
    typed = typed_input(stream, in_types)
    state_type = StructType.fromJson(json.loads(str(
        operators(spark).groupAggregateInitialStateType(typed._jdf, spec(node, stream, ctx).to_text()))))
    retraction = bool(node.need_retraction) or stream.updating
    bagged = [i for i, c in enumerate(node.aggregates)
              if c.distinct or (retraction and canonical_name(c) in ("MIN", "MAX"))]
    bags: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    if bagged:
        for r in _state_rows(spark, checkpoint, "distinctValues", operator_id):
            index, value = decode(r["user_map_key"]["k"])
            if index not in bagged:
                continue
            value = tuple(value) if isinstance(value, list) else value
            key_row = [index] + [value if i == index else None for i in bagged]
            key = tuple(r["key"]) if node.grouping else ()
            bags.setdefault(key, []).append((tuple(key_row), int(r["user_map_value"]["c"])))
    rows = []
    for r in _state_rows(spark, checkpoint, "accumulators", operator_id):
        state = decode(r["value"]["acc"])
        key = tuple(r["key"]) if node.grouping else ()  # a global aggregate's constant key is implied
        accs = [_accumulator(c, a, in_types[c.args[0]] if c.args else None, retraction)
                for c, a in zip(node.aggregates, state["a"], strict=True)]
        written = r["value"]["ts"] if "ts" in r["value"].asDict() else None  # wall-clock ms on both sides (TTL)
        value = [(int(state["n"]), int(written or 0), *accs)]
        if bagged:
            value.append(bags.get(key, []))
        rows.append((*key, tuple(value)))
    key_fields = [typed.schema.fields[g] for g in node.grouping] or []
    schema = StructType([*key_fields, *StructType.fromJson({"type": "struct", "fields": [
        {"name": "state", "type": state_type.jsonValue(), "nullable": False, "metadata": {}}]}).fields])
    return spark.createDataFrame(rows, schema)


def group_aggregate_with_initial_state(stream: Stream, node: Any, ctx: Any, initial: Any) -> Stream:
    """The JVM group aggregate over ``stream``, starting from ``initial`` (see ``initial_state``)."""
    from pyspark.sql import DataFrame  # noqa: PLC0415 — pyspark is an optional extra

    typed = typed_input(stream, list(node.inputs[0].field_types))
    spark = typed.sparkSession
    jdf = operators(spark).groupAggregateWithInitialState(typed._jdf, spec(node, stream, ctx).to_text(),
                                                         initial._jdf)
    return Stream(df=DataFrame(jdf, spark), fields=tuple(node.field_names), updating=True, rowtime=None,
                  facts=replace(stream.facts, stateful=True))



# --- every other family: rows, in the generic initial state ---------------------------------------------------
def _kept_row(value: Any) -> tuple[Any, ...]:
    """``keptRow`` / ``latestRow``: ``(row JSON, ts)`` -> ``(row, written)``."""
    return (decode_row(value["row"]), 0)


def _materialized_rows(value: Any) -> tuple[Any, ...]:
    """``materializedRows``: ``(rows JSON [row, ...], ts)`` -> ``(rows, written)``."""
    return ([tuple(r) for r in decode_row(value["rows"])], 0)


def _ranked_rows(value: Any) -> tuple[Any, ...]:
    """``rankedRows`` / ``topRows``: ``(rows JSON [[seq, row], ...], seq, ts)`` -> ``(rows, seq, written)``."""
    return ([(int(seq), tuple(row)) for seq, row in decode_row(value["rows"])], int(value["seq"]), 0)


def _side_row(key: Any, value: Any) -> tuple[Any, Any]:
    """``leftRows`` / ``rightRows`` entries: ``(row JSON) -> (cnt, assoc, ts)`` -> ``(row) -> (count,
    associations, written)``."""
    return (decode_row(key["row"]),), (int(value["cnt"]), int(value["assoc"]), 0)


def _pickled(value: Any) -> Any:
    """A ``PickledValue`` variable's value (``blob``): node versions before the state codec pickled their state
    (``operators/window_state.py``); this engine wrote it, so reading it back is safe."""
    return pickle.loads(bytes(value["blob"]))


def _pending_rows(value: Any) -> tuple[Any, ...]:
    """OVER's ``pendingRows``: ``{ts: [row, ...]}`` -> ``(rows [(ts, row), ...] by timestamp, written)``."""
    pending = _pickled(value)
    return ([(int(t), tuple(row)) for t in sorted(pending) for row in pending[t]], 0)


def _over_history(value: Any) -> tuple[Any, ...]:
    """OVER's ``accumulators``: ``{"last", "rows": [(ts, row), ...]}`` -> ``(last, written, rows)`` (the JVM
    folds the rows into its accumulators for unbounded frames: ``OverAggregate.loadInitialState``)."""
    acc = _pickled(value)
    return (int(acc["last"]), 0, [(int(t), tuple(row)) for t, row in acc["rows"]])


def _open_sessions(value: Any) -> tuple[Any, ...]:
    """A session's ``windowAccumulators``: ``[[start, end, [row, ...]], ...]`` -> ``(sessions, written)``."""
    return ([(int(start), int(end), [tuple(r) for r in rows]) for start, end, rows in _pickled(value)], 0)


# Node name -> per state variable (in STATE_NAMES order) how the Python operator's value reads as the JVM's
# (``written`` is stamped by the JVM with the time of the move). Value variables take the state source's
# ``value`` row, map variables its ``user_map_key`` and ``user_map_value``.
_PYTHON_STATE: dict[str, tuple[Any, ...]] = {
    "stream-exec-deduplicate": (_kept_row,),
    "stream-exec-changelog-normalize": (_kept_row,),
    "stream-exec-sink": (_materialized_rows,),
    "stream-exec-rank": (_ranked_rows,),
    "stream-exec-sort-limit": (_ranked_rows,),
    "stream-exec-join": (_side_row, _side_row),
    "stream-exec-over-aggregate": (_pending_rows, _over_history),
    "stream-exec-window-aggregate": (_open_sessions,),
    "stream-exec-group-window-aggregate": (_open_sessions,),
}


def _spark_value(value: Any, data_type: Any) -> Any:
    """A decoded state value as ``createDataFrame`` takes it for ``data_type`` (JSON has no tuples, and a
    NULL-free integer column may have come back as a float from pandas)."""
    from pyspark.sql import types as T  # noqa: PLC0415 — pyspark is an optional extra

    if value is None:
        return None
    if isinstance(data_type, T.StructType):
        items = [value.get(f.name) for f in data_type.fields] if isinstance(value, dict) else list(value)
        return tuple(_spark_value(v, f.dataType) for v, f in zip(items, data_type.fields, strict=True))
    if isinstance(data_type, T.ArrayType):
        return [_spark_value(v, data_type.elementType) for v in value]
    if isinstance(data_type, T.MapType):
        return {_spark_value(k, data_type.keyType): _spark_value(v, data_type.valueType)
                for k, v in dict(value).items()}
    if isinstance(data_type, T.IntegralType):
        return int(value)
    if isinstance(data_type, T.FractionalType) and not isinstance(data_type, T.DecimalType):
        return float(value)
    if isinstance(data_type, T.BinaryType):
        return bytearray(value)
    return value


def keyed_initial_state(spark: Any, checkpoint: str, operator_id: int, op: MovableOperator, seed_df: Any) -> Any:
    """The Python operator's state of ``op.node`` (in ``checkpoint``, Spark operator ``operator_id``) as a
    DataFrame of the JVM processor's initial state: ``op.key_columns`` (typed as the operator's input), then
    ``state``. Collected on the driver: a migration is a one-off step, bounded by the driver's memory."""
    from pyspark.sql.types import StructField, StructType  # noqa: PLC0415 — pyspark is an optional extra

    name = op.node.metadata.name
    readers = _PYTHON_STATE.get(name)
    if readers is None:
        raise InternalError(f"no state conversion for {name}")
    spec_json = op.spec.to_text()
    state_type = StructType.fromJson(json.loads(str(operators(spark).initialStateType(op.entry, seed_df._jdf,
                                                                                      spec_json))))
    variables = list(type(op.node).STATE_NAMES[:len(readers)])
    if [f.name for f in state_type.fields] != variables:
        raise InternalError(f"{name}: the JVM processor's state variables {[f.name for f in state_type.fields]} "
                            f"are not the node's {variables}")
    per_key: dict[tuple[Any, ...], list[Any]] = {}
    for index, (variable, read) in enumerate(zip(variables, readers, strict=True)):
        is_map = not isinstance(state_type.fields[index].dataType, StructType)
        for r in _state_rows(spark, checkpoint, variable, operator_id):
            key = tuple(r["key"]) if op.key_columns else ()  # a global operator's constant key is implied
            slots = per_key.setdefault(key, [None] * len(variables))
            if is_map:
                slots[index] = (slots[index] or []) + [read(r["user_map_key"], r["user_map_value"])]
            else:
                slots[index] = read(r["value"])
    key_fields = [StructField(c, seed_df.schema[c].dataType, True) for c in op.key_columns]
    schema = StructType([*key_fields, StructField("state", state_type, False)])
    rows = [(*(_spark_value(k, f.dataType) for k, f in zip(key, key_fields, strict=True)),
             _spark_value(tuple(slots), state_type)) for key, slots in per_key.items()]
    return spark.createDataFrame(rows, schema)


def initial_state_of(spark: Any, checkpoint: str, operator_id: int, moved: Any, seed_df: Any, ctx: Any) -> Any:
    """The initial state of a state move candidate (``runtime/jvm/movable.py``) over the seed input."""
    if isinstance(moved, MovableGroupAggregate):
        return initial_state(spark, checkpoint, operator_id, moved.node, moved.stream.with_df(seed_df), ctx)
    return keyed_initial_state(spark, checkpoint, operator_id, moved, seed_df)


def started_from(moved: Any, seed_df: Any, initial: Any, ctx: Any) -> Any:
    """The candidate's JVM operator over ``seed_df``, started from ``initial`` (a DataFrame)."""
    from pyspark.sql import DataFrame  # noqa: PLC0415 — pyspark is an optional extra

    if isinstance(moved, MovableGroupAggregate):
        return group_aggregate_with_initial_state(moved.stream.with_df(seed_df), moved.node, ctx, initial).df
    spark = seed_df.sparkSession
    spec_json = moved.spec.to_text()
    return DataFrame(operators(spark).withInitialState(moved.entry, seed_df._jdf, spec_json, initial._jdf), spark)
