"""examples/k8s: every manifest is valid against the CRD (SparkPlanJob) or the Kubernetes schemas, and every job
can start on the chart's default (Kubernetes) launcher.

The schemas here are checked offline (jsonschema for the CRD, without its CEL rules); tests/docs/test_docs_on_cluster.py
applies the same files to a real API server, which evaluates the CEL rules too.
"""

from __future__ import annotations

from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from planengine_operator.builders import storage_problem

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "k8s"
CRD = yaml.safe_load((REPO / "crds" / "sparkplanjobs.planengine.io.yaml").read_text())
KUBERNETES_VERSION = "1.35.0"


def example_manifests() -> list[tuple[str, dict]]:
    return [
        (f"{path.name}#{index}", doc)
        for path in sorted(EXAMPLES.glob("*.yaml"))
        for index, doc in enumerate(yaml.safe_load_all(path.read_text()))
        if doc
    ]


def crd_validator() -> jsonschema.Draft7Validator:
    (version,) = [v for v in CRD["spec"]["versions"] if v["name"] == "v1alpha1"]
    schema = _closed(version["schema"]["openAPIV3Schema"])
    return jsonschema.Draft7Validator(schema)


def _closed(node: dict) -> dict:
    """The CRD schema as JSON Schema, with structural pruning turned into errors (unknown field = typo)."""
    node = dict(node)
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return node
    if "properties" in node:
        node["properties"] = {k: _closed(v) for k, v in node["properties"].items()}
        node.setdefault("additionalProperties", False)
    if isinstance(node.get("additionalProperties"), dict):
        node["additionalProperties"] = _closed(node["additionalProperties"])
    if isinstance(node.get("items"), dict):
        node["items"] = _closed(node["items"])
    return node


def spark_plan_jobs() -> list[tuple[str, dict]]:
    return [(name, doc) for name, doc in example_manifests() if doc["kind"] == "SparkPlanJob"]


def test_there_are_examples():
    kinds = [doc["kind"] for _, doc in example_manifests()]
    assert kinds.count("SparkPlanJob") >= 1 and "ConfigMap" in kinds


@pytest.mark.parametrize(("name", "job"), spark_plan_jobs(), ids=[n for n, _ in spark_plan_jobs()])
def test_spark_plan_job_examples_match_the_crd(name, job):
    assert job["apiVersion"] == f"{CRD['spec']['group']}/v1alpha1"
    assert job["kind"] == CRD["spec"]["names"]["kind"]
    errors = sorted(crd_validator().iter_errors(job), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{'.'.join(map(str, e.path))}: {e.message}" for e in errors)
    # The CEL rule "exactly one of plan.sql, plan.configMapRef, plan.compiledPlanRef" (not checked by jsonschema).
    assert len(set(job["spec"]["plan"]) & {"sql", "configMapRef", "compiledPlanRef"}) == 1
    assert job["spec"]["engineVersion"] in yaml.safe_load(
        (REPO / "charts" / "planengine-operator" / "values.yaml").read_text()
    )["config"]["engines"], "examples should run on an engine the chart's default catalog has"


def test_crd_validation_catches_a_misspelled_field():
    _, job = spark_plan_jobs()[0]
    broken = {**job, "spec": {**job["spec"], "engineVersoin": "0.2"}}
    assert any("engineVersoin" in e.message for e in crd_validator().iter_errors(broken))


def test_catalog_references_resolve_to_example_configmaps():
    configmaps = {doc["metadata"]["name"]: doc for _, doc in example_manifests() if doc["kind"] == "ConfigMap"}
    referenced = 0
    for _, job in spark_plan_jobs():
        ref = job["spec"].get("catalog", {}).get("configMapRef")
        if ref:
            referenced += 1
            assert ref["name"] in configmaps
            assert ref.get("key", "catalog.sql") in configmaps[ref["name"]]["data"]
    assert referenced >= 1


@pytest.mark.parametrize(("name", "job"), spark_plan_jobs(), ids=[n for n, _ in spark_plan_jobs()])
def test_spark_plan_job_examples_have_the_storage_the_kubernetes_launcher_needs(name, job):
    """The chart's default launcher refuses a job without spec.storage.pvc (StorageRequired) before anything runs;
    an example without it failed in a user's first five minutes (issue 22)."""
    assert storage_problem(job["spec"]) is None
    claims = {doc["metadata"]["name"] for _, doc in example_manifests() if doc["kind"] == "PersistentVolumeClaim"}
    assert job["spec"]["storage"]["pvc"]["claimName"] in claims, "the claim should be one of the examples"


@pytest.mark.parametrize(
    ("name", "doc"),
    [(n, d) for n, d in example_manifests() if d["kind"] != "SparkPlanJob"],
    ids=[n for n, d in example_manifests() if d["kind"] != "SparkPlanJob"],
)
def test_other_examples_validate_against_kubernetes_schemas(name, doc):
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_inline_sql_is_a_complete_pipeline():
    for _, job in spark_plan_jobs():
        sql = job["spec"]["plan"].get("sql", "")
        if sql:
            assert "INSERT INTO" in sql.upper()
    inline = [job["spec"]["plan"]["sql"] for _, job in spark_plan_jobs() if "sql" in job["spec"]["plan"]]
    assert any("'connector' = 'datagen'" in sql and "'connector' = 'print'" in sql for sql in inline)

