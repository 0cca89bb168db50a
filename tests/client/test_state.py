"""A user's own files: each interactive session's Spark log is new, in a directory only the user can enter."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from planengine.client.state import session_log_file


def test_each_session_has_its_own_private_spark_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    started = datetime(2026, 12, 7, 10, 15, 30, tzinfo=UTC)
    first = session_log_file(started, pid=4242)
    assert first == tmp_path / "planengine" / "logs" / "sql-20261207T101530Z-4242.log"
    assert first.is_file() and stat.S_IMODE(first.stat().st_mode) == 0o600
    assert stat.S_IMODE(first.parent.stat().st_mode) == 0o700
    assert session_log_file(started, pid=4243) != first  # two sessions in one second
    assert session_log_file().name.startswith("sql-") and session_log_file().parent == first.parent
