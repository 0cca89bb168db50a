"""Cost of per-record watermarks: a TUMBLE window count with and without the ``_record_wm`` pass.

    python benchmarks/per_record_watermarks.py [--rows 1000000] [--keys 1000] [--rounds 2]

The statement (1 s tumbling windows, 1 s out-of-orderness, counted per key into a blackhole) is compiled once;
it gets ``watermark-assigner_2`` with ``"perRecordWatermark": true`` (an Arrow pass over every source row that
computes the watermark each row met inside its micro-batch, plus a filter before the native aggregation). The
"per-batch" variant is the same plan with the flag removed (one watermark per micro-batch, as version 1). Both
run alternately in one SparkSession, each on a fresh job root; only ``process_available()`` over the whole
input (one micro-batch) is timed, so the two see the same machine load. Input: ``--rows`` JSON rows, a tenth
of them 2 s behind the running maximum (late for Flink's rule).
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

from planengine.api import TableEnvironment
from planengine.plan import serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.runtime.engine.session import get_spark

STATEMENT = ("INSERT INTO counts SELECT k, window_start, COUNT(*) "
             "FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY k, window_start, window_end")


def generate(directory: Path, rows: int, keys: int) -> None:
    if directory.exists() and (directory / "done").exists():
        return
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    rnd = random.Random(7)
    base = 1_602_288_000_000  # 2020-10-10T00:00:00Z
    with open(directory / "part-0.json", "w", encoding="utf-8") as f:
        for i in range(rows):
            t = base + i * 2 - (2000 if i % 10 == 9 else 0)  # 500 rows per second, every tenth row 2 s behind
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t // 1000)) + f".{t % 1000:03d}"
            f.write(json.dumps({"k": f"k{rnd.randrange(keys)}", "ts": stamp}) + "\n")
    (directory / "done").touch()


def plans(src: Path) -> tuple[TableEnvironment, dict[str, CompiledPlan]]:
    env = TableEnvironment()
    env.execute_sql(f"CREATE TABLE src (k STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
                    f"WITH ('connector' = 'filesystem', 'path' = '{src}', 'format' = 'json'); "
                    "CREATE TABLE counts (k STRING, ws TIMESTAMP(3), c BIGINT) WITH ('connector' = 'blackhole')")
    per_record = env.compile_plan_sql(STATEMENT)
    data = json.loads(per_record.as_json())
    assert any(n.get("perRecordWatermark") for n in data["nodes"]), "the plan should carry per-record watermarks"
    for n in data["nodes"]:
        n.pop("perRecordWatermark", None)
    data["planId"] = serde.compute_plan_id(data)
    return env, {"per-record": per_record, "per-batch": CompiledPlan(data)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", default="/tmp/planengine-per-record-wm")
    args = ap.parse_args(argv)
    src = Path(args.work) / f"src-{args.rows}-{args.keys}"
    generate(src, args.rows, args.keys)
    env, candidates = plans(src)
    get_spark()
    for r in range(args.rounds):
        for name, plan in candidates.items():
            root = Path(args.work) / f"job-{name}-{r}"
            shutil.rmtree(root, ignore_errors=True)
            job = env.execute_plan(plan, job_root=str(root))
            load = os.getloadavg()[0]
            start = time.monotonic()
            job.process_available()
            seconds = time.monotonic() - start
            job.stop(snapshot=False)
            print(f"round {r} {name:<10} {seconds:7.1f} s {args.rows / seconds:>10,.0f} rows/s  load {load:5.1f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
