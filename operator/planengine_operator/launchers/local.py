"""The local launcher: the engine CLI as processes on this machine.

Used by ``planengine-operator --local`` (no cluster needed for the engine) and by the end-to-end tests.
The driver's pid and status port are recorded in ``<job root>/.operator/driver.json`` so an operator that
restarts finds (adopts) the driver it started before instead of starting a second one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from planengine_operator import driverapi
from planengine_operator.config import OperatorConfig
from planengine_operator.launchers.base import JobRef, LaunchError, ToolRun
from planengine_operator.statemachine import DriverObservation

DRIVER_RECORD = ".operator/driver.json"
WRITER_LOCK = "writer.lock"


# Interpreter choices of *one* Python installation: an engine build must not inherit the operator's (or
# another build's), or Spark's Python workers would run a different PySpark than the driver's JVM.
_NOT_INHERITED = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")


def engine_env(**extra: str) -> dict[str, str]:
    """The environment of an engine process: the operator's, minus interpreter pins, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pid_alive(pid: int) -> bool:
    """True for a live process; reaps our own exited children and treats zombies as dead."""
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


class LocalLauncher:
    kind = "local"

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    # -------------------------------------------------------------------------------- paths
    def job_root(self, namespace: str, name: str, spec: dict[str, Any]) -> str:
        storage = spec.get("storage") or {}
        if storage.get("uri"):
            uri = str(storage["uri"])
            return uri[len("file://"):] if uri.startswith("file://") else uri
        root = Path(self.config.jobRootBase) / namespace / name
        sub = (storage.get("pvc") or {}).get("subPath")
        return str(root / sub) if sub else str(root)

    def command(self, engine: str) -> list[str]:
        entry = self.config.engine(engine)
        if entry is None:
            raise LaunchError(f"engine {engine} is not in the engine catalog", reason="UnknownEngineVersion",
                              permanent=True)
        return list(entry.localCommand)

    # -------------------------------------------------------------------------------- tools
    async def run_tool(self, job: JobRef, engine: str, key: str, argv: list[str],
                       files: dict[str, str] | None = None) -> ToolRun:
        """Run ``<localCommand> argv`` to completion (compile/check/migrate/snapshot are short)."""
        root = Path(job.job_root)
        work = root / ".operator" / "tools" / key
        work.mkdir(parents=True, exist_ok=True)
        for relpath, text in (files or {}).items():
            (work / relpath).write_text(text)
        full = [*self.command(engine), *[a.replace("{work}", str(work)) for a in argv]]
        try:
            proc = await asyncio.create_subprocess_exec(
                *full, cwd=str(root), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env=engine_env(PLANENGINE_JOB=f"{job.namespace}/{job.name}"),
            )
        except OSError as exc:
            raise LaunchError(f"cannot run {full[0]}: {exc}", reason="EngineCommandMissing") from exc
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.config.timing.toolTimeout)
        except TimeoutError as exc:
            proc.kill()
            await proc.wait()
            raise LaunchError(f"{' '.join(full[:3])} timed out", reason="ToolTimeout") from exc
        return ToolRun(int(proc.returncode or 0), out.decode(errors="replace"), err.decode(errors="replace"))

    # -------------------------------------------------------------------------------- driver
    async def launch(self, job: JobRef, engine: str, run_id: str, argv: list[str]) -> dict[str, Any]:
        """Start the driver for ``run_id`` unless it already runs; the lock file names the only writer."""
        root = Path(job.job_root)
        record = self._record(job)
        if record and record.get("runId") == run_id and pid_alive(int(record["pid"])):
            return {"name": str(record["pid"]), "statusUrl": record["statusUrl"]}
        await self.stop(job, snapshot=False, timeout=10)  # never two writers
        (root / ".operator").mkdir(parents=True, exist_ok=True)
        (root / WRITER_LOCK).write_text(json.dumps({"runId": run_id, "job": f"{job.namespace}/{job.name}"}))
        port = _free_port()
        full = [*self.command(engine), *argv, "--status-port", str(port)]
        log = open(root / ".operator" / f"driver-{run_id}.log", "ab")  # noqa: SIM115 - owned by the child
        env = engine_env(PLANENGINE_RUN_ID=run_id, PLANENGINE_WRITER_LOCK=str(root / WRITER_LOCK))
        try:
            proc = subprocess.Popen(full, cwd=str(root), stdout=log, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
        except OSError as exc:
            raise LaunchError(f"cannot run {full[0]}: {exc}", reason="EngineCommandMissing") from exc
        finally:
            log.close()
        self._children[proc.pid] = proc
        url = f"http://127.0.0.1:{port}"
        (root / DRIVER_RECORD).write_text(json.dumps(
            {"pid": proc.pid, "runId": run_id, "statusUrl": url, "engine": engine, "startedAt": time.time()}
        ))
        return {"name": str(proc.pid), "statusUrl": url}

    def _record(self, job: JobRef) -> dict[str, Any] | None:
        try:
            return json.loads((Path(job.job_root) / DRIVER_RECORD).read_text())
        except (OSError, ValueError):
            return None

    def _exit_code(self, pid: int) -> int | None:
        child = self._children.get(pid)
        return None if child is None else child.poll()

    async def driver_url(self, job: JobRef) -> str | None:
        record = self._record(job)
        return record.get("statusUrl") if record else None

    async def observe(self, job: JobRef) -> DriverObservation:
        record = self._record(job)
        if not record:
            return DriverObservation.gone()
        pid = int(record["pid"])
        if not pid_alive(pid):
            return DriverObservation.gone(self._exit_code(pid))
        status = await driverapi.get_status(record["statusUrl"], timeout=2.0)
        if status is None:
            return DriverObservation(running=True, run_id=record.get("runId"))
        batches, exception, _ = driverapi.summarize(status)
        return DriverObservation(running=True, run_id=record.get("runId"), healthy=True, batches=batches,
                                 exception=exception)

    async def stop(self, job: JobRef, *, snapshot: bool, timeout: float) -> dict[str, Any]:
        """Stop the driver: with a snapshot through the status API, else SIGKILL; waits until it is gone."""
        record = self._record(job)
        if not record:
            return {}
        pid = int(record["pid"])
        answer: dict[str, Any] = {}
        if pid_alive(pid):
            if snapshot:
                try:
                    answer = await driverapi.stop(record["statusUrl"], snapshot=True, timeout=timeout)
                except driverapi.DriverApiError:
                    if pid_alive(pid):
                        raise
            else:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            deadline = time.monotonic() + timeout
            while pid_alive(pid):
                if time.monotonic() > deadline:
                    raise LaunchError(f"driver pid {pid} did not exit within {timeout:g}s", reason="StopTimeout")
                await asyncio.sleep(0.1)  # bounded wait for the process to exit, not a retry delay
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # stray children (Spark JVM) of a stopped driver
        self._children.pop(pid, None)
        return answer

    # -------------------------------------------------------------------------------- job root files
    async def read_file(self, job: JobRef, relpath: str) -> str | None:
        try:
            return (Path(job.job_root) / relpath).read_text()
        except OSError:
            return None

    async def write_file(self, job: JobRef, relpath: str, text: str) -> None:
        path = Path(job.job_root) / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)

    async def list_snapshots(self, job: JobRef) -> list[dict[str, Any]]:
        """Manifests of ``snapshots/*/manifest.json`` (only complete snapshots have one), oldest first."""
        found = []
        for manifest in sorted((Path(job.job_root) / "snapshots").glob("*/manifest.json")):
            try:
                data = json.loads(manifest.read_text())
            except (OSError, ValueError):
                continue
            data.setdefault("id", manifest.parent.name)
            data["_mtime"] = manifest.stat().st_mtime
            found.append(data)
        return sorted(found, key=lambda m: m["_mtime"])

    async def delete_snapshot(self, job: JobRef, snapshot_id: str) -> None:
        target = Path(job.job_root) / "snapshots" / snapshot_id
        if target.is_dir() and target.parent.name == "snapshots":
            shutil.rmtree(target, ignore_errors=True)

    async def close(self) -> None:
        """Drivers keep running when the operator exits (like pods); only reap what has exited."""
        for pid in list(self._children):
            if not pid_alive(pid):
                self._children.pop(pid, None)
