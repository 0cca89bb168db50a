"""Read a table once per statement set: scans of one table that differ only in what was pushed into them
become one scan reading the union of their columns, with a Calc per former scan re-applying its projection
and its pushed filters.

Projection and filter push-down run per INSERT, so two INSERTs reading different columns of one table end up
with two different scans, which ``share_common_subplans`` cannot share: the job would read the table twice
per micro-batch. Flink reads it once; so do we, unless separate scans are cheaper:

* every scan pushed a filter, and the source does not accept their disjunction (``OR``) as one pushed
  filter: each scan reads only its own slice (e.g. its partitions), the merged scan would read everything.
  When the source accepts the disjunction (the filesystem connector does for partition predicates), the
  merged scan still prunes, to the union of the slices, which is never more than the separate scans read;
* a scan carries any other ability (limit, partitions, metadata, watermark push-down): its source was
  specialised in a way a wider scan would lose.

A scan that pushed no filter reads everything anyway, so a merged scan without a pushed filter costs no
more than it. Merging changes only which columns the one scan reads; the Calcs above give every consumer
exactly the row (and the rows) its own scan produced.

>>> from planengine.api import TableEnvironment
>>> from planengine.commands.compile import split_program
>>> from planengine.planner import programs as P
>>> from planengine.planner.rules.context import RuleContext
>>> env = TableEnvironment()
>>> _ = env.execute_sql("CREATE TABLE t (a BIGINT, b STRING, c STRING) WITH ('connector' = 'filesystem', "
...                     "'path' = '/tmp/t', 'format' = 'parquet')")
>>> _ = env.execute_sql("CREATE TABLE o (x STRING) WITH ('connector' = 'blackhole')")
>>> inserts = split_program(env, "EXECUTE STATEMENT SET BEGIN INSERT INTO o SELECT b FROM t; "
...                                "INSERT INTO o SELECT c FROM t; END;", "doc.sql")
>>> roots = [env._planner().to_logical_sink(i) for i in inserts]
>>> ctx = RuleContext(env.registry, env.config)
>>> pushed = P.optimize(roots, ctx, programs=P.PROGRAMS[:4])  # up to source push-down
>>> [s.field_names for s in P.scans(pushed)]
[['b'], ['c']]
>>> [s.field_names for s in P.scans(merge_scans(pushed, ctx))]
[['b', 'c']]
"""

from __future__ import annotations

from collections.abc import Sequence

from planengine.connectors.abilities import SupportsFilterPushDown, SupportsProjectionPushDown
from planengine.exec.specs import FilterPushDownSpec, ProjectPushDownSpec
from planengine.ir.expressions import Call, Expr, FunctionRef, InputRef, input_refs, remap_inputs
from planengine.ir.types import BOOLEAN, RowField, row
from planengine.planner import logical as L
from planengine.planner.rules.context import RuleContext

MERGEABLE_SPECS = (FilterPushDownSpec, ProjectPushDownSpec)


def merge_scans(roots: Sequence[L.LogicalNode], ctx: RuleContext) -> list[L.LogicalNode]:
    """The DAG with every group of mergeable scans of one table replaced by one scan (a whole-DAG rule)."""
    groups: dict[tuple[object, ...], list[L.LogicalScan]] = {}
    for scan in _scans(roots):
        key = _table_key(scan)
        if key is not None:
            groups.setdefault(key, []).append(scan)
    replacements: dict[int, L.LogicalNode] = {}
    for scans in groups.values():
        distinct = {s.digest: s for s in scans}
        if len(distinct) < 2:
            continue  # identical scans: share_common_subplans makes them one node
        merged = _merge(list(distinct.values()), ctx)
        if merged is None:
            continue
        for scan in scans:
            replacements[id(scan)] = _restore_row(scan, merged)
    if not replacements:
        return list(roots)
    memo: dict[int, L.LogicalNode] = {}

    def visit(node: L.LogicalNode) -> L.LogicalNode:
        if id(node) in memo:
            return memo[id(node)]
        if id(node) in replacements:
            out = replacements[id(node)]
        else:
            inputs = tuple(visit(i) for i in node.inputs)
            out = node if all(a is b for a, b in zip(inputs, node.inputs)) else node.with_inputs(inputs)
        memo[id(node)] = out
        return out

    return [visit(r) for r in roots]


def _scans(roots: Sequence[L.LogicalNode]) -> list[L.LogicalScan]:
    seen: set[int] = set()
    out: list[L.LogicalScan] = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, L.LogicalScan):
            out.append(node)
        stack.extend(reversed(node.inputs))
    return out


def _table_key(scan: L.LogicalScan) -> tuple[object, ...] | None:
    """Scans with equal keys read the same table the same way, up to projection and filter push-down."""
    if any(not isinstance(s, MERGEABLE_SPECS) for s in scan.ability_specs):
        return None
    ref = scan.table
    return (str(ref.identifier), tuple(sorted(ref.options.items())), ref.temporary, ref.inline)


def _physical_columns(scan: L.LogicalScan) -> list[int]:
    """The table's physical columns this scan produces, in produced order."""
    columns = list(range(len(scan.table.table.schema.physical_row_type().fields)))
    for spec in scan.ability_specs:
        if isinstance(spec, ProjectPushDownSpec):
            columns = [columns[path[0]] for path in spec.projected_fields]
    return columns


def _pushed_filter(scan: L.LogicalScan) -> Expr | None:
    """The conjunction of the scan's pushed predicates (over the table's physical row), None if none."""
    predicates = [p for s in scan.ability_specs if isinstance(s, FilterPushDownSpec) for p in s.predicates]
    return _combine("AND", predicates)


def _combine(op: str, exprs: Sequence[Expr]) -> Expr | None:
    unique = list(dict.fromkeys(exprs))
    if not unique:
        return None
    if len(unique) == 1:
        return unique[0]
    return Call(FunctionRef(op, 1), tuple(unique), BOOLEAN.with_nullable(any(e.type.nullable for e in unique)))


def _mergeable(scan: L.LogicalScan) -> bool:
    """Only scans whose specs are a filter push-down followed by a top-level projection (as the push-down
    rules produce them) can be re-expressed over a wider scan."""
    kinds = [type(s) for s in scan.ability_specs]
    if kinds not in ([], [FilterPushDownSpec], [ProjectPushDownSpec], [FilterPushDownSpec, ProjectPushDownSpec]):
        return False
    return all(len(p) == 1 for s in scan.ability_specs if isinstance(s, ProjectPushDownSpec)
               for p in s.projected_fields)


def _merge(scans: list[L.LogicalScan], ctx: RuleContext) -> L.LogicalScan | None:
    if not all(_mergeable(s) for s in scans):
        return None
    template = scans[0]
    physical = template.table.table.schema.physical_row_type()
    filters = [_pushed_filter(s) for s in scans]
    specs: list[object] = []
    if all(f is not None for f in filters):
        # Every scan reads a slice: merge only if the source still prunes to the union of the slices.
        union = _combine("OR", [f for f in filters if f is not None])
        source = ctx.create_source(template.table)
        if not isinstance(source, SupportsFilterPushDown) or union is None:
            return None
        result = source.apply_filters([union])
        if result.remaining:
            return None  # separate scans read less than one unpruned scan would
        specs.append(FilterPushDownSpec((union,)))
    merged_filter = _combine("AND", [p for spec in specs if isinstance(spec, FilterPushDownSpec)
                                     for p in spec.predicates])
    # Each former scan's own filter is re-applied above the merged scan (unless the merged scan applies
    # exactly it), so the columns it reads are read too, even where its projection had dropped them.
    columns = sorted({c for s in scans for c in _physical_columns(s)}
                     | {c for s, f in zip(scans, filters) if f is not None and f != merged_filter
                        for c in input_refs(f)})
    if len(columns) < len(physical.fields):
        if not isinstance(ctx.create_source(template.table), SupportsProjectionPushDown):
            return None
        produced = row(*(RowField(physical.fields[i].name, physical.fields[i].type.without_time_attribute())
                         for i in columns))
        specs.append(ProjectPushDownSpec(tuple((i,) for i in columns), produced))
        return L.LogicalScan(template.table, tuple(specs), produced)  # type: ignore[arg-type]
    return L.LogicalScan(template.table, tuple(specs), None)  # type: ignore[arg-type]


def _restore_row(scan: L.LogicalScan, merged: L.LogicalScan) -> L.LogicalNode:
    """A Calc over ``merged`` producing exactly ``scan``'s rows: its columns, filtered by its pushed filter."""
    merged_columns = _physical_columns(merged)
    position = {c: i for i, c in enumerate(merged_columns)}
    mine = _physical_columns(scan)
    projection = tuple(InputRef(position[c], t) for c, t in zip(mine, scan.field_types))
    condition = _pushed_filter(scan)
    if condition is not None and condition == _pushed_filter(merged):
        condition = None  # the merged scan applies exactly this filter already
    if condition is not None:
        condition = remap_inputs(condition, position)
    calc = L.LogicalCalc(merged, projection, tuple(scan.field_names), condition)
    return merged if calc.is_identity() else calc
