"""Glue between the pure state machine and the world: observe, decide, write ahead, act, record.

One call of :func:`reconcile` runs steps until the job needs to wait (a stability gate, a backoff) so a
create turns into a running driver within one tick. Every decision's status is written *before* its side
effect, as the merge patch from the stored status (``models.status_patch``); the typed status in the
operator's memory is the freshest copy (the operator is the status's only writer), and after a restart the
object's status is the log the protocol resumes from. Each action kind has one executor
(:attr:`Reconciler.executors`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kopf

from planengine_operator import builders, kube, metrics, oplog, sources, statemachine, validation
from planengine_operator.config import OperatorConfig
from planengine_operator.launchers.base import JobRef, Launcher, LaunchError, ToolPending, ToolRun
from planengine_operator.models import JobSpec, JobStatus, status_patch
from planengine_operator.statemachine import Action, Decision, JobView, Result

log = logging.getLogger(__name__)
MAX_STEPS_PER_TICK = 12
# What ``planengine snapshot --job-root`` says (exit 2) when the job root holds no run at all (commands/snapshot.py).
NO_RUN_TO_SNAPSHOT = "has no run to snapshot"


def new_run_id(now: datetime) -> str:
    """``r-<YYYYmmddTHHMMSS>Z-<4 hex>``: the engine's run-id format (``planengine/runtime/storage/job_root.py``), so the
    engine's job-root listing sees operator-named runs and ids sort by time. Kept here, not imported: the
    operator never imports the engine (import-linter). ``now`` is UTC."""
    return now.astimezone(UTC).strftime("r-%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:4]


Executor = Callable[[JobRef, JobView, dict[str, Any]], Awaitable[Result]]


def request_of(view: JobView, action: Action) -> str:
    """Which request an action serves: the operation's type, start and step, and the action. An operator that
    restarts mid-step asks again with the same request (a tool pod still running or finished is its answer); a
    later operation never takes the answer an earlier one left behind (a fork's pod the Stop step did not need
    gave a later upgrade an hours-old snapshot: fault campaign, seed 20261207, round 10)."""
    op = view.status.operation
    if op is None:
        return action.kind
    return f"{op.type}/{op.started}/{op.step}/{action.kind}"


class Reconciler:
    def __init__(self, config: OperatorConfig, launcher: Launcher, fleet: Any) -> None:
        self.config = config
        self.launcher = launcher
        self.fleet = fleet
        # One executor per action kind the state machine can ask for.
        self.executors: dict[str, Executor] = {
            "claim": self._claim, "compile": self._compile, "check": self._check, "migrate": self._migrate,
            "standby": self._standby, "activate": self._activate, "discard": self._discard, "stop": self._stop,
            "fork": self._fork, "snapshot": self._fork, "launch": self._launch, "publish": self._publish,
        }

    # ------------------------------------------------------------------------------------- entry
    async def reconcile(self, body: kopf.Body, memo: Any, digests: sources.DigestLookup | None = None) -> None:
        """``digests`` answers what the job's ConfigMaps hold now (the operator's index); without it a change of
        their content is not looked for."""
        started = time.monotonic()
        namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
        if getattr(memo, "status", None) is None or memo.uid != body["metadata"].get("uid"):
            memo.status = JobStatus.read(body.get("status"))
            memo.uid = body["metadata"].get("uid")
        spec_dict = dict(body.get("spec") or {})
        spec = JobSpec.model_validate(spec_dict)
        job_root = memo.status.jobRoot or self.launcher.job_root(namespace, name, spec_dict)
        job = JobRef(namespace, name, body["metadata"].get("uid", ""), job_root, dict(body))
        source_hash = sources.observed_hash(spec, digests) if digests is not None else None
        try:
            for _ in range(MAX_STEPS_PER_TICK):
                observed = await self.launcher.observe(job)
                view = self._view(body, spec, memo.status, job_root, source_hash)
                decision = statemachine.decide(view, observed)
                if _starts_fleet_upgrade(memo.status, decision):
                    self.fleet.claim(namespace, name)  # before any await, so slots are never oversold
                await self._record(body, memo, decision)
                if decision.action is None:
                    break
                result = await self._execute(job, view, decision.action)
                view = self._view(body, spec, memo.status, job_root, source_hash)
                await self._record(body, memo, statemachine.advance(view, decision.action, result))
                if not result.ok and not result.values.get("permanent"):
                    break  # a transient failure: try again on the next tick
        finally:
            self.fleet.observe(namespace, name, spec_dict, memo.status)
            metrics.observe_reconcile(time.monotonic() - started)

    def _view(self, body: kopf.Body, spec: JobSpec, status: JobStatus, job_root: str,
              source_hash: str | None = None) -> JobView:
        now = datetime.now(UTC)
        return JobView(
            name=body["metadata"]["name"], namespace=body["metadata"]["namespace"],
            generation=int(body["metadata"].get("generation") or 1), spec=spec, status=status,
            config=self.config, job_root=job_root, now=now, new_run_id=new_run_id(now),
            fleet_allowed=self.fleet.allowed(body["metadata"]["namespace"], body["metadata"]["name"]),
            spec_job_root=self.launcher.job_root(body["metadata"]["namespace"], body["metadata"]["name"],
                                                 dict(body.get("spec") or {})),
            source_hash=source_hash,
        )

    async def _record(self, body: kopf.Body, memo: Any, decision: Decision) -> None:
        """Write the status (write-ahead), then keep it in memory, then announce the events."""
        if decision.status is not None:
            old, new = memo.status, decision.status
            patch = status_patch(old, new)
            if patch:
                await kube.patch_job_status(body["metadata"]["namespace"], body["metadata"]["name"], patch)
            memo.status = new
            dropped = {s.id for s in old.snapshots} - {s.id for s in new.snapshots}
            for snapshot_id in sorted(dropped):
                await self.launcher.delete_snapshot(self._job(body, memo), snapshot_id)
            metrics.observe_transition(body["metadata"]["namespace"], body["metadata"]["name"], old, new)
        for event in decision.events:
            oplog.log_decision(body["metadata"]["namespace"], body["metadata"]["name"], memo.status, event)
            kopf.event(body, type=event.type, reason=event.reason, message=event.message[:1000])

    def _job(self, body: kopf.Body, memo: Any) -> JobRef:
        md = body["metadata"]
        return JobRef(md["namespace"], md["name"], md.get("uid", ""), memo.status.jobRoot or "", dict(body))

    # ------------------------------------------------------------------------------------- actions
    async def _execute(self, job: JobRef, view: JobView, action: Action) -> Result:
        executor = self.executors[action.kind]
        job = dataclasses.replace(job, request=request_of(view, action))
        try:
            return await executor(job, view, action.params)
        except LaunchError as exc:
            return Result(False, {"permanent": exc.permanent}, str(exc), exc.reason)
        except kube.Refused as exc:  # e.g. a driver pod whose ServiceAccount is missing: the server says which
            return Result(False, {"permanent": False}, f"the Kubernetes API refused {action.kind}: {exc.message}",
                          "APIRefused")
        except ToolPending as exc:
            raise kopf.TemporaryError(str(exc), delay=exc.delay) from exc

    async def _claim(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        holder = f"{job.namespace}/{job.name}/{job.uid}"
        lease = builders.build_lease(job.job_root, holder)
        kopf.adopt(lease, owner=job.body)
        ok, other = await kube.acquire_lease(job.namespace, lease)
        if not ok:
            other_job = "/".join((other or "?").split("/")[:2])
            return Result(False, {"permanent": True},
                          f"job root {job.job_root} is already used by {other_job}; one writer per job root: "
                          "give this job its own spec.storage", "JobRootInUse")
        return Result(True)

    async def _compile(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        """The plan in force: restored from the job root, taken from ``compiledPlanRef``, or compiled.

        ``planengine compile FILE`` prints the plan, so the operator holds its text whatever the launcher
        (a Kubernetes tool pod cannot hand back a file it wrote): it installs the text in the job root
        (``launcher.write_file``) and in the ``<job>-plan`` ConfigMap. The Kubernetes launcher does not write
        a first plan into the job root: its driver pod mounts that ConfigMap and ``run --plan`` installs the plan
        into a job root that has none (a replaced plan is copied there by a tool pod).
        """
        spec = view.spec
        force = bool(params.get("force"))
        existing = None if force else await self.launcher.read_file(job, "plan.json")
        catalog = await self._catalog(job, spec, required=not existing and spec.plan.compiledPlanRef is None)
        if spec.plan.compiledPlanRef is not None:
            plan_text = await self._compiled_plan_ref(job, spec)
            program = plan_text
        elif existing:
            plan_text = existing  # restore: the job root already holds the plan in force
            program = await self._program(job, spec, required=False)
        else:
            program = await self._program(job, spec, required=True)
            assert program is not None
            options = builders.compile_options(dict(job.body.get("spec") or {}))  # planOptions + max parallelism
            script = builders.build_compile_script(program, catalog, options)
            run = await self.launcher.run_tool(job, params["engineVersion"], "compile",
                                               ["compile", "{work}/job.sql"], files={"job.sql": script})
            if run.exit_code != 0:
                return _tool_failure("compile", run, permanent=run.exit_code == 2)
            plan_text = plan_from_output(run.stdout)
            if plan_text is None:
                return Result(False, {"permanent": True}, "planengine compile exited 0 but printed no plan: "
                                                          f"{(run.stdout or run.stderr)[-300:]}", "CompileFailed")
        # What the plan was compiled from, to notice a later edit of a referenced ConfigMap's content (None when
        # a restored job's ConfigMap is gone: then nothing is compared until the next compile).
        source_hash = None
        if program is not None and (spec.catalog is None or catalog is not None):
            source_hash = sources.source_hash(sources.text_digest(program),
                                              sources.text_digest(catalog) if catalog is not None else None)
        try:
            plan_id = str(json.loads(plan_text).get("planId") or "")
        except ValueError as exc:
            return Result(False, {"permanent": True}, f"the plan is not JSON: {exc}", "BadPlan")
        if not plan_id:
            return Result(False, {"permanent": True}, "the plan has no planId: is it a compiled plan?", "BadPlan")
        if plan_text != existing:
            await self.launcher.write_file(job, "plan.json", plan_text)
        configmap = builders.build_plan_configmap(job.name, plan_text, plan_id)
        kopf.adopt(configmap, owner=job.body)
        await kube.apply(job.namespace, "configmaps", configmap)
        return Result(True, {"planId": plan_id, "sourceHash": source_hash})

    async def _program(self, job: JobRef, spec: JobSpec, *, required: bool) -> str | None:
        """The SQL script: inline, or the ``plan.configMapRef`` key (None if absent and not ``required``)."""
        if spec.plan.sql is not None:
            return spec.plan.sql
        ref = spec.plan.configMapRef
        if ref is None:
            return None
        try:
            return await self._configmap_key(job, ref.name, ref.key or "script.sql", "SQL script")
        except LaunchError:
            if required:
                raise
            return None

    async def _catalog(self, job: JobRef, spec: JobSpec, *, required: bool) -> str | None:
        if spec.catalog is None:
            return None
        ref = spec.catalog.configMapRef
        try:
            return await self._configmap_key(job, ref.name, ref.key or "catalog.sql", "catalog")
        except LaunchError:
            if required:
                raise
            return None

    async def _compiled_plan_ref(self, job: JobRef, spec: JobSpec) -> str:
        ref = spec.plan.compiledPlanRef
        assert ref is not None
        if ref.name:
            return await self._configmap_key(job, ref.name, ref.key or "plan.json", "compiled plan")
        if self.launcher.kind != "local":
            raise LaunchError(validation.COMPILED_PLAN_URI_MESSAGE, reason="CompiledPlanUnreadable", permanent=True)
        path = Path((ref.uri or "").removeprefix("file://"))
        try:
            return path.read_text()
        except OSError as exc:
            raise LaunchError(f"cannot read the compiled plan {ref.uri}: {exc}; fix spec.plan.compiledPlanRef.uri",
                              reason="CompiledPlanUnreadable", permanent=True) from exc

    async def _configmap_key(self, job: JobRef, name: str | None, key: str, what: str) -> str:
        configmap = await kube.get_configmap(job.namespace, name or "")
        if configmap is None:
            raise LaunchError(f"{what} ConfigMap {job.namespace}/{name} does not exist; create it or fix the "
                              f"reference", reason="MissingConfigMap", permanent=True)
        value = (configmap.get("data") or {}).get(key)
        if value is None:
            raise LaunchError(f"{what} ConfigMap {name} has no key {key!r}", reason="MissingConfigMap",
                              permanent=True)
        return str(value)

    async def _check(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        engine = params["engineVersion"]
        argv = ["check", "--plan", f"{job.job_root}/plan.json", "--json"]
        key = f"check-{engine}"
        files = None
        if params.get("snapshotPath"):  # spec.initialSnapshot: can this engine start the new plan from it?
            # Before the first run the plan is not in the job root on every launcher (on Kubernetes the driver
            # installs it), so the tool gets the plan the Compile step published as an input file.
            plan_text = await self.launcher.read_file(job, "plan.json")
            if not plan_text:
                return Result(False, {}, "the compiled plan is not readable yet", "CheckFailed")
            argv = ["check", "--plan", "{work}/plan.json", "--snapshot", params["snapshotPath"], "--json"]
            key, files = f"initial-check-{engine}", {"plan.json": plan_text}
        elif params.get("snapshot"):  # the rollback: can this engine read the state in that snapshot?
            argv[3:3] = ["--snapshot", f"{job.job_root}/snapshots/{params['snapshot']}"]
            key = f"rollback-check-{engine}"
        run = await self.launcher.run_tool(job, engine, key, argv, files=files)
        reason = _reason(run)
        if run.exit_code == 0:
            return Result(True, {"verdict": "compatible", "reason": reason, "stateMoves": _state_moves(run)})
        if run.exit_code == 3:
            return Result(True, {"verdict": "migrate", "reason": reason})
        if run.exit_code == 4:
            return Result(True, {"verdict": "incompatible", "reason": reason})
        return _tool_failure("check", run, permanent=run.exit_code == 2)

    async def _migrate(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        engine, run_id = params["engineVersion"], params["runId"]
        target = f"{job.job_root}/runs/{run_id}/plan.json"
        if self.launcher.kind == "local":
            Path(target).parent.mkdir(parents=True, exist_ok=True)
        run = await self.launcher.run_tool(job, engine, f"migrate-{engine}",
                                           ["migrate", "--plan", f"{job.job_root}/plan.json", "-o", target])
        if run.exit_code != 0:
            return _tool_failure("migrate", run, permanent=True)
        return Result(True, {"planFile": target})

    async def _publish(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        """The migrated plan an upgrade's run made the plan in force, into the ``<job>-plan`` ConfigMap."""
        plan_file = str(params["planFile"])
        relpath = plan_file.removeprefix(f"{job.job_root}/")
        plan_text = await self.launcher.read_file(job, relpath)
        if not plan_text:
            return Result(False, {}, f"the migrated plan {plan_file} is not readable", "PlanUnreadable")
        try:
            plan_id = str(json.loads(plan_text).get("planId") or "")
        except ValueError as exc:
            return Result(False, {"permanent": True}, f"the migrated plan is not JSON: {exc}", "BadPlan")
        configmap = builders.build_plan_configmap(job.name, plan_text, plan_id)
        kopf.adopt(configmap, owner=job.body)
        await kube.apply(job.namespace, "configmaps", configmap)
        return Result(True, {"planId": plan_id})

    async def _standby(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        """Bring the upgrade's target up as a warm standby while the old driver still runs."""
        if not self.launcher.supports_standby:
            return Result(True, {"standby": "unsupported"})
        plan = params.get("planFile") or self.launcher.plan_path(job)
        argv = builders.run_argv(plan, job.job_root, None)
        state = await self.launcher.standby(job, params["engineVersion"], params["runId"], argv,
                                            timeout=self.config.timing.toolTimeout)
        return Result(True, {"standby": state})

    async def _activate(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        """``POST /v1/start`` on the standby with the snapshot the stop wrote (the warm handover)."""
        snapshot = None if params.get("stateless") else params.get("snapshot")
        snapshot_path = f"{job.job_root}/snapshots/{snapshot}" if snapshot else None
        started = await self.launcher.activate(job, params["runId"], snapshot_path,
                                               timeout=self.config.timing.stopTimeout)
        baseline = 0
        if snapshot:
            baseline = _committed_in_manifest(await self.launcher.read_file(job, f"snapshots/{snapshot}/manifest.json"))
        return Result(True, {**started, "baselineBatches": baseline})

    async def _discard(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        """Kill a standby no operation wants (the restart rule in ``statemachine``)."""
        await self.launcher.discard_standby(job)
        return Result(True)

    async def _stop(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        """Stop the old driver and confirm it is gone; the snapshot survives an operator crash mid-way."""
        snapshot_wanted = params["how"] == "snapshot"
        answer = await self.launcher.stop(job, snapshot=snapshot_wanted, timeout=self.config.timing.stopTimeout)
        snapshot_id = answer.get("snapshot")
        if snapshot_wanted and not snapshot_id:
            # Stopped before a crash of ours, or the driver died: find the snapshot it wrote, else fork
            # the newest checkpoint so the next run still starts from the latest committed state.
            snapshot_id = await self._snapshot_since(job, params.get("since"))
            if not snapshot_id and view.status.runId:
                return await self._fork(job, view, {"reason": params.get("reason")})
        if not snapshot_id:
            return Result(True, {})
        ref = await self._snapshot_ref(job, view, snapshot_id, params.get("reason") or "upgrade")
        return Result(True, {"snapshot": snapshot_id, "snapshotRef": ref})

    async def _snapshot_since(self, job: JobRef, since: str | None) -> str | None:
        moment = statemachine.parse_iso(since)
        found = await self.launcher.list_snapshots(job)
        for manifest in reversed(found):
            created = statemachine.parse_iso(manifest.get("createdAt") or manifest.get("created"))
            if moment is None or (created and created >= moment) or manifest["_mtime"] >= moment.timestamp():
                return str(manifest["id"])
        return None

    async def _snapshot_ref(self, job: JobRef, view: JobView, snapshot_id: str, reason: str) -> dict[str, Any]:
        manifest: dict[str, Any] = {}
        text = await self.launcher.read_file(job, f"snapshots/{snapshot_id}/manifest.json")
        if text:
            try:
                manifest = json.loads(text)
            except ValueError:
                manifest = {}
        allowed = {"upgrade", "manual", "periodic", "restart", "suspend", "rollback"}
        return {
            "id": snapshot_id,
            "createdAt": manifest.get("createdAt") or statemachine.iso(view.now),
            "reason": reason if reason in allowed else "manual",
            "engineVersion": manifest.get("engineVersion") or view.status.engineVersion,
            "runId": manifest.get("runId") or view.status.runId,
        }

    async def _fork(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        """``planengine snapshot --job-root``: a snapshot from the newest checkpoint (driver gone or live).

        With ``base`` in the params (the rollback) the fork is kept only when it holds a batch beyond that
        snapshot (``forked: true``); otherwise it is deleted and the answer is ``base`` itself."""
        engine = params.get("engineVersion") or view.status.engineVersion or view.config.defaultEngineVersion
        run = await self.launcher.run_tool(job, engine, "snapshot", ["snapshot", "--job-root", job.job_root])
        rollback = "base" in params
        base = params.get("base")
        if run.exit_code != 0 and NO_RUN_TO_SNAPSHOT in f"{run.stdout}\n{run.stderr}":
            return Result(True, {"snapshot": base, "forked": False} if rollback else _nothing_to_fork(view))
        if run.exit_code != 0:
            return _tool_failure("snapshot", run, permanent=False)
        snapshot_id = _snapshot_id_from(run.stdout) or await self._snapshot_since(job, None)
        if not snapshot_id:
            # nothing committed yet: the next run starts empty (the rollback keeps its snapshot)
            return Result(True, {"snapshot": base, "forked": False} if rollback else {})
        if rollback and snapshot_id != base:
            ahead = await self._batches_ahead(job, snapshot_id, base)
            if not ahead:
                await self.launcher.delete_snapshot(job, snapshot_id)
                return Result(True, {"snapshot": base, "forked": False})
        reason = params.get("reason") or "restart"
        ref = await self._snapshot_ref(job, view, snapshot_id, reason)
        return Result(True, {"snapshot": snapshot_id, "snapshotRef": ref, "forked": True})

    async def _batches_ahead(self, job: JobRef, snapshot_id: str, base: str | None) -> dict[str, int]:
        """Queries whose last committed batch in ``snapshot_id`` is past the one in ``base``."""
        fork = _batch_ids(await self.launcher.read_file(job, f"snapshots/{snapshot_id}/manifest.json"))
        before = _batch_ids(await self.launcher.read_file(job, f"snapshots/{base}/manifest.json")) if base else {}
        return {uid: batch for uid, batch in fork.items() if batch > before.get(uid, -1)}

    async def _launch(self, job: JobRef, view: JobView, params: dict[str, Any]) -> Result:
        snapshot = None if params.get("stateless") else params.get("snapshot")
        snapshot_path = f"{job.job_root}/snapshots/{snapshot}" if snapshot else None
        if params.get("snapshotPath"):  # spec.initialSnapshot (checked): the engine forks it into the new run
            snapshot_path = params["snapshotPath"]
        # A run from one of the job's snapshots runs that snapshot's plan, the one its state belongs to: after an
        # upgrade that migrated the plan, a rollback to the snapshot before it runs the plan from before it (the
        # engine then makes it the plan in force again; planengine/runtime/storage/plan_in_force.py).
        plan = params.get("planFile") or (f"{snapshot_path}/plan.json" if snapshot and not params.get("snapshotPath")
                                           else self.launcher.plan_path(job))
        argv = builders.run_argv(plan, job.job_root, snapshot_path)
        started = await self.launcher.launch(job, params["engineVersion"], params["runId"], argv)
        baseline = 0
        if snapshot:
            text = await self.launcher.read_file(job, f"snapshots/{snapshot}/manifest.json")
            baseline = _committed_in_manifest(text)
        elif params.get("snapshotPath") and self.launcher.kind == "local":
            with contextlib.suppress(OSError):
                baseline = _committed_in_manifest((Path(params["snapshotPath"]) / "manifest.json").read_text())
        return Result(True, {**started, "baselineBatches": baseline})


def _starts_fleet_upgrade(before: JobStatus, decision: Decision) -> bool:
    """The decision begins an upgrade that follows the fleet default (it needs a rollout slot)."""
    after = decision.status
    return (after is not None and after.upgrade is not None and bool(after.upgrade.fleet)
            and after.operation is not None and after.operation.type == "Upgrade"
            and after.operation != before.operation)


def plan_from_output(text: str) -> str | None:
    """The compiled plan ``planengine compile FILE`` printed, found in its output even when log lines
    surround it (a pod's log interleaves stderr with stdout).

    >>> plan_from_output('WARN x\\n{"planId": "p1", "nodes": []}\\nbye')
    '{"planId": "p1", "nodes": []}'
    >>> plan_from_output("no plan here") is None
    True
    """
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^\{", text, re.MULTILINE):
        try:
            found, end = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(found, dict) and "planId" in found:
            return text[match.start():end]
    return None


def _committed_in_manifest(text: str | None) -> int:
    """Batches already committed in a snapshot (the new run's batch ids continue from them).

    >>> _committed_in_manifest('{"queries": {"3_sink": {"lastBatchId": 4}, "5_sink": {"lastBatchId": -1}}}')
    5
    >>> _committed_in_manifest('{"lastBatchIds": {"1_copy": 2}}')
    3
    """
    return sum(batch + 1 for batch in _batch_ids(text).values() if batch >= 0)


def _batch_ids(text: str | None) -> dict[str, int]:
    """The last committed batch id per query uid in a snapshot manifest (-1: none yet).

    >>> _batch_ids('{"queries": {"3_sink": {"lastBatchId": 4}, "5_sink": {"lastBatchId": -1}}}')
    {'3_sink': 4, '5_sink': -1}
    """
    if not text:
        return {}
    try:
        manifest = json.loads(text)
    except ValueError:
        return {}
    batches = manifest.get("lastBatchIds") or manifest.get("queries") or {}
    items = batches.items() if isinstance(batches, dict) else enumerate(batches)
    found: dict[str, int] = {}
    for uid, value in items:
        if isinstance(value, dict):  # the engine's manifest: {"queries": {uid: {"lastBatchId": n}}}
            value = value.get("lastBatchId")
        if isinstance(value, int):
            found[str(uid)] = value
    return found


def _snapshot_id_from(stdout: str) -> str | None:
    text = stdout.strip()
    if not text:
        return None
    try:
        data = json.loads(text.splitlines()[-1])
        if isinstance(data, dict):
            return data.get("snapshot") or data.get("snapshotId") or data.get("id")
    except ValueError:
        pass
    last = text.splitlines()[-1].strip()
    return last if last and " " not in last else None


def _reason(run: ToolRun) -> str:
    try:
        data = json.loads(run.stdout.strip() or "{}")
        if isinstance(data, dict):
            reasons = data.get("reasons") or data.get("reason") or data.get("message")
            if isinstance(reasons, list):
                return "; ".join(str(r) for r in reasons)
            if reasons:
                return str(reasons)
    except ValueError:
        pass
    return (run.stderr.strip() or run.stdout.strip())[-500:]


def _state_moves(run: ToolRun) -> list[str]:
    """``planengine check --json``'s ``stateMoves``: nodes ``migrate`` would move to the JVM with their state
    (absent from engines that predate it: nothing to move)."""
    try:
        data = json.loads(run.stdout.strip() or "{}")
    except ValueError:
        return []
    moves = data.get("stateMoves") if isinstance(data, dict) else None
    return [str(m) for m in moves] if isinstance(moves, list) else []


def _nothing_to_fork(view: JobView) -> dict[str, Any]:
    """Where a restart starts when the job root holds no run at all (the first driver died before it made its run
    directory: a bad executor setting, say): from what the dead run would have started from, never "empty" by
    accident. The latest snapshot when there is one, else ``spec.initialSnapshot``, else empty state (nothing
    was ever committed). Retrying the fork instead, as for other tool failures, started a new tool pod every
    tick for good."""
    if view.status.lastSnapshot is not None and view.status.lastSnapshot.id:
        return {"snapshot": view.status.lastSnapshot.id, "forked": False}
    initial = view.spec.initialSnapshot
    if initial is not None:
        return {"snapshotPath": initial.uri.removeprefix("file://"), "forked": False}
    return {"snapshot": None, "forked": False}


def _tool_failure(tool: str, run: ToolRun, *, permanent: bool) -> Result:
    message = f"planengine {tool} exited {run.exit_code}: {_reason(run)}"
    return Result(False, {"permanent": permanent}, message, f"{tool.capitalize()}Failed")
