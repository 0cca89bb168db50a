"""What every launcher offers the reconciler; results are plain data the state machine understands."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from planengine_operator.statemachine import DriverObservation


class ToolPending(Exception):
    """A short-lived tool (compile/check/migrate pod) or a standby's warm-up is still running; look again
    after ``delay`` seconds."""

    def __init__(self, message: str, *, delay: float = 2.0) -> None:
        super().__init__(message)
        self.delay = delay


class LaunchError(Exception):
    """A side effect failed; ``permanent`` ones (user errors, exit 2) end the operation."""

    def __init__(self, message: str, *, reason: str = "LaunchFailed", permanent: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.permanent = permanent


@dataclasses.dataclass(frozen=True)
class ToolRun:
    exit_code: int
    stdout: str
    stderr: str


@dataclasses.dataclass(frozen=True)
class JobRef:
    """Identity of a job as the launchers need it."""

    namespace: str
    name: str
    uid: str
    job_root: str
    body: dict[str, Any]  # the SparkPlanJob (for owner references and spec)
    # The operation step an action runs for (type, start and step of ``status.operation``): a tool result belongs
    # to the request that started it, so a launcher that finds a finished tool from another request starts anew.
    request: str = ""


class Launcher(Protocol):
    kind: str
    # Whether ``standby``/``activate`` can run a warm standby next to the driver (else upgrades start cold).
    supports_standby: bool

    def job_root(self, namespace: str, name: str, spec: dict[str, Any]) -> str: ...

    def plan_path(self, job: JobRef) -> str:
        """Where the engine's processes read the plan in force (``run --plan``)."""
        ...

    async def run_tool(self, job: JobRef, engine: str, key: str, argv: list[str],
                       files: dict[str, str] | None = None) -> ToolRun: ...

    async def launch(self, job: JobRef, engine: str, run_id: str, argv: list[str]) -> dict[str, Any]: ...

    async def observe(self, job: JobRef) -> DriverObservation: ...

    async def standby(self, job: JobRef, engine: str, run_id: str, argv: list[str], timeout: float) -> str:
        """Start (or find) the standby of ``run_id``: ``"ready"`` once it reports phase Standby,
        ``"unsupported"`` for an engine without the mode; ``ToolPending`` while it warms up, ``LaunchError``
        (after killing it) when it failed or timed out."""
        ...

    async def activate(self, job: JobRef, run_id: str, snapshot_path: str | None, timeout: float) -> dict[str, Any]:
        """``POST /v1/start`` on the standby of ``run_id``; it becomes the job's driver (name, statusUrl)."""
        ...

    async def discard_standby(self, job: JobRef) -> None:
        """Kill the standby, if any (it wrote nothing in the job root)."""
        ...

    async def driver_url(self, job: JobRef) -> str | None: ...

    async def stop(self, job: JobRef, *, snapshot: bool, timeout: float) -> dict[str, Any]: ...

    async def read_file(self, job: JobRef, relpath: str) -> str | None: ...

    async def write_file(self, job: JobRef, relpath: str, text: str) -> None: ...

    async def list_snapshots(self, job: JobRef) -> list[dict[str, Any]]: ...

    async def delete_snapshot(self, job: JobRef, snapshot_id: str) -> None: ...

    async def close(self) -> None: ...
