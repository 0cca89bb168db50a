"""A small synchronous Kubernetes REST client for test code: one identity (a client certificate or a bearer
token), TLS verified against the control plane's CA, the server's own ``Status`` message on every failure.

Tests read and write the cluster through this (or ``kubectl``); the operator under test uses its own client.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml


class ApiError(Exception):
    """An API answer of 4xx/5xx; ``message`` is the server's own ``Status.message``."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


def resource_path(group: str, plural: str, namespace: str | None = None, name: str | None = None,
                  version: str | None = None) -> str:
    """``/api/v1/namespaces/ns/pods/x`` or ``/apis/<group>/<version>/…``; the core group is ``""``."""
    if group:
        base = f"/apis/{group}/{version or _GROUP_VERSIONS.get(group, 'v1')}"
    else:
        base = "/api/v1"
    path = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
    return f"{path}/{name}" if name else path


_GROUP_VERSIONS = {"planengine.io": "v1alpha1"}


class ApiClient:
    def __init__(self, url: str, ca: Path, *, cert: Path | None = None, key: Path | None = None,
                 token: str | None = None, user: str = "admin") -> None:
        self.url = url.rstrip("/")
        self.ca = ca
        self.cert, self.key, self.token, self.user = cert, key, token, user
        self._context = ssl.create_default_context(cafile=str(ca))
        if cert is not None and key is not None:
            self._context.load_cert_chain(str(cert), str(key))

    # ------------------------------------------------------------------------------------------ raw
    def request(self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
                query: dict[str, str] | None = None, timeout: float = 30) -> Any:
        url = self.url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self._context) as rsp:
                raw = rsp.read()
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                status = json.loads(raw)
            except ValueError:
                status = {"reason": error.reason, "message": raw.decode(errors="replace")}
            raise ApiError(error.code, str(status.get("reason", "")), str(status.get("message", ""))) from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode(errors="replace")

    # ------------------------------------------------------------------------------------------ objects
    def get(self, group: str, plural: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", resource_path(group, plural, namespace, name))
        except ApiError as error:
            if error.code == 404:
                return None
            raise

    def list(self, group: str, plural: str, namespace: str | None = None, *,
             labels: str | None = None) -> list[dict[str, Any]]:
        query = {"labelSelector": labels} if labels else None
        found = self.request("GET", resource_path(group, plural, namespace), query=query)
        return list(found.get("items") or [])

    def create(self, group: str, plural: str, namespace: str | None, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", resource_path(group, plural, namespace), body)

    def patch(self, group: str, plural: str, namespace: str | None, name: str, body: dict[str, Any], *,
              subresource: str = "") -> dict[str, Any]:
        path = resource_path(group, plural, namespace, name) + (f"/{subresource}" if subresource else "")
        return self.request("PATCH", path, body, content_type="application/merge-patch+json")

    def delete(self, group: str, plural: str, namespace: str | None, name: str, *,
               grace: int | None = None) -> None:
        query = {"gracePeriodSeconds": str(grace)} if grace is not None else None
        try:
            self.request("DELETE", resource_path(group, plural, namespace, name), query=query)
        except ApiError as error:
            if error.code != 404:
                raise

    def log(self, namespace: str, pod: str, container: str | None = None) -> str:
        query = {"container": container} if container else None
        return str(self.request("GET", resource_path("", "pods", namespace, pod) + "/log", query=query) or "")

    # ------------------------------------------------------------------------------------------ kubeconfig
    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """A kubeconfig for this identity (kubectl, helm, kopf)."""
        user: dict[str, Any] = {"token": self.token} if self.token else {
            "client-certificate": str(self.cert), "client-key": str(self.key)}
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": self.url, "certificate-authority": str(self.ca)}}],
            "users": [{"name": self.user, "user": user}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": self.user,
                                                       "namespace": namespace}}],
        }
        target = Path(path)
        target.write_text(yaml.safe_dump(config))
        target.chmod(0o600)
        return target
