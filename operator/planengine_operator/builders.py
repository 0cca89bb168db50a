"""Pure manifest and argv builders: data in, dicts out, no I/O, unit-tested with parametrize.

Owner references are added by the caller (``kopf.adopt`` for the SparkPlanJob, :func:`owned_by` for objects a
driver pod owns), so deleting a SparkPlanJob garbage-collects its pods, services, ConfigMaps and Lease.

Objects of one job ``<job>`` on the Kubernetes launcher:

* one driver pod per run, ``<job>-<run id>``, labelled with the run and its role: ``active`` (the driver) or
  ``standby`` (an upgrade's warm standby, promoted to ``active`` by a label change after ``POST /v1/start``);
* a headless Service per driver pod, same name, owned by the pod: ``spark.driver.host`` of that driver, so
  its executors reach it under a name that never moves to another pod;
* the headless Service ``<job>-driver`` that selects the ``active`` driver: the status API of the job;
* ConfigMaps ``<job>-plan`` (the plan in force) and ``<job>-executor`` (the executors' pod template);
* the Secret ``<job>-control-token``: the token the driver API's stop and start require, mounted into driver
  and standby pods (docs/operator.md, "Driver API");
* the fencing Lease ``spj-root-<hash>`` and short-lived tool pods (``planengine check`` and friends).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import posixpath
import re
from typing import Any

import yaml

from planengine_operator import storage

LABEL_JOB = "planengine.io/job"
LABEL_RUN = "planengine.io/run-id"
LABEL_PLAN = "planengine.io/plan-id"
LABEL_ROLE = "planengine.io/role"  # active | standby (driver pods)
# On tool pods: the request (operation step and command) whose answer the pod is (launchers/kubernetes.py).
ANNOTATION_TOOL_REQUEST = "planengine.io/tool-request"
LABEL_COMPONENT = "app.kubernetes.io/component"
ROLE_ACTIVE, ROLE_STANDBY = "active", "standby"

# The engine image's user and group (the Dockerfile's USER; tests/chart/test_dockerfile.py checks they agree).
ENGINE_UID = 10001
# Every claim is mounted at <JOB_ROOTS>/<claimName>, and the job root is <that>/<subPath>: the path names the
# claim and directory, so the fencing Lease (named after the job root) is one per directory, not one per job.
JOB_ROOTS = "/var/lib/planengine/jobs"
PLAN_MOUNT = "/etc/planengine/plan"
SPARK_MOUNT = "/etc/planengine/spark"
EXECUTOR_TEMPLATE_KEY = "executor-pod.yaml"
TOOL_INPUT_MOUNT = "/etc/planengine/input"
STATUS_PORT = 4041
CONTROL_TOKEN_MOUNT = "/etc/planengine/control"
CONTROL_TOKEN_KEY = "token"
DRIVER_PORT = 7078
BLOCK_MANAGER_PORT = 7079
# The ServiceAccount driver pods run as; the chart creates it with the RBAC Spark needs for executor pods.
DRIVER_SERVICE_ACCOUNT = "planengine-driver"
KUBERNETES_MASTER = "k8s://https://kubernetes.default.svc:443"
EXECUTOR_WORK_DIR = "/opt/spark/work-dir"  # writable: fetched jars land in an executor's working directory
# Spark starts executors with the args ["executor"]; the image's entrypoint is planengine, so the executor
# pod template runs this launcher instead (the Dockerfile installs it; what Spark's own entrypoint.sh does).
EXECUTOR_COMMAND = ["/usr/bin/tini", "--", "/usr/local/bin/planengine-spark-executor"]


def _dns(name: str, limit: int = 63) -> str:
    cleaned = re.sub(r"[^a-z0-9-]", "-", name.lower()).strip("-")
    if len(cleaned) <= limit:
        return cleaned
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return cleaned[: limit - 9].rstrip("-") + "-" + digest


_DNS_1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def job_key(job_name: str) -> str:
    """The job's part of its children's names and of the ``planengine.io/job`` label: one per job name.

    A SparkPlanJob's name is a DNS subdomain (dots allowed, up to 253 characters), its pods' and Services' names
    and label values are not: mapping ``.`` to ``-`` alone made ``etl.v2`` and ``etl-v2`` share ConfigMaps,
    Services, labels and pods, so one job would kill the other's driver and overwrite its plan. A name that is
    already a DNS-1123 label stays as it is (existing jobs keep their children); any other gets a short hash of
    the full name.

    >>> job_key("etl-v2"), job_key("etl.v2"), job_key("ETL-v2")
    ('etl-v2', 'etl-v2-7ae81920', 'etl-v2-e547357a')
    """
    if len(job_name) <= 63 and _DNS_1123_LABEL.fullmatch(job_name):
        return job_name
    digest = hashlib.sha256(job_name.encode()).hexdigest()[:8]
    cleaned = re.sub(r"[^a-z0-9-]", "-", job_name.lower()).strip("-")[: 63 - 9].rstrip("-")
    return f"{cleaned}-{digest}" if cleaned else f"j-{digest}"


def _dns_label(name: str) -> str:
    """A DNS-1035 label (Service names must start with a letter).

    >>> _dns_label("7-eleven-driver"), _dns_label("clicks-driver")
    ('j-7-eleven-driver', 'clicks-driver')
    """
    cleaned = _dns(name)
    return cleaned if cleaned[:1].isalpha() else _dns("j-" + cleaned)


def owned_by(manifest: dict[str, Any], owner: dict[str, Any], *, controller: bool = True) -> dict[str, Any]:
    """Make ``owner`` (any object with apiVersion/kind/metadata.uid) the owner of ``manifest``."""
    ref = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"], "blockOwnerDeletion": True, "controller": controller}
    manifest.setdefault("metadata", {}).setdefault("ownerReferences", []).append(ref)
    return manifest


# ------------------------------------------------------------------------------------------- fencing
def lease_name(job_root: str) -> str:
    """The fencing Lease is named after the job root, so two jobs on one root contend for one Lease: the root
    is normalised first (``./``, ``//``, a trailing ``/``), or two spellings of one directory got two Leases and
    two drivers wrote one checkpoint.

    >>> lease_name("/data/jobs/a") == lease_name("/data/jobs/a/") == lease_name("/data/./jobs//a")
    True
    >>> lease_name("/x").startswith("spj-root-")
    True
    """
    return "spj-root-" + hashlib.sha256(normalized_root(job_root).encode()).hexdigest()[:24]


def normalized_root(path: str) -> str:
    """One spelling per directory: ``.`` and empty segments and a trailing ``/`` dropped, ``a/..`` resolved.

    >>> normalized_root("/data//jobs/./a/"), normalized_root("//x"), normalized_root("/")
    ('/data/jobs/a', '/x', '/')
    """
    normal = posixpath.normpath(path) if path else path
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def sub_path_problem(sub_path: str | None) -> str | None:
    """Why ``storage.pvc.subPath`` cannot name a directory inside the claim (or the job's own directory on the
    local launcher), or None. ``..`` and an absolute path escape it (to another namespace's job root); an empty
    segment (``a//b``) is a second spelling of a directory, which the CRD refuses too.

    >>> [sub_path_problem(s) for s in ("jobs/a", "./a", "a/", "", None)]
    [None, None, None, None, None]
    >>> [bool(sub_path_problem(s)) for s in ("../b", "/abs", "a//b", "a/../../b", "/")]
    [True, True, True, True, True]
    """
    if not sub_path:  # absent or "": the claim's root
        return None
    segments = sub_path.split("/")
    if segments[-1:] == [""] and len(segments) > 1:
        segments = segments[:-1]  # one trailing slash
    if sub_path.startswith("/") or ".." in segments or "" in segments:
        return (f"spec.storage.pvc.subPath {sub_path!r} must be a relative path inside the volume: no leading '/', "
                "no '..' and no empty segment ('a//b'); e.g. jobs/clicks")
    return None


def _sub_path(pvc: dict[str, Any]) -> str:
    """The subPath's one spelling (``./a/`` is ``a``); "" for the claim's root."""
    sub = posixpath.normpath(str(pvc.get("subPath") or "."))
    return "" if sub == "." else sub


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


# ------------------------------------------------------------------------------------------- compile
def compile_options(spec: dict[str, Any]) -> dict[str, str]:
    """Options the plan is compiled with: ``planOptions`` plus the job's max parallelism.

    The max parallelism (Spark's shuffle partitions, fixed in the plan and in every checkpoint for good) is
    ``sparkConf["spark.sql.shuffle.partitions"]`` when the user set it, else the executors' cores
    (``executor.instances`` x ``executor.cores``) when ``spec.executor`` is given, else unset (the engine's 2).

    >>> compile_options({"executor": {"instances": 3, "cores": 2}})
    {'pipeline.max-parallelism': '6'}
    >>> compile_options({"executor": {"instances": 3}, "sparkConf": {"spark.sql.shuffle.partitions": "24"}})
    {'pipeline.max-parallelism': '24'}
    >>> compile_options({"planOptions": {"table.plan.compile.catalog-objects": "SCHEMA"}})
    {'table.plan.compile.catalog-objects': 'SCHEMA'}
    """
    options = dict(spec.get("planOptions") or {})
    explicit = (spec.get("sparkConf") or {}).get("spark.sql.shuffle.partitions")
    executor = spec.get("executor")
    if explicit is not None:
        options["pipeline.max-parallelism"] = str(explicit).strip()
    elif executor is not None:
        options["pipeline.max-parallelism"] = str(task_slots(spec))
    return options


def task_slots(spec: dict[str, Any]) -> int:
    """Tasks the job runs at once: executors x cores, or the driver's cores when it runs them itself.

    >>> task_slots({"executor": {"instances": 2, "cores": 3}}), task_slots({"executor": {"instances": 0},
    ...                                                                     "driver": {"cores": 2}})
    (6, 2)
    """
    executor = spec.get("executor") or {}
    instances = int(executor.get("instances", 1))
    if instances == 0:
        return max(1, int((spec.get("driver") or {}).get("cores", 1)))
    return instances * max(1, int(executor.get("cores", 1)))


def build_compile_script(program_sql: str, catalog_sql: str | None, plan_options: dict[str, str]) -> str:
    """One script for ``planengine compile``: catalog, then ``SET`` plan options, then the program.

    >>> build_compile_script("INSERT INTO s SELECT * FROM t", "CREATE TABLE t (a INT)",
    ...                      {"table.plan.compile.catalog-objects": "SCHEMA"}).splitlines()[1]
    "SET 'table.plan.compile.catalog-objects' = 'SCHEMA';"
    """
    parts = []
    if catalog_sql:
        parts.append(catalog_sql.strip().rstrip(";") + ";")
    for key in sorted(plan_options):  # both quoted: a key or value is a string literal, never script text
        parts.append(f"SET {_sql_string(key)} = {_sql_string(plan_options[key])};")
    parts.append(program_sql.strip().rstrip(";") + ";")
    return "\n".join(parts) + "\n"


def _sql_string(text: str) -> str:
    """A Flink SQL string literal: quotes doubled (a backslash is an ordinary character there).

    >>> _sql_string("it's")
    "'it''s'"
    """
    return "'" + str(text).replace("'", "''") + "'"


def build_plan_configmap(job_name: str, plan_json: str, plan_id: str) -> dict[str, Any]:
    """``<job>-plan``: the plan in force, visible with kubectl and labelled with its planId."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": _dns(f"{job_key(job_name)}-plan", 253),
            "labels": {LABEL_JOB: job_key(job_name), LABEL_PLAN: plan_id[:63], LABEL_COMPONENT: "plan"},
        },
        "data": {"plan.json": plan_json},
    }


def run_argv(plan_path: str, job_root: str, snapshot_path: str | None) -> list[str]:
    """``planengine run`` arguments (DESIGN §6); the launcher appends ``--status-port`` and its ``--conf``."""
    argv = ["run", "--plan", plan_path, "--job-root", job_root]
    if snapshot_path:
        argv += ["--from-snapshot", snapshot_path]
    return argv


# ------------------------------------------------------------------------------------------- storage
def storage_problem(spec: dict[str, Any]) -> str | None:
    """Why a job cannot run on the Kubernetes launcher's storage, or None.

    The driver pod, its executors (state store commits), the warm standby and every tool pod (compile,
    check, snapshot) read and write the same job root, and it must outlive every one of them: an emptyDir
    or the image's filesystem would lose the plan between the compile pod and the driver, and the checkpoints
    (state and source offsets) with every pod; a file sink would then skip the re-numbered batches as
    already committed. So the job root is a PersistentVolumeClaim, or a prefix in an S3 bucket
    (``storage.uri: s3a://``) that every pod reaches with the settings of ``storage.s3``.

    >>> storage_problem({"storage": {"uri": "s3a://jobs/a"}}) is None
    True
    >>> "storage.pvc" in storage_problem({"storage": {"uri": "/data/a"}})
    True
    """
    spec_storage = spec.get("storage") or {}
    if spec_storage.get("pvc"):
        sub = spec_storage["pvc"].get("subPath")
        return sub_path_problem(None if sub is None else str(sub))
    uri = spec_storage.get("uri")
    if storage.is_s3a(uri):
        problems = storage.uri_problems(str(uri))
        return f"spec.storage.uri: {problems[0]}" if problems else None
    found = f"spec.storage.uri {uri!r}" if uri else "no spec.storage"
    return (f"{found}: the Kubernetes launcher keeps the job root (plan, checkpoints, snapshots) on a "
            "PersistentVolumeClaim that the driver, its executors, the upgrade standby and the tool pods all "
            "mount, or in an S3 bucket; set spec.storage.pvc.claimName (ReadWriteMany when pods may land on several "
            "nodes) and optionally subPath, or spec.storage.uri: s3a://<bucket>/<prefix> with spec.storage.s3")


def job_root_for_pod(spec: dict[str, Any], namespace: str, name: str) -> str:
    """The job root as pods see it: ``<JOB_ROOTS>/<claim>/<subPath>`` (storage_problem() said it is a claim), or
    the ``s3a://`` URI as written (every pod reaches the bucket itself).

    >>> job_root_for_pod({"storage": {"pvc": {"claimName": "data", "subPath": "jobs/a"}}}, "ns", "a")
    '/var/lib/planengine/jobs/data/jobs/a'
    >>> job_root_for_pod({}, "ns", "a")
    '/var/lib/planengine/jobs/-/ns/a'
    >>> job_root_for_pod({"storage": {"pvc": {"claimName": "data", "subPath": "./jobs/a/"}}}, "ns", "a")
    '/var/lib/planengine/jobs/data/jobs/a'
    >>> job_root_for_pod({"storage": {"uri": "s3a://team-a-jobs/clicks"}}, "ns", "a")
    's3a://team-a-jobs/clicks'
    """
    s3a_root = storage.s3a_root(spec)
    if s3a_root is not None:
        return s3a_root
    pvc = (spec.get("storage") or {}).get("pvc")
    sub = (pvc or {}).get("subPath")
    # refused before anything runs; a stable, distinct name keeps the views consistent meanwhile
    if not pvc or sub_path_problem(None if sub is None else str(sub)):
        return f"{JOB_ROOTS}/-/{namespace}/{name}"
    sub = _sub_path(pvc)
    return f"{JOB_ROOTS}/{pvc['claimName']}" + (f"/{sub}" if sub else "")


def _store_identity(spec: dict[str, Any]) -> dict[str, Any]:
    """Pod spec fields for a pod that reaches an ``s3a://`` job root with its service account's credentials (no
    ``credentialsSecret``: IRSA or another web identity, which is bound to a ServiceAccount): the drivers' one, so
    one annotated ServiceAccount serves the driver, its executors and the tool pods. No API token is mounted:
    executors and tools never call the API server."""
    if storage.s3a_root(spec) is None or ((spec.get("storage") or {}).get("s3") or {}).get("credentialsSecret"):
        return {}
    return {"serviceAccountName": DRIVER_SERVICE_ACCOUNT, "automountServiceAccountToken": False}


def _claim_volume(spec: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The claim, mounted whole (a kubelet-made subPath directory would be owned by root, not the engine's
    group): the engine creates the job root directory inside it."""
    pvc = (spec.get("storage") or {}).get("pvc")
    if not pvc:
        return [], []
    return ([{"name": "job-root", "persistentVolumeClaim": {"claimName": pvc["claimName"]}}],
            [{"name": "job-root", "mountPath": f"{JOB_ROOTS}/{pvc['claimName']}"}])


# ------------------------------------------------------------------------------------------- Spark
def driver_pod_name(job_name: str, run_id: str) -> str:
    """One pod (and one Service of the same name) per run: a standby and the driver it replaces coexist."""
    return _dns_label(f"{job_key(job_name)}-{run_id}")


def _spark_memory(quantity: str) -> str:
    """Kubernetes quantity to Spark's size string: ``2Gi`` → ``2g``.

    >>> _spark_memory("2Gi"), _spark_memory("512Mi"), _spark_memory("1.5Gi")
    ('2g', '512m', '1536m')
    """
    match = re.match(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$", quantity)
    if not match:
        return quantity
    number, unit = match.group(1), match.group(2)
    if "." in number:  # Spark wants whole numbers: step down one unit
        down = {"Gi": ("Mi", 1024), "Ti": ("Gi", 1024), "Mi": ("Ki", 1024), "G": ("M", 1000), "T": ("G", 1000),
                "M": ("k", 1000)}.get(unit or "")
        if down is None:
            return quantity
        number, unit = str(round(float(number) * down[1])), down[0]
    suffix = {"Ki": "k", "Mi": "m", "Gi": "g", "Ti": "t", "k": "k", "M": "m", "G": "g", "T": "t", None: ""}
    return number + suffix[unit]


def spark_conf(spec: dict[str, Any], *, namespace: str, pod_name: str, image: str) -> dict[str, str]:
    """Spark settings of a driver pod in client mode: executors are pods owned by the driver pod (with
    ``executor.instances: 0`` none: ``local[<driver cores>]``).

    ``spark.driver.host`` is the driver pod's own Service (its name never moves to another pod, unlike the
    job's ``<job>-driver``, which a standby takes over), ``bindAddress`` all interfaces of the pod. The user's
    ``sparkConf`` comes last and wins, except ``spark.sql.shuffle.partitions``: that one is the plan's max
    parallelism (``compile_options``), which the engine applies itself.
    """
    executor = spec.get("executor") or {}
    if int(executor.get("instances", 1)) == 0:  # no executor pods: the driver runs the tasks itself
        conf = {"spark.master": f"local[{task_slots(spec)}]"}
        conf.update({k: str(v) for k, v in (spec.get("sparkConf") or {}).items()})
        conf.pop("spark.sql.shuffle.partitions", None)
        return conf
    conf = {
        "spark.master": KUBERNETES_MASTER,
        "spark.submit.deployMode": "client",
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.container.image": image,
        "spark.kubernetes.driver.pod.name": pod_name,
        "spark.kubernetes.executor.podNamePrefix": pod_name,
        "spark.kubernetes.executor.podTemplateFile": f"{SPARK_MOUNT}/{EXECUTOR_TEMPLATE_KEY}",
        "spark.kubernetes.executor.podTemplateContainerName": "executor",
        "spark.driver.host": f"{pod_name}.{namespace}.svc",
        "spark.driver.bindAddress": "0.0.0.0",
        "spark.driver.port": str(DRIVER_PORT),
        "spark.driver.blockManager.port": str(BLOCK_MANAGER_PORT),
        "spark.executor.instances": str(executor.get("instances", 1)),
        "spark.executor.cores": str(executor.get("cores", 1)),
        "spark.executor.memory": _spark_memory(str(executor.get("memory", "1Gi"))),
        # The driver's calls to the API server (executor pods, their ConfigMap) give up after Spark's default 10 s
        # and fail the driver: a warm standby started during an upgrade met that on a busy API server (2026-12-07,
        # UpgradeRefused). 30 s rides out a slow API server; the user's sparkConf may still set either.
        "spark.kubernetes.driver.requestTimeout": "30000",
        "spark.kubernetes.driver.connectionTimeout": "30000",
    }
    # The driver's RPC and block-manager ports are published through its Service: only processes holding the
    # application's secret may talk to them. Spark on Kubernetes generates that secret per application and hands
    # it to the executor pods it creates (Spark's security docs, "Kubernetes"); the user's sparkConf may not
    # switch it off.
    conf.update({k: str(v) for k, v in (spec.get("sparkConf") or {}).items()})
    conf["spark.authenticate"] = "true"
    conf.pop("spark.sql.shuffle.partitions", None)
    return conf


def control_token_secret_name(job_name: str) -> str:
    return _dns(f"{job_key(job_name)}-control-token", 253)


def build_control_token_secret(job_name: str, token: str) -> dict[str, Any]:
    """``<job>-control-token``: the job's driver API token (owned by the SparkPlanJob, so it goes with it)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": control_token_secret_name(job_name),
                     "labels": {LABEL_JOB: _dns(job_name), LABEL_COMPONENT: "control-token"}},
        "data": {CONTROL_TOKEN_KEY: base64.b64encode(token.encode()).decode()},
    }


def secret_token(secret: dict[str, Any] | None) -> str | None:
    """The token a ``<job>-control-token`` Secret holds, or None when it has none."""
    encoded = ((secret or {}).get("data") or {}).get(CONTROL_TOKEN_KEY)
    if not encoded:
        return None
    try:
        return base64.b64decode(encoded).decode().strip() or None
    except ValueError:
        return None


def conf_args(conf: dict[str, str]) -> list[str]:
    """``--conf k=v`` pairs for ``planengine run``, sorted so a manifest is stable."""
    return [item for key in sorted(conf) for item in ("--conf", f"{key}={conf[key]}")]


# ------------------------------------------------------------------------------------------- pods
_POD_SECURITY = {"runAsNonRoot": True, "runAsUser": ENGINE_UID, "runAsGroup": ENGINE_UID, "fsGroup": ENGINE_UID,
                 "seccompProfile": {"type": "RuntimeDefault"}}
_CONTAINER_SECURITY = {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                       "capabilities": {"drop": ["ALL"]}}


def build_executor_pod_template(spec: dict[str, Any]) -> dict[str, Any]:
    """The pod template Spark starts executors from (``spark.kubernetes.executor.podTemplateFile``).

    Same user, read-only root filesystem and job root claim as the driver (executors commit state store
    files into the checkpoints), a writable ``/tmp``, a writable working directory (an executor copies the
    jars it fetches from the driver into its working directory: on the image's read-only home it dies with
    "Read-only file system" before its first task; Spark's own images use ``/opt/spark/work-dir``), and the
    command that starts Spark's executor backend (Spark passes ``executor`` as the args). The user's
    ``podTemplate`` applies as to the driver (its ``driver`` container's settings go to the ``executor``
    container). Spark fills in image, resources, env and ports."""
    volumes, mounts = _claim_volume(spec)
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": {LABEL_COMPONENT: "executor"}},
        "spec": {
            "securityContext": copy.deepcopy(_POD_SECURITY),
            "containers": [{
                "name": "executor",
                "command": list(EXECUTOR_COMMAND),
                "workingDir": EXECUTOR_WORK_DIR,
                "securityContext": copy.deepcopy(_CONTAINER_SECURITY),
                "volumeMounts": [*mounts, {"name": "tmp", "mountPath": "/tmp"},
                                 {"name": "work", "mountPath": EXECUTOR_WORK_DIR}],
            }],
            "volumes": [*volumes, {"name": "tmp", "emptyDir": {}}, {"name": "work", "emptyDir": {}}],
            **_store_identity(spec),
        },
    }
    env = storage.store_env(spec)  # Spark adds its own variables to the template's
    if env:
        pod["spec"]["containers"][0]["env"] = env
    return merge_pod_template(pod, _template_for("executor", spec))


def _template_for(container_name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The user's podTemplate for another pod of the job: its ``driver`` container's settings (volume mounts of
    the data the SQL reads and writes, env) go to that pod's container ``container_name``."""
    template = copy.deepcopy(spec.get("podTemplate") or {})
    for container in (template.get("spec") or {}).get("containers") or []:
        if container.get("name") == "driver":
            container["name"] = container_name
    return template


def build_executor_configmap(job_name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """``<job>-executor``: the executor pod template, mounted into driver pods at ``SPARK_MOUNT``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": _dns(f"{job_key(job_name)}-executor", 253),
                     "labels": {LABEL_JOB: job_key(job_name), LABEL_COMPONENT: "executor-template"}},
        "data": {EXECUTOR_TEMPLATE_KEY: yaml.safe_dump(build_executor_pod_template(spec), sort_keys=False)},
    }


def build_driver_pod(
    *, job_name: str, namespace: str, spec: dict[str, Any], image: str, run_id: str, argv: list[str],
    role: str = ROLE_ACTIVE,
) -> dict[str, Any]:
    """A driver: ``planengine run`` as the image's user with a read-only root filesystem.

    ``argv`` is the image entrypoint's arguments (the entrypoint is ``planengine``). The status API binds the
    pod IP (``PLANENGINE_STATUS_HOST`` from the downward API) and the job root is the claim's directory; the
    pod may take over a ``RUN_LOCK`` a dead driver left (``PLANENGINE_TAKE_OVER_RUN_LOCK``): the launcher creates
    a driver only after every other active driver pod of the job is gone, and a standby starts its run only
    after the old driver stopped."""
    driver = spec.get("driver") or {}
    name = driver_pod_name(job_name, run_id)
    volumes, mounts = _claim_volume(spec)
    volumes += [{"name": "control-token", "secret": {"secretName": control_token_secret_name(job_name),
                                                     "defaultMode": 0o440}},
                {"name": "tmp", "emptyDir": {}},
                {"name": "plan", "configMap": {"name": _dns(f"{job_key(job_name)}-plan", 253)}},
                {"name": "spark", "configMap": {"name": _dns(f"{job_key(job_name)}-executor", 253)}}]
    mounts += [{"name": "tmp", "mountPath": "/tmp"},
               {"name": "plan", "mountPath": PLAN_MOUNT, "readOnly": True},
               {"name": "spark", "mountPath": SPARK_MOUNT, "readOnly": True},
               {"name": "control-token", "mountPath": CONTROL_TOKEN_MOUNT, "readOnly": True}]
    conf = spark_conf(spec, namespace=namespace, pod_name=name, image=image)
    labels = {LABEL_JOB: job_key(job_name), LABEL_RUN: _dns(run_id), LABEL_COMPONENT: "driver", LABEL_ROLE: role}
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "restartPolicy": "Never",
            "serviceAccountName": DRIVER_SERVICE_ACCOUNT,
            "terminationGracePeriodSeconds": 30,
            "securityContext": copy.deepcopy(_POD_SECURITY),
            "containers": [{
                "name": "driver",
                "image": image,
                # A driver that exits with an error leaves its last log lines (the engine's one-line error and
                # its hint) in the container status, where the operator reads why it failed without log access.
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "args": [*argv, "--status-port", str(STATUS_PORT), *conf_args(conf)],
                "env": [
                    {"name": "PLANENGINE_RUN_ID", "value": run_id},
                    # The job_name label of the driver's metrics (an engine without metrics ignores it).
                    {"name": "PLANENGINE_JOB", "value": f"{namespace}/{job_name}"},
                    {"name": "PLANENGINE_TAKE_OVER_RUN_LOCK", "value": "1"},
                    {"name": "PLANENGINE_STATUS_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    # The file, never the token: an env var is readable by anyone who may read the pod spec.
                    {"name": "PLANENGINE_CONTROL_TOKEN_FILE", "value": f"{CONTROL_TOKEN_MOUNT}/{CONTROL_TOKEN_KEY}"},
                    # An s3a:// job root: the store's address, and its credentials as Secret references.
                    *storage.store_env(spec),
                ],
                "ports": [{"name": "status", "containerPort": STATUS_PORT},
                          {"name": "driver-rpc", "containerPort": DRIVER_PORT},
                          {"name": "blockmanager", "containerPort": BLOCK_MANAGER_PORT}],
                "resources": {
                    "requests": {"cpu": str(driver.get("cores", 1)), "memory": driver.get("memory", "1Gi")},
                    "limits": {"memory": driver.get("memory", "1Gi")},
                },
                "securityContext": copy.deepcopy(_CONTAINER_SECURITY),
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


def _headless_service(name: str, labels: dict[str, str], selector: dict[str, str],
                      ports: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "clusterIP": "None",
            # Executors and the operator need the address while the pod starts (before it is Ready).
            "publishNotReadyAddresses": True,
            "selector": selector,
            "ports": ports,
        },
    }


def build_service(job_name: str) -> dict[str, Any]:
    """``<job>-driver``: the job's status API, selecting the active driver (a promoted standby included)."""
    job = job_key(job_name)
    return _headless_service(
        _dns_label(f"{job_key(job_name)}-driver"), {LABEL_JOB: job},
        {LABEL_JOB: job, LABEL_COMPONENT: "driver", LABEL_ROLE: ROLE_ACTIVE},
        [{"name": "status", "port": STATUS_PORT}])


def build_run_service(job_name: str, run_id: str) -> dict[str, Any]:
    """The Service of one driver pod (same name): its ``spark.driver.host`` and its status API; owned by the
    pod (``owned_by``) so it goes with it."""
    job = job_key(job_name)
    return _headless_service(
        driver_pod_name(job_name, run_id), {LABEL_JOB: job, LABEL_RUN: _dns(run_id)},
        {LABEL_JOB: job, LABEL_RUN: _dns(run_id), LABEL_COMPONENT: "driver"},
        [{"name": "status", "port": STATUS_PORT}, {"name": "driver-rpc", "port": DRIVER_PORT},
         {"name": "blockmanager", "port": BLOCK_MANAGER_PORT}])


def tool_pod_name(job_name: str, key: str) -> str:
    return _dns(f"{job_key(job_name)}-{key}")


def build_tool_pod(
    *, job_name: str, key: str, spec: dict[str, Any], image: str, argv: list[str],
    command: list[str] | None = None, input_configmap: str | None = None, namespace: str = "", job_root: str = "",
) -> dict[str, Any]:
    """A short-lived pod running one CLI command (compile, check, migrate, snapshot) on an engine image.

    ``argv`` goes to the image's entrypoint (``planengine``) unless ``command`` replaces it. Files for the
    command come from ``input_configmap``, mounted at ``TOOL_INPUT_MOUNT``. The user's podTemplate applies as
    to executors (``check --snapshot`` builds the plan's real sources)."""
    volumes, mounts = _claim_volume(spec)
    # The plan in force, as drivers see it (optional: the compile pod runs before it exists).
    volumes += [{"name": "tmp", "emptyDir": {}},
                {"name": "plan", "configMap": {"name": _dns(f"{job_key(job_name)}-plan", 253), "optional": True}}]
    mounts += [{"name": "tmp", "mountPath": "/tmp"}, {"name": "plan", "mountPath": PLAN_MOUNT, "readOnly": True}]
    if input_configmap:
        volumes.append({"name": "input", "configMap": {"name": input_configmap}})
        mounts.append({"name": "input", "mountPath": TOOL_INPUT_MOUNT, "readOnly": True})
    container: dict[str, Any] = {
        "name": "tool", "image": image, "args": list(argv),
        # Which job this tool works for (as the local launcher says it); the engine does not need them.
        "env": [{"name": "PLANENGINE_JOB", "value": f"{namespace}/{job_name}"},
                {"name": "PLANENGINE_JOB_ROOT", "value": job_root}, *storage.store_env(spec)],
        "securityContext": copy.deepcopy(_CONTAINER_SECURITY),
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
        "volumeMounts": mounts,
    }
    if command:
        container["command"] = list(command)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": tool_pod_name(job_name, key),
                     "labels": {LABEL_JOB: job_key(job_name), LABEL_COMPONENT: "tool"}},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,  # a tool needs no API access
            "securityContext": copy.deepcopy(_POD_SECURITY),
            "containers": [container],
            "volumes": volumes,
            **_store_identity(spec),
        },
    }
    merged = merge_pod_template(pod, _template_for("tool", spec))  # the data the catalog's tables name
    merged["metadata"]["labels"][LABEL_COMPONENT] = "tool"
    merged["spec"]["restartPolicy"] = "Never"
    return merged
