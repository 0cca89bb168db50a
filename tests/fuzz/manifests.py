"""Generative SparkPlanJob manifests and the judge that runs each through admission and the builders.

A manifest is a valid job mutated a few times (seeded, so a failure reproduces): a field set to a value from a
hostile vocabulary (paths that escape, names Kubernetes refuses, quotes, line breaks, int64 edges, wrong types),
a podTemplate fragment (privileged settings next to harmless ones), a sparkConf or planOptions entry, a key
deleted. The judge then does what a cluster does with it:

1. the API server: prune, default and validate with the CRD's OpenAPI schema and CEL rules (the API emulator's
   implementation, ``tests/operator/kapi/schema.py``);
2. the admission webhook's ``review`` (also for what the CRD refused: an older CRD may let it through);
3. for an admitted manifest, the builders, both as the Kubernetes launcher calls them (``admitted_spec``) and
   with the spec as written, and every pod is searched for privileged settings.

Used by ``tests/fuzz/test_manifest_fuzz.py`` (bounded, in ``make test``) and ``benchmarks/fuzz/
manifest_campaign.py`` (a long campaign, recorded in ``benchmarks/results/fuzz_manifests.md``).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import random
import traceback
from pathlib import Path
from typing import Any

import yaml

from planengine_operator import builders, podpolicy, webhook
from planengine_operator.config import OperatorConfig
from tests.operator.kapi import schema
from tests.operator.pod_privileges import privileged_settings

REPO = Path(__file__).resolve().parents[2]
CRD = yaml.safe_load((REPO / "crds/sparkplanjobs.planengine.io.yaml").read_text())
OPENAPI = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
ALLOWED_HOST_PATHS = ["/srv/planengine-data"]
ENGINE_IMAGE = "registry.example/engine:0.1"
CONFIG = OperatorConfig.model_validate({
    "engines": {"0.1": {"image": ENGINE_IMAGE}, "0.2": {"image": "registry.example/engine:0.2"}},
    "admission": {"allowedHostPathPrefixes": ALLOWED_HOST_PATHS},
})

BASES: list[dict[str, Any]] = [
    {"plan": {"sql": "INSERT INTO out SELECT * FROM clicks"}, "storage": {"pvc": {"claimName": "data",
                                                                                    "subPath": "jobs/clicks"}}},
    {"engineVersion": "0.1", "plan": {"configMapRef": {"name": "clicks-sql", "key": "script.sql"}},
     "catalog": {"configMapRef": {"name": "tables"}}, "planOptions": {"table.plan.compile.catalog-objects": "SCHEMA"},
     "storage": {"pvc": {"claimName": "data"}}, "executor": {"instances": 2, "cores": 2, "memory": "2Gi"},
     "driver": {"cores": 1, "memory": "1Gi"}, "sparkConf": {"spark.sql.shuffle.partitions": "8"}},
    {"plan": {"compiledPlanRef": {"name": "plan-cm"}}, "storage": {"pvc": {"claimName": "data", "subPath": "a"}},
     "podTemplate": {"metadata": {"labels": {"team": "a"}}, "spec": {
         "volumes": [{"name": "data", "hostPath": {"path": "/srv/planengine-data/a", "type": "Directory"}}],
         "containers": [{"name": "driver", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}}},
]

VALUES: list[Any] = [
    None, "", ".", "..", "../../team-b/etl", "/etc", "/", "a//b", "./a", "a/", "Data_1", "etl.v2", "x'y",
    "x'; DROP TABLE t; --", "--master", "a\nb", "a\r\nb", "\x00", "é", "a" * 300, "0", "0Gi", "1Gi", "0.5Gi",
    "1h30m", "1.5h", "7d", -1, 0, 1, 2 ** 31, 2 ** 63 - 1, 2 ** 63, -(2 ** 63) - 1, 1.5, True, False, [], {},
    ["x"], {"a": "b"}, "snapshot", "stateless", "running", "suspended", "file:///data/a", "s3a://b/a",
]
FIELDS = [
    ("engineVersion",), ("plan", "sql"), ("plan", "configMapRef", "name"), ("plan", "configMapRef", "key"),
    ("plan", "compiledPlanRef", "name"), ("plan", "compiledPlanRef", "key"), ("plan", "compiledPlanRef", "uri"),
    ("catalog", "configMapRef", "name"), ("catalog", "configMapRef", "key"), ("upgradeMode",), ("state",),
    ("restartNonce",), ("storage", "pvc", "claimName"), ("storage", "pvc", "subPath"), ("storage", "uri"),
    ("initialSnapshot", "uri"), ("snapshots", "interval"), ("snapshots", "maxCount"), ("driver", "cores"),
    ("driver", "memory"), ("executor", "instances"), ("executor", "cores"), ("executor", "memory"), ("image",),
    ("rollback", "stabilityWindow"), ("rollback", "minBatches"), ("podTemplate",), ("sparkConf",),
    ("planOptions",),
]
HOST_PATHS = ["/", "/etc", "/var/run/docker.sock", "/srv/planengine-data", "/srv/planengine-data/x",
              "/srv/planengine-data/../etc", "/srv/planengine-database", "srv/planengine-data",
              "/srv//planengine-data/y"]
POD_FRAGMENTS: list[tuple[tuple[Any, ...], Any]] = [
    (("spec", "hostNetwork"), True), (("spec", "hostPID"), True), (("spec", "hostIPC"), True),
    (("spec", "hostNetwork"), False), (("spec", "serviceAccountName"), "default"),
    (("spec", "serviceAccount"), "admin"), (("spec", "automountServiceAccountToken"), True),
    (("spec", "nodeName"), "node-1"), (("spec", "runtimeClassName"), "runc"), (("spec", "shareProcessNamespace"), True),
    (("spec", "initContainers"), [{"name": "i", "image": "busybox"}]),
    (("spec", "securityContext", "runAsUser"), 0), (("spec", "securityContext", "runAsUser"), 1000),
    (("spec", "securityContext", "runAsNonRoot"), False), (("spec", "securityContext", "runAsGroup"), 0),
    (("spec", "securityContext", "seccompProfile"), {"type": "Unconfined"}),
    (("spec", "securityContext", "sysctls"), [{"name": "kernel.shm_rmid_forced", "value": "0"}]),
    (("spec", "tolerations"), [{"operator": "Exists"}]), (("spec", "nodeSelector"), {"pool": "a"}),
    (("spec", "priorityClassName"), "system-node-critical"), (("spec", "dnsPolicy"), "None"),
    (("metadata", "labels"), {"planengine.io/role": "active"}), (("metadata", "labels"), {"team": "b"}),
    (("metadata", "name"), "other-pod"), (("metadata", "namespace"), "kube-system"), (("kind",), "Pod"),
    (("metadata", "annotations"), {"container.apparmor.security.beta.kubernetes.io/driver": "unconfined"}),
    (("spec", "volumes"), [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]),
    (("spec", "volumes"), [{"name": "c", "projected": {"sources": [{"configMap": {"name": "c"}}]}}]),
]
CONTAINER_FRAGMENTS: list[tuple[str, Any]] = [
    ("securityContext", {"privileged": True}), ("securityContext", {"privileged": False}),
    ("securityContext", {"allowPrivilegeEscalation": True}), ("securityContext", {"runAsUser": 0}),
    ("securityContext", {"runAsNonRoot": False}), ("securityContext", {"capabilities": {"add": ["NET_ADMIN"]}}),
    ("securityContext", {"capabilities": {"drop": ["ALL"]}}), ("securityContext", {"procMount": "Unmasked"}),
    ("securityContext", {"seccompProfile": {"type": "Unconfined"}}), ("securityContext", "yes"),
    ("image", "evil:latest"), ("command", ["sh"]), ("args", ["-c", "id"]), ("env", [{"name": "A", "value": "1"}]),
    ("env", [{"name": "PLANENGINE_RUN_ID", "value": "x"}]), ("env", "A=1"), ("resources", {"limits": {"cpu": "1"}}),
    ("volumeMounts", [{"name": "job-root", "mountPath": "/x"}]),
    ("volumeMounts", [{"name": "v", "mountPath": "/v", "mountPropagation": "Bidirectional"}]),
    ("ports", [{"containerPort": 22}]), ("name", "sidecar"), ("name", "driver"),
]
VOLUME_KINDS = ["emptyDir", "configMap", "secret", "persistentVolumeClaim", "projected", "nfs", "iscsi", "rbd",
                "gitRepo", "flexVolume", "cephfs", "hostPath"]
SPARK_KEYS = ["spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions", "spark.driver.extraClassPath",
              "spark.executor.extraLibraryPath", "spark.jars", "spark.jars.packages", "spark.plugins",
              "spark.executorEnv.LD_PRELOAD", "spark.pyspark.python", "spark.kubernetes.container.image",
              "spark.kubernetes.executor.podTemplateFile", "spark.kubernetes.namespace", "spark.master",
              "spark.kubernetes.executor.volumes.hostPath.r.mount.path", "spark.kubernetes.executor.request.cores",
              "spark.sql.shuffle.partitions", "spark.executor.memoryOverhead", "spark.DRIVER.extraJavaOptions",
              "--master", "spark.a\nb", "spark.", "spark.x y", "table.plan.x", ""]
PLAN_KEYS = ["table.plan.compile.catalog-objects", "table.plan.x' = 'y'; DROP TABLE t; --", "table.plan.",
             "table.plan.a\nb", "pipeline.max-parallelism", "table.plan.force-recompile"]


def _set(node: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = copy.deepcopy(value)


def _pod_container(spec: dict[str, Any]) -> dict[str, Any]:
    template = spec.setdefault("podTemplate", {})
    if not isinstance(template, dict):
        spec["podTemplate"] = template = {}
    pod = template.setdefault("spec", {})
    if not isinstance(pod, dict):
        template["spec"] = pod = {}
    containers = pod.setdefault("containers", [])
    if not isinstance(containers, list):
        pod["containers"] = containers = []
    if not containers or not isinstance(containers[0], dict):
        containers.insert(0, {"name": "driver"})
    return containers[0]


def _mutate(spec: dict[str, Any], rng: random.Random) -> str:
    """One mutation in place; returns its kind (for the campaign's counts)."""
    kind = rng.choice(["field", "field", "pod", "pod", "container", "volume", "sparkConf", "planOptions", "delete"])
    if kind == "field":
        _set(spec, rng.choice(FIELDS), rng.choice(VALUES))
    elif kind == "pod":
        path, value = rng.choice(POD_FRAGMENTS)
        template = spec.get("podTemplate")
        if not isinstance(template, dict):
            spec["podTemplate"] = template = {}
        _set(template, path, value)
    elif kind == "container":
        key, value = rng.choice(CONTAINER_FRAGMENTS)
        _pod_container(spec)[key] = copy.deepcopy(value)
    elif kind == "volume":
        volume_kind = rng.choice(VOLUME_KINDS)
        source: Any = {"path": rng.choice(HOST_PATHS)} if volume_kind == "hostPath" else {}
        name = rng.choice(["data", "extra", "job-root", "plan", "tmp"])
        _pod_container(spec)  # a pod spec to put it in
        spec["podTemplate"]["spec"].setdefault("volumes", []).append({"name": name, volume_kind: source})
        if rng.random() < 0.5:
            _pod_container(spec).setdefault("volumeMounts", []).append({"name": name, "mountPath": "/mnt/" + name})
    elif kind == "sparkConf":
        conf = spec.get("sparkConf")
        if not isinstance(conf, dict):
            spec["sparkConf"] = conf = {}
        conf[rng.choice(SPARK_KEYS)] = rng.choice(["-javaagent:/srv/a.jar", "1", "a\nb", "k8s://https://evil:443",
                                                   "/", ""])
    elif kind == "planOptions":
        options = spec.get("planOptions")
        if not isinstance(options, dict):
            spec["planOptions"] = options = {}
        options[rng.choice(PLAN_KEYS)] = rng.choice(["SCHEMA", "x'y", "'; DROP TABLE t; --", "\\", "a\nb"])
    else:
        key = rng.choice(list(spec) or ["plan"])
        spec.pop(key, None)
    return kind


def manifest(rng: random.Random, index: int) -> dict[str, Any]:
    spec = copy.deepcopy(rng.choice(BASES))
    for _ in range(rng.randint(1, 4)):
        _mutate(spec, rng)
    name = rng.choice(["clicks", "etl.v2", "etl-v2", "7eleven", "a" * 63, "x." * 30 + "y"])
    return {"apiVersion": "planengine.io/v1alpha1", "kind": "SparkPlanJob",
            "metadata": {"name": name, "namespace": "team-a", "uid": f"u-{index}"}, "spec": spec}


@dataclasses.dataclass
class Outcome:
    """Counts of one campaign; ``exceptions`` and ``privileged`` hold samples (manifest, what)."""

    manifests: int = 0
    crd_refused: int = 0
    webhook_refused: int = 0
    admitted: int = 0
    exceptions: list[tuple[dict[str, Any], str]] = dataclasses.field(default_factory=list)
    privileged: list[tuple[dict[str, Any], str]] = dataclasses.field(default_factory=list)
    reasons: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)


def _job_root_of(namespace: str, name: str, spec: dict[str, Any]) -> str:
    return builders.job_root_for_pod(spec, namespace, name)


def _pods(name: str, spec: dict[str, Any], image: str) -> list[dict[str, Any]]:
    run_root = builders.job_root_for_pod(spec, "team-a", name)
    argv = builders.run_argv(f"{builders.PLAN_MOUNT}/plan.json", run_root, None)
    driver = builders.build_driver_pod(job_name=name, namespace="team-a", spec=spec, image=image, run_id="r1",
                                       argv=argv)
    tool = builders.build_tool_pod(job_name=name, key="check-0.1", spec=spec, image=image, argv=["check"],
                                   namespace="team-a", job_root=run_root)
    return [driver, builders.build_executor_pod_template(spec), tool]


def judge(body: dict[str, Any], outcome: Outcome) -> None:
    """Run one manifest through the API server's schema, the webhook and (when admitted) the builders."""
    outcome.manifests += 1
    stored = copy.deepcopy(body)
    try:
        schema.prune(stored, OPENAPI, root=True)
        schema.apply_defaults(stored, OPENAPI)
        crd_ok = not schema.validate(stored, OPENAPI)
    except Exception:  # the emulator itself failing is a finding too
        outcome.exceptions.append((body, "CRD validation: " + traceback.format_exc(limit=4)))
        return
    name = body["metadata"]["name"]
    try:  # the webhook judges what the API server passes on; an older CRD passes on more, so judge everything
        problems = webhook.review("CREATE", "team-a", name, stored if crd_ok else body, None, CONFIG, _job_root_of)
    except Exception:
        outcome.exceptions.append((body, "webhook: " + traceback.format_exc(limit=4)))
        return
    outcome.reasons.update(p.reason for p in problems)
    if not crd_ok:
        outcome.crd_refused += 1
        return
    if problems:
        outcome.webhook_refused += 1
        return
    outcome.admitted += 1
    spec = stored["spec"]
    try:
        admitted = podpolicy.admitted_spec(spec, CONFIG.admission)
        image = admitted.get("image") or ENGINE_IMAGE
        built = _pods(name, admitted, image) + _pods(name, spec, spec.get("image") or ENGINE_IMAGE)
        builders.spark_conf(spec, namespace="team-a", pod_name="p", image=image)
        builders.build_compile_script("INSERT INTO out SELECT 1", None, builders.compile_options(spec))
        builders.lease_name(builders.job_root_for_pod(spec, "team-a", name))
    except Exception:
        outcome.exceptions.append((body, "builders: " + traceback.format_exc(limit=4)))
        return
    for pod in built:
        found = privileged_settings(pod, ALLOWED_HOST_PATHS, ENGINE_IMAGE)
        if found:
            outcome.privileged.append((body, f"{pod['metadata'].get('name', 'executor')}: {found}"))


def campaign(seed: int, count: int) -> Outcome:
    rng = random.Random(seed)
    outcome = Outcome()
    for index in range(count):
        judge(manifest(rng, index), outcome)
    return outcome
