"""One aggregate library, every path: the same rows through each form an aggregate runs in, equal results.

Paths: the JVM group aggregate (``group-aggregate_3``), the native group aggregate with the library's forms
(``group-aggregate_3``'s native strategy), the native window aggregate (``window-aggregate_2``), the Python
transformWithState group aggregate (versions 1-2, Python aggregates) and ``window_aggs.evaluate`` (OVER frames,
sessions). The rows hold NULLs and values that overflow INT and BIGINT sums; the expected values are Flink's
(SUM wraps at the result type like Java, VAR over INT is integer arithmetic), written out for the calls where
the paths used to disagree. Order-dependent and floating point calls are left out where Spark's partial
aggregation decides their result (``library.native_inexact`` says which).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from planengine.exec import nodes as X
from planengine.functions.defaults import default_registry
from planengine.functions.registry import FunctionKind
from planengine.ir import types as T
from planengine.ir.aggregates import AggregateCall
from planengine.ir.changelog import ALL
from planengine.ir.types import parse_type
from planengine.ir.windows import WindowSpec
from planengine.plan.strategies import JVM_OVER_FUNCTIONS
from planengine.runtime.operators.aggregates.library import BUILTIN_AGGREGATES, native_inexact
from tests.runtime.operators.test_aggregate import input_node, node_ctx

INT_MAX, LONG_MAX = 2147483647, 9223372036854775807
SCHEMA = "k STRING, i INT, b BIGINT, d DECIMAL(10,2), s STRING, flag BOOLEAN, ts TIMESTAMP"
IN_TYPE = "ROW<k STRING, i INT, b BIGINT, d DECIMAL(10, 2), s STRING, flag BOOLEAN, ts TIMESTAMP(3)>"
ROWS = [  # group a overflows; group b holds NULLs; group c has a single row (SAMP is NULL)
    ("a", INT_MAX, LONG_MAX, "1.25", "x", True), ("a", 1, 1, "2.50", "\U0001F600", False),
    ("a", 0, 5, None, "\uFF5E", True), ("a", 3, -3, "0.01", None, None),
    ("b", None, None, None, None, None), ("b", 0, 0, "9.99", "b", False), ("b", 1, 2, "0.00", "b", True),
    ("c", -7, -9223372036854775807, "-1.00", "z", True),
]


def call(name: str, args: tuple[int, ...], t: T.DataType, **kw: Any) -> AggregateCall:
    return AggregateCall(name, 1, args, t, name.lower(), **kw)


BIGINT_NN = T.BIGINT.with_nullable(False)
DEC38_2 = parse_type("DECIMAL(38, 2)")
CALLS = (
    call("COUNT", (), BIGINT_NN), call("COUNT", (1,), BIGINT_NN), call("SUM", (1,), T.INT),
    call("SUM", (2,), T.BIGINT), call("SUM0", (2,), T.BIGINT.with_nullable(False)), call("AVG", (1,), T.INT),
    call("AVG", (2,), T.BIGINT), call("SUM", (3,), DEC38_2), call("MIN", (4,), T.STRING),
    call("MAX", (4,), T.STRING), call("MIN", (2,), T.BIGINT), call("MAX", (3,), parse_type("DECIMAL(10, 2)")),
    call("COUNT", (1,), BIGINT_NN, distinct=True), call("SUM", (1,), T.INT, filter_arg=5),
    call("VAR_POP", (1,), T.INT), call("VAR_SAMP", (1,), T.INT), call("STDDEV_POP", (1,), T.INT),
    call("STDDEV_SAMP", (1,), T.INT), call("BOOL_AND", (5,), T.BOOLEAN), call("BOOL_OR", (5,), T.BOOLEAN),
)
OUT = ("ROW<k STRING, c BIGINT NOT NULL, ci BIGINT NOT NULL, si INT, sb BIGINT, s0 BIGINT NOT NULL, ai INT, "
       "ab BIGINT, sd DECIMAL(38, 2), mins STRING, maxs STRING, minb BIGINT, maxd DECIMAL(10, 2), "
       "cdi BIGINT NOT NULL, sif INT, vp INT, vs INT, sp INT, ss INT, band BOOLEAN, bor BOOLEAN>")
# Flink's results per group (the calls above, in order).
EXPECTED = {
    "a": ["a", 4, 4, -2147483645, -9223372036854775806, -9223372036854775806, 536870912, -2305843009213693951,
          "3.76", "x", "\U0001F600", -3, "2.50", 4, 2147483647,
          # VAR/STDDEV over INT: INT-wrapping sums and squares, BIGINT divisions (Calcite's reduction)
          None, None, None, None, False, True],
    "b": ["b", 3, 2, 1, 2, 2, 0, 1, "9.99", "b", "b", 0, "9.99", 2, 1, 0, 0, 0, 0, False, True],
    "c": ["c", 1, 1, -7, -9223372036854775807, -9223372036854775807, -7, -9223372036854775807, "-1.00", "z", "z",
          -9223372036854775807, "-1.00", 1, -7, 0, None, 0, None, True, True],
}


def _variance_over_int(values: list[int]) -> tuple[Any, Any, Any, Any]:
    """Flink's VAR_POP, VAR_SAMP, STDDEV_POP, STDDEV_SAMP of INT values, step by step as Calcite reduces them."""
    import math

    def wrap(v: int) -> int:
        return (v + (1 << 31)) % (1 << 32) - (1 << 31)

    def jdiv(a: int, b: int) -> int:
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q

    n = len(values)
    s = wrap(sum(values))
    sq = wrap(sum(wrap(v * v) for v in values))
    numerator = sq - jdiv(wrap(s * s), n)
    pop = jdiv(numerator, n)
    samp = jdiv(numerator, n - 1) if n > 1 else None

    def root(v: Any) -> Any:
        return None if v is None else (0 if v < 0 else int(math.sqrt(v)))

    return wrap(pop), None if samp is None else wrap(samp), root(pop), root(samp)


for key, idx in (("a", 15), ("b", 15), ("c", 15)):
    ints = [r[1] for r in ROWS if r[0] == key and r[1] is not None]
    EXPECTED[key][idx:idx + 4] = list(_variance_over_int(ints))


def test_the_library_covers_every_planner_aggregate_and_the_jvm_has_them_all(spark) -> None:
    planner = {f.key for f in default_registry().all() if f.kind is FunctionKind.AGGREGATE}
    assert planner == BUILTIN_AGGREGATES
    jvm = spark._jvm.io.planengine.jvm.agg.AggregateFunctions.VERSION_1
    assert {(str(n), 1) for n in jvm} >= BUILTIN_AGGREGATES
    over_only = spark._jvm.io.planengine.jvm.agg.AggregateFunctions.OVER_ONLY  # LAG (over-aggregate_4)
    assert {(str(n), 1) for n in over_only} == JVM_OVER_FUNCTIONS


def _node(*, retraction: bool = False) -> X.GroupAggregate:
    return X.GroupAggregate(inputs=(input_node(IN_TYPE),), output_type=parse_type(OUT), changelog_mode=ALL,
                            grouping=(0,), aggregates=CALLS, need_retraction=retraction,
                            generate_update_before=False,
                            configuration=(("table.exec.mini-batch.enabled", "true"),))


def _plain(v: Any) -> Any:
    import decimal

    return str(v) if isinstance(v, decimal.Decimal) else v


def _final(rows: list[tuple[Any, ...]], width: int) -> dict[str, list[Any]]:
    """The last row per key of an upsert changelog (the paths fold per micro-batch: one row per key)."""
    out: dict[str, list[Any]] = {}
    for r in rows:
        out[r[0]] = [_plain(v) for v in r[:width]]
    return out


def _feed_rows() -> list[tuple[Any, ...]]:
    return [(*r, "2020-10-10 00:00:01") for r in ROWS]


def test_every_path_gives_flinks_results_on_the_same_rows(spark, feed, runner) -> None:
    from planengine.runtime.jvm.group_aggregate_processor import jvm_group_aggregate
    from planengine.runtime.operators.group_aggregate import group_aggregate
    from planengine.runtime.operators.native_group_aggregate import native_group_aggregate
    from planengine.runtime.operators.window_aggregate import window_aggregate
    from planengine.runtime.operators.window_aggs import evaluate

    width = 1 + len(CALLS)
    in_types = [f.type for f in parse_type(IN_TYPE).fields]
    node = _node()
    results: dict[str, dict[str, list[Any]]] = {}

    # Python evaluation (no Spark): OVER frames and sessions see exact Python values
    import decimal

    exact = [(*r[:3], None if r[3] is None else decimal.Decimal(r[3]), *r[4:]) for r in ROWS]
    results["evaluate"] = {k: [k, *[_plain(evaluate(c, [r for r in exact if r[0] == k], in_types)) for c in CALLS]]
                           for k in EXPECTED}

    f = feed(SCHEMA, rowtime=6, name="group")
    f.put(_feed_rows())
    ctx = node_ctx(spark, node)
    for name, make in (("jvm", lambda s: jvm_group_aggregate(s, node, ctx)),
                       ("python-tws", lambda s: group_aggregate(s, node, ctx)),
                       ("native-group", lambda s: native_group_aggregate(s, node, library_forms=True))):
        out = make(f.stream())
        r = runner(out.df, mode=out.output_mode, name=f"ck-{name}")
        results[name] = _final(r.take(), width)
        r.stop()

    w = feed(SCHEMA, rowtime=6, name="window")
    w.put(_feed_rows())
    w.drain()
    spec = WindowSpec("TUMBLE", 6, size=dt.timedelta(hours=1))
    out_types = [*[t.type for t in parse_type(OUT).fields], parse_type("TIMESTAMP(3)"), parse_type("TIMESTAMP(3)")]
    windowed = window_aggregate(w.stream(), (0,), CALLS, spec, ("start", "end"), out_types, in_types)
    r = runner(windowed.df, name="ck-window")
    results["native-window"] = _final(r.take(), width)

    for path, got in results.items():
        for key, want in EXPECTED.items():
            for i, c in enumerate(CALLS):
                assert got[key][1 + i] == want[1 + i], (path, key, str(c), got[key][1 + i], want[1 + i])


def test_only_order_dependent_and_floating_point_forms_are_inexact() -> None:
    in_types = [f.type for f in parse_type(IN_TYPE).fields]
    assert [str(c) for c in CALLS if native_inexact(c, in_types)] == []
    dbl = [T.DOUBLE]
    assert native_inexact(call("SUM", (0,), T.DOUBLE), dbl)
    assert native_inexact(call("LISTAGG", (0,), T.STRING), [T.STRING])
    assert native_inexact(call("MIN", (0,), T.DOUBLE), dbl)
    assert native_inexact(dataclasses.replace(call("AVG", (0,), parse_type("DECIMAL(38, 6)"))),
                          [parse_type("DECIMAL(10, 2)")])
