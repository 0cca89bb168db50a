"""The control plane the operator's tests run on is the real one: its version, authorizer, admission, garbage
collector and namespace controller behave as a cluster's do. Each test here fails on the API emulator."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.client import ApiError
from tests.cluster.controlplane import K8S_VERSION, ControlPlane
from tests.cluster.waits import wait_for
from tests.fixtures.cluster import own_control_plane

REPO = Path(__file__).resolve().parents[2]
KUBECTL = REPO / ".tools" / "bin" / "kubectl"

pytestmark = [pytest.mark.timeout(300)]




def configmap(name: str, namespace: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"]}]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def test_kubectl_reports_the_pinned_server_version(control_plane: ControlPlane, tmp_path: Path) -> None:
    own_control_plane(control_plane)  # a user's cluster runs its own version
    run = subprocess.run([str(KUBECTL), "--kubeconfig", str(control_plane.kubeconfigs["admin"]), "--cache-dir",
                          str(tmp_path), "version", "-o", "json"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["serverVersion"]["gitVersion"] == K8S_VERSION


def test_rbac_denies_until_a_role_is_bound(control_plane: ControlPlane, cluster_namespace: str) -> None:
    tenant = control_plane.user(f"tenant-{uuid.uuid4().hex[:6]}", f"tenant-{cluster_namespace}")
    with pytest.raises(ApiError) as denied:
        tenant.list("", "configmaps", cluster_namespace)
    assert denied.value.code == 403
    assert "cannot list resource \"configmaps\"" in denied.value.message
    control_plane.admin.create("rbac.authorization.k8s.io", "rolebindings", cluster_namespace, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": f"tenant-{cluster_namespace}"}]})
    # RBAC decisions follow the binding without a restart (the authorizer watches roles)
    wait_for(lambda: _can_list(tenant, cluster_namespace), 30, "the binding to take effect")


def _can_list(client: Any, namespace: str) -> bool:
    try:
        client.list("", "configmaps", namespace)
        return True
    except ApiError:
        return False


def test_the_garbage_collector_deletes_dependents(control_plane: ControlPlane, cluster_namespace: str) -> None:
    admin = control_plane.admin
    owner = admin.create("", "configmaps", cluster_namespace, configmap("owner", cluster_namespace))
    admin.create("", "configmaps", cluster_namespace, configmap("dependent", cluster_namespace, owner))
    admin.delete("", "configmaps", cluster_namespace, "owner")
    wait_for(lambda: admin.get("", "configmaps", cluster_namespace, "dependent") is None, 60,
         "the garbage collector to delete the dependent")


def test_a_deleted_namespace_is_emptied_and_removed(control_plane: ControlPlane) -> None:
    admin = control_plane.admin
    name = f"gone-{uuid.uuid4().hex[:6]}"
    admin.create("", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    admin.create("", "configmaps", name, configmap("left", name))
    # A claim carries the API server's kubernetes.io/pvc-protection finalizer: only the claim-protection
    # controller takes it off, and until then the namespace stays Terminating (every job namespace has a claim).
    claim = admin.create("", "persistentvolumeclaims", name, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "root"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    assert "kubernetes.io/pvc-protection" in claim["metadata"]["finalizers"]
    admin.delete("", "namespaces", None, name)
    wait_for(lambda: admin.get("", "namespaces", None, name) is None, 90, "the namespace controller to remove it")


def test_the_crd_schema_is_enforced_with_the_servers_message(control_plane: ControlPlane, cluster_namespace: str,
                                                             sparkplanjob_crd: dict[str, Any]) -> None:
    bad = {"apiVersion": "planengine.io/v1alpha1", "kind": "SparkPlanJob", "metadata": {"name": "bad"},
           "spec": {"engineVersion": "not a version", "plan": {"sql": "SELECT 1"}}}
    wait_for(lambda: _served(control_plane, cluster_namespace), 30, "the SparkPlanJob resource to be served")
    with pytest.raises(ApiError) as refused:
        control_plane.admin.create("planengine.io", "sparkplanjobs", cluster_namespace, bad)
    assert refused.value.code == 422
    assert "spec.engineVersion" in refused.value.message


def _served(plane: ControlPlane, namespace: str) -> bool:
    try:
        plane.admin.list("planengine.io", "sparkplanjobs", namespace)
        return True
    except ApiError:
        return False
