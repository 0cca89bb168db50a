"""kafka / upsert-kafka through the real engine and a real broker: SQL in, records out.

One broker per test process (``kafka_broker``, tests/fixtures/kafka.py), a fresh topic per test, the engine
in-process on the shared SparkSession with the connector jars the set-up fetched
(planengine/runtime/connectors/jars.lock).
Records go in and come out through ``confluent-kafka``, so what a test reads is what a consumer would see.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planengine.api import TableEnvironment
from planengine.runtime.connectors.kafka_admin import KafkaUnavailable
from planengine.runtime.engine.real_time_slots import RealTimeSlotsShort

T0 = 1_714_564_800_000  # 2024-05-01 12:00:00 UTC, in ms
WAIT_S = 120.0


def with_options(connector: str, broker: Any, topic: str, **options: str) -> str:
    pairs = {"connector": connector, "topic": topic, "properties.bootstrap.servers": broker.bootstrap, **options}
    return ", ".join(f"'{k}' = '{v}'" for k, v in pairs.items())


def values(records: list[Any]) -> list[dict | None]:
    return [None if r.value is None else json.loads(r.value) for r in records]


def latest_per_key(records: list[Any]) -> dict[str, dict | None]:
    """What a compacting consumer keeps: the last value of each key (None: deleted by a tombstone)."""
    state: dict[str, dict | None] = {}
    for r in records:
        state[r.key] = None if r.value is None else json.loads(r.value)
    return {k: v for k, v in state.items() if v is not None}


def wait_until(what: str, check: Callable[[], bool], job: Any = None) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if check():
            return
        if job is not None:
            failed = [q["exception"] for q in job.status()["queries"] if q["exception"]]
            assert not failed, f"a query failed while waiting for {what}: {failed}"
        time.sleep(0.5)
    raise AssertionError(f"timed out after {WAIT_S:.0f} s waiting for {what}")


def run_until_idle(env: TableEnvironment, sql: str, root: Path) -> Any:
    return env.execute_plan(env.compile_plan_sql(sql), job_root=str(root), until_idle=True)


def test_json_topic_to_json_topic_with_key(tmp_path: Path, spark, kafka_broker) -> None:
    src, out = kafka_broker.topic("json-in", partitions=2), kafka_broker.topic("json-out")
    kafka_broker.produce(src, [(None, json.dumps({"id": i, "name": f"n{i}"})) for i in range(3)], partition=0)
    kafka_broker.produce(src, [(None, json.dumps({"id": 10, "name": None})), (None, "{}")], partition=1)
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (id BIGINT, name STRING)
          WITH ({with_options('kafka', kafka_broker, src, format='json', **{'scan.startup.mode': 'earliest-offset'})});
        CREATE TABLE out_t (id BIGINT, label STRING)
          WITH ({with_options('kafka', kafka_broker, out, format='json',
                              **{'key.format': 'json', 'key.fields': 'id'})});
    """)
    run_until_idle(env, "INSERT INTO out_t SELECT id, COALESCE(UPPER(name), '?') FROM src WHERE id IS NULL OR id <> 1",
                   tmp_path / "job")
    got = kafka_broker.records(out)
    # The value holds every column, the key the key.fields; a missing field is null, not an error.
    assert sorted((r.key, r.value) for r in got) == [
        ('{"id":0}', '{"id":0,"label":"N0"}'), ('{"id":10}', '{"id":10,"label":"?"}'),
        ('{"id":2}', '{"id":2,"label":"N2"}'), ('{"id":null}', '{"id":null,"label":"?"}')]


def test_metadata_columns_read_topic_partition_offset_and_timestamp(tmp_path: Path, spark, kafka_broker) -> None:
    """``METADATA FROM 'offset'`` and friends, declared between physical columns, a computed column over one and
    the rowtime on the record timestamp: the scan asks Spark's Kafka source for the keys (the plan's
    ``ReadingMetadata`` ability) and every column lands in its declared place."""
    src, out = kafka_broker.topic("meta-in", partitions=2), kafka_broker.topic("meta-out")
    kafka_broker.produce(src, [(None, json.dumps({"id": i}), T0 + i * 1000) for i in range(3)], partition=0)
    kafka_broker.produce(src, [(None, json.dumps({"id": 10}), T0 + 60_000)], partition=1)
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (
          part INT METADATA FROM 'partition' VIRTUAL,
          id BIGINT,
          `offset` BIGINT METADATA VIRTUAL,
          t STRING METADATA FROM 'topic' VIRTUAL,
          ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
          next_offset AS `offset` + 1,
          WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
          WITH ({with_options('kafka', kafka_broker, src, format='json', **{'scan.startup.mode': 'earliest-offset'})});
        CREATE TABLE out_t (id BIGINT, part INT, off BIGINT, next_offset BIGINT, same_topic BOOLEAN, `at` STRING)
          WITH ({with_options('kafka', kafka_broker, out, format='json')});
    """)
    run_until_idle(env, "INSERT INTO out_t SELECT id, part, `offset`, next_offset, t = '" + src + "', "
                        "DATE_FORMAT(ts, 'HH:mm:ss') FROM src", tmp_path / "job")
    got = sorted((v["id"], v["part"], v["off"], v["next_offset"], v["same_topic"], v["at"]) for v in values(
        kafka_broker.records(out)))
    assert got == [(0, 0, 0, 1, True, "12:00:00"), (1, 0, 1, 2, True, "12:00:01"), (2, 0, 2, 3, True, "12:00:02"),
                   (10, 1, 0, 1, True, "12:01:00")]


def debezium(op: str, before: dict | None, after: dict | None) -> str:
    return json.dumps({"before": before, "after": after, "op": op, "source": {"table": "users"}, "ts_ms": T0})


def test_debezium_json_source_into_upsert_kafka(tmp_path: Path, spark, kafka_broker) -> None:
    cdc, out = kafka_broker.topic("cdc"), kafka_broker.topic("users")
    ann, ann2, bob = {"id": 1, "name": "ann"}, {"id": 1, "name": "ANN"}, {"id": 2, "name": "bob"}
    kafka_broker.produce(cdc, [(None, debezium("r", None, ann)), (None, debezium("c", None, bob)),
                               (None, debezium("u", ann, ann2)), (None, debezium("d", bob, None)),
                               (None, debezium("c", None, {"id": 3, "name": "cy"}))])
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE cdc (id BIGINT, name STRING)
          WITH ({with_options('kafka', kafka_broker, cdc, format='debezium-json',
                              **{'scan.startup.mode': 'earliest-offset'})});
        CREATE TABLE users (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED)
          WITH ({with_options('upsert-kafka', kafka_broker, out, **{'key.format': 'json', 'value.format': 'json'})});
    """)
    run_until_idle(env, "INSERT INTO users SELECT id, name FROM cdc", tmp_path / "job")
    got = kafka_broker.records(out)
    # Per key, in order: updates become the new value, deletes tombstones (key, no value); -U is not written.
    # (Keys are spread over the plan's partitions, so only each key's own order is defined.)
    per_key: dict[str, list] = {}
    for r in got:
        per_key.setdefault(r.key, []).append(r.value and json.loads(r.value))
    assert per_key == {'{"id":1}': [ann, ann2], '{"id":2}': [bob, None], '{"id":3}': [{"id": 3, "name": "cy"}]}
    assert latest_per_key(got) == {'{"id":1}': ann2, '{"id":3}': {"id": 3, "name": "cy"}}


def real_time_env(max_parallelism: str | None = "1") -> TableEnvironment:
    """A session compiling for Real-time Mode (REQUIRED, 5 s batches: Spark's minimum). Every stage of a real-time
    query runs at once, so by default one state partition: with a one-partition topic that is 2 task slots, the
    tests' ``local[2]``."""
    env = TableEnvironment()
    env.execute_sql("SET 'pipeline.real-time' = 'required'")
    env.execute_sql("SET 'pipeline.real-time.checkpoint-interval' = '5 s'")
    if max_parallelism is not None:
        env.execute_sql(f"SET 'pipeline.max-parallelism' = '{max_parallelism}'")
    return env


TOTALS_DDL = """
CREATE TABLE clicks (k STRING, v BIGINT) WITH ({src});
CREATE TABLE totals (k STRING, n BIGINT, total BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ({out});
"""
TOTALS_SQL = "INSERT INTO totals SELECT k, COUNT(*), SUM(v) FROM clicks GROUP BY k"


def clicks(*pairs: tuple[str, int]) -> list[tuple[None, str]]:
    return [(None, json.dumps({"k": k, "v": v})) for k, v in pairs]


def test_group_by_into_upsert_kafka_while_the_topic_grows_and_across_stop_restore(tmp_path: Path, spark,
                                                                                    kafka_broker) -> None:
    src, out = kafka_broker.topic("clicks"), kafka_broker.topic("totals")
    env = TableEnvironment()
    env.execute_sql(TOTALS_DDL.format(
        src=with_options("kafka", kafka_broker, src, format="json", **{"scan.startup.mode": "earliest-offset"}),
        out=with_options("upsert-kafka", kafka_broker, out, **{"key.format": "json", "value.format": "json"})))
    plan = env.compile_plan_sql(TOTALS_SQL)
    root = tmp_path / "job"

    def state() -> dict[str, tuple[int, int]]:
        return {json.loads(k)["k"]: (v["n"], v["total"]) for k, v in latest_per_key(kafka_broker.records(out)).items()}

    job = env.execute_plan(plan, job_root=str(root))  # running: micro-batches as records arrive
    try:
        kafka_broker.produce(src, clicks(("a", 1), ("b", 2), ("a", 3)))
        wait_until("the first records", lambda: state() == {"a": (2, 4), "b": (1, 2)}, job)
        kafka_broker.produce(src, clicks(("a", 10), ("c", 5)))  # the topic grows while the job runs
        wait_until("the records added while running", lambda: state() == {"a": (3, 14), "b": (1, 2), "c": (1, 5)},
                   job)
    finally:
        snapshot = job.stop(snapshot=True)
    assert snapshot
    kafka_broker.produce(src, clicks(("b", 1), ("c", -5), ("d", 7)))  # while stopped

    run_until_idle(env, TOTALS_SQL, root)  # restores the aggregate's state from the stop's snapshot
    assert state() == {"a": (3, 14), "b": (2, 3), "c": (2, 0), "d": (1, 7)}
    # No update lost or replayed out of order: per key, each written count is larger than the one before.
    per_key: dict[str, list[int]] = {}
    for r in kafka_broker.records(out):
        per_key.setdefault(json.loads(r.key)["k"], []).append(json.loads(r.value)["n"])
    assert all(counts == sorted(set(counts)) for counts in per_key.values()), per_key
    assert per_key["b"][-2:] == [1, 2] and per_key["c"][-2:] == [1, 2]  # counted on, not from zero, after restore


def start_mode_topic(broker: Any) -> str:
    """Partition 0: ids 0-3 at T0+0..3 s; partition 1: ids 10-11 at T0+0..1 s."""
    topic = broker.topic("modes", partitions=2)
    broker.produce(topic, [(None, json.dumps({"id": i}), T0 + i * 1000) for i in range(4)], partition=0)
    broker.produce(topic, [(None, json.dumps({"id": 10 + i}), T0 + i * 1000) for i in range(2)], partition=1)
    return topic


@pytest.mark.parametrize(("options", "expected"), [
    ({"scan.startup.mode": "earliest-offset"}, {0, 1, 2, 3, 10, 11}),
    # Partition 1 holds nothing at or after T0+2 s: it starts at its end (Flink's behaviour), not with an error.
    ({"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": str(T0 + 2000)}, {2, 3}),
    # The group committed offset 3 on partition 0 and nothing on partition 1, which falls back to auto.offset.reset.
    ({"scan.startup.mode": "group-offsets", "properties.group.id": "{group}",
      "properties.auto.offset.reset": "earliest"}, {3, 10, 11}),
    ({"scan.startup.mode": "group-offsets", "properties.group.id": "{group}"}, {3}),
], ids=["earliest", "timestamp", "group-offsets+earliest", "group-offsets"])
def test_start_modes(tmp_path: Path, spark, kafka_broker, options: dict[str, str], expected: set[int]) -> None:
    src, out = start_mode_topic(kafka_broker), kafka_broker.topic("modes-out")
    group = f"g-{src}"
    kafka_broker.commit(group, src, {0: 3})
    options = {k: v.format(group=group) for k, v in options.items()}
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (id BIGINT) WITH ({with_options('kafka', kafka_broker, src, format='json', **options)});
        CREATE TABLE out_t (id BIGINT) WITH ({with_options('kafka', kafka_broker, out, format='json')});
    """)
    run_until_idle(env, "INSERT INTO out_t SELECT id FROM src", tmp_path / "job")
    got = [v["id"] for v in values(kafka_broker.records(out))]
    assert sorted(got) == sorted(expected)


def test_latest_offset_reads_only_what_arrives_after_the_first_start(tmp_path: Path, spark, kafka_broker) -> None:
    src, out = start_mode_topic(kafka_broker), kafka_broker.topic("latest-out")
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (id BIGINT)
          WITH ({with_options('kafka', kafka_broker, src, format='json', **{'scan.startup.mode': 'latest-offset'})});
        CREATE TABLE out_t (id BIGINT) WITH ({with_options('kafka', kafka_broker, out, format='json')});
    """)
    root = tmp_path / "job"
    run_until_idle(env, "INSERT INTO out_t SELECT id FROM src", root)
    assert kafka_broker.records(out) == []
    kafka_broker.produce(src, [(None, json.dumps({"id": 4}))], partition=0)
    kafka_broker.produce(src, [(None, json.dumps({"id": 12}))], partition=1)
    # The second run resumes where the first one's start put it (its checkpoint), not at the new end.
    run_until_idle(env, "INSERT INTO out_t SELECT id FROM src", root)
    assert sorted(v["id"] for v in values(kafka_broker.records(out))) == [4, 12]


def unused_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("case", ["unreachable", "source topic", "sink topic"])
def test_bad_cluster_or_topic_is_one_error_naming_the_option(tmp_path: Path, spark, kafka_broker, case) -> None:
    topic = kafka_broker.topic("exists")
    servers = f"127.0.0.1:{unused_port()}" if case == "unreachable" else kafka_broker.bootstrap
    src_topic = "no-such-topic" if case == "source topic" else topic
    out_topic = "no-such-output" if case == "sink topic" else topic
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (id BIGINT) WITH ('connector' = 'kafka', 'topic' = '{src_topic}', 'format' = 'json',
          'properties.bootstrap.servers' = '{servers}', 'scan.startup.mode' = 'earliest-offset');
        CREATE TABLE out_t (id BIGINT) WITH ('connector' = 'kafka', 'topic' = '{out_topic}', 'format' = 'json',
          'properties.bootstrap.servers' = '{kafka_broker.bootstrap}');
    """)
    with pytest.raises(KafkaUnavailable) as info:
        run_until_idle(env, "INSERT INTO out_t SELECT id FROM src", tmp_path / "job")
    text = info.value.render()
    expected = {
        "unreachable": [f"cannot reach Kafka at 'properties.bootstrap.servers' = '{servers}'", "no answer within"],
        "source topic": ["topic 'no-such-topic' does not exist", "option 'topic'", "table reads it", topic],
        "sink topic": ["topic 'no-such-output' does not exist", "option 'topic'", "table writes it"],
    }[case]
    for part in expected:
        assert part in text, text
    assert "\tat " not in text and "Py4J" not in text and len(text.splitlines()) == 2  # message + hint, no trace


def test_one_topic_into_two_kafka_sinks_through_the_shared_query(tmp_path: Path, spark, kafka_broker) -> None:
    """Two INSERTs reading one topic share its scan: one query writes both sinks from ``foreachBatch`` (Spark's
    Kafka batch writer, not its streaming sink)."""
    src, evens, odds = kafka_broker.topic("fan-in"), kafka_broker.topic("evens"), kafka_broker.topic("odds")
    kafka_broker.produce(src, [(None, json.dumps({"id": i})) for i in range(6)])
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (id BIGINT)
          WITH ({with_options('kafka', kafka_broker, src, format='json', **{'scan.startup.mode': 'earliest-offset'})});
        CREATE TABLE evens (id BIGINT) WITH ({with_options('kafka', kafka_broker, evens, format='json')});
        CREATE TABLE odds (id BIGINT) WITH ({with_options('kafka', kafka_broker, odds, format='json')});
    """)
    plan = env.create_statement_set().add_insert_sql("INSERT INTO evens SELECT id FROM src WHERE MOD(id, 2) = 0") \
        .add_insert_sql("INSERT INTO odds SELECT id FROM src WHERE MOD(id, 2) = 1").compile_plan()
    result = env.execute_plan(plan, job_root=str(tmp_path / "job"), until_idle=True)
    assert len(result.queries) == 1  # the shared scan: one query, two batch writers
    assert sorted(v["id"] for v in values(kafka_broker.records(evens))) == [0, 2, 4]
    assert sorted(v["id"] for v in values(kafka_broker.records(odds))) == [1, 3, 5]


def test_a_kafka_filter_plan_runs_in_real_time_mode_and_writes_every_row_once(tmp_path: Path, spark,
                                                                               kafka_broker) -> None:
    """``pipeline.real-time = REQUIRED`` on a plan that can use it: the query runs with Spark's real-time trigger
    (records stream through one long batch) and its output is what a micro-batch run of the same plan writes."""
    src, out = kafka_broker.topic("rt-in", partitions=2), kafka_broker.topic("rt-out")
    env = real_time_env(max_parallelism=None)
    env.execute_sql(f"""
        CREATE TABLE src (id BIGINT, name STRING)
          WITH ({with_options('kafka', kafka_broker, src, format='json', **{'scan.startup.mode': 'earliest-offset'})});
        CREATE TABLE out_t (id BIGINT, label STRING) WITH ({with_options('kafka', kafka_broker, out, format='json')});
    """)
    plan = env.compile_plan_sql("INSERT INTO out_t SELECT id, UPPER(name) FROM src WHERE MOD(id, 3) <> 0")
    assert plan.data["config"]["realTimeEnabled"] == "true"
    kafka_broker.produce(src, [(None, json.dumps({"id": i, "name": f"n{i}"})) for i in range(30)])
    job = env.execute_plan(plan, job_root=str(tmp_path / "job"))
    try:
        query = job.queries[0].query
        assert "RealTime" in str(query._jsq.streamingQuery().trigger())  # Spark's own record of the trigger
        expected = sorted((i, f"N{i}") for i in range(30) if i % 3)
        wait_until("the first records", lambda: len(kafka_broker.records(out)) >= len(expected), job)
        kafka_broker.produce(src, [(None, json.dumps({"id": i, "name": f"n{i}"})) for i in range(30, 40)])
        expected += sorted((i, f"N{i}") for i in range(30, 40) if i % 3)
        wait_until("the records produced while it runs", lambda: len(kafka_broker.records(out)) >= len(expected),
                   job)
    finally:
        job.stop(snapshot=False)
    assert sorted((v["id"], v["label"]) for v in values(kafka_broker.records(out))) == expected  # each row once


def test_a_group_by_into_upsert_kafka_runs_in_real_time_mode_and_restores_exact(tmp_path: Path, spark,
                                                                                 kafka_broker) -> None:
    """A native ``GROUP BY`` into ``upsert-kafka`` under ``pipeline.real-time = REQUIRED``: Spark's streaming
    aggregation runs inside the long real-time batch, each update reaches the sink topic as the key's new value,
    and a stop with a snapshot then a restore (in the mode again) counts on from the stored state: the compacted
    topic equals what a micro-batch run computes, and per key the counts written only grow."""
    src, out = kafka_broker.topic("rt-clicks"), kafka_broker.topic("rt-totals")
    env = real_time_env()
    env.execute_sql(TOTALS_DDL.format(
        src=with_options("kafka", kafka_broker, src, format="json", **{"scan.startup.mode": "earliest-offset"}),
        out=with_options("upsert-kafka", kafka_broker, out, **{"key.format": "json", "value.format": "json"})))
    plan = env.compile_plan_sql(TOTALS_SQL)
    assert plan.data["config"]["realTimeEnabled"] == "true"
    root = tmp_path / "job"

    def state() -> dict[str, tuple[int, int]]:
        return {json.loads(k)["k"]: (v["n"], v["total"]) for k, v in latest_per_key(kafka_broker.records(out)).items()}

    def run_until(what: str, expected: dict[str, tuple[int, int]], *, produce_while_running: list | None = None,
                  then: dict[str, tuple[int, int]] | None = None) -> str:
        job = env.execute_plan(plan, job_root=str(root))
        try:
            assert "RealTime" in str(job.queries[0].query._jsq.streamingQuery().trigger())
            wait_until(what, lambda: state() == expected, job)
            if produce_while_running:
                kafka_broker.produce(src, produce_while_running)
                wait_until(f"{what}, then the records produced while it runs", lambda: state() == then, job)
        finally:
            snapshot = job.stop(snapshot=True)
        assert snapshot
        return snapshot

    kafka_broker.produce(src, clicks(("a", 1), ("b", 2), ("a", 3)))
    run_until("the first records", {"a": (2, 4), "b": (1, 2)},
              produce_while_running=clicks(("a", 10), ("c", 5)), then={"a": (3, 14), "b": (1, 2), "c": (1, 5)})
    kafka_broker.produce(src, clicks(("b", 1), ("c", -5), ("d", 7)))  # while stopped
    run_until("the records produced while stopped, counted on from the snapshot's state",
              {"a": (3, 14), "b": (2, 3), "c": (2, 0), "d": (1, 7)})
    per_key: dict[str, list[int]] = {}
    for r in kafka_broker.records(out):
        per_key.setdefault(json.loads(r.key)["k"], []).append(json.loads(r.value)["n"])
    assert all(counts == sorted(counts) for counts in per_key.values()), per_key  # never counted back
    assert per_key["b"][-1] == 2 and per_key["c"][-1] == 2 and 1 in per_key["b"]  # on from 1, not from zero


def test_a_real_time_plan_the_cluster_cannot_schedule_at_once_is_refused_before_it_starts(tmp_path: Path, spark,
                                                                                          kafka_broker) -> None:
    """Two topic partitions and two state partitions need 4 task slots at once; the tests' ``local[2]`` has 2. The
    start is refused with those numbers (not Spark's failure after the query started), takes no run lock, and the
    same plan still runs in micro-batches (an until-idle run never uses the mode)."""
    src, out = kafka_broker.topic("rt-wide", partitions=2), kafka_broker.topic("rt-wide-out")
    env = real_time_env(max_parallelism="2")
    env.execute_sql(TOTALS_DDL.format(
        src=with_options("kafka", kafka_broker, src, format="json", **{"scan.startup.mode": "earliest-offset"}),
        out=with_options("upsert-kafka", kafka_broker, out, **{"key.format": "json", "value.format": "json"})))
    plan = env.compile_plan_sql(TOTALS_SQL)
    kafka_broker.produce(src, clicks(("a", 1), ("b", 2)))
    root = tmp_path / "job"
    with pytest.raises(RealTimeSlotsShort) as refused:
        env.execute_plan(plan, job_root=str(root))
    assert "needs 4 task slots (2 for the topic partitions table " in str(refused.value)
    assert "but the cluster has 2 (spark.master 'local[2]')" in str(refused.value)
    assert not (root / "RUN_LOCK").exists() and not list(root.glob("runs/*/checkpoints/*/commits/*"))
    run_until_idle(env, TOTALS_SQL, root)
    assert {json.loads(k)["k"]: v["n"] for k, v in latest_per_key(kafka_broker.records(out)).items()} == \
        {"a": 1, "b": 1}


JVM_CASES = {
    # SUM over DOUBLE is not exact on Spark's native aggregation: the JVM processor (transformWithState) runs it.
    "jvm-aggregate": ("CREATE TABLE res (k STRING, total DOUBLE, PRIMARY KEY (k) NOT ENFORCED) WITH ({upsert})",
                      "INSERT INTO res SELECT k, SUM(CAST(v AS DOUBLE)) FROM src GROUP BY k"),
    "dedup-keep-first": ("CREATE TABLE res (k STRING, v BIGINT) WITH ({append})",
                         "INSERT INTO res SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt) "
                         "AS rn FROM src) WHERE rn = 1"),
    "dedup-keep-last": ("CREATE TABLE res (k STRING, v BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ({upsert})",
                        "INSERT INTO res SELECT k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt "
                        "DESC) AS rn FROM src) WHERE rn = 1"),
}


@pytest.mark.parametrize("case", sorted(JVM_CASES))
def test_jvm_processors_run_in_real_time_mode(tmp_path: Path, spark, kafka_broker, case: str) -> None:
    """The JVM ``transformWithState`` processors of aggregates and deduplication use no timers, so the mode runs
    them: each case's output, read the way its sink means it (every record, or the latest per key), is what the
    query computes, including for rows produced while the long batch runs."""
    src, out = kafka_broker.topic(f"rt-{case}"), kafka_broker.topic(f"rt-{case}-out")
    env = real_time_env()
    source = with_options("kafka", kafka_broker, src, format="json", **{"scan.startup.mode": "earliest-offset"})
    env.execute_sql(f"CREATE TABLE src (k STRING, v BIGINT, pt AS PROCTIME()) WITH ({source})")
    ddl, insert = JVM_CASES[case]
    env.execute_sql(ddl.format(
        append=with_options("kafka", kafka_broker, out, format="json"),
        upsert=with_options("upsert-kafka", kafka_broker, out, **{"key.format": "json", "value.format": "json"})))
    plan = env.compile_plan_sql(insert)
    assert plan.data["config"]["realTimeEnabled"] == "true"
    rows = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5)]
    later = [("a", 6), ("d", 7)]

    def expected(seen: list[tuple[str, int]]) -> Any:
        if case == "jvm-aggregate":
            sums: dict[str, float] = {}
            for k, v in seen:
                sums[k] = sums.get(k, 0.0) + v
            return {k: {"k": k, "total": t} for k, t in sums.items()}
        if case == "dedup-keep-first":
            firsts: dict[str, int] = {}
            for k, v in seen:
                firsts.setdefault(k, v)
            return sorted(firsts.items())
        return {k: {"k": k, "v": v} for k, v in dict(seen).items()}  # keep-last: the last row per key

    def got() -> Any:
        records = kafka_broker.records(out)
        if case == "dedup-keep-first":
            return sorted((v["k"], v["v"]) for v in values(records))
        return {json.loads(k)["k"]: v for k, v in latest_per_key(records).items()}

    kafka_broker.produce(src, clicks(*rows))
    job = env.execute_plan(plan, job_root=str(tmp_path / "job"))
    try:
        assert "RealTime" in str(job.queries[0].query._jsq.streamingQuery().trigger())
        wait_until("the first rows", lambda: got() == expected(rows), job)
        kafka_broker.produce(src, clicks(*later))
        wait_until("the rows produced while it runs", lambda: got() == expected(rows + later), job)
    finally:
        job.stop(snapshot=False)


@pytest.mark.parametrize("source", ["debezium-json", "upsert-kafka"])
def test_changelog_sources_run_in_real_time_mode(tmp_path: Path, spark, kafka_broker, source: str) -> None:
    """Changelog topics in the mode: a ``debezium-json`` topic (its updates and deletes, ``-U`` dropped for the
    upsert sink) and an ``upsert-kafka`` topic (the JVM changelog normalize keeps each key's latest row), both
    into ``upsert-kafka``: the compacted output is the source table's last state, tombstones included."""
    src, out = kafka_broker.topic(f"rt-{source}"), kafka_broker.topic(f"rt-{source}-out")
    ann, ann2, bob, cy = {"id": 1, "name": "ann"}, {"id": 1, "name": "ANN"}, {"id": 2, "name": "bob"}, \
        {"id": 3, "name": "cy"}
    if source == "debezium-json":
        records = [(None, debezium("r", None, ann)), (None, debezium("c", None, bob)),
                   (None, debezium("u", ann, ann2)), (None, debezium("d", bob, None))]
        later = [(None, debezium("c", None, cy))]
        table = with_options("kafka", kafka_broker, src, format="debezium-json",
                             **{"scan.startup.mode": "earliest-offset"})
        key = ""
    else:
        records = [('{"id":1}', json.dumps(ann)), ('{"id":2}', json.dumps(bob)), ('{"id":1}', json.dumps(ann2)),
                   ('{"id":2}', None)]
        later = [('{"id":3}', json.dumps(cy))]
        table = with_options("upsert-kafka", kafka_broker, src, **{"key.format": "json", "value.format": "json"})
        key = ", PRIMARY KEY (id) NOT ENFORCED"
    env = real_time_env()
    env.execute_sql(f"""
        CREATE TABLE cdc (id BIGINT, name STRING{key}) WITH ({table});
        CREATE TABLE users (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED)
          WITH ({with_options('upsert-kafka', kafka_broker, out, **{'key.format': 'json', 'value.format': 'json'})});
    """)
    plan = env.compile_plan_sql("INSERT INTO users SELECT id, name FROM cdc")
    assert plan.data["config"]["realTimeEnabled"] == "true", plan.data["config"].get("realTimeBlockedBy")
    kafka_broker.produce(src, records)
    job = env.execute_plan(plan, job_root=str(tmp_path / "job"))
    try:
        assert "RealTime" in str(job.queries[0].query._jsq.streamingQuery().trigger())
        wait_until("the changelog applied", lambda: latest_per_key(kafka_broker.records(out)) == {'{"id":1}': ann2},
                   job)
        kafka_broker.produce(src, later)
        wait_until("a row produced while it runs", lambda: latest_per_key(kafka_broker.records(out)) == {
            '{"id":1}': ann2, '{"id":3}': cy}, job)
    finally:
        job.stop(snapshot=False)
    assert [r.value for r in kafka_broker.records(out) if r.key == '{"id":2}'][-1] is None  # bob's tombstone


def test_an_update_filtered_out_behind_an_upsert_source_deletes_the_key_downstream(tmp_path: Path, spark,
                                                                                  kafka_broker) -> None:
    """An upsert topic, a filter on a non-key column, an upsert-kafka sink: when a key's new row fails the filter,
    only its UPDATE_BEFORE reaches the sink, which writes it as a tombstone (as Flink's upsert-kafka does), so the
    key's old row is gone downstream too. Found by the conformance programs in Real-time Mode
    (changelog_normalize/upsert-with-non-key-filter); the micro-batch run had the same stale row."""
    src, out = kafka_broker.topic("up-filter"), kafka_broker.topic("up-filter-out")
    kafka_broker.produce(src, [('{"id":1}', json.dumps({"id": 1, "name": "aa"})),
                               ('{"id":2}', json.dumps({"id": 2, "name": "aa"})),
                               ('{"id":1}', json.dumps({"id": 1, "name": "bb"}))])  # 1 no longer passes
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED)
          WITH ({with_options('upsert-kafka', kafka_broker, src, **{'key.format': 'json', 'value.format': 'json'})});
        CREATE TABLE kept (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED)
          WITH ({with_options('upsert-kafka', kafka_broker, out, **{'key.format': 'json', 'value.format': 'json'})});
    """)
    run_until_idle(env, "INSERT INTO kept SELECT id, name FROM src WHERE name <> 'bb'", tmp_path / "job")
    assert latest_per_key(kafka_broker.records(out)) == {'{"id":2}': {"id": 2, "name": "aa"}}
