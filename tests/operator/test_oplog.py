"""The operator's log: decisions once at INFO with job and step; kopf's per-tick success lines dropped."""

from __future__ import annotations

import logging

import pytest

from planengine_operator import oplog
from planengine_operator.models import JobStatus, Operation
from planengine_operator.statemachine import Event


def _record(message: str, level: int = logging.INFO) -> logging.LogRecord:
    return logging.LogRecord("kopf.objects", level, __file__, 1, message, (), None)


def test_tick_successes_are_dropped_and_failures_kept() -> None:
    quiet = oplog.QuietTicks()
    assert not quiet.filter(_record("Timer 'tick' succeeded."))
    assert quiet.filter(_record("Timer 'tick' failed with an exception. Will retry.", logging.ERROR))
    assert quiet.filter(_record("Handler 'create' succeeded."))


def test_the_filter_is_installed_once() -> None:
    oplog.quiet_ticks()
    oplog.quiet_ticks()
    assert logging.getLogger("kopf.objects").filters.count(oplog._FILTER) == 1


@pytest.mark.parametrize(("status", "step"), [
    (JobStatus(phase="Upgrading", operation=Operation(type="Upgrade", step="Handover")), "Upgrade/Handover"),
    (JobStatus(phase="Running"), "Running"),
])
def test_a_decision_is_one_line_with_the_job_and_its_step(caplog: pytest.LogCaptureFixture, status: JobStatus,
                                                          step: str) -> None:
    with caplog.at_level(logging.INFO, logger="planengine_operator.decisions"):
        oplog.log_decision("team-a", "clicks", status, Event("Normal", "UpgradeStarted", "0.1 -> 0.2"))
        oplog.log_decision("team-a", "clicks", status, Event("Warning", "RolledBack", "no progress"))
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, f"team-a/clicks [{step}] UpgradeStarted: 0.1 -> 0.2"),
        (logging.WARNING, f"team-a/clicks [{step}] RolledBack: no progress")]
