"""Snapshots and forks on an object-store job root (docs/object-store.md, "Runs, the plan in force, and snapshots
without hard links").

A store has no hard links, and Spark's maintenance in a live run deletes old state versions and log entries, so a
snapshot cannot share files the way a directory's does. There are two kinds instead:

* **by reference** (``storage: "reference"``): taken after the run's queries stopped for good (a stop, an
  upgrade). Nothing is copied: ``manifest.json`` lists, per query uid, each key a restore needs under
  ``runs/<parent>/checkpoints/<uid>/`` with its ETag and size. The files a snapshot names are chosen exactly as
  a directory snapshot chooses them (``snapshots._committed_filter``). ``store_job_root.prune_runs`` keeps every
  run a complete snapshot names.
* **by copy** (``storage: "copy"``): taken while the run may still be writing (``planengine snapshot``). The same
  files are copied server-side into ``snapshots/<id>/checkpoints/<uid>/`` first, so the live run's maintenance
  cannot take them away.

Either way ``manifest.json`` is created last (``If-None-Match: *``); a snapshot without one is incomplete and never
restored. A fork (``fork_store_snapshot``) first checks every named file against one LIST per checkpoint prefix
(a file that changed or disappeared fails the fork naming its key), then copies them server-side into the new run,
rewriting on the way the few metadata logs that name absolute URIs (state schema files, internal-channel files):
those are read and written whole, everything else never passes through this process.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from planengine.errors import InternalError, UserError
from planengine.runtime.storage.files import PLAN_FILE, validate_uid
from planengine.runtime.storage.job_store import Conflict
from planengine.runtime.storage.s3_job_store import S3JobStore, StoredObject
from planengine.runtime.storage.snapshots import (
    _SCHEMA_PATH_RE,
    _STATE_FILE_RE,
    MANIFEST_FILE,
    REASONS,
    ForkStats,
    SnapshotInfo,
    _committed_filter,
    _manifest_problem,
    manifest_head,
    repoint_log_paths,
)

if TYPE_CHECKING:
    from planengine.runtime.storage.store_job_root import StoreJobRoot, StoreRun

BY_REFERENCE = "reference"
BY_COPY = "copy"
RESERVED = f"{MANIFEST_FILE}.reserved"
#: ``runs/<id>/checkpoints/<uid>/`` and ``snapshots/<id>/checkpoints/<uid>/``: four key segments before the file.
_CHECKPOINT_DEPTH = 4
# A channel file named by absolute URI in a channel manifest or a reader's source log (snapshots.py says why they
# are rewritten): the same shape as a directory's, with any scheme.
_CHANNEL_URI_RE = re.compile(r"^(?P<base>.+)/checkpoints/(?P<uid>[^/]+)/(?P<file>channel/[^/]+)$")


class SnapshotFilesChanged(UserError):
    """A file a snapshot names is gone or not the one the snapshot recorded: the snapshot cannot be restored."""


@dataclass(frozen=True)
class StoreSnapshot(SnapshotInfo):
    """A snapshot of an object-store root; ``path`` is its URI (``s3a://bucket/prefix/snapshots/<id>``)."""

    store: Any = None  # the root's S3JobStore

    @property
    def key(self) -> str:
        return f"snapshots/{self.snapshot_id}"

    @property
    def plan_path(self) -> Any:
        return self.store.location(f"{self.key}/{PLAN_FILE}")

    @property
    def checkpoints_dir(self) -> Any:
        return self.store.object_uri(f"{self.key}/checkpoints")

    def checkpoint_dir(self, uid: str) -> Any:
        """The checkpoint holding the query's files, for Spark's state readers (``snapshots inspect``, ``check``):
        the parent run's for a snapshot by reference (it holds the snapshot's files, and perhaps later ones)."""
        files = (self.manifest or {}).get("files", {}).get(validate_uid(uid)) or []
        if files:
            return self.store.object_uri("/".join(files[0]["key"].split("/")[:_CHECKPOINT_DEPTH]))
        return self.store.object_uri(f"{self.key}/checkpoints/{uid}")

    def files(self) -> dict[str, list[dict[str, Any]]]:
        return dict((self.manifest or {}).get("files") or {})


# -- taking ------------------------------------------------------------------------------------------
def take_store_snapshot(root: StoreJobRoot, run: StoreRun, *, reason: str, engine_version: str, spark_version: str,
                        plan_id: str, last_batch_ids: dict[str, int], live: bool) -> StoreSnapshot:
    """Snapshot ``run`` (module doc): by reference when ``live`` is False (the caller stopped its queries for
    good), else by server-side copy. Costs one LIST per 1,000 checkpoint files and four small PUTs, plus one
    COPY per file when ``live``."""
    if reason not in REASONS:
        raise UserError(f"snapshot reason {reason!r} is not one of {', '.join(REASONS)}")
    store = root.store
    plan_text = root.read_plan_text()
    objects = checkpoint_objects(store, f"runs/{run.run_id}/checkpoints")
    cut = _cut(run.run_id, objects, last_batch_ids)
    snapshot_id = root.reserve_snapshot_id()
    base = f"snapshots/{snapshot_id}"
    written = [f"{base}/{RESERVED}"]
    try:
        store.create(f"{base}/{PLAN_FILE}", plan_text.encode("utf-8"))
        written.append(f"{base}/{PLAN_FILE}")
        files: dict[str, list[dict[str, Any]]] = {}
        for uid, last in sorted(cut.items()):
            chosen = restorable(objects[uid], last)
            if live:
                chosen = [_copy_into(store, obj, f"{base}/checkpoints/{uid}/{relative(obj.key)}", written)
                          for obj in chosen]
            files[uid] = [{"key": o.key, "etag": o.etag, "size": o.size} for o in chosen]
        manifest = {
            **manifest_head(snapshot_id, reason, engine_version, spark_version, plan_id, run.run_id),
            "storage": BY_COPY if live else BY_REFERENCE,
            "queries": {uid: {"lastBatchId": last} for uid, last in sorted(cut.items())},
            "files": files,
        }
        store.create(f"{base}/{MANIFEST_FILE}", (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))
    except BaseException:
        # Without a manifest it would only be listed as incomplete; do not leave the objects behind either.
        with contextlib.suppress(Exception):
            store.delete_keys(written)
        raise
    return StoreSnapshot(snapshot_id, store.location(base), manifest, store=store)


def checkpoint_objects(store: S3JobStore, prefix: str) -> dict[str, list[StoredObject]]:
    """The objects under a ``checkpoints/`` prefix by query uid (S3A's directory markers left out: Spark creates
    the directories it needs again)."""
    by_uid: dict[str, list[StoredObject]] = defaultdict(list)
    for obj in store.list_objects(prefix):
        parts = obj.key.split("/")
        if len(parts) > _CHECKPOINT_DEPTH and not obj.key.endswith("/"):
            by_uid[parts[_CHECKPOINT_DEPTH - 1]].append(obj)
    return dict(by_uid)


def relative(key: str) -> str:
    """A checkpoint file's path inside its query's checkpoint.

    >>> relative("runs/r-20261122T081500Z-0000/checkpoints/3_sink/state/0/1/2.changelog")
    'state/0/1/2.changelog'
    """
    return "/".join(key.split("/")[_CHECKPOINT_DEPTH:])


def last_committed(objects: list[StoredObject]) -> int:
    """The largest N with ``commits/N`` among a query's objects, -1 when none was committed."""
    return _max_batch(objects, "commits")


def _max_batch(objects: list[StoredObject], log: str) -> int:
    ids = [int(parts[1]) for o in objects if len(parts := relative(o.key).split("/")) == 2
           and parts[0] == log and parts[1].isdigit()]
    return max(ids, default=-1)


def restorable(objects: list[StoredObject], last: int) -> list[StoredObject]:
    """The objects a restore at batch ``last`` needs: the selection of a directory snapshot."""
    keep = _committed_filter(last)
    return [o for o in objects if keep(tuple(relative(o.key).split("/")))]


def _cut(run_id: str, objects: dict[str, list[StoredObject]], last_batch_ids: dict[str, int]) -> dict[str, int]:
    unknown = sorted(set(last_batch_ids) - set(objects))
    if unknown:
        raise InternalError(f"run {run_id} has no checkpoint for queries {unknown}; cannot snapshot them")
    cut = {}
    for uid, objs in objects.items():
        committed = last_committed(objs)
        wanted = last_batch_ids.get(uid, committed)
        if wanted > committed:
            raise InternalError(f"query {uid} of run {run_id}: the driver reports batch {wanted} committed but the "
                                f"checkpoint's last commit is {committed}")
        cut[uid] = wanted
    return cut


def _copy_into(store: S3JobStore, obj: StoredObject, target: str, written: list[str]) -> StoredObject:
    try:
        etag = store.copy(obj.key, target, source_etag=obj.etag)
    except Conflict:
        raise UserError(f"{store.location(obj.key)} changed while it was being snapshotted",
                        hint="take the snapshot again (a live run's maintenance removed or rewrote the file)") from None
    written.append(target)
    return StoredObject(target, etag, obj.size)


# -- reading -----------------------------------------------------------------------------------------
def read_store_snapshot(store: S3JobStore, snapshot_id: str) -> StoreSnapshot:
    """Read and validate a snapshot; never raises for a broken one, reports it (``problem``) instead."""
    base = f"snapshots/{snapshot_id}"
    where = store.location(base)
    current = store.read(f"{base}/{MANIFEST_FILE}")
    if current is None:
        return StoreSnapshot(snapshot_id, where, None, "manifest.json is missing (the snapshot was never finished)",
                             store=store)
    try:
        manifest = json.loads(current.data.decode("utf-8"))
    except ValueError as error:
        return StoreSnapshot(snapshot_id, where, None, f"manifest.json is unreadable: {error}", store=store)
    problem = _manifest_problem(manifest) or _files_problem(manifest)
    if problem is None and store.read(f"{base}/{PLAN_FILE}") is None:
        problem = "plan.json is missing"
    if problem is not None:
        return StoreSnapshot(snapshot_id, where, None, problem, store=store)
    return StoreSnapshot(manifest["snapshotId"], where, manifest, store=store)


def _files_problem(manifest: dict[str, Any]) -> str | None:
    files = manifest.get("files")
    if not isinstance(files, dict):
        return "manifest.json: field 'files' is missing (a snapshot on an object store lists its files)"
    missing = sorted(set(manifest["queries"]) - set(files))
    return f"manifest.json: no files for queries {missing}" if missing else None


def inspect_store_snapshot(snap: StoreSnapshot) -> dict[str, Any]:
    """What ``snapshots inspect`` shows for a store snapshot: the manifest, and per query what its files hold."""
    queries: dict[str, Any] = {}
    for uid, entries in sorted(snap.files().items()):
        objects = [StoredObject(e["key"], e["etag"], int(e["size"])) for e in entries]
        committed = last_committed(objects)
        expected = snap.last_batch_ids.get(uid)
        queries[uid] = {"lastCommittedBatchId": committed, "lastPlannedBatchId": _max_batch(objects, "offsets"),
                        "stateOperators": _state_operators(objects), "files": len(objects),
                        "bytes": sum(o.size for o in objects), "manifestLastBatchId": expected,
                        "consistent": expected == committed}
    return {"snapshotId": snap.snapshot_id, "path": snap.path, "complete": snap.complete, "problem": snap.problem,
            "manifest": snap.manifest, "queries": queries}


def _state_operators(objects: list[StoredObject]) -> dict[str, dict[str, Any]]:
    """``checkpoint_info``'s ``stateOperators`` from keys alone: partitions, stores and newest state version."""
    operators: dict[str, dict[str, Any]] = {}
    for obj in objects:
        parts = relative(obj.key).split("/")
        if len(parts) < 4 or parts[0] != "state" or not parts[1].isdigit() or not parts[2].isdigit():
            continue
        m = _STATE_FILE_RE.match(parts[-1])
        op = operators.setdefault(parts[1], {"partitions": set(), "stores": set(), "maxStateVersion": None})
        op["partitions"].add(int(parts[2]))
        if m is not None:
            op["stores"].add(parts[3] if len(parts) > 4 else "default")
            op["maxStateVersion"] = max(int(m[1]), op["maxStateVersion"] or -1)
    return {k: {"partitions": sorted(v["partitions"]), "stores": sorted(v["stores"]),
                "maxStateVersion": v["maxStateVersion"]} for k, v in sorted(operators.items(), key=lambda i: int(i[0]))}


# -- forking -----------------------------------------------------------------------------------------
def fork_store_snapshot(store: S3JobStore, snap: StoreSnapshot, target: str) -> ForkStats:
    """Give a new run its own checkpoints (``target``: ``runs/<new>/checkpoints``) from ``snap``: every file the
    manifest names is checked, then copied server-side, and the metadata logs naming absolute URIs are rewritten
    to the new run's (module doc). The caller writes the run marker afterwards, and deletes ``target`` on error."""
    files = snap.files()
    verify_snapshot_files(store, snap)
    stats = ForkStats()
    base_uri = store.object_uri(target)
    for uid, entries in sorted(files.items()):
        for entry in entries:
            parts = tuple(relative(entry["key"]).split("/"))
            destination = f"{target}/{uid}/{'/'.join(parts)}"
            stats.bytes += int(entry["size"])
            if _checksum_of_rewritten(parts):
                stats.files_skipped += 1  # Hadoop reads a file without its .crc unverified, but fails on a stale one
            elif _names_uris(parts):
                _rewrite(store, entry, destination, base_uri, uid, set(files), snap)
                stats.files_copied += 1
            else:
                _copy_named(store, entry, destination, snap)
                stats.files_copied += 1
    return stats


def verify_snapshot_files(store: S3JobStore, snap: StoreSnapshot) -> None:
    """Every file the manifest names is still there with its ETag and size: one LIST per checkpoint prefix, so a
    file a later run rewrote or a clean-up deleted fails here, naming its key, and not as a Java stack trace in the
    first batch. ``SnapshotFilesChanged`` otherwise."""
    wanted = [e for entries in snap.files().values() for e in entries]
    prefixes = sorted({"/".join(e["key"].split("/")[:_CHECKPOINT_DEPTH]) for e in wanted})
    present = {o.key: o for prefix in prefixes for o in store.list_objects(prefix)}
    problems = []
    for entry in wanted:
        found = present.get(entry["key"])
        if found is None:
            problems.append(f"{store.location(entry['key'])} is gone")
        elif found.etag != entry["etag"] or found.size != int(entry["size"]):
            problems.append(f"{store.location(entry['key'])} changed (ETag {entry['etag']} -> {found.etag})")
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise SnapshotFilesChanged(
            f"snapshot {snap.snapshot_id} cannot be restored: {'; '.join(problems[:3])}{more}",
            hint="restore an older or newer snapshot (`planengine snapshots list --job-root URI`); a run that "
                 "resumes its own checkpoints, or a clean-up of old runs, changed the files this one names")


def _copy_named(store: S3JobStore, entry: dict[str, Any], destination: str, snap: StoreSnapshot) -> None:
    try:
        store.copy(entry["key"], destination, source_etag=entry["etag"])
    except Conflict:
        raise _changed_during_fork(store, entry, snap) from None


def _changed_during_fork(store: S3JobStore, entry: dict[str, Any], snap: StoreSnapshot) -> SnapshotFilesChanged:
    return SnapshotFilesChanged(f"snapshot {snap.snapshot_id} cannot be restored: {store.location(entry['key'])} "
                                "changed or disappeared during the fork",
                                hint="restore another snapshot (`planengine snapshots list --job-root URI`)")


def _names_uris(parts: tuple[str, ...]) -> bool:
    """Spark logs that name files by absolute URI (snapshots.py: state schema metadata, channel manifests and
    readers' source logs)."""
    if parts[-1].startswith("."):
        return False
    if parts[0] == "state" and len(parts) == 5 and parts[2:4] == ("_metadata", "v2"):
        return True
    return (parts[:2] == ("channel", "_spark_metadata") and len(parts) == 3) or (parts[0] == "sources"
                                                                                  and len(parts) == 3)


def _checksum_of_rewritten(parts: tuple[str, ...]) -> bool:
    name = parts[-1]
    return name.startswith(".") and name.endswith(".crc") and _names_uris((*parts[:-1], name[1:-4]))


def _rewrite(store: S3JobStore, entry: dict[str, Any], destination: str, base_uri: str, uid: str,
             uids: set[str], snap: StoreSnapshot) -> None:
    current = store.read(entry["key"])
    if current is None or current.version != entry["etag"]:
        raise _changed_during_fork(store, entry, snap)
    try:
        text = current.data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"the checkpoint file {store.location(entry['key'])} is damaged: it is not the UTF-8 text "
                        f"Spark writes (byte {error.start}: {error.reason})",
                        hint="restore a snapshot taken before the damage (`planengine snapshots list`)") from None
    parts = relative(entry["key"]).split("/")
    new = (repoint_schema_paths(text, f"{base_uri}/{uid}") if parts[0] == "state"
           else repoint_channel_paths(text, base_uri, uids))
    store.put(destination, new.encode("utf-8"))


def repoint_schema_paths(text: str, query_uri: str) -> str:
    """A state operator's metadata (v2) with its ``stateSchemaFilePaths`` pointing into ``query_uri``.

    >>> old = 'v2\\n{"stateStoreInfo":[{"stateSchemaFilePaths":["s3a://b/j/runs/r1/checkpoints/q/state/0/_stateSchema/default/0_x"]}]}'
    >>> repoint_schema_paths(old, "s3a://b/j/runs/r2/checkpoints/q").split("Paths")[1]
    '":["s3a://b/j/runs/r2/checkpoints/q/state/0/_stateSchema/default/0_x"]}]}'
    """
    header, _, body = text.partition("\n")
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return text
    changed = False
    for info in data.get("stateStoreInfo", []) if isinstance(data, dict) else []:
        paths = info.get("stateSchemaFilePaths") if isinstance(info, dict) else None
        for i, old in enumerate(paths if isinstance(paths, list) else []):
            m = _SCHEMA_PATH_RE.search(str(old))
            if m is not None and (new := f"{query_uri}/{m[1]}") != old:
                paths[i] = new
                changed = True
    return header + "\n" + json.dumps(data, separators=(",", ":")) if changed else text


def repoint_channel_paths(text: str, checkpoints_uri: str, uids: set[str]) -> str:
    """A channel manifest or a reader's source log with its channel files under ``checkpoints_uri``.

    >>> log = 'v1\\n{"path":"s3a://b/j/runs/r1/checkpoints/7_c/channel/part-0.parquet","size":1}'
    >>> repoint_channel_paths(log, "s3a://b/j/runs/r2/checkpoints", {"7_c"}).split("\\n")[1]
    '{"path":"s3a://b/j/runs/r2/checkpoints/7_c/channel/part-0.parquet","size":1}'
    """

    def moved(path: str) -> str | None:
        m = _CHANNEL_URI_RE.match(path)
        return f"{checkpoints_uri}/{m['uid']}/{m['file']}" if m is not None and m["uid"] in uids else None

    return repoint_log_paths(text, moved)

