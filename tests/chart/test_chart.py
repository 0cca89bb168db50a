"""The planengine-operator chart, rendered by the real helm and checked against Kubernetes schemas."""

from __future__ import annotations

import base64
import re
import tarfile
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "planengine-operator"
NAMESPACE = "planengine-system"
KUBERNETES_VERSION = "1.35.0"
CONFIG_PATH = "/etc/planengine-operator/config.yaml"

CA_BUNDLE = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
SCENARIOS = {
    "default": {},
    "namespaced": {"watchNamespaces": ["a", "b"]},
    "webhook-secret": {
        "webhook": {"enabled": True, "certificate": {"secretName": "my-webhook-tls", "caBundle": CA_BUNDLE}},
    },
    "webhook-cert-manager-and-servicemonitor": {
        "watchNamespaces": ["a"],
        "webhook": {"enabled": True, "certManager": {"enabled": True, "issuerRef": {"name": "ca-issuer"}}},
        "metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
                    "podMonitor": {"enabled": True}, "grafanaDashboard": {"enabled": True}},
    },
    "local-launcher": {"config": {"launcher": "local"}, "localJobRoot": {"existingClaim": "jobs"}},
}
# Kinds from other projects' CRDs: kubernetes-validate has no schema for them, so they are checked by hand.
NON_CORE_KINDS = {"ServiceMonitor", "PodMonitor", "Certificate"}

NAMESPACED_RESOURCES = {
    ("planengine.io", "sparkplanjobs"), ("planengine.io", "sparkplanjobs/status"), ("", "pods"),
    ("", "services"), ("", "configmaps"), ("", "persistentvolumeclaims"), ("", "events"),
    ("coordination.k8s.io", "leases"),
}
# (apiGroup, resource, verb) the operator must be allowed wherever it manages jobs.
REQUIRED_NAMESPACED = [
    ("planengine.io", "sparkplanjobs", verb) for verb in ("get", "list", "watch", "patch")
] + [
    ("planengine.io", "sparkplanjobs/status", "patch"),
    *[("", "pods", verb) for verb in ("get", "list", "watch", "create", "delete")],
    *[("", "services", verb) for verb in ("get", "list", "watch", "create", "delete")],
    *[("", "configmaps", verb) for verb in ("get", "list", "watch", "create", "update")],
    *[("", "persistentvolumeclaims", verb) for verb in ("get", "list", "watch", "create")],
    ("", "events", "create"),
    *[("coordination.k8s.io", "leases", verb) for verb in ("get", "create", "update")],
]
REQUIRED_CLUSTER_SCOPED = [
    ("apiextensions.k8s.io", "customresourcedefinitions", "get"),
    ("apiextensions.k8s.io", "customresourcedefinitions", "list"),
    ("apiextensions.k8s.io", "customresourcedefinitions", "watch"),
    ("", "namespaces", "list"),
    ("", "namespaces", "watch"),
]


def find(manifests, kind, name=None, namespace=None, component=None):
    return [
        m for m in manifests
        if m["kind"] == kind
        and (name is None or m["metadata"]["name"] == name)
        and (namespace is None or m["metadata"].get("namespace") == namespace)
        and (component is None or (m["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == component)
    ]


def one(manifests, kind, **filters):
    found = find(manifests, kind, **filters)
    assert len(found) == 1, f"expected exactly one {kind} {filters}, found {len(found)}"
    return found[0]


def allows(rules, group, resource, verb):
    return any(
        group in rule.get("apiGroups", []) and resource in rule["resources"] and verb in rule["verbs"]
        for rule in rules
    )


def operator_container(manifests):
    deployment = one(manifests, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return deployment, container


def operator_config(manifests):
    configmap = one(manifests, "ConfigMap")
    return yaml.safe_load(configmap["data"]["config.yaml"])


def uncommented_keys(text: str) -> list[str]:
    """Keys of a values file with neither a comment line directly above nor a trailing comment."""
    missing = []
    previous = ""
    for line in text.splitlines():
        stripped = line.strip()
        match = re.match(r'^\s*(?:- )?("[^"]+"|[A-Za-z0-9_.-]+):(\s|$)', line)
        commented = previous.startswith("#") or "#" in line.split(":", 1)[-1]
        if match and not stripped.startswith("#") and not commented:
            missing.append(match.group(1))
        if stripped:
            previous = stripped
    return missing


# --- helm lint and schema validation of everything rendered ----------------------------------------


@pytest.mark.parametrize("scenario", ["default", "namespaced", "webhook-secret"])
def test_helm_lint_strict_passes(helm_run, scenario):
    result = helm_run("lint", "--strict", str(CHART), "--namespace", NAMESPACE, values=SCENARIOS[scenario])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[ERROR]" not in result.stdout and "[WARNING]" not in result.stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_rendered_manifest_validates_against_kubernetes_schemas(render, scenario):
    manifests = render(SCENARIOS[scenario])
    assert manifests
    unchecked = set()
    for manifest in manifests:
        if manifest["kind"] in NON_CORE_KINDS:
            unchecked.add(manifest["kind"])
            continue
        try:
            kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.path)
            pytest.fail(f"{manifest['kind']}/{manifest['metadata']['name']}: {path}: {error.message}")
    expected_unchecked = set()
    if scenario == "webhook-cert-manager-and-servicemonitor":
        expected_unchecked = {"ServiceMonitor", "PodMonitor", "Certificate"}
    assert unchecked == expected_unchecked


def test_schema_validation_is_not_a_no_op(render):
    """Guard for the test above: a broken Deployment must be reported by the validator we rely on."""
    deployment = one(render(), "Deployment")
    deployment["spec"]["replicas"] = "one"
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)


def test_default_render_has_exactly_the_expected_resources(render):
    kinds = sorted(m["kind"] for m in render())
    assert kinds == sorted([
        "ClusterRole", "ClusterRoleBinding", "ConfigMap", "CustomResourceDefinition", "Deployment",
        "Service", "ServiceAccount",
        "Role", "RoleBinding", "ServiceAccount",  # the Spark drivers' (driverRbac)
        "NetworkPolicy",  # who may reach the drivers (networkPolicy)
    ])


def test_every_namespaced_resource_lands_in_the_release_namespace(render):
    for manifest in render({"webhook": SCENARIOS["webhook-secret"]["webhook"]}, namespace="ops"):
        if manifest["kind"] in {"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                                "ValidatingWebhookConfiguration"}:
            assert "namespace" not in manifest["metadata"]
        else:
            assert manifest["metadata"]["namespace"] == "ops", manifest["kind"]


# --- the values schema: typos and wrong types fail at install ----------------------------------------


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"imageTag": "1.0"}, "imageTag"),
        ({"image": {"tagg": "1.0"}}, "tagg"),
        ({"config": {"stability": {"minBatchs": 5}}}, "minBatchs"),
        ({"config": {"engines": {"0.1": {"imagee": "x"}}}}, "imagee"),
        ({"webhook": {"enabeld": True}}, "enabeld"),
        ({"securityContext": {"readOnlyRootFilesystm": True}}, "readOnlyRootFilesystm"),
        ({"config": {"defaultEngineVersion": 0.1}}, "defaultEngineVersion"),
        ({"config": {"launcher": "yarn"}}, "launcher"),
        ({"config": {"stability": {"window": "two minutes"}}}, "window"),
        ({"watchNamespaces": ["Team_A"]}, "watchNamespaces"),
        ({"podSecurityContext": {"runAsNonRoot": False}}, "runAsNonRoot"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_values_schema_rejects_typos_and_bad_values(helm_run, template_args, values, complaint):
    result = helm_run(*template_args(), values=values)
    assert result.returncode != 0, f"helm accepted {values}"
    assert "schema" in result.stderr and complaint in result.stderr, result.stderr


def test_helm_lint_strict_rejects_a_typo(helm_run):
    result = helm_run("lint", "--strict", str(CHART), values={"rbac": {"craete": False}})
    assert result.returncode != 0
    assert "craete" in result.stdout + result.stderr


def test_schema_closes_every_object_level():
    import json

    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
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

    walk(schema, "")
    assert open_objects == []


def test_default_engine_version_must_be_in_the_engine_catalog(helm_run, template_args):
    result = helm_run(*template_args(), values={"config": {"defaultEngineVersion": "0.9"}})
    assert result.returncode != 0
    assert 'config.defaultEngineVersion "0.9" is not a key of config.engines (0.1)' in result.stderr


def test_every_values_key_has_a_comment():
    text = (CHART / "values.yaml").read_text()
    assert uncommented_keys(text) == []
    # The check itself must be able to fail.
    assert uncommented_keys("# ok\nimage:\n  # ok\n  tag: x\n  pullPolicy: Always\nplain: 1 # trailing\n") == [
        "pullPolicy"
    ]


# --- the operator Deployment --------------------------------------------------------------------------


def test_operator_pod_is_hardened(render):
    deployment, container = operator_container(render())
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["runAsNonRoot"] is True
    assert security["capabilities"]["drop"] == ["ALL"]
    assert "add" not in security["capabilities"]
    # A read-only root needs a writable /tmp.
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]


def test_one_operator_replaced_not_overlapped(render):
    deployment, _ = operator_container(render())
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"]["type"] == "Recreate"


def test_probes_hit_the_health_endpoint_and_metrics_port_is_exposed(render):
    _, container = operator_container(render({"metrics": {"port": 9090}, "health": {"port": 8181}}))
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"health": 8181, "metrics": 9090}
    assert "http://0.0.0.0:8181/healthz" in container["args"]
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "health"}


def test_operator_command_config_and_namespaces(render):
    deployment, container = operator_container(render())
    assert container["command"] == ["planengine-operator"]
    assert container["args"] == ["--config", CONFIG_PATH, "--liveness", "http://0.0.0.0:8081/healthz"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["PLANENGINE_OPERATOR_CONFIG"] == CONFIG_PATH
    mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    assert CONFIG_PATH.startswith(mount["mountPath"] + "/")
    volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "config")
    configmap = one(render(), "ConfigMap")
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]

    _, container = operator_container(render({"watchNamespaces": ["a", "b"], "extraArgs": ["--verbose"]}))
    assert container["args"] == [
        "--config", CONFIG_PATH, "--liveness", "http://0.0.0.0:8081/healthz",
        "--namespace", "a", "--namespace", "b", "--verbose",
    ]


def test_image_defaults_to_app_version_and_digest_pins_it(render):
    app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    _, container = operator_container(render())
    assert container["image"] == f"ghcr.io/planengine/operator:{app_version}"
    digest = "sha256:" + "a" * 64
    _, container = operator_container(render({"image": {"tag": "9.9", "digest": digest}}))
    assert container["image"] == f"ghcr.io/planengine/operator@{digest}"


def test_config_change_rolls_the_operator(render):
    def checksum(values):
        deployment, _ = operator_container(render(values))
        return deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    assert checksum({}) == checksum({})
    assert checksum({}) != checksum({"config": {"rollout": {"maxConcurrent": 2}}})


def test_local_launcher_gets_a_writable_job_root(render):
    deployment, container = operator_container(render(SCENARIOS["local-launcher"]))
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/var/lib/planengine/jobs")
    volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    assert volume["persistentVolumeClaim"] == {"claimName": "jobs"}
    _, container = operator_container(render())
    assert all(m["mountPath"] != "/var/lib/planengine/jobs" for m in container["volumeMounts"])


# --- the operator configuration (shared contract with planengine_operator.config) ---------------------


def test_default_config_is_exactly_the_contract(render):
    assert operator_config(render()) == {
        "defaultEngineVersion": "0.1",
        "engines": {
            "0.1": {
                "image": "ghcr.io/planengine/engine:0.1",
                "sparkVersion": "4.3.0",
                "localCommand": ["planengine"],
            },
        },
        "launcher": "kubernetes",
        "rollout": {"maxConcurrent": 1},
        "stability": {"minBatches": 3, "window": "120s"},
        "snapshots": {"maxCount": 10, "maxAge": "7d", "interval": "0s"},
        "jobRootBase": "/var/lib/planengine/jobs",
        "admission": {"allowPrivilegedPodTemplate": False, "allowedHostPathPrefixes": [], "allowImageOverride": False,
                      "allowJvmOptions": False},
        "watchNamespaces": [],
        "metrics": {"port": 8080},
    }


def test_config_follows_the_values(render):
    engines = {
        "0.1": {"image": "registry.example/engine:0.1", "sparkVersion": "4.3.0", "localCommand": ["planengine"]},
        "0.2": {"image": "registry.example/engine:0.2", "sparkVersion": "4.3.0",
                "localCommand": ["/opt/pe-0.2/bin/planengine", "-v"]},
    }
    config = operator_config(render({
        "watchNamespaces": ["team-a", "team-b"],
        "metrics": {"port": 9102},
        "config": {
            "defaultEngineVersion": "0.2",
            "engines": engines,
            "rollout": {"maxConcurrent": 4},
            "stability": {"minBatches": 5, "window": "5m"},
            "snapshots": {"maxCount": 3, "maxAge": "1d", "interval": "1h"},
        },
    }))
    assert config["defaultEngineVersion"] == "0.2"
    assert config["engines"] == engines
    assert all(isinstance(version, str) for version in config["engines"])
    assert config["rollout"] == {"maxConcurrent": 4}
    assert config["stability"] == {"minBatches": 5, "window": "5m"}
    assert config["snapshots"] == {"maxCount": 3, "maxAge": "1d", "interval": "1h"}
    assert config["watchNamespaces"] == ["team-a", "team-b"]
    assert config["metrics"] == {"port": 9102}


@pytest.mark.parametrize("scenario", ["default", "namespaced", "local-launcher"])
def test_rendered_config_loads_in_the_operator(render, tmp_path, scenario):
    operator_config_module = pytest.importorskip("planengine_operator.config")
    path = tmp_path / "config.yaml"
    path.write_text(one(render(SCENARIOS[scenario]), "ConfigMap")["data"]["config.yaml"])
    loaded = operator_config_module.load_config(path)
    assert loaded.defaultEngineVersion == "0.1"
    assert loaded.engines["0.1"].image == "ghcr.io/planengine/engine:0.1"
    assert loaded.watchNamespaces == SCENARIOS[scenario].get("watchNamespaces", [])


# --- RBAC ---------------------------------------------------------------------------------------------


def test_cluster_wide_rbac_by_default(render):
    manifests = render()
    operator = "operator"
    assert find(manifests, "Role", component=operator) == []
    assert find(manifests, "RoleBinding", component=operator) == []
    rules = one(manifests, "ClusterRole")["rules"]
    for permission in REQUIRED_NAMESPACED + REQUIRED_CLUSTER_SCOPED:
        assert allows(rules, *permission), permission
    binding = one(manifests, "ClusterRoleBinding")
    account = one(manifests, "ServiceAccount", component=operator)
    assert binding["roleRef"]["name"] == one(manifests, "ClusterRole")["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": NAMESPACE}
    ]
    deployment, _ = operator_container(manifests)
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]


def test_namespaced_rbac_grants_roles_only_in_watched_namespaces(render):
    manifests = [m for m in render({"watchNamespaces": ["a", "b"]})
                 if m["metadata"].get("labels", {}).get("app.kubernetes.io/component") != "driver"]
    account = one(manifests, "ServiceAccount")["metadata"]["name"]
    for namespace in ("a", "b"):
        role = one(manifests, "Role", namespace=namespace)
        for permission in REQUIRED_NAMESPACED:
            assert allows(role["rules"], *permission), (namespace, permission)
        binding = one(manifests, "RoleBinding", namespace=namespace)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"],
        }
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}]
    # Only leader election in the operator's own namespace, nothing else anywhere.
    assert {r["metadata"]["namespace"] for r in find(manifests, "Role")} == {"a", "b", NAMESPACE}
    own = one(manifests, "Role", namespace=NAMESPACE)
    assert not allows(own["rules"], "", "pods", "create")
    assert allows(own["rules"], "coordination.k8s.io", "leases", "update")
    # The ClusterRole keeps only kopf's cluster-scoped reads.
    cluster_rules = one(manifests, "ClusterRole")["rules"]
    for permission in REQUIRED_CLUSTER_SCOPED:
        assert allows(cluster_rules, *permission), permission
    granted = {(group, resource) for rule in cluster_rules for group in rule["apiGroups"]
               for resource in rule["resources"]}
    assert granted.isdisjoint(NAMESPACED_RESOURCES)
    assert all("create" not in rule["verbs"] for rule in cluster_rules)


def test_rbac_can_be_left_to_cluster_admins(render):
    manifests = render({"rbac": {"create": False}, "watchNamespaces": ["a"]})
    kinds = {m["kind"] for m in manifests}
    assert kinds.isdisjoint({"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"})
    assert find(manifests, "ServiceAccount", component="driver") == []  # the drivers' as well


# What a Spark driver in client mode asks the API for: executor pods, their Spark-settings ConfigMap and
# (when configured) their volume claims.
DRIVER_NEEDS = [
    *[("", "pods", verb) for verb in ("get", "list", "watch", "create", "delete", "deletecollection", "patch")],
    *[("", "configmaps", verb) for verb in ("get", "list", "create", "delete", "deletecollection")],
    *[("", "persistentvolumeclaims", verb) for verb in ("get", "list", "create", "delete", "deletecollection")],
]


@pytest.mark.parametrize("values,namespaces", [
    ({}, [NAMESPACE]),  # cluster-wide operator: the release namespace only (others by hand or driverRbac)
    ({"watchNamespaces": ["a", "b"]}, ["a", "b"]),
    ({"watchNamespaces": ["a"], "driverRbac": {"namespaces": ["jobs"]}}, ["jobs"]),
])
def test_drivers_get_the_service_account_their_pods_name_with_what_spark_needs(render, values, namespaces):
    from planengine_operator import builders

    manifests = render(values)
    accounts = find(manifests, "ServiceAccount", component="driver")
    assert sorted(a["metadata"]["namespace"] for a in accounts) == sorted(namespaces)
    assert {a["metadata"]["name"] for a in accounts} == {builders.DRIVER_SERVICE_ACCOUNT}
    for namespace in namespaces:
        role = one(manifests, "Role", namespace=namespace, component="driver")
        for permission in DRIVER_NEEDS:
            assert allows(role["rules"], *permission), (namespace, permission)
        assert not allows(role["rules"], "planengine.io", "sparkplanjobs", "get")  # nothing beyond Spark's needs
        binding = one(manifests, "RoleBinding", namespace=namespace, component="driver")
        assert binding["roleRef"]["name"] == role["metadata"]["name"]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": builders.DRIVER_SERVICE_ACCOUNT,
                                        "namespace": namespace}]


def test_the_operator_may_do_what_its_kubernetes_launcher_does(render):
    """Driver pods are relabelled on promotion (patch), their logs read, Services and ConfigMaps managed."""
    rules = one(render(), "ClusterRole")["rules"]
    for permission in [("", "pods", "patch"), ("", "pods", "list"), ("", "pods/log", "get"),
                       ("", "services", "patch"), ("", "configmaps", "delete")]:
        assert allows(rules, *permission), permission


def test_only_the_operator_reaches_the_drivers_status_port_and_only_executors_their_rpc_ports(render):
    """Stop and start are on the status port: no pod but the operator's (and listed scrapers) may connect."""
    manifests = render({"networkPolicy": {"statusFrom": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]}})
    policy = one(manifests, "NetworkPolicy")
    assert policy["metadata"]["namespace"] == NAMESPACE
    assert policy["spec"]["podSelector"]["matchLabels"] == {"app.kubernetes.io/component": "driver"}
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    status, rpc = policy["spec"]["ingress"]
    assert [p["port"] for p in status["ports"]] == [4041] and [p["port"] for p in rpc["ports"]] == [7078, 7079]
    operator_pods = one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    first = status["from"][0]
    assert first["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": NAMESPACE}
    assert first["podSelector"]["matchLabels"].items() <= operator_pods.items()
    assert status["from"][1]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "monitoring"}
    assert rpc["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/component": "executor"}}}]
    assert find(render({"networkPolicy": {"enabled": False}}), "NetworkPolicy") == []


def test_the_operator_may_read_and_create_the_jobs_control_token_secrets(render):
    rules = one(render(), "ClusterRole")["rules"]
    assert allows(rules, "", "secrets", "get") and allows(rules, "", "secrets", "create")
    assert not allows(rules, "", "secrets", "list")  # it knows each Secret's name; it never lists others


# --- webhook and metrics ------------------------------------------------------------------------------


def test_webhook_with_an_existing_secret(render):
    manifests = render(SCENARIOS["webhook-secret"])
    service = one(manifests, "Service", name=one(manifests, "ValidatingWebhookConfiguration")["metadata"]["name"])
    (webhook,) = one(manifests, "ValidatingWebhookConfiguration")["webhooks"]
    assert webhook["clientConfig"]["service"] == {
        "name": service["metadata"]["name"], "namespace": NAMESPACE, "path": "/validate-sparkplanjob", "port": 443,
    }
    assert webhook["clientConfig"]["caBundle"] == CA_BUNDLE
    assert webhook["rules"] == [{
        "apiGroups": ["planengine.io"], "apiVersions": ["v1alpha1"], "operations": ["CREATE", "UPDATE"],
        "resources": ["sparkplanjobs"], "scope": "Namespaced",
    }]
    assert webhook["failurePolicy"] == "Fail" and webhook["sideEffects"] == "None"
    assert "namespaceSelector" not in webhook
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": "webhook", "protocol": "TCP"}]

    deployment, container = operator_container(manifests)
    assert {"name": "webhook", "containerPort": 9443, "protocol": "TCP"} in container["ports"]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "webhook-tls")
    assert volume["secret"]["secretName"] == "my-webhook-tls"
    env = {e["name"]: e.get("value") for e in container["env"]}
    mount = next(m for m in container["volumeMounts"] if m["name"] == "webhook-tls")
    assert env["PLANENGINE_OPERATOR_WEBHOOK_CERT_DIR"] == mount["mountPath"]
    assert env["PLANENGINE_OPERATOR_WEBHOOK_PORT"] == "9443"


def test_webhook_with_cert_manager_and_namespace_selector(render):
    manifests = render(SCENARIOS["webhook-cert-manager-and-servicemonitor"])
    configuration = one(manifests, "ValidatingWebhookConfiguration")
    certificate = one(manifests, "Certificate")
    assert configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"{NAMESPACE}/{certificate['metadata']['name']}"
    )
    (webhook,) = configuration["webhooks"]
    assert "caBundle" not in webhook["clientConfig"]
    assert webhook["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a"]}
    ]
    service_name = webhook["clientConfig"]["service"]["name"]
    assert f"{service_name}.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
    assert certificate["spec"]["issuerRef"] == {"kind": "Issuer", "name": "ca-issuer", "group": "cert-manager.io"}
    deployment, _ = operator_container(manifests)
    volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == "webhook-tls")
    assert volume["secret"]["secretName"] == certificate["spec"]["secretName"]


@pytest.mark.parametrize(
    ("webhook", "complaint"),
    [
        ({"enabled": True}, "webhook.certificate.secretName"),
        ({"enabled": True, "certificate": {"secretName": "tls"}}, "webhook.certificate.caBundle"),
        ({"enabled": True, "certManager": {"enabled": True}}, "webhook.certManager.issuerRef.name"),
    ],
)
def test_webhook_without_a_certificate_source_fails(helm_run, template_args, webhook, complaint):
    result = helm_run(*template_args(), values={"webhook": webhook})
    assert result.returncode != 0
    assert complaint in result.stderr


def test_servicemonitor_scrapes_the_metrics_service(render):
    manifests = render(SCENARIOS["webhook-cert-manager-and-servicemonitor"])
    monitor = one(manifests, "ServiceMonitor")
    service = one(manifests, "Service", name=monitor["metadata"]["name"])
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items() or (
        monitor["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    )
    assert monitor["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics", "honorLabels": True,
                                             "interval": "30s", "scrapeTimeout": "10s"}]
    assert service["spec"]["ports"][0]["name"] == "metrics"


def test_servicemonitor_needs_the_metrics_service(helm_run, template_args):
    values = {"metrics": {"service": {"enabled": False}, "serviceMonitor": {"enabled": True}}}
    result = helm_run(*template_args(), values=values)
    assert result.returncode != 0 and "metrics.service.enabled" in result.stderr


# --- naming, CRD, NOTES -------------------------------------------------------------------------------


def test_long_release_names_stay_valid_and_distinct(helm_run, template_args):
    args = template_args()
    args[1] = "r" * 53  # the longest release name helm accepts
    result = helm_run(*args, values=SCENARIOS["webhook-secret"])
    assert result.returncode == 0, result.stderr
    manifests = [m for m in yaml.safe_load_all(result.stdout) if m]
    names = [(m["kind"], m["metadata"]["name"]) for m in manifests]
    assert all(len(name) <= 63 for _, name in names)
    assert len(set(names)) == len(names)
    services = [name for kind, name in names if kind == "Service"]
    assert len(set(services)) == 2


def test_templates_are_named_component_kind_and_use_the_helpers(render):
    templates = CHART / "templates"
    for template in templates.glob("*.yaml"):
        text = template.read_text()
        assert 'include "planengine-operator.labels"' in text, template.name
        assert "app.kubernetes.io/name:" not in text, f"{template.name}: labels come from _helpers.tpl"
    all_kinds = {m["kind"].lower() for scenario in SCENARIOS.values() for m in render(scenario)}
    for template in templates.glob("*.yaml"):
        component, _, kind = template.stem.partition("-")
        assert component in {"operator", "metrics", "webhook", "driver"}, template.name
        assert kind in all_kinds, f"{template.name}: '{kind}' is not a kind the chart renders"


def test_chart_crd_is_a_byte_identical_copy_of_the_repository_crd():
    source = REPO / "crds" / "sparkplanjobs.planengine.io.yaml"
    copies = sorted((CHART / "crds").iterdir())
    assert [c.name for c in copies] == [source.name]
    assert copies[0].read_bytes() == source.read_bytes(), (
        f"copy {source} to {CHART / 'crds'} (the repository's crds/ is the one source)"
    )


def test_the_packaged_chart_ships_the_argocd_health_check(helm_run, tmp_path):
    """`helm pull` users get argocd/argocd-cm.yaml (docs/operator.md, "Argo CD health check"); not a template. And
    the Grafana dashboard, for those who import it by hand."""
    result = helm_run("package", str(CHART), "--destination", str(tmp_path))
    assert result.returncode == 0, result.stderr
    (package,) = tmp_path.glob("planengine-operator-*.tgz")
    with tarfile.open(package) as archive:
        names = set(archive.getnames())
        snippet = yaml.safe_load(archive.extractfile("planengine-operator/argocd/argocd-cm.yaml").read())
    assert "planengine-operator/argocd/resource_customizations/planengine.io/SparkPlanJob/health.lua" in names
    assert "resource.customizations.health.planengine.io_SparkPlanJob" in snippet["data"]
    assert "planengine-operator/dashboards/planengine.json" in names


def test_crd_is_rendered_and_names_the_short_name_used_in_notes(render):
    crd = one(render(), "CustomResourceDefinition")
    assert crd["spec"]["group"] == "planengine.io"
    assert "spj" in crd["spec"]["names"]["shortNames"]


def test_notes_say_what_to_do_next(helm_run):
    result = helm_run("install", "pe", str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
                      values={"watchNamespaces": ["team-a"]})
    assert result.returncode == 0, result.stderr
    notes = result.stdout.split("NOTES:", 1)[1]
    assert "kubectl get spj" in notes
    assert "spec.engineVersion" in notes and "kubectl patch spj" in notes
    assert "kubectl apply --server-side -f charts/planengine-operator/crds/" in notes
    assert "kubectl apply -n team-a -f" in notes
    for path in re.findall(r"-f (examples/\S+)", notes):
        assert (REPO / path).is_file(), f"NOTES.txt points at {path}, which does not exist"


def test_rendered_arguments_parse_in_the_operator_cli(render):
    """The Deployment's args are accepted by planengine-operator's own argument parser (shared contract)."""
    cli = pytest.importorskip("planengine_operator.cli")
    if not hasattr(cli, "parse_args"):
        pytest.skip("planengine_operator.cli has no parse_args yet")
    _, container = operator_container(render({"watchNamespaces": ["a", "b"]}))
    args = cli.parse_args(container["args"])
    assert args.config == CONFIG_PATH
    assert args.namespace == ["a", "b"]
    assert args.liveness == "http://0.0.0.0:8081/healthz"
