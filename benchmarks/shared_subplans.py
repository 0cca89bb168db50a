"""Shared sub-plans at run time: statement sets of 1, 2, 5, 10 sinks over one group aggregate of one source.

    python benchmarks/shared_subplans.py [--rows 1000000] [--keys 1000] [--sinks 1,2,5,10] [--rounds 2]
                                         [--topologies shared,per-sink]

Every sink reads the same ``SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k`` (each projects it differently) into a
blackhole keyed by ``k``. The statement set is compiled twice: with the shared topology (the default: one fan-out
query computes the aggregate once per micro-batch and writes every sink from ``foreachBatch``) and with
``planengine.plan.shared-queries = false`` (one query per sink, each reading the source and aggregating again, as
plans before format 2 run). Per run, on a fresh job root in one SparkSession, only ``process_available()`` over the
whole input (one micro-batch) is timed; then it reports

* rows read from the source: the ``numInputRows`` the queries' progress reports for the source directory,
  summed over the job's queries (goal: ``--rows`` whatever the number of sinks);
* state rows and bytes: the stateful operators' ``numRowsTotal`` and ``memoryUsedBytes`` from the progress,
  summed over the queries (goal: independent of the number of sinks);
* wall time (goal: 10 sinks at most 2x one sink).

A first untimed run (one sink, shared) warms up the JVM and the Python workers; compare rounds after the first.

Input: ``--rows`` JSON rows ``{k, v}`` over ``--keys`` keys, generated once under ``--work``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from planengine.api import TableEnvironment
from planengine.runtime.engine.session import get_spark, stop_spark

TOPOLOGIES = {"shared": "true", "per-sink": "false"}


def generate(directory: Path, rows: int, keys: int) -> None:
    if (directory / "done").exists():
        return
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    rnd = random.Random(7)
    with open(directory / "part-0.json", "w", encoding="utf-8") as f:
        for _ in range(rows):
            f.write(json.dumps({"k": f"k{rnd.randrange(keys)}", "v": rnd.randrange(100)}) + "\n")
    (directory / "done").touch()


def statement_set(sinks: int) -> str:
    inserts = [f"INSERT INTO out{i} SELECT k, cnt + {i}, total FROM "
               "(SELECT k, COUNT(*) AS cnt, SUM(v) AS total FROM src GROUP BY k);" for i in range(sinks)]
    return "EXECUTE STATEMENT SET BEGIN\n" + "\n".join(inserts) + "\nEND;"


def environment(src: Path, sinks: int, shared: str) -> TableEnvironment:
    env = TableEnvironment({"planengine.plan.shared-queries": shared})
    env.execute_sql(f"CREATE TABLE src (k STRING, v INT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
                    "'format' = 'json')")
    for i in range(sinks):
        env.execute_sql(f"CREATE TABLE out{i} (k STRING, c BIGINT, total INT, PRIMARY KEY (k) NOT ENFORCED) "
                        "WITH ('connector' = 'blackhole')")
    return env


def measure(job: Any, src: Path) -> dict[str, float]:
    """Rows read from ``src`` and state size, from every query's progress reports."""
    read = state_rows = state_bytes = 0
    for q in job.queries:
        progress = list(q.query.recentProgress)
        for p in progress:
            for source in p["sources"]:
                if str(src) in source["description"]:
                    read += int(source["numInputRows"])
        if progress:  # the state after the last batch
            for op in progress[-1].get("stateOperators", []):
                state_rows += int(op.get("numRowsTotal", 0))
                state_bytes += int(op.get("memoryUsedBytes", 0))
    return {"read": read, "state_rows": state_rows, "state_bytes": state_bytes, "queries": len(job.queries)}


def run_once(src: Path, root: Path, sinks: int, topology: str) -> tuple[float, dict[str, float]]:
    """One job over the whole input: the seconds ``process_available()`` took, and the measures."""
    env = environment(src, sinks, TOPOLOGIES[topology])
    plan = env.compile_plan_sql(statement_set(sinks))
    shutil.rmtree(root, ignore_errors=True)
    job = env.execute_plan(plan, job_root=str(root))
    start = time.monotonic()
    try:
        job.process_available()
        seconds = time.monotonic() - start
        return seconds, measure(job, src)
    finally:
        job.stop(snapshot=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--sinks", default="1,2,5,10")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--topologies", default="shared,per-sink")
    ap.add_argument("--work", default="/tmp/planengine-shared-subplans")
    args = ap.parse_args(argv)
    src = Path(args.work) / f"src-{args.rows}-{args.keys}"
    generate(src, args.rows, args.keys)
    get_spark()
    run_once(src, Path(args.work) / "job-warm-up", 1, "shared")
    print("round topology  sinks queries  seconds  rows read  state rows  state bytes  load", flush=True)
    try:
        for r in range(args.rounds):
            for n in (int(s) for s in args.sinks.split(",")):
                for topology in args.topologies.split(","):
                    load = os.getloadavg()[0]
                    seconds, m = run_once(src, Path(args.work) / f"job-{topology}-{n}-{r}", n, topology)
                    print(f"{r:>5} {topology:<9} {n:>5} {m['queries']:>7} {seconds:8.1f} {m['read']:>10,} "
                          f"{m['state_rows']:>11,} {m['state_bytes']:>12,} {load:5.1f}", flush=True)
    finally:
        stop_spark()
    return 0


if __name__ == "__main__":
    sys.exit(main())
