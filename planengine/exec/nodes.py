"""The exec node catalogue (FLIP-190): one class per node family, each registered by name and version.

Fields marked with ``json_field`` are the node's plan JSON; everything a translator needs must be here,
because a restored plan is never re-planned. Options a node reads at run time are listed in its
``consumed_options`` and frozen into ``configuration`` at compile time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planengine.catalog.objects import TableRef
from planengine.config import options as O
from planengine.exec.base import (
    BOOL,
    INT,
    INTS,
    STR,
    Codec,
    ExecNode,
    ExecNodeMetadata,
    exec_node,
    json_field,
    of_expr_json,
    of_json,
    optional,
    tuple_of,
)
from planengine.exec.specs import AbilitySpec, specs_from_json, specs_to_json
from planengine.ir.aggregates import AggregateCall
from planengine.ir.expressions import Expr, Literal
from planengine.ir.sorting import SortKey
from planengine.ir.types import parse_type
from planengine.ir.windows import GroupWindow, OverFrame, WindowSpec

EXPR = Codec(lambda e, ctx: e.to_json(ctx.exprs), lambda d, ctx: Expr.from_json(d, ctx.exprs))
OPT_EXPR = optional(EXPR)
EXPRS = tuple_of(EXPR)
AGGS = tuple_of(of_expr_json(AggregateCall))
SORT_KEYS = tuple_of(of_json(SortKey))
WINDOW = of_json(WindowSpec)
OPT_INT = optional(INT)
ROWS = tuple_of(tuple_of(EXPR))

# Consumed options are declared in the option registry (planengine.config.options) with the defaults plans freeze.
STATE_TTL = O.STATE_TTL.key
MINI_BATCH = (O.MINI_BATCH_ENABLED.key, O.MINI_BATCH_LATENCY.key, O.MINI_BATCH_SIZE.key)


def _meta(name: str, version: int = 1, consumed: tuple[str, ...] = (), operators: tuple[str, ...] = (),
          min_plan: str = "0.1", min_state: str = "0.1") -> ExecNodeMetadata:
    return ExecNodeMetadata(f"stream-exec-{name}", version, consumed, operators, min_plan, min_state)


@dataclass(frozen=True)
class TableSpec:
    """A table as a plan stores it: identifier plus (depending on the compile strategy) schema and options.

    ``resolved`` is filled at compile time from the catalog; how much of it the plan stores, and where restore
    takes the rest from, is the catalog-object strategies' business (``planengine.plan.catalog_objects``),
    handed to the node's codec through ``NodeJson``.
    """

    identifier: str
    resolved: TableRef | None = None
    temporary: bool = False


TABLE = Codec(lambda t, ctx: ctx.table_to_json(t), lambda d, ctx: ctx.table_from_json(d))
SPECS = Codec(lambda specs, ctx: specs_to_json(specs, ctx.exprs), lambda d, ctx: tuple(specs_from_json(d, ctx.exprs)))


# --- sources, sinks, stateless ---------------------------------------------------------------------------
@exec_node(_meta("table-source-scan", operators=("source",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class TableSourceScan(ExecNode):
    table: TableSpec = json_field("table", TABLE)
    abilities: tuple[AbilitySpec, ...] = json_field("abilities", SPECS, (), omit_empty=True)


@exec_node(_meta("calc"))
@dataclass(frozen=True, eq=False, kw_only=True)
class Calc(ExecNode):
    projection: tuple[Expr, ...] = json_field("projection", EXPRS)
    condition: Expr | None = json_field("condition", OPT_EXPR, None, omit_empty=True)


@exec_node(_meta("expand"))
@dataclass(frozen=True, eq=False, kw_only=True)
class Expand(ExecNode):
    """GROUPING SETS: each input row once per projection (the grouping-set id ``$e`` is one of the fields)."""

    projects: tuple[tuple[Expr, ...], ...] = json_field("projects", ROWS)


@exec_node(_meta("values", operators=("values",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class Values(ExecNode):
    tuples: tuple[tuple[Literal, ...], ...] = json_field("tuples", ROWS)


@exec_node(_meta("union"))
@dataclass(frozen=True, eq=False, kw_only=True)
class Union(ExecNode):
    pass


@exec_node(_meta("exchange"))
@dataclass(frozen=True, eq=False, kw_only=True)
class Exchange(ExecNode):
    pass


WATERMARK_OPTIONS = (O.SOURCE_IDLE_TIMEOUT.key, O.AUTO_WATERMARK_INTERVAL.key)


@exec_node(_meta("watermark-assigner", consumed=WATERMARK_OPTIONS[:1], operators=("watermark-assigner",)),
           # Version 2: per-record watermarks inside a micro-batch (runtime/operators/record_watermark.py) when
           # ``perRecordWatermark`` is set (planner/per_record_watermarks.py: an event-time operator downstream
           # judges lateness per row); version 1 keeps one watermark per micro-batch for its plans.
           _meta("watermark-assigner", 2, consumed=WATERMARK_OPTIONS, operators=("watermark-assigner",)),
           # Version 3: version 2's JSON; CURRENT_WATERMARK's replay of the assigner below it (a Calc's
           # transformWithState, runtime/operators/window_watermark.py) keeps its state with the versioned state
           # codec instead of pickles.
           _meta("watermark-assigner", 3, consumed=WATERMARK_OPTIONS, operators=("watermark-assigner",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class WatermarkAssigner(ExecNode):
    rowtime_field: int = json_field("rowtimeFieldIndex", INT)
    watermark: Expr = json_field("watermarkExpr", EXPR)
    per_record: bool = json_field("perRecordWatermark", BOOL, False, omit_empty=True)


@exec_node(_meta("sink", consumed=(O.SINK_NOT_NULL_ENFORCER.key, O.SINK_UPSERT_MATERIALIZE.key,
                                    STATE_TTL), operators=("sink", "upsert-materializer")),
           # Version 2: same JSON, the upsert materializer on the JVM (runtime/jvm/changelog_processors.py): typed
           # state.
           _meta("sink", 2, consumed=(O.SINK_NOT_NULL_ENFORCER.key, O.SINK_UPSERT_MATERIALIZE.key,
                                      STATE_TTL), operators=("sink", "upsert-materializer")))
@dataclass(frozen=True, eq=False, kw_only=True)
class Sink(ExecNode):
    STATE_NAMES = ("materializedRows",)
    table: TableSpec = json_field("table", TABLE)
    abilities: tuple[AbilitySpec, ...] = json_field("abilities", SPECS, (), omit_empty=True)
    upsert_materialize: bool = json_field("requireUpsertMaterialize", BOOL, False)
    upsert_keys: tuple[int, ...] = json_field("upsertKeys", INTS, (), omit_empty=True)
    # Positions of the sink table's persisted columns that the input fills, in input order.
    target_columns: tuple[int, ...] = json_field("targetColumns", INTS, (), omit_empty=True)


@exec_node(_meta("correlate", operators=("correlate",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class Correlate(ExecNode):
    join_type: str = json_field("joinType", STR)
    invocation: Expr = json_field("invocation", EXPR)  # the UNNEST operand, or the table-function call
    with_ordinality: bool = json_field("withOrdinality", BOOL, False)
    table_function: bool = json_field("tableFunction", BOOL, False, omit_empty=True)
    condition: Expr | None = json_field("condition", OPT_EXPR, None, omit_empty=True)


@exec_node(_meta("drop-update-before"))
@dataclass(frozen=True, eq=False, kw_only=True)
class DropUpdateBefore(ExecNode):
    pass


# --- aggregations -------------------------------------------------------------------------------------------
@exec_node(_meta("group-aggregate", consumed=(STATE_TTL, *MINI_BATCH), operators=("group-aggregate",)),
           # Version 2: a new strategy — Spark's native update-mode aggregation where it is exactly Flink, TWS
           # elsewhere, recorded in "strategy" (planengine.plan.strategies); version 1 stays TWS for its plans.
           _meta("group-aggregate", 2, consumed=(STATE_TTL, *MINI_BATCH), operators=("group-aggregate",)),
           # Version 3: a new strategy — the JVM processor (runtime/jvm/group_aggregate_processor.py) wherever version 2
           # runs on the Python TWS operator, except Python aggregate functions; native stays native (with the
           # aggregate library's forms). Recorded in "strategy" too (NATIVE | JVM | TRANSFORM_WITH_STATE).
           _meta("group-aggregate", 3, consumed=(STATE_TTL, *MINI_BATCH), operators=("group-aggregate",)),
           # Version 4: version 3's JSON and strategies; on TRANSFORM_WITH_STATE (Python aggregate functions) the
           # functions' accumulators are kept as the versioned state codec's tagged JSON instead of pickles.
           _meta("group-aggregate", 4, consumed=(STATE_TTL, *MINI_BATCH), operators=("group-aggregate",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class GroupAggregate(ExecNode):
    STATE_NAMES = ("accumulators", "distinctValues")
    grouping: tuple[int, ...] = json_field("grouping", INTS)
    aggregates: tuple[AggregateCall, ...] = json_field("aggCalls", AGGS)
    need_retraction: bool = json_field("needRetraction", BOOL, False)
    generate_update_before: bool = json_field("generateUpdateBefore", BOOL, True)
    # NATIVE | TRANSFORM_WITH_STATE, chosen at compile time (version 2 only; absent from plans written before
    # it was recorded, where restore fills it with the same rule).
    strategy: str | None = json_field("strategy", optional(STR), None, omit_empty=True)


@exec_node(_meta("window-table-function", operators=("window-assigner",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class WindowTableFunction(ExecNode):
    window: WindowSpec = json_field("windowing", WINDOW)


@exec_node(_meta("window-aggregate", consumed=(STATE_TTL, O.LOCAL_TIME_ZONE.key),
                 operators=("window-aggregate",)),
           # Version 2: same JSON, the aggregate library's native forms (runtime/operators/aggregates/library.py:
           # integer sums wrap like Flink's instead of failing, VAR/STDDEV as Flink reduces them): new state.
           _meta("window-aggregate", 2, consumed=(STATE_TTL, O.LOCAL_TIME_ZONE.key),
                 operators=("window-aggregate",)),
           # Version 3: same JSON, SESSION windows over other keys than the grouping on the JVM processor
           # (runtime/jvm/session_window_processor.py: typed state, new layout) unless a call has no JVM accumulator.
           _meta("window-aggregate", 3, consumed=(STATE_TTL, O.LOCAL_TIME_ZONE.key),
                 operators=("window-aggregate",)),
           # Version 4: version 3's JSON and operators; a session left on the Python operator (a Python aggregate
           # function) keeps its open sessions with the versioned state codec (tagged JSON) instead of pickles.
           _meta("window-aggregate", 4, consumed=(STATE_TTL, O.LOCAL_TIME_ZONE.key),
                 operators=("window-aggregate",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class WindowAggregate(ExecNode):
    """Aggregates per window; output = grouping fields, aggregates, then window_start, window_end, window_time."""

    STATE_NAMES = ("windowAccumulators",)
    grouping: tuple[int, ...] = json_field("grouping", INTS)
    aggregates: tuple[AggregateCall, ...] = json_field("aggCalls", AGGS)
    window: WindowSpec = json_field("windowing", WINDOW)


@exec_node(_meta("group-window-aggregate", consumed=(STATE_TTL,), operators=("group-window-aggregate",)),
           # Version 2: as window-aggregate_2, the aggregate library's native forms.
           _meta("group-window-aggregate", 2, consumed=(STATE_TTL,), operators=("group-window-aggregate",)),
           # Version 3: as window-aggregate_3, SESSION windows over other keys on the JVM processor.
           _meta("group-window-aggregate", 3, consumed=(STATE_TTL,), operators=("group-window-aggregate",)),
           # Version 4: as window-aggregate_4, Python sessions in the versioned state codec instead of pickles.
           _meta("group-window-aggregate", 4, consumed=(STATE_TTL,), operators=("group-window-aggregate",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class GroupWindowAggregate(ExecNode):
    STATE_NAMES = ("windowAccumulators",)
    grouping: tuple[int, ...] = json_field("grouping", INTS)
    aggregates: tuple[AggregateCall, ...] = json_field("aggCalls", AGGS)
    group_window: GroupWindow = json_field("window", Codec.plain(
        lambda w: {"spec": w.spec.to_json(), "properties": [list(p) for p in w.properties],
                   "timeType": None if w.time_type is None else str(w.time_type)},
        lambda d: GroupWindow(WindowSpec.from_json(d["spec"]), tuple(tuple(p) for p in d["properties"]),
                              None if d.get("timeType") is None else parse_type(d["timeType"]))))


@exec_node(_meta("over-aggregate", consumed=(STATE_TTL,), operators=("over-aggregate",)),
           # Version 2: same JSON, the JVM processor (runtime/jvm/over_aggregate_processor.py) for rowtime windows whose
           # calls have JVM accumulators: typed state, new layout; the rest stays on the Python operators.
           _meta("over-aggregate", 2, consumed=(STATE_TTL,), operators=("over-aggregate",)),
           # Version 3: same JSON, DISTINCT calls on the JVM processor too (a value multiset per call: unbounded
           # frames keep it in ``accumulators``), where version 2 keeps them on the Python operator.
           _meta("over-aggregate", 3, consumed=(STATE_TTL,), operators=("over-aggregate",)),
           # Version 4: same JSON, LAG on the JVM processor too (an accumulator of the last offset + 1 values),
           # and what stays on the Python operators (a Python aggregate function) keeps its state with the
           # versioned state codec (tagged JSON), where versions 1-3 pickle it.
           _meta("over-aggregate", 4, consumed=(STATE_TTL,), operators=("over-aggregate",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class OverAggregate(ExecNode):
    STATE_NAMES = ("pendingRows", "accumulators")
    partition_keys: tuple[int, ...] = json_field("partition", INTS)
    order_keys: tuple[SortKey, ...] = json_field("orderBy", SORT_KEYS)
    frame: OverFrame = json_field("frame", of_json(OverFrame))
    aggregates: tuple[AggregateCall, ...] = json_field("aggCalls", AGGS)


# --- ranking and deduplication ----------------------------------------------------------------------------
@exec_node(_meta("rank", consumed=(STATE_TTL,), operators=("rank",)),
           # Version 2: same JSON, the JVM processor (runtime/jvm/rank_processor.py): typed state, new layout.
           _meta("rank", 2, consumed=(STATE_TTL,), operators=("rank",)),
           # Version 3: the JVM processor with Flink's rank strategy recorded ("strategy": APPEND_FAST | RETRACT
           # | UPDATE_FAST with "uniqueKey"; planner/rank_strategy.py): update-fast keeps only the top rows of an
           # updating input whose sort key only moves rows up. Version 2 derives append-fast/retract at run time.
           _meta("rank", 3, consumed=(STATE_TTL,), operators=("rank",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class Rank(ExecNode):
    STATE_NAMES = ("rankedRows",)
    rank_type: str = json_field("rankType", STR)  # ROW_NUMBER | RANK | DENSE_RANK
    partition_keys: tuple[int, ...] = json_field("partition", INTS)
    order_keys: tuple[SortKey, ...] = json_field("orderBy", SORT_KEYS)
    rank_start: int = json_field("rankStart", INT, 1)
    rank_end: int = json_field("rankEnd", INT)
    output_rank_number: bool = json_field("outputRowNumber", BOOL, False)
    generate_update_before: bool = json_field("generateUpdateBefore", BOOL, True)
    # Version 3 only (planengine.plan.strategies): the rank strategy and, for UPDATE_FAST, the input's unique key.
    strategy: str | None = json_field("strategy", optional(STR), None, omit_empty=True)
    unique_key: tuple[int, ...] = json_field("uniqueKey", INTS, (), omit_empty=True)


@exec_node(_meta("deduplicate", consumed=(STATE_TTL, *MINI_BATCH), operators=("deduplicate",)),
           # Version 2: same JSON, the JVM processor (runtime/jvm/changelog_processors.py): typed state, new layout.
           _meta("deduplicate", 2, consumed=(STATE_TTL, *MINI_BATCH), operators=("deduplicate",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class Deduplicate(ExecNode):
    STATE_NAMES = ("keptRow",)
    unique_keys: tuple[int, ...] = json_field("uniqueKeys", INTS)
    is_rowtime: bool = json_field("isRowtime", BOOL)
    keep_last_row: bool = json_field("keepLastRow", BOOL)
    order_field: int = json_field("orderField", INT)
    generate_update_before: bool = json_field("generateUpdateBefore", BOOL, True)


@exec_node(_meta("window-rank", consumed=(STATE_TTL,), operators=("window-rank",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class WindowRank(ExecNode):
    STATE_NAMES = ("windowRankedRows",)
    rank_type: str = json_field("rankType", STR)
    partition_keys: tuple[int, ...] = json_field("partition", INTS)
    order_keys: tuple[SortKey, ...] = json_field("orderBy", SORT_KEYS)
    rank_start: int = json_field("rankStart", INT, 1)
    rank_end: int = json_field("rankEnd", INT)
    output_rank_number: bool = json_field("outputRowNumber", BOOL, False)
    window_start_field: int = json_field("windowStartIndex", INT)
    window_end_field: int = json_field("windowEndIndex", INT)


@exec_node(_meta("window-deduplicate", consumed=(STATE_TTL,), operators=("window-deduplicate",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class WindowDeduplicate(ExecNode):
    STATE_NAMES = ("windowKeptRow",)
    partition_keys: tuple[int, ...] = json_field("partitionKeys", INTS)
    order_field: int = json_field("orderKey", INT)
    keep_last_row: bool = json_field("keepLastRow", BOOL)
    window_start_field: int = json_field("windowStartIndex", INT)
    window_end_field: int = json_field("windowEndIndex", INT)


@exec_node(_meta("changelog-normalize", consumed=(STATE_TTL, *MINI_BATCH), operators=("changelog-normalize",)),
           # Version 2: same JSON, the JVM processor (runtime/jvm/changelog_processors.py): typed state, new layout.
           _meta("changelog-normalize", 2, consumed=(STATE_TTL, *MINI_BATCH), operators=("changelog-normalize",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class ChangelogNormalize(ExecNode):
    STATE_NAMES = ("latestRow",)
    unique_keys: tuple[int, ...] = json_field("uniqueKeys", INTS)
    generate_update_before: bool = json_field("generateUpdateBefore", BOOL, True)


# The planner's fetch for ORDER BY without LIMIT (table.exec.non-temporal-sort.enabled): a full sort, not a Top-N.
FULL_SORT_FETCH = 2147483647


@exec_node(_meta("sort-limit", consumed=(STATE_TTL, O.NON_TEMPORAL_SORT.key), operators=("sort-limit",)),
           # Version 2: same JSON, new strategy for ORDER BY without LIMIT (fetch 2147483647): Flink's
           # StreamSortOperator, sorted at the end of input (runtime/engine/translators/sort_limit.py); version 1
           # keeps the Top-N over everything for its plans.
           _meta("sort-limit", 2, consumed=(STATE_TTL, O.NON_TEMPORAL_SORT.key),
                 operators=("sort-limit",)),
           # Version 3: same JSON, the Top-N (with a fetch) on the JVM processor as a partition-less ROW_NUMBER
           # (runtime/jvm/rank_processor.py, io.planengine.jvm.ops.rank.Rank): typed topRows, new layout. The full sort
           # (no fetch) stays version 2's Python StreamSortOperator.
           _meta("sort-limit", 3, consumed=(STATE_TTL, O.NON_TEMPORAL_SORT.key),
                 operators=("sort-limit",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class SortLimit(ExecNode):
    STATE_NAMES = ("topRows",)
    order_keys: tuple[SortKey, ...] = json_field("orderBy", SORT_KEYS)
    offset: int = json_field("offset", INT, 0)
    limit: int = json_field("limit", INT)
    generate_update_before: bool = json_field("generateUpdateBefore", BOOL, True)


@exec_node(_meta("limit", consumed=(STATE_TTL,), operators=("limit",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class Limit(ExecNode):
    STATE_NAMES = ("emittedCount",)
    offset: int = json_field("offset", INT, 0)
    limit: int = json_field("limit", INT)


# Version 2 (temporal-sort, window-join_3, temporal-join_2): same JSON, the Python operator's state kept with the
# versioned state codec (runtime/operators/state_codec.py dump_state: tagged JSON text plus its format number) instead
# of pickles; the older versions keep their pickled state layout.
@exec_node(_meta("temporal-sort", operators=("temporal-sort",)),
           _meta("temporal-sort", 2, operators=("temporal-sort",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class TemporalSort(ExecNode):
    STATE_NAMES = ("bufferedRows",)
    order_keys: tuple[SortKey, ...] = json_field("orderBy", SORT_KEYS)


# --- joins ----------------------------------------------------------------------------------------------------


@exec_node(_meta("join", consumed=(STATE_TTL,), operators=("join",)),
           # Version 2: same JSON, the JVM processor (runtime/jvm/join_processor.py) unless there is a non-equi
           # condition.
           _meta("join", 2, consumed=(STATE_TTL,), operators=("join",)),
           # Version 3: same JSON and state layout as version 2, the JVM processor also for a non-equi condition
           # (evaluated there per pair of rows, runtime/jvm/join_processor.py refusal_v3); version 2 keeps such joins
           # on the Python operator for its plans.
           _meta("join", 3, consumed=(STATE_TTL,), operators=("join",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class Join(ExecNode):
    STATE_NAMES = ("leftRows", "rightRows")
    join_type: str = json_field("joinType", STR)
    left_keys: tuple[int, ...] = json_field("leftKeys", INTS)
    right_keys: tuple[int, ...] = json_field("rightKeys", INTS)
    filter_nulls: tuple[bool, ...] = json_field("filterNulls", Codec.plain(list, tuple))
    non_equi_condition: Expr | None = json_field("nonEquiCondition", OPT_EXPR, None, omit_empty=True)
    left_ttl_ms: int | None = json_field("leftStateTtlMs", OPT_INT, None, omit_empty=True)
    right_ttl_ms: int | None = json_field("rightStateTtlMs", OPT_INT, None, omit_empty=True)


@exec_node(_meta("interval-join", operators=("interval-join",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class IntervalJoin(ExecNode):
    STATE_NAMES = ("leftBuffer", "rightBuffer")
    join_type: str = json_field("joinType", STR)
    left_keys: tuple[int, ...] = json_field("leftKeys", INTS)
    right_keys: tuple[int, ...] = json_field("rightKeys", INTS)
    non_equi_condition: Expr | None = json_field("nonEquiCondition", OPT_EXPR, None, omit_empty=True)
    is_event_time: bool = json_field("isEventTime", BOOL)
    left_time_field: int = json_field("leftTimeIndex", INT)
    right_time_field: int = json_field("rightTimeIndex", INT)
    # right.time - lower <= left.time <= right.time + upper, in milliseconds (Flink's leftLowerBound etc.)
    left_lower_bound_ms: int = json_field("leftLowerBound", INT)
    left_upper_bound_ms: int = json_field("leftUpperBound", INT)


@exec_node(_meta("window-join", operators=("window-join",)),
           # Version 2: same JSON, Flink's strategy on transformWithState (runtime/operators/window_join.py):
           # everything of a window is emitted when the watermark reaches its end, late rows are dropped, all
           # join types incl. anti; version 1 keeps Spark's stream-stream join for its plans.
           _meta("window-join", 2, operators=("window-join",)),
           # Version 3: same JSON, version 2's operator with its state kept by the versioned state codec.
           _meta("window-join", 3, operators=("window-join",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class WindowJoin(ExecNode):
    STATE_NAMES = ("leftWindowRows", "rightWindowRows")
    join_type: str = json_field("joinType", STR)
    left_keys: tuple[int, ...] = json_field("leftKeys", INTS)
    right_keys: tuple[int, ...] = json_field("rightKeys", INTS)
    non_equi_condition: Expr | None = json_field("nonEquiCondition", OPT_EXPR, None, omit_empty=True)
    left_window: WindowSpec = json_field("leftWindowing", WINDOW)
    right_window: WindowSpec = json_field("rightWindowing", WINDOW)
    left_window_fields: tuple[int, ...] = json_field("leftWindowStartEnd", INTS)
    right_window_fields: tuple[int, ...] = json_field("rightWindowStartEnd", INTS)


@exec_node(_meta("lookup-join", consumed=(O.ASYNC_LOOKUP_CAPACITY.key, O.ASYNC_LOOKUP_TIMEOUT.key),
                 operators=("lookup-join",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class LookupJoin(ExecNode):
    join_type: str = json_field("joinType", STR)
    table: TableSpec = json_field("temporalTable", TABLE)
    # lookup key: dimension-table column index -> left field index (or a constant)
    lookup_keys: tuple[tuple[int, Any], ...] = json_field("lookupKeys", Codec(
        lambda pairs, ctx: [{"tableField": k, **({"inputField": v} if isinstance(v, int)
                                                 else {"constant": v.to_json(ctx.exprs)})} for k, v in pairs],
        lambda data, ctx: tuple((d["tableField"], d["inputField"] if "inputField" in d
                                 else Expr.from_json(d["constant"], ctx.exprs)) for d in data)))
    remaining_condition: Expr | None = json_field("joinCondition", OPT_EXPR, None, omit_empty=True)
    projection_on_table: tuple[int, ...] = json_field("projectionOnTemporalTable", INTS, (), omit_empty=True)


@exec_node(_meta("temporal-join", consumed=(STATE_TTL,), operators=("temporal-join",)),
           # Version 2: same JSON, its state kept by the versioned state codec (see temporal-sort).
           _meta("temporal-join", 2, consumed=(STATE_TTL,), operators=("temporal-join",)))
@dataclass(frozen=True, eq=False, kw_only=True)
class TemporalJoin(ExecNode):
    STATE_NAMES = ("leftPending", "rightVersions")
    join_type: str = json_field("joinType", STR)
    left_keys: tuple[int, ...] = json_field("leftKeys", INTS)
    right_keys: tuple[int, ...] = json_field("rightKeys", INTS)
    non_equi_condition: Expr | None = json_field("nonEquiCondition", OPT_EXPR, None, omit_empty=True)
    left_time_field: int = json_field("leftTimeAttributeIndex", INT)
    right_time_field: int | None = json_field("rightTimeAttributeIndex", OPT_INT, None)
    is_event_time: bool = json_field("isEventTime", BOOL, True)


