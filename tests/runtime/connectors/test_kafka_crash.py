"""What Spark's Kafka sink guarantees when the driver dies mid-batch: at least once, and exact per key.

``planengine run`` (a subprocess: its whole process group is SIGKILLed, as when a pod dies) copies a topic into an
``upsert-kafka`` table keyed by ``id``. Batch 0 commits; batch 1 is killed while its records are being written
(the sink's producer sends one record per request, so writing a few thousand takes seconds and the kill lands
inside it; Spark's commit log then has no batch 1). The restarted run (``--until-idle``) replays batch 1 from its
offset log in full, so every record written before the kill is in the topic twice. The test measures that:

* nothing is lost: every input id is in the output;
* the duplicates are exactly the records written before the kill (Spark's Kafka sink has no transactions);
* a consumer that keeps the latest value per key (what upsert-kafka means) sees each row exactly once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("engine_process")

TIMEOUT_S = 400.0
FIRST, SECOND = 100, 3000  # records of batch 0 (committed) and batch 1 (killed while being written)
# The sink's producer sends one record per request, one request at a time (batch.size 0, one in flight), so a
# batch of thousands takes seconds to write and the kill lands inside it.
SCRIPT = """
CREATE TABLE src (id BIGINT, k BIGINT, v STRING)
  WITH ('connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{servers}', 'format' = 'json',
        'scan.startup.mode' = 'earliest-offset');
CREATE TABLE latest (id BIGINT, k BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = '{out}', 'properties.bootstrap.servers' = '{servers}',
        'key.format' = 'json', 'value.format' = 'json', 'properties.batch.size' = '0', 'properties.linger.ms' = '0',
        'properties.max.in.flight.requests.per.connection' = '1');
INSERT INTO latest SELECT id, k, v FROM src;
"""


def rows(first: int, last: int) -> list[tuple[None, str]]:
    return [(None, json.dumps({"id": i, "k": i % 7, "v": f"v{i}"})) for i in range(first, last)]


def start(script: Path, root: Path, *extra: str) -> subprocess.Popen:
    logs = root.parent / "logs"
    logs.mkdir(exist_ok=True)
    n = len(list(logs.iterdir())) // 2
    out, err = logs / f"{n}.out", logs / f"{n}.err"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "planengine.cli", "run", "--script", str(script),
                                 "--job-root", str(root), *extra], env={**os.environ, "PYSPARK_PYTHON": sys.executable},
                                stdout=stdout, stderr=stderr, start_new_session=True)
    proc.args = [out, err]
    return proc


def stderr_of(proc: subprocess.Popen) -> str:
    return Path(proc.args[1]).read_text()[-4000:]


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL the driver's whole process group (Python driver, its JVM, Python workers): a pod dying."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def wait_for(what: str, check, proc: subprocess.Popen, poll: float = 0.5) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if check():
            return
        if proc.poll() is not None:
            raise AssertionError(f"driver exited ({proc.returncode}) while waiting for {what}:\n{stderr_of(proc)}")
        time.sleep(poll)
    kill(proc)
    raise AssertionError(f"timed out waiting for {what}")


def committed(root: Path, batch: int) -> bool:
    return any(root.glob(f"runs/*/checkpoints/*/commits/{batch}"))


def count(broker, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "counter"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
    finally:
        consumer.close()


def test_driver_killed_mid_batch_then_restarted_duplicates_but_keeps_every_key_exact(tmp_path: Path,
                                                                                       kafka_broker) -> None:
    src, out = kafka_broker.topic("crash-in"), kafka_broker.topic("crash-out")
    script = tmp_path / "job.sql"
    script.write_text(SCRIPT.format(src=src, out=out, servers=kafka_broker.bootstrap))
    root = tmp_path / "root"
    kafka_broker.produce(src, rows(0, FIRST))

    a = start(script, root)
    wait_for("batch 0 committed", lambda: committed(root, 0), a)
    assert count(kafka_broker, out) == FIRST
    kafka_broker.produce(src, rows(FIRST, FIRST + SECOND))
    # Kill once a tenth of batch 1 is out: well inside the write, which takes seconds.
    wait_for("batch 1 being written", lambda: count(kafka_broker, out) >= FIRST + SECOND // 10, a, poll=0.05)
    kill(a)
    written_before_kill = count(kafka_broker, out) - FIRST
    assert 0 < written_before_kill < SECOND, written_before_kill
    assert not committed(root, 1), "the kill came after batch 1's commit: the write was too fast to interrupt"

    started = time.monotonic()
    b = start(script, root, "--until-idle")
    assert b.wait(timeout=TIMEOUT_S) == 0, stderr_of(b)
    recovery_s = time.monotonic() - started

    records = kafka_broker.records(out)
    ids = Counter(json.loads(r.key)["id"] for r in records)
    duplicates = sum(n - 1 for n in ids.values())
    print(f"\nkafka crash: batch 1 of {SECOND} records killed after {written_before_kill} were written; "
          f"{len(records)} records out for {FIRST + SECOND} in, {duplicates} duplicates; restart + replay "
          f"{recovery_s:.1f} s")
    assert set(ids) == set(range(FIRST + SECOND))  # nothing lost
    assert duplicates == written_before_kill  # at least once: the replayed batch is written again in full
    assert max(ids.values()) == 2
    latest = {json.loads(r.key)["id"]: json.loads(r.value) for r in records}
    assert latest == {i: {"id": i, "k": i % 7, "v": f"v{i}"} for i in range(FIRST + SECOND)}  # exact per key


RT_SCRIPT = """
SET 'pipeline.real-time' = 'REQUIRED';
SET 'pipeline.real-time.checkpoint-interval' = '{interval}';
SET 'pipeline.max-parallelism' = '1';
CREATE TABLE src (k STRING, v BIGINT)
  WITH ('connector' = 'kafka', 'topic' = '{src}', 'properties.bootstrap.servers' = '{servers}', 'format' = 'json',
        'scan.startup.mode' = 'earliest-offset');
CREATE TABLE totals (k STRING, n BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED)
  WITH ('connector' = 'upsert-kafka', 'topic' = '{out}', 'properties.bootstrap.servers' = '{servers}',
        'key.format' = 'json', 'value.format' = 'json');
INSERT INTO totals SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k;
"""


def clicks(first: int, last: int) -> list[tuple[None, str]]:
    return [(None, json.dumps({"k": f"k{i % 5}", "v": i})) for i in range(first, last)]


def totals(n: int) -> dict[str, dict]:
    """What ``GROUP BY k`` over ``clicks(0, n)`` is, per key."""
    out: dict[str, dict] = {}
    for i in range(n):
        row = out.setdefault(f"k{i % 5}", {"k": f"k{i % 5}", "n": 0, "total": 0})
        row["n"] += 1
        row["total"] += i
    return out


def test_a_real_time_aggregate_killed_inside_its_long_batch_replays_it_and_ends_exact_per_key(tmp_path: Path,
                                                                                            kafka_broker) -> None:
    """Real-time Mode streams updates out long before the batch that computed them is checkpointed: a driver
    killed inside a batch has written updates Spark has no record of. The restarted run (in the mode again)
    restores the state of the last committed batch and replays the killed batch's input, so some updates are
    written twice, and every key's latest value is exact."""
    src, out = kafka_broker.topic("rt-crash-in"), kafka_broker.topic("rt-crash-out")
    script = tmp_path / "job.sql"
    script.write_text(RT_SCRIPT.format(src=src, out=out, servers=kafka_broker.bootstrap, interval="5 s"))
    root = tmp_path / "root"

    def latest() -> dict[str, dict]:
        state: dict[str, dict] = {}
        for r in kafka_broker.records(out):
            state[json.loads(r.key)["k"]] = json.loads(r.value)
        return state

    kafka_broker.produce(src, clicks(0, 50))
    a = start(script, root)
    wait_for("the first batch committed", lambda: committed(root, 0) and latest() == totals(50), a)
    kafka_broker.produce(src, clicks(50, 80))
    # Within the next long batch: its updates are out, its checkpoint is not yet written.
    batches_before = len(list(root.glob("runs/*/checkpoints/*/commits/*")))
    wait_for("the next rows streamed out", lambda: latest() == totals(80), a, poll=0.05)
    kill(a)
    assert len(list(root.glob("runs/*/checkpoints/*/commits/*"))) == batches_before, \
        "the long batch was checkpointed before the kill: nothing to replay"
    written_before_restart = len(kafka_broker.records(out))

    b = start(script, root)
    try:
        kafka_broker.produce(src, clicks(80, 90))
        wait_for("the replay and the new rows", lambda: latest() == totals(90), b)
    finally:
        kill(b)
    rewritten = len(kafka_broker.records(out)) - written_before_restart
    print(f"\nreal-time crash: {written_before_restart} updates out before the kill; the restart wrote "
          f"{rewritten} more (replay of the killed batch plus the 10 new rows' updates)")
    assert latest() == totals(90)  # exact per key: what an upsert-kafka consumer keeps
    # At least once, measured: the mode writes one update per row, so the restart wrote the killed batch's 30 rows'
    # updates again (they restore from batch 0's state) and one for each of the 10 new rows.
    assert rewritten == 30 + 10, rewritten
