"""Exactly once through driver crashes: ``planengine run`` killed with SIGKILL mid-batch, then restarted.

Two jdbc sinks read the same monitored directory: ``events`` has no primary key (append: a batch applied
twice would duplicate rows) and ``latest`` upserts by key. They share the scan, so the plan records the shared
topology: one fan-out query reads each batch once and writes the two sinks one after the other from its
``foreachBatch``, each in its own transaction keyed by (sink uid, batch id). The sink pauses at a
fault-injection point (``PLANENGINE_TEST_JDBC_SINK_PAUSE``) and the test kills the whole driver process group
there; the first sink pausing holds the second back, so a kill falls *between* the two sinks' commits:

1. run A commits batch 0 in both sinks, then is killed inside the first sink's open transaction of batch 1
   (rows written, not committed; the second sink has not started batch 1);
2. run B replays batch 1 (PostgreSQL rolled the dead transaction back) into both sinks, then commits batch 2 in
   the first sink and is killed before the second sink writes it (and before Spark records batch 2 as done);
3. run C (``--until-idle``) re-plans batch 2: the first sink finds it in ``planengine_sink_commits`` and skips
   it, the second writes it.

The tables must then hold every input row exactly once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .pg import jdbc_options, pg_execute, pg_rows, write_json

pytestmark = pytest.mark.usefixtures("engine_process")

SCRIPT = """
CREATE TABLE src (id INT, k INT, v STRING)
  WITH ('connector' = 'filesystem', 'path' = '{dir}/src', 'format' = 'json', 'source.monitor-interval' = '1 s');
CREATE TABLE events (id INT, k INT, v STRING) WITH ({events});
CREATE TABLE latest (k INT, id INT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ({latest});
EXECUTE STATEMENT SET BEGIN
  INSERT INTO events SELECT id, k, v FROM src;
  INSERT INTO latest SELECT k, id, v FROM src;
END;
"""
TIMEOUT = 400.0


def start(script: Path, root: Path, *extra: str, pause: str | None = None) -> subprocess.Popen:
    """The driver, its output in files next to the job root (a pipe nobody reads could block it)."""
    logs = root.parent / "logs"
    logs.mkdir(exist_ok=True)
    n = len(list(logs.iterdir())) // 2
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("PLANENGINE_TEST_JDBC_SINK_PAUSE", None)
    if pause:
        env["PLANENGINE_TEST_JDBC_SINK_PAUSE"] = pause
    out, err = logs / f"{n}.out", logs / f"{n}.err"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "planengine.cli", "run", "--script", str(script),
                                 "--job-root", str(root), *extra], env=env, stdout=stdout, stderr=stderr,
                                start_new_session=True)
    proc.args = [out, err]  # where its output goes
    return proc


def stderr_of(proc: subprocess.Popen) -> str:
    return Path(proc.args[1]).read_text()[-4000:]


def wait_for(what: str, check, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if check():
            return
        if proc.poll() is not None:
            raise AssertionError(f"driver exited ({proc.returncode}) while waiting for {what}:\n"
                                 f"{stderr_of(proc)}")
        time.sleep(0.5)
    kill(proc)
    raise AssertionError(f"timed out waiting for {what}")


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL the driver's whole process group (Python driver, its JVM, Python workers): a pod dying."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def paused(markers: Path, prefix: str) -> int:
    """How many sink queries wait at a fault-injection point (``<phase>-<batch>-<query uid>`` files)."""
    return len(list(markers.glob(f"{prefix}-*"))) if markers.is_dir() else 0


def committed(db) -> list[tuple]:
    try:
        return pg_rows(db, "SELECT query_uid, batch_id FROM planengine_sink_commits ORDER BY 1, 2")
    except Exception:  # the sink creates the table on its first batch
        return []


def rows(n0: int, n1: int) -> list[dict]:
    return [{"id": i, "k": i % 4, "v": f"v{i}"} for i in range(n0, n1)]


def test_sigkill_mid_batch_then_restart_applies_every_batch_once(tmp_path: Path, postgres_db) -> None:
    pg_execute(postgres_db, "CREATE TABLE events (id INT, k INT, v TEXT)",
               "CREATE TABLE latest (k INT PRIMARY KEY, id INT, v TEXT)")
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT.format(dir=tmp_path, events=jdbc_options(postgres_db, "events"),
                                    latest=jdbc_options(postgres_db, "latest")))
    root, markers = tmp_path / "root", tmp_path / "markers"
    write_json(tmp_path / "src", "a", rows(0, 5))

    # Run A: first commit, then killed inside the first sink's transaction of batch 1.
    a = start(script, root, pause=f"before-commit:1:{markers}")
    wait_for("batch 0 of both sinks in PostgreSQL", lambda: len(committed(postgres_db)) == 2, a)
    write_json(tmp_path / "src", "b", rows(5, 9))
    wait_for("batch 1 written but not committed", lambda: paused(markers, "before-commit-1") == 1, a)
    time.sleep(2)  # the second sink is behind the first in the same foreachBatch: it must not get to batch 1
    assert paused(markers, "before-commit-1") == 1
    kill(a)
    assert [b for _, b in committed(postgres_db)] == [0, 0]
    assert sorted(r[0] for r in pg_rows(postgres_db, "SELECT id FROM events")) == list(range(5))

    # Run B: replays batch 1; commits batch 2 in the first sink only, killed before Spark's commit log has it.
    b = start(script, root, pause=f"after-commit:2:{markers}")
    wait_for("batch 1 replayed", lambda: len(committed(postgres_db)) == 4, b)
    write_json(tmp_path / "src", "c", rows(9, 12))
    wait_for("batch 2 committed in PostgreSQL", lambda: paused(markers, "after-commit-2") == 1, b)
    kill(b)
    per_sink = sorted(tuple(n for uid, n in committed(postgres_db) if uid == sink)
                      for sink in {uid for uid, _ in committed(postgres_db)})
    assert per_sink == [(0, 1), (0, 1, 2)]  # the kill fell between the two sinks' commits of batch 2

    # Run C: until idle; batch 2 is planned again and skipped where PostgreSQL has it.
    c = start(script, root, "--until-idle")
    assert c.wait(timeout=TIMEOUT) == 0, stderr_of(c)
    assert json.loads(Path(c.args[0]).read_text().strip().splitlines()[-1])["snapshot"]

    events = sorted(pg_rows(postgres_db, "SELECT id, k, v FROM events"))
    assert events == [(r["id"], r["k"], r["v"]) for r in rows(0, 12)]  # each row exactly once
    latest = pg_rows(postgres_db, "SELECT k, id, v FROM latest ORDER BY k")
    assert latest == [(k, i, f"v{i}") for k, i in ((0, 8), (1, 9), (2, 10), (3, 11))]
    batches = committed(postgres_db)
    assert sorted(n for _, n in batches) == [0, 0, 1, 1, 2, 2]
