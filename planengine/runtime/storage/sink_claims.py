"""One job per file-sink path: a claim file in the sink's directory names the job root that writes it.

Spark's file sink keeps its exactly-once log in the sink's own directory (``<path>/_spark_metadata``), keyed by
batch id, and skips a batch whose id the log already holds. Two jobs writing one path therefore do not append
to each other: the second job's batch 0, 1, … are "already committed" and its rows silently vanish (a job
started fresh into a path another job filled loses the same way). Flink's filesystem sink would append; here
the only safe answer is to refuse, before any query starts, naming the other job.

The claim is ``<path>/_planengine_sink.json`` (``_``-prefixed: Spark, Hadoop and Flink file sources skip it),
holding the claiming job root and run. Rules, checked under the run lock of the starting run:

* no claim: this job root claims the path (a path written before claims existed is taken over as is: the job
  that wrote it is the one that usually restarts on it);
* a claim of this job root: the path is ours (a restart, an upgrade's standby, a restore);
* a claim of another job root whose snapshot this run forked, while that job root has no running driver
  (no ``RUN_LOCK``): the path is handed over — the fork continues that job's batch ids, so its log too;
* any other claim: refused, with the job that holds it and how to free the path.

An ``s3a://`` sink path is claimed the same way, on the bucket: the claim object is created with
``If-None-Match: *`` and replaced with ``If-Match`` (``job_store``), so the rules hold for object-store sinks too.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planengine.errors import UserError
from planengine.runtime.storage.files import utc_now_iso
from planengine.runtime.storage.job_store import AlreadyExists, Conflict, JobStore, LocalJobStore, Versioned
from planengine.runtime.storage.object_store import is_object_store
from planengine.runtime.storage.s3_job_store import S3JobStore

if TYPE_CHECKING:
    from planengine.runtime.storage.job_root import JobRoot

log = logging.getLogger("planengine.runtime.sink_claims")

CLAIM_FILE = "_planengine_sink.json"


class SinkPathClaimed(UserError):
    """Another job writes this file sink's path; the message names it and says how to free the path."""


@dataclass(frozen=True)
class FileSink:
    """A file sink of a plan: its table and its directory on this machine."""

    identifier: str
    path: Path


def local_file_sinks(plan_data: dict[str, Any]) -> list[FileSink]:
    """The plan's filesystem sinks whose path is local (``/x``, ``file:/x``, ``file:///x``), in node order."""
    return [FileSink(identifier, local) for identifier, path in _file_sink_paths(plan_data)
            if (local := local_path(path)) is not None]


def file_sink_paths(plan_data: dict[str, Any]) -> list[tuple[str, str]]:
    """(table, ``path`` as written) of each filesystem sink of the plan, whatever its scheme."""
    return _file_sink_paths(plan_data)


def _file_sink_paths(plan_data: dict[str, Any]) -> list[tuple[str, str]]:
    """(table, ``path`` as written) of each filesystem sink of the plan, in node order."""
    sinks = []
    for node in plan_data.get("nodes") or []:
        if not str(node.get("type", "")).startswith("stream-exec-sink"):
            continue
        table = node.get("table") or {}
        options = (table.get("resolvedTable") or {}).get("options") or {}
        path = options.get("path")
        if options.get("connector") == "filesystem" and isinstance(path, str):
            sinks.append((str(table.get("identifier", "?")), path))
    return sinks


def local_path(path: str) -> Path | None:
    """``path`` as an absolute, normalized local path (``file:`` URIs included); None for other schemes."""
    if "://" in path and not path.startswith("file://"):
        return None
    local = path.removeprefix("file://") if path.startswith("file://") else path.removeprefix("file:")
    return Path(os.path.normpath(Path(local).absolute()))


def claim_sink_paths(root: JobRoot, plan_data: dict[str, Any], run_id: str, *,
                     forked_from: str | os.PathLike[str] | None = None) -> None:
    """Claim every file-sink path of the plan (local or ``s3a://``) for ``root``, or raise ``SinkPathClaimed``.

    All paths are judged before any claim is written, so a refusal leaves every claim as it was. Each write is
    conditional on what was judged (``JobStore.create`` / ``replace`` on the version read), so of two jobs
    starting on one path at the same moment exactly one gets it, on a volume as on a bucket."""
    mine = root.location if root.on_object_store else _normalized(root.path)
    origin = _snapshot_root(forked_from)
    to_write: list[tuple[JobStore, str | None]] = []
    for identifier, where, store in _claimable_sinks(plan_data):
        current = _read_claim(store)
        holder = _parse_claim(current, store)
        if current is None or holder.get("jobRoot") == str(mine):
            to_write.append((store, current.version if current is not None else None))
            continue
        other = str(holder.get("jobRoot"))
        if origin is not None and other == str(origin) and not (origin / "RUN_LOCK").exists():
            log.warning("sink %s: taking over %s from the job at %s, whose snapshot this run continues",
                        identifier, where, other)
            to_write.append((store, current.version))
            continue
        raise SinkPathClaimed(
            f"sink {identifier} writes to {where}, which the job at {other} writes (claimed by its run "
            f"{holder.get('runId', '?')} at {holder.get('claimedAt', '?')}): two jobs on one file-sink path lose "
            "rows, because Spark's exactly-once log (_spark_metadata) belongs to the path and each job skips the "
            "batch ids the other committed",
            hint=f"give this sink another 'path'; or, if the job at {other} is gone for good, delete "
                 f"{store.location(CLAIM_FILE)} and {where.rstrip('/')}/_spark_metadata (its files stay) and start "
                 "again",
        )
    claim = json.dumps({"jobRoot": str(mine), "runId": run_id, "claimedAt": utc_now_iso()}, indent=1) + "\n"
    for store, expected in to_write:
        try:
            if expected is None:
                store.create(CLAIM_FILE, claim.encode("utf-8"))
            else:
                store.replace(CLAIM_FILE, claim.encode("utf-8"), expected=expected)
        except (AlreadyExists, Conflict):
            now = _parse_claim(_read_claim(store), store).get("jobRoot", "another job")
            raise SinkPathClaimed(
                f"{store.describe()} was claimed by the job at {now} while run {run_id} was claiming it: two jobs "
                "started on one file-sink path at the same moment",
                hint="give one of the two jobs' sinks another 'path'") from None


def _claimable_sinks(plan_data: dict[str, Any]) -> list[tuple[str, str, JobStore]]:
    """(table, path as a user names it, the store of its directory) for each file sink that can be claimed."""
    sinks: list[tuple[str, str, JobStore]] = []
    for identifier, path in _file_sink_paths(plan_data):
        local = local_path(path)
        if local is not None:
            sinks.append((identifier, str(local), LocalJobStore(local)))
        elif is_object_store(path):
            sinks.append((identifier, path, S3JobStore(path, named_by=f"the 'path' of sink {identifier}")))
    return sinks


def _read_claim(store: JobStore) -> Versioned | None:
    """The claim object, None when there is none; a claim that cannot be read (a directory in its place, no
    permission) is a refusal naming it, not a traceback."""
    try:
        return store.read(CLAIM_FILE)
    except OSError as error:
        raise SinkPathClaimed(f"the sink claim {store.location(CLAIM_FILE)} cannot be read ({error})",
                              hint=f"make sure no other job writes {store.describe()}, then delete "
                                   f"{store.location(CLAIM_FILE)}") from None


def _parse_claim(current: Versioned | None, store: JobStore) -> dict[str, Any]:
    if current is None:
        return {}
    try:
        value = json.loads(current.data.decode("utf-8"))
    except ValueError as error:
        raise SinkPathClaimed(f"the sink claim {store.location(CLAIM_FILE)} cannot be read ({error})",
                              hint=f"make sure no other job writes {store.describe()}, then delete "
                                   f"{store.location(CLAIM_FILE)}") from None
    return value if isinstance(value, dict) else {}


def _snapshot_root(snapshot: str | os.PathLike[str] | None) -> Path | None:
    """The job root a snapshot directory belongs to (``<root>/snapshots/<id>``), None when it is not one."""
    if snapshot is None or ("://" in str(snapshot) and not str(snapshot).startswith("file://")):
        return None
    path = _normalized(str(snapshot).removeprefix("file://"))
    return path.parent.parent if path.parent.name == "snapshots" else None


def _normalized(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.normpath(Path(path).absolute()))
