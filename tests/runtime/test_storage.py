"""Job root layout: ids that sort and never collide, atomic plan writes, only complete runs are visible."""

import json
import re
import threading
from pathlib import Path

import pytest

from planengine.errors import UserError
from planengine.runtime.storage.job_root import JobRoot, resolve_job_root

RUN_ID = re.compile(r"^r-\d{8}T\d{6}Z-[0-9a-f]{4}$")


def test_fresh_root_is_empty_and_created_lazily(tmp_path):
    root = JobRoot(tmp_path / "job")
    assert not root.has_plan()
    assert root.runs() == [] and root.latest_run() is None
    assert root.snapshots() == [] and root.latest_snapshot() is None
    assert not (tmp_path / "job").exists()


def test_plan_is_written_atomically_and_not_replaced_by_accident(tmp_path):
    root = JobRoot(tmp_path)
    with pytest.raises(UserError, match=r"has no plan\.json"):
        root.read_plan_text()
    root.write_plan_text('{"planId": "p1"}')
    assert root.plan_path == tmp_path / "plan.json"
    assert root.has_plan() and root.read_plan_text() == '{"planId": "p1"}'

    with pytest.raises(UserError, match=r"already has a plan\.json") as err:
        root.write_plan_text('{"planId": "p2"}')
    assert "overwrite" in err.value.render()
    assert root.read_plan_text() == '{"planId": "p1"}'

    root.write_plan_text('{"planId": "p2"}', overwrite=True)
    assert root.read_plan_text() == '{"planId": "p2"}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json"]  # no temp files left behind


def test_run_ids_sort_by_creation_and_latest_is_the_newest(tmp_path):
    root = JobRoot(tmp_path)
    created = [root.new_run() for _ in range(5)]
    ids = [r.run_id for r in created]
    assert all(RUN_ID.match(i) for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == 5
    assert [r.run_id for r in root.runs()] == ids
    assert root.latest_run() == created[-1]
    assert root.run(ids[2]).path == tmp_path / "runs" / ids[2]


def test_ids_stay_monotonic_when_the_clock_steps_back(tmp_path):
    root = JobRoot(tmp_path)
    future = tmp_path / "runs" / "r-29991231T235959Z-00ff"
    future.mkdir(parents=True)
    (future / "run.json").write_text("{}")
    run = root.new_run()
    assert run.run_id == "r-29991231T235959Z-0100"
    assert root.latest_run() == run


def test_concurrent_creators_get_distinct_runs(tmp_path):
    root = JobRoot(tmp_path)
    ids: list[str] = []
    lock = threading.Lock()

    def create():
        for _ in range(5):
            run_id = root.new_run().run_id
            with lock:
                ids.append(run_id)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == 40 and len(set(ids)) == 40
    assert [r.run_id for r in root.runs()] == sorted(ids)


def test_new_run_has_an_empty_checkpoints_dir_and_a_marker(tmp_path):
    run = JobRoot(tmp_path).new_run()
    assert run.checkpoints_dir.is_dir() and list(run.checkpoints_dir.iterdir()) == []
    assert run.checkpoint_dir("orders_agg") == run.path / "checkpoints" / "orders_agg"
    marker = run.info()
    assert marker["runId"] == run.run_id and marker["fromSnapshot"] is None
    assert marker["createdAt"].endswith("Z")
    assert json.loads((run.path / "run.json").read_text())["runId"] == run.run_id


def test_half_created_runs_are_invisible(tmp_path):
    root = JobRoot(tmp_path)
    good = root.new_run()
    crashed = tmp_path / "runs" / "r-29991231T235959Z-0000"  # a fork interrupted before its marker
    (crashed / "checkpoints").mkdir(parents=True)
    assert root.runs() == [good] and root.latest_run() == good
    with pytest.raises(UserError, match="no complete run r-29991231T235959Z-0000"):
        root.run("r-29991231T235959Z-0000")


@pytest.mark.parametrize("uid", ["../escape", "a/b", "", ".hidden", "-x", "x" * 201])
def test_query_uids_must_be_one_safe_path_component(tmp_path, uid):
    run = JobRoot(tmp_path).new_run()
    with pytest.raises(UserError, match="cannot name a checkpoint directory"):
        run.checkpoint_dir(uid)


@pytest.mark.parametrize("bad", ["s-20261122T081500Z-0000", "r-1", "../r-20261122T081500Z-0000"])
def test_run_lookup_rejects_malformed_ids(tmp_path, bad):
    with pytest.raises(UserError, match="is not a run id"):
        JobRoot(tmp_path).run(bad)


def test_unknown_snapshot_reference_says_what_is_expected(tmp_path):
    with pytest.raises(UserError, match="neither a snapshot id") as err:
        JobRoot(tmp_path).new_run(from_snapshot="nightly")
    assert "s-20261122T081500Z-0000" in err.value.render()
    assert JobRoot(tmp_path).runs() == []


def test_a_job_root_someone_chose_beats_the_sessions_own_which_beats_the_shared_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``resolve_job_root``: explicit, then ``planengine.job-root``, then ``PLANENGINE_JOB_ROOT`` (all chosen by
    someone), then the SQL client session's own directory, then the temp directory every session shares."""
    plan_id = "8a68192b05c7e1f2a3b4c5d6"
    monkeypatch.delenv("PLANENGINE_JOB_ROOT", raising=False)
    session = tmp_path / "session"
    assert resolve_job_root(plan_id, session_dir=session).path == session / plan_id[:16]
    assert resolve_job_root(plan_id).path.parent.name == "planengine-jobs"
    monkeypatch.setenv("PLANENGINE_JOB_ROOT", str(tmp_path / "env"))
    assert resolve_job_root(plan_id, session_dir=session).path == tmp_path / "env"
    assert resolve_job_root(plan_id, jobs_dir=tmp_path / "jobs", session_dir=session).path == (
        tmp_path / "jobs" / plan_id[:16])
    assert resolve_job_root(plan_id, tmp_path / "exact", jobs_dir=tmp_path / "jobs",
                            session_dir=session).path == tmp_path / "exact"


def _runs_with_times(root: JobRoot, count: int) -> list[str]:
    """``count`` complete runs created an hour apart (their markers' ``createdAt`` decide the order)."""
    ids = []
    for i in range(count):
        run = root.new_run()
        marker = run.info()
        marker["createdAt"] = f"2026-12-07T{10 + i:02d}:00:00.000000Z"
        (run.path / "run.json").write_text(json.dumps(marker))
        (run.checkpoints_dir / "q" / "commits").mkdir(parents=True)
        (run.checkpoints_dir / "q" / "commits" / "0").write_text("v1")
        ids.append(run.run_id)
    return ids


def test_old_runs_are_pruned_but_the_current_the_newest_and_incomplete_ones_stay(tmp_path):
    """Every start from a snapshot makes a run, and runs kept every file for good: the fault campaign filled a
    1 GiB job root after 25 runs. Only the newest few are kept now."""
    root = JobRoot(tmp_path)
    ids = _runs_with_times(root, 6)
    crashed = tmp_path / "runs" / "r-20200101T000000Z-0000"  # a fork cut short (or one being made): no marker
    (crashed / "checkpoints").mkdir(parents=True)
    assert root.prune_runs(ids[-1], keep=3) == ids[:3]
    assert [r.run_id for r in root.runs()] == ids[3:]
    assert crashed.is_dir() and not (tmp_path / "runs" / ids[0]).exists()
    assert root.prune_runs(ids[0], keep=1) == ids[3:5]  # the current run is never deleted, even when older
    assert root.prune_runs(ids[-1], keep=0) == []  # 0: keep every run


def test_a_pruned_runs_snapshot_still_restores(tmp_path):
    """Snapshots hold their own links to the files they need: deleting the run they came from frees nothing they
    use (and a fork never points into its parent run)."""
    from planengine.runtime.storage.snapshots import take_snapshot

    root = JobRoot(tmp_path)
    root.write_plan_text('{"planId": "p"}')
    first = _runs_with_times(root, 1)[0]
    snap = take_snapshot(root, root.run(first), reason="stop", engine_version="0.1", spark_version="4.3.0",
                         plan_id="p", last_batch_ids={})
    later = [root.new_run().run_id for _ in range(2)]
    assert root.prune_runs(later[-1], keep=2) == [first]
    fork = root.new_run(from_snapshot=snap.snapshot_id)
    assert (fork.checkpoints_dir / "q" / "commits" / "0").read_text() == "v1"


def test_how_many_runs_to_keep_comes_from_the_environment(monkeypatch):
    from planengine.runtime.storage.job_root import keep_runs

    assert keep_runs() == 5
    monkeypatch.setenv("PLANENGINE_KEEP_RUNS", "0")
    assert keep_runs() == 0
    monkeypatch.setenv("PLANENGINE_KEEP_RUNS", "few")
    with pytest.raises(UserError, match="PLANENGINE_KEEP_RUNS='few' is not a whole number"):
        keep_runs()


def _run_with_a_source_log(tmp_path: Path):
    """A job root with a plan and one complete run whose query ``q`` has a file source's compacted log."""
    root = JobRoot(tmp_path)
    root.write_plan_text('{"planId": "p"}')
    run = root.run(_runs_with_times(root, 1)[0])
    log = run.checkpoints_dir / "q" / "sources" / "0" / "9.compact"
    log.parent.mkdir(parents=True)
    log.write_text('v1\n{"path":"file:/in/a.json","timestamp":1,"batchId":9}\n')
    return root, run, log


def test_a_snapshot_with_a_damaged_log_fails_the_fork_by_name_and_leaves_no_run_behind(tmp_path):
    """The fault campaign's run 6 damaged a file source's compacted log in place (``sources/0/999.compact``); every
    fork of the snapshots sharing it failed with a bare ``UnicodeDecodeError``, and each automatic restart left its
    half-made run behind until the 1 GiB job root was full. The fork now names the file and removes its run."""
    from planengine.runtime.storage.snapshots import CheckpointDamaged, take_snapshot

    root, run, log = _run_with_a_source_log(tmp_path)
    snap = take_snapshot(root, run, reason="stop", engine_version="0.1", spark_version="4.3.0", plan_id="p",
                         last_batch_ids={})
    assert (root.new_run(from_snapshot=snap.snapshot_id).checkpoints_dir / "q" / "sources" / "0" / "9.compact"
            ).read_text().startswith("v1")  # intact: forks
    log.write_bytes(b"v1\n\xff\xfe\x00garbage")  # in place, and then a snapshot of the damaged run
    damaged_snap = take_snapshot(root, run, reason="stop", engine_version="0.1", spark_version="4.3.0",
                                 plan_id="p", last_batch_ids={})
    runs_before = sorted(p.name for p in (tmp_path / "runs").iterdir())
    with pytest.raises(CheckpointDamaged) as damaged:
        root.new_run(from_snapshot=damaged_snap.snapshot_id)
    assert "the checkpoint file q/sources/0/9.compact is damaged: it is not the UTF-8 text Spark writes" in \
        str(damaged.value)
    assert "a snapshot taken before the damage" in damaged.value.hint
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == runs_before  # no half-made run left


def test_a_log_damaged_in_a_run_after_its_snapshot_leaves_the_snapshot_intact(tmp_path):
    """Spark's metadata logs are copied into a snapshot and into a fork (state files stay hard links), so a log
    changed in place afterwards in one of them is changed there only: the older snapshots still restore."""
    from planengine.runtime.storage.snapshots import take_snapshot

    root, run, log = _run_with_a_source_log(tmp_path)
    state = run.checkpoints_dir / "q" / "state" / "0" / "0" / "1.changelog"
    state.parent.mkdir(parents=True)
    state.write_bytes(b"state")
    snap = take_snapshot(root, run, reason="stop", engine_version="0.1", spark_version="4.3.0", plan_id="p",
                         last_batch_ids={})
    fork = root.new_run(from_snapshot=snap.snapshot_id)
    forked_log = fork.checkpoints_dir / "q" / "sources" / "0" / "9.compact"
    log.write_bytes(b"v1\n\xff\xfe\x00damaged in the run")  # in place, as the fault campaign's injector does
    forked_log.write_bytes(b"v1\n\xff\xfe\x00damaged in the fork")
    again = root.new_run(from_snapshot=snap.snapshot_id)
    assert (again.checkpoints_dir / "q" / "sources" / "0" / "9.compact").read_text().startswith('v1\n{"path"')
    # The state file is still shared (a link, not a copy): a fork stays O(files) in the state's size.
    assert (again.checkpoints_dir / "q" / "state" / "0" / "0" / "1.changelog").stat().st_ino == state.stat().st_ino
