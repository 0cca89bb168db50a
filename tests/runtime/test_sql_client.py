"""The SQL client's run-time side: bounded SELECT previews, progress named by table, paced continuous runs."""

from __future__ import annotations

import io
import json
import re
import time
import urllib.request
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.client.reading import LineReader
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


def test_a_group_by_preview_shows_the_materialised_table_one_row_per_key(env: TableEnvironment) -> None:
    """Flink's default result mode, TABLE: the table the changes describe, not the changes."""
    result = env.execute_sql("SELECT page, COUNT(*) AS n FROM clicks GROUP BY page")[0]
    assert result.columns == ("page", "n")
    assert sorted(result.rows) == [("/cart", 1), ("/home", 3)]
    assert re.fullmatch(r"2 rows in the table, from \d+ changes", result.message), result.message
    # The row limit counts the table's rows; a row past it proves more follow.
    env.execute_sql("SET 'planengine.preview.max-rows' = '1'")
    result = env.execute_sql("SELECT page, COUNT(*) AS n FROM clicks GROUP BY page")[0]
    assert len(result.rows) == 1 and result.rows[0][0] in ("/cart", "/home")
    assert "stopped at the row limit, 'planengine.preview.max-rows' = 1; more rows follow" in result.message


def test_a_select_preview_stops_at_the_row_limit_and_shows_row_kinds(env: TableEnvironment) -> None:
    """CHANGELOG mode (Flink's key): every change with its row kind, cut at the row limit."""
    env.execute_sql("SET 'sql-client.execution.result-mode' = 'changelog'")
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


def typed_session(env: TableEnvironment, *statements: str, before_quit=None) -> str:  # type: ignore[no-untyped-def]
    """What the prompt printed for ``statements`` typed one per line, then QUIT (``before_quit(shell)`` first)."""
    out = io.StringIO()
    shell = Shell(env, out=out)
    lines = iter([*statements, "QUIT;"])

    def read_line(prompt: str) -> str:
        line = next(lines)
        if line == "QUIT;" and before_quit is not None:
            before_quit(shell)
        return line

    shell.interact(LineReader(read_line))
    return out.getvalue()


def test_a_session_never_continues_another_sessions_job_and_says_what_it_submitted(
        spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Sessions of ``planengine sql`` each have a jobs directory (``session_jobs_dir``): the same INSERT in a second
    session reads its input again rather than continuing the first one's job with nothing new to read. A job root
    the user named does continue, and says so. Every job statement names its run, plan, job root and status."""
    data = tmp_path / "clicks"
    data.mkdir()
    (data / "part-1.json").write_text("".join(json.dumps(r) + "\n" for r in CLICKS))
    insert = "INSERT INTO seen SELECT user_id, page FROM clicks;"

    def session(name: str, *statements: str, sink: str = "", **kwargs) -> str:  # type: ignore[no-untyped-def]
        """A session with its own jobs directory; plans name tables only, so each session's sink may be its own
        (``sink``, default: ``name``) while the plan, and so the job root a shared default would pick, is the same."""
        env = TableEnvironment()
        env.session_jobs_dir = str(tmp_path / name)
        return typed_session(env, "SET 'table.plan.compile.catalog-objects' = 'IDENTIFIER';",
                             f"CREATE TABLE clicks (user_id BIGINT, page STRING) WITH ('connector' = 'filesystem', "
                             f"'path' = '{data}', 'format' = 'json');",
                             f"CREATE TABLE seen (user_id BIGINT, page STRING) WITH ('connector' = 'filesystem', "
                             f"'path' = '{tmp_path / 'out' / (sink or name)}', 'format' = 'json');",
                             *statements, **kwargs)

    def rows(sink: str) -> int:
        return spark.read.schema("user_id BIGINT, page STRING").json(str(tmp_path / "out" / sink)).count()

    first = session("first", "SET 'planengine.until-idle' = 'true';", insert)
    [finished] = [line for line in first.splitlines() if "job r-" in line] or [first]
    assert re.fullmatch(rf"\[INFO\] Finished job r-\S+: plan [0-9a-f]{{12}}, job root {tmp_path}/first/[0-9a-f]{{16}}, "
                        r"no status port; stopped with snapshot s-\S+", finished), finished
    assert rows("first") == 4

    # A running job: submitted, then stopped with a snapshot when the session ends, saying how to go on.
    statuses: list[dict] = []

    def running(shell) -> None:  # type: ignore[no-untyped-def]
        shell.jobs[0].process_available()
        url = json.loads((Path(shell.jobs[0].job_root.path) / "driver.json").read_text())["url"]
        with urllib.request.urlopen(f"{url}/v1/status", timeout=10) as answer:
            statuses.append({**json.loads(answer.read()), "url": f"{url}/v1/status"})

    second = session("second", insert, before_quit=running)
    assert "resuming" not in second
    submitted = re.search(rf"\[INFO\] Submitted job (r-\S+): plan ([0-9a-f]{{12}}), job root ({tmp_path}/second/"
                          r"[0-9a-f]{16}), status (http://127\.0\.0\.1:\d+/v1/status)\n", second)
    assert submitted, second
    run_id, plan_id, root, status_url = submitted.groups()
    assert statuses[0]["runId"] == run_id and statuses[0]["url"] == status_url  # it answered while the job ran
    deadline = time.monotonic() + 10  # the port closes right after the stop, on its own thread
    while (Path(root) / "driver.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (Path(root) / "driver.json").exists()  # the stopped job's status port is gone from its root
    assert f"plan {plan_id}," in finished  # the first session's plan: run again from empty state, all input read
    assert rows("second") == 4
    assert re.search(rf"\[INFO\] job {run_id} stopped with snapshot s-\S+; `planengine run --plan {root}/plan.json "
                     rf"--job-root {root}` continues it", second), second

    # A job root the user named: the second run goes on from the first one's snapshot, and says so.
    named = ("SET 'planengine.until-idle' = 'true';", f"SET 'planengine.job-root' = '{tmp_path / 'named'}';", insert)
    assert "resuming" not in session("third", *named, sink="named")
    again = session("fourth", *named, sink="named")
    assert re.search(rf"\[INFO\] resuming the job in {tmp_path}/named/[0-9a-f]{{16}} from snapshot s-\S+\n"
                     rf"\[INFO\] Finished job r-\S+: plan {plan_id}, job root {tmp_path}/named/", again), again
    assert rows("named") == 4  # the third session's rows, none from the fourth: it had nothing new to read
    assert not (tmp_path / "third").exists() and not (tmp_path / "fourth").exists()
