"""The executor: a compiled plan becomes running Spark streaming queries with checkpoints (DESIGN §6).

Pipeline (one screen, like the facade it serves)::

    plan ─► restore (never re-plan) ─► translators in dependency order (cached per node: shared
    sub-plans are one DataFrame) ─► the plan's queries (its recorded shared topology: a fan-out query per
    shared node, or one query per sink; + one per channel cut) ─► start in dependency order ─► run until
    stopped / idle ─► stop at a batch boundary ─► snapshot

Job storage: ``<job root>/plan.json`` is the plan in force; each execution is a run
``<job root>/runs/<run id>/checkpoints/<query uid>/``; ``PLANENGINE_RUN_ID`` names the run (the operator
sets it; an existing run of that name is resumed). Without ``from_snapshot`` a new run continues where the
latest run stopped: from the snapshot that run's stop took, or else from an offline snapshot of the
latest run's committed batches. Sources that are bounded (files read at start, ``number-of-rows``) make
``until_idle`` finish; ``drain`` then advances event time to the end (see ``translators/watermark.py``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planengine.config.values import parse_duration_ms
from planengine.errors import PlanIncompatible, UserError
from planengine.exec import base as B
from planengine.plan import real_time, serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.runtime.connectors import QueryOptions
from planengine.runtime.dataflow.stream import Stream
from planengine.runtime.engine.channels import cut
from planengine.runtime.engine.context import DrainControl, TranslationContext
from planengine.runtime.engine.control_token import control_token
from planengine.runtime.engine.progress_listener import Progress, ProgressListener
from planengine.runtime.engine.python_functions import register_user_functions
from planengine.runtime.engine.real_time_slots import SourceTasks, check_slots
from planengine.runtime.engine.session import get_spark, use_plan_partitions
from planengine.runtime.engine.status_server import CAPABILITIES, StatusServer
from planengine.runtime.engine.topology import translate_plan
from planengine.runtime.engine.translators import get_translator
from planengine.runtime.engine.translators.watermark import write_end_of_input
from planengine.runtime.state.move import move_pending_state
from planengine.runtime.storage import fencing
from planengine.runtime.storage.job_root import JobRoot, Run, refuse_sinks_inside, resolve_job_root
from planengine.runtime.storage.object_store import use_object_store
from planengine.runtime.storage.plan_in_force import install_run_plan, plan_to_run
from planengine.runtime.storage.sink_claims import claim_sink_paths
from planengine.runtime.storage.snapshots import take_snapshot
from planengine.version import ENGINE_VERSION

log = logging.getLogger("planengine.runtime")

SPARK_VERSION = serde.SPARK_VERSION
# Failures of Spark's Python worker plumbing, not of the query: a Python worker that could not start in time
# on an overloaded machine. Restarting the query from its checkpoint is safe (exactly-once resumes).
# Start-up races of Spark's Python workers under load (hard-coded 10 s connect-back; socket not yet open):
# the query restarts from its checkpoint, which replays exactly the planned batch.
TRANSIENT_FAILURES = ("Python worker failed to connect back", "Timed out while waiting for the Python worker",
                      "CANNOT_OPEN_SOCKET")
MAX_TRANSIENT_RESTARTS = 5


# --- plan-level checks -------------------------------------------------------------------------------------
def unsupported_nodes(plan_json: dict[str, Any]) -> list[dict[str, Any]]:
    """Nodes of a plan this runtime has no translator for (``planengine check`` → exit 4)."""
    out = []
    for node in plan_json.get("nodes", []):
        try:
            name, version = B.split_type_name(str(node.get("type")))
        except ValueError:
            out.append({"node": node.get("id"), "type": node.get("type")})
            continue
        if get_translator(name, version) is None:
            out.append({"node": node.get("id"), "type": node.get("type")})
    return out


def check_runtime_support(plan_json: dict[str, Any]) -> None:
    missing = unsupported_nodes(plan_json)
    if missing:
        listing = ", ".join(f"node {m['node']} ({m['type']})" for m in missing)
        raise PlanIncompatible(f"this engine's Spark runtime cannot run {listing}",
                               hint="run the plan on an engine version that supports these nodes")


# --- runs ------------------------------------------------------------------------------------------------------
def open_run(job_root: JobRoot, plan_id: str, from_snapshot: str | None) -> Run:
    """The run to execute: ``PLANENGINE_RUN_ID`` (resumed if it exists) or a new one, forked as documented."""
    run_id = os.environ.get("PLANENGINE_RUN_ID") or None
    if run_id is not None and job_root.is_complete_run(run_id):
        log.info("resuming run %s", run_id)
        return job_root.open_run(run_id)
    if from_snapshot is None:
        from_snapshot = _continuation_snapshot(job_root, plan_id)
    return job_root.open_run(run_id, from_snapshot)


def _continuation_snapshot(job_root: JobRoot, plan_id: str) -> str | None:
    latest = job_root.newest_run()
    if latest is None or not latest.query_uids():
        return None
    snaps = [s for s in job_root.snapshots() if s.run_id == latest.run_id]
    if snaps:
        return snaps[-1].snapshot_id
    # The latest run ended (this start will hold the lock it held), so a store may name its files (live=False).
    info = take_snapshot(job_root, latest, reason="stop", engine_version=ENGINE_VERSION,
                         spark_version=SPARK_VERSION, plan_id=plan_id, last_batch_ids={}, live=False)
    log.info("continuing from run %s through snapshot %s of its committed batches", latest.run_id, info.snapshot_id)
    return info.snapshot_id


# --- the job ---------------------------------------------------------------------------------------------------
@dataclass
class QueryState:
    uid: str
    kind: str
    label: str = ""  # the sink table's name (or "channel <name>"): what progress lines show
    query: Any = None
    query_id: str = ""  # the query's id (its checkpoint's, the same across restarts), read once: events name it
    rows: int = 0
    batches: int = 0
    last_batch_id: int = -1
    last_commit_at: str | None = None
    exceptions: int = 0
    spec: Any = None
    restarts: int = 0


@dataclass(frozen=True)
class JobStart:
    """How a run started, for the people watching it: which run of which plan, in which job root, from what state
    (its own checkpoints, a snapshot it forked, or nothing) and where its status is. ``planengine run`` prints it
    as ``startup_line``; the SQL client as its ``Submitted job`` message (``planengine.api``)."""

    run_id: str
    plan_id: str
    job_root: str  # as the user names it: a directory or an s3a:// URI
    resumed: bool  # the run's own checkpoints (PLANENGINE_RUN_ID named a complete run)
    from_snapshot: str | None  # the snapshot the run forked: a previous run's state in this root, or one named
    status_url: str | None

    @property
    def origin(self) -> str:
        if self.resumed:
            return "resuming its own checkpoints"
        return f"from snapshot {self.from_snapshot}" if self.from_snapshot else "from empty state"

    @property
    def status(self) -> str:
        return f"status {self.status_url.rstrip('/')}/v1/status" if self.status_url else "no status port"


@dataclass
class JobResult:
    run_id: str
    snapshot_id: str | None
    queries: dict[str, int] = field(default_factory=dict)  # uid -> last batch id
    started: JobStart | None = None


class Job:
    """A running plan: its queries, their status, stop and snapshot. Implements ``DriverControl``."""

    def __init__(self, plan: CompiledPlan, job_root: JobRoot, run: Run, spark: Any, *, paced: bool = True,
                 forked_from: str | None = None):
        self.plan = plan
        self.forked_from = forked_from  # the snapshot this run forked (it may hand over a file sink's path)
        # Continuous runs start micro-batches at the plan's trigger interval; an until-idle run processes what
        # is there as fast as it can (pacing would only delay the stop).
        self.trigger = trigger_options(plan.data.get("config") or {}) if paced else {}
        self.job_root = job_root
        self.run = run
        self.spark = spark
        self.queries: list[QueryState] = []
        self._specs: list[Any] = []
        self._lock = threading.RLock()
        self._stopped = threading.Event()
        self.state = "CREATED"
        self.snapshot_id: str | None = None
        self.drain_controls: list[DrainControl] = []
        self.progress = os.environ.get("PLANENGINE_PROGRESS") == "1"
        self._lock_lost = False
        self.started: JobStart | None = None  # how the run started: set by execute_compiled_plan
        self._state_moves: tuple[Any, list[Any]] = (None, [])
        self._real_time_sources: list[Any] = []  # the Kafka sources' partition counters (real_time_slots)
        self.signalled: int | None = None  # the signal that asked this run to stop (stop_on_signal)
        # prometheus_client is in the ``spark`` extra, like everything a running Job needs; ``planengine snapshot``
        # imports this module without running one.
        from planengine.runtime.engine.driver_metrics import DriverMetrics, job_name  # noqa: PLC0415

        self.metrics = DriverMetrics(job_name(job_root.location), self.status)

    # -- translation ------------------------------------------------------------------------------------
    def translate(self) -> None:
        check_runtime_support(self.plan.data)
        # Always from the JSON, even right after compiling: a compiled run and a restored run must build
        # the very same Spark plans (same node ids, same uids).
        sinks = CompiledPlan(self.plan.data, self.plan.session).restore()
        register_user_functions(self.spark, sinks, self.plan.session.catalog)
        ids = serde.node_ids(sinks)
        config = dict(self.plan.data.get("config") or {})
        ctx = TranslationContext(self.spark, config, ids, run_dir=self.run.path,
                                 job_root=Path(self.job_root.local_dir),
                                 checkpoints=str(self.run.checkpoints_dir))
        ctx.cut = lambda stream, name: self._cut(stream, name, ctx)
        # The plan's queries: its recorded shared topology, or one per sink (runtime/engine/topology.py).
        translate_plan(sinks, self.plan.data, ctx, lambda query, stream: self._specs.append(query))
        self.drain_controls = list(ctx.drain_controls)
        self._real_time_sources = list(ctx.real_time_sources)
        self._state_moves = (ctx, list(ctx.state_move_candidates))

    def _cut(self, stream: Stream, name: str, ctx: TranslationContext) -> Stream:
        return cut(stream, name, ctx, self._specs.append)

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> None:
        if "realTime" in self.trigger:  # before the lock: a start that cannot run takes nothing over
            counted = [(table, count()) for table, count in self._real_time_sources]
            check_slots(self.plan.data, [SourceTasks(table, n) for table, n in counted if n is not None],
                        dict(self.spark.sparkContext.getConf().getAll()))
        use_object_store(self.spark, self.job_root.location)  # S3A settings before any query reads its checkpoint
        fencing.acquire_run_lock(self.job_root, self.run.run_id)
        claim_sink_paths(self.job_root, self.plan.data, self.run.run_id, forked_from=self.forked_from)
        install_run_plan(self.job_root, self.plan)  # an upgrade's plan (from a snapshot) is now the one in force
        use_plan_partitions(self.spark, dict(self.plan.data.get("config") or {}))
        # Under the run lock, before any query reads its checkpoint: state moved by a plan migration.
        self._move_pending_state()
        self._listener = ProgressListener(self.spark, self._on_progress)
        for spec in self._specs:  # channel producers were registered before their consumers' sinks
            state = QueryState(spec.uid, spec.kind, _label(spec, self._specs))
            state.spec = spec
            state.query = spec.start(self._query_options(spec))
            state.query_id = str(state.query.id)
            self.queries.append(state)
            self.metrics.add_query(state.uid, state.label or state.uid)
        self.state = "RUNNING"
        log.info("run %s: started %d queries: %s", self.run.run_id, len(self.queries),
                 ", ".join(q.uid for q in self.queries))
        self._prune_old_runs()

    def _move_pending_state(self) -> None:
        """State moved by a plan migration (``runtime/state/move.py``) is converted in the run's checkpoint files on
        the driver's disk; a run on an object store cannot do that yet, so a migration that would need it is
        refused (before any query starts) instead of starting without the moved state."""
        if not self.job_root.on_object_store:
            move_pending_state(self.spark, self.plan.data, self.run.path, *self._state_moves)
            return
        candidates = self._state_moves[1]
        if candidates and self.forked_from is not None and self.run.query_uids():
            snapshot_plan = json.loads(self.job_root.snapshot_plan_text(self.forked_from)).get("planId")
            if snapshot_plan != self.plan.plan_id:
                raise UserError(f"run {self.run.run_id} would move operator state for a plan migration, which a job "
                                f"root on an object store ({self.job_root.location}) does not support yet",
                                hint="run the migration on a job root that is a directory, or start the new plan "
                                     "from its own snapshot")

    def _prune_old_runs(self) -> None:
        """Once this run's queries started (a failed start keeps every older run to recover from), delete the runs
        the job root no longer needs (``JobRoot.prune_runs``). Cleanup never fails a running job."""
        try:
            pruned = self.job_root.prune_runs(self.run.run_id)
        except (OSError, UserError) as error:
            log.warning("run %s: old runs not removed: %s", self.run.run_id, error)
            return
        if pruned:
            log.info("run %s: removed %d old run(s) of the job root: %s", self.run.run_id, len(pruned),
                     ", ".join(pruned))

    def _query_options(self, spec: Any) -> Any:
        return QueryOptions(spec.uid, str(self.run.checkpoint_dir(spec.uid)), trigger=dict(self.trigger),
                            fence=self.fence)

    def _restart_transient_failures(self) -> None:
        """Restart, from its checkpoint, a query that died of a transient infrastructure error.

        A restart resumes at the last committed batch, so no output is lost or duplicated; the number of
        restarts per query is bounded so a persistent failure still surfaces."""
        for q in self.queries:
            query = q.query
            if query is None or query.isActive or query.exception() is None:
                continue
            message = str(query.exception())
            if not any(marker in message for marker in TRANSIENT_FAILURES) or q.restarts >= MAX_TRANSIENT_RESTARTS:
                continue
            q.restarts += 1
            log.warning("query %s failed transiently (%s); restarting from its checkpoint (attempt %d of %d)",
                        q.label or q.uid, message.splitlines()[0][:200], q.restarts, MAX_TRANSIENT_RESTARTS)
            time.sleep(min(30.0, 2.0 * q.restarts))
            q.query = q.spec.start(self._query_options(q.spec))
            q.query_id = str(q.query.id)

    def fence(self, batch_id: int = -1) -> None:
        """Raise before a commit when this run no longer holds the job root (another driver took over)."""
        if not fencing.check_run_lock(self.job_root, self.run.run_id) or not _writer_lock_ok(self.run.run_id):
            self._lock_lost = True
            raise fencing.RunLockLost(f"run {self.run.run_id} lost the job root {self.job_root.location}; "
                                      f"not committing batch {batch_id}")

    def process_available(self) -> None:
        """Process all input available now, producers before consumers (idle = nothing left anywhere)."""
        for _ in range(2):  # a second pass lets no-data batches (watermark advance) settle downstream
            for q in self.queries:
                for _attempt in range(MAX_TRANSIENT_RESTARTS + 1):
                    self._restart_transient_failures()  # any query, not only q, may have died transiently
                    try:
                        q.query.processAllAvailable()
                        break
                    except Exception:  # inspected below: transient failures restart the query
                        self._restart_transient_failures()
                        if q.query.isActive:
                            continue
                        self._raise_if_failed()
                        raise
                self._restart_transient_failures()
                self._raise_if_failed()

    def drain(self) -> None:
        """Advance event time to the end: every watermark assigner gets its end-of-input marker."""

        for control in self.drain_controls:
            write_end_of_input(self.spark, control.directory, control.schema, control.time_column)
        self.process_available()

    def wait(self, poll: float = 0.5) -> None:
        """Block until stopped (signal, ``POST /v1/stop``) or a query fails."""
        while not self._stopped.is_set():
            try:
                self._restart_transient_failures()
                self._raise_if_failed()
            except Exception as error:
                if self.signalled is None or not jvm_gone(error):
                    raise
                self._stopped.wait(poll)  # the signal's stop thread says what happened and sets _stopped
                continue
            if self._lock_lost:
                raise fencing.RunLockLost(f"run {self.run.run_id} lost the job root; stopped")
            self._stopped.wait(poll)

    def stop_on_signal(self, signum: int, drain: bool) -> None:
        """SIGTERM/SIGINT: stop at a batch boundary with a snapshot, as ``POST /v1/stop`` does.

        A signal sent to the whole process group (``timeout``, ``systemctl stop``, ``kill -- -<pgid>``) reaches
        Spark's JVM too, which then shuts down under the stop. Nothing is lost (the checkpoint holds every
        committed batch), so that is said in one line instead of a py4j traceback per call that found the JVM
        gone: the run ends without a snapshot, and the next start resumes from its last committed batch."""
        self.signalled = signum
        try:
            self.stop(snapshot=True, drain=drain, reason="stop")
        except Exception as error:
            if not jvm_gone(error):
                log.exception("stopping on signal %s failed", signum)
            else:
                logging.getLogger("py4j").setLevel(logging.CRITICAL)  # each retry of a dead gateway logs at ERROR
                print(f"[planengine] run {self.run.run_id}: Spark's JVM stopped with the signal (it was sent to the "
                      "whole process group); the run ends without a snapshot and resumes from its last committed "
                      "batch at the next start. To stop with a snapshot, signal the planengine process alone, or "
                      "POST /v1/stop.", file=sys.stderr, flush=True)
            with contextlib.suppress(Exception):
                fencing.release_run_lock(self.job_root, self.run.run_id)
            self.state = "STOPPED"
            self._stopped.set()

    def _raise_if_failed(self) -> None:
        for q in self.queries:
            if q.query is not None and not q.query.isActive and q.query.exception() is not None:
                raise RuntimeError(f"query {q.uid} failed: {q.query.exception()}")

    def stop(self, *, snapshot: bool = True, drain: bool = False, reason: str = "stop") -> str | None:
        """Stop every query at a batch boundary, producers first; snapshot the committed state."""
        with self._lock:
            if self.state == "STOPPED":
                return self.snapshot_id
            if drain:
                self.drain()
            for q in self.queries:
                _stop_at_batch_boundary(q.query, boundary_wait_s(self.trigger))
            self.state = "STOPPED"
            self._remove_listener()
            if snapshot and not self._lock_lost:
                # Every query stopped and the run never writes again (it still holds the lock): a stop snapshot
                # on a store names the run's files instead of copying them (live=False).
                info = take_snapshot(self.job_root, self.run, reason=reason, engine_version=ENGINE_VERSION,
                                     spark_version=SPARK_VERSION, plan_id=self.plan.plan_id, last_batch_ids={},
                                     live=False)
                self.snapshot_id = info.snapshot_id
                log.info("snapshot %s taken (%s)", info.snapshot_id, reason)
            fencing.release_run_lock(self.job_root, self.run.run_id)
            self._stopped.set()
            return self.snapshot_id

    def cancel(self) -> None:
        """Stop every query now, mid-batch if need be, without a snapshot: for throw-away runs (SELECT previews)
        whose output nobody resumes. The run keeps its checkpoints; nothing is committed twice."""
        with self._lock:
            if self.state != "STOPPED":
                _abort(self)
                self.state = "STOPPED"
                self._stopped.set()

    def _remove_listener(self) -> None:
        if getattr(self, "_listener", None) is not None:
            with contextlib.suppress(Exception):
                self._listener.remove()
            self._listener = None

    def _on_progress(self, p: Progress) -> None:
        """A batch committed (any query of the session: only this job's count): counts for the status API, the
        metrics and the progress display, and the run lock's fence."""
        mine = [q for q in self.queries if q.query_id == p.query_id]
        for q in mine:
            q.last_batch_id = p.batch_id
            q.last_commit_at = p.timestamp
            q.rows += p.input_rows
            q.batches += 1
            self.metrics.observe(q.uid, q.label or q.uid, p)
            if self.progress and p.input_rows:
                print(f"[planengine] {q.label or q.uid}: batch {p.batch_id} committed, {p.input_rows} rows",
                      file=sys.stderr, flush=True)
        if mine and self.state == "RUNNING":
            try:
                self.fence(p.batch_id)
            except fencing.RunLockLost:
                log.error("run %s lost the job root; stopping", self.run.run_id)

    def result(self) -> JobResult:
        return JobResult(self.run.run_id, self.snapshot_id,
                         {q.uid: self.run.last_committed_batch_id(q.uid) for q in self.queries},
                         self.started)

    # -- DriverControl ----------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        with self._lock:
            queries = []
            for q in self.queries:
                progress = q.query.lastProgress if q.query is not None else None
                exception = q.query.exception() if q.query is not None and not q.query.isActive else None
                queries.append({
                    "uid": q.uid, "kind": q.kind, "name": q.label or q.uid,
                    "state": "FAILED" if exception else ("ACTIVE" if q.query is not None and q.query.isActive
                                                         else self.state),
                    "lastBatchId": q.last_batch_id, "lastCommitAt": q.last_commit_at,
                    "inputRowsPerSecond": (progress or {}).get("inputRowsPerSecond"),
                    "processedRowsPerSecond": (progress or {}).get("processedRowsPerSecond"),
                    "watermark": ((progress or {}).get("eventTime") or {}).get("watermark"),
                    "exception": str(exception) if exception else None,
                    "exceptionsTotal": 1 if exception else 0,
                    "rowsTotal": q.rows, "batchesTotal": q.batches,
                    **_idleness(q.query, progress, exception),
                })
            return {"engineVersion": ENGINE_VERSION, "sparkVersion": SPARK_VERSION, "planId": self.plan.plan_id,
                    "job": self.metrics.job, "runId": self.run.run_id, "state": self.state, "queries": queries,
                    "executors": spark_executors(self.spark), "capabilities": list(CAPABILITIES)}

    def request_stop(self, snapshot: bool, drain: bool) -> str | None:
        return self.stop(snapshot=snapshot, drain=drain, reason="manual" if snapshot else "stop")

    def snapshot_manifest(self, snapshot_id: str) -> dict[str, Any] | None:
        """The manifest of a snapshot of this job root (the stop answer carries it), None if unreadable."""
        try:
            return self.job_root.snapshot(snapshot_id).manifest
        except (OSError, ValueError, UserError):
            return None


def _idleness(query: Any, progress: dict[str, Any] | None, exception: Any) -> dict[str, Any]:
    """What the operator's stability gate needs to tell a quiet source from a stuck query (docs/operator.md,
    "Driver API"): Spark's ``query.status`` flags, the rows the last progress read, and ``caughtUp``: the query is
    active, failed with nothing, sees no available data, has reported progress, and each of its
    sources read up to the newest offset it knows (``endOffset == latestOffset`` where the source reports one)."""
    status: dict[str, Any] = {}
    if query is not None and exception is None:
        with contextlib.suppress(Exception):  # a query stopping right now has no status to give
            status = dict(query.status or {})
    data_available = status.get("isDataAvailable")
    trigger_active = status.get("isTriggerActive")
    sources = (progress or {}).get("sources") or []
    read_to_end = all(_offset(s.get("latestOffset")) is None
                      or _offset(s.get("latestOffset")) == _offset(s.get("endOffset")) for s in sources)
    # Not ``trigger_active``: an idle query with the default trigger checks its sources every few milliseconds,
    # so a status read may land on such a check.
    caught_up = bool(status) and progress is not None and data_available is False and read_to_end
    return {"dataAvailable": data_available, "triggerActive": trigger_active,
            "lastInputRows": (progress or {}).get("numInputRows"), "caughtUp": caught_up}


def _offset(value: Any) -> Any:
    """A source offset of a progress report as data: PySpark hands them over as JSON text, and a source that
    does not know its latest offset (Spark's file source) reports the text ``"null"``.

    >>> _offset('{"logOffset": 0}') == _offset('{"logOffset":0}'), _offset("null"), _offset(None)
    (True, None, None)
    """
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _label(spec: Any, specs: list[Any]) -> str:
    """A query's name for people: its sink table, with the uid's node id when two sinks write one table."""
    label = getattr(spec, "label", "") or spec.uid
    if sum(1 for s in specs if (getattr(s, "label", "") or s.uid) == label) > 1:
        return f"{label} (node {spec.uid.split('_')[0]})"
    return label


def boundary_wait_s(trigger: dict[str, Any]) -> float:
    """How long a stop waits for the running batch to end. A micro-batch is short: 30 s bounds it generously. A
    real-time batch runs for its whole checkpoint interval, so the wait is that interval plus the same margin: a
    stop (and an upgrade's handover) then lands on a batch boundary, at the cost of up to one interval of waiting,
    instead of interrupting the batch and writing its updates twice on replay.

    >>> boundary_wait_s({}), boundary_wait_s({"realTime": "45000 milliseconds"})
    (30.0, 75.0)
    """
    every = trigger.get("realTime")
    return 30.0 if every is None else parse_duration_ms(str(every)) / 1000 + 30.0


def _stop_at_batch_boundary(query: Any, timeout: float = 30.0) -> None:
    """Let the micro-batch running now finish, then stop (an interrupted batch would only be re-run, but a
    finished one keeps the snapshot as recent as possible).

    "Finished" is the query's progress moving past the batch it reported last, not a moment without an
    active trigger: a query fed continuously (or advancing its watermark with no-data batches) starts the
    next trigger at once, so that moment rarely comes and the wait used to run into the timeout (30 s
    of downtime in an upgrade). A batch that starts between its predecessor's end and ``stop()`` is
    interrupted; the snapshot keeps its planned offsets, so the next run replays exactly that batch."""
    if query is None or not query.isActive:
        return
    running = _last_batch_id(query)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _trigger_active(query) and _last_batch_id(query) == running:
        time.sleep(0.05)
    query.stop()


def _trigger_active(query: Any) -> bool:
    try:
        return bool(query.status.get("isTriggerActive"))
    except Exception:
        return False


def _last_batch_id(query: Any) -> int:
    try:
        return int((query.lastProgress or {}).get("batchId", -1))
    except Exception:
        return -1


def _writer_lock_ok(run_id: str) -> bool:
    """The operator's writer lock (``PLANENGINE_WRITER_LOCK``) must name this run, when it is set."""
    path = os.environ.get("PLANENGINE_WRITER_LOCK")
    if not path:
        return True
    try:
        return json.loads(Path(path).read_text(encoding="utf-8")).get("runId") == run_id
    except (OSError, ValueError):
        return True


# --- entry points ----------------------------------------------------------------------------------------------
def execute_compiled_plan(plan: CompiledPlan, *, job_root: str | os.PathLike[str] | None = None,
                          from_snapshot: str | None = None, until_idle: bool = False, drain: bool = False,
                          status_port: int | None = None, block: bool | None = None, paced: bool | None = None,
                          session_jobs_dir: str | os.PathLike[str] | None = None) -> Any:
    """Run a plan. With ``until_idle`` (or ``block``) it returns a ``JobResult`` after stopping; else the
    running ``Job`` (stop it with ``job.stop()``). ``paced`` (default: unless ``until_idle``) starts micro-batches
    at the plan's ``pipeline.trigger-interval``. ``session_jobs_dir``: where the caller's session keeps its jobs
    when nothing names a job root (``resolve_job_root``). Either way ``.started`` says how the run started."""

    root = resolve_job_root(plan.plan_id, job_root, jobs_dir=plan.session.config.get("planengine.job-root"),
                            session_dir=session_jobs_dir)
    refuse_sinks_inside(root, plan.data)
    plan = _install_plan(root, plan, from_snapshot)
    spark = get_spark()
    resumed = _resumed_run(root)
    job = start_job(plan, root, spark, from_snapshot, paced=not until_idle if paced is None else paced)
    run = job.run
    server = None
    try:
        if status_port is not None:
            server = StatusServer(job, host=status_host(), port=status_port, token=control_token()).start()
            write_driver_file(root, run.run_id, server.port, server.url)
        job.started = job_start(root, run, plan, None if server is None else server.url, resumed=resumed)
        if job.progress:
            print(startup_line(job.started), file=sys.stderr, flush=True)
        if until_idle:
            job.process_available()
            job.stop(snapshot=True, drain=drain, reason="stop")
            return job.result()
        if block:
            _install_signal_handlers(job, drain)
            job.wait()
            if server is not None:
                server.wait_stop_answered(timeout=10)
            return job.result()
        if server is not None:
            _close_when_stopped(job, server, root)
        return job
    except BaseException:
        _abort(job)
        raise
    finally:
        if server is not None and (until_idle or block or job.state == "STOPPED"):
            server.close()
            remove_driver_file(root, run.run_id)


def _resumed_run(root: JobRoot) -> bool:
    """Whether ``open_run`` will resume the complete run ``PLANENGINE_RUN_ID`` names (its own checkpoints)."""
    run_id = os.environ.get("PLANENGINE_RUN_ID") or None
    return run_id is not None and root.is_complete_run(run_id)


def job_start(root: JobRoot, run: Run, plan: CompiledPlan, status_url: str | None, *, resumed: bool) -> JobStart:
    try:
        forked = run.info().get("fromSnapshot")
    except (OSError, ValueError):
        forked = None
    return JobStart(run.run_id, plan.plan_id, root.location, resumed, forked, status_url)


def startup_line(start: JobStart) -> str:
    """What a user of ``planengine run`` needs first: which run of which plan started where, from what state
    (its own checkpoints resumed, the snapshot it forked, or nothing), and where to ask how it goes."""
    status = start.status if start.status_url else "no status port (--status-port N)"
    return (f"[planengine] run {start.run_id} started: plan {start.plan_id[:12]}, job root {start.job_root}, "
            f"{start.origin}; {status}")


def trigger_options(plan_config: dict[str, Any]) -> dict[str, Any]:
    """``DataStreamWriter.trigger`` arguments for the plan's recorded decision: Real-time Mode with its checkpoint
    interval (``plan/real_time.py``), else the ``pipeline.trigger-interval`` ({} = start the next micro-batch as
    soon as the last one committed).

    >>> trigger_options({"pipeline.trigger-interval": "10 s"}), trigger_options({"pipeline.trigger-interval": "0 ms"})
    ({'processingTime': '10000 milliseconds'}, {})
    >>> trigger_options({"realTimeEnabled": "true", "pipeline.real-time.checkpoint-interval": "5 s"})
    {'realTime': '5000 milliseconds'}
    """
    if real_time.enabled(plan_config):
        every = parse_duration_ms(str(plan_config.get(real_time.INTERVAL_KEY)
                                      or real_time.REAL_TIME_CHECKPOINT_INTERVAL.default))
        return {"realTime": f"{every} milliseconds"}
    interval = parse_duration_ms(str(plan_config.get("pipeline.trigger-interval") or "0 ms"))
    return {"processingTime": f"{interval} milliseconds"} if interval > 0 else {}


def start_job(plan: CompiledPlan, root: JobRoot, spark: Any, from_snapshot: str | None, *,
              paced: bool = True) -> Job:
    """Open (fork) the run, translate the plan into it and start its queries under the run lock.

    Shared by a cold start and a standby's ``POST /v1/start`` (``planengine.runtime.engine.standby``): the run
    directory, the translation (control directories, channels live in the run) and the lock all belong
    to the run, so none of it can happen before the snapshot to start from is known."""
    root.check_writable()  # a store that cannot hold a run refuses here, before anything of the run is written
    run = open_run(root, plan.plan_id, from_snapshot)
    job = Job(plan, root, run, spark, paced=paced, forked_from=from_snapshot)
    job.translate()
    try:
        job.start()
    except BaseException:
        _abort(job)
        raise
    return job


def _close_when_stopped(job: Job, server: StatusServer, root: JobRoot) -> None:
    """A job handed back running (the SQL shell's) serves its status until it stops, however it is stopped (QUIT,
    a signal, ``job.stop()``): then its port is freed and ``driver.json`` no longer names a driver that is gone."""

    def close() -> None:
        job._stopped.wait()
        server.close()
        remove_driver_file(root, job.run.run_id)

    threading.Thread(target=close, name="planengine-status-close", daemon=True).start()


def status_host() -> str:
    return os.environ.get("PLANENGINE_STATUS_HOST", "127.0.0.1")


def write_driver_file(root: JobRoot, run_id: str, port: int, url: str) -> None:
    """``<root>/driver.json``: the live driver's status port (written once the run holds the root)."""
    root.write_driver_info({"pid": os.getpid(), "runId": run_id, "statusPort": port, "url": url})


def _abort(job: Job) -> None:
    for q in job.queries:
        try:
            if q.query is not None and q.query.isActive:
                q.query.stop()
        except Exception:
            pass
    job._remove_listener()
    fencing.release_run_lock(job.job_root, job.run.run_id)


def remove_driver_file(root: JobRoot, run_id: str) -> None:
    with contextlib.suppress(OSError, UserError):  # a store that went away must not fail the stop
        root.remove_driver_info(run_id)


def jvm_gone(error: BaseException) -> bool:
    """Whether ``error`` says Spark's JVM is unreachable: py4j's network errors, or a refused or reset socket.

    >>> jvm_gone(ConnectionRefusedError(111, "Connection refused")), jvm_gone(ValueError("bad plan"))
    (True, False)
    """
    name = type(error).__name__
    if isinstance(error, ConnectionError) or name == "Py4JNetworkError":
        return True
    if not name.startswith("Py4J"):
        return False
    try:
        text = str(error)
    except Exception:  # a Py4JJavaError asks the JVM for its message: no JVM, no message
        return True
    return any(marker in text for marker in _JVM_GONE)


_JVM_GONE = ("stopped SparkContext", "Answer from Java side is empty", "Error while sending or receiving")


def _install_signal_handlers(job: Job, drain: bool) -> None:
    if threading.current_thread() is not threading.main_thread():
        return

    def on_signal(signum: int, frame: Any) -> None:
        log.info("signal %s: stopping at a batch boundary with a snapshot", signum)
        threading.Thread(target=job.stop_on_signal, args=(signum, drain), daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def _install_plan(root: JobRoot, plan: CompiledPlan, from_snapshot: str | None) -> CompiledPlan:
    """The plan to run (``plan_in_force.plan_to_run``), installed into a job root that has none; a run from a
    snapshot with another plan replaces the plan in force later, under the run lock (``Job.start``)."""
    plan = plan_to_run(root, plan, from_snapshot)
    if not root.has_plan():
        root.write_plan_text(plan.as_json())
    return plan


def spark_executors(spark: Any) -> list[dict[str, Any]]:
    """Spark's own executor list (its status store, kept with the UI off): where the tasks ran. With executor
    pods this is what shows that the pods joined and took tasks, and that a lost one was replaced; ``local[N]``
    lists the driver alone. Empty when Spark cannot say (a status read must never fail a driver)."""
    try:
        summaries = spark.sparkContext._jsc.sc().statusStore().executorList(False)
        return [{"id": e.id(), "hostPort": e.hostPort(), "active": bool(e.isActive()),
                 "activeTasks": int(e.activeTasks()), "completedTasks": int(e.completedTasks()),
                 "failedTasks": int(e.failedTasks())}
                for e in (summaries.apply(i) for i in range(summaries.size()))]
    except Exception:  # py4j errors of a stopping context, an older Spark's API
        return []
