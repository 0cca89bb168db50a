"""The state layout *this* engine would create for a plan: run every query once over empty input.

Spark decides the operator ids, store names and key/value schemas while planning a batch (they depend on
the Spark version, on the optimizer, on the nullability of every input column), so the only faithful way
to know them is to let Spark do it. ``expected_layouts`` therefore translates the plan exactly as ``run``
does (same restore, same translators, same user function registration, same shared SparkSession), with
two substitutions:

* each table scan keeps the real connector's DataFrame only to learn its schema (types, nullability, field
  metadata) and reads instead an *empty* stream of exactly that schema: a JSON file source over a directory
  holding one empty file, so the first batch runs (a source with no file would never start one) and
  produces no rows; non-nullable columns are rebuilt with ``coalesce(col, <zero of the type>)`` because
  file sources make every column nullable. Internal channels between cut queries are treated the same way,
  so a consumer query gets its batch although its producer wrote nothing;
* each sink (and channel producer) writes to Spark's ``noop`` sink, in the output mode of the real writer.

Every query then runs one ``availableNow`` batch into a checkpoint in a temporary directory, and the layout
is read back from that checkpoint with ``layout.read_layout`` (the same reader as for the snapshot), after
which the directory is removed. Nothing is cached: a second plan is probed from scratch.

Side effects outside the temporary directory are those of building (not starting) the real sources: the
filesystem connector creates a missing local input directory (as ``run`` would). Bounded ``datagen`` and
``VALUES`` write their rows under the temporary job root, at the cost of generating them.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planengine.plan import serde
from planengine.plan.compiled_plan import CompiledPlan
from planengine.runtime.engine.context import TranslationContext
from planengine.runtime.engine.executor import TRANSIENT_FAILURES, check_runtime_support
from planengine.runtime.engine.python_functions import register_user_functions
from planengine.runtime.engine.session import use_plan_partitions
from planengine.runtime.engine.topology import translate_plan
from planengine.runtime.engine.translators.watermark import EOI
from planengine.runtime.storage.checkpoint_layout import read_layout

SCAN = "stream-exec-table-source-scan"
# Failures of Spark's Python worker plumbing on a loaded machine (the executor retries the same ones).
TRANSIENT_ATTEMPTS = 3


class ProbeError(RuntimeError):
    """This engine could not run the plan's queries even over empty input (the message says which)."""


@dataclass
class ProbeResult:
    layouts: dict[str, dict[str, Any]] = field(default_factory=dict)  # query uid -> layout
    notes: list[str] = field(default_factory=list)  # approximations the comparison should mention


@dataclass
class _Query:
    uid: str
    df: Any  # the streaming DataFrame the real query would write
    # Spark output mode the real writer uses: ``output_mode`` of the sink's stream when a
    # translator set one (a native update-mode aggregate), else append like every writer.
    output_mode: str = "append"


def expected_layouts(plan: Any, spark: Any, restored_conf: dict[str, str] | None = None) -> ProbeResult:
    """Query uid -> the state layout this engine creates for ``plan`` (a ``CompiledPlan``).

    ``restored_conf`` is the SQL configuration a snapshot's offset log recorded (``stored_session_conf``).
    Spark runs a query restarted from a checkpoint with that configuration, and with the *legacy* value of
    every setting the checkpoint predates (Spark 4.3's ``statefulOperator.alwaysNullableOutput`` is false
    for a 4.2 checkpoint, which keeps the join keys NOT NULL as 4.2 stored them), so the probe runs in a
    separate session configured the same way: a fresh query's layout is not what a restore expects.
    """
    tmp = Path(tempfile.mkdtemp(prefix="planengine-check-"))
    try:
        result = ProbeResult()
        spark = spark.newSession()  # its own SQL settings: the driver's session stays as it was
        if restored_conf is not None:
            _apply_restored_conf(spark, restored_conf, result.notes)
        else:  # fresh queries: the partitions the plan records (a restored query keeps its checkpoint's)
            use_plan_partitions(spark, dict(plan.data.get("config") or {}))
        queries = _translate(plan, spark, tmp, result.notes)
        for query in queries:
            checkpoint = tmp / "checkpoints" / query.uid
            _run_once(query, checkpoint)
            result.layouts[query.uid] = read_layout(checkpoint)
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- the configuration of a restored query -----------------------------------------------------------------
def stored_session_conf(checkpoint: Path) -> dict[str, str] | None:
    """The SQL configuration recorded in a checkpoint's newest ``offsets/N`` (None when there is none)."""
    offsets = checkpoint / "offsets"
    batches = sorted((int(p.name) for p in offsets.iterdir() if p.name.isdigit()), reverse=True) \
        if offsets.is_dir() else []
    for batch in batches:
        lines = (offsets / str(batch)).read_text(encoding="utf-8").splitlines()
        if len(lines) > 1:
            try:
                conf = json.loads(lines[1]).get("conf")
            except (json.JSONDecodeError, AttributeError):
                continue
            if isinstance(conf, dict):
                return {str(k): str(v) for k, v in conf.items()}
    return None


# Where Spark keeps OffsetSeqMetadata (the class moved between minors); its companion object knows the
# legacy values of the settings a checkpoint may predate.
_OFFSET_SEQ_METADATA = ("org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqMetadata",
                        "org.apache.spark.sql.execution.streaming.runtime.OffsetSeqMetadata",
                        "org.apache.spark.sql.execution.streaming.OffsetSeqMetadata")


def _legacy_defaults(spark: Any) -> dict[str, str] | None:
    jvm = spark.sparkContext._jvm
    for name in _OFFSET_SEQ_METADATA:
        try:
            target = jvm
            for part in (name + "$").split("."):  # the companion object's class; MODULE$ is its instance
                target = getattr(target, part)
            scala_map = getattr(target, "MODULE$").relevantSQLConfDefaultValues()
            java_map = jvm.scala.jdk.javaapi.CollectionConverters.asJava(scala_map)
            return {str(k): str(v) for k, v in dict(java_map).items()}
        except Exception:  # py4j answers an unknown class or method with a generic error
            continue
    return None


def _apply_restored_conf(spark: Any, stored: dict[str, str], notes: list[str]) -> None:
    """What Spark's ``OffsetSeqMetadata.setSessionConf`` does for a restarted query."""
    legacy = _legacy_defaults(spark)
    if legacy is None:
        notes.append("could not read Spark's legacy defaults for settings the snapshot predates; the expected "
                     "layout uses this engine's defaults for them")
        legacy = {}
    for key, value in {**{k: v for k, v in legacy.items() if k not in stored}, **stored}.items():
        try:
            spark.conf.set(key, value)
        except Exception:  # a static or removed setting: Spark would not apply it to the query either
            continue


# --- translation ------------------------------------------------------------------------------------------
def _translate(plan: Any, spark: Any, tmp: Path, notes: list[str]) -> list[_Query]:
    check_runtime_support(plan.data)
    sinks = CompiledPlan(plan.data, plan.session).restore()  # as Job.translate: always from the JSON
    register_user_functions(spark, sinks, plan.session.catalog)
    run_dir = tmp / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    empty_dir = tmp / "empty-input"
    empty_dir.mkdir()
    (empty_dir / "empty.json").write_bytes(b"")
    ctx = TranslationContext(spark, dict(plan.data.get("config") or {}), serde.node_ids(sinks), run_dir=run_dir,
                             job_root=tmp / "root")
    queries: list[_Query] = []
    empty = _EmptyStreams(spark, empty_dir, notes)
    ctx.cut = lambda stream, name: _cut(stream, name, queries, empty)

    def scan(node: Any, out: Any) -> Any:
        if node.metadata.name != SCAN:
            return out
        return out.with_df(empty.like(out.df, f"node {ctx.node_id(node)} ({node.table.identifier})"))

    def read_channel(head: Any, uid: str, path: Any, consumer: Any, ctx: Any) -> Any:
        return _channel_reader(head, uid, empty)

    # The same queries as ``run`` (runtime/engine/topology.py): a fan-out query's state is all in the stream it
    # hands to foreachBatch, which the probe writes to noop like any other query's.
    translate_plan(sinks, plan.data, ctx, lambda query, stream: queries.append(
        _Query(query.uid, stream.df, stream.output_mode)), read_channel=read_channel, on_scan=scan)
    return queries


def _channel_reader(head: Any, uid: str, empty: _EmptyStreams) -> Any:
    """A shared topology's channel as the consumer reads it (``topology.read_channel_files``: the head's
    schema, its watermark, a drain control unioned in), over an empty stream."""

    read_back = empty.spark.readStream.schema(head.df.schema).parquet(str(empty.directory))
    df = empty.like(read_back, f"channel {uid}")
    if head.rowtime is not None:
        from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

        delay = head.facts.watermark_delay_ms
        data = df.withColumn(EOI, F.lit(False))
        markers = empty.like(empty.spark.readStream.schema(data.schema).parquet(str(empty.directory)),
                             f"drain control of channel {uid}")
        df = data.unionByName(markers).withWatermark(head.rowtime, f"{delay} milliseconds").drop(EOI)
    return head.with_df(df)


def _cut(stream: Any, name: str, queries: list[_Query], empty: _EmptyStreams) -> Any:
    """What ``channels.cut`` builds (a producer query named ``name``, a consumer reading the channel back
    with the producer's watermark), with the channel replaced by an empty stream of the read-back schema."""
    queries.append(_Query(name, stream.df))
    read_back = empty.spark.readStream.schema(stream.df.schema).parquet(str(empty.directory))
    df = empty.like(read_back, f"channel {name}")
    if stream.rowtime is not None:
        delay = stream.facts.watermark_delay_ms
        df = df.withWatermark(stream.rowtime, f"{delay} milliseconds")
    return stream.with_df(df)


class _EmptyStreams:
    """Empty streaming DataFrames with the exact schema of a given one."""

    def __init__(self, spark: Any, directory: Path, notes: list[str]):
        self.spark, self.directory, self.notes = spark, directory, notes

    def like(self, real: Any, what: str) -> Any:
        from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

        schema = real.schema
        raw = self.spark.readStream.schema(schema).json(str(self.directory))
        cols = [_conform(F.col(f"`{f.name}`"), f).alias(f.name, metadata=f.metadata) for f in schema.fields]
        df = raw.select(*cols)
        if df.schema != schema:
            self.notes.append(f"{what}: the empty stream standing in for it has schema {df.schema.simpleString()} "
                              f"with nullability {_nullability(df.schema)} instead of {_nullability(schema)}; "
                              "key/value nullability of its state may be judged wrongly")
        return df


def _nullability(schema: Any) -> str:
    return ", ".join(f"{f.name}:{'null' if f.nullable else 'not null'}" for f in schema.fields)


def _conform(col: Any, f: Any) -> Any:
    """``col`` (from the JSON source: nullable at every level) shaped to ``f``'s nullability at every level."""
    return _shape(col, f.dataType, f.nullable) if _has_not_null(f.dataType, f.nullable) else col


def _has_not_null(dtype: Any, nullable: bool) -> bool:
    from pyspark.sql import types as T  # noqa: PLC0415 — pyspark is an optional extra

    if not nullable:
        return True
    if isinstance(dtype, T.StructType):
        return any(_has_not_null(f.dataType, f.nullable) for f in dtype.fields)
    if isinstance(dtype, T.ArrayType):
        return _has_not_null(dtype.elementType, dtype.containsNull)
    if isinstance(dtype, T.MapType):
        return _has_not_null(dtype.valueType, dtype.valueContainsNull)
    return False


def _shape(col: Any, dtype: Any, nullable: bool) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql import types as T  # noqa: PLC0415 — pyspark is an optional extra

    if isinstance(dtype, T.StructType):
        struct = F.struct(*[_shape(col.getField(f.name), f.dataType, f.nullable).alias(f.name, metadata=f.metadata)
                            for f in dtype.fields])
        return F.when(col.isNotNull(), struct) if nullable else struct  # F.struct itself is never null
    if isinstance(dtype, T.ArrayType):
        element, contains_null = dtype.elementType, dtype.containsNull
        col = F.transform(col, lambda x: _shape(x, element, contains_null))
    elif isinstance(dtype, T.MapType):
        value, value_null = dtype.valueType, dtype.valueContainsNull
        col = F.transform_values(col, lambda _k, v: _shape(v, value, value_null))
    return col if nullable else F.coalesce(col, _zero(dtype))


_ZERO_SQL: dict[str, str] = {
    "boolean": "false", "string": "''", "binary": "X''", "date": "DATE'1970-01-01'",
    "timestamp": "TIMESTAMP'1970-01-01 00:00:00'", "timestamp_ntz": "TIMESTAMP_NTZ'1970-01-01 00:00:00'",
}


def _zero(dtype: Any) -> Any:
    """A non-null literal of exactly ``dtype`` (folded by Spark, so the column it feeds is non-nullable)."""
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra
    from pyspark.sql import types as T  # noqa: PLC0415 — pyspark is an optional extra

    if isinstance(dtype, T.ArrayType):
        return F.array().cast(dtype)
    if isinstance(dtype, T.MapType):
        return F.create_map().cast(dtype)
    if isinstance(dtype, T.NumericType):
        return F.lit(0).cast(dtype)
    sql = _ZERO_SQL.get(dtype.typeName())
    return F.expr(sql).cast(dtype) if sql is not None else F.lit(None).cast(dtype)


# --- running ---------------------------------------------------------------------------------------------
def _run_once(query: _Query, checkpoint: Path) -> None:
    """One batch over the empty input; Spark's transient Python-worker failures are retried from scratch."""

    for attempt in range(1, TRANSIENT_ATTEMPTS + 1):
        shutil.rmtree(checkpoint, ignore_errors=True)
        error = _attempt(query, checkpoint)
        if error is None:
            return
        if attempt == TRANSIENT_ATTEMPTS or not any(marker in error for marker in TRANSIENT_FAILURES):
            first = error.strip().splitlines()[0] if error.strip() else error
            raise ProbeError(f"query {query.uid} fails on this engine even without input: {first[:500]}")


def _attempt(query: _Query, checkpoint: Path) -> str | None:
    try:
        started = (query.df.writeStream.format("noop").outputMode(query.output_mode)
                   .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    except Exception as error:  # e.g. Spark refuses the query's shape on this version
        return str(error)
    try:
        started.awaitTermination()
    except Exception as error:  # the query's own failure, reported by awaitTermination
        return str(error)
    finally:
        if started.isActive:
            started.stop()
    failure = started.exception()
    return str(failure) if failure is not None else None
