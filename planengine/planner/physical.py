"""Physical conversion: logical nodes → exec nodes, choosing the streaming operator for each pattern.

The choices mirror Flink's streaming planner: an aggregate over a window TVF becomes a window aggregate,
``ROW_NUMBER() … WHERE rn <= N`` a Top-N (or a deduplication when it keeps the first/last row by a time
attribute), a join bounded in time an interval join, a join on ``window_start``/``window_end`` of two window
TVFs a window join, and ``FOR SYSTEM_TIME AS OF`` a lookup join (processing time, lookup source) or a
temporal join (event time, versioned table). Changelog modes are not decided here: that is the next phase
(``planengine.planner.changelog``), done once for the whole DAG.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field, replace

from planengine.connectors import base as conn
from planengine.connectors.options import parse_duration_ms
from planengine.errors import UnsupportedQueryError, ValidationError
from planengine.exec import nodes as X
from planengine.exec.base import ExecNode, InputProperty, StateDeclaration
from planengine.functions.registry import FunctionRegistry
from planengine.ir.aggregates import AggregateCall
from planengine.ir.expressions import (
    Call,
    Expr,
    FunctionRef,
    InputRef,
    Literal,
    conjunctions,
    input_refs,
)
from planengine.ir.types import BOOLEAN, DataType, RowField, TimeAttribute, row
from planengine.ir.windows import WindowSpec
from planengine.planner import logical as L
from planengine.planner.connectors import ConnectorMap, create_sink, create_source
from planengine.planner.join_keys import push_key_expressions
from planengine.planner.rex_converter import convert_expression
from planengine.planner.source_metadata import reading_metadata
from planengine.sql import parse_expression

_RANK_FUNCTIONS = ("ROW_NUMBER", "RANK", "DENSE_RANK")


@dataclass
class PhysicalContext:
    registry: FunctionRegistry
    config: dict[str, str] = field(default_factory=dict)

    def state_ttl_ms(self, override: int | None = None) -> int:
        if override is not None:
            return override

        return parse_duration_ms(self.config.get("table.exec.state.ttl", "0 ms"))


class PhysicalConverter:
    def __init__(self, ctx: PhysicalContext):
        self.ctx = ctx
        self.memo: dict[int, ExecNode] = {}
        self._sources: dict[X.TableSpec, conn.DynamicTableSource] = {}
        self._sinks: dict[X.TableSpec, conn.DynamicTableSink] = {}

    def convert_sinks(self, sinks: list[L.LogicalSink]) -> tuple[list[X.Sink], ConnectorMap]:
        """The exec DAG of a statement set and the connectors of its scans and sinks."""
        converted = [self.convert(s) for s in sinks]
        return converted, ConnectorMap(dict(self._sources), dict(self._sinks))  # type: ignore[return-value]

    def convert(self, node: L.LogicalNode) -> ExecNode:
        key = id(node)
        if key not in self.memo:
            self.memo[key] = self._convert(node)
        return self.memo[key]

    def _convert(self, node: L.LogicalNode) -> ExecNode:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise UnsupportedQueryError(f"no streaming operator for {type(node).__name__}")
        return method(node)

    # --- state helpers ----------------------------------------------------------------------------------
    def _state(self, cls: type[ExecNode], ttl_override: int | None = None, distinct: bool = True
               ) -> tuple[StateDeclaration, ...]:
        """The node's named state variables (only those it uses: no distinct-value map without DISTINCT)."""
        ttl = self.ctx.state_ttl_ms(ttl_override)
        return tuple(StateDeclaration(name, ttl) for name in cls.STATE_NAMES
                     if distinct or not name.startswith("distinct"))

    # --- leaves -----------------------------------------------------------------------------------------
    def _LogicalScan(self, node: L.LogicalScan) -> ExecNode:
        ref = node.table
        schema = ref.table.schema
        table = X.TableSpec(str(ref.identifier), ref, ref.temporary)
        source = self._sources.setdefault(table, create_source(ref, self.ctx.config))
        physical_fields = [c for c in schema.columns if c.kind != "computed"]
        produced = node.produced_type or row(*(RowField(c.name, c.type.without_time_attribute())
                                               for c in physical_fields))
        abilities = node.ability_specs
        metadata = reading_metadata(ref.identifier, schema, source) if node.produced_type is None else None
        if metadata is not None:  # physical columns, then the metadata keys: projected back below
            produced, abilities = metadata.produced_type, (*abilities, metadata.spec)
            source.apply_readable_metadata(list(metadata.spec.metadata_keys), produced)
        scan: ExecNode = X.TableSourceScan(
            inputs=(), output_type=produced, table=table,
            abilities=abilities, description=f"TableSourceScan(table=[{ref.identifier.name}])",
        )
        if node.produced_type is not None:
            return scan
        # Computed columns (and METADATA columns in their declared places) and the rowtime marker, then the
        # watermark.
        computed = [c for c in schema.columns if c.kind == "computed"]
        rowtime = schema.watermark_specs[0].rowtime_attribute if schema.watermark_specs else None
        positions = metadata.positions if metadata is not None else {f.name: i for i, f in enumerate(produced.fields)}
        if rowtime and not computed and metadata is None:
            # The rowtime marker is part of the scan's output type; no Calc is needed.
            marked = [RowField(f.name, f.type.with_time_attribute(TimeAttribute.ROWTIME) if f.name == rowtime
                               else f.type) for f in produced.fields]
            scan = X.TableSourceScan(inputs=(), output_type=row(*marked), table=scan.table,  # type: ignore[attr-defined]
                                     abilities=node.ability_specs, description=scan.description)
        elif computed or metadata is not None:
            scope = _FieldScope([f.name for f in produced.fields], produced.field_names(), list(produced.fields))
            exprs: list[Expr] = []
            names = []
            for c in schema.columns:
                if c.kind == "computed":
                    e = convert_expression(_parse(c.expression or ""), scope, self.ctx.registry)
                else:
                    i = positions[c.name]
                    e = InputRef(i, produced.fields[i].type)
                    declared = c.type.without_time_attribute().with_nullable(True)
                    if c.kind == "metadata" and e.type.without_time_attribute().with_nullable(True) != declared:
                        e = self._cast(e, c.type.without_time_attribute())  # the declared type, as Flink casts
                if c.name == rowtime:
                    e = _mark_rowtime(e)
                elif c.type.is_proctime and not e.type.is_proctime:
                    e = _retype(e, c.type)
                exprs.append(e)
                names.append(c.name)
            out_type = row(*(RowField(n, e.type) for n, e in zip(names, exprs)))
            scan = X.Calc(inputs=(scan,), output_type=out_type, projection=tuple(exprs), condition=None,
                          description="Calc(computed columns)")
        if schema.watermark_specs:
            spec = schema.watermark_specs[0]
            scope = _FieldScope(scan.field_names, scan.field_names, list(scan.output_type.fields))
            wm = convert_expression(_parse(spec.expression), scope, self.ctx.registry)
            idx = scan.field_names.index(spec.rowtime_attribute)
            scan = X.WatermarkAssigner(inputs=(scan,), output_type=scan.output_type, rowtime_field=idx,
                                       watermark=wm, description=f"WatermarkAssigner(rowtime=[{spec.rowtime_attribute}]"
                                                                 f", watermark=[{wm}])")
        return scan

    def _cast(self, e: Expr, target: DataType) -> Expr:
        cast = self.ctx.registry.resolve("CAST")
        assert cast is not None, "CAST is a built-in function"
        return Call(FunctionRef(cast.name, cast.version), (e,), target.with_nullable(e.type.nullable))

    def _LogicalValues(self, node: L.LogicalValues) -> ExecNode:
        return X.Values(inputs=(), output_type=node.row_type, tuples=node.rows, description="Values")

    def _LogicalCalc(self, node: L.LogicalCalc) -> ExecNode:
        ranked = self._rank_pattern(node)
        if ranked is not None:
            return ranked
        child = self.convert(node.input)
        return X.Calc(inputs=(child,), output_type=node.row_type, projection=node.projection,
                      condition=node.condition, description=f"Calc({node.explain_terms()})")

    def _LogicalExpand(self, node: L.LogicalExpand) -> ExecNode:
        return X.Expand(inputs=(self.convert(node.input),), output_type=node.row_type, projects=node.projects,
                        description=f"Expand({node.explain_terms()})")

    def _LogicalUnion(self, node: L.LogicalUnion) -> ExecNode:
        if not node.all:
            raise UnsupportedQueryError("UNION without ALL must be planned as an aggregate")
        return X.Union(inputs=tuple(self.convert(i) for i in node.inputs), output_type=node.row_type,
                       description="Union(all=[true])")

    def _LogicalWatermarkAssigner(self, node: L.LogicalWatermarkAssigner) -> ExecNode:
        return X.WatermarkAssigner(inputs=(self.convert(node.input),), output_type=node.row_type,
                                   rowtime_field=node.rowtime_field, watermark=node.watermark)

    def _LogicalWindowTableFunction(self, node: L.LogicalWindowTableFunction) -> ExecNode:
        return X.WindowTableFunction(inputs=(self.convert(node.input),), output_type=node.row_type,
                                     window=node.window, description=f"WindowTableFunction({node.window})")

    def _LogicalCorrelate(self, node: L.LogicalCorrelate) -> ExecNode:
        return X.Correlate(inputs=(self.convert(node.input),), output_type=node.row_type, join_type=node.kind,
                           invocation=node.unnest, with_ordinality=node.with_ordinality,
                           table_function=node.table_function,
                           description=f"Correlate({node.explain_terms()})")

    # --- aggregation ------------------------------------------------------------------------------------------
    def _LogicalAggregate(self, node: L.LogicalAggregate) -> ExecNode:
        if node.group_window is not None:
            child = self.convert(node.input)
            return X.GroupWindowAggregate(
                inputs=(child,), output_type=node.row_type, grouping=node.group_keys, aggregates=node.aggregates,
                group_window=node.group_window, state=self._state(X.GroupWindowAggregate, node.state_ttl_ms),
                input_properties=(_hash(node.group_keys),),
                description=f"GroupWindowAggregate({node.explain_terms()})",
            )
        windowed = self._window_aggregate(node)
        if windowed is not None:
            return windowed
        child = self.convert(node.input)
        return X.GroupAggregate(
            inputs=(child,), output_type=node.row_type, grouping=node.group_keys, aggregates=node.aggregates,
            state=self._state(X.GroupAggregate, node.state_ttl_ms, distinct=any(a.distinct for a in node.aggregates)),
            input_properties=(_hash(node.group_keys),),
            description=f"GroupAggregate({node.explain_terms()})",
        )

    def _window_aggregate(self, node: L.LogicalAggregate) -> ExecNode | None:
        """Aggregate(Calc(WindowTVF(t))) grouped by window_start, window_end → WindowAggregate over t."""
        calc = node.input
        if not isinstance(calc, L.LogicalCalc) or not isinstance(calc.input, L.LogicalWindowTableFunction):
            return None
        tvf = calc.input
        n = len(tvf.input.field_names)
        ws, we, wt = n, n + 1, n + 2
        key_targets = {}
        for pos, k in enumerate(node.group_keys):
            e = calc.projection[k]
            if isinstance(e, InputRef) and e.index in (ws, we, wt):
                key_targets[pos] = e.index
        if ws not in key_targets.values() or we not in key_targets.values():
            return None
        # Every other expression must read only the TVF's input columns.
        others = [i for i in range(len(calc.projection)) if i not in {node.group_keys[p] for p in key_targets}]
        for i in others:
            if input_refs(calc.projection[i]) & {ws, we, wt}:
                return None
        if calc.condition is not None and input_refs(calc.condition) & {ws, we, wt}:
            return None
        time_type = tvf.input.field_types[tvf.window.time_field]
        if not time_type.is_time_attribute:
            # Windows over a plain timestamp are just columns: a regular GROUP BY over the TVF (as Flink does).
            return None
        child = self.convert(tvf.input)
        exprs = [calc.projection[i] for i in others]
        names = [calc.names[i] for i in others]
        # SESSION ... PARTITION BY indexes the TVF's input; re-point each key at the window input's column
        # that reads it (adding the column when the query does not project it).
        partition_keys = []
        for k in tvf.window.partition_keys:
            at = next((j for j, e in enumerate(exprs) if isinstance(e, InputRef) and e.index == k), None)
            if at is None:
                at = len(exprs)
                exprs.append(InputRef(k, tvf.input.field_types[k]))
                names.append(tvf.input.field_names[k])
            partition_keys.append(at)
        exprs.append(InputRef(tvf.window.time_field, time_type))
        names = _unique([*names, "$rowtime"])
        pre = X.Calc(inputs=(child,), output_type=row(*(RowField(nm, e.type) for nm, e in zip(names, exprs))),
                     projection=tuple(exprs), condition=calc.condition, description="Calc(window input)")
        position = {old: new for new, old in enumerate(others)}
        grouping = tuple(position[k] for p, k in enumerate(node.group_keys) if p not in key_targets)
        aggs = tuple(_remap_agg(a, position) for a in node.aggregates)
        window = WindowSpec(tvf.window.kind, len(exprs) - 1, tvf.window.size, tvf.window.slide, tvf.window.step,
                              tvf.window.gap, tvf.window.offset,
                              tuple(partition_keys), tvf.window.is_rowtime)
        tvf_fields = tvf.row_type.fields
        out_fields = [RowField(names[g], pre.field_types[g].without_time_attribute()) for g in grouping]
        out_fields += [RowField(a.name, a.type) for a in aggs]
        out_fields += [RowField("window_start", tvf_fields[ws].type), RowField("window_end", tvf_fields[we].type),
                       RowField("window_time", tvf_fields[wt].type)]
        agg = X.WindowAggregate(inputs=(pre,), output_type=row(*out_fields), grouping=grouping, aggregates=aggs,
                                window=window, state=self._state(X.WindowAggregate, node.state_ttl_ms),
                                input_properties=(_hash(grouping),),
                                description=f"WindowAggregate(window=[{window}], groupBy={list(grouping)})")
        # Reorder to the logical aggregate's output: its group keys (incl. window columns), then aggregates.
        g, a = len(grouping), len(aggs)
        proj: list[Expr] = []
        plain = 0
        for pos, _k in enumerate(node.group_keys):
            if pos in key_targets:
                target = {ws: g + a, we: g + a + 1, wt: g + a + 2}[key_targets[pos]]
            else:
                target = plain
                plain += 1
            proj.append(InputRef(target, agg.field_types[target]))
        proj += [InputRef(g + i, agg.field_types[g + i]) for i in range(a)]
        out = row(*(RowField(f.name, e.type) for f, e in zip(node.row_type.fields, proj)))
        return X.Calc(inputs=(agg,), output_type=out, projection=tuple(proj), description="Calc(window aggregate)")

    def _LogicalOver(self, node: L.LogicalOver) -> ExecNode:
        if any(c.function in _RANK_FUNCTIONS for c in node.calls):
            raise UnsupportedQueryError(
                f"{node.calls[0].function}() is supported only for Top-N and deduplication, i.e. followed by a "
                "filter on its result such as WHERE rn <= 10 or WHERE rn = 1",
                hint="wrap the query: SELECT * FROM (SELECT ..., ROW_NUMBER() OVER (...) AS rn FROM t) WHERE rn <= N",
            )
        if not node.order_keys:
            raise UnsupportedQueryError(
                "OVER windows need an ORDER BY on a streaming table",
                hint="ORDER BY the table's rowtime column, a PROCTIME() column, or a value column with RANGE "
                     "BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW")
        if not node.input.field_types[node.order_keys[0].field].is_time_attribute:
            # Flink's non-time OVER (NonTimeRangeUnboundedPrecedingFunction): one order key, RANGE UNBOUNDED
            # PRECEDING AND CURRENT ROW; it emits updates of the rows that follow a new or retracted row
            frame = node.frame
            if len(node.order_keys) != 1 or frame.mode != "RANGE" or frame.lower is not None:
                raise UnsupportedQueryError(
                    "an OVER window ordered by a non-time column supports only one ORDER BY column with RANGE "
                    "BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
                    hint="order by the rowtime column for bounded frames, or use RANGE BETWEEN UNBOUNDED PRECEDING "
                         "AND CURRENT ROW")
        child = self.convert(node.input)
        return X.OverAggregate(inputs=(child,), output_type=node.row_type, partition_keys=node.partition_keys,
                               order_keys=node.order_keys, frame=node.frame, aggregates=node.calls,
                               state=self._state(X.OverAggregate), input_properties=(_hash(node.partition_keys),),
                               description=f"OverAggregate({node.explain_terms()})")

    # --- Top-N / deduplication ----------------------------------------------------------------------------------
    def _rank_pattern(self, node: L.LogicalCalc) -> ExecNode | None:
        over = node.input
        if not isinstance(over, L.LogicalOver) or len(over.calls) != 1 or node.condition is None:
            return None
        call = over.calls[0]
        if call.function not in _RANK_FUNCTIONS:
            return None
        rank_field = len(over.input.field_names)
        bounds = _rank_bounds(node.condition, rank_field)
        if bounds is None:
            return None
        start, end, remaining = bounds
        outputs_rank = any(rank_field in input_refs(e) for e in node.projection) or (
            remaining is not None and rank_field in input_refs(remaining))
        child_logical = over.input
        window = _window_source(child_logical, over.partition_keys)
        order_type = child_logical.field_types[over.order_keys[0].field] if over.order_keys else None
        is_dedup = (call.function == "ROW_NUMBER" and start == 1 and end == 1 and not outputs_rank
                    and len(over.order_keys) == 1 and order_type is not None and order_type.is_time_attribute)
        child = self.convert(child_logical)
        rank_output = rank_field if outputs_rank else None
        base_fields = list(child_logical.row_type.fields)
        if is_dedup:
            keep_last = not over.order_keys[0].ascending
            if window is not None:
                ws, we = window
                ranked: ExecNode = X.WindowDeduplicate(
                    inputs=(child,), output_type=row(*base_fields),
                    partition_keys=tuple(k for k in over.partition_keys if k not in (ws, we)),
                    order_field=over.order_keys[0].field, keep_last_row=keep_last, window_start_field=ws,
                    window_end_field=we, state=self._state(X.WindowDeduplicate),
                    input_properties=(_hash(over.partition_keys),),
                    description=f"WindowDeduplicate(keep=[{'LastRow' if keep_last else 'FirstRow'}])")
            else:
                ranked = X.Deduplicate(
                    inputs=(child,), output_type=row(*base_fields), unique_keys=over.partition_keys,
                    is_rowtime=order_type.is_rowtime, keep_last_row=keep_last, order_field=over.order_keys[0].field,
                    state=self._state(X.Deduplicate), input_properties=(_hash(over.partition_keys),),
                    description=f"Deduplicate(keep=[{'LastRow' if keep_last else 'FirstRow'}], "
                                f"key=[{', '.join(child.field_names[k] for k in over.partition_keys)}], "
                                f"order=[{'ROWTIME' if order_type.is_rowtime else 'PROCTIME'}])")
        else:
            out_fields = base_fields + ([RowField(call.name, call.type)] if rank_output is not None else [])
            if window is not None:
                ws, we = window
                ranked = X.WindowRank(
                    inputs=(child,), output_type=row(*out_fields), rank_type=call.function,
                    partition_keys=tuple(k for k in over.partition_keys if k not in (ws, we)),
                    order_keys=over.order_keys, rank_start=start, rank_end=end,
                    output_rank_number=rank_output is not None, window_start_field=ws, window_end_field=we,
                    state=self._state(X.WindowRank), input_properties=(_hash(over.partition_keys),),
                    description=f"WindowRank(rankType=[{call.function}], rankRange=[{start}, {end}])")
            else:
                ranked = X.Rank(
                    inputs=(child,), output_type=row(*out_fields), rank_type=call.function,
                    partition_keys=over.partition_keys, order_keys=over.order_keys, rank_start=start,
                    rank_end=end, output_rank_number=rank_output is not None, state=self._state(X.Rank),
                    input_properties=(_hash(over.partition_keys),),
                    description=f"Rank(rankType=[{call.function}], rankRange=[rankStart={start}, rankEnd={end}], "
                                f"partitionBy=[{', '.join(child.field_names[k] for k in over.partition_keys)}])")
        # The calc above the rank: the original projection (the rank field now sits at rank_field if output).
        if (not outputs_rank and remaining is None and _is_prefix_identity(node.projection, rank_field)
                and ranked.field_names == list(node.names)):
            return ranked
        return X.Calc(inputs=(ranked,), output_type=node.row_type, projection=node.projection,
                      condition=remaining, description="Calc(after rank)")

    # --- sort ------------------------------------------------------------------------------------------------------
    def _LogicalSort(self, node: L.LogicalSort) -> ExecNode:
        child = self.convert(node.input)
        if node.fetch is not None and node.keys:
            return X.SortLimit(inputs=(child,), output_type=node.row_type, order_keys=node.keys,
                               offset=node.offset, limit=node.fetch, state=self._state(X.SortLimit),
                               input_properties=(InputProperty("SINGLETON"),),
                               description=f"SortLimit({node.explain_terms()})")
        if node.fetch is not None:
            return X.Limit(inputs=(child,), output_type=node.row_type, offset=node.offset, limit=node.fetch,
                           state=self._state(X.Limit), input_properties=(InputProperty("SINGLETON"),),
                           description=f"Limit(offset=[{node.offset}], fetch=[{node.fetch}])")
        first = node.keys[0] if node.keys else None
        if first is not None and first.ascending and node.input.field_types[first.field].is_time_attribute:
            return X.TemporalSort(inputs=(child,), output_type=node.row_type, order_keys=node.keys,
                                  state=self._state(X.TemporalSort), input_properties=(InputProperty("SINGLETON"),),
                                  description=f"TemporalSort({node.explain_terms()})")
        if str(self.ctx.config.get("table.exec.non-temporal-sort.enabled", "false")).lower() == "true":
            # A full sort of an unbounded stream: a Top-N over everything, emitting retractions as rows move.
            return X.SortLimit(inputs=(child,), output_type=node.row_type, order_keys=node.keys, offset=node.offset,
                               limit=X.FULL_SORT_FETCH, state=self._state(X.SortLimit),
                               input_properties=(InputProperty("SINGLETON"),),
                               description=f"Sort(non-temporal, {node.explain_terms()})")
        raise UnsupportedQueryError(
            "a streaming ORDER BY must start with a time attribute in ascending order, or have a LIMIT",
            hint="add LIMIT n (Top-N), ORDER BY the rowtime column first, or SET "
                 "'table.exec.non-temporal-sort.enabled' = 'true' to sort the whole stream with retractions",
        )

    # --- joins --------------------------------------------------------------------------------------------------
    def _with_pushed_keys(self, node: L.LogicalJoin | L.LogicalSnapshotJoin) -> ExecNode | None:
        """The join with key expressions projected into its inputs (planner/join_keys.py), or None."""
        pushed = push_key_expressions(node.left, node.right, node.condition)
        if pushed is None:
            return None
        left, right, condition, positions = pushed
        inner = replace(node, left=left, right=right, condition=condition)
        types = [f.type for f in inner.row_type.fields]
        # A semi or anti join outputs its left side only: the right side's positions are not in its row.
        projection = tuple(InputRef(p, types[p]) for p in positions[:len(node.field_names)])
        return self.convert(L.LogicalCalc(inner, projection, tuple(node.field_names)))

    def _LogicalJoin(self, node: L.LogicalJoin) -> ExecNode:
        pushed = self._with_pushed_keys(node)
        if pushed is not None:
            return pushed
        nl = len(node.left.field_names)
        left_keys, right_keys, remaining = _split_equi(node.condition, nl)
        window = self._window_join(node, left_keys, right_keys, remaining)
        if window is not None:
            return window
        interval = _interval_bounds(remaining, node.left, node.right, nl)
        left = self.convert(node.left)
        right = self.convert(node.right)
        if interval is not None and node.kind in ("INNER", "LEFT", "RIGHT", "FULL") and interval[2] > interval[3]:
            return self._empty_interval_join(node, left, right, interval[2], interval[3])
        if interval is not None and node.kind in ("INNER", "LEFT", "RIGHT", "FULL"):
            lt, rt, lower, upper, rest, event_time = interval
            return X.IntervalJoin(
                inputs=(left, right), output_type=_materialize_time(node.row_type, (lt, nl + rt)),
                join_type=node.kind, left_keys=left_keys, right_keys=right_keys, non_equi_condition=rest,
                is_event_time=event_time, left_time_field=lt, right_time_field=rt, left_lower_bound_ms=lower,
                left_upper_bound_ms=upper, state=self._state(X.IntervalJoin),
                input_properties=(_hash(left_keys) if left_keys else InputProperty("SINGLETON"),
                                  _hash(right_keys) if right_keys else InputProperty("SINGLETON")),
                description=f"IntervalJoin(joinType=[{node.kind}], bounds=[{lower}, {upper}] ms)")
        return X.Join(
            inputs=(left, right), output_type=_materialize_time(node.row_type, None), join_type=node.kind,
            left_keys=left_keys, right_keys=right_keys, filter_nulls=tuple(True for _ in left_keys),
            non_equi_condition=remaining, left_ttl_ms=node.state_ttl_ms[0], right_ttl_ms=node.state_ttl_ms[1],
            state=self._state(X.Join),
            input_properties=(_hash(left_keys) if left_keys else InputProperty("SINGLETON"),
                              _hash(right_keys) if right_keys else InputProperty("SINGLETON")),
            description=f"Join(joinType=[{node.kind}], where=[{node.condition}])")

    def _empty_interval_join(self, node: L.LogicalJoin, left: ExecNode, right: ExecNode, lower: int,
                             upper: int) -> ExecNode:
        """An interval join whose bounds admit no pair (lower > upper): nothing ever matches, so — as Flink's
        negative-window join — outer sides pass through at once, padded with NULLs, and no state is kept."""
        out = _materialize_time(node.row_type, None)
        nl = len(node.left.field_names)

        def padded(side: ExecNode, at_left: bool, condition: Expr | None = None) -> ExecNode:
            projection = []
            for i, f in enumerate(out.fields):
                own = i < nl if at_left else i >= nl
                index = i if at_left else i - nl
                projection.append(InputRef(index, side.field_types[index]) if own
                                  else Literal(None, f.type.with_nullable(True)))
            return X.Calc(inputs=(side,), output_type=out, projection=tuple(projection), condition=condition,
                          description=f"Calc(interval join with an empty window [{lower}, {upper}] ms: "
                                      f"{'left' if at_left else 'right'} rows padded)")

        if node.kind == "LEFT":
            return padded(left, True)
        if node.kind == "RIGHT":
            return padded(right, False)
        if node.kind == "FULL":
            return X.Union(inputs=(padded(left, True), padded(right, False)), output_type=out,
                           description="Union(all=[true])")
        return padded(left, True, Literal(False, BOOLEAN.with_nullable(False)))  # INNER: no row at all

    def _window_join(self, node: L.LogicalJoin, left_keys: tuple[int, ...], right_keys: tuple[int, ...],
                     remaining: Expr | None) -> ExecNode | None:
        nl = len(node.left.field_names)
        lw = _window_source(node.left, left_keys)
        rw = _window_source(node.right, right_keys)
        if lw is None or rw is None:
            return None
        pairs = set(zip(left_keys, right_keys))
        if (lw[0], rw[0]) not in pairs or (lw[1], rw[1]) not in pairs:
            return None
        lspec = _window_spec_of(node.left)
        rspec = _window_spec_of(node.right)
        if lspec is None or rspec is None:
            return None
        keep = [(lk, rk) for lk, rk in zip(left_keys, right_keys) if (lk, rk) not in {(lw[0], rw[0]), (lw[1], rw[1])}]
        left = self.convert(node.left)
        right = self.convert(node.right)
        del nl
        return X.WindowJoin(
            inputs=(left, right), output_type=node.row_type, join_type=node.kind,
            left_keys=tuple(k for k, _ in keep), right_keys=tuple(k for _, k in keep),
            non_equi_condition=remaining, left_window=lspec, right_window=rspec, left_window_fields=lw,
            right_window_fields=rw, state=self._state(X.WindowJoin),
            input_properties=(_hash(tuple(k for k, _ in keep)), _hash(tuple(k for _, k in keep))),
            description=f"WindowJoin(joinType=[{node.kind}])")

    def _LogicalSnapshotJoin(self, node: L.LogicalSnapshotJoin) -> ExecNode:
        pushed = self._with_pushed_keys(node)
        if pushed is not None:
            return pushed
        nl = len(node.left.field_names)
        left_keys, right_keys, remaining = _split_equi(node.condition, nl)
        left = self.convert(node.left)
        period_type = node.period.type
        if not period_type.is_time_attribute:
            raise ValidationError(
                "FOR SYSTEM_TIME AS OF needs a time attribute of the left table (its rowtime or a PROCTIME() "
                f"column), got {period_type}",
                hint="declare `proc AS PROCTIME()` on the probe table and use FOR SYSTEM_TIME AS OF o.proc",
            )
        if period_type.is_proctime and node.right_table is not None:
            source = create_source(node.right_table, self.ctx.config)
            if isinstance(source, conn.LookupTableSource):
                if not left_keys:
                    raise ValidationError("a lookup join needs an equality condition on a dimension-table column",
                                          hint="join ON o.key = d.key")
                return X.LookupJoin(
                    inputs=(left,), output_type=node.row_type, join_type=node.kind,
                    table=X.TableSpec(str(node.right_table.identifier), node.right_table, node.right_table.temporary),
                    lookup_keys=tuple(zip(right_keys, left_keys)), remaining_condition=remaining,
                    description=f"LookupJoin(table=[{node.right_table.identifier.name}], joinType=[{node.kind}], "
                                f"lookup=[{', '.join(node.right.field_names[k] for k in right_keys)}])",
                    projection_on_table=(),
                )
        right = self.convert(node.right)
        right_time = next((i for i, t in enumerate(node.right.field_types) if t.is_rowtime), None)
        versioned = node.right_table is not None and node.right_table.table.schema.primary_key is not None
        if period_type.is_rowtime and (right_time is None or not versioned):
            raise ValidationError(
                "Temporal Table Join requires a versioned table: the right table must declare a PRIMARY KEY and a "
                "WATERMARK", hint="add PRIMARY KEY (...) NOT ENFORCED and WATERMARK FOR <ts> AS ... to the table "
                                  "read FOR SYSTEM_TIME AS OF")
        if not left_keys:
            raise ValidationError("a temporal join needs an equality condition on the versioned table's primary key")
        left_time = node.period.index if isinstance(node.period, InputRef) else 0
        return X.TemporalJoin(
            inputs=(left, right), output_type=_materialize_time(node.row_type, (left_time,)), join_type=node.kind,
            left_keys=left_keys, right_keys=right_keys, non_equi_condition=remaining, left_time_field=left_time,
            right_time_field=right_time, is_event_time=period_type.is_rowtime, state=self._state(X.TemporalJoin),
            input_properties=(_hash(left_keys), _hash(right_keys)),
            description=f"TemporalJoin(joinType=[{node.kind}], {'event' if period_type.is_rowtime else 'processing'}"
                        f" time)")

    # --- sink ---------------------------------------------------------------------------------------------------
    def _LogicalSink(self, node: L.LogicalSink) -> ExecNode:
        child = self.convert(node.input)
        table = X.TableSpec(str(node.table.identifier), node.table, node.table.temporary)
        self._sinks.setdefault(table, create_sink(node.table, self.ctx.config))
        return X.Sink(inputs=(child,), output_type=child.output_type, table=table, abilities=node.ability_specs,
                      target_columns=node.target_columns, description=f"Sink(table=[{node.table.identifier.name}])")


# --- helpers ------------------------------------------------------------------------------------------------
class _FieldScope:
    """Resolves plain column names against a row (computed columns and watermarks)."""

    def __init__(self, names: list[str], _all: list[str], fields: list[RowField]):
        self.fields = fields

    def resolve_column(self, column):  # type: ignore[no-untyped-def]
        for i, f in enumerate(self.fields):
            if f.name == column.name:
                return InputRef(i, f.type)
        raise ValidationError(f"column '{column.name}' not found; available: "
                              f"{', '.join(f.name for f in self.fields)}")

    def convert_special(self, node, convert):  # type: ignore[no-untyped-def]
        return None


def _parse(sql: str):  # type: ignore[no-untyped-def]

    return parse_expression(sql)


def _mark_rowtime(e: Expr) -> Expr:
    return _retype(e, e.type.with_time_attribute(TimeAttribute.ROWTIME))


def _retype(e: Expr, t: DataType) -> Expr:
    if isinstance(e, InputRef):
        return InputRef(e.index, t)
    if isinstance(e, Call):
        return Call(e.function, e.operands, t)
    return e


def _hash(keys: tuple[int, ...]) -> InputProperty:
    return InputProperty("HASH", tuple(keys)) if keys else InputProperty("SINGLETON")


def _unique(names: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for n in names:
        candidate = n
        i = 0
        while candidate in seen:
            i += 1
            candidate = f"{n}{i}"
        seen.add(candidate)
        out.append(candidate)
    return out


def _remap_agg(a: AggregateCall, position: dict[int, int]) -> AggregateCall:
    return dataclasses.replace(a, args=tuple(position[x] for x in a.args),
                               filter_arg=None if a.filter_arg is None else position[a.filter_arg])


def _is_prefix_identity(projection: tuple[Expr, ...], width: int) -> bool:
    return len(projection) == width and all(isinstance(e, InputRef) and e.index == i for i, e in enumerate(projection))


def _rank_bounds(condition: Expr, rank_field: int) -> tuple[int, int, Expr | None] | None:
    """From ``rn <= N`` / ``rn < N`` / ``rn = N`` / ``rn BETWEEN a AND b`` (ANDed with other predicates)."""
    start, end = 1, None
    rest: list[Expr] = []
    for c in conjunctions(condition):
        if isinstance(c, Call) and len(c.operands) == 2:
            a, b = c.operands
            op = c.function.name
            if isinstance(b, InputRef) and b.index == rank_field and isinstance(a, Literal):
                a, b = b, a
                op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}.get(op, op)
            is_rank = isinstance(a, InputRef) and a.index == rank_field
            if is_rank and isinstance(b, Literal) and isinstance(b.value, int):
                v = b.value
                if op == "<=":
                    end = v if end is None else min(end, v)
                    continue
                if op == "<":
                    end = v - 1 if end is None else min(end, v - 1)
                    continue
                if op == "=":
                    start, end = v, v
                    continue
                if op == ">=":
                    start = max(start, v)
                    continue
                if op == ">":
                    start = max(start, v + 1)
                    continue
        rest.append(c)
    if end is None:
        return None
    remaining = None
    if rest:
        remaining = rest[0] if len(rest) == 1 else Call(
            rest_fn("AND"), tuple(rest), BOOLEAN.with_nullable(any(r.type.nullable for r in rest)))
    return start, end, remaining


def rest_fn(name: str):  # type: ignore[no-untyped-def]

    return FunctionRef(name, 1)


def _window_source(node: L.LogicalNode, keys: tuple[int, ...]) -> tuple[int, int] | None:
    """If ``node`` carries window_start/window_end of a window TVF (or window aggregate) among ``keys``."""
    names = node.field_names
    if "window_start" not in names or "window_end" not in names:
        return None
    ws, we = names.index("window_start"), names.index("window_end")
    if ws in keys and we in keys and _window_spec_of(node) is not None:
        return ws, we
    return None


def _window_spec_of(node: L.LogicalNode) -> WindowSpec | None:
    while True:
        if isinstance(node, L.LogicalWindowTableFunction):
            return node.window
        if isinstance(node, L.LogicalAggregate) and isinstance(node.input, L.LogicalCalc) and isinstance(
                node.input.input, L.LogicalWindowTableFunction):
            return node.input.input.window
        if isinstance(node, L.LogicalCalc | L.LogicalWatermarkAssigner | L.LogicalSort | L.LogicalOver):
            node = node.input
            continue
        return None


def _split_equi(condition: Expr | None, nl: int) -> tuple[tuple[int, ...], tuple[int, ...], Expr | None]:
    left_keys: list[int] = []
    right_keys: list[int] = []
    rest: list[Expr] = []
    for c in conjunctions(condition):
        if isinstance(c, Call) and c.function.name == "=" and len(c.operands) == 2:
            a, b = (_strip_cast(o) for o in c.operands)
            if isinstance(a, InputRef) and isinstance(b, InputRef):
                if a.index < nl <= b.index:
                    left_keys.append(a.index)
                    right_keys.append(b.index - nl)
                    continue
                if b.index < nl <= a.index:
                    left_keys.append(b.index)
                    right_keys.append(a.index - nl)
                    continue
        if isinstance(c, Literal) and c.value is True:
            continue
        rest.append(c)
    remaining = None
    if rest:
        remaining = rest[0] if len(rest) == 1 else Call(rest_fn("AND"), tuple(rest),
                                                         BOOLEAN.with_nullable(any(r.type.nullable for r in rest)))
    return tuple(left_keys), tuple(right_keys), remaining


def _strip_cast(e: Expr) -> Expr:
    if isinstance(e, Call) and e.function.name == "CAST" and len(e.operands) == 1:
        return e.operands[0]
    return e


def _ms(value: dt.timedelta) -> int:
    return int(value / dt.timedelta(milliseconds=1))


def _time_offset(e: Expr, nl: int) -> tuple[str, int, int] | None:
    """``t``, ``t + INTERVAL``, ``t - INTERVAL`` over a time attribute → (side, field, offset ms)."""
    offset = 0
    if isinstance(e, Call) and e.function.name in ("+", "-") and len(e.operands) == 2:
        base, amount = e.operands
        if isinstance(amount, Literal) and isinstance(amount.value, dt.timedelta):
            offset = _ms(amount.value) * (1 if e.function.name == "+" else -1)
            e = base
        else:
            return None
    if isinstance(e, InputRef) and e.type.is_time_attribute:
        return ("L", e.index, offset) if e.index < nl else ("R", e.index - nl, offset)
    return None


def _interval_bounds(condition: Expr | None, left: L.LogicalNode, right: L.LogicalNode, nl: int):
    """Find ``r.t - a <= l.t <= r.t + b`` bounds; returns (lt, rt, lower_ms, upper_ms, rest, event_time)."""
    lower = upper = None
    lt = rt = None
    rest: list[Expr] = []
    for c in conjunctions(condition):
        parsed = None
        if isinstance(c, Call) and c.function.name in ("<", "<=", ">", ">=", "BETWEEN") and len(c.operands) >= 2:
            if c.function.name == "BETWEEN" and len(c.operands) == 3:
                v, lo, hi = (_time_offset(o, nl) for o in c.operands)
                if v and lo and hi and v[0] != lo[0] and lo[0] == hi[0]:
                    parsed = [(lo, "<=", v), (v, "<=", hi)]
            else:
                a, b = (_time_offset(o, nl) for o in c.operands[:2])
                if a and b and a[0] != b[0]:
                    parsed = [(a, c.function.name, b)]
        if parsed is None:
            rest.append(c)
            continue
        for a, op, b in parsed:
            if op in (">", ">="):
                a, b = b, a
                op = "<" if op == ">" else "<="
            # a <= b  (strict '<' tightened by 1 ms, as Flink does)
            adjust = 1 if op == "<" else 0
            if a[0] == "L":  # l.t + x <= r.t + y  → l.t <= r.t + (y - x)
                bound = b[2] - a[2] - adjust
                upper = bound if upper is None else min(upper, bound)
                lt, rt = a[1], b[1]
            else:  # r.t + x <= l.t + y → l.t >= r.t + (x - y)
                bound = a[2] - b[2] + adjust
                lower = bound if lower is None else max(lower, bound)
                lt, rt = b[1], a[1]
    if lower is None or upper is None or lt is None or rt is None:
        return None
    lt_type = left.field_types[lt]
    rt_type = right.field_types[rt]
    if lt_type.is_rowtime != rt_type.is_rowtime:
        return None
    remaining = None
    if rest:
        remaining = rest[0] if len(rest) == 1 else Call(rest_fn("AND"), tuple(rest),
                                                         BOOLEAN.with_nullable(any(r.type.nullable for r in rest)))
    return lt, rt, lower, upper, remaining, lt_type.is_rowtime


def _materialize_time(t: DataType, keep: tuple[int, ...] | None) -> DataType:
    """Regular joins turn time attributes into plain timestamps (their output is not ordered in time)."""
    fields = []
    for i, f in enumerate(t.fields):
        if f.type.is_time_attribute and (keep is None or i not in keep):
            fields.append(RowField(f.name, f.type.without_time_attribute()))
        else:
            fields.append(f)
    return row(*fields)
