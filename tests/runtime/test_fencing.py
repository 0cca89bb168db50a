"""Run fencing with real processes: one writer per job root, stale locks of dead processes are taken over."""

import json
import logging
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from planengine.runtime.storage.fencing import (
    JobRootLocked,
    RunLockLost,
    acquire_run_lock,
    check_run_lock,
    ensure_run_lock,
    release_run_lock,
    run_lock,
)
from planengine.runtime.storage.job_root import JobRoot

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HOLDER = textwrap.dedent(
    """
    import sys
    from planengine.runtime.storage.fencing import JobRootLocked, acquire_run_lock
    from planengine.runtime.storage.job_root import JobRoot
    try:
        acquire_run_lock(JobRoot(sys.argv[1]), sys.argv[2])
        print("acquired", flush=True)
    except JobRootLocked:
        print("locked", flush=True)
    sys.stdin.read()  # hold the lock until the test closes our stdin
    """
)


def start_holder(root: JobRoot, run_id: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root.path), run_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def finish(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    proc.wait(timeout=10)


def write_lock(root: JobRoot, **fields) -> None:
    lock = {"runId": "r-other", "pid": 1, "hostname": socket.gethostname(), "acquiredAt": "2026-01-01T00:00:00Z"}
    lock.update(fields)
    root.path.mkdir(parents=True, exist_ok=True)
    root.lock_path.write_text(json.dumps(lock))


def test_lock_records_the_holder_and_is_released(tmp_path):
    root = JobRoot(tmp_path)
    lock = acquire_run_lock(root, "r-1")
    content = json.loads(root.lock_path.read_text())
    assert content["runId"] == "r-1" and content["pid"] == os.getpid()
    assert content["hostname"] == socket.gethostname() and content["acquiredAt"].endswith("Z")
    assert lock.run_id == "r-1"
    assert acquire_run_lock(root, "r-1") == lock  # re-entrant for the holding process
    assert check_run_lock(root, "r-1") and not check_run_lock(root, "r-2")
    assert release_run_lock(root, "r-1")
    assert not root.lock_path.exists() and not check_run_lock(root, "r-1")
    assert [p.name for p in tmp_path.iterdir()] == []  # no temp files left


def test_a_live_holder_in_another_process_blocks_other_runs(tmp_path):
    root = JobRoot(tmp_path)
    holder = start_holder(root, "r-first")
    try:
        assert holder.stdout.readline().strip() == "acquired"
        with pytest.raises(JobRootLocked) as err:
            acquire_run_lock(root, "r-second")
        text = err.value.render()
        assert "in use by run r-first" in text and f"pid {holder.pid}" in text and "stop r-first" in text
        assert err.value.exit_code == 2
        assert not release_run_lock(root, "r-second")  # never removes another run's lock
        assert check_run_lock(root, "r-first")
    finally:
        finish(holder)


def test_a_dead_holders_lock_is_taken_over_with_a_warning(tmp_path, caplog):
    root = JobRoot(tmp_path)
    holder = start_holder(root, "r-crashed")
    assert holder.stdout.readline().strip() == "acquired"
    finish(holder)  # the process exits without releasing, like a killed driver
    with caplog.at_level(logging.WARNING, logger="planengine.runtime.fencing"):
        acquire_run_lock(root, "r-new")
    assert check_run_lock(root, "r-new") and not check_run_lock(root, "r-crashed")
    assert any("stale lock" in r.getMessage() and "r-crashed" in r.getMessage() for r in caplog.records)


def test_a_reused_pid_does_not_keep_a_lock_alive(tmp_path):
    root = JobRoot(tmp_path)
    write_lock(root, pid=os.getpid(), runId="r-old", pidStartTime="1")  # our pid, but an older process
    acquire_run_lock(root, "r-new")
    assert check_run_lock(root, "r-new")


def test_a_holder_on_another_host_is_reported_not_guessed(tmp_path):
    root = JobRoot(tmp_path)
    write_lock(root, hostname="driver-7f9c", pid=4242, runId="r-remote")
    with pytest.raises(JobRootLocked) as err:
        acquire_run_lock(root, "r-local")
    text = err.value.render()
    assert "run r-remote (pid 4242 on driver-7f9c" in text
    assert f"delete {root.lock_path}" in text
    assert check_run_lock(root, "r-remote")


def test_a_holder_on_another_host_is_taken_over_when_the_launcher_vouches(tmp_path, monkeypatch, caplog):
    """A driver pod killed by Kubernetes leaves its lock under its pod name; the next pod of the job (another
    name, so another host) may take it over only because the operator confirmed the old pod deleted."""
    root = JobRoot(tmp_path)
    write_lock(root, hostname="clicks-r1-driver", pid=4242, runId="r-dead-pod")
    monkeypatch.setenv("PLANENGINE_TAKE_OVER_RUN_LOCK", "1")
    with caplog.at_level(logging.WARNING):
        acquire_run_lock(root, "r-next-pod")
    assert check_run_lock(root, "r-next-pod") and not check_run_lock(root, "r-dead-pod")
    assert "PLANENGINE_TAKE_OVER_RUN_LOCK=1 says it is gone" in caplog.text


def test_an_unreadable_lock_is_not_taken_over(tmp_path):
    root = JobRoot(tmp_path)
    root.lock_path.write_text("garbage")
    with pytest.raises(JobRootLocked, match="unreadable lock file"):
        acquire_run_lock(root, "r-1")


def test_a_run_whose_lock_was_taken_over_is_fenced(tmp_path):
    root = JobRoot(tmp_path)
    acquire_run_lock(root, "r-old")
    write_lock(root, hostname="elsewhere", runId="r-new")  # e.g. the operator started the new engine
    assert not check_run_lock(root, "r-old")
    with pytest.raises(RunLockLost, match="now held by run r-new"):
        ensure_run_lock(root, "r-old")
    assert not release_run_lock(root, "r-old")
    assert check_run_lock(root, "r-new")
    root.lock_path.unlink()
    with pytest.raises(RunLockLost, match="lock file is gone"):
        ensure_run_lock(root, "r-old")


def test_context_manager_releases_on_error(tmp_path):
    root = JobRoot(tmp_path)
    with pytest.raises(RuntimeError), run_lock(root, "r-1"):
        assert check_run_lock(root, "r-1")
        raise RuntimeError("driver failed")
    assert not root.lock_path.exists()


def test_exactly_one_of_many_concurrent_runs_wins(tmp_path):
    root = JobRoot(tmp_path)
    procs = [start_holder(root, f"r-{i}") for i in range(6)]
    try:
        outcomes = [p.stdout.readline().strip() for p in procs]
        assert sorted(outcomes) == ["acquired"] + ["locked"] * 5
        winner = outcomes.index("acquired")
        assert check_run_lock(root, f"r-{winner}")
    finally:
        for p in procs:
            finish(p)
