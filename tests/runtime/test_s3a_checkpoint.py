"""A streaming query whose source, checkpoint and sink are ``s3a://`` paths on the tests' local S3 server: it stops,
starts again from its checkpoint, and every row arrives exactly once (docs/object-store.md).

The query keeps state (``dropDuplicates``, RocksDB, as every planengine query does), so the restart must read the
state store's files back from the store: a key seen before the stop is dropped after it. Spark's file sink commits
each batch in its ``_spark_metadata`` manifest, so a restart that lost its offsets would either skip a batch (the
manifest says it was written) or write it twice; either shows in the rows.
"""

from __future__ import annotations

import json
from typing import Any

from planengine.runtime.storage.object_store import use_object_store
from tests.fixtures.object_store import S3Store

SCHEMA = "id INT, v STRING"


def put_json_file(store: S3Store, key: str, rows: list[dict[str, Any]]) -> None:
    body = "".join(json.dumps(row) + "\n" for row in rows).encode()
    store.client().put_object(Bucket=store.bucket, Key=key, Body=body)


def run_until_caught_up(spark: Any, source: str, checkpoint: str, out: str) -> list[int]:
    """Start the query (from its checkpoint when there is one), process what is there, stop; the batch ids run."""
    query = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(source)
             .dropDuplicates(["id"])
             .writeStream.format("json").option("checkpointLocation", checkpoint).start(out))
    try:
        query.processAllAvailable()
        return sorted({p["batchId"] for p in query.recentProgress if p["numInputRows"] > 0})
    finally:
        query.stop()


def test_a_query_checkpointing_on_s3_resumes_exactly_once(spark: Any, s3_store: S3Store) -> None:
    prefix = s3_store.prefix("dedup")
    source, checkpoint, out = (s3_store.uri(prefix, part) for part in ("in", "checkpoint", "out"))
    applied = use_object_store(spark, source, checkpoint, out)
    assert applied["fs.s3a.endpoint"] == s3_store.endpoint and applied["fs.s3a.path.style.access"] == "true"

    put_json_file(s3_store, f"{prefix}/in/1.json", [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}])
    assert run_until_caught_up(spark, source, checkpoint, out) == [0]
    put_json_file(s3_store, f"{prefix}/in/2.json", [{"id": 2, "v": "again"}, {"id": 3, "v": "c"}])
    put_json_file(s3_store, f"{prefix}/in/3.json", [{"id": 4, "v": "d"}])
    assert run_until_caught_up(spark, source, checkpoint, out) == [1, 2]  # resumed after batch 0, not from scratch

    rows = sorted(tuple(row) for row in spark.read.schema(SCHEMA).json(out).collect())
    assert rows == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]  # id 2 once: the state came back from the store
    keys = [k for k in s3_store.keys(f"{prefix}/checkpoint/") if not k.endswith("/")]  # not S3A's directory markers
    for log in ("offsets", "commits"):
        assert [k for k in keys if f"/checkpoint/{log}/" in k] == [f"{prefix}/checkpoint/{log}/{n}" for n in range(3)]
    assert any("/checkpoint/state/0/" in k for k in keys), "the state store's files are on the store"
    assert not [k for k in keys if k.rsplit("/", 1)[-1].startswith(".") and k.endswith(".tmp")], \
        "the checkpoint manager left a temporary file behind"
    uploads = [r for r in s3_store.requests() if r.startswith(f"PUT /{s3_store.bucket}/{prefix}/") and r[-1] != "/"]
    assert uploads and len(uploads) == len(set(uploads)), "an object was uploaded twice: a retried request"


def test_the_checkpoint_manager_on_s3a_is_sparks_file_context_one(spark: Any, s3_store: S3Store) -> None:
    """docs/object-store.md, "Checkpoints on S3A", says why this manager and not Spark's abortable-stream one; a
    change of Spark's default (or a setting that overrides it) must be a decision, so it fails here first."""
    checkpoint = s3_store.uri(s3_store.prefix("manager"), "checkpoint")
    use_object_store(spark, checkpoint)
    jvm = spark._jvm
    manager = jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.create(
        jvm.org.apache.hadoop.fs.Path(checkpoint), spark._jsparkSession.sessionState().newHadoopConf())
    assert manager.getClass().getSimpleName() == "FileContextBasedCheckpointFileManager"


DDL = """
CREATE TABLE clicks (id INT, v STRING)
  WITH ('connector' = 'filesystem', 'path' = '{source}', 'format' = 'json');
CREATE TABLE shouted (id INT, v STRING)
  WITH ('connector' = 'filesystem', 'path' = '{sink}', 'format' = 'json');
"""


def test_a_planengine_job_reads_and_writes_s3a_tables_exactly_once(spark: Any, s3_store: S3Store, tmp_path) -> None:
    """The ``filesystem`` connector with ``s3a://`` paths: the job applies the store's settings itself (nothing here
    calls ``use_object_store``), and a second run on the same job root goes on where the first stopped."""
    from planengine.api import TableEnvironment

    prefix = s3_store.prefix("job")
    source, sink = s3_store.uri(prefix, "clicks"), s3_store.uri(prefix, "shouted")
    spark.conf.unset("fs.s3a.endpoint")  # as in a fresh driver: only the connector may set it
    env = TableEnvironment()
    env.execute_sql(DDL.format(source=source, sink=sink))
    plan = env.compile_plan_sql("INSERT INTO shouted SELECT id, UPPER(v) AS v FROM clicks WHERE id > 0")
    job_root = tmp_path / "job"

    put_json_file(s3_store, f"{prefix}/clicks/1.json", [{"id": 1, "v": "a"}, {"id": -1, "v": "skip"}])
    TableEnvironment().execute_plan(plan, job_root=str(job_root), until_idle=True)
    put_json_file(s3_store, f"{prefix}/clicks/2.json", [{"id": 2, "v": "b"}])
    TableEnvironment().execute_plan(plan, job_root=str(job_root), until_idle=True)

    assert spark.conf.get("fs.s3a.endpoint") == s3_store.endpoint  # set by the connector, from the environment
    rows = sorted(tuple(row) for row in spark.read.schema(SCHEMA).json(sink).collect())
    assert rows == [(1, "A"), (2, "B")]  # B: the second run resumed (a fresh checkpoint's batch 0 is skipped)
    assert any(k.startswith(f"{prefix}/shouted/_spark_metadata/") for k in s3_store.keys(f"{prefix}/shouted/"))
