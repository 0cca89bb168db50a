"""The driver status API (DESIGN §6): health, status, graceful stop and Prometheus metrics over HTTP.

The operator and users' tooling only ever talk to a running driver through this API, so it must not
depend on Spark: the server sees the driver through the small ``DriverControl`` protocol, which the
Spark runtime implements and tests fake. The standard library's ``ThreadingHTTPServer`` on a daemon thread, so a
slow ``POST /v1/stop`` never blocks ``/healthz`` or ``/metrics``; the metrics themselves are ``prometheus_client``'s
(``driver_metrics``).

Endpoints::

    GET  /healthz     200 "ok"
    GET  /v1/status   DriverControl.status() as JSON (the engine's drivers add "capabilities": CAPABILITIES)
    POST /v1/stop     {"snapshot": true, "drain": false} -> {"stopped": true, "snapshotId": "s-..."|null,
                      "manifest": {...}} (the snapshot's manifest.json, when the control offers it)
    POST /v1/start    {"fromSnapshot": "<dir or id>"|null} -> {"started": true, "runId": "r-..."} (standby only)
    GET  /metrics     Prometheus text format 0.0.4 (``driver_metrics``: the control's ``metrics`` when it has them)

Access: the mutating endpoints (``POST /v1/stop``, ``POST /v1/start``) need ``Authorization: Bearer <token>``
with the driver's control token (``planengine.runtime.engine.control_token``: ``--control-token-file`` or
``PLANENGINE_CONTROL_TOKEN_FILE``), compared in constant time. A driver without a token accepts them only when it
listens on loopback; one published beyond it refuses them (403). ``/healthz``, ``/v1/status`` and ``/metrics`` are
read-only and open, so probes and Prometheus scrapers need no secret; who may reach the port at all is the
chart's NetworkPolicy's job.

Robustness: every connection has a socket timeout (a client that stalls mid-request loses its connection, not
a handler thread), at most ``MAX_HANDLERS`` requests are served at once (a further connection waits briefly for a
slot, then gets 503), and a ``Content-Length`` that is negative, not a number, repeated, or more than the bytes
sent is answered 400 (over ``MAX_BODY_BYTES``: 413) before anything happens.

``POST /v1/start`` exists for a warm standby (``planengine run --standby``, ``planengine.runtime.engine.standby``):
the driver's control then implements ``StartableControl``; a driver started the ordinary way answers 409.
The operator tells a standby-capable engine from an older one by ``"standby"`` in ``capabilities``.

Stop is idempotent: concurrent or repeated ``POST /v1/stop`` calls share one ``request_stop`` call and
all get its answer. The driver should call ``wait_stop_answered()`` before exiting, so the client that
asked for the stop receives the snapshot id instead of a reset connection.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from planengine.errors import UserError

if TYPE_CHECKING:
    from planengine.runtime.engine.driver_metrics import DriverMetrics

log = logging.getLogger("planengine.runtime.status_server")  # fixed: log lines show it (cli.py)

MAX_BODY_BYTES = 64 * 1024
# Seconds a connection may take to send a request line, headers or body, or to read the answer.
SOCKET_TIMEOUT = 10.0
# Requests served at once; the operator needs two or three (status, stop), a scraper one.
MAX_HANDLERS = 8
# How long a connection beyond MAX_HANDLERS waits for a free handler before it is answered 503.
QUEUE_WAIT = 1.0
_MUTATING = ("/v1/stop", "/v1/start")
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # prometheus_client's CONTENT_TYPE_PLAIN_0_0_4
_ROUTES = {"/healthz": ("GET",), "/v1/status": ("GET",), "/v1/stop": ("POST",), "/v1/start": ("POST",),
           "/metrics": ("GET",)}
_STOP_FIELDS = {"snapshot": True, "drain": False}
# What this engine's drivers offer beyond stop and status (DESIGN §6, "Driver status API"), listed in their
# status document's "capabilities"; older engines send no "capabilities" at all.
CAPABILITIES = ("standby",)


@runtime_checkable
class DriverControl(Protocol):
    """What the status server needs from a driver.

    ``status()`` returns the DESIGN §6 status document::

        {"engineVersion", "sparkVersion", "planId", "job", "runId", "state",
         "queries": [{"uid", "state", "lastBatchId", "lastCommitAt", "inputRowsPerSecond",
                      "processedRowsPerSecond", "watermark", "exception"}],
         "executors": [{"id", "hostPort", "active", "activeTasks", "completedTasks", "failedTasks"}]}

    ``executors`` is Spark's own executor list (``driver`` alone under ``local[N]``; with executor pods, each
    pod's executor, lost ones ``active: false``); optional, as for the engines before it.

    A query may also carry ``exceptionsTotal`` (int), exported as a counter; without it the counter is
    1 while ``exception`` is set. ``status()`` is called from server threads: it must be thread-safe.

    A control may also have ``metrics`` (a ``driver_metrics.DriverMetrics``), which ``/metrics`` then serves: the
    families that count every batch need the driver's progress events, which the status document does not carry.

    ``request_stop(snapshot, drain)`` stops every query at a batch boundary (advancing event time to
    the end first when ``drain``), takes a snapshot when ``snapshot`` and returns its id (else None).
    It blocks until done; raising makes the server answer 500 with the message.
    """

    def status(self) -> dict[str, Any]: ...

    def request_stop(self, snapshot: bool, drain: bool) -> str | None: ...


@runtime_checkable
class StartableControl(Protocol):
    """A standby driver: ``request_start(from_snapshot)`` starts its queries and answers
    ``{"started": true, "runId": ...}``; it raises ``UserError`` subclasses for requests it refuses
    (answered 409 with the message)."""

    def request_start(self, from_snapshot: str | None) -> dict[str, Any]: ...


class BadRequest(Exception):
    """A client error: answered as 4xx with a JSON body naming the problem."""

    def __init__(self, status: HTTPStatus, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class StatusServer:
    """Serves the status API for one driver. ``port=0`` picks a free port; read it from ``.port``.

    Binds 127.0.0.1 by default; a driver in a pod passes ``host="0.0.0.0"`` so the operator can reach it.
    Usable as a context manager (``with StatusServer(control) as server: ...``).
    """

    def __init__(self, control: DriverControl, host: str = "127.0.0.1", port: int = 0, token: str | None = None):
        self.control = control
        self.token = token or None  # the control token mutating requests must carry (None: loopback only)
        self._httpd = _BoundedHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.status_server = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None
        self._stop_lock = threading.Lock()
        self._stop_started = False
        self._stop_done = threading.Event()
        self._stop_answered = threading.Event()
        self._stop_result: tuple[str | None, str | None] | None = None  # (snapshot id, error)
        self._metrics: DriverMetrics | None = None

    @property
    def host(self) -> str:
        return str(self._httpd.server_address[0])

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> StatusServer:
        # A short poll interval only bounds how long close() waits; requests are served immediately.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="planengine-status", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> StatusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def metrics(self) -> DriverMetrics:
        """The control's own metrics (a running ``Job`` counts every batch), else families read from its status
        document alone (a standby before its start, the tests' fake drivers)."""
        # Imported here: prometheus_client is in the ``spark`` extra, and commands that never serve (``planengine
        # snapshot``) import this module through the executor.
        from planengine.runtime.engine.driver_metrics import DriverMetrics  # noqa: PLC0415

        own = getattr(self.control, "metrics", None)
        if isinstance(own, DriverMetrics):
            return own
        with self._stop_lock:
            if self._metrics is None:
                self._metrics = DriverMetrics("", self.control.status)
            return self._metrics

    def wait_stop_answered(self, timeout: float | None = None) -> bool:
        """Block until a ``POST /v1/stop`` answer was sent (True) or ``timeout`` passed (False)."""
        return self._stop_answered.wait(timeout)

    # -- called from handler threads ---------------------------------------------------------------
    def _stop(self, snapshot: bool, drain: bool) -> tuple[str | None, str | None]:
        """Run ``request_stop`` once; later callers wait for and share its result."""
        with self._stop_lock:
            first = not self._stop_started
            self._stop_started = True
        if first:
            try:
                result: tuple[str | None, str | None] = (self.control.request_stop(snapshot, drain), None)
            except Exception as e:  # the driver's failure is reported to the client, not swallowed
                log.exception("stop request failed")
                result = (None, f"{type(e).__name__}: {e}")
            self._stop_result = result
            self._stop_done.set()
            return result
        self._stop_done.wait()
        assert self._stop_result is not None
        return self._stop_result


class _BoundedHTTPServer(ThreadingHTTPServer):
    """A thread per request, but at most ``MAX_HANDLERS`` at once: a flood of (slow) connections cannot exhaust
    the driver's threads; a connection that finds no free handler within ``QUEUE_WAIT`` is answered 503."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]):
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(MAX_HANDLERS)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(timeout=QUEUE_WAIT):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _refuse_busy(request: socket.socket) -> None:
    body = b'{"error": "the driver is serving too many requests; retry in a moment"}\n'
    try:
        request.settimeout(1.0)
        request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                        b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    except OSError:
        pass


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class _Handler(BaseHTTPRequestHandler):
    server_version = "planengine-status"
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT  # StreamRequestHandler puts it on the socket: a stalled client times out
    # An unparsable or version-less request line is answered with a status line too (never HTTP/0.9's bare body).
    default_request_version = "HTTP/1.0"

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors the standard library detects (bad request line, headers, HTTP version) as JSON, like ours."""
        self.close_connection = True
        phrase = HTTPStatus(code).phrase if code in HTTPStatus._value2member_map_ else "Error"
        body = (json.dumps({"error": message or phrase}) + "\n").encode("utf-8")
        self.send_response(code, message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and code >= 200 and code not in (HTTPStatus.NO_CONTENT, HTTPStatus.NOT_MODIFIED):
            self.wfile.write(body)

    @property
    def _status_server(self) -> StatusServer:
        return self.server.status_server  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def _dispatch(self, method: str) -> None:
        path = urlsplit(self.path).path
        try:
            allowed = _ROUTES.get(path)
            if allowed is None:
                raise BadRequest(HTTPStatus.NOT_FOUND, f"no such endpoint {path}; try one of {', '.join(_ROUTES)}")
            if method not in allowed:
                raise BadRequest(
                    HTTPStatus.METHOD_NOT_ALLOWED,
                    f"{path} does not accept {method}; use {', '.join(allowed)}",
                    {"Allow": ", ".join(allowed)},
                )
            if path in _MUTATING:
                self._authorize()
            if path == "/healthz":
                self._send(HTTPStatus.OK, b"ok\n", "text/plain; charset=utf-8")
            elif path == "/v1/status":
                self._send_json(HTTPStatus.OK, self._status_server.control.status())
            elif path == "/metrics":
                self._send(HTTPStatus.OK, self._status_server.metrics().exposition(), PROMETHEUS_CONTENT_TYPE)
            elif path == "/v1/stop":
                self._handle_stop()
            elif path == "/v1/start":
                self._handle_start()
        except BadRequest as e:
            if method != "GET":
                self.close_connection = True  # an unread body must not be taken for the next request
            self._send_json(e.status, {"error": e.message, "path": path}, e.headers)
        except TimeoutError:
            self.close_connection = True  # the client stalled mid-body: nothing was done, drop it
        except Exception as e:
            log.exception("status API %s %s failed", method, path)
            self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(e).__name__}: {e}", "path": path})

    def _handle_stop(self) -> None:
        snapshot, drain = parse_stop_request(self._read_body())
        snapshot_id, error = self._status_server._stop(snapshot, drain)
        if error is not None:
            self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"stopped": False, "error": error})
        else:
            answer: dict[str, Any] = {"stopped": True, "snapshotId": snapshot_id}
            manifest_of = getattr(self._status_server.control, "snapshot_manifest", None)
            if snapshot_id and callable(manifest_of):
                # The caller (an operator that cannot read the job root) needs what the manifest says.
                answer["manifest"] = manifest_of(snapshot_id)
            self._send_json(HTTPStatus.OK, answer)
        self._status_server._stop_answered.set()

    def _handle_start(self) -> None:
        from_snapshot = parse_start_request(self._read_body())
        control = self._status_server.control
        if not isinstance(control, StartableControl):
            raise BadRequest(HTTPStatus.CONFLICT, "this driver is not a standby (it was started with its snapshot); "
                             "start a standby with `planengine run --standby`")

        try:
            answer = control.request_start(from_snapshot)
        except UserError as e:  # not ready, another snapshot, a snapshot that does not exist
            raise BadRequest(HTTPStatus.CONFLICT, str(e)) from None
        self._send_json(HTTPStatus.OK, answer)

    def _authorize(self) -> None:
        """Mutating requests carry the driver's control token (or come to a loopback-only driver without one)."""
        token = self._status_server.token
        if token is None:
            if _is_loopback(self._status_server.host):
                return
            raise BadRequest(HTTPStatus.FORBIDDEN, "this driver has no control token, so it refuses stop and start "
                             "requests from the network; start it with --control-token-file FILE")
        scheme, _, given = (self.headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
            raise BadRequest(HTTPStatus.UNAUTHORIZED, "missing or wrong control token: send 'Authorization: Bearer "
                             "<token>' with the job's control token", {"WWW-Authenticate": 'Bearer realm="planengine"'})

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding"):
            raise BadRequest(HTTPStatus.BAD_REQUEST, "chunked bodies are not accepted; send a Content-Length")
        lengths = self.headers.get_all("Content-Length") or []
        if len(lengths) > 1:
            raise BadRequest(HTTPStatus.BAD_REQUEST, "more than one Content-Length header")
        text = lengths[0].strip() if lengths else "0"
        if not text.isdigit() or not text.isascii():
            raise BadRequest(HTTPStatus.BAD_REQUEST, f"Content-Length must be a whole number of bytes from 0 to "
                             f"{MAX_BODY_BYTES}, got {text[:40]!r}")
        length = int(text)
        if length > MAX_BODY_BYTES:  # 413, as before: the one 4xx that says exactly this
            raise BadRequest(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"Content-Length {length} is over the limit of "
                             f"{MAX_BODY_BYTES} bytes")
        body = self.rfile.read(length) if length > 0 else b""
        if len(body) < length:
            raise BadRequest(HTTPStatus.BAD_REQUEST, f"the body ended after {len(body)} of {length} bytes")
        return body

    def _send_json(self, status: HTTPStatus, body: Any, headers: dict[str, str] | None = None) -> None:
        data = (json.dumps(body, default=str) + "\n").encode("utf-8")
        self._send(status, data, "application/json", headers)

    def _send(self, status: HTTPStatus, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def parse_stop_request(body: bytes) -> tuple[bool, bool]:
    """``(snapshot, drain)`` from a stop body; empty means the defaults (snapshot, no drain)."""
    if not body.strip():
        return _STOP_FIELDS["snapshot"], _STOP_FIELDS["drain"]
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadRequest(HTTPStatus.BAD_REQUEST, f"body is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise BadRequest(HTTPStatus.BAD_REQUEST, 'body must be a JSON object like {"snapshot": true, "drain": false}')
    unknown = sorted(set(data) - set(_STOP_FIELDS))
    if unknown:
        raise BadRequest(HTTPStatus.BAD_REQUEST, f"unknown fields {unknown}; allowed: snapshot, drain")
    values = {}
    for name, default in _STOP_FIELDS.items():
        value = data.get(name, default)
        if not isinstance(value, bool):
            raise BadRequest(HTTPStatus.BAD_REQUEST, f"field {name!r} must be true or false, got {value!r}")
        values[name] = value
    return values["snapshot"], values["drain"]


def parse_start_request(body: bytes) -> str | None:
    """The snapshot (directory or id) a ``POST /v1/start`` asks for; None (empty body or null) continues
    like a cold start without ``--from-snapshot``."""
    if not body.strip():
        return None
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadRequest(HTTPStatus.BAD_REQUEST, f"body is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise BadRequest(HTTPStatus.BAD_REQUEST, 'body must be a JSON object like {"fromSnapshot": "<dir>"}')
    unknown = sorted(set(data) - {"fromSnapshot"})
    if unknown:
        raise BadRequest(HTTPStatus.BAD_REQUEST, f"unknown fields {unknown}; allowed: fromSnapshot")
    value = data.get("fromSnapshot")
    if value is not None and (not isinstance(value, str) or not value):
        raise BadRequest(HTTPStatus.BAD_REQUEST, f"fromSnapshot must be a snapshot directory or id, got {value!r}")
    return value
