"""The driver API against hostile clients: malformed requests, wrong tokens, lying lengths, slow clients.

In process, no Spark: a ``StatusServer`` over a fake driver that records every stop and start. Invariants: a
stop or start happens only for a request with the right token; every request is answered or its connection
closed within a bound; the server keeps answering ``/healthz`` throughout and afterwards.
"""

from __future__ import annotations

import contextlib
import http.client
import random
import socket
import threading
import time
from typing import Any

import pytest

from planengine.runtime.engine import status_server as S
from planengine.runtime.engine.status_server import StatusServer
from tests.fuzz.plan_mutants import http_request

SEED = 20261128
REQUESTS = 400
TOKEN = "t0k3n-of-the-job-0123456789abcdef"
ANSWER_BOUND = 5.0


class RecordingDriver:
    """A driver that only records: stops and starts are cheap, so the server may be asked again."""

    def __init__(self) -> None:
        self.stops: list[tuple[bool, bool]] = []
        self.starts: list[str | None] = []

    def status(self) -> dict[str, Any]:
        return {"engineVersion": "0.1", "sparkVersion": "4.3.0", "planId": "p", "runId": "r", "state": "RUNNING",
                "queries": [{"uid": "q", "state": "ACTIVE", "lastBatchId": 3, "caughtUp": True}]}

    def request_stop(self, snapshot: bool, drain: bool) -> str | None:
        self.stops.append((snapshot, drain))
        return "s-1" if snapshot else None

    def request_start(self, from_snapshot: str | None) -> dict[str, Any]:
        self.starts.append(from_snapshot)
        return {"started": True, "runId": "r-2"}


@pytest.fixture
def quick_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S._Handler, "timeout", 0.5)
    monkeypatch.setattr(S, "QUEUE_WAIT", 0.2)


def exchange(port: int, raw: bytes, bound: float = ANSWER_BOUND) -> bytes:
    """Send ``raw``, half-close, read until the server closes or ``bound`` passes (then fail)."""
    with socket.create_connection(("127.0.0.1", port), timeout=bound) as sock:
        try:
            sock.sendall(raw)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return b""  # the server already closed on us: an answer too
        began = time.monotonic()
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            assert time.monotonic() - began < bound, "the server kept the connection open"
        return b"".join(chunks)


def healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("GET", "/healthz")
    ok = conn.getresponse().status == 200
    conn.close()
    return ok


def test_hostile_requests_never_stop_or_start_without_the_token(quick_timeouts: None) -> None:
    rng = random.Random(SEED)
    driver = RecordingDriver()
    with StatusServer(driver, token=TOKEN) as server:  # type: ignore[arg-type]
        for index in range(REQUESTS):
            raw, what, authorized = http_request(rng, TOKEN)
            before = (len(driver.stops), len(driver.starts))
            began = time.monotonic()
            answer = exchange(server.port, raw)
            took = time.monotonic() - began
            where = f"request {index} (seed {SEED}): {what}"
            assert took < ANSWER_BOUND, where
            assert answer == b"" or answer.startswith(b"HTTP/"), f"{where}: {answer[:200]!r}"
            if (len(driver.stops), len(driver.starts)) != before:
                assert authorized, f"{where}: stopped or started without the token"
                server._stop_started = False  # let the next authorized stop reach the driver again
                server._stop_done.clear()
        assert healthy(server.port)


def stop_request(headers: dict[str, str], body: bytes = b"") -> bytes:
    head = "POST /v1/stop HTTP/1.1\r\nHost: d\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return head.encode() + b"\r\n" + body


@pytest.mark.parametrize("headers,status", [
    ({"Content-Length": "0"}, b"401"),
    ({"Content-Length": "0", "Authorization": "Bearer wrong"}, b"401"),
    ({"Content-Length": "0", "Authorization": f"Basic {TOKEN}"}, b"401"),
    ({"Content-Length": "-5", "Authorization": f"Bearer {TOKEN}"}, b"400"),
    ({"Content-Length": "five", "Authorization": f"Bearer {TOKEN}"}, b"400"),
    ({"Content-Length": str(10**12), "Authorization": f"Bearer {TOKEN}"}, b"413"),
    ({"Transfer-Encoding": "chunked", "Authorization": f"Bearer {TOKEN}"}, b"400"),
])
def test_bad_stop_requests_are_refused_without_side_effects(headers: dict[str, str], status: bytes) -> None:
    driver = RecordingDriver()
    with StatusServer(driver, token=TOKEN) as server:  # type: ignore[arg-type]
        answer = exchange(server.port, stop_request(headers))
        assert answer.split(b" ")[1] == status, answer[:300]
        assert driver.stops == []
        answer = exchange(server.port, stop_request({"Content-Length": "0", "Authorization": f"Bearer {TOKEN}"}))
        assert answer.split(b" ")[1] == b"200" and driver.stops == [(True, False)]


def test_read_only_endpoints_need_no_token() -> None:
    with StatusServer(RecordingDriver(), token=TOKEN) as server:  # type: ignore[arg-type]
        for path in ("/healthz", "/v1/status", "/metrics"):
            answer = exchange(server.port, f"GET {path} HTTP/1.1\r\nHost: d\r\n\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 200"), (path, answer[:200])


def test_a_published_driver_without_a_token_refuses_stop_and_start() -> None:
    driver = RecordingDriver()
    with StatusServer(driver, host="0.0.0.0") as server:  # type: ignore[arg-type]
        answer = exchange(server.port, stop_request({"Content-Length": "0"}))
        assert answer.startswith(b"HTTP/1.1 403") and b"--control-token-file" in answer
        start = b"POST /v1/start HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n"
        assert exchange(server.port, start).startswith(b"HTTP/1.1 403")
        assert driver.stops == [] and driver.starts == []


def test_a_client_stalling_mid_body_loses_its_connection_not_a_thread(quick_timeouts: None) -> None:
    driver = RecordingDriver()
    with StatusServer(driver, token=TOKEN) as server:  # type: ignore[arg-type]
        stalled = []
        for _ in range(S.MAX_HANDLERS):  # every handler busy with a client that never sends its body
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            sock.sendall(stop_request({"Content-Length": "40", "Authorization": f"Bearer {TOKEN}"}, b"{"))
            stalled.append(sock)
        began = time.monotonic()
        for sock in stalled:  # each is dropped after the socket timeout (0.5 s here), unanswered, nothing done
            sock.settimeout(5)
            with contextlib.suppress(ConnectionResetError):
                assert sock.recv(100) == b""
            sock.close()
        assert time.monotonic() - began < 4
        assert driver.stops == []
        assert healthy(server.port)


def test_connections_beyond_the_handler_pool_are_refused_briefly(quick_timeouts: None,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S, "MAX_HANDLERS", 2)
    with StatusServer(RecordingDriver(), token=TOKEN) as server:  # type: ignore[arg-type]
        idle = [socket.create_connection(("127.0.0.1", server.port), timeout=5) for _ in range(2)]
        for sock in idle:
            sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # a request line, then nothing: holds a handler
        time.sleep(0.05)
        answer = exchange(server.port, b"GET /healthz HTTP/1.1\r\nHost: d\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 503"), answer[:200]
        for sock in idle:
            sock.close()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the stalled handlers time out and free their slots
            if exchange(server.port, b"GET /healthz HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n"
                        ).startswith(b"HTTP/1.1 200"):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the pool did not recover after the stalled clients timed out")


def test_concurrent_hostile_clients_leave_the_server_healthy(quick_timeouts: None) -> None:
    rng = random.Random(SEED + 1)
    requests = [http_request(rng, "not-the-token-at-all") for _ in range(60)]
    driver = RecordingDriver()
    errors: list[str] = []
    with StatusServer(driver, token=TOKEN) as server:  # type: ignore[arg-type]
        def client(batch: list[tuple[bytes, str, bool]]) -> None:
            for raw, what, _ in batch:
                try:
                    exchange(server.port, raw)
                except (OSError, AssertionError) as error:
                    if not isinstance(error, ConnectionRefusedError | ConnectionResetError):
                        errors.append(f"{what}: {error}")

        threads = [threading.Thread(target=client, args=(requests[i::6],)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert errors == [] and driver.stops == [] and driver.starts == []
        assert healthy(server.port)
