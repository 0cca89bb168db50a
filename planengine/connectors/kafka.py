"""``'connector' = 'kafka'`` and ``'connector' = 'upsert-kafka'``: topics read and written through Spark's
Kafka source and sink (the image ships the Kafka jars).

``kafka`` reads a changelog only if its value format carries row kinds (debezium-json, changelog-json);
otherwise it is insert-only. ``upsert-kafka`` interprets records by key: a value is an upsert, a null
value (tombstone) a delete, so it needs a PRIMARY KEY, produces I,UA,D (the planner normalises it) and, as
a sink, writes I,UA,D with key-only deletes. Both offer projection, watermark push-down (per-partition
watermarks) and the record metadata ``topic``, ``partition``, ``offset``, ``timestamp``, ``timestamp-type``
and ``headers``. Flink options map to Spark's through ``kafka_translation``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planengine.connectors.abilities import (
    SupportsReadingMetadata,
    SupportsWatermarkPushDown,
    SupportsWritingMetadata,
    WatermarkStrategy,
)
from planengine.connectors.base import (
    DecodingFormat,
    DynamicTableSink,
    EncodingFormat,
    ScanContext,
    ScanRuntimeProvider,
    ScanTableSource,
    SinkContext,
    SinkRuntimeProvider,
)
from planengine.connectors.factories import DynamicTableSinkFactory, DynamicTableSourceFactory, FactoryContext
from planengine.connectors.helper import TableFactoryHelper
from planengine.connectors.options import (
    ConfigOption,
    OptionProblems,
    ValidatedOptions,
    duration_option,
    enum_option,
    int_option,
    list_option,
    string_option,
)
from planengine.connectors.projection import ProducedRow, TopLevelProjection
from planengine.connectors.source_changelog import CHANGELOG_MODE, resolve_source_changelog_mode
from planengine.errors import OptionError, ValidationError
from planengine.ir.changelog import UPSERT, ChangelogMode
from planengine.ir.schema import ResolvedSchema
from planengine.ir.types import BIGINT, BYTES, INT, STRING, DataType, map_, timestamp_ltz

TOPIC = list_option("topic", description="Topic(s) to read ('a;b'), or the one topic to write.")
TOPIC_PATTERN = string_option("topic-pattern", description="Regular expression of topics to read.")
BOOTSTRAP_SERVERS = string_option("properties.bootstrap.servers", description="Kafka brokers, 'host:port,…'.")
GROUP_ID = string_option("properties.group.id", description="Consumer group id.")
FORMAT = string_option("format", description="Value format (shorthand for 'value.format').")
KEY_FORMAT = string_option("key.format", description="Format of record keys; needs 'key.fields'.")
KEY_FIELDS = list_option("key.fields", description="Physical columns stored in the key, 'a;b'.")
KEY_FIELDS_PREFIX = string_option("key.fields-prefix",
                                  description="Prefix of key columns in the table (stripped in the key).")
VALUE_FORMAT = string_option("value.format", description="Format of record values.")
VALUE_FIELDS_INCLUDE = enum_option("value.fields-include", ("ALL", "EXCEPT_KEY"), default="ALL",
                                   description="Whether the value also holds the key columns.")
STARTUP_MODES = ("earliest-offset", "latest-offset", "group-offsets", "timestamp", "specific-offsets")
STARTUP_MODE = enum_option("scan.startup.mode", STARTUP_MODES, default="group-offsets",
                           description="Where a new query starts reading (a restored query resumes from its "
                           "checkpoint).")
STARTUP_SPECIFIC_OFFSETS = string_option("scan.startup.specific-offsets",
                                         description="'partition:0,offset:42;partition:1,offset:300' "
                                         "(with 'specific-offsets').")
STARTUP_TIMESTAMP = int_option("scan.startup.timestamp-millis",
                               description="Epoch milliseconds to start from (with 'timestamp').")
PARTITION_DISCOVERY = duration_option("scan.topic-partition-discovery.interval", default="5 min",
                                      description="How often new partitions are discovered.")
DELIVERY_GUARANTEE = enum_option("sink.delivery-guarantee", ("none", "at-least-once", "exactly-once"),
                                 default="at-least-once", description="Delivery guarantee of the sink.")
TRANSACTIONAL_ID_PREFIX = string_option("sink.transactional-id-prefix",
                                        description="Prefix of transactional ids (with 'exactly-once').")
SINK_PARTITIONER = enum_option("sink.partitioner", ("default", "fixed", "round-robin"), default="default",
                               description="How rows are spread over partitions ('default': by key hash).")
SINK_FLUSH_MAX_ROWS = int_option("sink.buffer-flush.max-rows", default=0,
                                 description="upsert-kafka: buffer and merge this many rows per key (0: off).")
SINK_FLUSH_INTERVAL = duration_option("sink.buffer-flush.interval", default="0 ms",
                                      description="upsert-kafka: flush the buffer at least this often.")

#: Record metadata, in Flink's order. Spark's Kafka source offers all of these (headers with includeHeaders).
READABLE_METADATA: dict[str, DataType] = {
    "topic": STRING.with_nullable(False),
    "partition": INT.with_nullable(False),
    "headers": map_(STRING, BYTES).with_nullable(False),
    "offset": BIGINT.with_nullable(False),
    "timestamp": timestamp_ltz(3).with_nullable(False),
    "timestamp-type": STRING.with_nullable(False),
}
#: Spark's Kafka sink writes headers; it has no per-record timestamp column.
WRITABLE_METADATA: dict[str, DataType] = {"headers": map_(STRING, BYTES).with_nullable(False)}

_PROPERTIES_PREFIX = "properties."


def parse_specific_offsets(text: str) -> dict[int, int]:
    """``'partition:0,offset:42;partition:1,offset:300'`` → ``{0: 42, 1: 300}``."""
    result: dict[int, int] = {}
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        fields = dict(part.split(":", 1) for part in entry.split(",") if ":" in part)
        try:
            result[int(fields["partition"])] = int(fields["offset"])
        except (KeyError, ValueError):
            raise ValueError(f"'{entry}' is not 'partition:<n>,offset:<n>'") from None
    if not result:
        raise ValueError("no 'partition:<n>,offset:<n>' entries")
    return result


class _KafkaTable:
    """Typed options and key/value layout shared by sources and sinks."""

    options: ValidatedOptions
    schema: ResolvedSchema
    key_fields: tuple[str, ...]

    def _init_table(self, connector: str, identifier: object, schema: ResolvedSchema, options: ValidatedOptions,
                    key_format: object, value_format: object, key_fields: tuple[str, ...]) -> None:
        self.connector = connector
        self.identifier = identifier
        self.schema = schema
        self.options = options
        self.key_format = key_format
        self.value_format = value_format
        self.key_fields = key_fields

    @property
    def topics(self) -> list[str] | None:
        return self.options.value(TOPIC)

    @property
    def topic_pattern(self) -> str | None:
        return self.options.value(TOPIC_PATTERN)

    @property
    def properties(self) -> dict[str, str]:
        """Kafka client properties (``properties.`` stripped), bootstrap servers and group id included."""
        return self.options.with_prefix(_PROPERTIES_PREFIX)

    @property
    def key_fields_prefix(self) -> str:
        return self.options.value(KEY_FIELDS_PREFIX) or ""

    @property
    def value_fields(self) -> tuple[str, ...]:
        names = [c.name for c in self.schema.physical_columns]
        if self.options.value(VALUE_FIELDS_INCLUDE) == "EXCEPT_KEY":
            return tuple(n for n in names if n not in self.key_fields)
        return tuple(names)


class KafkaTableSource(_KafkaTable, ScanTableSource, TopLevelProjection, SupportsWatermarkPushDown,
                       SupportsReadingMetadata):
    def __init__(self, connector: str, identifier: object, schema: ResolvedSchema, options: ValidatedOptions,
                 key_format: DecodingFormat | None, value_format: DecodingFormat, key_fields: tuple[str, ...],
                 mode: ChangelogMode):
        self._init_table(connector, identifier, schema, options, key_format, value_format, key_fields)
        self.mode = mode
        self.row = ProducedRow(schema.physical_row_type())
        self.watermark: WatermarkStrategy | None = None

    @property
    def startup_mode(self) -> str:
        """upsert-kafka always reads the whole topic, since the table is the latest value per key."""
        if self.connector == "upsert-kafka":
            return "earliest-offset"
        return self.options.value(STARTUP_MODE) or "group-offsets"

    @property
    def startup_timestamp_ms(self) -> int | None:
        return self.options.value(STARTUP_TIMESTAMP)

    @property
    def startup_specific_offsets(self) -> dict[int, int] | None:
        text = self.options.value(STARTUP_SPECIFIC_OFFSETS)
        return parse_specific_offsets(text) if text else None

    @property
    def metadata_keys(self) -> list[str]:
        return list(self.row.metadata_keys)

    def changelog_mode(self) -> ChangelogMode:
        return self.mode

    def scan_runtime_provider(self, ctx: ScanContext) -> ScanRuntimeProvider:
        return ScanRuntimeProvider(self.connector, self, is_bounded=False)

    def apply_watermark(self, strategy: WatermarkStrategy) -> None:
        self.watermark = strategy

    def list_readable_metadata(self) -> dict[str, DataType]:
        return dict(READABLE_METADATA)

    def apply_readable_metadata(self, metadata_keys: list[str], produced_type: DataType) -> None:
        unknown = [k for k in metadata_keys if k not in READABLE_METADATA]
        if unknown:
            raise ValidationError(f"{self.identifier}: unknown Kafka metadata {unknown}",
                                  hint=f"readable metadata: {', '.join(READABLE_METADATA)}")
        self.row.with_metadata(metadata_keys, produced_type)

    def as_summary_string(self) -> str:
        source = f"topic-pattern={self.topic_pattern}" if self.topic_pattern else f"topic={';'.join(self.topics or [])}"
        parts = [source, f"format={self.value_format.identifier}"]
        if self.row.projection is not None:
            parts.append("project=[" + ", ".join(self.row.physical_names) + "]")
        if self.row.metadata_keys:
            parts.append("metadata=[" + ", ".join(self.row.metadata_keys) + "]")
        if self.watermark is not None:
            parts.append(f"watermark=[{self.watermark.watermark_expr}]")
        return f"{self.connector}(" + ", ".join(parts) + ")"


class KafkaTableSink(_KafkaTable, DynamicTableSink, SupportsWritingMetadata):
    def __init__(self, connector: str, identifier: object, schema: ResolvedSchema, options: ValidatedOptions,
                 key_format: EncodingFormat | None, value_format: EncodingFormat, key_fields: tuple[str, ...],
                 upsert: bool):
        self._init_table(connector, identifier, schema, options, key_format, value_format, key_fields)
        self.upsert = upsert
        self.metadata_keys: list[str] = []

    @property
    def topic(self) -> str:
        return (self.topics or [""])[0]

    @property
    def delivery_guarantee(self) -> str:
        return self.options.value(DELIVERY_GUARANTEE) or "at-least-once"

    def changelog_mode(self, requested: ChangelogMode) -> ChangelogMode:
        if self.upsert:
            # Deletes become tombstones that carry only the key.
            return ChangelogMode(UPSERT.kinds, key_only_deletes=True)
        return self.value_format.changelog_mode()

    def writes_micro_batches(self) -> bool:
        return True  # planengine.runtime.connectors: a batch writer next to the streaming one

    def sink_runtime_provider(self, ctx: SinkContext) -> SinkRuntimeProvider:
        return SinkRuntimeProvider(self.connector, self)

    def list_writable_metadata(self) -> dict[str, DataType]:
        return dict(WRITABLE_METADATA)

    def apply_writable_metadata(self, metadata_keys: list[str], consumed_type: DataType) -> None:
        unknown = [k for k in metadata_keys if k not in WRITABLE_METADATA]
        if unknown:
            raise ValidationError(f"{self.identifier}: Kafka metadata {unknown} cannot be written",
                                  hint=f"writable metadata: {', '.join(WRITABLE_METADATA)}")
        self.metadata_keys = list(metadata_keys)

    def as_summary_string(self) -> str:
        return f"{self.connector}(topic={self.topic}, format={self.value_format.identifier})"


# --- factories --------------------------------------------------------------------------------------
class _KafkaFactoryBase(DynamicTableSourceFactory, DynamicTableSinkFactory):
    upsert = False

    def mutable_options(self) -> frozenset[str]:
        return frozenset({PARTITION_DISCOVERY.key, "sink.buffer-flush.*"})

    def documented_pattern_options(self) -> Sequence[ConfigOption[Any]]:
        return (string_option("properties.*", description="Any Kafka client property, passed through "
                              "(e.g. 'properties.security.protocol'); Spark-managed ones are dropped."),)

    def _validate(self, ctx: FactoryContext, *, sink: bool) -> tuple[TableFactoryHelper, ValidatedOptions]:
        helper = TableFactoryHelper(self, ctx)
        checks = (lambda values, problems: self._check(ctx, values, problems, sink=sink),)
        options = helper.validate(format_keys=("format", "key.format", "value.format"),
                                  prefixes_allowed=(_PROPERTIES_PREFIX,), checks=checks)
        return helper, options

    def _key_fields(self, ctx: FactoryContext, options: ValidatedOptions) -> tuple[str, ...]:
        raise NotImplementedError

    def _check(self, ctx: FactoryContext, values: ValidatedOptions, problems: OptionProblems, *, sink: bool) -> None:
        topics, pattern = values.get(TOPIC.key), values.get(TOPIC_PATTERN.key)
        if sink:
            if pattern is not None:
                problems.other.append("'topic-pattern' cannot be written to; set 'topic' to one topic")
            elif not topics or len(topics) != 1:
                problems.other.append("a Kafka sink writes exactly one topic: set 'topic' = '<topic>'")
        elif (topics is None) == (pattern is None):
            problems.other.append("set exactly one of 'topic' and 'topic-pattern'")
        physical = [c.name for c in ctx.schema.physical_columns]
        prefix = values.get(KEY_FIELDS_PREFIX.key)
        if prefix:
            if values.get(VALUE_FIELDS_INCLUDE.key) != "EXCEPT_KEY":
                problems.other.append("'key.fields-prefix' needs 'value.fields-include' = 'EXCEPT_KEY'")
            for name in self._key_fields(ctx, values):
                if not name.startswith(prefix):
                    problems.other.append(f"key column '{name}' does not start with 'key.fields-prefix' '{prefix}'")
        for name in values.get(KEY_FIELDS.key) or []:
            if name not in physical:
                problems.other.append(f"'key.fields' names '{name}', which is not a physical column "
                                      f"(columns: {', '.join(physical)})")
        if values.get(DELIVERY_GUARANTEE.key) == "exactly-once" and not values.get(TRANSACTIONAL_ID_PREFIX.key):
            problems.other.append("'sink.delivery-guarantee' = 'exactly-once' needs 'sink.transactional-id-prefix'")

    def _insert_only_formats(self, ctx: FactoryContext, formats: dict[str, Any]) -> None:
        for key, fmt in formats.items():
            if fmt is not None and fmt.carries_row_kinds():
                raise OptionError(
                    f"table {ctx.identifier}: '{key}' = '{fmt.identifier}' carries row kinds, but "
                    f"'{self.factory_identifier}' " + ("derives them from the key and tombstones" if self.upsert
                                                        else "keys must be plain records"),
                    hint="use an insert-only format such as 'json' or 'csv'")


class KafkaTableFactory(_KafkaFactoryBase):
    factory_identifier = "kafka"
    description = "Kafka topics. Insert-only, or a changelog when the value format carries row kinds."
    changelog_doc = ("Source: the value format's changelog (I for json/csv; I,UB,UA,D for debezium-json and "
                     "changelog-json), narrowed or declared with 'changelog-mode'. "
                     "Sink: what the value format can encode.")
    source_class = KafkaTableSource
    sink_class = KafkaTableSink

    def required_options(self) -> Sequence[ConfigOption[Any]]:
        return (BOOTSTRAP_SERVERS,)

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (TOPIC, TOPIC_PATTERN, GROUP_ID, FORMAT, KEY_FORMAT, KEY_FIELDS, KEY_FIELDS_PREFIX, VALUE_FORMAT,
                VALUE_FIELDS_INCLUDE, STARTUP_MODE, STARTUP_SPECIFIC_OFFSETS, STARTUP_TIMESTAMP,
                PARTITION_DISCOVERY, DELIVERY_GUARANTEE, TRANSACTIONAL_ID_PREFIX, SINK_PARTITIONER, CHANGELOG_MODE)

    def _key_fields(self, ctx: FactoryContext, options: ValidatedOptions) -> tuple[str, ...]:
        return tuple(options.get(KEY_FIELDS.key) or ())

    def _check(self, ctx: FactoryContext, values: ValidatedOptions, problems: OptionProblems, *, sink: bool) -> None:
        super()._check(ctx, values, problems, sink=sink)
        if (values.get(FORMAT.key) is None) == (values.get(VALUE_FORMAT.key) is None):
            problems.other.append("set exactly one of 'format' and 'value.format'")
        if (values.get(KEY_FORMAT.key) is None) != (values.get(KEY_FIELDS.key) is None):
            problems.other.append("'key.format' and 'key.fields' go together: set both or neither")
        if values.get(VALUE_FIELDS_INCLUDE.key) == "EXCEPT_KEY" and not values.get(KEY_FIELDS.key):
            problems.other.append("'value.fields-include' = 'EXCEPT_KEY' needs 'key.fields'")
        if sink:
            return
        mode = values.get(STARTUP_MODE.key)
        if mode == "timestamp" and values.get(STARTUP_TIMESTAMP.key) is None:
            problems.other.append("'scan.startup.mode' = 'timestamp' needs 'scan.startup.timestamp-millis'")
        if mode == "specific-offsets":
            text = values.get(STARTUP_SPECIFIC_OFFSETS.key)
            topics = values.get(TOPIC.key) or []
            if text is None:
                problems.other.append("'scan.startup.mode' = 'specific-offsets' needs 'scan.startup.specific-offsets'")
            elif len(topics) != 1:
                problems.other.append("'scan.startup.specific-offsets' applies to exactly one 'topic'")
            else:
                try:
                    parse_specific_offsets(text)
                except ValueError as e:
                    problems.invalid.append(f"option 'scan.startup.specific-offsets' = '{text}' is not valid: {e}")

    def create_dynamic_table_source(self, ctx: FactoryContext) -> KafkaTableSource:
        helper, options = self._validate(ctx, sink=False)
        value_format = helper.decoding_format("format") or helper.decoding_format("value.format")
        key_format = helper.decoding_format("key.format")
        assert value_format is not None
        self._insert_only_formats(ctx, {"key.format": key_format})
        mode = resolve_source_changelog_mode(ctx.identifier, ctx.schema, value_format, options.value(CHANGELOG_MODE))
        return KafkaTableSource(self.factory_identifier, ctx.identifier, ctx.schema, options, key_format,
                                value_format, self._key_fields(ctx, options), mode)

    def create_dynamic_table_sink(self, ctx: FactoryContext) -> KafkaTableSink:
        helper, options = self._validate(ctx, sink=True)
        value_format = helper.encoding_format("format") or helper.encoding_format("value.format")
        key_format = helper.encoding_format("key.format")
        assert value_format is not None
        self._insert_only_formats(ctx, {"key.format": key_format})
        return KafkaTableSink(self.factory_identifier, ctx.identifier, ctx.schema, options, key_format,
                              value_format, self._key_fields(ctx, options), upsert=False)


class UpsertKafkaTableFactory(_KafkaFactoryBase):
    factory_identifier = "upsert-kafka"
    description = "Kafka topics as an upsert changelog keyed by the PRIMARY KEY (tombstones delete)."
    changelog_doc = ("Source: I,UA,D keyed by the PRIMARY KEY (the planner adds ChangelogNormalize). Sink: I,UA,D "
                     "with key-only deletes (tombstones), written as I,UA,PD in plans.")
    source_class = KafkaTableSource
    sink_class = KafkaTableSink
    upsert = True

    def required_options(self) -> Sequence[ConfigOption[Any]]:
        return (TOPIC, BOOTSTRAP_SERVERS, KEY_FORMAT, VALUE_FORMAT)

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (GROUP_ID, KEY_FIELDS_PREFIX, VALUE_FIELDS_INCLUDE, PARTITION_DISCOVERY, DELIVERY_GUARANTEE,
                TRANSACTIONAL_ID_PREFIX, SINK_FLUSH_MAX_ROWS, SINK_FLUSH_INTERVAL)

    def _key_fields(self, ctx: FactoryContext, options: ValidatedOptions) -> tuple[str, ...]:
        pk = ctx.schema.primary_key
        return pk.columns if pk else ()

    def _require_primary_key(self, ctx: FactoryContext) -> None:
        if ctx.schema.primary_key is None:
            raise OptionError(
                f"table {ctx.identifier}: 'upsert-kafka' tables need a PRIMARY KEY (it is the Kafka record key)",
                hint="add PRIMARY KEY (…) NOT ENFORCED, or use 'connector' = 'kafka' for an append-only topic")

    def create_dynamic_table_source(self, ctx: FactoryContext) -> KafkaTableSource:
        self._require_primary_key(ctx)
        helper, options = self._validate(ctx, sink=False)
        key_format, value_format = helper.decoding_format("key.format"), helper.decoding_format("value.format")
        assert value_format is not None
        self._insert_only_formats(ctx, {"key.format": key_format, "value.format": value_format})
        return KafkaTableSource(self.factory_identifier, ctx.identifier, ctx.schema, options, key_format,
                                value_format, self._key_fields(ctx, options), UPSERT)

    def create_dynamic_table_sink(self, ctx: FactoryContext) -> KafkaTableSink:
        self._require_primary_key(ctx)
        helper, options = self._validate(ctx, sink=True)
        key_format, value_format = helper.encoding_format("key.format"), helper.encoding_format("value.format")
        assert value_format is not None
        self._insert_only_formats(ctx, {"key.format": key_format, "value.format": value_format})
        return KafkaTableSink(self.factory_identifier, ctx.identifier, ctx.schema, options, key_format,
                              value_format, self._key_fields(ctx, options), upsert=True)

