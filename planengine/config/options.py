"""The options planengine itself reads, declared once (key, type, default, what it does, where it acts).

Exec nodes name the ones they consume (``consumed_options``) by these declarations' keys; a compiled plan
freezes each consumed option's value (or this default) into the node's ``configuration``, so the
defaults here are part of the plan contract: change one only together with a node version.
"""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from planengine.config.registry import BOOL, DURATION, INT, STRING, Option, enum_type
from planengine.config.values import OptionType


def _time_zone(text: str) -> str:
    """Flink's ``table.local-time-zone``: a region id (``Europe/Berlin``), ``UTC`` or ``GMT+08:00``."""
    value = text.strip()
    if re.fullmatch(r"(UTC|GMT)?([+-]\d{1,2}(:\d{2})?)?", value) and value:
        return value
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("a time zone id such as 'UTC', 'Europe/Berlin' or 'GMT+08:00'") from None
    return value


def _rule_names(text: str) -> str:
    return text  # checked against the rule programs when planning (planengine.planner.programs)


TIME_ZONE: OptionType[str] = OptionType("String", _time_zone)
RULE_LIST: OptionType[str] = OptionType("List<String>", _rule_names)


def _non_negative_int(text: str) -> int:
    value = INT.parse(text)
    if value < -1:
        raise ValueError("an integer >= -1 (-1 = no limit)")
    return value


def _positive_int(text: str) -> int:
    value = INT.parse(text)
    if value <= 0:
        raise ValueError("a positive integer")
    return value


def _max_parallelism(text: str) -> int:
    if not text.strip().isdigit() or not 1 <= int(text) <= 32768:
        raise ValueError("a whole number from 1 to 32768")
    return int(text)


BATCH_SIZE: OptionType[int] = OptionType("Integer", _non_negative_int)
POSITIVE_INT: OptionType[int] = OptionType("Integer", _positive_int)

# --- frozen into plans (exec-node configuration, plan envelope) --------------------------------------------
STATE_TTL = Option(
    "table.exec.state.ttl", DURATION, "0 ms",
    "How long idle state (not updated) is kept by group aggregates, joins, Top-N and deduplication; 0 keeps "
    "it forever.", scope="plan")
MINI_BATCH_ENABLED = Option(
    "table.exec.mini-batch.enabled", BOOL, "false",
    "Buffer input and fold it per key before updating state; the trigger interval becomes the allow-latency.",
    scope="plan")
MINI_BATCH_LATENCY = Option(
    "table.exec.mini-batch.allow-latency", DURATION, "0 ms",
    "With mini-batching: the longest time rows are buffered (also the micro-batch trigger interval).",
    scope="plan")
MINI_BATCH_SIZE = Option(
    "table.exec.mini-batch.size", BATCH_SIZE, "-1",
    "With mini-batching: the most rows buffered per batch (-1: no limit).", scope="plan")
SOURCE_IDLE_TIMEOUT = Option(
    "table.exec.source.idle-timeout", DURATION, "0 ms",
    "A source without input for this long stops holding back the watermark; 0 disables idleness.",
    scope="plan")
AUTO_WATERMARK_INTERVAL = Option(
    "pipeline.auto-watermark-interval", DURATION, "200 ms",
    "A watermark assigner emits a new watermark after a row once it moved more than this past the last one "
    "emitted (Flink's eager emission): rows of one micro-batch behind an emitted watermark are late for the "
    "windows it fired. 0 emits on every advance.", scope="plan")
SINK_NOT_NULL_ENFORCER = Option(
    "table.exec.sink.not-null-enforcer", enum_type("ERROR", "DROP"), "ERROR",
    "What a sink does with a NULL in a NOT NULL column: fail the job (ERROR) or drop the row (DROP).",
    scope="plan")
SINK_UPSERT_MATERIALIZE = Option(
    "table.exec.sink.upsert-materialize", enum_type("NONE", "AUTO", "FORCE"), "AUTO",
    "Materialise an upsert sink's input by primary key when its changelog may arrive out of order (AUTO), "
    "always (FORCE) or never (NONE).", scope="plan")
ASYNC_LOOKUP_CAPACITY = Option(
    "table.exec.async-lookup.buffer-capacity", POSITIVE_INT, "100",
    "Lookup joins: the most lookups in flight per partition.", scope="plan")
ASYNC_LOOKUP_TIMEOUT = Option(
    "table.exec.async-lookup.timeout", DURATION, "3 min",
    "Lookup joins: how long one lookup may take before the batch fails.", scope="plan")
LOCAL_TIME_ZONE = Option(
    "table.local-time-zone", TIME_ZONE, "UTC",
    "The session time zone of TIMESTAMP_LTZ values, CURRENT_TIMESTAMP and window boundaries over them.",
    scope="plan")
NON_TEMPORAL_SORT = Option(
    "table.exec.non-temporal-sort.enabled", BOOL, "false",
    "Allow ORDER BY without LIMIT on a non-time column: every row is buffered and emitted sorted at the end "
    "of input (drain).", scope="plan")
TRIGGER_INTERVAL = Option(
    "pipeline.trigger-interval", DURATION, "0 ms",
    "The micro-batch trigger interval of running jobs (0: start the next batch as soon as the last one "
    "committed). When unset it is inferred: the mini-batch allow-latency with mini-batching, else 0. Recorded "
    "in the plan; `--until-idle` runs ignore it.", scope="plan")
REAL_TIME = Option(
    "pipeline.real-time", enum_type("OFF", "AUTO", "REQUIRED"), "OFF",
    "Spark's Real-time Mode (records stream through a long batch instead of waiting for the next micro-batch): "
    "OFF; AUTO, when every node of the plan can run in it (else micro-batches, and EXPLAIN says which node "
    "prevents it); REQUIRED, or the compile fails naming that node (docs/real-time-mode.md). Recorded in the plan; "
    "`--until-idle` runs use micro-batches.", scope="plan")
REAL_TIME_CHECKPOINT_INTERVAL = Option(
    "pipeline.real-time.checkpoint-interval", DURATION, "30 s",
    "In Real-time Mode, how long each batch runs: its offsets and state are checkpointed at its end, so it is how "
    "much input a restart replays, not a latency. At least 5 s (Spark's "
    "spark.sql.streaming.realTimeMode.minBatchDuration).", scope="plan")

MAX_PARALLELISM = Option(
    "pipeline.max-parallelism", OptionType("Integer", _max_parallelism), None,
    "The job's Spark shuffle (and state) partitions, fixed for the life of its state: about the total executor "
    "cores the job may ever use. Recorded in the plan only when set; plans without it run with 2.", scope="plan")

# --- read while planning ------------------------------------------------------------------------------------
CDC_EVENTS_DUPLICATE = Option(
    "table.exec.source.cdc-events-duplicate", BOOL, "false",
    "CDC sources may deliver duplicate change events: normalise them by primary key (ChangelogNormalize).",
    scope="planner")
DISABLED_RULES = Option(
    "table.optimizer.disabled-rules", RULE_LIST, "",
    "Comma-separated optimizer rules not to run (EXPLAIN PLAN_ADVICE names them).", scope="planner")
COMPILE_CATALOG_OBJECTS = Option(
    "table.plan.compile.catalog-objects", enum_type("ALL", "SCHEMA", "IDENTIFIER"), "ALL",
    "How much of a catalog table a compiled plan stores: identifier, schema and options (ALL), identifier "
    "and schema (SCHEMA), or the identifier only (IDENTIFIER).", scope="planner")
RESTORE_CATALOG_OBJECTS = Option(
    "table.plan.restore.catalog-objects", enum_type("ALL", "ALL_ENFORCED", "IDENTIFIER"), "ALL",
    "Where restore takes tables from: the plan, then the catalog for what is missing (ALL), the plan only "
    "(ALL_ENFORCED), or the catalog only (IDENTIFIER).", scope="planner")
ENRICH_TABLE_OPTIONS = Option(
    "table.plan.restore.enrich-table-options", BOOL, "true",
    "At restore, merge the catalog's options over the plan's (only a connector's mutable options may differ).",
    scope="planner")
SHARED_QUERIES = Option(
    "planengine.plan.shared-queries", BOOL, "true",
    "Run a node shared by several sinks once per micro-batch: one query computes it and writes its micro-batch "
    "to every sink (and to an internal channel for consumers with state of their own). Recorded in the plan "
    "(format 2); false compiles one query per sink, each computing the shared part again.", scope="planner")
FORCE_RECOMPILE = Option(
    "table.plan.force-recompile", BOOL, "false",
    "COMPILE PLAN and `planengine compile -o` overwrite an existing plan file.", scope="planner")

# --- session, CLI and preview -------------------------------------------------------------------------------
JOB_ROOT = Option(
    "planengine.job-root", STRING, None,
    "Where jobs started by INSERT / EXECUTE store plans, checkpoints and snapshots (one job root per plan below it; "
    "a job already there goes on from its last snapshot). Default: in `planengine sql` a directory of the "
    "session's own (~/.local/state/planengine/jobs/sql-<UTC start>-<pid>), elsewhere one under the system temp "
    "directory.")
UNTIL_IDLE = Option(
    "planengine.until-idle", BOOL, "false",
    "Jobs started by statements stop once all available input is processed (`planengine sql --until-idle`).")
DRAIN = Option(
    "planengine.drain", BOOL, "false",
    "With until-idle: advance event time to the end first, so every window and timer fires.")
PREVIEW_MAX_ROWS = Option(
    "planengine.preview.max-rows", POSITIVE_INT, "20",
    "A bare SELECT in `planengine sql` shows at most this many result rows (changes, or rows of the materialised "
    "table: 'sql-client.execution.result-mode').")
PREVIEW_TIMEOUT = Option(
    "planengine.preview.timeout", DURATION, "30 s",
    "A bare SELECT in `planengine sql` runs at most this long (it stops earlier once its input is processed).")
RESULT_MODE = Option(
    "sql-client.execution.result-mode", enum_type("TABLE", "CHANGELOG", "TABLEAU"), "TABLE",
    "How a SELECT preview shows an updating result: TABLE, the table its changes describe (one row per key, "
    "updated in place); CHANGELOG or TABLEAU, every change with its row kind in an op column. An insert-only "
    "result is shown row by row with its op column in every mode.")
DISPLAY_MAX_COLUMN_WIDTH = Option(
    "table.display.max-column-width", POSITIVE_INT, "30",
    "Tables printed by SHOW, DESCRIBE and SELECT previews cut longer values to this width (Flink's default).")

ENGINE_OPTIONS: tuple[Option, ...] = (
    STATE_TTL, MINI_BATCH_ENABLED, MINI_BATCH_LATENCY, MINI_BATCH_SIZE, SOURCE_IDLE_TIMEOUT, AUTO_WATERMARK_INTERVAL,
    SINK_NOT_NULL_ENFORCER,
    SINK_UPSERT_MATERIALIZE, ASYNC_LOOKUP_CAPACITY, ASYNC_LOOKUP_TIMEOUT, LOCAL_TIME_ZONE, NON_TEMPORAL_SORT,
    TRIGGER_INTERVAL, REAL_TIME, REAL_TIME_CHECKPOINT_INTERVAL, MAX_PARALLELISM, CDC_EVENTS_DUPLICATE, DISABLED_RULES,
    COMPILE_CATALOG_OBJECTS,
    RESTORE_CATALOG_OBJECTS, ENRICH_TABLE_OPTIONS, SHARED_QUERIES, FORCE_RECOMPILE, JOB_ROOT, UNTIL_IDLE, DRAIN,
    PREVIEW_MAX_ROWS, PREVIEW_TIMEOUT, RESULT_MODE, DISPLAY_MAX_COLUMN_WIDTH,
)
