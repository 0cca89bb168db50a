"""End-to-end latency per event through a Kafka topic, a plan, and a sink topic (issue 23, item 1: measured first).

    .venv/bin/python -m benchmarks.latency [--shapes filter,dedup,count,window] [--rates 1000,10000]
                                           [--engines planengine,spark-rtm] [--warmup 20] [--seconds 30] [--record]

What it does, per shape, rate and engine, on one real single-node Kafka broker (the tests' own, from the pinned
jars: ``tests/fixtures/kafka.py``):

* a producer thread writes ``{"id", "k", "pt"}`` JSON records at a steady rate, ``pt`` being the wall-clock
  millisecond it produced the record (``dedup`` sends every id twice);
* the engine runs the shape's pipeline from the input topic into an output topic;
* a consumer thread reads the output topic and takes ``receive time - pt`` per output record: for ``count``
  ``pt`` is the newest input of the key (``MAX(pt)``); for ``window`` the latency counts from the end of the
  1-second window (when the result could first be known) to its arrival;
* only records produced after the warm-up count, so JVM start-up and the first batches are not in the figures.

Engines:

* ``planengine``: ``planengine run --script`` in micro-batch mode with the default trigger (the next batch starts
  as soon as the last one ends: the smallest interval there is);
* ``planengine-rtm``: the same plan compiled with ``pipeline.real-time = 'required'`` (``filter``, ``dedup`` and
  ``count``; ``window`` needs event-time timers, which the mode does not run), on a ``local[4]`` session: every
  stage runs at once, so 2 topic partitions and 2 state partitions need 4 task slots (threads; 2 cores run them);
* ``spark-rtm``: the ``filter`` pipeline written directly against Spark 4.3's Real-time Mode
  (``trigger(realTime=...)``): what the mode gives without planengine;
* ``pyflink``: the same SQL script on PyFlink (``apache-flink`` ``FLINK_SPEC`` in ``<repo>/.venv-flink22``,
  created on first use) with Flink's Kafka SQL connector from Maven Central (``flink-kafka-bench`` in
  ``planengine/runtime/connectors/jars.lock``, checked by sha256), parallelism 2, Flink's defaults otherwise.

Figures are only comparable within one run on a quiet machine: the report gives the load (``uptime``) before and
after each cell.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "latency.md"
PLANENGINE = REPO / ".venv" / "bin" / "planengine"
PYTHON = REPO / ".venv" / "bin" / "python"
KEYS = 1000
WINDOW_MS = 1000

SOURCE = """CREATE TABLE src (id BIGINT, k STRING, pt BIGINT{time})
  WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
        'scan.startup.mode' = 'latest-offset', 'format' = 'json');
"""
EVENT_TIME = ", et AS TO_TIMESTAMP_LTZ(pt, 3), WATERMARK FOR et AS et"
SINK = """CREATE TABLE out_t ({columns})
  WITH ('connector' = '{connector}', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}',
        {formats});
"""
SHAPES: dict[str, dict[str, str]] = {
    "filter": {"time": "", "columns": "id BIGINT, k STRING, pt BIGINT", "connector": "kafka",
               "formats": "'format' = 'json'",
               "insert": "INSERT INTO out_t SELECT id, UPPER(k), pt FROM src WHERE MOD(id, 10) <> 0"},
    # Keep-first by arrival (processing time): each id's first record passes, its duplicate is dropped; an
    # insert-only result on both engines.
    "dedup": {"time": ", ptime AS PROCTIME()", "columns": "id BIGINT, k STRING, pt BIGINT", "connector": "kafka",
              "formats": "'format' = 'json'",
              "insert": "INSERT INTO out_t SELECT id, k, pt FROM (SELECT id, k, pt, ROW_NUMBER() OVER "
                        "(PARTITION BY id ORDER BY ptime ASC) AS rn FROM src) WHERE rn = 1"},
    "count": {"time": "", "columns": "k STRING, n BIGINT, pt BIGINT, PRIMARY KEY (k) NOT ENFORCED",
              "connector": "upsert-kafka", "formats": "'key.format' = 'json', 'value.format' = 'json'",
              "insert": "INSERT INTO out_t SELECT k, COUNT(*), MAX(pt) FROM src GROUP BY k"},
    "window": {"time": EVENT_TIME, "columns": "n BIGINT, pt BIGINT", "connector": "kafka",
               "formats": "'format' = 'json'",
               "insert": "INSERT INTO out_t SELECT COUNT(*), MAX(pt) FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(et), "
                         "INTERVAL '1' SECOND)) GROUP BY window_start, window_end"},
}

RTM_FILTER = textwrap.dedent("""
    import sys, time
    from pyspark.sql import functions as F
    from planengine.runtime.engine.session import get_spark
    bootstrap, source, sink, checkpoint, seconds = sys.argv[1:6]
    spark = get_spark()
    records = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", source).option("startingOffsets", "latest").load())
    value = F.from_json(F.col("value").cast("string"), "id BIGINT, k STRING, pt BIGINT")
    rows = records.select(value.alias("v")).select("v.*").where(F.col("id") % 10 != 0)
    out = rows.select(F.to_json(F.struct(F.col("id"), F.upper("k").alias("k"), F.col("pt"))).alias("value"))
    query = (out.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", sink)
             .option("checkpointLocation", checkpoint).outputMode("update").trigger(realTime="30 seconds").start())
    print("[spark-rtm] query started: plan of the filter shape", file=sys.stderr, flush=True)
    query.awaitTermination(float(seconds))
    print("[spark-rtm] exception:", query.exception(), file=sys.stderr, flush=True)
    query.stop()
""")


FLINK_SPEC = "apache-flink==2.2.1"  # the Flink whose Kafka connector Maven Central serves (5.0.0-2.2)
FLINK_VENV = REPO / ".venv-flink22"  # beside .venv-flink (Flink 2.3, benchmarks/p2_pyflink.py)
PYFLINK_JOB = textwrap.dedent("""
    import sys
    from pyflink.table import EnvironmentSettings, TableEnvironment
    script, jars = sys.argv[1:3]
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("pipeline.jars", ";".join("file://" + j for j in jars.split(",")))
    env.get_config().set("parallelism.default", "2")
    statements = [s.strip() for s in open(script).read().split(";") if s.strip()]
    for ddl in statements[:-1]:
        env.execute_sql(ddl)
    result = env.execute_sql(statements[-1])
    print("[pyflink] job started: plan submitted", file=sys.stderr, flush=True)
    result.wait()
""")
# Which engines run which shapes (module doc).
ENGINE_SHAPES = {"planengine": set(SHAPES), "pyflink": set(SHAPES), "planengine-rtm": {"filter", "dedup", "count"},
                 "spark-rtm": {"filter"}}


def ensure_flink() -> tuple[Path, list[Path]]:
    """PyFlink's interpreter and the Kafka connector jars: the venv is created once (a stamp holds its spec), the
    jars come from the set-up's cache or Maven Central, checked against the lock."""
    python = FLINK_VENV / "bin" / "python"
    stamp = FLINK_VENV / ".planengine-spec"
    if not (stamp.is_file() and stamp.read_text() == FLINK_SPEC and python.exists()):
        subprocess.run([sys.executable, "-m", "venv", str(FLINK_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", FLINK_SPEC],
                       check=True)
        stamp.write_text(FLINK_SPEC)
    sys.path.insert(0, str(REPO / "planengine" / "runtime" / "connectors"))
    import maven_jars  # stdlib only (the set-up runs it before any venv exists)

    jars = maven_jars.cached("flink-kafka-bench")
    if jars is None:
        subprocess.run([sys.executable, str(REPO / "planengine" / "runtime" / "connectors" / "maven_jars.py"),
                        "fetch", "flink-kafka-bench", "--quiet"], check=True)
        jars = maven_jars.cached("flink-kafka-bench")
    assert jars, "the flink-kafka-bench jars could not be fetched"
    return python, jars


@dataclass
class Cell:
    """One shape at one rate on one engine, and what came out of it."""

    shape: str
    rate: int
    engine: str
    produced: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    load: str = ""
    error: str = ""

    def percentile(self, q: float) -> float | None:
        if not self.latencies_ms:
            return None
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def produce(bootstrap: str, topic: str, rate: int, seconds: float, twice: bool, stop: threading.Event,
            counter: list[int]) -> None:
    """``rate`` records a second for ``seconds``, in 10 ms slices; each carries the millisecond it was produced."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "acks": "1"})
    per_slice, next_id, start = rate / 100, 0, time.monotonic()
    owed = 0.0
    while not stop.is_set() and time.monotonic() - start < seconds:
        owed += per_slice
        while owed >= 1:
            now_ms = time.time() * 1000
            body = json.dumps({"id": next_id, "k": f"k{next_id % KEYS}", "pt": int(now_ms)})
            for _ in range(2 if twice else 1):
                producer.produce(topic, value=body)
            next_id += 1
            owed -= 1
        producer.poll(0)
        time.sleep(max(0.0, 0.01 - (time.monotonic() - start) % 0.01))
    producer.flush(30)
    counter[0] = next_id


def arrivals(bootstrap: str, topic: str, stop: threading.Event, group: str,
             written: list[float] | None = None) -> Iterator[tuple[float, dict]]:
    """Each record of ``topic`` from its start, as ``(receive ms, JSON value)``, until ``stop``; tombstones are
    skipped. Polled every 50 ms with a 5 ms fetch wait, so the reading adds little to a measured latency.
    ``written``, when given, gets each yielded record's Kafka timestamp (ms: when the engine's producer wrote it),
    which splits a latency into the engine's part and the reader's."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{group}-{time.time_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "fetch.wait.max.ms": 5})
    consumer.subscribe([topic])
    try:
        while not stop.is_set():
            message = consumer.poll(0.05)
            if message is None or message.error() or message.value() is None:
                continue
            if written is not None:
                written.append(float(message.timestamp()[1]))
            yield time.time() * 1000, json.loads(message.value())
    finally:
        consumer.close()


def consume(bootstrap: str, topic: str, shape: str, after_ms: float, stop: threading.Event,
            latencies: list[float]) -> None:
    """Each output record's latency (module doc), for records whose input came after the warm-up."""
    for received, value in arrivals(bootstrap, topic, stop, "latency"):
        pt = value["pt"]
        start = pt - pt % WINDOW_MS + WINDOW_MS if shape == "window" else pt
        if pt >= after_ms:
            latencies.append(received - start)


def run_cell(broker: Any, cell: Cell, warmup: float, seconds: float, tail: float, work: Path) -> None:
    source, sink = broker.topic(f"in-{cell.shape}", partitions=2), broker.topic(f"out-{cell.shape}", partitions=2)
    cell.load = _uptime()
    engine = _start_engine(broker.bootstrap, cell, source, sink, work, warmup + seconds + 30)
    stop, counter = threading.Event(), [0]
    after_ms = time.time() * 1000 + warmup * 1000
    threads = [threading.Thread(target=produce, args=(broker.bootstrap, source, cell.rate, warmup + seconds,
                                                      cell.shape == "dedup", stop, counter)),
               threading.Thread(target=consume, args=(broker.bootstrap, sink, cell.shape, after_ms, stop,
                                                      cell.latencies_ms))]
    try:
        for t in threads:
            t.start()
        threads[0].join()
        time.sleep(tail)  # the last records' way through
    finally:
        stop.set()
        threads[1].join(30)
        if cell.engine == "pyflink":  # no stop protocol to honour: the job and its gateway JVM, as a group
            os.killpg(engine.pid, signal.SIGKILL)
        else:
            engine.send_signal(signal.SIGTERM)  # the main process alone: a stop at a batch boundary
        try:
            engine.wait(timeout=120)
        except subprocess.TimeoutExpired:
            engine.kill()
            engine.wait()
        cell.produced = counter[0]
        cell.load += f" / {_uptime()}"
        if not cell.latencies_ms:
            problems = [line for line in getattr(engine, "tail", []) if "Exception" in line or "ERROR" in line
                        or "exception:" in line]
            cell.error = " ".join(problems[:3])[:600] or "no output record arrived"


def _start_engine(bootstrap: str, cell: Cell, source: str, sink: str, work: Path, seconds: float
                  ) -> subprocess.Popen:
    home = work / f"{cell.shape}-{cell.rate}-{cell.engine}"
    home.mkdir(parents=True)
    env = {**os.environ, "PYSPARK_PYTHON": str(PYTHON)}
    if cell.engine == "spark-rtm":
        process = subprocess.Popen([str(PYTHON), "-c", RTM_FILTER, bootstrap, source, sink, str(home / "cp"),
                                    str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                   env=env, cwd=REPO)
        _wait_for_start(process)
        return process
    spec = SHAPES[cell.shape]
    script = home / "job.sql"
    real_time = ("SET 'pipeline.real-time' = 'required';\nSET 'pipeline.real-time.checkpoint-interval' = '30 s';\n"
                 if cell.engine == "planengine-rtm" else "")
    tables = (SOURCE.format(time=spec["time"], topic=source, bootstrap=bootstrap)
              + SINK.format(columns=spec["columns"], connector=spec["connector"], topic=sink, bootstrap=bootstrap,
                            formats=spec["formats"]) + spec["insert"] + ";\n")
    script.write_text(real_time + tables)
    if cell.engine == "pyflink":
        python, jars = ensure_flink()
        process = subprocess.Popen([str(python), "-c", PYFLINK_JOB, str(script), ",".join(map(str, jars))],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=home,
                                   start_new_session=True)  # its gateway JVM is a child: stopped as a group
        _wait_for_start(process, marker=" job started: ")
        return process
    if cell.engine == "planengine-rtm":
        env["PLANENGINE_SPARK_MASTER"] = "local[4]"
    process = subprocess.Popen([str(PLANENGINE), "run", "--script", str(script), "--job-root", str(home / "root"),
                                "--spark-log", str(home / "spark.log")], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    _wait_for_start(process)
    return process


def _wait_for_start(process: subprocess.Popen, timeout: float = 180, marker: str = " started: plan ") -> None:
    """Until the run says it started (its first stderr line with ``started``): the input topic is read from the
    latest offset, so records produced before the query starts would never be read."""
    deadline = time.monotonic() + timeout
    assert process.stderr is not None
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line and process.poll() is not None:
            raise RuntimeError(f"the engine exited with {process.returncode} before it started")
        if marker in line:
            tail: list[str] = []
            process.tail = tail  # type: ignore[attr-defined]  # the rest of stderr, for a failed cell's note
            threading.Thread(target=tail.extend, args=(process.stderr,), daemon=True).start()
            return
    raise RuntimeError("the engine did not start within 180 s")


def _uptime() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def report(cells: list[Cell], command: str) -> str:
    lines = [
        "# End-to-end latency per event: Kafka -> plan -> Kafka (issue 23, item 1)", "",
        f"- Command: `{command}`; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{os.cpu_count()} cores; load (1-min) at each cell's start / end is in the table.",
        "- Latency = output record's arrival at a consumer - the input's produce time (`count`: the key's newest "
        "input; `window`: the end of its 1 s window); records produced during the warm-up are not counted.", "",
        "| shape | rate (ev/s) | engine | produced | measured | p50 ms | p99 ms | p99.9 ms | max ms | load | note |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for c in cells:
        fmt = [f"{v:.0f}" if v is not None else "-" for v in
               (c.percentile(0.5), c.percentile(0.99), c.percentile(0.999), c.percentile(1.0))]
        lines.append(f"| {c.shape} | {c.rate} | {c.engine} | {c.produced} | {len(c.latencies_ms)} | "
                     f"{' | '.join(fmt)} | {c.load} | {c.error[:200] or ''} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="filter,dedup,count,window")
    parser.add_argument("--rates", default="1000,10000")
    parser.add_argument("--engines", default="planengine,planengine-rtm,pyflink")
    parser.add_argument("--warmup", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--tail", type=float, default=15.0, help="seconds to keep reading after the producer "
                        "stops: records still on their way then are not measured")
    parser.add_argument("--record", action="store_true", help=f"write {RESULTS.relative_to(REPO)}")
    parser.add_argument("--keep", type=Path, help="keep each cell's job root, script and Spark log under this "
                                                  "directory (default: a temporary one, removed at the end)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from tests.fixtures.child_process import stop as stop_process
    from tests.fixtures.kafka import start_broker

    cells = [Cell(shape, int(rate), engine) for shape in args.shapes.split(",") for rate in args.rates.split(",")
             for engine in args.engines.split(",") if shape in ENGINE_SHAPES[engine]]
    with tempfile.TemporaryDirectory(prefix="latency-") as scratch:
        tmp = str(args.keep or scratch)
        (Path(tmp) / "kafka").mkdir(parents=True)
        broker = start_broker(Path(tmp) / "kafka")
        try:
            for cell in cells:
                try:
                    run_cell(broker, cell, args.warmup, args.seconds, args.tail, Path(tmp))
                except Exception as error:  # one broken cell is reported, not the end of the run
                    cell.error = f"{type(error).__name__}: {error}"
                print(f"{cell.shape} {cell.rate}/s {cell.engine}: {len(cell.latencies_ms)} measured, "
                      f"p50 {cell.percentile(0.5)} p99 {cell.percentile(0.99)} {cell.error[:300]}", flush=True)
        finally:
            stop_process(broker.process)
    text = report(cells, "python -m benchmarks.latency " + " ".join(argv if argv is not None else sys.argv[1:]))
    print(text)
    if args.record:
        RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
