"""All kopf handlers. Each is a guard plus one call into a business module (STYLE: thin handlers).

State lives in the SparkPlanJob status; the per-object ``memo`` caches our own latest status writes. The
process-wide objects (configuration, launcher, fleet view, reconciler, the per-job reconcile locks) live in
kopf's operator memo, which the startup handler fills: each job's memo is kopf's shallow copy of it, so every
handler reaches them as ``memo.reconciler`` and so on, and nothing process-wide hides in module state.
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


def fill_memo(memo: kopf.Memo) -> None:
    """Put the process-wide objects into kopf's operator memo: the configuration the CLI chose (``kopf.operator(memo=
    kopf.Memo(config=...))``; the default one under a bare ``kopf run``), its launcher, the fleet view, the
    reconciler and the reconcile locks (one per job, by namespace/name). An object already there (a test's) is kept."""
    if "config" not in memo:
        memo.config = OperatorConfig()
    if "launcher" not in memo:
        memo.launcher = build_launcher(memo.config)
    if "fleet" not in memo:
        memo.fleet = Fleet(memo.config.defaultEngineVersion, memo.config.rollout.maxConcurrent)
    if "reconciler" not in memo:
        memo.reconciler = Reconciler(memo.config, memo.launcher, memo.fleet)
    if "locks" not in memo:
        memo.locks = {}


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="planengine.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="planengine.io")
    settings.posting.level = logging.INFO
    oplog.quiet_ticks()
    settings.watching.server_timeout = 300
    settings.networking.request_timeout = 60
    fill_memo(memo)  # before any resource is watched: kopf runs the startup handlers first
    if WEBHOOK is not None:
        settings.admission.server = webhook.server(WEBHOOK)
    if memo.config.metrics.port:
        await _serve_metrics(memo.config.metrics.port, memo)


async def _serve_metrics(port: int, memo: kopf.Memo) -> None:
    async def render(_: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), headers={"Content-Type": metrics.CONTENT_TYPE})

    async def ready(_: web.Request) -> web.Response:
        started = memo.get("reconciler") is not None
        return web.Response(text="ok" if started else "starting", status=200 if started else 503)

    app = web.Application()
    app.router.add_get("/metrics", render)
    app.router.add_get("/readyz", ready)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    if memo.get("launcher") is not None:
        await memo.launcher.close()
    await kube.close()


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    connection = kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)
    kube.configure(connection)
    return connection


@kopf.index(GROUP, VERSION, PLURAL)
def fleet_index(namespace: str, name: str, spec: kopf.Spec, status: kopf.Status, memo: kopf.Memo,
                **_: Any) -> dict[str, Any]:
    """Seeds the fleet view from every job before any handler runs (kopf waits for indexes)."""
    typed = JobStatus.read(status)
    fleet: Fleet = memo.fleet  # the startup handler filled the memo before any index or handler runs
    fleet.seed(namespace, name, dict(spec), typed)
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
    reconciler: Reconciler = memo.reconciler
    fleet: Fleet = memo.fleet
    locks: dict[str, asyncio.Lock] = memo.locks  # the operator memo's one dict, shared by every job's memo
    key = f"{body['metadata']['namespace']}/{body['metadata']['name']}"
    lock = locks.setdefault(key, asyncio.Lock())
    if lock.locked():
        return  # the running pass will see this state too; the timer comes back anyway
    async with lock:
        await reconciler.reconcile(body, memo, _digest_lookup(digests, body["metadata"]["namespace"]))
    paused = fleet.take_announcement(*key.split("/", 1))
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
    def validate(operation: str, body: kopf.Body, old: kopf.BodyEssence | None, memo: kopf.Memo,
                 **_: Any) -> None:
        """Reject a spec the reconciler would refuse (rules shared through ``validation``)."""
        launcher: Launcher = memo.launcher
        md = body["metadata"]
        webhook.admit(operation, md.get("namespace") or "default", md.get("name") or "", dict(body), old,
                      memo.config, launcher.job_root)


@kopf.on.delete(GROUP, VERSION, PLURAL)
async def deleted(body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    """Kill the job's warm standby, if an upgrade left one, then stop its driver (children with owner
    references are garbage-collected by Kubernetes). The standby goes first: it holds no lock and wrote
    nothing, and a driver stop that times out must not leave it behind as an orphan JVM nobody observes."""
    launcher: Launcher = memo.launcher
    fleet: Fleet = memo.fleet
    status = JobStatus.read(body.get("status"))
    md = body["metadata"]
    fleet.forget(md["namespace"], md["name"])
    if status.jobRoot:
        job = JobRef(md["namespace"], md["name"], md.get("uid", ""), status.jobRoot, dict(body))
        await launcher.discard_standby(job)
        await launcher.stop(job, snapshot=False, timeout=30)
