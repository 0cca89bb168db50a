"""LocalLauncher's warm standby: detection of engines without it, failures, ready -> activate, discard.

The standby-capable engine here is a small status-API stand-in (no Spark; the real engine's standby is
covered by ``tests/runtime/test_cli_run.py`` and ``tests/operator/e2e/test_real_engine.py``)."""

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from planengine_operator.config import OperatorConfig
from planengine_operator.launchers.base import JobRef, LaunchError, ToolPending
from planengine_operator.launchers.local import STANDBY_RECORD, LocalLauncher, pid_alive

CONTRACT = str(Path(__file__).parent / "e2e" / "contract_engine.py")
STANDBY_ENGINE = '''
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
port = int(args[args.index("--status-port") + 1])
state = {"phase": "Standby", "runId": None, "from": None}
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.answer({"phase": state["phase"], "runId": state["runId"], "queries": [], "capabilities": ["standby"]})
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        state.update(phase="Running", runId=os.environ["PLANENGINE_RUN_ID"], **{"from": body["fromSnapshot"]})
        with open("started.json", "w") as f:
            json.dump({"runId": state["runId"], "fromSnapshot": state["from"],
                       "writerLock": json.load(open(os.environ["PLANENGINE_WRITER_LOCK"]))}, f)
        self.answer({"started": True, "runId": state["runId"]})
HTTPServer(("127.0.0.1", port), H).serve_forever()
'''


def launcher_for(tmp_path: Path, command: list[str]) -> tuple[LocalLauncher, JobRef]:
    config = OperatorConfig.model_validate({"launcher": "local", "jobRootBase": str(tmp_path),
                                            "engines": {"0.2": {"localCommand": command}}})
    root = tmp_path / "root"
    root.mkdir()
    return LocalLauncher(config), JobRef("ns", "j", "uid", str(root), {})


async def until_settled(launcher: LocalLauncher, job: JobRef, run_id: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await launcher.standby(job, "0.2", run_id, ["run", "--plan", "p.json", "--job-root", job.job_root],
                                          timeout=timeout)
        except ToolPending:
            assert time.monotonic() < deadline, "standby never settled"
            await asyncio.sleep(0.1)


@pytest.mark.timeout(60)
def test_engine_without_standby_is_detected_as_unsupported(tmp_path):
    launcher, job = launcher_for(tmp_path, [sys.executable, CONTRACT, "--engine-version", "0.2"])
    assert asyncio.run(until_settled(launcher, job, "r2")) == "unsupported"
    assert not (Path(job.job_root) / STANDBY_RECORD).exists()
    assert asyncio.run(launcher.observe(job)).standby_run_id is None


@pytest.mark.timeout(60)
def test_standby_that_dies_is_a_failure_with_its_exit_code(tmp_path):
    launcher, job = launcher_for(tmp_path, [sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"])
    with pytest.raises(LaunchError) as failure:
        asyncio.run(until_settled(launcher, job, "r2"))
    assert failure.value.reason == "StandbyFailed" and "code 3" in str(failure.value) and "boom" in str(failure.value)
    assert not (Path(job.job_root) / STANDBY_RECORD).exists()


@pytest.mark.timeout(60)
def test_ready_standby_is_activated_into_the_driver_and_others_are_discarded(tmp_path):
    engine = tmp_path / "standby_engine.py"
    engine.write_text(STANDBY_ENGINE)
    launcher, job = launcher_for(tmp_path, [sys.executable, str(engine)])
    root = Path(job.job_root)

    async def scenario():
        assert await until_settled(launcher, job, "r-old") == "ready"
        stale = json.loads((root / STANDBY_RECORD).read_text())["pid"]
        assert (await launcher.observe(job)).standby_run_id == "r-old"
        neighbour = JobRef("ns", "other", "uid2", job.job_root, {})  # a refused job on the same root
        assert (await launcher.observe(neighbour)).standby_run_id is None
        await launcher.discard_standby(neighbour)
        assert pid_alive(stale)  # not its standby
        assert await until_settled(launcher, job, "r2") == "ready"  # another run's standby is killed first
        assert not pid_alive(stale)
        record = json.loads((root / STANDBY_RECORD).read_text())
        observed = await launcher.observe(job)
        assert observed.standby_run_id == "r2" and observed.running is False
        started = await launcher.activate(job, "r2", f"{root}/snapshots/s1", timeout=10)
        assert started == {"name": str(record["pid"]), "statusUrl": record["statusUrl"]}
        assert json.loads((root / "started.json").read_text()) == {
            "runId": "r2", "fromSnapshot": f"{root}/snapshots/s1",
            "writerLock": {"runId": "r2", "job": "ns/j"}}  # the lock named the run before the start
        assert not (root / STANDBY_RECORD).exists()
        observed = await launcher.observe(job)
        assert observed.running and observed.run_id == "r2" and observed.standby_run_id is None
        assert await launcher.activate(job, "r2", f"{root}/snapshots/s1", timeout=10) == started  # repeatable
        with pytest.raises(LaunchError, match="gone"):
            await launcher.activate(job, "r3", None, timeout=10)
        await launcher.stop(job, snapshot=False, timeout=10)
        assert not pid_alive(record["pid"])

    asyncio.run(scenario())
