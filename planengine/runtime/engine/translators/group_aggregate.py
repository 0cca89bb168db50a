"""``stream-exec-group-aggregate``: Spark's native update-mode aggregation or the TWS operator, as the plan says.

Contract: **a translator's strategy for a (name, version) is frozen; a new strategy needs a new node version
or a plan-recorded flag.** State written by one strategy cannot be read by another (Spark's
``StateStoreSave`` rows vs. the TWS operator's named state variables), so a plan that ran once must be
translated the same way by every later engine:

* version 1 always runs on the ``group_aggregate`` TWS operator (``operators/group_aggregate.py``), as it
  did when version 1 was the newest; its plans and snapshots keep restoring unchanged;
* version 2 runs on the strategy recorded in the node (``"strategy"``: ``NATIVE`` or
  ``TRANSFORM_WITH_STATE``), chosen at compile time by ``planengine.plan.strategies`` and filled by restore
  for plans written before it was recorded. Nothing here looks at the rest of the plan;
* version 3 (written by compilation since the JVM operators exist) records ``NATIVE`` where version 2 would (run
  with the aggregate library's native forms: integer sums wrap like Java's instead of failing on overflow),
  ``JVM`` where version 2 falls back to the TWS operator (the JVM processor,
  ``runtime/jvm/group_aggregate_processor.py``) and ``TRANSFORM_WITH_STATE`` only for calls the JVM has no
  accumulator for (a Python aggregate function). The JVM accumulator set is frozen for version 3
  (``planengine.plan.strategies.JVM_AGGREGATES``);
* version 4 is version 3, except that on ``TRANSFORM_WITH_STATE`` a Python aggregate function's accumulator is
  kept as the versioned state codec's tagged JSON instead of a pickle (``operators/group_aggregate.py``).
"""

from __future__ import annotations

import logging
from typing import Any

from planengine.errors import InternalError
from planengine.plan.strategies import JVM, NATIVE, TRANSFORM_WITH_STATE, group_aggregate_jvm_refusal
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.translators import translator
from planengine.runtime.jvm.group_aggregate_processor import jvm_group_aggregate
from planengine.runtime.jvm.movable import MovableGroupAggregate
from planengine.runtime.operators.group_aggregate import group_aggregate
from planengine.runtime.operators.native_group_aggregate import native_group_aggregate

log = logging.getLogger("planengine.runtime")


@translator("stream-exec-group-aggregate", 1)
def translate_group_aggregate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return group_aggregate(stream, node, ctx)


@translator("stream-exec-group-aggregate", 2)
def translate_group_aggregate_v2(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    node_id = ctx.node_id(node)
    if node.strategy == NATIVE:
        if stream.updating:
            raise InternalError(f"node {node_id}: the plan runs the group aggregate natively, but its input is "
                                "updating; native aggregation needs an insert-only input")
        log.info("node %d (group aggregate): native update-mode aggregation", node_id)
        return native_group_aggregate(stream, node)
    if node.strategy == TRANSFORM_WITH_STATE:
        log.info("node %d (group aggregate): transformWithState", node_id)
        return group_aggregate(stream, node, ctx)
    raise InternalError(f"node {node_id}: group aggregate version 2 without a strategy (restore records one)")


@translator("stream-exec-group-aggregate", 3, 4)
def translate_group_aggregate_v3(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    node_id = ctx.node_id(node)
    if node.strategy == NATIVE:
        if stream.updating:
            raise InternalError(f"node {node_id}: the plan runs the group aggregate natively, but its input is "
                                "updating; native aggregation needs an insert-only input")
        log.info("node %d (group aggregate): native update-mode aggregation", node_id)
        return native_group_aggregate(stream, node, library_forms=True)  # integer sums wrap like Flink's
    held = group_aggregate_jvm_refusal(node) if node.strategy == JVM else None
    if held is not None:  # recorded before the state-type rule joined the decision (such a query failed at start)
        log.info("node %d (group aggregate): transformWithState (Python): %s", node_id, held)
        return group_aggregate(stream, node, ctx)
    if node.strategy == JVM:
        log.info("node %d (group aggregate): JVM processor", node_id)
        # A node moved here from the Python operator may find that operator's state in its restored
        # checkpoint: the executor converts it before the query starts (runtime/state/move.py).
        ctx.state_move_candidates.append(MovableGroupAggregate(node, stream))
        return jvm_group_aggregate(stream, node, ctx)
    if node.strategy == TRANSFORM_WITH_STATE:
        log.info("node %d (group aggregate): transformWithState (Python)", node_id)
        return group_aggregate(stream, node, ctx)
    raise InternalError(f"node {node_id}: group aggregate version {node.metadata.version} without a strategy "
                        "(restore records one)")
