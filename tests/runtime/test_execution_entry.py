"""The API, a session and the CLI run a plan through one entry point and land in the same job-root layout.

Before ``planengine.runtime.storage.job_root.resolve_job_root`` the session's ``planengine.job-root`` meant "a parent
of one job root per plan" for ``INSERT`` but "the job root itself" for ``execute_plan``; here all three
ways must produce the same tree (plan, one run with the same query uids, one snapshot), at the roots the
rule names.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from planengine.api import TableEnvironment
from planengine.cli import main as cli_main
from planengine.runtime.storage.job_root import ID_PATTERN, JobRoot, parse_run_id

DDL = """
CREATE TABLE src (a INT, b STRING) WITH ('connector' = 'filesystem', 'path' = '{dir}/src', 'format' = 'json');
CREATE TABLE snk (a INT, b STRING) WITH ('connector' = 'filesystem', 'path' = '{dir}/snk/{who}', 'format' = 'json');
"""
INSERT = "INSERT INTO snk SELECT a, UPPER(b) FROM src WHERE a > 1"


def layout(root: Path) -> dict:
    """The job root's shape with ids replaced by what they must be: plan id, run/snapshot ids, query uids."""
    job = JobRoot(root)
    (run,) = job.runs()
    (snapshot,) = job.snapshots()
    assert ID_PATTERN.match(run.run_id) and parse_run_id(run.run_id)
    assert snapshot.run_id == run.run_id
    return {
        "planId": json.loads(job.read_plan_text())["planId"],
        "top": sorted(p.name for p in root.iterdir() if not p.name.startswith(".")),
        "run": sorted(p.name for p in run.path.iterdir()),
        "uids": run.query_uids(),
        "snapshot": sorted(p.name for p in snapshot.path.iterdir()),
    }


def script(tmp: Path, who: str) -> str:
    return DDL.replace("{dir}", str(tmp)).replace("{who}", who)


def test_api_session_and_cli_land_in_the_same_job_root_layout(tmp_path: Path, spark, monkeypatch) -> None:
    monkeypatch.delenv("PLANENGINE_JOB_ROOT", raising=False)
    monkeypatch.delenv("PLANENGINE_RUN_ID", raising=False)
    monkeypatch.setenv("PLANENGINE_PROGRESS", "0")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "1.json").write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}\n')

    # CLI: planengine run --script --job-root DIR
    (tmp_path / "job.sql").write_text(script(tmp_path, "same") + INSERT + ";\n")
    cli_root = tmp_path / "cli"
    assert cli_main(["run", "--script", str(tmp_path / "job.sql"), "--job-root", str(cli_root), "--until-idle"]) == 0

    # Each way is another job writing the same sink path: free it as a user would (the path's claim and Spark's
    # log; runtime/storage/sink_claims.py), else the next job is refused rather than losing its rows.
    shutil.rmtree(tmp_path / "snk" / "same")

    # API: TableEnvironment.execute_plan(plan, job_root=DIR)
    env = TableEnvironment()
    env.execute_sql(script(tmp_path, "same"))
    plan = env.compile_plan_sql(INSERT)
    api_root = tmp_path / "api"
    env.execute_plan(plan, job_root=str(api_root), until_idle=True)

    # API without a job root, and a session's INSERT: both <planengine.job-root>/<plan id[:16]>
    jobs = tmp_path / "jobs"
    env.execute_sql(f"SET 'planengine.job-root' = '{jobs}'")
    shutil.rmtree(tmp_path / "snk" / "same")
    env.execute_plan(plan, until_idle=True)
    per_plan = jobs / plan.plan_id[:16]
    session_env = TableEnvironment()
    session_env.execute_sql(script(tmp_path, "session"))
    session_env.execute_sql(f"SET 'planengine.job-root' = '{jobs}'")
    session_env.execute_sql("SET 'planengine.until-idle' = 'true'")
    session_env.execute_sql(INSERT)
    session_plans = [p for p in jobs.iterdir() if p != per_plan]

    expected = layout(cli_root)
    assert expected["planId"] == plan.plan_id
    assert expected["top"] == ["plan.json", "runs", "snapshots"]
    assert expected["run"] == ["checkpoints", "run.json"]
    assert expected["uids"] and "manifest.json" in expected["snapshot"]
    assert layout(api_root) == expected
    assert layout(per_plan) == expected
    (session_root,) = session_plans  # another sink path, so another plan, in its own per-plan root
    assert {k: v for k, v in layout(session_root).items() if k != "planId"} == \
        {k: v for k, v in expected.items() if k != "planId"}
