"""The local launcher: the engine CLI as processes on this machine.

Used by ``planengine-operator --local`` (no cluster needed for the engine) and by the end-to-end tests.
The driver's pid and status port are recorded in ``<job root>/.operator/driver.json`` so an operator that
restarts finds (adopts) the driver it started before instead of starting a second one. A warm standby of an
upgrade's target (``planengine run --standby``) is recorded in ``<job root>/.operator/standby.json`` until
``POST /v1/start`` makes it the driver (its record then moves to ``driver.json``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from planengine_operator import builders, driverapi, podpolicy, storage
from planengine_operator.config import OperatorConfig
from planengine_operator.launchers.base import JobRef, LaunchError, ToolPending, ToolRun
from planengine_operator.statemachine import DriverObservation

DRIVER_RECORD = ".operator/driver.json"
STANDBY_RECORD = ".operator/standby.json"
# The job's control token (docs/operator.md, "Driver API"): a 0600 file only this user reads, named to the
# engine by PLANENGINE_CONTROL_TOKEN_FILE (an environment variable, so engines before the token still start).
CONTROL_TOKEN = ".operator/control-token"
WRITER_LOCK = "writer.lock"
STANDBY_POLL = 0.5  # seconds between looks at a warming standby (before the stop: no downtime cost)


# Interpreter choices of *one* Python installation: an engine build must not inherit the operator's (or
# another build's), or Spark's Python workers would run a different PySpark than the driver's JVM.
_NOT_INHERITED = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")


def engine_env(**extra: str) -> dict[str, str]:
    """The environment of an engine process: the operator's, minus interpreter pins, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env.update(extra)
    return env


def control_token(root: Path) -> tuple[Path, str]:
    """The job's control token file and token, created (0600, never widened) on first use."""
    path = root / CONTROL_TOKEN
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(32) + "\n")
    return path, path.read_text().strip()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Exit codes of our children that pid_alive reaped (Popen.poll cannot see them any more).
_REAPED: dict[int, int] = {}


def pid_alive(pid: int) -> bool:
    """True for a live process; reaps our own exited children and treats zombies as dead."""
    with contextlib.suppress(ChildProcessError, OSError):
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            _REAPED[pid] = os.waitstatus_to_exitcode(wait_status)
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


def _log_tail(path: Path, size: int = 4000) -> str:
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - size))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def local_spark_conf(spec: dict[str, Any]) -> dict[str, str]:
    """Spark settings of a local driver: the user's ``sparkConf`` and, with ``spec.executor``, its task slots
    as ``local[N]`` (executors run inside the driver process here). Empty for a spec that sets neither, so an
    engine without ``--conf`` still runs such jobs. Shuffle partitions are the plan's (compile time).

    >>> local_spark_conf({"executor": {"instances": 2, "cores": 2}, "sparkConf": {"spark.sql.shuffle.partitions": "8"}})
    {'spark.master': 'local[4]'}
    >>> local_spark_conf({})
    {}
    """
    conf = {"spark.master": f"local[{builders.task_slots(spec)}]"} if spec.get("executor") is not None else {}
    conf.update({k: str(v) for k, v in (spec.get("sparkConf") or {}).items()})
    conf.pop("spark.sql.shuffle.partitions", None)
    return conf


def _owner(job: JobRef) -> str:
    return f"{job.namespace}/{job.name}/{job.uid}"


def lacks_standby(log_tail: str) -> bool:
    """An engine build without ``run --standby`` exits 2 with argparse's complaint about the flag.

    >>> lacks_standby("planengine: error: unrecognized arguments: --standby")
    True
    >>> lacks_standby("Traceback ... RuntimeError: boom")
    False
    """
    return "unrecognized arguments" in log_tail and "--standby" in log_tail


class LocalLauncher:
    kind = "local"
    supports_standby = True

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
        if sub and builders.sub_path_problem(str(sub)):
            # '..' or an absolute subPath would reach another job's root (another namespace's); validation
            # reports the spec and nothing runs, and this distinct path inside the job's own directory keeps
            # the launcher from ever naming a directory outside it.
            return str(root / ".invalid-subpath")
        return builders.normalized_root(str(root / str(sub))) if sub else str(root)

    def _check_storage(self, job: JobRef) -> None:
        """Refuse an ``s3a://`` job root before any path is made of it: ``Path("s3a://b/p")`` is the relative
        directory ``s3a:/b/p``, where this launcher would write its records and the engine would never look.
        Validation reports the same spec as ``StorageUnsupported`` before an operation starts; this guards the
        launcher itself."""
        if storage.is_s3a(job.job_root):
            raise LaunchError(f"spec.storage.uri: {storage.LOCAL_S3A_MESSAGE}", reason="StorageUnsupported",
                              permanent=True)

    def command(self, engine: str) -> list[str]:
        entry = self.config.engine(engine)
        if entry is None:
            raise LaunchError(f"engine {engine} is not in the engine catalog", reason="UnknownEngineVersion",
                              permanent=True)
        return list(entry.localCommand)

    # -------------------------------------------------------------------------------- tools
    def plan_path(self, job: JobRef) -> str:
        return f"{job.job_root}/plan.json"

    async def run_tool(self, job: JobRef, engine: str, key: str, argv: list[str],
                       files: dict[str, str] | None = None) -> ToolRun:
        """Run ``<localCommand> argv`` to completion (compile/check/migrate/snapshot are short)."""
        self._check_storage(job)
        root = Path(job.job_root)
        work = root / ".operator" / "tools" / key
        work.mkdir(parents=True, exist_ok=True)
        for relpath, text in (files or {}).items():
            (work / relpath).write_text(text)
        full = [*self.command(engine), *[a.replace("{work}", str(work)) for a in argv]]
        try:
            proc = await asyncio.create_subprocess_exec(
                *full, cwd=str(root), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env=engine_env(PLANENGINE_JOB=f"{job.namespace}/{job.name}", PLANENGINE_JOB_ROOT=job.job_root),
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
        self._check_storage(job)
        root = Path(job.job_root)
        record = self._record(job)
        if record and record.get("runId") == run_id and pid_alive(int(record["pid"])):
            return {"name": str(record["pid"]), "statusUrl": record["statusUrl"]}
        await self.stop(job, snapshot=False, timeout=10)  # never two writers
        (root / ".operator").mkdir(parents=True, exist_ok=True)
        (root / WRITER_LOCK).write_text(json.dumps({"runId": run_id, "job": f"{job.namespace}/{job.name}"}))
        pid, url = self._spawn(job, engine, run_id, argv, f"driver-{run_id}.log")
        (root / DRIVER_RECORD).write_text(json.dumps(
            {"pid": pid, "runId": run_id, "statusUrl": url, "engine": engine, "startedAt": time.time()}
        ))
        return {"name": str(pid), "statusUrl": url}

    def _record(self, job: JobRef, relpath: str = DRIVER_RECORD) -> dict[str, Any] | None:
        try:
            return json.loads((Path(job.job_root) / relpath).read_text())
        except (OSError, ValueError):
            return None

    def _spawn(self, job: JobRef, engine: str, run_id: str, argv: list[str], log_name: str) -> tuple[int, str]:
        """Start ``<localCommand> argv --status-port N [--conf ...]`` in its own process group; (pid, URL)."""
        root = Path(job.job_root)
        (root / ".operator").mkdir(parents=True, exist_ok=True)
        port = _free_port()
        full = [*self.command(engine), *argv, "--status-port", str(port),
                *builders.conf_args(local_spark_conf(
                    podpolicy.admitted_spec(dict(job.body.get("spec") or {}), self.config.admission)))]
        log = open(root / ".operator" / log_name, "ab")  # noqa: SIM115 - owned by the child
        token_file, _ = control_token(root)
        env = engine_env(PLANENGINE_RUN_ID=run_id, PLANENGINE_WRITER_LOCK=str(root / WRITER_LOCK),
                         PLANENGINE_CONTROL_TOKEN_FILE=str(token_file), PLANENGINE_JOB=f"{job.namespace}/{job.name}")
        try:
            proc = subprocess.Popen(full, cwd=str(root), stdout=log, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
        except OSError as exc:
            raise LaunchError(f"cannot run {full[0]}: {exc}", reason="EngineCommandMissing") from exc
        finally:
            log.close()
        self._children[proc.pid] = proc
        return proc.pid, f"http://127.0.0.1:{port}"

    # -------------------------------------------------------------------------------- standby
    async def standby(self, job: JobRef, engine: str, run_id: str, argv: list[str], timeout: float) -> str:
        """One standby per job: a standby of another run is killed first; then start it or look at it."""
        self._check_storage(job)
        root = Path(job.job_root)
        record = self._record(job, STANDBY_RECORD)
        if record and record.get("runId") != run_id:
            await self.discard_standby(job)
            record = None
        if record is None:
            pid, url = self._spawn(job, engine, run_id, [*argv, "--standby"], f"standby-{run_id}.log")
            (root / STANDBY_RECORD).write_text(json.dumps(
                {"pid": pid, "runId": run_id, "statusUrl": url, "engine": engine, "startedAt": time.time(),
                 "owner": _owner(job)}))
            raise ToolPending(f"standby of run {run_id} started (pid {pid})", delay=STANDBY_POLL)
        pid = int(record["pid"])
        log_path = root / ".operator" / f"standby-{run_id}.log"
        if not pid_alive(pid):
            code = self._exit_code(pid)
            await self.discard_standby(job)
            tail = _log_tail(log_path)
            if lacks_standby(tail):
                return "unsupported"
            raise LaunchError(f"the standby of engine {engine} exited (code {code}) before it was ready: "
                              f"{tail.strip()[-400:]}", reason="StandbyFailed")
        status = await driverapi.get_status(record["statusUrl"], timeout=2.0)
        phase = (status or {}).get("phase")
        if phase == "Standby" and status is not None and driverapi.supports_standby(status):
            return "ready"
        if status is not None and not phase:  # an engine that ignored the flag and started a run: never two
            await self.discard_standby(job)
            return "unsupported"
        if time.time() - float(record.get("startedAt") or 0) > timeout:
            await self.discard_standby(job)
            raise LaunchError(f"the standby of engine {engine} was not ready within {timeout:g}s (phase "
                              f"{phase or 'unknown'})", reason="StandbyTimeout")
        raise ToolPending(f"standby of run {run_id} is {phase or 'starting'}", delay=STANDBY_POLL)

    async def activate(self, job: JobRef, run_id: str, snapshot_path: str | None, timeout: float) -> dict[str, Any]:
        """Name the run in the writer lock, ``POST /v1/start``, then record the standby as the driver."""
        root = Path(job.job_root)
        driver = self._record(job)
        if driver and driver.get("runId") == run_id and pid_alive(int(driver["pid"])):
            return {"name": str(driver["pid"]), "statusUrl": driver["statusUrl"]}  # done before a crash of ours
        record = self._record(job, STANDBY_RECORD)
        if not record or record.get("runId") != run_id or not pid_alive(int(record["pid"])):
            raise LaunchError(f"the standby of run {run_id} is gone", reason="StandbyLost")
        if driver and pid_alive(int(driver["pid"])):
            await self.stop(job, snapshot=False, timeout=10)  # never two writers (the Stop step confirmed it)
        (root / WRITER_LOCK).write_text(json.dumps({"runId": run_id, "job": f"{job.namespace}/{job.name}"}))
        try:
            await driverapi.start(record["statusUrl"], from_snapshot=snapshot_path, timeout=timeout,
                                  token=control_token(root)[1])
        except driverapi.DriverApiError as exc:
            await self.discard_standby(job)
            raise LaunchError(str(exc), reason="StartFailed") from exc
        promoted = {**record, "startedAt": time.time()}
        (root / DRIVER_RECORD).write_text(json.dumps(promoted))
        (root / STANDBY_RECORD).unlink(missing_ok=True)
        return {"name": str(record["pid"]), "statusUrl": record["statusUrl"]}

    async def discard_standby(self, job: JobRef) -> None:
        """SIGKILL the standby's process group (before its start it holds no lock and wrote nothing)."""
        record = self._record(job, STANDBY_RECORD)
        if not record or record.get("owner") not in (None, _owner(job)):
            return
        pid = int(record["pid"])
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pid_alive(pid) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)  # bounded wait for the kill to land
        self._children.pop(pid, None)
        (Path(job.job_root) / STANDBY_RECORD).unlink(missing_ok=True)

    def _exit_code(self, pid: int) -> int | None:
        if pid in _REAPED:
            return _REAPED[pid]
        child = self._children.get(pid)
        return None if child is None else child.poll()

    async def driver_url(self, job: JobRef) -> str | None:
        record = self._record(job)
        return record.get("statusUrl") if record else None

    async def observe(self, job: JobRef) -> DriverObservation:
        standby = self._record(job, STANDBY_RECORD)
        # Only this job's standby: another SparkPlanJob pointed at the same root (refused, JobRootInUse)
        # must neither see nor discard it.
        mine = standby is not None and standby.get("owner") in (None, _owner(job))
        standby_run = standby.get("runId") if mine and standby and pid_alive(int(standby["pid"])) else None
        record = self._record(job)
        if not record:
            return DriverObservation(standby_run_id=standby_run)
        pid = int(record["pid"])
        if not pid_alive(pid):
            return DriverObservation(exit_code=self._exit_code(pid), standby_run_id=standby_run)
        status = await driverapi.get_status(record["statusUrl"], timeout=2.0)
        if status is None:
            return DriverObservation(running=True, run_id=record.get("runId"), standby_run_id=standby_run)
        batches, exception, _ = driverapi.summarize(status)
        idle, not_idle = driverapi.idleness(status)
        return DriverObservation(running=True, run_id=record.get("runId"), healthy=True, batches=batches,
                                 exception=exception, standby_run_id=standby_run, idle=idle,
                                 not_idle=not_idle)

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
                    answer = await driverapi.stop(record["statusUrl"], snapshot=True, timeout=timeout,
                                                  token=control_token(Path(job.job_root))[1])
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
        self._check_storage(job)
        try:
            return (Path(job.job_root) / relpath).read_text()
        except OSError:
            return None

    async def write_file(self, job: JobRef, relpath: str, text: str) -> None:
        self._check_storage(job)
        path = Path(job.job_root) / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)

    async def list_snapshots(self, job: JobRef) -> list[dict[str, Any]]:
        """Manifests of ``snapshots/*/manifest.json`` (only complete snapshots have one), oldest first."""
        self._check_storage(job)
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
        self._check_storage(job)
        target = Path(job.job_root) / "snapshots" / snapshot_id
        if target.is_dir() and target.parent.name == "snapshots":
            shutil.rmtree(target, ignore_errors=True)

    async def close(self) -> None:
        """Drivers keep running when the operator exits (like pods); only reap what has exited."""
        for pid in list(self._children):
            if not pid_alive(pid):
                self._children.pop(pid, None)
