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
from planengine.config.values import parse_duration_ms
from planengine.errors import UnsupportedQueryError, ValidationError
from planengine.exec import nodes as X
from planengine.exec.base import ExecNode, topological
from planengine.ir.expressions import Call
from planengine.plan.strategies import JVM, NATIVE, state_type_refusal

MODE_KEY = REAL_TIME.key
INTERVAL_KEY = REAL_TIME_CHECKPOINT_INTERVAL.key
# The decision itself, next to the two options it was made from: plan fields, not options (nobody sets them).
ENABLED_KEY = "realTimeEnabled"
BLOCKED_BY_KEY = "realTimeBlockedBy"
_STATELESS = (X.Exchange, X.Union, X.DropUpdateBefore)
STATE_TTL_KEY = "table.exec.state.ttl"
_STATEFUL = (X.GroupAggregate, X.Deduplicate, X.Rank, X.Join, X.ChangelogNormalize)
_UNIONS = (X.Union, X.Join)
# Spark 4.3's default spark.sql.streaming.realTimeMode.minBatchDuration: a shorter interval fails the query's start.
SPARK_MIN_BATCH_KEY = "spark.sql.streaming.realTimeMode.minBatchDuration"
MIN_INTERVAL_MS = 5_000
# The first Spark release with the mode (``DataStreamWriter.trigger(realTime=...)``).
FIRST_SPARK = (4, 3)


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


def spark_lacks_mode(spark_version: str) -> str | None:
    """Why a Spark of ``spark_version`` cannot run a plan decided into the mode, or None when it can.

    >>> spark_lacks_mode("4.3.0"), spark_lacks_mode("4.2.1")
    (None, 'its Spark 4.2.1 has no Real-time Mode (Spark 4.3 added it)')
    """
    try:
        major_minor = tuple(int(part) for part in spark_version.split(".")[:2])
    except ValueError:
        return f"its Spark version {spark_version!r} cannot be read"
    if major_minor >= FIRST_SPARK:
        return None
    return f"its Spark {spark_version} has no Real-time Mode (Spark {'.'.join(map(str, FIRST_SPARK))} added it)"


def decide_real_time(sinks: list[X.Sink], config: dict[str, str]) -> RealTimeDecision:
    """The decision for a plan's sinks under ``config``; ``REQUIRED`` with a blocker is an ``UnsupportedQueryError``
    naming the node, raised here so that ``compile`` and ``EXPLAIN`` refuse before anything runs."""
    mode = REAL_TIME.parse(config.get(MODE_KEY, REAL_TIME.default or "OFF"))
    interval = str(config.get(INTERVAL_KEY, REAL_TIME_CHECKPOINT_INTERVAL.default))
    REAL_TIME_CHECKPOINT_INTERVAL.parse(interval)  # a malformed duration fails at compile time, with the key
    if mode == "OFF":
        return RealTimeDecision(mode, False, None, interval)
    if parse_duration_ms(interval) < MIN_INTERVAL_MS:  # Spark refuses it only when the query starts
        raise ValidationError(
            f"'{INTERVAL_KEY}' = '{interval}' is shorter than Spark's minimum real-time batch of "
            f"{MIN_INTERVAL_MS // 1000} s ('{SPARK_MIN_BATCH_KEY}')",
            hint=f"set '{INTERVAL_KEY}' to '{MIN_INTERVAL_MS // 1000} s' or more: it is how much input a restart "
                 "replays, not a latency (records stream out as they arrive)")
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
    stateful_upstream: dict[int, bool] = {}  # id(node) -> a stateful node is at or above it
    for position, node in enumerate(topological(list(sinks)), start=1):
        reason = _reason(node)
        above = any(stateful_upstream[id(i)] for i in node.inputs)
        if reason is None and above and isinstance(node, _UNIONS):
            reason = ("a stateful operator runs before it, and Spark's real-time mode runs none before a union (a "
                      "join's processor reads its two sides as one union)")
        if reason is not None:
            return f"#{position} {node.description or node.type_name}: {reason}"
        stateful_upstream[id(node)] = above or isinstance(node, _STATEFUL)
    return None


def _reason(node: ExecNode) -> str | None:
    if isinstance(node, X.TableSourceScan):
        connector = _connector(node.table)
        return None if connector in ("kafka", "upsert-kafka") else (
            f"its connector '{connector}' is not a Real-time Mode source (kafka and upsert-kafka are)")
    if isinstance(node, X.Sink):
        connector = _connector(node.table)
        if connector not in ("kafka", "upsert-kafka"):
            return f"its connector '{connector}' is not a Real-time Mode sink here (kafka and upsert-kafka are)"
        # Updates reach a 'kafka' sink only in a changelog format (debezium-json, changelog-json: the planner
        # refuses others), which encodes each row as one record, as upsert-kafka does: a projection in the mode.
        return None
    if isinstance(node, X.GroupAggregate):
        if node.strategy == NATIVE:
            return None
        if node.strategy == JVM:
            return _jvm_processor_reason(node)
        return (f"it runs on the {node.strategy} strategy, a Python operator, which Spark runs outside the "
                "real-time pipeline")
    if isinstance(node, X.Join):
        return _join_reason(node)
    if isinstance(node, (X.Deduplicate, X.Rank, X.ChangelogNormalize)):
        if node.metadata.version < 2:
            return "version 1 runs on the Python transformWithState operator, outside the real-time pipeline"
        refusal = state_type_refusal(node.inputs[0].field_types) if node.inputs else None
        return (f"its rows stay on the Python operator ({refusal}), outside the real-time pipeline" if refusal
                else _jvm_processor_reason(node))
    if isinstance(node, X.Calc):
        udf = _user_function([*node.projection, *([node.condition] if node.condition is not None else [])])
        return None if udf is None else (
            f"it calls the user function {udf}, which Spark runs outside the real-time pipeline")
    if isinstance(node, _STATELESS):
        return None
    if isinstance(node, X.WatermarkAssigner):
        return ("a WATERMARK: its end-of-input control stream is a file source, which the mode cannot read, and "
                "event-time timers do not fire in it")
    return "this operator is not mapped onto Spark's Real-time Mode operators yet"


def _join_reason(join: X.Join) -> str | None:
    """A regular join runs in the mode on its JVM processor (``runtime/jvm/join_processor.py``: version 2 for
    equi-joins, version 3 also with a non-equi condition, unless it calls a user function), which uses no timers."""
    if join.metadata.version < 2:
        return "version 1 runs on the Python transformWithState operator, outside the real-time pipeline"
    if join.non_equi_condition is not None:
        if join.metadata.version < 3:
            return "its non-equi condition keeps version 2 on the Python operator, outside the real-time pipeline"
        user = _user_function([join.non_equi_condition])
        if user is not None:
            return f"its condition calls the user function {user}, which keeps it on the Python operator"
    for side, side_input in zip(("left", "right"), join.inputs, strict=False):
        refusal = state_type_refusal(side_input.field_types, f"{side} input")
        if refusal is not None:
            return f"its rows stay on the Python operator ({refusal}), outside the real-time pipeline"
    if join.left_ttl_ms or join.right_ttl_ms:
        return "its state has a TTL, which is not run in the mode yet"
    return _jvm_processor_reason(join)


def _jvm_processor_reason(node: ExecNode) -> str | None:
    """Why a node on a JVM ``transformWithState`` processor cannot run in the mode, or None. The processors of
    aggregates and deduplication use no timers (``TimeMode.None``), which Spark's allowlist admits; state TTL is
    kept out until it is tested in the mode (its clock is the batch's, and a real-time batch is long)."""
    ttl = max((s.ttl_ms for s in node.state), default=0) or parse_duration_ms(
        dict(node.configuration).get(STATE_TTL_KEY, "0 ms") or "0 ms")
    if ttl:
        return "its state has a TTL ('table.exec.state.ttl' or a STATE_TTL hint), which is not run in the mode yet"
    return None


def _user_function(exprs: list[Any]) -> str | None:
    """The first user-defined (catalog or temporary system) function ``exprs`` call; an explicit stack, because
    generated SQL nests expressions thousands deep."""
    stack: list[Any] = list(exprs)
    while stack:
        expr = stack.pop()
        if isinstance(expr, Call) and (expr.function.catalog_identifier or expr.function.system):
            return expr.function.catalog_identifier or expr.function.name
        stack.extend(expr.children())
    return None


def _connector(table: X.TableSpec) -> str | None:
    options: dict[str, Any] = table.resolved.options if table.resolved is not None else {}
    return options.get("connector")
