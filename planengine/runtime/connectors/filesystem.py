"""``filesystem`` at run time: a streaming directory source and Spark's file sink (exactly once).

Source: Spark's streaming file source over ``path`` with the table's physical schema. Every scan is a
streaming read; a bounded table (no ``source.monitor-interval``) simply stops producing once its files are
read, which is what ``--until-idle`` waits for. ``changelog-json`` and ``debezium-json`` rows get
``_rowkind``; the table's ``'changelog-mode'`` option was resolved by the planner into the source's mode, and
an insert-only mode drops the row kind. Partition pruning (recorded partition specs and accepted partition
filters) is applied as filters on the partition columns Spark discovers from ``k=v`` directories.

Sink: Spark's file sink (``_spark_metadata`` manifest: each batch's files become visible exactly once).
Insert-only formats refuse updating streams; ``changelog-json`` writes ``op`` so row kinds survive;
``debezium-json`` writes Debezium envelopes. ``PARTITIONED BY`` becomes ``partitionBy``.

A ``path`` may be ``s3a://bucket/prefix``: the session gets the object store's S3A settings before the query
starts (``planengine.runtime.storage.object_store``, docs/object-store.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlparse

from planengine.errors import ValidationError
from planengine.formats.json import DATE_PATTERN, SQL, TIMESTAMP_FORMAT_STANDARD, timestamp_patterns
from planengine.ir.types import STRING, TIMESTAMPS, Kind
from planengine.runtime.connectors import (
    BatchOptions,
    BatchWriter,
    QueryOptions,
    SourceFrame,
    batch_sink_writer,
    sink_writer,
    source_reader,
    spark_schema_ddl,
)
from planengine.runtime.connectors import changelog_format as cf
from planengine.runtime.dataflow.expressions import render_spark_sql, render_spark_type
from planengine.runtime.dataflow.stream import APPEND, ROWKIND
from planengine.runtime.storage.object_store import is_object_store, use_object_store
from planengine.runtime.storage.s3_job_store import S3JobStore

_SPARK_FORMAT = {"json": "json", "csv": "csv", "parquet": "parquet", "changelog-json": "json",
                 "debezium-json": "json"}
_JSON_FORMATS = ("json", "changelog-json", "debezium-json")


def _local_dir(path: str) -> str | None:
    parsed = urlparse(path)
    return parsed.path if parsed.scheme in ("", "file") else None


def _format_options(fmt: Any, reading: bool) -> dict[str, str]:
    opts = dict(getattr(fmt, "options", {}) or {})
    out: dict[str, str] = {}
    if fmt.identifier == "csv":
        out["header"] = "false"
        if opts.get("field-delimiter"):
            out["sep"] = str(opts["field-delimiter"])
        if opts.get("disable-quote-character"):
            out["quote"] = ""
        elif opts.get("quote-character"):
            out["quote"] = str(opts["quote-character"])
        if opts.get("escape-character"):
            out["escape"] = str(opts["escape-character"])
        if opts.get("null-literal"):
            out["nullValue"] = str(opts["null-literal"])
        if opts.get("allow-comments"):
            out["comment"] = "#"
    if fmt.identifier in ("json", "changelog-json", "debezium-json") and not reading:
        out["ignoreNullFields"] = "false"
    if reading:
        out["mode"] = "DROPMALFORMED" if opts.get("ignore-parse-errors") else "FAILFAST"
    return out


def _json_text_options(fmt: Any, types: list[Any]) -> dict[str, str]:
    """Spark's JSON writer options for dates and timestamps as Flink's JSON format writes them.

    Spark's defaults are not Flink's (``T`` instead of ``'SQL'``'s space) and are Spark's to change, which
    would give a sink different text on another Spark release; explicit patterns keep the files identical
    on every engine. The fraction width covers the widest timestamp of the table (nested fields included).
    """
    standard = str((getattr(fmt, "options", {}) or {}).get(TIMESTAMP_FORMAT_STANDARD.key) or SQL)
    precisions = [t.precision if t.precision is not None else 6 for t in _walk_types(types) if t.kind in TIMESTAMPS]
    local, utc = timestamp_patterns(standard, 3 if max(precisions, default=3) <= 3 else 6)
    return {"timestampNTZFormat": local, "timestampFormat": utc, "timeZone": "UTC", "dateFormat": DATE_PATTERN}


def _walk_types(types: list[Any]) -> list[Any]:
    out: list[Any] = []
    for t in types:
        out.append(t)
        nested = [f.type for f in t.fields] + [x for x in (t.element, t.key, t.value) if x is not None]
        out += _walk_types(nested)
    return out


def _json_readable(t: Any) -> Any:
    """The type a JSON reader can parse for ``t``: a top-level MAP with a non-string key is read with STRING
    keys (JSON object keys are strings; Spark's reader would hand strings where the key type wants numbers)
    and its keys are cast afterwards. ``t`` itself when nothing changes."""

    if t.kind is Kind.MAP and t.key is not None and t.key.kind not in (Kind.CHAR, Kind.VARCHAR):
        return replace(t, key=STRING.with_nullable(False))
    return t


def _timestamps_as_declared(df: Any, names: list[str], types: list[Any]) -> Any:
    """Columns that hold timestamps cast to the sink's declared Spark type (``TIMESTAMP`` → ``TIMESTAMP_NTZ``).

    A rowtime attribute is a Spark ``TIMESTAMP`` inside the query (Spark's watermark needs one) whatever the
    sink declares, also inside a ``ROW``; Spark's writers format the two types differently (``LTZ`` with a
    zone), so the declared type must decide. Session time zone UTC: the cast keeps the wall-clock value.
    """
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    cols = [F.col(f"`{n}`").cast(render_spark_type(t)).alias(n)
            if any(x.kind in TIMESTAMPS for x in _walk_types([t])) else F.col(f"`{n}`")
            for n, t in zip(names, types)]
    return df.select(*cols, *[F.col(f"`{c}`") for c in df.columns if c not in names])


@source_reader("filesystem")
def read_filesystem(source: Any, ctx: Any, node: Any) -> SourceFrame:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    spark = ctx.spark
    fmt = source.format.identifier
    if fmt not in _SPARK_FORMAT:
        raise ValidationError(f"filesystem format '{fmt}' cannot be read by the Spark runtime")
    physical = source.schema.physical_columns
    names = [c.name for c in physical]
    types = [c.type for c in physical]
    read_types = [_json_readable(t) for t in types] if fmt in _JSON_FORMATS else types
    ddl = spark_schema_ddl(names, read_types)
    if fmt == "changelog-json":
        ddl += f", `{cf.OP_FIELD}` STRING"
    elif fmt == "debezium-json":
        ddl = cf.debezium_schema(spark_schema_ddl([n for n in names if n not in source.partition_keys],
                                                  [t for n, t in zip(names, types) if n not in source.partition_keys]))
    path = source.path
    use_object_store(spark, path)
    if is_object_store(path):
        # A wrong bucket, key or endpoint is one line naming the table here, not a stack trace from the query.
        S3JobStore(path, named_by=f"the 'path' of table {source.identifier}").check_reachable()
    reader = spark.readStream.format(_SPARK_FORMAT[fmt]).schema(ddl)
    local = _local_dir(path)
    if local is not None:
        if os.path.isfile(local):
            reader = reader.option("pathGlobFilter", os.path.basename(local))
            path = os.path.dirname(local) or "."
        else:
            os.makedirs(local, exist_ok=True)
    for k, v in _format_options(source.format, reading=True).items():
        reader = reader.option(k, v)
    max_files = source.options.get("source.max-files-per-trigger")
    if max_files:
        reader = reader.option("maxFilesPerTrigger", str(int(max_files)))
    df = reader.load(path)
    regex = source.options.get("source.path.regex-pattern")
    if regex:
        df = df.filter(F.col("_metadata.file_path").rlike(regex))

    if fmt == "debezium-json":
        df = cf.decode_debezium(df, [n for n in names if n not in source.partition_keys])
    for name, declared, read in zip(names, types, read_types, strict=True):
        if declared is not read:  # a JSON object's keys are strings: parse them as the declared key type

            key_type = render_spark_type(declared.key)
            df = df.withColumn(name, F.expr(f"transform_keys(`{name}`, (k, v) -> CAST(k AS {key_type}))"))
    updating = fmt in ("changelog-json", "debezium-json")
    if updating and source.changelog_mode().contains_only_inserts():
        # 'changelog-mode' = 'I': the rows are inserts whatever their op says
        updating = False
    if fmt == "changelog-json" and updating:
        df = df.withColumnRenamed(cf.OP_FIELD, ROWKIND)

    df = _prune_partitions(df, source)
    produced = source.row.physical_names
    cols = [F.col(f"`{n}`") for n in produced]
    if updating:
        cols.append(F.col(ROWKIND))
    return SourceFrame(df.select(*cols), updating=updating, bounded=source.monitor_interval_ms is None)


def _prune_partitions(df: Any, source: Any) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    if source.partitions is not None:
        keep = None
        for partition in source.partitions:
            cond = None
            for key, value in partition.items():
                c = F.col(f"`{key}`").cast("string") == F.lit(value)
                cond = c if cond is None else cond & c
            if cond is not None:
                keep = cond if keep is None else keep | cond
        df = df.filter(keep if keep is not None else F.lit(False))
    if source.partition_filters:
        physical = source.row.physical_type.field_names()  # the filters index the table's physical row
        for expr in source.partition_filters:
            df = df.filter(F.expr(render_spark_sql(expr, physical)))
    return df


@sink_writer("filesystem")
def write_filesystem(stream: Any, sink: Any, node: Any, ctx: Any, query: QueryOptions) -> Any:
    if stream.output_mode != APPEND:
        # Spark's file sink (and its exactly-once manifest) is append-only. The planner never routes an
        # update-mode stream here: file formats either accept UPDATE_BEFORE (so the aggregate keeps
        # generateUpdateBefore and runs on transformWithState) or are insert-only.
        raise ValidationError(f"sink {sink.identifier}: Spark's file sink cannot write a stream in "
                              f"{stream.output_mode} output mode",
                              hint="write the query to a jdbc, upsert-kafka, print or blackhole sink")
    files = _files(stream, sink)
    use_object_store(ctx.spark, sink.path)
    writer = files.df.writeStream.format(files.spark_format).outputMode("append").option("path", sink.path)
    for k, v in files.options.items():
        writer = writer.option(k, v)
    if files.partition_by:
        writer = writer.partitionBy(*files.partition_by)
    return query.configure(writer).start()


@batch_sink_writer("filesystem")
def filesystem_batches(sink: Any, node: Any, ctx: Any, options: BatchOptions) -> BatchWriter:
    """Spark's own file sink (``FileStreamSink``) fed one micro-batch at a time: the same files, the same
    ``_spark_metadata`` manifest, and its exactly-once rule (a batch id already in the manifest is skipped)."""
    state: dict[str, Any] = {}

    def write(stream: Any, batch_id: int) -> None:
        if stream.output_mode != APPEND:
            raise ValidationError(f"sink {sink.identifier}: a file sink cannot write a stream in "
                                  f"{stream.output_mode} output mode",
                                  hint="write the query to a jdbc, upsert-kafka, print or blackhole sink")
        files = _files(stream, sink)
        if "sink" not in state:
            use_object_store(ctx.spark, sink.path)
            state["sink"] = file_stream_sink(ctx.spark, sink.path, files.spark_format, files.options,
                                             files.partition_by)
        options.fence(batch_id)
        state["sink"].addBatch(batch_id, files.df._jdf)

    return write


@dataclass
class _Files:
    df: Any  # the rows as the table's files hold them
    spark_format: str
    options: dict[str, str]
    partition_by: list[str]


def _files(stream: Any, sink: Any) -> _Files:
    """The sink's rows in its file format's shape, with the writer options and partition columns."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    fmt = sink.format.identifier
    if fmt not in _SPARK_FORMAT:
        raise ValidationError(f"filesystem format '{fmt}' cannot be written by the Spark runtime")
    if getattr(sink, "overwrite", False):
        raise ValidationError(f"INSERT OVERWRITE {sink.identifier}: a streaming job cannot overwrite a table",
                              hint="use INSERT INTO")
    names = [c.name for c in sink.schema.physical_columns]
    df = stream.df.select(*[F.col(c).alias(n) for c, n in zip(stream.columns, names)],
                          *([F.col(ROWKIND)] if stream.updating else []))
    for key, value in (getattr(sink, "static_partition", None) or {}).items():
        df = df.withColumn(key, F.lit(value).cast(df.schema[key].dataType))
    types = [c.type for c in sink.schema.physical_columns]
    if fmt in _JSON_FORMATS:
        df = _timestamps_as_declared(df, names, types)
    if fmt == "changelog-json":
        df = cf.encode_changelog_json(df, names) if stream.updating else df.withColumn(cf.OP_FIELD, F.lit("+I"))
    elif fmt == "debezium-json":
        if not stream.updating:
            df = df.withColumn(ROWKIND, F.lit("+I"))
        df = cf.encode_debezium(df, names)
    elif stream.updating:
        raise ValidationError(f"sink {sink.identifier}: format '{fmt}' writes inserts only but the query produces "
                              "updates", hint="use 'format' = 'changelog-json' or 'debezium-json', or an upsert sink")
    local = _local_dir(sink.path)
    if local is not None:
        os.makedirs(local, exist_ok=True)
    options = _format_options(sink.format, reading=False)
    if fmt in _JSON_FORMATS:
        options.update(_json_text_options(sink.format, types))
    partition_by = list(sink.partition_keys) if sink.partition_keys and fmt != "debezium-json" else []
    return _Files(df, _SPARK_FORMAT[fmt], options, partition_by)


# Spark's FileFormat behind each format name a file sink writes.
_FILE_FORMAT_CLASSES = {
    "json": "org.apache.spark.sql.execution.datasources.json.JsonFileFormat",
    "csv": "org.apache.spark.sql.execution.datasources.csv.CSVFileFormat",
    "parquet": "org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat",
}
# Where Spark keeps FileStreamSink (4.2 and 4.3: sinks/; older releases: streaming/).
_FILE_STREAM_SINK_CLASSES = ("org.apache.spark.sql.execution.streaming.sinks.FileStreamSink",
                             "org.apache.spark.sql.execution.streaming.FileStreamSink")


def file_stream_sink(spark: Any, path: str, spark_format: str, options: dict[str, str], partition_by: list[str]
                     ) -> Any:
    """A JVM ``FileStreamSink`` for ``path``: what ``writeStream.format(spark_format)`` would create, to be fed
    micro-batches with ``addBatch(batch_id, jdf)`` from a ``foreachBatch``."""
    jvm = spark.sparkContext._jvm
    file_format = _jvm_class(jvm, _FILE_FORMAT_CLASSES[spark_format])()
    scala_options = jvm.PythonUtils.toScalaMap({**options, "path": path})
    columns = jvm.PythonUtils.toSeq(list(partition_by))
    for name in _FILE_STREAM_SINK_CLASSES:
        try:
            cls = _jvm_class(jvm, name)
            return cls(spark._jsparkSession, path, file_format, columns, scala_options)
        except Exception:  # py4j: unknown class (moved between Spark releases)
            continue
    raise ValidationError("this Spark has no FileStreamSink where planengine looks for it: "
                          + ", ".join(_FILE_STREAM_SINK_CLASSES),
                          hint="run the plan on a Spark release planengine supports (docs/engines.md)")


def _jvm_class(jvm: Any, name: str) -> Any:
    target = jvm
    for part in name.split("."):
        target = getattr(target, part)
    return target
