"""kafka / upsert-kafka at run time without a broker: option translation into Spark's reader and writer, record
decoding and encoding on DataFrames shaped like Spark's Kafka records, and the missing-jar error. The same paths
against a real broker, end to end: test_kafka_broker.py.
"""

from __future__ import annotations

import datetime as dt
import json
import logging

import pytest

from planengine.connectors.discovery import create_table_sink, create_table_source
from planengine.connectors.kafka_translation import to_spark_kafka_options
from planengine.runtime.connectors import get_sink_writer, get_source_reader
from planengine.runtime.connectors import kafka as K
from planengine.runtime.dataflow.stream import Stream
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
        self.config: dict[str, str] = {}  # the plan's config: a micro-batch plan (no real-time slot count)


@pytest.fixture
def no_cluster(monkeypatch):
    """These tests feed prepared records: there is no cluster to ask before reading (kafka_admin)."""
    monkeypatch.setattr(K, "start_options", lambda spark, source: to_spark_kafka_options(source))


def test_reader_gets_translated_options_and_decodes_json_with_key_and_metadata(spark, no_cluster) -> None:
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


def test_pattern_and_startup_modes(spark, no_cluster) -> None:
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


def test_upsert_kafka_tombstones_are_deletes(spark, no_cluster) -> None:
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
    """Adds are the key's new value; a DELETE and an UPDATE_BEFORE are tombstones, as Flink's upsert-kafka writes
    them (the planner drops UPDATE_BEFORE where nothing downstream needs it)."""
    snk = sink("upsert-kafka", primary_key=("id",), **{"key.format": "json", "value.format": "json"})
    out = K.encode_records(stream_of(spark, [(1, "a", T0, "+I"), (1, "a", T0, "-U"), (1, "b", None, "+U"),
                                             (2, "c", None, "-D")], True), snk)
    assert [tuple(r) for r in out.collect()] == [
        ('{"id":1}', '{"id":1,"name":"a","ts":"2024-05-01T12:00:00.000"}'),
        ('{"id":1}', None),
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


def test_missing_jars_error_is_actionable(spark, tmp_path, monkeypatch) -> None:
    """A session without the connector (what ``connector_loaded`` answers then) fails reads and writes alike
    with the way to get the jars, before Spark or the cluster is asked anything."""
    assert not K.connector_loaded(spark, "org.apache.spark.sql.kafka010.NoSuchProvider")
    monkeypatch.setattr(K, "connector_loaded", lambda spark: False)
    monkeypatch.setenv("PLANENGINE_EXTRA_JARS", str(tmp_path / "jars"))
    with pytest.raises(K.KafkaJarsMissing) as info:
        K.source_dataframe(spark, source())
    text = info.value.render()
    assert "the Kafka connector jars are not on Spark's classpath" in text
    assert f"looked in PLANENGINE_EXTRA_JARS='{tmp_path / 'jars'}'" in text
    assert "python -m planengine.runtime.connectors.maven_jars fetch kafka-connector" in text and "engine image" in text

    from planengine.runtime.connectors import QueryOptions

    stream = Stream(spark.readStream.format("rate").load().selectExpr("value AS f0", "'x' AS f1",
                                                                      "CAST(NULL AS TIMESTAMP_NTZ) AS f2"),
                    ("id", "name", "ts"))
    with pytest.raises(K.KafkaJarsMissing, match="not on Spark's classpath"):
        get_sink_writer("kafka")(stream, sink(), None, None, QueryOptions("q", str(tmp_path / "ck")))


def test_spark_missing_data_source_is_recognised() -> None:
    """Spark's own error when the provider vanished after the check (a class loader that cannot see it)."""
    assert K._is_missing_kafka(Exception("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: kafka."))
    assert not K._is_missing_kafka(Exception("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: avro."))
