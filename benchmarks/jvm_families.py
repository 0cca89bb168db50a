"""Per operator family: the JVM processor vs the Python transformWithState operator, same plan, same input.

    python benchmarks/jvm_families.py [--rows 1000000] [--keys 10000] [--rounds 2]
        [--families aggregate-retract,dedup,normalize,materialize,join,join-nonequi,rank,over,over-distinct,
                    over-lag,sort-limit,session]
        [--pyflink]
        [--out benchmarks/results/jvm_families.md]

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
* ``join-nonequi``: the ``join`` family with a non-equi condition ``AND s.v < d.v + 5`` (``join_3``, evaluated
  per pair on the JVM, vs ``_1``, evaluated in Python); the dimension's ``v`` is its key number mod 1000, which
  is every matching input row's ``v``, so each left row matches as in ``join`` and the difference is the
  condition's cost;
* ``rank``: the top 3 per key by value with the row number (``rank_2`` vs ``_1``, append-fast strategy: rows
  that can no longer rank are dropped);
* ``over``: ``SUM`` and ``MAX`` over the 10 preceding rows per key by rowtime (``over-aggregate_2`` vs ``_1``;
  rows carry ``t``, one second per 1000 rows, watermark 1 s behind: every row but the last second's fires);
* ``over-distinct``: ``COUNT(DISTINCT v)`` and ``SUM(DISTINCT v)`` over the same frame (``over-aggregate_3``,
  a value multiset per call on the JVM, vs ``_1``; version 2 keeps DISTINCT on Python);
* ``over-lag``: ``LAG(v)`` and ``LAG(v, 2, 0)`` per key by rowtime (the unbounded frame Flink gives LAG;
  ``over-aggregate_4``, the library's LAG accumulator on the JVM, vs ``_1``, which recomputes LAG over every row
  the partition kept);
* ``sort-limit``: the global top 10 by value (``ORDER BY v DESC LIMIT 10``: ``sort-limit_3``, the same JVM
  processor as a partition-less ROW_NUMBER, vs ``_1``); one key, so one task does all the work in both variants;
* ``session``: SESSION windows (5 s gap) per key aggregated per value, so sessions span grouping keys and run on
  the session operator (today's ``window-aggregate`` version on the JVM vs ``_1`` on Python; a key's rows are
  10 s apart: one session per row, each fired by the watermark).

Timed is ``process_available()`` over the whole input in one SparkSession (no JVM start, no snapshot), the
variants alternating so both see the same load. Reported: seconds, rows/s, the ratio JVM ÷ TWS and the bytes
of state files in the job root afterwards (``state/`` directories of the checkpoints).

Also reported, per variant, the **operator time**: what Spark's own progress reports attribute to the stateful
operators (``stateOperators``: ``allUpdatesTimeMs`` + ``allRemovalsTimeMs`` + ``commitTimeMs``, summed over the
batches and the tasks, i.e. CPU-side milliseconds of the two tasks together), and its ratio. The seconds include
what both variants share and no operator can change (query planning, the offset and commit logs, the JSON scan,
the shuffle write and read); the operator time is the part the JVM processors replace. It counts every stateful
operator of the query, so a family whose other operators are the same in both variants (``materialize``: the
aggregate below the sink runs on the JVM in both) has a conservative ratio.

``--spark-floor`` adds, per round, three queries of Spark's own over the plain JSON input (``k STRING, v BIGINT``;
the same files as the JSON families), timed from ``start()`` to the end of an ``availableNow`` run into the
``noop`` sink: ``scan+shuffle`` (the scan and the hash shuffle by key that every keyed operator pays),
``dropDuplicates`` (Spark's native streaming deduplication: every row shuffled, one state lookup per row) and
``count`` (Spark's native streaming aggregation, which pre-aggregates before the shuffle). They are not the same
work as any family; they say where "Spark speed" is on this machine for this input.

``--pyflink`` adds a third variant: the same DDL and statement in PyFlink's streaming mode (per-record
changelog, parallelism 2, from ``<repo>/.venv-flink``, created as ``benchmarks/p2_pyflink.py`` does). Its
time is the job's ``execute → wait`` minus the same job over a 10-row input (Flink's mini-cluster and job
start are fixed costs that ``process_available()`` does not pay either). The ``normalize`` family has no
PyFlink variant: Flink's filesystem connector has no format that reads an upsert stream (I, UA, D without
before-images); ``upsert-kafka`` is the only such source and there is no broker here.

Run on a quiet machine; the issue's target is JVM ≥ 10× TWS per family. Results are written to ``--out``
(a Markdown file with the command, machine and load) as well as printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from planengine.api import TableEnvironment
from planengine.plan import serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.runtime.engine.session import get_spark

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmark, when run as a script
from p2_pyflink import FLINK_VENV, ensure_flink_venv, machine


@dataclass(frozen=True)
class Family:
    ddl: str  # {src} is the input directory
    statement: str
    relabel: tuple[str, ...]  # exec node names whose version the tws variant sets to 1
    changelog: bool = False  # the input is changelog-json with an upsert stream per key
    dim: bool = False  # a second input {dim}: one row per key (k, name)
    event_time: bool = False  # rows carry t (epoch seconds, increasing with the row number) for a rowtime
    flink_conf: tuple[tuple[str, str], ...] = ()  # PyFlink options this family needs

    @property
    def pyflink(self) -> bool:
        """Whether Flink can read this family's input (see the module docstring)."""
        return not self.changelog


FAMILIES = {
    "aggregate-retract": Family(
        "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE sink_out (c BIGINT, n BIGINT) WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT c, COUNT(*) FROM (SELECT k, COUNT(*) AS c FROM src GROUP BY k) GROUP BY c",
        ("group-aggregate",)),
    "dedup": Family(
        "CREATE TABLE src (k STRING, v BIGINT, proc AS PROCTIME()) WITH ('connector' = 'filesystem', "
        "'path' = '{src}', 'format' = 'json'); "
        "CREATE TABLE sink_out (k STRING, v BIGINT) WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT k, v FROM (SELECT k, v, "
        "ROW_NUMBER() OVER (PARTITION BY k ORDER BY proc DESC) AS rn FROM src) WHERE rn = 1",
        ("deduplicate",)),
    "normalize": Family(
        "CREATE TABLE src (k STRING, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'filesystem', "
        "'path' = '{src}', 'format' = 'changelog-json', 'changelog-mode' = 'I,UA,D'); "
        "CREATE TABLE sink_out (k STRING, v BIGINT) WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT k, v FROM src",
        ("changelog-normalize",), changelog=True),
    "materialize": Family(
        "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE sink_out (k STRING, s BIGINT, PRIMARY KEY (s) NOT ENFORCED) "
        "WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT k, SUM(v) FROM src GROUP BY k",
        ("sink",),
        # Flink 2.3 refuses a sink keyed apart from the query's upsert key unless told how to resolve it;
        # FORCE is its SinkUpsertMaterializer, which is what sink_2 runs.
        flink_conf=(("table.exec.sink.upsert-materialize", "FORCE"),)),
    "join": Family(
        "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE dim (k STRING, name STRING) WITH ('connector' = 'filesystem', "
        "'path' = '{dim}', 'format' = 'json'); CREATE TABLE sink_out (k STRING, v BIGINT, name STRING) "
        "WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT s.k, s.v, d.name FROM src s LEFT JOIN dim d ON s.k = d.k",
        ("join",), dim=True),
    "join-nonequi": Family(
        "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE dim (k STRING, name STRING, v BIGINT) WITH ('connector' = 'filesystem', "
        "'path' = '{dim}', 'format' = 'json'); CREATE TABLE sink_out (k STRING, v BIGINT, name STRING) "
        "WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT s.k, s.v, d.name FROM src s LEFT JOIN dim d ON s.k = d.k AND s.v < d.v + 5",
        ("join",), dim=True),
    "rank": Family(
        "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE sink_out (k STRING, v BIGINT, rn BIGINT) WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) "
        "AS rn FROM src) WHERE rn <= 3",
        ("rank",)),
    "over": Family(
        "CREATE TABLE src (k STRING, v BIGINT, t BIGINT, ts AS TO_TIMESTAMP(FROM_UNIXTIME(t)), "
        "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE sink_out (k STRING, v BIGINT, s BIGINT, m BIGINT) "
        "WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT k, v, "
        "SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW), "
        "MAX(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) FROM src",
        ("over-aggregate",), event_time=True),
    "over-distinct": Family(
        "CREATE TABLE src (k STRING, v BIGINT, t BIGINT, ts AS TO_TIMESTAMP(FROM_UNIXTIME(t)), "
        "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE sink_out (k STRING, v BIGINT, c BIGINT, s BIGINT) "
        "WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT k, v, "
        "COUNT(DISTINCT v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW), "
        "SUM(DISTINCT v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) FROM src",
        ("over-aggregate",), event_time=True),
    "over-lag": Family(
        "CREATE TABLE src (k STRING, v BIGINT, t BIGINT, ts AS TO_TIMESTAMP(FROM_UNIXTIME(t)), "
        "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE sink_out (k STRING, v BIGINT, p BIGINT, p2 BIGINT) "
        "WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT k, v, LAG(v) OVER w, LAG(v, 2, CAST(0 AS BIGINT)) OVER w FROM src "
        "WINDOW w AS (PARTITION BY k ORDER BY ts)",
        ("over-aggregate",), event_time=True),
    "sort-limit": Family(
        "CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE sink_out (k STRING, v BIGINT) WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT k, v FROM src ORDER BY v DESC LIMIT 10",
        ("sort-limit",)),
    "session": Family(
        "CREATE TABLE src (k STRING, v BIGINT, t BIGINT, ts AS TO_TIMESTAMP(FROM_UNIXTIME(t)), "
        "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        "'format' = 'json'); CREATE TABLE sink_out (v BIGINT, ws TIMESTAMP(3), we TIMESTAMP(3), c BIGINT) "
        "WITH ('connector' = 'blackhole')",
        "INSERT INTO sink_out SELECT v, window_start, window_end, COUNT(*) FROM TABLE(SESSION(TABLE src "
        "PARTITION BY k, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY v, window_start, window_end",
        ("window-aggregate",), event_time=True),
}


def write_input(root: Path, rows: int, keys: int, files: int, changelog: bool, event_time: bool = False) -> Path:
    """``files`` files of ``rows`` rows over ``keys`` keys (reused when present)."""
    kind = "changelog" if changelog else "timed" if event_time else "json"
    src = root / f"{kind}-{rows}-{keys}-{files}"
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
                if event_time:
                    row["t"] = 1_600_000_000 + i // 1000
                if changelog:
                    row["op"] = "+U" if key in seen else "+I"
                    seen.add(key)
                out.write(json.dumps(row) + "\n")
    tmp.rename(src)
    return src


def write_dim(root: Path, keys: int) -> Path:
    dim = root / f"dim-v-{keys}"
    if not dim.is_dir():
        dim.mkdir(parents=True)
        (dim / "part-0.json").write_text("".join(json.dumps({"k": f"key{k}", "name": f"n{k}", "v": k % 1000}) + "\n"
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


def operator_ms(job: object) -> int:
    """The stateful operators' time of a finished run, from Spark's progress reports (see the docstring)."""
    total = 0
    for q in job.queries:  # type: ignore[attr-defined]
        for progress in q.query.recentProgress:
            for op in progress.get("stateOperators") or []:
                total += sum(int(op.get(k) or 0) for k in ("allUpdatesTimeMs", "allRemovalsTimeMs", "commitTimeMs"))
    return total


FLOOR_QUERIES = ("scan+shuffle", "dropDuplicates", "count")


def spark_floor(src: Path, kind: str, checkpoint: Path) -> float:
    """Seconds Spark's own ``kind`` query (``FLOOR_QUERIES``) takes over ``src`` (see ``--spark-floor``)."""
    df = get_spark().readStream.schema("k STRING, v BIGINT").json(str(src))
    if kind == "scan+shuffle":
        writer = df.repartition(2, "k").writeStream.outputMode("append")
    elif kind == "dropDuplicates":
        writer = df.dropDuplicates(["k"]).writeStream.outputMode("append")
    else:
        writer = df.groupBy("k").count().writeStream.outputMode("update")
    shutil.rmtree(checkpoint, ignore_errors=True)
    start = time.monotonic()
    query = writer.format("noop").option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    query.awaitTermination()
    return time.monotonic() - start


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
    ap.add_argument("--pyflink", action="store_true", help="add PyFlink streaming as a third variant")
    ap.add_argument("--spark-floor", action="store_true", help="add Spark's own queries over the JSON input")
    ap.add_argument("--out", type=Path, default=None, help="also write the table to this Markdown file")
    args = ap.parse_args(argv)
    work = Path(args.work)
    flink = pyflink_runner(work) if args.pyflink else None
    command = "python benchmarks/jvm_families.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines: list[str] = []

    def emit(line: str) -> None:
        lines.append(line)
        print(line, flush=True)

    header = f"Machine: {machine()}"
    get_spark()
    emit("| family | variant | round | seconds | rows/s | operator ms | state bytes | load |")
    emit("|---|---|---|---|---|---|---|---|")
    if args.spark_floor:
        src = write_input(work / "input", args.rows, args.keys, args.files, False, False)
        floor: dict[str, float] = {}
        for r in range(args.rounds):
            for kind in FLOOR_QUERIES:
                load = os.getloadavg()[0]
                seconds = spark_floor(src, kind, work / "jobs" / f"floor-{kind}")
                floor[kind] = min(floor.get(kind, seconds), seconds)
                emit(f"| (Spark's own) | {kind} | {r} | {seconds:.1f} | {args.rows / seconds:,.0f} | | | {load:.1f} |")
        emit("| (Spark's own) | best round | | " + ", ".join(f"{k} {v:.2f} s" for k, v in floor.items()) + " | | | | |")
    for fam_name in args.families.split(","):
        family = FAMILIES[fam_name]
        src = write_input(work / "input", args.rows, args.keys, args.files, family.changelog, family.event_time)
        dim = write_dim(work / "input", args.keys) if family.dim else None
        env, candidates = plans(family, src, dim)
        best: dict[str, float] = {}
        best_op: dict[str, int] = {}
        for r in range(args.rounds):
            for name, plan in candidates.items():
                root = work / "jobs" / f"{fam_name}-{name}-{r}"
                shutil.rmtree(root, ignore_errors=True)
                job = env.execute_plan(plan, job_root=str(root))
                load = os.getloadavg()[0]
                start = time.monotonic()
                job.process_available()
                seconds = time.monotonic() - start
                op_ms = operator_ms(job)
                job.stop(snapshot=False)
                best[name] = min(best.get(name, seconds), seconds)
                best_op[name] = min(best_op.get(name, op_ms), op_ms)
                emit(f"| {fam_name} | {name} | {r} | {seconds:.1f} | {args.rows / seconds:,.0f} | {op_ms:,} | "
                     f"{state_bytes(root):,} | {load:.1f} |")
            if flink is not None and family.pyflink:
                load = os.getloadavg()[0]
                try:
                    seconds = flink(family, src, dim)
                except RuntimeError as error:
                    emit(f"| {fam_name} | pyflink | {r} | failed: {error} | | | | {load:.1f} |")
                    continue
                best["pyflink"] = min(best.get("pyflink", seconds), seconds)
                emit(f"| {fam_name} | pyflink | {r} | {seconds:.1f} | {args.rows / seconds:,.0f} | | | {load:.1f} |")
        emit(f"| {fam_name} | JVM ÷ TWS (best round) | | | {best['tws'] / best['jvm']:.1f}× | "
             f"{best_op['tws'] / max(best_op['jvm'], 1):.1f}× | | |")
        if "pyflink" in best:
            emit(f"| {fam_name} | JVM ÷ PyFlink (best round) | | | {best['pyflink'] / best['jvm']:.2f}× | | | |")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join([
            "# Changelog operator families: JVM processor vs Python transformWithState"
            + (" vs PyFlink" if flink else ""), "",
            f"Command: `{command.strip()}`", "", header, "",
            f"Finished with a 1-min load average of {os.getloadavg()[0]:.1f}. See the module docstring of "
            "`benchmarks/jvm_families.py` for what each family runs and what is timed.", "", *lines, ""]))
    return 0


# --- PyFlink -----------------------------------------------------------------------------------------------
FLINK_JOB = """
import json, sys, time
from pyflink.table import EnvironmentSettings, TableEnvironment
ddl, statement, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
t_env.get_config().set("parallelism.default", "2")
for key, value in conf:
    t_env.get_config().set(key, value)
for part in ddl.split(";"):
    if part.strip():
        t_env.execute_sql(part)
start = time.monotonic()
t_env.execute_sql(statement).wait()
print(json.dumps({"job": time.monotonic() - start}))
"""


def pyflink_runner(work: Path):  # type: ignore[no-untyped-def]
    """A function timing one family in PyFlink (net of a 10-row run of the same job), seconds."""
    error, _ = ensure_flink_venv()
    if error:
        raise SystemExit(f"--pyflink: PyFlink could not be installed: {error}")
    job = work / "flink_job.py"
    job.parent.mkdir(parents=True, exist_ok=True)
    job.write_text(FLINK_JOB)

    def job_seconds(family: Family, src: Path, dim: Path | None) -> float:
        ddl = family.ddl.replace("{src}", str(src)).replace("{dim}", str(dim))
        proc = subprocess.run([str(FLINK_VENV / "bin" / "python"), str(job), ddl, family.statement,
                               json.dumps(family.flink_conf)],
                              capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            causes = [ln.strip() for ln in proc.stderr.splitlines() if "Exception:" in ln]
            raise RuntimeError(f"PyFlink failed: {(causes or proc.stderr.splitlines() or ['?'])[-1][:500]}")
        return float(json.loads(proc.stdout.strip().splitlines()[-1])["job"])

    def run(family: Family, src: Path, dim: Path | None) -> float:
        tiny = write_input(work / "input", 10, 10, 1, family.changelog, family.event_time)
        tiny_dim = write_dim(work / "input", 10) if family.dim else None
        return job_seconds(family, src, dim) - job_seconds(family, tiny, tiny_dim)

    return run


if __name__ == "__main__":
    sys.exit(main())
