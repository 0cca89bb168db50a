"""The driver's Prometheus families after a known sequence of progress events (no Spark: the events are the JSON
Spark's listener hands over, the status document a fake driver's), read back with prometheus_client's parser."""

from __future__ import annotations

import json
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from planengine.runtime.engine.driver_metrics import DriverMetrics, status_metrics
from planengine.runtime.engine.progress_listener import Progress

NOW = 1_800_000_100.0  # the fixed wall clock the watermark lag is measured against
AGG = "4_stream-exec-sink-2_sink"
COPY = "7_stream-exec-sink-2_sink"


def progress(query_id: str, batch_id: int, rows: int, *, trigger_ms: int, wal_ms: int | None = None,
             commit_ms: int | None = None, output_rows: int = -1, watermark: str | None = None,
             state: list[tuple[int, int, int]] = ()) -> Progress:
    """A progress event as Spark writes it (``StreamingQueryProgress.json()``); state = (rows, bytes, dropped) per
    stateful operator."""
    durations = {"triggerExecution": trigger_ms, "addBatch": trigger_ms // 2, "getBatch": 0}
    durations |= {"walCommit": wal_ms} if wal_ms is not None else {}
    durations |= {"commitOffsets": commit_ms} if commit_ms is not None else {}
    data: dict[str, Any] = {
        "id": query_id, "runId": "run-" + query_id, "name": query_id, "timestamp": "2027-01-15T08:01:40.000Z",
        "batchId": batch_id, "batchDuration": trigger_ms, "numInputRows": rows, "inputRowsPerSecond": 10.0,
        "processedRowsPerSecond": 20.0, "durationMs": durations,
        "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": r, "numRowsUpdated": 1,
                            "memoryUsedBytes": b, "numRowsDroppedByWatermark": d,
                            "customMetrics": {"loadedMapCacheHitCount": 124}} for r, b, d in state],
        "sources": [{"description": "FileStreamSource", "startOffset": None, "endOffset": {"logOffset": 0},
                     "latestOffset": None, "numInputRows": rows}],
        "sink": {"description": "FileSink[/tmp/out]", "numOutputRows": output_rows},
    }
    if watermark is not None:
        data["eventTime"] = {"watermark": watermark, "max": watermark}
    return Progress.from_json(json.dumps(data))


STATUS = {
    "engineVersion": "0.1", "sparkVersion": "4.3.0", "planId": "plan-abc", "job": "clicks",
    "runId": "r-20270115T080000Z-0000", "state": "RUNNING",
    "queries": [
        {"uid": AGG, "name": "per_minute", "state": "ACTIVE", "lastBatchId": 2, "inputRowsPerSecond": 12.5,
         "processedRowsPerSecond": 40.0, "watermark": "2027-01-15T08:00:00.000Z", "exception": None,
         "exceptionsTotal": 0},
        {"uid": COPY, "name": "copies", "state": "ACTIVE", "lastBatchId": 1, "inputRowsPerSecond": None,
         "processedRowsPerSecond": None, "watermark": "1970-01-01T00:00:00.000Z", "exception": None},
    ],
}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition: (name, sorted labels) -> value."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(found: dict, name: str, **labels: str) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))


@pytest.fixture
def metrics() -> DriverMetrics:
    """Two queries of job ``clicks``: an event-time aggregate into a file sink (Spark does not count its output)
    and a stateless copy into a sink Spark counts, after three and two batches."""
    m = DriverMetrics("clicks", lambda: STATUS, clock=lambda: NOW)
    m.add_query(AGG, "per_minute")
    m.add_query(COPY, "copies")
    for event, sink in [
        (progress("a", 0, 50, trigger_ms=1150, wal_ms=65, commit_ms=99, state=[(4, 2368, 0)],
                  watermark="1970-01-01T00:00:00.000Z"), "per_minute"),
        (progress("b", 0, 50, trigger_ms=154, wal_ms=62, commit_ms=48, output_rows=50), "copies"),
        (progress("a", 1, 30, trigger_ms=400, wal_ms=10, commit_ms=20, state=[(6, 3000, 2), (1, 100, 1)],
                  watermark="2027-01-15T08:00:00.000Z"), "per_minute"),
        (progress("b", 1, 0, trigger_ms=5, output_rows=0), "copies"),  # a no-data batch: nothing written
        (progress("a", 2, 0, trigger_ms=30, wal_ms=4, commit_ms=6, state=[(5, 2900, 0), (1, 100, 0)],
                  watermark="2027-01-15T08:00:00.000Z"), "per_minute"),
    ]:
        m.observe(AGG if event.query_id == "a" else COPY, sink, event)
    return m


def test_counters_sum_every_batch_per_query_and_sink(metrics: DriverMetrics) -> None:
    found = samples(metrics.exposition().decode())
    agg = {"job_name": "clicks", "query": AGG, "sink": "per_minute"}
    copy = {"job_name": "clicks", "query": COPY, "sink": "copies"}
    assert value(found, "planengine_query_records_in_total", **agg) == 80
    assert value(found, "planengine_query_records_in_total", **copy) == 50
    assert value(found, "planengine_query_batches_total", **agg) == 3
    assert value(found, "planengine_query_batches_total", **copy) == 2
    assert value(found, "planengine_query_late_records_dropped_total", **agg) == 3
    assert value(found, "planengine_query_late_records_dropped_total", **copy) == 0
    # Records out where Spark counts them (a v2 sink); a file sink's -1 is no sample rather than a wrong 0.
    assert value(found, "planengine_query_records_out_total", **copy) == 50
    assert value(found, "planengine_query_records_out_total", **agg) is None


def test_batch_and_checkpoint_durations_are_histograms(metrics: DriverMetrics) -> None:
    found = samples(metrics.exposition().decode())
    agg = {"job_name": "clicks", "query": AGG, "sink": "per_minute"}
    copy = {"job_name": "clicks", "query": COPY, "sink": "copies"}
    assert value(found, "planengine_query_batch_duration_seconds_count", **agg) == 3
    assert value(found, "planengine_query_batch_duration_seconds_sum", **agg) == pytest.approx(1.58)
    assert value(found, "planengine_query_batch_duration_seconds_bucket", **agg, le="0.5") == 2
    assert value(found, "planengine_query_batch_duration_seconds_bucket", **agg, le="+Inf") == 3
    # walCommit + commitOffsets per batch: 164 ms, 30 ms, 10 ms
    assert value(found, "planengine_query_checkpoint_duration_seconds_count", **agg) == 3
    assert value(found, "planengine_query_checkpoint_duration_seconds_sum", **agg) == pytest.approx(0.204)
    assert value(found, "planengine_query_checkpoint_duration_seconds_bucket", **agg, le="0.025") == 1
    assert value(found, "planengine_query_last_checkpoint_duration_seconds", **agg) == pytest.approx(0.010)
    # The copy's second batch reported no log writes (Spark leaves them out of a batch that wrote none).
    assert value(found, "planengine_query_checkpoint_duration_seconds_count", **copy) == 1
    assert value(found, "planengine_query_batch_duration_seconds_count", **copy) == 2


def test_state_is_the_last_batch_summed_over_the_querys_operators(metrics: DriverMetrics) -> None:
    found = samples(metrics.exposition().decode())
    agg = {"job_name": "clicks", "query": AGG, "sink": "per_minute"}
    assert value(found, "planengine_query_state_rows", **agg) == 6
    assert value(found, "planengine_query_state_memory_bytes", **agg) == 3000
    copy = {"job_name": "clicks", "query": COPY, "sink": "copies"}
    assert value(found, "planengine_query_state_rows", **copy) is None  # stateless: no state, not zero state


def test_status_gauges_watermark_and_lag(metrics: DriverMetrics) -> None:
    found = samples(metrics.exposition().decode())
    agg = {"job_name": "clicks", "query": AGG, "sink": "per_minute"}
    copy = {"job_name": "clicks", "query": COPY, "sink": "copies"}
    watermark = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    assert value(found, "planengine_query_current_input_watermark_seconds", **agg) == watermark
    assert value(found, "planengine_query_watermark_lag_seconds", **agg) == pytest.approx(NOW - watermark)
    # Spark's watermark before the first one is computed is no event time: no 57-year lag on the dashboard.
    assert value(found, "planengine_query_watermark_lag_seconds", **copy) is None
    assert value(found, "planengine_query_records_in_per_second", **agg) == 12.5
    assert value(found, "planengine_query_records_processed_per_second", **agg) == 40.0
    assert value(found, "planengine_query_records_in_per_second", **copy) is None
    assert value(found, "planengine_query_active", **agg) == 1
    assert value(found, "planengine_query_last_batch_id", **copy) == 1
    assert value(found, "planengine_query_exceptions_total", **copy) == 0
    assert value(found, "planengine_driver_up", job_name="clicks") == 1
    assert value(found, "planengine_driver_info", job_name="clicks", engine_version="0.1", spark_version="4.3.0",
                 plan_id="plan-abc", run_id="r-20270115T080000Z-0000", state="RUNNING") == 1


def test_every_family_has_help_and_a_type(metrics: DriverMetrics) -> None:
    families = list(text_string_to_metric_families(metrics.exposition().decode()))
    assert {f.name: f.type for f in families} == {
        "planengine_driver_up": "gauge", "planengine_driver_info": "gauge",  # an info family, as 0.0.4 text says it
        "planengine_query_active": "gauge", "planengine_query_last_batch_id": "gauge",
        "planengine_query_exceptions": "counter", "planengine_query_records_in_per_second": "gauge",
        "planengine_query_records_processed_per_second": "gauge",
        "planengine_query_current_input_watermark_seconds": "gauge", "planengine_query_watermark_lag_seconds": "gauge",
        "planengine_query_records_in": "counter", "planengine_query_records_out": "counter",
        "planengine_query_batches": "counter", "planengine_query_late_records_dropped": "counter",
        "planengine_query_batch_duration_seconds": "histogram",
        "planengine_query_checkpoint_duration_seconds": "histogram",
        "planengine_query_last_checkpoint_duration_seconds": "gauge", "planengine_query_state_rows": "gauge",
        "planengine_query_state_memory_bytes": "gauge",
    }
    for family in families:
        assert family.name.startswith("planengine_") and family.documentation.strip(), family.name
        assert family.type in ("counter", "gauge", "histogram"), family.name
    assert not [f.name for f in families if f.name.endswith("_created")]


def test_a_started_query_shows_zero_counters_before_its_first_batch() -> None:
    m = DriverMetrics("clicks", lambda: {"queries": []})
    m.add_query(AGG, "per_minute")
    found = samples(m.exposition().decode())
    labels = {"job_name": "clicks", "query": AGG, "sink": "per_minute"}
    assert value(found, "planengine_query_records_in_total", **labels) == 0
    assert value(found, "planengine_query_batches_total", **labels) == 0
    assert value(found, "planengine_query_records_out_total", **labels) is None


def test_drivers_in_one_process_keep_their_own_registries() -> None:
    """Two jobs (or a test and the next) never share a series: prometheus_client's global registry is not used."""
    one = DriverMetrics("one", lambda: {"queries": []})
    two = DriverMetrics("two", lambda: {"queries": []})
    one.observe(AGG, "s", progress("a", 0, 7, trigger_ms=10))
    assert value(samples(one.exposition().decode()), "planengine_query_records_in_total",
                 job_name="one", query=AGG, sink="s") == 7
    assert not [k for k in samples(two.exposition().decode()) if k[0] == "planengine_query_records_in_total"]


def test_a_status_document_alone_gives_the_status_families() -> None:
    """What /metrics serves for a control without ``metrics``: odd label values survive the escaping."""
    odd = 'odd"uid\\with\nnewline'
    status = {"job": "j", "queries": [{"uid": odd, "state": "FAILED", "lastBatchId": None, "exception": "boom"},
                                      {"uid": "q", "state": "active", "exceptionsTotal": 3}]}
    found = samples(status_metrics(status).exposition().decode())
    assert value(found, "planengine_query_exceptions_total", job_name="j", query=odd, sink=odd) == 1
    assert value(found, "planengine_query_active", job_name="j", query=odd, sink=odd) == 0
    assert value(found, "planengine_query_last_batch_id", job_name="j", query=odd, sink=odd) is None
    assert value(found, "planengine_query_exceptions_total", job_name="j", query="q", sink="q") == 3
    assert value(found, "planengine_query_active", job_name="j", query="q", sink="q") == 1
