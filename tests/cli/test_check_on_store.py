"""``check`` and ``migrate`` on an ``s3a://`` job root: what the operator's tool pods run in an upgrade (``check
--plan <root>/plan.json``), its migration (``migrate -o <root>/runs/<id>/plan.json``) and its rollback check
(``check --snapshot <root>/snapshots/<id>``), against the tests' S3 server (no Spark: none of these starts it).
"""

from __future__ import annotations

import json

import pytest

from planengine import cli
from planengine.api import TableEnvironment
from planengine.runtime.storage.job_root import JobRoot
from tests.fixtures.object_store import S3Store

SCRIPT = """
CREATE TABLE src (k STRING, v INT) WITH ('connector' = 'datagen', 'number-of-rows' = '5');
CREATE TABLE snk (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'blackhole');
"""
INSERT = "INSERT INTO snk SELECT k, COUNT(*) FROM src GROUP BY k"


@pytest.fixture
def root(s3_store: S3Store) -> str:
    """A job root on the bucket holding a compiled plan in force."""
    env = TableEnvironment()
    env.execute_sql(SCRIPT)
    uri = s3_store.uri(s3_store.prefix("check-on-store"))
    JobRoot(uri).write_plan_text(env.compile_plan_sql(INSERT).as_json())
    return uri


def verdict(capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(capsys.readouterr().out)


def test_check_reads_the_plan_in_force_from_the_bucket(root: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "--plan", f"{root}/plan.json", "--json"]) == 0
    assert verdict(capsys)["status"] == "compatible"
    assert cli.main(["check", "--plan", f"{root}/runs/none/plan.json", "--json"]) == 2
    answer = verdict(capsys)
    assert answer["status"] == "malformed" and "does not exist" in answer["error"], answer


def test_migrate_writes_its_plan_onto_the_bucket(root: str, capsys: pytest.CaptureFixture[str]) -> None:
    target = f"{root}/runs/r-20261207T230000Z-0000/plan.json"
    for _ in range(2):  # a tool pod retried after a crash writes the same object again
        assert cli.main(["migrate", "--plan", f"{root}/plan.json", "-o", target]) == 0
    capsys.readouterr()
    assert cli.main(["job-root", "read", "runs/r-20261207T230000Z-0000/plan.json", "--job-root", root, "--json"]) == 0
    written = json.loads(verdict(capsys)["text"])
    assert written["planId"] == json.loads(JobRoot(root).read_plan_text())["planId"]


def test_check_of_a_snapshot_on_the_bucket_judges_it_and_says_what_it_did_not_compare(
        root: str, capsys: pytest.CaptureFixture[str]) -> None:
    job = JobRoot(root)
    plan = json.loads(job.read_plan_text())
    run = job.new_run()
    snap = job.take_snapshot(run, reason="stop", engine_version="0.1", spark_version="4.3.0",
                             plan_id=plan["planId"], last_batch_ids={}, live=False)
    assert cli.main(["check", "--plan", f"{root}/plan.json", "--snapshot", f"{root}/snapshots/{snap.snapshot_id}",
                     "--json"]) == 0
    answer = verdict(capsys)
    assert answer["status"] == "compatible"
    assert any("was not compared" in r["message"] for r in answer["reasons"]), answer

    missing = f"{root}/snapshots/s-20261207T230000Z-0000"
    assert cli.main(["check", "--plan", f"{root}/plan.json", "--snapshot", missing, "--json"]) == 2
    assert "has no snapshot s-20261207T230000Z-0000" in capsys.readouterr().err
