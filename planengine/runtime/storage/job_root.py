"""Job roots: the layout under a root, runs, snapshots' places and run ids, in one module.

Layout (DESIGN §6 "Job storage", binding)::

    <root>/plan.json                               compiled plan in force
    <root>/runs/<run-id>/checkpoints/<uid>/        Spark checkpoints of one run
    <root>/runs/<run-id>/run.json                  written last: marks the run as fully created
    <root>/snapshots/<snapshot-id>/                plan.json, checkpoints/<uid>/, manifest.json (last)
    <root>/RUN_LOCK                                one writer per root (see ``fencing``)
    <root>/driver.json                             the live driver's status port

Why one module and not path arithmetic at call sites: every path under a job root is built here and only
here, so an object-store backend (``s3://bucket/prefix``) can later replace this module and the primitives it
writes with (``files.py``) without touching the translator, the snapshot code or the CLI. For now the root is a
local directory; creation steps rely on POSIX ``mkdir`` and ``rename`` being atomic. What a snapshot *contains*
(forking checkpoints, manifests) is ``snapshots.py``; where it lives is here.

Which job root a run uses is decided here too (``resolve_job_root``), so the API
(``TableEnvironment.execute_plan``, ``INSERT``/``EXECUTE`` in a session) and the CLI (``planengine run``) can
never disagree.

Run and snapshot ids (THE format, shared with the operator, which re-states it in its own ``new_run_id``
because it must not import the engine): ``<r|s>-<YYYYmmddTHHMMSS>Z-<4 hex>``, e.g.
``r-20261122T081500Z-0000`` — a UTC second plus 4 hex digits, matched by ``ID_PATTERN``. The engine fills the
hex with a counter within the second; the operator with random digits. Either way ids of different seconds
sort by time as strings. The engine reserves ids with an exclusive ``mkdir``, so two creators never share
one, and a new id is never smaller than an existing one even if the clock steps back, so "latest" is
simply the largest id. ``parse_run_id`` reads one back.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import unquote, urlparse

from planengine.errors import UserError
from planengine.runtime.storage.files import PLAN_FILE, atomic_write_text, utc_now_iso, validate_uid
from planengine.runtime.storage.job_store import LocalJobStore
from planengine.runtime.storage.object_store import is_object_store
from planengine.runtime.storage.sink_claims import local_file_sinks
from planengine.runtime.storage.snapshots import SnapshotInfo, fork_snapshot, last_committed_batch_id, read_snapshot

RUN_MARKER = "run.json"
KEEP_RUNS_ENV = "PLANENGINE_KEEP_RUNS"
DEFAULT_KEEP_RUNS = 5  # an upgrade's old run and its target, a rollback's, and restarts between them
LOCK_FILE = "RUN_LOCK"
DRIVER_FILE = "driver.json"

#: Run (``r``) and snapshot (``s``) ids; see the module docstring.
ID_PATTERN = re.compile(r"^(?P<prefix>[rs])-(?P<stamp>\d{8}T\d{6}Z)-(?P<seq>[0-9a-f]{4})$")
_STAMP = "%Y%m%dT%H%M%SZ"


def resolve_job_root(plan_id: str, explicit: str | os.PathLike[str] | None = None, *,
                     jobs_dir: str | os.PathLike[str] | None = None,
                     session_dir: str | os.PathLike[str] | None = None) -> JobRoot:
    """The job root a plan runs in: the one rule for the API, sessions and the CLI.

    1. ``explicit`` (``planengine run --job-root DIR``, ``execute_plan(plan, job_root=DIR)``): exactly DIR.
    2. ``jobs_dir`` (the session option ``planengine.job-root``, ``planengine sql --job-root``):
       ``<jobs_dir>/<plan id[:16]>``, one job root per plan, so a script with several INSERTs gets one each.
    3. ``PLANENGINE_JOB_ROOT`` (the operator's launchers name the job's root): exactly that.
    4. ``session_dir`` (``planengine sql`` gives each session a directory of its own):
       ``<session_dir>/<plan id[:16]>``, so a session never continues another session's job unasked.
    5. Otherwise ``<temp dir>/planengine-jobs/<plan id[:16]>``.

    Steps 1 to 3 are a place someone chose, where continuing the job found there is the point; steps 4 and 5
    are defaults nobody chose.
    """
    if explicit is not None:
        return JobRoot(explicit)
    if jobs_dir:
        return JobRoot(_child(jobs_dir, plan_id[:16]))
    if os.environ.get("PLANENGINE_JOB_ROOT"):
        return JobRoot(os.environ["PLANENGINE_JOB_ROOT"])
    if session_dir:
        return JobRoot(_child(session_dir, plan_id[:16]))
    return JobRoot(Path(tempfile.gettempdir()) / "planengine-jobs" / plan_id[:16])


def _child(parent: str | os.PathLike[str], name: str) -> str | Path:
    """``parent/name`` for a directory or an ``s3a://`` prefix (``Path`` would fold the URI's ``//``)."""
    text = os.fspath(parent)
    return f"{str(text).rstrip('/')}/{name}" if is_object_store(str(text)) else Path(text) / name


def parse_run_id(run_id: str) -> datetime:
    """The UTC second a run id was created in; a ``UserError`` for anything that is not a run id.

    >>> parse_run_id("r-20261122T081500Z-00a1").isoformat()
    '2026-11-22T08:15:00+00:00'
    """
    _check_id(run_id, "r", "run")
    match = ID_PATTERN.match(run_id)
    assert match is not None
    return datetime.strptime(match["stamp"], _STAMP).replace(tzinfo=UTC)


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

    def last_committed_batch_id(self, uid: str) -> int:
        """The last batch query ``uid`` committed in this run (-1: none)."""
        return last_committed_batch_id(self.checkpoint_dir(uid))


class JobRoot:
    """A job's storage root. Cheap to construct; creates directories only when something is written.

    ``JobRoot("s3a://bucket/prefix")`` is a ``StoreJobRoot`` (``store_job_root``): the same layout and interface,
    with every object written through the root's ``JobStore``. Code above the storage room names a root by its
    ``location`` (a path or a URI) and keeps driver-local scratch in ``local_dir``; ``path`` is a local root's
    directory only."""

    def __new__(cls, location: str | os.PathLike[str], *args: object, **kwargs: object) -> JobRoot:
        if cls is JobRoot and is_object_store(str(os.fspath(location))):
            from planengine.runtime.storage.store_job_root import StoreJobRoot  # noqa: PLC0415 — it subclasses this

            return super().__new__(StoreJobRoot)
        return super().__new__(cls)

    def __init__(self, path: str | os.PathLike[str]):
        self.path = _local_directory(path).absolute()

    def __repr__(self) -> str:
        return f"JobRoot({str(self.path)!r})"

    # -- what both kinds of root answer ----------------------------------------------------------------
    on_object_store = False

    @property
    def location(self) -> str:
        """The root as a user names it (``--job-root``), for messages and for handing the root on."""
        return str(self.path)

    @property
    def local_dir(self) -> Path:
        """Driver-local files of the job (materialised bounded inputs, drain markers): the root itself here."""
        return self.path

    def exists(self) -> bool:
        return self.path.is_dir()

    def check_writable(self) -> None:
        """Before a run writes anything: nothing to check on a directory (a store probes itself)."""

    def read_driver_info(self) -> dict | None:
        """``driver.json``: the live driver's pid, run id and status port, None when there is none."""
        try:
            value = json.loads(self.driver_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def write_driver_info(self, info: dict) -> None:
        atomic_write_text(self.driver_path, json.dumps(info) + "\n")

    def remove_driver_info(self, run_id: str) -> None:
        """Remove ``driver.json`` if it still names ``run_id`` (a later driver's stays)."""
        current = self.read_driver_info()
        if current is not None and current.get("runId") == run_id:
            self.driver_path.unlink(missing_ok=True)

    def snapshot_plan_text(self, ref: str) -> str:
        """``plan.json`` of the snapshot ``ref`` (an id of this root or a snapshot directory)."""
        path = self.snapshot_dir(ref) if ID_PATTERN.match(ref) and ref.startswith("s-") else Path(ref)
        return (path / PLAN_FILE).read_text(encoding="utf-8")

    def take_snapshot(self, run: Run, *, reason: str, engine_version: str, spark_version: str, plan_id: str,
                      last_batch_ids: dict[str, int], live: bool = True) -> SnapshotInfo:
        """``snapshots.take_snapshot`` of ``run``; ``live``: its queries may still be writing (a store copies the
        files then; a directory links them either way)."""
        from planengine.runtime.storage.snapshots import take_local_snapshot  # noqa: PLC0415 — it imports this

        return take_local_snapshot(self, run, reason=reason, engine_version=engine_version,
                                   spark_version=spark_version, plan_id=plan_id, last_batch_ids=last_batch_ids)

    def delete_snapshot(self, snapshot_id: str) -> None:
        """Remove one snapshot: first renamed out of the snapshot namespace, so a delete cut short never leaves
        a half-deleted snapshot that looks complete."""
        target = self.snapshot(snapshot_id).path  # refuses ids this job root does not have
        aside = target.with_name(f".deleting-{target.name}")
        target.rename(aside)
        shutil.rmtree(aside)

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
    def store(self) -> LocalJobStore:
        """The root's own objects (the run lock) with create-if-absent and compare-and-swap (``job_store``)."""
        return LocalJobStore(self.path)

    @property
    def lock_path(self) -> Path:
        return self.path / LOCK_FILE

    @property
    def driver_path(self) -> Path:
        """``driver.json``: the live driver's pid, run id and status port (written once the run holds the root)."""
        return self.path / DRIVER_FILE

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
        """Create a run under a fresh id; when ``from_snapshot`` is given, fork that snapshot's checkpoints.

        ``from_snapshot`` is a snapshot id of this root or a path to a snapshot directory (possibly in
        another root). The run marker is written last, so a crash while forking leaves a directory
        that ``runs()`` ignores instead of a run with half its checkpoints.
        """
        source = self._restorable_snapshot(from_snapshot)
        run_id, path = self._reserve_id("r", self.runs_dir)
        return self._create_run(Run(run_id, path), source, overwrite_marker=False)

    def open_run(self, run_id: str | None, from_snapshot: str | None = None) -> Run:
        """The run to write into: a new one when ``run_id`` is None, else the run named ``run_id`` (the operator
        names the runs it launches, ``PLANENGINE_RUN_ID``): resumed when it is complete, else created under that
        name exactly as ``new_run`` creates one (a crash before its marker is redone from the start)."""
        if run_id is None:
            return self.new_run(from_snapshot)
        path = self.runs_dir / validate_uid(run_id)  # ids of older operators are not ID_PATTERN-shaped
        if self.is_complete_run(run_id):
            return Run(run_id, path)
        source = self._restorable_snapshot(from_snapshot)
        path.mkdir(parents=True, exist_ok=True)
        return self._create_run(Run(run_id, path), source, overwrite_marker=True)

    def is_complete_run(self, run_id: str) -> bool:
        return (self.runs_dir / validate_uid(run_id) / RUN_MARKER).is_file()

    def _restorable_snapshot(self, ref: str | None) -> SnapshotInfo | None:
        if ref is None:
            return None
        source = read_snapshot(self._resolve_snapshot(ref))
        if not source.complete:
            raise UserError(
                f"snapshot {ref} is incomplete and cannot be restored: {source.problem}",
                hint="pick another snapshot (`planengine snapshot --job-root DIR` lists them)",
            )
        return source

    def _create_run(self, run: Run, source: SnapshotInfo | None, *, overwrite_marker: bool) -> Run:
        if source is not None and not run.checkpoints_dir.exists():
            try:
                fork_snapshot(source.path, run.checkpoints_dir)
            except BaseException:
                # Nothing else uses an incomplete run, and a restart loop over a snapshot that cannot be forked
                # (a damaged file) left one per attempt: 1 GiB of job root filled in ten minutes.
                shutil.rmtree(run.path, ignore_errors=True)
                raise
        run.checkpoints_dir.mkdir(exist_ok=True)
        marker = {
            "runId": run.run_id,
            "createdAt": utc_now_iso(),
            "fromSnapshot": source.snapshot_id if source is not None else None,
        }
        atomic_write_text(run.path / RUN_MARKER, json.dumps(marker, indent=2) + "\n", overwrite=overwrite_marker)
        return run

    def runs(self) -> list[Run]:
        """Fully created runs, oldest first."""
        return [Run(p.name, p) for p in _id_dirs(self.runs_dir, "r") if (p / RUN_MARKER).is_file()]

    def latest_run(self) -> Run | None:
        runs = self.runs()
        return runs[-1] if runs else None

    def newest_run(self) -> Run | None:
        """The most recently created complete run by its marker's ``createdAt``, whatever its id looks like (runs
        named by operators before the shared id format do not match ``ID_PATTERN``, so ``runs()`` skips them)."""
        if not self.runs_dir.is_dir():
            return None
        runs = [Run(p.name, p) for p in self.runs_dir.iterdir() if (p / RUN_MARKER).is_file()]
        return max(runs, key=lambda r: (r.info().get("createdAt", ""), r.run_id)) if runs else None

    def prune_runs(self, current: str, keep: int | None = None) -> list[str]:
        """Delete the complete runs older than the newest ``keep`` (by ``createdAt``), never ``current``; the ids
        deleted, oldest first.

        Why: every start from a snapshot (each upgrade, rollback and automatic restart) makes a run, and a run keeps
        its checkpoints, source logs and internal channel files for good, so a job root grew without bound (the
        fault campaign filled a 1 GiB volume after 25 runs, and the next snapshot failed with ENOSPC). An old run
        is safe to delete: snapshots hold their own links to the files they need, and a fork rewrites the paths
        it inherits into its own run. The newest runs stay (an upgrade's old run, its target, a rollback's run).
        Incomplete runs (no marker: one may be being created) are left alone. The marker goes first, so a deletion
        cut short leaves an incomplete run, which nothing resumes.
        """
        keep = keep_runs() if keep is None else keep
        if keep <= 0 or not self.runs_dir.is_dir():
            return []
        complete = [Run(p.name, p) for p in self.runs_dir.iterdir() if (p / RUN_MARKER).is_file()]
        complete.sort(key=lambda r: (str(r.info().get("createdAt", "")), r.run_id))
        doomed = [r for r in complete[:-keep] if r.run_id != current]
        for run in doomed:
            (run.path / RUN_MARKER).unlink(missing_ok=True)
            shutil.rmtree(run.path, ignore_errors=True)
        return [r.run_id for r in doomed]

    def live_run(self) -> Run | None:
        """The run the live driver writes (``driver.json``), else ``newest_run``."""
        run_id = (self.read_driver_info() or {}).get("runId")
        if run_id and (self.runs_dir / validate_uid(run_id)).is_dir():
            return Run(run_id, self.runs_dir / run_id)
        return self.newest_run()

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
        infos = [read_snapshot(p) for p in _id_dirs(self.snapshots_dir, "s")]
        return infos if include_incomplete else [i for i in infos if i.complete]

    def snapshot(self, snapshot_id: str) -> SnapshotInfo:
        """One snapshot by id, complete or not (check ``.complete`` before restoring from it)."""
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
        if ID_PATTERN.match(ref) and ref.startswith("s-"):
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
        for new_id in id_candidates(prefix, [p.name for p in _id_dirs(parent, prefix)]):
            try:
                (parent / new_id).mkdir()
                return new_id, parent / new_id
            except FileExistsError:
                continue
        raise AssertionError("id_candidates never ends")


def id_candidates(prefix: str, existing: list[str]) -> Iterator[str]:
    """Fresh ids to try in order (the module doc's format): this second's, never below the newest of ``existing``
    (sorted), so ids stay monotonic when the clock steps back. The caller reserves the first one it can create."""
    stamp = datetime.now(UTC).strftime(_STAMP)
    seq = 0
    if existing:
        last = ID_PATTERN.match(existing[-1])
        assert last is not None
        if last["stamp"] >= stamp:  # same second, or the clock stepped back: stay monotonic
            stamp, seq = last["stamp"], int(last["seq"], 16) + 1
    while True:
        if seq > 0xFFFF:  # the second is used up (or an operator-named run took ffff): borrow the next one
            stamp = (datetime.strptime(stamp, _STAMP) + timedelta(seconds=1)).strftime(_STAMP)
            seq = 0
        yield f"{prefix}-{stamp}-{seq:04x}"
        seq += 1


def _local_directory(path: str | os.PathLike[str]) -> Path:
    """The directory a job root names: a plain path or a ``file:`` URI.

    Any other URI is refused here, before anything is written: ``Path("s3a://bucket/jobs")`` is the *relative*
    directory ``s3a:/bucket/jobs``, so without this check a job root meant for an object store would be created
    silently under the current directory and its job would run there, on the wrong disk and unseen by anyone
    who looks in the bucket.

    >>> str(_local_directory("file:///var/lib/jobs/clicks"))
    '/var/lib/jobs/clicks'
    """
    text = os.fspath(path)
    parsed = urlparse(text) if isinstance(text, str) else None
    if parsed is None or not parsed.scheme or len(parsed.scheme) == 1:  # no scheme, or a Windows drive letter
        return Path(text)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return Path(unquote(parsed.path))
    what = "an object store" if is_object_store(text) else f"a {parsed.scheme}:// location"
    raise UserError(
        f"job root {text!r} is on {what}; job roots must be a local or mounted directory in this version",
        hint="give --job-root (or storage.uri) a directory path, e.g. a ReadWriteMany volume's mount point; "
             "sources and sinks may still read and write s3a:// paths (docs/object-store.md)",
    )


def keep_runs() -> int:
    """How many complete runs a job root keeps (``PLANENGINE_KEEP_RUNS``, default 5; 0 keeps every run)."""
    text = os.environ.get(KEEP_RUNS_ENV, "").strip()
    if not text:
        return DEFAULT_KEEP_RUNS
    if not text.isdigit():
        raise UserError(f"{KEEP_RUNS_ENV}={text!r} is not a whole number",
                        hint=f"set it to how many runs a job root keeps (0: all), or unset it for {DEFAULT_KEEP_RUNS}")
    return int(text)


def _check_id(value: str, prefix: str, what: str) -> None:
    match = ID_PATTERN.match(value) if isinstance(value, str) else None
    if match is None or match["prefix"] != prefix:
        raise UserError(
            f"{value!r} is not a {what} id",
            hint=f"{what} ids look like {prefix}-20261122T081500Z-0000",
        )


def _id_dirs(parent: Path, prefix: str) -> list[Path]:
    if not parent.is_dir():
        return []
    found = [p for p in parent.iterdir() if p.is_dir() and (m := ID_PATTERN.match(p.name)) and m["prefix"] == prefix]
    return sorted(found, key=lambda p: p.name)


def refuse_sinks_inside(root: JobRoot, plan_data: dict) -> None:
    """A file sink must not write into the job root's own storage (``runs/``, ``snapshots/``, ``checkpoints/``,
    or the root itself): its files would be copied into snapshots, deleted with old runs, or mistaken for
    checkpoint state. Only the run knows the root, so this is checked here rather than at compile time."""
    if root.on_object_store:
        root.refuse_sinks_inside(plan_data)  # type: ignore[attr-defined]  # StoreJobRoot
        return
    base = Path(os.path.normpath(root.path))
    reserved = [base, base / "runs", base / "snapshots", base / "checkpoints"]
    for sink in local_file_sinks(plan_data):
        for directory in reserved:
            if sink.path == directory or (directory != base and directory in sink.path.parents):
                where = "is the job root itself" if directory == base else f"is inside {directory}"
                raise UserError(f"sink {sink.identifier} writes to {sink.path}, which {where}: the engine "
                                "keeps its checkpoints, runs and snapshots there",
                                hint="give the sink a 'path' outside the job root, or run with another --job-root")
