"""``planengine run`` / ``snapshot`` / ``snapshots`` as subprocesses (the operator's only interface)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("engine_process")

SCRIPT = """
CREATE TABLE src (a INT, b STRING) WITH ('connector' = 'filesystem', 'path' = '{dir}/src', 'format' = 'json',
  'source.monitor-interval' = '1 s');
CREATE TABLE snk (a INT, b STRING) WITH ('connector' = 'filesystem', 'path' = '{dir}/snk', 'format' = 'json');
INSERT INTO snk SELECT a, b FROM src WHERE a > 1;
"""


def cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "planengine.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})})


def add_rows(tmp: Path, name: str, rows: list[dict]) -> None:
    (tmp / "src").mkdir(parents=True, exist_ok=True)
    (tmp / "src" / f"{name}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))


def sink_rows(tmp: Path) -> list[int]:
    from planengine.runtime.engine.session import get_spark

    if not (tmp / "snk" / "_spark_metadata").is_dir():
        return []
    return sorted(r["a"] for r in get_spark().read.schema("a INT, b STRING").json(str(tmp / "snk")).collect())


def test_run_until_idle_then_restore_plan(tmp_path: Path, spark) -> None:
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT.replace("{dir}", str(tmp_path)))
    add_rows(tmp_path, "one", [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}])
    root = tmp_path / "root"
    spark_log = tmp_path / "logs" / "spark.log"
    spark_log.parent.mkdir()
    first = cli("run", "--script", str(script), "--job-root", str(root), "--until-idle",
                "--conf", "spark.sql.shuffle.partitions=3", "--conf", "spark.master=local[1]",
                "--spark-log", str(spark_log))
    assert first.returncode == 0, first.stderr[-3000:]
    # --spark-log: Spark's own lines go to the file, planengine's progress stays on stderr
    assert "log4j" in spark_log.read_text() and "log4j" not in first.stderr
    assert "batch 0 committed" in first.stderr
    summary = json.loads(first.stdout.strip().splitlines()[-1])
    assert summary["snapshot"].startswith("s-")
    # The start-up line: the run, the plan, the root and the state it starts from (nothing, the first time).
    assert f"run {summary['runId']} started: plan " in first.stderr
    assert f"job root {root}, from empty state; no status port" in first.stderr
    assert (root / "plan.json").is_file()
    assert sink_rows(tmp_path) == [2]
    # --conf reached Spark and, compiling here, became the plan's max parallelism
    assert json.loads((root / "plan.json").read_text())["config"]["pipeline.max-parallelism"] == "3"
    assert offsets_conf(root)["spark.sql.shuffle.partitions"] == "3"

    add_rows(tmp_path, "two", [{"a": 3, "b": "z"}])
    second = cli("run", "--plan", str(root / "plan.json"), "--job-root", str(root), "--until-idle",
                 "--conf", "spark.sql.shuffle.partitions=5")
    assert second.returncode == 0, second.stderr[-3000:]
    assert sink_rows(tmp_path) == [2, 3]  # continued: nothing lost, nothing twice
    assert f"from snapshot {summary['snapshot']}" in second.stderr  # which snapshot the restore resumed from
    assert "spark.sql.shuffle.partitions=5 ignored: the plan runs with 3" in second.stderr
    assert offsets_conf(root)["spark.sql.shuffle.partitions"] == "3"

    listing = cli("snapshots", "list", "--job-root", str(root))
    assert listing.returncode == 0
    assert len(listing.stdout.strip().splitlines()) == 2
    oldest = json.loads(listing.stdout.splitlines()[0])["snapshot"]
    deleted = cli("snapshots", "delete", oldest, "--job-root", str(root))
    assert deleted.returncode == 0 and json.loads(deleted.stdout) == {"deleted": oldest}, deleted.stderr
    assert not (root / "snapshots" / oldest).exists() and len(list((root / "snapshots").iterdir())) == 1
    unknown = cli("snapshots", "delete", oldest, "--job-root", str(root))
    assert unknown.returncode == 2 and "has no snapshot" in unknown.stderr

    other = tmp_path / "other.json"
    plan = json.loads((root / "plan.json").read_text())
    plan["planId"] = "0" * 64
    other.write_text(json.dumps(plan))
    refused = cli("run", "--plan", str(other), "--job-root", str(root), "--until-idle")
    assert refused.returncode == 2
    assert "already runs plan" in refused.stderr


def offsets_conf(root: Path) -> dict:
    """The SQL settings Spark recorded in the newest offset log entry of the newest run."""
    newest = max((root / "runs").glob("*/checkpoints/*/offsets/[0-9]*"), key=lambda p: p.stat().st_mtime)
    return json.loads(newest.read_text().splitlines()[1])["conf"]


def test_spark_conf_on_the_command_line_reaches_spark(tmp_path: Path) -> None:
    """``--conf spark.master=...`` is Spark's master (Spark itself rejects this one); bad --conf is exit 2."""
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT.replace("{dir}", str(tmp_path)))
    bad_master = cli("run", "--script", str(script), "--job-root", str(tmp_path / "root"), "--until-idle",
                     "--conf", "spark.master=nowhere://cluster")
    assert bad_master.returncode != 0, bad_master.stderr[-2000:]
    assert "Master must either be yarn or start with spark, k8s, or local" in bad_master.stderr  # Spark's words
    not_spark = cli("check", "--plan", str(script), "--conf", "executor.instances=2")
    assert not_spark.returncode == 2 and "spark.* key" in not_spark.stderr, not_spark.stderr
    fixed = cli("check", "--plan", str(script), "--conf", "spark.sql.session.timeZone=CET")
    assert fixed.returncode == 2 and "checkpoints depend on it" in fixed.stderr, fixed.stderr


def test_sigterm_stops_with_snapshot_and_status_api(tmp_path: Path, spark) -> None:
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT.replace("{dir}", str(tmp_path)))
    add_rows(tmp_path, "one", [{"a": 5, "b": "x"}])
    root = tmp_path / "root"
    proc = subprocess.Popen([sys.executable, "-m", "planengine.cli", "run", "--script", str(script), "--job-root",
                             str(root), "--status-port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    try:
        driver = root / "driver.json"
        deadline = time.time() + 180
        status = None
        while time.time() < deadline:
            if driver.is_file():
                url = json.loads(driver.read_text())["url"]
                status = json.loads(urllib.request.urlopen(url + "/v1/status", timeout=5).read())
                if status["queries"] and status["queries"][0]["lastBatchId"] >= 0:
                    break
            time.sleep(1)
        assert status is not None and status["queries"][0]["uid"].endswith("_sink"), status
        assert status["queries"][0]["state"] == "ACTIVE"

        snap = cli("snapshot", "--job-root", str(root))
        assert snap.returncode == 0, snap.stderr[-2000:]
        assert json.loads(snap.stdout.strip().splitlines()[-1])["snapshot"].startswith("s-")

        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    summary = json.loads(out.strip().splitlines()[-1])
    manifest = json.loads((root / "snapshots" / summary["snapshot"] / "manifest.json").read_text())
    assert manifest["reason"] == "stop"
    assert not (root / "RUN_LOCK").exists()
    assert sink_rows(tmp_path) == [5]


def test_a_signal_to_the_whole_process_group_ends_in_one_line_and_the_next_start_resumes(tmp_path: Path,
                                                                                           spark) -> None:
    """``timeout``, ``systemctl stop`` and ``kill -- -<pgid>`` signal Spark's JVM too, which then dies under the
    graceful stop: that used to print a py4j traceback per call. Now one line says what happened (or, when
    the stop wins the race, the stop takes its snapshot as usual), the lock is released, and the next start continues
    from the run's last committed batch with every row once."""
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT.replace("{dir}", str(tmp_path)))
    add_rows(tmp_path, "one", [{"a": 5, "b": "x"}])
    root = tmp_path / "root"
    proc = subprocess.Popen([sys.executable, "-m", "planengine.cli", "run", "--script", str(script), "--job-root",
                             str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    try:
        deadline = time.time() + 180
        while time.time() < deadline and sink_rows(tmp_path) != [5]:
            time.sleep(1)
        assert sink_rows(tmp_path) == [5]
        os.killpg(proc.pid, signal.SIGTERM)  # the process group: the planengine process and Spark's JVM
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    # Which of the two wins is a race between Spark's JVM shutdown hooks and the graceful stop (CI saw both):
    # either the JVM died first and one line says so, or the stop finished first and took its snapshot.
    snapshot = json.loads(out.strip().splitlines()[-1])["snapshot"]
    if snapshot is None:
        assert "Spark's JVM stopped with the signal (it was sent to the whole process group)" in err, err[-3000:]
    else:
        assert f"stopped; snapshot {snapshot}" in err, err[-3000:]
        assert json.loads((root / "snapshots" / snapshot / "manifest.json").read_text())["reason"] == "stop"
    assert not (root / "RUN_LOCK").exists()

    add_rows(tmp_path, "two", [{"a": 7, "b": "y"}, {"a": 1, "b": "z"}])
    again = cli("run", "--plan", str(root / "plan.json"), "--job-root", str(root), "--until-idle")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "from snapshot s-" in again.stderr  # a snapshot of the ended run's committed batches, forked
    assert sink_rows(tmp_path) == [5, 7]


def test_an_idle_query_reports_caught_up_and_stop_needs_the_control_token(tmp_path: Path, spark) -> None:
    """What the operator's stability gate reads from a real driver: after its input, the query is ``caughtUp``
    (Spark's status: no data available; its sources read to their latest offset); new input makes it not caught
    up until committed. And the stop of a driver started with a token file needs that token."""
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT.replace("{dir}", str(tmp_path)))
    add_rows(tmp_path, "one", [{"a": 5, "b": "x"}])
    token_file = tmp_path / "token"
    token_file.write_text("the-job-token-0123456789abcdef\n")
    token_file.chmod(0o600)
    root = tmp_path / "root"
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "planengine.cli", "run", "--script", str(script), "--job-root",
                             str(root), "--status-port", str(port), "--control-token-file", str(token_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    url = f"http://127.0.0.1:{port}"
    try:
        def query() -> dict:
            try:
                return _http(url + "/v1/status")[1]["queries"][0]
            except (OSError, IndexError, KeyError):
                return {}

        deadline = time.time() + 240
        while time.time() < deadline and not (query().get("lastBatchId", -1) >= 0 and query().get("caughtUp")):
            time.sleep(1)
        idle = query()
        assert idle.get("caughtUp") is True and idle["dataAvailable"] is False, idle
        assert idle["state"] == "ACTIVE" and idle["lastInputRows"] in (0, 1), idle
        add_rows(tmp_path, "two", [{"a": 7, "b": "y"}])
        deadline = time.time() + 120
        while time.time() < deadline and not (query().get("lastBatchId", -1) > idle["lastBatchId"]
                                               and query().get("caughtUp")):
            time.sleep(0.5)
        assert query().get("caughtUp") is True and query()["lastBatchId"] > idle["lastBatchId"], query()
        _assert_metrics_count_the_batches(url, query())

        assert _http(url + "/v1/stop", {"snapshot": True})[0] == 401
        request = urllib.request.Request(url + "/v1/stop", data=b'{"snapshot": true}', method="POST",
                                         headers={"Authorization": "Bearer the-job-token-0123456789abcdef"})
        with urllib.request.urlopen(request, timeout=120) as answer:
            assert answer.status == 200 and json.loads(answer.read())["snapshotId"].startswith("s-")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    assert "the-job-token" not in out + err
    assert sink_rows(tmp_path) == [5, 7]


def _assert_metrics_count_the_batches(url: str, query: dict) -> None:
    """The real driver's /metrics after its two input files: every batch counted from Spark's progress events,
    labelled by the job (its root's directory name), the query's uid and its sink table."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=30) as answer:
        families = {f.name: f for f in text_string_to_metric_families(answer.read().decode())}
    assert all(f.documentation for f in families.values())
    labels = {"job_name": "root", "query": query["uid"], "sink": "snk"}

    def value(name: str, **more: str) -> float | None:
        return next((s.value for f in families.values() for s in f.samples
                     if s.name == name and s.labels == {**labels, **more}), None)

    batches = value("planengine_query_batches_total")
    assert batches is not None and batches >= 2, families["planengine_query_batches"].samples
    assert value("planengine_query_records_in_total") == 2  # one row in each file
    assert value("planengine_query_batch_duration_seconds_count") == batches
    assert value("planengine_query_checkpoint_duration_seconds_count") == batches
    assert value("planengine_query_active") == 1
    assert value("planengine_query_last_batch_id") == query["lastBatchId"]
    # Spark does not count a file sink's rows (-1), a stateless query has no state and no watermark: no samples.
    assert value("planengine_query_records_out_total") is None
    assert value("planengine_query_state_rows") is None and value("planengine_query_watermark_lag_seconds") is None


# --- warm standby (planengine run --standby, POST /v1/start) ----------------------------------------------------
def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _http(url: str, body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _standby(root: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "planengine.cli", "run", "--plan", str(root / "plan.json"),
                             "--job-root", str(root), "--standby", "--status-port", str(port), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    return proc, f"http://127.0.0.1:{port}"


def _wait_phase(proc: subprocess.Popen, url: str, phase: str, timeout: float = 300) -> dict:
    deadline = time.time() + timeout
    status: dict = {}
    while time.time() < deadline and proc.poll() is None:
        try:
            status = _http(url + "/v1/status")[1]
        except OSError:
            status = {}
        if status.get("phase") == phase:
            return status
        time.sleep(0.5)
    raise AssertionError(f"no phase {phase} (exit {proc.poll()}): {status}")


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_standby_writes_nothing_until_started_then_continues_exactly_once(tmp_path: Path, spark) -> None:
    """A standby reports phase Standby without touching the job root (no lock, run, driver.json); SIGTERM
    there leaves it untouched; POST /v1/start forks the snapshot into a new run whose output continues the
    first run's exactly once; a repeated start answers the same run."""
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT.replace("{dir}", str(tmp_path)))
    add_rows(tmp_path, "one", [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}])
    root = tmp_path / "root"
    first = cli("run", "--script", str(script), "--job-root", str(root), "--until-idle")
    assert first.returncode == 0, first.stderr[-3000:]
    snapshot = json.loads(first.stdout.strip().splitlines()[-1])["snapshot"]
    assert sink_rows(tmp_path) == [2]
    before = _tree(root)

    cancelled, url = _standby(root, "--no-warm-up")
    try:
        status = _wait_phase(cancelled, url, "Standby")
        assert status["runId"] is None and status["queries"] == [] and "standby" in status["capabilities"]
        assert _tree(root) == before
        cancelled.send_signal(signal.SIGTERM)
        out, err = cancelled.communicate(timeout=120)
    finally:
        if cancelled.poll() is None:
            cancelled.kill()
    assert cancelled.returncode == 0, err[-3000:]
    assert _tree(root) == before  # nothing written: no lock, no run, no driver.json, no snapshot

    proc, url = _standby(root)
    try:
        status = _wait_phase(proc, url, "Standby")
        assert status["warmUpSeconds"] is not None and status["planId"] == json.loads(
            (root / "plan.json").read_text())["planId"]
        assert _tree(root) == before
        add_rows(tmp_path, "two", [{"a": 3, "b": "z"}, {"a": 0, "b": "w"}])
        code, started = _http(url + "/v1/start", {"fromSnapshot": str(root / "snapshots" / snapshot)})
        assert code == 200 and started["started"] and started["runId"], started
        assert _http(url + "/v1/start", {"fromSnapshot": str(root / "snapshots" / snapshot)})[1] == started
        assert _http(url + "/v1/start", {})[0] == 409  # another snapshot than the one it started from
        run_marker = json.loads((root / "runs" / started["runId"] / "run.json").read_text())
        assert run_marker["fromSnapshot"] == snapshot
        assert json.loads((root / "RUN_LOCK").read_text())["runId"] == started["runId"]
        assert json.loads((root / "driver.json").read_text())["runId"] == started["runId"]
        deadline = time.time() + 180
        while time.time() < deadline and sink_rows(tmp_path) != [2, 3]:
            time.sleep(1)
        assert _wait_phase(proc, url, "Running")["runId"] == started["runId"]
        code, stopped = _http(url + "/v1/stop", {"snapshot": True})
        assert code == 200 and stopped["snapshotId"].startswith("s-"), stopped
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    assert json.loads(out.strip().splitlines()[-1])["runId"] == started["runId"]
    assert sink_rows(tmp_path) == [2, 3]  # continued from the snapshot: nothing lost, nothing twice
    assert not (root / "RUN_LOCK").exists() and not (root / "driver.json").exists()
