"""Whether a plan runs in Spark's Real-time Mode (``pipeline.real-time``), decided once when it is compiled.

Why a planner decision and not a run option: the mode changes how a query checkpoints (one long batch per
``pipeline.real-time.checkpoint-interval``), so every engine that restores the plan must run it the same way; the
decision and the reason for it are recorded in the plan's ``config`` like the trigger interval, and a later engine
never re-decides.

What can run in the mode is what Spark 4.3.0's allowlist admits (docs/real-time-mode.md) *and* what planengine
translates onto those operators. The plans admitted are those whose every node is known to map there: one
Kafka source, projections and filters, and a group aggregate on Spark's native update-mode aggregation
(``strategies.NATIVE``: Spark's ``StateStoreSave``, which the mode streams), into one Kafka sink; an aggregate's
updates go to an ``upsert-kafka`` sink, which writes each as the key's new value. Everything else names itself as
the reason (``blocker``): watermarks (their end-of-input control stream is a file source), aggregates on the
``transformWithState`` processors and the other stateful operators (not yet mapped onto the mode), other
connectors (they read or write per micro-batch), and statement sets (their shared query writes per micro-batch).

``OFF`` (the default) records nothing, so plans that do not ask keep their exact bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planengine.config.options import REAL_TIME, REAL_TIME_CHECKPOINT_INTERVAL
from planengine.errors import UnsupportedQueryError
from planengine.exec import nodes as X
from planengine.exec.base import ExecNode, topological
from planengine.ir.changelog import INSERT_ONLY
from planengine.ir.expressions import Call
from planengine.plan.strategies import NATIVE

MODE_KEY = REAL_TIME.key
INTERVAL_KEY = REAL_TIME_CHECKPOINT_INTERVAL.key
# The decision itself, next to the two options it was made from: plan fields, not options (nobody sets them).
ENABLED_KEY = "realTimeEnabled"
BLOCKED_BY_KEY = "realTimeBlockedBy"
_STATELESS = (X.Exchange,)


@dataclass(frozen=True)
class RealTimeDecision:
    mode: str  # OFF, AUTO or REQUIRED, as asked
    enabled: bool
    blocker: str | None  # "#<node> <what>: <why>" when the plan cannot run in the mode
    interval: str

    def recorded(self) -> dict[str, str]:
        """The plan ``config`` entries of this decision (none when the mode was not asked for)."""
        if self.mode == "OFF":
            return {}
        out = {MODE_KEY: self.mode, ENABLED_KEY: str(self.enabled).lower(), INTERVAL_KEY: self.interval}
        if self.blocker:
            out[BLOCKED_BY_KEY] = self.blocker
        return out


def enabled(plan_config: dict[str, Any]) -> bool:
    """Whether the plan's recorded decision is to run in the mode."""
    return str(plan_config.get(ENABLED_KEY)) == "true"


def decide_real_time(sinks: list[X.Sink], config: dict[str, str]) -> RealTimeDecision:
    """The decision for a plan's sinks under ``config``; ``REQUIRED`` with a blocker is an ``UnsupportedQueryError``
    naming the node, raised here so that ``compile`` and ``EXPLAIN`` refuse before anything runs."""
    mode = REAL_TIME.parse(config.get(MODE_KEY, REAL_TIME.default or "OFF"))
    interval = str(config.get(INTERVAL_KEY, REAL_TIME_CHECKPOINT_INTERVAL.default))
    REAL_TIME_CHECKPOINT_INTERVAL.parse(interval)  # a malformed duration fails at compile time, with the key
    if mode == "OFF":
        return RealTimeDecision(mode, False, None, interval)
    blocker = first_blocker(sinks)
    if blocker is not None and mode == "REQUIRED":
        raise UnsupportedQueryError(
            f"'{MODE_KEY}' = 'REQUIRED', but this plan cannot run in Real-time Mode: {blocker}",
            hint=f"SET '{MODE_KEY}' = 'AUTO' to run it in micro-batches instead, or change that part of the query "
                 "(docs/real-time-mode.md lists what the mode can run)")
    return RealTimeDecision(mode, blocker is None, blocker, interval)


def first_blocker(sinks: list[X.Sink]) -> str | None:
    """The first node, in plan order, that keeps the plan out of Real-time Mode, with the reason; None if none."""
    if len(sinks) != 1:
        return (f"a statement set of {len(sinks)} sinks (their shared query writes per micro-batch); "
                "one INSERT per job can run in the mode")
    for position, node in enumerate(topological(list(sinks)), start=1):
        reason = _reason(node)
        if reason is not None:
            return f"#{position} {node.description or node.type_name}: {reason}"
    return None


def _reason(node: ExecNode) -> str | None:
    if isinstance(node, X.TableSourceScan):
        connector = _connector(node.table)
        return None if connector == "kafka" else (
            f"its connector '{connector}' is not a Real-time Mode source (Kafka is)")
    if isinstance(node, X.Sink):
        connector = _connector(node.table)
        if connector not in ("kafka", "upsert-kafka"):
            return f"its connector '{connector}' is not a Real-time Mode sink here (kafka and upsert-kafka are)"
        if connector == "kafka" and node.inputs and node.inputs[0].changelog_mode != INSERT_ONLY:
            return "it receives updates, which a 'kafka' sink writes as a changelog per micro-batch; 'upsert-kafka' " \
                   "writes them in the mode"
        return None
    if isinstance(node, X.GroupAggregate):
        return None if node.strategy == NATIVE else (
            f"it runs on the {node.strategy} strategy; only Spark's native update-mode aggregation is mapped onto "
            "the mode yet")
    if isinstance(node, X.Calc):
        udf = _user_function(node)
        return None if udf is None else (
            f"it calls the user function {udf}, which Spark runs outside the real-time pipeline")
    if isinstance(node, _STATELESS):
        return None
    if isinstance(node, X.WatermarkAssigner):
        return ("a WATERMARK: its end-of-input control stream is a file source, which the mode cannot read, and "
                "event-time timers do not fire in it")
    return "this operator is not mapped onto Spark's Real-time Mode operators yet"


def _user_function(calc: X.Calc) -> str | None:
    """The first user-defined (catalog or temporary system) function a Calc calls; an explicit stack, because
    generated SQL nests expressions thousands deep."""
    stack: list[Any] = [*calc.projection, *([calc.condition] if calc.condition is not None else [])]
    while stack:
        expr = stack.pop()
        if isinstance(expr, Call) and (expr.function.catalog_identifier or expr.function.system):
            return expr.function.catalog_identifier or expr.function.name
        stack.extend(expr.children())
    return None


def _connector(table: X.TableSpec) -> str | None:
    options: dict[str, Any] = table.resolved.options if table.resolved is not None else {}
    return options.get("connector")
