"""Periodic snapshots and their retention, end to end (real kopf, the API emulator, the contract double).

The policy is the operator's configuration ``snapshots: {interval, maxCount, maxAge}`` (the CRD has no
per-job override). Bounds are checked on every status the API server stored (the emulator's history),
and deletions on the job root's ``snapshots/`` directory, which must end up holding exactly the snapshots
the status lists. The snapshot an upgrade handed over with (the one its rollback restarted from) is kept
whatever its age or rank.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from planengine_operator.statemachine import parse_iso
from tests.operator.e2e.harness import World, wait_for
from tests.operator.e2e.test_lifecycle import _running

pytestmark = pytest.mark.timeout(180)


def _statuses(world: World, name: str) -> list[dict[str, Any]]:
    """Every status of the job the API server stored, oldest first."""
    return [obj.get("status") or {} for obj in world.writes(name)]


def _on_disk(root: Path) -> set[str]:
    return {p.name for p in (root / "snapshots").iterdir() if not p.name.startswith(".")}


def _ids(status: dict[str, Any]) -> list[str]:
    return [s["id"] for s in status.get("snapshots") or []]


def _written(world: World, root: Path) -> list[str]:
    return [c["snapshot"] for c in world.calls(root, "wrote-snapshot")]


def _disk_matches_status(world: World, name: str, root: Path) -> set[str]:
    return wait_for(lambda: (lambda ids: ids if ids == _on_disk(root) else None)(set(_ids(world.status(name)))),
                    10, f"{name}: snapshots/ holds exactly the snapshots in the status",
                    lambda: (sorted(_ids(world.status(name))), sorted(_on_disk(root))))


def test_periodic_snapshots_are_bounded_and_keep_the_rollback_snapshot(world: World) -> None:
    world.start_operator(snapshots={"interval": "1s", "maxCount": 3, "maxAge": "1h"})
    _running(world, "s")
    root = world.job_root("s")
    with world.feeding("s"):
        # 1. snapshots at the interval; the history keeps the newest maxCount, older ones leave the disk
        wait_for(lambda: len(_written(world, root)) >= 6, 60, "six periodic snapshots",
                 lambda: _written(world, root))
        status = world.status("s")
        periodic = [s for s in status["snapshots"] if s["reason"] == "periodic"]
        assert len(status["snapshots"]) == 3 and len(periodic) == 3, status["snapshots"]
        assert _ids(status) == [s for s in _written(world, root) if s in _ids(status)]  # oldest first
        created = [parse_iso(c["createdAt"]) for c in status["snapshots"]]
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(created)]
        assert all(gap >= 1.0 for gap in gaps), gaps  # never more often than the interval
        assert status["lastSnapshot"]["id"] == _ids(status)[-1]
        assert max(len(_ids(s)) for s in _statuses(world, "s")) == 3
        kept = _disk_matches_status(world, "s", root)
        assert not kept & set(_written(world, root)[:3])  # the oldest were deleted from the job root
        world.wait_events("s", "SnapshotTaken")

        # 2. an upgrade whose target commits a batch, then crashes, rolls back from a fork of the target's
        #    state (not the handover snapshot, which the target's batch has moved past); that one is pinned
        world.apply(world.job_manifest("s", "0.4"))
        rolled = world.wait_status("s", lambda s: s.get("phase") == "RolledBack", "phase RolledBack", timeout=45)
        handover = rolled["upgrade"]["snapshot"]
        runs = wait_for(lambda: (lambda r: r if len(r) >= 3 else None)(world.calls(root, "run")), 10,
                        "the rolled-back driver's start", lambda: world.calls(root, "run"))
        assert [r["engine"] for r in runs] == ["0.1", "0.4", "0.1"], runs
        assert runs[1]["fromSnapshot"] != runs[2]["fromSnapshot"] and runs[2]["fromSnapshot"].endswith(handover)
        mark = len(_written(world, root))
        wait_for(lambda: len(_written(world, root)) >= mark + 5, 60, "five more periodic snapshots",
                 lambda: _written(world, root)[mark:])
        status = world.status("s")
        assert handover in _ids(status) and handover in _on_disk(root)
        assert len(_ids(status)) == 4  # the newest three and the pinned handover snapshot
        since = _statuses(world, "s")[-20:]
        assert all(len(_ids(s)) <= 4 for s in since)
        _disk_matches_status(world, "s", root)
    world.operator.stop()

    # 3. maxAge: a restarted operator with a short age keeps only young snapshots (and the pinned one)
    world.start_operator(snapshots={"interval": "1s", "maxCount": 10, "maxAge": "2s"})
    with world.feeding("s"):
        mark = len(_written(world, root))
        wait_for(lambda: len(_written(world, root)) >= mark + 5, 60, "five periodic snapshots (maxAge 2s)",
                 lambda: _written(world, root)[mark:])
        status = world.status("s")
        # young ones are at least the interval apart: at most three within 2 s, plus the pinned handover
        assert handover in _ids(status) and len(_ids(status)) <= 4, _ids(status)
        _disk_matches_status(world, "s", root)
        assert handover in _on_disk(root)
    world.assert_exactly_once("s")
