"""``stream-exec-lookup-join``: ``JOIN dim FOR SYSTEM_TIME AS OF probe.proc`` (processing-time lookups).

Output: the probe row followed by the dimension table's row (its physical columns, or
``projectionOnTemporalTable``), ``_rowkind`` passed through on updating probes. Per connector:

* ``jdbc``: an Arrow UDF (``operators/lookup_function.py``) fetches, per Arrow batch of each micro-batch,
  the rows of all distinct keys with one ``WHERE (k…) IN (…)`` statement per 1000 keys, through the
  connector's bounded cache (``lookup.cache`` = ``PARTIAL``; one cache per Python worker process). The
  result, ``ARRAY<STRUCT<t0…>>`` per probe row, is filtered with the remaining join condition (a Spark
  lambda over the probe's columns and the dimension row) and exploded: ``explode`` for INNER,
  ``explode_outer`` for LEFT (no surviving match → one row of nulls). Probe columns are never rebuilt, so
  the watermark on the probe's rowtime survives the join.
* ``filesystem``: the table's directory read whole as a static DataFrame (small tables) and broadcast-
  joined to the stream on the keys AND the remaining condition (Spark's stream-static inner/left join).

Lookups see the dimension table as it is when the lookup runs (processing time): a changed PostgreSQL
row is seen once its cache entry expires (or immediately without a cache).
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from planengine.connectors.base import LookupContext
from planengine.connectors.restore import restore_table_source
from planengine.errors import ValidationError
from planengine.ir.expressions import Literal
from planengine.runtime.connectors.filesystem_lookup import read_dimension
from planengine.runtime.connectors.jdbc import JdbcLookupFunction
from planengine.runtime.dataflow.expressions import render_spark_expression, render_spark_sql, render_spark_type
from planengine.runtime.dataflow.stream import ROWKIND, Stream, column_name
from planengine.runtime.engine.translators import translator
from planengine.runtime.engine.translators.source import factory_context
from planengine.runtime.operators.lookup_function import field_name, lookup_udf

LAMBDA_VAR = "__d"
CANDIDATES = "__lookup_rows"
MATCH = "__lookup_row"


def dimension_source(node: Any, ctx: Any) -> Any:
    return restore_table_source(factory_context(node.table, ctx), ())


@translator("stream-exec-lookup-join", 1)
def translate_lookup_join(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    inp = inputs[0]
    source = dimension_source(node, ctx)
    if node.join_type not in ("INNER", "LEFT"):
        raise ValidationError(f"lookup join of type {node.join_type} is not supported; use INNER or LEFT")
    table_names = source.row.physical_names
    provider = source.lookup_runtime_provider(LookupContext(tuple((k,) for k, _ in node.lookup_keys)))
    nl = len(inp.fields)
    out_fields = tuple(node.output_type.field_names())
    projection = list(node.projection_on_table) or list(range(len(table_names)))
    if len(out_fields) != nl + len(projection):
        raise ValidationError(f"lookup join on {node.table.identifier}: the plan expects {len(out_fields) - nl} "
                              f"table columns, the table has {len(table_names)}",
                              hint="the dimension table's schema changed since the plan was compiled")
    if provider.connector == "jdbc":
        df = _jdbc_join(node, inp, source, provider, ctx, projection)
    elif provider.connector == "filesystem":
        df = _filesystem_join(node, inp, source, ctx, projection)
    else:
        raise ValidationError(f"connector '{provider.connector}' cannot serve lookups in this engine's Spark runtime",
                              hint="use a jdbc or filesystem dimension table")
    return Stream(df, out_fields, updating=inp.updating, rowtime=inp.rowtime, facts=inp.facts)


def _spark_row_schema(source: Any) -> Any:
    from pyspark.sql import types as T  # noqa: PLC0415 — pyspark is an optional extra

    physical = source.schema.physical_row_type()
    fields = []
    for i in source.row.physical_indices:
        f = physical.fields[i]
        fields.append(T.StructField(f.name, T._parse_datatype_string(render_spark_type(f.type)), True))
    return T.StructType(fields)


def _lambda_condition(condition: Any, nl: int, width: int) -> str:
    """The remaining condition over ``probe ++ dimension row`` as a Spark lambda body over ``__d``."""

    placeholders = {f"__lookup_field_{i}": field_name(i) for i in range(width)}
    tree = render_spark_expression(condition, [column_name(i) for i in range(nl)] + list(placeholders))

    def swap(e: exp.Expression) -> exp.Expression:
        if isinstance(e, exp.Column) and not e.table and e.name in placeholders:
            return exp.column(placeholders[e.name], table=LAMBDA_VAR, quoted=True)
        return e

    return tree.transform(swap).sql(dialect="spark")


def _jdbc_join(node: Any, inp: Stream, source: Any, provider: Any, ctx: Any, projection: list[int]) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    row_schema = _spark_row_schema(source)
    fn = JdbcLookupFunction.for_source(source, provider.key_names, ctx.uid(node, "lookup-join"),
                                       dict(provider.options), row_schema)
    parts: list[tuple[str, Any]] = []
    args = []
    for _, probe in node.lookup_keys:
        if isinstance(probe, int):
            parts.append(("col", len(args)))
            args.append(F.col(column_name(probe)))
        else:
            parts.append(("const", _constant(probe)))
    if not args:
        args.append(F.lit(0))  # an Arrow UDF needs one argument; every key part is a constant
    nl = len(inp.fields)
    candidates = lookup_udf(fn, parts, row_schema)(F.struct(*[a.alias(f"k{i}") for i, a in enumerate(args)]))
    df = inp.df.withColumn(CANDIDATES, candidates)
    if node.remaining_condition is not None:
        body = _lambda_condition(node.remaining_condition, nl, len(row_schema.fields))
        df = df.withColumn(CANDIDATES, F.expr(f"filter(`{CANDIDATES}`, {LAMBDA_VAR} -> {body})"))
    explode = F.explode_outer if node.join_type == "LEFT" else F.explode
    df = df.select(*inp.columns, *([ROWKIND] if inp.updating else []), explode(CANDIDATES).alias(MATCH))
    cols = [F.col(c) for c in inp.columns]
    cols += [F.col(MATCH).getField(field_name(t)).alias(column_name(nl + j)) for j, t in enumerate(projection)]
    if inp.updating:
        cols.append(F.col(ROWKIND))
    return df.select(*cols)


def _constant(expr: Any) -> Any:
    if not isinstance(expr, Literal):
        raise ValidationError(f"lookup key {expr} is neither a probe column nor a literal")
    return expr.value


def _filesystem_join(node: Any, inp: Stream, source: Any, ctx: Any, projection: list[int]) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    nl = len(inp.fields)
    dim = read_dimension(ctx.spark, source)
    dim_cols = [f"__dim_{i}" for i in range(len(dim.columns))]
    dim = dim.toDF(*dim_cols)
    cond = None
    for table_field, probe in node.lookup_keys:
        right = F.col(dim_cols[table_field])
        left = F.col(column_name(probe)) if isinstance(probe, int) else F.expr(render_spark_sql(probe, []))
        c = left == right
        cond = c if cond is None else cond & c
    if node.remaining_condition is not None:
        text = render_spark_sql(node.remaining_condition, [column_name(i) for i in range(nl)] + dim_cols)
        cond = cond & F.expr(text) if cond is not None else F.expr(text)
    how = "left" if node.join_type == "LEFT" else "inner"
    joined = inp.df.join(F.broadcast(dim), cond, how)
    cols = [F.col(c) for c in inp.columns]
    cols += [F.col(dim_cols[t]).alias(column_name(nl + j)) for j, t in enumerate(projection)]
    if inp.updating:
        cols.append(F.col(ROWKIND))
    return joined.select(*cols)
