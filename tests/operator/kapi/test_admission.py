"""The emulator admits writes like the API server: pruning, defaults, schema, CEL, status rules, conflicts.

Each test sends what a client would send over HTTP and checks the answer a real API server gives (status
code, Status reason, ``details.causes[].field``, the stored object). A small ``widgets`` CRD (created through
the API, as ``kubectl apply -f crd.yaml`` would) covers the schema features our own CRD does not use.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.operator.kapi import schema
from tests.operator.kapi.server import run_in_thread

REPO = Path(__file__).resolve().parents[3]
CRD = REPO / "crds" / "sparkplanjobs.planengine.io.yaml"
KUBECTL = REPO / ".tools" / "bin" / "kubectl"
JOBS = "/apis/planengine.io/v1alpha1/namespaces/default/sparkplanjobs"
WIDGETS = "/apis/test.io/v1/namespaces/default/widgets"
MERGE = "application/merge-patch+json"

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "x-kubernetes-validations": [
                {"rule": "self.size <= self.limit", "message": "size must not exceed limit",
                 "fieldPath": ".size"},
                {"rule": "!has(oldSelf.owner) || self.owner == oldSelf.owner", "reason": "FieldValueForbidden",
                 "message": "owner is immutable"},
                {"rule": "self.size != 13", "messageExpression": "'size ' + string(self.size) + ' is unlucky'"},
            ],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 100},
                "limit": {"type": "integer", "default": 50},
                "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
                "owner": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
                "port": {"x-kubernetes-int-or-string": True},
                "when": {"type": "string", "format": "date-time"},
                "note": {"type": "string", "nullable": True},
                "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "minLength": 1}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"], "properties": {
                              "name": {"type": "string"}, "number": {"type": "integer"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"known": {"type": "integer"}}},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}
WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.test.io"},
    "spec": {"group": "test.io", "scope": "Namespaced",
             "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": WIDGET_SCHEMA}}]},
}


@pytest.fixture(scope="module")
def api():
    running = run_in_thread([CRD])
    code, body = call(running, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGET_CRD)
    assert code == 201, body
    yield running
    running.stop()


def call(api, method: str, path: str, body: Any = None, ctype: str = "application/json") -> tuple[int, Any]:
    code, answer, _ = call_with_headers(api, method, path, body, ctype)
    return code, answer


def call_with_headers(api, method: str, path: str, body: Any = None,
                      ctype: str = "application/json") -> tuple[int, Any, list[str]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(api.url + path, data=data, method=method, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(request, timeout=10) as rsp:
            return rsp.status, json.loads(rsp.read() or b"null"), rsp.headers.get_all("Warning") or []
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null"), exc.headers.get_all("Warning") or []


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "test.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": 1, **spec}}


def causes(answer: dict[str, Any]) -> dict[str, str]:
    return {c["field"]: c["reason"] for c in answer["details"]["causes"]}


# ------------------------------------------------------------------------------------------ pruning
def test_unknown_fields_are_pruned_and_preserved_where_the_schema_says(api):
    body = widget("p1", bogus=1, free={"known": 1, "anything": {"deep": [1]}}, labels={"a": "b"})
    body["extra"] = "top"
    code, stored, warnings = call_with_headers(api, "POST", WIDGETS, body)
    assert code == 201, stored
    assert "bogus" not in stored["spec"] and "extra" not in stored
    assert stored["spec"]["free"] == {"known": 1, "anything": {"deep": [1]}}  # preserve-unknown-fields
    assert stored["spec"]["labels"] == {"a": "b"}  # additionalProperties: a map, not unknown fields
    assert sorted(warnings) == ['299 - "unknown field \\"extra\\""', '299 - "unknown field \\"spec.bogus\\""']


def test_field_validation_strict_refuses_unknown_fields_and_ignore_is_silent(api):
    code, answer = call(api, "POST", WIDGETS + "?fieldValidation=Strict", widget("p2", bogus=1))
    assert code == 400 and answer["reason"] == "BadRequest"
    assert answer["message"] == 'strict decoding error: unknown field "spec.bogus"'
    code, _, warnings = call_with_headers(api, "POST", WIDGETS + "?fieldValidation=Ignore", widget("p2", bogus=1))
    assert code == 201 and warnings == []


def test_null_is_pruned_unless_nullable_and_int_or_string_takes_both(api):
    code, stored = call(api, "POST", WIDGETS, widget("n1", owner=None, note=None, port="http"))
    assert code == 201, stored
    assert "owner" not in stored["spec"] and stored["spec"]["note"] is None and stored["spec"]["port"] == "http"
    code, stored = call(api, "PATCH", f"{WIDGETS}/n1", {"spec": {"port": 8080}}, MERGE)
    assert code == 200 and stored["spec"]["port"] == 8080
    code, answer = call(api, "PATCH", f"{WIDGETS}/n1", {"spec": {"port": True}}, MERGE)
    assert code == 422 and causes(answer) == {"spec.port": "FieldValueTypeInvalid", "": "FieldValueInvalid"}


def test_status_fields_outside_the_schema_are_pruned_on_the_status_subresource(api):
    """What the state machine used to write into status.operation and lose on a real cluster."""
    call(api, "POST", JOBS, {"metadata": {"name": "s1"}, "spec": {"plan": {"sql": "x"}}})
    code, stored = call(api, "PATCH", f"{JOBS}/s1/status", {"status": {
        "phase": "Upgrading", "operation": {"type": "Upgrade", "step": "Stop", "notInTheCrd": "lost"}}}, MERGE)
    assert code == 200, stored
    assert stored["status"]["operation"] == {"type": "Upgrade", "step": "Stop"}


# ------------------------------------------------------------------------------------------ defaults
def test_defaults_fill_absent_fields_and_nested_defaults(api):
    code, stored = call(api, "POST", WIDGETS, widget("d1"))
    assert code == 201 and stored["spec"]["limit"] == 50 and stored["spec"]["color"] == "red"
    code, job = call(api, "POST", JOBS, {"metadata": {"name": "d2"}, "spec": {
        "plan": {"configMapRef": {"name": "script"}}, "driver": {}}})
    assert code == 201, job
    assert job["spec"]["plan"]["configMapRef"]["key"] == "script.sql"
    assert job["spec"]["driver"] == {"cores": 1, "memory": "1Gi"}
    assert (job["spec"]["upgradeMode"], job["spec"]["state"]) == ("snapshot", "running")
    assert "executor" not in job["spec"]  # defaults apply inside objects that are there, never create them


# ------------------------------------------------------------------------------------------ schema validation
@pytest.mark.parametrize("spec,field,reason,words", [
    ({"size": "big"}, "spec.size", "FieldValueTypeInvalid", 'spec.size in body must be of type integer: "string"'),
    ({"size": 0}, "spec.size", "FieldValueInvalid", "should be greater than or equal to 1"),
    ({"size": 101}, "spec.size", "FieldValueInvalid", "should be less than or equal to 100"),
    ({"ratio": 0}, "spec.ratio", "FieldValueInvalid", "should be greater than 0"),
    ({"owner": "abcdefghi"}, "spec.owner", "FieldValueTooLong", "may not be more than 8 bytes"),
    ({"owner": "Ab"}, "spec.owner", "FieldValueInvalid", "should match '^[a-z]+$'"),
    ({"color": "green"}, "spec.color", "FieldValueNotSupported", 'supported values: "red", "blue"'),
    ({"tags": ["a", "b", "c"]}, "spec.tags", "FieldValueTooMany", "must have at most 2 items"),
    ({"tags": [""]}, "spec.tags[0]", "FieldValueInvalid", "should be at least 1 chars long"),
    ({"when": "yesterday"}, "spec.when", "FieldValueInvalid", 'must be of type date-time: "yesterday"'),
    ({"ports": [{"name": "a"}, {"name": "a"}]}, "spec.ports[1]", "FieldValueDuplicate",
     'Duplicate value: {"name":"a"}'),
    ({"ports": [{"number": 1}]}, "spec.ports[0].name", "FieldValueRequired", "Required value"),
    ({"labels": {"a": 1}}, "spec.labels[a]", "FieldValueTypeInvalid", "must be of type string"),
])
def test_schema_violations_are_422_invalid_with_the_field_path(api, spec, field, reason, words):
    body = widget("bad", **spec)
    code, answer = call(api, "POST", WIDGETS, body)
    assert code == 422 and answer["reason"] == "Invalid", answer
    assert answer["details"]["kind"] == "Widget" and answer["details"]["group"] == "test.io"
    assert causes(answer)[field] == reason
    assert words in answer["message"] and answer["message"].startswith('Widget.test.io "bad" is invalid: ')
    assert call(api, "GET", f"{WIDGETS}/bad")[0] == 404  # nothing stored


def test_required_fields_and_several_errors_at_once(api):
    code, answer = call(api, "POST", JOBS, {"metadata": {"name": "r1"}, "spec": {
        "upgradeMode": "fast", "driver": {"cores": 0}}})
    assert code == 422
    assert causes(answer) == {"spec.plan": "FieldValueRequired", "spec.upgradeMode": "FieldValueNotSupported",
                              "spec.driver.cores": "FieldValueInvalid"}
    assert answer["message"].startswith('SparkPlanJob.planengine.io "r1" is invalid: [spec.')


# ------------------------------------------------------------------------------------------ CEL
def test_cel_rules_with_message_field_path_and_message_expression(api):
    code, answer = call(api, "POST", WIDGETS, widget("c1", size=60))
    assert code == 422 and causes(answer) == {"spec.size": "FieldValueInvalid"}
    assert 'spec.size: Invalid value: "object": size must not exceed limit' in answer["message"]
    code, answer = call(api, "POST", WIDGETS, widget("c1", size=13))
    assert code == 422 and "size 13 is unlucky" in answer["message"]


def test_transition_rules_run_only_on_updates_with_an_old_value(api):
    code, _ = call(api, "POST", WIDGETS, widget("t1"))  # no owner: the rule has nothing to compare
    assert code == 201
    assert call(api, "PATCH", f"{WIDGETS}/t1", {"spec": {"owner": "ann"}}, MERGE)[0] == 200
    code, answer = call(api, "PATCH", f"{WIDGETS}/t1", {"spec": {"owner": "bob"}}, MERGE)
    assert code == 422 and causes(answer) == {"spec": "FieldValueForbidden"}
    assert "spec: Forbidden: owner is immutable" in answer["message"]


def test_our_crds_rules_exactly_one_plan_source_and_immutable_storage(api):
    code, answer = call(api, "POST", JOBS, {"metadata": {"name": "e1"}, "spec": {
        "plan": {"sql": "x", "configMapRef": {"name": "c"}}, "engineVersion": "latest",
        "planOptions": {"spark.x": "1"}}})
    assert code == 422
    assert causes(answer) == {"spec.plan": "FieldValueInvalid", "spec.engineVersion": "FieldValueInvalid",
                              "spec.planOptions": "FieldValueInvalid"}
    for words in ("set exactly one of plan.sql", "engineVersion must look like 0.1",
                  "planOptions keys must start with table.plan."):
        assert words in answer["message"]
    spec = {"plan": {"sql": "x"}, "storage": {"pvc": {"claimName": "a"}}}
    assert call(api, "POST", JOBS, {"metadata": {"name": "e2"}, "spec": spec})[0] == 201
    code, answer = call(api, "PATCH", f"{JOBS}/e2", {"spec": {"storage": {"pvc": {"claimName": "b"}}}}, MERGE)
    assert code == 422 and "spec.storage is immutable" in answer["message"]


def test_a_type_error_blocks_the_cel_rules(api):
    code, answer = call(api, "POST", WIDGETS, widget("c2", size="x", limit=0))
    assert code == 422
    assert "some validation rules were not checked" in answer["message"]
    assert "size must not exceed limit" not in answer["message"]


def test_validation_ratchets_unchanged_values(api):
    """A value stored before a schema got stricter stays writable as long as it is not changed."""
    api.call(lambda a: a.objects.__setitem__(("test.io", "widgets", "default", "old"), {
        "apiVersion": "test.io/v1", "kind": "Widget", "spec": {"size": 500, "limit": 50, "color": "red"},
        "metadata": {"name": "old", "namespace": "default", "uid": "u", "resourceVersion": "1", "generation": 1}}))
    code, stored = call(api, "PATCH", f"{WIDGETS}/old", {"metadata": {"labels": {"x": "y"}}}, MERGE)
    assert code == 200 and stored["metadata"]["labels"] == {"x": "y"}
    assert call(api, "PATCH", f"{WIDGETS}/old/status", {"status": {"phase": "Ok"}}, MERGE)[0] == 200
    code, answer = call(api, "PATCH", f"{WIDGETS}/old", {"spec": {"size": 400}}, MERGE)
    assert code == 422 and "spec.size" in causes(answer)


def test_a_crd_whose_rule_does_not_compile_is_refused(api):
    bad = json.loads(json.dumps(WIDGET_CRD))
    bad["metadata"]["name"] = "gadgets.test.io"
    bad["spec"]["names"] = {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"}
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "self.size >"}]
    code, answer = call(api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad)
    assert code == 422 and "compilation failed" in answer["message"]
    assert list(causes(answer)) == [
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"]


def test_the_crd_is_structural_its_defaults_valid_and_its_rules_compile():
    crd = yaml.safe_load(CRD.read_text())
    found = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema.structural_errors(found) == [] and schema.compile_rules(found) == []


@pytest.mark.parametrize("node,field", [
    ({"description": "no type"}, ".properties[spec].properties[bad].type"),
    ({"type": "string", "pattern": "^[a-z]+$", "default": "Abc"}, ".properties[spec].properties[bad].default"),
    ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
     ".properties[spec].properties[bad].additionalProperties"),
])
def test_a_non_structural_crd_is_refused(api, node, field):
    bad = json.loads(json.dumps(WIDGET_CRD))
    bad["metadata"]["name"] = "things.test.io"
    bad["spec"]["names"] = {"kind": "Thing", "plural": "things", "singular": "thing"}
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["bad"] = node
    code, answer = call(api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", bad)
    assert code == 422 and f"spec.validation.openAPIV3Schema{field}" in causes(answer), answer


# ------------------------------------------------------------------------------------------ status subresource
def test_status_and_spec_writes_and_generation(api):
    code, job = call(api, "POST", JOBS, {"metadata": {"name": "g1"}, "spec": {"plan": {"sql": "x"}},
                                         "status": {"phase": "Running"}})
    assert code == 201 and "status" not in job and job["metadata"]["generation"] == 1
    rv = int(job["metadata"]["resourceVersion"])
    _, job = call(api, "PATCH", f"{JOBS}/g1/status", {"status": {"phase": "Running"},
                                                      "spec": {"engineVersion": "0.9"}}, MERGE)
    assert job["status"] == {"phase": "Running"} and "engineVersion" not in job["spec"]  # status only
    assert job["metadata"]["generation"] == 1 and int(job["metadata"]["resourceVersion"]) > rv
    _, job = call(api, "PATCH", f"{JOBS}/g1", {"spec": {"engineVersion": "0.2"}, "status": {"phase": "X"}}, MERGE)
    assert job["metadata"]["generation"] == 2 and job["status"] == {"phase": "Running"}  # spec only
    code, answer = call(api, "PATCH", f"{JOBS}/g1/status", {"status": {"phase": "Exploded"}}, MERGE)
    assert code == 422 and causes(answer) == {"status.phase": "FieldValueNotSupported"}  # status is validated too


def test_stale_resource_versions_conflict_and_updates_need_one(api):
    _, job = call(api, "POST", JOBS, {"metadata": {"name": "v1"}, "spec": {"plan": {"sql": "x"}}})
    stale = job["metadata"]["resourceVersion"]
    call(api, "PATCH", f"{JOBS}/v1", {"metadata": {"labels": {"a": "b"}}}, MERGE)
    code, answer = call(api, "PATCH", f"{JOBS}/v1", {"metadata": {"resourceVersion": stale},
                                                     "spec": {"engineVersion": "0.2"}}, MERGE)
    assert code == 409 and answer["reason"] == "Conflict"
    assert answer["message"].startswith('Operation cannot be fulfilled on sparkplanjobs.planengine.io "v1": ')
    unconditional = {**job, "metadata": {"name": "v1"}}
    code, answer = call(api, "PUT", f"{JOBS}/v1", unconditional)
    assert code == 422 and causes(answer) == {"metadata.resourceVersion": "FieldValueInvalid"}


# ------------------------------------------------------------------------------------------ built-in kinds
@pytest.mark.parametrize("path,body,field", [
    ("/api/v1/namespaces/default/pods", {"metadata": {"name": "p"}, "spec": {"containers": [{"image": "x"}]}},
     "spec.containers[0].name"),
    ("/api/v1/namespaces/default/pods", {"metadata": {"name": "Bad_Name"}, "spec": {"containers": [
        {"name": "c", "image": "x"}]}}, "metadata.name"),
    ("/api/v1/namespaces/default/services", {"metadata": {"name": "9lives"}, "spec": {"ports": [{"port": 80}]}},
     "metadata.name"),
    ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c", "labels": {"a": "x" * 64}}},
     "metadata.labels"),
    ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}, "data": {"a": 1}}, "data.a"),
    ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "big"}, "data": {"a": "x" * (1 << 20)}}, ""),
    ("/apis/coordination.k8s.io/v1/namespaces/default/leases", {"metadata": {"name": "l"}, "spec": {
        "leaseDurationSeconds": "long"}}, "spec.leaseDurationSeconds"),
])
def test_builtin_kinds_are_validated(api, path, body, field):
    code, answer = call(api, "POST", path, body)
    assert code == 422 and answer["reason"] == "Invalid", answer
    assert field in causes(answer), answer


def test_builtin_kinds_drop_unknown_fields(api):
    code, stored, warnings = call_with_headers(api, "POST", "/api/v1/namespaces/default/configmaps", {
        "metadata": {"name": "u"}, "data": {"a": "b"}, "spex": {"x": 1}, "imutable": True})
    assert code == 201 and "spex" not in stored and "imutable" not in stored and stored["data"] == {"a": "b"}
    assert sorted(warnings) == ['299 - "unknown field \\"imutable\\""', '299 - "unknown field \\"spex\\""']
    code, pod, warnings = call_with_headers(api, "POST", "/api/v1/namespaces/default/pods", {
        "metadata": {"name": "u"}, "spec": {"containers": [{"name": "c", "image": "x", "imagePull": "Never"}]}})
    assert code == 201 and "imagePull" not in pod["spec"]["containers"][0]
    assert warnings == ['299 - "unknown field \\"spec.containers[0].imagePull\\""']


# ------------------------------------------------------------------------------------------ kubectl
@pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl from tests/setup/prepare.sh")
def test_kubectl_apply_prints_the_field_and_message(api, tmp_path):
    config = api.write_kubeconfig(tmp_path / "kubeconfig")
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": "planengine.io/v1alpha1", "kind": "SparkPlanJob",
                                        "metadata": {"name": "kc", "namespace": "default"},
                                        "spec": {"plan": {"sql": "x"}, "upgradeMode": "fast"}}))
    run = subprocess.run([str(KUBECTL), "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "cache"),
                          "apply", "--validate=false", "-f", str(manifest)], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1
    assert 'The SparkPlanJob "kc" is invalid' in run.stderr, run.stderr
    assert 'spec.upgradeMode: Unsupported value: "fast"' in run.stderr, run.stderr
