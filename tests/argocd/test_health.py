"""The Argo CD health check of SparkPlanJobs
(``charts/planengine-operator/argocd/resource_customizations/planengine.io/SparkPlanJob``),
run by a real Lua interpreter (lupa's embedded Lua 5.1, the language of Argo CD's gopher-lua, and Lua 5.4).

The cases are Argo CD's own test format (``health_test.yaml`` + ``testdata/``), so the directory can be
contributed upstream as it is; a second table feeds the script statuses written by the operator's real state
machine (pruned to the CRD), so the script reads the conditions and phases the operator actually writes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

lupa = pytest.importorskip("lupa", reason="lupa (Lua for Python) is a dev dependency: run make venv")

REPO = Path(__file__).resolve().parents[2]
ARGOCD = REPO / "charts" / "planengine-operator" / "argocd"
CHECK = ARGOCD / "resource_customizations" / "planengine.io" / "SparkPlanJob"
SCRIPT = (CHECK / "health.lua").read_text()
# Argo CD's health states a SparkPlanJob can be in. Not Missing: Argo CD reserves it for a resource that is not in the
# cluster, and the check only ever sees existing ones (a job waiting for its ConfigMap is Progressing).
ARGO_STATES = {"Healthy", "Progressing", "Degraded", "Suspended"}
RUNTIMES = ["lua51", "lua54"]


def health(obj: dict[str, Any], runtime: str = "lua51") -> dict[str, str]:
    """What Argo CD gets from the script: it sets the global ``obj`` and runs the script's chunk."""
    module = __import__(f"lupa.{runtime}", fromlist=["LuaRuntime"])
    lua = module.LuaRuntime(unpack_returned_tuples=True)
    lua.globals().obj = lua.table_from(obj, recursive=True)
    result = lua.execute(SCRIPT)
    return {"status": result["status"], "message": result["message"]}


def _cases() -> list[tuple[str, dict[str, str]]]:
    tests = yaml.safe_load((CHECK / "health_test.yaml").read_text())["tests"]
    return [(case["inputPath"], case["healthStatus"]) for case in tests]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize(("input_path", "expected"), _cases(), ids=[p for p, _ in _cases()])
def test_health_of_each_fixture(input_path: str, expected: dict[str, str], runtime: str) -> None:
    obj = yaml.safe_load((CHECK / input_path).read_text())
    assert health(obj, runtime) == expected


def test_the_fixtures_cover_every_health_state_and_a_generation_the_operator_has_not_seen() -> None:
    states = {expected["status"] for _, expected in _cases()}
    assert states == ARGO_STATES
    behind = [yaml.safe_load((CHECK / path).read_text()) for path, expected in _cases()
              if expected["status"] == "Progressing" and "generation" in expected["message"]]
    assert behind and all(o["metadata"]["generation"] > o["status"]["observedGeneration"] for o in behind)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_job_waiting_for_its_configmap_is_progressing_with_the_reason_never_missing(runtime: str) -> None:
    obj = yaml.safe_load((CHECK / "testdata" / "missing-configmap.yaml").read_text())
    verdict = health(obj, runtime)
    assert verdict["status"] == "Progressing" and "clicks-script does not exist" in verdict["message"]
    obj["status"]["conditions"] = [c for c in obj["status"]["conditions"] if c["type"] != "Degraded"] + [
        {"type": "Degraded", "status": "True", "reason": "MissingConfigMap"}]  # no message: the status's error
    assert health(obj, runtime)["message"] == obj["status"]["error"]
    every = [yaml.safe_load((CHECK / path).read_text()) for path, _ in _cases()]
    every += [o for _, o, _ in _operator_statuses()]
    assert "Missing" not in {health(o, runtime)["status"] for o in every}


def test_the_check_can_fail() -> None:
    """Guard: a broken status is judged differently, so the table above compares something."""
    obj = yaml.safe_load((CHECK / "testdata" / "running.yaml").read_text())
    assert health(obj)["status"] == "Healthy"
    obj["status"]["conditions"][0]["status"] = "False"  # Ready False
    assert health(obj)["status"] == "Progressing"


def test_the_argocd_cm_snippet_carries_the_script_verbatim() -> None:
    snippet = yaml.safe_load((ARGOCD / "argocd-cm.yaml").read_text())
    assert snippet["data"]["resource.customizations.health.planengine.io_SparkPlanJob"] == SCRIPT
    docs = (REPO / "docs" / "operator.md").read_text()
    assert "charts/planengine-operator/argocd/argocd-cm.yaml" in docs
    assert "resource.customizations.health.planengine.io_SparkPlanJob" in docs


# ------------------------------------------------------------------------------------------ the operator's statuses
def _operator_statuses() -> list[tuple[str, dict[str, Any], str]]:
    """(what, SparkPlanJob with a status the state machine wrote, expected health)."""
    from planengine_operator.statemachine import DriverObservation, Result, decide
    from tests.operator import test_statemachine as sm

    def job(status: dict[str, Any], generation: int = 2) -> dict[str, Any]:
        return {"metadata": {"name": "j", "generation": generation}, "spec": {}, "status": status}

    gone = DriverObservation.gone()
    starting, _ = sm.begin({}, observed=gone)
    running = sm.step(sm.step(sm.step(starting, "claim", Result(True)), "compile", Result(True, {"planId": "p"})),
                      "launch", Result(True, {"name": "1"}))
    alive = dataclasses.replace(sm.ALIVE, run_id=running["runId"])
    running = sm.apply(running, decide(sm.view(running), alive))
    upgrading, _ = sm.begin(running, sm.UPGRADE_SPEC, observed=alive)
    refused = sm.step(upgrading, "check", Result(True, {"verdict": "incompatible", "reason": "state layout"}),
                      sm.UPGRADE_SPEC, observed=alive)
    suspend_spec = {**sm.SPEC, "state": "suspended"}
    suspending, _ = sm.begin(running, suspend_spec, observed=alive)
    suspended = sm.step(suspending, "stop", Result(True, {"snapshot": "s1", "snapshotRef": {"id": "s1"}}),
                        suspend_spec, observed=alive)
    failed = sm.step(sm.step(starting, "claim", Result(True)), "compile",
                     Result(False, {"permanent": True}, "line 1: bad SQL", "CompileFailed"))
    missing = sm.step(sm.step(starting, "claim", Result(True)), "compile",
                      Result(False, {"permanent": True}, "ConfigMap ns/etl does not exist", "MissingConfigMap"))
    return [
        ("start requested", job(starting), "Progressing"),
        ("running", job(running), "Healthy"),
        ("a spec change the operator has not seen", job(running, generation=3), "Progressing"),
        ("upgrade in flight", job(upgrading), "Progressing"),
        ("upgrade refused", job(refused), "Degraded"),
        ("suspending", job(suspending), "Progressing"),
        ("suspended", job(suspended), "Suspended"),
        ("compile failed", job(failed), "Degraded"),
        ("script ConfigMap missing", job(missing), "Progressing"),
    ]


@pytest.mark.parametrize(("what", "obj", "expected"), _operator_statuses(), ids=lambda v: v if isinstance(v, str)
                         and " " in v else None)
def test_health_of_statuses_the_operator_writes(what: str, obj: dict[str, Any], expected: str) -> None:
    assert health(obj)["status"] == expected, (what, health(obj), obj["status"])
