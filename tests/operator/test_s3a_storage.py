"""A SparkPlanJob on an ``s3a://`` job root: the CRD's rules and the operator's agree on what is accepted, every
pod the Kubernetes launcher builds reaches the bucket with the job's ``storage.s3`` and no volume, the credentials
stay in their Secret, and the launcher reads and writes job-root files through ``planengine job-root``.

Before: the CRD refused every ``s3a://`` ``storage.uri``, the pods mounted a claim or nothing, and the launcher
read job-root files with ``cat`` (which has no file to read on a bucket). The API-emulator tests play the kubelet,
as ``test_compile_path.py`` does; the real control plane runs none of this yet (docs/object-store.md).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml

from planengine_operator import builders, kube, storage, validation, webhook
from planengine_operator.config import OperatorConfig
from planengine_operator.launchers.base import JobRef, LaunchError
from planengine_operator.launchers.kubernetes import KubernetesLauncher
from planengine_operator.launchers.local import LocalLauncher
from planengine_operator.models import JobSpec, JobStatus
from planengine_operator.reconciler import Reconciler
from planengine_operator.statemachine import Action, JobView
from tests.operator.kapi import schema
from tests.operator.kapi.server import run_in_thread
from tests.operator.tool_pods import finish_pod

CRD = Path(__file__).resolve().parents[2] / "crds" / "sparkplanjobs.planengine.io.yaml"
KUBERNETES = OperatorConfig.model_validate({"engines": {"0.1": {"image": "ghcr.io/planengine/engine:0.1"}},
                                            "launcher": "kubernetes", "metrics": {"port": 0}})
LOCAL = OperatorConfig.model_validate({"engines": {"0.1": {"localCommand": ["planengine"]}}, "launcher": "local",
                                       "jobRootBase": "/var/jobs", "metrics": {"port": 0}})
SQL = "INSERT INTO out SELECT * FROM clicks"
ROOT = "s3a://team-a-jobs/clicks"
S3 = {"endpoint": "http://minio.storage.svc:9000", "region": "eu-west-1", "pathStyle": True,
      "credentialsSecret": "clicks-s3"}
# What the Secret holds: none of it may appear in anything the operator builds or writes.
ACCESS_KEY, SECRET_KEY, SESSION_TOKEN = "AKIAEXAMPLEKEY0042", "wJalrXUtnFEMI-secret-0042", "FwoGZX-session-0042"
NS, GROUP, PLURAL = "default", "planengine.io", "sparkplanjobs"


def crd_schema() -> dict[str, Any]:
    return yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def crd_errors(spec_storage: dict[str, Any], old_storage: dict[str, Any] | None = None) -> list[Any]:
    """The API server's errors (schema and CEL, as the emulator evaluates them) for a job with this storage."""
    new = {"spec": {"plan": {"sql": SQL}, "storage": spec_storage}}
    if old_storage is None:
        return schema.validate(new, crd_schema())
    return schema.validate(new, crd_schema(), old={"spec": {"plan": {"sql": SQL}, "storage": old_storage}})


# ------------------------------------------------------------------------------------------ the CRD's rules
URIS = {
    "a path": "/data/jobs/a",
    "a file URI": "file:///data/jobs/a",
    "a bucket and prefix": "s3a://team-a-jobs/clicks",
    "a nested prefix with a trailing slash": "s3a://team-a-jobs/team-a/clicks/",
    "a bucket with dots": "s3a://jobs.example.com/a",
    "gs": "gs://bucket/a",
    "abfs": "abfs://c@a.dfs.core.windows.net/j",
    "hdfs": "hdfs://nn/jobs",
    "s3 (not s3a)": "s3://bucket/a",
    "a relative path": "jobs/a",
    "a relative file URI": "file://relative/a",
    "credentials in the URI": "s3a://AKIAX:secret@bucket/a",
    "credentials and no prefix": "s3a://AKIAX:secret@bucket",
    "no prefix": "s3a://bucket",
    "an empty prefix": "s3a://bucket/",
    "only slashes": "s3a://bucket//",
    "no bucket": "s3a:///a",
    "an upper-case bucket": "s3a://Bucket/a",
    "a bucket too short": "s3a://ab/a",
    "a bucket with an underscore": "s3a://team_a/a",
    "a bucket with '..'": "s3a://a..b/a",
    "a bucket that is an IP address": "s3a://10.0.0.1/a",
    "a bucket ending in '-'": "s3a://bucket-/a",
    "a '..' segment": "s3a://bucket/a/../b",
    "a trailing '..'": "s3a://bucket/a/..",
    "a '.' segment": "s3a://bucket/./a",
    "an empty segment": "s3a://bucket/a//b",
    "a leading empty segment": "s3a://bucket//a",
}
ACCEPTED = {"a path", "a file URI", "a bucket and prefix", "a nested prefix with a trailing slash",
            "a bucket with dots"}


@pytest.mark.parametrize("case", list(URIS))
def test_the_crd_and_the_operator_judge_storage_uris_alike(case: str) -> None:
    uri = URIS[case]
    by_crd = sorted(e.detail for e in crd_errors({"uri": uri}) if e.field == "spec.storage.uri")
    assert by_crd == sorted(storage.uri_problems(uri))
    assert (not by_crd) is (case in ACCEPTED)
    assert validation.storage_uri_supported(uri) is (case in ACCEPTED)


@pytest.mark.parametrize("uri,words", [
    ("gs://bucket/a", ["storage.uri", "s3a://<bucket>/<prefix>", "storage.pvc"]),
    ("s3a://AKIAX:secret@bucket/a", ["storage.uri", "storage.s3.credentialsSecret"]),
    ("s3a://bucket", ["storage.uri", "s3a://<bucket>/<prefix>"]),
    ("s3a://Bucket/a", ["bucket", "lower-case"]),
    ("s3a://bucket/a/../b", ["'..'", "prefix"]),
])
def test_each_refusal_names_the_field_and_the_fix(uri: str, words: list[str]) -> None:
    message = " ".join(storage.uri_problems(uri))
    assert message and all(word in message for word in words), message


S3_CASES = {
    "all settings": ({"uri": ROOT, "s3": S3}, []),
    "no settings": ({"uri": ROOT, "s3": {}}, []),
    "s3 with a path": ({"uri": "/data/a", "s3": {"region": "eu-west-1"}}, ["spec.storage.s3"]),
    "s3 with a claim": ({"pvc": {"claimName": "data"}, "s3": {"credentialsSecret": "s"}}, ["spec.storage.s3"]),
    "an endpoint without a scheme": ({"uri": ROOT, "s3": {"endpoint": "minio:9000"}}, ["spec.storage.s3.endpoint"]),
    "an endpoint with credentials": ({"uri": ROOT, "s3": {"endpoint": "https://k:s@minio:9000"}},
                                     ["spec.storage.s3.endpoint"]),
    "an ftp endpoint": ({"uri": ROOT, "s3": {"endpoint": "ftp://minio"}}, ["spec.storage.s3.endpoint"]),
    "a region with spaces": ({"uri": ROOT, "s3": {"region": "eu west"}}, ["spec.storage.s3.region"]),
    "a Secret name with capitals": ({"uri": ROOT, "s3": {"credentialsSecret": "My_Secret"}},
                                    ["spec.storage.s3.credentialsSecret"]),
}


@pytest.mark.parametrize("case", list(S3_CASES))
def test_storage_s3_is_for_s3a_roots_and_well_formed(case: str) -> None:
    spec_storage, fields = S3_CASES[case]
    by_crd = sorted({e.field for e in crd_errors(spec_storage) if e.field.startswith("spec.storage")
                     and e.field != "spec.storage.uri" and "exactly one of" not in e.detail})
    assert by_crd == sorted(fields)
    assert sorted(field for field, _ in storage.s3_problems(spec_storage)) == sorted(fields)


def test_the_credentials_secret_and_endpoint_are_part_of_the_immutable_storage() -> None:
    moved = {"uri": ROOT, "s3": {**S3, "endpoint": "http://other:9000"}}
    assert any("spec.storage is immutable" in e.detail for e in crd_errors(moved, {"uri": ROOT, "s3": S3}))
    assert not crd_errors({"uri": ROOT, "s3": S3}, {"uri": ROOT, "s3": S3})


def test_the_charts_crd_copy_is_the_crd() -> None:
    chart_copy = CRD.parents[1] / "charts" / "planengine-operator" / "crds" / CRD.name
    assert chart_copy.read_text() == CRD.read_text()


# ------------------------------------------------------------------------------------------ the webhook
def job(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "planengine.io/v1alpha1", "kind": "SparkPlanJob",
            "metadata": {"name": "j", "namespace": NS, "uid": "u-1", "generation": 1},
            "spec": {"plan": {"sql": SQL}, **spec}}


def review(config: OperatorConfig, spec: dict[str, Any]) -> list[validation.Problem]:
    launcher = KubernetesLauncher(config) if config.launcher == "kubernetes" else LocalLauncher(config)
    return webhook.review("CREATE", NS, "j", job(spec), None, config, launcher.job_root)


@pytest.mark.parametrize("spec,expected", [
    ({"storage": {"uri": ROOT, "s3": S3}}, []),
    ({"storage": {"uri": ROOT}}, []),
    ({"storage": {"uri": "gs://bucket/a"}}, [("spec.storage.uri", "StorageUnsupported")]),
    ({"storage": {"uri": "s3a://bucket"}}, [("spec.storage.uri", "StorageUnsupported")]),
    ({"storage": {"pvc": {"claimName": "data"}, "s3": {"region": "eu-west-1"}}},
     [("spec.storage.s3", "StorageUnsupported")]),
    ({"storage": {"uri": ROOT, "s3": {"endpoint": "minio:9000"}}}, [("spec.storage.s3.endpoint", "InvalidField")]),
])
def test_the_webhook_admits_s3a_roots_on_the_kubernetes_launcher(spec, expected) -> None:
    assert [(p.field, p.reason) for p in review(KUBERNETES, spec)] == expected


def test_a_uri_with_credentials_is_refused_without_repeating_them() -> None:
    found = review(KUBERNETES, {"storage": {"uri": "s3a://AKIAX:pa55word@bucket/a"}})
    assert [(p.field, p.reason) for p in found] == [("spec.storage.uri", "StorageUnsupported")]
    assert "credentialsSecret" in found[0].message
    assert "pa55word" not in found[0].message and "AKIAX" not in found[0].message


def test_the_local_launcher_refuses_an_s3a_root_with_a_reason() -> None:
    found = review(LOCAL, {"storage": {"uri": ROOT}})
    assert [(p.field, p.reason) for p in found] == [("spec.storage.uri", "StorageUnsupported")]
    assert "Kubernetes launcher" in found[0].message
    launcher = LocalLauncher(LOCAL)
    ref = JobRef(NS, "j", "u-1", launcher.job_root(NS, "j", {"storage": {"uri": ROOT}}), job({}))
    assert ref.job_root == ROOT  # not a relative directory s3a:/team-a-jobs/clicks under the operator's cwd
    for call in (launcher.run_tool(ref, "0.1", "check", ["check"]), launcher.read_file(ref, "plan.json"),
                 launcher.write_file(ref, "plan.json", "{}"), launcher.launch(ref, "0.1", "r1", ["run"])):
        with pytest.raises(LaunchError) as refused:
            asyncio.run(call)
        assert refused.value.reason == "StorageUnsupported" and refused.value.permanent


# ------------------------------------------------------------------------------------------ the pods
SPEC = {"executor": {"instances": 2}, "storage": {"uri": ROOT, "s3": S3}}
SPEC_IRSA = {"executor": {"instances": 2}, "storage": {"uri": ROOT, "s3": {"region": "eu-west-1"}}}
PVC_SPEC = {"executor": {"instances": 2}, "storage": {"pvc": {"claimName": "data"}}}


def pods(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every pod kind the launcher builds for a job, by kind."""
    root = builders.job_root_for_pod(spec, NS, "clicks")
    argv = builders.run_argv(f"{builders.PLAN_MOUNT}/plan.json", root, None)
    driver = builders.build_driver_pod(job_name="clicks", namespace=NS, spec=spec, image="i", run_id="r1", argv=argv)
    standby = builders.build_driver_pod(job_name="clicks", namespace=NS, spec=spec, image="i", run_id="r2",
                                        argv=[*argv, "--standby"], role=builders.ROLE_STANDBY)
    executor_cm = builders.build_executor_configmap("clicks", spec)
    executor = yaml.safe_load(executor_cm["data"][builders.EXECUTOR_TEMPLATE_KEY])
    tool = builders.build_tool_pod(job_name="clicks", key="check-0.1", spec=spec, image="i",
                                   argv=["snapshots", "list", "--job-root", root], namespace=NS, job_root=root)
    return {"driver": driver, "standby": standby, "executor": executor, "tool": tool}


def env_of(pod: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in pod["spec"]["containers"][0].get("env") or []}


def test_the_job_root_of_every_pod_is_the_uri_as_written() -> None:
    assert builders.job_root_for_pod(SPEC, NS, "clicks") == ROOT
    assert builders.storage_problem(SPEC) is None
    args = pods(SPEC)["driver"]["spec"]["containers"][0]["args"]
    assert args[args.index("--job-root") + 1] == ROOT


@pytest.mark.parametrize("kind", ["driver", "standby", "executor", "tool"])
def test_every_pod_reaches_the_bucket_with_secret_references_and_no_volume(kind: str) -> None:
    pod = pods(SPEC)[kind]
    assert not [v for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v or v["name"] == "job-root"]
    assert not [m for m in pod["spec"]["containers"][0]["volumeMounts"] if m["name"] == "job-root"]
    env = env_of(pod)
    assert env["PLANENGINE_S3_ENDPOINT"] == {"name": "PLANENGINE_S3_ENDPOINT", "value": S3["endpoint"]}
    assert env["PLANENGINE_S3_REGION"]["value"] == "eu-west-1"
    assert env["PLANENGINE_S3_PATH_STYLE"]["value"] == "true"
    for name, key in (("AWS_ACCESS_KEY_ID", "accessKeyId"), ("AWS_SECRET_ACCESS_KEY", "secretAccessKey")):
        assert env[name] == {"name": name, "valueFrom": {"secretKeyRef": {"name": "clicks-s3", "key": key}}}
    assert env["AWS_SESSION_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "clicks-s3", "key": "sessionToken",
                                                                     "optional": True}
    assert "serviceAccountName" not in pod["spec"] or kind in ("driver", "standby")


@pytest.mark.parametrize("kind", ["driver", "standby", "executor", "tool"])
def test_without_a_secret_the_service_account_supplies_the_credentials(kind: str) -> None:
    pod = pods(SPEC_IRSA)[kind]
    env = env_of(pod)
    assert not [name for name in env if name.startswith("AWS_")]
    assert env["PLANENGINE_S3_REGION"]["value"] == "eu-west-1" and "PLANENGINE_S3_ENDPOINT" not in env
    # One ServiceAccount (the drivers', where IRSA's role annotation goes) for every pod that touches the bucket;
    # executors and tools still get no API token.
    assert pod["spec"]["serviceAccountName"] == builders.DRIVER_SERVICE_ACCOUNT
    if kind in ("executor", "tool"):
        assert pod["spec"]["automountServiceAccountToken"] is False


@pytest.mark.parametrize("kind", ["driver", "standby", "executor", "tool"])
def test_a_claim_job_gets_no_store_settings(kind: str) -> None:
    pod = pods(PVC_SPEC)[kind]
    assert not [name for name in env_of(pod) if name.startswith(("AWS_", "PLANENGINE_S3_"))]
    assert any("persistentVolumeClaim" in v for v in pod["spec"]["volumes"])


def test_the_pods_validate_against_kubernetes_schemas() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for spec in (SPEC, SPEC_IRSA):
        for manifest in (*pods(spec).values(), builders.build_executor_configmap("clicks", spec)):
            kubernetes_validate.validate(manifest, "1.30", strict=True)


# ------------------------------------------------------------------------------------------ the launcher, end to end
@pytest.fixture
def api():
    running = run_in_thread([CRD])
    kube.configure(kopf.ConnectionInfo(server=running.url, token="t"))
    yield running
    running.stop()


def make_job(api, name: str, spec_storage: dict[str, Any],
             plan: dict[str, Any] | None = None) -> tuple[JobRef, JobView]:
    body = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "SparkPlanJob", "metadata": {"name": name, "namespace": NS},
            "spec": {"engineVersion": "0.1", "plan": plan or {"sql": SQL}, "storage": spec_storage,
                     "executor": {"instances": 1}}}
    stored = api.call(lambda a: a._create(a.resources[(GROUP, PLURAL)], NS, body))
    root = KubernetesLauncher(KUBERNETES).job_root(NS, name, stored["spec"])
    job = JobRef(NS, name, stored["metadata"]["uid"], root, stored)
    view = JobView(name=name, namespace=NS, generation=1, spec=JobSpec.model_validate(stored["spec"]),
                   status=JobStatus(), config=KUBERNETES, job_root=root, now=datetime.now(UTC), new_run_id="r1")
    return job, view


def answer_tool(api, prefix: str, call, exit_code: int, log: str) -> tuple[Any, dict[str, Any]]:
    """Run ``call`` (a coroutine using the launcher) while playing the kubelet for its one tool pod."""
    async def run():
        try:
            return await call
        finally:
            await kube.close()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(asyncio.run, run())
        deadline = time.monotonic() + 30
        while not (tools := [p for p in api.list("", "pods", NS) if p["metadata"]["name"].startswith(prefix)]):
            assert time.monotonic() < deadline and not pending.done(), f"no {prefix} pod"
            time.sleep(0.05)
        finish_pod(api, tools[0]["metadata"]["name"], exit_code, log)
        try:
            return pending.result(30), tools[0]
        except LaunchError as exc:
            return exc, tools[0]


PLAN = {"formatVersion": 1, "engineVersion": "0.1", "planId": "b" * 64, "nodes": [], "edges": []}


def test_a_job_root_file_on_a_bucket_is_read_with_planengine_job_root_read(api) -> None:
    job, _ = make_job(api, "s1", {"uri": ROOT, "s3": S3})
    launcher = KubernetesLauncher(KUBERNETES)
    answer = json.dumps({"key": "runs/r1/plan.json", "exists": True, "text": json.dumps(PLAN)})
    log = "WARN botocore: a warning on stderr\n" + answer + "\n"
    text, pod = answer_tool(api, "s1-read-", launcher.read_file(job, "runs/r1/plan.json"), 0, log)
    assert json.loads(text) == PLAN
    container = pod["spec"]["containers"][0]
    assert "command" not in container  # the image's entrypoint, planengine; not cat
    assert container["args"] == ["job-root", "read", "runs/r1/plan.json", "--job-root", ROOT, "--json"]
    assert env_of(pod)["AWS_SECRET_ACCESS_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "clicks-s3"
    assert not [v for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v]


def test_a_missing_file_is_none_and_a_failed_store_is_an_error(api) -> None:
    job, _ = make_job(api, "s2", {"uri": ROOT, "s3": S3})
    launcher = KubernetesLauncher(KUBERNETES)
    missing = json.dumps({"key": "runs/r1/plan.json", "exists": False})
    assert answer_tool(api, "s2-read-", launcher.read_file(job, "runs/r1/plan.json"), 0, missing + "\n")[0] is None
    failed, _ = answer_tool(api, "s2-read-", launcher.read_file(job, "runs/r1/plan.json"), 2,
                            "planengine: error: bucket team-a-jobs does not exist\n")
    assert isinstance(failed, LaunchError) and failed.reason == "JobRootReadFailed"
    assert "bucket team-a-jobs does not exist" in str(failed)


def test_a_claim_job_root_is_still_read_with_cat(api) -> None:
    job, _ = make_job(api, "s3", {"pvc": {"claimName": "jobs"}})
    launcher = KubernetesLauncher(KUBERNETES)
    text, pod = answer_tool(api, "s3-read-", launcher.read_file(job, "runs/r1/plan.json"), 0, json.dumps(PLAN))
    assert json.loads(text) == PLAN
    assert pod["spec"]["containers"][0]["command"] == ["cat", f"{job.job_root}/runs/r1/plan.json"]


def test_a_replaced_plan_is_written_with_planengine_job_root_write(api) -> None:
    """A stateless recompile replaces the plan in force: on a bucket a tool pod runs ``job-root write`` with the
    new plan as its input file, before ``<job>-plan`` changes."""
    job, view = make_job(api, "s4", {"uri": ROOT, "s3": S3}, {"compiledPlanRef": {"name": "s4-other"}})
    old_plan = {**PLAN, "planId": "a" * 64}
    for name, plan in (("s4-plan", old_plan), ("s4-other", PLAN)):
        api.call(lambda a, n=name, p=plan: a._create(a.resources[("", "configmaps")], NS, {
            "metadata": {"name": n}, "data": {"plan.json": json.dumps(p)}}))
    reconciler = Reconciler(KUBERNETES, KubernetesLauncher(KUBERNETES), fleet=None)
    step = reconciler._execute(job, view, Action("compile", {"engineVersion": "0.1", "force": True}))
    result, pod = answer_tool(api, "s4-write-", step, 0, '{"key": "plan.json", "written": true}\n')
    assert result.ok and result.values["planId"] == PLAN["planId"], result
    container = pod["spec"]["containers"][0]
    assert container["args"] == ["job-root", "write", "plan.json", "--job-root", ROOT,
                                 "--from", f"{builders.TOOL_INPUT_MOUNT}/content"]
    assert json.loads(api.get("", "configmaps", NS, "s4-plan")["data"]["plan.json"]) == PLAN


def test_no_secret_value_reaches_anything_the_operator_writes(api) -> None:
    """The driver, its Service, the executor template and the job: the Secret's name is there, its values never
    (the operator never reads the Secret; the kubelet does)."""
    values = {"accessKeyId": ACCESS_KEY, "secretAccessKey": SECRET_KEY, "sessionToken": SESSION_TOKEN}
    api.call(lambda a: a._create(a.resources[("", "secrets")], NS, {
        "metadata": {"name": "clicks-s3"}, "type": "Opaque",
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}}))
    job, view = make_job(api, "s5", {"uri": ROOT, "s3": S3})
    api.call(lambda a: a._create(a.resources[("", "configmaps")], NS, {
        "metadata": {"name": "s5-plan"}, "data": {"plan.json": json.dumps(PLAN)}}))
    reconciler = Reconciler(KUBERNETES, KubernetesLauncher(KUBERNETES), fleet=None)

    async def launch():
        try:
            return await reconciler._launch(job, view, {"engineVersion": "0.1", "runId": "r1"})
        finally:
            await kube.close()

    asyncio.run(launch())
    driver = api.get("", "pods", NS, builders.driver_pod_name("s5", "r1"))
    assert env_of(driver)["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"]["name"] == "clicks-s3"
    args = driver["spec"]["containers"][0]["args"]
    assert args[args.index("--job-root") + 1] == ROOT
    written = json.dumps([obj for key, obj in api.call(lambda a: list(a.objects.items()))
                          if key[1] != "secrets"])
    assert "clicks-s3" in written and "secretKeyRef" in written
    for value in values.values():
        assert value not in written and base64.b64encode(value.encode()).decode() not in written
