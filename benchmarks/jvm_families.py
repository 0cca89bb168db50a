"""Per operator family: the JVM processor vs the Python transformWithState operator, same plan, same input.

    python benchmarks/jvm_families.py [--rows 1000000] [--keys 10000] [--rounds 2]
        [--families aggregate-retract,dedup,normalize,materialize,join,rank]

Each family is one statement compiled once by today's engine (its stateful node runs on the JVM: the newest
node versions); the ``tws`` variant is the same plan with that node relabelled to version 1, which always runs
the Python ``transformWithStateInPandas`` operator, so both variants compute the same changelog from the same
files. Families (``--rows`` input rows over ``--keys`` keys, JSON-lines or changelog-json files):

* ``aggregate-retract``: aggregate over aggregate (``COUNT`` per key, then ``COUNT`` per count): the outer
  aggregate retracts on every input row (``group-aggregate_3``, strategy ``JVM``, vs ``_1``);
* ``dedup``: keep the last row per key by processing time (``deduplicate_2`` vs ``_1``);
* ``normalize``: an upsert source (``I,UA,D`` with a primary key) into a sink that takes before-images
  (``changelog-normalize_2`` vs ``_1``);
* ``materialize``: a per-key sum into a sink keyed by another column (the sink's upsert materializer,
  ``sink_2`` vs ``_1``; the aggregate runs on the JVM in both variants);
* ``join``: the input LEFT JOIN a table of one row per key (``join_2`` vs ``_1``; ``--keys`` right rows, so
  every left row finds its match once the right side is in state);
* ``rank``: the top 3 per key by value with the row number (``rank_2`` vs ``_1``, append-fast strategy: rows
  that can no longer rank are dropped).

Timed is ``process_available()`` over the whole input in one SparkSession (no JVM start, no snapshot), the
variants alternating so both see the same load. Reported: seconds, rows/s, the ratio JVM ÷ TWS and the bytes
of state files in the job root afterwards (``state/`` directories of the checkpoints). PyFlink is not run
here (``benchmarks/p2_pyflink.py`` compares the group aggregate with PyFlink). Run on a quiet machine; the
issue's target is JVM ≥ 10× TWS per family.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from planengine.api import TableEnvironment
from planengine.plan import serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.runtime.session import get_spark


@dataclass(frozen=True)
class Family:
    ddl: str  # {src} is the input directory
    statement: str
    relabel: tuple[str, ...]  # exec node names whose version the tws variant sets to 1
    changelog: bool = False  # the input is changelog-json with an upsert stream per key
    dim: bool = False  # a second input {dim}: one row per key (k, name)


FAMILIES = {
    "aggregate-retract": Family(
        "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE out (c BIGINT, n BIGINT) WITH ('connector' = 'blackhole')",
        "INSERT INTO out SELECT c, COUNT(*) FROM (SELECT k, COUNT(*) AS c FROM src GROUP BY k) GROUP BY c",
        ("group-aggregate",)),
    "dedup": Family(
        "CREATE TABLE src (k STRING, v BIGINT, proc AS PROCTIME()) WITH ('connector' = 'filesystem', "
        "'path' = '{src}', 'format' = 'json'); CREATE TABLE out (k STRING, v BIGINT) WITH ('connector' = 'blackhole')",
        "INSERT INTO out SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY proc DESC) AS rn "
        "FROM src) WHERE rn = 1",
        ("deduplicate",)),
    "normalize": Family(
        "CREATE TABLE src (k STRING, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'filesystem', "
        "'path' = '{src}', 'format' = 'changelog-json', 'changelog-mode' = 'I,UA,D'); "
        "CREATE TABLE out (k STRING, v BIGINT) WITH ('connector' = 'blackhole')",
        "INSERT INTO out SELECT k, v FROM src",
        ("changelog-normalize",), changelog=True),
    "materialize": Family(
        "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE out (k STRING, s BIGINT, PRIMARY KEY (s) NOT ENFORCED) "
        "WITH ('connector' = 'blackhole')",
        "INSERT INTO out SELECT k, SUM(v) FROM src GROUP BY k",
        ("sink",)),
    "join": Family(
        "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE dim (k STRING, name STRING) WITH ('connector' = 'filesystem', "
        "'path' = '{dim}', 'format' = 'json'); CREATE TABLE out (k STRING, v BIGINT, name STRING) "
        "WITH ('connector' = 'blackhole')",
        "INSERT INTO out SELECT s.k, s.v, d.name FROM src s LEFT JOIN dim d ON s.k = d.k",
        ("join",), dim=True),
    "rank": Family(
        "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE out (k STRING, v BIGINT, rn BIGINT) WITH ('connector' = 'blackhole')",
        "INSERT INTO out SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) "
        "AS rn FROM src) WHERE rn <= 3",
        ("rank",)),
}


def write_input(root: Path, rows: int, keys: int, files: int, changelog: bool) -> Path:
    """``files`` files of ``rows`` rows over ``keys`` keys (reused when present)."""
    src = root / f"{'changelog' if changelog else 'json'}-{rows}-{keys}-{files}"
    if src.is_dir():
        return src
    tmp = src.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    seen: set[int] = set()
    per_file = rows // files
    for f in range(files):
        with open(tmp / f"part-{f}.json", "w", encoding="utf-8") as out:
            for i in range(f * per_file, (f + 1) * per_file):
                key = i % keys
                row = {"k": f"key{key}", "v": i % 1000}
                if changelog:
                    row["op"] = "+U" if key in seen else "+I"
                    seen.add(key)
                out.write(json.dumps(row) + "\n")
    tmp.rename(src)
    return src


def write_dim(root: Path, keys: int) -> Path:
    dim = root / f"dim-{keys}"
    if not dim.is_dir():
        dim.mkdir(parents=True)
        (dim / "part-0.json").write_text("".join(json.dumps({"k": f"key{k}", "name": f"n{k}"}) + "\n"
                                                 for k in range(keys)), encoding="utf-8")
    return dim


def plans(family: Family, src: Path, dim: Path | None = None) -> tuple[TableEnvironment, dict[str, CompiledPlan]]:
    env = TableEnvironment()
    env.execute_sql(family.ddl.replace("{src}", str(src)).replace("{dim}", str(dim)))
    jvm = env.compile_plan_sql(family.statement)
    text = re.sub(r',"strategy":"[A-Z_]+"', "", jvm.as_json())
    for name in family.relabel:
        text = re.sub(rf"stream-exec-{name}([_-])\d+", rf"stream-exec-{name}\g<1>1", text)
    data = json.loads(text)
    data["planId"] = serde.compute_plan_id(data)
    return env, {"jvm": jvm, "tws": CompiledPlan(data)}


def state_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and "/state/" in str(p))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--work", default="/tmp/planengine-families")
    args = ap.parse_args(argv)
    work = Path(args.work)
    get_spark()
    print("| family | variant | round | seconds | rows/s | state bytes | load |\n|---|---|---|---|---|---|---|")
    for fam_name in args.families.split(","):
        family = FAMILIES[fam_name]
        src = write_input(work / "input", args.rows, args.keys, args.files, family.changelog)
        dim = write_dim(work / "input", args.keys) if family.dim else None
        env, candidates = plans(family, src, dim)
        best: dict[str, float] = {}
        for r in range(args.rounds):
            for name, plan in candidates.items():
                root = work / "jobs" / f"{fam_name}-{name}-{r}"
                shutil.rmtree(root, ignore_errors=True)
                job = env.execute_plan(plan, job_root=str(root))
                load = os.getloadavg()[0]
                start = time.monotonic()
                job.process_available()
                seconds = time.monotonic() - start
                job.stop(snapshot=False)
                best[name] = min(best.get(name, seconds), seconds)
                print(f"| {fam_name} | {name} | {r} | {seconds:.1f} | {args.rows / seconds:,.0f} | "
                      f"{state_bytes(root):,} | {load:.1f} |", flush=True)
        print(f"| {fam_name} | JVM ÷ TWS (best round) | | | {best['tws'] / best['jvm']:.1f}× | | |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
