"""The operator as users install it: ``helm install`` of ``charts/planengine-operator`` into the real control plane.

The chart's Deployment becomes a ReplicaSet and a pod (the real controllers), the scheduler places it on the test
node, which runs it from its image under the chart's ServiceAccount: the operator logs in with its projected token
(kopf's in-cluster login through ``kubernetes.default.svc``), so the chart's namespaced RBAC (``watchNamespaces``)
is all it has. The chart's ValidatingWebhookConfiguration is registered and the API server calls the pod's webhook
over TLS (the chart's Service -> its EndpointSlice -> the pod address, ``--enable-aggregator-routing``; the
certificate is for ``<service>.<namespace>.svc``, signed by the CA in the chart's ``caBundle``): a spec the webhook
refuses never reaches etcd and ``kubectl apply`` prints the webhook's own message. A job is reconciled by that pod
to Running with every input row exactly once, and ``helm uninstall`` removes the operator and the webhook.

The API server refuses loopback addresses in an EndpointSlice, so the node must hand out routable pod addresses
(``tests/operator/kubelet/podnet.py``: a block made local to this machine, which needs CAP_NET_ADMIN).
"""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.pki import Authority
from tests.operator.e2e.harness import ON_KUBERNETES, World, engine_command, engine_image, wait_for

pytestmark = [pytest.mark.timeout(420)]

REPO = Path(__file__).resolve().parents[3]
HELM = REPO / ".tools" / "bin" / "helm"
CHART = REPO / "charts" / "planengine-operator"
OPERATOR_IMAGE = "test.local/planengine/operator:chart"
RELEASE = "pe"
FULLNAME = f"{RELEASE}-planengine-operator"
WEBHOOK = f"{FULLNAME}-webhook"  # the chart's Service and ValidatingWebhookConfiguration
WEBHOOK_SECRET = f"{FULLNAME}-webhook-tls"


def _helm(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HELM), "--kubeconfig", str(world.kubeconfig), *args], capture_output=True, text=True,
                          timeout=300)


def _values(world: World, engine: str, ca_bundle: str) -> dict[str, Any]:
    repository, tag = OPERATOR_IMAGE.rsplit(":", 1)
    return {
        "webhook": {"enabled": True, "certificate": {"secretName": WEBHOOK_SECRET, "caBundle": ca_bundle}},
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


def _webhook_certificate(world: World, namespace: str) -> str:
    """The webhook's serving Secret in the release namespace, as a user (or cert-manager) provides it; the CA bundle
    the chart puts in the ValidatingWebhookConfiguration (base64 PEM) is returned."""
    authority = Authority(world.tmp / "webhook-pki", "planengine-webhook-test-ca")
    pair = authority.issue("webhook", WEBHOOK, server=True, client=False,
                           hosts=(WEBHOOK, f"{WEBHOOK}.{namespace}", f"{WEBHOOK}.{namespace}.svc"))
    world.api.create("", "secrets", namespace, {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": {"name": WEBHOOK_SECRET},
        "data": {"tls.crt": base64.b64encode(pair.cert.read_bytes()).decode(),
                 "tls.key": base64.b64encode(pair.key.read_bytes()).decode()}})
    return base64.b64encode(authority.cert.read_bytes()).decode()


def _kubectl_apply(world: World, manifest: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".tools" / "bin" / "kubectl"), "--kubeconfig", str(world.kubeconfig),
                           "apply", "-n", world.ns, "-f", "-"], input=yaml.safe_dump(manifest), capture_output=True,
                          text=True, timeout=60)


def _webhook_refusal(world: World, manifest: dict[str, Any]) -> str | None:
    """``kubectl apply``'s error once the API server got the webhook's verdict (None while it cannot reach it yet:
    no ready endpoint, the pod's TLS listener not up; with ``failurePolicy: Fail`` those are refusals too)."""
    run = _kubectl_apply(world, manifest)
    assert run.returncode != 0, f"the API server admitted a spec the webhook refuses: {run.stdout}"
    return run.stderr if "denied the request" in run.stderr else None


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
    assert world.kubelet.network.routable, (
        f"pod addresses are loopback ({world.kubelet.network_problem}): the API server cannot reach a webhook")
    ca_bundle = _webhook_certificate(world, release_ns)
    values = world.tmp / "operator-values.yaml"
    values.write_text(yaml.safe_dump(_values(world, engine, ca_bundle)))
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

        # The API server calls the chart's webhook over TLS: an engine the operator's catalog does not have is
        # refused with the webhook's message, and nothing is stored.
        unknown_engine = world.job_manifest("refused", "9.9")
        refusal = wait_for(lambda: _webhook_refusal(world, unknown_engine), 120, "the webhook's verdict",
                           lambda: _kubectl_apply(world, unknown_engine).stderr)
        assert 'admission webhook "validate.sparkplanjobs.planengine.io" denied the request' in refusal
        assert "spec.engineVersion" in refusal and "engine catalog" in refusal, refusal
        assert world.api.get("planengine.io", "sparkplanjobs", world.ns, "refused") is None

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
