"""The planengine-jobs chart (SparkPlanJobs from values), rendered by the real helm.

Rendered SparkPlanJobs are created in the API emulator with ``fieldValidation=Strict``: the CRD's structural
schema, defaults, OpenAPI validation and CEL rules, as an API server admits them (an unknown field is an error,
not a silent prune). ConfigMaps are checked against the Kubernetes 1.35 schemas.

Why the emulator and not the real API server: a fast-tier test (no control plane in that tier). The GitOps
scenarios of ``tests/operator/e2e/test_gitops.py`` apply the chart's rendered jobs to the real API server.
"""

from __future__ import annotations

import importlib.util
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.chart.test_chart import KUBERNETES_VERSION, uncommented_keys

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "planengine-jobs"
CRD = REPO / "crds" / "sparkplanjobs.planengine.io.yaml"
EXAMPLE = yaml.safe_load((CHART / "ci" / "example-values.yaml").read_text())
SQL = "CREATE TABLE t (a INT) WITH ('connector' = 'datagen');\nINSERT INTO s SELECT a FROM t;\n"


@pytest.fixture
def template(helm_run):
    """template(values, namespace="apps") -> (returncode, manifests or stderr)."""

    def _template(values: dict[str, Any], namespace: str = "apps") -> list[dict[str, Any]]:
        result = helm_run("template", "r", str(CHART), "--namespace", namespace, "--kube-version",
                          KUBERNETES_VERSION, values=values)
        assert result.returncode == 0, result.stderr
        return [doc for doc in yaml.safe_load_all(result.stdout) if doc]

    return _template


@pytest.fixture
def template_fails(helm_run):
    def _fails(values: dict[str, Any]) -> str:
        result = helm_run("template", "r", str(CHART), "--namespace", "apps", values=values)
        assert result.returncode != 0, f"helm accepted {values}"
        return result.stderr

    return _fails


@pytest.fixture(scope="module")
def kapi():
    from tests.operator.kapi.server import run_in_thread

    api = run_in_thread([CRD])
    yield api
    api.stop()


def create_strictly(api, manifest: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """POST to the emulated API server with fieldValidation=Strict (a namespace is created when missing)."""

    def post(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(api.url + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as rsp:
                return rsp.status, json.loads(rsp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    namespace = manifest["metadata"]["namespace"]
    post("/api/v1/namespaces", {"metadata": {"name": namespace}})
    group_version = manifest["apiVersion"]
    plural = {"SparkPlanJob": "sparkplanjobs", "ConfigMap": "configmaps"}[manifest["kind"]]
    base = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    return post(f"{base}/namespaces/{namespace}/{plural}?fieldValidation=Strict", manifest)


def jobs(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == "SparkPlanJob"}


# ---------------------------------------------------------------------------------------------- lint and admission
def test_helm_lint_strict_passes_with_the_example_and_with_defaults(helm_run):
    for values in (EXAMPLE, {}):
        result = helm_run("lint", "--strict", str(CHART), values=values)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


def test_rendered_objects_are_admitted_by_the_api_server_strictly(template, kapi):
    manifests = template(EXAMPLE)
    assert sorted((m["kind"], m["metadata"]["namespace"], m["metadata"]["name"]) for m in manifests) == [
        ("ConfigMap", "apps", "clicks-sql"), ("SparkPlanJob", "apps", "clicks"),
        ("SparkPlanJob", "compliance", "audit")]
    for manifest in manifests:
        if manifest["kind"] == "ConfigMap":
            kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
        code, answer = create_strictly(kapi, manifest)
        assert code == 201, answer


def test_strict_admission_is_not_a_no_op(template, kapi):
    """Guard: a field the CRD lacks and a value its CEL rules refuse are rejected by the same path."""
    job = jobs(template(EXAMPLE))["audit"]
    job["metadata"]["name"] = "audit-typo"
    job["spec"]["engineVersionn"] = "0.2"
    code, answer = create_strictly(kapi, job)
    assert code == 400 and answer["message"] == 'strict decoding error: unknown field "spec.engineVersionn"'
    job = jobs(template(EXAMPLE))["audit"]
    job["metadata"]["name"] = "audit-two-plans"
    job["spec"]["plan"]["configMapRef"] = {"name": "x"}
    code, answer = create_strictly(kapi, job)
    assert code == 422 and "set exactly one of plan.sql" in json.dumps(answer)


# ---------------------------------------------------------------------------------------------- what is rendered
def test_script_and_catalog_become_a_configmap_the_job_references(template):
    manifests = template(EXAMPLE)
    clicks = jobs(manifests)["clicks"]
    (configmap,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    name = configmap["metadata"]["name"]
    assert clicks["spec"]["plan"] == {"configMapRef": {"name": name, "key": "script.sql"}}
    assert clicks["spec"]["catalog"] == {"configMapRef": {"name": name, "key": "catalog.sql"}}
    assert configmap["data"] == {"script.sql": EXAMPLE["jobs"]["clicks"]["script"],
                                 "catalog.sql": EXAMPLE["jobs"]["clicks"]["catalog"]}  # byte for byte
    assert configmap["metadata"]["labels"]["planengine.io/job"] == "clicks"
    assert clicks["metadata"]["labels"]["team"] == "web"


def test_an_edited_script_changes_only_the_configmap(template):
    """GitOps: a new script is a new ConfigMap content under the same SparkPlanJob (the operator detects it)."""
    edited = json.loads(json.dumps(EXAMPLE))
    edited["jobs"]["clicks"]["script"] = EXAMPLE["jobs"]["clicks"]["script"].replace("1' MINUTE", "5' MINUTE")
    before, after = template(EXAMPLE), template(edited)
    assert jobs(before) == jobs(after)
    configmaps = [next(m for m in rendered if m["kind"] == "ConfigMap")["data"] for rendered in (before, after)]
    assert configmaps[0]["script.sql"] != configmaps[1]["script.sql"]


def test_job_defaults_merge_under_each_job_and_the_job_wins_even_with_false_and_zero(template):
    rendered = jobs(template(EXAMPLE))
    clicks, audit = rendered["clicks"]["spec"], rendered["audit"]["spec"]
    assert clicks["engineVersion"] == "0.1" and audit["engineVersion"] == "0.2"
    assert clicks["rollback"] == {"enabled": True, "minBatches": 3}
    assert audit["rollback"] == {"enabled": False, "minBatches": 3}  # false beats a default of true
    assert audit["snapshots"] == {"interval": "0s", "maxCount": 24}  # merged key by key
    assert clicks["executor"] == {"instances": 2} and "executor" not in audit
    assert rendered["clicks"]["metadata"]["namespace"] == "apps"
    assert rendered["audit"]["metadata"]["namespace"] == "compliance"


def test_disabled_jobs_and_common_labels(template):
    values = {"commonLabels": {"env": "prod"}, "commonAnnotations": {"owner": "data"},
              "jobs": {"on": {"script": SQL}, "off": {"enabled": False, "script": SQL}}}
    manifests = template(values)
    assert sorted(m["metadata"]["name"] for m in manifests) == ["on", "on-sql"]  # quoted: not YAML 1.1's true
    assert all(m["metadata"]["labels"]["env"] == "prod" for m in manifests)
    assert jobs(manifests)["on"]["metadata"]["annotations"] == {"owner": "data"}
    assert template({}) == []


# ---------------------------------------------------------------------------------------------- refused values
@pytest.mark.parametrize(("values", "complaint"), [
    ({"jobs": {"j": {"scrpt": SQL}}}, "scrpt"),
    ({"jobs": {"j": {"script": SQL, "spec": {"upgradMode": "stateless"}}}}, "upgradMode"),
    ({"jobs": {"j": {"script": SQL, "spec": {"driver": {"memroy": "2Gi"}}}}}, "memroy"),
    ({"jobDefaults": {"rollback": {"enabeld": False}}}, "enabeld"),
    ({"jobs": {"j": {"script": SQL, "spec": {"engineVersion": 0.2}}}}, "engineVersion"),
    ({"jobs": {"j": {"script": SQL, "spec": {"engineVersion": "latest"}}}}, "engineVersion"),
    ({"jobs": {"j": {"script": SQL, "spec": {"upgradeMode": "sometimes"}}}}, "upgradeMode"),
    ({"jobs": {"Clicks_1": {"script": SQL}}}, "Clicks_1"),
    ({"jobDefaults": {"storage": {"uri": "/data"}}}, "storage"),
    ({"jobs": {"j": {"script": SQL, "spec": {"snapshots": {"interval": "hourly"}}}}}, "interval"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_values_schema_rejects_typos_and_bad_values(template_fails, values, complaint):
    stderr = template_fails(values)
    assert "schema" in stderr and complaint in stderr, stderr


@pytest.mark.parametrize(("job", "complaint"), [
    ({"script": SQL, "spec": {"plan": {"sql": SQL}}}, "jobs.j: give either script or spec.plan"),
    ({"spec": {"engineVersion": "0.1"}}, "jobs.j: the job has no program"),
    ({"script": SQL, "catalog": SQL, "spec": {"catalog": {"configMapRef": {"name": "c"}}}},
     "jobs.j: give either catalog or spec.catalog"),
])
def test_a_job_needs_exactly_one_program_source(template_fails, job, complaint):
    assert complaint in template_fails({"jobs": {"j": job}})


# ---------------------------------------------------------------------------------------------- the chart's own rules
def test_values_schema_is_generated_from_the_crd():
    spec = importlib.util.spec_from_file_location("generate_schema", CHART / "hack" / "generate_schema.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (CHART / "values.schema.json").read_text() == module.render(), (
        "values.schema.json is stale: run python charts/planengine-jobs/hack/generate_schema.py")
    crd = yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    generated = json.loads((CHART / "values.schema.json").read_text())["definitions"]["jobSpec"]
    assert set(generated["properties"]) == set(crd["properties"])


def test_schema_closes_every_object_level():
    schema = json.loads((CHART / "values.schema.json").read_text())
    open_objects = []

    def walk(node, path):
        if not isinstance(node, dict):
            return
        if node.get("type") == "object" and "properties" in node and node.get("additionalProperties") is not False:
            open_objects.append(path)
        for key, child in node.get("properties", {}).items():
            walk(child, f"{path}.{key}")
        for key, child in node.get("definitions", {}).items():
            walk(child, f"#{key}")
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{path}.*")
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{path}[]")

    walk(schema, "")
    assert open_objects == []


def test_every_values_key_has_a_comment_and_templates_use_the_helpers():
    assert uncommented_keys((CHART / "values.yaml").read_text()) == []
    for template in (CHART / "templates").glob("*.yaml"):
        text = template.read_text()
        assert 'include "planengine-jobs.labels"' in text, template.name
        assert "app.kubernetes.io/name:" not in text, template.name
        component, _, kind = template.stem.partition("-")
        assert component == "job" and kind in {"sparkplanjob", "configmap"}, template.name


def test_notes_say_how_to_watch_the_jobs(helm_run):
    result = helm_run("install", "r", str(CHART), "--namespace", "apps", "--dry-run=client", values=EXAMPLE)
    assert result.returncode == 0, result.stderr
    notes = result.stdout.split("NOTES:", 1)[1]
    assert "audit, clicks" in notes and "kubectl get spj -n apps -l app.kubernetes.io/instance=r" in notes
