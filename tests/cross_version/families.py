"""Node families of the cross-Spark-version restore tests, as data, plus the engines and the sink reader.

One job (a statement set) holds every family whose restore across Spark minors is recorded as working, so
one JVM per phase covers them all; a family recorded as failing gets a job of its own, so its failure
cannot hide the others' results. Input rows are split into a phase-1 part (before the snapshot, run on
the old engine) and a phase-2 part (after it, on the new engine); the expected output is computed here
from all rows, in Python, independently of the engine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ENGINE_A = REPO / ".venv-spark42" / "bin" / "planengine"  # previous Spark minor (tests/setup/prepare.d/30-…)
ENGINE_B = REPO / ".venv" / "bin" / "planengine"  # this Spark minor (make venv)
DOCS = REPO / "docs" / "engines.md"

T0 = datetime(2024, 1, 1)
Row = dict[str, Any]


def ts(second: int) -> str:
    return (T0 + timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S.000")


# --- input data: two phases per source -------------------------------------------------------------------
# ev: 3 keys, one row per event-time second; phase 2 continues in event time and adds a new key (k3).
EV1 = [{"k": f"k{i % 3}", "v": i, "ts": ts(i)} for i in range(1, 13)]
EV2 = [{"k": f"k{i % 4}", "v": i, "ts": ts(i)} for i in range(13, 22)]
# lft / rgt: phase-2 right rows 4, 5 meet left rows kept in the joins' state since phase 1 (also within the
# interval join's ±5 s); phase-2 rows 6, 7 meet each other only in the regular join (8 s apart).
LFT1 = [{"id": i, "a": f"a{i}", "ts": ts(i)} for i in range(1, 6)]
RGT1 = [{"id": i, "b": f"b{i}", "ts": ts(i + 1)} for i in range(1, 4)]
LFT2 = [{"id": i, "a": f"a{i}", "ts": ts(i + 10)} for i in range(6, 8)]
RGT2 = [{"id": i, "b": f"b{i}", "ts": ts(i + 2)} for i in range(4, 8)]

SOURCES_DDL = {
    "ev": "CREATE TABLE ev (k STRING, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
    "lft": "CREATE TABLE lft (id BIGINT, a STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
    "rgt": "CREATE TABLE rgt (id BIGINT, b STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)",
}
PHASES: dict[str, tuple[list[Row], list[Row]]] = {"ev": (EV1, EV2), "lft": (LFT1, LFT2), "rgt": (RGT1, RGT2)}


# --- expected results, computed from the input ------------------------------------------------------------
def _calc(rows: list[Row]) -> Counter:
    return Counter((r["k"], r["v"] * 2) for r in rows if r["v"] > 0)


def _second(r: Row) -> int:
    return int((datetime.strptime(r["ts"], "%Y-%m-%d %H:%M:%S.000") - T0).total_seconds())


def _tumble(rows: list[Row]) -> Counter:
    out: Counter = Counter()
    groups: dict[tuple[str, int], list[int]] = {}
    for r in rows:
        second = _second(r)
        groups.setdefault((r["k"], second // 10 * 10), []).append(r["v"])
    for (k, start), vs in groups.items():
        out[(k, ts(start), ts(start + 10), len(vs), sum(vs))] += 1
    return out


def _group(rows: list[Row]) -> Counter:
    acc: dict[str, list[int]] = {}
    for r in rows:
        acc.setdefault(r["k"], []).append(r["v"])
    return Counter((k, len(vs), sum(vs)) for k, vs in acc.items())


def _first(rows: list[Row]) -> Counter:
    first: dict[str, Row] = {}
    for r in sorted(rows, key=lambda r: r["ts"]):
        first.setdefault(r["k"], r)
    return Counter((r["k"], r["v"], r["ts"]) for r in first.values())


def _top2(rows: list[Row]) -> Counter:
    per: dict[str, list[int]] = {}
    for r in rows:
        per.setdefault(r["k"], []).append(r["v"])
    return Counter((k, v) for k, vs in per.items() for v in sorted(vs, reverse=True)[:2])


def _running_sum(rows: list[Row]) -> Counter:
    out: Counter = Counter()
    sums: dict[str, int] = {}
    for r in sorted(rows, key=lambda r: r["ts"]):
        sums[r["k"]] = sums.get(r["k"], 0) + r["v"]
        out[(r["k"], r["v"], sums[r["k"]])] += 1
    return out


def _join(left: list[Row], right: list[Row], within: int | None = None) -> Counter:
    return Counter((lr["id"], lr["a"], rr["b"]) for lr in left for rr in right if lr["id"] == rr["id"]
                   and (within is None or abs(_second(rr) - _second(lr)) <= within))


@dataclass(frozen=True)
class Family:
    name: str
    nodes: str  # the exec node that holds the state, for the docs table
    sink_ddl: str  # columns and options after the table name; {path} is the sink directory
    insert: str
    columns: tuple[str, ...]
    expected: Callable[[dict[str, list[Row]]], Counter]  # all input rows per source → materialized sink
    sources: tuple[str, ...] = ("ev",)


FAMILIES: tuple[Family, ...] = (
    Family("calc", "stream-exec-calc (stateless)",
           "(k STRING, v2 BIGINT)", "INSERT INTO calc_out SELECT k, v * 2 FROM ev WHERE v > 0",
           ("k", "v2"), lambda s: _calc(s["ev"])),
    Family("window_aggregate", "stream-exec-window-aggregate (native, TUMBLE)",
           "(k STRING, ws TIMESTAMP(3), we TIMESTAMP(3), c BIGINT, s BIGINT)",
           "INSERT INTO window_aggregate_out SELECT k, window_start, window_end, COUNT(*), SUM(v) "
           "FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end",
           ("k", "ws", "we", "c", "s"), lambda s: _tumble(s["ev"])),
    Family("group_aggregate", "stream-exec-group-aggregate (transformWithState)",
           "(k STRING, c BIGINT, s BIGINT, PRIMARY KEY (k) NOT ENFORCED)",
           "INSERT INTO group_aggregate_out SELECT k, COUNT(*), SUM(v) FROM ev GROUP BY k",
           ("k", "c", "s"), lambda s: _group(s["ev"])),
    Family("deduplicate", "stream-exec-deduplicate (keep first row by rowtime)",
           "(k STRING, v BIGINT, ts TIMESTAMP(3))",
           "INSERT INTO deduplicate_out SELECT k, v, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k "
           "ORDER BY ts ASC) AS rn FROM ev) WHERE rn = 1",
           ("k", "v", "ts"), lambda s: _first(s["ev"])),
    Family("rank", "stream-exec-rank (Top-2 per key)",
           "(k STRING, v BIGINT)",
           "INSERT INTO rank_out SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k "
           "ORDER BY v DESC) AS rn FROM ev) WHERE rn <= 2",
           ("k", "v"), lambda s: _top2(s["ev"])),
    Family("over_aggregate", "stream-exec-over-aggregate (rowtime, ROWS UNBOUNDED PRECEDING)",
           "(k STRING, v BIGINT, total BIGINT)",
           "INSERT INTO over_aggregate_out SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY ts "
           "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM ev",
           ("k", "v", "total"), lambda s: _running_sum(s["ev"])),
    Family("regular_join", "stream-exec-join (inner, insert-only inputs)",
           "(id BIGINT, a STRING, b STRING)",
           "INSERT INTO regular_join_out SELECT l.id, l.a, r.b FROM lft l JOIN rgt r ON l.id = r.id",
           ("id", "a", "b"), lambda s: _join(s["lft"], s["rgt"]), sources=("lft", "rgt")),
    Family("interval_join", "stream-exec-interval-join",
           "(id BIGINT, a STRING, b STRING)",
           "INSERT INTO interval_join_out SELECT l.id, l.a, r.b FROM lft l JOIN rgt r ON l.id = r.id "
           "AND r.ts BETWEEN l.ts - INTERVAL '5' SECOND AND l.ts + INTERVAL '5' SECOND",
           ("id", "a", "b"), lambda s: _join(s["lft"], s["rgt"], within=5), sources=("lft", "rgt")),
)
BY_NAME = {f.name: f for f in FAMILIES}


# --- scripts and input files --------------------------------------------------------------------------------
def script(families: Iterable[Family], data: Path) -> str:
    families = list(families)
    sources = sorted({s for f in families for s in f.sources})
    ddl = [f"{SOURCES_DDL[s]} WITH ('connector' = 'filesystem', 'path' = '{data}/in/{s}', 'format' = 'json');"
           for s in sources]
    ddl += [f"CREATE TABLE {f.name}_out {f.sink_ddl} WITH ('connector' = 'filesystem', "
            f"'path' = '{data}/out/{f.name}', 'format' = 'changelog-json');" for f in families]
    inserts = [f.insert + ";" for f in families]
    body = inserts[0] if len(inserts) == 1 else "EXECUTE STATEMENT SET BEGIN\n" + "\n".join(inserts) + "\nEND;"
    return "\n".join([*ddl, body]) + "\n"


def write_inputs(data: Path, phase: int, sources: Iterable[str]) -> None:
    for s in sources:
        d = data / "in" / s
        d.mkdir(parents=True, exist_ok=True)
        rows = PHASES[s][phase - 1]
        (d / f"phase{phase}.json").write_text("".join(json.dumps(r) + "\n" for r in rows))


def all_rows(sources: Iterable[str], phases: int = 2) -> dict[str, list[Row]]:
    return {s: [r for p in range(phases) for r in PHASES[s][p]] for s in sources}


# --- sinks ------------------------------------------------------------------------------------------------
def committed_records(sink: Path) -> list[Row]:
    """The records of a filesystem sink's committed files (Spark's ``_spark_metadata`` log), read without Spark,
    in commit order: files a failed batch left behind are not in the log and are not counted.

    Order matters to a changelog: a key's ``-U`` of batch 2 must come after its ``+U`` of batch 0. The log's
    files are named by batch id (``N``; every tenth one ``N.compact``, holding all entries up to N in order);
    within one batch a key's rows are in one file (the sink's input is partitioned by key)."""
    log = sink / "_spark_metadata"
    if not log.is_dir():
        return []
    batches: dict[int, Path] = {}
    compact = -1
    for entry in log.iterdir():
        name = entry.name.removesuffix(".compact")
        if entry.name.startswith(".") or not name.isdigit():
            continue  # checksums (.N.crc) and temporary files
        batches[int(name)] = entry
        if entry.name.endswith(".compact"):
            compact = max(compact, int(name))
    paths: list[str] = []
    for batch in sorted(b for b in batches if b >= compact):
        added = []
        for line in batches[batch].read_text(encoding="utf-8").splitlines()[1:]:  # first line: log version "v1"
            item = json.loads(line)
            if item.get("action", "add") == "add":
                added.append(item["path"])
        paths += added if batch == compact else sorted(added)
    records = []
    for p in dict.fromkeys(paths):
        local = Path(p.removeprefix("file://").removeprefix("file:"))
        records += [json.loads(line) for line in local.read_text(encoding="utf-8").splitlines() if line.strip()]
    return records


def materialize(records: list[Row], columns: tuple[str, ...]) -> Counter:
    """Apply a changelog (``+I``/``+U`` add, ``-U``/``-D`` remove). A retraction of a row that is not there
    means a lost or duplicated update: it raises."""
    table: Counter = Counter()
    for r in records:
        row = tuple(r.get(c) for c in columns)
        if r["op"] in ("+I", "+U"):
            table[row] += 1
        else:
            if table[row] <= 0:
                raise AssertionError(f"retraction {r['op']}{list(row)} of a row the sink does not hold")
            table[row] -= 1
    return +table


# --- engines ----------------------------------------------------------------------------------------------------
@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def json(self) -> Any:
        return json.loads(self.stdout.strip().splitlines()[-1])

    def error(self) -> str:
        """The most telling line of a failure: the CLI's own error, else the Python exception that ended the
        run (a top-level ``…Error: …`` line, not the JVM's stack or py4j listener noise logged after it), else
        the last line mentioning an error."""
        lines = [ln for ln in self.stderr.splitlines() if ln.strip()]
        for ln in reversed(lines):
            if ln.startswith("planengine: error:"):
                return ln.strip()
        for ln in reversed(lines):
            if re.match(r"[A-Za-z_][\w.]*(Error|Exception): ", ln) and not ln.startswith("py4j."):
                return ln.strip()
        for ln in reversed(lines):
            if "Error" in ln or "Exception" in ln or "error:" in ln:
                return ln.strip()
        return lines[-1].strip() if lines else ""


# Spark waits a fixed 10 s for a new (non-daemon) Python worker to connect back, and transformWithState's
# pre-init worker is one: on a loaded machine (several JVMs on 2 cores) several TWS queries starting at once
# can miss it, and the run fails before those queries commit anything; the other way round, that worker's own
# connection to the JVM times out (CANNOT_OPEN_SOCKET, seen at load 30 on 2 cores). The callers retry such a
# run from a clean state (docs/engines.md, "Known runtime issues").
TRANSIENT = ("Python worker failed to connect back", "[CANNOT_OPEN_SOCKET]")


def engine(binary: Path, *args: str, timeout: float = 900) -> Result:
    env = {**os.environ, "PLANENGINE_PROGRESS": "0"}
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PLANENGINE_RUN_ID"):
        env.pop(key, None)  # each engine uses its own interpreter (the session sets it from sys.executable)
    start = time.monotonic()
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout, env=env)
    return Result([str(binary), *args], proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)


def transient(result: Result) -> bool:
    return result.returncode != 0 and any(marker in result.stderr for marker in TRANSIENT)


def latest_snapshot(root: Path) -> Path:
    snaps = sorted((p for p in (root / "snapshots").iterdir() if (p / "manifest.json").is_file()),
                   key=lambda p: json.loads((p / "manifest.json").read_text())["createdAt"])
    return snaps[-1]
