"""The fault campaign's own logic without a cluster: replayable draws and the single-writer check.

The campaign itself (``benchmarks/fault_campaign.py``) needs the control plane, the kubelet and two JVMs per
upgrade; what decides its verdicts is plain code over files and must be right on its own: a false "two
writers" would send someone hunting a bug that is not there, a missed one would hide it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.fault_campaign import FAULT_STEPS, draw, finished_since, in_flight, writer_problems

UID = "3_stream-exec-sink-1_writer"


def _commit(root: Path, run: str, batch: int, mtime: float) -> Path:
    path = root / "runs" / run / "checkpoints" / UID / "commits" / str(batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("v1\n{}\n")
    os.utime(path, (mtime, mtime))
    return path


def _fork(root: Path, source: Path, run: str, how: str) -> None:
    """What a snapshot fork does with the commits it carries: a copy by the fork's own code (since 2026-12-07),
    or a hard link (before, and what state files still are)."""
    from planengine.runtime.storage.snapshots import _durable_copy

    target = root / "runs" / run / "checkpoints" / UID / "commits" / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    if how == "copy":
        _durable_copy(source, target)
    else:
        os.link(source, target)


def test_a_round_draws_the_same_fault_alone_as_in_the_campaign() -> None:
    assert [draw(7, k) for k in range(1, 20)] == [draw(7, k) for k in range(1, 20)]
    assert draw(7, 3) != draw(8, 3) or draw(7, 4) != draw(8, 4)
    for k in range(1, 200):
        fault = draw(11, k)
        assert fault.step in FAULT_STEPS[fault.kind], fault


@pytest.mark.parametrize("how", ["copy", "link"])
def test_a_forked_run_continuing_after_its_snapshot_is_one_writer(tmp_path: Path, how: str) -> None:
    old = [_commit(tmp_path, "r-20260101T000000Z-0001", b, 100 + b) for b in range(3)]
    for commit in old:
        _fork(tmp_path, commit, "r-20260101T000100Z-0002", how)
    _commit(tmp_path, "r-20260101T000100Z-0002", 3, 200)
    assert writer_problems(tmp_path, [UID]) == []


def test_a_batch_committed_by_two_runs_is_two_writers(tmp_path: Path) -> None:
    _commit(tmp_path, "r-20260101T000000Z-0001", 0, 100)
    _commit(tmp_path, "r-20260101T000000Z-0001", 1, 101)
    _commit(tmp_path, "r-20260101T000100Z-0002", 1, 200)  # not a link: the new run wrote batch 1 again
    problems = writer_problems(tmp_path, [UID])
    assert problems == [f"{UID} batch 1 committed by runs ['r-20260101T000000Z-0001', 'r-20260101T000100Z-0002']"]


def test_runs_committing_at_the_same_time_are_two_writers(tmp_path: Path) -> None:
    _commit(tmp_path, "r-20260101T000000Z-0001", 0, 100)
    _commit(tmp_path, "r-20260101T000000Z-0001", 1, 300)
    _commit(tmp_path, "r-20260101T000100Z-0002", 2, 200)
    assert any("both committed" in p for p in writer_problems(tmp_path, [UID]))


def test_in_flight_means_planned_and_not_committed(tmp_path: Path) -> None:
    for name, batches in (("offsets", (0, 1, 2)), ("commits", (0, 1))):
        (tmp_path / name).mkdir()
        for b in batches:
            (tmp_path / name / str(b)).write_text("")
    assert in_flight(tmp_path)
    (tmp_path / "commits" / "2").write_text("")
    assert not in_flight(tmp_path)


def test_an_upgrade_counts_as_finished_only_if_it_began_in_this_round() -> None:
    ended = {"upgrade": {"step": "RolledBack", "started": "2026-01-01T00:00:10Z"}}
    assert finished_since(ended, 1767225600.0)  # 2026-01-01T00:00:00Z
    assert not finished_since(ended, 1767225620.0)  # the previous round's record
    assert not finished_since({**ended, "operation": {"step": "Rollback"}}, 1767225600.0)
