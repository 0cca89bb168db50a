"""A driver pod that dies mid-batch (OOM kill, node loss): the operator restarts the job from its checkpoint.

The real engine on the Kubernetes launcher. The driver's process is SIGKILLed while a micro-batch is in flight
(Spark planned ``offsets/N``, ``commits/N`` is not written yet), so the container ends with exit 137 and leaves
its ``RUN_LOCK`` behind under its pod name. The operator forks the newest checkpoint and starts a new driver
pod, another host name, which may take that lock over only because the operator confirmed the old pod gone
(``PLANENGINE_TAKE_OVER_RUN_LOCK``); the new run replays the batch that was in flight. Every input row and every
closed window ends up in the output exactly once.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.operator.e2e.harness import World, sink_uid, wait_for
from tests.operator.e2e.test_real_engine import FEED_EVERY, JVM, _still_committing

pytestmark = pytest.mark.timeout(1200)


def _start_in_order(world: World, name: str, root: Path) -> dict:
    """The job with one input file per batch: its watermarks are per record (Flink's rule) and Spark may read
    the files of one batch in any order, so after the restart's backlog a row of an earlier file read after a
    later one would count as late for a window the later rows' watermark fired, and be dropped (correctly);
    this test is about the checkpoint surviving the pod, not about lateness."""
    world.add_input(name, 3)
    manifest = world.job_manifest(name, "0.1", storage=root)
    assert "'source.max-files-per-trigger' = '1'" in manifest["spec"]["plan"]["sql"]
    world.apply(manifest)
    status = world.wait_status(name, lambda s: s.get("phase") == "Running", "phase Running", timeout=120)
    world.assert_exactly_once(name, timeout=JVM)  # the driver's JVM started and committed the first files
    return status


def _batch_ids(directory: Path) -> list[int]:
    return sorted(int(p.name) for p in directory.glob("*") if p.name.isdigit()) if directory.is_dir() else []


@pytest.mark.parametrize("launcher", ["kubernetes"], indirect=True)
def test_a_driver_killed_mid_batch_restarts_from_its_checkpoint(real_world: World, tmp_path: Path) -> None:
    world = real_world
    root = world.storage_root(tmp_path / "root-m")
    world.start_operator()
    first = _start_in_order(world, "m", root)
    pod = first["driver"]["name"]
    checkpoint = root / "runs" / first["runId"] / "checkpoints" / sink_uid(root, world.sink("m"))

    def in_flight() -> bool:  # past its first commit, Spark planned a batch that is not committed yet
        offsets, commits = _batch_ids(checkpoint / "offsets"), _batch_ids(checkpoint / "commits")
        return bool(commits) and offsets[-1] > commits[-1]

    with world.feeding("m", every=FEED_EVERY):
        wait_for(in_flight, JVM, "a micro-batch in flight", interval=0.02)
        pid = world.kubelet.process(world.ns, pod)
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        killed_at = _batch_ids(checkpoint / "offsets")[-1]
        restarted = world.wait_status("m", lambda s: s.get("phase") == "Running" and s.get("runId") not in (
            None, first["runId"]), "running again in a new run", timeout=JVM)
    _still_committing(world, "m")  # feeds on its own
    old = world.api.get("", "pods", world.ns, pod)
    assert old is None or old["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    world.assert_exactly_once("m", timeout=JVM)
    world.assert_windows_exactly_once("m", timeout=JVM)  # one file per batch: a backlog takes a while
    lock = json.loads((root / "RUN_LOCK").read_text())  # the new pod took over the dead pod's lock
    assert lock["runId"] == restarted["runId"] and lock["hostname"] == restarted["driver"]["name"] != pod
    runs = world.calls(root, "run")
    assert [r["runId"] for r in runs] == [first["runId"], restarted["runId"]]
    assert runs[1]["fromSnapshot"]  # from the fork of the dead run's checkpoint
    fork = Path(runs[1]["fromSnapshot"]).name
    manifest = json.loads((root / "snapshots" / fork / "manifest.json").read_text())
    assert manifest["runId"] == first["runId"]
    print(f"\nkilled pod {pod} with batch {killed_at} in flight; restarted as {restarted['driver']['name']} "
          f"from {fork}; {len(world.input_rows('m'))} rows exactly once")
