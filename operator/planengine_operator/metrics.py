"""The operator's Prometheus metrics (``GET /metrics`` on ``metrics.port``), with ``prometheus_client``.

Updated from the status the reconciler writes, so the numbers are exactly the transitions the jobs went through.
Two kinds:

* **per job**, to alert on one job (``namespace``, ``job_name`` labels): its phase and its Ready condition, the
  step of the upgrade in flight, the result of its last upgrade, its automatic restarts and its rollbacks. Read
  at scrape time from the last status each job reported (``observe_job``), and gone with the job (``forget_job``);
* **fleet-wide**: jobs by phase, upgrades by result and their durations, reconcile latency (Histograms: unlike the
  former Summary over the last 5000 samples, buckets add up across operator replicas and over time), and whether a
  fleet rollout is paused.

``job_name``, not ``job``: Prometheus gives every target a ``job`` label and renames a scraped one to
``exported_job``. ``namespace`` is the job's; the chart's ServiceMonitor sets ``honorLabels`` so Prometheus keeps
it instead of the operator pod's namespace (as for kube-state-metrics). The registry is this module's own (never
prometheus_client's global one), and ``OperatorMetrics`` can be made anew, so tests do not share series.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import get_args

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from planengine_operator.models import JobStatus, Phase
from planengine_operator.vocabulary import parse_iso

# ``_created`` series would double every counter and histogram; Prometheus ignores them without its
# created-timestamps feature.
prometheus_client.disable_created_metrics()

CONTENT_TYPE = prometheus_client.CONTENT_TYPE_PLAIN_0_0_4
PHASES: tuple[str, ...] = get_args(Phase)
#: How an upgrade ends (``status.upgrade.step`` once ``finished`` is set).
UPGRADE_RESULTS = ("Succeeded", "RolledBack", "Refused", "Failed")
#: A reconcile pass is a status read and a decision (milliseconds) or a tool run or driver call (seconds).
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, math.inf)
#: An upgrade: stop, standby hand-over, then the stability window (minutes by default).
UPGRADE_BUCKETS = (10.0, 30.0, 60.0, 120.0, 180.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, math.inf)


@dataclass
class _Job:
    """What the per-job families show of one job: its last reported status, and rollbacks counted here."""

    status: JobStatus
    rollbacks: int = 0


class OperatorMetrics:
    """The operator's families in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.reconcile_seconds = Histogram(
            "planengine_reconcile_duration_seconds", "Wall time of one reconcile pass of one job (observe, decide, "
            "write status, act).", buckets=RECONCILE_BUCKETS, registry=r)
        self.upgrade_seconds = Histogram(
            "planengine_upgrade_duration_seconds", "Wall time of finished upgrades, start to result.",
            buckets=UPGRADE_BUCKETS, registry=r)
        self.upgrades = Counter("planengine_upgrades", "Finished upgrades by result.", ["result"], registry=r)
        for result in UPGRADE_RESULTS:
            self.upgrades.labels(result)
        self.rollbacks = Counter("planengine_rollbacks", "Upgrades rolled back.", registry=r)
        self.rollout_paused = Gauge("planengine_rollout_paused", "1 when the fleet rollout paused at a rollback.",
                                    registry=r)
        self._jobs: dict[tuple[str, str], _Job] = {}
        self._lock = threading.Lock()
        r.register(_JobCollector(self))

    # -- called by the reconciler and the fleet ---------------------------------------------------------------
    def observe_transition(self, namespace: str, name: str, old: JobStatus, new: JobStatus) -> None:
        """Count an upgrade once, in the status write that finishes it."""
        upgrade = new.upgrade
        if upgrade is None or upgrade == old.upgrade:
            return
        step = upgrade.step
        if step in UPGRADE_RESULTS and upgrade.finished:
            self.upgrades.labels(step).inc()
            if step == "RolledBack":
                self.rollbacks.inc()
                with self._lock:
                    self._jobs.setdefault((namespace, name), _Job(new)).rollbacks += 1
            began, ended = parse_iso(upgrade.started), parse_iso(upgrade.finished)
            if began and ended:
                self.upgrade_seconds.observe((ended - began).total_seconds())

    def observe_job(self, namespace: str, name: str, status: JobStatus) -> None:
        """The status the reconciler has just written for a job (what its per-job series show)."""
        with self._lock:
            job = self._jobs.setdefault((namespace, name), _Job(status))
            job.status = status

    def forget_job(self, namespace: str, name: str) -> None:
        with self._lock:
            self._jobs.pop((namespace, name), None)

    def jobs(self) -> list[tuple[tuple[str, str], _Job]]:
        with self._lock:
            return sorted(self._jobs.items())

    def exposition(self) -> bytes:
        """The Prometheus text format (0.0.4) of every family."""
        return prometheus_client.generate_latest(self.registry)


class _JobCollector(Collector):
    """Per-job families, from the jobs' last statuses at each scrape (a deleted job's series end with it)."""

    def __init__(self, metrics: OperatorMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return list(self._families([]))

    def collect(self) -> Iterator[Metric]:
        yield from self._families(self.metrics.jobs())

    @staticmethod
    def _families(jobs: list[tuple[tuple[str, str], _Job]]) -> Iterator[Metric]:
        key = ["namespace", "job_name"]
        by_phase = GaugeMetricFamily("planengine_jobs", "Jobs by phase.", labels=["phase"])
        phase = GaugeMetricFamily("planengine_job_phase", "1 for the job's phase, 0 for the others (a state set: "
                                  "alert on planengine_job_phase{phase=\"Failed\"} == 1).", labels=[*key, "phase"])
        ready = GaugeMetricFamily("planengine_job_ready", "1 while the job's Ready condition is True.", labels=key)
        step = GaugeMetricFamily("planengine_job_upgrade_step", "1 for the step of the upgrade in flight (absent "
                                 "when none is).", labels=[*key, "step"])
        result = GaugeMetricFamily("planengine_job_last_upgrade_result", "1 for the result of the job's last "
                                   "finished upgrade, 0 for the other results.", labels=[*key, "result"])
        restarts = CounterMetricFamily("planengine_job_restarts", "Automatic restarts of the job's driver "
                                       "(status.restarts.count: survives operator restarts).", labels=key)
        rollbacks = CounterMetricFamily("planengine_job_rollbacks", "The job's upgrades rolled back since this "
                                        "operator started.", labels=key)
        counts = dict.fromkeys(PHASES, 0)
        for (namespace, name), job in jobs:
            status = job.status
            labels = [namespace, name]
            if status.phase is not None:
                counts[status.phase] = counts.get(status.phase, 0) + 1
                for candidate in PHASES:
                    phase.add_metric([*labels, candidate], 1 if candidate == status.phase else 0)
            condition = status.condition("Ready")
            ready.add_metric(labels, 1 if condition is not None and condition.status == "True" else 0)
            upgrade = status.upgrade
            if upgrade is not None and upgrade.step and not upgrade.finished:
                step.add_metric([*labels, upgrade.step], 1)
            if upgrade is not None and upgrade.finished and upgrade.step in UPGRADE_RESULTS:
                for candidate in UPGRADE_RESULTS:
                    result.add_metric([*labels, candidate], 1 if candidate == upgrade.step else 0)
            restarts.add_metric(labels, status.restarts.count if status.restarts is not None else 0)
            rollbacks.add_metric(labels, job.rollbacks)
        for name, count in counts.items():
            by_phase.add_metric([name], count)
        yield from (by_phase, phase, ready, step, result, restarts, rollbacks)


#: The operator process's metrics (main.py serves them; the reconciler and the fleet update them).
METRICS = OperatorMetrics()


def observe_transition(namespace: str, name: str, old: JobStatus, new: JobStatus) -> None:
    METRICS.observe_transition(namespace, name, old, new)


def observe_job(namespace: str, name: str, status: JobStatus) -> None:
    METRICS.observe_job(namespace, name, status)


def forget_job(namespace: str, name: str) -> None:
    METRICS.forget_job(namespace, name)


def observe_reconcile(seconds: float) -> None:
    METRICS.reconcile_seconds.observe(seconds)


def set_rollout_paused(paused: bool) -> None:
    METRICS.rollout_paused.set(1 if paused else 0)


def reconcile_count() -> int:
    """Reconcile passes so far (tests wait for the operator to have looked at their jobs)."""
    value = METRICS.registry.get_sample_value("planengine_reconcile_duration_seconds_count")
    return int(value or 0)


def exposition() -> bytes:
    return METRICS.exposition()
