"""Window Top-N and window deduplication over window TVF rows: Flink's window-rank/-deduplicate programs."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from planengine.ir import types as T
from planengine.ir.aggregates import AggregateCall
from planengine.ir.sorting import SortKey
from planengine.ir.windows import WindowSpec
from planengine.runtime.operators.window_aggregate import window_aggregate
from planengine.runtime.operators.window_rank import window_rank
from planengine.runtime.operators.window_table_function import window_table_function

SCHEMA = "bid_time TIMESTAMP, price DECIMAL(10,2), item STRING, supplier_id STRING"
TEN = dt.timedelta(seconds=10)
TVF_TYPES = [T.timestamp(3)] + [T.STRING] * 3 + [T.timestamp(3), T.timestamp(3), T.timestamp(3)]


def _bid(t, price, item, supplier):
    return (f"2020-04-15 08:00:{t:02d}", price, item, supplier)


BEFORE = [_bid(5, "4.00", "A", "supplier1"), _bid(6, "4.00", "C", "supplier2"), _bid(7, "2.00", "G", "supplier1"),
          _bid(8, "2.00", "B", "supplier3"), _bid(9, "5.00", "D", "supplier4"), _bid(11, "2.00", "B", "supplier3"),
          _bid(13, "1.00", "E", "supplier1"), _bid(15, "3.00", "H", "supplier2"), _bid(17, "6.00", "F", "supplier5")]
AFTER = [_bid(21, "2.00", "B", "supplier7"), _bid(23, "1.00", "A", "supplier4"), _bid(25, "3.00", "C", "supplier3"),
         _bid(28, "6.00", "A", "supplier8")]


def _fmt(rows):  # (window_start, bid_time, supplier, price, item, rank) with times as seconds
    return sorted((int(r[4][17:19]), int(r[0][17:19]), r[3], str(r[1]), r[2], r[-1]) for r in rows)


def test_window_top_n_after_a_tumble_tvf_fires_per_window_and_on_drain(feed, runner):
    f = feed(SCHEMA, rowtime=0, delay="1 second")
    tvf = window_table_function(f.stream(), WindowSpec("TUMBLE", 0, size=TEN), TVF_TYPES)
    top = window_rank(tvf, "ROW_NUMBER", (), (SortKey(1),), 1, 3, True, 4, 5)
    r = runner(top.df)
    f.put(BEFORE)
    assert _fmt(r.take()) == [(0, 5, "supplier1", "4.00", "A", 3), (0, 7, "supplier1", "2.00", "G", 1),
                              (0, 8, "supplier3", "2.00", "B", 2)]
    r.stop()
    r = runner(top.df)
    f.put(AFTER)
    assert _fmt(r.take()) == [(10, 11, "supplier3", "2.00", "B", 2), (10, 13, "supplier1", "1.00", "E", 1),
                              (10, 15, "supplier2", "3.00", "H", 3)]
    f.drain()
    assert _fmt(r.take()) == [(20, 21, "supplier7", "2.00", "B", 2), (20, 23, "supplier4", "1.00", "A", 1),
                              (20, 25, "supplier3", "3.00", "C", 3)]


def test_rank_and_dense_rank_share_positions_on_ties(feed, runner):
    f = feed(SCHEMA, rowtime=0, delay="1 second")
    tvf = window_table_function(f.stream(), WindowSpec("TUMBLE", 0, size=TEN), TVF_TYPES)
    rank = window_rank(tvf, "RANK", (), (SortKey(1, ascending=False),), 1, 3, True, 4, 5)
    dense = window_rank(tvf, "DENSE_RANK", (), (SortKey(1),), 1, 2, True, 4, 5)
    r1, r2 = runner(rank.df, name="ck1"), runner(dense.df, name="ck2")
    f.put(BEFORE)
    f.drain()
    got = [(r[2], r[-1]) for r in r1.take() if r[4].endswith("08:00:00")]
    assert sorted(got) == [("A", 2), ("C", 2), ("D", 1)]
    got = [(r[2], r[-1]) for r in r2.take() if r[4].endswith("08:00:00")]
    assert sorted(got) == [("A", 2), ("B", 1), ("C", 2), ("G", 1)]


def test_window_deduplicate_keeps_first_and_last_row_per_window(feed, runner):
    f = feed(SCHEMA, rowtime=0, delay="1 second")
    tvf = window_table_function(f.stream(), WindowSpec("TUMBLE", 0, size=TEN), TVF_TYPES)
    first = window_rank(tvf, "ROW_NUMBER", (3,), (SortKey(0),), 1, 1, False, 4, 5)
    last = window_rank(tvf, "ROW_NUMBER", (3,), (SortKey(0, ascending=False),), 1, 1, False, 4, 5)
    r1, r2 = runner(first.df, name="ck1"), runner(last.df, name="ck2")
    f.put(BEFORE)
    f.drain()
    firsts = sorted((r[3], r[0][17:19]) for r in r1.take() if r[4].endswith("08:00:00"))
    lasts = sorted((r[3], r[0][17:19]) for r in r2.take() if r[4].endswith("08:00:00"))
    assert firsts == [("supplier1", "05"), ("supplier2", "06"), ("supplier3", "08"), ("supplier4", "09")]
    assert lasts == [("supplier1", "07"), ("supplier2", "06"), ("supplier3", "08"), ("supplier4", "09")]


def test_top_n_over_a_window_aggregate_chains_in_one_query(feed, runner):
    """window-rank-tumble-tvf-agg-max-top-n: SUM(price) per supplier and window, then the top 3 suppliers."""
    f = feed(SCHEMA, rowtime=0, delay="1 second")
    agg = window_aggregate(f.stream(), (3,), (AggregateCall("SUM", None, (1,), T.decimal(38, 2), "price"),),
                           WindowSpec("TUMBLE", 0, size=TEN), ("start", "end", "rowtime"),
                           [T.STRING, T.decimal(38, 2), T.timestamp(3), T.timestamp(3), T.timestamp(3)])
    top = window_rank(agg, "ROW_NUMBER", (), (SortKey(1, ascending=False),), 1, 3, True, 2, 3)
    r = runner(top.df)
    f.put(BEFORE)
    f.put(AFTER)
    f.drain()
    got = sorted((r[2][17:19], r[0], r[1], r[-1]) for r in r.take())
    assert got[:3] == [("00", "supplier1", Decimal("6.00"), 1), ("00", "supplier2", Decimal("4.00"), 3),
                       ("00", "supplier4", Decimal("5.00"), 2)]
