"""ORDER BY rowtime on a stream (temporal sort) on transformWithState."""

from __future__ import annotations

from planengine.ir.sorting import SortKey
from planengine.runtime.operators.temporal_sort import temporal_sort
from tests.runtime.operators.conftest import ts


def test_rows_leave_in_time_order_once_the_watermark_passes_and_late_rows_are_dropped(feed, runner):
    f = feed("rowtime TIMESTAMP, v INT", rowtime=0, delay="2 seconds")
    out = temporal_sort(f.stream(), (SortKey(0), SortKey(1, ascending=False)))
    r = runner(out.df.select("f1"))
    f.put([(ts("00:00:05"), 1), (ts("00:00:03"), 2), (ts("00:00:03"), 3), (ts("00:00:08"), 4)])
    assert r.take() == [(3,), (2,), (1,)]  # watermark 6: 3 s (v DESC), then 5 s; 8 s waits
    f.put([(ts("00:00:04"), 5), (ts("00:00:07"), 6)])  # 4 s is late
    f.drain()
    assert r.take() == [(6,), (4,)]


def test_a_row_behind_the_watermark_but_after_the_last_emitted_time_is_sorted_in(feed, runner):
    """Flink's RowTimeSortOperator drops a row only when its time is not after the last *triggered* time:
    temporal-sort-rowtime's 00:00:06 row arrives behind watermark 6 s, but no row at 6 s has fired yet."""
    f = feed("rowtime TIMESTAMP, v INT", rowtime=0, delay="2 seconds")
    out = temporal_sort(f.stream(), (SortKey(0),))
    r = runner(out.df.select("f1"))
    f.put([(ts("00:00:05"), 1), (ts("00:00:08"), 2)])
    assert r.take() == [(1,)]  # watermark 6: 5 s fired, so the last triggered time is 5 s
    f.put([(ts("00:00:06"), 3), (ts("00:00:05"), 4)])  # 6 s is not late; 5 s is (it fired already)
    f.put([(ts("00:00:09"), 5)])
    f.drain()
    assert r.take() == [(3,), (2,), (5,)]


def test_current_watermark_is_null_until_the_first_watermark_then_the_batch_watermark(feed, runner):
    from planengine.runtime.operators.window_watermark import with_current_watermark

    f = feed("rowtime TIMESTAMP, v INT", rowtime=0, delay="1 second")
    out = with_current_watermark(f.stream())
    r = runner(out.df.selectExpr("f1", "CAST(_current_watermark AS STRING)"))
    f.put([(ts("00:00:05"), 1)])
    assert r.take() == [(1, None)]
    f.put([(ts("00:00:03"), 2)])  # CURRENT_WATERMARK(ts) lets a query drop it: 3 s < 4 s
    assert r.take() == [(2, "2020-10-10 00:00:04")]
