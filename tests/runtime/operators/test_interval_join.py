"""Interval join on Spark's native stream-stream join: Flink's interval-join-event-time program and bounds."""

from __future__ import annotations

from planengine.runtime.operators.interval_join import interval_join

ORDERS = "id INT, order_ts_str STRING, order_ts TIMESTAMP"
SHIPMENTS = "id INT, order_id INT, shipment_ts_str STRING, shipment_ts TIMESTAMP"


def _o(i, t):
    return (i, f"2020-04-15 08:00:{t:02d}", f"2020-04-15 08:00:{t:02d}")


def _s(i, o, t):
    return (i, o, f"2020-04-15 08:00:{t:02d}", f"2020-04-15 08:00:{t:02d}")


def _join(feed, join_type="INNER", lower=-5000, upper=5000):
    orders = feed(ORDERS, rowtime=2, delay="1 second", name="orders")
    shipments = feed(SHIPMENTS, rowtime=3, delay="1 second", name="shipments")
    out = interval_join(orders.stream(), shipments.stream(), join_type, (0,), (1,), 2, 3, lower, upper)
    return orders, shipments, out


def test_inner_interval_join_matches_within_inclusive_bounds_across_a_restart(feed, runner):
    orders, shipments, out = _join(feed)
    r = runner(out.df.select("f0", "f1", "f5"))
    orders.put([_o(1, 1), _o(2, 2), _o(4, 4), _o(5, 5), _o(3, 3)])
    shipments.put([_s(2, 1, 2), _s(5, 2, 5), _s(6, 5, 6), _s(15, 4, 15), _s(16, 6, 15)])
    assert sorted(r.take()) == [(1, "2020-04-15 08:00:01", "2020-04-15 08:00:02"),
                                (2, "2020-04-15 08:00:02", "2020-04-15 08:00:05"),
                                (5, "2020-04-15 08:00:05", "2020-04-15 08:00:06")]
    r.stop()
    r = runner(out.df.select("f0", "f1", "f5"))
    orders.put([_o(7, 9), _o(10, 11)])
    shipments.put([_s(7, 3, 15), _s(11, 7, 16), _s(13, 10, 16)])
    assert sorted(r.take()) == [(10, "2020-04-15 08:00:11", "2020-04-15 08:00:16")]


def test_bounds_are_inclusive_and_asymmetric(feed, runner):
    # right.t - 1 s <= left.t <= right.t + 2 s
    orders, shipments, out = _join(feed, lower=-1000, upper=2000)
    r = runner(out.df.select("f0", "f3"))
    shipments.put([_s(100, 1, 10), _s(101, 2, 10), _s(102, 3, 10), _s(103, 4, 10)])
    orders.put([_o(1, 9), _o(2, 12), _o(3, 8), _o(4, 13)])
    assert sorted(r.take()) == [(1, 100), (2, 101)]


def test_left_outer_interval_join_pads_unmatched_rows_when_the_watermark_passes(feed, runner):
    orders, shipments, out = _join(feed, "LEFT")
    r = runner(out.df.select("f0", "f3"))
    orders.put([_o(1, 1), _o(2, 2)])
    shipments.put([_s(5, 2, 5)])
    assert sorted(r.take()) == [(2, 5)]
    orders.put([_o(9, 30)])
    shipments.put([_s(9, 9, 30)])
    r.run()
    orders.put([_o(8, 31)])  # another batch: the watermark (29) passes order 1's interval
    assert sorted(r.take(), key=str) == [(1, None), (9, 9)]
