"""Where the p99 tail of keep-first dedup in Real-time Mode comes from (issue 23, item 4: show where the time goes).

    .venv/bin/python -m benchmarks.dedup_tail_profile [--rate 10000] [--warmup 10] [--seconds 40] [--record]

``benchmarks/latency.py`` measured the ``dedup`` shape in the mode at p50 44 ms but p99 1 625 ms at 10 k events/s
(PyFlink: 43 and 107 ms): a tail, not a steady delay. This runs that one cell again (the same SQL, engine and
producer) and records, beside each output record's latency, two things that say where its time went:

* **when** the slow records arrived, against the query's batch boundaries (``commits/N`` of its checkpoint: a
  real-time batch ends at its checkpoint interval, commits its state, and the next batch is scheduled): if the
  tail is the boundary, the slow records arrive in the seconds after a commit;
* **what the task threads were doing**: ``jstack`` of the driver's JVM every 500 ms (the session is ``local[4]``:
  the tasks are threads of the driver), each ``Executor task launch worker`` thread's state and top frames, counted
  over the run and over the samples taken while output was slow.

Figures are only comparable on a quiet machine; the report gives the load.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from benchmarks.latency import REPO, Cell, _start_engine, _uptime, arrivals, produce

RESULTS = REPO / "benchmarks" / "results" / "dedup_tail.md"
SAMPLE_EVERY_S = 0.5  # a dump stops the JVM at a safepoint for a few ms: not too often
_THREAD = re.compile(r'^"(?P<name>[^"]+)".*?\n\s+java\.lang\.Thread\.State: (?P<state>\S+)(?P<frames>(?:\n\s+at .*)*)',
                     re.MULTILINE)


def jvm_of(process: subprocess.Popen) -> int | None:
    """The Spark JVM that ``planengine run`` started (a descendant running java), or None."""
    parents = [process.pid]
    while parents:
        children = subprocess.run(["pgrep", "-P", ",".join(map(str, parents))], capture_output=True,
                                  text=True).stdout.split()
        for child in children:
            if Path(f"/proc/{child}/comm").read_text().strip() == "java":
                return int(child)
        parents = [int(c) for c in children]
    return None


def task_frames(dump: str, depth: int = 3) -> list[str]:
    """Per task thread of one ``jstack`` dump: its state and top ``depth`` frames, as one line.

    >>> dump = ('"Executor task launch worker for task 1.0" #80 daemon\\n   java.lang.Thread.State: RUNNABLE\\n'
    ...         '\\tat org.rocksdb.RocksDB.put(Native Method)\\n\\tat a.B.c(B.java:1)\\n\\n'
    ...         '"main" #1\\n   java.lang.Thread.State: WAITING\\n\\tat x.Y.z(Y.java:2)\\n')
    >>> task_frames(dump, depth=2)
    ['RUNNABLE org.rocksdb.RocksDB.put(Native Method) < a.B.c(B.java:1)']
    """
    out = []
    for match in _THREAD.finditer(dump):
        if not match["name"].startswith("Executor task launch worker"):
            continue
        frames = [f.strip().removeprefix("at ") for f in match["frames"].strip().splitlines()[:depth]]
        out.append(f"{match['state']} {' < '.join(frames)}")
    return out


def sample(pid: int, stop: threading.Event, samples: list[tuple[float, list[str]]]) -> None:
    """``jstack`` every ``SAMPLE_EVERY_S`` until ``stop``: ``(wall ms, task thread lines)``."""
    while not stop.is_set():
        taken = time.time() * 1000
        dump = subprocess.run(["jstack", str(pid)], capture_output=True, text=True, timeout=30).stdout
        samples.append((taken, task_frames(dump)))
        stop.wait(SAMPLE_EVERY_S)


def commit_times(root: Path) -> list[float]:
    """Wall ms of every ``commits/N`` of the run's queries (the batch boundaries)."""
    return sorted(p.stat().st_mtime * 1000 for p in root.glob("runs/*/checkpoints/*/commits/*") if p.name.isdigit())


def since_commit(t: float, commits: list[float]) -> float | None:
    earlier = [c for c in commits if c <= t]
    return (t - earlier[-1]) / 1000 if earlier else None


def quantiles(values: list[float]) -> dict[float, float]:
    ordered = sorted(values) or [0.0]
    return {q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.5, 0.9, 0.99, 0.999)}


def report(cell: Cell, records: list[tuple[float, float]], commits: list[float],
           samples: list[tuple[float, list[str]]], engine_part: list[float], command: str) -> str:
    latencies = sorted(lat for _, lat in records)
    p = quantiles(latencies)
    engine = quantiles(engine_part)
    reader = quantiles([lat - part for (_, lat), part in zip(records, engine_part, strict=True)])
    start = records[0][0] if records else 0.0
    buckets: dict[int, list[float]] = {}
    for t, lat in records:
        buckets.setdefault(int((t - start) // 5000), []).append(lat)
    slow = [(t, lat) for t, lat in records if lat >= p[0.99]]
    gaps = [since_commit(t, commits) for t, _ in slow]
    near = sum(1 for g in gaps if g is not None and g < 3.0)
    slow_windows = [(t - lat, t) for t, lat in slow]  # from the slow record's produce time to its arrival

    def during_slow(at: float) -> bool:
        return any(start <= at <= end for start, end in slow_windows)

    overall: Counter[str] = Counter(line for _, lines in samples for line in lines)
    stalled: Counter[str] = Counter(line for at, lines in samples if during_slow(at) for line in lines)
    n_stalled = sum(1 for at, _ in samples if during_slow(at))
    lines = [
        "# Keep-first dedup in Real-time Mode at 10 k events/s: where the p99 tail comes from", "",
        f"- Command: `{command}` (`benchmarks/dedup_tail_profile.py`; the module doc says what is recorded).",
        f"- Load at start / end: {cell.load}. Records produced {cell.produced}, measured {len(records)}.",
        f"- Latency ms: p50 {p[0.5]:.0f}, p90 {p[0.9]:.0f}, p99 {p[0.99]:.0f}, p99.9 {p[0.999]:.0f}, "
        f"max {latencies[-1]:.0f}.",
        f"- Split by the output record's Kafka timestamp (when the engine's producer wrote it): the engine's part "
        f"(write - produce) p50 {engine[0.5]:.0f}, p90 {engine[0.9]:.0f}, p99 {engine[0.99]:.0f} ms; the reader's "
        f"part (receive - write) p50 {reader[0.5]:.0f}, p90 {reader[0.9]:.0f}, p99 {reader[0.99]:.0f} ms.",
        "- Over time (arrival, 5 s buckets): " + "; ".join(
            f"{5 * b}-{5 * b + 5} s p50 {quantiles(v)[0.5]:.0f} p99 {quantiles(v)[0.99]:.0f}"
            for b, v in sorted(buckets.items())) + ".",
        f"- Batch boundaries (commits) in the measured span: {len(commits)}; the slow records (>= p99, "
        f"{len(slow)}) that arrived within 3 s after a commit: {near} ({100 * near / max(1, len(slow)):.0f} %).",
        f"- `jstack` samples: {len(samples)} over the run, {n_stalled} taken while a slow record was on its way.", "",
        "## Task threads, all samples (state and top frames; count = thread-samples)", "",
        *[f"- {count}: `{line}`" for line, count in overall.most_common(12)], "",
        "## Task threads while a slow record was on its way", "",
        *[f"- {count}: `{line}`" for line, count in stalled.most_common(12)], "",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=10000)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--record", action="store_true", help=f"write {RESULTS.relative_to(REPO)}")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from tests.fixtures.child_process import stop as stop_process
    from tests.fixtures.kafka import start_broker

    cell = Cell("dedup", args.rate, "planengine-rtm", load=_uptime())
    records: list[tuple[float, float]] = []
    written: list[float] = []  # each output record's Kafka timestamp: when the engine's producer wrote it
    engine_part: list[float] = []  # per measured record: its write time - its produce time
    samples: list[tuple[float, list[str]]] = []
    with tempfile.TemporaryDirectory(prefix="dedup-tail-") as tmp:
        (Path(tmp) / "kafka").mkdir()
        broker = start_broker(Path(tmp) / "kafka")
        try:
            source, sink = broker.topic("in-dedup", partitions=2), broker.topic("out-dedup", partitions=2)
            engine = _start_engine(broker.bootstrap, cell, source, sink, Path(tmp), args.warmup + args.seconds + 30)
            pid = jvm_of(engine)
            stop, counter = threading.Event(), [0]
            after_ms = time.time() * 1000 + args.warmup * 1000

            def consume() -> None:
                for received, value in arrivals(broker.bootstrap, sink, stop, "dedup-tail", written):
                    if value["pt"] >= after_ms:
                        records.append((received, received - value["pt"]))
                        engine_part.append(written[-1] - value["pt"])

            threads = [threading.Thread(target=produce, args=(broker.bootstrap, source, args.rate,
                                                              args.warmup + args.seconds, True, stop, counter)),
                       threading.Thread(target=consume)]
            if pid is not None:
                threads.append(threading.Thread(target=sample, args=(pid, stop, samples)))
            for t in threads:
                t.start()
            threads[0].join()
            time.sleep(10)
            stop.set()
            for t in threads[1:]:
                t.join(60)
            cell.produced = counter[0]
            home = Path(tmp) / f"dedup-{args.rate}-planengine-rtm"  # latency._start_engine's
            commits = [c for c in commit_times(home / "root") if c >= after_ms]
            engine.terminate()
            engine.wait(120)
        finally:
            stop_process(broker.process)
    cell.load += f" / {_uptime()}"
    text = report(cell, records, commits, samples, engine_part,
                  "python -m benchmarks.dedup_tail_profile " + " ".join(argv if argv is not None else sys.argv[1:]))
    print(text)
    if args.record:
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
