"""A user's own files: each interactive session's Spark log is new, in a directory only the user can enter."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from planengine.client.state import session_jobs_dir, session_log_file, session_name


def test_sessions_are_named_by_start_and_process() -> None:
    started = datetime(2026, 12, 7, 10, 15, 30, tzinfo=UTC)
    assert session_name(started, pid=4242) == "sql-20261207T101530Z-4242"
    assert session_name(started, pid=4243) != session_name(started, pid=4242)  # two sessions in one second
    assert session_name().startswith("sql-") and session_name().endswith(f"-{os.getpid()}")


def test_each_session_has_its_own_private_spark_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    log = session_log_file("sql-20261207T101530Z-4242")
    assert log == tmp_path / "planengine" / "logs" / "sql-20261207T101530Z-4242.log"
    assert log.is_file() and stat.S_IMODE(log.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700


def test_each_session_has_its_own_jobs_directory_among_the_users_state(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    jobs = session_jobs_dir("sql-20261207T101530Z-4242")
    assert jobs == tmp_path / "planengine" / "jobs" / "sql-20261207T101530Z-4242"
    assert not jobs.exists()  # the first job creates it: a session without INSERT leaves nothing behind
    assert stat.S_IMODE(jobs.parent.stat().st_mode) == 0o700
