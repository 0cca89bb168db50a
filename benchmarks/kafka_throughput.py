"""Kafka source -> GROUP BY -> upsert-kafka: throughput of planengine and PyFlink on the same broker and data (issue 19,
item 6).

    .venv/bin/python -m benchmarks.kafka_throughput [--records 1000000] [--keys 10000] [--engines planengine,pyflink]
                                                     [--record]

What it does, on one real single-node Kafka broker (the tests' own, from the pinned jars: ``tests/fixtures/kafka.py``):

1. writes ``--records`` JSON records ``{"k": "key<i % keys>", "v": i}`` into a 2-partition topic (and 10 records
   into a second topic, for the fixed costs);
2. runs ``INSERT INTO totals SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k`` into an ``upsert-kafka`` topic on
   each engine, reading the topic from its start to its end: planengine with ``planengine run --until-idle`` (it
   processes what the topic holds, then stops with a snapshot), PyFlink with ``'scan.bounded.mode' =
   'latest-offset'`` (its job ends at the offsets the topic had when it started). Same SQL otherwise, each
   engine's defaults, parallelism 2 on both (planengine's ``local[2]`` and 2 state partitions; Flink's
   ``parallelism.default``);
3. checks the output: the latest value per key (what an upsert-kafka consumer keeps) sums to ``--records`` rows
   and to the sum of ``v``;
4. times each run's process (wall clock) and subtracts the same engine's run over the 10-record topic (JVM start,
   planning, job start and stop): ``net`` is the processing time, and records/s = records / net.

PyFlink runs from ``<repo>/.venv-flink22`` with its Kafka SQL connector pinned in ``jars.lock``
(``benchmarks/latency.py``: ``ensure_flink``). Compare figures only within one run on a quiet machine: the report
gives the load before and after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.latency import PLANENGINE, PYFLINK_JOB, PYTHON, REPO, _uptime, ensure_flink

RESULTS = REPO / "benchmarks" / "results" / "kafka_throughput.md"
SCRIPT = """CREATE TABLE src (k STRING, v BIGINT)
  WITH ('connector' = 'kafka', 'topic' = '{source}', 'properties.bootstrap.servers' = '{bootstrap}',
        'scan.startup.mode' = 'earliest-offset', 'format' = 'json'{bounded});
CREATE TABLE totals (k STRING, n BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = '{sink}', 'properties.bootstrap.servers' = '{bootstrap}',
        'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k;
"""


@dataclass
class Run:
    engine: str
    records: int
    seconds: float = 0.0
    baseline_s: float = 0.0
    load: str = ""
    check: str = ""

    @property
    def net_s(self) -> float:
        return max(self.seconds - self.baseline_s, 1e-3)


def produce(bootstrap: str, topic: str, records: int, keys: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20,
                         "compression.type": "lz4"})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=json.dumps({"k": f"key{i % keys}", "v": i}))
                break
            except BufferError:  # the local queue is full: let it drain
                producer.poll(0.1)
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


def run_engine(engine: str, broker: object, source: str, records: int, work: Path) -> float:
    """One engine's whole run over ``source`` into a fresh topic; returns its wall-clock seconds."""
    sink = broker.topic(f"totals-{engine}", partitions=2)  # type: ignore[attr-defined]
    home = work / f"{engine}-{source}"
    home.mkdir(parents=True)
    script = home / "job.sql"
    bounded = ", 'scan.bounded.mode' = 'latest-offset'" if engine == "pyflink" else ""
    script.write_text(SCRIPT.format(source=source, sink=sink, bootstrap=broker.bootstrap,  # type: ignore[attr-defined]
                                    bounded=bounded))
    if engine == "pyflink":
        python, jars = ensure_flink()
        command = [str(python), "-c", PYFLINK_JOB, str(script), ",".join(map(str, jars))]
    else:
        command = [str(PLANENGINE), "run", "--script", str(script), "--job-root", str(home / "root"),
                   "--until-idle", "--spark-log", str(home / "spark.log")]
    started = time.monotonic()
    done = subprocess.run(command, cwd=home, capture_output=True, text=True,
                          env={**os.environ, "PYSPARK_PYTHON": str(PYTHON)}, check=False)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"{engine} exited {done.returncode}: {done.stderr[-1500:]}")
    (home / "sink").write_text(sink)
    return seconds


def check_output(broker: object, sink: str, records: int, keys: int) -> str:
    latest: dict[str, dict] = {}
    for r in broker.records(sink):  # type: ignore[attr-defined]
        latest[r.key] = json.loads(r.value) if r.value is not None else None
    rows = sum(v["n"] for v in latest.values() if v)
    total = sum(v["total"] for v in latest.values() if v)
    want = records * (records - 1) // 2
    ok = rows == records and total == want and len(latest) == min(keys, records)
    return "exact" if ok else f"WRONG: {len(latest)} keys, {rows} rows (want {records}), sum {total} (want {want})"


def report(runs: list[Run], command: str) -> str:
    lines = [
        "# Kafka -> GROUP BY -> upsert-kafka throughput: planengine and PyFlink (issue 19, item 6)", "",
        f"- Command: `{command}`; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores; "
        "one single-node Kafka broker on the same machine.",
        "- `net` = wall clock of the run minus the same engine's run over 10 records (JVM start, planning, job "
        "start and stop); records/s = records / net. `check`: the latest value per key sums to every input row.",
        "",
        "| engine | records | wall s | fixed s | net s | records/s | check | load (start / end) |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in runs:
        lines.append(f"| {r.engine} | {r.records} | {r.seconds:.1f} | {r.baseline_s:.1f} | {r.net_s:.1f} | "
                     f"{r.records / r.net_s:,.0f} | {r.check} | {r.load} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--engines", default="planengine,pyflink")
    parser.add_argument("--record", action="store_true", help=f"write {RESULTS.relative_to(REPO)}")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from tests.fixtures.child_process import stop as stop_process
    from tests.fixtures.kafka import start_broker

    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="kafka-throughput-") as tmp:
        (Path(tmp) / "kafka").mkdir()
        broker = start_broker(Path(tmp) / "kafka")
        try:
            big, small = broker.topic("clicks", partitions=2), broker.topic("few", partitions=2)
            produce(broker.bootstrap, big, args.records, args.keys)
            produce(broker.bootstrap, small, 10, args.keys)
            for engine in args.engines.split(","):
                run = Run(engine, args.records, load=_uptime())
                try:
                    run.baseline_s = run_engine(engine, broker, small, 10, Path(tmp))
                    run.seconds = run_engine(engine, broker, big, args.records, Path(tmp))
                    sink = (Path(tmp) / f"{engine}-{big}" / "sink").read_text()
                    run.check = check_output(broker, sink, args.records, args.keys)
                except Exception as error:  # one engine's failure is reported, the other still runs
                    run.check = f"{type(error).__name__}: {str(error)[:300]}"
                run.load += f" / {_uptime()}"
                runs.append(run)
                print(f"{engine}: {run.seconds:.1f} s (fixed {run.baseline_s:.1f} s) {run.check}", flush=True)
        finally:
            stop_process(broker.process)
    text = report(runs, "python -m benchmarks.kafka_throughput " + " ".join(argv if argv is not None
                                                                            else sys.argv[1:]))
    print(text)
    if args.record:
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
