"""The aggregate library: every built-in aggregate function by (name, version), and each form it runs in.

Before this module the aggregate semantics lived in four places that disagreed (the transformWithState
accumulators, ``window_aggs.evaluate``, ``window_aggs.native_aggregate`` and the native group aggregate),
e.g. on integer overflow and on VAR/STDDEV. Now a function ``(name, version)`` has:

* its **type inference** in the planner's function registry (``planengine/functions/builtins/aggregates.py``,
  same keys; ``tests/runtime/test_aggregate_library.py`` checks they match);
* its **JVM accumulator** (``io.planengine.jvm.agg.AggregateFunctions``: create / accumulate / retract /
  merge / value), used by the JVM group aggregate (``group-aggregate_3``);
* its **Python accumulator** (``accumulators.py``), for the operators still in Python (the transformWithState
  group aggregate of plans written before version 3 and of Python aggregate functions; OVER frames and sessions
  over all keys recompute with it through ``window_aggs.evaluate``);
* its **Spark-native form** (``native_form``: aggregate columns plus a result expression over them), used by
  ``group-aggregate_3``'s native strategy and by ``window-aggregate_2`` / ``group-window-aggregate_2``; where
  the native form cannot be exact, ``native_inexact`` says why (nodes that need exactness refuse it).

Flink's semantics, as implemented by every form (and checked on the same rows by the test above):

* NULL arguments are skipped; FILTER keeps rows whose condition is TRUE; COUNT(*) counts rows.
* SUM keeps the result type (SUM(INT) is INT) and wraps on overflow like Java's arithmetic (Flink's
  ``SumAggFunction`` adds with ``+`` on the primitive); SUM0 is 0 for no values. DECIMAL sums are
  DECIMAL(38, s); a sum that needs more digits is NULL in Flink (the JVM and Python accumulators do that; the
  native form fails the query instead, Spark's ANSI decimal overflow).
* AVG sums integers as a wrapping BIGINT and divides like Java (truncating toward zero); DECIMAL averages
  round HALF_UP to ``max(6, s)`` digits; floating point averages divide in double.
* VAR_POP/VAR_SAMP/STDDEV_POP/STDDEV_SAMP are Calcite's reduction ``(SUM(x*x) - SUM(x)*SUM(x)/COUNT(x)) /
  (COUNT(x) or COUNT(x)-1)`` (and its square root) evaluated in the result type: integer arithmetic over
  integers (VAR_SAMP(0, 1) over INT is 1), double otherwise; SAMP of one value is NULL.
* MIN/MAX order strings by code point (Spark's and Flink's byte order of UTF-8).
* Order-dependent functions (FIRST_VALUE, LAST_VALUE, LISTAGG) and floating point sums depend on the order
  rows arrive in, which Spark's partial aggregation does not keep: their native forms are marked inexact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from planengine.errors import ValidationError
from planengine.functions.spark_types import render_spark_type
from planengine.ir.types import CHARACTER, INTEGRAL, DataType, Kind

# Every built-in aggregate, version 1: the keys of the planner's registry and of the JVM library.
BUILTIN_AGGREGATES = frozenset((name, 1) for name in (
    "COUNT", "SUM", "SUM0", "AVG", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE", "LISTAGG", "COLLECT",
    "STDDEV_POP", "STDDEV_SAMP", "VAR_POP", "VAR_SAMP", "BOOL_AND", "BOOL_OR"))
# Names the planner may also produce for the same functions.
ALIASES = {"$SUM0": "SUM0", "STDDEV": "STDDEV_SAMP", "VARIANCE": "VAR_SAMP"}
ORDER_DEPENDENT = frozenset(("FIRST_VALUE", "LAST_VALUE", "LISTAGG"))
_BITS = {Kind.TINYINT: 8, Kind.SMALLINT: 16, Kind.INT: 32, Kind.BIGINT: 64}
_EXACT_ORDER_KINDS = frozenset((*INTEGRAL, Kind.DECIMAL, *CHARACTER, Kind.BOOLEAN, Kind.DATE, Kind.TIMESTAMP,
                                Kind.TIMESTAMP_LTZ))


def canonical_name(call: Any) -> str:
    name = str(call.function).upper()
    return ALIASES.get(name, name)


@dataclass(frozen=True)
class NativeForm:
    """Spark aggregate columns (aliased) and the result expression over those aliases."""

    aggregates: tuple[Any, ...]
    result: Any


def native_inexact(call: Any, input_types: Sequence[DataType]) -> str | None:
    """Why ``native_form(call)`` may differ from Flink (order of arrival, floating point), or None if exact."""
    name = canonical_name(call)
    if call.user_function is not None:
        return "a Python aggregate function has no native form"
    if name == "COLLECT":
        return "COLLECT has no native form"
    if name in ORDER_DEPENDENT:
        return f"{name} depends on the arrival order, which Spark's aggregation does not keep"
    if name == "COUNT" or name in ("BOOL_AND", "BOOL_OR"):
        return None
    arg = input_types[call.args[0]].kind if call.args else None
    if name in ("MIN", "MAX"):
        return None if arg in _EXACT_ORDER_KINDS else f"{name} over {arg} orders NaN and -0.0 differently in Spark"
    result = call.type.kind
    if result in (Kind.FLOAT, Kind.DOUBLE) or arg in (Kind.FLOAT, Kind.DOUBLE):
        return f"{name} over floating point depends on the summation order"
    if name == "AVG" and result is Kind.DECIMAL:
        return "a DECIMAL average rounds twice in Spark (its division scale, then the result's)"
    if name.startswith(("VAR", "STDDEV")) and result is Kind.DECIMAL:
        return f"{name} over DECIMAL follows Flink's decimal steps only approximately"
    return None


def native_form(index: int, call: Any, columns: Sequence[str], input_types: Sequence[DataType]) -> NativeForm:
    """The Spark-native form of ``call`` over input ``columns`` (by position); aliases start with ``_a<index>``.

    Raises ``ValidationError`` for a function without one (COLLECT, Python aggregates)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    name = canonical_name(call)
    if call.user_function is not None or name == "COLLECT" or (name, 1) not in BUILTIN_AGGREGATES:
        raise ValidationError(f"aggregate {call.function} has no Spark-native form on this engine",
                              hint="use COUNT, SUM, AVG, MIN, MAX, FIRST_VALUE, LAST_VALUE, LISTAGG, BOOL_AND/OR, "
                                   "VAR_* or STDDEV_*")
    alias, target = f"_a{index}", render_spark_type(call.type)
    args = [F.col(f"`{columns[a]}`") for a in call.args]
    cond = F.col(f"`{columns[call.filter_arg]}`") if call.filter_arg is not None else None

    def only_if(col: Any) -> Any:
        return col if cond is None else F.when(cond, col)  # FILTER: rows where the condition is TRUE

    if name == "COUNT":
        if not args:
            counted = only_if(F.lit(1))
        elif len(args) == 1:
            counted = only_if(args[0])
        else:  # COUNT(a, b): rows where every argument is non-null
            counted = only_if(F.when(F.greatest(*[a.isNull() for a in args]) == F.lit(False), F.struct(*args)))
        column = F.size(F.collect_set(counted)) if call.distinct else F.count(counted)
        return NativeForm((column.alias(alias),), F.col(alias).cast(target))
    arg = only_if(args[0])
    if call.distinct:
        return _distinct_form(name, alias, arg, call.type)
    if name in ("SUM", "SUM0"):
        return _sum_form(name, alias, arg, call.type)
    if name == "AVG":
        return _avg_form(alias, arg, call.type, input_types[call.args[0]])
    if name in ("MIN", "MAX"):
        return NativeForm(((F.min if name == "MIN" else F.max)(arg).alias(alias),), F.col(alias).cast(target))
    if name.startswith(("VAR", "STDDEV")):
        return _variance_form(name, alias, arg, call.type)
    simple = {"FIRST_VALUE": lambda a: F.first(a, ignorenulls=True),
              "LAST_VALUE": lambda a: F.last(a, ignorenulls=True), "BOOL_AND": F.bool_and, "BOOL_OR": F.bool_or}
    if name in simple:
        return NativeForm((simple[name](arg).alias(alias),), F.col(alias).cast(target))
    # LISTAGG
    sep = call.constants[0].value if call.constants else ","
    values = F.collect_list(arg)
    return NativeForm((values.alias(alias),),
                      F.when(F.size(F.col(alias)) > 0, F.concat_ws(sep, F.col(alias))).cast(target))


# --- exact integer arithmetic ----------------------------------------------------------------------------------
def wrap_sql(exact_sql: str, bits: int) -> str:
    """An exact integer (SQL over DECIMAL(38, 0)) folded into ``bits`` two's complement, as Java wraps."""
    half, full = 1 << (bits - 1), 1 << bits
    return f"(pmod({exact_sql} + {half}, {full}) - {half})"


def _split_long_sum(alias: str, value: Any) -> tuple[tuple[Any, ...], str]:
    """The exact sum of BIGINT ``value`` under Spark's ANSI arithmetic: sums of the low and high 32 bits (neither
    overflows before 2^31 rows), recombined as DECIMAL(38, 0) SQL over the two aliases."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    v = value.cast("bigint")
    lo, hi = f"{alias}_lo", f"{alias}_hi"
    exact = f"(CAST(`{hi}` AS DECIMAL(38,0)) * {1 << 32} + CAST(`{lo}` AS DECIMAL(38,0)))"
    return (F.sum(v.bitwiseAND(F.lit(0xFFFFFFFF))).alias(lo), F.sum(F.shiftright(v, 32)).alias(hi)), exact


def _sum_form(name: str, alias: str, arg: Any, result: DataType) -> NativeForm:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    target = render_spark_type(result)
    bits = _BITS.get(result.kind)
    if bits is not None:  # wraps at the result's width, like Flink's primitive +
        aggregates, exact = _split_long_sum(alias, arg)
        total = F.expr(f"CAST({wrap_sql(exact, bits)} AS {target})")
    else:
        aggregates = (F.sum(arg).alias(alias),)
        total = F.col(alias).cast(target)
    if name == "SUM0":
        total = F.coalesce(total, F.lit(0).cast(target))
    return NativeForm(aggregates, total)


def _avg_form(alias: str, arg: Any, result: DataType, arg_type: DataType) -> NativeForm:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    target = render_spark_type(result)
    count = f"{alias}_count"
    if arg_type.kind in INTEGRAL:  # a wrapping BIGINT sum, Java's long division
        sums, exact = _split_long_sum(alias, arg)
        quotient = F.expr(f"CAST({wrap_sql(exact, 64)} AS BIGINT) div `{count}`")
        return NativeForm((*sums, F.count(arg).alias(count)),
                          F.when(F.col(count) == 0, F.lit(None)).otherwise(quotient).cast(target))
    return NativeForm((F.avg(arg).alias(alias),), F.col(alias).cast(target))


def _distinct_form(name: str, alias: str, arg: Any, result: DataType) -> NativeForm:
    """DISTINCT through the set of values (Spark's streaming aggregation rejects distinct aggregates)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    target = render_spark_type(result)
    values = F.col(alias)
    if name in ("MIN", "MAX"):  # DISTINCT changes nothing
        return NativeForm(((F.min if name == "MIN" else F.max)(arg).alias(alias),), values.cast(target))
    if name not in ("SUM", "SUM0", "AVG"):
        raise ValidationError(f"{name}(DISTINCT ...) has no native form on this engine",
                              hint="drop DISTINCT, or aggregate the distinct values in a sub-query")
    bits = _BITS.get(result.kind)
    if bits is not None:
        acc_type = "DECIMAL(38,0)"  # exact, folded into the result's width below
    elif result.kind is Kind.DECIMAL:
        acc_type = target
    else:
        acc_type = "DOUBLE"
    total = F.aggregate(values, F.lit(0).cast(acc_type), lambda acc, x: acc + x.cast(acc_type))
    empty = F.size(values) == 0
    if name == "AVG":
        if bits is not None:  # a wrapping BIGINT sum of the distinct values, Java's long division
            average = _java_div(_wrap_column(total, 64), F.size(values))
        else:
            average = total / F.size(values)
        return NativeForm((F.collect_set(arg).alias(alias),),
                          F.when(empty, F.lit(None)).otherwise(average).cast(target))
    out = _wrap_column(total, bits) if bits is not None else total
    out = F.when(empty, F.lit(None)).otherwise(out).cast(target)
    if name == "SUM0":
        out = F.coalesce(out, F.lit(0).cast(target))
    return NativeForm((F.collect_set(arg).alias(alias),), out)


def _wrap_column(exact: Any, bits: int) -> Any:
    """An exact integer column folded into ``bits`` two's complement (as DECIMAL(38, 0))."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    half, full = F.lit(1 << (bits - 1)).cast("decimal(38,0)"), F.lit(1 << bits).cast("decimal(38,0)")
    return F.pmod(exact.cast("decimal(38,0)") + half, full) - half


def _java_div(a: Any, b: Any) -> Any:
    """Java's integer division (truncating toward zero) of integer columns, exact: the remainder is taken off
    before a DECIMAL division, so nothing rounds."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    a, b = a.cast("decimal(38,0)"), b.cast("decimal(38,0)")
    positive = (a - F.pmod(a, b)) / b
    negative = -((-a - F.pmod(-a, b)) / b)
    return F.when(a >= 0, positive).otherwise(negative).cast("decimal(38,0)")


def _variance_form(name: str, alias: str, arg: Any, result: DataType) -> NativeForm:
    """Calcite's reduction, in the result type: integer steps over integers (wrapping, truncating), double
    otherwise."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    target = render_spark_type(result)
    n, s, sq = f"{alias}_n", f"{alias}_s", f"{alias}_sq"
    sample = name.endswith("SAMP")
    root = name.startswith("STDDEV")
    bits = _BITS.get(result.kind)
    if bits is not None:
        v = arg.cast("decimal(38,0)")
        x = _wrap_column(v, bits)
        aggregates = (F.count(arg).alias(n), F.sum(x).alias(s), F.sum(_wrap_column(x * x, bits)).alias(sq))
        s_r = f"CAST({wrap_sql(f'`{s}`', bits)} AS BIGINT)"
        sq_r = f"CAST({wrap_sql(f'`{sq}`', bits)} AS BIGINT)"
        square_of_sum = f"CAST({wrap_sql(f'CAST({s_r} AS DECIMAL(38,0)) * {s_r}', bits)} AS BIGINT)"
        denominator = f"(`{n}` - 1)" if sample else f"`{n}`"
        variance = f"(({sq_r} - ({square_of_sum} div `{n}`)) div {denominator})"
        if root:
            value = f"CAST(nanvl(CAST(pow({variance}, 0.5) AS DOUBLE), 0D) AS BIGINT)"
            out = f"CAST({value} AS {target})"
        else:
            out = f"CAST({wrap_sql(f'CAST({variance} AS DECIMAL(38,0))', bits)} AS {target})"
    else:
        x = arg.cast("double")
        aggregates = (F.count(arg).alias(n), F.sum(x).alias(s), F.sum(x * x).alias(sq))
        denominator = f"(`{n}` - 1)" if sample else f"`{n}`"
        variance = f"((`{sq}` - `{s}` * `{s}` / `{n}`) / {denominator})"
        out = f"CAST({'pow(' + variance + ', 0.5)' if root else variance} AS {target})"
    empty = f"`{n}` <= 1" if sample else f"`{n}` = 0"
    return NativeForm(aggregates, F.expr(f"CASE WHEN {empty} THEN NULL ELSE {out} END"))
