"""A cluster of the user's own, reached through a kubeconfig, in place of the control plane the suite starts.

``PLANENGINE_TEST_KUBECONFIG=<path>`` makes the ``control_plane`` fixture (``tests/fixtures/cluster.py``) yield an
:class:`ExternalCluster` instead of starting etcd, the API server, the controller manager and the scheduler. The
scenarios that only need an API server then run against the user's: the CRD as ``kubectl apply`` installs it,
the chart's RBAC held by that cluster's authorizer, its admission, watch, garbage collector and namespace
controller, and every contract scenario on the local launcher (the drivers are processes of this machine; only the
operator's API calls go to the cluster). What needs the cluster's certificate authority (a test kubelet joining
as a node, certificate identities for tenants) or its processes (killing etcd) cannot be done to someone else's
cluster: such a test is skipped with :data:`NEEDS_OWN_PLANE` as its reason, never faked. docs/operator.md,
"Running the suite against your own cluster".

The kubeconfig's current context is used. It must carry its credentials inline or as files (a client certificate
and key, or a bearer token): an ``exec`` plug-in (EKS, GKE) is refused with the command that makes a token.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.client import ApiClient

KUBECONFIG_ENV = "PLANENGINE_TEST_KUBECONFIG"
NEEDS_OWN_PLANE = (f"needs the suite's own control plane ({KUBECONFIG_ENV} names a cluster of yours, whose "
                   "certificate authority and processes the suite does not hold)")


class ExternalClusterError(Exception):
    """The kubeconfig cannot be used as it is: the message says what to change."""


def external_kubeconfig() -> Path | None:
    """The kubeconfig ``PLANENGINE_TEST_KUBECONFIG`` names, or None when the suite starts its own control plane."""
    value = os.environ.get(KUBECONFIG_ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    if not path.is_file():
        raise ExternalClusterError(f"{KUBECONFIG_ENV}={value}: no such file")
    return path


def _named(entries: list[dict[str, Any]] | None, name: str, what: str, source: Path) -> dict[str, Any]:
    for entry in entries or []:
        if entry.get("name") == name:
            return dict(entry.get(what) or {})
    raise ExternalClusterError(f"{source}: the current context names {what} {name!r}, which the file does not define")


class ExternalCluster:
    """The parts of :class:`tests.cluster.controlplane.ControlPlane` a scenario uses, for a cluster the suite did not
    start: ``admin`` (a client with the kubeconfig's identity), ``kubeconfigs["admin"]`` (for kubectl and helm),
    ``url`` and ``token_client``. Nothing here stops or changes the cluster beyond what the tests create."""

    external = True

    def __init__(self, kubeconfig: Path, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        config = yaml.safe_load(kubeconfig.read_text()) or {}
        context_name = config.get("current-context")
        if not context_name:
            raise ExternalClusterError(f"{kubeconfig}: no current-context; choose one with `kubectl config "
                                       "use-context NAME`")
        context = _named(config.get("contexts"), context_name, "context", kubeconfig)
        cluster = _named(config.get("clusters"), str(context.get("cluster")), "cluster", kubeconfig)
        user = _named(config.get("users"), str(context.get("user")), "user", kubeconfig)
        self.url = str(cluster.get("server") or "")
        if not self.url.startswith("https://"):
            raise ExternalClusterError(f"{kubeconfig}: cluster {context.get('cluster')!r} has server "
                                       f"{self.url!r}; the suite needs an https:// API server")
        ca = self._file(cluster, "certificate-authority", kubeconfig, "ca.crt")
        if ca is None:
            raise ExternalClusterError(f"{kubeconfig}: cluster {context.get('cluster')!r} has no "
                                       "certificate-authority(-data); the suite does not skip TLS verification")
        if "exec" in user or "auth-provider" in user:
            raise ExternalClusterError(
                f"{kubeconfig}: user {context.get('user')!r} authenticates through a plug-in, which this client "
                "does not run. Make a token-based kubeconfig for a cluster-admin ServiceAccount, e.g. "
                "`kubectl create token <account> -n <namespace> --duration=4h`, and put it under `token:`")
        cert = self._file(user, "client-certificate", kubeconfig, "client.crt")
        key = self._file(user, "client-key", kubeconfig, "client.key")
        token = user.get("token")
        if token is None and user.get("tokenFile"):
            token = Path(str(user["tokenFile"])).expanduser().read_text().strip()
        if token is None and (cert is None or key is None):
            raise ExternalClusterError(f"{kubeconfig}: user {context.get('user')!r} has neither a client "
                                       "certificate and key nor a token")
        self.admin = ApiClient(self.url, ca, cert=cert, key=key, token=token, user=str(context.get("user")))
        # kubectl and helm read the user's own file (its current context): exactly what `kubectl` would do.
        self.kubeconfigs = {"admin": kubeconfig}
        self.ca = None  # the cluster's authority signs nothing for the suite

    def _file(self, section: dict[str, Any], field: str, source: Path, name: str) -> Path | None:
        """``field`` as a path: the file it names (relative to the kubeconfig), or ``field-data`` written out."""
        if section.get(f"{field}-data"):
            target = self.directory / name
            target.write_bytes(base64.b64decode(section[f"{field}-data"]))
            target.chmod(0o600)
            return target
        if section.get(field):
            path = Path(str(section[field])).expanduser()
            return path if path.is_absolute() else (source.parent / path)
        return None

    def token_client(self, token: str, user: str) -> ApiClient:
        return ApiClient(self.url, self.admin.ca, token=token, user=user)

    def user(self, name: str, common_name: str, groups: tuple[str, ...] = ()) -> ApiClient:
        """A certificate identity needs the cluster's CA key, which the suite does not hold here."""
        pytest.skip(NEEDS_OWN_PLANE)

    def restart(self, component: str, *, kill: bool = True) -> None:
        """The suite does not kill the processes of a cluster that is not its own."""
        pytest.skip(NEEDS_OWN_PLANE)

    def wait_ready(self) -> None:
        """The cluster serves when the fixture hands it out: ``/readyz`` answers, with the kubeconfig's identity."""
        self.admin.request("GET", "/readyz")

    def stop(self) -> None:
        """Nothing to stop: the cluster is the user's."""
