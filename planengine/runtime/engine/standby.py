"""A warm standby driver: everything that does not depend on the snapshot, done before the handover.

An engine upgrade stops the old driver and starts the new one from the snapshot the stop wrote; what the
job cannot commit meanwhile is the downtime. Most of a cold start does not depend on that snapshot: the
JVM and SparkSession (5-20 s on a loaded machine), loading and checking the plan, Spark's analysis of the
plan's DataFrames and the first code generation / RocksDB load of a streaming query. A standby
(``planengine run --plan P --job-root D --standby --status-port N``) does all of that first, reports
``phase: Standby`` on ``/v1/status`` and waits; ``POST /v1/start {"fromSnapshot": dir}`` then only forks
the snapshot into a new run, translates into it and starts the queries (``executor.start_job``).

Fencing: until it is started a standby holds no lock and writes nothing in the job root (no ``plan.json``,
no run directory, no ``driver.json``); its warm-up works in a temporary directory. SIGTERM or
``POST /v1/stop`` before the start end the process without writing anything; after the start the driver
is an ordinary one (stop at a batch boundary with a snapshot).
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from planengine.errors import UserError
from planengine.runtime.engine import executor
from planengine.runtime.engine.control_token import control_token
from planengine.runtime.engine.session import get_spark
from planengine.runtime.engine.status_server import CAPABILITIES, StatusServer
from planengine.runtime.storage.job_root import JobRoot, Run
from planengine.runtime.storage.plan_in_force import plan_to_run

log = logging.getLogger("planengine.runtime")

STARTING, STANDBY, RUNNING, CANCELLED = "Starting", "Standby", "Running", "Cancelled"
WARM_UP_ROWS = 4


class StandbyNotReady(UserError):
    """``POST /v1/start`` came before the standby finished warming up (answered 409)."""


class StartConflict(UserError):
    """A second ``POST /v1/start`` that asks for another snapshot than the one the driver started from."""


class StandbyDriver:
    """The ``DriverControl`` of a standby; after ``request_start`` it delegates to the started ``Job``."""

    def __init__(self, plan: Any, root: JobRoot):
        self.plan = plan
        self.root = root
        self.spark: Any = None
        self.job: executor.Job | None = None
        self.server: StatusServer | None = None  # set once serving; the start writes driver.json with its port
        self.phase = STARTING
        self.started_from: str | None = None
        self.warm_up_seconds: float | None = None
        self.stop_after_start = False
        self._lock = threading.Lock()
        self.changed = threading.Event()  # set on start and on cancel: the main thread wakes up

    # -- DriverControl ------------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        job = self.job
        if job is not None:
            return {**job.status(), "phase": RUNNING}
        return {"engineVersion": executor.ENGINE_VERSION, "sparkVersion": executor.SPARK_VERSION,
                "planId": self.plan.plan_id, "runId": None, "state": self.phase.upper(), "phase": self.phase,
                "warmUpSeconds": self.warm_up_seconds, "queries": [], "capabilities": list(CAPABILITIES)}

    @property
    def metrics(self) -> Any:
        """The started job's metrics (before the start the status server reads the status document alone)."""
        job = self.job
        return job.metrics if job is not None else None

    def request_stop(self, snapshot: bool, drain: bool) -> str | None:
        with self._lock:
            job = self.job
            if job is None:  # nothing started, nothing to snapshot: leave without writing
                self.phase = CANCELLED
                self.changed.set()
                return None
        return job.stop(snapshot=snapshot, drain=drain, reason="manual" if snapshot else "stop")

    def snapshot_manifest(self, snapshot_id: str) -> dict[str, Any] | None:
        with self._lock:
            job = self.job
        return job.snapshot_manifest(snapshot_id) if job is not None else None

    def request_start(self, from_snapshot: str | None) -> dict[str, Any]:
        """Fork ``from_snapshot`` (None: continue like a cold start) into a new run and start the queries.

        Repeating the same request answers the same run (an operator that restarted asks again)."""
        with self._lock:
            if self.job is not None:
                if from_snapshot != self.started_from:
                    raise StartConflict(f"already started run {self.job.run.run_id} from {self.started_from}; "
                                        f"cannot start again from {from_snapshot}")
                return self._answer()
            if self.phase != STANDBY:
                raise StandbyNotReady(f"the driver is {self.phase}, not Standby; ask again when /v1/status "
                                      "reports phase Standby")
            began = time.monotonic()
            self.plan = executor._install_plan(self.root, self.plan, from_snapshot)
            self.job = executor.start_job(self.plan, self.root, self.spark, from_snapshot)
            if self.server is not None:  # before the answer: whoever got it finds the live driver's port
                executor.write_driver_file(self.root, self.job.run.run_id, self.server.port, self.server.url)
            self.started_from = from_snapshot
            self.phase = RUNNING
            print(f"[planengine] standby started run {self.job.run.run_id} from {from_snapshot} in "
                  f"{time.monotonic() - began:.1f}s", file=sys.stderr, flush=True)
            self.changed.set()
            return self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self.job is not None
        return {"started": True, "runId": self.job.run.run_id, "fromSnapshot": self.started_from}

    def cancel(self) -> None:
        with self._lock:
            if self.job is None:
                self.phase = CANCELLED
                self.changed.set()


def run_standby(plan: Any, *, job_root: str, status_port: int, drain: bool = False,
                warm_up: bool = True) -> executor.JobResult | None:
    """Serve the status API, warm up, wait for ``POST /v1/start``, then run like a cold-started driver.

    Returns the run's result after it stopped, or None when the standby was cancelled before its start."""

    root = JobRoot(job_root)
    # Read only: a wrong plan fails now, before any handover (checked again with the snapshot at the start).
    plan = plan_to_run(root, plan, None, snapshot_pending=True)
    executor.check_runtime_support(plan.data)
    standby = StandbyDriver(plan, root)
    server = StatusServer(standby, host=executor.status_host(), port=status_port, token=control_token()).start()
    standby.server = server
    _install_signal_handlers(standby, drain)
    try:
        standby.spark = get_spark()
        if warm_up and standby.phase == STARTING:
            began = time.monotonic()
            warm_up_engine(standby.spark, plan)
            standby.warm_up_seconds = round(time.monotonic() - began, 3)
        with standby._lock:
            if standby.phase == STARTING:
                standby.phase = STANDBY
        print(f"[planengine] standby ready on {server.url} (plan {plan.plan_id[:12]}, warm-up "
              f"{standby.warm_up_seconds}s); waiting for POST /v1/start", file=sys.stderr, flush=True)
        while not standby.changed.wait(0.5):
            pass
        job = standby.job
        if job is None:
            server.wait_stop_answered(timeout=10)
            print("[planengine] standby cancelled before its start; nothing written", file=sys.stderr)
            return None
        try:
            if standby.stop_after_start:
                job.stop(snapshot=True, drain=drain, reason="stop")
            job.wait()
            server.wait_stop_answered(timeout=10)
            return job.result()
        except BaseException:
            executor._abort(job)
            raise
        finally:
            executor.remove_driver_file(root, job.run.run_id)
    finally:
        server.close()


def _install_signal_handlers(standby: StandbyDriver, drain: bool) -> None:
    """Before the start: leave at once, writing nothing. After: stop at a batch boundary with a snapshot.
    A signal while ``POST /v1/start`` is starting the queries stops the run right after its start."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_signal(signum: int, frame: Any) -> None:
        job = standby.job
        if job is None and standby._lock.locked():
            standby.stop_after_start = True
            return
        if job is None:
            log.info("signal %s in standby: exiting without writing", signum)
            standby.cancel()
            raise SystemExit(0)  # interrupts the JVM start, the warm-up or the wait; nothing was written
        threading.Thread(target=lambda: job.stop(snapshot=True, drain=drain, reason="stop"), daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


# --- warm-up --------------------------------------------------------------------------------------------------
def warm_up_engine(spark: Any, plan: Any) -> None:
    """Load the classes and generate the code a first batch needs, in a throw-away directory.

    Two parts, each best effort (a failure is logged; the real start would report a real problem):
    the plan itself is translated into a temporary run (Python translation, UDF registration and
    Spark's analysis of the very DataFrames the start builds again), and one small stateful streaming
    query (json files -> watermark -> window count in RocksDB -> json file sink, plus a filter/projection
    query) runs two batches, so the streaming engine, the file source and sink, the state store and
    whole-stage code generation are loaded before the first real batch."""
    tmp = Path(tempfile.mkdtemp(prefix="planengine-warmup-"))
    try:
        try:
            throwaway = Run("warm-up", tmp / "run")
            (throwaway.path / "checkpoints").mkdir(parents=True)
            executor.Job(plan, JobRoot(tmp / "root"), throwaway, spark).translate()
        except Exception:
            log.warning("warm-up: translating the plan into a temporary run failed", exc_info=True)
        try:
            _warm_up_streaming(spark, tmp)
        except Exception:
            log.warning("warm-up: the sample streaming query failed", exc_info=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _warm_up_streaming(spark: Any, tmp: Path) -> None:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    source = tmp / "in"
    source.mkdir()
    reader = spark.readStream.schema("id BIGINT, name STRING, ts TIMESTAMP").json(str(source))
    frame = reader.withWatermark("ts", "1 second")
    windows = frame.groupBy(F.window("ts", "10 seconds")).agg(F.count(F.lit(1)).alias("cnt"))
    queries = [
        windows.select("window.start", "window.end", "cnt").writeStream.format("json").outputMode("append")
        .option("checkpointLocation", str(tmp / "cp-window")).start(str(tmp / "out-window")),
        frame.where(F.col("id") >= 0).select("id", "name", (F.col("id") * 2).alias("twice")).writeStream
        .format("json").option("checkpointLocation", str(tmp / "cp-calc")).start(str(tmp / "out-calc")),
    ]
    try:
        for batch in range(2):
            rows = [{"id": batch * WARM_UP_ROWS + i, "name": "warm-up", "ts": f"2026-01-01T00:00:{batch * 20 + i:02d}"}
                    for i in range(WARM_UP_ROWS)]
            (source / f"{batch}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
            for query in queries:
                query.processAllAvailable()
    finally:
        for query in queries:
            with contextlib.suppress(Exception):
                query.stop()

