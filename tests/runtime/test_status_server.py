"""The driver status API over real HTTP (urllib) against a fake driver implementing DriverControl."""

import http.client
import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from planengine.runtime.engine.status_server import DriverControl, StatusServer, escape_label_value, render_metrics

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
    status, headers, body = call(server, "GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    lines = body.splitlines()
    assert "planengine_driver_up 1" in lines
    assert "# TYPE planengine_query_exceptions_total counter" in lines
    assert 'planengine_query_last_batch_id{uid="orders_agg"} 41' in lines
    assert 'planengine_query_input_rows_per_second{uid="orders_agg"} 120.5' in lines
    assert 'planengine_query_processed_rows_per_second{uid="orders_agg"} 300.0' in lines
    assert 'planengine_query_exceptions_total{uid="orders_agg"} 0' in lines
    assert 'planengine_query_exceptions_total{uid="odd\\"uid\\\\with\\nnewline"} 1' in lines
    assert 'planengine_query_active{uid="orders_agg"} 1' in lines
    assert any(
        line.startswith("planengine_driver_info{") and 'run_id="r-20261122T081500Z-0000"' in line for line in lines
    )
    # Unknown values are omitted rather than exported as a made-up number.
    assert not any(line.startswith('planengine_query_last_batch_id{uid="odd') for line in lines)


def test_exception_counter_prefers_the_drivers_total():
    text = render_metrics({"queries": [{"uid": "q", "exception": None, "exceptionsTotal": 3}]})
    assert 'planengine_query_exceptions_total{uid="q"} 3' in text.splitlines()


def test_label_escaping():
    assert escape_label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
