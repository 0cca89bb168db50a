"""A merged scan at run time: one read of a partitioned table serves INSERTs with different partitions and columns."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from planengine.api import TableEnvironment
from tests.runtime.test_executor_cases import sink_changelog


def test_two_inserts_over_different_partitions_and_columns_read_one_merged_scan(tmp_path: Path, spark) -> None:
    rows = [(1, "home", "ads", "2024-01-01"), (2, "cart", None, "2024-01-01"), (3, "home", "mail", "2024-01-02"),
            (4, "shop", "ads", "2024-01-03")]
    spark.createDataFrame(rows, "user_id BIGINT, page STRING, referrer STRING, dt STRING") \
        .write.partitionBy("dt").parquet(str(tmp_path / "src"))
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (user_id BIGINT, page STRING, referrer STRING, dt STRING) PARTITIONED BY (dt)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/src', 'format' = 'parquet');
        CREATE TABLE first_day (page STRING, user_id BIGINT)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/first_day', 'format' = 'changelog-json');
        CREATE TABLE second_day (page STRING, len BIGINT)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/second_day', 'format' = 'changelog-json')""")
    plan = env.compile_plan_sql("""EXECUTE STATEMENT SET BEGIN
        INSERT INTO first_day SELECT page, user_id FROM src WHERE dt = '2024-01-01';
        INSERT INTO second_day SELECT page, CAST(CHAR_LENGTH(page) AS BIGINT) FROM src WHERE dt = '2024-01-02';
        END;""")
    scans = [n for n in plan.data["nodes"] if n["type"].startswith("stream-exec-table-source-scan")]
    assert len(scans) == 1  # user_id, page and dt (referrer is read by nobody), both partitions
    assert [a["type"] for a in scans[0]["abilities"]] == ["FilterPushDown", "ProjectPushDown"]
    env.execute_plan(plan, job_root=str(tmp_path / "job"), until_idle=True)
    assert Counter(sink_changelog(spark, env, "first_day", tmp_path / "first_day")) == \
        Counter(["+I[home, 1]", "+I[cart, 2]"])
    assert sink_changelog(spark, env, "second_day", tmp_path / "second_day") == ["+I[home, 4]"]
