"""``stream-exec-group-aggregate``: Spark's native update-mode aggregation where exact, else the TWS operator.

Contract: **a translator's strategy for a (name, version) is frozen; a new strategy needs a new node version
or a plan-recorded flag.** State written by one strategy cannot be read by another (Spark's
``StateStoreSave`` rows vs. the TWS operator's named state variables), so a plan that ran once must be
translated the same way by every later engine:

* version 1 always runs on the ``group_aggregate`` TWS operator (``operators/group_aggregate.py``), as it
  did when version 1 was the newest; its plans and snapshots keep restoring unchanged;
* version 2 (written by compilation since the native path exists) runs natively when
  ``native_group_aggregate.refusal`` finds nothing against it, and on the same TWS operator otherwise.
  ``refusal`` reads only facts recorded in the plan (the node's fields and frozen configuration, the input
  edge's changelog mode, the plan's edges and neighbouring nodes), so the choice for a given plan never
  changes. Changing the rule itself (e.g. allowing another aggregate natively) therefore needs version 3.

The decision is logged at INFO with the node id and, for the TWS path, the reason.
"""

from __future__ import annotations

import logging
from typing import Any

from planengine.runtime.operators.group_aggregate import group_aggregate
from planengine.runtime.operators.native_group_aggregate import native_group_aggregate, refusal
from planengine.runtime.stream import Stream
from planengine.runtime.translators import translator

log = logging.getLogger("planengine.runtime")


@translator("stream-exec-group-aggregate", 1)
def translate_group_aggregate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    return group_aggregate(stream, node, ctx)


@translator("stream-exec-group-aggregate", 2)
def translate_group_aggregate_v2(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    (stream,) = inputs
    node_id = ctx.node_id(node)
    reason = refusal(node, plan_json(ctx), node_id, ctx.state_ttl_ms(node))
    if reason is None and not stream.updating:
        log.info("node %d (group aggregate): native update-mode aggregation", node_id)
        return native_group_aggregate(stream, node)
    log.info("node %d (group aggregate): transformWithState (%s)", node_id, reason or "the input is updating")
    return group_aggregate(stream, node, ctx)


def plan_json(ctx: Any) -> dict[str, Any] | None:
    """The plan of record being translated (the executor's job carries it); None outside a job."""
    job = (getattr(ctx, "extras", None) or {}).get("job")
    return getattr(getattr(job, "plan", None), "data", None)
