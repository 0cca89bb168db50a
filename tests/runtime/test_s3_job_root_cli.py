"""``planengine run --job-root s3a://...`` end to end: real PySpark drivers (subprocesses, as the operator starts them)
on the tests' S3 server, with a stateful job (a GROUP BY over a local JSON directory into a changelog sink).

A restart resumes from the stop snapshot on the bucket (a manifest naming the stopped run's files, forked into the
new run by server-side copy), and a driver killed with SIGKILL resumes from its last committed batch; either way the
sink's changelog leaves every key's count exactly once. A wrong bucket is one line, and nothing is written.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.object_store import S3Store
from tests.runtime.test_cli_run import cli

pytestmark = pytest.mark.usefixtures("engine_process")

SCRIPT = """
CREATE TABLE src (k STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '{dir}/src', 'format' = 'json',
  'source.monitor-interval' = '1 s');
CREATE TABLE counts (k STRING, cnt BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '{dir}/counts', 'format' = 'changelog-json');
INSERT INTO counts SELECT k, COUNT(*) FROM src GROUP BY k;
"""


def add_rows(tmp: Path, name: str, keys: str) -> None:
    (tmp / "src").mkdir(parents=True, exist_ok=True)
    (tmp / "src" / f"{name}.json").write_text("".join(json.dumps({"k": k, "v": 1}) + "\n" for k in keys))


def counts(spark: Any, tmp: Path) -> Counter:
    """What the sink's changelog leaves (``+I``/``+U`` add a row, ``-U``/``-D`` remove one): a batch written twice,
    or state lost in a restart, leaves a row too many or a wrong count."""
    if not (tmp / "counts" / "_spark_metadata").is_dir():
        return Counter()
    table: Counter = Counter()
    for row in spark.read.schema("k STRING, cnt BIGINT, op STRING").json(str(tmp / "counts")).collect():
        table[(row["k"], row["cnt"])] += 1 if row["op"] in ("+I", "+U") else -1
    return +table


def store_keys(s3: S3Store, prefix: str) -> list[str]:
    return [k[len(prefix) + 1:] for k in s3.keys(prefix + "/")]


def script_for(tmp: Path) -> Path:
    script = tmp / "job.sql"
    script.write_text(SCRIPT.replace("{dir}", str(tmp)))
    return script


def test_a_job_on_a_bucket_stops_with_a_snapshot_there_and_resumes_from_it_exactly_once(
        tmp_path: Path, spark: Any, s3_store: S3Store) -> None:
    prefix = s3_store.prefix("job")
    root = s3_store.uri(prefix)
    script = script_for(tmp_path)
    add_rows(tmp_path, "one", "aab")
    first = cli("run", "--script", str(script), "--job-root", root, "--until-idle")
    assert first.returncode == 0, first.stderr[-3000:]
    summary = json.loads(first.stdout.strip().splitlines()[-1])
    assert f"job root {root}, from empty state" in first.stderr
    assert counts(spark, tmp_path) == Counter({("a", 2): 1, ("b", 1): 1})

    keys = store_keys(s3_store, prefix)
    assert "plan.json" in keys and f"runs/{summary['runId']}/run.json" in keys
    assert "RUN_LOCK" not in keys and "driver.json" not in keys  # released when the run ended
    snap = summary["snapshot"]
    manifest = json.loads(s3_store.client().get_object(
        Bucket=s3_store.bucket, Key=f"{prefix}/snapshots/{snap}/manifest.json")["Body"].read())
    assert manifest["storage"] == "reference" and manifest["reason"] == "stop"
    (uid,) = manifest["files"]
    assert all(e["key"].startswith(f"runs/{summary['runId']}/checkpoints/{uid}/") for e in manifest["files"][uid])
    assert not [k for k in keys if k.startswith(f"snapshots/{snap}/checkpoints/")]  # nothing copied
    assert any("/state/" in e["key"] for e in manifest["files"][uid]), "the aggregate's state is named"
    assert not [k for k in os.listdir(tmp_path) if k.startswith("s3a")], "a local s3a: directory was made"

    listing = cli("snapshots", "list", "--job-root", root)
    assert listing.returncode == 0 and json.loads(listing.stdout)["snapshot"] == snap, listing.stderr[-2000:]

    add_rows(tmp_path, "two", "abc")
    before = len(s3_store.requests())
    second = cli("run", "--script", str(script), "--job-root", root, "--until-idle")
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"from snapshot {snap}" in second.stderr
    assert counts(spark, tmp_path) == Counter({("a", 3): 1, ("b", 2): 1, ("c", 1): 1})
    new_run = json.loads(second.stdout.strip().splitlines()[-1])["runId"]
    copies = [r for r in s3_store.requests()[before:] if r.startswith(f"PUT /{s3_store.bucket}/{prefix}/runs/{new_run}/"
                                                                        f"checkpoints/{uid}/")]
    assert len(copies) >= len(manifest["files"][uid])  # the fork put each named file into the new run

    # transformWithState names its schema file by URI: the fork pointed it at the new run's copy.
    schema_logs = [k for k in store_keys(s3_store, prefix)
                   if k.startswith(f"runs/{new_run}/") and "/_metadata/v2/" in k]
    assert schema_logs, "the aggregate's operator metadata (v2) is in the new run"
    for key in schema_logs:
        text = s3_store.client().get_object(Bucket=s3_store.bucket, Key=f"{prefix}/{key}")["Body"].read().decode()
        infos = json.loads(text.split("\n", 1)[1])["stateStoreInfo"]
        paths = [p for info in infos for p in info["stateSchemaFilePaths"]]
        assert paths and all(p.startswith(f"{root}/runs/{new_run}/checkpoints/{uid}/state/") for p in paths), paths

    inspect = cli("snapshots", "inspect", "--no-state", "--job-root", root)
    assert inspect.returncode == 0, inspect.stderr[-2000:]
    details = json.loads(inspect.stdout)
    assert details["manifest"]["runId"] == new_run and details["queries"][uid]["consistent"]


def test_a_driver_killed_mid_batch_on_a_bucket_resumes_with_every_count_once(
        tmp_path: Path, spark: Any, s3_store: S3Store) -> None:
    prefix = s3_store.prefix("kill")
    root = s3_store.uri(prefix)
    script = script_for(tmp_path)
    add_rows(tmp_path, "one", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "planengine.cli", "run", "--script", str(script), "--job-root",
                             root], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    try:
        deadline = time.time() + 240
        while time.time() < deadline and counts(spark, tmp_path) != Counter({("a", 1): 1, ("b", 1): 1}):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(1)
        assert counts(spark, tmp_path) == Counter({("a", 1): 1, ("b", 1): 1})
        add_rows(tmp_path, "two", "aac")
        planned = wait_for_a_planned_batch(s3_store, prefix)
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and Spark's JVM, with no chance to stop
        proc.wait(timeout=60)
        assert planned, "no batch was caught between its offsets and its commit"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "RUN_LOCK" in store_keys(s3_store, prefix)  # left behind by the killed driver

    add_rows(tmp_path, "three", "b")
    again = cli("run", "--script", str(script), "--job-root", root, "--until-idle")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "from snapshot s-" in again.stderr  # the killed run's committed batches, named by a snapshot
    assert counts(spark, tmp_path) == Counter({("a", 3): 1, ("b", 2): 1, ("c", 1): 1})


def wait_for_a_planned_batch(s3: S3Store, prefix: str, timeout: float = 120) -> str | None:
    """The key of an offsets log entry whose commit is not written yet (the batch is running), once one appears."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        keys = store_keys(s3, prefix)
        commits = {k.replace("/commits/", "/offsets/") for k in keys if "/commits/" in k}
        offsets = [k for k in keys if "/offsets/" in k and k.rsplit("/", 1)[1].isdigit() and k not in commits]
        if offsets and commits:  # past the first batch
            return offsets[0]
        time.sleep(0.05)
    return None


def test_a_job_root_in_a_missing_bucket_is_one_line_and_nothing_is_written(tmp_path: Path,
                                                                           s3_store: S3Store) -> None:
    missing = f"{s3_store.bucket}-missing"
    add_rows(tmp_path, "one", "a")
    refused = cli("run", "--script", str(script_for(tmp_path)), "--job-root", f"s3a://{missing}/jobs/x",
                  "--until-idle")
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert f"bucket '{missing}' does not exist at {s3_store.endpoint}" in refused.stderr
    assert "Traceback" not in refused.stderr and "Exception" not in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.sql", "src"]
