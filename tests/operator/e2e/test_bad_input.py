"""Bad input: the API server refuses what the CRD forbids, and the operator explains the rest.

A spec that breaks the CRD's schema or CEL rules never reaches the operator (``kubectl apply`` fails with
the API server's message). A spec that got in anyway (stored before the CRD had the rule) is reported on the
job: ``status.error``, a Degraded condition with the rule's reason, a Warning event, and nothing is started.
"""

from __future__ import annotations

import copy
import os
import signal
import subprocess

import pytest
import yaml

from tests.cluster.client import ApiError
from tests.fixtures.cluster import install_driver_rbac
from tests.operator.e2e.harness import GROUP, KUBECTL, LAUNCHER_INDEPENDENT, ON_KUBERNETES, PLURAL, wait_for

pytestmark = pytest.mark.timeout(120)


def _created(world, manifest) -> bool:
    try:
        world.api.create(GROUP, PLURAL, world.ns, manifest)
        return True
    except ApiError as error:  # the API server's schema cache follows the CRD update a moment later
        assert error.code == 422, error
        return False


def apply_fails(world, manifest) -> str:
    path = world.tmp / f"{manifest['metadata']['name']}-bad.yaml"
    path.write_text(yaml.safe_dump(manifest))
    run = subprocess.run([str(KUBECTL), "--kubeconfig", str(world.kubeconfig), "--cache-dir",
                          str(world.tmp / "kube-cache"), "apply", "--validate=false", "-f", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0, run.stdout
    return run.stderr


@pytest.mark.parametrize("spec,words", [
    ({"storage": {"uri": "gs://bucket/jobs/b1"}}, ["spec.storage.uri: Invalid value", "s3a://<bucket>/<prefix>"]),
    ({"storage": {"uri": "s3a://bucket"}}, ["spec.storage.uri: Invalid value", "needs a prefix inside the bucket"]),
    ({"upgradeMode": "sometimes", "driver": {"memory": "2GB"}},
     ['spec.upgradeMode: Unsupported value: "sometimes"', "spec.driver.memory"]),
    ({"plan": {"sql": "INSERT INTO s SELECT 1", "configMapRef": {"name": "x"}}}, ["set exactly one of plan.sql"]),
    # What a tenant reaches (docs/operator.md): names, paths and keys that failed later, or escaped the job root.
    ({"storage": {"pvc": {"claimName": "Data_1", "subPath": "../../team-b/etl"}}},
     ["spec.storage.pvc.claimName", "spec.storage.pvc.subPath: Invalid value", "no '..' segment"]),
    ({"sparkConf": {"--master": "local", "spark.a": "x\ny"}, "executor": {"instances": 9223372036854775807,
                                                                         "memory": "0"}},
     ["sparkConf keys are spark.", "spec.sparkConf.spark.a", "spec.executor.instances", "spec.executor.memory"]),
    ({"planOptions": {"table.plan.x'; DROP": "1"}, "catalog": {"configMapRef": {"name": "a/b", "key": "c d"}}},
     ["planOptions keys are table.plan.", "spec.catalog.configMapRef.name", "spec.catalog.configMapRef.key"]),
])
@LAUNCHER_INDEPENDENT
def test_the_api_server_refuses_what_the_crd_forbids(world, spec, words):
    """Launcher-independent, so it runs once (local launcher): the API server refuses the spec at admission;
    no launcher acts."""
    world.start_operator()
    manifest = world.job_manifest("b1", "0.1")
    manifest["spec"].update(spec)
    message = apply_fails(world, manifest)
    assert 'The SparkPlanJob "b1" is invalid' in message, message
    for word in words:
        assert word in message, message
    assert world.api.get(GROUP, PLURAL, world.ns, "b1") is None


@LAUNCHER_INDEPENDENT
def test_a_spec_that_got_in_anyway_is_reported_not_run(world):
    """An object-store URI stored before the CRD refused it: the operator shows why and starts nothing.

    As it happens on a cluster: the CRD is installed without the ``storage.uri`` rule, the job is created, and the
    CRD with the rule is applied again (the stored object stays as it was). Launcher-independent, so it runs once
    (local launcher): the spec check runs before any launcher call.
    """
    world.start_operator()
    manifest = world.job_manifest("b2", "0.1")
    manifest["spec"]["storage"] = {"uri": "gs://bucket/jobs/b2"}
    crds = "apiextensions.k8s.io", "customresourcedefinitions", None, "sparkplanjobs.planengine.io"
    strict = world.api.get(*crds)
    loose = copy.deepcopy(strict)
    uri = loose["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["storage"][
        "properties"]["uri"]
    del uri["x-kubernetes-validations"]
    world.api.request("PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sparkplanjobs.planengine.io",
                      loose)
    try:
        wait_for(lambda: _created(world, manifest), 30, "the job stored under the CRD without the rule")
    finally:
        current = world.api.get(*crds)
        strict["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        world.api.request("PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                 "sparkplanjobs.planengine.io", strict)
    status = world.wait_status("b2", lambda s: s.get("error"), "an error on the job")
    assert "s3a://<bucket>/<prefix>" in status["error"] and "storage.pvc" in status["error"], status["error"]
    degraded = world.condition("b2", "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "StorageUnsupported")
    wait_for(lambda: "StorageUnsupported" in world.event_reasons("b2"), 10, "a StorageUnsupported event")
    assert status.get("phase") == "Pending" and "operation" not in status and not status.get("runId")
    assert not (world.jobs_root / world.ns / "b2").exists() and world.calls(world.job_root("b2")) == []


# ------------------------------------------------------------------------- pods that cannot start (Kubernetes)
# A cluster accepts these specs; what fails is the pod: its image cannot be pulled, or the claim it mounts does
# not exist. The kubelet (or scheduler) says why in the pod's status and keeps it Pending; the operator must
# show that reason on the job at once, not wait out a timeout behind a silent Pending.
def _failed_with(world, name: str, reason: str) -> dict:
    status = world.wait_status(name, lambda s: s.get("phase") == "Failed", f"Failed ({reason})", timeout=30)
    degraded = world.condition(name, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", reason), degraded
    assert degraded["message"] == status["error"], (degraded, status["error"])
    wait_for(lambda: reason in world.event_reasons(name), 10, f"a {reason} event")
    assert not status.get("runId") and world.driver_pods(name) == []
    return status


@ON_KUBERNETES
def test_an_image_that_cannot_be_pulled_fails_the_start_with_the_kubelets_reason(world):
    world.start_operator(admission={"allowImageOverride": True})  # spec.image is refused by default
    manifest = world.job_manifest("b3", "0.1")
    manifest["spec"]["image"] = "test.local/planengine/engine:gone"
    world.apply(manifest)
    status = _failed_with(world, "b3", "ErrImagePull")
    assert "test.local/planengine/engine:gone" in status["error"] and "cannot start" in status["error"], status
    wait_for(lambda: world.api.list("", "pods", world.ns) == [], 10, "the tool pod deleted", lambda: world.api.list(
        "", "pods", world.ns))


@ON_KUBERNETES
def test_a_claim_that_does_not_exist_fails_the_start_with_the_schedulers_reason(world):
    world.start_operator()
    manifest = world.job_manifest("b4", "0.1")
    manifest["spec"]["storage"]["pvc"]["claimName"] = "no-such-claim"
    world.apply(manifest)
    status = _failed_with(world, "b4", "Unschedulable")
    assert 'persistentvolumeclaim "no-such-claim" not found' in status["error"], status


@ON_KUBERNETES
def test_a_driver_pod_that_cannot_start_is_reported_and_the_job_recovers_once_it_can(world):
    """The image disappears while the job runs (a registry clean-up) and the driver dies: the restart's pods
    (the snapshot tool pod first, then the driver) wait in ErrImagePull. The job says so (Degraded with the
    pod's reason, the image named), retries with its back-off, and runs again, exactly once, when the image is
    back."""
    world.start_operator()
    world.add_input("b5", 2)
    world.apply(world.job_manifest("b5", "0.1"))
    running = world.wait_status("b5", lambda s: s.get("phase") == "Running", "Running")
    world.assert_exactly_once("b5")
    assert world.kubelet is not None
    image = next(name for name in world.kubelet.images if ":0.1-" in name)
    kept = world.kubelet.images.pop(image)
    pid = world.kubelet.process(world.ns, running["driver"]["name"])
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: "ErrImagePull" in world.condition("b5", "Degraded").get("message", ""), 30,
             "the pod's ErrImagePull on the job", lambda: world.condition("b5", "Degraded"))
    degraded = world.condition("b5", "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] in ("ErrImagePull", "DriverFailed"), degraded
    assert image in degraded["message"] and "cannot start" in degraded["message"], degraded
    assert "ErrImagePull" in world.event_reasons("b5") or degraded["reason"] == "DriverFailed"
    world.kubelet.images[image] = kept
    world.wait_status("b5", lambda s: s.get("phase") == "Running" and s.get("runId") != running["runId"]
                      and not s.get("operation"), "Running on a new run", timeout=60)
    world.add_input("b5", 2)
    world.assert_exactly_once("b5")
    wait_for(lambda: world.condition("b5", "Degraded").get("status") != "True", 30, "Degraded cleared",
             lambda: world.condition("b5", "Degraded"))


@ON_KUBERNETES
def test_a_pod_the_api_server_refuses_is_reported_with_its_message_and_started_once_it_can(world):
    """A job namespace without the chart's driver ServiceAccount: the ServiceAccount admission plugin refuses the
    tool and driver pods. The job shows the API server's own message (not a stuck "Start requested"), and starts
    when an administrator adds the chart's driver RBAC to the namespace."""
    world.api.delete("", "serviceaccounts", world.ns, "planengine-driver")
    world.start_operator()
    world.add_input("b6", 2)
    world.apply(world.job_manifest("b6", "0.1"))
    wait_for(lambda: 'serviceaccount "planengine-driver" not found' in world.condition("b6", "Degraded").get(
        "message", ""), 60, "the API server's refusal on the job", lambda: world.status("b6"))
    assert world.condition("b6", "Degraded")["reason"] == "APIRefused"
    install_driver_rbac(world.plane, world.ns, world.tmp)
    world.wait_status("b6", lambda s: s.get("phase") == "Running", "Running once the account exists", timeout=90)
    world.assert_exactly_once("b6")
