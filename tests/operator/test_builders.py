import pytest

from planengine_operator import builders

SPEC = {"driver": {"cores": 2, "memory": "2Gi"}, "executor": {"instances": 3, "cores": 1, "memory": "4Gi"},
        "sparkConf": {"spark.sql.shuffle.partitions": "8"}, "storage": {"pvc": {"claimName": "data"}}}


def pod(spec=SPEC):
    argv = builders.run_argv("/var/lib/planengine/job/plan.json", builders.JOB_ROOT_MOUNT, None)
    return builders.build_driver_pod(job_name="clicks", namespace="ns", spec=spec, image="img:0.2",
                                     run_id="r1", argv=argv, service="clicks-driver",
                                     plan_configmap="clicks-plan")


def test_driver_pod_is_non_root_read_only_and_runs_planengine_run():
    manifest = pod()
    container = manifest["spec"]["containers"][0]
    assert manifest["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["args"][:3] == ["planengine", "run", "--plan"]
    assert "spark.executor.instances=3" in container["args"]
    assert "spark.executor.memory=4g" in container["args"]
    assert "spark.sql.shuffle.partitions=8" in container["args"]
    assert {"name": "PLANENGINE_RUN_ID", "value": "r1"} in container["env"]
    assert {"claimName": "data"} in [v.get("persistentVolumeClaim") for v in manifest["spec"]["volumes"]]
    assert manifest["metadata"]["labels"][builders.LABEL_RUN] == "r1"


def test_pod_template_merges_labels_and_named_lists():
    spec = {**SPEC, "podTemplate": {"metadata": {"labels": {"team": "a"}},
                                    "spec": {"containers": [{"name": "driver", "env": [{"name": "X",
                                                                                         "value": "1"}]}],
                                             "tolerations": [{"key": "spot", "operator": "Exists"}]}}}
    manifest = pod(spec)
    assert manifest["metadata"]["labels"]["team"] == "a"
    assert manifest["metadata"]["labels"][builders.LABEL_JOB] == "clicks"
    assert manifest["spec"]["tolerations"] == [{"key": "spot", "operator": "Exists"}]
    assert manifest["spec"]["containers"][0]["image"] == "img:0.2"


def test_service_is_headless_and_selects_the_driver():
    service = builders.build_service("clicks")
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"][builders.LABEL_COMPONENT] == "driver"


def test_plan_configmap_is_labelled_with_the_plan_id():
    cm = builders.build_plan_configmap("clicks", '{"planId": "abc"}', "abc")
    assert cm["metadata"]["name"] == "clicks-plan" and cm["metadata"]["labels"][builders.LABEL_PLAN] == "abc"


@pytest.mark.parametrize("root_a,root_b,same", [("/a/b", "/a/b/", True), ("/a/b", "/a/c", False)])
def test_lease_name_is_a_function_of_the_job_root(root_a, root_b, same):
    assert (builders.lease_name(root_a) == builders.lease_name(root_b)) is same


def test_manifests_validate_against_kubernetes_schemas():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for manifest in (pod(), builders.build_service("clicks"),
                     builders.build_plan_configmap("clicks", "{}", "abc"),
                     builders.build_lease("/a", "ns/j/uid"),
                     builders.build_tool_pod(job_name="clicks", key="check-0.2", spec=SPEC, image="i",
                                             argv=["check", "--plan", "p", "--json"])):
        kubernetes_validate.validate(manifest, "1.30", strict=True)
