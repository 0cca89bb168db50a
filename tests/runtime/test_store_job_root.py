"""A job root on a bucket (``JobRoot("s3a://...")``) against the tests' S3 server, without Spark: runs, the plan in
force, stop snapshots that name the run's files, live snapshots that copy them, and forks by server-side copy that
rewrite the absolute URIs Spark keeps (docs/object-store.md, issue 19).

The checkpoints here are the shape Spark writes (``offsets``, ``commits``, ``state`` versions, operator metadata v2
naming its schema file by URI), put on the store directly; ``test_s3_job_root_cli.py`` runs real Spark on it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from planengine import cli
from planengine.errors import UserError
from planengine.runtime.storage.job_root import JobRoot, refuse_sinks_inside, resolve_job_root
from planengine.runtime.storage.snapshots import take_snapshot
from planengine.runtime.storage.store_job_root import StoreJobRoot
from planengine.runtime.storage.store_snapshots import SnapshotFilesChanged
from tests.fixtures.object_store import S3Store
from tests.fixtures.race import race

UID = "3_stream-exec-group-aggregate-1_sink"
PLAN = json.dumps({"planId": "p" * 64, "nodes": []})


@pytest.fixture
def root(s3_store: S3Store) -> StoreJobRoot:
    made = JobRoot(s3_store.uri(s3_store.prefix("root")))
    assert isinstance(made, StoreJobRoot)
    made.write_plan_text(PLAN)
    return made


def put(s3: S3Store, root: StoreJobRoot, key: str, body: str | bytes) -> None:
    data = body.encode() if isinstance(body, str) else body
    s3.client().put_object(Bucket=s3.bucket, Key=f"{root.store.prefix}/{key}", Body=data)


def keys(s3: S3Store, root: StoreJobRoot, under: str) -> list[str]:
    cut = len(root.store.prefix) + 1
    return [k[cut:] for k in s3.keys(f"{root.store.prefix}/{under}")]


def state_metadata(checkpoint_uri: str) -> str:
    """Operator metadata v2 as transformWithState writes it: the schema file by absolute URI."""
    info = {"stateStoreInfo": [{"storeName": "default", "numColsPrefixKey": 0, "numPartitions": 2,
                                "stateSchemaFilePaths": [f"{checkpoint_uri}/state/0/_stateSchema/default/0_abc"]}]}
    return "v2\n" + json.dumps(info)


def spark_like_checkpoint(s3: S3Store, root: StoreJobRoot, run_id: str, committed: int) -> None:
    """Batches 0..committed committed, batch committed+1 planned; state versions up to committed+3."""
    base = f"runs/{run_id}/checkpoints/{UID}"
    put(s3, root, f"{base}/metadata", '{"id":"q"}')
    for n in range(committed + 2):
        put(s3, root, f"{base}/offsets/{n}", f"v1\n{{}}\n{n}")
    for n in range(committed + 1):
        put(s3, root, f"{base}/commits/{n}", "v1\n{}")
    for version in range(1, committed + 4):
        for partition in (0, 1):
            put(s3, root, f"{base}/state/0/{partition}/{version}.changelog", b"\x00" * 64)
    put(s3, root, f"{base}/state/0/_stateSchema/default/0_abc", "schema")
    put(s3, root, f"{base}/state/0/_metadata/v2/0", state_metadata(root.store.object_uri(base)))
    put(s3, root, f"{base}/sources/0/0", "v1\n{}")


def test_a_job_root_on_a_bucket_keeps_its_plan_runs_and_driver_file_there(s3_store: S3Store) -> None:
    uri = s3_store.uri(s3_store.prefix("root"))
    root = resolve_job_root("p" * 64, uri)
    assert isinstance(root, StoreJobRoot) and root.location == uri and not root.has_plan()
    root.write_plan_text(PLAN)
    with pytest.raises(UserError, match=r"already has a plan\.json"):
        root.write_plan_text(PLAN)
    root.write_plan_text(json.dumps({"planId": "q" * 64}), overwrite=True)  # an upgrade's, installed under the lock
    assert json.loads(root.read_plan_text())["planId"] == "q" * 64

    ids = race(8, lambda i: root.new_run().run_id)
    assert len(set(ids)) == 8 and ids == [i for i in ids if isinstance(i, str)]  # no creator lost its run
    assert [r.run_id for r in root.runs()] == sorted(ids)
    run = root.runs()[-1]
    assert run.checkpoint_dir(UID) == f"{uri}/runs/{run.run_id}/checkpoints/{UID}"
    assert run.info()["runId"] == run.run_id
    # newest by its marker's createdAt, as in a directory (8 racing creators may cross a second: a smaller id's
    # marker can be written after a larger one's)
    newest = root.newest_run()
    assert newest is not None and newest.run_id in ids
    assert newest.info()["createdAt"] == max(r.info()["createdAt"] for r in root.runs())

    root.write_driver_info({"runId": ids[0], "statusPort": 1})
    assert root.live_run().run_id == ids[0]
    root.remove_driver_info("r-someone-else")
    assert root.read_driver_info() == {"runId": ids[0], "statusPort": 1}
    root.remove_driver_info(ids[0])
    assert root.read_driver_info() is None
    assert resolve_job_root("x" * 64, jobs_dir=uri).location == f"{uri}/{'x' * 16}"  # not a folded "s3a:/" path


def test_a_stop_snapshot_names_the_committed_files_and_copies_nothing(s3_store: S3Store, root: StoreJobRoot) -> None:
    run = root.new_run()
    spark_like_checkpoint(s3_store, root, run.run_id, committed=1)
    before = len(s3_store.requests())
    snap = take_snapshot(root, run, reason="stop", engine_version="0.1", spark_version="4.3.0", plan_id="p",
                         last_batch_ids={}, live=False)
    requests = s3_store.requests()[before:]
    assert snap.manifest["storage"] == "reference" and snap.last_batch_ids == {UID: 1}
    named = sorted(e["key"].split(f"{UID}/")[1] for e in snap.manifest["files"][UID])
    assert named == sorted(["metadata", "offsets/0", "offsets/1", "offsets/2", "commits/0", "commits/1",
                            *(f"state/0/{p}/{v}.changelog" for p in (0, 1) for v in (1, 2, 3)),
                            "state/0/_stateSchema/default/0_abc", "state/0/_metadata/v2/0", "sources/0/0"])
    # Zero bytes copied: the snapshot is its plan, its manifest and the id's reservation.
    assert keys(s3_store, root, f"snapshots/{snap.snapshot_id}/") == [
        f"snapshots/{snap.snapshot_id}/{name}" for name in ("manifest.json", "manifest.json.reserved", "plan.json")]
    assert len(requests) <= 10, requests  # LISTs (ids, checkpoint files), the plan's GET, three PUTs
    assert [s.snapshot_id for s in root.snapshots()] == [snap.snapshot_id]


def test_a_fork_copies_the_snapshot_into_the_new_run_and_points_the_schema_at_it(s3_store: S3Store,
                                                                                   root: StoreJobRoot) -> None:
    parent = root.new_run()
    spark_like_checkpoint(s3_store, root, parent.run_id, committed=1)
    snap = root.take_snapshot(parent, reason="stop", engine_version="0.1", spark_version="4.3.0", plan_id="p",
                              last_batch_ids={}, live=False)
    child = root.new_run(snap.snapshot_id)
    assert child.info()["fromSnapshot"] == snap.snapshot_id
    copied = [k.split(f"{UID}/")[1] for k in keys(s3_store, root, f"runs/{child.run_id}/checkpoints/")]
    assert sorted(copied) == sorted(e["key"].split(f"{UID}/")[1] for e in snap.manifest["files"][UID])
    metadata = s3_store.client().get_object(Bucket=s3_store.bucket, Key=f"{root.store.prefix}/runs/{child.run_id}/"
                                            f"checkpoints/{UID}/state/0/_metadata/v2/0")["Body"].read().decode()
    paths = json.loads(metadata.split("\n", 1)[1])["stateStoreInfo"][0]["stateSchemaFilePaths"]
    assert paths == [f"{child.checkpoint_dir(UID)}/state/0/_stateSchema/default/0_abc"]
    assert child.last_committed_batch_id(UID) == 1


def test_a_fork_of_a_file_changed_since_the_snapshot_fails_naming_it_and_leaves_no_run(s3_store: S3Store,
                                                                                        root: StoreJobRoot) -> None:
    parent = root.new_run()
    spark_like_checkpoint(s3_store, root, parent.run_id, committed=1)
    snap = root.take_snapshot(parent, reason="stop", engine_version="0.1", spark_version="4.3.0", plan_id="p",
                              last_batch_ids={}, live=False)
    put(s3_store, root, f"runs/{parent.run_id}/checkpoints/{UID}/state/0/1/3.changelog", b"rewritten by a replay")
    runs_before = [r.run_id for r in root.runs()]
    with pytest.raises(SnapshotFilesChanged, match=rf"{parent.run_id}/checkpoints/{UID}/state/0/1/3.changelog "
                                                   "changed"):
        root.new_run(snap.snapshot_id)
    assert [r.run_id for r in root.runs()] == runs_before
    assert [k for k in keys(s3_store, root, "runs/") if not k.startswith(f"runs/{parent.run_id}/")] == [], \
        "the failed fork left objects behind"


def test_a_live_snapshot_copies_its_files_so_the_run_may_delete_them(s3_store: S3Store, root: StoreJobRoot) -> None:
    parent = root.new_run()
    spark_like_checkpoint(s3_store, root, parent.run_id, committed=2)
    snap = root.take_snapshot(parent, reason="manual", engine_version="0.1", spark_version="4.3.0", plan_id="p",
                              last_batch_ids={UID: 1}, live=True)
    assert snap.manifest["storage"] == "copy" and snap.last_batch_ids == {UID: 1}
    assert all(e["key"].startswith(f"snapshots/{snap.snapshot_id}/checkpoints/{UID}/")
               for e in snap.manifest["files"][UID])
    assert "commits/2" not in " ".join(e["key"] for e in snap.manifest["files"][UID])  # past the cut
    s3_store.client().delete_objects(Bucket=s3_store.bucket, Delete={"Objects": [
        {"Key": f"{root.store.prefix}/{k}"} for k in keys(s3_store, root, f"runs/{parent.run_id}/checkpoints/")]})
    child = root.new_run(snap.snapshot_id)
    assert child.last_committed_batch_id(UID) == 1


def test_old_runs_go_but_a_run_a_snapshot_names_stays_until_the_snapshot_goes(s3_store: S3Store,
                                                                             root: StoreJobRoot) -> None:
    named = root.new_run()
    spark_like_checkpoint(s3_store, root, named.run_id, committed=0)
    snap = root.take_snapshot(named, reason="stop", engine_version="0.1", spark_version="4.3.0", plan_id="p",
                              last_batch_ids={}, live=False)
    plain = root.new_run()
    put(s3_store, root, f"runs/{plain.run_id}/checkpoints/{UID}/metadata", "{}")
    current = root.new_run()
    assert root.prune_runs(current.run_id, keep=1) == [plain.run_id]
    assert keys(s3_store, root, f"runs/{plain.run_id}/") == []
    assert [r.run_id for r in root.runs()] == [named.run_id, current.run_id]
    root.delete_snapshot(snap.snapshot_id)
    assert root.snapshots(include_incomplete=True) == []
    assert root.prune_runs(current.run_id, keep=1) == [named.run_id]


def test_snapshots_list_and_inspect_read_a_bucket(s3_store: S3Store, root: StoreJobRoot,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    run = root.new_run()
    spark_like_checkpoint(s3_store, root, run.run_id, committed=1)
    snap = root.take_snapshot(run, reason="stop", engine_version="0.1", spark_version="4.3.0", plan_id="p",
                              last_batch_ids={}, live=False)
    assert cli.main(["snapshots", "list", "--job-root", root.location]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["snapshot"] == snap.snapshot_id and listed["lastBatchIds"] == {UID: 1}
    assert cli.main(["snapshots", "inspect", "--no-state", "--job-root", root.location]) == 0
    details = json.loads(capsys.readouterr().out)["queries"][UID]
    assert details["consistent"] and details["lastPlannedBatchId"] == 2
    assert details["stateOperators"]["0"] == {"partitions": [0, 1], "stores": ["default"], "maxStateVersion": 3}


def test_a_sink_inside_the_buckets_job_root_is_refused(root: StoreJobRoot) -> None:
    def sink(path: str) -> dict[str, Any]:
        return {"nodes": [{"type": "stream-exec-sink_2", "table": {"identifier": "`s`", "resolvedTable": {
            "options": {"connector": "filesystem", "format": "json", "path": path}}}}]}

    with pytest.raises(UserError, match="the engine keeps its checkpoints"):
        refuse_sinks_inside(root, sink(f"{root.location}/runs/out"))
    refuse_sinks_inside(root, sink(f"{root.location}-out"))
    refuse_sinks_inside(root, sink("/tmp/out"))
