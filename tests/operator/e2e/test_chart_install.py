"""The operator as users install it: ``helm install`` of ``charts/planengine-operator`` into the real control plane.

The chart's Deployment becomes a ReplicaSet and a pod (the real controllers), the scheduler places it on the test
node, which runs it from its image under the chart's ServiceAccount: the operator logs in with its projected token
(kopf's in-cluster login through ``kubernetes.default.svc``), so the chart's namespaced RBAC (``watchNamespaces``)
is all it has. A job is reconciled by that pod to Running with every input row exactly once, and ``helm
uninstall`` removes the operator.

Not here: the chart's ValidatingWebhookConfiguration called by the API server. The API server reaches a webhook
through its Service's endpoints, and an EndpointSlice may not hold a loopback address ("may not be in the loopback
range"), which is all a pod address is on this machine without network namespaces (docs/operator.md).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.operator.e2e.harness import ON_KUBERNETES, World, engine_command, engine_image, wait_for

pytestmark = [pytest.mark.timeout(420)]

REPO = Path(__file__).resolve().parents[3]
HELM = REPO / ".tools" / "bin" / "helm"
CHART = REPO / "charts" / "planengine-operator"
OPERATOR_IMAGE = "test.local/planengine/operator:chart"
RELEASE = "pe"
FULLNAME = f"{RELEASE}-planengine-operator"


def _helm(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HELM), "--kubeconfig", str(world.kubeconfig), *args], capture_output=True, text=True,
                          timeout=300)


def _values(world: World, engine: str) -> dict[str, Any]:
    repository, tag = OPERATOR_IMAGE.rsplit(":", 1)
    return {
        "image": {"repository": repository, "tag": tag},
        "watchNamespaces": [world.ns],
        # The world applied the chart's driver ServiceAccount and Role to the job namespace already.
        "driverRbac": {"create": False},
        # No kube-proxy or cluster DNS here: the operator reaches drivers at their pod address.
        "extraEnv": [{"name": "PLANENGINE_OPERATOR_DRIVER_URL", "value": "http://{endpoint}:{port}"},
                     {"name": "PLANENGINE_OPERATOR_TICK", "value": "0.5"}],
        "config": {"defaultEngineVersion": "0.1", "engines": {"0.1": {"image": engine}},
                   "admission": {"allowedHostPathPrefixes": [str(world.tmp / "data")]}},
    }


def _operator_pod(world: World, namespace: str) -> dict[str, Any] | None:
    pods = world.api.list("", "pods", namespace, labels="app.kubernetes.io/component=operator")
    ready = [p for p in pods if any(c["type"] == "Ready" and c["status"] == "True"
                                    for c in (p.get("status") or {}).get("conditions") or [])]
    return ready[0] if ready else None


@ON_KUBERNETES
def test_helm_install_runs_the_operator_pod_under_the_charts_rbac(world: World) -> None:
    assert world.kubelet is not None
    release_ns = f"{world.ns[:40]}-op"
    world.api.create("", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": release_ns}})
    engine, image = engine_image("0.1", engine_command("0.1", "contract"))
    world.kubelet.images[engine] = image
    world.kubelet.images[OPERATOR_IMAGE] = type(image)(REPO / ".venv")
    values = world.tmp / "operator-values.yaml"
    values.write_text(yaml.safe_dump(_values(world, engine)))
    installed = _helm(world, "install", RELEASE, str(CHART), "--namespace", release_ns, "--values", str(values),
                      "--skip-crds")
    assert installed.returncode == 0, installed.stderr
    try:
        pod = wait_for(lambda: _operator_pod(world, release_ns), 180, "the operator pod Ready",
                       lambda: [(p["metadata"]["name"], (p.get("status") or {}).get("phase"),
                                 (p.get("status") or {}).get("conditions"))
                                for p in world.api.list("", "pods", release_ns)]
                       + [world.kubelet.log(release_ns, p["metadata"]["name"])[-2000:]
                          for p in world.api.list("", "pods", release_ns)])
        assert pod["spec"]["nodeName"] == world.kubelet.node
        assert pod["spec"]["serviceAccountName"] == FULLNAME

        world.add_input("viachart", 3)
        world.apply(world.job_manifest("viachart", "0.1"))
        world.wait_status("viachart", lambda s: s.get("phase") == "Running", "Running (reconciled by the pod)",
                          timeout=180)
        world.assert_exactly_once("viachart", timeout=60)
    finally:
        removed = _helm(world, "uninstall", RELEASE, "--namespace", release_ns, "--wait", "--timeout", "120s")
    assert removed.returncode == 0, removed.stderr
    wait_for(lambda: _operator_pod(world, release_ns) is None and not world.api.list("", "pods", release_ns), 120,
             "the operator pod gone")
    world.api.delete("", "namespaces", None, release_ns)
