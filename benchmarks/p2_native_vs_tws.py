"""P2 A/B/C: the P2 statement on the native group aggregate, the JVM processor and the Python operator.

    python benchmarks/p2_native_vs_tws.py [--src /tmp/planengine-p2/src-1000000-10000-8] [--rounds 2]
        [--variants native,jvm,tws]

The input is the one ``benchmarks/p2_pyflink.py`` generates. Variants, each compiled once:

* ``native``: into a keyed blackhole (``group-aggregate_3`` runs natively: no UPDATE_BEFORE needed);
* ``jvm``: into a blackhole without a primary key, which takes UPDATE_BEFORE, so the aggregate emits Flink's
  full per-record changelog (``-U``/``+U`` per input row) and ``group-aggregate_3`` runs the JVM processor;
* ``tws``: the ``jvm`` plan relabelled ``group-aggregate_1`` (always the Python transformWithState operator),
  so ``jvm`` vs ``tws`` is the same plan and the same changelog on the two operators.

All run in one SparkSession, alternating, each on a fresh job root, and only ``process_available()`` over the
whole input is timed (no JVM start, no snapshot), so the paths see the same machine load even on a shared
machine. Prints one line per run and the executed operator.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

from planengine.api import TableEnvironment
from planengine.plan import serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.runtime.engine.session import get_spark

STATEMENT = "INSERT INTO upsert_sink SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k"


def plans(src: str) -> tuple[TableEnvironment, dict[str, CompiledPlan]]:
    env = TableEnvironment()
    env.execute_sql(f"CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
                    "'format' = 'json'); CREATE TABLE upsert_sink (k STRING, c BIGINT, s BIGINT, "
                    "PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'blackhole'); "
                    "CREATE TABLE retract_sink (k STRING, c BIGINT, s BIGINT) WITH ('connector' = 'blackhole')")
    native = env.compile_plan_sql(STATEMENT)
    jvm = env.compile_plan_sql(STATEMENT.replace("upsert_sink", "retract_sink"))
    data = json.loads(re.sub(r',"strategy":"[A-Z_]+"', "", re.sub(r"group-aggregate([_-])\d+", r"group-aggregate\g<1>1",
                                                                  jvm.as_json())))
    data["planId"] = serde.compute_plan_id(data)
    return env, {"native": native, "jvm": jvm, "tws": CompiledPlan(data)}


def operator(executed: str) -> str:
    if "StateStoreSave" in executed:
        return "native StateStoreSave"
    if "TransformWithStateInP" in executed:
        return "Python transformWithState"
    return "JVM transformWithState" if "TransformWithState" in executed else "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default="/tmp/planengine-p2/src-1000000-10000-8")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", default="/tmp/planengine-p2/native-vs-tws")
    ap.add_argument("--variants", default="native,jvm,tws")
    args = ap.parse_args(argv)
    rows = sum(p.read_text(encoding="utf-8").count("\n") for p in Path(args.src).glob("*.json"))
    env, candidates = plans(args.src)
    get_spark()
    shutil.rmtree(args.work, ignore_errors=True)
    for r in range(args.rounds):
        for name in args.variants.split(","):
            plan = candidates[name]
            job = env.execute_plan(plan, job_root=f"{args.work}/{name}-{r}")
            load = os.getloadavg()[0]
            start = time.monotonic()
            job.process_available()
            seconds = time.monotonic() - start
            executed = job.queries[0].query._jsq.explainInternal(False)
            job.stop(snapshot=False)
            print(f"round {r} {name:<6} {seconds:7.1f} s {rows / seconds:>10,.0f} rows/s  load {load:5.1f}  "
                  f"{operator(executed)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
