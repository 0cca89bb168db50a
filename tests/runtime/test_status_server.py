"""The driver status API over real HTTP (urllib) against a fake driver implementing DriverControl."""

import http.client
import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from planengine.runtime.engine.status_server import DriverControl, StatusServer

STATUS = {
    "engineVersion": "0.1",
    "sparkVersion": "4.3.0",
    "planId": "plan-abc",
    "runId": "r-20261122T081500Z-0000",
    "state": "running",
    "queries": [
        {
            "uid": "orders_agg",
            "state": "active",
            "lastBatchId": 41,
            "lastCommitAt": "2026-11-22T08:15:00Z",
            "inputRowsPerSecond": 120.5,
            "processedRowsPerSecond": 300.0,
            "watermark": "2026-11-22T08:14:00Z",
            "exception": None,
        },
        {
            "uid": 'odd"uid\\with\nnewline',
            "state": "failed",
            "lastBatchId": None,
            "lastCommitAt": None,
            "inputRowsPerSecond": None,
            "processedRowsPerSecond": None,
            "watermark": None,
            "exception": "boom",
        },
    ],
}


class FakeDriver:
    """Records stop requests; a stop takes a moment, like a real batch boundary wait."""

    def __init__(self, fail: bool = False):
        self.stops: list[tuple[bool, bool]] = []
        self.fail = fail
        self.release = threading.Event()

    def status(self) -> dict[str, Any]:
        return STATUS

    def request_stop(self, snapshot: bool, drain: bool) -> str | None:
        self.stops.append((snapshot, drain))
        self.release.wait(10)
        if self.fail:
            raise RuntimeError("query orders_agg failed while stopping")
        return "s-20261122T081600Z-0000" if snapshot else None


@pytest.fixture
def driver():
    return FakeDriver()


@pytest.fixture
def server(driver):
    with StatusServer(driver) as srv:
        yield srv


def call(server: StatusServer, method: str, path: str, body: bytes | None = None) -> tuple[int, dict, str]:
    request = urllib.request.Request(server.url + path, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def test_fake_driver_satisfies_the_protocol(driver):
    assert isinstance(driver, DriverControl)


def test_port_zero_binds_a_free_port(server):
    assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}"


def test_healthz(server):
    status, _, body = call(server, "GET", "/healthz")
    assert (status, body) == (200, "ok\n")


def test_status_is_the_drivers_document(server):
    status, headers, body = call(server, "GET", "/v1/status?verbose=1")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == STATUS


def test_stop_answers_the_snapshot_id(server, driver):
    driver.release.set()
    status, _, body = call(server, "POST", "/v1/stop", b'{"snapshot": true, "drain": true}')
    assert status == 200 and json.loads(body) == {"stopped": True, "snapshotId": "s-20261122T081600Z-0000"}
    assert driver.stops == [(True, True)]
    assert server.wait_stop_answered(timeout=1)


class ManifestDriver(FakeDriver):
    def snapshot_manifest(self, snapshot_id: str) -> dict[str, Any]:
        return {"snapshotId": snapshot_id, "queries": {"3_sink": {"lastBatchId": 7}}}


def test_stop_answers_the_snapshots_manifest_when_the_driver_has_it():
    """An operator that cannot read the job root (Kubernetes) learns the snapshot's batches from the answer."""
    driver = ManifestDriver()
    driver.release.set()
    with StatusServer(driver) as server:
        status, _, body = call(server, "POST", "/v1/stop", b'{"snapshot": true}')
    assert status == 200 and json.loads(body) == {
        "stopped": True, "snapshotId": "s-20261122T081600Z-0000",
        "manifest": {"snapshotId": "s-20261122T081600Z-0000", "queries": {"3_sink": {"lastBatchId": 7}}}}


def test_stop_without_body_uses_the_defaults(server, driver):
    driver.release.set()
    status, _, body = call(server, "POST", "/v1/stop", b"")
    assert status == 200 and json.loads(body)["snapshotId"] is not None
    assert driver.stops == [(True, False)]


def test_concurrent_stops_share_one_request_and_health_stays_responsive(server, driver):
    results: list[tuple[int, dict]] = []

    def stop():
        status, _, body = call(server, "POST", "/v1/stop", b'{"snapshot": true}')
        results.append((status, json.loads(body)))

    threads = [threading.Thread(target=stop) for _ in range(3)]
    for t in threads:
        t.start()
    assert call(server, "GET", "/healthz")[0] == 200  # served while the stop is pending
    assert not server.wait_stop_answered(timeout=0.1)
    driver.release.set()
    for t in threads:
        t.join(10)
    assert driver.stops == [(True, False)]
    assert results == [(200, {"stopped": True, "snapshotId": "s-20261122T081600Z-0000"})] * 3


def test_a_failed_stop_is_a_500_with_the_reason():
    driver = FakeDriver(fail=True)
    driver.release.set()
    with StatusServer(driver) as server:
        status, _, body = call(server, "POST", "/v1/stop", b"{}")
    assert status == 500
    assert json.loads(body) == {"stopped": False, "error": "RuntimeError: query orders_agg failed while stopping"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{snapshot: true}", "body is not valid JSON"),
        (b"[true]", "body must be a JSON object"),
        (b'{"snapshot": "yes"}', "field 'snapshot' must be true or false, got 'yes'"),
        (b'{"snapshot": true, "force": 1}', "unknown fields ['force']"),
    ],
)
def test_bad_stop_bodies_are_400_and_do_not_stop(server, driver, body, message):
    status, headers, text = call(server, "POST", "/v1/stop", body)
    assert status == 400 and headers["Content-Type"] == "application/json"
    assert message in json.loads(text)["error"]
    assert driver.stops == []


def test_unknown_path_is_404_with_json(server):
    status, _, body = call(server, "GET", "/v2/status")
    assert status == 404
    error = json.loads(body)
    assert error["path"] == "/v2/status" and "/v1/status" in error["error"]


@pytest.mark.parametrize(("method", "path", "allow"), [("POST", "/v1/status", "GET"), ("GET", "/v1/stop", "POST")])
def test_wrong_method_is_405_with_allow(server, method, path, allow):
    status, headers, body = call(server, method, path, b"{}" if method == "POST" else None)
    assert status == 405 and headers["Allow"] == allow
    assert f"use {allow}" in json.loads(body)["error"]


def test_oversized_body_is_refused(server, driver):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.putrequest("POST", "/v1/stop")
    conn.putheader("Content-Length", str(10**9))
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413 and driver.stops == []
    conn.close()


def test_metrics_are_prometheus_text(server):
    """A control without its own ``metrics``: the families read from the status document, labelled by job, query
    and sink, parsed back by prometheus_client (escaping included)."""
    status, headers, body = call(server, "GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(body)}
    assert all(f.documentation for f in families.values()), [n for n, f in families.items() if not f.documentation]
    found = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples}

    def value(name, uid, **more):
        return found.get((name, tuple(sorted({"job_name": "", "query": uid, "sink": uid, **more}.items()))))

    odd = 'odd"uid\\with\nnewline'
    assert families["planengine_query_exceptions"].type == "counter"
    assert value("planengine_query_last_batch_id", "orders_agg") == 41
    assert value("planengine_query_records_in_per_second", "orders_agg") == 120.5
    assert value("planengine_query_records_processed_per_second", "orders_agg") == 300.0
    assert value("planengine_query_exceptions_total", "orders_agg") == 0
    assert value("planengine_query_exceptions_total", odd) == 1
    assert value("planengine_query_active", "orders_agg") == 1
    assert value("planengine_query_current_input_watermark_seconds", "orders_agg") == 1795335240.0
    assert any(name == "planengine_driver_info" and ("run_id", "r-20261122T081500Z-0000") in labels
               for name, labels in found)
    # Unknown values are omitted rather than exported as a made-up number.
    assert value("planengine_query_last_batch_id", odd) is None


def test_metrics_are_the_controls_own_when_it_counts_batches(driver):
    """A running Job has ``metrics`` (its batch counters); the server serves those, not a status-only copy."""
    from planengine.runtime.engine.driver_metrics import DriverMetrics
    from planengine.runtime.engine.progress_listener import Progress

    driver.metrics = DriverMetrics("orders", driver.status)
    driver.metrics.observe("orders_agg", "orders_per_minute", Progress("id-1", 0, "t", 17))
    with StatusServer(driver) as srv:
        _, _, body = call(srv, "GET", "/metrics")
    samples = [s for f in text_string_to_metric_families(body) for s in f.samples]
    assert [(s.labels, s.value) for s in samples if s.name == "planengine_query_records_in_total"] == [
        ({"job_name": "orders", "query": "orders_agg", "sink": "orders_per_minute"}, 17.0)]
