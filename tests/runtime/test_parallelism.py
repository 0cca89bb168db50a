"""The job's max parallelism: Spark's shuffle partitions come from the plan, not from the session of the day.

Spark splits every state store into ``spark.sql.shuffle.partitions`` partitions and a checkpoint keeps that
number for good, so the number is decided when the plan is compiled (``pipeline.max-parallelism``) and a
run applies it before its queries start, whatever the driver's settings say.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.errors import UserError
from planengine.runtime.engine.session import SHUFFLE_PARTITIONS_KEY

DDL = """
CREATE TABLE clicks (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '{dir}/in', 'format' = 'json');
CREATE TABLE per_window (window_start TIMESTAMP(3), cnt BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '{dir}/out', 'format' = 'json');
"""
INSERT = ("INSERT INTO per_window SELECT window_start, COUNT(*) AS cnt FROM TABLE(TUMBLE(TABLE clicks, "
          "DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end")


def compile_plan(tmp: Path, **options: str):
    env = TableEnvironment(options)
    env.execute_sql(DDL.replace("{dir}", str(tmp)))
    return env.compile_plan_sql(INSERT)


def execute(plan, job_root: Path) -> None:
    TableEnvironment().execute_plan(plan, job_root=str(job_root), until_idle=True)


def state_partitions(job_root: Path) -> set[int]:
    """Partition directories of every stateful operator in every run's checkpoints."""
    found = set()
    for partition in job_root.glob("runs/*/checkpoints/*/state/*/*"):
        if partition.is_dir() and partition.name.isdigit():
            found.add(int(partition.name))
    return found


def test_max_parallelism_is_recorded_only_when_set(tmp_path):
    assert compile_plan(tmp_path, **{"pipeline.max-parallelism": "3"}).data["config"][
        "pipeline.max-parallelism"] == "3"
    assert "pipeline.max-parallelism" not in compile_plan(tmp_path).data["config"]  # old plans keep their bytes


@pytest.mark.parametrize("value", ["0", "many", "-2", "40000"])
def test_a_bad_max_parallelism_says_what_it_is(tmp_path, value):
    # Checked where every session option is (planengine.config): when the session gets it, before planning.
    with pytest.raises(UserError, match=r"for option 'pipeline\.max-parallelism': expected a whole number") as error:
        compile_plan(tmp_path, **{"pipeline.max-parallelism": value})
    assert "shuffle" in error.value.render()


@pytest.fixture
def session_partitions(spark):
    """Leave the shared session's shuffle partitions as they were (other tests build queries on it)."""
    before = spark.conf.get(SHUFFLE_PARTITIONS_KEY)
    yield spark
    spark.conf.set(SHUFFLE_PARTITIONS_KEY, before)


def test_runs_use_the_plans_partitions_whatever_the_session_says(tmp_path, session_partitions):
    spark = session_partitions
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text("".join(
        json.dumps({"id": i, "ts": f"2026-01-01 00:00:{i:02d}.000"}) + "\n" for i in range(25)))
    recorded = compile_plan(tmp_path / "a", **{"pipeline.max-parallelism": "3"})
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "in").symlink_to(tmp_path / "in")
    spark.conf.set(SHUFFLE_PARTITIONS_KEY, "5")  # a driver configured otherwise
    execute(recorded, tmp_path / "a" / "job")
    assert state_partitions(tmp_path / "a" / "job") == {0, 1, 2}

    legacy = compile_plan(tmp_path / "b")  # records nothing: the 2 every plan ran with before
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "in").symlink_to(tmp_path / "in")
    spark.conf.set(SHUFFLE_PARTITIONS_KEY, "5")
    execute(legacy, tmp_path / "b" / "job")
    assert state_partitions(tmp_path / "b" / "job") == {0, 1}
    windows = [json.loads(line) for f in (tmp_path / "b" / "out").glob("part-*") for line in f.read_text().split("\n")
               if line.strip()]
    assert sorted(w["cnt"] for w in windows) == [10, 10]  # windows 0 and 10 closed by the watermark (24 s - 1 s)
