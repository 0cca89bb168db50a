"""A job root on an object store: ``JobRoot("s3a://bucket/prefix")`` (docs/object-store.md, issue 19).

The layout is DESIGN §6's, as keys under the prefix (``job_root`` module doc), and the interface is ``JobRoot``'s,
so the executor, the CLI and fencing use either kind of root alike. What differs is how each step is made safe
without POSIX, and every write goes through the root's ``S3JobStore``:

* **ids** are reserved by creating ``runs/<id>/run.json.reserved`` (``snapshots/<id>/manifest.json.reserved``)
  with ``If-None-Match: *`` instead of an exclusive ``mkdir``: of two creators of one id exactly one wins, and the
  loser takes the next counter value;
* **the plan in force** is created if absent; replacing it (an upgrade) is ``If-Match`` on the version read;
* **a run is complete** once ``runs/<id>/run.json`` exists, written last as in a directory;
* **snapshots and forks** are ``store_snapshots``: manifests naming the stopped run's files, server-side copies;
* **driver-local files** (materialised bounded inputs, drain markers) stay on the driver's disk under
  ``local_dir``, a scratch directory named after the bucket and prefix, as nothing but this driver reads them.

Spark reaches the same objects through S3A: ``Run.checkpoint_dir`` is an ``s3a://`` URI, and both sides read the
store's address from the same ``PLANENGINE_S3_*`` variables (``object_store.store_endpoint``).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planengine.errors import UserError
from planengine.runtime.storage.files import PLAN_FILE, utc_now_iso, validate_uid
from planengine.runtime.storage.job_root import (
    DRIVER_FILE,
    ID_PATTERN,
    LOCK_FILE,
    RUN_MARKER,
    JobRoot,
    Run,
    _check_id,
    id_candidates,
    keep_runs,
)
from planengine.runtime.storage.job_store import AlreadyExists, Conflict
from planengine.runtime.storage.object_store import is_object_store
from planengine.runtime.storage.s3_job_store import S3JobStore, parse_s3a_uri
from planengine.runtime.storage.sink_claims import file_sink_paths
from planengine.runtime.storage.store_snapshots import (
    BY_REFERENCE,
    RESERVED,
    StoreSnapshot,
    _max_batch,
    fork_store_snapshot,
    read_store_snapshot,
    take_store_snapshot,
)

RUN_RESERVED = f"{RUN_MARKER}.reserved"


@dataclass(frozen=True)
class StoreRun(Run):
    """A run on an object store: ``path`` is its driver-local scratch directory, its checkpoints are objects."""

    root: Any = None  # the StoreJobRoot

    @property
    def key(self) -> str:
        return f"runs/{self.run_id}"

    @property
    def checkpoints_dir(self) -> Any:
        return self.root.store.object_uri(f"{self.key}/checkpoints")

    def checkpoint_dir(self, uid: str) -> Any:
        """The ``s3a://`` URI Spark is given as the query's checkpoint location."""
        return self.root.store.object_uri(f"{self.key}/checkpoints/{validate_uid(uid)}")

    def query_uids(self) -> list[str]:
        return self.root.store.list_children(f"{self.key}/checkpoints")

    def info(self) -> dict:
        current = self.root.store.read(f"{self.key}/{RUN_MARKER}")
        if current is None:
            raise OSError(f"{self.root.store.location(self.key)} has no {RUN_MARKER}")
        return json.loads(current.data.decode("utf-8"))

    def last_committed_batch_id(self, uid: str) -> int:
        return _max_batch(self.root.store.list_objects(f"{self.key}/checkpoints/{validate_uid(uid)}/commits"),
                          "commits")


class StoreJobRoot(JobRoot):
    """``JobRoot`` on an ``s3a://bucket/prefix`` (module doc)."""

    on_object_store = True

    def __init__(self, location: str | os.PathLike[str], store: S3JobStore | None = None):
        self._store = store if store is not None else S3JobStore(str(os.fspath(location)))
        bucket, prefix = parse_s3a_uri(self._store.uri)
        self._scratch = Path(tempfile.gettempdir()) / "planengine-store-roots" / bucket / (prefix or "_root")

    def __repr__(self) -> str:
        return f"JobRoot({self.location!r})"

    # -- what every root answers ---------------------------------------------------------------------
    @property
    def store(self) -> S3JobStore:  # type: ignore[override]
        return self._store

    @property
    def location(self) -> str:
        return self._store.describe()

    @property
    def local_dir(self) -> Path:
        return self._scratch

    def exists(self) -> bool:
        self._store.check_reachable()
        return self.has_plan() or bool(self._store.list_children("runs"))

    def check_writable(self) -> None:
        """Before a run writes anything: the store is reachable and honours conditional writes (five requests;
        ``S3JobStore.probe``), else one line naming what to fix."""
        self._store.probe()

    @property
    def plan_path(self) -> Any:
        return self._store.location(PLAN_FILE)

    @property
    def lock_path(self) -> Any:
        return self._store.location(LOCK_FILE)

    @property
    def driver_path(self) -> Any:
        return self._store.location(DRIVER_FILE)

    def snapshot_dir(self, snapshot_id: str) -> Any:
        _check_id(snapshot_id, "s", "snapshot")
        return self._store.location(f"snapshots/{snapshot_id}")

    # -- plan ----------------------------------------------------------------------------------------
    def has_plan(self) -> bool:
        return self._store.read(PLAN_FILE) is not None

    def read_plan_text(self) -> str:
        current = self._store.read(PLAN_FILE)
        if current is None:
            raise UserError(f"job root {self.location} has no plan.json",
                            hint="compile one with `planengine run --script FILE --job-root URI`")
        return current.data.decode("utf-8")

    def write_plan_text(self, text: str, overwrite: bool = False) -> None:
        """Install the plan in force: created if absent; replaced (``overwrite``) only if it is still the version
        read here, so two installers never both win."""
        data = text.encode("utf-8")
        try:
            self._store.create(PLAN_FILE, data)
            return
        except AlreadyExists:
            if not overwrite:
                raise UserError(f"job root {self.location} already has a plan.json",
                                hint="pass overwrite=True (an upgrade) or use a new job root") from None
        current = self._store.read(PLAN_FILE)
        try:
            if current is None:
                self._store.create(PLAN_FILE, data)
            else:
                self._store.replace(PLAN_FILE, data, expected=current.version)
        except (AlreadyExists, Conflict):
            raise UserError(f"the plan in force of {self.location} changed while this run installed its own",
                            hint="only one run may install a plan: start again once the other one is done") from None

    # -- runs ----------------------------------------------------------------------------------------
    def _run(self, run_id: str) -> StoreRun:
        return StoreRun(run_id, self._scratch / "runs" / run_id, root=self)

    def new_run(self, from_snapshot: str | None = None) -> Run:
        source = self._restorable_snapshot(from_snapshot)
        run_id = self._reserve("r", "runs", RUN_RESERVED)
        return self._create_run(self._run(run_id), source, overwrite_marker=False)

    def open_run(self, run_id: str | None, from_snapshot: str | None = None) -> Run:
        if run_id is None:
            return self.new_run(from_snapshot)
        validate_uid(run_id)
        if self.is_complete_run(run_id):
            return self._run(run_id)
        source = self._restorable_snapshot(from_snapshot)
        return self._create_run(self._run(run_id), source, overwrite_marker=True)

    def is_complete_run(self, run_id: str) -> bool:
        return self._store.read(f"runs/{validate_uid(run_id)}/{RUN_MARKER}") is not None

    def _restorable_snapshot(self, ref: str | None) -> StoreSnapshot | None:  # type: ignore[override]
        if ref is None:
            return None
        source = self._resolve_store_snapshot(ref)
        if not source.complete:
            raise UserError(f"snapshot {ref} is incomplete and cannot be restored: {source.problem}",
                            hint="pick another snapshot (`planengine snapshots list --job-root URI` lists them)")
        return source

    def _resolve_store_snapshot(self, ref: str) -> StoreSnapshot:
        """A snapshot id of this root, or the ``s3a://`` URI of a snapshot (``<root>/snapshots/<id>``) of a root
        on the same store."""
        if ID_PATTERN.match(ref) and ref.startswith("s-"):
            return read_store_snapshot(self._store, ref)
        head, _, snapshot_id = ref.rstrip("/").rpartition("/snapshots/")
        if is_object_store(ref) and ID_PATTERN.match(snapshot_id) and snapshot_id.startswith("s-"):
            other = self if head == self.location else StoreJobRoot(head)
            return read_store_snapshot(other.store, snapshot_id)
        raise UserError(f"snapshot {ref!r} is neither a snapshot id of {self.location} nor the s3a:// URI of a "
                        "snapshot", hint="pass an id like s-20261122T081500Z-0000 or s3a://bucket/root/snapshots/<id>")

    def _create_run(self, run: Run, source: Any, *, overwrite_marker: bool) -> Run:
        """Fork ``source`` (if any) into the run, then write ``run.json`` last: a run without it is incomplete and
        never resumed. A failed fork leaves nothing of the run behind (a restart loop over a snapshot that cannot
        be forked would otherwise fill the bucket)."""
        key = f"runs/{run.run_id}"
        if source is not None:
            if source.store.bucket != self._store.bucket:
                raise UserError(f"snapshot {source.path} is in another bucket than the job root {self.location}",
                                hint="restore a snapshot of a root in the same bucket (a server-side copy stays "
                                     "within one store)")
            try:
                fork_store_snapshot(self._store, source, f"{key}/checkpoints")
            except BaseException:
                with contextlib.suppress(Exception):
                    self._store.delete_keys(o.key for o in self._store.list_objects(key))
                raise
        marker = {"runId": run.run_id, "createdAt": utc_now_iso(),
                  "fromSnapshot": source.snapshot_id if source is not None else None}
        data = (json.dumps(marker, indent=2) + "\n").encode("utf-8")
        current = self._store.read(f"{key}/{RUN_MARKER}") if overwrite_marker else None
        if current is None:
            self._store.create(f"{key}/{RUN_MARKER}", data)
        else:
            self._store.replace(f"{key}/{RUN_MARKER}", data, expected=current.version)
        return run

    def _complete_runs(self) -> list[tuple[StoreRun, dict]]:
        """Every complete run (any name) with its marker: one LIST and one GET per run."""
        found = []
        for run_id in self._store.list_children("runs"):
            current = self._store.read(f"runs/{run_id}/{RUN_MARKER}")
            if current is not None:
                with contextlib.suppress(ValueError):
                    found.append((self._run(run_id), json.loads(current.data.decode("utf-8"))))
        return found

    def runs(self) -> list[Run]:
        return [run for run, _ in self._complete_runs() if (m := ID_PATTERN.match(run.run_id)) and m["prefix"] == "r"]

    def newest_run(self) -> Run | None:
        runs = self._complete_runs()
        return max(runs, key=lambda r: (str(r[1].get("createdAt", "")), r[0].run_id))[0] if runs else None

    def prune_runs(self, current: str, keep: int | None = None) -> list[str]:
        """``JobRoot.prune_runs`` on a store, except that a run whose files a complete snapshot names (by
        reference) is kept as long as that snapshot is; its objects go after its marker, as in a directory."""
        keep = keep_runs() if keep is None else keep
        if keep <= 0:
            return []
        complete = sorted(self._complete_runs(), key=lambda r: (str(r[1].get("createdAt", "")), r[0].run_id))
        named = self._runs_named_by_snapshots()
        doomed = [r for r, _ in complete[:-keep] if r.run_id != current and r.run_id not in named]
        for run in doomed:
            self._store.delete_keys([f"{run.key}/{RUN_MARKER}"])
            self._store.delete_keys(o.key for o in self._store.list_objects(run.key))
        return [r.run_id for r in doomed]

    def _runs_named_by_snapshots(self) -> set[str]:
        named = set()
        for snap in self.snapshots():
            if (snap.manifest or {}).get("storage") == BY_REFERENCE:
                named.update(e["key"].split("/")[1] for entries in snap.files().values() for e in entries)  # type: ignore[attr-defined]
        return named

    def live_run(self) -> Run | None:
        run_id = (self.read_driver_info() or {}).get("runId")
        if run_id and self.is_complete_run(run_id):
            return self._run(run_id)
        return self.newest_run()

    def run(self, run_id: str) -> Run:
        _check_id(run_id, "r", "run")
        if not self.is_complete_run(run_id):
            known = ", ".join(r.run_id for r in self.runs()[-5:]) or "none"
            raise UserError(f"job root {self.location} has no complete run {run_id} (latest runs: {known})")
        return self._run(run_id)

    # -- snapshots -----------------------------------------------------------------------------------
    def snapshots(self, include_incomplete: bool = False) -> list[Any]:
        ids = [i for i in self._store.list_children("snapshots") if (m := ID_PATTERN.match(i)) and m["prefix"] == "s"]
        infos = [read_store_snapshot(self._store, i) for i in ids]
        return infos if include_incomplete else [i for i in infos if i.complete]

    def snapshot(self, snapshot_id: str) -> Any:
        _check_id(snapshot_id, "s", "snapshot")
        if not self._store.list_objects(f"snapshots/{snapshot_id}"):
            raise UserError(f"job root {self.location} has no snapshot {snapshot_id}")
        return read_store_snapshot(self._store, snapshot_id)

    def reserve_snapshot_id(self) -> str:
        return self._reserve("s", "snapshots", RESERVED)

    def reserve_snapshot_dir(self) -> tuple[str, Path]:
        raise NotImplementedError("a snapshot on an object store has no directory: use reserve_snapshot_id")

    def take_snapshot(self, run: Run, *, reason: str, engine_version: str, spark_version: str, plan_id: str,
                      last_batch_ids: dict[str, int], live: bool = True) -> Any:
        return take_store_snapshot(self, self._run(run.run_id), reason=reason, engine_version=engine_version,
                                   spark_version=spark_version, plan_id=plan_id, last_batch_ids=last_batch_ids,
                                   live=live)

    def snapshot_plan_text(self, ref: str) -> str:
        snap = self._resolve_store_snapshot(ref)
        current = snap.store.read(f"{snap.key}/{PLAN_FILE}")
        if current is None:
            raise OSError(f"{snap.plan_path} does not exist")
        return current.data.decode("utf-8")

    def delete_snapshot(self, snapshot_id: str) -> None:
        """The manifest first (the snapshot is incomplete from then on, never restored), then its other objects.
        Runs it named by reference are freed for the next ``prune_runs``."""
        self.snapshot(snapshot_id)  # refuses ids this job root does not have
        base = f"snapshots/{snapshot_id}"
        self._store.delete_keys([f"{base}/manifest.json"])
        self._store.delete_keys(o.key for o in self._store.list_objects(base))

    # -- driver.json ---------------------------------------------------------------------------------
    def read_driver_info(self) -> dict | None:
        current = self._store.read(DRIVER_FILE)
        try:
            value = json.loads(current.data.decode("utf-8")) if current is not None else None
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def write_driver_info(self, info: dict) -> None:
        self._store.put(DRIVER_FILE, (json.dumps(info) + "\n").encode("utf-8"))

    def remove_driver_info(self, run_id: str) -> None:
        current = self._store.read(DRIVER_FILE)
        if current is None:
            return
        with contextlib.suppress(ValueError, Conflict):
            if json.loads(current.data.decode("utf-8")).get("runId") == run_id:
                self._store.delete(DRIVER_FILE, expected=current.version)

    # -- checks --------------------------------------------------------------------------------------
    def refuse_sinks_inside(self, plan_data: dict) -> None:
        """``job_root.refuse_sinks_inside`` for a prefix: a file sink writing into the root's own keys."""
        base = self.location.rstrip("/")
        reserved = [f"{base}/runs", f"{base}/snapshots", f"{base}/checkpoints"]
        for identifier, path in file_sink_paths(plan_data):
            sink = path.rstrip("/")
            inside = next((d for d in reserved if sink == d or sink.startswith(d + "/")), None)
            if sink == base or inside is not None:
                where = "is the job root itself" if sink == base else f"is inside {inside}"
                raise UserError(f"sink {identifier} writes to {path}, which {where}: the engine keeps its "
                                "checkpoints, runs and snapshots there",
                                hint="give the sink a 'path' outside the job root, or run with another --job-root")

    # -- helpers -------------------------------------------------------------------------------------
    def _reserve(self, prefix: str, parent: str, marker: str) -> str:
        """A fresh id under ``parent``, reserved by creating ``<parent>/<id>/<marker>`` if absent."""
        existing = [i for i in self._store.list_children(parent)
                    if (m := ID_PATTERN.match(i)) and m["prefix"] == prefix]
        note = json.dumps({"pid": os.getpid(), "hostname": socket.gethostname(), "at": utc_now_iso()}).encode()
        for new_id in id_candidates(prefix, existing):
            try:
                self._store.create(f"{parent}/{new_id}/{marker}", note)
                return new_id
            except AlreadyExists:
                continue
        raise AssertionError("id_candidates never ends")
