"""The logical plan: immutable, typed relational nodes validated when built.

Rules rewrite these (``planengine.planner.rules``); ``planengine.planner.physical`` turns them into exec
nodes. A multi-sink statement set is one DAG: identical sub-plans are the same object after
``planengine.planner.rules.share_common_subplans`` (found by ``digest``), which is what lets the exec DAG
read a source once for several sinks.

Every node has ``inputs`` and ``row_type`` (a ROW type; field names are the output column names).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

from planengine.catalog.objects import TableRef
from planengine.errors import InternalError
from planengine.ir.aggregates import AggregateCall
from planengine.ir.expressions import Expr, InputRef
from planengine.ir.sorting import SortKey
from planengine.ir.types import INT, DataType, Kind, RowField, TimeAttribute, common_type, row, timestamp, timestamp_ltz
from planengine.ir.windows import GroupWindow, OverFrame, WindowSpec


@dataclass(frozen=True, eq=False)
class LogicalNode:
    """Base class. Equality is identity; ``digest`` is structural and used to find shared sub-plans."""

    @property
    def inputs(self) -> tuple[LogicalNode, ...]:
        return ()

    @property
    def row_type(self) -> DataType:
        raise NotImplementedError

    def with_inputs(self, inputs: tuple[LogicalNode, ...]) -> LogicalNode:
        raise NotImplementedError

    @property
    def field_names(self) -> list[str]:
        return self.row_type.field_names()

    @property
    def field_types(self) -> list[DataType]:
        return [f.type for f in self.row_type.fields]

    def explain_terms(self) -> str:
        return ""

    @cached_property
    def digest(self) -> str:
        """Structural identity: node kind, its terms and its inputs' digests."""
        inner = ", ".join(i.digest for i in self.inputs)
        return f"{type(self).__name__}({self.explain_terms()})[{inner}]"

    def explain(self, indent: int = 0) -> str:
        lines = ["  " * indent + f"{type(self).__name__.removeprefix('Logical')}({self.explain_terms()})"]
        for i in self.inputs:
            lines.append(i.explain(indent + 1))
        return "\n".join(lines)


def _single(inputs: tuple[LogicalNode, ...]) -> LogicalNode:
    if len(inputs) != 1:
        raise InternalError(f"expected one input, got {len(inputs)}")
    return inputs[0]


class UnaryNode(LogicalNode):
    """A node with exactly one input, held in its ``input`` field."""

    input: LogicalNode

    @property
    def inputs(self) -> tuple[LogicalNode, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[LogicalNode, ...]) -> LogicalNode:
        return replace(self, input=_single(inputs))  # type: ignore[type-var]


class BinaryNode(LogicalNode):
    """A node with a ``left`` and a ``right`` input (joins)."""

    left: LogicalNode
    right: LogicalNode

    @property
    def inputs(self) -> tuple[LogicalNode, ...]:
        return (self.left, self.right)

    def with_inputs(self, inputs: tuple[LogicalNode, ...]) -> LogicalNode:
        left, right = inputs
        return replace(self, left=left, right=right)  # type: ignore[type-var]


class RowPreservingNode(UnaryNode):
    """A one-input node whose output rows have its input's type (sort, watermark assignment, sink)."""

    @property
    def row_type(self) -> DataType:
        return self.input.row_type



@dataclass(frozen=True, eq=False)
class LogicalScan(LogicalNode):
    """Reads a table: all of its columns (physical, metadata, computed), in declared order."""

    table: TableRef
    # Abilities applied by push-down rules, in order (planengine.exec.specs objects).
    ability_specs: tuple[Any, ...] = ()
    produced_type: DataType | None = None  # type after projection push-down, if any

    @property
    def row_type(self) -> DataType:
        return self.produced_type or self.table.table.schema.row_type()

    def with_inputs(self, inputs: tuple[LogicalNode, ...]) -> LogicalNode:
        return self

    def explain_terms(self) -> str:
        terms = f"table=[{self.table.identifier}], fields=[{', '.join(self.field_names)}]"
        if self.ability_specs:
            terms += ", abilities=[" + ", ".join(_describe_spec(s) for s in self.ability_specs) + "]"
        if self.table.hint_options:
            terms += f", hints={dict(self.table.hint_options)}"
        return terms


def _describe_spec(spec: Any) -> str:
    """A spec as EXPLAIN shows it (and the digest compares it): pushed predicates are part of what a scan reads,
    so two scans of one table that pushed different filters must never look alike and be shared."""
    predicates = getattr(spec, "predicates", None)
    if predicates:
        return f"{type(spec).__name__}({', '.join(str(p) for p in predicates)})"
    return type(spec).__name__


@dataclass(frozen=True, eq=False)
class LogicalValues(LogicalNode):
    rows: tuple[tuple[Expr, ...], ...]  # constant expressions (usually literals)
    type: DataType

    @property
    def row_type(self) -> DataType:
        return self.type

    def with_inputs(self, inputs: tuple[LogicalNode, ...]) -> LogicalNode:
        return self

    def explain_terms(self) -> str:
        body = ", ".join("{" + ", ".join(str(v) for v in r) + "}" for r in self.rows)
        return f"tuples=[{body}]"


@dataclass(frozen=True, eq=False)
class LogicalCalc(UnaryNode):
    """Projection plus optional filter (the filter reads the input row, the projection too)."""

    input: LogicalNode
    projection: tuple[Expr, ...]
    names: tuple[str, ...]
    condition: Expr | None = None

    def __post_init__(self) -> None:
        if len(self.projection) != len(self.names):
            raise InternalError("projection and names differ in length")

    @cached_property
    def row_type(self) -> DataType:  # type: ignore[override]
        return row(*(RowField(n, e.type) for n, e in zip(self.names, self.projection)))

    def is_identity(self) -> bool:
        if self.condition is not None or len(self.projection) != len(self.input.field_names):
            return False
        return all(isinstance(e, InputRef) and e.index == i for i, e in enumerate(self.projection)) and list(
            self.names
        ) == self.input.field_names

    def explain_terms(self) -> str:
        exprs = ", ".join(
            str(e) if isinstance(e, InputRef) and self.input.field_names[e.index] == n else f"{e} AS {n}"
            for e, n in zip(self.projection, self.names)
        )
        terms = f"select=[{exprs}]"
        if self.condition is not None:
            terms += f", where=[{self.condition}]"
        return terms



@dataclass(frozen=True, eq=False)
class LogicalAggregate(UnaryNode):
    """GROUP BY: output is the group keys (in order) followed by the aggregate calls."""

    input: LogicalNode
    group_keys: tuple[int, ...]
    aggregates: tuple[AggregateCall, ...]
    # Legacy group window (GROUP BY TUMBLE(ts, …)) and its properties, when present.
    group_window: GroupWindow | None = None
    state_ttl_ms: int | None = None

    @cached_property
    def row_type(self) -> DataType:  # type: ignore[override]
        in_fields = self.input.row_type.fields
        out = [RowField(in_fields[k].name, in_fields[k].type.without_time_attribute()) for k in self.group_keys]
        out += [RowField(a.name, a.type) for a in self.aggregates]
        if self.group_window is not None:
            out += [RowField(n, t) for n, t in self.group_window.property_fields()]
        return row(*out)

    def explain_terms(self) -> str:
        terms = f"groupBy=[{', '.join(self.input.field_names[k] for k in self.group_keys)}]"
        if self.group_window is not None:
            terms += f", window=[{self.group_window}]"
        terms += f", select=[{', '.join(f'{a} AS {a.name}' for a in self.aggregates)}]"
        return terms




@dataclass(frozen=True, eq=False)
class LogicalExpand(UnaryNode):
    """GROUPING SETS: every input row once per projection (Flink's Expand). Each projection lists the output
    fields, the grouping-set id ``$e`` among them (``planengine.planner.convert.grouping_sets``)."""

    input: LogicalNode
    projects: tuple[tuple[Expr, ...], ...]
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.projects or any(len(p) != len(self.names) for p in self.projects):
            raise InternalError("every Expand projection needs one expression per output field")

    @cached_property
    def row_type(self) -> DataType:  # type: ignore[override]
        types = [e.type.without_time_attribute() for e in self.projects[0]]
        nullable = [any(p[i].type.nullable for p in self.projects) for i in range(len(self.names))]
        return row(*(RowField(n, t.with_nullable(null)) for n, t, null in zip(self.names, types, nullable)))

    def explain_terms(self) -> str:
        projects = ", ".join("{" + ", ".join(str(e) for e in p) + "}" for p in self.projects)
        return f"projects=[{projects}]"


@dataclass(frozen=True, eq=False)
class LogicalWindowTableFunction(UnaryNode):
    """TABLE(TUMBLE|HOP|CUMULATE|SESSION(...)): input columns plus window_start, window_end, window_time."""

    input: LogicalNode
    window: WindowSpec

    @cached_property
    def row_type(self) -> DataType:  # type: ignore[override]

        time_type = self.input.row_type.fields[self.window.time_field].type
        plain = timestamp_ltz(3) if time_type.kind.value == "TIMESTAMP_LTZ" else timestamp(3)
        plain = plain.with_nullable(False)
        # The time column stays a time attribute (rows keep their event time), as in Flink.
        fields_ = list(self.input.row_type.fields)
        # window_time is a time attribute only when the window is over one (a TVF over a plain timestamp
        # column just assigns windows; aggregating it needs a watermark).
        attribute = None if not time_type.is_time_attribute else (
            TimeAttribute.ROWTIME if self.window.is_rowtime else TimeAttribute.PROCTIME)
        window_time = plain.with_time_attribute(attribute)
        fields_ += [RowField("window_start", plain), RowField("window_end", plain),
                    RowField("window_time", window_time)]
        return row(*fields_)

    def explain_terms(self) -> str:
        return f"window=[{self.window}]"


@dataclass(frozen=True, eq=False)
class LogicalJoin(BinaryNode):
    left: LogicalNode
    right: LogicalNode
    kind: str  # INNER | LEFT | RIGHT | FULL | SEMI | ANTI
    condition: Expr | None
    state_ttl_ms: tuple[int | None, int | None] = (None, None)

    @cached_property
    def row_type(self) -> DataType:  # type: ignore[override]
        left = list(self.left.row_type.fields)
        if self.kind in ("SEMI", "ANTI"):
            return row(*left)
        right = list(self.right.row_type.fields)
        if self.kind in ("RIGHT", "FULL"):
            left = [RowField(f.name, f.type.with_nullable(True)) for f in left]
        if self.kind in ("LEFT", "FULL"):
            right = [RowField(f.name, f.type.with_nullable(True)) for f in right]
        return row(*left, *right)

    def explain_terms(self) -> str:
        return f"joinType=[{self.kind}], where=[{self.condition}]"


@dataclass(frozen=True, eq=False)
class LogicalSnapshotJoin(BinaryNode):
    """A join whose right side is read `FOR SYSTEM_TIME AS OF left.time` (lookup or temporal join)."""

    left: LogicalNode
    right: LogicalNode
    kind: str  # INNER | LEFT
    condition: Expr | None
    period: Expr  # over the left row
    right_table: TableRef | None  # the dimension / versioned table, when the right side is a plain scan

    @cached_property
    def row_type(self) -> DataType:  # type: ignore[override]
        right = list(self.right.row_type.fields)
        right = [RowField(f.name, f.type.without_time_attribute()) for f in right]
        if self.kind == "LEFT":
            right = [RowField(f.name, f.type.with_nullable(True)) for f in right]
        return row(*self.left.row_type.fields, *right)

    def explain_terms(self) -> str:
        return f"joinType=[{self.kind}], period=[{self.period}], where=[{self.condition}]"


@dataclass(frozen=True, eq=False)
class LogicalCorrelate(UnaryNode):
    """`CROSS JOIN UNNEST(expr)` / `LEFT JOIN UNNEST(expr) ON TRUE`: per input row, the array's elements."""

    input: LogicalNode
    unnest: Expr  # an ARRAY/MAP/MULTISET expression over the input row
    names: tuple[str, ...]
    kind: str = "INNER"  # INNER | LEFT
    with_ordinality: bool = False
    table_function: bool = False  # LATERAL TABLE(f(...)): ``unnest`` is the call, its type the produced row

    def element_fields(self) -> list[RowField]:
        t = self.unnest.type

        if self.table_function:
            types = [f.type for f in t.fields] if t.kind is Kind.ROW else [t]
        elif t.kind is Kind.MAP:
            types = [t.key, t.value]
        elif t.element is not None and t.element.kind is Kind.ROW:
            types = [f.type for f in t.element.fields]
        else:
            types = [t.element]
        if self.with_ordinality:
            types.append(INT.with_nullable(False))
        out = []
        for name, typ in zip(self.names, types):
            assert typ is not None
            out.append(RowField(name, typ.with_nullable(True) if self.kind == "LEFT" else typ))
        return out

    @cached_property
    def row_type(self) -> DataType:  # type: ignore[override]
        return row(*self.input.row_type.fields, *self.element_fields())

    def explain_terms(self) -> str:
        call = str(self.unnest) if self.table_function else f"UNNEST({self.unnest})"
        return f"invocation=[{call}], joinType=[{self.kind}], select=[{', '.join(self.names)}]"


@dataclass(frozen=True, eq=False)
class LogicalUnion(LogicalNode):
    union_inputs: tuple[LogicalNode, ...]
    all: bool = True

    @property
    def inputs(self) -> tuple[LogicalNode, ...]:
        return self.union_inputs

    def with_inputs(self, inputs: tuple[LogicalNode, ...]) -> LogicalNode:
        return replace(self, union_inputs=inputs)

    @property
    def row_type(self) -> DataType:
        first = self.union_inputs[0].row_type
        out = []
        for i, f in enumerate(first.fields):
            t = common_type([u.row_type.fields[i].type for u in self.union_inputs]) or f.type
            out.append(RowField(f.name, t))
        return row(*out)

    def explain_terms(self) -> str:
        return f"all=[{self.all}], union=[{', '.join(self.field_names)}]"




@dataclass(frozen=True, eq=False)
class LogicalOver(UnaryNode):
    """Window functions over one window definition; output = input fields + one field per call.

    ROW_NUMBER/RANK/DENSE_RANK followed by a filter on the result become Top-N / deduplication during
    physical conversion; the rest become an over aggregate.
    """

    input: LogicalNode
    partition_keys: tuple[int, ...]
    order_keys: tuple[SortKey, ...]
    frame: OverFrame
    calls: tuple[AggregateCall, ...]

    @cached_property
    def row_type(self) -> DataType:  # type: ignore[override]
        return row(*self.input.row_type.fields, *(RowField(c.name, c.type) for c in self.calls))

    def explain_terms(self) -> str:
        part = ", ".join(f"${k}" for k in self.partition_keys)
        order = ", ".join(str(k) for k in self.order_keys)
        calls = ", ".join(f"{c} AS {c.name}" for c in self.calls)
        return f"partitionBy=[{part}], orderBy=[{order}], frame=[{self.frame}], select=[{calls}]"


@dataclass(frozen=True, eq=False)
class LogicalSort(RowPreservingNode):
    input: LogicalNode
    keys: tuple[SortKey, ...]
    offset: int = 0
    fetch: int | None = None

    def explain_terms(self) -> str:
        return f"orderBy=[{', '.join(str(k) for k in self.keys)}], offset=[{self.offset}], fetch=[{self.fetch}]"


@dataclass(frozen=True, eq=False)
class LogicalWatermarkAssigner(RowPreservingNode):
    input: LogicalNode
    rowtime_field: int
    watermark: Expr

    def explain_terms(self) -> str:
        return f"rowtime=[{self.input.field_names[self.rowtime_field]}], watermark=[{self.watermark}]"


@dataclass(frozen=True, eq=False)
class LogicalSink(RowPreservingNode):
    input: LogicalNode
    table: TableRef
    overwrite: bool = False
    static_partition: tuple[tuple[str, str], ...] = ()
    # Column positions of the table that the query fills (INSERT INTO t (a, b) ...); () = all persisted.
    target_columns: tuple[int, ...] = ()
    ability_specs: tuple[Any, ...] = field(default=())

    def explain_terms(self) -> str:
        return f"table=[{self.table.identifier}], fields=[{', '.join(self.input.field_names)}]"



def node_fields(node: LogicalNode) -> dict[str, Any]:
    """Dataclass fields of a node (used by generic rewrites)."""
    return {f.name: getattr(node, f.name) for f in fields(node)}  # type: ignore[arg-type]
