"""``make run``: a clicks job compiled once, run, stopped with a snapshot, restored with new input.

Three results from one statement set over one source (bundled JSON clicks):
page views per page (upsert), unique users per page (COUNT DISTINCT), and clicks per page per 1-minute
tumbling window. Phase 1 reads ``part-1.json`` and stops with a snapshot; phase 2 restores the *plan file*
(never re-planned) from that snapshot, reads ``part-2.json`` and drains. The materialized results must equal
totals computed directly from all input: nothing lost, nothing counted twice.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

DATA = Path(__file__).parent / "data"

DDL = """
CREATE TABLE clicks (
  user_id BIGINT, page STRING, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH ('connector' = 'filesystem', 'path' = '{work}/input', 'format' = 'json', 'source.monitor-interval' = '1 s');
CREATE TABLE page_views (page STRING, views BIGINT, PRIMARY KEY (page) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '{work}/out/page_views', 'format' = 'changelog-json');
CREATE TABLE unique_users (page STRING, users BIGINT, PRIMARY KEY (page) NOT ENFORCED)
  WITH ('connector' = 'filesystem', 'path' = '{work}/out/unique_users', 'format' = 'changelog-json');
CREATE TABLE per_minute (window_start TIMESTAMP(3), window_end TIMESTAMP(3), page STRING, clicks BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '{work}/out/per_minute', 'format' = 'changelog-json');
"""

PROGRAM = """
EXECUTE STATEMENT SET BEGIN
  INSERT INTO page_views SELECT page, COUNT(*) FROM clicks GROUP BY page;
  INSERT INTO unique_users SELECT page, COUNT(DISTINCT user_id) FROM clicks GROUP BY page;
  INSERT INTO per_minute SELECT window_start, window_end, page, COUNT(*)
    FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
    GROUP BY window_start, window_end, page;
END
"""


def say(text: str) -> None:
    print(text, flush=True)


def expected(files: list[Path]) -> dict[str, dict]:
    views: Counter = Counter()
    users: dict[str, set] = defaultdict(set)
    minute: Counter = Counter()
    for f in files:
        for line in f.read_text().splitlines():
            r = json.loads(line)
            views[r["page"]] += 1
            users[r["page"]].add(r["user_id"])
            t = datetime.fromisoformat(r["ts"]).replace(second=0, microsecond=0)
            minute[(t.isoformat(sep=" "), r["page"])] += 1
    return {"page_views": dict(views), "unique_users": {p: len(u) for p, u in users.items()},
            "per_minute": {f"{k[0]} {k[1]}": v for k, v in minute.items()}}


def materialize(spark, path: Path, schema: str, key) -> dict:  # type: ignore[no-untyped-def]
    """Apply a changelog: +I/+U set the row under its key, -U/-D remove it."""
    if not (path / "_spark_metadata").is_dir():
        return {}
    rows = spark.read.schema(schema + ", op STRING").json(str(path)).collect()
    # Files carry no global order, so count each (key, value) image: +I/+U add one, -U/-D remove one.
    table: dict = {}
    state: Counter = Counter()
    for r in rows:
        state[key(r)] += 1 if r["op"] in ("+I", "+U") else -1
    for (k, v), n in state.items():
        if n > 0:  # upsert sinks get +U without -U: counts only grow, so the largest image is the latest
            table[k] = max(table.get(k, v), v)
    return table


def main() -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from planengine.api import TableEnvironment
    from planengine.plan.compiled_plan import CompiledPlan
    from planengine.runtime.engine.session import get_spark

    work = Path(os.environ.get("CLICKS_WORK_DIR") or tempfile.mkdtemp(prefix="planengine-clicks-"))
    shutil.rmtree(work, ignore_errors=True)
    (work / "input").mkdir(parents=True)
    root = work / "job"
    say(f"== planengine clicks example (work dir {work})")

    env = TableEnvironment()
    env.execute_sql(DDL.replace("{work}", str(work)))
    plan = env.compile_plan_sql(PROGRAM)
    say(f"compiled plan {plan.plan_id[:12]}: {len(plan.data['nodes'])} exec nodes")
    # Spark's own log lines and the Python workers' chatter go to a file, not between the results.
    spark_log = Path(os.environ.setdefault("PLANENGINE_SPARK_LOG", str(work / "spark.log")))
    say(f"starting Spark (local); its log: {spark_log}")
    spark = get_spark()

    shutil.copy(DATA / "part-1.json", work / "input" / "part-1.json")
    job = env.execute_plan(plan, job_root=str(root))
    say(f"phase 1: run {job.run.run_id} with {len(job.queries)} queries; reading part-1.json")
    started = time.time()
    job.process_available()
    for q in job.status()["queries"]:
        say(f"  {q['name']:<14} batches={q['batchesTotal']:<3} rows={q['rowsTotal']}")
    snapshot = job.stop(snapshot=True, reason="manual")
    say(f"phase 1 stopped after {time.time() - started:.1f}s with snapshot {snapshot}")

    shutil.copy(DATA / "part-2.json", work / "input" / "part-2.json")
    restored = CompiledPlan.from_file(root / "plan.json")
    say(f"phase 2: restoring plan {restored.plan_id[:12]} from {snapshot}; reading part-2.json, then draining")
    result = env.execute_plan(restored, job_root=str(root), from_snapshot=snapshot, until_idle=True, drain=True)
    say(f"phase 2 stopped: run {result.run_id}, snapshot {result.snapshot_id}")

    want = expected([DATA / "part-1.json", DATA / "part-2.json"])
    got = {
        "page_views": materialize(spark, work / "out/page_views", "page STRING, views BIGINT",
                                  lambda r: (r["page"], r["views"])),
        "unique_users": materialize(spark, work / "out/unique_users", "page STRING, users BIGINT",
                                    lambda r: (r["page"], r["users"])),
        "per_minute": materialize(spark, work / "out/per_minute",
                                  "window_start TIMESTAMP_NTZ, window_end TIMESTAMP_NTZ, page STRING, clicks BIGINT",
                                  lambda r: (f"{r['window_start']} {r['page']}", r["clicks"])),
    }
    ok = True
    for name in want:
        match = got[name] == want[name]
        ok &= match
        say(f"{name:<13} {'OK ' if match else 'MISMATCH'} {len(got[name])} rows"
            + ("" if match else f"\n  expected {want[name]}\n  got      {got[name]}"))
    for page in sorted(want["page_views"]):
        say(f"  {page:<10} views={got['page_views'].get(page)} users={got['unique_users'].get(page)}")
    say("counts continued exactly across stop/restore" if ok else "RESULTS DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
