"""``spec.initialSnapshot`` with the real engine: a new job continues another job's state (3 JVM starts; the
Kubernetes launcher only: the check and the drivers are pods of the test kubelet reading the other job's
snapshot on the shared claim, the path a cluster takes. What the engine does with the snapshot does not depend
on the launcher, and the local launcher's initialSnapshot path (check and fork by processes) is covered by
``test_gitops.py::test_a_new_job_starts_from_another_jobs_snapshot_which_stays_untouched[local]``).

The source job runs the real statement set (stateless calc into one file sink, a native 10 s tumbling-window
count into another) and is suspended, which stops it with a snapshot. A second job (another name, another job
root) with the same program starts from that snapshot: the real ``planengine check --snapshot`` accepts it,
``run --from-snapshot`` forks it from the other job root, and the sinks hold every input row exactly once and
every closed window exactly once with all of its rows, so the window that was open at the snapshot was
completed from the carried state. The snapshot's files keep their bytes and mtimes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.operator.e2e.harness import (
    ON_KUBERNETES,
    WINDOW_SECONDS,
    World,
    commit_times,
    sink_uid,
    snapshot_last_batch,
    wait_for,
)

pytestmark = pytest.mark.timeout(1500)
JVM = 600  # a JVM start on a loaded machine
FEED_EVERY = 0.5  # seconds between input files


def _tree_digest(directory: Path) -> dict[str, tuple[str, float]]:
    return {str(p.relative_to(directory)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime)
            for p in sorted(directory.rglob("*")) if p.is_file()}


@ON_KUBERNETES
def test_a_job_started_from_another_jobs_snapshot_continues_its_state(real_world: World) -> None:
    world = real_world
    world.start_operator()
    world.add_input("src", 3)
    source = world.job_manifest("src", "0.1")
    world.apply(source)
    world.wait_status("src", lambda s: s.get("phase") == "Running", "src Running", timeout=120)
    world.assert_exactly_once("src", timeout=JVM)
    # Input arrives in event-time order, a file every FEED_EVERY s (a bulk of files may be read out of order, and
    # the window aggregation drops rows behind the watermark); window [0, 10) closes, [10, 20) is open.
    with world.feeding("src", every=FEED_EVERY):
        wait_for(lambda: len(world.output("src")) >= 2 * 14, JVM, "src: 14 files copied",
                 lambda: len(world.output("src")), interval=0.5)
    world.apply({**source, "spec": {**source["spec"], "state": "suspended"}})
    status = world.wait_status("src", lambda s: s.get("phase") == "Suspended", "src Suspended", timeout=JVM)
    snapshot = world.job_root("src") / "snapshots" / status["lastSnapshot"]["id"]
    before = _tree_digest(snapshot)

    # The new job runs the same program into the same sinks (a job moved to a new name and job root): Spark's file
    # sink keeps its commit log in the sink directory and the snapshot continues its batch ids, so another sink
    # directory would not have the log's earlier batches (docs/operator.md, "GitOps").
    dst = world.job_manifest("dst", "0.1")
    dst["spec"]["plan"]["sql"] = source["spec"]["plan"]["sql"]
    dst["spec"]["initialSnapshot"] = {"uri": f"file://{world.pod_path(snapshot)}"}  # as the job's pods see it
    world.apply(dst)
    running = world.wait_status("dst", lambda s: s.get("phase") == "Running", "dst Running", timeout=JVM)
    root = world.job_root("dst")
    assert len(world.calls(root, "check")) == 1  # the real check --snapshot accepted the other job's snapshot
    (run,) = wait_for(lambda: world.calls(root, "run"), 30, "dst's driver start")
    assert run["fromSnapshot"] == str(world.pod_path(snapshot))
    with world.feeding("src", every=FEED_EVERY):  # closes the window open at the snapshot, and one more
        wait_for(lambda: len(list(world.source("src").glob("*.json"))) >= 14 + 2 * WINDOW_SECONDS, 120,
                 "two more windows of input")
    world.assert_exactly_once("src", timeout=JVM)
    world.assert_windows_exactly_once("src", timeout=JVM)
    uid = sink_uid(root, world.sink("src"))
    last = snapshot_last_batch(world.job_root("src"), snapshot.name, uid)
    assert max(commit_times(root, running["runId"], uid)) > last  # the new job committed after the snapshot
    assert world.status("dst")["runId"] == running["runId"]  # and did not restart
    assert _tree_digest(snapshot) == before
