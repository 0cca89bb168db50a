"""What planengine does with each of Flink's own option keys: one disposition per key, reviewable here.

Flink's keys come from ``flink_options.json`` (every ``ConfigOption`` of the pinned Flink release in the groups
a SQL script sets; ``planengine.config.flink_table``). Each gets one disposition (``Treatment`` in
``planengine.config.registry``):

* **honoured**: planengine declares the same key with the same meaning in ``planengine.config.options`` (the
  engine's declaration wins: its parser and default are what plans freeze). Nothing to list here.
* **mapped**: planengine has the setting under another key; ``SET`` stores the value there (``MAPPED``).
* **ignored**: has no effect here; ``SET`` keeps the value, validated by its Flink type, and warns once with the
  reason. The reason is the one of the longest matching prefix in ``IGNORED_BECAUSE`` (a key is its own
  longest prefix, so per-key entries override their group).
* **unsupported**: a non-default value would change results in a way planengine does not reproduce; the
  default is accepted (scripts that spell out defaults still run), anything else is refused (``UNSUPPORTED``).

A Flink bump that brings a key no prefix covers fails ``tests/config/test_flink_options.py`` naming the key.
"""

from __future__ import annotations

from planengine.config.flink_table import FlinkOptionSpec, flink_option_specs, flink_version
from planengine.config.registry import BOOL, DURATION, INT, STRING, Option, Treatment

_SPARK_PARALLELISM = ("planengine runs on Spark, whose parallelism is the executors' cores; the number of "
                      "shuffle partitions is fixed per job ('pipeline.max-parallelism') because Spark freezes it into "
                      "the checkpoints")
_PHYSICAL = "planengine chooses its physical operators itself; the result is the same"
_BATCH = "planengine runs streaming jobs only"
_CHECKPOINTS = ("every micro-batch is a Spark checkpoint that commits exactly once; checkpoints live in the job root "
                "(`--job-root`, 'planengine.job-root')")
_STATE_STORE = ("planengine keeps state in Spark's RocksDB state store, configured by Spark settings "
                "(spark.sql.streaming.stateStore.*) given to the driver")
_CLUSTER = "planengine's driver and the operator deploy jobs; there is no Flink cluster or client to configure"
_JAVA_TYPES = "planengine has no Java serializers or user classes to configure"
_CLIENT = "`planengine sql` has its own display; see 'table.display.max-column-width' and 'planengine.preview.*'"
_ASYNC = "planengine has no asynchronous function operators; lookup joins are tuned by 'table.exec.async-lookup.*'"

# Why a Flink key has no effect here, by prefix (the longest match wins; a full key overrides its group).
IGNORED_BECAUSE: dict[str, str] = {
    # --- execution.* -----------------------------------------------------------------------------------------
    "execution.": _CLUSTER,
    "execution.async-state.": _PHYSICAL,
    "execution.batch": _BATCH,
    "execution.buffer-timeout.": "planengine moves rows in micro-batches; pace them with 'pipeline.trigger-interval'",
    "execution.checkpointing.": _CHECKPOINTS,
    "execution.checkpointing.interval": _CHECKPOINTS + "; pace micro-batches with 'pipeline.trigger-interval'",
    "execution.checkpointing.mode": "planengine's sinks commit exactly once",
    "execution.checkpointing.savepoint-dir": "snapshots live in the job root (`<job root>/snapshots/`)",
    "execution.checkpointing.snapshot-compression": _STATE_STORE,
    "execution.sort": _BATCH,
    "execution.state-recovery.": ("a run restores from its own checkpoints or from a snapshot "
                                  "(`planengine run --from-snapshot`)"),
    # --- parallelism / pipeline.* ------------------------------------------------------------------------------
    "parallelism.default": _SPARK_PARALLELISM,
    "pipeline.": _JAVA_TYPES,
    "pipeline.auto-generate-uids": "planengine always records uids in compiled plans",
    "pipeline.global-job-parameters": "planengine's Python functions take their parameters as arguments",
    "pipeline.jobvertex-parallelism-overrides": _SPARK_PARALLELISM,
    "pipeline.name": "planengine names a job by its job root and plan id",
    "pipeline.operator-chaining.": _PHYSICAL,
    "pipeline.sources.": _CHECKPOINTS,
    "pipeline.vertex-": "planengine names operators by their plan node",
    "pipeline.watermark-alignment.": "planengine has no watermark alignment across source splits",
    # --- restart-strategy.* ------------------------------------------------------------------------------------
    "restart-strategy.": "a query that fails transiently restarts from its checkpoint; other failures stop the job",
    # --- sql-client.* ------------------------------------------------------------------------------------------
    "sql-client.": _CLIENT,
    "sql-client.execution.max-table-result.rows": "a SELECT preview is bounded by 'planengine.preview.max-rows'",
    "sql-client.verbose": "use `planengine -v` for detailed logs",
    # --- state.* -----------------------------------------------------------------------------------------------
    "state.": _STATE_STORE,
    "state.changelog.": _CHECKPOINTS,
    "state.latency-track.": "planengine reports progress per query on its status API and /metrics",
    "state.size-track.": "planengine reports progress per query on its status API and /metrics",
    # --- table.* -----------------------------------------------------------------------------------------------
    "table.catalog-modification.listeners": "planengine has no catalog listeners",
    "table.catalog-store.": "catalogs are declared in the script or the operator's catalog ConfigMap",
    "table.secret-store.": ("secrets come from the catalog or an environment/Secret reference, never from a "
                            "secret store"),
    "table.dml-sync": "`planengine sql --until-idle` waits for the jobs a script starts",
    "table.dynamic-table-options.enabled": "planengine does not support table hints",
    "table.column-expansion-strategy": "SELECT * always expands to the physical and computed columns",
    "table.generated-code.": "planengine generates no Java code",
    "table.resources.": "planengine loads Python functions from the engine's interpreter, not from downloaded jars",
    "table.rtas-ctas.": "planengine does not support CREATE TABLE AS / REPLACE TABLE AS",
    "table.exec.": _PHYSICAL,
    "table.exec.async-lookup.key-ordered-enabled": "planengine emits lookup results in input order",
    "table.exec.async-lookup.output-mode": "planengine emits lookup results in input order",
    "table.exec.async-ml-predict.": _ASYNC,
    "table.exec.async-scalar.": _ASYNC,
    "table.exec.async-state.": _STATE_STORE,
    "table.exec.async-table.": _ASYNC,
    "table.exec.async-vector-search.": _ASYNC,
    "table.exec.delta-join.": "planengine has no delta joins; joins keep their state in Spark's state store",
    "table.exec.local-hash-agg.": _BATCH,
    "table.exec.operator-fusion-codegen.": "planengine generates no Java code",
    "table.exec.resource.default-parallelism": _SPARK_PARALLELISM,
    "table.exec.resource.": _BATCH,
    "table.exec.simplify-operator-name-enabled": "planengine names operators by their plan node",
    "table.exec.sink.keyed-shuffle": "planengine's sinks keep the order of each key without it",
    "table.exec.sink.rowtime-inserter": "planengine's sinks read the rowtime from the row",
    "table.exec.sink.require-on-conflict": ("an upsert sink's input is materialised by the sink's primary key "
                                            "('table.exec.sink.upsert-materialize')"),
    "table.exec.sink.upsert-materialize-strategy.": ("planengine has one upsert materialiser "
                                                     "('table.exec.sink.upsert-materialize' says when it runs)"),
    "table.exec.sort.": _BATCH,
    "table.exec.spill-compression.": _BATCH,
    "table.exec.uid.": "planengine's uids are '<node id>_<node name>-<version>_<operator kind>', always in the plan",
    "table.optimizer.": _PHYSICAL,
    "table.optimizer.adaptive-broadcast-join.": _BATCH,
    "table.optimizer.dynamic-filtering.": _BATCH,
    "table.optimizer.join-reorder-enabled": "planengine keeps joins in written order",
    "table.optimizer.bushy-join-reorder-threshold": "planengine keeps joins in written order",
    "table.optimizer.join.broadcast-threshold": _BATCH,
    "table.optimizer.non-deterministic-update.strategy": "planengine does not analyse non-deterministic updates",
    "table.optimizer.ptf.": "planengine has no process table functions",
    "table.optimizer.reuse-": "planengine always shares identical sources and sub-plans across sinks (digest-based)",
    "table.optimizer.runtime-filter.": _BATCH,
    "table.optimizer.skewed-join-optimization.": _BATCH,
    "table.optimizer.source.report-statistics-enabled": "planengine does not plan by statistics",
    "table.optimizer.union-all-as-breakpoint-enabled": ("planengine plans all sinks of a script as one DAG and "
                                                        "shares common sub-plans by digest"),
}

# A non-default value would change results: refused with the reason (the default is accepted).
UNSUPPORTED: dict[str, str] = {
    "execution.runtime-mode": "planengine runs streaming jobs; `--until-idle --drain` processes bounded input to the "
                              "end",
    "table.builtin-catalog-name": "the built-in catalog is always default_catalog",
    "table.builtin-database-name": "the built-in database is always default_database",
    "table.exec.legacy-cast-behaviour": "CAST follows Flink's current semantics",
    "table.exec.sink.type-length-enforcer": "values are written as they are (IGNORE)",
    "table.exec.sink.nested-constraint-enforcer": "nested values are written as they are (IGNORE)",
    "table.legacy-nested-row-nullability": "nested row nullability follows Flink's current semantics",
    "table.sql-dialect": "planengine parses Flink's default dialect only",
}

# Flink keys planengine keeps under its own key: Flink key -> (planengine key, why they are the same).
MAPPED: dict[str, tuple[str, str]] = {
    "sql-client.display.max-column-width": ("table.display.max-column-width", "same meaning"),
}


def _reason(key: str) -> str:
    """The reason of the longest prefix; "" when none matches (a test names such keys, so a Flink bump that
    brings a new group fails review, not every import)."""
    prefix = max((p for p in IGNORED_BECAUSE if key.startswith(p)), key=len, default=None)
    return "" if prefix is None else IGNORED_BECAUSE[prefix]


def disposition(spec: FlinkOptionSpec, engine_keys: frozenset[str]) -> Treatment:
    if spec.key in engine_keys:
        return "honoured"
    if spec.key in MAPPED:
        return "mapped"
    return "unsupported" if spec.key in UNSUPPORTED else "ignored"


def _option(spec: FlinkOptionSpec, treatment: Treatment, version: str) -> Option:
    note = {"mapped": lambda: MAPPED[spec.key][1], "unsupported": lambda: UNSUPPORTED[spec.key]}.get(
        treatment, lambda: _reason(spec.key))()
    return Option(spec.key, spec.type, spec.default, spec.description, treatment=treatment, note=note,
                  maps_to=MAPPED[spec.key][0] if treatment == "mapped" else None,
                  aliases=spec.deprecated_keys + spec.fallback_keys, flink_version=version)


def flink_options(engine_keys: frozenset[str]) -> tuple[Option, ...]:
    """Flink's keys planengine does not declare itself (those are honoured by the engine's declaration).

    Flink also accepts a Map option one entry at a time (``'pipeline.global-job-parameters.k' = 'v'``), so a
    Map key brings a prefix option with the same disposition."""
    version = flink_version()
    options: list[Option] = []
    for spec in flink_option_specs():
        treatment = disposition(spec, engine_keys)
        if treatment == "honoured":
            continue
        option = _option(spec, treatment, version)
        options.append(option)
        if spec.type.name == "Map" and treatment == "ignored":
            options.append(Option(f"{spec.key}.", STRING, None, f"One entry of the map '{spec.key}'.",
                                  treatment="ignored", note=option.note, prefix=True, flink_version=version))
    return tuple(options)


def honoured_flink_keys(engine_keys: frozenset[str]) -> tuple[str, ...]:
    return tuple(spec.key for spec in flink_option_specs() if disposition(spec, engine_keys) == "honoured")


def _older(key: str, type_, default: str | None, description: str, treatment: Treatment, note: str,  # type: ignore[no-untyped-def]
           **extra) -> Option:
    return Option(key, type_, default, description, treatment=treatment, note=note, flink_version="1.x", **extra)


# Keys scripts written for older Flink releases (or Flink's planner-internal experimental keys) still set, which
# the generated table of the pinned release no longer holds. Declared by hand, marked Flink version "1.x".
OLDER_FLINK_OPTIONS: tuple[Option, ...] = (
    _older("table.exec.emit.early-fire.enabled", BOOL, "false",
           "Experimental: emit window results before the window closes.", "unsupported",
           "windows emit once, when the watermark passes their end"),
    _older("table.exec.emit.early-fire.delay", DURATION, None,
           "Experimental: early-fire period.", "unsupported", "windows emit once, when the watermark passes their end"),
    _older("table.exec.emit.late-fire.enabled", BOOL, "false",
           "Experimental: update window results for late rows.", "unsupported", "late rows are dropped"),
    _older("table.exec.emit.late-fire.delay", DURATION, None,
           "Experimental: late-fire period.", "unsupported", "late rows are dropped"),
    _older("table.exec.emit.allow-lateness", DURATION, "0 ms",
           "Experimental: keep window state for late rows.", "unsupported", "late rows are dropped"),
    _older("pipeline.time-characteristic", STRING, "EventTime", "Legacy: time characteristic (removed in Flink 2.0).",
           "ignored", "event time comes from WATERMARK declarations"),
    _older("sql-client.display.max-column-width", INT, "30",
           "Deprecated SQL client column width (Flink 2.0 reads 'table.display.max-column-width').", "mapped",
           MAPPED["sql-client.display.max-column-width"][1], maps_to=MAPPED["sql-client.display.max-column-width"][0]),
)

# Not Flink keys, but keys that scripts and drivers set and planengine knows what to say about.
PREFIX_OPTIONS: tuple[Option, ...] = (
    Option("python.", STRING, None, "Flink: Python UDF settings.", treatment="ignored",
           note="Python functions run in Spark's Python workers of the engine's interpreter", prefix=True),
    Option("spark.", STRING, None, "Spark configuration.", treatment="ignored",
           note="Spark settings are fixed when the session starts: give them to the driver "
                "(`planengine run --conf KEY=VALUE` or PLANENGINE_SPARK_CONF), not to SET", prefix=True),
)
