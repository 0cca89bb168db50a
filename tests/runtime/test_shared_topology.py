"""The shared topology at run time: a node several sinks read runs once per micro-batch, with one state."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from tests.runtime.test_executor_cases import materialize, sink_changelog, write_rows

TWO_SINKS = """EXECUTE STATEMENT SET BEGIN
INSERT INTO counts SELECT k, COUNT(*) FROM src GROUP BY k;
INSERT INTO doubled SELECT k, cnt * 2 FROM (SELECT k, COUNT(*) AS cnt FROM src GROUP BY k);
END;"""


def _env(tmp_path: Path, **config: str) -> TableEnvironment:
    env = TableEnvironment(config)
    env.execute_sql(f"""
        CREATE TABLE src (k STRING, v INT)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/src', 'format' = 'json');
        CREATE TABLE counts (k STRING, cnt BIGINT)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/counts', 'format' = 'changelog-json');
        CREATE TABLE doubled (k STRING, twice BIGINT)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/doubled', 'format' = 'changelog-json')""")
    return env


def _manifest(job_root: Path, snapshot_id: str) -> dict:
    return json.loads((job_root / "snapshots" / snapshot_id / "manifest.json").read_text())


def _stateful_operators(manifest: dict) -> dict[str, list[str]]:
    """Query uid -> the names of its stateful operators, as the snapshot's recorded state layout lists them."""
    return {uid: [op["name"] for op in (q.get("stateLayout") or {}).get("operators", {}).values()]
            for uid, q in manifest["queries"].items()}


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "one-query-per-sink"])
def test_a_group_aggregate_read_by_two_sinks_has_one_state_store_in_the_snapshot(tmp_path: Path, spark,
                                                                                  shared: bool) -> None:
    env = _env(tmp_path, **({} if shared else {"planengine.plan.shared-queries": "false"}))
    write_rows(tmp_path / "src", "rows", [{"k": "a", "v": 1}, {"k": "b", "v": 2}, {"k": "a", "v": 3}])
    plan = env.compile_plan_sql(TWO_SINKS)
    assert plan.data["formatVersion"] == (2 if shared else 1)
    job_root = tmp_path / "job"
    result = env.execute_plan(plan, job_root=str(job_root), until_idle=True)
    operators = _stateful_operators(_manifest(job_root, result.snapshot_id))
    if shared:
        # one query, the aggregate's: its state is the only state of the job
        assert list(operators) == ["4_stream-exec-group-aggregate-4_fan-out"]
        assert len(operators["4_stream-exec-group-aggregate-4_fan-out"]) == 1
    else:  # what the shared topology replaces: the aggregate twice, once per sink query
        assert sorted(len(ops) for ops in operators.values()) == [1, 1]
    assert materialize(sink_changelog(spark, env, "counts", tmp_path / "counts")) == Counter(["+I[a, 2]", "+I[b, 1]"])
    assert materialize(sink_changelog(spark, env, "doubled", tmp_path / "doubled")) == \
        Counter(["+I[a, 4]", "+I[b, 2]"])


WINDOW_AND_FILTER = """EXECUTE STATEMENT SET BEGIN
INSERT INTO windows SELECT k, window_start, window_end, COUNT(*)
  FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end;
INSERT INTO big SELECT k, v FROM ev WHERE v >= 10;
END;"""


def _event_env(tmp_path: Path, **config: str) -> TableEnvironment:
    env = TableEnvironment(config)
    env.execute_sql(f"""
        CREATE TABLE ev (k STRING, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/ev', 'format' = 'json');
        CREATE TABLE windows (k STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), cnt BIGINT)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/windows', 'format' = 'changelog-json');
        CREATE TABLE big (k STRING, v INT)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/big', 'format' = 'changelog-json')""")
    return env


def _rows_read_from(job, directory: Path) -> list[int]:
    """Per query of the job that reads the file source over ``directory``, the rows it read (progress reports)."""
    counts = []
    for q in job.queries:
        reads = [int(source["numInputRows"]) for progress in q.query.recentProgress for source in progress["sources"]
                 if f"{directory}]" in source["description"] or f"{directory}/]" in source["description"]]
        if reads:
            counts.append(sum(reads))
    return sorted(counts)


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "one-query-per-sink"])
def test_a_source_read_by_a_window_and_a_filter_is_read_once_and_its_snapshot_checks(tmp_path: Path, spark,
                                                                                     shared: bool) -> None:
    from planengine.plan.restore import INCOMPATIBLE, CheckReport
    from planengine.runtime.state_check import check_snapshot_state

    env = _event_env(tmp_path, **({} if shared else {"planengine.plan.shared-queries": "false"}))
    rows = [{"k": "a", "v": 1, "ts": "2020-10-10 00:00:01"}, {"k": "a", "v": 10, "ts": "2020-10-10 00:00:04"},
            {"k": "b", "v": 20, "ts": "2020-10-10 00:00:12"}]
    write_rows(tmp_path / "ev", "rows", rows)
    plan = env.compile_plan_sql(WINDOW_AND_FILTER)
    job = env.execute_plan(plan, job_root=str(tmp_path / "job"))
    try:
        job.process_available()
        # shared: one query reads the file; else each sink's query reads it, the filter's with `v >= 10` pushed
        # into the JSON scan (its projection of the per-record watermark column is unused and pruned), so 2 rows
        assert _rows_read_from(job, tmp_path / "ev") == ([3] if shared else [2, 3])
        # progress names tables, never node uids: the shared query is the window's channel plus the filter's sink
        names = sorted(q["name"] for q in job.status()["queries"])
        assert names == (["big, channel: watermark-assigner of ev"] if shared else ["big", "windows"]) + \
            (["windows"] if shared else [])
    finally:
        snapshot = job.stop(snapshot=True)
    assert sink_changelog(spark, env, "windows", tmp_path / "windows") == ["+I[a, 2020-10-10T00:00, "
                                                                            "2020-10-10T00:00:10, 2]"]
    assert Counter(sink_changelog(spark, env, "big", tmp_path / "big")) == Counter(["+I[a, 10]", "+I[b, 20]"])
    if shared:
        manifest = _manifest(tmp_path / "job", snapshot)
        assert sorted(manifest["queries"]) == ["2_stream-exec-watermark-assigner-3_fan-out",
                                               "7_stream-exec-sink-2_sink"]
        # the channel travels inside its producer's checkpoint
        assert (tmp_path / "job" / "snapshots" / snapshot / "checkpoints" / "2_stream-exec-watermark-assigner-3_fan-out"
                / "channel" / "_spark_metadata").is_dir()
        report = CheckReport(plan_id=plan.plan_id)
        check_snapshot_state(plan.data, str(tmp_path / "job" / "snapshots" / snapshot), report, spark=spark)
        assert [r["message"] for r in report.reasons if r["status"] == INCOMPATIBLE] == []


def test_a_fan_out_failing_between_its_sinks_replays_the_batch_and_each_sink_has_it_once(
        tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fan-out writes its sinks one after the other inside one ``foreachBatch``: a failure after the first
    sink committed batch 1 and before the second wrote it makes Spark replay batch 1 (same offsets, the state of
    batch 0). The first sink must skip it (its manifest has it), the second must write it: once each."""
    from planengine.runtime.engine.executor import Job

    env = _env(tmp_path)
    write_rows(tmp_path / "src", "first", [{"k": "a", "v": 1}, {"k": "b", "v": 2}])
    plan = env.compile_plan_sql(TWO_SINKS)
    fenced: list[int] = []
    real_fence = Job.fence

    def fence(self: Job, batch_id: int = -1) -> None:
        real_fence(self, batch_id)
        fenced.append(batch_id)
        # batch 1: the fan-out's own fence, then one per sink before it commits; fail before the second sink,
        # once, as a transient failure (the job restarts the query from its checkpoint, as after a lost worker)
        if fenced.count(1) == 3:
            raise RuntimeError("CANNOT_OPEN_SOCKET: injected between the fan-out's sinks")

    monkeypatch.setattr(Job, "fence", fence)
    job = env.execute_plan(plan, job_root=str(tmp_path / "job"))
    try:
        job.process_available()
        write_rows(tmp_path / "src", "second", [{"k": "a", "v": 3}, {"k": "c", "v": 4}])
        job.process_available()
        assert len(job.queries) == 1 and job.queries[0].restarts >= 1  # the injected failure, replayed
        assert fenced.count(1) >= 6  # batch 1 ran twice: fan-out + two sinks, then again
    finally:
        job.stop(snapshot=False)
    counts = sink_changelog(spark, env, "counts", tmp_path / "counts")
    doubled = sink_changelog(spark, env, "doubled", tmp_path / "doubled")
    # every change exactly once: batch 0's two inserts, batch 1's update of a and insert of c
    assert Counter(counts) == Counter(["+I[a, 1]", "+I[b, 1]", "-U[a, 1]", "+U[a, 2]", "+I[c, 1]"])
    assert Counter(doubled) == Counter(["+I[a, 2]", "+I[b, 2]", "-U[a, 2]", "+U[a, 4]", "+I[c, 2]"])
