"""kafka / upsert-kafka at run time: option translation into Spark's reader and writer, record decoding and
encoding on DataFrames shaped like Spark's Kafka records, the missing-jar error, and (with a broker) a round
trip. The Kafka connector jars are not on this classpath (the engine image ships them), so decoding and
encoding are checked on batch DataFrames with the Kafka source's schema.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import uuid

import pytest

from planengine.connectors.discovery import create_table_sink, create_table_source
from planengine.runtime.connectors import get_sink_writer, get_source_reader
from planengine.runtime.connectors import kafka as K
from planengine.runtime.stream import Stream
from tests.connectors.builders import build_ctx

COLUMNS = [("id", "BIGINT"), ("name", "STRING"), ("ts", "TIMESTAMP(3)")]
KAFKA_SCHEMA = ("key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, "
                "timestampType INT, headers ARRAY<STRUCT<key: STRING, value: BINARY>>")
T0 = dt.datetime(2024, 5, 1, 12, 0, 0)


def source(connector="kafka", primary_key=None, metadata=(), **options):
    base = {"connector": connector, "topic": "orders", "properties.bootstrap.servers": "k1:9092",
            "properties.group.id": "g", **options}
    base = {k: v for k, v in base.items() if v is not None}
    if connector == "kafka" and "value.format" not in base:
        base.setdefault("format", "json")
    return create_table_source(build_ctx(COLUMNS, base, primary_key=primary_key, metadata=metadata))


def sink(connector="kafka", primary_key=None, **options):
    base = {"connector": connector, "topic": "out", "properties.bootstrap.servers": "k1:9092", **options}
    if connector == "kafka" and "value.format" not in base:
        base.setdefault("format", "json")
    return create_table_sink(build_ctx(COLUMNS, base, primary_key=primary_key))


def records(spark, *rows):
    """Kafka records: (key, value) JSON texts or None, plus fixed metadata."""
    data = [(None if k is None else k.encode(), None if v is None else v.encode(), "orders", 0, i, T0, 0,
             [("h", b"x")]) for i, (k, v) in enumerate(rows)]
    return spark.createDataFrame(data, KAFKA_SCHEMA)


class RecordingReader:
    """``spark.readStream`` stand-in: remembers the format and options, loads a prepared DataFrame."""

    def __init__(self, df):
        self.df, self.fmt, self.options = df, None, {}

    def format(self, fmt):
        self.fmt = fmt
        return self

    def option(self, key, value):
        self.options[key] = value
        return self

    def load(self):
        return self.df


class FakeCtx:
    def __init__(self, spark, reader):
        self.spark = type("S", (), {"readStream": reader})()


def test_reader_gets_translated_options_and_decodes_json_with_key_and_metadata(spark) -> None:
    src = source(metadata=(("part", "INT", "partition"), ("kind", "STRING", "timestamp-type")),
                 **{"key.format": "json", "key.fields": "id", "scan.startup.mode": "earliest-offset",
                    "properties.auto.offset.reset": "earliest", "properties.enable.auto.commit": "true"})
    src.apply_readable_metadata(["partition", "timestamp-type"], src.row.produced_type)
    reader = RecordingReader(records(spark, ('{"id": 7}', '{"id": 1, "name": "a", "ts": "2024-05-01 10:00:00"}'),
                                     ('{"id": 8}', '{"name": null}')))
    frame = get_source_reader("kafka")(src, FakeCtx(spark, reader), None)
    assert reader.fmt == "kafka"
    assert reader.options == {"kafka.bootstrap.servers": "k1:9092", "kafka.group.id": "g", "subscribe": "orders",
                              "startingOffsets": "earliest"}  # Spark-managed client properties dropped
    assert not frame.updating and not frame.bounded
    rows = [tuple(r) for r in frame.df.collect()]
    # id comes from the key ('key.fields'), the rest from the value; then the metadata columns
    assert rows == [(7, "a", dt.datetime(2024, 5, 1, 10, 0), 0, "CreateTime"), (8, None, None, 0, "CreateTime")]


def test_pattern_and_startup_modes(spark) -> None:
    reader = RecordingReader(records(spark))
    get_source_reader("kafka")(source(topic=None, **{"topic-pattern": "ord.*", "scan.startup.mode": "timestamp",
                                                     "scan.startup.timestamp-millis": "1700000000000"}),
                               FakeCtx(spark, reader), None)
    assert reader.options["subscribePattern"] == "ord.*" and "subscribe" not in reader.options
    assert reader.options["startingTimestamp"] == "1700000000000"
    reader = RecordingReader(records(spark))
    offsets = "partition:0,offset:42;partition:1,offset:7"
    get_source_reader("kafka")(source(**{"scan.startup.mode": "specific-offsets",
                                         "scan.startup.specific-offsets": offsets}), FakeCtx(spark, reader), None)
    assert json.loads(reader.options["startingOffsets"]) == {"orders": {"0": 42, "1": 7}}


def test_debezium_values_become_row_kinds(spark) -> None:
    src = source(format="debezium-json")
    before = '{"id": 1, "name": "a", "ts": null}'
    after = '{"id": 1, "name": "b", "ts": null}'
    df, updating = K.decode_records(records(
        spark, (None, f'{{"before": null, "after": {before}, "op": "c"}}'),
        (None, f'{{"before": {before}, "after": {after}, "op": "u"}}'),
        (None, f'{{"before": {after}, "after": null, "op": "d"}}')), src)
    assert updating
    assert [tuple(r) for r in df.collect()] == [(1, "a", None, "+I"), (1, "a", None, "-U"), (1, "b", None, "+U"),
                                               (1, "b", None, "-D")]


def test_upsert_kafka_tombstones_are_deletes(spark) -> None:
    src = source("upsert-kafka", primary_key=("id",), topic="users", **{"key.format": "json", "value.format": "json",
                                                                        "value.fields-include": "EXCEPT_KEY"})
    reader = RecordingReader(records(spark, ('{"id": 1}', '{"name": "a", "ts": null}'), ('{"id": 1}', None)))
    frame = get_source_reader("upsert-kafka")(src, FakeCtx(spark, reader), None)
    assert reader.options["startingOffsets"] == "earliest"  # the table is the whole topic
    assert frame.updating
    assert [tuple(r) for r in frame.df.collect()] == [(1, "a", None, "+I"), (1, None, None, "-D")]


def stream_of(spark, rows, updating):
    ddl = "f0 BIGINT, f1 STRING, f2 TIMESTAMP_NTZ" + (", _rowkind STRING" if updating else "")
    return Stream(spark.createDataFrame(rows, ddl), ("id", "name", "ts"), updating=updating)


def test_upsert_sink_writes_values_and_tombstones(spark) -> None:
    snk = sink("upsert-kafka", primary_key=("id",), **{"key.format": "json", "value.format": "json"})
    out = K.encode_records(stream_of(spark, [(1, "a", T0, "+I"), (1, "a", T0, "-U"), (1, "b", None, "+U"),
                                             (2, "c", None, "-D")], True), snk)
    assert [tuple(r) for r in out.collect()] == [
        ('{"id":1}', '{"id":1,"name":"a","ts":"2024-05-01T12:00:00.000"}'),
        ('{"id":1}', '{"id":1,"name":"b","ts":null}'),
        ('{"id":2}', None)]


def test_kafka_sink_json_and_debezium(spark) -> None:
    plain = K.encode_records(stream_of(spark, [(1, "a", None)], False), sink(**{"key.format": "csv",
                                                                                "key.fields": "name"}))
    assert [tuple(r) for r in plain.collect()] == [("a", '{"id":1,"name":"a","ts":null}')]
    cdc = K.encode_records(stream_of(spark, [(1, "a", None, "+I"), (1, "a", None, "-D")], True),
                           sink(format="debezium-json"))
    values = [json.loads(r.value) for r in cdc.collect()]
    assert [v["op"] for v in values] == ["c", "d"] and values[1]["before"]["name"] == "a"
    with pytest.raises(Exception, match="writes inserts only"):
        K.encode_records(stream_of(spark, [(1, "a", None, "+U")], True), sink())


def test_exactly_once_is_reported_as_at_least_once(caplog) -> None:
    snk = sink(**{"sink.delivery-guarantee": "exactly-once", "sink.transactional-id-prefix": "tx"})
    with caplog.at_level(logging.WARNING, logger="planengine.runtime.kafka"):
        options = K.sink_options(snk)
    assert options == {"kafka.bootstrap.servers": "k1:9092", "topic": "out"}
    assert "at-least-once" in caplog.text


def kafka_jars_present(spark) -> bool:
    try:
        spark._jvm.java.lang.Class.forName("org.apache.spark.sql.kafka010.KafkaSourceProvider")
        return True
    except Exception:
        return False


def test_missing_jars_error_is_actionable(spark, tmp_path) -> None:
    if kafka_jars_present(spark):
        pytest.skip("the Kafka connector jars are on the classpath here")
    with pytest.raises(K.KafkaJarsMissing) as info:
        K.source_dataframe(spark, source())
    text = str(info.value)
    assert "the Kafka connector jars are not on Spark's classpath" in text
    assert "spark.jars.packages" in text and "spark-sql-kafka-0-10_2.13" in text and "engine image" in text

    from planengine.runtime.connectors import QueryOptions

    stream = Stream(spark.readStream.format("rate").load().selectExpr("value AS f0", "'x' AS f1",
                                                                      "CAST(NULL AS TIMESTAMP_NTZ) AS f2"),
                    ("id", "name", "ts"))
    with pytest.raises(K.KafkaJarsMissing, match="not on Spark's classpath"):
        get_sink_writer("kafka")(stream, sink(), None, None, QueryOptions("q", str(tmp_path / "ck")))


BOOTSTRAP = os.environ.get("PLANENGINE_KAFKA_BOOTSTRAP")


@pytest.mark.skipif(not BOOTSTRAP, reason="no Kafka broker: set PLANENGINE_KAFKA_BOOTSTRAP=host:port (and run with "
                                          "the Kafka connector jars, e.g. in the engine image) to run this test")
def test_round_trip_through_a_broker(spark, tmp_path) -> None:
    from planengine.api import TableEnvironment

    topic = f"planengine-test-{uuid.uuid4().hex[:8]}"
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (id BIGINT, name STRING) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/src',
          'format' = 'json');
        CREATE TABLE topic_t (id BIGINT, name STRING) WITH ('connector' = 'kafka', 'topic' = '{topic}',
          'properties.bootstrap.servers' = '{BOOTSTRAP}', 'format' = 'json', 'scan.startup.mode' = 'earliest-offset');
        CREATE TABLE back (id BIGINT, name STRING) WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/back',
          'format' = 'json');
    """)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.json").write_text('{"id": 1, "name": "a"}\n{"id": 2, "name": "b"}\n')
    env.execute_plan(env.compile_plan_sql("INSERT INTO topic_t SELECT * FROM src"), job_root=str(tmp_path / "j1"),
                     until_idle=True)
    env.execute_plan(env.compile_plan_sql("INSERT INTO back SELECT * FROM topic_t"), job_root=str(tmp_path / "j2"),
                     until_idle=True)
    got = sorted(tuple(r) for r in spark.read.schema("id BIGINT, name STRING").json(str(tmp_path / "back")).collect())
    assert got == [(1, "a"), (2, "b")]
