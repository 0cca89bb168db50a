"""One job per file-sink path (``planengine.runtime.storage.sink_claims``).

Before the claim, a second job writing a path another job had written lost its rows without a word: Spark's
file sink skips batch ids its ``_spark_metadata`` log already holds, and both jobs count from batch 0. The
Spark test shows that loss is now a refusal naming the other job; the fast tests pin the hand-over rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.runtime.storage.job_root import JobRoot
from planengine.runtime.storage.sink_claims import CLAIM_FILE, SinkPathClaimed, claim_sink_paths
from planengine.testing.changelog import committed_files
from tests.fixtures.object_store import S3Store
from tests.fixtures.race import race


def _plan(*paths: str) -> dict:
    return {"nodes": [{"type": "stream-exec-sink_2", "table": {"identifier": f"`s{i}`", "resolvedTable": {
        "options": {"connector": "filesystem", "format": "json", "path": path}}}} for i, path in enumerate(paths)]}


def _holder(path: Path) -> str:
    return json.loads((path / CLAIM_FILE).read_text())["jobRoot"]


def test_the_first_job_claims_and_restarts_of_it_keep_the_claim(tmp_path: Path) -> None:
    out = tmp_path / "out"
    root = JobRoot(tmp_path / "a")
    claim_sink_paths(root, _plan(f"file://{out}/../out"), "r1")
    assert _holder(out) == str(tmp_path / "a")
    claim_sink_paths(root, _plan(str(out)), "r2")  # the same job again (restart, standby, restore)
    assert json.loads((out / CLAIM_FILE).read_text())["runId"] == "r2"


def test_another_job_is_refused_and_no_claim_changes(tmp_path: Path) -> None:
    out, free = tmp_path / "out", tmp_path / "free"
    claim_sink_paths(JobRoot(tmp_path / "a"), _plan(str(out)), "r1")
    with pytest.raises(SinkPathClaimed) as refused:
        claim_sink_paths(JobRoot(tmp_path / "b"), _plan(str(free), str(out)), "r9")
    message = refused.value.render()
    assert f"which the job at {tmp_path / 'a'} writes" in message and "_spark_metadata" in message
    assert f"delete {out / CLAIM_FILE}" in message
    assert _holder(out) == str(tmp_path / "a") and not (free / CLAIM_FILE).exists()  # judged before any write


def test_a_fork_of_a_stopped_jobs_snapshot_takes_the_path_over_but_not_while_it_runs(tmp_path: Path) -> None:
    out, origin = tmp_path / "out", tmp_path / "a"
    claim_sink_paths(JobRoot(origin), _plan(str(out)), "r1")
    snapshot = origin / "snapshots" / "s-20261207T000000Z-0000"
    (origin / "RUN_LOCK").parent.mkdir(parents=True, exist_ok=True)
    (origin / "RUN_LOCK").write_text("{}")  # the origin still runs
    with pytest.raises(SinkPathClaimed):
        claim_sink_paths(JobRoot(tmp_path / "b"), _plan(str(out)), "r2", forked_from=str(snapshot))
    (origin / "RUN_LOCK").unlink()
    claim_sink_paths(JobRoot(tmp_path / "b"), _plan(str(out)), "r2", forked_from=f"file://{snapshot}")
    assert _holder(out) == str(tmp_path / "b")
    with pytest.raises(SinkPathClaimed):  # and the origin may not come back to it
        claim_sink_paths(JobRoot(origin), _plan(str(out)), "r3")


def test_a_claim_that_cannot_be_read_is_a_refusal_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / CLAIM_FILE).mkdir(parents=True)  # something else sits where the claim goes
    with pytest.raises(SinkPathClaimed, match=f"the sink claim {out / CLAIM_FILE} cannot be read"):
        claim_sink_paths(JobRoot(tmp_path / "a"), _plan(str(out)), "r1")
    (out / CLAIM_FILE).rmdir()
    (out / CLAIM_FILE).write_text("{not json")
    with pytest.raises(SinkPathClaimed, match="cannot be read"):
        claim_sink_paths(JobRoot(tmp_path / "a"), _plan(str(out)), "r1")


def test_other_connectors_are_not_claimed(tmp_path: Path) -> None:
    plan = {"nodes": [{"type": "stream-exec-sink_2", "table": {"identifier": "`k`", "resolvedTable": {
        "options": {"connector": "print", "path": str(tmp_path / "p")}}}}]}
    claim_sink_paths(JobRoot(tmp_path / "a"), plan, "r1")
    assert not (tmp_path / "p").exists()


def test_an_s3a_sink_path_is_claimed_on_the_bucket(tmp_path: Path, s3_store: S3Store) -> None:
    """Before, an s3a:// sink path was left unclaimed: two jobs on one bucket prefix lost rows as on a disk."""
    prefix = s3_store.prefix("out")
    out = s3_store.uri(prefix)
    claim_sink_paths(JobRoot(tmp_path / "a"), _plan(out), "r1")
    assert s3_store.keys(prefix) == [f"{prefix}/{CLAIM_FILE}"]
    claim_sink_paths(JobRoot(tmp_path / "a"), _plan(out + "/"), "r2")  # the same job again
    with pytest.raises(SinkPathClaimed) as refused:
        claim_sink_paths(JobRoot(tmp_path / "b"), _plan(out), "r9")
    message = refused.value.render()
    assert f"sink `s0` writes to {out}, which the job at {tmp_path / 'a'} writes" in message
    assert f"delete {out}/{CLAIM_FILE} and {out}/_spark_metadata" in message


def race_claims(tmp_path: Path, path: str, jobs: int) -> list[str]:
    """``jobs`` job roots claim ``path`` at the same moment; each one's outcome."""
    results = race(jobs, lambda i: claim_sink_paths(JobRoot(tmp_path / f"job{i}"), _plan(path), f"r{i}"))
    assert all(r is None or isinstance(r, SinkPathClaimed) for r in results), results
    return ["refused" if isinstance(r, SinkPathClaimed) else "claimed" for r in results]


@pytest.mark.parametrize("where", ["local", "s3"])
def test_of_jobs_starting_on_one_sink_path_at_once_exactly_one_gets_it(tmp_path: Path, request, where: str) -> None:
    if where == "local":
        out = str(tmp_path / "out")
    else:
        s3: S3Store = request.getfixturevalue("s3_store")
        out = s3.uri(s3.prefix("race"))
    for round_ in range(5):
        outcomes = race_claims(tmp_path, f"{out}/{round_}", 6)
        assert sorted(outcomes) == ["claimed"] + ["refused"] * 5, outcomes


DDL = """
CREATE TABLE src (a INT) WITH ('connector' = 'filesystem', 'path' = '{src}', 'format' = 'json');
CREATE TABLE snk (a INT) WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'json');
"""


def test_a_second_job_into_one_sink_path_is_refused_instead_of_losing_its_rows(tmp_path: Path, spark) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "1.json").write_text('{"a": 1}\n{"a": 2}\n')
    env = TableEnvironment()
    env.execute_sql(DDL.format(src=src, out=out))
    first = env.compile_plan_sql("INSERT INTO snk SELECT a FROM src")
    env.execute_plan(first, job_root=str(tmp_path / "one"), until_idle=True)
    assert len(committed_files(out)) == 1

    second = env.compile_plan_sql("INSERT INTO snk SELECT a * 10 FROM src")  # another job, the same path
    with pytest.raises(SinkPathClaimed, match="two jobs on one file-sink path lose rows"):
        env.execute_plan(second, job_root=str(tmp_path / "two"), until_idle=True)
    assert len(committed_files(out)) == 1 and not list((tmp_path / "two" / "runs").glob("*/checkpoints/*/commits/*"))

    (src / "2.json").write_text('{"a": 3}\n')  # the first job goes on writing it
    env.execute_plan(first, job_root=str(tmp_path / "one"), until_idle=True)
    rows = sorted(json.loads(line)["a"] for f in committed_files(out) for line in Path(f).read_text().splitlines())
    assert rows == [1, 2, 3]
