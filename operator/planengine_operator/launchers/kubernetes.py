"""The Kubernetes launcher: drivers as pods (one per run), tools as short-lived pods, the job root on a claim.

All API calls go through :mod:`planengine_operator.kube`; manifests come from the pure builders; every
object is owned by the SparkPlanJob (a driver's own Service by its pod), so deleting the job garbage-collects
them. A driver pod is labelled with its run and its role: ``active`` (the job's driver, selected by the
``<job>-driver`` Service) or ``standby`` (an upgrade's target, warm before the old driver stops). Activating
the standby is ``POST /v1/start`` on it, then relabelling it ``active``, so the job's Service moves to it.

One writer per job root: a driver pod is created only after every other active driver pod of the job is
gone (the pod object disappears only after its kubelet confirmed the containers dead), and a standby is
started (``POST /v1/start``) only after the old driver stopped. That is why driver pods may take over a
``RUN_LOCK`` a dead pod left behind (``PLANENGINE_TAKE_OVER_RUN_LOCK``).

The operator pod does not mount job roots: reading a file there (``plan.json`` before its ConfigMap exists,
snapshot manifests) and deleting snapshots run tool pods (``cat``, ``planengine snapshots list|delete``),
waited for in place. An ``s3a://`` job root is on no volume: its pods reach the bucket with the job's
``storage.s3`` settings (``storage.store_env``), and a file is read with ``planengine job-root read`` instead of
``cat``. Tool pods for the protocol's own steps (compile, check, migrate, snapshot) are named by
job and step, so a repeated step finds its pod instead of starting another; while one runs, ``run_tool``
raises :class:`ToolPending` and the reconciler looks again on the next tick.

The operator reaches a driver's status API through a Service: ``PLANENGINE_OPERATOR_DRIVER_URL`` is the URL
template (default ``http://{service}.{namespace}.svc:{port}``, cluster DNS). ``{endpoint}`` in it stands for
the address of a pod the Service selects (what a headless Service's DNS name resolves to), for an operator
that reaches pod IPs but not cluster DNS (outside the cluster, or the test kubelet).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import secrets
import time
import uuid
from datetime import datetime
from typing import Any

import kopf

from planengine_operator import builders, driverapi, kube, podpolicy, storage
from planengine_operator.config import OperatorConfig
from planengine_operator.launchers.base import JobRef, LaunchError, ToolPending, ToolRun
from planengine_operator.launchers.local import lacks_standby
from planengine_operator.statemachine import DriverObservation

DRIVER_URL_ENV = "PLANENGINE_OPERATOR_DRIVER_URL"
DEFAULT_DRIVER_URL = "http://{service}.{namespace}.svc:{port}"
TOOL_POLL = 0.25  # seconds between looks at a tool pod the launcher waits for
KILL_GRACE = 1  # seconds of SIGTERM before SIGKILL when a driver is killed rather than stopped
STANDBY_POLL = 0.5
TERMINATED = ("Succeeded", "Failed")


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _terminated(pod: dict[str, Any]) -> dict[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return (statuses[0].get("state") or {}).get("terminated") or {}


def failure_message(pod: dict[str, Any]) -> str | None:
    """Why a driver pod's container failed, from its termination message (``FallbackToLogsOnError``: the last
    lines of its log): the engine's own error line (``planengine: error: ...``) and its hint, else the last line.

    >>> said = "INFO x\\nplanengine: error: checkpoint f is damaged\\n  hint: start from an earlier snapshot\\n"
    >>> failure_message({"status": {"containerStatuses": [{"state": {"terminated": {"message": said}}}]}})
    'checkpoint f is damaged (hint: start from an earlier snapshot)'
    """
    lines = [line.rstrip() for line in str(_terminated(pod).get("message") or "").splitlines() if line.strip()]
    if not lines:
        return None
    errors = [i for i, line in enumerate(lines) if line.startswith("planengine: error: ")]
    if not errors:
        return lines[-1][-500:]
    first = errors[-1]
    text = lines[first].removeprefix("planengine: error: ")
    hints = [line.strip().removeprefix("hint: ") for line in lines[first + 1:] if line.strip().startswith("hint: ")]
    return (text + (f" (hint: {hints[0]})" if hints else ""))[:700]


def _exit_code(pod: dict[str, Any]) -> int:
    code = _terminated(pod).get("exitCode")
    return int(code) if code is not None else (0 if _phase(pod) == "Succeeded" else 1)


# Container waiting reasons that a kubelet repeats until someone changes something (the image, the pod's config):
# a pod stuck with one never runs, so the operator reports the reason instead of waiting for a timeout.
NOT_STARTING = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
                "CreateContainerConfigError", "CreateContainerError")


def not_starting(pod: dict[str, Any]) -> tuple[str, str] | None:
    """(reason, message) when ``pod`` cannot start as it is: a container waiting for one of ``NOT_STARTING``,
    or the scheduler's ``Unschedulable`` because a PersistentVolumeClaim it mounts does not exist. Other
    unschedulable pods (not enough CPU, say) may yet be placed when the cluster grows: those are waited for.

    >>> not_starting({"status": {"containerStatuses": [{"state": {"waiting": {"reason": "ErrImagePull",
    ...     "message": "not found"}}}]}})
    ('ErrImagePull', 'not found')
    >>> not_starting({"status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
    ...     "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient cpu."}]}}) is None
    True
    """
    status = pod.get("status") or {}
    for container in status.get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in NOT_STARTING:
            return str(waiting["reason"]), str(waiting.get("message") or "")
    for condition in status.get("conditions") or []:
        message = str(condition.get("message") or "")
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" and \
                condition.get("reason") == "Unschedulable" and "persistentvolumeclaim" in message and \
                "not found" in message:
            return "Unschedulable", message
    return None


def _cannot_start(pod: dict[str, Any], what: str) -> LaunchError | None:
    """The error that says why ``pod`` will not start (its reason becomes the condition's), or None."""
    stuck = not_starting(pod)
    if stuck is None:
        return None
    reason, message = stuck
    return LaunchError(f"{what} {pod['metadata']['name']} cannot start: {reason}: {message.strip()[:400]}",
                       reason=reason)


def _run_of(pod: dict[str, Any]) -> str | None:
    md = pod["metadata"]
    return (md.get("annotations") or {}).get(builders.LABEL_RUN) or (md.get("labels") or {}).get(builders.LABEL_RUN)


def _annotation(pod: dict[str, Any], key: str) -> str | None:
    return (pod["metadata"].get("annotations") or {}).get(key)


def tool_request(job: JobRef, engine: str, argv: list[str], files: dict[str, str] | None) -> str:
    """What a tool pod answers: the request it runs for (``JobRef.request``) and exactly what it runs.

    >>> job = JobRef("ns", "j", "u", "/jobs/j", {}, request="Upgrade/t1/Stop/stop")
    >>> tool_request(job, "0.1", ["snapshot"], None) == tool_request(job, "0.1", ["snapshot"], None)
    True
    >>> later = JobRef("ns", "j", "u", "/jobs/j", {}, request="Upgrade/t2/Stop/stop")
    >>> tool_request(job, "0.1", ["snapshot"], None) == tool_request(later, "0.1", ["snapshot"], None)
    False
    """
    text = json.dumps([job.request, engine, argv, files or {}], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _role(pod: dict[str, Any]) -> str | None:
    return (pod["metadata"].get("labels") or {}).get(builders.LABEL_ROLE)


def _terminating(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def split_report(logs: str) -> tuple[str, str]:
    """A container log mixes stdout and stderr; the engine's machine-read answers are one JSON document
    (``check --json``: an indented object) or JSON lines. Returns (that JSON, everything else).

    >>> split_report('WARN x\\n{\\n  "compatible": true\\n}\\n')
    ('{\\n  "compatible": true\\n}', 'WARN x')
    >>> split_report('noise\\n{"snapshot": "s-1"}\\n')
    ('{"snapshot": "s-1"}', 'noise')
    """
    lines = logs.splitlines()
    if "{" in lines:
        start = lines.index("{")
        end = next((i for i in range(len(lines) - 1, start, -1) if lines[i] == "}"), None)
        if end is not None:
            return "\n".join(lines[start:end + 1]), "\n".join(lines[:start] + lines[end + 1:])
    json_lines = [line for line in lines if line.startswith("{") and line.endswith("}")]
    other = [line for line in lines if not (line.startswith("{") and line.endswith("}"))]
    return "\n".join(json_lines), "\n".join(other)


class KubernetesLauncher:
    kind = "kubernetes"
    supports_standby = True

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.url_template = os.environ.get(DRIVER_URL_ENV) or DEFAULT_DRIVER_URL
        self._manifests: dict[str, dict[str, dict[str, Any]]] = {}  # job uid -> snapshot id -> manifest

    # -------------------------------------------------------------------------------- basics
    def job_root(self, namespace: str, name: str, spec: dict[str, Any]) -> str:
        return builders.job_root_for_pod(spec, namespace, name)

    def image(self, job: JobRef, engine: str) -> str:
        override = self._spec(job).get("image")
        entry = self.config.engine(engine)
        if entry is None:
            raise LaunchError(f"engine {engine} is not in the engine catalog", reason="UnknownEngineVersion",
                              permanent=True)
        if not (override or entry.image):
            raise LaunchError(f"engine {engine} has no image in the operator's engine catalog; set engines."
                              f"{engine}.image", reason="UnknownEngineVersion", permanent=True)
        return override or entry.image

    def plan_path(self, job: JobRef) -> str:
        """The ``<job>-plan`` ConfigMap mounted in the driver pod: ``run --plan`` installs it into a job root
        that has none (the operator does not write into the job root for a first plan)."""
        return f"{builders.PLAN_MOUNT}/plan.json"

    def _spec(self, job: JobRef) -> dict[str, Any]:
        """The spec pods are built from: what ``config.admission`` lets a tenant ask for (podpolicy)."""
        return podpolicy.admitted_spec(dict(job.body.get("spec") or {}), self.config.admission)

    def _check_storage(self, job: JobRef) -> None:
        problem = builders.storage_problem(self._spec(job))
        if problem:
            raise LaunchError(problem, reason="StorageRequired", permanent=True)

    def _current_engine(self, job: JobRef) -> str:
        status = job.body.get("status") or {}
        return str(status.get("engineVersion") or self._spec(job).get("engineVersion")
                   or self.config.defaultEngineVersion)

    async def _adopt_apply(self, job: JobRef, plural: str, manifest: dict[str, Any]) -> dict[str, Any]:
        kopf.adopt(manifest, owner=job.body)
        return await kube.apply(job.namespace, plural, manifest)

    # -------------------------------------------------------------------------------- addresses
    async def _url(self, namespace: str, service: str) -> str | None:
        """The status API behind ``service`` (``PLANENGINE_OPERATOR_DRIVER_URL``); None while it has no
        endpoint (only with ``{endpoint}`` in the template)."""
        endpoint = ""
        if "{endpoint}" in self.url_template:
            found = await self._endpoint(namespace, service)
            if found is None:
                return None
            endpoint = found
        return self.url_template.format(service=service, namespace=namespace, port=builders.STATUS_PORT,
                                        endpoint=endpoint)

    async def _endpoint(self, namespace: str, service: str) -> str | None:
        """The pod address a headless Service resolves to: a live pod its selector matches (not-ready ones
        included, as the driver Services publish them)."""
        svc = await kube.get(namespace, "services", service)
        selector = ((svc or {}).get("spec") or {}).get("selector")
        if not selector:
            return None
        pods = await kube.list_objects(namespace, "pods", ",".join(f"{k}={v}" for k, v in sorted(selector.items())))
        ready = [p for p in pods if not _terminating(p) and (p.get("status") or {}).get("podIP")
                 and _phase(p) not in TERMINATED]
        return str(ready[0]["status"]["podIP"]) if len(ready) == 1 else None

    def _service_ref(self, job: JobRef) -> str:
        return f"http://{builders.build_service(job.name)['metadata']['name']}.{job.namespace}.svc:" \
               f"{builders.STATUS_PORT}"

    async def driver_url(self, job: JobRef) -> str | None:
        return await self._url(job.namespace, builders.build_service(job.name)["metadata"]["name"])

    async def _run_url(self, job: JobRef, run_id: str) -> str | None:
        return await self._url(job.namespace, builders.driver_pod_name(job.name, run_id))

    # -------------------------------------------------------------------------------- pods
    async def _driver_pods(self, job: JobRef) -> list[dict[str, Any]]:
        selector = f"{builders.LABEL_JOB}={builders.job_key(job.name)},{builders.LABEL_COMPONENT}=driver"
        pods = await kube.list_objects(job.namespace, "pods", selector)
        return sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "")

    async def _control_token(self, job: JobRef) -> str:
        """The job's driver API token from its Secret, created (owned by the job) on first use; kept for good,
        so a driver started by an operator that restarted since still accepts the token."""
        name = builders.control_token_secret_name(job.name)
        token = builders.secret_token(await kube.get(job.namespace, "secrets", name))
        if token is None:
            manifest = builders.build_control_token_secret(job.name, secrets.token_urlsafe(32))
            kopf.adopt(manifest, owner=job.body)
            await kube.create(job.namespace, "secrets", manifest)
            token = builders.secret_token(await kube.get(job.namespace, "secrets", name))
            if token is None:
                raise kopf.TemporaryError(f"secret {name} has no token yet", delay=1)
        return token

    async def _create_driver(self, job: JobRef, engine: str, run_id: str, argv: list[str], role: str) -> dict[str, Any]:
        """The driver pod of ``run_id`` and its own Service (owned by the pod); the shared objects first."""
        spec = self._spec(job)
        await self._control_token(job)
        await self._adopt_apply(job, "services", builders.build_service(job.name))
        await self._adopt_apply(job, "configmaps", builders.build_executor_configmap(job.name, spec))
        pod = builders.build_driver_pod(job_name=job.name, namespace=job.namespace, spec=spec,
                                        image=self.image(job, engine), run_id=run_id, argv=argv, role=role)
        pod["metadata"].setdefault("annotations", {})[builders.LABEL_RUN] = run_id
        pod["metadata"]["annotations"]["planengine.io/engine-version"] = engine
        created = await self._adopt_apply(job, "pods", pod)
        service = builders.owned_by(builders.build_run_service(job.name, run_id), created)
        await kube.apply(job.namespace, "services", service)
        return created

    async def _delete_pod(self, job: JobRef, pod: dict[str, Any], grace: int | None = None) -> None:
        if not _terminating(pod) or grace is not None:
            await kube.delete(job.namespace, "pods", pod["metadata"]["name"], grace_period=grace)

    async def _wait_gone(self, job: JobRef, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while await kube.get(job.namespace, "pods", name) is not None:
            if time.monotonic() > deadline:
                raise LaunchError(f"driver pod {name} did not terminate within {timeout:g}s", reason="StopTimeout")
            await asyncio.sleep(0.2)  # bounded wait for the kubelet to confirm the containers dead

    # -------------------------------------------------------------------------------- driver
    async def launch(self, job: JobRef, engine: str, run_id: str, argv: list[str]) -> dict[str, Any]:
        """Start the driver pod of ``run_id`` unless it exists; every other active driver pod goes first."""
        self._check_storage(job)
        pods = await self._driver_pods(job)
        mine = [p for p in pods if _run_of(p) == run_id and not _terminating(p)]
        if mine and _role(mine[0]) == builders.ROLE_ACTIVE:
            return {"name": mine[0]["metadata"]["name"], "statusUrl": self._service_ref(job)}
        others = [p for p in pods if _run_of(p) != run_id and _role(p) == builders.ROLE_ACTIVE]
        for pod in others:
            await self._delete_pod(job, pod, KILL_GRACE if _phase(pod) not in TERMINATED else None)
        if others:
            names = ", ".join(p["metadata"]["name"] for p in others)
            raise kopf.TemporaryError(f"waiting for the previous driver pod(s) {names} to go", delay=1)
        created = await self._create_driver(job, engine, run_id, argv, builders.ROLE_ACTIVE)
        return {"name": created["metadata"]["name"], "statusUrl": self._service_ref(job)}

    async def observe(self, job: JobRef) -> DriverObservation:
        pods = await self._driver_pods(job)
        standby = next((_run_of(p) for p in pods if _role(p) == builders.ROLE_STANDBY and not _terminating(p)
                        and _phase(p) not in TERMINATED), None)
        active = [p for p in pods if _role(p) == builders.ROLE_ACTIVE and not _terminating(p)]
        if not active:
            return DriverObservation(standby_run_id=standby)
        pod = active[-1]
        run_id = _run_of(pod)
        if _phase(pod) in TERMINATED:
            return DriverObservation(exit_code=_exit_code(pod), message=failure_message(pod), standby_run_id=standby)
        stuck = not_starting(pod)
        if stuck is not None:
            return DriverObservation(running=True, run_id=run_id, standby_run_id=standby,
                                     problem=f"pod {pod['metadata']['name']}: {stuck[0]}: {stuck[1].strip()[:300]}")
        url = await self.driver_url(job)
        status = await driverapi.get_status(url, timeout=2.0) if url else None
        if status is None:
            return DriverObservation(running=True, run_id=run_id, standby_run_id=standby)
        batches, exception, _ = driverapi.summarize(status)
        idle, not_idle = driverapi.idleness(status)
        return DriverObservation(running=True, run_id=run_id, healthy=True, batches=batches, exception=exception,
                                 standby_run_id=standby, idle=idle, not_idle=not_idle)

    async def stop(self, job: JobRef, *, snapshot: bool, timeout: float) -> dict[str, Any]:
        """Stop the active driver (with a snapshot through its status API, else SIGTERM+SIGKILL) and wait
        until its pod is gone."""
        answer: dict[str, Any] = {}
        for pod in [p for p in await self._driver_pods(job) if _role(p) == builders.ROLE_ACTIVE]:
            name = pod["metadata"]["name"]
            running = _phase(pod) == "Running" and not _terminating(pod)
            if snapshot and running:
                url = await self._run_url(job, _run_of(pod) or "")
                try:
                    if url is None:
                        raise driverapi.DriverApiError(f"driver pod {name} has no address yet")
                    answer = await driverapi.stop(url, snapshot=True, timeout=timeout,
                                                  token=await self._control_token(job))
                except driverapi.DriverApiError:
                    current = await kube.get(job.namespace, "pods", name)
                    if current is not None and _phase(current) == "Running":
                        raise
            await self._delete_pod(job, pod, None if (answer or _phase(pod) in TERMINATED) else KILL_GRACE)
            await self._wait_gone(job, name, timeout)
        if answer.get("snapshot"):
            self._manifests.pop(job.uid, None)  # a new snapshot exists: list again when asked ...
            if isinstance(answer.get("manifest"), dict):  # ... unless the driver's answer says what it holds
                self._manifests[job.uid] = {answer["snapshot"]: {**answer["manifest"], "id": answer["snapshot"]}}
        return answer

    # -------------------------------------------------------------------------------- standby
    async def standby(self, job: JobRef, engine: str, run_id: str, argv: list[str], timeout: float) -> str:
        """One standby pod per job: another run's is deleted first; then start it or look at it."""
        self._check_storage(job)
        pods = await self._driver_pods(job)
        for pod in pods:
            if _role(pod) == builders.ROLE_STANDBY and _run_of(pod) != run_id:
                await self._delete_pod(job, pod, KILL_GRACE)
        mine = next((p for p in pods if _run_of(p) == run_id and not _terminating(p)), None)
        if mine is None:
            await self._create_driver(job, engine, run_id, [*argv, "--standby"], builders.ROLE_STANDBY)
            raise ToolPending(f"standby pod of run {run_id} created", delay=STANDBY_POLL)
        name = mine["metadata"]["name"]
        if _phase(mine) in TERMINATED:
            logs = await kube.pod_logs(job.namespace, name)
            await self._delete_pod(job, mine)
            if lacks_standby(logs[-4000:]):
                return "unsupported"
            raise LaunchError(f"the standby pod {name} of engine {engine} exited (code {_exit_code(mine)}) before "
                              f"it was ready: {logs.strip()[-400:]}", reason="StandbyFailed")
        if (error := _cannot_start(mine, f"the standby pod of engine {engine}")) is not None:
            await self._delete_pod(job, mine, KILL_GRACE)
            raise error
        url = await self._run_url(job, run_id)
        status = await driverapi.get_status(url, timeout=2.0) if url else None
        phase = (status or {}).get("phase")
        if phase == "Standby" and status is not None and driverapi.supports_standby(status):
            return "ready"
        if status is not None and not phase:  # an engine that ignored the flag and started a run: never two
            await self._delete_pod(job, mine, KILL_GRACE)
            return "unsupported"
        age = time.time() - _created(mine)
        if age > timeout:
            await self._delete_pod(job, mine, KILL_GRACE)
            raise LaunchError(f"the standby pod {name} of engine {engine} was not ready within {timeout:g}s (pod "
                              f"{_phase(mine)}, driver phase {phase or 'unknown'})", reason="StandbyTimeout")
        raise ToolPending(f"standby pod {name} is {_phase(mine)}/{phase or 'starting'}", delay=STANDBY_POLL)

    async def activate(self, job: JobRef, run_id: str, snapshot_path: str | None, timeout: float) -> dict[str, Any]:
        """``POST /v1/start`` on the standby pod of ``run_id``, then label it ``active`` (the job's Service
        selects it from then on). Repeatable: a start already done answers the same run."""
        pods = await self._driver_pods(job)
        mine = next((p for p in pods if _run_of(p) == run_id and not _terminating(p)), None)
        if mine is None or _phase(mine) in TERMINATED:
            raise LaunchError(f"the standby of run {run_id} is gone", reason="StandbyLost")
        others = [p for p in pods if _role(p) == builders.ROLE_ACTIVE and _run_of(p) != run_id]
        for pod in others:  # never two writers (the Stop step confirmed it; a leftover is killed and awaited)
            await self._delete_pod(job, pod, KILL_GRACE)
            await self._wait_gone(job, pod["metadata"]["name"], timeout)
        name = mine["metadata"]["name"]
        url = await self._run_url(job, run_id)
        try:
            if url is None:
                raise driverapi.DriverApiError(f"standby pod {name} has no address")
            await driverapi.start(url, from_snapshot=snapshot_path, timeout=timeout,
                                  token=await self._control_token(job))
        except driverapi.DriverApiError as exc:
            await self._delete_pod(job, mine, KILL_GRACE)
            raise LaunchError(str(exc), reason="StartFailed") from exc
        if _role(mine) != builders.ROLE_ACTIVE:
            await kube.patch(job.namespace, "pods", name,
                             {"metadata": {"labels": {builders.LABEL_ROLE: builders.ROLE_ACTIVE}}})
        return {"name": name, "statusUrl": self._service_ref(job)}

    async def discard_standby(self, job: JobRef) -> None:
        """Kill the standby pod, if any (before its start it holds no lock and wrote nothing)."""
        for pod in await self._driver_pods(job):
            if _role(pod) == builders.ROLE_STANDBY:
                await self._delete_pod(job, pod, KILL_GRACE)

    # -------------------------------------------------------------------------------- tools
    async def _tool_pod(self, job: JobRef, engine: str, key: str, argv: list[str], *,
                        command: list[str] | None = None, files: dict[str, str] | None = None) -> dict[str, Any]:
        """The tool pod of ``key``: found, or created (with its input ConfigMap)."""
        name = builders.tool_pod_name(job.name, key)
        request = tool_request(job, engine, argv, files)
        current = await kube.get(job.namespace, "pods", name)
        if current is not None and not _terminating(current):
            if _annotation(current, builders.ANNOTATION_TOOL_REQUEST) == request:
                return current
            # Left by another request (its answer was never read, or it asked something else): never an answer.
            await self._delete_tool(job, current, bool(files))
            raise ToolPending(f"tool pod {name} of an earlier request deleted", delay=TOOL_POLL)
        if current is not None:
            raise ToolPending(f"tool pod {name} from an earlier attempt is terminating", delay=TOOL_POLL)
        configmap = None
        if files:
            configmap = builders._dns(f"{builders.job_key(job.name)}-{key}-input", 253)
            await self._adopt_apply(job, "configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                        "metadata": {"name": configmap}, "data": files})
        pod = builders.build_tool_pod(job_name=job.name, key=key, spec=self._spec(job),
                                      image=self.image(job, engine),
                                      argv=[a.replace("{work}", builders.TOOL_INPUT_MOUNT) for a in argv],
                                      command=command, input_configmap=configmap, namespace=job.namespace,
                                      job_root=job.job_root)
        pod["metadata"].setdefault("annotations", {})[builders.ANNOTATION_TOOL_REQUEST] = request
        return await self._adopt_apply(job, "pods", pod)

    async def _delete_tool(self, job: JobRef, pod: dict[str, Any], has_input: bool) -> None:
        """A tool pod and its input ConfigMap go (finished, or never to start: the next attempt makes new ones)."""
        name = pod["metadata"]["name"]
        await kube.delete(job.namespace, "pods", name)
        if has_input:
            await kube.delete(job.namespace, "configmaps", builders._dns(f"{name}-input", 253))

    async def _finish_tool(self, job: JobRef, pod: dict[str, Any], has_input: bool, *, raw: bool = False) -> ToolRun:
        """Exit code and log of a finished tool pod (the JSON answer apart unless ``raw``); pod and input go."""
        logs = await kube.pod_logs(job.namespace, pod["metadata"]["name"])
        await self._delete_tool(job, pod, has_input)
        out, err = (logs, "") if raw else split_report(logs)
        return ToolRun(_exit_code(pod), out, err)

    async def run_tool(self, job: JobRef, engine: str, key: str, argv: list[str],
                       files: dict[str, str] | None = None) -> ToolRun:
        """A protocol step's tool: started on the first call, its result on a later one (``ToolPending``
        meanwhile, so the reconciler is not held)."""
        self._check_storage(job)
        name = builders.tool_pod_name(job.name, key)
        existing = await kube.get(job.namespace, "pods", name)
        pod = await self._tool_pod(job, engine, key, argv, files=files)
        if existing is None:
            raise ToolPending(f"tool pod {name} started")
        if _phase(pod) not in TERMINATED:
            if (error := _cannot_start(pod, "tool pod")) is not None:
                await self._delete_tool(job, pod, bool(files))
                raise error
            if time.time() - _created(pod) > self.config.timing.toolTimeout:
                await kube.delete(job.namespace, "pods", name, grace_period=KILL_GRACE)
                raise LaunchError(f"tool pod {name} did not finish within {self.config.timing.toolTimeout:g}s",
                                  reason="ToolTimeout")
            raise ToolPending(f"tool pod {name} is {_phase(pod)}")
        return await self._finish_tool(job, pod, bool(files))

    async def _run_to_end(self, job: JobRef, key: str, argv: list[str], *, command: list[str] | None = None,
                          files: dict[str, str] | None = None, raw: bool = False) -> ToolRun:
        """A tool pod the launcher waits for (file reads, snapshot listing and deletion: a few seconds).

        Each call is a new pod (``key`` plus a random suffix): an answer left by an earlier operator is never
        taken for a fresh one. A pod left by an operator that died meanwhile stays until the job is deleted."""
        self._check_storage(job)
        key = f"{key}-{uuid.uuid4().hex[:5]}"
        deadline = time.monotonic() + self.config.timing.toolTimeout
        pod = await self._tool_pod(job, self._current_engine(job), key, argv, command=command, files=files)
        name = pod["metadata"]["name"]
        while _phase(pod) not in TERMINATED:
            if (error := _cannot_start(pod, "tool pod")) is not None:
                await self._delete_tool(job, pod, bool(files))
                raise error
            if time.monotonic() > deadline:
                await kube.delete(job.namespace, "pods", name, grace_period=KILL_GRACE)
                raise LaunchError(f"tool pod {name} did not finish within {self.config.timing.toolTimeout:g}s",
                                  reason="ToolTimeout")
            await asyncio.sleep(TOOL_POLL)  # bounded wait for a short tool pod
            found = await kube.get(job.namespace, "pods", name)
            if found is None:
                raise LaunchError(f"tool pod {name} vanished before it finished", reason="ToolLost")
            pod = found
        return await self._finish_tool(job, pod, bool(files), raw=raw)

    # -------------------------------------------------------------------------------- job root files
    async def read_file(self, job: JobRef, relpath: str) -> str | None:
        """``plan.json``: the ``<job>-plan`` ConfigMap (the plan in force; drivers install it from there);
        snapshot manifests: ``planengine snapshots list``; anything else: ``cat`` in a tool pod."""
        if relpath == "plan.json":
            configmap = await kube.get_configmap(job.namespace, builders.build_plan_configmap(
                job.name, "", "")["metadata"]["name"])
            return ((configmap or {}).get("data") or {}).get("plan.json")
        parts = relpath.split("/")
        if len(parts) == 3 and parts[0] == "snapshots" and parts[2] == "manifest.json":
            manifest = await self._manifest(job, parts[1])
            return json.dumps(manifest) if manifest is not None else None
        if storage.is_s3a(job.job_root):
            return await self._read_from_store(job, relpath)
        run = await self._run_to_end(job, "read", [], command=["cat", f"{job.job_root}/{relpath}"], raw=True)
        return None if run.exit_code != 0 else run.stdout

    async def _read_from_store(self, job: JobRef, relpath: str) -> str | None:
        """``planengine job-root read KEY --json`` in a tool pod: an ``s3a://`` root has no file to ``cat``.

        The answer is one JSON line (the container log may hold warnings too); a missing key is ``exists: false``,
        so a store that failed is an error here, not an absent file."""
        run = await self._run_to_end(job, "read", job_root_read_argv(job.job_root, relpath))
        answer = _json_answer(run.stdout)
        if run.exit_code != 0 or answer is None or answer.get("key") != relpath:
            raise LaunchError(f"planengine job-root read {relpath} --job-root {job.job_root} exited {run.exit_code}: "
                              f"{(run.stderr or run.stdout).strip()[-300:]}", reason="JobRootReadFailed")
        return str(answer["text"]) if answer.get("exists") else None

    async def write_file(self, job: JobRef, relpath: str, text: str) -> None:
        """Through a tool pod: the text as a ConfigMap key, copied into place with a rename (atomic).

        A first ``plan.json`` (no plan in force, or the same one) needs no pod: the driver installs it from the
        ``<job>-plan`` ConfigMap it mounts. Replacing the plan in force (a stateless recompile) writes it."""
        if relpath == "plan.json" and await self.read_file(job, relpath) in (None, text):
            return
        if storage.is_s3a(job.job_root):
            run = await self._run_to_end(job, "write", job_root_write_argv(job.job_root, relpath),
                                         files={"content": text})
            if run.exit_code != 0:
                raise LaunchError(f"planengine job-root write {relpath} --job-root {job.job_root} exited "
                                  f"{run.exit_code}: {run.stderr.strip()[-300:]}", reason="WriteFailed")
            return
        target = f"{job.job_root}/{relpath}"
        script = 'mkdir -p "$(dirname "$2")" && cp "$1" "$2.tmp" && mv "$2.tmp" "$2"'
        run = await self._run_to_end(job, "write", [], files={"content": text}, raw=True,
                                     command=["sh", "-c", script, "write", f"{builders.TOOL_INPUT_MOUNT}/content",
                                              target])
        if run.exit_code != 0:
            raise LaunchError(f"writing {target} failed (exit {run.exit_code}): {run.stderr.strip()[-300:]}",
                              reason="WriteFailed")

    async def _manifest(self, job: JobRef, snapshot_id: str) -> dict[str, Any] | None:
        cached = self._manifests.get(job.uid) or {}
        if snapshot_id not in cached:
            listed = await self.list_snapshots(job)
            self._manifests[job.uid] = {**cached, **{m["id"]: m for m in listed}}
        return (self._manifests.get(job.uid) or {}).get(snapshot_id)

    async def list_snapshots(self, job: JobRef) -> list[dict[str, Any]]:
        """``planengine snapshots list`` in a tool pod: complete snapshots, oldest first."""
        run = await self._run_to_end(job, "snapshots-list", ["snapshots", "list", "--job-root", job.job_root])
        if run.exit_code == 2 and "does not exist" in run.stdout + run.stderr:
            return []  # no run has created the job root yet
        if run.exit_code != 0:
            raise LaunchError(f"planengine snapshots list exited {run.exit_code}: {run.stderr.strip()[-300:]}",
                              reason="SnapshotListFailed")
        found = []
        for line in run.stdout.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or not entry.get("snapshot") or entry.get("complete") is False:
                continue
            manifest = {"id": entry["snapshot"], "snapshotId": entry["snapshot"], "createdAt": entry.get("createdAt"),
                        "runId": entry.get("runId"), "reason": entry.get("reason"),
                        "lastBatchIds": entry.get("lastBatchIds") or {}}
            manifest["_mtime"] = _epoch(entry.get("createdAt"))
            found.append(manifest)
        found.sort(key=lambda m: m["_mtime"])
        self._manifests[job.uid] = {m["id"]: m for m in found}
        return found

    async def delete_snapshot(self, job: JobRef, snapshot_id: str) -> None:
        run = await self._run_to_end(job, "delete", ["snapshots", "delete", snapshot_id, "--job-root", job.job_root])
        (self._manifests.get(job.uid) or {}).pop(snapshot_id, None)
        if run.exit_code not in (0, 2):  # 2: already gone
            raise LaunchError(f"planengine snapshots delete {snapshot_id} exited {run.exit_code}: "
                              f"{run.stderr.strip()[-300:]}", reason="SnapshotDeleteFailed")

    async def close(self) -> None:
        return None


def job_root_read_argv(job_root: str, relpath: str) -> list[str]:
    """The engine command that reads one file of an ``s3a://`` job root (``planengine/commands/job_root.py``).

    >>> job_root_read_argv("s3a://jobs/a", "runs/r-1/plan.json")
    ['job-root', 'read', 'runs/r-1/plan.json', '--job-root', 's3a://jobs/a', '--json']
    """
    return ["job-root", "read", relpath, "--job-root", job_root, "--json"]


def job_root_write_argv(job_root: str, relpath: str) -> list[str]:
    """The engine command that replaces one file of an ``s3a://`` job root with the tool pod's input ``content``.

    >>> job_root_write_argv("s3a://jobs/a", "plan.json")[-2:]
    ['--from', '{work}/content']
    """
    return ["job-root", "write", relpath, "--job-root", job_root, "--from", "{work}/content"]


def _json_answer(stdout: str) -> dict[str, Any] | None:
    """The last JSON object line of a tool's answer (``split_report`` kept only those), or None.

    >>> _json_answer('{"key": "plan.json", "exists": false}')
    {'key': 'plan.json', 'exists': False}
    >>> _json_answer("") is None
    True
    """
    for line in reversed(stdout.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _created(pod: dict[str, Any]) -> float:
    return _epoch(pod["metadata"].get("creationTimestamp"))


def _epoch(stamp: Any) -> float:
    if not isinstance(stamp, str):
        return 0.0
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
