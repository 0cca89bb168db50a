"""The job root: one directory per job holding the plan in force, every run's checkpoints and snapshots.

Layout (DESIGN §6, binding)::

    <root>/plan.json                               compiled plan in force
    <root>/runs/<run-id>/checkpoints/<uid>/        Spark checkpoints of one run
    <root>/runs/<run-id>/run.json                  written last: marks the run as fully created
    <root>/snapshots/<snapshot-id>/                plan.json, checkpoints/<uid>/, manifest.json (last)
    <root>/RUN_LOCK                                one writer per root (see ``fencing``)

Why a class and not path arithmetic at call sites: every path under a job root is built here and only
here, so an object-store backend (``s3://bucket/prefix``) can later replace this class without touching
the translator, the snapshot code or the CLI. For now the root is a local directory; creation steps rely
on POSIX ``mkdir`` and ``rename`` being atomic.

Run and snapshot ids sort by creation time (``r-20261122T081500Z-0000``): a UTC second plus a 4-hex
counter within that second. Ids are reserved with an exclusive ``mkdir``, so two creators never share
one, and a new id is never smaller than an existing one even if the clock steps back, so "latest" is
simply the largest id.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from planengine.errors import UserError

if TYPE_CHECKING:
    from planengine.runtime.snapshots import SnapshotInfo

PLAN_FILE = "plan.json"
RUN_MARKER = "run.json"
LOCK_FILE = "RUN_LOCK"

_ID_RE = re.compile(r"^(?P<prefix>[rs])-(?P<stamp>\d{8}T\d{6}Z)-(?P<seq>[0-9a-f]{4})$")
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
    """Write ``text`` so readers see the old content or the new, never a torn file.

    With ``overwrite=False`` the final step is ``link`` instead of ``rename``: it fails if the target
    appeared meanwhile, which makes "create if absent" race-free.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@dataclass(frozen=True)
class Run:
    """One run of the job: one engine process lifetime (or several, when resumed) with its checkpoints."""

    run_id: str
    path: Path

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / "checkpoints"

    def checkpoint_dir(self, uid: str) -> Path:
        """Where the streaming query named ``uid`` keeps its Spark checkpoint (created by Spark)."""
        return self.checkpoints_dir / validate_uid(uid)

    def query_uids(self) -> list[str]:
        """Uids that have a checkpoint directory in this run, sorted."""
        if not self.checkpoints_dir.is_dir():
            return []
        return sorted(p.name for p in self.checkpoints_dir.iterdir() if p.is_dir())

    def info(self) -> dict:
        """The run marker: ``runId``, ``createdAt`` and ``fromSnapshot`` (or null)."""
        return json.loads((self.path / RUN_MARKER).read_text(encoding="utf-8"))


class JobRoot:
    """A job's storage root. Cheap to construct; creates directories only when something is written."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path).absolute()

    def __repr__(self) -> str:
        return f"JobRoot({str(self.path)!r})"

    # -- paths (the only place that knows the layout) ------------------------------------------------
    @property
    def plan_path(self) -> Path:
        return self.path / PLAN_FILE

    @property
    def runs_dir(self) -> Path:
        return self.path / "runs"

    @property
    def snapshots_dir(self) -> Path:
        return self.path / "snapshots"

    @property
    def lock_path(self) -> Path:
        return self.path / LOCK_FILE

    def snapshot_dir(self, snapshot_id: str) -> Path:
        _check_id(snapshot_id, "s", "snapshot")
        return self.snapshots_dir / snapshot_id

    # -- plan ----------------------------------------------------------------------------------------
    def has_plan(self) -> bool:
        return self.plan_path.is_file()

    def read_plan_text(self) -> str:
        try:
            return self.plan_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise UserError(
                f"job root {self.path} has no plan.json",
                hint="compile one with `planengine run --script FILE --job-root DIR` or copy a plan there",
            ) from None

    def write_plan_text(self, text: str, overwrite: bool = False) -> None:
        """Install the plan in force. Refuses to replace an existing plan unless ``overwrite``."""
        try:
            atomic_write_text(self.plan_path, text, overwrite=overwrite)
        except FileExistsError:
            raise UserError(
                f"job root {self.path} already has a plan.json",
                hint="pass overwrite=True (an upgrade) or use a new job root",
            ) from None

    # -- runs ----------------------------------------------------------------------------------------
    def new_run(self, from_snapshot: str | None = None) -> Run:
        """Create a run directory; when ``from_snapshot`` is given, fork that snapshot's checkpoints.

        ``from_snapshot`` is a snapshot id of this root or a path to a snapshot directory (possibly in
        another root). The run marker is written last, so a crash while forking leaves a directory
        that ``runs()`` ignores instead of a run with half its checkpoints.
        """
        # Imported here: snapshots depends on this module for the layout.
        from planengine.runtime.snapshots import fork_snapshot, read_snapshot

        source = None
        if from_snapshot is not None:
            source = read_snapshot(self._resolve_snapshot(from_snapshot))
            if not source.complete:
                raise UserError(
                    f"snapshot {from_snapshot} is incomplete and cannot be restored: {source.problem}",
                    hint="pick another snapshot (`planengine snapshot --job-root DIR` lists them)",
                )
        run_id, path = self._reserve_id("r", self.runs_dir)
        run = Run(run_id, path)
        if source is not None:
            fork_snapshot(source.path, run.checkpoints_dir)
        else:
            run.checkpoints_dir.mkdir()
        marker = {
            "runId": run_id,
            "createdAt": utc_now_iso(),
            "fromSnapshot": source.snapshot_id if source is not None else None,
        }
        atomic_write_text(path / RUN_MARKER, json.dumps(marker, indent=2) + "\n", overwrite=False)
        return run

    def runs(self) -> list[Run]:
        """Fully created runs, oldest first."""
        return [Run(p.name, p) for p in _id_dirs(self.runs_dir, "r") if (p / RUN_MARKER).is_file()]

    def latest_run(self) -> Run | None:
        runs = self.runs()
        return runs[-1] if runs else None

    def run(self, run_id: str) -> Run:
        _check_id(run_id, "r", "run")
        path = self.runs_dir / run_id
        if not (path / RUN_MARKER).is_file():
            known = ", ".join(r.run_id for r in self.runs()[-5:]) or "none"
            raise UserError(f"job root {self.path} has no complete run {run_id} (latest runs: {known})")
        return Run(run_id, path)

    # -- snapshots -----------------------------------------------------------------------------------
    def snapshots(self, include_incomplete: bool = False) -> list[SnapshotInfo]:
        """Snapshots oldest first; incomplete ones (no valid manifest) only when asked for."""
        from planengine.runtime.snapshots import read_snapshot

        infos = [read_snapshot(p) for p in _id_dirs(self.snapshots_dir, "s")]
        return infos if include_incomplete else [i for i in infos if i.complete]

    def snapshot(self, snapshot_id: str) -> SnapshotInfo:
        """One snapshot by id, complete or not (check ``.complete`` before restoring from it)."""
        from planengine.runtime.snapshots import read_snapshot

        path = self.snapshot_dir(snapshot_id)
        if not path.is_dir():
            raise UserError(f"job root {self.path} has no snapshot {snapshot_id}")
        return read_snapshot(path)

    def latest_snapshot(self) -> SnapshotInfo | None:
        """The newest complete snapshot; incomplete ones are never used."""
        complete = self.snapshots()
        return complete[-1] if complete else None

    def reserve_snapshot_dir(self) -> tuple[str, Path]:
        """A fresh, empty snapshot directory and its id (for ``snapshots.take_snapshot``)."""
        return self._reserve_id("s", self.snapshots_dir)

    # -- helpers -------------------------------------------------------------------------------------
    def _resolve_snapshot(self, ref: str) -> Path:
        if _ID_RE.match(ref) and ref.startswith("s-"):
            return self.snapshot_dir(ref)
        path = Path(ref)
        if path.is_dir():
            return path.absolute()
        raise UserError(
            f"snapshot {ref!r} is neither a snapshot id in {self.snapshots_dir} nor a directory",
            hint="pass an id like s-20261122T081500Z-0000 or the path of a snapshot directory",
        )

    def _reserve_id(self, prefix: str, parent: Path) -> tuple[str, Path]:
        parent.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        seq = 0
        existing = [p.name for p in _id_dirs(parent, prefix)]
        if existing:
            last = _ID_RE.match(existing[-1])
            assert last is not None
            if last["stamp"] >= stamp:  # same second, or the clock stepped back: stay monotonic
                stamp, seq = last["stamp"], int(last["seq"], 16) + 1
        while True:
            if seq > 0xFFFF:
                raise UserError(f"more than 65536 ids created in one second under {parent}")
            new_id = f"{prefix}-{stamp}-{seq:04x}"
            try:
                (parent / new_id).mkdir()
                return new_id, parent / new_id
            except FileExistsError:
                seq += 1


def _check_id(value: str, prefix: str, what: str) -> None:
    match = _ID_RE.match(value) if isinstance(value, str) else None
    if match is None or match["prefix"] != prefix:
        raise UserError(
            f"{value!r} is not a {what} id",
            hint=f"{what} ids look like {prefix}-20261122T081500Z-0000",
        )


def _id_dirs(parent: Path, prefix: str) -> list[Path]:
    if not parent.is_dir():
        return []
    found = [p for p in parent.iterdir() if p.is_dir() and (m := _ID_RE.match(p.name)) and m["prefix"] == prefix]
    return sorted(found, key=lambda p: p.name)
