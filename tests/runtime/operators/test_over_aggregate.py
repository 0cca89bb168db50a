"""Rowtime OVER aggregates: Flink's over-aggregate-bounded-partitioned-* programs and frame cases.

One case table for both strategies: ``over-aggregate_1`` on the Python TWS operator and ``_2``-``_4`` on the JVM
processor (``runtime/jvm/over_aggregate_processor.py``; DISTINCT from ``_3``, LAG from ``_4``); what only the JVM
has (typed state, TTL) is at the end. The Python operator runs here with version 4's state (the versioned state codec).
"""

from __future__ import annotations

import datetime as dt

import pytest

from planengine.ir import types as T
from planengine.ir.aggregates import AggregateCall
from planengine.ir.sorting import SortKey
from planengine.ir.windows import OverFrame
from planengine.runtime.jvm.over_aggregate_processor import jvm_over_aggregate
from planengine.runtime.operators.over_aggregate import over_aggregate as python_over_aggregate


@pytest.fixture(params=["python", "jvm"])
def over_aggregate(request):
    """The translation under test: version 1 (Python operator) or version 2 (JVM processor)."""
    return python_over_aggregate if request.param == "python" else jvm_over_aggregate


# ts (seconds), a, b, c, rowtime (= ts as a timestamp), cond (a > 4, the portable LTCNT)
SCHEMA = "ts BIGINT, a BIGINT, b INT, c STRING, rowtime TIMESTAMP, gt4 BOOLEAN"
ROWS = [(10, 1, 1, "Hello"), (15, 1, 15, "Hello"), (16, 1, 16, "Hello"), (19, 1, 15, "Hello"), (20, 2, 2, "Hello"),
        (21, 2, 3, "Hello"), (30, 3, 3, "Hello"), (33, 17, 1, "Hello"), (37, 19, 15, "Hello"), (40, 4, 4, "Hello"),
        (50, 5, 5, "Hello"), (51, 19, 15, "Hello"), (52, 19, 15, "Hello"), (53, 19, 15, "Hello"), (60, 6, 6, "Hello"),
        (65, 6, 65, "Hello"), (90, 6, 9, "Hello"), (92, 7, 9, "Hello"), (99, 19, 15, "Hello"),
        (100, 7, 7, "Hello World"), (110, 7, 17, "Hello World"), (140, 7, 18, "Hello World"),
        (150, 8, 8, "Hello World"), (200, 20, 20, "Hello World")]
AFTER = [(202, 20, 20, "Hello World")]
AGGS = (AggregateCall("COUNT", None, (5,), T.BIGINT.with_nullable(False), "c", filter_arg=5),
        AggregateCall("COUNT", None, (1,), T.BIGINT.with_nullable(False), "d"),
        AggregateCall("SUM", None, (1,), T.BIGINT, "e"))

RANGE_10S = {10: (0, 1, 1), 15: (0, 2, 2), 16: (0, 3, 3), 19: (0, 4, 4), 20: (0, 5, 6), 21: (0, 5, 7), 30: (0, 3, 7),
             33: (1, 2, 20), 37: (2, 3, 39), 40: (2, 4, 43), 50: (1, 2, 9), 51: (2, 2, 24), 52: (3, 3, 43),
             53: (4, 4, 62), 60: (5, 5, 68), 65: (2, 2, 12), 90: (1, 1, 6), 92: (2, 2, 13), 99: (3, 3, 32),
             100: (1, 1, 7), 110: (2, 2, 14), 140: (1, 1, 7), 150: (2, 2, 15), 200: (1, 1, 20), 202: (2, 2, 40)}
ROWS_5 = {10: (0, 1, 1), 15: (0, 2, 2), 16: (0, 3, 3), 19: (0, 4, 4), 20: (0, 5, 6), 21: (0, 6, 8), 30: (0, 6, 10),
          33: (1, 6, 26), 37: (2, 6, 44), 40: (2, 6, 47), 50: (3, 6, 50), 51: (4, 6, 67), 52: (5, 6, 83),
          53: (5, 6, 85), 60: (5, 6, 72), 65: (6, 6, 74), 90: (6, 6, 75), 92: (6, 6, 63), 99: (6, 6, 63),
          100: (1, 1, 7), 110: (2, 2, 14), 140: (3, 3, 21), 150: (4, 4, 29), 200: (5, 5, 49), 202: (6, 6, 69)}


def _row(r):
    ts, a, b, c = r
    return (ts, a, b, c, dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S"), a > 4)


@pytest.mark.parametrize("frame,expected", [(OverFrame("RANGE", dt.timedelta(seconds=10)), RANGE_10S),
                                            (OverFrame("ROWS", 5), ROWS_5)])
def test_bounded_partitioned_frames_emit_rows_as_the_watermark_passes(feed, runner, over_aggregate, frame,
                                                                       expected):
    f = feed(SCHEMA, rowtime=4)
    out = over_aggregate(f.stream(), (3,), (SortKey(4),), frame, AGGS)
    r = runner(out.df.select("f0", "f6", "f7", "f8"))
    f.put([_row(x) for x in ROWS[:10]])  # several rows per micro-batch: ordered by time inside the operator
    f.put([_row(x) for x in ROWS[10:]])
    got = r.take()
    assert {g[0]: g[1:] for g in got} == {k: v for k, v in expected.items() if k != 202}
    assert len(got) == len(ROWS)
    r.stop()
    r = runner(out.df.select("f0", "f6", "f7", "f8"))  # restart: the frames' history is in state
    f.put([_row(x) for x in AFTER])  # WATERMARK FOR rowtime AS rowtime: 202 fires with its own watermark
    assert r.take() == [(202, *expected[202])]


def test_late_rows_are_dropped_and_unbounded_rows_accumulate(feed, runner, over_aggregate):
    """The second file's batch sees watermark 12 before Spark fired the timers at 10 and 12 (no watermark-only
    batch ran between the files): those fire first, as Flink's watermark preceded row 11, so 11 is late."""
    f = feed(SCHEMA, rowtime=4)
    out = over_aggregate(f.stream(), (), (SortKey(4),), OverFrame("ROWS", None), AGGS[1:])
    r = runner(out.df.select("f0", "f6", "f7"))
    f.put([_row((10, 1, 1, "x")), _row((12, 2, 1, "y"))])
    f.put([_row((11, 5, 1, "x")), _row((13, 3, 1, "y"))])  # 11 is late: the watermark (12) has passed it
    f.drain()
    assert sorted(r.take()) == [(10, 1, 1), (12, 2, 3), (13, 3, 6)]


# One partition, one row per second; value 5, 3, 5, 9, 1, 1 (v is field 1 of SCHEMA).
SLIDING = [(1, 5, 0, "p"), (2, 3, 0, "p"), (3, 5, 0, "p"), (4, 9, 0, "p"), (5, 1, 0, "p"), (6, 1, 0, "p")]


def _call(fn: str, name: str) -> AggregateCall:
    """``"SUM"`` or ``"SUM DISTINCT"`` of field 1."""
    fn, _, distinct = fn.partition(" ")
    return AggregateCall(fn, None, (1,), T.BIGINT.with_nullable(False) if fn == "COUNT" else T.BIGINT, name,
                         distinct=bool(distinct))


@pytest.mark.parametrize("calls,frame,expected", [
    # MIN/MAX leave a sliding frame by retraction (the JVM keeps the frame's value multiset).
    (("MIN", "MAX", "COUNT", "SUM"), OverFrame("ROWS", 2),
     [(5, 5, 1, 5), (3, 5, 2, 8), (3, 5, 3, 13), (3, 9, 3, 17), (1, 9, 3, 15), (1, 9, 3, 11)]),
    # FIRST_VALUE/LAST_VALUE depend on arrival order: the oldest 5, not the newest, leaves at ts 4.
    (("FIRST_VALUE", "LAST_VALUE"), OverFrame("ROWS", 2), [(5, 5), (5, 3), (5, 5), (3, 9), (5, 1), (9, 1)]),
    (("MIN", "SUM", "FIRST_VALUE"), OverFrame("RANGE", dt.timedelta(seconds=1)),
     [(5, 5, 5), (3, 8, 5), (3, 8, 3), (5, 14, 5), (1, 10, 9), (1, 2, 1)]),
    # DISTINCT (the JVM from over-aggregate_3): a value leaves the frame's multiset when its last row does.
    (("COUNT DISTINCT", "SUM DISTINCT", "MAX DISTINCT", "COUNT"), OverFrame("ROWS", 2),
     [(1, 5, 5, 1), (2, 8, 5, 2), (2, 8, 5, 3), (3, 17, 9, 3), (3, 15, 9, 3), (2, 10, 9, 3)]),
    # Unbounded: the values seen so far are state (saved beside the accumulators, across batches).
    (("COUNT DISTINCT", "SUM DISTINCT", "SUM"), OverFrame("ROWS", None),
     [(1, 5, 5), (2, 8, 8), (2, 8, 13), (3, 17, 22), (4, 18, 23), (4, 18, 24)]),
])
def test_sliding_frames_retract_the_rows_leaving_them(feed, runner, over_aggregate, calls, frame, expected):
    f = feed(SCHEMA, rowtime=4)
    aggs = tuple(_call(fn, f"a{i}") for i, fn in enumerate(calls))
    out = over_aggregate(f.stream(), (3,), (SortKey(4),), frame, aggs)
    r = runner(out.df.select("f0", *[f"f{6 + i}" for i in range(len(calls))]))
    f.put([_row(x) for x in SLIDING[:3]])
    f.put([_row(x) for x in SLIDING[3:]])
    f.drain()
    assert sorted(r.take()) == [(x[0], *e) for x, e in zip(SLIDING, expected, strict=True)]


# LAG (Flink's testLagFunction in OverAggregateITCase, plus NULL values): v arrives 1, 2, 3, 4, 5 at 1, 5, 2, 3, 3 s;
# then 6, NULL, 7 after a restart. Calls: LAG(v), LAG(v, two), LAG(v, two, dflt), LAG(v, one, dflt).
LAG_SCHEMA = "ts BIGINT, v BIGINT, one INT, two INT, dflt BIGINT, p STRING, rowtime TIMESTAMP"
LAG_ROWS = [(1, 1), (5, 2), (2, 3), (3, 4), (3, 5)]
LAG_AFTER = [(21, 6), (22, None), (23, 7)]
LAG_CALLS = tuple(AggregateCall("LAG", 1, args, T.BIGINT, f"l{i}")
                  for i, args in enumerate([(1,), (1, 3), (1, 3, 4), (1, 2, 4)]))
# (ts, v) -> values. RANGE: the two rows at 3 s get the values after both (Flink's "1,4,Hello,4,3,3" and
# "1,5,Hello,4,3,3"); a NULL value is what LAG returns, not the default (23 s).
LAG_RANGE = {(1, 1): (None, None, 10086, 10086), (2, 3): (1, None, 10086, 1), (3, 4): (4, 3, 3, 4),
             (3, 5): (4, 3, 3, 4), (5, 2): (5, 4, 4, 5), (21, 6): (2, 5, 5, 2), (22, None): (6, 2, 2, 6),
             (23, 7): (None, 6, 6, None)}
LAG_ROWS_FRAME = {**LAG_RANGE, (3, 4): (3, 1, 1, 3), (3, 5): (4, 3, 3, 4)}


@pytest.mark.parametrize("frame,expected", [(OverFrame("RANGE", None), LAG_RANGE),
                                            (OverFrame("ROWS", None), LAG_ROWS_FRAME)])
def test_lag_returns_the_value_offset_rows_back_as_flink(feed, runner, over_aggregate, frame, expected):
    """LAG's frame is the partition's rows so far (Flink allows no other); over-aggregate_4 runs it on the JVM
    (the library's accumulator of the last offset + 1 values), and its state survives a restart."""
    f = feed(LAG_SCHEMA, rowtime=6)

    def rows(pairs):
        stamp = dt.datetime.fromtimestamp
        return [(ts, v, 1, 2, 10086, "k", stamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")) for ts, v in pairs]

    out = over_aggregate(f.stream(), (5,), (SortKey(6),), frame, LAG_CALLS)
    columns = ["f0", "f1", *[f"f{7 + i}" for i in range(len(LAG_CALLS))]]
    r = runner(out.df.select(*columns))
    f.put(rows(LAG_ROWS))
    first = r.take()  # the watermark (5 s) has passed every row
    r.stop()
    r = runner(out.df.select(*columns))
    f.put(rows(LAG_AFTER))
    f.drain()
    got = first + r.take()
    assert sorted(got, key=lambda g: (g[0], g[1] or 0)) == [
        (ts, v, *values) for (ts, v), values in sorted(expected.items(), key=lambda e: (e[0][0], e[0][1] or 0))]


def test_jvm_state_is_typed_and_ttl_forgets_the_partition(spark, feed, runner, tmp_path):
    """``pendingRows`` holds rows waiting for the watermark and ``accumulators`` the last processed time with
    each call's accumulator, as typed rows readable with the state data source; after state TTL the partition
    starts over (its unbounded SUM restarts)."""
    import time

    f = feed(SCHEMA, rowtime=4, delay="2 seconds")
    aggs = (_call("SUM", "s"),)
    out = jvm_over_aggregate(f.stream(), (3,), (SortKey(4),), OverFrame("ROWS", None), aggs, ttl_ms=15_000)
    r = runner(out.df.select("f0", "f6"))
    f.put([_row((10, 1, 0, "p")), _row((12, 2, 0, "p")), _row((13, 4, 0, "p"))])
    assert r.take() == [(10, 1)]  # the watermark (13 - 2 s) has passed 10 only
    r.stop()

    def state(name):
        return spark.read.format("statestore").option("stateVarName", name).load(str(tmp_path / "ck")).collect()

    (acc,) = state("accumulators")
    assert acc["key"].asDict() == {"f3": "p"}
    assert acc["value"]["last"] == 10_000 and acc["value"]["rows"] == []
    assert acc["value"]["a0"].asDict() == {"sum": 1, "count": 1}
    (pending,) = state("pendingRows")
    assert [(e["ts"], e["row"]["f1"]) for e in pending["value"]["rows"]] == [(12_000, 2), (13_000, 4)]

    r = runner(out.df.select("f0", "f6"))
    time.sleep(16)  # longer than the TTL; short TTLs would expire state between batches on a loaded machine
    f.put([_row((20, 8, 0, "p"))])
    f.drain()
    assert sorted(r.take()) == [(20, 8)]  # 12 and 13 expired with the partition's state; the sum starts over
