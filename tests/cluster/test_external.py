"""``PLANENGINE_TEST_KUBECONFIG``: the suite against a cluster it did not start (``tests/cluster/external.py``).

Proven here with the session's own control plane standing in for "a user's cluster": a nested pytest gets only its
admin kubeconfig, starts no control plane of its own, runs the API scenarios and a contract scenario on the local
launcher against it, and skips (with the reason) what needs the plane's own CA or processes. The kubeconfig
checks say what to change, not a traceback.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cluster import pki
from tests.cluster.controlplane import ControlPlane
from tests.cluster.external import KUBECONFIG_ENV, NEEDS_OWN_PLANE, ExternalCluster, ExternalClusterError

REPO = Path(__file__).resolve().parents[2]


def _kubeconfig(path: Path, user: dict, server: str = "https://127.0.0.1:6443",
                current: str | None = "ctx") -> Path:
    ca = pki.Authority(path.parent / "pki").cert.read_bytes()
    config = {"apiVersion": "v1", "kind": "Config", "current-context": current,
              "clusters": [{"name": "c", "cluster": {"server": server,
                                                      "certificate-authority-data": base64.b64encode(ca).decode()}}],
              "users": [{"name": "u", "user": user}],
              "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}]}
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize(("user", "server", "current", "says"), [
    ({"token": "t"}, "https://127.0.0.1:6443", None, "no current-context"),
    ({"exec": {"command": "aws"}}, "https://127.0.0.1:6443", "ctx", "kubectl create token"),
    ({"token": "t"}, "http://127.0.0.1:8080", "ctx", "needs an https:// API server"),
    ({}, "https://127.0.0.1:6443", "ctx", "neither a client certificate and key nor a token"),
])
def test_a_kubeconfig_the_suite_cannot_use_says_what_to_change(tmp_path: Path, user: dict, server: str,
                                                                current: str | None, says: str) -> None:
    path = _kubeconfig(tmp_path / "config", user, server, current)
    with pytest.raises(ExternalClusterError, match=re.escape(says)):
        ExternalCluster(path, tmp_path / "work")


def test_inline_credentials_are_written_out_for_the_client(tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "config", {"token": "secret-token"})
    cluster = ExternalCluster(path, tmp_path / "work")
    assert cluster.admin.ca.read_bytes() == (tmp_path / "pki" / "ca.crt").read_bytes()
    assert cluster.admin.token == "secret-token"
    assert cluster.kubeconfigs["admin"] == path  # kubectl and helm read the user's own file


def test_the_suite_runs_against_a_cluster_given_by_kubeconfig(control_plane: ControlPlane, tmp_path: Path) -> None:
    if getattr(control_plane, "external", False):
        pytest.skip("already running against an external cluster")
    env = {**os.environ, KUBECONFIG_ENV: str(control_plane.kubeconfigs["admin"]),
           "PLANENGINE_E2E_LAUNCHER": "local", "PLANENGINE_E2E_ENGINE": "contract"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", f"--basetemp={tmp_path / 'inner'}",
         "tests/cluster/test_controlplane.py",
         "tests/operator/e2e/test_lifecycle.py::test_create_runs_and_commits",
         "tests/operator/e2e/test_control_plane_faults.py"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    counts = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|skipped|failed)", out.splitlines()[-1])}
    # GC, namespace and CRD scenarios and the local launcher's create; the version pin, the certificate tenant,
    # the control-plane kill and every Kubernetes-launcher scenario are skipped for the reason the mode gives.
    assert counts.get("passed", 0) >= 4, out[-3000:]
    assert counts.get("failed", 0) == 0
    assert NEEDS_OWN_PLANE[:40] in out, out[-3000:]
    assert "controlplane" not in {p.name for p in (tmp_path / "inner").glob("*")}, "a second control plane started"
