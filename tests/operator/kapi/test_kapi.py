"""The API emulator's own contract: the kmock 0.8 gaps it closes, checked over HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.operator.kapi.server import label_match, run_in_thread

CRD = Path(__file__).resolve().parents[3] / "crds" / "sparkplanjobs.planengine.io.yaml"
JOBS = "/apis/planengine.io/v1alpha1/namespaces/default/sparkplanjobs"


@pytest.fixture(scope="module")
def api():
    running = run_in_thread([CRD])
    yield running
    running.stop()


def call(api, method: str, path: str, body: Any = None, ctype: str = "application/json",
         accept: str = "application/json") -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(api.url + path, data=data, method=method,
                                     headers={"Content-Type": ctype, "Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=10) as rsp:
            return rsp.status, json.loads(rsp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_discovery_serves_the_crd_with_status_subresource(api):
    assert call(api, "GET", "/api/v1/namespaces")[1]["items"][0]["metadata"]["name"] == "default"
    groups = {g["name"] for g in call(api, "GET", "/apis")[1]["groups"]}
    assert {"planengine.io", "coordination.k8s.io", "apiextensions.k8s.io"} <= groups
    names = {r["name"] for r in call(api, "GET", "/apis/planengine.io/v1alpha1")[1]["resources"]}
    assert names == {"sparkplanjobs", "sparkplanjobs/status"}
    crds = call(api, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")[1]["items"]
    assert [c["metadata"]["name"] for c in crds] == ["sparkplanjobs.planengine.io"]


def test_create_update_status_generation_and_conflicts(api):
    code, job = call(api, "POST", JOBS, {"metadata": {"name": "g", "labels": {"tier": "a"}},
                                         "spec": {"plan": {"sql": "x"}}, "status": {"phase": "ignored"}})
    assert code == 201 and job["metadata"]["generation"] == 1 and job["metadata"]["uid"]
    assert "status" not in job  # the status subresource owns it
    assert call(api, "POST", JOBS, {"metadata": {"name": "g"}, "spec": {"plan": {"sql": "x"}}})[0] == 409
    rv = job["metadata"]["resourceVersion"]
    code, job = call(api, "PATCH", f"{JOBS}/g/status", {"status": {"phase": "Running"}},
                     "application/merge-patch+json")
    assert job["status"] == {"phase": "Running"} and job["metadata"]["generation"] == 1
    assert int(job["metadata"]["resourceVersion"]) > int(rv)
    code, job = call(api, "PATCH", f"{JOBS}/g", {"spec": {"engineVersion": "0.2"}, "status": {"phase": "x"}},
                     "application/merge-patch+json")
    assert job["metadata"]["generation"] == 2 and job["status"] == {"phase": "Running"}
    code, same = call(api, "PATCH", f"{JOBS}/g", {"metadata": {"annotations": {"a": "b"}}},
                      "application/merge-patch+json")
    assert same["metadata"]["generation"] == 2  # metadata is not spec
    stale = [{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
             {"op": "add", "path": "/metadata/finalizers", "value": ["x"]}]
    assert call(api, "PATCH", f"{JOBS}/g", stale, "application/json-patch+json")[0] == 422
    put = {**same, "spec": {"plan": {"sql": "y"}}}  # defaults come back: upgradeMode, state
    put["metadata"] = {**same["metadata"], "resourceVersion": rv}
    assert call(api, "PUT", f"{JOBS}/g", put)[0] == 409
    put["metadata"]["resourceVersion"] = same["metadata"]["resourceVersion"]
    code, job = call(api, "PUT", f"{JOBS}/g", put)
    assert code == 200 and job["metadata"]["generation"] == 3
    assert job["spec"] == {"plan": {"sql": "y"}, "upgradeMode": "snapshot", "state": "running"}


def test_finalizers_delay_deletion_and_owners_cascade(api):
    _, owner = call(api, "POST", JOBS, {"metadata": {"name": "o", "finalizers": ["f"]},
                                        "spec": {"plan": {"sql": "x"}}})
    ref = {"apiVersion": "planengine.io/v1alpha1", "kind": "SparkPlanJob", "name": "o",
           "uid": owner["metadata"]["uid"]}
    call(api, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "o-plan",
                                                                 "ownerReferences": [ref]}})
    _, marked = call(api, "DELETE", f"{JOBS}/o")
    assert marked["metadata"]["deletionTimestamp"]
    assert call(api, "GET", "/api/v1/namespaces/default/configmaps/o-plan")[0] == 200
    call(api, "PATCH", f"{JOBS}/o", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    assert call(api, "GET", f"{JOBS}/o")[0] == 404
    assert call(api, "GET", "/api/v1/namespaces/default/configmaps/o-plan")[0] == 404


def test_list_selectors_table_and_watch_from_a_resource_version(api):
    _, listed = call(api, "GET", f"{JOBS}?labelSelector=tier%3Da")
    assert [j["metadata"]["name"] for j in listed["items"]] == ["g"]
    assert call(api, "GET", f"{JOBS}?labelSelector=tier%21%3Da")[1]["items"] == []
    since = listed["metadata"]["resourceVersion"]
    call(api, "PATCH", f"{JOBS}/g/status", {"status": {"phase": "Upgrading"}}, "application/merge-patch+json")
    with urllib.request.urlopen(f"{api.url}{JOBS}?watch=true&resourceVersion={since}&timeoutSeconds=1") as rsp:
        events = [json.loads(line) for line in rsp.read().splitlines()]
    assert [(e["type"], e["object"]["status"]["phase"]) for e in events] == [("MODIFIED", "Upgrading")]
    _, table = call(api, "GET", JOBS, accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns[:4] == ["Name", "Desired", "Running", "Phase"]
    assert table["rows"][0]["cells"][3] == "Upgrading"


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("a=1,b", {"a": "1", "b": ""}, True),
    ("a in (1,2),!c", {"a": "2"}, True),
    ("a notin (1,2)", {"a": "2"}, False),
    ("a!=1", {}, True),
])
def test_label_selectors(selector, labels, expected):
    assert label_match(labels, selector) is expected


def test_pods_have_a_status_subresource_and_serve_their_log(api):
    pods = "/api/v1/namespaces/default/pods"
    code, pod = call(api, "POST", pods, {"metadata": {"name": "p1"}, "spec": {"containers": [
        {"name": "c", "image": "engine:0.1"}]}, "status": {"phase": "Running"}})
    assert code == 201 and "status" not in pod  # a client cannot create a pod's status
    _, pod = call(api, "PATCH", f"{pods}/p1/status", {"status": {"phase": "Succeeded"}}, "application/merge-patch+json")
    assert pod["status"] == {"phase": "Succeeded"}
    _, pod = call(api, "PATCH", f"{pods}/p1", {"metadata": {"labels": {"a": "b"}}, "status": {"phase": "Failed"}},
                  "application/merge-patch+json")
    assert pod["status"] == {"phase": "Succeeded"}  # the main resource cannot change it
    api.call(lambda a: a.pod_logs.__setitem__(("default", "p1"), "line 1\nline 2\n"))
    with urllib.request.urlopen(f"{api.url}{pods}/p1/log", timeout=10) as rsp:
        assert rsp.read().decode() == "line 1\nline 2\n"
    assert call(api, "GET", f"{pods}/nope/log")[0] == 404
