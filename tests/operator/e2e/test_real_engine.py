"""The operator's scenarios against the real engine: kopf + the API emulator + ``planengine`` processes.

Two builds of this checkout's engine are the two engine versions of the operator's catalog: ``0.1`` is
``<repo>/.venv/bin/planengine`` (PySpark 4.3) and ``0.2`` is ``<repo>/.venv-spark42/bin/planengine``
(PySpark 4.2; the same build twice when that venv does not exist). ``0.3`` and ``0.4`` are
the 4.2 build behind ``engine_wrapper.py`` knobs: its ``check`` answers "incompatible" (exit 4, JSON reasons)
and its driver dies 3 s after starting. The job is stateless (filesystem json source -> calc -> Spark's
file sink), so every input row must be in the committed output exactly once across every handover.

Upgrades go through a warm standby: the target's ``run --standby`` is started after the check and before
the old driver's stop, and ``POST /v1/start`` hands it the snapshot. A target that dies in standby never
disturbs the old run.

Every driver start is a JVM start (8-20 s quiet, minutes on a loaded machine), so the set is small: one
test walks start -> second job on the same root -> refused target -> upgrade; one test has the target die
in standby; one has it die after committing a batch past the upgrade snapshot (``0.5``), and the
rollback resumes from a fork of the target's state.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import pytest

from tests.operator.e2e.harness import (
    LAUNCHER_INDEPENDENT,
    REAL_TARGET,
    World,
    commit_times,
    handover_downtime,
    sink_batches_ahead,
    sink_uid,
    snapshot_last_batch,
    spark42_available,
    wait_for,
)

pytestmark = pytest.mark.timeout(1200)

FEED_EVERY = 0.5  # seconds between input files while a handover runs
JVM = 600  # generous bound for anything that waits on a JVM start on a loaded machine


def _iso_seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _start(world: World, name: str, root: Path, engine: str = "0.1") -> dict:
    world.add_input(name, 3)
    world.apply(world.job_manifest(name, engine, storage=root))
    status = world.wait_status(name, lambda s: s.get("phase") == "Running", "phase Running", timeout=120)
    world.assert_exactly_once(name, timeout=JVM)  # the driver's JVM started and committed the first files
    return status


def _exactly_once_or_known_engine_loss(world: World, name: str, root: Path, snapshot: str, run_id: str) -> None:
    """Every input row exactly once and every closed window once with all its rows. A failure whose cause is
    the known engine problem (a sink already held batch ids past the snapshot when ``run_id`` started from
    it) is reported as xfail with that evidence; any other loss or a duplicate fails."""
    wanted = world.input_rows(name)
    seen = {"count": -1, "since": time.monotonic()}

    def settled() -> bool:  # all rows there, or the output stopped growing for 45 s (input is not fed now)
        count = len(world.output(name))
        if count != seen["count"]:
            seen.update(count=count, since=time.monotonic())
        return count >= len(wanted) or time.monotonic() - seen["since"] > 45

    wait_for(settled, JVM, f"{name}: the output to catch up", lambda: seen, interval=1)
    got = sorted(row for row, _ in world.output(name))
    duplicates = sorted({r for r in got if got.count(r) > 1})
    missing = sorted(set(wanted) - set(got))
    assert not duplicates, f"duplicates {duplicates[:5]} ({len(duplicates)})"
    try:
        assert not missing, f"{len(missing)} of {len(wanted)} rows missing, e.g. {missing[:5]}"
        world.assert_windows_exactly_once(name)
    except AssertionError as failure:
        ahead = sink_batches_ahead(root, world.sink(name), snapshot, run_id)
        if not ahead:
            raise
        pytest.xfail(f"engine: {failure}; the file sinks already held batches {ahead} past snapshot {snapshot} "
                     f"when run {run_id} started from it and skipped the re-planned batches of those ids")


def _runs(world: World, root: Path, count: int) -> list[dict]:
    """The driver starts recorded by the wrapper; the status is written as soon as the process is spawned,
    the wrapper's record a moment later."""
    return wait_for(lambda: (lambda runs: runs if len(runs) >= count else None)(world.calls(root, "run")), 30,
                    f"{count} driver starts", lambda: world.calls(root, "run"))


def _still_committing(world: World, name: str, more: int = 4) -> None:
    with world.feeding(name, every=FEED_EVERY):
        before = len(world.output(name))
        wait_for(lambda: len(world.output(name)) >= before + more, JVM, f"{name} still committing",
                 lambda: len(world.output(name)), interval=0.5)


def test_start_second_job_refused_target_and_upgrade(real_world: World, tmp_path: Path) -> None:
    world = real_world
    root = tmp_path / "root-r1"
    root = world.storage_root(root)  # where this machine sees the job root (a claim directory on Kubernetes)
    world.start_operator()
    began = time.monotonic()

    # 1. kubectl apply -> Running with committed batches, plan ConfigMap labelled with the planId
    first = _start(world, "r1", root)
    started = time.monotonic() - began
    assert first["engineVersion"] == "0.1" and first["runId"] and first["planId"]
    assert first["jobRoot"] == world.job_root_in_pods(root)
    assert world.condition("r1", "Ready")["status"] == "True"
    configmap = world.api.get("", "configmaps", world.ns, "r1-plan")
    assert configmap["metadata"]["labels"]["planengine.io/plan-id"] == first["planId"][:63]
    plan = json.loads((root / "plan.json").read_text())
    assert plan["planId"] == first["planId"] and plan["sparkVersion"]
    assert (root / "runs" / first["runId"] / "run.json").is_file()  # the engine used the operator's run id
    assert json.loads((root / "driver.json").read_text())["runId"] == first["runId"]

    # 5. a second job on the same job root is refused; the first is undisturbed
    world.apply(world.job_manifest("r2", "0.1", storage=root))
    second = world.wait_status("r2", lambda s: s.get("phase") == "Failed", "r2 Failed")
    assert f"already used by {world.ns}/r1" in second["error"] and not second.get("runId")
    assert world.condition("r2", "Degraded")["reason"] == "JobRootInUse"
    assert len(world.calls(root, "compile")) == 1 and len(world.calls(root, "run")) == 1

    # 3. a target whose plan check fails (exit 4) is refused; the same driver keeps committing
    mark = time.monotonic()
    with world.feeding("r1", every=FEED_EVERY):
        world.apply(world.job_manifest("r1", "0.3", storage=root))
        refused = world.wait_status("r1", lambda s: (s.get("upgrade") or {}).get("step") == "Refused",
                                    "upgrade Refused", timeout=120)
    assert refused["phase"] == "Running" and refused["engineVersion"] == "0.1"
    assert refused["runId"] == first["runId"] and refused["driver"]["name"] == first["driver"]["name"]
    assert "cannot restore this plan" in refused["error"]
    assert world.condition("r1", "Degraded")["status"] == "True"
    _still_committing(world, "r1")
    assert [c["engine"] for c in world.calls(root, "check")] == ["0.3"]
    assert len(world.calls(root, "run")) == 1 and not list((root / "snapshots").glob("*"))
    world.assert_exactly_once("r1", timeout=JVM)
    refusal = time.monotonic() - mark

    # 2. engineVersion edit -> check, stop with snapshot (POST /v1/stop), target from the snapshot in a
    #    new run, stability gate -> Succeeded; every row exactly once across the handover
    mark = time.monotonic()
    with world.feeding("r1", every=FEED_EVERY):
        world.apply(world.job_manifest("r1", REAL_TARGET, storage=root))
        status = world.wait_status("r1", lambda s: (s.get("upgrade") or {}).get("step") == "Succeeded",
                                   "upgrade Succeeded", timeout=JVM)
    upgrade_took = time.monotonic() - mark
    assert status["phase"] == "Running" and status["engineVersion"] == REAL_TARGET
    assert status["runId"] != first["runId"] and status["lastStableSpec"]["engineVersion"] == REAL_TARGET
    upgrade = status["upgrade"]
    assert (upgrade["from"], upgrade["to"]) == ("0.1", REAL_TARGET) and upgrade["snapshot"]
    manifest = json.loads((root / "snapshots" / upgrade["snapshot"] / "manifest.json").read_text())
    assert manifest["runId"] == first["runId"] and manifest["planId"] == first["planId"]
    baseline = sum(q["lastBatchId"] + 1 for q in manifest["queries"].values())
    assert status["driver"]["baselineBatches"] == baseline > 0  # the gate counts only the new run's batches
    assert status["lastSnapshot"]["id"] == upgrade["snapshot"]
    checks = world.calls(root, "check")
    assert [c["engine"] for c in checks] == ["0.3", REAL_TARGET], checks
    runs = _runs(world, root, 2)
    assert [(r["engine"], r["runId"]) for r in runs] == [("0.1", first["runId"]), (REAL_TARGET, status["runId"])]
    # Warm standby: the target's process (one JVM start, no --from-snapshot) was launched before the old
    # driver's stop wrote the snapshot, and its run was created (POST /v1/start) only after it.
    snapshot_at = _iso_seconds(manifest["createdAt"])
    run_marker = json.loads((root / "runs" / status["runId"] / "run.json").read_text())
    assert runs[1]["fromSnapshot"] is None and runs[1]["at"] < snapshot_at < _iso_seconds(run_marker["createdAt"])
    assert run_marker["fromSnapshot"] == upgrade["snapshot"]
    if world.launcher == "local":
        assert not (root / ".operator" / "standby.json").exists()  # promoted to the driver's record
        assert json.loads((root / ".operator" / "driver.json").read_text())["pid"] == runs[1]["pid"]
    else:  # the standby pod itself became the driver (relabelled active); the old driver's pod is gone
        assert world.driver_pods("r1") == [(status["runId"], "active", "Running")]
        assert runs[1]["host"] == status["driver"]["name"]  # the standby's process ran in that pod
    assert [p.name for p in (root / "snapshots").iterdir()] == [upgrade["snapshot"]]  # exactly one snapshot
    for reason in ("UpgradeRefused", "UpgradeStarted", "UpgradeHandover", "UpgradeSucceeded"):
        wait_for(lambda r=reason: r in world.event_reasons("r1"), 30, f"the {reason} event",  # posted async
                 lambda: world.event_reasons("r1"))
    _exactly_once_or_known_engine_loss(world, "r1", root, upgrade["snapshot"], status["runId"])
    windows = world.windows("r1")  # checked above: every closed window once, with all its rows
    downtime = handover_downtime(root, world.sink("r1"), first["runId"], status["runId"], upgrade["snapshot"])
    print(f"\nreal engine (spark42 build: {spark42_available()}): start {started:.1f}s, refusal {refusal:.1f}s, "
          f"upgrade to Succeeded {upgrade_took:.1f}s, downtime (last commit old -> first commit new) "
          f"{downtime:.1f}s, {len(world.input_rows('r1'))} rows and {len(windows)} windows exactly once")


def test_target_dying_in_standby_leaves_the_old_run_undisturbed(real_world: World, tmp_path: Path) -> None:
    """The target's standby exits (code 1) before it reports Standby: the upgrade is refused before any
    stop, so the old driver keeps its run and its JVM, no snapshot is taken and nothing is lost."""
    world = real_world
    root = tmp_path / "root-c"
    root = world.storage_root(root)  # where this machine sees the job root (a claim directory on Kubernetes)
    world.start_operator()
    first = _start(world, "c", root)
    mark = time.monotonic()
    with world.feeding("c", every=FEED_EVERY):
        world.apply(world.job_manifest("c", "0.4", storage=root))
        status = world.wait_status("c", lambda s: (s.get("upgrade") or {}).get("step") == "Refused",
                                   "upgrade Refused", timeout=JVM)
    refused = time.monotonic() - mark
    assert status["phase"] == "Running" and status["engineVersion"] == "0.1"
    assert status["runId"] == first["runId"] and status["driver"]["name"] == first["driver"]["name"]
    assert "failed in standby" in status["upgrade"]["message"] and "exited (code 1)" in status["error"]
    assert world.condition("c", "Degraded")["reason"] == "StandbyFailed"
    wait_for(lambda: "UpgradeRefused" in world.event_reasons("c"), 30, "the UpgradeRefused event",  # async
             lambda: world.event_reasons("c"))
    runs = _runs(world, root, 2)
    assert [r["engine"] for r in runs] == ["0.1", "0.4"] and runs[1]["fromSnapshot"] is None, runs
    assert not (root / "snapshots").exists() or not list((root / "snapshots").iterdir())  # never stopped
    if world.launcher == "local":
        assert not (root / ".operator" / "standby.json").exists()  # the failed standby was cleaned up
    else:
        assert [role for _, role, _ in world.driver_pods("c")] == ["active"]  # the failed standby pod is gone
    assert not (root / "runs" / runs[1]["runId"]).exists()  # the standby wrote nothing in the job root
    _still_committing(world, "c")  # the old engine's JVM kept committing
    world.assert_exactly_once("c", timeout=JVM)
    world.assert_windows_exactly_once("c")
    assert world.status("c")["upgrade"]["step"] == "Refused"  # not retried
    print(f"\nreal engine: target dying in standby -> Refused in {refused:.1f}s, old run undisturbed; "
          f"{len(world.input_rows('c'))} rows exactly once")


def test_target_crashing_after_its_first_commit_rolls_back(real_world: World, tmp_path: Path) -> None:
    """The target commits output past the upgrade snapshot S, then dies (SIGKILL of its process group); the
    rollback forks the target's newest checkpoint with the target's CLI, the old engine's ``check
    --snapshot`` accepts it, and the old engine resumes from it: every row and window exactly once.

    Before this protocol the old engine restarted from S, re-planned the target's batch ids with all input
    since, and Spark's file sink skipped them as committed (2026-11-22: 204 of 726 rows lost)."""
    world = real_world
    root = tmp_path / "root-l"
    root = world.storage_root(root)  # where this machine sees the job root (a claim directory on Kubernetes)
    world.start_operator()
    first = _start(world, "l", root)
    with world.feeding("l", every=FEED_EVERY):
        # The gate counts committed batches over all queries, and the target dies once each of its queries
        # (the shared fan-out and the channel's consumer) has committed once, i.e. at 2 or 3 batches: with the
        # world's minBatches (2) the gate could pass first, and the job would restart the target instead of
        # rolling back (seen on the Kubernetes launcher, whose status polling is slower). Ten cannot be reached.
        world.apply(world.job_manifest("l", "0.5", storage=root, rollback={"minBatches": 10}))
        status = world.wait_status("l", lambda s: s.get("phase") == "RolledBack", "phase RolledBack", timeout=JVM)
    runs = _runs(world, root, 3)
    assert [r["engine"] for r in runs] == ["0.1", "0.5", "0.1"], runs
    target_run, rollback_run = runs[1]["runId"], status["runId"]
    assert rollback_run == runs[2]["runId"] != first["runId"]
    upgrade_snapshot = json.loads((root / "runs" / target_run / "run.json").read_text())["fromSnapshot"]
    used = status["upgrade"]["snapshot"]
    assert used and upgrade_snapshot and used != upgrade_snapshot
    assert runs[2]["fromSnapshot"].endswith(used)
    manifest = json.loads((root / "snapshots" / used / "manifest.json").read_text())
    assert manifest["runId"] == target_run  # the fork of the target's state
    uid = sink_uid(root, world.sink("l"))
    past = [b for b in commit_times(root, target_run, uid) if b > snapshot_last_batch(root, upgrade_snapshot, uid)]
    assert past, "the target committed nothing past the upgrade snapshot"
    assert snapshot_last_batch(root, used, uid) >= max(past)
    checks = world.calls(root, "check")
    assert [c["engine"] for c in checks] == ["0.5", "0.1"], checks  # 0.1 checked the fork
    _still_committing(world, "l")
    world.assert_exactly_once("l", timeout=JVM)
    world.assert_windows_exactly_once("l")
    print(f"\nreal engine: target committed batches {past} past {upgrade_snapshot}, rolled back from the fork "
          f"{used}; {len(world.input_rows('l'))} rows exactly once")


@LAUNCHER_INDEPENDENT
def test_an_upgrade_without_input_in_its_window_is_not_rolled_back(real_world: World, tmp_path: Path) -> None:
    """The real engine's ``caughtUp`` (Spark's query status and source offsets) as the stability gate reads it:
    no input arrives during the window, the target commits nothing, every query is caught up, and the upgrade
    succeeds saying so; input that comes later is committed exactly once by the new engine.

    Local launcher only (three JVM starts and a 60 s window: 6-8 min under load): the gate reads the same status
    API through either launcher; the contract double's idle scenario runs on both."""
    world = real_world
    world.start_operator(stability={"minBatches": 2, "window": "60s"})
    root = tmp_path / "idle-root"
    first = _start(world, "idle", root)
    world.apply(world.job_manifest("idle", REAL_TARGET, storage=root))  # and no input from now on
    status = world.wait_status("idle", lambda s: (s.get("upgrade") or {}).get("step") in ("Succeeded", "RolledBack"),
                               "upgrade finished", timeout=JVM)
    upgrade = status["upgrade"]
    assert upgrade["step"] == "Succeeded", (upgrade, world.diagnosis("idle"))
    assert "idle: every query caught up, no input arrived in 60s" in upgrade["message"], upgrade["message"]
    assert status["engineVersion"] == REAL_TARGET and status["runId"] != first["runId"]
    world.add_input("idle", 2)
    world.assert_exactly_once("idle", timeout=JVM)
