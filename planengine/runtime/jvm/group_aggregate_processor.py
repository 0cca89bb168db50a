"""``stream-exec-group-aggregate`` on the JVM (``io.planengine.jvm.ops.aggregate``).

The node's spec is handed over as JSON: grouping positions, aggregate calls (function name and version,
argument and FILTER positions, DISTINCT, result type as a Spark type, literal operands), the output's Spark
types and the flags (``needRetraction``, ``generateUpdateBefore``, mini-batch, state TTL, state names). The
input columns are first cast to the Spark types of the node's input fields where they differ, so the
JVM's arithmetic follows the plan's types, not whatever an upstream expression happened to produce.

Which nodes run here is decided at compile time and recorded in the plan (``"strategy": "JVM"``,
``planengine.plan.strategies``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planengine.plan import strategies
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.jvm import run_operator
from planengine.runtime.jvm.specs import AggCallSpec, GroupAggregateSpec, SparkType
from planengine.runtime.jvm.typed import spark_type as _spark_type
from planengine.runtime.jvm.typed import typed_input

# Which nodes run here is recorded in the plan (planengine.plan.strategies); the names stay for the tests.
JVM_AGGREGATES = strategies.JVM_AGGREGATES
refusal = strategies.group_aggregate_jvm_refusal


def call_spec(call: Any) -> AggCallSpec:
    """One aggregate call as the JVM library reads it (``io.planengine.jvm.spec.AggCallSpec``)."""
    return AggCallSpec(
        function=str(call.function).upper(),
        version=call.version or 1,
        args=tuple(call.args),
        filter_arg=call.filter_arg,
        distinct=bool(call.distinct),
        result_type=SparkType(_spark_type(call.type)),
        constants=tuple(None if c.value is None else str(c.value) for c in call.constants),
    )


def spec(node: Any, stream: Stream, ctx: Any) -> GroupAggregateSpec:
    """The spec ``GroupAggregate.apply`` reads (``io.planengine.jvm.spec.GroupAggregateSpec``)."""
    return GroupAggregateSpec(
        grouping=tuple(node.grouping),
        agg_calls=tuple(call_spec(call) for call in node.aggregates),
        output_types=tuple(SparkType(_spark_type(t)) for t in node.field_types),
        need_retraction=bool(node.need_retraction),
        input_updating=bool(stream.updating),
        generate_update_before=bool(node.generate_update_before),
        mini_batch=str(ctx.option(node, "table.exec.mini-batch.enabled", "false")).lower() == "true",
        state_ttl_ms=int(ctx.state_ttl_ms(node)),
        state_names=tuple(type(node).STATE_NAMES),
    )


def jvm_group_aggregate(stream: Stream, node: Any, ctx: Any) -> Stream:
    """The node on the JVM processor: columns ``f0..fn`` (keys, then aggregates) and ``_rowkind``."""
    in_types = node.inputs[0].field_types if node.inputs else None
    if in_types is None:
        raise ValueError("group aggregate needs its input node's types")
    out = run_operator(typed_input(stream, list(in_types)), "groupAggregate", spec(node, stream, ctx))
    return Stream(df=out, fields=tuple(node.field_names), updating=True, rowtime=None,
                  facts=replace(stream.facts, stateful=True))
