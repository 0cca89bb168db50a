"""GitOps end to end (real kopf, the API emulator, the contract double, kubectl): what a GitOps tool changes.

* ``kubectl get spj`` shows the desired and the running engine and the upgrade step (printer columns).
* Editing the *content* of a ``plan.configMapRef`` script (``kubectl apply`` of the ConfigMap; the SparkPlanJob
  is untouched) is a program change: refused under ``upgradeMode: snapshot`` (the old run keeps committing and
  stays supervised, the job says why), compiled again under ``stateless``.
* ``spec.initialSnapshot`` starts a new job from another job's snapshot, which stays byte for byte unchanged.
* ``spec.snapshots`` gives one job its own periodic snapshots and retention while the operator's default has none.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.operator.e2e.harness import KUBECTL, LAUNCHER_INDEPENDENT, World, wait_for
from tests.operator.e2e.test_lifecycle import _running

pytestmark = pytest.mark.timeout(150)


def _table(world: World, *args: str) -> list[dict[str, str]]:
    """``kubectl get spj`` as a list of {column: cell}: the columns kubectl prints from the CRD."""
    lines = world.kubectl("get", "spj", *args).splitlines()
    header = lines[0]
    # kubectl pads columns with at least three spaces; a header may hold one ("LAST SNAPSHOT").
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[max(0, i - 2):i] == "  ")]
    names = [header[s:e].strip() for s, e in zip(starts, [*starts[1:], None])]
    return [{n: line[s:e].strip() for n, s, e in zip(names, starts, [*starts[1:], None])} for line in lines[1:]]


def _apply_fails(world: World, manifest: dict[str, Any]) -> str:
    path = world.tmp / f"{manifest['metadata']['name']}-refused.yaml"
    path.write_text(yaml.safe_dump(manifest))
    run = subprocess.run([str(KUBECTL), "--kubeconfig", str(world.kubeconfig), "--cache-dir",
                          str(world.tmp / "kube-cache"), "apply", "--validate=false", "-f", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0, run.stdout
    return run.stderr


# ---------------------------------------------------------------------------------------------- kubectl get spj
@LAUNCHER_INDEPENDENT
def test_kubectl_get_shows_desired_and_running_engine_and_the_upgrade_step(world: World) -> None:
    """Launcher-independent, so it runs once (local launcher): the columns are the CRD's printer columns over the
    status (upgrades on both launchers: test_lifecycle)."""
    world.start_operator()
    _running(world, "g1")
    (row,) = _table(world, "g1")
    assert (row["NAME"], row["DESIRED"], row["RUNNING"], row["PHASE"], row["UPGRADE"], row["READY"]) == (
        "g1", "0.1", "0.1", "Running", "", "True"), row
    assert "LAST SNAPSHOT" not in row  # priority 1: only with -o wide
    world.apply(world.job_manifest("g1", "0.3"))  # refused by the target's check
    world.wait_status("g1", lambda s: (s.get("upgrade") or {}).get("step") == "Refused", "upgrade Refused")
    (row,) = _table(world, "g1")
    assert (row["DESIRED"], row["RUNNING"], row["PHASE"], row["UPGRADE"]) == ("0.3", "0.1", "Running", "Refused")
    with world.feeding("g1"):
        world.apply(world.job_manifest("g1", "0.2"))
        world.wait_status("g1", lambda s: (s.get("upgrade") or {}).get("step") == "Succeeded", "upgrade Succeeded",
                          timeout=45)
    (row,) = _table(world, "g1", "-o", "wide")
    assert (row["DESIRED"], row["RUNNING"], row["UPGRADE"]) == ("0.2", "0.2", "Succeeded"), row
    assert row["LAST SNAPSHOT"] == world.status("g1")["lastSnapshot"]["id"]
    # Every upgrade step the operator stored was visible in the column, in protocol order.
    steps = [obj["status"]["upgrade"]["step"] for obj in world.writes() if (obj.get("status") or {}).get("upgrade")]
    seen = list(dict.fromkeys(steps))
    assert seen[:2] == ["Check", "Refused"] and seen[-1] == "Succeeded" and "Stabilize" in seen, seen


# ---------------------------------------------------------------------------------------------- script ConfigMaps
def _script_configmap(world: World, name: str, script: str) -> None:
    world.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": world.ns},
                 "data": {"script.sql": script}})


def _configmap_job(world: World, name: str, **spec: Any) -> dict[str, Any]:
    manifest = world.job_manifest(name, "0.1", **spec)
    manifest["spec"]["plan"] = {"configMapRef": {"name": f"{name}-script"}}
    return manifest


@LAUNCHER_INDEPENDENT
def test_an_edited_script_configmap_is_refused_and_the_old_run_keeps_going(world: World) -> None:
    """Launcher-independent, so it runs once (local launcher): the sourceHash comparison and the refusal are status
    rules; nothing is launched."""
    world.start_operator()
    world.add_input("c1", 3)
    _script_configmap(world, "c1-script", world.sql(world.source("c1"), world.sink("c1")))
    world.apply(_configmap_job(world, "c1"))
    first = world.wait_status("c1", lambda s: s.get("phase") == "Running", "phase Running")
    assert first["sourceHash"]
    root = world.job_root("c1")
    with world.feeding("c1"):
        other_sink = world.tmp / "data" / "c1" / "elsewhere"
        _script_configmap(world, "c1-script", world.sql(world.source("c1"), other_sink))  # the job is untouched
        status = world.wait_status("c1", lambda s: s.get("error"), "the edit reported on the job")
        assert "c1-script/script.sql" in status["error"] and first["sourceHash"] in status["error"]
        assert "upgradeMode: stateless" in status["error"]
        degraded = world.condition("c1", "Degraded")
        assert (degraded["status"], degraded["reason"]) == ("True", "PlanChangeRefused")
        wait_for(lambda: "PlanChangeRefused" in world.event_reasons("c1"), 10, "a PlanChangeRefused event")
        before = len(world.output("c1"))
        wait_for(lambda: len(world.output("c1")) > before + 4, 10, "the old run still committing")
    status = world.status("c1")
    assert status["runId"] == first["runId"] and status["sourceHash"] == first["sourceHash"]
    assert len(world.calls(root, "compile")) == 1 and not other_sink.exists()
    assert world.job("c1")["metadata"]["generation"] == 1  # no spec change: the content was detected
    # The previous content back: the job is healthy again.
    _script_configmap(world, "c1-script", world.sql(world.source("c1"), world.sink("c1")))
    world.wait_status("c1", lambda s: not s.get("error"), "the error cleared")
    wait_for(lambda: world.condition("c1", "Degraded").get("status") == "False", 10, "Degraded False")
    world.assert_exactly_once("c1")


def test_an_edited_script_configmap_under_stateless_is_compiled_again(world: World) -> None:
    world.start_operator()
    world.add_input("c2", 3)
    _script_configmap(world, "c2-script", world.sql(world.source("c2"), world.sink("c2")))
    world.apply(_configmap_job(world, "c2", upgradeMode="stateless"))
    first = world.wait_status("c2", lambda s: s.get("phase") == "Running", "phase Running")
    wait_for(lambda: len(world.output("c2")) >= 6, 20, "c2: first batches committed")
    new_sink = world.tmp / "data" / "c2" / "v2"
    _script_configmap(world, "c2-script", world.sql(world.source("c2"), new_sink))
    # The run of the recompiled program: its sourceHash is the edited text's (a restart of the first program in
    # between, should one happen, is a new run too but keeps the old hash).
    status = world.wait_status("c2", lambda s: s.get("phase") == "Running" and s.get("runId") != first["runId"]
                               and s.get("sourceHash") != first["sourceHash"], "a new run of the recompiled program")
    root = world.job_root("c2")
    assert status["planId"] != first["planId"], world.diagnosis("c2")
    assert len(world.calls(root, "compile")) == 2
    plan = json.loads((root / "plan.json").read_text())
    assert plan["nodes"][0]["configuration"]["sink"] == str(world.pod_path(new_sink))
    new_run = wait_for(lambda: [c for c in world.calls(root, "run") if c["runId"] == status["runId"]], 10,
                       "the new driver's start", lambda: world.calls(root, "run"))
    assert len(new_run) == 1 and new_run[0]["fromSnapshot"] is None  # stateless: empty state
    world.add_input("c2", 2)
    wait_for(lambda: len(list(new_sink.glob("batch-*.txt"))) >= 1, 20, "output of the new program")
    assert not status.get("error")


# ---------------------------------------------------------------------------------------------- initial snapshot
def _tree_digest(directory: Path) -> dict[str, tuple[str, float]]:
    """Every file under ``directory``: content digest and mtime (an unchanged snapshot keeps both)."""
    return {str(p.relative_to(directory)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime)
            for p in sorted(directory.rglob("*")) if p.is_file()}


def test_a_new_job_starts_from_another_jobs_snapshot_which_stays_untouched(world: World) -> None:
    world.start_operator()
    _running(world, "src", rows=4)
    manifest = world.job_manifest("src", "0.1", snapshotNonce=1)
    world.apply(manifest)
    status = world.wait_status("src", lambda s: s.get("snapshotNonce") == 1, "the manual snapshot")
    snapshot = world.job_root("src") / "snapshots" / status["lastSnapshot"]["id"]
    before = _tree_digest(snapshot)
    assert "manifest.json" in before
    committed = json.loads((snapshot / "checkpoints" / "1_contract-copy-1_copy" / "commit.json").read_text())
    taken = set(committed["files"])
    assert taken  # the snapshot holds state: the files the source job already copied

    # The new job reads the same input into its own sink; it must continue from the snapshot's state.
    dst = world.job_manifest("dst", "0.1")
    dst["spec"]["plan"]["sql"] = world.sql(world.source("src"), world.sink("dst"))
    dst["spec"]["initialSnapshot"] = {"uri": f"file://{world.pod_path(snapshot)}"}
    world.apply(dst)
    running = world.wait_status("dst", lambda s: s.get("phase") == "Running", "dst Running")
    root = world.job_root("dst")
    (check,) = world.calls(root, "check")
    (run,) = wait_for(lambda: world.calls(root, "run"), 10, "dst's driver start")
    assert run["fromSnapshot"] == str(world.pod_path(snapshot)) and run["runId"] == running["runId"]
    assert any("from initial snapshot" in e["message"] for e in world.events("dst") if e["reason"] == "Started")
    world.add_input("src", 2)
    pending = sorted(p.name for p in world.source("src").glob("*.txt") if p.name not in taken)
    expected = sorted(line for name in pending for line in (world.source("src") / name).read_text().splitlines())
    wait_for(lambda: len(world.output("dst")) >= len(expected), 20, "dst copied what the snapshot had not")
    assert sorted(r for r, _ in world.output("dst")) == expected  # nothing the source job had already done
    assert _tree_digest(snapshot) == before  # forked, never written
    assert check["engine"] == "0.1"

    # Added to a running job, or changed: the API server refuses (read only at the first start).
    later = world.job_manifest("src", "0.1", snapshotNonce=1)
    later["spec"]["initialSnapshot"] = {"uri": str(snapshot)}
    assert "spec.initialSnapshot is read only when the job starts" in _apply_fails(world, later)
    relative = world.job_manifest("rel", "0.1")
    relative["spec"]["initialSnapshot"] = {"uri": "snapshots/s1"}
    assert "initialSnapshot.uri must be an absolute path" in _apply_fails(world, relative)


def test_an_initial_snapshot_that_does_not_exist_fails_the_start_with_the_reason(world: World) -> None:
    world.start_operator()
    missing = world.tmp / "nowhere" / "snapshots" / "s0"
    manifest = world.job_manifest("lost", "0.1")
    manifest["spec"]["initialSnapshot"] = {"uri": str(missing)}
    world.apply(manifest)
    status = world.wait_status("lost", lambda s: s.get("phase") == "Failed", "phase Failed")
    assert str(missing) in status["error"] and "no manifest.json" in status["error"]
    degraded = world.condition("lost", "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "InitialSnapshotIncompatible")
    assert world.calls(world.job_root("lost"), "run") == []  # nothing started


# ---------------------------------------------------------------------------------------------- per-job snapshots
def test_a_job_has_its_own_snapshot_schedule_and_retention(world: World) -> None:
    world.start_operator()  # the operator's default: no periodic snapshots, maxCount 10
    _running(world, "own")
    _running(world, "plain")
    world.apply(world.job_manifest("own", "0.1", snapshots={"interval": "1s", "maxCount": 2}))
    root = world.job_root("own")
    with world.feeding("own"):
        wait_for(lambda: len(world.calls(root, "wrote-snapshot")) >= 5, 60, "five periodic snapshots of own",
                 lambda: world.calls(root, "wrote-snapshot"))
    ids = wait_for(lambda: (lambda s: s if len(s) == 2 and set(s) == {p.name for p in (root / "snapshots").iterdir()}
                            else None)([s["id"] for s in world.status("own").get("snapshots") or []]),
                   10, "own: two snapshots, in status and on disk")
    written = [c["snapshot"] for c in world.calls(root, "wrote-snapshot")]
    assert ids == [s for s in written if s in ids] and set(written[:3]).isdisjoint(ids)  # oldest deleted
    assert all(s["reason"] == "periodic" for s in world.status("own")["snapshots"])
    assert world.calls(world.job_root("plain"), "wrote-snapshot") == []  # the default has no schedule


@LAUNCHER_INDEPENDENT
def test_a_job_applied_before_its_script_configmap_waits_for_it(world: World) -> None:
    """Launcher-independent, so it runs once (local launcher): the operator reads the ConfigMap from the API before any
    tool runs."""
    world.start_operator()
    world.add_input("early", 2)
    world.apply(_configmap_job(world, "early"))
    # judged on the status it returns: a second read (world.condition) could see the patch the first one missed
    status = world.wait_status("early", lambda s: any(c["type"] == "Degraded" and c.get("reason") == "MissingConfigMap"
                                                      for c in s.get("conditions") or []), "Degraded MissingConfigMap")
    assert status["phase"] == "Pending" and status["operation"]["step"] == "Compile"
    assert "early-script" in status["error"]
    _script_configmap(world, "early-script", world.sql(world.source("early"), world.sink("early")))
    world.wait_status("early", lambda s: s.get("phase") == "Running", "phase Running once the ConfigMap exists")
    world.assert_exactly_once("early")
    assert world.event_reasons("early").count("MissingConfigMap") == 1


# ---------------------------------------------------------------------------------------------- the jobs chart
HELM = Path(__file__).resolve().parents[3] / ".tools" / "bin" / "helm"
JOBS_CHART = Path(__file__).resolve().parents[3] / "charts" / "planengine-jobs"


def _helm_apply(world: World, values: dict[str, Any]) -> None:
    """``helm template`` the jobs chart and ``kubectl apply`` the result, as a GitOps tool syncs it."""
    values_file = world.tmp / "jobs-values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    rendered = subprocess.run([str(HELM), "template", "gitops", str(JOBS_CHART), "--namespace", world.ns, "--values",
                               str(values_file)], capture_output=True, text=True, timeout=60)
    assert rendered.returncode == 0, rendered.stderr
    path = world.tmp / "rendered.yaml"
    path.write_text(rendered.stdout)
    world.kubectl("apply", "--validate=false", "-f", str(path))


def _chart_job(world: World, name: str) -> dict[str, Any]:
    """The jobs chart's values entry of job ``name``: its script over the world's data as the job's pods see it
    and, under the Kubernetes launcher, the claim and data mount that world.job_manifest gives a job."""
    spec = {k: v for k, v in world.job_manifest(name)["spec"].items() if k not in ("plan", "engineVersion")}
    return {"script": world.sql(world.source(name), world.sink(name)), **({"spec": spec} if spec else {})}


@LAUNCHER_INDEPENDENT
def test_jobs_rendered_by_the_chart_run_and_a_script_edit_in_values_is_detected(world: World) -> None:
    """Launcher-independent, so it runs once (local launcher): what is tested is the chart's rendering and the
    sourceHash; the start path is the ordinary one (both launchers: test_lifecycle)."""
    if not HELM.exists():
        pytest.skip(f"{HELM} is missing: run `bash tests/setup/prepare.sh`")
    world.start_operator()
    world.add_input("charted", 3)
    values = {"jobDefaults": {"engineVersion": "0.1"}, "jobs": {"charted": _chart_job(world, "charted")}}
    _helm_apply(world, values)
    first = world.wait_status("charted", lambda s: s.get("phase") == "Running", "phase Running")
    assert world.job("charted")["spec"]["plan"] == {"configMapRef": {"name": "charted-sql", "key": "script.sql"}}
    world.assert_exactly_once("charted")
    values["jobs"]["charted"]["script"] = world.sql(world.source("charted"), world.tmp / "data" / "elsewhere")
    _helm_apply(world, values)  # only the ConfigMap changes
    status = world.wait_status("charted", lambda s: s.get("error"), "the script edit reported")
    assert "charted-sql/script.sql" in status["error"] and status["runId"] == first["runId"]
    assert world.job("charted")["metadata"]["generation"] == 1


@LAUNCHER_INDEPENDENT
def test_a_values_edit_of_the_engine_upgrades_and_the_argocd_health_follows(world: World) -> None:
    """The GitOps loop for an upgrade: one field edited in values, ``helm template | kubectl apply``, and Argo CD's
    health (the real ``health.lua`` in Lua 5.1 on the live object) goes Healthy -> Progressing -> Healthy, and
    Degraded for a target the check refuses, while the rows stay exactly once.

    Launcher-independent, so it runs once (local launcher): health.lua reads the status; the upgrade itself runs on
    both launchers in test_lifecycle.
    """
    if not HELM.exists():
        pytest.skip(f"{HELM} is missing: run `bash tests/setup/prepare.sh`")
    pytest.importorskip("lupa", reason="lupa (Lua for Python) is a dev dependency: run make venv")
    from tests.argocd.test_health import health

    def argo(name: str) -> dict[str, str]:
        return health(json.loads(world.kubectl("get", "spj", name, "-o", "json")))

    world.start_operator()
    world.add_input("synced", 3)
    values = {"jobDefaults": {"engineVersion": "0.1"}, "jobs": {"synced": _chart_job(world, "synced")}}
    _helm_apply(world, values)
    first = world.wait_status("synced", lambda s: s.get("phase") == "Running", "phase Running")
    world.assert_exactly_once("synced")
    wait_for(lambda: argo("synced")["status"] == "Healthy", 30, "Healthy", lambda: argo("synced"))

    values["jobDefaults"]["engineVersion"] = "0.2"
    seen: list[str] = []
    with world.feeding("synced"):
        _helm_apply(world, values)
        assert world.job("synced")["metadata"]["generation"] == 2  # the SparkPlanJob changed, in one field
        assert world.job("synced")["spec"]["engineVersion"] == "0.2"

        def upgraded() -> bool:
            seen.append(health(world.job("synced"))["status"])
            return (world.status("synced").get("upgrade") or {}).get("step") == "Succeeded"

        wait_for(upgraded, 45, "upgrade Succeeded", lambda: world.status("synced"), interval=0.05)
    status = world.status("synced")
    assert status["engineVersion"] == "0.2" and status["runId"] != first["runId"]
    assert "Progressing" in seen and "Degraded" not in seen, seen
    wait_for(lambda: argo("synced")["status"] == "Healthy", 30, "Healthy after the upgrade", lambda: argo("synced"))
    world.assert_exactly_once("synced")

    values["jobDefaults"]["engineVersion"] = "0.3"  # the contract engine 0.3 refuses the state
    _helm_apply(world, values)
    world.wait_status("synced", lambda s: (s.get("upgrade") or {}).get("step") == "Refused", "upgrade Refused")
    verdict = argo("synced")
    assert verdict["status"] == "Degraded" and verdict["message"], verdict
    assert world.status("synced")["engineVersion"] == "0.2"
