"""The validating admission webhook: the handler's rules, the same rules in the reconciler, and kopf's
webhook server over HTTPS on loopback answering an AdmissionReview exactly as the chart wires it.

The served test runs the ``planengine-operator`` console script (a real process, logged in to the API
emulator) with the variables ``helm template`` renders for the operator container, a TLS Secret stand-in
made with ``cryptography``, and a free port instead of 9443.

Why the emulator and not the real API server: these are fast-tier tests, and the fast tier runs with no control
plane (it is still being built in the background then). The API server calling the chart's webhook over TLS
through its Service is ``tests/operator/e2e/test_chart_install.py``, on the real control plane.
"""

from __future__ import annotations

import copy
import datetime
import ipaddress
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from planengine_operator import storage, validation, webhook
from planengine_operator.config import OperatorConfig
from planengine_operator.models import JobSpec, JobStatus
from planengine_operator.statemachine import DriverObservation, JobView, decide

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.operator.kapi.server import run_in_thread  # noqa: E402

HELM = REPO / ".tools" / "bin" / "helm"
OPERATOR = REPO / ".venv" / "bin" / "planengine-operator"
CRD = REPO / "crds" / "sparkplanjobs.planengine.io.yaml"
CONFIG = OperatorConfig.model_validate({
    "defaultEngineVersion": "0.1", "engines": {"0.1": {}, "0.2": {}}, "launcher": "local",
    "jobRootBase": "/var/jobs", "metrics": {"port": 0},
})
SQL = "INSERT INTO out SELECT * FROM clicks"


def job_root_of(namespace: str, name: str, spec: dict[str, Any]) -> str:
    """The local launcher's rule (storage.uri, else <base>/<namespace>/<name>)."""
    uri = (spec.get("storage") or {}).get("uri")
    return uri.removeprefix("file://") if uri else f"/var/jobs/{namespace}/{name}"


def job(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    body = {"apiVersion": "planengine.io/v1alpha1", "kind": "SparkPlanJob",
            "metadata": {"name": "j", "namespace": "default", "uid": "u-1", "generation": 1},
            "spec": {"plan": {"sql": SQL}, **(spec or {})}}
    if status is not None:
        body["status"] = status
    return body


def running_status(spec: dict[str, Any] | None = None, root: str = "/var/jobs/default/j") -> dict[str, Any]:
    """What the operator records for a job that runs ``spec`` (program hash, run, job root)."""
    from planengine_operator.specdiff import program_hash

    parsed = JobSpec.model_validate(job(spec)["spec"])
    return {"phase": "Running", "planId": "p1", "runId": "r1", "engineVersion": "0.1", "jobRoot": root,
            "specHash": program_hash(parsed)}


def reasons(operation: str, new: dict[str, Any] | None, old: dict[str, Any] | None = None) -> list[str]:
    return [p.reason for p in webhook.review(operation, "default", "j", new, old, CONFIG, job_root_of)]


# ------------------------------------------------------------------------------------------ the handler
STARTED = running_status()
CASES = {
    "create following the default": ("CREATE", job(), None, []),
    "create with a known engine": ("CREATE", job({"engineVersion": "0.2"}), None, []),
    "create with an unknown engine": ("CREATE", job({"engineVersion": "9.9"}), None, ["UnknownEngineVersion"]),
    "create with a bad field": ("CREATE", job({"upgradeMode": "sometimes"}), None, ["Invalid"]),
    "upgrade to a known engine": ("UPDATE", job({"engineVersion": "0.2"}, STARTED), job({}, STARTED), []),
    "upgrade to an unknown engine": ("UPDATE", job({"engineVersion": "9.9"}, STARTED), job({}, STARTED),
                                     ["UnknownEngineVersion"]),
    "plan text changed": ("UPDATE", job({"plan": {"sql": SQL + " WHERE 1 = 1"}}, STARTED), job({}, STARTED),
                          ["PlanChangeRefused"]),
    "plan text changed, stateless": ("UPDATE", job({"plan": {"sql": SQL + " WHERE 1 = 1"},
                                                    "upgradeMode": "stateless"}, STARTED), job({}, STARTED), []),
    "planOptions changed": ("UPDATE", job({"planOptions": {"table.plan.x": "1"}}, STARTED), job({}, STARTED),
                            ["PlanChangeRefused"]),
    "plan changed before the first start": ("UPDATE", job({"plan": {"sql": SQL + " WHERE 1 = 1"}}, {}), job(), []),
    "storage changed": ("UPDATE", job({"storage": {"uri": "file:///elsewhere"}}, STARTED), job({}, STARTED),
                        ["StorageImmutable"]),
    "storage unchanged": ("UPDATE", job({"storage": {"uri": "file:///r"}}, running_status(root="/r")),
                          job({"storage": {"uri": "file:///r"}}, running_status(root="/r")), []),
    "create on s3a with the local launcher": ("CREATE", job({"storage": {"uri": "s3a://bucket/jobs/j"}}), None,
                                              ["StorageUnsupported"]),
    "create on another object store": ("CREATE", job({"storage": {"uri": "gs://bucket/jobs/j"}}), None,
                                       ["StorageUnsupported"]),
    "create on a relative path": ("CREATE", job({"storage": {"uri": "jobs/j"}}), None, ["StorageUnsupported"]),
    "create from a relative initial snapshot": ("CREATE", job({"initialSnapshot": {"uri": "snapshots/s1"}}), None,
                                                ["InitialSnapshotUnsupported"]),
    "create from an absolute initial snapshot": ("CREATE", job({"initialSnapshot": {"uri": "file:///r/snapshots/s1"}}),
                                                 None, []),
    "create with a privileged podTemplate": ("CREATE", job({"podTemplate": {"spec": {"hostPID": True}}}), None,
                                             ["PrivilegedPodTemplate"]),
    "create with a sub path that escapes": ("CREATE", job({"storage": {"pvc": {"claimName": "d",
                                                                                "subPath": "../../team-b/etl"}}}),
                                            None, ["InvalidSubPath"]),
    "create with an image override": ("CREATE", job({"image": "evil:1"}), None, ["ImageOverrideNotAllowed"]),
    "an update that adds a javaagent": ("UPDATE", job({"sparkConf": {"spark.driver.extraJavaOptions": "-javaagent:a"}},
                                                      STARTED), job({}, STARTED), ["SparkConfNotAllowed"]),
    "two rules broken at once": ("UPDATE", job({"engineVersion": "9.9", "plan": {"sql": "SELECT 2"}}, STARTED),
                                 job({}, STARTED), ["UnknownEngineVersion", "PlanChangeRefused"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_review(case: str) -> None:
    operation, new, old, expected = CASES[case]
    assert reasons(operation, new, old) == expected


def test_an_update_that_adds_no_problem_is_admitted_even_on_a_broken_object() -> None:
    """The operator's own metadata writes (kopf's annotations, finalizers) must never be blocked."""
    broken = job({"engineVersion": "9.9"}, STARTED)
    relabelled = copy.deepcopy(broken)
    relabelled["metadata"]["annotations"] = {"planengine.io/last-handled-configuration": "{}"}
    assert reasons("UPDATE", relabelled, broken) == []
    assert reasons("CREATE", broken) == ["UnknownEngineVersion"]


def test_admit_raises_an_admission_error_naming_field_and_fix() -> None:
    import kopf

    with pytest.raises(kopf.AdmissionError) as raised:
        webhook.admit("UPDATE", "default", "j", job({"storage": {"uri": "file:///x"}}, STARTED), job({}, STARTED),
                      CONFIG, job_root_of)
    assert raised.value.code == 422
    text = str(raised.value)
    assert text.startswith("spec.storage: ") and "/var/jobs/default/j" in text and "new SparkPlanJob" in text


@pytest.mark.parametrize("case", ["create with an unknown engine", "plan text changed", "storage changed",
                                  "two rules broken at once", "create on another object store",
                                  "create with a privileged podTemplate", "create with a sub path that escapes",
                                  "an update that adds a javaagent"])
def test_the_reconciler_reports_the_webhook_problem(case: str) -> None:
    """One rule set: what the webhook would reject, the state machine reports with the same reason and text
    (its first problem) when the spec got in anyway."""
    operation, new, old, _ = CASES[case]
    (first, *_) = webhook.review(operation, "default", "j", new, old, CONFIG, job_root_of)
    status = copy.deepcopy((old or {}).get("status") or {})
    view = JobView(name="j", namespace="default", generation=2, spec=JobSpec.model_validate(new["spec"]),
                   status=JobStatus.model_validate(status), config=CONFIG,
                   job_root=status.get("jobRoot") or "/var/jobs/default/j",
                   now=datetime.datetime.now(datetime.UTC), new_run_id="r2",
                   spec_job_root=job_root_of("default", "j", new["spec"]))
    decision = decide(view, DriverObservation(running=True, run_id="r1", healthy=True, batches=5))
    assert decision.status is not None
    written = decision.status.model_dump(mode="json", exclude_none=True)
    assert decision.action is None and "operation" not in written
    assert written["error"] == first.message
    assert [(e.type, e.reason) for e in decision.events] == [("Warning", first.reason)]
    degraded = next(c for c in written["conditions"] if c["type"] == "Degraded")
    assert (degraded["status"], degraded["reason"], degraded["message"]) == ("True", first.reason, first.message)


def test_validation_is_the_only_home_of_the_rules() -> None:
    """The reconciler's messages come from validation (no second copy to drift)."""
    for module in ("statemachine.py", "protocol.py", "vocabulary.py"):
        text = (REPO / "operator" / "planengine_operator" / module).read_text()
        assert "engine catalog (" not in text and validation.PLAN_CHANGE_MESSAGE[:40] not in text


def test_settings_come_from_the_chart_variables(tmp_path: Path) -> None:
    assert webhook.settings_from_env({}) is None
    settings = webhook.settings_from_env({webhook.PORT_ENV: "9443", webhook.PATH_ENV: "/validate-sparkplanjob",
                                          webhook.CERT_DIR_ENV: str(tmp_path)})
    assert (settings.port, settings.root, settings.handler_id) == (9443, "", "validate-sparkplanjob")
    with pytest.raises(ValueError, match=r"tls\.crt"):
        webhook.server(settings)  # no Secret mounted


# ------------------------------------------------------------------------------------------ the chart
def _rendered_webhook() -> dict[str, Any]:
    if not HELM.is_file():
        pytest.skip(f"{HELM} is missing: run `bash tests/setup/prepare.sh`")
    values = {"webhook": {"enabled": True, "certificate": {"secretName": "spj-webhook-tls", "caBundle": "Q0E="}}}
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as values_file:
        yaml.safe_dump(values, values_file)
        values_file.flush()
        run = subprocess.run([str(HELM), "template", "pe", str(REPO / "charts" / "planengine-operator"),
                              "--namespace", "planengine-system", "--values", values_file.name],
                             capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    docs = [d for d in yaml.safe_load_all(run.stdout) if d]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    (container,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "operator"]
    env = {e["name"]: e.get("value") for e in container.get("env") or []}
    configuration = next(d for d in docs if d["kind"] == "ValidatingWebhookConfiguration")
    (hook,) = configuration["webhooks"]
    service = next(d for d in docs if d["kind"] == "Service" and d["metadata"]["name"] == hook["clientConfig"][
        "service"]["name"])
    return {"env": env, "container": container, "hook": hook, "service": service,
            "volumes": deployment["spec"]["template"]["spec"].get("volumes") or []}


def test_the_chart_calls_the_path_and_port_the_operator_serves() -> None:
    rendered = _rendered_webhook()
    env, hook, container = rendered["env"], rendered["hook"], rendered["container"]
    settings = webhook.settings_from_env({k: v for k, v in env.items() if v is not None})
    assert settings is not None
    assert hook["clientConfig"]["service"]["path"] == settings.path == webhook.DEFAULT_PATH
    (port,) = [p for p in rendered["service"]["spec"]["ports"] if p["port"] == hook["clientConfig"]["service"]["port"]]
    (target,) = [p for p in container["ports"] if p["name"] == port["targetPort"]]
    assert target["containerPort"] == settings.port
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts") or []}
    secret_volume = next(v for v in rendered["volumes"]
                         if (v.get("secret") or {}).get("secretName") == "spj-webhook-tls")
    assert mounts[secret_volume["name"]] == str(settings.cert_dir)
    assert hook["rules"][0]["resources"] == ["sparkplanjobs"]  # the status subresource never reaches it
    assert set(hook["rules"][0]["operations"]) == {"CREATE", "UPDATE"}


# ------------------------------------------------------------------------------------------ served
def _certificate(directory: Path) -> Path:
    """A self-signed CA-capable certificate for localhost/127.0.0.1, as the mounted Secret's files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                          serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    return directory / "tls.crt"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """``planengine-operator`` with the chart's webhook variables, on loopback, logged in to the emulator."""
    pytest.importorskip("cryptography")
    if not OPERATOR.exists():
        pytest.skip(f"{OPERATOR} is missing: run `make venv`")
    rendered = _rendered_webhook()
    api = run_in_thread([CRD])
    cafile = _certificate(tmp_path / "webhook-tls")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG.model_dump(mode="json")))
    port = _free_port()
    env = {**os.environ, **{k: v for k, v in rendered["env"].items() if v is not None and k.startswith(
        "PLANENGINE_OPERATOR_WEBHOOK")}}
    env.update({webhook.PORT_ENV: str(port), webhook.CERT_DIR_ENV: str(tmp_path / "webhook-tls"),
                webhook.ADDR_ENV: "127.0.0.1", "KUBECONFIG": str(api.write_kubeconfig(tmp_path / "kubeconfig"))})
    log = open(tmp_path / "operator.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen([str(OPERATOR), "--config", str(tmp_path / "config.yaml"), "--local", "--liveness",
                                ""], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"https://127.0.0.1:{port}{env[webhook.PATH_ENV]}"
    context = ssl.create_default_context(cafile=str(cafile))
    try:
        yield {"url": url, "context": context, "process": process, "log": tmp_path / "operator.log"}
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        api.stop()


def _review(operation: str, new: dict[str, Any] | None, old: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "kind": {"group": "planengine.io", "version": "v1alpha1", "kind": "SparkPlanJob"},
        "resource": {"group": "planengine.io", "version": "v1alpha1", "resource": "sparkplanjobs"},
        "name": "j", "namespace": "default", "operation": operation, "userInfo": {"username": "kubectl-user"},
        "object": new, "oldObject": old, "dryRun": False}}


def _post(served: dict[str, Any], body: dict[str, Any], url: str | None = None) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url or served["url"], data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=served["context"], timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, {}


def _wait_until_serving(served: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + 90  # interpreter start, kopf login and resource discovery
    while True:
        if served["process"].poll() is not None:
            raise AssertionError(f"the operator exited: {served['log'].read_text()[-3000:]}")
        try:
            return _post(served, _review("CREATE", job()))[1]
        except (urllib.error.URLError, ConnectionError, ssl.SSLError, TimeoutError):
            if time.monotonic() > deadline:
                raise AssertionError(f"the webhook never answered: {served['log'].read_text()[-3000:]}") from None
            time.sleep(0.2)  # polling a port that is not listening yet


@pytest.mark.timeout(180)
def test_kopf_serves_admission_reviews_over_https(served: dict[str, Any]) -> None:
    first = _wait_until_serving(served)
    assert first["kind"] == "AdmissionReview" and first["response"]["allowed"] is True

    code, denied = _post(served, _review("CREATE", job({"engineVersion": "9.9"})))
    assert code == 200 and denied["response"]["allowed"] is False
    assert denied["response"]["status"]["code"] == 422
    assert "spec.engineVersion" in denied["response"]["status"]["message"]
    assert "engine catalog (0.1, 0.2)" in denied["response"]["status"]["message"]

    request = _review("UPDATE", job({"plan": {"sql": SQL + " WHERE 1 = 1"}}, STARTED), job({}, STARTED))
    _, refused = _post(served, request)
    assert refused["response"]["uid"] == request["request"]["uid"] and refused["response"]["allowed"] is False
    assert "PlanChangeRefused" in refused["response"]["status"]["message"]

    _, stateless = _post(served, _review("UPDATE", job({"plan": {"sql": SQL + " WHERE 1 = 1"},
                                                        "upgradeMode": "stateless"}, STARTED), job({}, STARTED)))
    assert stateless["response"]["allowed"] is True
    _, moved = _post(served, _review("UPDATE", job({"storage": {"uri": "file:///elsewhere"}}, STARTED),
                                     job({}, STARTED)))
    assert moved["response"]["allowed"] is False and "StorageImmutable" in moved["response"]["status"]["message"]

    with pytest.raises(urllib.error.URLError) as untrusted:  # HTTPS with the Secret's certificate only
        _post({**served, "context": ssl.create_default_context()}, _review("CREATE", job()))
    assert isinstance(untrusted.value.reason, ssl.SSLCertVerificationError)
    with pytest.raises((urllib.error.URLError, ConnectionError)):  # no plain HTTP on the webhook port
        urllib.request.urlopen(served["url"].replace("https://", "http://"), data=b"{}", timeout=10)


@pytest.mark.parametrize("uri", ["/data/jobs/a", "file:///data/jobs/a", "s3a://bucket/jobs/a", "gs://b/a",
                                 "hdfs://nn/jobs", "file://relative/a", "jobs/a", "abfs://c@a.dfs.core.windows.net/j"])
def test_the_crd_rule_and_the_operator_agree_on_storage_uris(uri: str) -> None:
    """The API server's CEL rule (evaluated as the emulator does) and validation say the same for each URI."""
    from tests.operator.kapi import schema

    crd = yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    errors = schema.validate({"spec": {"plan": {"sql": SQL}, "storage": {"uri": uri}}}, crd)
    by_crd = not [e for e in errors if e.field == "spec.storage.uri"]
    assert by_crd is validation.storage_uri_supported(uri)
    if not by_crd:
        assert storage.URI_SCHEME_MESSAGE in str(errors[0])
