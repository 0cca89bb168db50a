"""Stateless exec nodes as DataFrame expressions: calc, values, union, exchange, drop-update-before, correlate.

Expressions are rendered to Spark SQL by ``planengine.runtime.dataflow.expressions.render_spark_sql`` over the
positional columns ``f0..fn``; the hidden columns (``_rowkind`` on updating edges, ``_record_wm`` below a
per-record watermark assigner) pass through untouched.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from typing import Any

from planengine.errors import ValidationError
from planengine.ir.expressions import Call, CorrelatedRef, FieldAccess, FunctionRef, InputRef
from planengine.ir.types import Kind
from planengine.runtime.connectors import spark_schema_ddl
from planengine.runtime.dataflow.expressions import render_spark_sql
from planengine.runtime.dataflow.stream import RECORD_WATERMARK, ROWKIND, Stream, column_name, hidden_columns
from planengine.runtime.engine.python_functions import produced_row_type, table_function_udf_name
from planengine.runtime.engine.translators import translator
from planengine.runtime.operators.window_watermark import WATERMARK_COLUMN, with_assigner_watermark


def _expr(e: Any, columns: list[str]) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    return F.expr(render_spark_sql(e, columns))


def _keep_hidden(stream: Stream) -> list[Any]:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    return [F.col(c) for c in hidden_columns(stream)]


@translator("stream-exec-calc", 1)
def translate_calc(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    inp = inputs[0]
    projection, condition, columns = list(node.projection), node.condition, inp.columns
    watermark = _current_watermark_type(node)
    if watermark is not None and _below_assigner_v2(inp):
        # CURRENT_WATERMARK(ts): Flink's value per row (operators/window_watermark.py), as one more input column

        assert inp.facts.watermark is not None  # _below_assigner_v2
        delay, interval = inp.facts.watermark.delay_ms, inp.facts.watermark.interval_ms
        run_id = getattr(ctx.run_dir, "name", "") if ctx is not None else ""
        json_state = inp.facts.watermark.assigner_version >= 3  # version 2 kept the replay's state pickled
        inp = with_assigner_watermark(inp, delay, interval, str(run_id), watermark, json_state)
        projection = [_replace_current_watermark(e, len(columns)) for e in projection]
        condition = None if condition is None else _replace_current_watermark(condition, len(columns))
        columns = [*columns, WATERMARK_COLUMN]
    df = inp.df
    if condition is not None:
        df = df.filter(_expr(condition, columns))
    cols = [_expr(e, columns).alias(column_name(i)) for i, e in enumerate(projection)]
    rowtime = None
    for i, e in enumerate(projection):
        if isinstance(e, InputRef) and e.index < len(inp.columns) and inp.rowtime == inp.columns[e.index]:
            rowtime = column_name(i)
            break
    return Stream(df.select(*cols, *_keep_hidden(inp)), tuple(node.field_names), inp.updating, rowtime,
                  inp.facts, inp.record_watermark)


def _calls(e: Any) -> Any:
    if isinstance(e, Call):
        yield e
        for o in e.operands:
            yield from _calls(o)
    elif isinstance(e, FieldAccess):
        yield from _calls(e.expr)


def _current_watermark_type(node: Any) -> str | None:
    """The Spark type of CURRENT_WATERMARK in this Calc (TIMESTAMP for LTZ, else TIMESTAMP_NTZ), None without it."""
    exprs = [*node.projection, *([node.condition] if node.condition is not None else [])]
    for e in exprs:
        for call in _calls(e):
            if call.function.name.upper() == "CURRENT_WATERMARK":
                return "TIMESTAMP" if call.type.kind is Kind.TIMESTAMP_LTZ else "TIMESTAMP_NTZ"
    return None


def _below_assigner_v2(stream: Stream) -> bool:
    """Rows straight from a watermark-assigner_2 through stateless nodes: CURRENT_WATERMARK is computed.
    (Plans with version 1 keep their NULL; after a stateful operator it stays NULL on this engine.)"""
    watermark = stream.facts.watermark
    return (stream.rowtime is not None and watermark is not None and watermark.assigner_version >= 2
            and not stream.facts.stateful)


def _replace_current_watermark(e: Any, index: int) -> Any:
    if isinstance(e, Call):
        if e.function.name.upper() == "CURRENT_WATERMARK":
            return InputRef(index, e.type)
        return replace(e, operands=tuple(_replace_current_watermark(o, index) for o in e.operands))
    if isinstance(e, FieldAccess):
        return replace(e, expr=_replace_current_watermark(e.expr, index))
    return e


@translator("stream-exec-exchange", 1)
def translate_exchange(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    # Spark plans its own shuffles for the stateful operators that need them.
    return inputs[0]


@translator("stream-exec-drop-update-before", 1)
def translate_drop_update_before(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    inp = inputs[0]
    if not inp.updating:
        return inp
    return inp.with_df(inp.df.filter(F.col(ROWKIND) != "-U"))


@translator("stream-exec-union", 1)
def translate_union(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    updating = any(s.updating for s in inputs)
    record_watermark = any(s.record_watermark for s in inputs)
    fields = tuple(node.field_names)
    frames = []
    for s in inputs:
        cols = [F.col(c).alias(column_name(i)) for i, c in enumerate(s.columns)]
        if updating:
            cols.append(F.col(ROWKIND) if s.updating else F.lit("+I").alias(ROWKIND))
        if record_watermark:  # an input without per-record watermarks meets only its batch watermark
            cols.append(F.col(RECORD_WATERMARK) if s.record_watermark
                        else F.lit(None).cast("bigint").alias(RECORD_WATERMARK))
        frames.append(s.df.select(*cols))
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    rowtimes = {s.rowtime for s in inputs}
    rowtime = rowtimes.pop() if len(rowtimes) == 1 else None
    return Stream(df, fields, updating, rowtime, record_watermark=record_watermark)


@translator("stream-exec-values", 1)
def translate_values(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    """A bounded stream: the literal rows are written once to ``<job root>/inputs/<uid>/`` and streamed.

    Written once and never rewritten, so a restored run's file source recognises the file it already read
    and the rows are not produced twice.
    """
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    spark = ctx.spark
    n = len(node.field_names)
    directory = bounded_input_directory(ctx, ctx.uid(node, "values"))
    if not os.path.isdir(directory):
        frames = []
        for row in node.tuples:
            frames.append(spark.range(1).select(*[F.expr(render_spark_sql(v, [])).alias(column_name(i))
                                                  for i, v in enumerate(row)]))
        if frames:
            df = frames[0]
            for other in frames[1:]:
                df = df.unionByName(other)
        else:

            df = spark.createDataFrame([], spark_schema_ddl([column_name(i) for i in range(n)], node.field_types))
        write_once(df.coalesce(1), directory)
    schema = spark.read.parquet(directory).schema
    stream = spark.readStream.schema(schema).parquet(directory)
    return Stream(stream, tuple(node.field_names), False, None)


def bounded_input_directory(ctx: Any, uid: str) -> str:
    return os.path.join(str(ctx.inputs_root), "inputs", uid)


def write_once(df: Any, directory: str) -> None:
    tmp = directory + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    df.write.parquet(tmp)
    for name in os.listdir(tmp):
        if not name.endswith(".parquet"):
            os.remove(os.path.join(tmp, name))
    os.makedirs(os.path.dirname(directory), exist_ok=True)
    os.replace(tmp, directory)


@translator("stream-exec-correlate", 1)
def translate_correlate(node: Any, inputs: list[Stream], ctx: Any) -> Stream:
    """``CROSS JOIN UNNEST`` / ``LEFT JOIN UNNEST ... ON TRUE``: explode (or explode_outer for LEFT)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    inp = inputs[0]
    n_in = len(inp.fields)
    invocation = _uncorrelate(node.invocation)
    if getattr(node, "table_function", False):
        # LATERAL TABLE(f(args)): the registered UDF returns the array of produced rows; explode it like UNNEST.

        invocation = Call(FunctionRef(table_function_udf_name(invocation.function), None, system=True),
                          invocation.operands, produced_row_type(invocation.type))
    collection = _expr(invocation, inp.columns)
    t = invocation.type
    outer = node.join_type.upper() in ("LEFT", "LEFT_OUTER")
    base = [F.col(c) for c in inp.columns] + _keep_hidden(inp)
    if node.with_ordinality:
        fn = F.posexplode_outer if outer else F.posexplode
        df = inp.df.select(*base, fn(collection).alias(*(("_pos", "_k", "_v") if t.kind is Kind.MAP
                                                          else ("_pos", "_e"))))
    else:
        fn = F.explode_outer if outer else F.explode
        df = inp.df.select(*base, fn(collection).alias(*(("_k", "_v") if t.kind is Kind.MAP else ("_e",))))
    produced: list[Any] = []
    if t.kind is Kind.MAP:
        produced = [F.col("_k"), F.col("_v")]
    elif t.element is not None and t.element.kind is Kind.ROW:
        names = df.schema["_e"].dataType.fieldNames()
        produced = [F.col("_e").getField(name) for name in names]
    else:
        produced = [F.col("_e")]
    if node.with_ordinality:
        produced.append(F.col("_pos") + 1)
    n_out = len(node.field_names)
    if n_in + len(produced) != n_out:
        raise ValidationError(f"UNNEST produces {len(produced)} columns, but the plan expects {n_out - n_in}")
    cols = [F.col(c) for c in inp.columns] + [c.alias(column_name(n_in + j)) for j, c in enumerate(produced)]
    df = df.select(*cols, *_keep_hidden(inp))
    out_columns = [column_name(i) for i in range(n_out)]
    if node.condition is not None:
        df = df.filter(_expr(node.condition, out_columns))
    return Stream(df, tuple(node.field_names), inp.updating, inp.rowtime, inp.facts,
                  inp.record_watermark)


def _uncorrelate(expr: Any) -> Any:
    """UNNEST operands reference the outer row through CORRELATED_REF; here that row is the input itself."""

    if isinstance(expr, FieldAccess) and isinstance(expr.expr, CorrelatedRef):
        names = expr.expr.type.field_names()
        return InputRef(names.index(expr.name), expr.type)
    return expr
