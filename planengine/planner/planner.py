"""The planning pipeline for INSERTs and statement sets, as one DAG.

    convert (SQL → logical) → optimise (rule programs) → physical (exec nodes)
      → changelog inference (one pass over all sinks) → final rewrites

A statement set is planned as one multi-sink DAG: common sub-plans are shared by digest, and changelog
inference sees every sink at once, so a shared node produces the strictest mode any consumer needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planengine.catalog.objects import CatalogTable, TableRef
from planengine.errors import SourceLocation, UserError, ValidationError
from planengine.exec import nodes as X
from planengine.functions.registry import FunctionRegistry
from planengine.ir.expressions import Expr, InputRef, Literal
from planengine.ir.types import STRING, common_type
from planengine.plan.real_time import decide_real_time
from planengine.plan.strategies import record_strategies
from planengine.planner import logical as L
from planengine.planner.changelog import infer_changelog
from planengine.planner.connectors import ConnectorMap
from planengine.planner.convert import PlannerContext, QueryConverter, cast_to
from planengine.planner.final_rewrites import insert_exchanges, merge_exec_calcs
from planengine.planner.per_record_watermarks import per_record_watermarks
from planengine.planner.physical import PhysicalContext, PhysicalConverter
from planengine.planner.processing_time import refuse_processing_time
from planengine.planner.programs import TraceStep, optimize
from planengine.planner.rank_strategy import record_rank_strategies
from planengine.planner.rules.context import RuleContext
from planengine.sql import statements as S


@dataclass
class PlanResult:
    sinks: list[X.Sink]
    logical: list[L.LogicalNode]
    optimized: list[L.LogicalNode]
    trace: list[TraceStep] = field(default_factory=list)
    connectors: ConnectorMap = field(default_factory=ConnectorMap)  # source/sink of every scan and sink node

    def sink_writes_batches(self, sink: X.Sink) -> bool:
        """Whether the sink the planner created for ``sink`` can be written one micro-batch at a time (what the
        shared topology needs to fan a query out to it; ``planengine.plan.topology``)."""
        return self.connectors.sink(sink).writes_micro_batches()


class Planner:
    def __init__(self, catalogs, registry: FunctionRegistry, config: dict[str, str]):  # type: ignore[no-untyped-def]
        self.catalogs = catalogs
        self.registry = registry
        self.config = config

    def plan_inserts(self, inserts: list[S.Insert], *, trace: bool = False) -> PlanResult:
        if not inserts:
            raise ValidationError("a statement set needs at least one INSERT")
        logical = [self._located(i) for i in inserts]
        steps: list[TraceStep] | None = [] if trace else None
        optimized = optimize(list(logical), RuleContext(self.registry, self.config), steps)
        physical = PhysicalConverter(PhysicalContext(self.registry, self.config))
        sinks, connectors = physical.convert_sinks(optimized)
        sinks = refuse_processing_time(sinks)
        sinks = infer_changelog(sinks, connectors, self.config)
        sinks = merge_exec_calcs(sinks)
        sinks = insert_exchanges(sinks)
        sinks = per_record_watermarks(sinks)
        sinks = record_rank_strategies(sinks)  # reads final changelog modes and upsert keys
        sinks = record_strategies(sinks)  # last: the rule reads the final neighbours of each node
        decide_real_time(sinks, self.config)  # 'REQUIRED' that cannot be met fails here, naming the node
        return PlanResult(sinks, logical, optimized, steps or [], connectors)

    def _located(self, insert: S.Insert) -> L.LogicalSink:
        """Errors without a position get the INSERT's, so every message says where."""
        try:
            return self.to_logical_sink(insert)
        except UserError as error:
            located = rebase(error.location, insert.location)
            if located != error.location:
                raise type(error)(error.message, location=located, hint=error.hint) from None
            raise

    def convert_query(self, insert_location, query):  # type: ignore[no-untyped-def]
        ctx = PlannerContext(self.catalogs, self.registry, self.config, insert_location)
        return QueryConverter(ctx).convert_query(query)

    def to_logical_sink(self, insert: S.Insert) -> L.LogicalSink:
        node = self.convert_query(insert.location, insert.query)
        identifier = self.catalogs.qualify(insert.table)
        entry = self.catalogs.get_table(identifier)
        if not isinstance(entry.object, CatalogTable):
            raise ValidationError(f"cannot INSERT INTO view {identifier}", location=insert.location,
                                  hint="insert into a table; views are read-only")
        table: CatalogTable = entry.object
        persisted = [c for c in table.schema.columns if c.is_persisted]
        static = dict(insert.static_partition)
        if insert.columns:
            unknown = [c for c in insert.columns if c not in [p.name for p in persisted]]
            if unknown:
                raise ValidationError(f"INSERT column '{unknown[0]}' is not a column of {identifier}",
                                      location=insert.location,
                                      hint=f"columns: {', '.join(p.name for p in persisted)}")
            targets = [c for c in insert.columns]
        else:
            targets = [p.name for p in persisted if p.name not in static]
        if len(node.field_names) != len(targets):
            raise ValidationError(
                f"the query produces {len(node.field_names)} columns but {identifier} expects {len(targets)}",
                location=insert.location,
                hint=f"query columns: [{', '.join(node.field_names)}]; sink columns: [{', '.join(targets)}]",
            )
        # Build the full persisted row: query columns cast to the sink types, static partition values, NULLs.
        exprs: list[Expr] = []
        for col in persisted:
            if col.name in targets:
                i = targets.index(col.name)
                src = InputRef(i, node.field_types[i])
                exprs.append(self._assign(src, col.type.without_time_attribute(), col.name, identifier, insert))
            elif col.name in static:
                exprs.append(cast_to(Literal(static[col.name], _string_type()), col.type))
            else:
                if not col.type.nullable:
                    raise ValidationError(f"column '{col.name}' of {identifier} is NOT NULL but the INSERT does not "
                                          "provide it", location=insert.location)
                exprs.append(Literal(None, col.type.with_nullable(True)))
        names = tuple(c.name for c in persisted)
        calc = L.LogicalCalc(node, tuple(exprs), names)
        hint = tuple(sorted(dict(insert.options_hint).items()))
        ref = TableRef(identifier, table, entry.is_temporary, hint)
        return L.LogicalSink(calc, ref, insert.overwrite, insert.static_partition)

    def _assign(self, src: Expr, target, name, identifier, insert) -> Expr:  # type: ignore[no-untyped-def]
        source_type = src.type.without_time_attribute()
        if source_type.with_nullable(True) == target.with_nullable(True):
            return src if source_type.nullable == target.nullable or not target.nullable else cast_to(src, target)
        # Flink's implicit casts on INSERT: NULL, numeric widening/narrowing, strings, timestamps of any kind.
        if source_type.kind.value == "NULL" or common_type([source_type, target]) is not None or (
                source_type.is_string and target.is_string) or (source_type.is_timestamp and target.is_timestamp) or (
                source_type.is_numeric and target.is_numeric):
            return cast_to(src, target)
        raise ValidationError(
            f"column '{name}' of {identifier} has type {target} but the query gives {source_type}",
            location=insert.location, hint=f"CAST the expression to {target}",
        )


def rebase(location, base):  # type: ignore[no-untyped-def]
    """Positions from sqlglot nodes are absolute in the script but carry no statement number or file name:
    add them; a missing location becomes the statement's own."""
    if location is None:
        return base
    if base is None or (location.statement is not None and location.source is not None):
        return location

    return SourceLocation(location.statement if location.statement is not None else base.statement,
                          location.line, location.column, location.source or base.source)


def _string_type():  # type: ignore[no-untyped-def]

    return STRING.with_nullable(False)


