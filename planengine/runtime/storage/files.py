"""The primitives of job storage: the plan's file name, query uids as directory names, timestamps, atomic writes.

Why a module of their own: the job root (``job_root``), its snapshots (``snapshots``) and fencing (``fencing``)
all write files under a job root the same way, and the job root creates runs by forking snapshots. With these
at the bottom, ``job_root`` imports ``snapshots`` and ``snapshots`` imports only this module: no cycle to break.
"""

from __future__ import annotations

import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from planengine.errors import UserError

PLAN_FILE = "plan.json"

_UID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}$")


def utc_now_iso() -> str:
    """ISO-8601 UTC time with a ``Z`` suffix, the one timestamp format every manifest uses."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def validate_uid(uid: str) -> str:
    """A query uid becomes a directory name, so it must be one safe path component."""
    if not isinstance(uid, str) or not _UID_RE.match(uid) or uid in {".", ".."}:
        raise UserError(
            f"query uid {uid!r} cannot name a checkpoint directory",
            hint="use letters, digits, '_', '-' or '.', not starting with '.' or '-', at most 200 chars",
        )
    return uid


def atomic_write_text(path: Path, text: str, *, overwrite: bool = True) -> None:
    """Write ``text`` so readers see the old content or the new, never a torn file (``atomic_write_bytes``)."""
    atomic_write_bytes(path, text.encode("utf-8"), overwrite=overwrite)


def atomic_write_bytes(path: Path, data: bytes, *, overwrite: bool = True) -> None:
    """Write ``data`` so readers see the old content or the new, never a torn file.

    With ``overwrite=False`` the final step is ``link`` instead of ``rename``: it fails if the target
    appeared meanwhile, which makes "create if absent" race-free.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
