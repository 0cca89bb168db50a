"""Bad input: the emulated API server refuses what a cluster refuses, and the operator explains the rest.

A spec that breaks the CRD's schema or CEL rules never reaches the operator (``kubectl apply`` fails with
the API server's message). A spec that got in anyway (stored before the CRD had the rule: written here
straight into the emulator's store) is reported on the job: ``status.error``, a Degraded condition with the
rule's reason, a Warning event, and nothing is started.
"""

from __future__ import annotations

import subprocess

import pytest
import yaml

from tests.operator.e2e.harness import GROUP, KUBECTL, NS, PLURAL, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def apply_fails(world, manifest) -> str:
    path = world.tmp / f"{manifest['metadata']['name']}-bad.yaml"
    path.write_text(yaml.safe_dump(manifest))
    run = subprocess.run([str(KUBECTL), "--kubeconfig", str(world.kubeconfig), "--cache-dir",
                          str(world.tmp / "kube-cache"), "apply", "--validate=false", "-f", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0, run.stdout
    return run.stderr


@pytest.mark.parametrize("spec,words", [
    ({"storage": {"uri": "s3a://bucket/jobs/b1"}}, ["spec.storage.uri: Invalid value", "object-store job roots"]),
    ({"upgradeMode": "sometimes", "driver": {"memory": "2GB"}},
     ['spec.upgradeMode: Unsupported value: "sometimes"', "spec.driver.memory"]),
    ({"plan": {"sql": "INSERT INTO s SELECT 1", "configMapRef": {"name": "x"}}}, ["set exactly one of plan.sql"]),
])
def test_the_api_server_refuses_what_the_crd_forbids(world, spec, words):
    world.start_operator()
    manifest = world.job_manifest("b1", "0.1")
    manifest["spec"].update(spec)
    message = apply_fails(world, manifest)
    assert 'The SparkPlanJob "b1" is invalid' in message, message
    for word in words:
        assert word in message, message
    assert world.api.get(GROUP, PLURAL, NS, "b1") is None


def test_a_spec_that_got_in_anyway_is_reported_not_run(world):
    """An object-store URI stored before the CRD refused it: the operator shows why and starts nothing."""
    world.start_operator()
    manifest = world.job_manifest("b2", "0.1")
    manifest["spec"]["storage"] = {"uri": "s3a://bucket/jobs/b2"}
    manifest["metadata"].update(uid="u-b2", resourceVersion="1", generation=1, creationTimestamp="2026-01-01T00:00:00Z")

    def store(api):
        api.objects[(GROUP, PLURAL, NS, "b2")] = manifest
        api._emit(api.resources[(GROUP, PLURAL)], "ADDED", manifest)

    world.api.call(store)
    status = world.wait_status("b2", lambda s: s.get("error"), "an error on the job")
    assert "object-store job roots" in status["error"] and "storage.pvc" in status["error"], status["error"]
    degraded = world.condition("b2", "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "StorageUnsupported")
    wait_for(lambda: "StorageUnsupported" in world.event_reasons("b2"), 10, "a StorageUnsupported event")
    assert status.get("phase") == "Pending" and "operation" not in status and not status.get("runId")
    assert not (world.jobs_root / NS / "b2").exists() and world.calls(world.job_root("b2")) == []
