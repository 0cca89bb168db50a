"""Compile time and plan size (issue: compiled-plan core).

Run: ``.venv/bin/python -m benchmarks.compile_plan`` (writes ``benchmarks/results/compile_plan.md``).

Measures the median of 20 *warm* compiles (the session, catalog and function registry already exist, as in
a long-running SQL gateway; one discarded warm-up compile first) of
  1. a 1-sink group aggregate, and
  2. a 5-sink statement set over one source: two aggregates (COUNT, COUNT DISTINCT), a filter, a window
     aggregate and a projection.
Reference on this machine (Flink 2.3 warm compile): 0.2 s (1 sink), 0.7–1.1 s (5 sinks); plan sizes
5.8 KB and 21.8 KB. Targets: ≤ 100 ms for the 5-sink set; plan size ≤ 50 % of Flink's.
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path

from planengine.api import TableEnvironment
from planengine.commands.compile import split_program

DDL = """
CREATE TABLE clicks (user_id BIGINT, page STRING, referrer STRING, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
  WITH ('connector' = 'filesystem', 'path' = '/data/clicks', 'format' = 'json');
CREATE TABLE views_per_page (page STRING, views BIGINT, PRIMARY KEY (page) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://db/shop', 'table-name' = 'views');
CREATE TABLE users_per_page (page STRING, users BIGINT, PRIMARY KEY (page) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://db/shop', 'table-name' = 'users');
CREATE TABLE shop_clicks (user_id BIGINT, page STRING)
  WITH ('connector' = 'filesystem', 'path' = '/out/shop', 'format' = 'json');
CREATE TABLE per_minute (page STRING, window_start TIMESTAMP(3), window_end TIMESTAMP(3), cnt BIGINT)
  WITH ('connector' = 'filesystem', 'path' = '/out/minute', 'format' = 'json');
CREATE TABLE referrers (referrer STRING, page STRING)
  WITH ('connector' = 'filesystem', 'path' = '/out/ref', 'format' = 'json');
"""
ONE_SINK = "INSERT INTO views_per_page SELECT page, COUNT(*) FROM clicks GROUP BY page;"
FIVE_SINKS = """EXECUTE STATEMENT SET BEGIN
INSERT INTO views_per_page SELECT page, COUNT(*) FROM clicks GROUP BY page;
INSERT INTO users_per_page SELECT page, COUNT(DISTINCT user_id) FROM clicks GROUP BY page;
INSERT INTO shop_clicks SELECT user_id, page FROM clicks WHERE page LIKE '/shop%';
INSERT INTO per_minute SELECT page, window_start, window_end, COUNT(*)
  FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY page, window_start, window_end;
INSERT INTO referrers SELECT COALESCE(referrer, 'direct'), page FROM clicks;
END;"""


def measure(program: str, runs: int = 20) -> tuple[float, int]:
    env = TableEnvironment()
    env.execute_sql(DDL)
    inserts = split_program(env, program, "bench.sql")
    size = len(env.compile_plan(inserts).as_json().encode())  # warm-up, discarded
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        plan = env.compile_plan(inserts)
        plan.as_json()
        times.append(time.perf_counter() - start)
    return statistics.median(times), size


def main() -> int:
    rows = []
    for label, program, flink_s, flink_kb in (("1 sink (group aggregate)", ONE_SINK, "0.2 s", 5.8),
                                              ("5 sinks (statement set)", FIVE_SINKS, "0.7–1.1 s", 21.8)):
        median, size = measure(program)
        rows.append(f"| {label} | {median * 1000:.1f} ms | {flink_s} | {size / 1000:.1f} KB | {flink_kb} KB | "
                    f"{size / (flink_kb * 1000) * 100:.0f} % |")
    report = "\n".join([
        "# Compile time and plan size",
        "",
        "Command: `.venv/bin/python -m benchmarks.compile_plan` (median of 20 warm compiles, incl. JSON rendering).",
        f"Machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, 2 cores.",
        "",
        "| program | planengine compile | Flink 2.3 compile | planengine plan | Flink plan | size vs Flink |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
        "Targets: ≤ 100 ms for the 5-sink set; plan size ≤ 50 % of Flink's.",
    ])
    out = Path(__file__).parent / "results" / "compile_plan.md"
    out.write_text(report + "\n")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
