"""The operator killed twice during one upgrade with the real engine, and a third operator finishes it.

``test_operator_restart.py`` kills the operator at every upgrade step against the contract double; this
test checks the two kill points where the real engine's behaviour matters, within ONE upgrade of the warm
standby protocol (Check -> Standby -> Stop -> Activate -> Stabilize), so the cost is two JVM starts: the old
engine's and the target's ``run --standby``, started before the stop:

1. right after the stop: ``POST /v1/stop`` returned (the real driver wrote its snapshot and exited) but the
   operator died before recording the result, so the status still says ``Stop``. The next operator must
   find that snapshot instead of taking another one or forking a checkpoint, and must reuse the waiting
   standby (it carries the operation's run id) instead of discarding it or starting a second one.
2. right after ``Activate``: ``POST /v1/start`` handed the standby the snapshot and the launcher made it the
   driver, but the operator died before recording it, so the status still says ``Activate``. The next
   operator must adopt that driver instead of starting it again, launching cold or starting a second run.

A third operator, without a hook, passes the stability gate. One check, one snapshot, two ``run``
invocations (the old driver, the target's standby; no cold launch), one run started in the target, and
every input row and every closed window in the output exactly once (the known engine loss of
``test_real_engine.py`` is an xfail with evidence).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path

import pytest

from tests.operator.e2e.harness import REAL_TARGET, World, wait_for
from tests.operator.e2e.test_real_engine import FEED_EVERY, JVM, _exactly_once_or_known_engine_loss, _runs, _start

pytestmark = pytest.mark.timeout(1200)


def parking_hook(kinds: set[str], parked: threading.Event):
    """Park the operator for good right after the first upgrade action of one of ``kinds`` ran, before
    ``advance`` records its result (the kill then lands exactly there)."""
    async def hook(original, reconciler, job, view, action):
        upgrading = view.status.operation is not None and view.status.operation.type == "Upgrade"
        result = await original(reconciler, job, view, action)
        if upgrading and action.kind in kinds and not parked.is_set():
            parked.set()
            await asyncio.Event().wait()  # killed here
        return result

    return hook


def _kill_when_parked(world: World, parked: threading.Event, step: str) -> dict:
    wait_for(parked.is_set, JVM, f"the operator parked after its {step} side effect")
    assert world.operator is not None
    world.operator.kill()
    return world.status("k")


def _alive(pid: int) -> bool:
    """A zombie is gone: the launcher saw it exit, and who reaps it (and when, on a loaded machine) is not the
    question (os.kill(pid, 0) alone answered True for an exited driver not yet reaped)."""
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("launcher", ["local"], indirect=True)  # reads the local launcher's records and pids;
def test_operator_killed_after_stop_and_after_activate(real_world: World, tmp_path: Path) -> None:  # k8s: contract
    world = real_world
    root = tmp_path / "root-k"
    root = world.storage_root(root)  # where this machine sees the job root (a claim directory on Kubernetes)
    standby_record = root / ".operator" / "standby.json"
    driver_record = root / ".operator" / "driver.json"
    after_stop = threading.Event()
    world.start_operator(execute_hook=parking_hook({"stop"}, after_stop))
    first = _start(world, "k", root)
    old_pid = json.loads(driver_record.read_text())["pid"]
    began = time.monotonic()
    with world.feeding("k", every=FEED_EVERY):
        world.apply(world.job_manifest("k", REAL_TARGET, storage=root))

        # 1. the standby was ready, then the old driver stopped with a snapshot; the operator dies before
        #    recording the stop
        at_kill = _kill_when_parked(world, after_stop, "stop")
        op = at_kill["operation"]
        assert op["step"] == "Stop" and op["standby"] == "ready" and at_kill["runId"] == first["runId"], op
        target_run = op["runId"]
        written = [p.name for p in (root / "snapshots").iterdir()]
        assert len(written) == 1, written  # the real driver wrote it before exiting
        assert not _alive(old_pid)
        runs = _runs(world, root, 2)
        assert [(r["engine"], r["runId"], r["fromSnapshot"]) for r in runs] == [
            ("0.1", first["runId"], None), (REAL_TARGET, target_run, None)]  # the standby: no snapshot yet
        standby = json.loads(standby_record.read_text())
        assert standby["runId"] == target_run and standby["pid"] == runs[1]["pid"] and _alive(standby["pid"])
        assert not (root / "runs" / target_run).exists()  # a standby writes nothing before its start

        # 2. a fresh operator finds that snapshot, keeps the standby and activates it; it dies before
        #    recording the activation
        after_activate = threading.Event()
        world.start_operator(execute_hook=parking_hook({"activate", "launch", "discard", "standby"},
                                                       after_activate))
        at_kill = _kill_when_parked(world, after_activate, "activate")
        op = at_kill["operation"]
        assert op["step"] == "Activate" and op["runId"] == target_run, op  # not a cold Launch, same run
        assert op["snapshot"] == written[0] and at_kill["runId"] == first["runId"]
        assert not standby_record.exists()  # promoted: the standby is the driver now
        assert json.loads(driver_record.read_text())["pid"] == standby["pid"] and _alive(standby["pid"])
        run_marker = json.loads((root / "runs" / target_run / "run.json").read_text())
        assert run_marker["fromSnapshot"] == written[0]

        # 3. a third operator adopts the running target and passes the stability gate
        world.start_operator()
        status = world.wait_status("k", lambda s: (s.get("upgrade") or {}).get("step") == "Succeeded",
                                   "upgrade Succeeded after two operator deaths", timeout=JVM)
    took = time.monotonic() - began
    assert status["engineVersion"] == REAL_TARGET and status["phase"] == "Running"
    assert status["runId"] == target_run  # the standby activated by the dead operator, not a new run
    assert status["driver"]["name"] == str(standby["pid"])
    assert status["upgrade"]["snapshot"] == written[0] and status["lastSnapshot"]["id"] == written[0]
    assert status["driver"]["baselineBatches"] > 0
    assert [c["engine"] for c in world.calls(root, "check")] == [REAL_TARGET]  # never repeated
    assert [p.name for p in (root / "snapshots").iterdir()] == written  # no second snapshot, no fork
    assert [(r["runId"], r["pid"]) for r in world.calls(root, "run")] == [
        (first["runId"], old_pid), (target_run, standby["pid"])]  # two JVM starts: no second standby, no cold
    assert sorted(p.name for p in (root / "runs").iterdir()) == sorted([first["runId"], target_run])
    assert json.loads((root / "runs" / target_run / "run.json").read_text()) == run_marker  # started once
    _exactly_once_or_known_engine_loss(world, "k", root, written[0], target_run)
    print(f"\nreal engine, operator killed after the stop and after Activate: upgrade Succeeded {took:.1f}s "
          f"after the edit; {len(world.input_rows('k'))} rows and {len(world.windows('k'))} windows exactly once")
