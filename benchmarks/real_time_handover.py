"""A warm-standby handover of a running Kafka job, in Real-time Mode and in micro-batch mode (issue 23, item 3).

    .venv/bin/python -m benchmarks.real_time_handover [--modes rtm,micro] [--rate 200] [--warmup 60]
                                                      [--after 30] [--interval "5 s"] [--record]

What the operator does in an upgrade, driven by hand on two real ``planengine run`` processes: the old driver runs
``GROUP BY k`` (``COUNT(*)``, ``MAX(pt)``) from a Kafka topic into ``upsert-kafka`` while a producer writes
``rate`` records a second; a standby (``run --standby``) starts and warms up; then ``POST /v1/stop`` with a
snapshot on the old driver (in Real-time Mode it ends at the end of the long batch, which runs for the checkpoint
interval) and ``POST /v1/start`` with that snapshot on the standby, which forks it into a new run and continues.

Measured per mode: the stop's and the start's durations, the longest gap in the output topic around the
handover (the downtime a consumer sees), the worst latency of a record produced during it, and the steady p99
before it (after the standby is ready). Checked: every key's final count equals the records produced for it
(nothing lost, nothing counted twice), no key's count ever goes back, and the new run was forked from the stop's
snapshot.
``tests/runtime/connectors/test_kafka_handover.py`` runs the same handover, small, as a test of those checks.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.latency import KEYS, REPO, _uptime, _wait_for_start, arrivals, produce
from tests.fixtures.child_process import free_port
from tests.fixtures.child_process import stop as stop_process

RESULTS = REPO / "benchmarks" / "results" / "real_time_handover.md"
SCRIPT = """{mode}
CREATE TABLE src (id BIGINT, k STRING, pt BIGINT)
  WITH ('connector' = 'kafka', 'topic' = '{source}', 'properties.bootstrap.servers' = '{bootstrap}',
        'scan.startup.mode' = 'earliest-offset', 'format' = 'json');
CREATE TABLE out_t (k STRING, n BIGINT, pt BIGINT, PRIMARY KEY (k) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = '{sink}', 'properties.bootstrap.servers' = '{bootstrap}',
        'key.format' = 'json', 'value.format' = 'json');
INSERT INTO out_t SELECT k, COUNT(*), MAX(pt) FROM src GROUP BY k;
"""
REAL_TIME = "SET 'pipeline.real-time' = 'required';\nSET 'pipeline.real-time.checkpoint-interval' = '{interval}';"
MICRO_BATCH = "SET 'pipeline.real-time' = 'off';"


@dataclass
class Handover:
    """One handover's timeline (monotonic-free wall-clock seconds) and what the output showed."""

    mode: str
    rate: int
    interval: str
    load: str = ""
    snapshot: str = ""
    new_run: str = ""
    forked_from: str | None = None
    stop_s: float = 0.0
    start_s: float = 0.0
    gap_s: float = 0.0
    worst_ms: float = 0.0
    steady_p99_ms: float | None = None
    produced: int = 0
    records: int = 0
    replayed: int = 0  # output records repeating a (key, count) already seen: an at-least-once replay
    went_back: list[str] = field(default_factory=list)  # keys whose count decreased
    wrong: dict[str, tuple[int | None, int]] = field(default_factory=dict)  # key -> (final count, expected)

    @property
    def exact(self) -> bool:
        return not self.wrong and not self.went_back and self.forked_from == self.snapshot


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=300) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        raise RuntimeError(f"{url}: HTTP {error.code}: {error.read()[:500]!r}") from None


def _phase(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url + "/v1/status", timeout=10) as answer:
            return json.loads(answer.read()).get("phase")
    except (OSError, ValueError):
        return None


def _consume(bootstrap: str, topic: str, stop: threading.Event, out: list[tuple[float, str, int, int]]) -> None:
    """Every output record as ``(receive ms, key, count, newest pt)`` (counts only grow: no tombstones due)."""
    for received, value in arrivals(bootstrap, topic, stop, "handover"):
        out.append((received, value["k"], value["n"], value["pt"]))


def _driver(args: list[str], home: Path, port: int, name: str) -> subprocess.Popen:
    """``planengine run`` of this checkout (``-m`` from the repository: the code beside this file)."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PLANENGINE_SPARK_MASTER": "local[4]"}
    return subprocess.Popen([sys.executable, "-m", "planengine.cli", "run", *args, "--job-root", str(home / "root"),
                             "--status-port", str(port), "--spark-log", str(home / f"spark-{name}.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def expected_counts(produced: int) -> dict[str, int]:
    """Records per key for ids ``0 .. produced-1`` (``latency.produce`` keys id ``i`` as ``k<i % KEYS>``)."""
    return dict(Counter(f"k{i % KEYS}" for i in range(produced)))


def judge(result: Handover, records: list[tuple[float, str, int, int]], handover_at_ms: float,
          started_at_ms: float, input_end_ms: float, steady_from_ms: float = 0.0) -> None:
    """Fill ``result``'s output figures and checks from the consumed records. The gap is taken from a second
    before the handover to the end of the input (after it, no output is due); the steady p99 from
    ``steady_from_ms`` (the standby warmed up: its JVM start competes for the cores) to 2 s before the handover."""
    result.records = len(records)
    latest: dict[str, int] = {}
    seen: set[tuple[str, int]] = set()
    for _, key, n, _ in records:
        if (key, n) in seen:
            result.replayed += 1
        seen.add((key, n))
        if n < latest.get(key, 0):
            result.went_back.append(key)
        latest[key] = max(n, latest.get(key, 0))
    for key, want in expected_counts(result.produced).items():
        if latest.get(key) != want:
            result.wrong[key] = (latest.get(key), want)
    times = sorted(t for t, _, _, pt in records if t >= handover_at_ms - 1000 and pt <= input_end_ms)
    result.gap_s = max((b - a for a, b in itertools.pairwise(times)), default=0.0) / 1000
    during = [t - pt for t, _, _, pt in records if handover_at_ms <= pt <= started_at_ms + 5000]
    result.worst_ms = max(during, default=0.0)
    steady = sorted(t - pt for t, _, _, pt in records if steady_from_ms <= pt < handover_at_ms - 2000)
    result.steady_p99_ms = steady[min(len(steady) - 1, int(0.99 * len(steady)))] if steady else None


def handover(bootstrap: str, topic: Any, mode: str, rate: int, warmup: float, after: float, interval: str,
             work: Path, settle: float = 120.0) -> Handover:
    """One handover in ``mode`` (``rtm`` or ``micro``); ``topic(prefix)`` makes a new topic on the broker."""
    result = Handover(mode, rate, interval, load=_uptime())
    home = work / f"{mode}-{rate}"
    home.mkdir(parents=True)
    source, sink = topic("handover-in"), topic("handover-out")
    setting = REAL_TIME.format(interval=interval) if mode == "rtm" else MICRO_BATCH
    (home / "job.sql").write_text(SCRIPT.format(mode=setting, source=source, sink=sink, bootstrap=bootstrap))
    old_port, new_port = free_port(), free_port()
    old = _driver(["--script", str(home / "job.sql")], home, old_port, "old")
    new: subprocess.Popen | None = None
    stop, counter, records = threading.Event(), [0], []
    enough = threading.Event()  # set ``after`` seconds past the handover: the producer ends then
    producer = threading.Thread(target=produce, args=(bootstrap, source, rate, 24 * 3600.0, False, enough, counter))
    consumer = threading.Thread(target=_consume, args=(bootstrap, sink, stop, records))
    try:
        _wait_for_start(old)
        consumer.start()
        producer.start()
        producing_since = time.monotonic()
        new = _driver(["--plan", str(home / "root" / "plan.json"), "--standby"], home, new_port, "new")
        deadline = time.monotonic() + 300
        while _phase(f"http://127.0.0.1:{new_port}") != "Standby":
            if new.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the standby never reached phase Standby (exit {new.poll()})")
            time.sleep(0.5)
        ready_at = time.time() + 5  # the standby's warm-up done, and 5 s for the machine to settle
        time.sleep(max(5.0, warmup - (time.monotonic() - producing_since)))  # the rest of the warm-up
        handover_at = time.time()
        stopped = _post(f"http://127.0.0.1:{old_port}/v1/stop", {"snapshot": True})
        result.stop_s = time.time() - handover_at
        result.snapshot = stopped["snapshotId"]
        begun = time.time()
        started = _post(f"http://127.0.0.1:{new_port}/v1/start",
                        {"fromSnapshot": str(home / "root" / "snapshots" / result.snapshot)})
        result.start_s = time.time() - begun
        result.new_run = started["runId"]
        marker = json.loads((home / "root" / "runs" / result.new_run / "run.json").read_text())
        result.forked_from = marker["fromSnapshot"]
        time.sleep(after)
        enough.set()
        producer.join()
        input_end = time.time()
        result.produced = counter[0]
        want = expected_counts(result.produced)
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            latest: dict[str, int] = {}
            for _, key, n, _ in list(records):
                latest[key] = max(n, latest.get(key, 0))
            if latest == want:
                break
            time.sleep(1)
        stop.set()
        consumer.join(30)
        judge(result, list(records), handover_at * 1000, (begun + result.start_s) * 1000, input_end * 1000,
              ready_at * 1000)
    finally:
        stop.set()
        enough.set()
        stop_process(old)
        if new is not None:
            stop_process(new)
        result.load += f" / {_uptime()}"
    return result


def report(results: list[Handover], command: str) -> str:
    lines = ["# A warm-standby handover of a running Kafka job: Real-time Mode against micro-batch", "",
             f"Command: `{command}` (`benchmarks/real_time_handover.py`; the module doc says what is measured).",
             "", "| mode | rate/s | interval | stop (s) | start (s) | output gap (s) | worst latency during (ms) | "
             "steady p99 before (ms) | records in / out | replayed | exact | load |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in results:
        p99 = f"{r.steady_p99_ms:.0f}" if r.steady_p99_ms is not None else "-"
        lines.append(f"| {r.mode} | {r.rate} | {r.interval if r.mode == 'rtm' else '-'} | {r.stop_s:.1f} | "
                     f"{r.start_s:.1f} | {r.gap_s:.1f} | {r.worst_ms:.0f} | {p99} | {r.produced} / {r.records} | "
                     f"{r.replayed} | {'yes' if r.exact else 'NO: ' + _why(r)} | {r.load} |")
    return "\n".join(lines) + "\n"


def _why(r: Handover) -> str:
    parts = []
    if r.wrong:
        parts.append(f"{len(r.wrong)} keys wrong, e.g. {sorted(r.wrong.items())[:2]}")
    if r.went_back:
        parts.append(f"counts went back for {sorted(set(r.went_back))[:3]}")
    if r.forked_from != r.snapshot:
        parts.append(f"new run from {r.forked_from}, not {r.snapshot}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="rtm,micro")
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds of input before the handover (the "
                        "standby starts meanwhile; the steady p99 is taken after it is ready)")
    parser.add_argument("--after", type=float, default=30.0)
    parser.add_argument("--interval", default="5 s")
    parser.add_argument("--record", action="store_true", help=f"write {RESULTS.relative_to(REPO)}")
    args = parser.parse_args(argv)

    from tests.fixtures.kafka import start_broker

    results = []
    with tempfile.TemporaryDirectory(prefix="handover-") as tmp:
        (Path(tmp) / "kafka").mkdir()
        broker = start_broker(Path(tmp) / "kafka")
        try:
            for mode in args.modes.split(","):
                result = handover(broker.bootstrap, broker.topic, mode, args.rate, args.warmup, args.after,
                                  args.interval, Path(tmp))
                results.append(result)
                print(report([result], "").splitlines()[-1], flush=True)
        finally:
            stop_process(broker.process)
    text = report(results, "python -m benchmarks.real_time_handover "
                  + " ".join(argv if argv is not None else sys.argv[1:]))
    print(text)
    if args.record:
        RESULTS.write_text(text)
    return 0 if all(r.exact for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
