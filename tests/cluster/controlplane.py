"""Start and stop a real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager and
kube-scheduler, as processes of this machine, from the binaries ``tests/setup/prepare.d/40-controlplane.sh`` built.

What runs is what a cluster runs: client-certificate authentication, ``Node,RBAC`` authorization, the default
admission chain plus ``NodeRestriction``, service-account tokens signed by the API server (TokenRequest), the
garbage collector, the namespace, service-account, endpoint, workload and persistent-volume controllers, and the
default scheduler. What does not run: a kubelet (the test kubelet, ``tests/operator/kubelet``, is the node), a
container runtime, kube-proxy, cluster DNS, the node-lifecycle controller (its taints would judge our test node by
a heartbeat the tests need not fake) and cloud controllers. Flags follow controller-runtime's envtest and
Kubernetes' own integration tests; docs/operator.md lists them with the reasons.

One control plane serves a whole test session (``session_control_plane``); tests isolate themselves by namespace
and node. Logs of every component are kept under the session's directory and printed by ``diagnosis()``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.cluster import pki
from tests.cluster.client import ApiClient, ApiError
from tests.fixtures.child_process import die_with_parent, free_port

REPO = Path(__file__).resolve().parents[2]
K8S_VERSION = "v1.35.4"  # tests/setup/prepare.d/40-controlplane.sh builds this version
BINARIES = REPO / ".tools" / "controlplane" / K8S_VERSION / "bin"
SERVICE_CIDR = "10.0.0.0/24"
KUBERNETES_SERVICE_IP = "10.0.0.1"

# Controllers of kube-controller-manager that the tests rely on (their names as `--controllers` takes them).
CONTROLLERS = (
    "garbage-collector-controller",  # owner references: a deleted SparkPlanJob takes its pods, Services, ...
    "namespace-controller",  # a deleted namespace empties and goes
    "serviceaccount-controller",  # the `default` ServiceAccount of every namespace
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",  # kube-root-ca.crt, projected into every pod's token volume
    "endpoints-controller",
    "endpointslice-controller",
    "replicaset-controller",  # the operator's Deployment (chart) -> ReplicaSet -> Pod
    "deployment-controller",
    "persistentvolume-binder-controller",  # claims bind to the node's volumes
    # The API server puts kubernetes.io/pvc-protection (pv-protection) on every claim (volume); without these
    # controllers to take it off once no pod uses it, a deleted claim never goes, and neither does its
    # namespace: the namespace controller then retried every test's namespace for the rest of the session (60
    # LIST+DELETE per pass, ~3400 passes in 25 minutes: most of the API server's CPU).
    "persistentvolumeclaim-protection-controller",
    "persistentvolume-protection-controller",
    "pod-garbage-collector-controller",  # pods of a removed test node are deleted
    "job-controller",
    "ttl-after-finished-controller",
    "clusterrole-aggregation-controller",  # fills the aggregated roles (admin, edit, view) users bind to
    # Judges nodes by their Lease heartbeat: removes the not-ready taint the API server puts on a new node once
    # it is Ready, and taints (then evicts from) a node whose kubelet stopped renewing.
    "node-lifecycle-controller",
)


def missing_binaries() -> str | None:
    """None when the control plane can start here, else what to run."""
    absent = [b for b in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
              if not (BINARIES / b).is_file()]
    if absent:
        return (f"the control-plane binaries {', '.join(absent)} are missing under {BINARIES}: run "
                f"`bash tests/setup/prepare.sh` (tests/setup/prepare.d/40-controlplane.sh builds them)")
    return None


class ControlPlane:
    """``start()`` brings every component up and waits until the API serves; ``stop()`` ends them."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.logs = directory / "logs"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.etcd_port = free_port()
        self.etcd_peer_port = free_port()
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.pki_dir = directory / "pki"
        self.ca = pki.Authority(self.pki_dir)
        self.serving = self.ca.issue(
            "apiserver", "kube-apiserver", server=True, client=False,
            hosts=("127.0.0.1", "localhost", KUBERNETES_SERVICE_IP, "kubernetes", "kubernetes.default",
                   "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"))
        self.kubelet_client = self.ca.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                                            groups=("system:masters",))
        self.service_accounts = pki.signing_key(self.pki_dir)
        self.identities: dict[str, pki.KeyPair] = {
            "admin": self.ca.issue("admin", "planengine-test-admin", groups=("system:masters",)),
            "scheduler": self.ca.issue("scheduler", "system:kube-scheduler"),
            "controller-manager": self.ca.issue("controller-manager", "system:kube-controller-manager"),
        }
        self.admin = self.client("admin")
        self.kubeconfigs = {name: self.client(name).write_kubeconfig(directory / f"{name}.kubeconfig")
                            for name in ("admin", "scheduler", "controller-manager")}

    # ------------------------------------------------------------------------------------------ identities
    def client(self, identity: str) -> ApiClient:
        pair = self.identities[identity]
        return ApiClient(self.url, self.ca.cert, cert=pair.cert, key=pair.key, user=identity)

    def user(self, name: str, common_name: str, groups: tuple[str, ...] = ()) -> ApiClient:
        """A client for a new certificate identity (``system:node:<n>`` for a kubelet, a tenant, ...)."""
        pair = self.identities.get(name) or self.ca.issue(name, common_name, groups=groups)
        self.identities[name] = pair
        return self.client(name)

    def token_client(self, token: str, user: str) -> ApiClient:
        return ApiClient(self.url, self.ca.cert, token=token, user=user)

    # ------------------------------------------------------------------------------------------ processes
    def command(self, component: str) -> list[str]:
        binary = str(BINARIES / component)
        if component == "etcd":
            client, peer = f"http://127.0.0.1:{self.etcd_port}", f"http://127.0.0.1:{self.etcd_peer_port}"
            return [binary, "--name=default", f"--data-dir={self.directory / 'etcd'}",
                    f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
                    f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                    f"--initial-cluster=default={peer}", "--unsafe-no-fsync", "--log-level=warn",
                    "--quota-backend-bytes=4294967296"]
        if component == "kube-apiserver":
            return [binary, f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
                    f"--secure-port={self.port}", "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                    f"--tls-cert-file={self.serving.cert}", f"--tls-private-key-file={self.serving.key}",
                    f"--client-ca-file={self.ca.cert}", "--authorization-mode=Node,RBAC",
                    "--enable-admission-plugins=NodeRestriction", f"--service-cluster-ip-range={SERVICE_CIDR}",
                    "--allow-privileged=true", "--service-account-issuer=https://kubernetes.default.svc",
                    f"--service-account-key-file={self.service_accounts.cert}",
                    f"--service-account-signing-key-file={self.service_accounts.key}",
                    f"--kubelet-client-certificate={self.kubelet_client.cert}",
                    f"--kubelet-client-key={self.kubelet_client.key}",
                    f"--kubelet-certificate-authority={self.ca.cert}",
                    "--kubelet-preferred-address-types=InternalIP", "--profiling=false",
                    # No kube-proxy: webhook (and aggregated API) calls go to a Service's endpoint, not its IP.
                    "--enable-aggregator-routing=true",
                    f"--cert-dir={self.directory / 'apiserver-certs'}", "--v=1"]
        if component == "kube-controller-manager":
            return [binary, f"--kubeconfig={self.kubeconfigs['controller-manager']}",
                    f"--authentication-kubeconfig={self.kubeconfigs['controller-manager']}",
                    f"--authorization-kubeconfig={self.kubeconfigs['controller-manager']}",
                    "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
                    f"--controllers={','.join(CONTROLLERS)}", "--use-service-account-credentials=true",
                    f"--service-account-private-key-file={self.service_accounts.key}",
                    f"--root-ca-file={self.ca.cert}", f"--service-cluster-ip-range={SERVICE_CIDR}",
                    "--concurrent-gc-syncs=4", "--node-monitor-period=2s", "--profiling=false", "--v=1"]
        if component == "kube-scheduler":
            return [binary, f"--kubeconfig={self.kubeconfigs['scheduler']}",
                    f"--authentication-kubeconfig={self.kubeconfigs['scheduler']}",
                    f"--authorization-kubeconfig={self.kubeconfigs['scheduler']}",
                    "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
                    "--profiling=false", "--v=1"]
        raise ValueError(f"unknown control-plane component {component!r}")

    def start_component(self, component: str) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = (self.logs / f"{component}.log").open("ab")
        self.procs[component] = subprocess.Popen(self.command(component), stdout=log, stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL, start_new_session=True,
                                                 preexec_fn=die_with_parent)
        log.close()

    def stop_component(self, component: str, sig: int = signal.SIGTERM, timeout: float = 20) -> None:
        proc = self.procs.pop(component, None)
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

    def restart(self, component: str, *, kill: bool = True) -> None:
        """kill -9 (or a graceful stop) and start again: a crashed etcd or API server, as a fault test plays it."""
        self.stop_component(component, signal.SIGKILL if kill else signal.SIGTERM)
        self.start_component(component)
        if component in ("etcd", "kube-apiserver"):
            self.wait_ready()

    def start(self, timeout: float = 240) -> ControlPlane:
        problem = missing_binaries()
        if problem:
            raise RuntimeError(problem)
        started = time.monotonic()
        self.start_component("etcd")
        self._wait(lambda: self._etcd_healthy(), timeout, "etcd to serve")
        self.start_component("kube-apiserver")
        self.wait_ready(timeout)
        self.start_component("kube-controller-manager")
        self.start_component("kube-scheduler")
        self._wait(lambda: self.admin.get("", "serviceaccounts", "default", "default"), timeout,
                   "the service-account controller to create default/default")
        self._wait(lambda: self.admin.get("", "configmaps", "default", "kube-root-ca.crt"), timeout,
                   "kube-root-ca.crt in default")
        self.startup_seconds = time.monotonic() - started
        return self

    def wait_ready(self, timeout: float = 240) -> None:
        def ready() -> bool:
            try:
                return self.admin.request("GET", "/readyz", timeout=5) == "ok"
            except (ApiError, OSError):
                return False

        self._wait(ready, timeout, "kube-apiserver /readyz")

    def _etcd_healthy(self) -> bool:
        import urllib.request
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.etcd_port}/health", timeout=2) as rsp:
                return b'"true"' in rsp.read()
        except OSError:
            return False

    def _wait(self, predicate: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode} while waiting for {what}\n"
                                       + self.diagnosis())
            try:
                if predicate():
                    return
            except (ApiError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {timeout:g}s waiting for {what}\n" + self.diagnosis())
            time.sleep(0.2)

    def stop(self) -> None:
        for component in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            self.stop_component(component)

    def diagnosis(self, lines: int = 30) -> str:
        parts = []
        for log in sorted(self.logs.glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log} (last {len(tail)} lines)\n" + "\n".join(tail))
        return "\n".join(parts)
