"""Snapshots: immutable, self-describing forks of a run's checkpoints taken at a batch boundary.

A snapshot is what an upgrade or a rollback starts from, so it must (a) contain only committed batches,
(b) never change once written, and (c) never look complete when it is not:

* (a) Spark plans a batch by writing ``offsets/N`` and records success in ``commits/N``; the stateful
  operators of batch N write state version N+1. A checkpoint may therefore hold one planned but
  uncommitted batch. The snapshot keeps ``commits`` up to the last committed batch id, and the planned
  batch after it whole: its ``offsets`` (a restart replays exactly that batch) and the state
  ``<version>.delta|.snapshot|.zip|.changelog`` files it wrote, up to version last+2 (a sink that already
  committed it skips the replay, so its state must be there: ``_committed_filter``); it drops the rest.
  Everything else (``metadata``, ``sources/``, state schema and operator metadata, RocksDB SSTs) is kept
  as is: source logs are compacted and must not be cut, and Spark replays from the offsets we keep.
* (b) Files are hard-linked where the filesystem allows (same device) and copied otherwise, then made
  read-only. Hard links share inodes, which is safe only because Spark writes checkpoint files through
  write-temp-then-rename and never modifies a committed file in place; ``tests/runtime/test_snapshots.py``
  runs real Spark on a fork and checks the snapshot's bytes did not change. The read-only mode also
  applies to the linked run files; Spark never needs to open them for writing.
* (c) ``manifest.json`` is written last with an atomic rename. A directory without a valid manifest is
  reported as incomplete and never restored from.

``lastBatchId`` is -1 for a query that never committed a batch (Spark's own convention).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote, unquote

from planengine.errors import InternalError, UserError
from planengine.runtime.storage.checkpoint_layout import LayoutError, read_layout
from planengine.runtime.storage.files import PLAN_FILE, atomic_write_text, utc_now_iso, validate_uid

if TYPE_CHECKING:
    from planengine.runtime.storage.job_root import JobRoot, Run

MANIFEST_FILE = "manifest.json"
MANIFEST_VERSION = 1
REASONS = ("upgrade", "manual", "periodic", "stop")

_BATCH_FILE_RE = re.compile(r"^\.?(\d+)(\.crc)?$")  # offsets/N, commits/N and their .N.crc checksums
# State files carry the state version first; checkpoint format v2 adds "_<unique id>".
_STATE_FILE_RE = re.compile(r"^\.?(\d+)(?:_[0-9A-Za-z\-]+)?\.(delta|snapshot|zip|changelog)(\.crc)?$")
_READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
_LINK_FALLBACK_ERRNOS = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}

ForkMode = Literal["auto", "link", "copy"]


@dataclass(frozen=True)
class SnapshotInfo:
    """A snapshot directory and its manifest; ``manifest`` is None when the snapshot is incomplete."""

    snapshot_id: str
    path: Path
    manifest: dict[str, Any] | None
    problem: str | None = None

    @property
    def complete(self) -> bool:
        return self.manifest is not None

    def _field(self, name: str) -> Any:
        return None if self.manifest is None else self.manifest[name]

    @property
    def created_at(self) -> str | None:
        return self._field("createdAt")

    @property
    def reason(self) -> str | None:
        return self._field("reason")

    @property
    def engine_version(self) -> str | None:
        return self._field("engineVersion")

    @property
    def spark_version(self) -> str | None:
        return self._field("sparkVersion")

    @property
    def plan_id(self) -> str | None:
        return self._field("planId")

    @property
    def run_id(self) -> str | None:
        return self._field("runId")

    @property
    def last_batch_ids(self) -> dict[str, int]:
        if self.manifest is None:
            return {}
        return {uid: q["lastBatchId"] for uid, q in self.manifest["queries"].items()}

    @property
    def plan_path(self) -> Path:
        return self.path / PLAN_FILE

    @property
    def checkpoints_dir(self) -> Path:
        return self.path / "checkpoints"

    def checkpoint_dir(self, uid: str) -> Path:
        return self.checkpoints_dir / validate_uid(uid)


@dataclass
class ForkStats:
    """What a fork did: useful for logs and the benchmark (links are O(files), copies O(bytes))."""

    files_linked: int = 0
    files_copied: int = 0
    files_skipped: int = 0
    bytes: int = 0
    fallback_reason: str | None = field(default=None)


# -- taking ------------------------------------------------------------------------------------------
def take_snapshot(
    job_root: JobRoot,
    run: Run,
    *,
    reason: str,
    engine_version: str,
    spark_version: str,
    plan_id: str,
    last_batch_ids: dict[str, int],
    live: bool = True,
) -> SnapshotInfo:
    """Snapshot ``run`` of ``job_root`` (a directory: ``take_local_snapshot``; an object store:
    ``store_snapshots.take_store_snapshot``). ``live=False`` promises that the run's queries stopped for good,
    which lets a store snapshot name the run's files instead of copying them."""
    return job_root.take_snapshot(run, reason=reason, engine_version=engine_version, spark_version=spark_version,
                                  plan_id=plan_id, last_batch_ids=last_batch_ids, live=live)


def manifest_head(snapshot_id: str, reason: str, engine_version: str, spark_version: str, plan_id: str,
                  run_id: str) -> dict[str, Any]:
    """The fields every snapshot manifest starts with, on a directory or a store (``queries`` follows)."""
    return {"manifestVersion": MANIFEST_VERSION, "snapshotId": snapshot_id, "createdAt": utc_now_iso(),
            "reason": reason, "engineVersion": engine_version, "sparkVersion": spark_version, "planId": plan_id,
            "runId": run_id}


def take_local_snapshot(
    job_root: JobRoot,
    run: Run,
    *,
    reason: str,
    engine_version: str,
    spark_version: str,
    plan_id: str,
    last_batch_ids: dict[str, int],
) -> SnapshotInfo:
    """Snapshot ``run`` into ``<root>/snapshots/<new id>/``. The caller must have stopped its queries.

    ``last_batch_ids`` is what the driver saw committed per query uid. Queries with a checkpoint but no
    entry use the last batch committed on disk; an entry larger than what is committed on disk is a bug
    in the caller and raises ``InternalError`` (a snapshot never contains an uncommitted batch).
    """
    if reason not in REASONS:
        raise UserError(f"snapshot reason {reason!r} is not one of {', '.join(REASONS)}")
    plan_text = job_root.read_plan_text()
    on_disk_uids = run.query_uids()
    unknown = sorted(set(last_batch_ids) - set(on_disk_uids))
    if unknown:
        raise InternalError(f"run {run.run_id} has no checkpoint for queries {unknown}; cannot snapshot them")

    cut: dict[str, int] = {}
    for uid in on_disk_uids:
        committed = last_committed_batch_id(run.checkpoint_dir(uid))
        wanted = last_batch_ids.get(uid, committed)
        if wanted > committed:
            raise InternalError(
                f"query {uid} of run {run.run_id}: the driver reports batch {wanted} committed "
                f"but the checkpoint's last commit is {committed}"
            )
        cut[uid] = wanted

    snapshot_id, path = job_root.reserve_snapshot_dir()
    try:
        atomic_write_text(path / PLAN_FILE, plan_text)
        for uid, last in cut.items():
            _link_tree(run.checkpoint_dir(uid), path / "checkpoints" / uid, "auto", _committed_filter(last),
                       _always_copied)
        (path / "checkpoints").mkdir(exist_ok=True)
        _make_read_only(path)

        manifest = {
            **manifest_head(snapshot_id, reason, engine_version, spark_version, plan_id, run.run_id),
            "queries": {uid: {"lastBatchId": last, **_recorded_layout(path / "checkpoints" / uid, last)}
                        for uid, last in sorted(cut.items())},
        }
        atomic_write_text(path / MANIFEST_FILE, json.dumps(manifest, indent=2) + "\n", overwrite=False)
        os.chmod(path / MANIFEST_FILE, _READ_ONLY)
    except BaseException:
        # Without a manifest it would only be listed as incomplete; do not leave the bytes behind either.
        shutil.rmtree(path, ignore_errors=True)
        raise
    return SnapshotInfo(snapshot_id, path, manifest)


def _recorded_layout(checkpoint: Path, last: int) -> dict[str, Any]:
    """``{"stateLayout": …}``: the Spark state layout of a snapshotted query, for ``planengine check`` and
    ``snapshots inspect`` (read from the files in milliseconds, no Spark). Best effort: a layout this engine
    cannot parse is left out rather than failing the snapshot; the check reads the files again anyway. A
    query that never committed has no state to restore, so nothing is recorded."""

    if last < 0:
        return {}
    try:
        return {"stateLayout": read_layout(checkpoint)}
    except (LayoutError, OSError):
        return {}


def _committed_filter(last: int) -> Callable[[tuple[str, ...]], bool]:
    """Keep a checkpoint file (path parts relative to the query's checkpoint) unless it is past ``last``."""

    def keep(parts: tuple[str, ...]) -> bool:
        name = parts[-1]
        if name.endswith(".tmp"):  # an interrupted write-temp-then-rename
            return False
        if last < 0 and parts[0] == "state":
            # Never committed: state files of an aborted first batch (state/<op>/_metadata, state/0/...) would
            # make Spark refuse to start ("state should be empty on batch 0").
            return False
        if last < 0 and parts[0] == "sources":
            # ... but a planned first batch keeps its source log entry (sources/<n>/0) with its offsets/0:
            # Spark replays batch 0 from both ("batch 0 doesn't exist" without the entry), over the same files,
            # which a sink that already committed batch 0 skips. Re-planning it would read more files, and
            # the sink would skip those rows as committed.
            m = _BATCH_FILE_RE.match(name)
            return m is None or int(m[1]) == 0
        if len(parts) == 2 and parts[0] == "commits":
            m = _BATCH_FILE_RE.match(name)
            return m is None or int(m[1]) <= last
        if len(parts) == 2 and parts[0] == "offsets":
            # The batch planned after the last commit keeps its offsets: a restart replays exactly that batch
            # (sinks that already committed it, like the file sink's manifest, skip it). Dropping them would
            # let Spark re-plan the batch with more input, which such a sink would then skip: rows lost.
            m = _BATCH_FILE_RE.match(name)
            return m is None or int(m[1]) <= last + 2
        if parts[0] == "state":
            # ... and so does its state: batch N writes state version N+1, so the planned batch last+1 wrote
            # version last+2. A sink that committed that batch before the driver died (the file sink's manifest
            # is written before Spark's commit log) skips its replay, so nothing would write that version again,
            # and the next batch would fail for good ("<last+2>.changelog does not exist": the fault campaign's
            # kill -9 between the two writes). A batch whose sink did not commit is replayed, and its state
            # version rewritten whole (Spark's state files are written with overwrite), so keeping it is safe.
            m = _STATE_FILE_RE.match(name)
            return m is None or int(m[1]) <= last + 2
        return True

    return keep


# -- forking -----------------------------------------------------------------------------------------
def fork_snapshot(
    snapshot_dir: str | os.PathLike[str], target_checkpoints_dir: str | os.PathLike[str], *, mode: ForkMode = "auto"
) -> ForkStats:
    """Give a new run its own ``checkpoints/`` tree from a snapshot, leaving the snapshot untouched.

    ``auto`` hard-links and falls back to copying (e.g. across devices); ``link`` and ``copy`` force one
    (the benchmark compares them). Linked files stay read-only; copies are made writable.
    """
    source = Path(snapshot_dir) / "checkpoints"
    target = Path(target_checkpoints_dir)
    if not source.is_dir():
        raise UserError(f"{snapshot_dir} has no checkpoints/ directory; it is not a snapshot")
    if target.exists() and any(target.iterdir()):
        raise UserError(f"cannot fork into {target}: it is not empty", hint="fork into a new run directory")
    stats = _link_tree(source, target, mode, lambda parts: True, lambda parts: _always_copied(parts[1:]))
    _repoint_state_schema_paths(target)
    _repoint_channel_file_paths(target)
    return stats


class CheckpointDamaged(UserError):
    """A checkpoint file in a snapshot is not what Spark wrote (it was changed in place afterwards)."""


def _log_text(path: Path, checkpoints_dir: Path) -> str:
    """A Spark metadata log as text. Spark writes these logs once, as UTF-8 JSON lines; bytes that do not decode
    were written by something else (a damaged disk, a tool that edited the file in place), and a run forked from
    them cannot start, so the fork stops here, naming the file, instead of failing on it deep in Spark."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        where = path.relative_to(checkpoints_dir)
        raise CheckpointDamaged(
            f"the checkpoint file {where} is damaged: it is not the UTF-8 text Spark writes (byte "
            f"{error.start}: {error.reason}); a run cannot start from checkpoints that hold it",
            hint="start from a snapshot taken before the damage (`planengine snapshots list --job-root DIR`): each "
                 "snapshot holds its own copy of Spark's metadata logs") from None


# Spark's operator metadata v2 (transformWithState) names its state schema files by absolute path, i.e. in
# the run that wrote them. A fork must point them at its own copies: otherwise it only restores while that
# run's directory exists (a snapshot restored in another job root, or after old runs were deleted, fails
# with FileNotFoundException on the first batch).
_SCHEMA_PATH_RE = re.compile(r"/(state/\d+/_stateSchema/.+)$")


def _repoint_state_schema_paths(checkpoints_dir: Path) -> None:
    """Rewrite ``stateSchemaFilePaths`` of every ``<uid>/state/<op>/_metadata/v2/<n>`` under the fork.

    The file is replaced (never written in place: it may be a hard link into the snapshot) and its
    ``.crc`` dropped (Hadoop reads a file without a checksum file unverified, but fails on a stale one).
    """
    for meta in sorted(checkpoints_dir.glob("*/state/*/_metadata/v2/*")):
        if meta.name.startswith(".") or not meta.is_file():
            continue
        query_dir = meta.parents[4]
        header, _, body = _log_text(meta, checkpoints_dir).partition("\n")
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            continue
        changed = False
        for store in data.get("stateStoreInfo", []) if isinstance(data, dict) else []:
            paths = store.get("stateSchemaFilePaths") if isinstance(store, dict) else None
            if not isinstance(paths, list):
                continue
            for i, old in enumerate(paths):
                m = _SCHEMA_PATH_RE.search(str(old))
                if m is None:
                    continue
                new = "file:" + str((query_dir / m[1]).absolute())  # the form Spark writes
                if new != old:
                    paths[i] = new
                    changed = True
        if not changed:
            continue
        text = header + "\n" + json.dumps(data, separators=(",", ":"))
        meta.unlink()
        meta.with_name(f".{meta.name}.crc").unlink(missing_ok=True)
        meta.write_text(text, encoding="utf-8")
        os.chmod(meta, 0o644)


# An internal channel (``<uid>/channel/``, written by one query and read by others) is listed by absolute
# path twice: in the channel's ``_spark_metadata`` manifest and in each reader's file-source log
# (``<reader>/sources/<n>/<batch>``). Both name the run that wrote them. A fork that kept them would make a
# reader re-plan an uncommitted batch (or start without a commit) over the old run's files, which Spark
# refuses ("Wrong basePath <new run>/.../channel for the root path: file:<old run>/..."), and once the old
# run is deleted the files are gone anyway. Both logs are rewritten to the fork's own (linked) copies.
_CHANNEL_FILE_RE = re.compile(r"^(file:(?://)?)(/.*)/checkpoints/([^/]+)/(channel/[^/]+)$")


def _repoint_channel_file_paths(checkpoints_dir: Path) -> None:
    """Point the channel manifests and readers' source logs under the fork at the fork's channel files."""
    base = quote(str(checkpoints_dir.absolute()))
    logs = [*checkpoints_dir.glob("*/channel/_spark_metadata/*"), *checkpoints_dir.glob("*/sources/*/*")]
    for log in sorted(logs):
        if log.name.startswith(".") or not log.is_file():
            continue

        def moved(path: str) -> str | None:
            m = _CHANNEL_FILE_RE.match(path)
            if m is None or not (checkpoints_dir / unquote(m[3])).is_dir():
                return None
            return f"{m[1]}{base}/{m[3]}/{m[4]}"

        text = _log_text(log, checkpoints_dir)
        rewritten = repoint_log_paths(text, moved)
        if rewritten == text:
            continue
        log.unlink()  # may be a hard link into the snapshot: replace, never write in place
        log.with_name(f".{log.name}.crc").unlink(missing_ok=True)
        log.write_text(rewritten, encoding="utf-8")
        os.chmod(log, 0o644)


def repoint_log_paths(text: str, moved: Callable[[str], str | None]) -> str:
    """A Spark metadata log (a version line, then one JSON entry per line) with each entry's ``path`` replaced by
    ``moved(path)`` where that gives a new one; the text unchanged when none moved. Shared by a directory's fork and
    a store's, which differ only in how they recognise and rebuild a path.

    >>> repoint_log_paths('v1\\n{"path":"a/x","size":1}\\n{"path":"b/y"}', lambda p: p.replace("a/", "c/"))
    'v1\\n{"path":"c/x","size":1}\\n{"path":"b/y"}'
    """
    lines = text.split("\n")
    changed = False
    for i, line in enumerate(lines[1:], start=1):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        path = entry.get("path") if isinstance(entry, dict) else None
        new = moved(path) if isinstance(path, str) else None
        if new is not None and new != path:
            entry["path"] = new
            lines[i] = json.dumps(entry, separators=(",", ":"))
            changed = True
    return "\n".join(lines) if changed else text


# Spark's metadata logs: the query's offsets, commits and metadata, each source's log, and a file sink's or
# channel's manifest. They are small, and a hard link would share them: a file changed in place after Spark wrote
# it (a damaged disk, a tool editing checkpoints) would then be changed in the run, in the snapshot it came from
# and in every snapshot taken since (fault campaign run 6: one damaged source log left no snapshot to start from).
# They are always copied; the state files, the bulk of a checkpoint, stay hard links.
_COPIED_LOGS = frozenset({"offsets", "commits", "sources", "metadata"})


def _always_copied(parts: tuple[str, ...]) -> bool:
    """Whether the file at ``parts`` (relative to a query's checkpoint) is a metadata log (``_COPIED_LOGS``).

    >>> _always_copied(("offsets", "7")), _always_copied(("sources", "0", "9.compact")), _always_copied(("metadata",))
    (True, True, True)
    >>> _always_copied(("channel", "_spark_metadata", "3")), _always_copied(("state", "0", "1", "4.changelog"))
    (True, False)
    """
    return parts[0] in _COPIED_LOGS or "_spark_metadata" in parts[:-1]


def _link_tree(source: Path, target: Path, mode: ForkMode, keep: Callable[[tuple[str, ...]], bool],
               copied: Callable[[tuple[str, ...]], bool] = lambda parts: False) -> ForkStats:
    """``source`` into ``target``: the files ``keep`` keeps, hard-linked (``mode`` ``link``/``auto``) or copied,
    and those ``copied`` names always copied."""
    stats = ForkStats()
    use_links = mode != "copy"
    target.mkdir(parents=True, exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames.sort()
        rel = Path(dirpath).relative_to(source)
        out_dir = target / rel
        out_dir.mkdir(exist_ok=True)
        for name in sorted(filenames):
            src, dst = Path(dirpath) / name, out_dir / name
            if not keep((*rel.parts, name)):
                stats.files_skipped += 1
                continue
            stats.bytes += src.stat().st_size
            if use_links and not copied((*rel.parts, name)):
                try:
                    os.link(src, dst)
                    stats.files_linked += 1
                    continue
                except OSError as e:
                    if mode == "link" or e.errno not in _LINK_FALLBACK_ERRNOS:
                        raise
                    use_links = False
                    stats.fallback_reason = f"hard link failed ({os.strerror(e.errno)}); copying instead"
            _durable_copy(src, dst)
            stats.files_copied += 1
    return stats


def _durable_copy(src: Path, dst: Path) -> None:
    """Copy and fsync, so a manifest or run marker written afterwards never outlives the data it names; keep the
    source's modification time, because a log file's time is when its batch was planned or committed (what a
    person reading a fork, the operator's handover measurement and the fault campaign's writer check rely on:
    a carried ``commits/N`` must not look as if the new run wrote it).

    Hard links need no such care: they are metadata, ordered by the filesystem's journal, and share the time.
    """
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
        fout.flush()
        os.fsync(fout.fileno())
    os.chmod(dst, 0o644)
    source = src.stat()
    os.utime(dst, ns=(source.st_atime_ns, source.st_mtime_ns))


def _make_read_only(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            os.chmod(Path(dirpath) / name, _READ_ONLY)


# -- reading -----------------------------------------------------------------------------------------
def read_snapshot(snapshot_dir: str | os.PathLike[str]) -> SnapshotInfo:
    """Read and validate a snapshot directory; never raises for a broken snapshot, reports it instead."""
    path = Path(snapshot_dir).absolute()
    manifest_path = path / MANIFEST_FILE
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return SnapshotInfo(path.name, path, None, "manifest.json is missing (the snapshot was never finished)")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return SnapshotInfo(path.name, path, None, f"manifest.json is unreadable: {e}")
    problem = _manifest_problem(manifest)
    if problem is None:
        if not (path / PLAN_FILE).is_file():
            problem = "plan.json is missing"
        else:
            missing = [u for u in manifest["queries"] if not (path / "checkpoints" / u).is_dir()]
            if missing:
                problem = f"checkpoints missing for queries {missing}"
    if problem is not None:
        return SnapshotInfo(path.name, path, None, problem)
    return SnapshotInfo(manifest["snapshotId"], path, manifest)


def _manifest_problem(manifest: Any) -> str | None:
    if not isinstance(manifest, dict):
        return "manifest.json is not a JSON object"
    for key in ("snapshotId", "createdAt", "reason", "engineVersion", "sparkVersion", "planId", "runId"):
        if not isinstance(manifest.get(key), str):
            return f"manifest.json: field {key!r} is missing or not a string"
    queries = manifest.get("queries")
    if not isinstance(queries, dict):
        return "manifest.json: field 'queries' is missing or not an object"
    for uid, query in queries.items():
        last = query.get("lastBatchId") if isinstance(query, dict) else None
        if not isinstance(last, int) or isinstance(last, bool) or last < -1:
            return f"manifest.json: queries.{uid}.lastBatchId is missing or not an integer >= -1"
    return None


def list_snapshots(job_root: JobRoot) -> list[SnapshotInfo]:
    """All snapshots of a job root, oldest first, incomplete ones included (check ``.complete``)."""
    return job_root.snapshots(include_incomplete=True)


def last_committed_batch_id(checkpoint_dir: str | os.PathLike[str]) -> int:
    """The largest N with ``commits/N`` in a Spark checkpoint, or -1 when none was committed."""
    return _max_batch(Path(checkpoint_dir) / "commits")


def _max_batch(log_dir: Path) -> int:
    if not log_dir.is_dir():
        return -1
    ids = [int(p.name) for p in log_dir.iterdir() if p.name.isdigit()]
    return max(ids, default=-1)


def checkpoint_info(checkpoint_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """What a Spark checkpoint holds on disk: last planned and committed batch, state operators.

    ``stateOperators`` maps the Spark operator id to its partitions, state store names (stream-stream
    joins have several) and the highest state version present.
    """
    root = Path(checkpoint_dir)
    operators: dict[str, dict[str, Any]] = {}
    state = root / "state"
    if state.is_dir():
        for op in sorted((p for p in state.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)):
            partitions = sorted(int(p.name) for p in op.iterdir() if p.is_dir() and p.name.isdigit())
            stores: set[str] = set()
            max_version = -1
            for dirpath, _dirs, files in os.walk(op):
                rel = Path(dirpath).relative_to(op).parts
                for name in files:
                    m = _STATE_FILE_RE.match(name)
                    if m is None or not rel or not rel[0].isdigit():
                        continue
                    max_version = max(max_version, int(m[1]))
                    stores.add(rel[1] if len(rel) > 1 else "default")
            operators[op.name] = {
                "partitions": partitions,
                "stores": sorted(stores),
                "maxStateVersion": max_version if max_version >= 0 else None,
            }
    return {
        "lastCommittedBatchId": last_committed_batch_id(root),
        "lastPlannedBatchId": _max_batch(root / "offsets"),
        "stateOperators": operators,
    }


def inspect_snapshot(snapshot_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest plus what is actually on disk per query, for ``planengine snapshot`` and checks.

    ``consistent`` is false when a query's checkpoint disagrees with the manifest's ``lastBatchId``.
    """
    info = read_snapshot(snapshot_dir)
    queries: dict[str, Any] = {}
    if info.checkpoints_dir.is_dir():
        for cp in sorted(p for p in info.checkpoints_dir.iterdir() if p.is_dir()):
            details = checkpoint_info(cp)
            expected = info.last_batch_ids.get(cp.name)
            details["manifestLastBatchId"] = expected
            details["consistent"] = expected == details["lastCommittedBatchId"]
            queries[cp.name] = details
    return {
        "snapshotId": info.snapshot_id,
        "path": str(info.path),
        "complete": info.complete,
        "problem": info.problem,
        "manifest": info.manifest,
        "queries": queries,
    }
