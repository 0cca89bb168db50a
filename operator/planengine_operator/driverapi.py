"""Client of the driver's HTTP status API (DESIGN §6): the only way the operator sees inside a driver.

Besides stop and status (docs/DESIGN.md §6, "Driver status API"): ``POST /v1/start`` on a warm standby,
``phase`` / ``capabilities`` and per-query ``caughtUp`` in ``/v1/status``, and the job's control token on every
POST (docs/operator.md, "Driver API")."""

from __future__ import annotations

import json
from typing import Any

import aiohttp


class DriverApiError(Exception):
    pass


async def get_status(base_url: str, timeout: float = 3.0) -> dict[str, Any] | None:
    """``GET /v1/status``; None when the driver does not answer (starting, gone, or busy)."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.get(f"{base_url}/v1/status") as response,
        ):
            if response.status != 200:
                return None
            return json.loads(await response.text())
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
        return None


async def stop(base_url: str, *, snapshot: bool, drain: bool = False, timeout: float = 120.0,
               token: str | None = None) -> dict[str, Any]:
    """``POST /v1/stop``: stop at a batch boundary, answer the snapshot id (as ``"snapshot"``), exit 0."""
    answer = await _post(base_url, "/v1/stop", {"snapshot": snapshot, "drain": drain}, timeout, token)
    # The engine answers {"stopped": true, "snapshotId": id} (planengine/runtime/engine/status_server.py); callers read
    # "snapshot". An answer without an id is a stop without a snapshot (or none was possible).
    if isinstance(answer, dict) and answer.get("snapshot") is None:
        answer["snapshot"] = answer.get("snapshotId")
    return answer if isinstance(answer, dict) else {}


async def start(base_url: str, *, from_snapshot: str | None, timeout: float = 120.0,
                token: str | None = None) -> dict[str, Any]:
    """``POST /v1/start`` on a standby driver: fork ``from_snapshot`` into its run and start the queries.

    Answers ``{"started": true, "runId": ...}``; asking again with the same snapshot answers the same run,
    so an operator that restarted mid-step may repeat it."""
    answer = await _post(base_url, "/v1/start", {"fromSnapshot": from_snapshot}, timeout, token)
    if not isinstance(answer, dict) or not answer.get("started"):
        raise DriverApiError(f"POST /v1/start did not start the driver: {answer!r}")
    return answer


def supports_standby(status: dict[str, Any]) -> bool:
    """An engine that offers ``run --standby`` says so in ``/v1/status``'s ``capabilities``."""
    return "standby" in (status.get("capabilities") or [])


def summarize(status: dict[str, Any]) -> tuple[int, str | None, str | None]:
    """(committed batches over all queries, first query exception, run id) from a /v1/status body."""
    batches = 0
    exception = None
    for query in status.get("queries") or []:
        last = query.get("lastBatchId")
        if isinstance(last, int) and last >= 0:
            batches += last + 1
        if query.get("exception") and exception is None:
            exception = f"{query.get('uid')}: {query['exception']}"
    return batches, exception, status.get("runId")


def idleness(status: dict[str, Any]) -> tuple[bool | None, str | None]:
    """(every query caught up with its sources, else the first that is not and why) from a /v1/status body.

    ``(None, None)`` when the engine does not report ``caughtUp`` (older engines): the gate then judges by
    committed batches alone, as before."""
    queries = [q for q in status.get("queries") or [] if isinstance(q, dict)]
    if not queries or any("caughtUp" not in q for q in queries):
        return None, None
    for query in queries:
        if str(query.get("state", "")).upper() != "ACTIVE":
            return False, f"query {query.get('uid')} is {query.get('state')}"
        if query.get("caughtUp") is not True:
            why = ("has input available" if query.get("dataAvailable") else "has not caught up with its sources"
                   if query.get("dataAvailable") is False else "has reported no progress yet")
            return False, f"query {query.get('uid')} {why}"
    return True, None


async def _post(base_url: str, path: str, payload: dict[str, Any], timeout: float, token: str | None) -> Any:
    """POST JSON to the driver with the job's control token; any transport, status or decoding failure is a
    :class:`DriverApiError` (whose message never holds the token)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.post(f"{base_url}{path}", json=payload, headers=headers) as rsp,
        ):
            body = await rsp.text()
            if rsp.status != 200:
                raise DriverApiError(f"POST {path} answered {rsp.status}: {body[:500]}")
            return json.loads(body) if body.strip() else {}
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
        raise DriverApiError(f"POST {path} failed: {exc}") from exc
