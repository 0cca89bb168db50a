"""Time from ``planengine run --plan P`` to the first committed batch.

This is what a user (and the operator's stability gate) waits for after every start, restart and upgrade,
so it is measured through the real CLI in a fresh process, exactly as the operator launches it: a plan
compiled beforehand, an empty job root, input already present. The clock starts just before the process is
spawned and stops when the first ``commits/<n>`` file of any query appears under the run; the split shows
where the time goes: process + imports + JVM + ``SparkSession`` (until the run's ``run.json`` exists, which
the executor writes once the session is up and the plan is translated) and the first micro-batch (until the
first commit). The time until *every* query committed is reported too, because a statement set's queries
start one after another.

Two plans: the ``make run`` statement set (3 queries: two TWS group aggregates and a native window count)
and a stateless one (filter + projection into a file sink).

    .venv/bin/python -m benchmarks.first_batch [--repeats 5]

writes ``benchmarks/results/first_batch.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from examples.clicks.main import DATA, DDL, PROGRAM

REPO = Path(__file__).resolve().parents[1]
PLANENGINE = REPO / ".venv" / "bin" / "planengine"
RESULTS = REPO / "benchmarks" / "results" / "first_batch.md"

STATELESS = """
INSERT INTO pages_seen SELECT user_id, UPPER(page) FROM clicks WHERE user_id % 2 = 0;
"""
STATELESS_DDL = """
CREATE TABLE pages_seen (user_id BIGINT, page STRING)
  WITH ('connector' = 'filesystem', 'path' = '{work}/out/pages_seen', 'format' = 'json');
"""


def compile_plan(work: Path, sql: str) -> Path:
    script = work / "job.sql"
    script.write_text(sql)
    plan = work / "plan.json"
    subprocess.run([str(PLANENGINE), "compile", str(script), "-o", str(plan)], check=True,
                   stdout=subprocess.DEVNULL)
    return plan


def first_file(pattern: str, root: Path) -> Path | None:
    return next(iter(sorted(root.glob(pattern))), None)


def measure_once(plan: Path, work: Path, queries: int, timeout: float = 300.0) -> dict[str, float]:
    """One cold start: spawn, wait for run.json, the first commit, then every query's first commit."""
    job_root = work / f"job-{time.monotonic_ns()}"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    proc = subprocess.Popen([str(PLANENGINE), "run", "--plan", str(plan), "--job-root", str(job_root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    marks: dict[str, float] = {}
    try:
        while time.perf_counter() - start < timeout:
            if proc.poll() is not None:
                raise RuntimeError(f"planengine run exited early with {proc.returncode}")
            now = time.perf_counter() - start
            if "session" not in marks and first_file("runs/*/run.json", job_root):
                marks["session"] = now
            commits = {p.parent.parent.name for p in job_root.glob("runs/*/checkpoints/*/commits/0")}
            if commits and "first" not in marks:
                marks["first"] = now
            if len(commits) >= queries:
                marks["all"] = now
                break
            time.sleep(0.05)
        else:
            raise TimeoutError(f"no commit from every query within {timeout} s")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    marks.setdefault("session", marks["first"])
    return marks


def run_case(name: str, ddl: str, program: str, queries: int,
             repeats: int) -> tuple[str, int, list[dict[str, float]]]:
    work = Path(tempfile.mkdtemp(prefix="first-batch-"))
    try:
        (work / "input").mkdir()
        for f in sorted(DATA.glob("*.json")):
            shutil.copy(f, work / "input" / f.name)
        plan = compile_plan(work, ddl.format(work=work) + program)
        runs = [measure_once(plan, work, queries) for _ in range(repeats)]
        return name, queries, runs
    finally:
        shutil.rmtree(work, ignore_errors=True)


def median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def report(cases: list[tuple[str, int, list[dict[str, float]]]], repeats: int, load: tuple[float, ...]) -> str:
    lines = [
        "# Time from `planengine run --plan` to the first committed batch",
        "",
        f"Command: `.venv/bin/python -m benchmarks.first_batch --repeats {repeats}`; "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; 1-min load average before/after: {load[0]:.2f} / {load[1]:.2f}.",
        "",
        "Each run is a fresh `planengine run --plan P --job-root <empty>` process (cold JVM, as the operator "
        "starts it) with the bundled clicks input already present. *session* = process spawn until the run's "
        "`run.json` (SparkSession up, plan translated); *first commit* = until the first `commits/0` of any "
        "query; *all queries* = until every query has committed batch 0. Medians of the runs.",
        "",
        "| plan | queries | session (s) | first commit (s) | all queries (s) | runs: first commit (s) |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, queries, runs in cases:
        each = ", ".join(f"{r['first']:.1f}" for r in runs)
        lines.append(f"| {name} | {queries} | {median(runs, 'session'):.1f} | {median(runs, 'first'):.1f} | "
                     f"{median(runs, 'all'):.1f} | {each} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    cases = [
        run_case("stateless (filter + projection -> json files)", DDL + STATELESS_DDL, STATELESS, 1, args.repeats),
        run_case("make run statement set", DDL, PROGRAM, 3, args.repeats),
    ]
    text = report(cases, args.repeats, (load_before, os.getloadavg()[0]))
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
