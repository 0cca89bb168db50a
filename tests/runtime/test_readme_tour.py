"""The README's tour runs as written: its job.sql, its shell commands in order, its prompt lines and its Python.

Only what cannot exist on a test machine is substituted (the `/data`, `/out` and `/jobs` paths, the database
URL and user, the status port); everything else is taken from README.md itself, so editing the tour without
keeping it runnable fails here. The JDBC sink writes to the PostgreSQL test server; the password is the
`${env:PG_PASSWORD}` reference the README uses, set in the environment of the commands.

The README's other blocks (and its tour's lines, parsed and partly run without Spark) are tests/docs' business;
its Kubernetes commands run against a real API server in tests/docs/test_docs_on_cluster.py.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from planengine.api import TableEnvironment
from planengine.client.shell import Shell

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
TOUR_SQL = re.search(r"```sql\n-- job\.sql\n(.*?)```", README, re.DOTALL).group(1)  # type: ignore[union-attr]
TOUR_SHELL = re.search(r"```bash\n(planengine compile .*?)```", README, re.DOTALL).group(1)  # type: ignore[union-attr]
TOUR_PROMPT = re.findall(r"^planengine> (.*?)(?:\s+--.*)?$", README, re.MULTILINE)
TOUR_PYTHON = re.search(r"```python\n(from planengine\.api import .*?)```", README, re.DOTALL).group(1)  # type: ignore[union-attr]

PAGES = ["/home", "/cart", "/search"]


def clicks(start_minute: int, n: int) -> str:
    rows = [{"user_id": i % 7, "page": PAGES[i % 3], "ts": f"2024-01-01 10:{start_minute + i // 20:02d}:{i % 60:02d}"}
            for i in range(n)]
    return "".join(json.dumps(r) + "\n" for r in rows)


def commands() -> list[list[str]]:
    lines = [line.split("#", 1)[0].strip() for line in TOUR_SHELL.splitlines()]
    return [shlex.split(line) for line in lines if line]


@pytest.mark.usefixtures("engine_process")
def test_the_readme_tour_runs_as_written(tmp_path: Path, postgres_db, spark) -> None:  # type: ignore[no-untyped-def]
    import psycopg

    with psycopg.connect(postgres_db.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE page_views (page TEXT PRIMARY KEY, hits BIGINT)")
    (tmp_path / "data" / "clicks").mkdir(parents=True)
    (tmp_path / "data" / "clicks" / "part-1.json").write_text(clicks(0, 60))
    local = {"/data/clicks": str(tmp_path / "data" / "clicks"), "/out/minute": str(tmp_path / "out" / "minute"),
             "jdbc:postgresql://db/shop": postgres_db.jdbc_url, "'username' = 'shop'":
             f"'username' = '{postgres_db.user}'"}
    sql = TOUR_SQL
    for written, here in local.items():
        assert written in sql
        sql = sql.replace(written, here)
    (tmp_path / "job.sql").write_text(sql)
    environ = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PG_PASSWORD": "not-needed-with-trust-auth"}
    jobs = str(tmp_path / "jobs" / "clicks")

    def planengine(args: list[str]) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "planengine.cli", *args], cwd=tmp_path, env=environ,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"planengine {' '.join(args)}: {done.stderr[-3000:]}"
        return done

    tour = commands()
    assert [c[:2] for c in tour] == [["planengine", "compile"], ["planengine", "explain"], ["planengine", "explain"],
                                     ["planengine", "check"], ["planengine", "run"], ["planengine", "snapshots"],
                                     ["planengine", "run"], ["planengine", "migrate"]]
    runs = 0
    for command in tour:
        args = [a.replace("/jobs/clicks", jobs) for a in command[1:]]
        if args[0] == "run":
            runs += 1
            if runs == 2:  # new input arrives while the job is stopped
                (tmp_path / "data" / "clicks" / "part-2.json").write_text(clicks(3, 40))
            snapshot = run_until_committed(args, tmp_path, environ, expected_views=60 if runs == 1 else 100,
                                           postgres_db=postgres_db)
            assert snapshot
            continue
        if args[0] == "migrate":
            shutil.copy(tmp_path / "plan.json", tmp_path / "old.json")
        done = planengine(args)
        if args[0] == "compile":
            plan = json.loads((tmp_path / "plan.json").read_text())
            views = next(n for n in plan["nodes"] if n["type"].startswith("stream-exec-sink")
                         and "page_views" in n["table"]["identifier"])
            assert views["table"]["resolvedTable"]["options"]["password"] == "${env:PG_PASSWORD}"
        elif args[0] == "explain" and "--json" in args:
            assert json.loads(done.stdout)
        elif args[0] == "explain":
            assert "Sink(table=[page_views])" in done.stdout and "changelogMode=[I,UA]" in done.stdout
        elif args[0] == "check":
            assert json.loads(done.stdout)["status"] == "compatible"
        elif args[0] == "snapshots":
            [line] = done.stdout.splitlines()
            assert json.loads(line)["complete"] is True
    assert (tmp_path / "new.json").is_file()

    # Exactly once across the stop and the restore: the upsert table holds every click once.
    with psycopg.connect(postgres_db.dsn) as conn:
        stored = dict(conn.execute("SELECT page, hits FROM page_views").fetchall())
    expected = Counter(json.loads(r)["page"] for f in ("part-1.json", "part-2.json")
                       for r in (tmp_path / "data" / "clicks" / f).read_text().splitlines())
    assert stored == dict(expected)


def run_until_committed(args: list[str], cwd: Path, environ: dict[str, str], *, expected_views: int,
                        postgres_db) -> str:  # type: ignore[no-untyped-def]
    """``planengine run ...`` as the README writes it (status port 0 = any), stopped with SIGTERM once the views
    sink holds ``expected_views`` clicks; returns the snapshot it stopped with."""
    import psycopg

    args = ["0" if previous == "--status-port" else a for previous, a in zip(["", *args], args)]
    if "--status-port" not in args:
        args += ["--status-port", "0"]
    proc = subprocess.Popen([sys.executable, "-m", "planengine.cli", *args], cwd=cwd, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            with psycopg.connect(postgres_db.dsn) as conn:
                total = conn.execute("SELECT COALESCE(SUM(hits), 0) FROM page_views").fetchone()[0]
            if total >= expected_views:
                break
            time.sleep(1)
        driver = json.loads((Path(args[args.index("--job-root") + 1]) / "driver.json").read_text())
        with urllib.request.urlopen(f"{driver['url']}/v1/status", timeout=30) as answer:
            status = json.loads(answer.read())
        # the sinks' queries by their tables, and the one query reading the clicks once for both (the plan's
        # shared topology: a fan-out at the watermark writing the channel both aggregates read)
        assert sorted(q["name"] for q in status["queries"]) == [
            "channel: watermark-assigner of clicks", "page_views", "per_minute"]
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    assert "[planengine] page_views: batch" in err  # progress names tables, not node uids
    return str(json.loads(out.strip().splitlines()[-1])["snapshot"])


def test_the_readme_prompt_lines_and_python_run(tmp_path: Path, spark, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "clicks").mkdir()
    (tmp_path / "clicks" / "part-1.json").write_text(clicks(0, 12))
    ddl = TOUR_SQL.split("EXECUTE STATEMENT SET")[0].replace("/data/clicks", str(tmp_path / "clicks"))
    ddl = ddl.replace("/out/minute", str(tmp_path / "minute"))
    env = TableEnvironment({"planengine.preview.timeout": "10 min"})
    env.execute_sql(ddl)
    out = io.StringIO()
    assert len(TOUR_PROMPT) == 5
    Shell(env, out=out).run_script(";\n".join(TOUR_PROMPT) + ";", "README")
    text = out.getvalue()
    assert re.search(r"\|\s+page \|\s+STRING \| TRUE \|", text)  # DESCRIBE
    assert re.search(r"\|\s+page \|\s+n \|\n", text) and "rows in the table, from" in text  # the preview
    assert "GroupAggregate(groupBy=[page]" in text and "changelogMode=[I,UB,UA]" in text  # EXPLAIN SELECT
    options = env.catalog_manager.get_table(("clicks",)).object.options_dict
    assert options["source.monitor-interval"] == "10 s" and env.config["table.exec.state.ttl"] == "1 h"

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tables.sql").write_text(ddl)
    exec(compile(TOUR_PYTHON, "README.md[python]", "exec"), {"__name__": "readme"})
    assert (tmp_path / "plan.json").is_file()

