"""A restart whose dead driver never made its run directory (it died while Spark started: a bad executor setting,
an image without a jar): ``planengine snapshot --job-root`` has nothing to fork and says so (exit 2).

Before, the Fork step treated that as a passing tool failure and ran the snapshot tool again on every tick, a new
tool pod each time, for good (seen with executor pods that could not fetch a jar). Now the restart starts from
what the dead run would have started from: the latest snapshot, else ``spec.initialSnapshot``, else empty state;
a rollback keeps its snapshot. Other tool failures are still retried.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from planengine.commands import snapshot
from planengine.errors import UserError
from planengine_operator.config import OperatorConfig
from planengine_operator.launchers.base import JobRef, ToolRun
from planengine_operator.models import JobSpec, JobStatus, Operation, SnapshotRef
from planengine_operator.reconciler import NO_RUN_TO_SNAPSHOT, Reconciler
from planengine_operator.statemachine import Action, JobView, Result, advance

CONFIG = OperatorConfig.model_validate({"engines": {"0.1": {"image": "ghcr.io/planengine/engine:0.1"}},
                                        "metrics": {"port": 0}})
NO_RUN = ToolRun(2, "", f"planengine: error: job root /jobs/j {NO_RUN_TO_SNAPSHOT}\n  hint: start one with "
                        "planengine run")


class OneToolLauncher:
    """Answers every tool run with ``answer`` and counts the runs."""

    kind = "kubernetes"

    def __init__(self, answer: ToolRun) -> None:
        self.answer, self.runs = answer, 0

    async def run_tool(self, job: JobRef, engine: str, key: str, argv: list[str],
                       files: dict[str, str] | None = None) -> ToolRun:
        self.runs += 1
        return self.answer


def _fork(answer: ToolRun, *, status: JobStatus | None = None, spec: dict[str, Any] | None = None,
          **params: Any) -> tuple[Result, JobView]:
    launcher = OneToolLauncher(answer)
    reconciler = Reconciler(CONFIG, launcher, fleet=None)  # type: ignore[arg-type]
    job_spec = JobSpec.model_validate({"engineVersion": "0.1", "plan": {"sql": "INSERT INTO s SELECT 1"},
                                       **(spec or {})})
    status = (status or JobStatus(runId="r1")).model_copy(update={"operation": Operation(
        type="Restart", step="Fork", runId="r2", engineVersion="0.1")})
    view = JobView(name="j", namespace="ns", generation=1, spec=job_spec, status=status,
                   config=CONFIG, job_root="/jobs/j", now=datetime.now(UTC), new_run_id="r2")
    job = JobRef("ns", "j", "uid", "/jobs/j", {})
    result = asyncio.run(reconciler._execute(job, view, Action("fork", {"runId": "r1", **params})))
    assert launcher.runs == 1
    return result, view


def _next(view: JobView, result: Result) -> Operation:
    decision = advance(view, Action("fork", {"runId": "r1"}), result)
    assert decision.status is not None and decision.status.operation is not None
    return decision.status.operation


def test_no_run_at_all_restarts_empty_when_nothing_was_ever_committed() -> None:
    result, view = _fork(NO_RUN)
    assert result.ok and result.values == {"snapshot": None, "forked": False}
    launch = _next(view, result)
    assert (launch.step, launch.snapshot, launch.snapshotPath) == ("Launch", None, None)


def test_no_run_restarts_from_the_latest_snapshot() -> None:
    status = JobStatus(runId="r1", lastSnapshot=SnapshotRef(id="s-7", reason="upgrade"))
    result, view = _fork(NO_RUN, status=status)
    assert result.ok and result.values["snapshot"] == "s-7"
    launch = _next(view, result)  # the state machine launches from it, not from empty state
    assert (launch.step, launch.snapshot, launch.snapshotPath) == ("Launch", "s-7", None)


def test_no_run_restarts_from_the_initial_snapshot_of_a_job_that_never_ran() -> None:
    result, view = _fork(NO_RUN, spec={"initialSnapshot": {"uri": "file:///snapshots/base"}})
    assert result.ok and result.values == {"snapshotPath": "/snapshots/base", "forked": False}
    launch = _next(view, result)
    assert (launch.step, launch.snapshot, launch.snapshotPath) == ("Launch", None, "/snapshots/base")


def test_a_rollback_without_a_run_keeps_its_snapshot() -> None:
    result, _ = _fork(NO_RUN, base="s-3")
    assert result.ok and result.values == {"snapshot": "s-3", "forked": False}


@pytest.mark.parametrize("answer", [ToolRun(1, "", "java.io.IOException: disk full"), ToolRun(137, "", "")])
def test_other_snapshot_failures_are_retried(answer: ToolRun) -> None:
    result, _ = _fork(answer)
    assert not result.ok and not result.values.get("permanent")


def test_the_engine_says_what_the_operator_looks_for(tmp_path: Path) -> None:
    """The phrase is the engine's own (``planengine snapshot`` on a job root without runs), not a guess."""
    with pytest.raises(UserError) as raised:
        snapshot.run(argparse.Namespace(job_root=str(tmp_path), reason="manual"))
    assert NO_RUN_TO_SNAPSHOT in raised.value.message
