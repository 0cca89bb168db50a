"""All kopf handlers. Each is a guard plus one call into a business module (STYLE: thin handlers).

State lives in the SparkPlanJob status; the per-object ``memo`` caches our own latest status writes.
Creation and spec updates kick the reconciler at once; the timer is the level-based loop that keeps
comparing desired and observed state, so a missed event or an operator restart costs one interval.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

import kopf
from aiohttp import web

from planengine_operator import kube, metrics, oplog, sources, webhook
from planengine_operator.cli import build_launcher
from planengine_operator.config import OperatorConfig
from planengine_operator.fleet import Fleet
from planengine_operator.launchers.base import JobRef, Launcher
from planengine_operator.models import JobStatus
from planengine_operator.reconciler import Reconciler

GROUP, VERSION, PLURAL = "planengine.io", "v1alpha1", "sparkplanjobs"
log = logging.getLogger(__name__)
# The timer cadence is fixed when handlers register; the CLI exports it from the configuration first.
TICK_SECONDS = float(os.environ.get("PLANENGINE_OPERATOR_TICK", "5"))
# Likewise the admission webhook: the chart's variables decide whether its handler exists at all.
WEBHOOK = webhook.settings_from_env()


class Runtime:
    """Process-wide objects, created at startup from the configuration the CLI chose."""

    config: OperatorConfig = OperatorConfig()
    launcher: Launcher | None = None
    fleet: Fleet | None = None
    reconciler: Reconciler | None = None
    locks: dict[str, asyncio.Lock] = {}


def configure(config: OperatorConfig, launcher: Launcher) -> None:
    Runtime.config = config
    Runtime.launcher = launcher
    Runtime.fleet = Fleet(config.defaultEngineVersion, config.rollout.maxConcurrent)
    Runtime.reconciler = Reconciler(config, launcher, Runtime.fleet)
    Runtime.locks = {}


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="planengine.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="planengine.io")
    settings.posting.level = logging.INFO
    oplog.quiet_ticks()
    settings.watching.server_timeout = 300
    settings.networking.request_timeout = 60
    if Runtime.reconciler is None:
        configure(Runtime.config, build_launcher(Runtime.config))
    if WEBHOOK is not None:
        settings.admission.server = webhook.server(WEBHOOK)
    if Runtime.config.metrics.port:
        await _serve_metrics(Runtime.config.metrics.port)


async def _serve_metrics(port: int) -> None:
    async def render(_: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), headers={"Content-Type": metrics.CONTENT_TYPE})

    async def ready(_: web.Request) -> web.Response:
        return web.Response(text="ok" if Runtime.reconciler else "starting",
                            status=200 if Runtime.reconciler else 503)

    app = web.Application()
    app.router.add_get("/metrics", render)
    app.router.add_get("/readyz", ready)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()


@kopf.on.cleanup()
async def cleanup(**_: Any) -> None:
    if Runtime.launcher is not None:
        await Runtime.launcher.close()
    await kube.close()


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    connection = kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)
    kube.configure(connection)
    return connection


@kopf.index(GROUP, VERSION, PLURAL)
def fleet_index(namespace: str, name: str, spec: kopf.Spec, status: kopf.Status, **_: Any) -> dict[str, Any]:
    """Seeds the fleet view from every job before any handler runs (kopf waits for indexes)."""
    typed = JobStatus.read(status)
    if Runtime.fleet is not None:
        Runtime.fleet.seed(namespace, name, dict(spec), typed)
    return {(namespace, name): typed.phase}


@kopf.index("", "v1", "configmaps", labels={"planengine.io/plan-id": kopf.ABSENT})
def configmap_digests(namespace: str, name: str, body: kopf.Body, **_: Any) -> dict[Any, Any]:
    """Digest of every key of every ConfigMap (a watch keeps it current), so that each reconcile can tell whether
    the SQL script or catalog a job was compiled from changed without an API call (``sources``). The operator's
    own plan ConfigMaps are left out."""
    data = body.get("data") or {}
    return {(namespace, name): {key: sources.text_digest(str(value)) for key, value in data.items()}}


def _digest_lookup(index: kopf.Index | None, namespace: str) -> sources.DigestLookup | None:
    if index is None:
        return None

    def lookup(name: str, key: str) -> str | None:
        for digests in index.get((namespace, name), []):
            return digests.get(key)
        return None

    return lookup


async def _reconcile(body: kopf.Body, memo: kopf.Memo, digests: kopf.Index | None = None) -> None:
    assert Runtime.reconciler is not None
    key = f"{body['metadata']['namespace']}/{body['metadata']['name']}"
    lock = Runtime.locks.setdefault(key, asyncio.Lock())
    if lock.locked():
        return  # the running pass will see this state too; the timer comes back anyway
    async with lock:
        await Runtime.reconciler.reconcile(body, memo, _digest_lookup(digests, body["metadata"]["namespace"]))
    paused = Runtime.fleet.take_announcement(*key.split("/", 1)) if Runtime.fleet else None
    if paused:
        kopf.event(body, type="Warning", reason="RolloutPaused", message=paused[:1000])


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
@kopf.on.resume(GROUP, VERSION, PLURAL)
async def changed(body: kopf.Body, memo: kopf.Memo, configmap_digests: kopf.Index, **_: Any) -> None:
    await _reconcile(body, memo, configmap_digests)


@kopf.timer(GROUP, VERSION, PLURAL, interval=TICK_SECONDS, initial_delay=min(TICK_SECONDS, 1.0))
async def tick(body: kopf.Body, memo: kopf.Memo, configmap_digests: kopf.Index, **_: Any) -> None:
    """The level-based loop: also notices an edited script ConfigMap (the index is current) within a tick."""
    await _reconcile(body, memo, configmap_digests)


if WEBHOOK is not None:
    @kopf.on.validate(GROUP, VERSION, PLURAL, id=WEBHOOK.handler_id, operations=["CREATE", "UPDATE"])
    def validate(operation: str, body: kopf.Body, old: kopf.BodyEssence | None, **_: Any) -> None:
        """Reject a spec the reconciler would refuse (rules shared through ``validation``)."""
        assert Runtime.launcher is not None
        md = body["metadata"]
        webhook.admit(operation, md.get("namespace") or "default", md.get("name") or "", dict(body), old,
                      Runtime.config, Runtime.launcher.job_root)


@kopf.on.delete(GROUP, VERSION, PLURAL)
async def deleted(body: kopf.Body, **_: Any) -> None:
    """Kill the job's warm standby, if an upgrade left one, then stop its driver (children with owner
    references are garbage-collected by Kubernetes). The standby goes first: it holds no lock and wrote
    nothing, and a driver stop that times out must not leave it behind as an orphan JVM nobody observes."""
    assert Runtime.launcher is not None and Runtime.fleet is not None

    status = JobStatus.read(body.get("status"))
    md = body["metadata"]
    Runtime.fleet.forget(md["namespace"], md["name"])
    if status.jobRoot:
        job = JobRef(md["namespace"], md["name"], md.get("uid", ""), status.jobRoot, dict(body))
        await Runtime.launcher.discard_standby(job)
        await Runtime.launcher.stop(job, snapshot=False, timeout=30)
