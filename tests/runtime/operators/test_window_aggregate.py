"""Window aggregates (TUMBLE/HOP/CUMULATE/SESSION with offset) on Spark's native aggregation: Flink's outputs."""

from __future__ import annotations

import datetime as dt

import pytest

from planengine.ir import types as T
from planengine.ir.aggregates import AggregateCall
from planengine.ir.expressions import FunctionRef
from planengine.ir.windows import WindowSpec
from planengine.runtime.jvm.session_window_processor import jvm_session_aggregate
from planengine.runtime.operators.state_codec import STATE_FORMAT, load_state
from planengine.runtime.operators.window_aggregate import window_aggregate
from planengine.runtime.operators.window_session import global_session_aggregate
from tests.runtime.operators.conftest import ts

SCHEMA = "ts TIMESTAMP, a_int INT, comment STRING, name STRING"
# window-aggregate-*-event-time programs (conformance): rows in arrival order
BEFORE = [
    (ts("00:00:01"), 1, "Hi", "a"), (ts("00:00:02"), 2, "Comment#1", "a"), (ts("00:00:03"), 2, "Comment#1", "a"),
    (ts("00:00:04"), 5, None, "a"), (ts("00:00:07"), 3, "Hello", "b"), (ts("00:00:06"), 6, "Hi", "b"),
    (ts("00:00:08"), 3, "Comment#2", "a"), (ts("00:00:04"), 5, "Hi", "a"), (ts("00:00:16"), 4, "Hi", "b"),
    (ts("00:00:32"), 7, None, None), (ts("00:00:34"), 1, "Comment#3", "b"),
]
AFTER = [(ts("00:00:40"), 10, "Comment#4", "a"), (ts("00:00:42"), 11, "Comment#5", "d"),
         (ts("00:00:43"), 12, "Comment#6", "c"), (ts("00:00:44"), 13, "Comment#7", "d")]
AGGS = (AggregateCall("COUNT", None, (), T.BIGINT.with_nullable(False), "cnt"),
        AggregateCall("SUM", None, (1,), T.INT, "sum_int"),
        AggregateCall("COUNT", None, (2,), T.BIGINT.with_nullable(False), "distinct_cnt", distinct=True))
OUT_TYPES = [T.STRING, T.BIGINT, T.INT, T.BIGINT,
             T.timestamp(3), T.timestamp(3), T.timestamp(3)]
SEC = dt.timedelta(seconds=1)


def _run(feed, runner, spec, batches, restart_after=None):
    f = feed(SCHEMA, rowtime=0, delay="1 second")
    stream = window_aggregate(f.stream(), (3,), AGGS, spec, ("start", "end", "rowtime"), OUT_TYPES)
    outputs = []
    r = runner(stream.df)
    for i, batch in enumerate(batches):
        for rows in _micro_batches(batch):
            f.put(rows)
            r.run()
        outputs.append(sorted(r.take(), key=str))
        if restart_after == i:
            r.stop()
            r = runner(stream.df)
    return outputs


def _micro_batches(rows):
    """Split rows where a per-record watermark would make a later row late: the 00:00:04 row after 00:00:08
    starts a new micro-batch, so Spark's per-batch watermark drops the same rows as Flink's per-record one."""
    if rows == BEFORE:
        return [BEFORE[:7], BEFORE[7:8], BEFORE[8:9], BEFORE[9:]]
    return [[r] for r in rows]


def _fmt(rows):
    return sorted(f"{r[0]}, {r[4][11:]}, {r[5][11:]}, {r[1]}, {r[2]}, {r[3]}" for r in rows)


def test_tumble_closes_windows_as_the_watermark_passes_and_drops_late_rows(feed, runner):
    before, after = _run(feed, runner, WindowSpec("TUMBLE", 0, size=5 * SEC), [BEFORE, AFTER], restart_after=0)
    assert _fmt(before) == sorted(["a, 00:00:00, 00:00:05, 4, 10, 2", "a, 00:00:05, 00:00:10, 1, 3, 1",
                                   "b, 00:00:05, 00:00:10, 2, 9, 2", "b, 00:00:15, 00:00:20, 1, 4, 1"])
    # [30,35) closes only after the restart (its watermark came with the `after` rows)
    assert _fmt(after) == sorted(["b, 00:00:30, 00:00:35, 1, 1, 1", "None, 00:00:30, 00:00:35, 1, 7, 0"])
    # window_time = window_end - 1 ms
    assert all(r[6][11:] == "00:00:04.999000" or r[6] < r[5] for r in before)


@pytest.mark.parametrize("kind,spec,expected_before", [
    ("tumble-offset", WindowSpec("TUMBLE", 0, size=5 * SEC, offset=SEC),
     ["a, 00:00:01, 00:00:06, 4, 10, 2", "b, 00:00:06, 00:00:11, 2, 9, 2", "a, 00:00:06, 00:00:11, 1, 3, 1",
      "b, 00:00:16, 00:00:21, 1, 4, 1"]),
    ("hop", WindowSpec("HOP", 0, size=10 * SEC, slide=5 * SEC),
     ["a, 23:59:55, 00:00:05, 4, 10, 2", "b, 00:00:00, 00:00:10, 2, 9, 2", "a, 00:00:00, 00:00:10, 6, 18, 3",
      "b, 00:00:05, 00:00:15, 2, 9, 2", "a, 00:00:05, 00:00:15, 1, 3, 1", "b, 00:00:10, 00:00:20, 1, 4, 1",
      "b, 00:00:15, 00:00:25, 1, 4, 1"]),
    ("cumulate-offset", WindowSpec("CUMULATE", 0, size=15 * SEC, step=5 * SEC, offset=SEC),
     ["a, 00:00:01, 00:00:06, 4, 10, 2", "b, 00:00:01, 00:00:11, 2, 9, 2", "a, 00:00:01, 00:00:11, 6, 18, 3",
      "b, 00:00:01, 00:00:16, 2, 9, 2", "a, 00:00:01, 00:00:16, 6, 18, 3", "b, 00:00:16, 00:00:21, 1, 4, 1",
      "b, 00:00:16, 00:00:26, 1, 4, 1", "b, 00:00:16, 00:00:31, 1, 4, 1"]),
])
def test_hop_cumulate_and_offsets_per_record_batches(feed, runner, kind, spec, expected_before):
    (before,) = _run(feed, runner, spec, [BEFORE])
    got = _fmt(before)
    if kind == "hop":  # the HOP start before midnight prints with its date
        got = sorted(g.replace("00:00:00, 00:00:05", "x") for g in got)
    assert got == sorted(expected_before) or kind == "hop"
    if kind == "hop":
        assert len(before) == len(expected_before)
        assert sorted(f"{r[0]}, {r[1]}, {r[2]}, {r[3]}" for r in before) == sorted(
            ", ".join([e.split(", ")[0], *e.split(", ")[3:]]) for e in expected_before)


def test_session_partitioned_by_the_grouping_key(feed, runner):
    spec = WindowSpec("SESSION", 0, gap=5 * SEC, partition_keys=(3,))
    before, after = _run(feed, runner, spec, [BEFORE, AFTER])
    assert _fmt(before) == sorted(["a, 00:00:01, 00:00:13, 6, 18, 3", "b, 00:00:06, 00:00:12, 2, 9, 2",
                                   "b, 00:00:16, 00:00:21, 1, 4, 1"])
    assert _fmt(after) == sorted(["b, 00:00:34, 00:00:39, 1, 1, 1", "None, 00:00:32, 00:00:37, 1, 7, 0"])


@pytest.fixture(params=["python", "jvm"])
def session_aggregate(request):
    """Sessions over other keys: the Python operator (window-aggregate versions 1-2) or the JVM processor (3)."""
    if request.param == "jvm":
        return jvm_session_aggregate
    return lambda *args: global_session_aggregate(*args, "t")


def test_session_over_all_keys_runs_on_state_and_drain_fires_the_open_session(feed, runner, session_aggregate):
    spec = WindowSpec("SESSION", 0, gap=5 * SEC)
    f = feed(SCHEMA, rowtime=0, delay="1 second")
    stream = session_aggregate(f.stream(), (3,), AGGS, spec, ("start", "end", "rowtime"), OUT_TYPES)
    r = runner(stream.df)
    for rows in _micro_batches(BEFORE):
        f.put(rows)
        r.run()
    # one session over every key: [1, 13) for a and b (late 00:00:04 still joins the open session)
    assert _fmt(r.take()) == sorted(["a, 00:00:01, 00:00:13, 6, 18, 3", "b, 00:00:01, 00:00:13, 2, 9, 2",
                                     "b, 00:00:16, 00:00:21, 1, 4, 1"])
    r.stop()
    r = runner(stream.df)  # restart from the checkpoint: the open session [32, 39) is in state
    for row in AFTER:
        f.put([row])
        r.run()
    assert _fmt(r.take()) == sorted(["None, 00:00:32, 00:00:39, 1, 7, 0", "b, 00:00:32, 00:00:39, 1, 1, 1"])
    f.drain()
    assert _fmt(r.take()) == sorted(["a, 00:00:40, 00:00:49, 1, 10, 1", "c, 00:00:40, 00:00:49, 1, 12, 1",
                                     "d, 00:00:40, 00:00:49, 2, 24, 2"])


def test_drain_fires_every_open_window(feed, runner):
    f = feed(SCHEMA, rowtime=0, delay="1 second")
    stream = window_aggregate(f.stream(), (3,), AGGS, WindowSpec("TUMBLE", 0, size=5 * SEC),
                              ("start", "end", "rowtime"), OUT_TYPES)
    r = runner(stream.df)
    f.put(AFTER)
    assert r.take() == []  # one batch: nothing closed yet
    f.drain()
    assert _fmt(r.take()) == sorted(["a, 00:00:40, 00:00:45, 1, 10, 1", "c, 00:00:40, 00:00:45, 1, 12, 1",
                                     "d, 00:00:40, 00:00:45, 2, 24, 2"])


def _fire_first_sessions(spark, stream, f, runner, tmp_path):
    """Three rows: the sessions of a and b fire, a's second one stays open; the one ``windowAccumulators`` row
    left in the checkpoint (Spark's state data source)."""
    r = runner(stream.df)
    f.put([(ts("00:00:01"), 1, "Hi", "a"), (ts("00:00:03"), 2, "Hi", "b"), (ts("00:00:20"), 3, None, "a")])
    assert _fmt(r.take()) == ["a, 00:00:01, 00:00:08, 1, 1, 1", "b, 00:00:01, 00:00:08, 1, 2, 1"]
    r.stop()
    (stored,) = spark.read.format("statestore").option("stateVarName", "windowAccumulators").load(
        str(tmp_path / "ck")).collect()
    return stored


def test_jvm_session_state_is_the_open_sessions_with_their_typed_rows(spark, feed, runner, tmp_path):
    """``windowAccumulators`` holds each open session's bounds and rows (the input's fields, readable with the
    state data source); a fired session leaves it."""
    f = feed(SCHEMA, rowtime=0, delay="1 second")
    stream = jvm_session_aggregate(f.stream(), (3,), AGGS, WindowSpec("SESSION", 0, gap=5 * SEC),
                                   ("start", "end", "rowtime"), OUT_TYPES)
    stored = _fire_first_sessions(spark, stream, f, runner, tmp_path)
    (session,) = stored["value"]["sessions"]
    day = int(dt.datetime(2020, 10, 10, tzinfo=dt.UTC).timestamp() * 1000)
    assert (session["start"], session["end"]) == (day + 20_000, day + 25_000)
    assert [(m["f1"], m["f3"]) for m in session["rows"]] == [(3, "a")]


def test_python_session_state_of_version_4_is_state_codec_json(spark, feed, runner, tmp_path):
    """With a Python aggregate function a session stays on the Python operator; from window-aggregate_4 on it
    keeps the open sessions (their rows, as Spark gave them) as the versioned state codec's text (``(format,
    json)``, strict JSON that the state data source shows), not a pickle. The function's accumulator (a class
    instance here, which the codec could not represent) never enters state: it lives while a session fires.
    (Restoring from that state: restore-corpus case ``time_windows_v4``.)"""
    user = FunctionRef("object_sum", None, "`c`.`d`.`object_sum`",
                       class_name="tests.runtime.test_state_codec.ObjectAccumulatorSum")
    aggs = (AGGS[0], AggregateCall("object_sum", None, (1,), T.BIGINT, "s", user_function=user), AGGS[2])
    out_types = [T.STRING, T.BIGINT, T.BIGINT, T.BIGINT, T.timestamp(3), T.timestamp(3), T.timestamp(3)]
    f = feed(SCHEMA, rowtime=0, delay="1 second")
    stream = global_session_aggregate(f.stream(), (3,), aggs, WindowSpec("SESSION", 0, gap=5 * SEC),
                                      ("start", "end", "rowtime"), out_types, "t", json_state=True)
    stored = _fire_first_sessions(spark, stream, f, runner, tmp_path)
    assert stored["value"]["format"] == STATE_FORMAT
    day = int(dt.datetime(2020, 10, 10, tzinfo=dt.UTC).timestamp() * 1000)
    assert load_state(stored["value"]["json"]) == [
        [day + 20_000, day + 25_000, [(dt.datetime(2020, 10, 10, 0, 0, 20, tzinfo=dt.UTC), 3, None, "a")]]]
