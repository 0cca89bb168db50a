"""The SQL client's run-time side: bounded SELECT previews, progress named by table, paced continuous runs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.client.shell import Shell

CLICKS = [
    {"user_id": 1, "page": "/home", "ts": "2024-01-01 10:00:01"},
    {"user_id": 2, "page": "/cart", "ts": "2024-01-01 10:00:30"},
    {"user_id": 1, "page": "/home", "ts": "2024-01-01 10:01:10"},
    {"user_id": 3, "page": "/home", "ts": "2024-01-01 10:02:10"},
]


@pytest.fixture
def env(spark, tmp_path: Path) -> TableEnvironment:  # type: ignore[no-untyped-def]
    data = tmp_path / "clicks"
    data.mkdir()
    (data / "part-1.json").write_text("".join(json.dumps(r) + "\n" for r in CLICKS))
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE clicks (user_id BIGINT, page STRING, ts TIMESTAMP(3),
          WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{data}', 'format' = 'json');
        SET 'planengine.preview.timeout' = '5 min';
    """)
    return env


def test_a_select_previews_every_window_of_bounded_input(env: TableEnvironment) -> None:
    """The input is processed, then event time ends (as when a bounded source finishes): the last window fires."""
    out = io.StringIO()
    Shell(env, out=out).run_script(
        "SELECT window_start, page, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), "
        "INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, page;", "test")
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["+----+-------------------------+-------+---+",
                         "| op |            window_start |  page | n |",
                         "+----+-------------------------+-------+---+"]
    assert sorted(lines[3:7]) == [  # one drained batch: no order among its rows
        "| +I | 2024-01-01 10:00:00.000 | /cart | 1 |", "| +I | 2024-01-01 10:00:00.000 | /home | 1 |",
        "| +I | 2024-01-01 10:01:00.000 | /home | 1 |", "| +I | 2024-01-01 10:02:00.000 | /home | 1 |"]
    assert lines[7:] == ["+----+-------------------------+-------+---+", "Received a total of 4 rows"]
    assert env.execute_sql("SHOW TABLES")[0].rows == [("clicks",)]


def test_a_select_preview_stops_at_the_row_limit_and_shows_row_kinds(env: TableEnvironment) -> None:
    env.execute_sql("SET 'planengine.preview.max-rows' = '2'")
    result = env.execute_sql("SELECT page, COUNT(*) AS n FROM clicks GROUP BY page")[0]
    assert result.columns == ("op", "page", "n")
    assert len(result.rows) == 2 and {r[0] for r in result.rows} <= {"+I", "-U", "+U"}
    assert result.rows[0][0] == "+I"
    assert "stopped at the row limit, 'planengine.preview.max-rows' = 2" in result.message


def test_progress_names_tables_and_continuous_runs_use_the_trigger_interval(
        env: TableEnvironment, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANENGINE_PROGRESS", "1")
    env.execute_sql(f"""
        CREATE TABLE per_page (page STRING, n BIGINT, PRIMARY KEY (page) NOT ENFORCED)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "out"}', 'format' = 'changelog-json');
        SET 'pipeline.trigger-interval' = '2 s';
    """)
    plan = env.compile_plan_sql("INSERT INTO per_page SELECT page, COUNT(*) FROM clicks GROUP BY page")
    assert plan.data["config"]["pipeline.trigger-interval"] == "2 s"
    job = env.execute_plan(plan, job_root=str(tmp_path / "job"))
    try:
        [query] = job.queries
        assert "ProcessingTimeTrigger(2000)" in str(query.query._jsq.streamingQuery().trigger())
        job.process_available()
        assert job.status()["queries"][0]["name"] == "per_page"
    finally:
        job.stop(snapshot=False)
    err = capsys.readouterr().err
    assert "[planengine] per_page: batch 0 committed, 4 rows" in err
    assert "_stream-exec-sink" not in err
