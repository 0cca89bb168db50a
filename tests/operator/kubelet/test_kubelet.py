"""The test kubelet runs pods as they say: each behaviour here is one a driver or tool pod relies on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from planengine_operator import builders
from tests.operator.kapi.server import run_in_thread
from tests.operator.kubelet import sandbox
from tests.operator.kubelet.gc import GarbageCollector
from tests.operator.kubelet.kubelet import ImageSpec, Kubelet, create_claim

REPO = Path(__file__).resolve().parents[3]
KUBECTL = REPO / ".tools" / "bin" / "kubectl"
ENGINE = "ghcr.io/planengine/engine:0.1"
ECHO = "test.local/echo:1"  # an image whose entrypoint prints its arguments
NS = "default"
CLAIMS = ("shared", "c", "probe", "data")  # the claims the pods below mount

pytestmark = pytest.mark.timeout(120)


class Node:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.api = run_in_thread([REPO / "crds" / "sparkplanjobs.planengine.io.yaml"])
        self.api.api.garbage_collection = False
        images = {ENGINE: ImageSpec(REPO / ".venv"), ECHO: ImageSpec(REPO / ".venv", ("/bin/echo",))}
        self.kubelet = Kubelet(self.api, tmp / "node", images, backoff=(0.2, 1.0)).start()
        for claim in CLAIMS:
            create_claim(self.api.url, NS, claim)
        self.gc = GarbageCollector(self.api.url).start()
        self.kubeconfig = self.api.write_kubeconfig(tmp / "kubeconfig")

    def close(self) -> None:
        self.kubelet.stop()
        self.gc.stop()
        self.api.stop()

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        run = subprocess.run([str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "--cache-dir",
                              str(self.tmp / "cache"), *args], capture_output=True, text=True, timeout=60)
        assert not check or run.returncode == 0, run.stderr
        return run

    def apply(self, *manifests: dict[str, Any]) -> None:
        path = self.tmp / "manifest.yaml"
        path.write_text(yaml.safe_dump_all(manifests))
        self.kubectl("apply", "--validate=false", "-f", str(path))

    def pod(self, name: str) -> dict[str, Any] | None:
        return self.api.get("", "pods", NS, name)

    def wait(self, what: str, predicate, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; kubelet errors: {self.kubelet.errors}")

    def finished(self, name: str, timeout: float = 30) -> dict[str, Any]:
        return self.wait(f"pod {name} to finish", lambda: (p := self.pod(name)) and
                         (p.get("status") or {}).get("phase") in ("Succeeded", "Failed") and p, timeout)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    why = sandbox.available()
    if why is not None:
        pytest.skip(why)
    if not KUBECTL.exists():
        pytest.skip(f"{KUBECTL} is missing: run `bash tests/setup/prepare.sh`")
    built = Node(tmp_path)
    yield built
    built.close()


def pod(name: str, *, image: str = ENGINE, command: list[str] | None = None, args: list[str] | None = None,
        restart: str = "Never", **container: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": "main", "image": image, **container}
    if command is not None:
        spec["command"] = command
    if args is not None:
        spec["args"] = args
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"restartPolicy": restart, "containers": [spec],
                     "securityContext": {"runAsUser": 10001, "runAsGroup": 10001, "fsGroup": 10001,
                                         "runAsNonRoot": True}}}


def terminated(manifest: dict[str, Any]) -> dict[str, Any]:
    return manifest["status"]["containerStatuses"][0]["state"].get("terminated") or {}


def test_the_image_entrypoint_runs_the_engine_of_the_images_virtualenv(node: Node) -> None:
    node.apply(pod("help", args=["--help"]))
    done = node.finished("help")
    assert done["status"]["phase"] == "Succeeded" and terminated(done)["exitCode"] == 0
    assert done["spec"]["nodeName"] == "kubelet-0" and done["status"]["podIP"].startswith("127.")
    assert "usage: planengine" in node.kubectl("logs", "help").stdout


SCRIPT = r"""
set -u
echo "uid=$(id -u) groups=$(id -G) host=$(hostname) cwd=$(pwd) home=$HOME"
echo "env NAME=$NAME FROM_CM=$FROM_CM CFG_mode=$CFG_mode IP=$POD_IP POD=$POD_NAME VENV=$VIRTUAL_ENV"
echo "python=$(command -v python) planengine=$(command -v planengine)"
echo "file=$(cat /etc/config/greeting)"
touch /etc/x 2>/dev/null && echo "root-writable" || echo "root-read-only"
touch /home/planengine/x 2>/dev/null && echo "home-writable" || echo "home-read-only"
echo shared > /claim/written-by-$(hostname) && echo "claim-writable"
echo scratch > ./scratch && echo "workdir-writable"
ls /opt/planengine/bin/planengine >/dev/null && echo "venv-mounted"
"""


def test_a_container_gets_exactly_what_its_pod_says(node: Node) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
              "data": {"greeting": "hello", "mode": "fast"}}
    manifest = pod("says", command=["sh", "-c", SCRIPT],
                   env=[{"name": "BASE", "value": "planengine"}, {"name": "NAME", "value": "$(BASE)-job"},
                        {"name": "FROM_CM", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
                        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                   envFrom=[{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}], workingDir="/scratch",
                   securityContext={"readOnlyRootFilesystem": True},
                   volumeMounts=[{"name": "config", "mountPath": "/etc/config", "readOnly": True},
                                 {"name": "claim", "mountPath": "/claim"},
                                 {"name": "scratch", "mountPath": "/scratch"}])
    manifest["spec"]["volumes"] = [{"name": "config", "configMap": {"name": "cfg"}},
                                   {"name": "claim", "persistentVolumeClaim": {"claimName": "shared"}},
                                   {"name": "scratch", "emptyDir": {}}]
    node.apply(config, manifest)
    done = node.finished("says")
    log = node.kubectl("logs", "says").stdout
    assert terminated(done)["exitCode"] == 0, log
    ip = done["status"]["podIP"]
    assert "uid=10001 groups=10001 host=says cwd=/scratch home=/home/planengine" in log
    assert f"env NAME=planengine-job FROM_CM=fast CFG_mode=fast IP={ip} POD=says VENV=/opt/planengine" in log
    assert "python=/opt/planengine/bin/python planengine=/opt/planengine/bin/planengine" in log
    for line in ("file=hello", "root-read-only", "home-read-only", "claim-writable", "workdir-writable",
                 "venv-mounted"):
        assert line in log, (line, log)
    claim = node.kubelet.root / "pvc" / NS / "shared"
    assert (claim / "written-by-says").read_text() == "shared\n"  # a claim outlives its pods (ReadWriteMany)
    assert (claim / "written-by-says").stat().st_uid == 10001


def test_without_read_only_root_writes_land_in_the_containers_own_layer(node: Node) -> None:
    """The image's user owns its home and /var/lib/planengine (the Dockerfile's useradd and chown); another
    uid (the operator's pods once ran as 185) owns nothing there and has no passwd entry."""
    script = "echo x > $HOME/mine && echo x > /var/lib/planengine/mine && echo wrote; id -un 2>&1; " \
             "{ echo y > /etc/planengine-test; } 2>/dev/null || echo etc-refused"
    other = pod("uid185", command=["sh", "-c", script])
    other["spec"]["securityContext"].update(runAsUser=185, runAsGroup=185)
    node.apply(pod("rw", command=["sh", "-c", script]), other)
    assert terminated(node.finished("rw"))["exitCode"] == 0
    assert node.kubectl("logs", "rw").stdout.splitlines() == ["wrote", "planengine", "etc-refused"]
    assert not Path("/etc/planengine-test").exists() and not Path("/home/planengine/mine").exists()  # own layer
    node.finished("uid185")
    log = node.kubectl("logs", "uid185").stdout
    assert "wrote" not in log.splitlines() and "Permission denied" in log, log
    assert "cannot find name for user ID 185" in log  # no passwd entry: Hadoop's login would fail the same way


def test_restart_policy_counts_restarts_and_keeps_the_previous_log(node: Node) -> None:
    flaky = pod("flaky", restart="OnFailure", command=["sh", "-c",
                "n=$(cat /state/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /state/n; echo attempt $n; "
                "[ $n -ge 3 ]"], volumeMounts=[{"name": "state", "mountPath": "/state"}])
    flaky["spec"]["volumes"] = [{"name": "state", "emptyDir": {}}]  # an emptyDir lives as long as its pod
    node.apply(flaky, pod("fails", command=["sh", "-c", "exit 3"]))
    done = node.finished("flaky")
    status = done["status"]["containerStatuses"][0]
    assert done["status"]["phase"] == "Succeeded" and status["restartCount"] == 2
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert node.kubectl("logs", "flaky").stdout == "attempt 3\n"
    assert node.kubectl("logs", "flaky", "--previous").stdout == "attempt 2\n"
    failed = node.finished("fails")
    assert failed["status"]["phase"] == "Failed" and terminated(failed)["exitCode"] == 3
    assert failed["status"]["containerStatuses"][0]["restartCount"] == 0  # Never


def test_a_failed_container_leaves_its_last_log_lines_as_its_termination_message(node: Node) -> None:
    """``terminationMessagePolicy: FallbackToLogsOnError``, as a kubelet does it: a container that fails leaves the
    end of its log (at most 80 lines, 2048 bytes) in ``terminated.message``; one that succeeds, or does not ask,
    leaves none. The operator reads a failed driver's own error from there."""
    say = "for i in $(seq 1 120); do echo line $i; done; echo 'planengine: error: the checkpoint is damaged' >&2; "
    node.apply(pod("asks", command=["sh", "-c", say + "exit 2"], terminationMessagePolicy="FallbackToLogsOnError"),
               pod("fine", command=["sh", "-c", say + "exit 0"], terminationMessagePolicy="FallbackToLogsOnError"),
               pod("silent", command=["sh", "-c", say + "exit 2"]))
    message = terminated(node.finished("asks"))["message"]
    lines = message.splitlines()
    assert lines[-1] == "planengine: error: the checkpoint is damaged" and len(lines) == 80, message
    assert lines[0] == "line 42" and len(message.encode()) <= 2048
    assert "message" not in terminated(node.finished("fine"))
    assert "message" not in terminated(node.finished("silent"))


def test_delete_is_sigterm_then_sigkill_after_the_grace_period_and_the_pod_stays_until_then(node: Node) -> None:
    stubborn = pod("stubborn", command=["sh", "-c", "trap 'echo got-term > /claim/term' TERM; echo up; "
                                        "while true; do sleep 0.1; done"],
                   volumeMounts=[{"name": "claim", "mountPath": "/claim"}])
    stubborn["spec"]["volumes"] = [{"name": "claim", "persistentVolumeClaim": {"claimName": "c"}}]
    node.apply(stubborn)
    node.wait("stubborn running", lambda: node.kubelet.process(NS, "stubborn"))
    node.wait("its trap set", lambda: "up" in node.kubectl("logs", "stubborn").stdout)
    began = time.monotonic()
    node.kubectl("delete", "pod", "stubborn", "--grace-period=2", "--wait=false")
    terminating = node.pod("stubborn")
    assert terminating is not None and terminating["metadata"]["deletionTimestamp"]  # Terminating, still there
    node.wait("the pod object to go", lambda: node.pod("stubborn") is None, timeout=20)
    took = time.monotonic() - began
    assert 1.5 <= took < 10, took  # it ignored SIGTERM, so SIGKILL after the grace period ended it
    assert (node.kubelet.root / "pvc" / NS / "c" / "term").read_text() == "got-term\n"

    node.apply(pod("polite", command=["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.1; done"]))
    node.wait("polite running", lambda: node.kubelet.process(NS, "polite"))
    began = time.monotonic()
    node.kubectl("delete", "pod", "polite", "--grace-period=30", "--wait=false")
    node.wait("polite gone", lambda: node.pod("polite") is None, timeout=20)
    assert time.monotonic() - began < 10  # it exited on SIGTERM: no waiting for the grace period


def test_run_as_non_root_refuses_uid_0(node: Node) -> None:
    root_pod = pod("as-root", command=["true"])
    root_pod["spec"]["securityContext"]["runAsUser"] = 0
    node.apply(root_pod)
    waiting = node.wait("the refusal", lambda: ((((node.pod("as-root") or {}).get("status") or {}).get(
        "containerStatuses") or [{}])[0].get("state") or {}).get("waiting", {}).get("reason") ==
        "CreateContainerConfigError" and node.pod("as-root"))
    assert "runAsNonRoot" in waiting["status"]["containerStatuses"][0]["state"]["waiting"]["message"]


def test_a_pod_whose_claim_does_not_exist_stays_unscheduled_with_the_reason_until_it_does(node: Node) -> None:
    """What the scheduler does with a missing PersistentVolumeClaim: Pending, unbound, ``PodScheduled=False``
    (Unschedulable, the claim named); created later, the pod starts."""
    orphan = pod("orphan", command=["sh", "-c", "ls /claim"], volumeMounts=[{"name": "claim", "mountPath": "/claim"}])
    orphan["spec"]["volumes"] = [{"name": "claim", "persistentVolumeClaim": {"claimName": "later"}}]
    node.apply(orphan)
    unscheduled = node.wait("the scheduler's verdict", lambda: (p := node.pod("orphan")) and any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" for c in (p.get("status") or {}).get(
            "conditions") or []) and p)
    condition = unscheduled["status"]["conditions"][0]
    assert condition["reason"] == "Unschedulable" and 'persistentvolumeclaim "later" not found' in condition["message"]
    assert unscheduled["status"]["phase"] == "Pending" and not unscheduled["spec"].get("nodeName")
    assert node.kubelet.process(NS, "orphan") is None
    create_claim(node.api.url, NS, "later")
    assert terminated(node.finished("orphan"))["exitCode"] == 0


def test_owner_references_are_collected_after_the_owner_goes(node: Node) -> None:
    node.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}, "data": {}})
    owner = node.api.get("", "configmaps", NS, "owner")
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    child = pod("child", command=["sh", "-c", "sleep 60"])
    child["metadata"]["ownerReferences"] = [ref]
    node.apply(child)
    node.wait("child running", lambda: node.kubelet.process(NS, "child"))
    with pytest.raises(AssertionError):  # the collector knows no ConfigMap owners: nothing is guessed
        node.wait("nothing collected", lambda: node.pod("child") is None, timeout=1)
    sj = {"apiVersion": "planengine.io/v1alpha1", "kind": "SparkPlanJob", "metadata": {"name": "j"},
          "spec": {"plan": {"sql": "INSERT INTO a SELECT * FROM b"}}}
    node.apply(sj)
    job = node.api.get("planengine.io", "sparkplanjobs", NS, "j")
    owned = pod("owned", command=["sh", "-c", "sleep 60"])
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "planengine.io/v1alpha1", "kind": "SparkPlanJob",
                                             "name": "j", "uid": job["metadata"]["uid"]}]
    node.apply(owned)
    created = node.wait("owned running", lambda: node.kubelet.process(NS, "owned") and node.pod("owned"))
    service = builders.owned_by(builders.build_run_service("j", "r1"), created)  # owned by the pod
    node.apply(service)
    node.kubectl("delete", "sparkplanjob", "j", "--wait=false")
    node.wait("the pod collected, then its Service", lambda: node.pod("owned") is None
              and node.api.get("", "services", NS, service["metadata"]["name"]) is None, timeout=20)
    assert [d[0] for d in node.gc.deleted] == ["pods", "services"]
    assert node.pod("child") is not None


def _driver(spec: dict[str, Any], image: str = ECHO) -> dict[str, Any]:
    argv = builders.run_argv(f"{builders.JOB_ROOTS}/data/j/plan.json", f"{builders.JOB_ROOTS}/data/j", None)
    return builders.build_driver_pod(job_name="j", namespace=NS, spec=spec, image=image, run_id="r1", argv=argv)


SPEC = {"storage": {"pvc": {"claimName": "data", "subPath": "j"}}, "executor": {"instances": 2, "cores": 2}}


def test_a_driver_asking_for_executor_pods_runs_them_in_process_once_its_settings_check_out(node: Node) -> None:
    driver = _driver(SPEC)
    driver["spec"]["containers"][0].pop("readinessProbe")
    driver["spec"]["containers"][0].pop("livenessProbe")
    node.apply(builders.build_executor_configmap("j", SPEC), builders.build_plan_configmap("j", "{}", "p"),
               builders.build_control_token_secret("j", "a-token-for-the-test-0123456789"), driver,
               builders.build_run_service("j", "r1"))
    done = node.finished(driver["metadata"]["name"])
    log = node.kubectl("logs", driver["metadata"]["name"]).stdout
    assert terminated(done)["exitCode"] == 0, log
    assert "spark.master=local[2]" in log and "k8s://" not in log  # 2 x 2 executor cores, capped at 2 here
    assert "spark.kubernetes.driver.pod.name=j-r1" in log  # everything else as the pod says


@pytest.mark.parametrize("change,complaint", [
    (lambda d: d["metadata"].update(name="j-other"), "spark.kubernetes.driver.pod.name='j-r1'"),
    (lambda d: d["metadata"]["labels"].update({builders.LABEL_RUN: "r2"}), "does not select this pod"),
    (lambda d: d["spec"]["volumes"].__setitem__(-1, {"name": "spark", "emptyDir": {}}),
     "is not a file of any volume"),
])
def test_kubernetes_settings_that_would_fail_on_a_cluster_fail_the_container(node: Node, change, complaint) -> None:
    driver = _driver(SPEC)
    change(driver)
    node.apply(builders.build_executor_configmap("j", SPEC), builders.build_plan_configmap("j", "{}", "p"),
               builders.build_control_token_secret("j", "a-token-for-the-test-0123456789"), driver,
               builders.build_run_service("j", "r1"))
    done = node.finished(driver["metadata"]["name"])
    log = node.kubectl("logs", driver["metadata"]["name"]).stdout
    assert terminated(done)["exitCode"] == 1 and "Spark on Kubernetes settings rejected" in log, log
    assert complaint in log, log


def test_probes_decide_readiness_and_a_failing_liveness_probe_restarts(node: Node) -> None:
    server = [sys.executable.replace(sys.executable, "/opt/planengine/bin/python"), "-c",
              "import http.server, os, socketserver\n"
              "class H(http.server.BaseHTTPRequestHandler):\n"
              "    def do_GET(self):\n"
              "        self.send_response(200 if os.path.exists('/state/ok') else 500); self.end_headers()\n"
              "    def log_message(self, *a): pass\n"
              "socketserver.TCPServer((os.environ['IP'], 8080), H).serve_forever()\n"]
    probe = {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1, "failureThreshold": 2}
    served = pod("served", command=server, restart="Always", readinessProbe=probe, livenessProbe=probe,
                 env=[{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                 volumeMounts=[{"name": "state", "mountPath": "/state"}])
    served["spec"]["volumes"] = [{"name": "state", "persistentVolumeClaim": {"claimName": "probe"}}]
    state = node.kubelet.root / "pvc" / NS / "probe"
    state.mkdir(parents=True)
    (state / "ok").write_text("")
    node.apply(served)
    ready = node.wait("ready", lambda: (p := node.pod("served")) and any(
        c["type"] == "Ready" and c["status"] == "True" for c in (p.get("status") or {}).get("conditions") or []))
    assert ready
    (state / "ok").unlink()
    restarted = node.wait("a liveness restart", lambda: ((node.pod("served") or {}).get("status") or {}).get(
        "containerStatuses", [{}])[0].get("restartCount", 0) >= 1, timeout=30)
    assert restarted


def test_the_operator_reads_a_tool_pods_log_through_the_api(node: Node) -> None:
    node.apply(pod("tool", command=["sh", "-c", "echo noise >&2; printf '{\\n  \"ok\": true\\n}\\n'"]))
    node.finished("tool")
    raw = subprocess.run([sys.executable, "-c", "import sys, urllib.request; print(urllib.request.urlopen("
                          f"'{node.api.url}/api/v1/namespaces/default/pods/tool/log').read().decode(), end='')"],
                         capture_output=True, text=True, check=True).stdout
    assert "noise" in raw and json.loads(raw[raw.index("{"):]) == {"ok": True}
    assert os.path.isdir(node.kubelet.root / "pods")
