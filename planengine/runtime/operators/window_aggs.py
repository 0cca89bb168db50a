"""Aggregate calls for the time-based operators, in two forms.

* ``native_aggregate``: a Spark aggregate column (for Spark's own windowed aggregation in append mode).
  ``COUNT(DISTINCT x)`` becomes ``size(collect_set(x))`` because Spark's streaming aggregation rejects
  distinct aggregates (it would plan them as two aggregations); results are cast to the Flink type, so
  ``AVG(INT)`` stays an INT like Flink's.
* ``evaluate``: the same call over a Python list of rows, for operators running on transformWithState
  (over aggregates, sessions over all keys), with the library's Python accumulators. Written for small
  per-key frames: it recomputes from the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.errors import ValidationError
from planengine.functions import python_udf
from planengine.functions.spark_types import render_spark_type

_NATIVE = {"COUNT", "SUM", "SUM0", "AVG", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE", "LISTAGG", "BOOL_AND",
           "BOOL_OR", "STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP"}


def native_aggregate(call: Any, columns: Sequence[str]) -> Any:
    """A Spark aggregate column for ``call`` over input columns ``columns`` (by position)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    fn = call.function.upper()
    if fn not in _NATIVE:
        raise ValidationError(f"aggregate {call.function} is not supported in a window aggregate on this engine",
                              hint="use COUNT, SUM, AVG, MIN, MAX, FIRST_VALUE, LAST_VALUE or LISTAGG")
    args = [F.col(f"`{columns[a]}`") for a in call.args]
    if call.filter_arg is not None:
        cond = F.col(f"`{columns[call.filter_arg]}`")
        args = [F.when(cond, a) for a in args] if args else [F.when(cond, F.lit(1))]
    target = render_spark_type(call.type)
    if fn == "COUNT":
        if call.distinct:
            if len(args) == 1:
                col = F.size(F.collect_set(args[0]))
            else:  # COUNT(DISTINCT a, b): rows where every argument is non-null
                ok = F.when(F.greatest(*[a.isNull() for a in args]) == F.lit(False), F.struct(*args))
                col = F.size(F.collect_set(ok))
        elif not args:
            col = F.count(F.lit(1))
        elif len(args) == 1:
            col = F.count(args[0])
        else:
            col = F.count(F.when(F.greatest(*[a.isNull() for a in args]) == F.lit(False), F.lit(1)))
        return col.cast(target)
    arg = args[0]
    if call.distinct and fn in ("SUM", "SUM0", "AVG"):
        values = F.collect_set(arg)
        total = F.aggregate(values, F.lit(None).cast(target),
                            lambda acc, x: F.when(acc.isNull(), x.cast(target)).otherwise(acc + x))
        if fn == "SUM":
            return total.cast(target)
        if fn == "SUM0":
            return F.coalesce(total, F.lit(0)).cast(target)
        return (total / F.size(values)).cast(target)
    if fn == "SUM":
        col = F.sum(arg)
    elif fn == "SUM0":
        col = F.coalesce(F.sum(arg), F.lit(0))
    elif fn == "AVG":
        col = F.avg(arg)
    elif fn == "MIN":
        col = F.min(arg)
    elif fn == "MAX":
        col = F.max(arg)
    elif fn == "FIRST_VALUE":
        col = F.first(arg, ignorenulls=True)
    elif fn == "LAST_VALUE":
        col = F.last(arg, ignorenulls=True)
    elif fn == "LISTAGG":
        sep = call.constants[0].value if call.constants else ","
        col = F.concat_ws(sep, F.collect_list(arg))
        col = F.when(F.size(F.collect_list(arg)) > 0, col)
    elif fn == "BOOL_AND":
        col = F.bool_and(arg)
    elif fn == "BOOL_OR":
        col = F.bool_or(arg)
    else:
        col = getattr(F, fn.lower())(arg)
    return col.cast(target)


# --- Python evaluation --------------------------------------------------------------------------------------
def evaluate(call: Any, rows: Sequence[Sequence[Any]], input_types: Sequence[Any] | None = None) -> Any:
    """``call`` over ``rows`` (tuples in input field order), with Flink's null and type rules: the library's
    Python accumulators (``runtime/operators/aggregates/accumulators.py``), the same the transformWithState group
    aggregate keeps in state; a Python aggregate function is called directly."""
    from planengine.runtime.operators.aggregates.accumulators import evaluate_rows  # noqa: PLC0415 — aggregates.accumulators loads pandas/pyarrow/numpy

    user = getattr(call, "user_function", None)
    if user is not None:
        rows = [r for r in rows if r[call.filter_arg]] if call.filter_arg is not None else rows
        return _evaluate_python_aggregate(user, call, rows)
    if call.function.upper() == "LAG":  # an OVER-only function: the frame's rows in order, not an accumulator
        rows = [r for r in rows if r[call.filter_arg]] if call.filter_arg is not None else rows
        return _lag(call, rows)
    return evaluate_rows(call, rows, input_types)


def _lag(call: Any, rows: Sequence[Sequence[Any]]) -> Any:
    """``LAG(x [, offset [, default]])`` of the frame's last row: ``x`` of the row ``offset`` rows before it in
    processing order (Flink's LagAggFunction over the rows accumulated so far), else the default (or NULL).
    The offset and default are projected input fields (literals in practice)."""
    if not rows:
        return None
    current = rows[-1]
    offset = current[call.args[1]] if len(call.args) > 1 else 1
    default = current[call.args[2]] if len(call.args) > 2 else None
    offset = 1 if offset is None else int(offset)
    return rows[-1 - offset][call.args[0]] if 0 <= offset < len(rows) else default


def _evaluate_python_aggregate(user: Any, call: Any, rows: Sequence[Sequence[Any]]) -> Any:
    """A Python aggregate function over the frame's rows: fresh accumulator, accumulate each row, value."""

    if not user.class_name:
        raise ValidationError(f"aggregate function {call.function} was not resolved to a Python class")
    fn = python_udf.load(user.class_name).instance
    acc = fn.create_accumulator()
    for r in rows:
        fn.accumulate(acc, *(r[a] for a in call.args))
    return fn.get_value(acc)
