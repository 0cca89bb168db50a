"""The Kubernetes manifests the operator builds, checked against what would run them: the engine's own CLI
parser (the container args), the engine image (Dockerfile USER, ENTRYPOINT, installed files) and the
Kubernetes schemas (kubernetes-validate). The pod runner (tests/operator/kubelet) then runs them for real."""

from __future__ import annotations

import copy

import pytest
import yaml

from planengine_operator import builders
from planengine_operator.launchers.local import local_spark_conf
from tests.operator.kubelet.image import engine_image

SPEC = {"driver": {"cores": 2, "memory": "2Gi"}, "executor": {"instances": 3, "cores": 2, "memory": "4Gi"},
        "sparkConf": {"spark.sql.shuffle.partitions": "8", "spark.executor.memoryOverhead": "1g"},
        "storage": {"pvc": {"claimName": "data", "subPath": "jobs/clicks"}}}
ROOT = builders.job_root_for_pod(SPEC, "ns", "clicks")


def pod(spec=SPEC, role=builders.ROLE_ACTIVE, run_id="r20261124T233910-ab12cd"):
    argv = builders.run_argv(f"{ROOT}/plan.json", ROOT, None)
    return builders.build_driver_pod(job_name="clicks", namespace="ns", spec=spec, image="img:0.2", run_id=run_id,
                                     argv=argv, role=role)


def parse_engine_args(args):
    """The container args as the engine's entrypoint parses them (a wrong flag is argparse's exit 2)."""
    from planengine.cli import build_parser
    from planengine.commands._env import spark_conf_from_args
    from planengine.runtime.engine.session import set_cli_conf

    parsed = build_parser().parse_args(args)
    try:
        return parsed, spark_conf_from_args(parsed)
    finally:
        set_cli_conf({})  # the process's SparkSession (other tests') must not get a Kubernetes master


def test_driver_args_are_a_valid_command_line_of_the_images_entrypoint():
    container = pod()["spec"]["containers"][0]
    assert engine_image().entrypoint[-1] == "planengine"  # so the args must not repeat it
    parsed, conf = parse_engine_args(container["args"])
    assert parsed.command == "run" and parsed.job_root == ROOT and parsed.plan == f"{ROOT}/plan.json"
    assert parsed.status_port == builders.STATUS_PORT
    assert conf["spark.master"] == builders.KUBERNETES_MASTER
    assert conf["spark.executor.instances"] == "3" and conf["spark.executor.cores"] == "2"
    assert conf["spark.executor.memory"] == "4g"
    assert conf["spark.executor.memoryOverhead"] == "1g"  # the user's sparkConf reaches Spark
    assert "spark.sql.shuffle.partitions" not in conf  # the plan's max parallelism decides, not the driver


def test_a_failing_driver_leaves_its_last_log_lines_for_the_operator():
    """The driver's error reaches the operator through the pod status (``launchers.kubernetes.failure_message``),
    so the operator needs no right to read pod logs."""
    assert pod()["spec"]["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_standby_args_parse_too():
    argv = [*builders.run_argv(f"{ROOT}/plan.json", ROOT, None), "--standby"]
    manifest = builders.build_driver_pod(job_name="clicks", namespace="ns", spec=SPEC, image="img:0.2",
                                         run_id="r2", argv=argv, role=builders.ROLE_STANDBY)
    parsed, _ = parse_engine_args(manifest["spec"]["containers"][0]["args"])
    assert parsed.standby and manifest["metadata"]["labels"][builders.LABEL_ROLE] == "standby"


def test_the_kubernetes_master_settings_name_this_pod_and_its_own_service():
    manifest = pod()
    _, conf = parse_engine_args(manifest["spec"]["containers"][0]["args"])
    name = manifest["metadata"]["name"]
    assert conf["spark.kubernetes.namespace"] == "ns"
    assert conf["spark.kubernetes.driver.pod.name"] == name  # executors are owned by (and die with) this pod
    assert conf["spark.kubernetes.container.image"] == manifest["spec"]["containers"][0]["image"]
    service = builders.build_run_service("clicks", "r20261124T233910-ab12cd")
    assert conf["spark.driver.host"] == f"{service['metadata']['name']}.ns.svc"
    assert all(manifest["metadata"]["labels"][k] == v for k, v in service["spec"]["selector"].items())
    assert service["spec"]["publishNotReadyAddresses"] is True  # executors connect before the pod is Ready
    ports = {p["port"] for p in service["spec"]["ports"]}
    assert {int(conf["spark.driver.port"]), int(conf["spark.driver.blockManager.port"])} <= ports
    template_path = conf["spark.kubernetes.executor.podTemplateFile"]
    mounts = {m["mountPath"]: m["name"] for m in manifest["spec"]["containers"][0]["volumeMounts"]}
    directory, _, key = template_path.rpartition("/")
    volume = next(v for v in manifest["spec"]["volumes"] if v["name"] == mounts[directory])
    assert volume["configMap"]["name"] == builders.build_executor_configmap("clicks", SPEC)["metadata"]["name"]
    assert key in builders.build_executor_configmap("clicks", SPEC)["data"]
    assert manifest["spec"]["serviceAccountName"] == builders.DRIVER_SERVICE_ACCOUNT
    assert conf["spark.kubernetes.driver.requestTimeout"] == "30000"  # a busy API server must not fail a driver


def test_no_executors_means_tasks_in_the_driver():
    spec = {**SPEC, "executor": {"instances": 0}, "sparkConf": {}}
    _, conf = parse_engine_args(pod(spec)["spec"]["containers"][0]["args"])
    assert conf["spark.master"] == "local[2]"  # the driver's 2 cores
    assert not any(k.startswith("spark.kubernetes.") for k in conf)


def test_pods_run_as_the_images_user():
    image = engine_image()
    assert image.uid == builders.ENGINE_UID
    tool = builders.build_tool_pod(job_name="clicks", key="check-0.2", spec=SPEC, image="i", argv=["check"])
    template = builders.build_executor_pod_template(SPEC)
    for manifest in (pod(), tool, template):
        security = manifest["spec"]["securityContext"]
        assert security["runAsUser"] == security["runAsGroup"] == security["fsGroup"] == image.uid
        assert security["runAsNonRoot"] is True


def test_everything_a_driver_writes_is_on_a_writable_volume_and_the_job_root_on_the_claim():
    manifest = pod()
    container = manifest["spec"]["containers"][0]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    writable = {m["mountPath"]: m["name"] for m in container["volumeMounts"] if not m.get("readOnly")}
    volumes = {v["name"]: v for v in manifest["spec"]["volumes"]}
    root_mount = next(path for path in writable if ROOT.startswith(path + "/"))
    assert volumes[writable[root_mount]]["persistentVolumeClaim"] == {"claimName": "data"}
    assert ROOT == "/var/lib/planengine/jobs/data/jobs/clicks"
    assert "emptyDir" in volumes[writable["/tmp"]]  # Spark's local dirs, the JVM's, Python's


@pytest.mark.parametrize("storage,reason", [
    (None, "no spec.storage"),
    ({"uri": "/data/jobs/a"}, "spec.storage.uri '/data/jobs/a'"),
    ({"uri": "s3a://bucket"}, "needs a prefix inside the bucket"),
    ({"pvc": {"claimName": "data", "subPath": "../other"}}, "no '..'"),
])
def test_the_kubernetes_launcher_needs_a_claim_for_the_job_root(storage, reason):
    spec = {"storage": storage} if storage else {}
    problem = builders.storage_problem(spec)
    assert problem is not None and reason in problem
    assert builders.storage_problem(SPEC) is None


@pytest.mark.parametrize("other,same", [
    ({"claimName": "data", "subPath": "jobs/clicks"}, True),
    ({"claimName": "data", "subPath": "jobs/clicks/"}, True),
    ({"claimName": "data", "subPath": "jobs/views"}, False),
    ({"claimName": "other", "subPath": "jobs/clicks"}, False),
])
def test_the_fencing_lease_is_one_per_directory_not_one_for_every_claim_job(other, same):
    mine = builders.lease_name(ROOT)
    theirs = builders.lease_name(builders.job_root_for_pod({"storage": {"pvc": other}}, "ns", "x"))
    assert (mine == theirs) is same


def test_status_api_binds_the_pod_ip_and_a_restart_may_take_over_a_dead_pods_lock():
    env = {e["name"]: e for e in pod()["spec"]["containers"][0]["env"]}
    assert env["PLANENGINE_STATUS_HOST"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert env["PLANENGINE_TAKE_OVER_RUN_LOCK"]["value"] == "1"
    assert env["PLANENGINE_RUN_ID"]["value"] == "r20261124T233910-ab12cd"
    assert env["PLANENGINE_JOB"]["value"] == "ns/clicks"  # the job_name label of the driver's metrics


def test_the_job_service_selects_only_the_active_driver_and_each_run_has_its_own():
    service = builders.build_service("clicks")
    active, standby = pod(run_id="r1"), pod(role=builders.ROLE_STANDBY, run_id="r2")

    def selects(svc, manifest):
        return all(manifest["metadata"]["labels"].get(k) == v for k, v in svc["spec"]["selector"].items())

    assert selects(service, active) and not selects(service, standby)
    promoted = copy.deepcopy(standby)
    promoted["metadata"]["labels"][builders.LABEL_ROLE] = builders.ROLE_ACTIVE
    assert selects(service, promoted)
    assert active["metadata"]["name"] != standby["metadata"]["name"]
    for run_id, manifest in (("r1", active), ("r2", standby)):
        run_service = builders.build_run_service("clicks", run_id)
        assert run_service["metadata"]["name"] == manifest["metadata"]["name"]
        assert selects(run_service, manifest) and not selects(run_service, promoted if run_id == "r1" else active)


def test_executor_pods_start_spark_s_executor_backend_from_the_image():
    template = builders.build_executor_pod_template(SPEC)
    container = template["spec"]["containers"][0]
    image = engine_image()
    assert container["command"][:2] == ["/usr/bin/tini", "--"]
    assert container["command"][2] in image.installed_files  # the Dockerfile COPYs the launcher there
    script = image.installed_files[container["command"][2]].read_text()
    assert "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend" in script
    for variable in ("SPARK_DRIVER_URL", "SPARK_EXECUTOR_ID", "SPARK_EXECUTOR_CORES", "SPARK_APPLICATION_ID",
                     "SPARK_EXECUTOR_POD_IP", "SPARK_RESOURCE_PROFILE_ID", "SPARK_EXECUTOR_POD_NAME",
                     "SPARK_EXECUTOR_MEMORY"):
        assert f"${{{variable}" in script or f"${variable}" in script, variable
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert "/tmp" in mounts and f"{builders.JOB_ROOTS}/data" in mounts  # state store commits go to the job root
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_executor_backend_class_is_in_the_pinned_spark():
    import zipfile
    from pathlib import Path

    pyspark = pytest.importorskip("pyspark")
    jars = list((Path(pyspark.__file__).parent / "jars").glob("spark-kubernetes_*.jar"))
    assert jars, "pyspark ships no spark-kubernetes jar"
    names = zipfile.ZipFile(jars[0]).namelist()
    assert "org/apache/spark/scheduler/cluster/k8s/KubernetesExecutorBackend.class" in names


def test_pod_template_merges_into_driver_and_executors():
    spec = {**SPEC, "podTemplate": {"metadata": {"labels": {"team": "a"}},
                                    "spec": {"containers": [{"name": "driver", "env": [{"name": "X",
                                                                                         "value": "1"}]}],
                                             "tolerations": [{"key": "spot", "operator": "Exists"}]}}}
    manifest = pod(spec)
    assert manifest["metadata"]["labels"]["team"] == "a"
    assert manifest["metadata"]["labels"][builders.LABEL_JOB] == "clicks"
    assert manifest["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert manifest["spec"]["containers"][0]["image"] == "img:0.2"
    template = builders.build_executor_pod_template(spec)
    assert template["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert {"name": "X", "value": "1"} in template["spec"]["containers"][0]["env"]
    assert [c["name"] for c in template["spec"]["containers"]] == ["executor"]


def test_plan_configmap_is_labelled_with_the_plan_id():
    cm = builders.build_plan_configmap("clicks", '{"planId": "abc"}', "abc")
    assert cm["metadata"]["name"] == "clicks-plan" and cm["metadata"]["labels"][builders.LABEL_PLAN] == "abc"


@pytest.mark.parametrize("spec,expected", [
    ({}, None),
    ({"executor": {"instances": 4, "cores": 2}}, "8"),
    ({"executor": {"instances": 0}, "driver": {"cores": 3}}, "3"),
    ({"executor": {"instances": 4}, "sparkConf": {"spark.sql.shuffle.partitions": "64"}}, "64"),
])
def test_the_max_parallelism_compiled_into_the_plan(spec, expected):
    assert builders.compile_options(spec).get("pipeline.max-parallelism") == expected
    script = builders.build_compile_script("INSERT INTO s SELECT * FROM t", None, builders.compile_options(spec))
    assert (f"SET 'pipeline.max-parallelism' = '{expected}';" in script) is (expected is not None)


def test_local_driver_runs_executors_in_process():
    assert local_spark_conf({"executor": {"instances": 2, "cores": 3}}) == {"spark.master": "local[6]"}
    assert local_spark_conf({"sparkConf": {"spark.driver.memory": "3g"}}) == {"spark.driver.memory": "3g"}


def test_manifests_validate_against_kubernetes_schemas():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    executor_cm = builders.build_executor_configmap("clicks", SPEC)
    for manifest in (pod(), pod(role=builders.ROLE_STANDBY), builders.build_service("clicks"),
                     builders.build_run_service("clicks", "r1"), executor_cm,
                     yaml.safe_load(executor_cm["data"][builders.EXECUTOR_TEMPLATE_KEY]),
                     builders.build_plan_configmap("clicks", "{}", "abc"),
                     builders.build_lease("/a", "ns/j/uid"),
                     builders.build_tool_pod(job_name="clicks", key="check-0.2", spec=SPEC, image="i",
                                             argv=["check", "--plan", "p", "--json"], input_configmap="in"),
                     builders.build_tool_pod(job_name="clicks", key="read-1", spec=SPEC, image="i", argv=[],
                                             command=["cat", f"{ROOT}/plan.json"])):
        kubernetes_validate.validate(manifest, "1.30", strict=True)


def test_service_names_are_dns_labels_even_for_jobs_named_with_a_digit_first():
    assert builders.build_service("7eleven")["metadata"]["name"] == "j-7eleven-driver"
    assert builders.driver_pod_name("7eleven", "r1")[0].isalpha()


@pytest.mark.parametrize("instances,authenticated", [(3, True), (0, False)])
def test_spark_rpc_is_authenticated_whenever_executors_connect(instances, authenticated):
    """Executors reach the driver's published RPC ports: Spark must authenticate them (it generates the secret
    and hands it to the executor pods itself); a user's sparkConf cannot switch that off."""
    spec = {**SPEC, "executor": {"instances": instances}, "sparkConf": {"spark.authenticate": "false"}}
    _, conf = parse_engine_args(pod(spec)["spec"]["containers"][0]["args"])
    assert (conf.get("spark.authenticate") == "true") is authenticated


def test_driver_and_standby_pods_read_the_control_token_from_the_jobs_secret():
    for role in (builders.ROLE_ACTIVE, builders.ROLE_STANDBY):
        manifest = pod(role=role)
        container = manifest["spec"]["containers"][0]
        env = {e["name"]: e for e in container["env"]}
        path = env["PLANENGINE_CONTROL_TOKEN_FILE"]["value"]
        mount = next(m for m in container["volumeMounts"] if m["name"] == "control-token")
        volume = next(v for v in manifest["spec"]["volumes"] if v["name"] == "control-token")
        assert path == f"{mount['mountPath']}/{builders.CONTROL_TOKEN_KEY}" and mount["readOnly"]
        assert volume["secret"]["secretName"] == builders.control_token_secret_name("clicks") == "clicks-control-token"
        assert volume["secret"]["defaultMode"] == 0o440  # the image's group (fsGroup) reads it, nobody else


def test_the_token_secret_holds_the_token_and_nothing_else_shows_it():
    secret = builders.build_control_token_secret("clicks", "s3cr3t-token-value-123456")
    assert builders.secret_token(secret) == "s3cr3t-token-value-123456"
    assert builders.secret_token(None) is None and builders.secret_token({"data": {}}) is None
    assert "s3cr3t-token-value-123456" not in yaml.safe_dump(pod())
