"""Fleet rollout of ``defaultEngineVersion`` end to end: real kopf, the API emulator, the contract double.

The operator reads its configuration once, at start, so a new default reaches it the way it does in a
cluster: the operator restarts with the new configuration (the chart's Deployment rolls when its
ConfigMap changes). Concurrency is read from the emulator's history of every SparkPlanJob write (the
order the API server saw them), not sampled with sleeps: at no point may more than ``maxConcurrent`` jobs
have an upgrade operation in their status.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from planengine_operator import metrics
from tests.operator.e2e.harness import LAUNCHER_INDEPENDENT, World, wait_for

pytestmark = pytest.mark.timeout(180)


def _history(world: World) -> list[tuple[str, dict[str, Any]]]:
    """(job name, status) of every SparkPlanJob write, in the API server's order."""
    return [(obj["metadata"]["name"], obj.get("status") or {}) for obj in world.writes()]


def _max_in_flight(world: World, names: list[str]) -> int:
    """The most jobs of ``names`` that had an Upgrade operation in their status at the same time."""
    upgrading: set[str] = set()
    most = 0
    for name, status in _history(world):
        if name not in names:
            continue
        in_flight = (status.get("operation") or {}).get("type") == "Upgrade"
        (upgrading.add if in_flight else upgrading.discard)(name)
        most = max(most, len(upgrading))
    return most


def _fleet(world: World, names: list[str], pinned: list[str] = ()) -> dict[str, dict[str, Any]]:
    """Jobs following the default (no engineVersion) and pinned ones (0.1), all Running with output."""
    for name in names:
        world.add_input(name, 2)
        world.apply(world.job_manifest(name, None))
    for name in pinned:
        world.add_input(name, 2)
        world.apply(world.job_manifest(name, "0.1"))
    started = {}
    for name in [*names, *pinned]:
        started[name] = world.wait_status(name, lambda s: s.get("phase") == "Running", "phase Running")
        wait_for(lambda n=name: len(world.output(n)) >= 4, 20, f"{name}: first batches committed")
    return started


@contextlib.contextmanager
def _feeding(world: World, names: list[str]):
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(world.feeding(name, every=0.3))
        yield


def _reconciles_after(count: int) -> bool:
    return metrics.reconcile_count() >= count


def _sample(name: str, **labels: str) -> float | None:
    """One sample of the operator's exposition as Prometheus reads it."""
    from prometheus_client.parser import text_string_to_metric_families

    return next((s.value for f in text_string_to_metric_families(metrics.exposition().decode()) for s in f.samples
                 if s.name == name and s.labels == labels), None)


@LAUNCHER_INDEPENDENT
def test_new_default_rolls_out_a_few_jobs_at_a_time(world: World) -> None:
    """Launcher-independent, so it runs once (local launcher): the rollout's gating is the operator's fleet slot over
    the jobs' status; each upgrade runs as in test_lifecycle (both launchers)."""
    names = ["f1", "f2", "f3", "f4"]
    world.start_operator()
    before = _fleet(world, names, pinned=["p1"])
    assert {before[n]["engineVersion"] for n in [*names, "p1"]} == {"0.1"}
    world.operator.stop()  # the new default arrives as a new configuration: restart the operator

    with _feeding(world, [*names, "p1"]):
        world.start_operator(defaultEngineVersion="0.2", rollout={"maxConcurrent": 2})
        for name in names:
            world.wait_status(name, lambda s: s.get("engineVersion") == "0.2" and (s.get("upgrade") or {}).get(
                "step") == "Succeeded", "upgraded to the new default", timeout=90)
    most = _max_in_flight(world, names)
    print(f"\nfleet rollout: at most {most} of {len(names)} upgrades in flight (maxConcurrent 2)")
    assert 1 <= most <= 2
    for name in names:
        status = world.status(name)
        assert status["upgrade"]["fleet"] is True and status["upgrade"]["from"] == "0.1"
        assert status["runId"] != before[name]["runId"] and status["phase"] == "Running"
        root = world.job_root(name)
        assert [c["engine"] for c in world.calls(root, "check")] == ["0.2"]
        assert [r["engine"] for r in world.calls(root, "run")] == ["0.1", "0.2"]
        world.assert_exactly_once(name)
    pinned = world.status("p1")  # an explicit engineVersion does not follow the default
    assert pinned["engineVersion"] == "0.1" and pinned["runId"] == before["p1"]["runId"]
    assert not pinned.get("upgrade") and world.calls(world.job_root("p1"), "check") == []
    world.assert_exactly_once("p1")
    assert _sample("planengine_rollout_paused") == 0


@LAUNCHER_INDEPENDENT
def test_rollout_pauses_at_the_first_rollback_and_resumes_with_a_new_default(world: World) -> None:
    """Launcher-independent, so it runs once (local launcher): pausing is the fleet's rule over the rolled-back job's
    status; the rollback itself runs on both launchers in test_lifecycle."""
    names = ["g1", "g2", "g3"]
    world.start_operator()
    before = _fleet(world, names)
    world.operator.stop()

    with _feeding(world, names):
        world.start_operator(defaultEngineVersion="0.4")  # 0.4 dies after its first batch; maxConcurrent 1
        first = wait_for(lambda: next((n for n in names if world.status(n).get("phase") == "RolledBack"), None),
                         60, "one job rolled back", lambda: {n: world.status(n).get("phase") for n in names})
        rolled_back = world.status(first)
        # The slot is free again; a rollout that was only waiting would start the next job within a tick.
        # Let every job be reconciled many more times (the operator's own counter, not a sleep).
        target = metrics.reconcile_count() + 30
        wait_for(lambda: _reconciles_after(target), 60, "30 more reconcile passes", metrics.reconcile_count)
        others = [n for n in names if n != first]
        for name in others:
            status = world.status(name)
            assert status["engineVersion"] == "0.1" and status["runId"] == before[name]["runId"], status
            assert not status.get("upgrade") and status["phase"] == "Running"
            assert world.calls(world.job_root(name), "check") == []
            progressing = world.condition(name, "Progressing")
            assert progressing["reason"] == "RolloutWaiting", progressing
        assert rolled_back["upgrade"]["to"] == "0.4" and rolled_back["engineVersion"] == "0.1"
        assert _max_in_flight(world, names) == 1
        assert _sample("planengine_rollout_paused") == 1
        job = {"namespace": world.ns, "job_name": first}
        assert _sample("planengine_job_last_upgrade_result", **job, result="RolledBack") == 1
        assert _sample("planengine_job_rollbacks_total", **job) == 1
        wait_for(lambda: "RolloutPaused" in world.event_reasons(first), 10, "the RolloutPaused event",
                 lambda: world.event_reasons(first))
        paused = [e for e in world.events(first) if e["reason"] == "RolloutPaused"]
        assert len(paused) == 1 and paused[0]["type"] == "Warning" and "0.4" in paused[0]["message"]
        assert all("RolloutPaused" not in world.event_reasons(n) for n in others)

        # Resume: a fixed engine build becomes the default (operator restart); every job, the rolled-back
        # one included, upgrades to it.
        world.operator.stop()
        world.start_operator(defaultEngineVersion="0.2")
        for name in names:
            world.wait_status(name, lambda s: s.get("engineVersion") == "0.2" and (s.get("upgrade") or {}).get(
                "step") == "Succeeded", "upgraded to the fixed default", timeout=90)
    assert _sample("planengine_rollout_paused") == 0
    assert _max_in_flight(world, names) == 1
    runs = [r["engine"] for r in world.calls(world.job_root(first), "run")]
    assert runs == ["0.1", "0.4", "0.1", "0.2"], runs
    for name in others:
        assert [r["engine"] for r in world.calls(world.job_root(name), "run")] == ["0.1", "0.2"]
    for name in names:
        world.assert_exactly_once(name)
