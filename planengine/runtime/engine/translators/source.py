"""``stream-exec-table-source-scan``: a runtime connector reads the table; columns become ``f0..fn``.

The source object is rebuilt from the plan's table and its recorded ability specs (projection, partition
pruning, …), never re-planned, so a restored plan reads exactly what the compiled one did.
"""

from __future__ import annotations

from typing import Any

from planengine.connectors.base import ScanContext
from planengine.connectors.factories import FactoryContext
from planengine.connectors.restore import restore_table_sink, restore_table_source
from planengine.errors import ValidationError
from planengine.runtime.connectors import get_source_reader
from planengine.runtime.dataflow.stream import ROWKIND, Stream, column_name
from planengine.runtime.engine.translators import translator


def factory_context(table_spec: Any, ctx: Any) -> FactoryContext:
    ref = table_spec.resolved
    if ref is None:
        raise ValidationError(f"table {table_spec.identifier} is not resolved in this plan",
                              hint="restore the plan with its catalog, or compile it with catalog-objects ALL")
    return FactoryContext(ref.identifier, ref.table.with_options(ref.options), dict(ctx.config), ref.temporary,
                          require_environment=True)


def runtime_source(node: Any, ctx: Any) -> Any:
    return restore_table_source(factory_context(node.table, ctx), node.abilities)


def runtime_sink(node: Any, ctx: Any) -> Any:
    return restore_table_sink(factory_context(node.table, ctx), node.abilities)


@translator("stream-exec-table-source-scan", 1)
def translate_scan(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    source = runtime_source(node, ctx)
    provider = source.scan_runtime_provider(ScanContext(node_id=ctx.node_id(node)))
    frame = get_source_reader(provider.connector)(source, ctx, node)
    fields = tuple(node.field_names)
    data_cols = [c for c in frame.df.columns if c != ROWKIND]
    if len(data_cols) != len(fields):
        raise ValidationError(f"source {node.table.identifier} produced columns {data_cols}, but the plan expects "
                              f"{list(fields)}", hint="the table's schema changed since the plan was compiled")
    updating = not node.changelog_mode.contains_only_inserts()
    cols = [F.col(f"`{c}`").alias(column_name(i)) for i, c in enumerate(data_cols)]
    if updating:
        cols.append(F.col(ROWKIND) if frame.updating else F.lit("+I").alias(ROWKIND))
    return Stream(frame.df.select(*cols), fields, updating=updating)
