"""The Compile step with the Kubernetes launcher, against the API emulator (the test plays the kubelet).

Before: the first compile looked for the ``<job>-plan`` ConfigMap that only the compile creates ("compile
wrote no plan.json"), and ``compiledPlanRef`` was refused ("cannot write into the job root from the operator
yet"). Now the compile pod prints the plan, the operator publishes it as ``<job>-plan``, and the driver pod
reads it from that mounted ConfigMap (``run --plan`` installs it into a job root without one).

Why the emulator and not the real API server: a fast-tier test (no control plane in that tier) that writes the
tool pods' status itself, as a kubelet would, to drive one step at a time. Every Kubernetes-launcher scenario of
``tests/operator/e2e`` runs the same Compile step on the real control plane with the test kubelet.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kopf
import pytest

from planengine_operator import builders, kube
from planengine_operator.config import OperatorConfig
from planengine_operator.launchers.base import JobRef, ToolPending
from planengine_operator.launchers.kubernetes import KubernetesLauncher
from planengine_operator.models import JobSpec, JobStatus
from planengine_operator.reconciler import Reconciler, plan_from_output, request_of
from planengine_operator.statemachine import Action, JobView
from tests.operator.kapi.server import run_in_thread
from tests.operator.tool_pods import finish_pod

CRD = Path(__file__).resolve().parents[2] / "crds" / "sparkplanjobs.planengine.io.yaml"
CONFIG = OperatorConfig.model_validate({"engines": {"0.1": {"image": "ghcr.io/planengine/engine:0.1"}},
                                        "launcher": "kubernetes", "metrics": {"port": 0}})
PLAN = {"formatVersion": 1, "engineVersion": "0.1", "planId": "a" * 64, "nodes": [], "edges": []}
SQL = "CREATE TABLE t (a INT) WITH ('connector' = 'datagen'); INSERT INTO s SELECT a FROM t"
NS, GROUP, PLURAL = "default", "planengine.io", "sparkplanjobs"


@pytest.fixture
def api():
    running = run_in_thread([CRD])
    kube.configure(kopf.ConnectionInfo(server=running.url, token="t"))
    yield running
    running.stop()


def make_job(api, name: str, plan: dict[str, Any]) -> tuple[JobRef, JobView]:
    body = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "SparkPlanJob", "metadata": {"name": name, "namespace": NS},
            "spec": {"engineVersion": "0.1", "plan": plan, "storage": {"pvc": {"claimName": "jobs"}}}}

    def create(a):
        return a._create(a.resources[(GROUP, PLURAL)], NS, body)

    stored = api.call(create)
    launcher = KubernetesLauncher(CONFIG)
    root = launcher.job_root(NS, name, stored["spec"])
    job = JobRef(NS, name, stored["metadata"]["uid"], root, stored)
    view = JobView(name=name, namespace=NS, generation=1, spec=JobSpec.model_validate(stored["spec"]),
                   status=JobStatus(), config=CONFIG, job_root=root, now=datetime.now(UTC), new_run_id="r1")
    return job, view


async def compile_step(reconciler: Reconciler, job: JobRef, view: JobView, **params: Any):
    try:
        return await reconciler._execute(job, view, Action("compile", {"engineVersion": "0.1", **params}))
    finally:
        await kube.close()


def test_first_compile_takes_the_plan_from_the_compile_pod_and_the_driver_reads_the_configmap(api):
    job, view = make_job(api, "c1", {"sql": SQL})
    reconciler = Reconciler(CONFIG, KubernetesLauncher(CONFIG), fleet=None)
    with pytest.raises(kopf.TemporaryError, match="tool pod"):  # ToolPending: look again on the next tick
        asyncio.run(compile_step(reconciler, job, view))
    pod = api.get("", "pods", NS, "c1-compile")
    container = pod["spec"]["containers"][0]
    assert container["args"][-2:] == ["compile", "/etc/planengine/input/job.sql"]  # the plan goes to stdout
    assert "-o" not in container["args"]
    log = "WARN NativeCodeLoader: Unable to load native-hadoop library\n" + json.dumps(PLAN, indent=2) + "\n"
    finish_pod(api, "c1-compile", 0, log)
    result = asyncio.run(compile_step(reconciler, job, view))
    assert result.ok, result
    assert result.values["planId"] == PLAN["planId"]
    configmap = api.get("", "configmaps", NS, "c1-plan")
    assert json.loads(configmap["data"]["plan.json"]) == PLAN
    assert configmap["metadata"]["ownerReferences"][0]["uid"] == job.uid
    assert api.get("", "pods", NS, "c1-compile") is None  # the tool pod is cleaned up

    async def launch():
        try:
            return await reconciler._launch(job, view, {"engineVersion": "0.1", "runId": "r1"})
        finally:
            await kube.close()

    asyncio.run(launch())
    driver = api.get("", "pods", NS, builders.driver_pod_name("c1", "r1"))  # one driver pod per run
    args = driver["spec"]["containers"][0]["args"]
    assert args[args.index("--plan") + 1] == "/etc/planengine/plan/plan.json", args
    mounts = {m["mountPath"]: m["name"] for m in driver["spec"]["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in driver["spec"]["volumes"]}
    assert volumes[mounts["/etc/planengine/plan"]]["configMap"]["name"] == "c1-plan"


def test_a_failed_compile_reports_the_engine_message(api):
    job, view = make_job(api, "c2", {"sql": SQL})
    reconciler = Reconciler(CONFIG, KubernetesLauncher(CONFIG), fleet=None)
    with pytest.raises(kopf.TemporaryError, match="tool pod"):  # ToolPending: look again on the next tick
        asyncio.run(compile_step(reconciler, job, view))
    finish_pod(api, "c2-compile", 2, "job.sql: line 1, column 60: unknown table s")
    result = asyncio.run(compile_step(reconciler, job, view))
    assert not result.ok and result.values["permanent"] and "unknown table s" in result.error


def test_compiled_plan_ref_is_published_without_a_compile(api):
    api.call(lambda a: a._create(a.resources[("", "configmaps")], NS, {
        "metadata": {"name": "my-plan"}, "data": {"plan.json": json.dumps(PLAN)}}))
    job, view = make_job(api, "c3", {"compiledPlanRef": {"name": "my-plan"}})
    reconciler = Reconciler(CONFIG, KubernetesLauncher(CONFIG), fleet=None)
    result = asyncio.run(compile_step(reconciler, job, view))
    assert result.ok and result.values["planId"] == PLAN["planId"], result
    assert json.loads(api.get("", "configmaps", NS, "c3-plan")["data"]["plan.json"]) == PLAN
    assert api.get("", "pods", NS, "c3-compile") is None  # nothing was compiled


def test_recompiling_a_started_job_replaces_the_plan_in_the_job_root_through_a_tool_pod(api):
    """A stateless recompile replaces the plan in force: the operator cannot write into the job root, so a tool
    pod copies the new plan there (from an input ConfigMap, with a rename) before <job>-plan changes."""
    job, view = make_job(api, "c4", {"compiledPlanRef": {"name": "c4-other"}})
    new_plan = {**PLAN, "planId": "b" * 64}
    api.call(lambda a: a._create(a.resources[("", "configmaps")], NS, {
        "metadata": {"name": "c4-plan"}, "data": {"plan.json": json.dumps(PLAN)}}))
    api.call(lambda a: a._create(a.resources[("", "configmaps")], NS, {
        "metadata": {"name": "c4-other"}, "data": {"plan.json": json.dumps(new_plan)}}))
    reconciler = Reconciler(CONFIG, KubernetesLauncher(CONFIG), fleet=None)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        step = pool.submit(asyncio.run, compile_step(reconciler, job, view, force=True))
        deadline = time.monotonic() + 30
        while not (writers := [p for p in api.list("", "pods", NS) if p["metadata"]["name"].startswith("c4-write-")]):
            assert time.monotonic() < deadline and not step.done(), "no write pod"
            time.sleep(0.05)
        container = writers[0]["spec"]["containers"][0]
        assert container["command"][-1] == f"{job.job_root}/plan.json"  # copied into the job root
        source = api.get("", "configmaps", NS, writers[0]["spec"]["volumes"][-1]["configMap"]["name"])
        assert json.loads(source["data"]["content"]) == new_plan
        finish_pod(api, writers[0]["metadata"]["name"], 0, "")
        result = step.result(30)
    assert result.ok and result.values["planId"] == "b" * 64, result
    assert json.loads(api.get("", "configmaps", NS, "c4-plan")["data"]["plan.json"]) == new_plan


def test_compiled_plan_ref_uri_is_refused_on_kubernetes_with_advice(api):
    job, view = make_job(api, "c5", {"compiledPlanRef": {"uri": "/plans/plan.json"}})
    reconciler = Reconciler(CONFIG, KubernetesLauncher(CONFIG), fleet=None)
    result = asyncio.run(compile_step(reconciler, job, view))
    assert not result.ok and result.reason == "CompiledPlanUnreadable" and "compiledPlanRef.name" in result.error


def test_plan_from_output_skips_log_lines_and_braces_that_are_not_the_plan():
    text = '{"level": "info", "msg": "starting"}\nnoise\n' + json.dumps(PLAN, indent=1) + "\nINFO done\n"
    assert json.loads(plan_from_output(text)) == PLAN


def test_a_tool_answer_left_by_an_earlier_request_is_never_taken_for_a_later_one(api):
    """The fault campaign (seed 20261207, round 10): an upgrade's Stop found the old driver dead and forked its
    checkpoint in a ``<job>-snapshot`` tool pod; a retry found that snapshot by time and never read the pod. Three
    upgrades later another dead driver's fork found the finished pod and took its answer: the new engine started
    from a snapshot 240 batches old. The pod is now the answer of one request only; an operator restarted
    mid-step (the same request) still gets it."""
    job, _ = make_job(api, "c6", {"sql": SQL})
    launcher = KubernetesLauncher(CONFIG)
    argv = ["snapshot", "--job-root", job.job_root]
    first = dataclasses.replace(job, request="Upgrade/2026-12-07T12:27:00Z/Stop/stop")
    later = dataclasses.replace(job, request="Upgrade/2026-12-07T12:34:58Z/Stop/stop")

    def tool(ref: JobRef):
        async def run():
            try:
                return await launcher.run_tool(ref, "0.1", "snapshot", argv)
            finally:
                await kube.close()
        return asyncio.run(run())

    with pytest.raises(ToolPending, match="started"):
        tool(first)
    finish_pod(api, "c6-snapshot", 0, '{"snapshot": "s-old"}\n')
    with pytest.raises(ToolPending, match="earlier request"):
        tool(later)  # before: returned s-old
    assert api.get("", "pods", NS, "c6-snapshot") is None
    with pytest.raises(ToolPending, match="started"):
        tool(later)
    finish_pod(api, "c6-snapshot", 0, '{"snapshot": "s-new"}\n')
    assert tool(later).stdout.strip() == '{"snapshot": "s-new"}'


def test_an_operator_restarted_mid_step_takes_the_answer_of_its_own_request(api):
    job, _ = make_job(api, "c7", {"sql": SQL})
    ref = dataclasses.replace(job, request="Restart/2026-12-07T12:00:00Z/Fork/fork")

    def tool(launcher: KubernetesLauncher):
        async def run():
            try:
                return await launcher.run_tool(ref, "0.1", "snapshot", ["snapshot"])
            finally:
                await kube.close()
        return asyncio.run(run())

    with pytest.raises(ToolPending):
        tool(KubernetesLauncher(CONFIG))
    finish_pod(api, "c7-snapshot", 0, '{"snapshot": "s-1"}\n')
    assert tool(KubernetesLauncher(CONFIG)).stdout.strip() == '{"snapshot": "s-1"}'  # a new operator, same step


def test_the_request_names_the_operation_step_and_action():
    job_spec = JobSpec.model_validate({"engineVersion": "0.1", "plan": {"sql": SQL}})

    def view(**op: Any) -> JobView:
        status = JobStatus.model_validate({"operation": op} if op else {})
        return JobView(name="j", namespace=NS, generation=1, spec=job_spec, status=status, config=CONFIG,
                       job_root="/jobs/j", now=datetime.now(UTC), new_run_id="r1")

    stop = Action("stop", {})
    assert request_of(view(type="Upgrade", step="Stop", started="t1"), stop) == "Upgrade/t1/Stop/stop"
    assert request_of(view(type="Upgrade", step="Stop", started="t1"), stop) != request_of(
        view(type="Upgrade", step="Stop", started="t2"), stop)
    assert request_of(view(), Action("compile", {})) == "compile"
