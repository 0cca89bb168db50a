"""The operator dies at each step of an upgrade and a fresh one resumes from the status write-ahead log.

The kill is in-process: a hook around the reconciler's action executor parks the operator at the chosen
point and the test cancels every task of the operator's loop (no cleanup handler, no further status
write), then starts a new operator (new kopf, new launcher, new memo) on the same emulated cluster.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.operator.e2e.harness import engine_command, wait_for
from tests.operator.e2e.test_lifecycle import _running

pytestmark = pytest.mark.timeout(120)

# kill point -> (action kind, park before (False) or after (True) the side effect ran)
KILL_POINTS = {
    "after-check": ("stop", False),  # check done and recorded; the stop has not happened
    "after-stop-with-snapshot": ("stop", True),  # the old driver stopped with a snapshot; not recorded yet
    "after-start-of-new-engine": ("launch", True),  # the new driver runs; the status does not know yet
}


def parking_hook(kind: str, after: bool, parked: threading.Event):
    async def hook(original, reconciler, job, view, action):
        upgrading = view.status.operation is not None and view.status.operation.type == "Upgrade"
        if not upgrading or action.kind != kind or parked.is_set():
            return await original(reconciler, job, view, action)
        if not after:
            parked.set()
            await asyncio.Event().wait()  # killed here
        result = await original(reconciler, job, view, action)
        parked.set()
        await asyncio.Event().wait()  # killed here, before advance() records the result
        return result

    return hook


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_killed_operator_resumes_without_repeating_side_effects(world, point):
    kind, after = KILL_POINTS[point]
    parked = threading.Event()
    operator = world.start_operator(execute_hook=parking_hook(kind, after, parked))
    _running(world, "k")
    root = world.job_root("k")
    with world.feeding("k"):
        world.apply(world.job_manifest("k", "0.2"))
        wait_for(parked.is_set, 30, f"the operator parked at {point}")
        operator.kill()
        at_kill = world.status("k")
        assert at_kill["operation"]["step"] == {"stop": "Stop", "launch": "Launch"}[kind], at_kill["operation"]
        world.start_operator()  # a fresh operator: no hook, no memory
        status = world.wait_status("k", lambda s: (s.get("upgrade") or {}).get("step") == "Succeeded",
                                   "upgrade Succeeded after the restart", timeout=45)
    assert status["engineVersion"] == "0.2" and status["phase"] == "Running"
    assert len(world.calls(root, "check")) == 1  # the check is not repeated once recorded
    snapshots = world.calls(root, "wrote-snapshot")
    assert [s["snapshot"] for s in snapshots] == [status["upgrade"]["snapshot"]], snapshots  # one snapshot
    runs = world.calls(root, "run")
    assert [r["engine"] for r in runs] == ["0.1", "0.2"], runs  # one old driver, one new driver
    assert runs[1]["runId"] == status["runId"]
    assert status["driver"]["baselineBatches"] > 0
    world.assert_exactly_once("k")


def test_killed_during_a_stateless_rollback_resumes_without_state(world, contract_only):
    """Everything the rollback needs lives in status.operation (targetRunId, targetEngine, upgradeSnapshot,
    stateless, cause): a real API server prunes what the CRD does not declare, so a fresh operator must find
    all of it in the stored status. Here: a stateless upgrade to a target that dies; the operator is killed
    right after the rollback stopped the target; the next one must start the old engine stateless (no fork
    of the target's state, no check of it, no snapshot to start from), as the protocol says."""
    parked = threading.Event()

    async def hook(original, reconciler, job, view, action):
        result = await original(reconciler, job, view, action)
        op = view.status.operation
        if op is not None and op.step == "RollbackStop" and not parked.is_set():
            parked.set()
            await asyncio.Event().wait()  # killed here, before advance() records the stop
        return result

    engines = {"0.1": {"localCommand": engine_command("0.1")},
               "0.4": {"localCommand": [*engine_command("0.4"), "--crash-without-snapshot"]}}
    operator = world.start_operator(execute_hook=hook, engines=engines)
    _running(world, "s")
    root = world.job_root("s")
    with world.feeding("s"):
        world.apply(world.job_manifest("s", "0.4", upgradeMode="stateless"))
        wait_for(parked.is_set, 30, "the operator parked after the rollback's stop", lambda: world.status("s"))
        operator.kill()
        at_kill = world.status("s")["operation"]
        assert at_kill["step"] == "RollbackStop" and at_kill.get("stateless") is True, at_kill
        assert at_kill.get("targetEngine") == "0.4" and at_kill.get("targetRunId"), at_kill
        world.start_operator(engines=engines)
        status = world.wait_status("s", lambda s: s.get("phase") == "RolledBack", "phase RolledBack", timeout=45)
    assert status["engineVersion"] == "0.1" and "exited" in status["upgrade"]["message"], status["upgrade"]
    assert world.calls(root, "snapshot") == []  # the target's state was not forked
    assert [c["engine"] for c in world.calls(root, "check")] == ["0.4"]  # and not checked by the old engine
    runs = wait_for(lambda: (found := world.calls(root, "run")) and len(found) >= 3 and found, 10,
                    "the old engine's driver recorded its start", lambda: world.calls(root, "run"))
    assert [r["engine"] for r in runs] == ["0.1", "0.4", "0.1"], runs
    assert not runs[2].get("fromSnapshot"), runs[2]  # the old engine starts without state, like the target
