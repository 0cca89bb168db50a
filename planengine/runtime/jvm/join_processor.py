"""Regular joins on the JVM (``io.planengine.jvm.ops.join``): inner, left, right, full, semi and anti.

Both sides are unioned into one stream keyed by the join key, as for the Python operator
(``operators/join.py``): ``_k0..`` (the equi-key values cast to the left key types), ``_side``, ``_rowkind``,
the left fields ``l0..`` and the right fields ``r0..`` (the other side's NULL), each cast to its plan type.

A non-equi condition depends on rows of both sides, so it cannot be computed in Spark expressions before the
join. Version 2 keeps such a join on the Python operator (``refusal``, frozen: its plans translate the same
forever). Version 3 runs it on the JVM too (``refusal_v3``): the condition is rendered as Spark SQL over the
columns ``l0..``/``r0..`` by the same renderer as every other expression (``runtime/dataflow/expressions.py``) and
handed over in the spec; the processor resolves it with the session's analyzer on the driver and evaluates the
Catalyst predicate per pair of rows (``io.planengine.jvm.ops.join.PairCondition``). Nothing is evaluated in
Python. A condition with no such Spark form (a Python user function, a function without a Spark rendering)
keeps version 3's node on the Python operator, which evaluates it itself.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planengine.errors import ValidationError
from planengine.plan import strategies
from planengine.plan.state_moves import user_function_in
from planengine.runtime.dataflow.expressions import render_spark_sql
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.jvm.movable import run_movable
from planengine.runtime.jvm.specs import JoinSpec


def refusal(node: Any) -> str | None:
    """Why ``node`` runs on the Python operator rather than the JVM, or None. A pure function of the plan."""
    if node.non_equi_condition is not None:
        return "a non-equi join condition (evaluated per pair of rows; the JVM join evaluates no expressions)"
    return state_type_refusal(node)


def state_type_refusal(node: Any) -> str | None:
    """A side whose rows the JVM's typed state cannot hold (``strategies.jvm_state_holds``): Spark would fail the
    query at its start, so no such plan ever ran on the JVM and this rule changes no running job's operator."""
    for side, join_input in zip(("left", "right"), node.inputs, strict=True):
        reason = strategies.state_type_refusal(join_input.field_types, f"{side} input")
        if reason is not None:
            return reason
    return None


def condition_columns(node: Any) -> list[str]:
    """The processor's columns a non-equi condition reads: the left fields then the right fields."""
    return [*(f"l{i}" for i in range(len(node.inputs[0].field_types))),
            *(f"r{i}" for i in range(len(node.inputs[1].field_types)))]


def refusal_v3(node: Any) -> str | None:
    """Why ``join_3``'s node runs on the Python operator, or None. A pure function of the plan: a non-equi
    condition runs on the JVM when it has a Spark SQL form the JVM can evaluate."""
    held = state_type_refusal(node)
    if held is not None:
        return held
    condition = node.non_equi_condition
    if condition is None:
        return None
    user = user_function_in(condition.to_json())
    if user is not None:
        return (f"the non-equi join condition calls the user function {user} (a Python function; the JVM join "
                "evaluates Spark expressions only)")
    try:
        render_spark_sql(condition, condition_columns(node))
    except ValidationError as error:
        return f"the non-equi join condition has no Spark SQL form ({error})"
    return None


def jvm_join(left: Stream, right: Stream, node: Any, ctx: Any) -> Stream:
    """``stream-exec-join`` on the JVM processor; a non-equi condition (``refusal_v3`` None) goes along as Spark
    SQL over ``l0..``/``r0..``."""
    insert_only = node.changelog_mode.contains_only_inserts()
    condition = node.non_equi_condition
    spec = JoinSpec(
        join_type=str(node.join_type).upper(),
        left_width=len(node.inputs[0].field_types),
        right_width=len(node.inputs[1].field_types),
        left_keys=tuple(node.left_keys),
        right_keys=tuple(node.right_keys),
        filter_nulls=tuple(1 if f else 0 for f in node.filter_nulls),
        insert_only=insert_only,
        state_ttl_ms=int(ctx.state_ttl_ms(node)),
        state_names=tuple(type(node).STATE_NAMES),
        condition=None if condition is None else render_spark_sql(condition, condition_columns(node)),
    )
    # The Python operator's own input form: keys, side tag, row kind, both rows (what a state move converts from).
    from planengine.runtime.operators.join import join_sides  # noqa: PLC0415 — loads pyspark; refusal() must not

    sides = join_sides(left, right, node)
    df = run_movable(sides, "join", spec, node, ctx, [f"_k{i}" for i in range(len(node.left_keys))])
    return Stream(df=df, fields=tuple(node.field_names), updating=not insert_only, rowtime=None,
                  facts=replace(left.facts, stateful=True))
