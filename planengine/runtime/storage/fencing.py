"""Run fencing: at most one run writes to a job root at a time.

Two drivers committing into one job root (an old engine that did not die during an upgrade, a user
starting a second ``planengine run``) would interleave sink commits and corrupt state. The lock is the object
``RUN_LOCK`` of the root's store, holding the owner's run id, pid, hostname and start time. It is built on the
store's three guarantees alone (``job_store``: whole objects, create-if-absent, compare-and-swap), so it holds on
a local disk, a shared ReadWriteMany volume and an S3 bucket alike, with no lock server:

* ``acquire_run_lock`` creates it if absent (a directory: a fully written temp file ``link``ed into place; S3:
  ``If-None-Match: *``): of any number of starters exactly one wins. A lock whose holder is a dead process on
  this host is stale and taken over, with a warning. A holder on another host cannot be probed, so it is
  reported and left to the user, unless whoever started this driver vouches that the holder is gone
  (``PLANENGINE_TAKE_OVER_RUN_LOCK=1``): the operator's Kubernetes launcher starts a driver pod only after the
  previous driver pod of the job was confirmed deleted, and a pod that died (OOM, node loss) leaves its lock
  behind under a host name (its pod name) that no later pod has, so without the vouch every restart after a
  crash would be refused. A takeover is a compare-and-swap on the lock read, so two takers never both win.
* ``check_run_lock`` is the fence: the driver calls it before committing each batch and stops when
  another run took the root over (e.g. after its own lock was wrongly judged stale).
* ``release_run_lock`` deletes the lock only if it is still the version this run holds.

The run id is the fencing token: run ids are unique per job root, and one run has one driver.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planengine.errors import UserError
from planengine.runtime.storage.files import utc_now_iso
from planengine.runtime.storage.job_root import LOCK_FILE, JobRoot
from planengine.runtime.storage.job_store import AlreadyExists, Conflict, JobStore

log = logging.getLogger("planengine.runtime.fencing")  # fixed: log lines show it (cli.py)

_TAKEOVER_ATTEMPTS = 5
# Set by a launcher that confirmed every earlier driver of the job root gone before starting this one.
TAKE_OVER_ENV = "PLANENGINE_TAKE_OVER_RUN_LOCK"


class JobRootLocked(UserError):
    """Another run holds the job root; the message names it and says how to free the root."""


class RunLockLost(UserError):
    """This run no longer holds the job root's lock: another run took over, so this one must stop."""


@dataclass(frozen=True)
class RunLock:
    """The content of ``RUN_LOCK``."""

    run_id: str
    pid: int
    hostname: str
    acquired_at: str
    pid_start_time: str | None = None  # guards against pid reuse on Linux

    def to_json(self) -> str:
        return json.dumps(
            {
                "runId": self.run_id,
                "pid": self.pid,
                "hostname": self.hostname,
                "acquiredAt": self.acquired_at,
                "pidStartTime": self.pid_start_time,
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> RunLock:
        data: Any = json.loads(text)
        return cls(
            run_id=str(data["runId"]),
            pid=int(data["pid"]),
            hostname=str(data["hostname"]),
            acquired_at=str(data["acquiredAt"]),
            pid_start_time=data.get("pidStartTime"),
        )

    def describe(self) -> str:
        return f"run {self.run_id} (pid {self.pid} on {self.hostname}, since {self.acquired_at})"


def acquire_run_lock(job_root: JobRoot | JobStore, run_id: str) -> RunLock:
    """Make ``run_id`` the only writer of ``job_root`` or raise ``JobRootLocked``.

    Re-acquiring from the process that holds the lock is a no-op. A lock left by a process of this host
    that no longer exists is taken over (logged as a warning), as is any lock when the launcher vouches
    (``PLANENGINE_TAKE_OVER_RUN_LOCK=1``). A takeover swaps the holder's lock for ours only if it is still the
    one we read (``JobStore.replace`` with the version read), so of two takers exactly one wins.
    """
    store = _store(job_root)
    mine = RunLock(run_id, os.getpid(), socket.gethostname(), utc_now_iso(), _process_start_time(os.getpid()))
    data = mine.to_json().encode("utf-8")
    for _ in range(_TAKEOVER_ATTEMPTS):
        try:
            store.create(LOCK_FILE, data)
            return mine
        except AlreadyExists:
            pass
        current = store.read(LOCK_FILE)
        if current is None:  # released between our attempt and the read: try again
            continue
        holder = _parse(current.data)
        if holder is None:  # written by something else than this module: do not guess
            raise JobRootLocked(
                f"job root {store.describe()} has an unreadable lock file {store.location(LOCK_FILE)}; "
                f"cannot start run {run_id}",
                hint=f"make sure no run uses this job root, then delete {store.location(LOCK_FILE)}",
            )
        if _is_this_process(holder) and holder.run_id == run_id:
            return holder
        vouched = os.environ.get(TAKE_OVER_ENV) == "1"
        if not _is_stale(holder) and not vouched:
            raise JobRootLocked(
                f"job root {store.describe()} is in use by {holder.describe()}; cannot start run {run_id}",
                hint=_how_to_free(holder, store.location(LOCK_FILE)),
            )
        log.warning("taking over the %s lock %s of %s: %s", "stale" if not vouched else "released",
                    store.location(LOCK_FILE), holder.describe(),
                    f"{TAKE_OVER_ENV}=1 says it is gone" if vouched else "its process is gone from this host")
        try:
            store.replace(LOCK_FILE, data, expected=current.version)
            return mine
        except Conflict:  # another run took it over or released it meanwhile: look again
            continue
    raise JobRootLocked(
        f"job root {store.describe()}: could not acquire {store.location(LOCK_FILE)} after {_TAKEOVER_ATTEMPTS} "
        "attempts (other runs keep taking it)",
        hint="make sure only one driver is started for this job",
    )


def check_run_lock(job_root: JobRoot | JobStore, run_id: str) -> bool:
    """True while ``run_id`` holds the lock; call before each batch commit and stop when False."""
    holder = _holder(_store(job_root))
    return holder is not None and holder.run_id == run_id


def ensure_run_lock(job_root: JobRoot | JobStore, run_id: str) -> None:
    """Like ``check_run_lock`` but raises ``RunLockLost`` naming the new holder, for use as a fence."""
    store = _store(job_root)
    holder = _holder(store)
    if holder is not None and holder.run_id == run_id:
        return
    now = f"it is now held by {holder.describe()}" if holder is not None else "the lock file is gone"
    raise RunLockLost(
        f"run {run_id} lost the lock of job root {store.describe()}: {now}",
        hint="this run must stop without committing; only one run may write to a job root",
    )


def release_run_lock(job_root: JobRoot | JobStore, run_id: str) -> bool:
    """Remove the lock if ``run_id`` holds it; returns whether it did. Never removes another run's lock: the
    delete is conditional on the version read, so a takeover between the read and the delete wins."""
    store = _store(job_root)
    current = store.read(LOCK_FILE)
    holder = _parse(current.data) if current is not None else None
    if current is None or holder is None or holder.run_id != run_id:
        return False
    try:
        store.delete(LOCK_FILE, expected=current.version)
        return True
    except Conflict:
        return False


@contextmanager
def run_lock(job_root: JobRoot | JobStore, run_id: str) -> Iterator[RunLock]:
    """``with run_lock(root, run.run_id):`` holds the root for the block and releases it after."""
    lock = acquire_run_lock(job_root, run_id)
    try:
        yield lock
    finally:
        release_run_lock(job_root, run_id)


# -- helpers -----------------------------------------------------------------------------------------
def _store(job_root: JobRoot | JobStore) -> JobStore:
    """The store holding the lock: a job root's, or a store given directly (an object-store root, its tests)."""
    return job_root.store if isinstance(job_root, JobRoot) else job_root


def _holder(store: JobStore) -> RunLock | None:
    current = store.read(LOCK_FILE)
    return _parse(current.data) if current is not None else None


def _parse(data: bytes) -> RunLock | None:
    try:
        return RunLock.from_json(data.decode("utf-8"))
    except (ValueError, KeyError, TypeError):  # UnicodeDecodeError is a ValueError
        return None


def _is_this_process(holder: RunLock) -> bool:
    return holder.hostname == socket.gethostname() and holder.pid == os.getpid()


def _is_stale(holder: RunLock) -> bool:
    """Only a holder on this host can be judged: its pid is gone, or was reused by a newer process."""
    if holder.hostname != socket.gethostname():
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # exists, owned by someone else
    start = _process_start_time(holder.pid)
    return holder.pid_start_time is not None and start is not None and start != holder.pid_start_time


def _process_start_time(pid: int) -> str | None:
    """Start time of ``pid`` in clock ticks since boot (Linux ``/proc``); None where unavailable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22; the command name (field 2) may contain spaces, so split after its closing parenthesis.
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _how_to_free(holder: RunLock, path: str) -> str:
    stop = f"stop {holder.run_id} first (POST /v1/stop on its status port, or stop its SparkPlanJob)"
    if holder.hostname == socket.gethostname():
        return f"{stop}; pid {holder.pid} is still running on this host"
    return f"{stop}; if host {holder.hostname} or that process is gone for good, delete {path}"
