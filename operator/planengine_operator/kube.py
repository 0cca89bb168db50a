"""Every Kubernetes API call the operator makes, in one place.

Handlers and the reconciler never build URLs or talk HTTP themselves; they call these functions, which
turn API answers into typed outcomes (``None`` for absent, :class:`Conflict` for a lost race, a
``kopf.TemporaryError`` for anything that is worth retrying). The connection comes from kopf's login, so
the operator authenticates exactly as kopf does (service account in the cluster, kubeconfig outside).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json as json_module
import os
import ssl
import tempfile
from datetime import UTC, datetime
from typing import Any

import aiohttp
import kopf

_conn: Any = None
_session: aiohttp.ClientSession | None = None
_session_loop: asyncio.AbstractEventLoop | None = None


class Conflict(Exception):
    """The object changed or exists already (HTTP 409)."""


class Refused(kopf.PermanentError):
    """The API server refused a request (403 by its authorizer or admission, 400/422 as invalid): ``message`` is
    the server's own ``Status.message``, which is what the job's status must show its user."""

    def __init__(self, method: str, path: str, code: int, message: str) -> None:
        super().__init__(f"{method} {path}: HTTP {code}: {message}")
        self.code = code
        self.message = message


def _status_message(text: str) -> str:
    try:
        found = json_module.loads(text)
    except ValueError:
        return text[:500]
    return str(found.get("message") or text)[:1000] if isinstance(found, dict) else text[:500]


def configure(connection: Any) -> None:
    """Remember kopf's ConnectionInfo; the session is made lazily in the running loop."""
    global _conn
    _conn = connection


async def close() -> None:
    global _session
    if _session is not None:
        if _session_loop is asyncio.get_running_loop():
            await _session.close()
        _session = None


def _ssl_context() -> ssl.SSLContext | bool:
    if _conn is None or not str(_conn.server).startswith("https"):
        return False
    if getattr(_conn, "insecure", False):
        return False
    context = ssl.create_default_context(cafile=_conn.ca_path) if _conn.ca_path else ssl.create_default_context()
    if _conn.ca_data:
        context.load_verify_locations(cadata=base64.b64decode(_conn.ca_data).decode())
    if _conn.certificate_path and _conn.private_key_path:
        context.load_cert_chain(_conn.certificate_path, _conn.private_key_path)
    elif _conn.certificate_data and _conn.private_key_data:
        _load_cert_chain_from_data(context, base64.b64decode(_conn.certificate_data),
                                   base64.b64decode(_conn.private_key_data))
    return context


def _load_cert_chain_from_data(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """Load a client certificate given as bytes (a kubeconfig's ``client-key-data``).

    ``ssl`` only loads a chain from files, so the bytes go to a private temporary directory (mode 0700, files
    0600) that is removed as soon as OpenSSL has read them: the private key must not outlive this call on disk.
    """
    with tempfile.TemporaryDirectory(prefix="planengine-operator-") as directory:
        cert_path, key_path = os.path.join(directory, "client.crt"), os.path.join(directory, "client.key")
        for path, data in ((cert_path, cert), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(data)
        context.load_cert_chain(cert_path, key_path)


def _session_get() -> aiohttp.ClientSession:
    """The session of the running loop: an operator restarted in the same process (a new loop, after the
    old one died without its cleanup handler) must not reuse a session bound to the dead loop."""
    global _session, _session_loop
    if _conn is None:
        raise kopf.TemporaryError("not logged in to the Kubernetes API yet", delay=1)
    loop = asyncio.get_running_loop()
    if _session is None or _session.closed or _session_loop is not loop:
        _session_loop = loop
        headers = {}
        if getattr(_conn, "token", None):
            headers["Authorization"] = f"{_conn.scheme or 'Bearer'} {_conn.token}"
        auth = aiohttp.BasicAuth(_conn.username, _conn.password or "") if _conn.username else None
        _session = aiohttp.ClientSession(
            base_url=None, headers=headers, auth=auth,
            connector=aiohttp.TCPConnector(ssl=_ssl_context(), limit=50),
            timeout=aiohttp.ClientTimeout(total=30),
        )
    return _session


async def _request(method: str, path: str, *, json: Any = None, content_type: str | None = None,
                   params: dict[str, str] | None = None, text: bool = False) -> Any:
    session = _session_get()
    headers = {"Content-Type": content_type} if content_type else {}
    url = str(_conn.server).rstrip("/") + path
    try:
        async with session.request(method, url, json=json, headers=headers, params=params) as rsp:
            if rsp.status == 404:
                return None
            if rsp.status == 409:
                raise Conflict(await rsp.text())
            if rsp.status >= 500 or rsp.status == 429:
                raise kopf.TemporaryError(f"{method} {path}: HTTP {rsp.status}", delay=2)
            if rsp.status >= 400:
                raise Refused(method, path, rsp.status, _status_message(await rsp.text()))
            if text:
                return await rsp.text()
            return await rsp.json(content_type=None)
    except aiohttp.ClientError as exc:
        raise kopf.TemporaryError(f"{method} {path}: {exc}", delay=2) from exc


def _core(namespace: str, plural: str, name: str | None = None) -> str:
    return f"/api/v1/namespaces/{namespace}/{plural}" + (f"/{name}" if name else "")


def _jobs(namespace: str, name: str) -> str:
    return f"/apis/planengine.io/v1alpha1/namespaces/{namespace}/sparkplanjobs/{name}"


# ------------------------------------------------------------------------------------- SparkPlanJob
async def patch_job_status(namespace: str, name: str, patch: dict[str, Any]) -> dict[str, Any] | None:
    """Merge-patch the status subresource (the write-ahead log)."""
    return await _request("PATCH", _jobs(namespace, name) + "/status", json={"status": patch},
                          content_type="application/merge-patch+json")


# ------------------------------------------------------------------------------------- ConfigMaps
async def get_configmap(namespace: str, name: str) -> dict[str, Any] | None:
    return await _request("GET", _core(namespace, "configmaps", name))


async def apply(namespace: str, plural: str, manifest: dict[str, Any], *, api: str = "/api/v1") -> dict[str, Any]:
    """Create, or merge-patch when it exists (idempotent, so a repeated step is harmless)."""
    base = f"{api}/namespaces/{namespace}/{plural}"
    name = manifest["metadata"]["name"]
    try:
        created = await _request("POST", base, json=manifest)
        if created is not None:
            return created
    except Conflict:
        pass
    patched = await _request("PATCH", f"{base}/{name}", json=manifest,
                             content_type="application/merge-patch+json")
    if patched is None:
        raise kopf.TemporaryError(f"{plural}/{name} vanished while applying", delay=1)
    return patched


async def create(namespace: str, plural: str, manifest: dict[str, Any], *, api: str = "/api/v1") -> None:
    """Create unless it exists (an existing object is kept as it is: e.g. a Secret whose token drivers hold)."""
    with contextlib.suppress(Conflict):
        await _request("POST", f"{api}/namespaces/{namespace}/{plural}", json=manifest)


async def delete(namespace: str, plural: str, name: str, *, api: str = "/api/v1",
                 grace_period: int | None = None) -> None:
    """Delete (absent is fine); ``grace_period`` seconds for a pod's SIGTERM before SIGKILL (its default
    otherwise). The pod object stays, Terminating, until its kubelet confirmed the containers dead."""
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": grace_period} \
        if grace_period is not None else None
    await _request("DELETE", f"{api}/namespaces/{namespace}/{plural}/{name}", json=body)


async def patch(namespace: str, plural: str, name: str, patch: dict[str, Any], *,
                api: str = "/api/v1") -> dict[str, Any] | None:
    """Merge-patch an existing object; None when it does not exist."""
    return await _request("PATCH", f"{api}/namespaces/{namespace}/{plural}/{name}", json=patch,
                          content_type="application/merge-patch+json")


async def list_objects(namespace: str, plural: str, label_selector: str, *,
                       api: str = "/api/v1") -> list[dict[str, Any]]:
    answer = await _request("GET", f"{api}/namespaces/{namespace}/{plural}",
                            params={"labelSelector": label_selector})
    return list((answer or {}).get("items") or [])


async def get(namespace: str, plural: str, name: str, *, api: str = "/api/v1") -> dict[str, Any] | None:
    return await _request("GET", f"{api}/namespaces/{namespace}/{plural}/{name}")


async def pod_logs(namespace: str, name: str) -> str:
    return await _request("GET", _core(namespace, "pods", name) + "/log", text=True) or ""


# ------------------------------------------------------------------------------------- fencing Lease
LEASES = "/apis/coordination.k8s.io/v1"


async def acquire_lease(namespace: str, lease: dict[str, Any]) -> tuple[bool, str | None]:
    """Take the job root's Lease for ``holderIdentity``; (False, other holder) if someone else has it.

    The holder is the job's ``namespace/name/uid``; a lease whose holder job is deleted is released by its
    owner reference (garbage collection).
    """
    name = lease["metadata"]["name"]
    holder = lease["spec"]["holderIdentity"]
    base = f"{LEASES}/namespaces/{namespace}/leases"
    try:
        await _request("POST", base, json=lease)
        return True, None
    except Conflict:
        pass
    current = await _request("GET", f"{base}/{name}")
    if current is None:
        raise kopf.TemporaryError("lease vanished while acquiring; retrying", delay=1)
    other = (current.get("spec") or {}).get("holderIdentity")
    if other in (None, "", holder):
        body = {"metadata": {"resourceVersion": current["metadata"].get("resourceVersion")},
                "spec": {**lease["spec"], "renewTime": now_micro()}}
        await _request("PATCH", f"{base}/{name}", json=body, content_type="application/merge-patch+json")
        return True, None
    return False, other


def now_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
