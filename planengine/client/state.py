"""Where the SQL client keeps what belongs to one user: the statement history and, per session, Spark's log and
the jobs started without a job root.

Both used to sit in places every user of the machine shares or can read: one fixed Spark log in the system temp
directory that every session of every user appended to (or could not, when another user had created it), and a
history file created with the default umask. A history holds every statement typed, secrets in ``WITH (...)``
included, and a log holds the statements' errors, so both live in the user's own state directory (XDG's
``$XDG_STATE_HOME``, else ``~/.local/state``) in directories only they can enter, in files only they can read; each
session gets a log of its own, so the log one is told about at start holds that session only. Jobs went to one
directory per plan under the system temp directory, so a session whose INSERT equalled an earlier session's (any
user's) silently continued that job; now each session's jobs have a directory of their own.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

APP = "planengine"
HISTORY_FILE = "sql_history"


def state_dir() -> Path:
    """``$XDG_STATE_HOME/planengine``, else ``~/.local/state/planengine`` (a relative ``XDG_STATE_HOME`` is ignored,
    as the XDG base directory specification asks)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "state"
    return root / APP


def private_dir(path: Path) -> Path:
    """``path`` created if missing, with the last level readable by its owner only (0700)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.mkdir(exist_ok=True, mode=0o700)
    path.chmod(0o700)
    return path


def private_file(path: Path) -> Path:
    """``path`` created empty if missing, readable and writable by its owner only (0600)."""
    os.close(os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600))
    path.chmod(0o600)
    return path


def history_file() -> Path:
    """The prompt's history: ``PLANENGINE_HISTORY`` when set, else ``<state dir>/sql_history``; created 0600."""
    named = os.environ.get("PLANENGINE_HISTORY")
    if named:
        path = Path(named)
        path.parent.mkdir(parents=True, exist_ok=True)
    else:
        path = private_dir(state_dir()) / HISTORY_FILE
    return private_file(path)


def session_name(started: datetime | None = None, pid: int | None = None) -> str:
    """``sql-<UTC start>-<pid>``: the start time sorts a user's sessions, the process id tells apart two sessions
    started in the same second. A session's log and its jobs directory share it."""
    stamp = (started or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"sql-{stamp}-{os.getpid() if pid is None else pid}"


def session_log_file(session: str) -> Path:
    """A new file for this session's Spark log: ``<state dir>/logs/<session>.log``, created 0600."""
    return private_file(private_dir(state_dir() / "logs") / f"{session}.log")


def session_jobs_dir(session: str) -> Path:
    """Where this session's jobs keep their state when no job root is named: ``<state dir>/jobs/<session>``, one job
    root per plan below it (``resolve_job_root``). Created by the first job; only the user can enter ``jobs``.

    A job root outlives its session on purpose: ``planengine run --job-root <root>`` continues the job later."""
    return private_dir(state_dir() / "jobs") / session
