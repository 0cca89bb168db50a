"""Flink's Top-N strategy for each ``stream-exec-rank_3`` node, recorded in the plan (``"strategy"``).

Flink's planner (``RankProcessStrategy``) picks one of three functions, and so does this rule, from facts of
the final exec DAG (after changelog inference):

* ``APPEND_FAST``: the input is insert-only; only rows that can still rank are kept;
* ``UPDATE_FAST``: the input is updating, has a unique key that determines the partition (every partition key
  is part of it), and every sort key only moves rows up under updates (a ``DESC`` key that only increases, an
  ``ASC`` key that only decreases). Then an update replaces its row by the unique key, rows below the top-N
  never come back except through a message of their own, and the retraction of the old row need not be
  applied: fewer messages (no promotion and demotion of the next row per update) and less state;
* ``RETRACT``: any other updating input; every row is kept so a retraction promotes the next one.

Monotonicity is what Flink's ``FlinkRelMdModifiedMonotonicity`` proves for the common case, found by following
the sort field down through projections (no filter: a filter turns updates into deletions) to a group
aggregate over an insert-only input: its grouping fields never change, ``COUNT`` and ``MAX`` only increase,
``MIN`` only decreases. Anything else is unknown, so ``RETRACT``.

A node with a recorded strategy keeps it (a restored plan); the rule is frozen for version 3.

>>> from planengine.ir.aggregates import AggregateCall
>>> from planengine.ir.changelog import UPSERT
>>> from planengine.ir.sorting import SortKey
>>> from planengine.ir.types import BIGINT, STRING, row
>>> scan = X.Values(inputs=(), output_type=row(("k", STRING)), tuples=())
>>> counts = X.GroupAggregate(inputs=(scan,), output_type=row(("k", STRING), ("c", BIGINT)), grouping=(0,),
...     aggregates=(AggregateCall("COUNT", 1, (), BIGINT, "c"),), changelog_mode=UPSERT)
>>> top = X.Rank(inputs=(counts,), output_type=counts.output_type, rank_type="ROW_NUMBER", partition_keys=(),
...     order_keys=(SortKey(1, ascending=False),), rank_end=3, changelog_mode=UPSERT)
>>> decide(top)
('UPDATE_FAST', (0,))
>>> decide(dataclasses.replace(top, order_keys=(SortKey(1),)))  # ascending by a count: rows move down
('RETRACT', ())
"""

from __future__ import annotations

import dataclasses
import logging

from planengine.exec import nodes as X
from planengine.exec.base import ExecNode, rebuild, topological
from planengine.ir.expressions import InputRef
from planengine.plan.strategies import APPEND_FAST, RETRACT, UPDATE_FAST
from planengine.planner.upsert_keys import upsert_keys

log = logging.getLogger("planengine.planner")

CONSTANT, INCREASING, DECREASING = "CONSTANT", "INCREASING", "DECREASING"
_AGGREGATE_MONOTONICITY = {"COUNT": INCREASING, "MAX": INCREASING, "MIN": DECREASING}


def monotonicity(node: ExecNode, field: int) -> str | None:
    """How output ``field`` of ``node`` moves when a row is updated: ``CONSTANT``, ``INCREASING``,
    ``DECREASING``, or None (unknown)."""
    if isinstance(node, X.Calc):
        expr = node.projection[field]
        if node.condition is not None or not isinstance(expr, InputRef):
            return None
        return monotonicity(node.inputs[0], expr.index)
    if isinstance(node, X.Exchange | X.DropUpdateBefore):
        return monotonicity(node.inputs[0], field)
    if isinstance(node, X.GroupAggregate):
        if field < len(node.grouping):
            return CONSTANT
        if node.need_retraction or not node.inputs[0].changelog_mode.contains_only_inserts():
            return None
        call = node.aggregates[field - len(node.grouping)]
        if call.user_function is not None:
            return None
        return _AGGREGATE_MONOTONICITY.get(str(call.function).upper())
    return None


def decide(node: X.Rank) -> tuple[str, tuple[int, ...]]:
    """The strategy of ``node`` and, for ``UPDATE_FAST``, its input's unique key."""
    child = node.inputs[0]
    if child.changelog_mode.contains_only_inserts():
        return APPEND_FAST, ()
    keys = upsert_keys(child)
    if not keys or not set(node.partition_keys) <= set(keys):
        return RETRACT, ()
    wanted = [INCREASING if not k.ascending else DECREASING for k in node.order_keys]
    moves = [monotonicity(child, k.field) for k in node.order_keys]
    if all(m in (CONSTANT, w) for m, w in zip(moves, wanted, strict=True)) and any(m != CONSTANT for m in moves):
        return UPDATE_FAST, tuple(keys)
    return RETRACT, ()


def record_rank_strategies(sinks: list[X.Sink]) -> list[X.Sink]:
    """Every ``stream-exec-rank_3`` node without a strategy, with its strategy recorded."""
    decided: dict[int, tuple[str, tuple[int, ...]]] = {}
    for node in topological(list(sinks)):
        if isinstance(node, X.Rank) and node.metadata.version == 3 and node.strategy is None:
            decided[id(node)] = decide(node)
            log.info("rank %s: %s", node.description, decided[id(node)][0])
    if not decided:
        return sinks

    def fn(node: ExecNode, inputs: tuple[ExecNode, ...]) -> ExecNode:
        changes: dict[str, object] = {} if inputs == node.inputs else {"inputs": inputs}
        if id(node) in decided:
            changes["strategy"], changes["unique_key"] = decided[id(node)]
        return dataclasses.replace(node, **changes) if changes else node  # type: ignore[arg-type]

    return rebuild(list(sinks), fn)  # type: ignore[return-value]
