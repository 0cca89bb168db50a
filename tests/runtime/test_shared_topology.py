"""The shared topology at run time: a node several sinks read runs once per micro-batch, with one state."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from tests.runtime.test_executor_cases import materialize, sink_changelog, write_rows

pytestmark = [pytest.mark.spark]

TWO_SINKS = """EXECUTE STATEMENT SET BEGIN
INSERT INTO counts SELECT k, COUNT(*) FROM src GROUP BY k;
INSERT INTO doubled SELECT k, cnt * 2 FROM (SELECT k, COUNT(*) AS cnt FROM src GROUP BY k);
END;"""


def _env(tmp_path: Path, **config: str) -> TableEnvironment:
    env = TableEnvironment(config)
    env.execute_sql(f"""
        CREATE TABLE src (k STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/src', 'format' = 'json');
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
        assert list(operators) == ["4_stream-exec-group-aggregate-2_fan-out"]
        assert len(operators["4_stream-exec-group-aggregate-2_fan-out"]) == 1
    else:  # what the shared topology replaces: the aggregate twice, once per sink query
        assert sorted(len(ops) for ops in operators.values()) == [1, 1]
    assert materialize(sink_changelog(spark, env, "counts", tmp_path / "counts")) == Counter(["+I[a, 2]", "+I[b, 1]"])
    assert materialize(sink_changelog(spark, env, "doubled", tmp_path / "doubled")) == \
        Counter(["+I[a, 4]", "+I[b, 2]"])
