"""The driver's Prometheus metrics (``GET /metrics`` of the status API), with ``prometheus_client``.

Two sources, because Prometheus needs two kinds of number:

* **every batch** (counters and histograms: ``rate()`` and ``histogram_quantile()`` need each batch, not the last
  one): records in and out, batches, late records dropped, batch and checkpoint durations, and the last batch's
  state size. ``observe`` takes them from each progress event the executor's listener reads
  (``progress_listener.Progress``);
* **now** (gauges read at scrape time from ``DriverControl.status()``, the same document ``/v1/status`` serves, so
  the two never disagree): the driver's versions and state, each query's activity, last batch, rates, watermark
  and the watermark's lag behind the wall clock.

Names follow Flink's metrics where the two engines overlap (``numRecordsIn`` → ``records_in_total``,
``numRecordsInPerSecond`` → ``records_in_per_second``, ``currentInputWatermark``, FLIP-33's ``watermarkLag``,
``numLateRecordsDropped``, ``lastCheckpointDuration``), in Prometheus's style (``planengine_`` prefix, base units,
``_total`` counters), and Spark's progress fields where Flink has no equivalent (``stateOperators``'s
``numRowsTotal`` and ``memoryUsedBytes``). Labels: ``job_name`` (Flink's label, and not ``job``, which Prometheus
sets on every target and would rename ours to ``exported_job``), ``query`` (the query's uid: it names the
checkpoint, so it is the same across restarts) and ``sink`` (the table(s) the query writes, or ``channel: ...``).

Each driver has a registry of its own (never prometheus_client's global one), so tests, a standby and several
jobs in one process cannot collide. docs/operator.md ("Metrics") lists every family; the chart's Grafana dashboard
uses exactly these names (``tests/chart/test_dashboard.py``).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from planengine.runtime.engine.progress_listener import Progress, epoch_seconds

# ``_created`` series would double every counter and histogram; Prometheus ignores them without its
# created-timestamps feature, and a restart is visible as a counter reset anyway.
prometheus_client.disable_created_metrics()

CONTENT_TYPE = prometheus_client.CONTENT_TYPE_PLAIN_0_0_4
LABELS = ("job_name", "query", "sink")
#: A micro-batch takes from milliseconds (a trigger with nothing to do) to minutes (a backlog after a restart).
BATCH_SECONDS_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, math.inf)
#: The offset and commit log writes: a few milliseconds on a local disk, seconds on a slow object store.
CHECKPOINT_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, math.inf)
#: Spark's ``durationMs`` entries that write the checkpoint: the offset log before the batch (``walCommit``) and
#: the commit log after it (``commitOffsets``). Together they are what Flink calls a checkpoint's duration.
CHECKPOINT_PHASES = ("walCommit", "commitOffsets")
#: Spark reports this watermark before the first one was computed; it is no event time.
NO_WATERMARK = 0.0


def job_name(job_root: str | os.PathLike[str] | None = None, environ: Mapping[str, str] = os.environ) -> str:
    """The job's name for the ``job_name`` label: the SparkPlanJob's name when the operator started the driver
    (``PLANENGINE_JOB`` = ``<namespace>/<name>``; the namespace is the pod's, which Prometheus labels already),
    else the job root's directory name (a developer's ``planengine run --job-root jobs/clicks`` is ``clicks``).

    >>> job_name("/var/jobs/clicks/", {}), job_name("/var/jobs/x", {"PLANENGINE_JOB": "team-a/orders"})
    ('clicks', 'orders')
    """
    named = environ.get("PLANENGINE_JOB", "")
    if named:
        return named.rsplit("/", 1)[-1]
    return Path(job_root).name if job_root is not None else ""


class DriverMetrics:
    """One driver's families in a registry of its own: ``observe`` per committed batch, ``exposition`` per scrape.

    ``status`` is the driver's ``DriverControl.status``; ``clock`` the wall clock the watermark lag is measured
    against (tests pass a fixed one)."""

    def __init__(self, job: str, status: Callable[[], dict[str, Any]],
                 clock: Callable[[], float] = time.time) -> None:
        self.job = job
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.records_in = Counter(
            "planengine_query_records_in", "Records the query read (Spark's numInputRows summed over its batches; "
            "Flink's numRecordsIn).", LABELS, registry=r)
        self.records_out = Counter(
            "planengine_query_records_out", "Records the query wrote to its sink (Spark's sink numOutputRows; "
            "Flink's numRecordsOut). Only for sinks Spark counts: absent for the file sink and foreachBatch "
            "writers, for which Spark reports -1.", LABELS, registry=r)
        self.batches = Counter(
            "planengine_query_batches", "Micro-batches the query committed.", LABELS, registry=r)
        self.late_records = Counter(
            "planengine_query_late_records_dropped", "Records the query's stateful operators dropped as later "
            "than the watermark (Spark's numRowsDroppedByWatermark; Flink's numLateRecordsDropped).", LABELS,
            registry=r)
        self.batch_seconds = Histogram(
            "planengine_query_batch_duration_seconds", "Wall time of each micro-batch, planning to commit "
            "(Spark's durationMs.triggerExecution).", LABELS, buckets=BATCH_SECONDS_BUCKETS, registry=r)
        self.checkpoint_seconds = Histogram(
            "planengine_query_checkpoint_duration_seconds", "Time each micro-batch spent writing its checkpoint: "
            "the offset log before it and the commit log after it (Spark's durationMs walCommit + commitOffsets).",
            LABELS, buckets=CHECKPOINT_SECONDS_BUCKETS, registry=r)
        self.last_checkpoint_seconds = Gauge(
            "planengine_query_last_checkpoint_duration_seconds", "The last micro-batch's checkpoint time "
            "(walCommit + commitOffsets; Flink's lastCheckpointDuration).", LABELS, registry=r)
        self.state_rows = Gauge(
            "planengine_query_state_rows", "Rows in the query's state stores after its last batch (Spark's "
            "stateOperators numRowsTotal, summed over the query's stateful operators).", LABELS, registry=r)
        self.state_bytes = Gauge(
            "planengine_query_state_memory_bytes", "Memory the query's state stores used after its last batch "
            "(Spark's stateOperators memoryUsedBytes, summed).", LABELS, registry=r)
        self._lock = threading.Lock()
        r.register(_StatusCollector(job, status, clock))

    def add_query(self, query: str, sink: str) -> None:
        """Show a started query's counters at 0 before its first batch (``rate()`` and alerts on absent series
        need the series to exist). Records out is left out: only a sink Spark counts ever has it."""
        labels = (self.job, query, sink)
        for counter in (self.records_in, self.batches, self.late_records):
            counter.labels(*labels)

    def observe(self, query: str, sink: str, progress: Progress) -> None:
        """Count one committed micro-batch of a query of this driver."""
        labels = (self.job, query, sink)
        with self._lock:
            self.batches.labels(*labels).inc()
            self.records_in.labels(*labels).inc(progress.input_rows)
            self.late_records.labels(*labels).inc(progress.late_rows_dropped)
            if progress.output_rows is not None:
                self.records_out.labels(*labels).inc(progress.output_rows)
            trigger = progress.duration_ms.get("triggerExecution")
            if trigger is not None:
                self.batch_seconds.labels(*labels).observe(trigger / 1000)
            phases = [progress.duration_ms[p] for p in CHECKPOINT_PHASES if p in progress.duration_ms]
            if phases:
                self.checkpoint_seconds.labels(*labels).observe(sum(phases) / 1000)
                self.last_checkpoint_seconds.labels(*labels).set(sum(phases) / 1000)
            if progress.state_rows is not None:
                self.state_rows.labels(*labels).set(progress.state_rows)
            if progress.state_memory_bytes is not None:
                self.state_bytes.labels(*labels).set(progress.state_memory_bytes)

    def exposition(self) -> bytes:
        """The Prometheus text format (0.0.4) of every family."""
        return prometheus_client.generate_latest(self.registry)


def status_metrics(status: dict[str, Any]) -> DriverMetrics:
    """Metrics of a driver that counts no batches (a standby before its start, the tests' fake drivers): the
    families read from its status document alone."""
    return DriverMetrics(str(status.get("job") or ""), lambda: status)


class _StatusCollector(Collector):
    """The gauges that describe the driver now, read from its status document at each scrape."""

    def __init__(self, job: str, status: Callable[[], dict[str, Any]], clock: Callable[[], float]) -> None:
        self.job = job
        self.status = status
        self.clock = clock

    def describe(self) -> list[Metric]:
        return list(self._families({}))  # auto_describe: names for the registry's duplicate check

    def collect(self) -> Iterator[Metric]:
        yield from self._families(self.status())

    def _families(self, status: dict[str, Any]) -> Iterator[Metric]:
        job = self.job or str(status.get("job") or "")
        queries = [q for q in status.get("queries") or [] if isinstance(q, dict)]
        up = GaugeMetricFamily("planengine_driver_up", "1 while the driver serves its status API.",
                               labels=["job_name"])
        up.add_metric([job], 1)
        yield up
        info = InfoMetricFamily("planengine_driver", "The driver's engine and Spark versions, plan, run and state.",
                                labels=["job_name"])
        if status:
            info.add_metric([job], {"engine_version": str(status.get("engineVersion") or ""),
                                    "spark_version": str(status.get("sparkVersion") or ""),
                                    "plan_id": str(status.get("planId") or ""),
                                    "run_id": str(status.get("runId") or ""), "state": str(status.get("state") or "")})
        yield info

        def family(name: str, help_text: str, value: Callable[[dict[str, Any]], float | None],
                   kind: type[GaugeMetricFamily] | type[CounterMetricFamily] = GaugeMetricFamily) -> Metric:
            metric = kind(name, help_text, labels=list(LABELS))
            for q in queries:
                number = value(q)
                if number is not None:  # Prometheus has no null: an unknown value is no sample, not a made-up one
                    uid = str(q.get("uid") or "")
                    metric.add_metric([job, uid, str(q.get("name") or uid)], number)
            return metric

        yield family("planengine_query_active", "1 while the query runs (Spark's isActive).",
                     lambda q: 1 if str(q.get("state") or "").upper() == "ACTIVE" else 0)
        yield family("planengine_query_last_batch_id", "Id of the query's last committed micro-batch (-1: none "
                     "yet in this run).", lambda q: _number(q.get("lastBatchId")))
        yield family("planengine_query_exceptions", "Query failures the driver saw.", _exceptions,
                     CounterMetricFamily)
        yield family("planengine_query_records_in_per_second", "Rate at which the last micro-batch's records "
                     "arrived (Spark's inputRowsPerSecond; Flink's numRecordsInPerSecond).",
                     lambda q: _number(q.get("inputRowsPerSecond")))
        yield family("planengine_query_records_processed_per_second", "Rate at which the last micro-batch "
                     "processed its records (Spark's processedRowsPerSecond).",
                     lambda q: _number(q.get("processedRowsPerSecond")))
        yield family("planengine_query_current_input_watermark_seconds", "The query's event-time watermark as "
                     "epoch seconds (Spark's eventTime.watermark; Flink's currentInputWatermark). Absent before "
                     "the first watermark and for queries without event time.",
                     lambda q: _watermark(q.get("watermark")))
        yield family("planengine_query_watermark_lag_seconds", "Wall clock minus the query's watermark: how far "
                     "event time lags behind now (FLIP-33's watermarkLag).", lambda q: self._lag(q))

    def _lag(self, query: dict[str, Any]) -> float | None:
        watermark = _watermark(query.get("watermark"))
        return None if watermark is None else self.clock() - watermark


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _exceptions(query: dict[str, Any]) -> float:
    """The driver's count when it keeps one, else 1 while the query has an exception."""
    total = query.get("exceptionsTotal")
    if isinstance(total, int) and not isinstance(total, bool):
        return total
    return 1 if query.get("exception") else 0


def _watermark(value: Any) -> float | None:
    seconds = epoch_seconds(value) if isinstance(value, str) else _number(value)
    return None if seconds is None or seconds == NO_WATERMARK else seconds
