"""The test kubelet: runs the pods of the API emulator as local processes, exactly as each pod says.

A node agent like the real one, talking to the API over HTTP: it binds every pod it sees to its node, gives it a
pod IP (``podnet.py``: an address of a block made local to this machine, ``10.<node block>.<x>.<y>``, which a real
API server accepts in EndpointSlices; ``127.<node block>.<x>.<y>`` without CAP_NET_ADMIN), prepares its volumes,
starts each container in a sandbox (``sandbox.py``) and writes ``status`` back (phase, pod IP, conditions,
``containerStatuses`` with running / terminated / waiting states, exit codes, restart counts), restarts containers
per ``restartPolicy`` with a back-off, runs ``httpGet`` readiness and liveness probes, serves ``pods/<name>/log``
(``kubectl logs``, the operator's log reads) and ends containers when a pod is deleted: SIGTERM to the main
process, SIGKILL to every process of the container after the grace period, then the final delete of the pod object
(until then the pod is Terminating, as on a cluster). A pod that vanishes from the API is killed.

What a container gets, and from where:

* the image (``image.py``): ENTRYPOINT/CMD, ENV, WORKDIR and USER from our ``Dockerfile``, the image name's
  virtualenv at ``VIRTUAL_ENV``; ``command``/``args`` replace them as Kubernetes specifies (``/usr/bin/tini
  --`` is dropped when this machine has no tini: the runner kills the whole process group itself);
* ``env`` (values, ``$(VAR)`` references, ``valueFrom`` fieldRef / configMapKeyRef / secretKeyRef) and
  ``envFrom`` (ConfigMaps, Secrets with prefix) from the API, plus ``HOSTNAME`` and ``KUBERNETES_SERVICE_*``;
* volumes: ``persistentVolumeClaim`` -> one directory per claim (``<root>/pvc/<namespace>/<claim>``, shared by
  every pod using it, ReadWriteMany; the PersistentVolumeClaim object must exist in the API, ``create_claim``,
  else the pod stays Pending, unscheduled, as the scheduler leaves it), ``configMap``/``secret`` -> files
  written at container start, ``emptyDir`` -> a directory per pod, ``hostPath`` -> that path; ``fsGroup`` owns
  claim and emptyDir dirs;
* ``readOnlyRootFilesystem``, ``runAsUser``/``runAsGroup``/``fsGroup``, ``workingDir``: enforced by the
  sandbox; ``runAsNonRoot`` refuses uid 0 (CreateContainerConfigError).

Spark drivers asking for executor pods are checked, then run with in-process executors, or, on a node with
``executor_pods`` set, create their executor pods through the API server (``spark_profile``).
Not done: scheduling (one node, no resources), image pulls, init containers, other volume types, exec,
port-forward, ConfigMap volume updates after start, Secrets (the emulator serves none).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.cluster.client import ApiClient
from tests.cluster.pki import KeyPair
from tests.operator.kubelet import node as node_api
from tests.operator.kubelet import podnet, sandbox, spark_profile
from tests.operator.kubelet.image import EngineImage, engine_image

# Passed from the test process into every container (a pod's own env, set later, wins): the JIT and GC options
# of the test run's JVMs, so drivers in pods are tuned like the engine processes tests start directly.
TUNING_ENV = "PLANENGINE_SPARK_CONF"

SYNC_INTERVAL = 0.2
HEARTBEAT = 5.0  # seconds between the node's Lease renewals (a kubelet's default is 10 s)
# Seconds between the node's status reports (a kubelet's nodeStatusReportFrequency is 5 min, and it reports at
# once when the stored status differs from its own). Once a late Lease renewal under load let the node-lifecycle
# controller set Ready to Unknown and taint the node unreachable, only a status report makes it Ready again: the
# fault campaign's node stayed tainted, and every new pod Pending, after one renewal came late at load 15.
STATUS_REPORT = 30.0
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def create_claim(api_url: str, namespace: str, name: str) -> None:
    """A PersistentVolumeClaim object (ReadWriteMany, bound at once: this node has one directory per claim)."""
    body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound"}}
    request = urllib.request.Request(f"{api_url}/api/v1/namespaces/{namespace}/persistentvolumeclaims",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as rsp:
        rsp.read()


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclasses.dataclass(frozen=True)
class ImageSpec:
    """A local stand-in for an image: the virtualenv its ``VIRTUAL_ENV`` holds and, for a test image, another
    ENTRYPOINT (e.g. the contract double of the engine CLI). Everything else is the Dockerfile's."""

    venv: Path
    entrypoint: tuple[str, ...] | None = None
    # (file on this machine, its path in the image): a test image's own files, e.g. the contract double its
    # ENTRYPOINT runs. They must be part of the image: a pod's emptyDir at /tmp hides a checkout under /tmp.
    files: tuple[tuple[Path, str], ...] = ()


def _stand_in_paths(venv: Path, virtual_env: str) -> list[sandbox.Mount]:
    """Where a stand-in venv still points at this machine, bound read-only at the same paths.

    A real image's venv was built at its VIRTUAL_ENV with the package installed into it. The stand-in was built
    elsewhere: its console scripts (the ENTRYPOINT ``planengine``) name its build path in their shebang, and its
    editable install names this checkout in a ``.pth`` file. The overlay root shows those paths, except under a
    directory the pod mounts over (a checkout under /tmp, behind the pod's emptyDir at /tmp), so they are bound
    again after the pod's volumes.
    """
    built_at = venv.resolve()  # a worktree reaches its main checkout's venvs through symlinks
    if str(built_at) == virtual_env:
        return []
    sources: list[Path] = []
    for pth in sorted(built_at.glob("lib/python*/site-packages/*.pth")):
        for line in pth.read_text().splitlines():
            path = Path(line.strip())
            if path.is_absolute() and path.is_dir() and path not in sources:
                sources.append(path)
    return [sandbox.Mount(path, str(path), read_only=True) for path in [*sources, built_at]]


@dataclasses.dataclass
class Probe:
    spec: dict[str, Any]
    failures: int = 0
    successes: int = 0
    last: float = 0.0


def log_tail(path: Path, lines: int = 80, limit: int = 2048) -> str:
    """What a kubelet puts in a failed container's ``terminated.message`` under ``FallbackToLogsOnError``: the
    end of its log, at most 80 lines and 2048 bytes, whichever is smaller (Kubernetes' documented bounds).

    >>> import tempfile; log = Path(tempfile.mkdtemp()) / "c.log"
    >>> _ = log.write_text("".join(f"{i}\\n" for i in range(99)))
    >>> tail = log_tail(log); tail.splitlines()[0], tail.splitlines()[-1], len(tail.splitlines())
    ('19', '98', 80)
    """
    try:
        data = path.read_bytes()[-limit:]
    except OSError:
        return ""
    return "".join(data.decode("utf-8", errors="replace").splitlines(keepends=True)[-lines:])


@dataclasses.dataclass
class Container:
    spec: dict[str, Any]
    restarts: int = 0
    proc: subprocess.Popen[bytes] | None = None
    started_at: str | None = None
    started: float = 0.0
    terminated: dict[str, Any] | None = None  # the last termination: exitCode, reason, startedAt, finishedAt
    last_terminated: dict[str, Any] | None = None
    waiting: str | None = None  # reason while not running
    waiting_message: str = ""
    restart_at: float = 0.0
    ready: bool = False
    readiness: Probe | None = None
    liveness: Probe | None = None

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclasses.dataclass
class PodRun:
    uid: str
    namespace: str
    name: str
    ip: str
    directory: Path
    containers: list[Container]
    term_sent: float = 0.0
    deleted: bool = False
    last_status: dict[str, Any] | None = None
    scheduled_at: str = dataclasses.field(default_factory=now_iso)


class Kubelet:
    """One node. ``start()`` serves it from a thread with its own event loop; ``stop()`` kills every container."""

    def __init__(self, api: Any, root: Path, images: dict[str, ImageSpec], *, node: str = "kubelet-0",
                 backoff: tuple[float, float] = (0.5, 5.0), serving: KeyPair | None = None,
                 capacity: dict[str, str] | None = None) -> None:
        # A real API server (an ApiClient with this node's identity, ``system:node:<node>``) or the emulator
        # (tests.operator.kapi.server.RunningApi). On a real one the scheduler binds pods, the node registers
        # itself and serves logs over TLS (``serving``: its certificate of the cluster CA).
        self.api = api
        self.real = isinstance(api, ApiClient)
        self.serving = serving
        self.capacity = capacity or node_api.machine_capacity()
        self._server: web.AppRunner | None = None
        self._last_heartbeat = 0.0
        self._last_status = time.monotonic()  # registration reports the first status
        self._api_proxy: asyncio.AbstractServer | None = None
        self.port = 0
        self.root = root
        self.images = images
        self.node = node
        self.backoff = backoff
        self.image: EngineImage = engine_image()
        self.pods: dict[str, PodRun] = {}
        self._next_ip = 1
        # Pods bind their pod IP (status API port 4041 in every driver): a random second octet per kubelet keeps
        # the pods of two test processes running at once (two worktrees' suites) apart, as separate nodes.
        self._ip_block = random.SystemRandom().randrange(1, 255)
        self.network = podnet.PodNetwork(f"127.{self._ip_block}")  # a routable block on a real API server (start)
        self.network_problem: str | None = None  # why the node's pods have loopback addresses, if they do
        # Spark drivers create real executor pods (True) or run their tasks in-process (each executor is a JVM).
        self.executor_pods = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name=f"kubelet-{node}", daemon=True)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.errors: list[str] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> Kubelet:
        why = sandbox.available()
        if why is not None:
            raise RuntimeError(why)
        self.root.mkdir(parents=True, exist_ok=True)
        if self.real:
            self.network, self.network_problem = podnet.claim()
            self.started = threading.Event()
            self._thread.start()
            if not self.started.wait(60):
                raise RuntimeError(f"the test kubelet {self.node} did not register: {self.errors}")
            return self
        self.api.api.subresource_handlers[("", "pods", "log")] = self._serve_log
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        with self._lock:
            for run in self.pods.values():
                for container in run.containers:
                    self._kill(container, signal.SIGKILL)
        self.network.release()

    def _main(self) -> None:
        self.loop = asyncio.new_event_loop()
        try:
            self.loop.run_until_complete(self._serve())
        finally:  # connections still forwarded to the API server end here, not in the garbage collector
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:  # gather() of nothing asks for the thread's current loop, and this thread has none
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.close()

    async def _serve(self) -> None:
        connector = aiohttp.TCPConnector(ssl=node_api.client_context(self.api)) if self.real else None
        async with aiohttp.ClientSession(base_url=self.api.url, connector=connector) as self.http:
            if self.real:
                try:
                    await self._register()
                except Exception as error:
                    self.errors.append(f"registering node {self.node}: {type(error).__name__}: {error}")
                    return
                self.started.set()
            while not self._stop.is_set():
                try:
                    if self.real:
                        await self._heartbeat()
                    await self._sync_all()
                except Exception as error:  # keep the node alive; the test sees the error list
                    self.errors.append(f"{type(error).__name__}: {error}")
                await asyncio.sleep(SYNC_INTERVAL)
            if self._server is not None:
                await self._server.cleanup()
            if self._api_proxy is not None:
                self._api_proxy.close()

    @property
    def api_service_ip(self) -> str:
        return f"127.{self._ip_block}.0.1"

    async def _forward_to_api(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, _, port = self.api.url.split("://", 1)[1].partition(":")
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.close()
            return

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            except OSError:
                pass
            finally:
                sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    async def _heartbeat(self) -> None:
        """Renew the node's Lease (``kube-node-lease``) every ``HEARTBEAT`` seconds, as a kubelet does: the
        node-lifecycle controller judges the node Ready by it (and taints it when it stops)."""
        now = time.monotonic()
        if now - self._last_heartbeat < HEARTBEAT:
            return
        self._last_heartbeat = now
        if now - self._last_status >= STATUS_REPORT:
            self._last_status = now
            await self._patch(f"/api/v1/nodes/{self.node}/status",
                              {"status": {"conditions": node_api.ready_conditions()}})
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{self.node}"
        body = node_api.node_lease(self.node)
        # A merge patch of the renewal, not a PUT: the API server refuses an update without the object's
        # resourceVersion (422), and a PUT that created the Lease but never renewed it let every node go NotReady
        # (tainted unreachable: no new pod scheduled) about 50 s after it registered.
        async with self.http.patch(path, json={"spec": body["spec"]},
                                   headers={"Content-Type": "application/merge-patch+json"}) as rsp:
            if rsp.status == 404:
                async with self.http.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                                          json=body) as created:
                    if created.status >= 400:
                        self.errors.append(f"POST lease: {created.status} {(await created.text())[:200]}")
            elif rsp.status >= 400:
                self.errors.append(f"PATCH lease: {rsp.status} {(await rsp.text())[:200]}")

    async def _register(self) -> None:
        """The kubelet API (logs, over TLS) first, then the Node object that names its port."""
        assert self.serving is not None, "a node of a real API server needs its serving certificate"
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._serve_container_log)
        self._server = web.AppRunner(app, access_log=None)
        await self._server.setup()
        site = web.TCPSite(self._server, "127.0.0.1", 0, ssl_context=node_api.server_context(
            self.api.ca, self.serving.cert, self.serving.key))
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        # The `kubernetes` Service as kube-proxy and cluster DNS make it reachable in a pod: the name resolves
        # (each pod's /etc/hosts) to this node's address of it, port 443, forwarded to the API server.
        self._api_proxy = await asyncio.start_server(self._forward_to_api, self.api_service_ip, 443)
        manifest = node_api.node_manifest(self.node, self.port, self.capacity)
        async with self.http.post("/api/v1/nodes", json=manifest) as rsp:
            if rsp.status == 409:  # a node of this name from an earlier kubelet: take it over
                labels = manifest["metadata"]["labels"]
                await self._patch(f"/api/v1/nodes/{self.node}", {"metadata": {"labels": labels}})
            elif rsp.status >= 400:
                raise RuntimeError(f"POST node: {rsp.status} {(await rsp.text())[:300]}")
        await self._patch(f"/api/v1/nodes/{self.node}/status", {"status": manifest["status"]})

    # ------------------------------------------------------------------------------------------ API
    async def _get(self, path: str) -> Any:
        """The object at ``path``, None when it does not exist; any other refusal is not an answer (a 403 Status
        read as an empty pod list once hid every Service from every executor pod's /etc/hosts): a container being
        prepared waits and is tried again, as a kubelet retries a volume it cannot read yet."""
        async with self.http.get(path) as rsp:
            if rsp.status == 404:
                return None
            if rsp.status >= 400:
                raise _NotYet("ContainerCreating", f"GET {path}: {rsp.status} {(await rsp.text())[:300]}")
            return await rsp.json()

    async def _patch(self, path: str, body: dict[str, Any]) -> None:
        async with self.http.patch(path, json=body, headers={"Content-Type": "application/merge-patch+json"}) as rsp:
            if rsp.status >= 400 and rsp.status != 404:
                self.errors.append(f"PATCH {path}: {rsp.status} {(await rsp.text())[:300]}")

    async def _delete(self, path: str, grace: int) -> None:
        async with self.http.delete(path, params={"gracePeriodSeconds": str(grace)}) as rsp:
            await rsp.read()

    def _pod_path(self, namespace: str, name: str) -> str:
        return f"/api/v1/namespaces/{namespace}/pods/{name}"

    # ------------------------------------------------------------------------------------------ sync
    async def _sync_all(self) -> None:
        query = f"?fieldSelector=spec.nodeName%3D{self.node}" if self.real else ""  # the scheduler binds
        listed = (await self._get(f"/api/v1/pods{query}") or {}).get("items") or []
        seen = set()
        for pod in listed:
            node = (pod.get("spec") or {}).get("nodeName")
            if node not in (None, self.node):
                continue
            seen.add(pod["metadata"]["uid"])
            await self._sync(pod)
        with self._lock:
            for uid, run in list(self.pods.items()):
                if uid not in seen:  # gone from the API (force-deleted): kill what still runs
                    for container in run.containers:
                        self._kill(container, signal.SIGKILL)
                    self._cleanup(run)
                    del self.pods[uid]

    async def _sync(self, pod: dict[str, Any]) -> None:
        md = pod["metadata"]
        path = self._pod_path(md["namespace"], md["name"])
        run = self.pods.get(md["uid"])
        if run is None:
            if md.get("deletionTimestamp"):
                await self._delete(path, 0)  # never started here: nothing to stop
                return
            if self.real:
                run = self._admit(pod)
            else:
                if await self._unschedulable(pod, path):
                    return
                run = self._admit(pod)
                await self._patch(path, {"spec": {"nodeName": self.node}})
        if md.get("deletionTimestamp"):
            await self._terminate(pod, run, path)
            return
        for container in run.containers:
            await self._sync_container(pod, run, container)
        await self._write_status(pod, run, path)

    async def _unschedulable(self, pod: dict[str, Any], path: str) -> bool:
        """The scheduler's verdict on a pod whose claims do not exist: it stays Pending and unbound, with
        ``PodScheduled=False, reason Unschedulable`` and the scheduler's message (checked again every sync, so
        the pod starts once the claim is created)."""
        namespace = pod["metadata"]["namespace"]
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and await self._get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim}") is None:
                message = f'0/1 nodes are available: persistentvolumeclaim "{claim}" not found.'
                status = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                              "reason": "Unschedulable", "message": message}]}
                if (pod.get("status") or {}).get("conditions") != status["conditions"]:
                    await self._patch(path + "/status", {"status": status})
                return True
        return False

    def _admit(self, pod: dict[str, Any]) -> PodRun:
        md = pod["metadata"]
        number = self._next_ip
        self._next_ip += 1
        ip = self.network.address(number)
        directory = self.root / "pods" / f"{md['namespace']}_{md['name']}_{md['uid'][:8]}"
        directory.mkdir(parents=True, exist_ok=True)
        run = PodRun(md["uid"], md["namespace"], md["name"], ip, directory,
                     [Container(c) for c in (pod.get("spec") or {}).get("containers") or []])
        for container in run.containers:
            container.waiting = "ContainerCreating"
            if container.spec.get("readinessProbe"):
                container.readiness = Probe(container.spec["readinessProbe"])
            if container.spec.get("livenessProbe"):
                container.liveness = Probe(container.spec["livenessProbe"])
        with self._lock:
            self.pods[md["uid"]] = run
        return run

    async def _sync_container(self, pod: dict[str, Any], run: PodRun, container: Container) -> None:
        if container.running():
            await self._probe(run, container)
            return
        if container.proc is not None:  # it just exited: the container ends with its main process
            code = container.proc.wait()
            self._kill(container, signal.SIGKILL)  # what it left running (a JVM child) goes with it
            container.terminated = {
                "exitCode": code if code >= 0 else 128 - code,  # a signal n is exit 128+n, as container runtimes say
                "reason": "Completed" if code == 0 else "Error", "startedAt": container.started_at,
                "finishedAt": now_iso()}
            if code < 0 and -code == signal.SIGKILL and container.waiting == "Killing":
                container.terminated["reason"] = "Error"
            if code != 0 and container.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
                # No container writes /dev/termination-log here, so the message is always the fallback.
                container.terminated["message"] = log_tail(self._log_path(run, container))
            container.proc = None
            container.ready = False
            policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
            if policy == "Always" or (policy == "OnFailure" and code != 0):
                delay = min(self.backoff[1], self.backoff[0] * (2 ** container.restarts))
                container.restart_at = time.monotonic() + delay
                container.waiting, container.waiting_message = "CrashLoopBackOff", f"back-off {delay:g}s restarting"
            else:
                container.waiting = None
            return
        if container.terminated is not None and container.waiting is None:
            return  # done for good (restartPolicy)
        if container.restart_at and time.monotonic() < container.restart_at:
            return
        if container.terminated is not None:  # a restart
            container.last_terminated = container.terminated
            container.terminated = None
            container.restarts += 1
        try:
            argv, env, box = await self._prepare(pod, run, container)
        except _NotYet as wait:
            container.waiting, container.waiting_message = wait.reason, str(wait)
            return
        except _Refused as refused:
            container.waiting, container.waiting_message = "CreateContainerConfigError", str(refused)
            return
        log = open(self._log_path(run, container), "ab")  # noqa: SIM115 - owned by the child
        try:
            container.proc = subprocess.Popen(box.command(argv), env=env, stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()
        container.started_at, container.started = now_iso(), time.monotonic()
        container.waiting, container.waiting_message, container.restart_at = None, "", 0.0
        container.ready = container.readiness is None

    # ------------------------------------------------------------------------------------------ start
    async def _prepare(self, pod: dict[str, Any], run: PodRun,
                       container: Container) -> tuple[list[str], dict[str, str], sandbox.Sandbox]:
        spec = pod.get("spec") or {}
        pod_security = spec.get("securityContext") or {}
        security = {**pod_security, **(container.spec.get("securityContext") or {})}
        image_name = str(container.spec.get("image") or "")
        image = self.images.get(image_name)
        if image is None:
            raise _NotYet("ErrImagePull", f"image {image_name!r} is not known to this node (images: "
                                          f"{', '.join(sorted(self.images))})")
        uid = int(security.get("runAsUser", self.image.uid))
        gid = int(security.get("runAsGroup", self.image.gid if uid == self.image.uid else 0))
        if security.get("runAsNonRoot") and uid == 0:
            raise _Refused("container has runAsNonRoot and image will run as root")
        fs_group = pod_security.get("fsGroup")
        volumes = {v["name"]: v for v in spec.get("volumes") or []}
        mounts = [sandbox.Mount(Path(image.venv), self.image.virtual_env, read_only=True)]
        mounts += [sandbox.Mount(source, target) for target, source in self.image.installed_files.items()]
        mounts += [sandbox.Mount(source, target, read_only=True) for source, target in image.files]
        files: dict[str, Path] = {}  # container path -> file, for the Spark checks
        for mount in container.spec.get("volumeMounts") or []:
            volume = volumes.get(mount["name"])
            if volume is None:
                raise _Refused(f"volumeMount {mount['name']} names no volume of the pod")
            source = await self._volume(pod, run, volume, fs_group)
            if mount.get("subPath"):
                source = source / mount["subPath"]
                source.mkdir(parents=True, exist_ok=True)
            mounts.append(sandbox.Mount(source, mount["mountPath"], bool(mount.get("readOnly"))))
            if source.is_dir():
                for file in source.rglob("*"):
                    files[f"{mount['mountPath'].rstrip('/')}/{file.relative_to(source)}"] = file
        mounts += _stand_in_paths(Path(image.venv), self.image.virtual_env)
        env = await self._env(pod, run, container)
        argv = self._argv(container.spec, env)
        if spark_profile.wants_kubernetes(argv):
            argv = await self._localize_spark(argv, pod, container, files, run.ip)
        user = self.image.user if uid == self.image.uid else ""
        home = self.image.home if user else "/"
        env.setdefault("HOME", home)
        etc = {"hosts": "\n".join(await self._hosts(pod, run)), "hostname": run.name}
        if user:
            etc["passwd"] = f"{user}:x:{uid}:{gid}::{home}:/usr/sbin/nologin"
            etc["group"] = f"{user}:x:{gid}:"
        interpreter = Path(os.path.realpath(Path(image.venv) / "bin" / "python"))
        box = sandbox.Sandbox(
            directory=run.directory / "containers" / f"{container.name}-{container.restarts}", hostname=run.name,
            mounts=mounts, etc_files=etc, read_only_root=bool(security.get("readOnlyRootFilesystem")), uid=uid,
            gid=gid, groups=sorted({gid, *([int(fs_group)] if fs_group is not None else [])}),
            working_dir=container.spec.get("workingDir") or self.image.workdir,
            traversable=[str(p) for p in reversed(interpreter.parents) if str(p) != "/"],
            owned_dirs=dict(self.image.owned_dirs),
        )
        return argv, env, box

    def _argv(self, spec: dict[str, Any], env: dict[str, str]) -> list[str]:
        """Kubernetes' rule: ``command`` replaces ENTRYPOINT (and drops CMD), ``args`` replaces CMD."""
        image = self.images[str(spec.get("image"))]
        entrypoint = list(image.entrypoint) if image.entrypoint is not None else list(self.image.entrypoint)
        if spec.get("command"):
            argv = [*spec["command"], *(spec.get("args") or [])]
        else:
            argv = [*entrypoint, *spec.get("args", self.image.cmd)]
        if argv[:2] == ["/usr/bin/tini", "--"] and not Path("/usr/bin/tini").exists():
            argv = argv[2:]  # the runner reaps and kills the process group itself (the image's or a pod's tini)
        return [_expand(a, env) for a in argv]

    async def _localize_spark(self, argv: list[str], pod: dict[str, Any], container: Container,
                              files: dict[str, Path], pod_ip: str) -> list[str]:
        namespace = pod["metadata"]["namespace"]
        host = spark_profile.conf_pairs(argv).get("spark.driver.host", "")
        name = host.split(".")[0]
        found = await self._get(f"/api/v1/namespaces/{namespace}/services/{name}") if name else None
        if found is None and host.endswith(f".{namespace}.svc"):
            raise _NotYet("ContainerCreating", f"waiting for Service {name} (spark.driver.host)")
        services = {(namespace, name): found}
        try:
            return spark_profile.check_and_localize(
                argv, pod=pod, container=container.spec, service=lambda ns, svc: services.get((ns, svc)),
                container_file=files.get, executor_pods=pod_ip if self.executor_pods and self.real else None)
        except spark_profile.SparkSettingsError as error:
            return ["/bin/sh", "-c", 'echo "$0" >&2; exit 1', f"Spark on Kubernetes settings rejected: {error}"]

    async def _hosts(self, pod: dict[str, Any], run: PodRun) -> list[str]:
        """The pod's /etc/hosts additions, a stand-in for cluster DNS written when the container starts: its name,
        and the cluster name of every Service of its namespace with the address of a pod it selects (this pod's
        when it selects this pod: a driver's own Service; else a running pod's: the driver Service an executor
        dials). No kube-proxy: a name leads to a pod address, as a headless Service's does.

        The pods come from this node's own list (``spec.nodeName``): the real API server's Node authorizer lets a
        kubelet list pods only with that field selector, and on this one-node cluster it holds every pod. A
        Service with ``publishNotReadyAddresses`` (the drivers') names a pod as soon as it has an address, as the
        EndpointSlice controller does; any other only a Ready pod."""
        lines = [f"{run.ip} {run.name}"]
        if self.real:
            lines.append(f"{self.api_service_ip} kubernetes kubernetes.default kubernetes.default.svc "
                         "kubernetes.default.svc.cluster.local")
        labels = pod["metadata"].get("labels") or {}
        services = (await self._get(f"/api/v1/namespaces/{run.namespace}/services") or {}).get("items") or []
        others: list[dict[str, Any]] | None = None
        for svc in services:
            selector = (svc.get("spec") or {}).get("selector") or {}
            if not selector:
                continue
            address = run.ip if _selects(selector, labels) else None
            if address is None:
                if others is None:
                    query = f"?fieldSelector=spec.nodeName%3D{self.node}" if self.real else ""
                    others = (await self._get(f"/api/v1/namespaces/{run.namespace}/pods{query}") or {}
                              ).get("items") or []
                not_ready_too = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
                address = next((o["status"]["podIP"] for o in others
                                if _selects(selector, o["metadata"].get("labels") or {})
                                and _endpoint(o, not_ready_too)), None)
            if address is not None:
                name = svc["metadata"]["name"]
                lines.append(f"{address} {name}.{run.namespace}.svc {name}.{run.namespace}.svc.cluster.local")
        return lines

    async def _volume(self, pod: dict[str, Any], run: PodRun, volume: dict[str, Any], fs_group: Any) -> Path:
        namespace = pod["metadata"]["namespace"]
        if "persistentVolumeClaim" in volume:
            path = self.root / "pvc" / namespace / volume["persistentVolumeClaim"]["claimName"]
            path.mkdir(parents=True, exist_ok=True)
            _own(path, fs_group, recursive=True)
            return path
        if "emptyDir" in volume:
            path = run.directory / "volumes" / volume["name"]
            if not path.exists():
                path.mkdir(parents=True)
                path.chmod(0o777)
                _own(path, fs_group)
            return path
        if "hostPath" in volume:
            return Path(volume["hostPath"]["path"])
        for kind, plural in (("configMap", "configmaps"), ("secret", "secrets")):
            if kind in volume:
                ref = volume[kind]
                name = ref.get("name") or ref.get("secretName")
                found = await self._get(f"/api/v1/namespaces/{namespace}/{plural}/{name}")
                if found is None:
                    if ref.get("optional"):
                        found = {}
                    else:
                        raise _NotYet("ContainerCreating", f"{kind} {namespace}/{name} of volume "
                                                           f"{volume['name']} does not exist")
                data = dict(found.get("data") or {})
                if kind == "secret":
                    data = {k: base64.b64decode(v).decode() for k, v in data.items()}
                path = run.directory / "volumes" / volume["name"]
                shutil.rmtree(path, ignore_errors=True)
                path.mkdir(parents=True)
                items = ref.get("items") or [{"key": k, "path": k} for k in data]
                for item in items:
                    target = path / item["path"]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(str(data.get(item["key"], "")))
                    target.chmod(0o644)
                return path
        if "projected" in volume or "downwardAPI" in volume:
            return await self._projected(pod, run, volume)
        raise _Refused(f"volume {volume['name']}: this node supports persistentVolumeClaim, emptyDir, hostPath, "
                       f"configMap, secret, projected and downwardAPI volumes only")

    async def _projected(self, pod: dict[str, Any], run: PodRun, volume: dict[str, Any]) -> Path:
        """A ``projected`` volume (the service-account token volume the ServiceAccount admission plugin adds to
        every pod: a TokenRequest bound to the pod, ``kube-root-ca.crt``, the namespace) or a ``downwardAPI``
        one. Written once at container start; tokens live for the pod's life here (an hour at least)."""
        namespace = pod["metadata"]["namespace"]
        sources = (volume.get("projected") or {}).get("sources") or [{"downwardAPI": volume["downwardAPI"]}]
        files: dict[str, str] = {}
        for source in sources:
            if "serviceAccountToken" in source:
                spec = source["serviceAccountToken"]
                account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
                body = node_api.token_request(pod, spec.get("audience"), int(spec.get("expirationSeconds", 3607)))
                async with self.http.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
                                          json=body) as rsp:
                    if rsp.status >= 400:
                        raise _NotYet("ContainerCreating", f"token for serviceaccount {account}: {rsp.status} "
                                                           f"{(await rsp.text())[:200]}")
                    files[spec["path"]] = (await rsp.json())["status"]["token"]
            for kind, plural in (("configMap", "configmaps"), ("secret", "secrets")):
                if kind in source:
                    ref = source[kind]
                    found = await self._get(f"/api/v1/namespaces/{namespace}/{plural}/{ref['name']}")
                    if found is None:
                        if ref.get("optional"):
                            continue
                        raise _NotYet("ContainerCreating", f"{kind} {namespace}/{ref['name']} of volume "
                                                           f"{volume['name']} does not exist")
                    data = dict(found.get("data") or {})
                    if kind == "secret":
                        data = {k: base64.b64decode(v).decode() for k, v in data.items()}
                    for item in ref.get("items") or [{"key": k, "path": k} for k in data]:
                        files[item["path"]] = str(data.get(item["key"], ""))
            if "downwardAPI" in source:
                for item in source["downwardAPI"].get("items") or []:
                    field = (item.get("fieldRef") or {}).get("fieldPath", "")
                    value = {"metadata.namespace": namespace, "metadata.name": run.name,
                             "metadata.uid": run.uid}.get(field)
                    if value is None:
                        raise _Refused(f"downwardAPI field {field!r} is not supported by this node")
                    files[item["path"]] = value
        path = run.directory / "volumes" / volume["name"]
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        for name, text in files.items():
            target = path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            target.chmod(0o644)
        return path

    async def _env(self, pod: dict[str, Any], run: PodRun, container: Container) -> dict[str, str]:
        """Image ENV, then Kubernetes' own variables, then envFrom, then env (later wins; ``$(VAR)`` expands)."""
        namespace = pod["metadata"]["namespace"]
        env: dict[str, str] = {"PATH": DEFAULT_PATH}
        for key, value in self.image.env.items():
            env[key] = re.sub(r"\$(\w+)|\$\{(\w+)\}", lambda m: env.get(m.group(1) or m.group(2), ""), value)
        host, _, port = self.api.url.split("://", 1)[1].partition(":")
        env.update(HOSTNAME=run.name, KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=port)
        if TUNING_ENV in os.environ:  # this machine's JVM tuning of test runs (tests/fixtures/spark.py), not the pod's
            env[TUNING_ENV] = os.environ[TUNING_ENV]
        for source in container.spec.get("envFrom") or []:
            prefix = source.get("prefix", "")
            for kind, plural in (("configMapRef", "configmaps"), ("secretRef", "secrets")):
                if kind in source:
                    found = await self._get(f"/api/v1/namespaces/{namespace}/{plural}/{source[kind]['name']}")
                    if found is None and not source[kind].get("optional"):
                        raise _NotYet("CreateContainerConfigError", f"{kind} {source[kind]['name']} not found")
                    for key, value in ((found or {}).get("data") or {}).items():
                        env[prefix + key] = base64.b64decode(value).decode() if kind == "secretRef" else str(value)
        for item in container.spec.get("env") or []:
            if "value" in item:
                env[item["name"]] = _expand(str(item["value"]), env)
            elif "valueFrom" in item:
                env[item["name"]] = await self._value_from(pod, run, item["valueFrom"])
        return env

    async def _value_from(self, pod: dict[str, Any], run: PodRun, source: dict[str, Any]) -> str:
        namespace = pod["metadata"]["namespace"]
        if "fieldRef" in source:
            field = source["fieldRef"]["fieldPath"]
            values = {"metadata.name": run.name, "metadata.namespace": namespace, "metadata.uid": run.uid,
                      "status.podIP": run.ip, "status.hostIP": "127.0.0.1", "spec.nodeName": self.node,
                      "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName", "default")}
            if field not in values:
                raise _Refused(f"fieldRef {field} is not supported by this node")
            return values[field]
        for kind, plural in (("configMapKeyRef", "configmaps"), ("secretKeyRef", "secrets")):
            if kind in source:
                ref = source[kind]
                found = await self._get(f"/api/v1/namespaces/{namespace}/{plural}/{ref['name']}")
                value = ((found or {}).get("data") or {}).get(ref["key"])
                if value is None:
                    if ref.get("optional"):
                        return ""
                    raise _NotYet("CreateContainerConfigError", f"{kind} {ref['name']}/{ref['key']} not found")
                return base64.b64decode(value).decode() if kind == "secretKeyRef" else str(value)
        raise _Refused(f"valueFrom {sorted(source)} is not supported by this node")

    # ------------------------------------------------------------------------------------------ probes
    async def _probe(self, run: PodRun, container: Container) -> None:
        now = time.monotonic()
        for probe, kind in ((container.readiness, "readiness"), (container.liveness, "liveness")):
            if probe is None:
                continue
            spec = probe.spec
            if now - container.started < float(spec.get("initialDelaySeconds", 0)):
                continue
            if now - probe.last < float(spec.get("periodSeconds", 10)):
                continue
            probe.last = now
            ok = await self._http_probe(run, spec, container)
            probe.failures, probe.successes = (0, probe.successes + 1) if ok else (probe.failures + 1, 0)
            if kind == "readiness":
                if ok and probe.successes >= int(spec.get("successThreshold", 1)):
                    container.ready = True
                elif not ok and probe.failures >= int(spec.get("failureThreshold", 3)):
                    container.ready = False
            elif not ok and probe.failures >= int(spec.get("failureThreshold", 3)):
                probe.failures = 0
                with contextlib.suppress(ProcessLookupError):
                    self._kill(container, signal.SIGKILL)  # liveness failed: the container is restarted (policy)

    async def _http_probe(self, run: PodRun, spec: dict[str, Any], container: Container | None = None) -> bool:
        get = spec.get("httpGet")
        if not get:
            return True  # exec/tcp probes: not supported, counted as passing
        port = get["port"]
        if isinstance(port, str) and not port.isdigit():  # a named port of the container, as the chart uses
            ports = (container.spec if container else {}).get("ports") or []
            named = {item.get("name"): item["containerPort"] for item in ports}
            if port not in named:
                return False
            port = named[port]
        url = f"http://{run.ip}:{port}{get.get('path', '/')}"
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=float(spec.get("timeoutSeconds", 1)))
                                             ) as session, session.get(url) as rsp:
                return 200 <= rsp.status < 400
        except (aiohttp.ClientError, TimeoutError, OSError):
            return False

    # ------------------------------------------------------------------------------------------ status
    async def _write_status(self, pod: dict[str, Any], run: PodRun, path: str) -> None:
        statuses = [self._container_status(c) for c in run.containers]
        running = [c for c in run.containers if c.running()]
        pending_restart = [c for c in run.containers if c.waiting is not None]
        if running or (pending_restart and any(c.restarts or c.terminated for c in run.containers)):
            phase = "Running" if running or any(c.last_terminated for c in run.containers) else "Pending"
        elif pending_restart:
            phase = "Pending"
        else:
            phase = "Succeeded" if all((c.terminated or {}).get("exitCode") == 0 for c in run.containers) else "Failed"
        ready = bool(run.containers) and all(c.ready and c.running() for c in run.containers)
        conditions = [{"type": "PodScheduled", "status": "True"},
                      {"type": "Initialized", "status": "True"},
                      {"type": "ContainersReady", "status": str(ready)},
                      {"type": "Ready", "status": str(ready)}]
        status = {"phase": phase, "podIP": run.ip, "podIPs": [{"ip": run.ip}], "hostIP": "127.0.0.1",
                  "startTime": run.scheduled_at, "conditions": conditions, "containerStatuses": statuses}
        if status != run.last_status:
            await self._patch(path + "/status", {"status": status})
            run.last_status = status

    def _container_status(self, container: Container) -> dict[str, Any]:
        state: dict[str, Any]
        if container.running():
            state = {"running": {"startedAt": container.started_at}}
        elif container.waiting is not None:
            state = {"waiting": {"reason": container.waiting, "message": container.waiting_message[:500]}}
        elif container.terminated is not None:
            state = {"terminated": container.terminated}
        else:
            state = {"waiting": {"reason": "ContainerCreating"}}
        found = {"name": container.name, "image": container.spec.get("image", ""), "imageID": "",
                 "ready": container.ready and container.running(), "started": container.running(),
                 "restartCount": container.restarts, "state": state,
                 "lastState": {"terminated": container.last_terminated} if container.last_terminated else {}}
        if container.terminated is not None and container.waiting is not None:
            found["lastState"] = {"terminated": container.terminated}
        return found

    # ------------------------------------------------------------------------------------------ stop
    async def _terminate(self, pod: dict[str, Any], run: PodRun, path: str) -> None:
        """Graceful deletion: SIGTERM to each container's main process, SIGKILL to all of it after the grace
        period, then the pod object goes (delete with grace 0)."""
        grace = float(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
        now = time.monotonic()
        alive = [c for c in run.containers if c.running()]
        if alive and not run.term_sent:
            run.term_sent = now
            for container in alive:
                container.waiting = "Killing"
                self._kill(container, signal.SIGTERM, group=False)
        if alive and now - run.term_sent >= grace:
            for container in alive:
                self._kill(container, signal.SIGKILL)
        if any(c.running() for c in run.containers):
            return
        for container in run.containers:
            if container.proc is not None:
                self._kill(container, signal.SIGKILL)  # stray children of an exited main process
        with self._lock:
            self.pods.pop(run.uid, None)
        await self._delete(path, 0)
        self._cleanup(run)

    def _kill(self, container: Container, sig: int, *, group: bool = True) -> None:
        proc = container.proc
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(proc.pid, sig)
            else:
                os.kill(proc.pid, sig)

    def _cleanup(self, run: PodRun) -> None:
        """The pod's emptyDirs and scratch go; logs stay for the test's failure messages."""
        shutil.rmtree(run.directory / "volumes", ignore_errors=True)
        for box in (run.directory / "containers").glob("*") if (run.directory / "containers").is_dir() else []:
            _unmount_quietly(box / "root")
            shutil.rmtree(box, ignore_errors=True)

    # ------------------------------------------------------------------------------------------ logs
    def _log_path(self, run: PodRun, container: Container, restarts: int | None = None) -> Path:
        (run.directory / "logs").mkdir(parents=True, exist_ok=True)
        number = container.restarts if restarts is None else restarts
        return run.directory / "logs" / f"{container.name}-{number}.log"

    async def _serve_log(self, request: web.Request, pod: dict[str, Any]) -> web.Response:
        """``GET pods/<name>/log[?container=&previous=&tailLines=]`` (runs on the API emulator's loop)."""
        name = request.query.get("container") or ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name")
        md = pod["metadata"]
        return self._log_response(request, md["namespace"], md["name"], str(name), md["uid"][:8])

    async def _serve_container_log(self, request: web.Request) -> web.Response:
        """The kubelet API's ``GET /containerLogs/<namespace>/<pod>/<container>``, which the API server proxies
        ``pods/<name>/log`` to (real control plane)."""
        info = request.match_info
        return self._log_response(request, info["namespace"], info["pod"], info["container"], "")

    def _log_response(self, request: web.Request, namespace: str, pod: str, name: str, uid: str) -> web.Response:
        with self._lock:
            runs = [r for r in self.pods.values() if (r.namespace, r.name) == (namespace, pod)
                    and r.uid.startswith(uid)]
            directory = runs[0].directory if runs else None
        if directory is None:
            found = sorted((self.root / "pods").glob(f"{namespace}_{pod}_{uid}*"), key=lambda p: p.stat().st_mtime)
            directory = found[-1] if found else None
        if directory is None:
            return web.json_response({"kind": "Status", "status": "Failure", "code": 400, "reason": "BadRequest",
                                      "message": f"container of pod {pod} is not started yet"}, status=400)
        logs = sorted((directory / "logs").glob(f"{name}-*.log"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
        if request.query.get("previous") in ("true", "1"):
            logs = logs[:-1]
        text = logs[-1].read_text(errors="replace") if logs else ""
        if request.query.get("tailLines"):
            text = "\n".join(text.splitlines()[-int(request.query["tailLines"]):]) + "\n"
        return web.Response(text=text, content_type="text/plain")

    # ------------------------------------------------------------------------------------------ for tests
    def process(self, namespace: str, name: str, container: str | None = None) -> int | None:
        """The pid of a running container's main process (a test kills it to play a crash)."""
        with self._lock:
            for run in self.pods.values():
                if (run.namespace, run.name) == (namespace, name):
                    for c in run.containers:
                        if (container is None or c.name == container) and c.running():
                            return c.proc.pid if c.proc else None
        return None

    def log(self, namespace: str, name: str) -> str:
        found = sorted((self.root / "pods").glob(f"{namespace}_{name}_*/logs/*.log"), key=lambda p: p.stat().st_mtime)
        return "".join(p.read_text(errors="replace") for p in found)


class _NotYet(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class _Refused(Exception):
    pass


def _expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` references to variables defined earlier; ``$$(`` escapes.

    >>> _expand("$(A)/x $$(A) $(MISSING)", {"A": "1"})
    '1/x $(A) $(MISSING)'
    """
    return re.sub(r"\$\$\(|\$\((\w+)\)", lambda m: "$(" if m.group(0) == "$$(" else env.get(m.group(1), m.group(0)),
                  text)


def _own(path: Path, group: Any, *, recursive: bool = False) -> None:
    """fsGroup: the volume's group, group-writable, setgid on directories (what the kubelet does)."""
    if group is None:
        return
    gid = int(group)
    targets = [path, *path.rglob("*")] if recursive else [path]
    for target in targets:
        with contextlib.suppress(OSError):
            os.chown(target, -1, gid, follow_symlinks=False)
            if target.is_dir() and not target.is_symlink():
                target.chmod(target.stat().st_mode | 0o2070)
            elif target.is_file():
                target.chmod(target.stat().st_mode | 0o060)


def _unmount_quietly(path: Path) -> None:
    """Mounts live in the container's namespace, which is gone with it; nothing should remain here."""
    with contextlib.suppress(OSError):
        if os.path.ismount(path):
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def _endpoint(pod: dict[str, Any], not_ready_too: bool) -> bool:
    """Whether a Service's endpoints hold ``pod``: it has an address, is not finished or being deleted, and is
    Ready unless the Service publishes not-ready addresses (the EndpointSlice controller's rule)."""
    status = pod.get("status") or {}
    if not status.get("podIP") or status.get("phase") in ("Succeeded", "Failed") \
            or pod["metadata"].get("deletionTimestamp"):
        return False
    return not_ready_too or any(c.get("type") == "Ready" and c.get("status") == "True"
                                for c in status.get("conditions") or [])


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())
