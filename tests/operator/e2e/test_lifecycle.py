"""Real kopf + the operator's handlers + the API emulator + local engine processes, driven by kubectl."""

from __future__ import annotations

import base64
import json

import pytest

from tests.operator.e2e.harness import LAUNCHER_INDEPENDENT, engine_command, wait_for

pytestmark = pytest.mark.timeout(120)


def test_create_runs_and_commits(world):
    world.add_input("j1", 3)
    world.start_operator()
    world.apply(world.job_manifest("j1", "0.1"))
    status = world.wait_status("j1", lambda s: s.get("phase") == "Running", "phase Running")
    assert status["engineVersion"] == "0.1" and status["runId"] and status["planId"]
    assert status["observedGeneration"] == world.job("j1")["metadata"]["generation"] == 1
    assert world.condition("j1", "Ready")["status"] == "True"
    world.assert_exactly_once("j1")
    configmap = world.api.get("", "configmaps", world.ns, "j1-plan")
    assert configmap is not None
    assert configmap["metadata"]["labels"]["planengine.io/plan-id"] == status["planId"][:63]  # label limit
    assert configmap["metadata"]["ownerReferences"][0]["uid"] == world.job("j1")["metadata"]["uid"]
    table = world.kubectl("get", "spj", "j1")
    assert "Running" in table and "0.1" in table and "True" in table, table
    print(table)
    world.wait_events("j1", "Started")


def _running(world, name, engine="0.1", rows=3):
    world.add_input(name, rows)
    world.apply(world.job_manifest(name, engine))
    status = world.wait_status(name, lambda s: s.get("phase") == "Running", "phase Running")
    wait_for(lambda: len(world.output(name)) >= 2 * rows, 20, f"{name}: first batches committed")
    return status


def _engine_sequence(world, name):
    """Engine version of each committed batch, in batch-id order (one file per batch)."""
    return [f.read_text().splitlines()[0].partition("\t")[2] for f in world.batch_files(name)]


def test_upgrade_hands_over_exactly_once(world):
    world.start_operator()
    first = _running(world, "j2")
    manifest = world.job_manifest("j2", "0.2")
    with world.feeding("j2"):
        world.apply(manifest)
        status = world.wait_status("j2", lambda s: (s.get("upgrade") or {}).get("step") == "Succeeded",
                                   "upgrade Succeeded", timeout=45)
    assert status["phase"] == "Running" and status["engineVersion"] == "0.2"
    assert status["runId"] != first["runId"] and status["observedGeneration"] == 2
    assert status["lastStableSpec"]["engineVersion"] == "0.2"
    upgrade = status["upgrade"]
    assert (upgrade["from"], upgrade["to"]) == ("0.1", "0.2") and upgrade["snapshot"]
    assert status["driver"]["baselineBatches"] > 0  # the gate counts only batches of the new run
    assert world.condition("j2", "UpgradeInProgress")["status"] == "False"
    assert world.condition("j2", "Ready")["status"] == "True"
    rows = world.assert_exactly_once("j2")
    sequence = _engine_sequence(world, "j2")
    assert sequence == sorted(sequence) and {"0.1", "0.2"} <= {e for _, e in rows}, sequence
    world.wait_events("j2", "UpgradeStarted", "UpgradeHandover", "UpgradeSucceeded")
    root = world.job_root("j2")
    assert len(world.calls(root, "check")) == 1
    snapshots = world.calls(root, "wrote-snapshot")
    assert [s["snapshot"] for s in snapshots] == [upgrade["snapshot"]]
    new_runs = [c for c in world.calls(root, "run") if c["engine"] == "0.2"]
    assert len(new_runs) == 1 and new_runs[0]["fromSnapshot"].endswith(upgrade["snapshot"])


def test_an_upgrade_without_input_in_its_window_is_not_rolled_back(world):
    """A source quiet during the stability window (a topic at night): the target commits nothing, every query
    is caught up, and that is healthy; the message says the gate saw an idle job. The stop of the old driver
    went through its token-protected API with the job's token, which no status, event or CR shows."""
    world.start_operator(stability={"minBatches": 3, "window": "8s"})
    first = _running(world, "quiet")
    committed = len(world.output("quiet"))
    world.apply(world.job_manifest("quiet", "0.2"))  # no input from now on
    status = world.wait_status("quiet", lambda s: (s.get("upgrade") or {}).get("step") in ("Succeeded", "RolledBack"),
                               "upgrade finished", timeout=90)
    upgrade = status["upgrade"]
    assert upgrade["step"] == "Succeeded", upgrade
    assert "idle: every query caught up, no input arrived in 8s" in upgrade["message"], upgrade["message"]
    assert status["phase"] == "Running" and status["engineVersion"] == "0.2" and status["runId"] != first["runId"]
    assert "RollingBack" not in world.event_reasons("quiet")
    assert len(world.output("quiet")) == committed
    world.add_input("quiet", 2)  # and it commits when input comes
    wait_for(lambda: len(world.output("quiet")) >= committed + 4, 20, "quiet: the new engine commits new input")
    world.assert_exactly_once("quiet")
    if world.launcher == "local":
        token_file = world.job_root("quiet") / ".operator" / "control-token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text().strip()
    else:
        secret = world.api.get("", "secrets", world.ns, "quiet-control-token")
        token = base64.b64decode(secret["data"]["token"]).decode()
    seen = json.dumps([world.job("quiet"), world.events("quiet")])
    assert len(token) >= 32 and token not in seen


def test_refused_target_keeps_the_old_job(world, contract_only):
    world.start_operator()
    first = _running(world, "j3")
    pid = first["driver"]["name"]
    with world.feeding("j3"):
        world.apply(world.job_manifest("j3", "0.3"))
        status = world.wait_status("j3", lambda s: (s.get("upgrade") or {}).get("step") == "Refused",
                                   "upgrade Refused")
        before = len(world.output("j3"))
        wait_for(lambda: len(world.output("j3")) > before + 4, 10, "j3 still committing after the refusal")
    assert status["phase"] == "Running" and status["engineVersion"] == "0.1"
    assert status["runId"] == first["runId"] and status["driver"]["name"] == pid
    assert "state layout changed" in status["error"]
    degraded = world.condition("j3", "Degraded")
    assert degraded["status"] == "True" and "state layout changed" in degraded["message"]
    refused = [e for e in world.events("j3") if e["reason"] == "UpgradeRefused"]
    assert refused and refused[0]["type"] == "Warning" and "state layout changed" in refused[0]["message"]
    root = world.job_root("j3")
    assert world.calls(root, "wrote-snapshot") == [] and len(world.calls(root, "run")) == 1
    world.assert_exactly_once("j3")
    assert (world.status("j3").get("upgrade") or {}).get("step") == "Refused"  # not retried


def _upgrade_rolls_back(world, name, engine):
    """Upgrade ``name`` to ``engine`` while input keeps arriving; wait for RolledBack and for the old engine to
    commit again. Returns the status."""
    with world.feeding(name):
        world.apply(world.job_manifest(name, engine))
        status = world.wait_status(name, lambda s: s.get("phase") == "RolledBack", "phase RolledBack", timeout=45)
        before = len(world.output(name))
        wait_for(lambda: len(world.output(name)) > before + 4, 10, f"{name} committing after the rollback")
    return status


def test_crashing_target_rolls_back_from_the_targets_state(world, contract_only):
    """0.4 commits a batch past the upgrade snapshot, then dies: the rollback forks the target's newest
    checkpoint (with the target's CLI), the old engine's check accepts it, and 0.1 resumes from it."""
    world.start_operator()
    first = _running(world, "j4")
    status = _upgrade_rolls_back(world, "j4", "0.4")
    assert status["engineVersion"] == "0.1" and status["runId"] != first["runId"]
    upgrade = status["upgrade"]
    assert upgrade["step"] == "RolledBack" and "exited" in upgrade["message"], upgrade
    degraded = world.condition("j4", "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "RolledBack"
    world.wait_events("j4", "RolledBack")
    root = world.job_root("j4")
    runs = world.calls(root, "run")
    assert [r["engine"] for r in runs] == ["0.1", "0.4", "0.1"], runs
    snapshots = world.calls(root, "wrote-snapshot")
    assert [(s["engine"], s["runId"]) for s in snapshots] == [("0.1", first["runId"]), ("0.4", runs[1]["runId"])]
    assert runs[1]["fromSnapshot"].endswith(snapshots[0]["snapshot"])  # the upgrade snapshot S
    assert upgrade["snapshot"] == snapshots[1]["snapshot"] and runs[2]["fromSnapshot"].endswith(upgrade["snapshot"])
    assert [c["engine"] for c in world.calls(root, "check")] == ["0.4", "0.1"]  # 0.1 checked the target's state
    assert any(s["id"] == upgrade["snapshot"] for s in status["snapshots"])
    world.assert_exactly_once("j4")
    assert world.status("j4")["phase"] == "RolledBack"  # the rolled-back target is not retried


def _plan_in_force(world, name):
    return json.loads((world.job_root(name) / "plan.json").read_text())


def test_an_upgrade_that_migrates_the_plan_makes_it_the_plan_in_force(world, contract_only):
    """0.6's check says the plan needs migration: the operator migrates it into the new run, which starts from
    the upgrade snapshot with it (the double refuses any other plan than the engine would) and makes it the job
    root's plan in force, so later runs and snapshots name the plan that wrote their state."""
    world.start_operator()
    _running(world, "j10")
    old_plan = _plan_in_force(world, "j10")
    with world.feeding("j10"):
        world.apply(world.job_manifest("j10", "0.6"))
        status = world.wait_status("j10", lambda s: (s.get("upgrade") or {}).get("step") == "Succeeded",
                                   "upgrade Succeeded", timeout=45)
    assert status["engineVersion"] == "0.6"
    in_force = _plan_in_force(world, "j10")
    assert in_force["planId"] != old_plan["planId"] and in_force["config"]["migratedFrom"] == "0.1"
    # Published after the gate: status.planId and the <job>-plan ConfigMap name the plan that runs.
    assert status["planId"] == in_force["planId"] and "is the plan in force" in status["upgrade"]["message"]
    configmap = json.loads(world.kubectl("get", "configmap", "j10-plan", "-o", "json"))
    assert json.loads(configmap["data"]["plan.json"])["planId"] == in_force["planId"]
    root = world.job_root("j10")
    runs = world.calls(root, "run")
    assert [r["engine"] for r in runs] == ["0.1", "0.6"] and runs[1]["fromSnapshot"].endswith(
        status["upgrade"]["snapshot"])
    assert [c["engine"] for c in world.calls(root, "migrate")] == ["0.6"]
    world.assert_exactly_once("j10")


def test_a_migrated_upgrade_rolls_back_with_the_plan_of_the_state_it_resumes(world, contract_only):
    """0.7 migrates the plan, commits a batch past the upgrade snapshot and dies: the rollback resumes the old
    engine from the target's state with the plan that wrote it (the fork's plan.json, the migrated one), which
    the old engine's check accepted; nothing is lost or committed twice."""
    world.start_operator()
    _running(world, "j11")
    status = _upgrade_rolls_back(world, "j11", "0.7")
    root = world.job_root("j11")
    runs = world.calls(root, "run")
    assert [r["engine"] for r in runs] == ["0.1", "0.7", "0.1"], runs
    assert runs[2]["fromSnapshot"].endswith(status["upgrade"]["snapshot"])  # the target's state, not S
    assert _plan_in_force(world, "j11")["config"]["migratedFrom"] == "0.1"
    world.assert_exactly_once("j11")


def _all_pending_engines(old_knobs=(), target_knobs=()):
    """Engines whose batch takes every pending file (Spark's file source): re-planning a batch id that a
    sink already committed sees other input, so the old protocol (restart the old engine from S) loses rows."""
    return {"0.1": {"localCommand": [*engine_command("0.1"), "--files-per-batch", "all", *old_knobs]},
            "0.4": {"localCommand": [*engine_command("0.4"), "--files-per-batch", "all", *target_knobs]}}


def test_rollback_after_the_target_committed_output_is_exactly_once(world, contract_only):
    """The double plans like Spark (all pending files per batch). 0.4 commits batch N+1 with the files it
    saw, then dies; input keeps arriving. Restarting 0.1 from S would re-plan N+1 with more files and the
    sink would skip it (rows lost); resuming from the target's state continues at N+2, exactly once."""
    world.start_operator(engines=_all_pending_engines())
    _running(world, "j8")
    status = _upgrade_rolls_back(world, "j8", "0.4")
    rows = world.assert_exactly_once("j8")
    root = world.job_root("j8")
    runs = world.calls(root, "run")
    assert [r["engine"] for r in runs] == ["0.1", "0.4", "0.1"], runs
    assert runs[2]["fromSnapshot"].endswith(status["upgrade"]["snapshot"])
    assert runs[2]["fromSnapshot"] != runs[1]["fromSnapshot"]  # not the upgrade snapshot S
    assert {"0.1", "0.4"} <= {engine for _, engine in rows}  # the target's committed output is kept
    sequence = _engine_sequence(world, "j8")
    assert sequence.count("0.4") == 1 and sequence[sequence.index("0.4") + 1:] and set(
        sequence[sequence.index("0.4") + 1:]) == {"0.1"}, sequence  # 0.1 continued after the target's batch


def test_rollback_is_blocked_when_the_old_engine_cannot_read_the_targets_state(world, contract_only):
    """0.1's ``check --snapshot`` refuses the target's state: nothing is started, Failed/RollbackBlocked."""
    world.start_operator(engines=_all_pending_engines(old_knobs=["--check-snapshot-exit", "4"]))
    _running(world, "j9")
    with world.feeding("j9"):
        world.apply(world.job_manifest("j9", "0.4"))
        status = world.wait_status("j9", lambda s: s.get("phase") == "Failed", "phase Failed", timeout=45)
    assert status["upgrade"]["step"] == "Failed" and "operation" not in status
    degraded = world.condition("j9", "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "RollbackBlocked"
    for words in ("committed output past the upgrade snapshot", "lose or duplicate", "state layout changed",
                  "spec.engineVersion", "stateless"):
        assert words in status["error"], (words, status["error"])
    world.wait_events("j9", "RollbackBlocked")
    root = world.job_root("j9")
    assert [r["engine"] for r in world.calls(root, "run")] == ["0.1", "0.4"]  # the old engine was not started
    assert [c["engine"] for c in world.calls(root, "check")] == ["0.4", "0.1"]
    committed = len(world.output("j9"))
    with pytest.raises(AssertionError):  # no driver writes any more
        wait_for(lambda: len(world.output("j9")) > committed, 1.5, "no output after the blocked rollback")
    got = sorted(r for r, _ in world.output("j9"))
    assert len(got) == len(set(got)) and set(got) <= set(world.input_rows("j9"))
    assert world.status("j9")["phase"] == "Failed"  # not retried until the spec changes


@LAUNCHER_INDEPENDENT
def test_second_job_on_the_same_root_is_refused(world, tmp_path):
    """Launcher-independent, so it runs once (local launcher): one writer per root is the Lease the reconciler takes
    through the API for either launcher."""
    shared = tmp_path / "shared-root"
    world.add_input("a", 3)
    world.start_operator()
    world.apply(world.job_manifest("a", "0.1", storage=shared))
    first = world.wait_status("a", lambda s: s.get("phase") == "Running", "a Running")
    world.apply(world.job_manifest("b", "0.1", storage=shared))
    status = world.wait_status("b", lambda s: s.get("phase") == "Failed", "b Failed")
    assert f"already used by {world.ns}/a" in status["error"]
    assert world.condition("b", "Degraded")["reason"] == "JobRootInUse"
    world.wait_events("b", "JobRootInUse")
    assert not status.get("runId")
    with world.feeding("a"):
        before = len(world.output("a"))
        wait_for(lambda: len(world.output("a")) > before + 4, 10, "a still committing")
    assert world.status("a")["runId"] == first["runId"]
    root = world.storage_root(shared)
    assert len(world.calls(root, "run")) == 1 and len(world.calls(root, "compile")) == 1
    world.assert_exactly_once("a")


def test_suspend_and_resume_from_the_snapshot(world):
    world.start_operator()
    first = _running(world, "j7")
    with world.feeding("j7"):
        world.apply(world.job_manifest("j7", "0.1", state="suspended"))
        status = world.wait_status("j7", lambda s: s.get("phase") == "Suspended", "phase Suspended")
    snapshot = status["lastSnapshot"]["id"]
    assert status["lastSnapshot"]["reason"] == "suspend" and not status.get("driver")
    assert world.condition("j7", "Ready")["status"] == "False"
    world.wait_events("j7", "Suspended")
    committed = len(world.output("j7"))
    world.add_input("j7", 2)
    with pytest.raises(AssertionError):  # nothing runs while suspended
        wait_for(lambda: len(world.output("j7")) > committed, 1.0, "no output while suspended")
    world.apply(world.job_manifest("j7", "0.1", state="running"))
    resumed = world.wait_status("j7", lambda s: s.get("phase") == "Running", "phase Running again")
    assert resumed["runId"] not in (first["runId"], None)
    runs = wait_for(lambda: world.calls(world.job_root("j7"), "run")[1:], 10, "the resumed driver's start")
    assert len(runs) == 1 and runs[0]["fromSnapshot"].endswith(snapshot)
    world.assert_exactly_once("j7")


def _owned_objects(world, uid: str) -> list[str]:
    """kind/name of every object in the namespace owned by ``uid``, or by a pod it owns."""
    found, owners = [], {uid}
    for plural in ("pods", "services", "configmaps", "secrets", "leases"):
        group = "coordination.k8s.io" if plural == "leases" else ""
        for obj in world.api.list(group, plural, world.ns):
            refs = {ref["uid"] for ref in obj["metadata"].get("ownerReferences") or []}
            if refs & owners:
                found.append(f"{plural}/{obj['metadata']['name']}")
                if plural == "pods":
                    owners.add(obj["metadata"]["uid"])
    return sorted(found)


def test_delete_collects_everything_the_job_owns(world):
    """kubectl delete spj: the operator stops the driver (its finalizer), then owner references take the rest:
    the plan ConfigMap and the Lease, and on Kubernetes the driver pod, its Service, the job's Service, the
    executor template and the control-token Secret, deleted by the garbage collector after the job is gone
    (as on a cluster)."""
    world.start_operator()
    first = _running(world, "gone")
    uid = world.job("gone")["metadata"]["uid"]
    owned = _owned_objects(world, uid)
    expected = {"configmaps/gone-plan", "leases/" + world.api.list("coordination.k8s.io", "leases", world.ns)[0][
        "metadata"]["name"]}
    if world.launcher == "kubernetes":
        pod = first["driver"]["name"]
        expected |= {f"pods/{pod}", f"services/{pod}", "services/gone-driver", "configmaps/gone-executor",
                     "secrets/gone-control-token"}
    assert expected <= set(owned), owned
    world.kubectl("delete", "sparkplanjob", "gone", "--wait=false")
    wait_for(lambda: world.api.get("planengine.io", "sparkplanjobs", world.ns, "gone") is None, 90,
             "the SparkPlanJob gone (its finalizer released)")  # kopf stops the timer first: once 30+ s under load
    wait_for(lambda: not _owned_objects(world, uid), 30, "every owned object collected",
             lambda: _owned_objects(world, uid))
    committed = len(world.output("gone"))
    world.add_input("gone", 2)
    with pytest.raises(AssertionError):  # no driver is left behind
        wait_for(lambda: len(world.output("gone")) > committed, 1.5, "no output after the delete")
    if world.launcher == "kubernetes":
        assert world.kubelet.process(world.ns, pod) is None
