"""The chart's Grafana dashboard and PodMonitor against what the code exports: every metric a panel queries is one
the driver or the operator serves (they cannot drift apart), and the PodMonitor selects the driver pods the
operator builds, on the port that serves /metrics."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from planengine.runtime.engine.driver_metrics import DriverMetrics
from planengine.runtime.engine.progress_listener import Progress
from planengine_operator import builders
from planengine_operator.metrics import OperatorMetrics
from planengine_operator.models import JobStatus

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "charts" / "planengine-operator" / "dashboards" / "planengine.json"
METRIC = re.compile(r"\bplanengine_[a-z0-9_]+\b")
#: Exported but not on the dashboard, with the reason: the lag panel shows it relative to now, which is what
#: anyone reads from it.
NOT_ON_THE_DASHBOARD = {"planengine_query_current_input_watermark_seconds"}


def exported() -> dict[str, set[str]]:
    """Family name -> its sample names (``_total``, ``_bucket``, ...), from a driver and an operator that have seen
    one of everything."""
    driver = DriverMetrics("clicks", lambda: {"job": "clicks", "state": "RUNNING", "queries": [
        {"uid": "q", "name": "snk", "state": "ACTIVE", "lastBatchId": 0, "inputRowsPerSecond": 1.0,
         "processedRowsPerSecond": 2.0, "watermark": "2027-01-15T08:00:00.000Z", "exceptionsTotal": 0}]})
    driver.observe("q", "snk", Progress("id", 0, "t", 5, duration_ms={"triggerExecution": 10, "walCommit": 1},
                                        state_rows=3, state_memory_bytes=100, late_rows_dropped=1, output_rows=5))
    operator = OperatorMetrics()
    upgrade = {"from": "0.1", "to": "0.2", "started": "2027-01-15T08:00:00Z"}
    operator.observe_job("ns", "a", JobStatus.read({"phase": "Upgrading", "upgrade": {**upgrade, "step": "Check"}}))
    done = JobStatus.read({"phase": "RolledBack", "restarts": {"count": 1}, "upgrade": {
        **upgrade, "step": "RolledBack", "finished": "2027-01-15T08:01:00Z"}})
    operator.observe_transition("ns", "b", JobStatus(), done)
    operator.observe_job("ns", "b", done)
    operator.reconcile_seconds.observe(0.1)
    families: dict[str, set[str]] = {}
    for text in (driver.exposition(), operator.exposition()):
        for family in text_string_to_metric_families(text.decode()):
            families[family.name] = {s.name for s in family.samples}
    return families


def expressions() -> list[str]:
    """Every PromQL expression of the dashboard: panel targets and template variable queries."""
    dashboard = json.loads(DASHBOARD.read_text())
    found = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    found += [v["definition"] for v in dashboard["templating"]["list"] if v.get("definition")]
    return found


def test_every_metric_the_dashboard_queries_is_exported() -> None:
    samples = {name for names in exported().values() for name in names}
    unknown = sorted({m for expr in expressions() for m in METRIC.findall(expr)} - samples)
    assert unknown == [], f"the dashboard queries metrics nobody exports: {unknown}"


def test_every_exported_family_is_on_the_dashboard() -> None:
    queried = {m for expr in expressions() for m in METRIC.findall(expr)}
    missing = sorted(f for f, names in exported().items() if not names & queried and f not in NOT_ON_THE_DASHBOARD)
    assert missing == [], f"families no panel shows (add a panel or say why in NOT_ON_THE_DASHBOARD): {missing}"


def test_every_exported_family_is_documented() -> None:
    """docs/operator.md ("Metrics") names every family as Prometheus shows it (a counter with its ``_total``)."""
    docs = (REPO / "docs" / "operator.md").read_text()
    undocumented = sorted(f for f, names in exported().items()
                          if f"`{f}`" not in docs and not any(f"`{n}`" in docs for n in names))
    assert undocumented == [], f"add these families to docs/operator.md, Metrics: {undocumented}"


def test_the_dashboard_is_one_grafana_can_import() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "planengine" and isinstance(dashboard["schemaVersion"], int)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert variables == {"datasource", "namespace", "job"}
    for panel in dashboard["panels"]:
        box = panel["gridPos"]
        assert box["x"] + box["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}" and panel["targets"], panel["title"]
            assert panel["description"], f"{panel['title']}: say what the panel shows"


# --- the chart renders them ------------------------------------------------------------------------------------
def test_neither_is_rendered_by_default(render) -> None:
    manifests = render({})
    assert not [m for m in manifests if m["kind"] == "PodMonitor"]
    assert not [m for m in manifests if (m["metadata"].get("labels") or {}).get("grafana_dashboard")]


def test_the_dashboard_configmap_holds_the_file_for_grafanas_sidecar(render) -> None:
    manifests = render({"metrics": {"grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "x"}}}})
    (configmap,) = [m for m in manifests if (m["metadata"].get("labels") or {}).get("grafana_dashboard") == "1"]
    assert configmap["kind"] == "ConfigMap" and configmap["metadata"]["annotations"] == {"grafana_folder": "x"}
    assert json.loads(configmap["data"]["planengine.json"]) == json.loads(DASHBOARD.read_text())


@pytest.mark.parametrize(("values", "namespaces"), [
    ({}, ["planengine-system"]),
    ({"watchNamespaces": ["a", "b"]}, ["a", "b"]),
])
def test_the_podmonitor_scrapes_the_driver_pods_the_operator_builds(render, values, namespaces) -> None:
    manifests = render({**values, "metrics": {"podMonitor": {"enabled": True, "labels": {"release": "prom"}}}})
    (monitor,) = [m for m in manifests if m["kind"] == "PodMonitor"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1" and monitor["metadata"]["labels"]["release"] == "prom"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": namespaces}
    pod = builders.build_driver_pod(job_name="clicks", namespace=namespaces[0], spec={}, image="img", run_id="r1",
                                    argv=["run"])
    labels = pod["metadata"]["labels"]
    selector = monitor["spec"]["selector"]
    assert selector["matchLabels"].items() <= labels.items()
    assert all(e["operator"] == "Exists" and e["key"] in labels for e in selector["matchExpressions"])
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    ports = {p["name"]: p["containerPort"] for p in pod["spec"]["containers"][0]["ports"]}
    assert endpoint["path"] == "/metrics" and ports[endpoint["port"]] == builders.STATUS_PORT
    assert (endpoint["interval"], endpoint["scrapeTimeout"]) == ("30s", "10s")
    # The NetworkPolicy in front of the same pods: Prometheus reaches them only through networkPolicy.statusFrom.
    policy = next(m for m in manifests if m["kind"] == "NetworkPolicy" and m["metadata"]["namespace"] == namespaces[0])
    assert policy["spec"]["podSelector"] == selector
