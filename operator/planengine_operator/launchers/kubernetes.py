"""The Kubernetes launcher: the driver as a pod plus a headless service, tools as short-lived pods.

All API calls go through :mod:`planengine_operator.kube`; manifests come from the pure builders; every
child is adopted (owner reference) so deleting the SparkPlanJob deletes them. Tool pods are named by job
and step, so a repeated step finds its pod instead of starting another; while one runs, ``run_tool``
raises :class:`ToolPending` and the reconciler looks again on the next tick.

Upgrades start the target cold (``supports_standby = False``): a warm standby would be a second driver
pod next to ``<job>-driver`` that is renamed into its place on ``POST /v1/start``, which the builders do
not model yet.

Limitation: the operator pod does not mount job roots, so file access (``read_file``, snapshot listing)
is answered through tool pods' output or not at all (see docs/operator.md).
"""

from __future__ import annotations

from typing import Any

import kopf

from planengine_operator import builders, driverapi, kube
from planengine_operator.config import OperatorConfig
from planengine_operator.launchers.base import JobRef, LaunchError, ToolPending, ToolRun
from planengine_operator.statemachine import DriverObservation


class KubernetesLauncher:
    kind = "kubernetes"
    supports_standby = False

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config

    def job_root(self, namespace: str, name: str, spec: dict[str, Any]) -> str:
        return builders.job_root_for_pod(spec, self.config.jobRootBase, namespace, name)

    def image(self, job: JobRef, engine: str) -> str:
        override = (job.body.get("spec") or {}).get("image")
        entry = self.config.engine(engine)
        if entry is None:
            raise LaunchError(f"engine {engine} is not in the engine catalog", reason="UnknownEngineVersion",
                              permanent=True)
        return override or entry.image

    def plan_path(self, job: JobRef) -> str:
        """The ``<job>-plan`` ConfigMap mounted in the driver pod: ``run --plan`` installs it into a job root
        that has none (the operator cannot write into the job root)."""
        return f"{builders.PLAN_MOUNT}/plan.json"

    async def run_tool(self, job: JobRef, engine: str, key: str, argv: list[str],
                       files: dict[str, str] | None = None) -> ToolRun:
        if files:
            configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": f"{job.name}-{key}-input"}, "data": files}
            kopf.adopt(configmap, owner=job.body)
            await kube.apply(job.namespace, "configmaps", configmap)
        pod = builders.build_tool_pod(job_name=job.name, key=key, spec=dict(job.body.get("spec") or {}),
                                      image=self.image(job, engine),
                                      argv=[a.replace("{work}", "/etc/planengine/input") for a in argv])
        if files:
            pod["spec"]["volumes"].append({"name": "input", "configMap": {"name": f"{job.name}-{key}-input"}})
            pod["spec"]["containers"][0]["volumeMounts"].append(
                {"name": "input", "mountPath": "/etc/planengine/input"})
        name = pod["metadata"]["name"]
        current = await kube.get(job.namespace, "pods", name)
        if current is None:
            kopf.adopt(pod, owner=job.body)
            await kube.apply(job.namespace, "pods", pod)
            raise ToolPending(f"tool pod {name} started")
        phase = (current.get("status") or {}).get("phase")
        if phase not in ("Succeeded", "Failed"):
            raise ToolPending(f"tool pod {name} is {phase}")
        terminated = ((current["status"].get("containerStatuses") or [{}])[0].get("state") or {}).get(
            "terminated") or {}
        logs = await kube.pod_logs(job.namespace, name)
        await kube.delete(job.namespace, "pods", name)
        return ToolRun(int(terminated.get("exitCode", 0 if phase == "Succeeded" else 1)), logs, "")

    async def launch(self, job: JobRef, engine: str, run_id: str, argv: list[str]) -> dict[str, Any]:
        service = builders.build_service(job.name)
        kopf.adopt(service, owner=job.body)
        await kube.apply(job.namespace, "services", service)
        pod = builders.build_driver_pod(
            job_name=job.name, namespace=job.namespace, spec=dict(job.body.get("spec") or {}),
            image=self.image(job, engine), run_id=run_id, argv=argv,
            service=service["metadata"]["name"], plan_configmap=f"{job.name}-plan",
        )
        name = pod["metadata"]["name"]
        current = await kube.get(job.namespace, "pods", name)
        if current is not None:
            if (current["metadata"].get("labels") or {}).get(builders.LABEL_RUN) == pod["metadata"]["labels"][
                    builders.LABEL_RUN]:
                return self._ref(job, name)
            await kube.delete(job.namespace, "pods", name)
            raise kopf.TemporaryError(f"waiting for the previous driver pod {name} to go", delay=2)
        kopf.adopt(pod, owner=job.body)
        await kube.apply(job.namespace, "pods", pod)
        return self._ref(job, name)

    def _ref(self, job: JobRef, pod: str) -> dict[str, Any]:
        url = f"http://{pod}.{job.namespace}.svc:{builders.STATUS_PORT}"
        return {"name": pod, "statusUrl": url}

    async def driver_url(self, job: JobRef) -> str | None:
        return self._ref(job, f"{job.name}-driver")["statusUrl"]

    async def observe(self, job: JobRef) -> DriverObservation:
        pod = await kube.get(job.namespace, "pods", f"{job.name}-driver")
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return DriverObservation.gone()
        phase = (pod.get("status") or {}).get("phase")
        run_id = (pod["metadata"].get("labels") or {}).get(builders.LABEL_RUN)
        if phase in ("Succeeded", "Failed"):
            terminated = ((pod["status"].get("containerStatuses") or [{}])[0].get("state") or {}).get(
                "terminated") or {}
            return DriverObservation.gone(terminated.get("exitCode"))
        status = await driverapi.get_status(self._ref(job, pod["metadata"]["name"])["statusUrl"])
        if status is None:
            return DriverObservation(running=True, run_id=run_id)
        batches, exception, _ = driverapi.summarize(status)
        return DriverObservation(running=True, run_id=run_id, healthy=True, batches=batches, exception=exception)

    async def standby(self, job: JobRef, engine: str, run_id: str, argv: list[str], timeout: float) -> str:
        return "unsupported"

    async def activate(self, job: JobRef, run_id: str, snapshot_path: str | None, timeout: float) -> dict[str, Any]:
        raise LaunchError("the Kubernetes launcher runs no standby drivers", reason="Unsupported", permanent=True)

    async def discard_standby(self, job: JobRef) -> None:
        return None

    async def stop(self, job: JobRef, *, snapshot: bool, timeout: float) -> dict[str, Any]:
        name = f"{job.name}-driver"
        pod = await kube.get(job.namespace, "pods", name)
        if pod is None:
            return {}
        answer: dict[str, Any] = {}
        if snapshot and (pod.get("status") or {}).get("phase") == "Running":
            answer = await driverapi.stop(self._ref(job, name)["statusUrl"], snapshot=True, timeout=timeout)
        await kube.delete(job.namespace, "pods", name)
        if await kube.get(job.namespace, "pods", name) is not None:
            raise kopf.TemporaryError(f"driver pod {name} is still terminating", delay=2)
        return answer

    async def read_file(self, job: JobRef, relpath: str) -> str | None:
        if relpath == "plan.json":
            configmap = await kube.get_configmap(job.namespace, f"{job.name}-plan")
            return ((configmap or {}).get("data") or {}).get("plan.json")
        return None

    async def write_file(self, job: JobRef, relpath: str, text: str) -> None:
        """Only a first plan can be installed: the reconciler publishes it as the ``<job>-plan`` ConfigMap and
        the driver's ``run --plan`` writes it into the job root. Replacing a plan in force (a recompile) or
        any other file would need the operator to write into the job root, which it cannot do here."""
        if relpath == "plan.json" and await self.read_file(job, "plan.json") in (None, text):
            return
        raise LaunchError(f"the Kubernetes launcher cannot write {relpath} into the job root from the operator "
                          "(replacing the plan of a started job needs it); create a new SparkPlanJob for the new "
                          "program", reason="Unsupported", permanent=True)

    async def list_snapshots(self, job: JobRef) -> list[dict[str, Any]]:
        return []

    async def delete_snapshot(self, job: JobRef, snapshot_id: str) -> None:
        return None

    async def close(self) -> None:
        return None
