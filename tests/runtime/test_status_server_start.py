"""``POST /v1/start`` and ``capabilities`` of the status API (the warm standby's handover), over real HTTP
against fake drivers; the real standby is exercised in ``test_cli_run.py``."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from planengine.errors import UserError
from planengine.runtime.engine.status_server import StatusServer, parse_start_request


class Running:
    """A driver started the ordinary way: no ``request_start``."""

    def status(self) -> dict[str, Any]:
        return {"runId": "r-1", "state": "RUNNING", "queries": []}

    def request_stop(self, snapshot: bool, drain: bool) -> str | None:
        return None


class Standby(Running):
    def __init__(self) -> None:
        self.starts: list[str | None] = []

    def request_start(self, from_snapshot: str | None) -> dict[str, Any]:
        if from_snapshot == "/missing":
            raise UserError("snapshot '/missing' is neither a snapshot id nor a directory")
        self.starts.append(from_snapshot)
        return {"started": True, "runId": "r-2", "fromSnapshot": from_snapshot}


def call(server: StatusServer, path: str, body: bytes | None = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(server.url + path, data=body, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_start_hands_the_snapshot_to_the_standby() -> None:
    driver = Standby()
    with StatusServer(driver) as server:
        code, body = call(server, "/v1/start", json.dumps({"fromSnapshot": "/root/snapshots/s-1"}).encode())
        assert code == 200 and body == {"started": True, "runId": "r-2", "fromSnapshot": "/root/snapshots/s-1"}
        assert call(server, "/v1/start", b"")[0] == 200  # empty body: continue like a cold start
        refused = call(server, "/v1/start", json.dumps({"fromSnapshot": "/missing"}).encode())
    assert driver.starts == ["/root/snapshots/s-1", None]
    assert refused[0] == 409 and "neither a snapshot id" in refused[1]["error"]


def test_start_on_a_driver_that_is_not_a_standby_is_a_conflict() -> None:
    with StatusServer(Running()) as server:
        code, body = call(server, "/v1/start", b"{}")
    assert code == 409 and "not a standby" in body["error"]


@pytest.mark.parametrize("body,message", [
    (b"[1]", "JSON object"), (b'{"from": "x"}', "unknown fields"), (b'{"fromSnapshot": 3}', "fromSnapshot"),
    (b'{"fromSnapshot": ""}', "fromSnapshot"), (b"{", "not valid JSON")])
def test_bad_start_requests_are_rejected(body: bytes, message: str) -> None:
    with StatusServer(Standby()) as server:
        code, answer = call(server, "/v1/start", body)
    assert code == 400 and message in answer["error"]


def test_parse_start_request_defaults_to_no_snapshot() -> None:
    assert parse_start_request(b"") is None
    assert parse_start_request(b'{"fromSnapshot": null}') is None
    assert parse_start_request(b'{"fromSnapshot": "s-1"}') == "s-1"
