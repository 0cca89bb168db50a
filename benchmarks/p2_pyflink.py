"""P2: group aggregate into an upsert sink and into a changelog sink, planengine vs PyFlink, same SQL and input.

    python benchmarks/p2_pyflink.py [--rows 1000000] [--keys 10000] [--files 8]
        [--flink-runs streaming,minibatch,batch,streaming-changelog]
        [--planengine-sinks blackhole,blackhole-retract,changelog-json,debezium-json]

Not part of ``make test`` (minutes, and ~850 MB for PyFlink). Steps:

1. ``<repo>/.venv-flink``: a separate Python 3.11 venv with ``apache-flink==2.3.*`` (needs Java 11/17 on
   PATH or in JAVA_HOME); created once, reused when its stamp matches.
2. Input: ``--files`` JSON-lines files, ``--rows`` rows of ``{"k": "key<i % keys>", "v": <int>}``.
3. The statement ``INSERT INTO <sink> SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k`` into:

   * an **upsert sink**: ``blackhole`` with ``PRIMARY KEY (k)`` on both engines (Flink's blackhole drops
     UPDATE_BEFORE, so the aggregate emits only ``+I``/``+U``): both compute the update changelog and discard it.
     planengine runs this natively (``group-aggregate_3``'s native strategy);
   * a **changelog sink that keeps UPDATE_BEFORE** (the issue's P2 target): a ``filesystem`` sink with the
     ``debezium-json`` format on both engines (Flink's file sink takes its format's changelog mode, which for
     debezium-json has UPDATE_BEFORE), so both emit and write Flink's full per-record changelog (``-U``/``+U``
     per input row, ~2 M lines). planengine runs the JVM processor here (``group-aggregate_3``);
   * planengine only: a ``blackhole`` without a primary key (keeps UPDATE_BEFORE: the JVM processor without the
     file writing) and a ``changelog-json`` file sink whose output is checked against the input.
4. PyFlink in streaming mode (Flink's default, per-record updates; the like-for-like mode) and with
   mini-batch (``table.exec.mini-batch.*``); batch mode as a reference (final rows only).
5. Timing: wall-clock of the whole process, and *net* time = wall-clock minus the wall-clock of the same
   job over a 10-row input (JVM start, planning, job/query start, snapshot): the processing time without
   fixed costs. rows/s = rows / net seconds.

Writes ``benchmarks/results/p2_pyflink.md`` (and prints it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLINK_VENV = REPO / ".venv-flink"
FLINK_SPEC = "apache-flink==2.3.*"
PLANENGINE = REPO / ".venv" / "bin" / "planengine"
RESULTS = REPO / "benchmarks" / "results" / "p2_pyflink.md"

STATEMENT = "INSERT INTO upsert_sink SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k"


# --- PyFlink venv ------------------------------------------------------------------------------------------
def ensure_flink_venv() -> tuple[str | None, str]:
    """(error or None, installed version)."""
    stamp = FLINK_VENV / ".p2-stamp"
    py = FLINK_VENV / "bin" / "python"
    if stamp.is_file() and stamp.read_text() == FLINK_SPEC and py.exists():
        return None, _flink_version()
    python311 = shutil.which("python3.11") or sys.executable
    try:
        if not py.exists():
            subprocess.run([python311, "-m", "venv", str(FLINK_VENV)], check=True, capture_output=True, text=True)
            (FLINK_VENV / ".gitignore").write_text("*\n")
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", FLINK_SPEC],
                       check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as e:
        lines = [ln for ln in (e.stderr or "").splitlines() if "is ignored: it is neither" not in ln]
        return f"`{' '.join(map(str, e.cmd))}` failed:\n" + "\n".join(lines[-20:]), ""
    stamp.write_text(FLINK_SPEC)
    return None, _flink_version()


def _flink_version() -> str:
    out = subprocess.run([str(FLINK_VENV / "bin" / "python"), "-c",
                          "import importlib.metadata as m; print(m.version('apache-flink'))"],
                         capture_output=True, text=True)
    return out.stdout.strip()


# --- input -------------------------------------------------------------------------------------------------
def generate(work: Path, rows: int, keys: int, files: int, seed: int = 7) -> Path:
    src = work / f"src-{rows}-{keys}-{files}"
    marker = src / ".complete"
    if marker.is_file():
        return src
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    rng = random.Random(seed)
    per = -(-rows // files)
    n = 0
    for f in range(files):
        lines = []
        for _ in range(min(per, rows - n)):
            lines.append(f'{{"k":"key{rng.randrange(keys)}","v":{rng.randrange(1000)}}}\n')
            n += 1
        (src / f"part-{f:03d}.json").write_text("".join(lines))
    marker.write_text(str(rows))
    return src


def expected_totals(src: Path) -> tuple[int, int, int]:
    """(distinct keys, total count, total sum) of the input."""
    keys: set[str] = set()
    count = total = 0
    for p in sorted(src.glob("*.json")):
        for line in p.read_text().splitlines():
            r = json.loads(line)
            keys.add(r["k"])
            count += 1
            total += r["v"]
    return len(keys), count, total


# --- PyFlink -----------------------------------------------------------------------------------------------
FLINK_JOB = textwrap.dedent("""
    import json, sys, time
    t0 = time.monotonic()
    from pyflink.table import EnvironmentSettings, TableEnvironment
    mode, src, statement, sink_options = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    settings = EnvironmentSettings.in_batch_mode() if mode == "batch" else EnvironmentSettings.in_streaming_mode()
    t_env = TableEnvironment.create(settings)
    conf = t_env.get_config()
    conf.set("parallelism.default", "2")
    if mode == "minibatch":
        conf.set("table.exec.mini-batch.enabled", "true")
        conf.set("table.exec.mini-batch.allow-latency", "1 s")
        conf.set("table.exec.mini-batch.size", "5000")
    t_env.execute_sql(f"CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', "
                      f"'path' = '{src}', 'format' = 'json')")
    t_env.execute_sql("CREATE TABLE upsert_sink (k STRING, c BIGINT, s BIGINT, PRIMARY KEY (k) NOT ENFORCED) "
                      "WITH ('connector' = 'blackhole')")
    t_env.execute_sql(f"CREATE TABLE changelog_sink (k STRING, c BIGINT, s BIGINT) WITH ({sink_options})")
    t1 = time.monotonic()
    t_env.execute_sql(statement).wait()
    t2 = time.monotonic()
    print(json.dumps({"startup": t1 - t0, "job": t2 - t1}))
""")

# Flink runs: name -> (execution mode, sink table).
FLINK_RUNS = {"streaming": ("streaming", "upsert_sink"), "minibatch": ("minibatch", "upsert_sink"),
              "batch": ("batch", "upsert_sink"), "streaming-changelog": ("streaming", "changelog_sink")}


def run_flink(work: Path, src: Path, run: str) -> dict:
    mode, sink = FLINK_RUNS[run]
    job = work / "flink_job.py"
    job.write_text(FLINK_JOB)
    out = work / f"flink-{run}-{src.name}"
    shutil.rmtree(out, ignore_errors=True)
    options = f"'connector' = 'filesystem', 'path' = '{out}', 'format' = 'debezium-json'"
    start = time.monotonic()
    proc = subprocess.run([str(FLINK_VENV / "bin" / "python"), str(job), mode, str(src),
                           STATEMENT.replace("upsert_sink", sink), options],
                          capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise RuntimeError(f"PyFlink {run} failed:\n{proc.stderr[-3000:]}")
    inner = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"wall": wall, **inner}


# --- planengine --------------------------------------------------------------------------------------------
# planengine sinks: name -> (sink DDL options, has a primary key, what the engine runs).
PLANENGINE_SINKS = {
    "blackhole": ("'connector' = 'blackhole'", True, "native aggregate, upsert changelog"),
    "blackhole-retract": ("'connector' = 'blackhole'", False, "JVM processor, -U kept, discarded"),
    "changelog-json": ("'connector' = 'filesystem', 'path' = '{out}', 'format' = 'changelog-json'", False,
                       "JVM processor, -U kept, written"),
    "debezium-json": ("'connector' = 'filesystem', 'path' = '{out}', 'format' = 'debezium-json'", False,
                      "JVM processor, -U kept, written"),
}


def run_planengine(work: Path, src: Path, sink: str) -> dict:
    job_dir = work / f"pe-{sink}-{src.name}"
    shutil.rmtree(job_dir, ignore_errors=True)
    job_dir.mkdir(parents=True)
    options, keyed, _ = PLANENGINE_SINKS[sink]
    options = options.replace("{out}", str(job_dir / "out"))
    pk = ", PRIMARY KEY (k) NOT ENFORCED" if keyed else ""
    (job_dir / "job.sql").write_text(
        f"CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{src}', "
        f"'format' = 'json');\n"
        f"CREATE TABLE upsert_sink (k STRING, c BIGINT, s BIGINT{pk}) WITH ({options});\n"
        f"{STATEMENT};\n")
    env = {**os.environ, "PLANENGINE_PROGRESS": "0"}
    start = time.monotonic()
    proc = subprocess.run([str(PLANENGINE), "run", "--script", str(job_dir / "job.sql"), "--job-root",
                           str(job_dir / "root"), "--until-idle"], capture_output=True, text=True, timeout=7200,
                          env=env)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        raise RuntimeError(f"planengine ({sink}) failed:\n{proc.stderr[-3000:]}")
    out: dict = {"wall": wall}
    if sink == "changelog-json":
        out["check"] = check_changelog(job_dir / "out")
    return out


def check_changelog(out: Path) -> tuple[int, int, int]:
    """Materialize the changelog-json sink: (keys, sum of counts, sum of sums)."""
    table: dict[str, tuple[int, int]] = {}
    for p in sorted(out.glob("*.json")):
        for line in p.read_text().splitlines():
            r = json.loads(line)
            if r["op"] in ("+I", "+U"):
                table[r["k"]] = (r["c"], r["s"])
            elif r["op"] == "-D":
                table.pop(r["k"], None)
    return len(table), sum(c for c, _ in table.values()), sum(s for _, s in table.values())


# --- report ------------------------------------------------------------------------------------------------
def machine() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GB RAM"
    except (OSError, ValueError, IndexError):
        pass
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    load = os.getloadavg()[0]
    return (f"{os.cpu_count()} cores ({cpu}), {mem}, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, {java[0] if java else 'java ?'}; "
            f"1-min load average at the start: {load:.1f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--work", type=Path, default=Path("/tmp/planengine-p2"))
    ap.add_argument("--skip-flink", action="store_true")
    ap.add_argument("--skip-planengine", action="store_true")
    ap.add_argument("--flink-runs", default=",".join(FLINK_RUNS))
    ap.add_argument("--planengine-sinks", default=",".join(PLANENGINE_SINKS))
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/p2_pyflink.py " + " ".join(argv if argv is not None else sys.argv[1:])
    host = machine()

    t = time.monotonic()
    src = generate(args.work, args.rows, args.keys, args.files)
    tiny = generate(args.work, 10, 10, 1)
    print(f"input: {src} ({time.monotonic() - t:.1f} s)", file=sys.stderr)
    truth = expected_totals(src)

    rows: list[tuple[str, str, float, float | None, str]] = []  # engine, variant, wall, net, note
    flink_error, flink_version = (None, "") if args.skip_flink else ensure_flink_venv()
    if not args.skip_flink and flink_error is None:
        for run in args.flink_runs.split(","):
            mode, sink = FLINK_RUNS[run]
            label = f"{mode}, {'debezium-json file sink (-U kept)' if sink == 'changelog_sink' else 'keyed blackhole'}"
            try:
                base = run_flink(args.work, tiny, run)
                full = run_flink(args.work, src, run)
            except RuntimeError as error:
                rows.append((f"PyFlink {flink_version}", label, 0.0, None, f"failed: {str(error)[-300:]}"))
                continue
            net = full["wall"] - base["wall"]
            rows.append((f"PyFlink {flink_version}", label, full["wall"], net,
                         f"job {full['job']:.1f} s (execute→wait), startup {full['startup']:.1f} s"))
            print(rows[-1], file=sys.stderr)
    pe_checks = []
    if not args.skip_planengine:
        spark = subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-c",
                                "import pyspark; print(pyspark.__version__)"], capture_output=True, text=True)
        for sink in args.planengine_sinks.split(","):
            base = run_planengine(args.work, tiny, sink)
            full = run_planengine(args.work, src, sink)
            note = PLANENGINE_SINKS[sink][2]
            if "check" in full:
                ok = full["check"] == truth
                pe_checks.append(ok)
                verdict = "matches the input" if ok else f"MISMATCH {full['check']} vs {truth}"
                note += f"; output checked: {verdict}"
            rows.append((f"planengine (Spark {spark.stdout.strip()})", f"until-idle, {sink} sink", full["wall"],
                         full["wall"] - base["wall"], note))
            print(rows[-1], file=sys.stderr)

    report = render(args, command, host, rows, flink_error, truth)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report)
    print(report)
    return 0 if all(pe_checks) else 1


def render(args, command, host, rows, flink_error, truth) -> str:  # type: ignore[no-untyped-def]
    lines = [
        "# P2: group aggregate into an upsert sink — planengine vs PyFlink",
        "",
        f"Command: `{command.strip()}` (from the repository root; `benchmarks/p2_pyflink.py`)",
        "",
        f"Machine: {host}",
        "",
        f"Input: {args.rows:,} rows in {args.files} JSON-lines files, {args.keys:,} keys "
        f"({truth[0]:,} present), `{{\"k\": STRING, \"v\": BIGINT}}`.",
        "",
        f"Statement (both engines): `{STATEMENT}`; `upsert_sink` = `blackhole` with `PRIMARY KEY (k) NOT ENFORCED`"
        " (both compute the update changelog without UPDATE_BEFORE and discard it); the changelog sink keeps "
        "UPDATE_BEFORE (`filesystem` + `debezium-json` on both; planengine also `changelog-json` and a blackhole "
        "without a key). Parallelism 2 on both (Flink `parallelism.default` = 2; planengine `local[2]`, 2 shuffle "
        "partitions).",
        "",
        "| Engine | Mode / sink | Wall-clock (s) | Net (s) | Rows/s (net) | Rows/s (wall) | Notes |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for engine, variant, wall, net, note in rows:
        rate = f"{args.rows / net:,.0f}" if net and net > 0 else "n/a"
        wall_rate = f"{args.rows / wall:,.0f}" if wall else "n/a"
        lines.append(f"| {engine} | {variant} | {wall:.1f} | {net or 0:.1f} | {rate} | {wall_rate} | {note} |")
    ratio = _ratio(rows)
    if ratio:
        lines += ["", ratio]
    if flink_error:
        lines += ["", "PyFlink could not be installed here:", "", "```", flink_error, "```"]
    lines += [
        "",
        "Net = wall-clock minus the wall-clock of the same job over a 10-row input (JVM start, planning, job or "
        "query start, and for planengine the stop snapshot): processing time without fixed costs.",
    ]
    return "\n".join(lines) + "\n"


def _ratio(rows) -> str:  # type: ignore[no-untyped-def]
    """planengine ÷ PyFlink streaming, net rows/s, for the changelog sink that keeps UPDATE_BEFORE."""
    def net(engine: str, variant: str) -> float | None:
        for e, v, _, n, _ in rows:
            if e.startswith(engine) and v == variant and n and n > 0:
                return n
        return None

    flink = net("PyFlink", "streaming, debezium-json file sink (-U kept)")
    ours = net("planengine", "until-idle, debezium-json sink")
    if not flink or not ours:
        return ""
    return (f"Changelog sink with UPDATE_BEFORE (debezium-json files, both engines): planengine ÷ PyFlink streaming "
            f"= {flink / ours:.2f} (net rows/s; target ≥ 1.0).")


if __name__ == "__main__":
    sys.exit(main())
