"""Operator throughput and upgrade downtime, through real kopf against the real Kubernetes control plane.

The control plane is the test suite's (``tests/cluster``: kube-apiserver, etcd, controller-manager and scheduler
built by ``tests/setup/prepare.d/40-controlplane.sh``), started once for both parts.

1. Fleet: N SparkPlanJobs (default 200) created at once through the API server; the launcher is a stub whose
   tools succeed at once and whose "drivers" are no-op in-memory records (no processes, no engine), so this
   measures the operator itself: kopf, the reconciler, the state machine and the status writes against a real
   API server and etcd (which share the machine's two cores with it). The operator logs in with the chart's
   ServiceAccount (the real RBAC authorizer judges every request). Reported: time from the first create until
   every job is ``Running`` with ``observedGeneration == generation``, and the latency of every
   ``Reconciler.reconcile`` call (create kicks plus level-based ticks), p50/p99/max.
2. Upgrade downtime: a job on engine 0.1 (local launcher, contract engine double) fed one input file per
   0.1 s is upgraded to 0.2; downtime is the time between the last batch committed by the old engine and
   the first committed by the new one (sink file mtimes), median of ``--upgrades`` runs.

    .venv/bin/python -m benchmarks.operator_reconcile [--jobs 200] [--upgrades 5] [--out FILE]

The file's sections below "## Upgrade downtime with the real engine" (``benchmarks.operator_upgrade_real``) are
kept as they are.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("PLANENGINE_OPERATOR_TICK", "5")  # the default cadence; fixed at handler import
REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [p for p in (str(REPO), str(REPO / "operator")) if p not in sys.path]

from planengine_operator.launchers.base import JobRef, ToolRun  # noqa: E402
from planengine_operator.statemachine import DriverObservation  # noqa: E402
from tests.fixtures.cluster import cluster_session  # noqa: E402
from tests.operator.e2e.harness import (  # noqa: E402
    GROUP,
    PLURAL,
    OperatorThread,
    World,
    operator_config,
    wait_for,
)

FLEET_NAMESPACE = "fleet"
UPGRADE_NAMESPACE = "upgrades"
KEPT_SECTION = "## Upgrade downtime with the real engine"  # and what follows: benchmarks.operator_upgrade_real


class NoopLauncher:
    """Tools exit 0 instantly; drivers are in-memory records that report one committed batch."""

    kind = "local"

    def __init__(self) -> None:
        self.drivers: dict[str, str] = {}
        self.files: dict[tuple[str, str], str] = {}

    def job_root(self, namespace: str, name: str, spec: dict[str, Any]) -> str:
        return f"/noop/{namespace}/{name}"

    def plan_path(self, job: JobRef) -> str:
        return f"{job.job_root}/plan.json"

    async def run_tool(self, job: JobRef, engine: str, key: str, argv: list[str],
                       files: dict[str, str] | None = None) -> ToolRun:
        if argv[0] == "compile":  # like planengine compile FILE: the plan on stdout
            return ToolRun(0, json.dumps({"planId": f"noop-{job.name}"}), "")
        return ToolRun(0, "{}", "")

    async def launch(self, job: JobRef, engine: str, run_id: str, argv: list[str]) -> dict[str, Any]:
        self.drivers[job.job_root] = run_id
        return {"name": run_id, "statusUrl": "noop://"}

    async def observe(self, job: JobRef) -> DriverObservation:
        run_id = self.drivers.get(job.job_root)
        if run_id is None:
            return DriverObservation.gone()
        return DriverObservation(running=True, run_id=run_id, healthy=True, batches=1)

    async def driver_url(self, job: JobRef) -> str | None:
        return "noop://"

    async def stop(self, job: JobRef, *, snapshot: bool, timeout: float) -> dict[str, Any]:
        self.drivers.pop(job.job_root, None)
        return {}

    async def read_file(self, job: JobRef, relpath: str) -> str | None:
        return self.files.get((job.job_root, relpath))

    async def write_file(self, job: JobRef, relpath: str, text: str) -> None:
        self.files[(job.job_root, relpath)] = text

    async def list_snapshots(self, job: JobRef) -> list[dict[str, Any]]:
        return []

    async def delete_snapshot(self, job: JobRef, snapshot_id: str) -> None:
        return None

    async def close(self) -> None:
        return None


class NoopOperator(OperatorThread):
    """The real handlers with the no-op launcher; every reconcile call is timed."""

    def __init__(self, config: Any, namespace: str, durations: list[float]) -> None:
        super().__init__(config, namespace)
        self.durations = durations

    async def _run(self) -> None:
        import kopf

        from planengine_operator import main

        main.configure(self.config, NoopLauncher())  # type: ignore[arg-type]
        reconciler = main.Runtime.reconciler
        assert reconciler is not None
        original = reconciler.reconcile
        durations = self.durations

        async def timed(body: Any, memo: Any, digests: Any = None) -> None:
            started = time.perf_counter()
            try:
                await original(body, memo, digests)
            finally:
                durations.append(time.perf_counter() - started)

        reconciler.reconcile = timed  # type: ignore[method-assign]
        await kopf.operator(standalone=True, namespaces=[self.namespace], ready_flag=self.ready,
                            stop_flag=self.stop_flag, liveness_endpoint=None)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _namespace(plane: Any, name: str) -> str:
    plane.admin.create("", "namespaces", None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def fleet(plane: Any, identity: Any, tmp: Path, jobs: int, settle: float) -> dict[str, Any]:
    """``jobs`` SparkPlanJobs created as fast as one client posts them, reconciled by the no-op operator."""
    logging.getLogger("kopf").setLevel(logging.WARNING)
    durations: list[float] = []
    namespace = _namespace(plane, FLEET_NAMESPACE)
    os.environ["KUBECONFIG"] = str(identity.write_kubeconfig(tmp / "operator.kubeconfig"))
    operator = NoopOperator(operator_config(tmp / "jobs"), namespace, durations).start()
    try:
        started = time.monotonic()
        for index in range(jobs):
            plane.admin.create(GROUP, PLURAL, namespace, {
                "apiVersion": f"{GROUP}/v1alpha1", "kind": "SparkPlanJob", "metadata": {"name": f"job-{index:04d}"},
                "spec": {"engineVersion": "0.1", "plan": {"sql": f"-- job {index}"}}})
        created = time.monotonic() - started

        def all_running() -> bool:
            items = plane.admin.list(GROUP, PLURAL, namespace)
            return len(items) == jobs and all(
                (o.get("status") or {}).get("phase") == "Running"
                and (o.get("status") or {}).get("observedGeneration") == o["metadata"]["generation"]
                for o in items)

        wait_for(all_running, 900, f"{jobs} jobs Running", interval=0.5)
        reconciled = time.monotonic() - started
        storm = len(durations)
        time.sleep(settle)  # steady state: level-based ticks only (a measurement window, not a wait)
    finally:
        operator.stop()
    return {"jobs": jobs, "create_s": created, "all_running_s": reconciled, "calls": len(durations),
            "storm": durations[:storm], "steady": durations[storm:]}


def upgrade_downtimes(plane: Any, identity: Any, tmp: Path, runs: int) -> list[float]:
    downtimes = []
    (tmp / "world").mkdir()
    world = World(tmp / "world", plane, _namespace(plane, UPGRADE_NAMESPACE), "contract", "local",
                  operator_identity=identity)
    os.environ["KUBECONFIG"] = str(world.operator_kubeconfig)
    world.start_operator()
    try:
        for index in range(runs):
            name = f"up{index}"
            world.add_input(name, 3)
            world.apply(world.job_manifest(name, "0.1"))
            world.wait_status(name, lambda s: s.get("phase") == "Running", "Running")
            with world.feeding(name, every=0.1):
                wait_for(lambda n=name: len(world.batch_files(n)) >= 5, 30, "old engine committing")
                world.apply(world.job_manifest(name, "0.2"))
                world.wait_status(name, lambda s: (s.get("upgrade") or {}).get("step") == "Succeeded",
                                  "upgrade Succeeded", timeout=60)
            files = world.batch_files(name)
            engines = [f.read_text().splitlines()[0].partition("\t")[2] for f in files]
            first_new = engines.index("0.2")
            downtimes.append(files[first_new].stat().st_mtime - files[first_new - 1].stat().st_mtime)
            world.apply({**world.job_manifest(name, "0.2"), "spec": {
                **world.job_manifest(name, "0.2")["spec"], "state": "suspended"}})
            world.wait_status(name, lambda s: s.get("phase") == "Suspended", "Suspended")
    finally:
        world.close()
    return downtimes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--settle", type=float, default=15.0, help="seconds of steady-state ticks to time")
    parser.add_argument("--upgrades", type=int, default=5)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "operator_reconcile.md"))
    args = parser.parse_args(argv)

    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-reconcile-", ignore_cleanup_errors=True) as scratch:
        tmp = Path(scratch)
        with cluster_session(tmp / "cluster") as (plane, identity):
            server_version = plane.admin.request("GET", "/version").get("gitVersion", "?")
            result = fleet(plane, identity, tmp, args.jobs, args.settle)
            downtimes = upgrade_downtimes(plane, identity, tmp, args.upgrades)
    load_end = os.getloadavg()[0]
    ms = lambda v: f"{v * 1000:.1f}"  # noqa: E731
    every = result["storm"] + result["steady"]
    command = "python -m benchmarks.operator_reconcile" + (f" {' '.join(argv)}" if argv else "")
    lines = [
        "# Operator reconcile throughput and upgrade downtime",
        "",
        f"- Command: `{command}`",
        f"- Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- Machine: {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python "
        f"{platform.python_version()}; load average {load_start:.1f} at the start, {load_end:.1f} at the end",
        f"- Real kopf with the operator's handlers (timer tick 5 s, the default) against the **real control "
        f"plane** (`tests/cluster`: kube-apiserver/etcd/controller-manager/scheduler {server_version}, on this "
        "machine), logged in as the chart's operator ServiceAccount (RBAC); fleet part with a no-op launcher "
        "(tools succeed at once, in-memory drivers, no processes); upgrade part with the local launcher and the "
        "contract engine double (`tests/operator/e2e/contract_engine.py`, 0.1 s batch interval).",
        "",
        "## Fleet of SparkPlanJobs",
        "",
        "| jobs | creates done | all Running (from first create) | reconcile calls | p50 ms | p99 ms | max ms |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {result['jobs']} | {result['create_s']:.1f} s | {result['all_running_s']:.1f} s | {len(every)} | "
        f"{ms(percentile(every, 0.5))} | {ms(percentile(every, 0.99))} | {ms(max(every))} |",
        "",
        f"- During the create storm: {len(result['storm'])} calls, p99 {ms(percentile(result['storm'], 0.99))} ms; "
        f"steady state ({args.settle:g} s of ticks): {len(result['steady'])} calls, p99 "
        f"{ms(percentile(result['steady'], 0.99)) if result['steady'] else '-'} ms. Target p99 <= 50 ms.",
        "",
        "## Upgrade downtime (last commit on 0.1 -> first commit on 0.2)",
        "",
        "| runs | median s | min s | max s |",
        "|---:|---:|---:|---:|",
        f"| {len(downtimes)} | {statistics.median(downtimes):.2f} | {min(downtimes):.2f} | {max(downtimes):.2f} |",
        "",
        "- Target <= 15 s. Each run: check on 0.2, stop 0.1 with a snapshot through `POST /v1/stop`, launch 0.2 "
        "from the snapshot, stability gate (3 batches). The contract double starts in ~0.1 s; a real Spark "
        "driver's start-up time adds to this directly.",
        "",
    ]
    text = "\n".join(lines)
    out = Path(args.out)
    previous = out.read_text() if out.exists() else ""
    kept = previous[previous.index(KEPT_SECTION):] if KEPT_SECTION in previous else ""
    out.write_text(text + "\n" + kept if kept else text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
