"""Flink's keys that scripts written for Flink set, and what planengine does with each.

Three kinds (see ``Treatment`` in ``planengine.config.registry``):

* **accepted**: Flink tunes its own runtime with them, or planengine already behaves the way the key asks;
  results do not depend on them. ``SET`` keeps the value and says it has no effect.
* **mapped**: planengine has the same setting under its own key; ``SET`` stores the value there.
* **unsupported**: a non-default value would change results in a way planengine does not reproduce, so it is
  refused with the reason (the default is accepted, so scripts that spell out defaults still run).
"""

from __future__ import annotations

from planengine.config.registry import BOOL, DURATION, INT, MEMORY, STRING, Option, enum_type

_SPARK_PARALLELISM = ("planengine runs on Spark, whose parallelism is the executors' cores; the number of "
                      "shuffle partitions is fixed per job because Spark freezes it into the checkpoints")
_PHYSICAL = "planengine chooses its physical operators itself; the result is the same"


def _accepted(key: str, type_, default: str | None, description: str, note: str, *, prefix: bool = False) -> Option:  # type: ignore[no-untyped-def]
    return Option(key, type_, default, description, treatment="accepted", note=note, prefix=prefix)


def _unsupported(key: str, type_, default: str | None, description: str, note: str) -> Option:  # type: ignore[no-untyped-def]
    return Option(key, type_, default, description, treatment="unsupported", note=note)


FLINK_OPTIONS: tuple[Option, ...] = (
    # --- optimizer: physical choices that do not change results ---------------------------------------------
    _accepted("table.optimizer.agg-phase-strategy", enum_type("AUTO", "ONE_PHASE", "TWO_PHASE"), "AUTO",
              "Flink: one- or two-phase (local/global) aggregation.", _PHYSICAL),
    _accepted("table.optimizer.distinct-agg.split.enabled", BOOL, "false",
              "Flink: split distinct aggregates into two levels to spread hot keys.", _PHYSICAL),
    _accepted("table.optimizer.distinct-agg.split.bucket-num", INT, "1024",
              "Flink: buckets of the split distinct aggregate.", _PHYSICAL),
    _accepted("table.optimizer.incremental-agg-enabled", BOOL, "true",
              "Flink: merge a local and a global aggregate into an incremental one.", _PHYSICAL),
    _accepted("table.optimizer.reuse-sub-plan-enabled", BOOL, "true",
              "Flink: share identical sub-plans.", "planengine always shares identical sub-plans across sinks"),
    _accepted("table.optimizer.reuse-source-enabled", BOOL, "true",
              "Flink: share identical sources.", "planengine always shares identical sources across sinks"),
    _accepted("table.optimizer.join-reorder-enabled", BOOL, "false",
              "Flink: cost-based join reordering.", "planengine keeps joins in written order"),
    _accepted("table.optimizer.multiple-input-enabled", BOOL, "true",
              "Flink: fuse operators into multiple-input operators (batch).", _PHYSICAL),
    _accepted("table.optimizer.source.report-statistics-enabled", BOOL, "true",
              "Flink: sources report statistics to the optimizer.", "planengine does not plan by statistics"),
    _accepted("table.optimizer.dynamic-filtering.enabled", BOOL, "true",
              "Flink: dynamic partition pruning (batch).", "planengine runs streaming jobs only"),
    _accepted("table.optimizer.runtime-filter.enabled", BOOL, "false",
              "Flink: runtime filters (batch).", "planengine runs streaming jobs only"),
    _accepted("table.optimizer.non-deterministic-update.strategy", enum_type("IGNORE", "TRY_RESOLVE"), "IGNORE",
              "Flink: try to resolve non-deterministic updates.",
              "planengine does not analyse non-deterministic updates"),
    # --- execution: Flink runtime tuning --------------------------------------------------------------------
    _accepted("table.exec.resource.default-parallelism", INT, "-1",
              "Flink: default operator parallelism.", _SPARK_PARALLELISM),
    _accepted("table.exec.sink.keyed-shuffle", enum_type("NONE", "AUTO", "FORCE"), "AUTO",
              "Flink: shuffle by primary key before a sink of different parallelism.",
              "planengine's sinks keep the order of each key without it"),
    _accepted("table.exec.sink.rowtime-inserter", enum_type("ENABLED", "DISABLED"), "ENABLED",
              "Flink: hand the rowtime to the sink's StreamRecord timestamp.",
              "planengine's sinks read the rowtime from the row"),
    _accepted("table.exec.uid.generation", enum_type("PLAN_ONLY", "ALWAYS", "DISABLED"), "PLAN_ONLY",
              "Flink: when operators get uids.", "planengine always records uids in compiled plans"),
    _accepted("table.exec.uid.format", STRING, "<id>_<transformation>",
              "Flink: the uid format.", "planengine's uids are '<node id>_<node name>-<version>_<operator kind>'"),
    _accepted("table.exec.window-agg.buffer-size-limit", INT, "100000",
              "Flink: window aggregate buffer size.", _PHYSICAL),
    _accepted("table.exec.deduplicate.insert-update-after-sensitive-enabled", BOOL, "true",
              "Flink: deduplication emits +I/+U per the sink's needs.", _PHYSICAL),
    _accepted("table.exec.deduplicate.mini-batch.compact-changes-enabled", BOOL, "false",
              "Flink: compact changes of mini-batch deduplication.", _PHYSICAL),
    _accepted("table.exec.interval-join.min-cleanup-interval", DURATION, "0 ms",
              "Flink: minimum time between interval-join state clean-ups.", _PHYSICAL),
    _accepted("table.exec.async-lookup.output-mode", enum_type("ORDERED", "ALLOW_UNORDERED"), "ORDERED",
              "Flink: whether async lookups may emit out of order.",
              "planengine emits lookup results in input order"),
    _accepted("table.exec.rank.topn-cache-size", INT, "10000", "Flink: Top-N cache size.", _PHYSICAL),
    _accepted("table.exec.spill-compression.enabled", BOOL, "true", "Flink: compress spilled data (batch).",
              _PHYSICAL),
    _accepted("table.exec.spill-compression.block-size", MEMORY, "64 kb", "Flink: spill compression block size.",
              _PHYSICAL),
    _accepted("table.exec.disabled-operators", STRING, None, "Flink: operators not to use (batch).", _PHYSICAL),
    _accepted("table.exec.simplify-operator-name-enabled", BOOL, "true", "Flink: short operator names.",
              "planengine names operators by their plan node"),
    _accepted("table.generated-code.max-length", INT, "4000", "Flink: split generated code.",
              "planengine generates no Java code"),
    _accepted("table.dml-sync", BOOL, "false", "Flink: INSERT waits for the job to finish.",
              "`planengine sql --until-idle` waits for the jobs a script starts"),
    # --- execution: options that would change results ----------------------------------------------------
    _unsupported("table.exec.emit.early-fire.enabled", BOOL, "false",
                 "Flink (experimental): emit window results before the window closes.",
                 "windows emit once, when the watermark passes their end"),
    _unsupported("table.exec.emit.early-fire.delay", DURATION, None,
                 "Flink (experimental): early-fire period.", "windows emit once, when the watermark passes their end"),
    _unsupported("table.exec.emit.late-fire.enabled", BOOL, "false",
                 "Flink (experimental): update window results for late rows.", "late rows are dropped"),
    _unsupported("table.exec.emit.late-fire.delay", DURATION, None,
                 "Flink (experimental): late-fire period.", "late rows are dropped"),
    _unsupported("table.exec.emit.allow-lateness", DURATION, "0 ms",
                 "Flink (experimental): keep window state for late rows.", "late rows are dropped"),
    _unsupported("table.exec.sink.type-length-enforcer", enum_type("IGNORE", "TRIM_PAD"), "IGNORE",
                 "Flink: trim/pad CHAR and VARCHAR values to the sink column's length.",
                 "values are written as they are (IGNORE)"),
    _unsupported("table.exec.legacy-cast-behaviour", enum_type("ENABLED", "DISABLED"), "DISABLED",
                 "Flink: pre-1.15 CAST semantics.", "CAST follows Flink's current semantics"),
    _unsupported("table.sql-dialect", enum_type("default", "hive"), "default",
                 "Flink: the SQL dialect.", "planengine parses Flink's default dialect only"),
    _unsupported("table.builtin-catalog-name", STRING, "default_catalog",
                 "Flink: name of the built-in catalog.", "the built-in catalog is always default_catalog"),
    _unsupported("table.builtin-database-name", STRING, "default_database",
                 "Flink: name of the built-in database.", "the built-in database is always default_database"),
    _unsupported("execution.runtime-mode", enum_type("STREAMING", "BATCH", "AUTOMATIC"), "STREAMING",
                 "Flink: streaming or batch execution.",
                 "planengine runs streaming jobs; `--until-idle --drain` processes bounded input to the end"),
    # --- Flink's runtime and SQL client ---------------------------------------------------------------------
    _accepted("parallelism.default", INT, "1", "Flink: default job parallelism.", _SPARK_PARALLELISM),
    _accepted("pipeline.name", STRING, None, "Flink: the job name.",
              "planengine names a job by its job root and plan id"),
    _accepted("pipeline.time-characteristic", STRING, "EventTime", "Flink (legacy): time characteristic.",
              "event time comes from WATERMARK declarations"),
    _accepted("pipeline.operator-chaining.enabled", BOOL, "true", "Flink: chain operators.", _PHYSICAL),
    _accepted("execution.checkpointing.interval", DURATION, None, "Flink: checkpoint interval.",
              "every micro-batch is a checkpoint and commits exactly once; pace micro-batches with "
              "'pipeline.trigger-interval'"),
    _accepted("execution.checkpointing.mode", enum_type("EXACTLY_ONCE", "AT_LEAST_ONCE"), "EXACTLY_ONCE",
              "Flink: checkpointing guarantee.", "planengine's sinks commit exactly once"),
    _accepted("execution.checkpointing.timeout", DURATION, "10 min", "Flink: checkpoint timeout.",
              "every micro-batch is a checkpoint"),
    _accepted("state.backend.type", STRING, "hashmap", "Flink: state backend.",
              "planengine keeps state in Spark's RocksDB state store"),
    _accepted("state.checkpoints.dir", STRING, None, "Flink: checkpoint directory.",
              "checkpoints live in the job root (`--job-root`, 'planengine.job-root')"),
    _accepted("state.savepoints.dir", STRING, None, "Flink: savepoint directory.",
              "snapshots live in the job root (`<job root>/snapshots/`)"),
    _accepted("restart-strategy.", STRING, None, "Flink: restart strategies.",
              "a query that fails transiently restarts from its checkpoint; other failures stop the job",
              prefix=True),
    _accepted("python.", STRING, None, "Flink: Python UDF settings.",
              "Python functions run in Spark's Python workers of the engine's interpreter", prefix=True),
    _accepted("spark.", STRING, None, "Spark configuration.",
              "Spark settings are fixed when the session starts: give them to the driver "
              "(`planengine run --conf KEY=VALUE` or PLANENGINE_SPARK_CONF), not to SET", prefix=True),
    _accepted("sql-client.execution.result-mode", enum_type("TABLE", "CHANGELOG", "TABLEAU"), "TABLE",
              "Flink SQL client: how query results are shown.",
              "`planengine sql` always prints results in tableau form"),
    _accepted("sql-client.verbose", BOOL, "false", "Flink SQL client: print stack traces.",
              "use `planengine -v` for detailed logs"),
    _accepted("sql-client.execution.max-table-result.rows", INT, "1000000",
              "Flink SQL client: rows kept in table mode.", "a SELECT preview is bounded by "
              "'planengine.preview.max-rows'"),
    Option("sql-client.display.max-column-width", INT, "30", "Flink SQL client (older releases): column width.",
           treatment="mapped", maps_to="table.display.max-column-width", note="same meaning"),
)
