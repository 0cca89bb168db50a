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

Object-store paths are not claimed yet (no atomic create-if-absent through this module): they are left alone.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planengine.errors import UserError
from planengine.runtime.storage.files import atomic_write_text, utc_now_iso

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
    sinks = []
    for node in plan_data.get("nodes") or []:
        if not str(node.get("type", "")).startswith("stream-exec-sink"):
            continue
        table = node.get("table") or {}
        options = (table.get("resolvedTable") or {}).get("options") or {}
        path = options.get("path")
        if options.get("connector") == "filesystem" and isinstance(path, str):
            local = local_path(path)
            if local is not None:
                sinks.append(FileSink(str(table.get("identifier", "?")), local))
    return sinks


def local_path(path: str) -> Path | None:
    """``path`` as an absolute, normalized local path (``file:`` URIs included); None for other schemes."""
    if "://" in path and not path.startswith("file://"):
        return None
    local = path.removeprefix("file://") if path.startswith("file://") else path.removeprefix("file:")
    return Path(os.path.normpath(Path(local).absolute()))


def claim_sink_paths(root: JobRoot, plan_data: dict[str, Any], run_id: str, *,
                     forked_from: str | os.PathLike[str] | None = None) -> None:
    """Claim every local file-sink path of the plan for ``root``, or raise ``SinkPathClaimed`` before any claim
    changes (all paths are judged first, so a refusal leaves every claim as it was)."""
    mine = _normalized(root.path)
    origin = _snapshot_root(forked_from)
    to_write: list[Path] = []
    for sink in local_file_sinks(plan_data):
        claim_path = sink.path / CLAIM_FILE
        holder = _read_claim(claim_path)
        if holder is None or holder.get("jobRoot") == str(mine):
            to_write.append(claim_path)
            continue
        other = str(holder.get("jobRoot"))
        if origin is not None and other == str(origin) and not (origin / "RUN_LOCK").exists():
            log.warning("sink %s: taking over %s from the job at %s, whose snapshot this run continues",
                        sink.identifier, sink.path, other)
            to_write.append(claim_path)
            continue
        raise SinkPathClaimed(
            f"sink {sink.identifier} writes to {sink.path}, which the job at {other} writes (claimed by its run "
            f"{holder.get('runId', '?')} at {holder.get('claimedAt', '?')}): two jobs on one file-sink path lose "
            "rows, because Spark's exactly-once log (_spark_metadata) belongs to the path and each job skips the "
            "batch ids the other committed",
            hint=f"give this sink another 'path'; or, if the job at {other} is gone for good, delete "
                 f"{claim_path} and {sink.path / '_spark_metadata'} (its files stay) and start again",
        )
    for claim_path in to_write:
        atomic_write_text(claim_path, json.dumps({"jobRoot": str(mine), "runId": run_id,
                                                  "claimedAt": utc_now_iso()}, indent=1) + "\n")


def _read_claim(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise SinkPathClaimed(f"the sink claim {path} cannot be read ({error})",
                              hint=f"make sure no other job writes {path.parent}, then delete {path}") from None
    return value if isinstance(value, dict) else {}


def _snapshot_root(snapshot: str | os.PathLike[str] | None) -> Path | None:
    """The job root a snapshot directory belongs to (``<root>/snapshots/<id>``), None when it is not one."""
    if snapshot is None or ("://" in str(snapshot) and not str(snapshot).startswith("file://")):
        return None
    path = _normalized(str(snapshot).removeprefix("file://"))
    return path.parent.parent if path.parent.name == "snapshots" else None


def _normalized(path: str | os.PathLike[str]) -> Path:
    return Path(os.path.normpath(Path(path).absolute()))
