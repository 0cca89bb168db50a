import re

import pytest

from planengine.connectors.abilities import WatermarkStrategy
from planengine.connectors.base import ScanContext
from planengine.connectors.discovery import create_table_sink, create_table_source
from planengine.connectors.kafka_translation import to_spark_kafka_options, to_spark_kafka_sink_options
from planengine.errors import OptionError, ValidationError
from planengine.ir import types as T
from planengine.ir.changelog import ALL, INSERT_ONLY, UPSERT, ChangelogMode
from tests.connectors.builders import build_ctx, ref

COLUMNS = [("id", "BIGINT"), ("name", "STRING"), ("ts", "TIMESTAMP(3)")]
BASE = {"connector": "kafka", "topic": "orders", "properties.bootstrap.servers": "k1:9092,k2:9092",
        "format": "json"}


def kafka_ctx(primary_key=None, drop=(), **options):
    merged = {k: v for k, v in {**BASE, **options}.items() if k not in drop}
    return build_ctx(COLUMNS, merged, primary_key=primary_key)


def upsert_ctx(primary_key=("id",), **options):
    merged = {"connector": "upsert-kafka", "topic": "users", "properties.bootstrap.servers": "k:9092",
              "key.format": "json", "value.format": "json", **options}
    return build_ctx(COLUMNS, merged, primary_key=primary_key)


def test_insert_only_unless_the_value_format_carries_row_kinds():
    assert create_table_source(kafka_ctx()).changelog_mode() == INSERT_ONLY
    cdc = create_table_source(kafka_ctx(format="debezium-json"))
    assert cdc.changelog_mode() == ALL
    assert create_table_sink(kafka_ctx(format="debezium-json")).changelog_mode(ALL) == ALL
    assert create_table_sink(kafka_ctx()).changelog_mode(ALL) == INSERT_ONLY
    keyed = create_table_source(kafka_ctx(primary_key=("id",), format="debezium-json",
                                          **{"changelog-mode": "I,UA,D"}))
    assert keyed.changelog_mode() == UPSERT and keyed.requires_normalization


def test_source_is_unbounded():
    assert create_table_source(kafka_ctx()).scan_runtime_provider(ScanContext()).is_bounded is False


def test_option_rules_reported_together():
    with pytest.raises(OptionError) as info:
        create_table_source(kafka_ctx(drop=("properties.bootstrap.servers",), **{
            "topic-pattern": "o.*", "value.format": "csv", "scan.startup.mode": "earliest",
            "key.fields": "id"}))
    text = str(info.value)
    assert "missing required option 'properties.bootstrap.servers'" in text
    assert ("option 'scan.startup.mode' = 'earliest' is not valid: expected one of 'earliest-offset', "
            "'latest-offset', 'group-offsets', 'timestamp', 'specific-offsets'") in text

    with pytest.raises(OptionError) as info:
        create_table_source(kafka_ctx(**{"topic-pattern": "o.*", "value.format": "csv", "key.fields": "idd",
                                         "scan.startup.mode": "timestamp"}))
    text = str(info.value)
    assert "set exactly one of 'topic' and 'topic-pattern'" in text
    assert "set exactly one of 'format' and 'value.format'" in text
    assert "'key.format' and 'key.fields' go together" in text
    assert "'key.fields' names 'idd', which is not a physical column (columns: id, name, ts)" in text
    assert "'scan.startup.mode' = 'timestamp' needs 'scan.startup.timestamp-millis'" in text


def test_value_and_key_format_options_are_namespaced():
    source = create_table_source(kafka_ctx(drop=("format",), **{
        "value.format": "json", "value.json.ignore-parse-errors": "true", "key.format": "csv",
        "key.csv.field-delimiter": "|", "key.fields": "id", "value.fields-include": "EXCEPT_KEY"}))
    assert source.value_format.options["ignore-parse-errors"] is True
    assert source.key_format.options["field-delimiter"] == "|"
    assert source.key_fields == ("id",) and source.value_fields == ("name", "ts")
    with pytest.raises(OptionError, match=re.escape("unknown option 'json.ignore-parse-errors': did you mean "
                                                    "'value.json.ignore-parse-errors'")):
        create_table_source(kafka_ctx(drop=("format",), **{"value.format": "json",
                                                           "json.ignore-parse-errors": "true"}))


def test_key_format_must_not_carry_row_kinds():
    with pytest.raises(OptionError, match=re.escape("'key.format' = 'debezium-json' carries row kinds")):
        create_table_source(kafka_ctx(**{"key.format": "debezium-json", "key.fields": "id"}))


def test_sink_writes_one_topic_and_exactly_once_needs_a_prefix():
    with pytest.raises(OptionError) as info:
        create_table_sink(kafka_ctx(topic="a;b", **{"sink.delivery-guarantee": "exactly-once"}))
    assert "a Kafka sink writes exactly one topic" in str(info.value)
    assert "'sink.delivery-guarantee' = 'exactly-once' needs 'sink.transactional-id-prefix'" in str(info.value)


def test_reading_metadata_and_watermark_push_down():
    source = create_table_source(kafka_ctx())
    assert list(source.list_readable_metadata()) == ["topic", "partition", "headers", "offset", "timestamp",
                                                     "timestamp-type"]
    produced = T.row(("id", T.BIGINT), ("offset", T.BIGINT.with_nullable(False)))
    source.apply_projection([[0]], T.row(("id", T.BIGINT)))
    source.apply_readable_metadata(["offset"], produced)
    source.apply_watermark(WatermarkStrategy(ref(2, T.timestamp(3)), 30_000))
    assert source.row.produced_type == produced and source.metadata_keys == ["offset"]
    assert source.as_summary_string() == "kafka(topic=orders, format=json, project=[id], metadata=[offset], " \
                                         "watermark=[$2])"
    with pytest.raises(ValidationError, match="unknown Kafka metadata"):
        source.apply_readable_metadata(["leader-epoch"], produced)


def test_sink_writes_headers_metadata_only():
    sink = create_table_sink(kafka_ctx())
    assert list(sink.list_writable_metadata()) == ["headers"]
    with pytest.raises(ValidationError, match="cannot be written"):
        sink.apply_writable_metadata(["timestamp"], T.row(("id", T.BIGINT)))


def test_upsert_kafka_needs_a_primary_key():
    with pytest.raises(OptionError, match="'upsert-kafka' tables need a PRIMARY KEY"):
        create_table_source(upsert_ctx(primary_key=None))


def test_upsert_kafka_changelog_and_key():
    source = create_table_source(upsert_ctx())
    assert source.changelog_mode() == UPSERT and source.requires_normalization
    assert source.key_fields == ("id",) and source.startup_mode == "earliest-offset"
    sink = create_table_sink(upsert_ctx())
    assert sink.changelog_mode(ALL) == ChangelogMode(UPSERT.kinds, key_only_deletes=True)
    assert str(sink.changelog_mode(ALL)) == "I,UA,PD"


def test_upsert_kafka_requires_key_and_value_formats_that_are_plain():
    with pytest.raises(OptionError) as info:
        create_table_source(build_ctx(COLUMNS, {"connector": "upsert-kafka", "topic": "u",
                                                "properties.bootstrap.servers": "k:9092"}, primary_key=("id",)))
    assert "missing required option 'key.format'" in str(info.value)
    assert "missing required option 'value.format'" in str(info.value)
    with pytest.raises(OptionError, match=re.escape("'value.format' = 'debezium-json' carries row kinds")):
        create_table_sink(upsert_ctx(**{"value.format": "debezium-json"}))


@pytest.mark.parametrize(("options", "expected"), [
    ({}, {"startingOffsets": "latest"}),  # group-offsets: auto.offset.reset (the runtime adds committed offsets)
    ({"properties.auto.offset.reset": "earliest"}, {"startingOffsets": "earliest"}),
    ({"scan.startup.mode": "earliest-offset"}, {"startingOffsets": "earliest"}),
    ({"scan.startup.mode": "latest-offset"}, {"startingOffsets": "latest"}),
    ({"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": "1700000000000"},
     {"startingTimestamp": "1700000000000", "startingOffsetsByTimestampStrategy": "latest"}),
    ({"scan.startup.mode": "specific-offsets",
      "scan.startup.specific-offsets": "partition:0,offset:42;partition:1,offset:300"},
     {"startingOffsets": '{"orders":{"0":42,"1":300}}'}),
    ({"topic": "a;b"}, {"subscribe": "a,b"}),
    ({"properties.group.id": "g1", "properties.security.protocol": "SSL"},
     {"kafka.group.id": "g1", "kafka.security.protocol": "SSL"}),
    ({"properties.enable.auto.commit": "true", "properties.key.deserializer": "x"}, {}),
])
def test_spark_source_option_translation(options, expected):
    translated = to_spark_kafka_options(create_table_source(kafka_ctx(**options)))
    base = {"kafka.bootstrap.servers": "k1:9092,k2:9092", "subscribe": "orders", "startingOffsets": "latest"}
    if "startingTimestamp" in expected:
        del base["startingOffsets"]
    assert translated == dict(sorted({**base, **expected}.items()))
    assert list(translated) == sorted(translated)


def test_spark_translation_of_patterns_headers_and_sinks():
    source = create_table_source(kafka_ctx(drop=("topic",), **{"topic-pattern": "orders-.*"}))
    source.apply_readable_metadata(["headers"], T.row(("h", T.map_(T.STRING, T.BYTES))))
    translated = to_spark_kafka_options(source)
    assert translated["subscribePattern"] == "orders-.*" and "subscribe" not in translated
    assert translated["includeHeaders"] == "true"
    sink = create_table_sink(kafka_ctx(**{"properties.acks": "all", "properties.value.serializer": "x"}))
    assert to_spark_kafka_sink_options(sink) == {"kafka.acks": "all", "kafka.bootstrap.servers": "k1:9092,k2:9092",
                                                 "topic": "orders"}


def test_bad_specific_offsets_are_reported():
    with pytest.raises(OptionError, match="is not 'partition:<n>,offset:<n>'"):
        create_table_source(kafka_ctx(**{"scan.startup.mode": "specific-offsets",
                                         "scan.startup.specific-offsets": "p0=42"}))
