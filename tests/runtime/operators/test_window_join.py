"""Window joins of two TUMBLE TVFs on Spark's native stream-stream join: Flink's window-join programs."""

from __future__ import annotations

import datetime as dt

from planengine.ir import types as T
from planengine.ir.windows import WindowSpec
from planengine.runtime.operators.window_join import window_join
from planengine.runtime.operators.window_table_function import window_table_function
from tests.runtime.operators.conftest import ts

SCHEMA = "row_time TIMESTAMP, id STRING, num INT, name STRING"
TVF_TYPES = [T.timestamp(3)] + [T.STRING] * 3 + [T.timestamp(3)] * 3
LEFT = [(ts("00:00:01"), "L1", 1, "a"), (ts("00:00:02"), "L2", 2, "c"), (ts("00:00:03"), "L3", 2, "x"),
        (ts("00:00:04"), "L7", 5, "a"), (ts("00:00:07"), "L8", 3, "b"), (ts("00:00:06"), "L6", 6, "b"),
        (ts("00:00:08"), "L9", 3, "a"), (ts("00:00:04"), "L4", 5, "a"), (ts("00:00:16"), "L10", 4, "b"),
        (ts("00:00:32"), "L11", 7, None), (ts("00:00:34"), "L12", 1, "b")]
RIGHT = [(ts("00:00:01"), "R1", 5, "a"), (ts("00:00:02"), "R2", 7, "b"), (ts("00:00:03"), "R3", 7, "f"),
         (ts("00:00:04"), "R7", 3, "g"), (ts("00:00:07"), "R8", 8, "b"), (ts("00:00:06"), "R6", 6, "b"),
         (ts("00:00:08"), "R9", 3, "a"), (ts("00:00:04"), "R4", 5, "a"), (ts("00:00:17"), "R17", 4, "k"),
         (ts("00:00:31"), "R31", 7, None), (ts("00:00:33"), "R33", 1, "b")]
BATCHES = [slice(0, 7), slice(7, 8), slice(8, 9), slice(9, 11)]  # the late 00:00:04 rows start a new batch


def _join(feed, join_type):
    fl = feed(SCHEMA, rowtime=0, delay="1 second", name="left")
    fr = feed(SCHEMA, rowtime=0, delay="1 second", name="right")
    spec = WindowSpec("TUMBLE", 0, size=dt.timedelta(seconds=5))
    lt = window_table_function(fl.stream(), spec, TVF_TYPES)
    rt = window_table_function(fr.stream(), spec, TVF_TYPES)
    out = window_join(lt, rt, join_type, (3,), (3,), (4, 5), (4, 5))
    return fl, fr, out.df.selectExpr("coalesce(f4, f11) AS ws", "coalesce(f3, f10) AS name", "f1 AS l", "f8 AS r")


def _feed_both(fl, fr, r):
    for s in BATCHES:
        fl.put(LEFT[s])
        fr.put(RIGHT[s])
        r.run()


def _fmt(rows):
    return sorted(((w[14:19], n, lid, rid) for w, n, lid, rid in rows), key=str)


def test_inner_window_join_drops_late_rows(feed, runner):
    fl, fr, df = _join(feed, "INNER")
    r = runner(df)
    _feed_both(fl, fr, r)
    assert _fmt(r.take()) == sorted([("00:00", "a", "L1", "R1"), ("00:00", "a", "L7", "R1"), ("00:05", "a", "L9", "R9"),
                                     ("00:05", "b", "L6", "R6"), ("00:05", "b", "L6", "R8"), ("00:05", "b", "L8", "R6"),
                                     ("00:05", "b", "L8", "R8"), ("00:30", "b", "L12", "R33")], key=str)


def test_full_outer_window_join_pads_unmatched_rows_when_the_window_closes(feed, runner):
    fl, fr, df = _join(feed, "FULL")
    r = runner(df)
    _feed_both(fl, fr, r)
    fl.drain()
    fr.drain()
    got = _fmt(r.take())
    assert ("00:00", "c", "L2", None) in got and ("00:00", "f", None, "R3") in got
    assert ("00:15", "b", "L10", None) in got and ("00:15", "k", None, "R17") in got
    # NULL keys never match (Spark's hash join alone would pair L11 and R31)
    assert ("00:30", None, "L11", None) in got and ("00:30", None, None, "R31") in got
    assert ("00:30", "b", "L12", "R33") in got
    assert not [g for g in got if g[2] in ("L4",) or g[3] in ("R4",)]  # late on both sides
