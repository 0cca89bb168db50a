"""LocalLauncher against the contract engine double: launch, observe batches, stop with a snapshot."""

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest

from planengine_operator.config import OperatorConfig
from planengine_operator.launchers.base import JobRef, ToolPending
from planengine_operator.launchers.local import DRIVER_RECORD, STANDBY_RECORD, LocalLauncher, pid_alive

ENGINE = str(Path(__file__).parent / "e2e" / "contract_engine.py")


@pytest.mark.timeout(60)
def test_launch_observe_stop_with_snapshot(tmp_path):
    src, out, root = tmp_path / "in", tmp_path / "out", tmp_path / "root"
    src.mkdir()
    for i in range(3):
        (src / f"{i:03d}.txt").write_text(f"row-{i}\n")
    config = OperatorConfig.model_validate({"launcher": "local", "jobRootBase": str(tmp_path), "engines": {
        "0.1": {"localCommand": [sys.executable, ENGINE, "--engine-version", "0.1", "--batch-interval", "0.05"]}}})
    launcher = LocalLauncher(config)
    job = JobRef("ns", "j", "uid", str(root), {})

    async def scenario():
        script = tmp_path / "job.sql"
        script.write_text(f"CREATE TABLE t WITH ('path' = '{src}'); CREATE TABLE s WITH ('path' = '{out}');")
        run = await launcher.run_tool(job, "0.1", "compile", ["compile", str(script), "-o", f"{root}/plan.json"])
        assert run.exit_code == 0 and json.loads((root / "plan.json").read_text())["planId"]
        await launcher.launch(job, "0.1", "r1", ["run", "--plan", f"{root}/plan.json", "--job-root", str(root)])
        deadline = time.monotonic() + 20
        while True:
            observed = await launcher.observe(job)
            if observed.healthy and observed.batches == 3:
                break
            assert time.monotonic() < deadline, observed
            await asyncio.sleep(0.1)
        assert observed.run_id == "r1" and observed.exception is None
        answer = await launcher.stop(job, snapshot=True, timeout=20)
        assert (await launcher.observe(job)).running is False
        manifest = json.loads((root / "snapshots" / answer["snapshot"] / "manifest.json").read_text())
        assert [q["lastBatchId"] for q in manifest["queries"].values()] == [2]
        rows = sorted(line for f in out.glob("batch-*.txt") for line in f.read_text().splitlines())
        assert rows == ["row-0\t0.1", "row-1\t0.1", "row-2\t0.1"]

    asyncio.run(scenario())


def test_engine_processes_do_not_inherit_interpreter_pins(monkeypatch):
    """Each engine build runs its own Python: PYSPARK_PYTHON of the operator (or of a test's in-process
    Spark) would make Spark's Python workers run another PySpark than the driver's JVM."""
    from planengine_operator.launchers.local import engine_env

    monkeypatch.setenv("PYSPARK_PYTHON", "/elsewhere/bin/python")
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", "/elsewhere/bin/python")
    env = engine_env(PLANENGINE_RUN_ID="r1")
    assert "PYSPARK_PYTHON" not in env and "PYSPARK_DRIVER_PYTHON" not in env
    assert env["PLANENGINE_RUN_ID"] == "r1" and env["PATH"] == os.environ["PATH"]


@pytest.mark.timeout(60)
def test_deleting_a_job_kills_its_standby_and_its_driver(tmp_path):
    """A job deleted mid-upgrade owns a driver and a warm standby (a whole JVM in a real engine): the delete
    handler must end both, or the standby outlives its SparkPlanJob with nobody left to observe it."""
    import kopf

    from planengine_operator import main

    root = tmp_path / "root"
    config = OperatorConfig.model_validate({"launcher": "local", "jobRootBase": str(tmp_path), "engines": {
        "0.1": {"localCommand": [sys.executable, ENGINE, "--engine-version", "0.1"]},
        # the standby only has to be a live process the launcher recorded; it never gets to be ready here
        "0.2": {"localCommand": [sys.executable, "-c", "import time; time.sleep(300)"]}}})
    launcher = LocalLauncher(config)
    memo = kopf.Memo(config=config, launcher=launcher)
    main.fill_memo(memo)
    job = JobRef("ns", "j", "uid", str(root), {})
    body = {"metadata": {"namespace": "ns", "name": "j", "uid": "uid"}, "status": {"jobRoot": str(root)}}

    async def scenario():
        script = tmp_path / "job.sql"
        script.write_text(f"CREATE TABLE t WITH ('path' = '{tmp_path}/in'); CREATE TABLE s WITH ('path' = "
                          f"'{tmp_path}/out');")
        (tmp_path / "in").mkdir()
        run = await launcher.run_tool(job, "0.1", "compile", ["compile", str(script), "-o", f"{root}/plan.json"])
        assert run.exit_code == 0
        await launcher.launch(job, "0.1", "r1", ["run", "--plan", f"{root}/plan.json", "--job-root", str(root)])
        deadline = time.monotonic() + 20
        while not (await launcher.observe(job)).healthy:  # the driver serves its status API: it runs
            assert time.monotonic() < deadline, "the driver never answered"
            await asyncio.sleep(0.1)
        with pytest.raises(ToolPending):
            await launcher.standby(job, "0.2", "r2", ["run"], timeout=30)
        driver = json.loads((root / DRIVER_RECORD).read_text())["pid"]
        standby = json.loads((root / STANDBY_RECORD).read_text())["pid"]
        assert pid_alive(driver) and pid_alive(standby)
        assert (await launcher.observe(job)).standby_run_id == "r2"
        await main.deleted(body=body, memo=memo)
        assert not pid_alive(standby) and not pid_alive(driver)
        assert not (root / STANDBY_RECORD).exists()
        assert (await launcher.observe(job)).standby_run_id is None

    asyncio.run(scenario())
