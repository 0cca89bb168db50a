"""``kafka`` and ``upsert-kafka`` at run time, through Spark's Kafka source and sink.

The Spark Kafka connector (``spark-sql-kafka-0-10``) is not part of pyspark's wheel: the engine image ships it
and the set-up fetches it (``jars.lock`` and ``extra_jars`` beside this module; docs/kafka.md). Without it, reading or
writing a Kafka table fails with a message saying how to get it (``KafkaJarsMissing``) instead of Spark's bare
"data source not found". Before a query starts, the driver asks the cluster (``kafka_admin``): an unreachable
``properties.bootstrap.servers`` or a missing ``topic`` is one error naming the option, and ``group-offsets``
starts at the group's committed offsets.

Source: ``spark.readStream.format("kafka")`` with the options of ``kafka_translation.to_spark_kafka_options``
(``subscribe`` / ``subscribePattern``, ``startingOffsets`` from ``scan.startup.mode``, client properties).
Records are decoded with Spark's ``from_json`` / ``from_csv``: the value holds the value fields, the key
(``key.format`` + ``key.fields``, with ``key.fields-prefix`` stripped) the key fields. ``debezium-json`` and
``changelog-json`` values become ``_rowkind`` (Debezium ``u`` → ``-U`` before, ``+U`` after). ``upsert-kafka``
reads the whole topic: a record with a value is ``+I``, a tombstone (null value) ``-D`` of its key.
Metadata columns: ``topic``, ``partition``, ``offset``, ``timestamp``, ``timestamp-type``, ``headers``.

Sink: ``df.writeStream.format("kafka")``; the value is ``to_json`` (or ``to_csv``) of the value fields, the key
of ``key.fields``. ``upsert-kafka`` writes ``+I``/``+U`` as values, ``-D`` as tombstones (null value, key
only) and drops ``-U``. ``debezium-json`` / ``changelog-json`` values carry the row kind.

Delivery: Spark's Kafka sink is **at-least-once** (a batch replayed after a failure is written again; Spark
has no Kafka transactions). ``'sink.delivery-guarantee' = 'exactly-once'`` therefore logs a warning and runs
at-least-once; consumers should read with upsert semantics (upsert-kafka) or de-duplicate.
"""

from __future__ import annotations

import logging
from typing import Any

from planengine.connectors.kafka_translation import to_spark_kafka_options, to_spark_kafka_sink_options
from planengine.errors import ValidationError
from planengine.plan import real_time
from planengine.runtime.connectors import (
    BatchOptions,
    QueryOptions,
    SourceFrame,
    batch_sink_writer,
    extra_jars,
    kafka_admin,
    sink_writer,
    source_reader,
    spark_schema_ddl,
)
from planengine.runtime.connectors import changelog_format as cf
from planengine.runtime.dataflow.stream import ROWKIND

log = logging.getLogger("planengine.runtime.kafka")

#: A class of Spark's Kafka connector: present on the driver's classpath exactly when the connector is.
PROVIDER_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
_DECODABLE = ("json", "csv", "debezium-json", "changelog-json")
_METADATA_COLUMNS = {"topic": "topic", "partition": "partition", "offset": "offset", "timestamp": "timestamp"}


class KafkaJarsMissing(ValidationError):
    pass


def jars_missing_error(table: Any) -> KafkaJarsMissing:
    return KafkaJarsMissing(
        f"table {table.identifier}: the Kafka connector jars are not on Spark's classpath, so '"
        f"{getattr(table, 'connector', 'kafka')}' tables cannot be read or written here (looked in "
        f"{extra_jars.where_searched()})",
        hint=f"fetch the pinned jars with `{extra_jars.FETCH_COMMAND}` (what `make test`'s set-up runs: "
             f"tests/setup/prepare.d/25-kafka.sh), or point {extra_jars.ENV} at a folder holding them, or use "
             "the engine image (it ships them); docs/kafka.md")


def connector_loaded(spark: Any, class_name: str = PROVIDER_CLASS) -> bool:
    """Whether the session's JVM can load ``class_name`` (py4j answers a package, not a class, when it cannot)."""
    from py4j.java_gateway import JavaClass  # noqa: PLC0415 — pyspark (and py4j) are an optional extra

    found = spark._jvm
    for part in class_name.split("."):
        found = getattr(found, part)
    return isinstance(found, JavaClass)


def require_connector(spark: Any, table: Any) -> None:
    if not connector_loaded(spark):
        raise jars_missing_error(table)


def _is_missing_kafka(error: BaseException) -> bool:
    text = str(error)
    return ("DATA_SOURCE_NOT_FOUND" in text or "Failed to find the data source: kafka" in text
            or "Failed to find data source: kafka" in text) and "kafka" in text.lower()


def _format_options(fmt: Any) -> dict[str, str]:
    opts = dict(getattr(fmt, "options", {}) or {})
    out = {"mode": "PERMISSIVE" if opts.get("ignore-parse-errors") else "FAILFAST"}
    if fmt.identifier == "csv" and opts.get("field-delimiter"):
        out["sep"] = str(opts["field-delimiter"])
    return out


def _decode(column: Any, fmt: Any, ddl: str) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    text = column.cast("string")
    if fmt.identifier == "csv":
        return F.from_csv(text, ddl, _format_options(fmt))
    return F.from_json(text, ddl, _format_options(fmt))


def _encode(struct: Any, fmt: Any) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    if fmt.identifier == "csv":
        return F.to_csv(struct)
    return F.to_json(struct, {"ignoreNullFields": "false"})


# --- source ------------------------------------------------------------------------------------------------
def start_options(spark: Any, source: Any) -> dict[str, str]:
    """Spark's reader options for ``source``, once the cluster has answered (``kafka_admin``): with
    ``group-offsets``, the group's committed offsets replace the ``auto.offset.reset`` fallback."""
    require_connector(spark, source)
    kafka_admin.check_source(spark, source)
    options = to_spark_kafka_options(source)
    if source.startup_mode == "group-offsets":
        committed = kafka_admin.group_starting_offsets(spark, source, options["startingOffsets"])
        if committed is not None:
            options["startingOffsets"] = committed
    return options


def source_dataframe(spark: Any, source: Any) -> Any:
    """The raw Kafka stream (``key``, ``value``, ``topic``, …) with the translated options."""

    reader = spark.readStream.format("kafka")
    for key, value in start_options(spark, source).items():
        reader = reader.option(key, value)
    try:
        return reader.load()
    except Exception as error:
        if _is_missing_kafka(error):
            raise jars_missing_error(source) from None
        raise


def decode_records(raw: Any, source: Any) -> tuple[Any, bool]:
    """Kafka records → the source's produced columns (by name) and ``_rowkind`` when the format has kinds."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    fmt = source.value_format
    if fmt.identifier not in _DECODABLE:
        raise ValidationError(f"{source.identifier}: value format '{fmt.identifier}' cannot be decoded by the "
                              f"Spark runtime", hint=f"use one of {', '.join(_DECODABLE)}")
    physical = {c.name: c.type for c in source.schema.physical_columns}
    produced = source.row.physical_names
    value_fields = [n for n in source.value_fields]
    key_fields = list(source.key_fields)
    prefix = source.key_fields_prefix
    value_ddl = spark_schema_ddl(value_fields, [physical[n] for n in value_fields])
    cols: dict[str, Any] = {}
    updating = False
    if fmt.identifier == "debezium-json":
        parsed = F.from_json(F.col("value").cast("string"), cf.debezium_schema(value_ddl), _format_options(fmt))
        raw = raw.withColumn("__value", parsed)
    elif fmt.identifier == "changelog-json":
        raw = raw.withColumn("__value", _decode(F.col("value"), fmt, value_ddl + f", `{cf.OP_FIELD}` STRING"))
    else:
        raw = raw.withColumn("__value", _decode(F.col("value"), fmt, value_ddl))
    if key_fields and source.key_format is not None:
        key_names = [k[len(prefix):] if prefix and k.startswith(prefix) else k for k in key_fields]
        key_ddl = spark_schema_ddl(key_names, [physical[k] for k in key_fields])
        raw = raw.withColumn("__key", _decode(F.col("key"), source.key_format, key_ddl))
        for name, stripped in zip(key_fields, key_names):
            cols[name] = F.col("__key").getField(stripped)
    meta = _metadata_columns(source)

    if fmt.identifier == "debezium-json":
        def image(side: str, kind: str) -> Any:
            return F.struct(F.col(f"__value.{side}").alias("row"), F.lit(kind).alias("kind"))

        op = F.col("__value.op")
        events = F.when(op.isin("c", "r"), F.array(image("after", "+I"))).when(
            op == "u", F.array(image("before", "-U"), image("after", "+U"))).when(
            op == "d", F.array(image("before", "-D"))).otherwise(F.array())
        keep = [F.col("__key")] if "__key" in raw.columns else []
        raw = raw.select(*keep, *[c.alias(f"__meta_{k}") for k, c in meta.items()], F.explode(events).alias("__e"))
        raw = raw.filter(F.col("__e.row").isNotNull())
        value_col = F.col("__e.row")
        kind = F.col("__e.kind")
        meta = {k: F.col(f"__meta_{k}") for k in meta}
        updating = True
    else:
        value_col = F.col("__value")
        kind = None
        if fmt.identifier == "changelog-json":
            kind, updating = F.col("__value").getField(cf.OP_FIELD), True
        if source.connector == "upsert-kafka":
            kind, updating = F.when(F.col("value").isNull(), F.lit("-D")).otherwise(F.lit("+I")), True
    for name in value_fields:
        cols.setdefault(name, value_col.getField(name))
    out = [cols[n].alias(n) for n in produced]
    out += [c.alias(f"__meta_{k}") for k, c in meta.items()]
    if updating and not source.changelog_mode().contains_only_inserts():
        out.append(kind.alias(ROWKIND))
    else:
        updating = False
    return raw.select(*out), updating


def _metadata_columns(source: Any) -> dict[str, Any]:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    out: dict[str, Any] = {}
    for key in source.metadata_keys:
        if key in _METADATA_COLUMNS:
            out[key] = F.col(_METADATA_COLUMNS[key])
        elif key == "timestamp-type":
            out[key] = F.when(F.col("timestampType") == 0, "CreateTime").when(
                F.col("timestampType") == 1, "LogAppendTime").otherwise("NoTimestampType")
        elif key == "headers":
            out[key] = F.map_from_entries(F.coalesce(F.col("headers"), F.array()))
        else:
            raise ValidationError(f"{source.identifier}: metadata '{key}' is not readable from Kafka")
    return out


@source_reader("kafka")
@source_reader("upsert-kafka")
def read_kafka(source: Any, ctx: Any, node: Any) -> SourceFrame:
    raw = source_dataframe(ctx.spark, source)
    if real_time.enabled(ctx.config):  # a real-time start counts the partitions (one task slot each, at once)
        ctx.real_time_sources.append((str(source.identifier),
                                      lambda: kafka_admin.partition_count(ctx.spark, source)))
    df, updating = decode_records(raw, source)
    return SourceFrame(df, updating=updating, bounded=False)


# --- sink --------------------------------------------------------------------------------------------------
def encode_records(stream: Any, sink: Any) -> Any:
    """The stream (``f0..fn`` + ``_rowkind``) as Kafka records: ``key`` (or null) and ``value``."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    names = sink.schema.persisted_row_type().field_names()  # the stream's f0..fn, in table order
    by_name = {n: F.col(c) for c, n in zip(stream.columns, names)}
    fmt = sink.value_format
    if fmt.identifier not in _DECODABLE:
        raise ValidationError(f"{sink.identifier}: value format '{fmt.identifier}' cannot be written by the Spark "
                              "runtime", hint=f"use one of {', '.join(_DECODABLE)}")
    df = stream.df
    kind = F.col(ROWKIND) if stream.updating else F.lit("+I")
    value_struct = F.struct(*[by_name[n].alias(n) for n in sink.value_fields])
    if fmt.identifier == "debezium-json":
        adds = kind.isin("+I", "+U")
        value = F.to_json(F.struct(F.when(adds, F.lit(None)).otherwise(value_struct).alias("before"),
                                   F.when(adds, value_struct).otherwise(F.lit(None)).alias("after"),
                                   F.when(adds, F.lit("c")).otherwise(F.lit("d")).alias("op")))
    elif fmt.identifier == "changelog-json":
        value = F.to_json(F.struct(*[by_name[n].alias(n) for n in sink.value_fields], kind.alias(cf.OP_FIELD)),
                          {"ignoreNullFields": "false"})
    else:
        value = _encode(value_struct, fmt)
        if sink.upsert:
            # As Flink's upsert-kafka writes them: a DELETE and an UPDATE_BEFORE are both tombstones. The planner
            # drops UPDATE_BEFORE where nothing needs it; where it reaches the sink (a filter on a non-key column
            # of an upsert stream), the update's after-image may be filtered out, and the tombstone is then the
            # only record that removes the key's old row.
            value = F.when(kind.isin("-D", "-U"), F.lit(None).cast("string")).otherwise(value)
        elif stream.updating:
            raise ValidationError(f"sink {sink.identifier}: format '{fmt.identifier}' writes inserts only but the "
                                  "query produces updates", hint="use 'upsert-kafka' or a debezium-json value")
    prefix = sink.key_fields_prefix
    if sink.key_fields and sink.key_format is not None:
        key = _encode(F.struct(*[by_name[k].alias(k[len(prefix):] if prefix and k.startswith(prefix) else k)
                                 for k in sink.key_fields]), sink.key_format)
    else:
        key = F.lit(None).cast("string")
    return df.select(key.alias("key"), value.alias("value"))


def check_sink(spark: Any, sink: Any) -> None:
    """Before the sink's query starts: the connector is loaded and the cluster takes the topic (``kafka_admin``)."""
    require_connector(spark, sink)
    kafka_admin.check_sink(spark, sink)


def sink_options(sink: Any) -> dict[str, str]:
    if sink.delivery_guarantee == "exactly-once":
        log.warning("sink %s: 'sink.delivery-guarantee' = 'exactly-once' is not available with Spark's Kafka sink; "
                    "it writes at-least-once (a batch replayed after a failure is written again)", sink.identifier)
    return to_spark_kafka_sink_options(sink)


@batch_sink_writer("kafka")
@batch_sink_writer("upsert-kafka")
def kafka_batches(sink: Any, node: Any, ctx: Any, options: BatchOptions) -> Any:
    """Spark's Kafka batch writer: at-least-once, like its streaming sink (a replayed batch is written again)."""
    check_sink(ctx.spark, sink)

    def write(stream: Any, batch_id: int) -> None:
        writer = encode_records(stream, sink).write.format("kafka")
        for key, value in sink_options(sink).items():
            writer = writer.option(key, value)
        options.fence(batch_id)
        try:
            writer.save()
        except Exception as error:
            if _is_missing_kafka(error):
                raise jars_missing_error(sink) from None
            raise

    return write


@sink_writer("kafka")
@sink_writer("upsert-kafka")
def write_kafka(stream: Any, sink: Any, node: Any, ctx: Any, query: QueryOptions) -> Any:
    check_sink(stream.df.sparkSession, sink)
    records = encode_records(stream, sink)
    # Real-time Mode runs in update mode only; for the insert-only streams it is given, update and append write
    # the same records (plan/real_time.py admits no updating stream to it).
    mode = "update" if "realTime" in query.trigger else stream.output_mode
    writer = records.writeStream.format("kafka").outputMode(mode)
    for key, value in sink_options(sink).items():
        writer = writer.option(key, value)
    try:
        return query.configure(writer).start()
    except Exception as error:
        if _is_missing_kafka(error):
            raise jars_missing_error(sink) from None
        raise
