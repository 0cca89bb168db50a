"""The operator's Prometheus families after a known sequence of status writes, read back with prometheus_client's
parser: per-job series to alert on, fleet counters, and Histograms for latencies."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from planengine_operator.metrics import PHASES, OperatorMetrics
from planengine_operator.models import JobStatus

UPGRADING = {"phase": "Upgrading", "engineVersion": "0.1",
             "upgrade": {"from": "0.1", "to": "0.2", "step": "Stabilize", "started": "2027-01-15T08:00:00Z"},
             "conditions": [{"type": "Ready", "status": "True"}]}
ROLLED_BACK = {"phase": "RolledBack", "engineVersion": "0.1",
               "upgrade": {"from": "0.1", "to": "0.2", "step": "RolledBack", "started": "2027-01-15T08:00:00Z",
                           "finished": "2027-01-15T08:02:30Z", "message": "only 0 of 3 batches committed"},
               "conditions": [{"type": "Ready", "status": "False"}]}
RUNNING = {"phase": "Running", "engineVersion": "0.2", "restarts": {"count": 2},
           "upgrade": {"from": "0.1", "to": "0.2", "step": "Succeeded", "started": "2027-01-15T07:00:00Z",
                       "finished": "2027-01-15T07:01:00Z"},
           "conditions": [{"type": "Ready", "status": "True"}]}


def status(data: dict[str, Any]) -> JobStatus:
    return JobStatus.read(data)


def samples(metrics: OperatorMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(metrics.exposition().decode()) for s in f.samples}


def value(found: dict, name: str, **labels: str) -> float | None:
    return found.get((name, tuple(sorted(labels.items()))))


@pytest.fixture
def metrics() -> OperatorMetrics:
    """Job team-a/clicks upgrades and is rolled back; team-b/orders runs (after an upgrade that succeeded)."""
    m = OperatorMetrics()
    m.observe_job("team-b", "orders", status(RUNNING))
    m.observe_job("team-a", "clicks", status(UPGRADING))
    m.observe_transition("team-a", "clicks", status(UPGRADING), status(ROLLED_BACK))
    m.observe_transition("team-a", "clicks", status(ROLLED_BACK), status(ROLLED_BACK))  # rewritten: counted once
    m.observe_job("team-a", "clicks", status(ROLLED_BACK))
    for seconds in (0.003, 0.04, 0.04, 2.0):
        m.reconcile_seconds.observe(seconds)
    return m


def test_the_job_phase_is_a_state_set(metrics: OperatorMetrics) -> None:
    found = samples(metrics)
    for job, phase in ((("team-a", "clicks"), "RolledBack"), (("team-b", "orders"), "Running")):
        labels = {"namespace": job[0], "job_name": job[1]}
        states = {p: value(found, "planengine_job_phase", **labels, phase=p) for p in PHASES}
        assert states == {p: (1 if p == phase else 0) for p in PHASES}
    assert value(found, "planengine_jobs", phase="RolledBack") == 1
    assert value(found, "planengine_jobs", phase="Running") == 1
    assert value(found, "planengine_jobs", phase="Failed") == 0  # every phase present: alerts need no absent()


def test_upgrades_rollbacks_restarts_and_readiness_per_job(metrics: OperatorMetrics) -> None:
    found = samples(metrics)
    clicks = {"namespace": "team-a", "job_name": "clicks"}
    orders = {"namespace": "team-b", "job_name": "orders"}
    assert value(found, "planengine_job_last_upgrade_result", **clicks, result="RolledBack") == 1
    assert value(found, "planengine_job_last_upgrade_result", **clicks, result="Succeeded") == 0
    assert value(found, "planengine_job_last_upgrade_result", **orders, result="Succeeded") == 1
    assert value(found, "planengine_job_rollbacks_total", **clicks) == 1
    assert value(found, "planengine_job_rollbacks_total", **orders) == 0
    assert value(found, "planengine_job_restarts_total", **orders) == 2
    assert value(found, "planengine_job_ready", **clicks) == 0
    assert value(found, "planengine_job_ready", **orders) == 1
    assert value(found, "planengine_upgrades_total", result="RolledBack") == 1
    assert value(found, "planengine_upgrades_total", result="Succeeded") == 0  # observed before: not a transition
    assert value(found, "planengine_rollbacks_total") == 1
    assert value(found, "planengine_upgrade_duration_seconds_count") == 1
    assert value(found, "planengine_upgrade_duration_seconds_sum") == 150
    assert value(found, "planengine_upgrade_duration_seconds_bucket", le="180.0") == 1
    assert value(found, "planengine_upgrade_duration_seconds_bucket", le="120.0") == 0


def test_the_step_of_an_upgrade_in_flight() -> None:
    m = OperatorMetrics()
    m.observe_job("team-a", "clicks", status(UPGRADING))
    found = samples(m)
    clicks = {"namespace": "team-a", "job_name": "clicks"}
    assert value(found, "planengine_job_upgrade_step", **clicks, step="Stabilize") == 1
    assert not [k for k in found if k[0] == "planengine_job_last_upgrade_result"]  # none finished yet
    m.observe_job("team-a", "clicks", status(ROLLED_BACK))
    assert not [k for k in samples(m) if k[0] == "planengine_job_upgrade_step"]


def test_reconcile_latency_is_a_histogram(metrics: OperatorMetrics) -> None:
    found = samples(metrics)
    assert value(found, "planengine_reconcile_duration_seconds_count") == 4
    assert value(found, "planengine_reconcile_duration_seconds_sum") == pytest.approx(2.083)
    assert value(found, "planengine_reconcile_duration_seconds_bucket", le="0.005") == 1
    assert value(found, "planengine_reconcile_duration_seconds_bucket", le="0.05") == 3
    assert value(found, "planengine_reconcile_duration_seconds_bucket", le="+Inf") == 4


def test_a_deleted_job_has_no_series(metrics: OperatorMetrics) -> None:
    metrics.forget_job("team-a", "clicks")
    found = samples(metrics)
    assert not [k for k in found if ("job_name", "clicks") in k[1]]
    assert value(found, "planengine_jobs", phase="RolledBack") == 0
    assert value(found, "planengine_job_phase", namespace="team-b", job_name="orders", phase="Running") == 1


def test_every_family_has_help_and_the_registry_is_its_own(metrics: OperatorMetrics) -> None:
    families = {f.name: f for f in text_string_to_metric_families(metrics.exposition().decode())}
    assert {n: f.type for n, f in families.items()} == {
        "planengine_reconcile_duration_seconds": "histogram", "planengine_upgrade_duration_seconds": "histogram",
        "planengine_upgrades": "counter", "planengine_rollbacks": "counter", "planengine_rollout_paused": "gauge",
        "planengine_jobs": "gauge", "planengine_job_phase": "gauge", "planengine_job_ready": "gauge",
        "planengine_job_upgrade_step": "gauge", "planengine_job_last_upgrade_result": "gauge",
        "planengine_job_restarts": "counter", "planengine_job_rollbacks": "counter",
    }
    assert all(f.documentation.strip() for f in families.values())
    assert value(samples(OperatorMetrics()), "planengine_rollbacks_total") == 0  # a new one starts from nothing
