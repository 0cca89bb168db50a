"""P2 A/B: the P2 statement on the native group aggregate vs. the same plan on transformWithState.

    python benchmarks/p2_native_vs_tws.py [--src /tmp/planengine-p2/src-1000000-10000-8] [--rounds 2]

The input is the one ``benchmarks/p2_pyflink.py`` generates. The plan is compiled once into a keyed blackhole
(``group-aggregate_2``, native); the TWS variant is the same plan relabelled ``group-aggregate_1`` (whose
strategy is always transformWithState). Both run in one SparkSession, alternating, each on a fresh job root,
and only ``process_available()`` over the whole input is timed (no JVM start, no snapshot), so the two paths
see the same machine load even on a shared machine. Prints one line per run and the executed plan kind.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

from planengine.api import TableEnvironment
from planengine.plan import serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.runtime.session import get_spark

STATEMENT = "INSERT INTO upsert_sink SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k"


def plans(src: str) -> tuple[TableEnvironment, dict[str, CompiledPlan]]:
    env = TableEnvironment()
    env.execute_sql(f"CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
                    "'format' = 'json'); CREATE TABLE upsert_sink (k STRING, c BIGINT, s BIGINT, "
                    "PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'blackhole')")
    native = env.compile_plan_sql(STATEMENT)
    data = json.loads(native.as_json().replace("group-aggregate_2", "group-aggregate_1")
                      .replace("group-aggregate-2_", "group-aggregate-1_").replace(',"strategy":"NATIVE"', ""))
    data["planId"] = serde.compute_plan_id(data)
    return env, {"native": native, "tws": CompiledPlan(data)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default="/tmp/planengine-p2/src-1000000-10000-8")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", default="/tmp/planengine-p2/native-vs-tws")
    args = ap.parse_args(argv)
    rows = sum(p.read_text(encoding="utf-8").count("\n") for p in Path(args.src).glob("*.json"))
    env, candidates = plans(args.src)
    get_spark()
    shutil.rmtree(args.work, ignore_errors=True)
    for r in range(args.rounds):
        for name, plan in candidates.items():
            job = env.execute_plan(plan, job_root=f"{args.work}/{name}-{r}")
            load = os.getloadavg()[0]
            start = time.monotonic()
            job.process_available()
            seconds = time.monotonic() - start
            executed = job.queries[0].query._jsq.explainInternal(False)
            job.stop(snapshot=False)
            kind = "StateStoreSave" if "StateStoreSave" in executed else "TransformWithState"
            print(f"round {r} {name:<6} {seconds:7.1f} s {rows / seconds:>10,.0f} rows/s  load {load:5.1f}  {kind}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
