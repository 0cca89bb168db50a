"""Pure manifest and argv builders: data in, dicts out, no I/O, unit-tested with parametrize.

Owner references are added by the caller with ``kopf.adopt`` so deleting a SparkPlanJob garbage-collects
its pods, services, ConfigMaps and Lease.
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

LABEL_JOB = "planengine.io/job"
LABEL_RUN = "planengine.io/run-id"
LABEL_PLAN = "planengine.io/plan-id"
LABEL_COMPONENT = "app.kubernetes.io/component"
JOB_ROOT_MOUNT = "/var/lib/planengine/job"
PLAN_MOUNT = "/etc/planengine/plan"  # the <job>-plan ConfigMap in the driver pod (key plan.json)
STATUS_PORT = 4041


def _dns(name: str, limit: int = 63) -> str:
    cleaned = re.sub(r"[^a-z0-9-]", "-", name.lower()).strip("-")
    if len(cleaned) <= limit:
        return cleaned
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return cleaned[: limit - 9].rstrip("-") + "-" + digest


def lease_name(job_root: str) -> str:
    """The fencing Lease is named after the job root, so two jobs on one root contend for one Lease.

    >>> lease_name("/data/jobs/a") == lease_name("/data/jobs/a/"), lease_name("/x").startswith("spj-root-")
    (True, True)
    """
    return "spj-root-" + hashlib.sha256(job_root.rstrip("/").encode()).hexdigest()[:24]


def build_lease(job_root: str, holder: str, duration_seconds: int = 3600) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": lease_name(job_root),
            "labels": {LABEL_COMPONENT: "job-root-fence"},
            "annotations": {"planengine.io/job-root": job_root},
        },
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration_seconds},
    }


def build_compile_script(program_sql: str, catalog_sql: str | None, plan_options: dict[str, str]) -> str:
    """One script for ``planengine compile``: catalog, then ``SET`` plan options, then the program.

    >>> build_compile_script("INSERT INTO s SELECT * FROM t", "CREATE TABLE t (a INT)",
    ...                      {"table.plan.compile.catalog-objects": "SCHEMA"}).splitlines()[1]
    "SET 'table.plan.compile.catalog-objects' = 'SCHEMA';"
    """
    parts = []
    if catalog_sql:
        parts.append(catalog_sql.strip().rstrip(";") + ";")
    for key in sorted(plan_options):
        value = plan_options[key].replace("'", "''")
        parts.append(f"SET '{key}' = '{value}';")
    parts.append(program_sql.strip().rstrip(";") + ";")
    return "\n".join(parts) + "\n"


def build_plan_configmap(job_name: str, plan_json: str, plan_id: str) -> dict[str, Any]:
    """``<job>-plan``: the plan in force, visible with kubectl and labelled with its planId."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": _dns(f"{job_name}-plan", 253),
            "labels": {LABEL_JOB: _dns(job_name), LABEL_PLAN: plan_id[:63], LABEL_COMPONENT: "plan"},
        },
        "data": {"plan.json": plan_json},
    }


def run_argv(plan_path: str, job_root: str, snapshot_path: str | None) -> list[str]:
    """``planengine run`` arguments (DESIGN §6); the launcher appends ``--status-port``."""
    argv = ["run", "--plan", plan_path, "--job-root", job_root]
    if snapshot_path:
        argv += ["--from-snapshot", snapshot_path]
    return argv


def spark_conf(spec: dict[str, Any], namespace: str, job_name: str, image: str, service: str) -> dict[str, str]:
    """Spark settings for the Kubernetes master: executors as pods owned by the driver pod."""
    executor = spec.get("executor") or {}
    conf = {
        "spark.master": "k8s://https://kubernetes.default.svc",
        "spark.submit.deployMode": "client",
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.container.image": image,
        "spark.kubernetes.driver.pod.name": _dns(f"{job_name}-driver"),
        "spark.driver.host": f"{service}.{namespace}.svc",
        "spark.driver.port": "7078",
        "spark.driver.blockManager.port": "7079",
        "spark.executor.instances": str(executor.get("instances", 1)),
        "spark.executor.cores": str(executor.get("cores", 1)),
        "spark.executor.memory": _spark_memory(executor.get("memory", "1Gi")),
    }
    conf.update(spec.get("sparkConf") or {})
    return conf


def _spark_memory(quantity: str) -> str:
    """Kubernetes quantity to Spark's size string: ``2Gi`` → ``2g``.

    >>> _spark_memory("2Gi"), _spark_memory("512Mi")
    ('2g', '512m')
    """
    match = re.match(r"^([0-9]+)(Ki|Mi|Gi|Ti|k|M|G|T)?$", quantity)
    if not match:
        return quantity
    unit = {"Ki": "k", "Mi": "m", "Gi": "g", "Ti": "t", "k": "k", "M": "m", "G": "g", "T": "t", None: ""}
    return match.group(1) + unit[match.group(2)]


def _storage_volume(spec: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    storage = spec.get("storage") or {}
    pvc = storage.get("pvc")
    if pvc:
        mount: dict[str, Any] = {"name": "job-root", "mountPath": JOB_ROOT_MOUNT}
        if pvc.get("subPath"):
            mount["subPath"] = pvc["subPath"]
        return [{"name": "job-root", "persistentVolumeClaim": {"claimName": pvc["claimName"]}}], [mount]
    return [], []


def job_root_for_pod(spec: dict[str, Any], default_base: str, namespace: str, name: str) -> str:
    storage = spec.get("storage") or {}
    if storage.get("pvc"):
        return JOB_ROOT_MOUNT
    if storage.get("uri"):
        return str(storage["uri"])
    return f"{default_base.rstrip('/')}/{namespace}/{name}"


def build_driver_pod(
    *, job_name: str, namespace: str, spec: dict[str, Any], image: str, run_id: str, argv: list[str],
    service: str, plan_configmap: str | None,
) -> dict[str, Any]:
    """The driver: ``planengine run`` as non-root with a read-only root filesystem."""
    driver = spec.get("driver") or {}
    volumes, mounts = _storage_volume(spec)
    volumes += [{"name": "tmp", "emptyDir": {}}]
    mounts += [{"name": "tmp", "mountPath": "/tmp"}]
    if plan_configmap:
        volumes.append({"name": "plan", "configMap": {"name": plan_configmap}})
        mounts.append({"name": "plan", "mountPath": PLAN_MOUNT, "readOnly": True})
    conf = spark_conf(spec, namespace, job_name, image, service)
    conf_args = [item for key in sorted(conf) for item in ("--conf", f"{key}={conf[key]}")]
    labels = {LABEL_JOB: _dns(job_name), LABEL_RUN: _dns(run_id), LABEL_COMPONENT: "driver"}
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": _dns(f"{job_name}-driver"), "labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 185, "fsGroup": 185,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "driver",
                "image": image,
                "args": ["planengine", *argv, "--status-port", str(STATUS_PORT), *conf_args],
                "env": [
                    {"name": "PLANENGINE_RUN_ID", "value": run_id},
                    {"name": "PLANENGINE_WRITER_LOCK", "value": argv[argv.index("--job-root") + 1].rstrip("/")
                     + "/writer.lock"},
                ],
                "ports": [{"name": "status", "containerPort": STATUS_PORT},
                          {"name": "driver-rpc", "containerPort": 7078},
                          {"name": "blockmanager", "containerPort": 7079}],
                "resources": {
                    "requests": {"cpu": str(driver.get("cores", 1)), "memory": driver.get("memory", "1Gi")},
                    "limits": {"memory": driver.get("memory", "1Gi")},
                },
                "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": STATUS_PORT}, "periodSeconds": 5},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": STATUS_PORT},
                                  "initialDelaySeconds": 60, "periodSeconds": 10, "failureThreshold": 6},
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
        },
    }
    return merge_pod_template(pod, spec.get("podTemplate"))


def merge_pod_template(pod: dict[str, Any], template: dict[str, Any] | None) -> dict[str, Any]:
    """Overlay the user's podTemplate: dicts merge, lists of named items merge by name, else replace."""
    if not template:
        return pod
    return _merge(copy.deepcopy(pod), template)


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        for key, value in over.items():
            base[key] = _merge(base[key], value) if key in base else copy.deepcopy(value)
        return base
    if isinstance(base, list) and isinstance(over, list) and all(
        isinstance(i, dict) and "name" in i for i in base + over
    ):
        merged = {item["name"]: item for item in base}
        for item in over:
            merged[item["name"]] = _merge(merged[item["name"]], item) if item["name"] in merged else item
        return list(merged.values())
    return copy.deepcopy(over)


def build_service(job_name: str) -> dict[str, Any]:
    """Headless service: a stable DNS name for executors and the operator to reach the driver."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": _dns(f"{job_name}-driver"), "labels": {LABEL_JOB: _dns(job_name)}},
        "spec": {
            "clusterIP": "None",
            "selector": {LABEL_JOB: _dns(job_name), LABEL_COMPONENT: "driver"},
            "ports": [{"name": "status", "port": STATUS_PORT}, {"name": "driver-rpc", "port": 7078},
                      {"name": "blockmanager", "port": 7079}],
        },
    }


def build_tool_pod(
    *, job_name: str, key: str, spec: dict[str, Any], image: str, argv: list[str],
) -> dict[str, Any]:
    """A short-lived pod running one CLI command (compile, check, migrate, snapshot) on an engine image."""
    volumes, mounts = _storage_volume(spec)
    volumes += [{"name": "tmp", "emptyDir": {}}]
    mounts += [{"name": "tmp", "mountPath": "/tmp"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": _dns(f"{job_name}-{key}"),
                     "labels": {LABEL_JOB: _dns(job_name), LABEL_COMPONENT: "tool"}},
        "spec": {
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 185,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": "tool", "image": image, "args": ["planengine", *argv],
                "securityContext": {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                                    "capabilities": {"drop": ["ALL"]}},
                "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
        },
    }
