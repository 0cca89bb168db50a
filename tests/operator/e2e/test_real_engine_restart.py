"""The operator killed twice during one upgrade with the real engine, and a third operator finishes it.

``test_operator_restart.py`` kills the operator at every upgrade step against the contract double; this
test checks the two kill points where the real engine's behaviour matters, within ONE upgrade so the cost
is two JVM starts (the old engine and the target; the target's JVM is a warm standby started before the
stop, or a cold launch after it for an engine without the standby mode):

1. right after the stop: ``POST /v1/stop`` returned (the real driver wrote its snapshot and exited) but the
   operator died before recording the result, so the status still says ``Stop``. The next operator must
   find that snapshot instead of taking another one, or forking a checkpoint, and keep the standby.
2. right after the target was started from the snapshot (``POST /v1/start`` on the standby, or the cold
   launch) but before the operator recorded it, so the status still says ``Activate`` (``Launch``). The
   next operator must adopt that driver instead of starting a second JVM or a second run.

A third operator, without a hook, passes the stability gate. Every input row and every closed window must
be in the output exactly once (the known engine loss of ``test_real_engine.py`` is an xfail with evidence).
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from tests.operator.e2e.harness import REAL_TARGET, World, wait_for
from tests.operator.e2e.test_real_engine import FEED_EVERY, JVM, _exactly_once_or_known_engine_loss, _runs, _start

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(1200)]


def parking_hook(kinds: set[str], parked: threading.Event):
    """Park the operator for good right after the first upgrade action of one of ``kinds`` ran, before
    ``advance`` records its result (the kill then lands exactly there)."""
    async def hook(original, reconciler, job, view, action):
        upgrading = (view.status.get("operation") or {}).get("type") == "Upgrade"
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


def test_operator_killed_after_stop_and_after_target_start(real_world: World, tmp_path: Path) -> None:
    world = real_world
    root = tmp_path / "root-k"
    after_stop = threading.Event()
    world.start_operator(execute_hook=parking_hook({"stop"}, after_stop))
    first = _start(world, "k", root)
    began = time.monotonic()
    with world.feeding("k", every=FEED_EVERY):
        world.apply(world.job_manifest("k", REAL_TARGET, storage=root))

        # 1. the old driver stopped with a snapshot; the operator dies before recording it
        at_kill = _kill_when_parked(world, after_stop, "stop")
        assert at_kill["operation"]["step"] == "Stop" and at_kill["runId"] == first["runId"], at_kill["operation"]
        written = [p.name for p in (root / "snapshots").iterdir()]
        assert len(written) == 1, written  # the real driver wrote it before exiting
        assert [r["engine"] for r in world.calls(root, "run")][:1] == ["0.1"]

        # 2. a fresh operator finds that snapshot and starts the target; it dies before recording the launch
        after_launch = threading.Event()
        world.start_operator(execute_hook=parking_hook({"activate", "launch"}, after_launch))
        at_kill = _kill_when_parked(world, after_launch, "launch")
        assert at_kill["operation"]["step"] in ("Activate", "Launch"), at_kill["operation"]
        assert at_kill["operation"]["snapshot"] == written[0]
        target_run, started_by = at_kill["operation"]["runId"], at_kill["operation"]["step"]
        runs = _runs(world, root, 2)
        assert [(r["engine"], r["runId"]) for r in runs] == [("0.1", first["runId"]), (REAL_TARGET, target_run)]

        # 3. a third operator adopts the running target and passes the stability gate
        world.start_operator()
        status = world.wait_status("k", lambda s: (s.get("upgrade") or {}).get("step") == "Succeeded",
                                   "upgrade Succeeded after two operator deaths", timeout=JVM)
    took = time.monotonic() - began
    assert status["engineVersion"] == REAL_TARGET and status["phase"] == "Running"
    assert status["runId"] == target_run  # the driver started by the dead operator, not a new one
    assert status["upgrade"]["snapshot"] == written[0] and status["lastSnapshot"]["id"] == written[0]
    assert status["driver"]["baselineBatches"] > 0
    assert [c["engine"] for c in world.calls(root, "check")] == [REAL_TARGET]  # never repeated
    assert [p.name for p in (root / "snapshots").iterdir()] == written  # no second snapshot, no fork
    assert [r["runId"] for r in world.calls(root, "run")] == [first["runId"], target_run]  # two JVM starts
    _exactly_once_or_known_engine_loss(world, "k", root, written[0], target_run)
    print(f"\nreal engine, operator killed after stop and after target start ({started_by}): upgrade Succeeded "
          f"{took:.1f}s "
          f"after the edit; {len(world.input_rows('k'))} rows and {len(world.windows('k'))} windows exactly once")
