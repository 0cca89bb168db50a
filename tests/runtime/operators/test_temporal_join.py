"""Event-time temporal join with a versioned table on transformWithState: Flink's temporal-join-table-join."""

from __future__ import annotations

from planengine.runtime.operators.temporal_join import temporal_join
from tests.runtime.operators.conftest import ts

ORDERS = "amount BIGINT, currency STRING, rowtime TIMESTAMP"
RATES = "currency STRING, rate BIGINT, rowtime TIMESTAMP, _rowkind STRING"


def _join(feed, join_type="INNER"):
    orders = feed(ORDERS, rowtime=2, name="orders")
    rates = feed(RATES, rowtime=2, changelog=True, name="rates")
    out = temporal_join(orders.stream(), rates.stream(), join_type, (1,), (0,), 2, 2)
    return orders, rates, out.df.selectExpr("f1", "f0 * f4 AS amount")


def test_orders_join_the_rate_valid_at_their_time_when_the_watermark_passes(feed, runner):
    orders, rates, df = _join(feed)
    r = runner(df)
    rates.put([("USD", 102, ts("00:00:41"), "+I"), ("Euro", 114, ts("00:00:41"), "+I"),
               ("Yen", 1, ts("00:00:41"), "+I"), ("Euro", 116, ts("00:00:45"), "+U"),
               ("Euro", 119, ts("00:00:47"), "+U")])
    orders.put([(2, "Euro", ts("00:00:42")), (1, "USD", ts("00:00:43")), (50, "Yen", ts("00:00:44")),
                (3, "Euro", ts("00:00:45"))])
    assert sorted(r.take()) == [("Euro", 228), ("Euro", 348), ("USD", 102), ("Yen", 50)]
    r.stop()
    r = runner(df)  # restart: versions are in state
    orders.put([(1, "Euro", ts("00:00:58")), (1, "USD", ts("00:00:58"))])
    assert r.take() == []  # the rates' watermark (47) holds both orders back
    rates.put([("USD", 103, ts("00:00:58"), "+U"), ("Euro", 120, ts("00:00:59"), "+U")])
    assert sorted(r.take()) == [("Euro", 119), ("USD", 103)]


def test_left_temporal_join_pads_missing_and_deleted_versions(feed, runner):
    orders, rates, df = _join(feed, "LEFT")
    r = runner(df)
    rates.put([("USD", 102, ts("00:00:41"), "+I"), ("USD", 102, ts("00:00:50"), "-D")])
    orders.put([(1, "USD", ts("00:00:40")), (2, "USD", ts("00:00:45")), (3, "USD", ts("00:00:51")),
                (4, "CHF", ts("00:00:45"))])
    orders.drain()
    rates.drain()
    assert sorted(r.take(), key=str) == [("CHF", None), ("USD", 204), ("USD", None), ("USD", None)]
