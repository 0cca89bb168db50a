"""The test kubelet as a node of the real control plane: the scheduler places pods by their requests, the node
runs them with tokens from the TokenRequest API, reports status through the Node authorizer's rules, and serves
logs through the API server's proxy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.controlplane import ControlPlane
from tests.cluster.waits import wait_for
from tests.operator.kubelet import sandbox
from tests.operator.kubelet.kubelet import ImageSpec, Kubelet
from tests.operator.kubelet.node import start_node, stop_node

REPO = Path(__file__).resolve().parents[2]
IMAGE = "test.local/shell:1"

pytestmark = [pytest.mark.timeout(300)]


@pytest.fixture
def node(control_plane: ControlPlane, tmp_path: Path) -> Iterator[Kubelet]:
    why = sandbox.available()
    if why is not None:
        pytest.skip(why)
    kubelet = start_node(control_plane, tmp_path / "node", {IMAGE: ImageSpec(REPO / ".venv")},
                         capacity={"cpu": "2", "memory": "4Gi", "pods": "20", "ephemeral-storage": "10Gi"})
    yield kubelet
    stop_node(control_plane, kubelet)


def pod(name: str, script: str, *, cpu: str = "100m", account: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [{
        "name": "main", "image": IMAGE, "command": ["/bin/sh", "-c", script],
        "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}
    if account:
        spec["serviceAccountName"] = account
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}




def finished(plane: ControlPlane, namespace: str, name: str, node: Kubelet) -> dict[str, Any]:
    def done() -> Any:
        found = plane.admin.get("", "pods", namespace, name) or {}
        return found if (found.get("status") or {}).get("phase") in ("Succeeded", "Failed") else None

    return wait_for(done, 120, f"pod {name} to finish",
                lambda: ((plane.admin.get("", "pods", namespace, name) or {}).get("status"), node.errors))


def test_the_scheduler_binds_and_the_node_runs_and_serves_logs(control_plane: ControlPlane, cluster_namespace: str,
                                                               node: Kubelet) -> None:
    control_plane.admin.create("", "pods", cluster_namespace, pod("hello", "echo hello from $HOSTNAME"))
    done = finished(control_plane, cluster_namespace, "hello", node)
    assert done["spec"]["nodeName"] == node.node
    assert done["status"]["phase"] == "Succeeded", done["status"]
    assert control_plane.admin.log(cluster_namespace, "hello") == "hello from hello\n"


def test_the_node_renews_its_lease_and_stays_ready_and_untainted(control_plane: ControlPlane, node: Kubelet) -> None:
    """The node-lifecycle controller judges a node by its Lease: one that is never renewed makes the node
    NotReady and tainted unreachable after the grace period, and the scheduler then places no new pod there."""
    def renewed_at() -> str:
        lease = control_plane.admin.get("coordination.k8s.io", "leases", "kube-node-lease", node.node) or {}
        return (lease.get("spec") or {}).get("renewTime") or ""

    first = wait_for(renewed_at, 30, "the node's first Lease")
    second = wait_for(lambda: renewed_at() if renewed_at() != first else None, 30, "the Lease to be renewed",
                      lambda: node.errors)
    wait_for(lambda: renewed_at() not in (first, second), 30, "a second renewal", lambda: node.errors)
    found = control_plane.admin.get("", "nodes", None, node.node)
    ready = [c for c in found["status"]["conditions"] if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True", found["status"]["conditions"]
    assert not (found["spec"].get("taints") or []), found["spec"]["taints"]
    assert not node.errors, node.errors


def test_a_pod_that_does_not_fit_stays_pending_with_the_schedulers_reason(control_plane: ControlPlane,
                                                                          cluster_namespace: str,
                                                                          node: Kubelet) -> None:
    control_plane.admin.create("", "pods", cluster_namespace, pod("huge", "true", cpu="64"))

    def unschedulable() -> Any:
        status = (control_plane.admin.get("", "pods", cluster_namespace, "huge") or {}).get("status") or {}
        return next((c for c in status.get("conditions") or [] if c["type"] == "PodScheduled"
                     and c.get("reason") == "Unschedulable"), None)

    condition = wait_for(unschedulable, 60, "the scheduler's verdict")
    assert "Insufficient cpu" in condition["message"]
    assert not (control_plane.admin.get("", "pods", cluster_namespace, "huge") or {})["spec"].get("nodeName")


def test_a_projected_token_authenticates_the_pod_as_its_service_account(control_plane: ControlPlane,
                                                                        cluster_namespace: str,
                                                                        node: Kubelet) -> None:
    """The pod's token (TokenRequest, bound to the pod) reaches the API server as
    ``system:serviceaccount:<ns>:default``, which RBAC denies secrets: the 403 names that identity."""
    script = ('/opt/planengine/bin/python -c "import ssl,urllib.request,os;'
              'd=\'/var/run/secrets/kubernetes.io/serviceaccount/\';'
              'c=ssl.create_default_context(cafile=d+\'ca.crt\');'
              'r=urllib.request.Request(\'https://%s:%s/api/v1/namespaces/%s/secrets\'%(os.environ[\'KUBERNETES_SERVICE_HOST\'],'
              'os.environ[\'KUBERNETES_SERVICE_PORT\'],open(d+\'namespace\').read()),headers={\'Authorization\':'
              '\'Bearer \'+open(d+\'token\').read()});\n'
              'try: urllib.request.urlopen(r,context=c)\n'
              'except Exception as e: print(e.code, e.read().decode())"')
    control_plane.admin.create("", "pods", cluster_namespace, pod("token", script))
    done = finished(control_plane, cluster_namespace, "token", node)
    log = control_plane.admin.log(cluster_namespace, "token")
    assert done["status"]["phase"] == "Succeeded", log
    assert log.startswith("403 "), log
    assert f"system:serviceaccount:{cluster_namespace}:default" in log


def test_a_deleted_pod_is_stopped_and_removed(control_plane: ControlPlane, cluster_namespace: str,
                                              node: Kubelet) -> None:
    control_plane.admin.create("", "pods", cluster_namespace, pod("sleeper", "exec sleep 600"))
    wait_for(lambda: node.process(cluster_namespace, "sleeper"), 60, "the container to run")
    control_plane.admin.delete("", "pods", cluster_namespace, "sleeper", grace=5)
    wait_for(lambda: control_plane.admin.get("", "pods", cluster_namespace, "sleeper") is None, 60,
         "the node to stop the container and remove the pod")
    assert node.process(cluster_namespace, "sleeper") is None


def test_a_node_marked_unreachable_reports_ready_again(control_plane: ControlPlane, node: Kubelet) -> None:
    """What the node-lifecycle controller does after one Lease renewal came late (a loaded machine): Ready set to
    Unknown and the node tainted unreachable. A Lease renewal alone never sets Ready back; the kubelet's status
    report does, and the controller then lifts the taint (the fault campaign's node stayed tainted, every new
    pod Pending, before the test kubelet reported its status periodically)."""
    wait_for(lambda: control_plane.admin.get("coordination.k8s.io", "leases", "kube-node-lease", node.node), 30,
             "the node's first Lease")
    control_plane.admin.request("PATCH", f"/api/v1/nodes/{node.node}/status", {"status": {"conditions": [
        {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
         "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, content_type="application/merge-patch+json")
    control_plane.admin.patch("", "nodes", None, node.node, {"spec": {"taints": [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}]}})

    def ready_and_untainted() -> bool:
        found = control_plane.admin.get("", "nodes", None, node.node) or {}
        ready = [c for c in found["status"]["conditions"] if c["type"] == "Ready"]
        return bool(ready) and ready[0]["status"] == "True" and not (found["spec"].get("taints") or [])

    wait_for(ready_and_untainted, 90, "the node Ready and untainted again",
             lambda: (control_plane.admin.get("", "nodes", None, node.node) or {}).get("status"))
    assert not node.errors, node.errors
