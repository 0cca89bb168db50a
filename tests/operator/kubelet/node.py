"""What the test kubelet does as a node of a real API server (``tests/cluster``), beyond running containers.

* It registers a ``Node`` with this machine's CPUs and memory as capacity, so the real scheduler places pods by
  their resource requests (a pod that does not fit stays Pending with the scheduler's own reason).
* It authenticates as ``system:node:<name>`` (group ``system:nodes``): the Node authorizer and the
  NodeRestriction admission plugin decide what it may read and write, exactly as for a kubelet of a cluster —
  only pods bound to it, the ConfigMaps, Secrets, claims and service-account tokens those pods name.
* It serves the kubelet API's log endpoint over TLS (client certificates of the control plane's CA required), so
  ``kubectl logs`` and the operator's log reads go through the API server's proxy to it.
* It asks the TokenRequest API for the service-account tokens projected into pods, bound to the pod.
"""

from __future__ import annotations

import os
import ssl
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.cluster.client import ApiClient


def machine_capacity() -> dict[str, str]:
    """This machine's CPUs and memory, as a node reports them."""
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {"cpu": str(os.cpu_count() or 1), "memory": f"{pages // 1024}Ki", "pods": "110",
            "ephemeral-storage": "100Gi"}


def ready_conditions() -> list[dict[str, Any]]:
    """The node's conditions as this kubelet reports them: Ready (it has no pressure signals to report)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return [{"type": "Ready", "status": "True", "reason": "KubeletReady",
             "message": "the test kubelet is posting ready status", "lastHeartbeatTime": now,
             "lastTransitionTime": now}]


def node_manifest(name: str, port: int, capacity: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                              "kubernetes.io/arch": "amd64"}},
        "status": {
            "capacity": capacity, "allocatable": capacity,
            "conditions": ready_conditions(),
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
            "nodeInfo": {"machineID": name, "systemUUID": name, "bootID": name, "kernelVersion": os.uname().release,
                         "osImage": "planengine test kubelet", "containerRuntimeVersion": "sandbox://0",
                         "kubeletVersion": "v1.35.4", "kubeProxyVersion": "", "operatingSystem": "linux",
                         "architecture": "amd64"},
        },
    }


def node_lease(name: str) -> dict[str, Any]:
    """The node's heartbeat Lease: created once, then its ``spec`` merge-patched on every renewal (only this kubelet
    writes it)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now}}


def client_context(api: ApiClient) -> ssl.SSLContext:
    """TLS to the API server as this node (its client certificate), verifying the server by the cluster CA."""
    context = ssl.create_default_context(cafile=str(api.ca))
    if api.cert is not None and api.key is not None:
        context.load_cert_chain(str(api.cert), str(api.key))
    return context


def server_context(ca: Path, cert: Path, key: Path) -> ssl.SSLContext:
    """The kubelet API's TLS: its serving certificate, and only clients with a certificate of the cluster CA (the
    API server's kubelet client) get in."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(ca))
    context.load_cert_chain(str(cert), str(key))
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def token_request(pod: dict[str, Any], audience: str | None, seconds: int) -> dict[str, Any]:
    """A TokenRequest bound to the pod: the token dies with the pod, as a kubelet's projected token does."""
    spec: dict[str, Any] = {"expirationSeconds": max(600, seconds),
                            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": pod["metadata"]["name"],
                                               "uid": pod["metadata"]["uid"]}}
    if audience:
        spec["audiences"] = [audience]
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def create_bound_claim(admin: ApiClient, namespace: str, name: str, directory: Path) -> None:
    """A PersistentVolumeClaim with a ReadWriteMany hostPath volume of its own, pre-bound to each other; the
    persistent-volume controller completes the binding and the scheduler then places pods that use the claim."""
    volume = f"{namespace}-{name}"
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o777)
    admin.create("", "persistentvolumes", None, {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"], "storageClassName": "",
                 "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": str(directory)},
                 "claimRef": {"namespace": namespace, "name": name}}})
    admin.create("", "persistentvolumeclaims", namespace, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
        "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": volume,
                 "resources": {"requests": {"storage": "1Gi"}}}})


def start_node(plane: Any, root: Path, images: dict[str, Any], *, name: str | None = None,
               capacity: dict[str, str] | None = None, backoff: tuple[float, float] = (0.5, 5.0)) -> Any:
    """A test kubelet registered with the real control plane ``plane`` (tests.cluster.controlplane.ControlPlane)
    under its own node identity and serving certificate; ``stop_node`` removes it again."""
    import uuid

    from tests.operator.kubelet.kubelet import Kubelet

    name = name or f"node-{uuid.uuid4().hex[:6]}"
    api = plane.user(f"node-{name}", f"system:node:{name}", ("system:nodes",))
    serving = plane.ca.issue(f"kubelet-{name}", name, hosts=("127.0.0.1", name), server=True, client=False)
    return Kubelet(api, root, images, node=name, serving=serving, capacity=capacity, backoff=backoff).start()


def stop_node(plane: Any, kubelet: Any) -> None:
    """Kill what the node runs and delete its Node object (the pod garbage collector then removes its pods)."""
    kubelet.stop()
    plane.admin.delete("", "nodes", None, kubelet.node)
