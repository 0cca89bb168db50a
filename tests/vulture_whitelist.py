"""Names vulture (``make lint``, ``[tool.vulture]`` in pyproject.toml) cannot see used: what a framework, a
registry, a data file or pytest reads by name. Never imported by the engine; each line reads one attribute of
``_``, which is all vulture needs to count the name as used. A name that really is dead goes away instead."""


class _Names:
    def __getattr__(self, name: str) -> None:
        return None


_ = _Names()

# Entry points (pyproject.toml, planengine.factories): found by name, never imported directly.
_.BlackHoleTableFactory
_.DataGenTableFactory
_.FileSystemTableFactory
_.JdbcTableFactory
_.KafkaTableFactory
_.UpsertKafkaTableFactory
_.PrintTableFactory
_.ChangelogJsonFormatFactory
_.CsvFormatFactory
_.DebeziumJsonFormatFactory
_.JsonFormatFactory
_.ParquetFormatFactory

# Part of planengine.connectors.options, the module connector plug-ins build their options with.
_.format_duration_ms
_.SENSITIVE_KEY_PATTERN
# The exec nodes' codec vocabulary (exec/base.py), kept whole for node definitions.
_.RAW
_.STRS
_.PAIRS

# Fields read from or written to JSON/YAML by name (plan metadata, CRD models, conformance programs, snapshot
# manifests, registry entries), and parameters an interface fixes.
_.min_plan_version
_.min_state_version
_.left_ttl_ms
_.right_ttl_ms
_.approximate
_.supports_retraction
_.timing_sensitive
_.files_skipped
_.sparkVersion
_.memory
_.fromRunId
_.desiredEngineVersion
_.lastStableSpec
_.pathStyle  # spec.storage.s3: the model declares it, storage.store_env reads the spec's dict
_.credentialsSecret
_.supports_sorting  # SupportsPartitioning.requires_partition_grouping's parameter (Flink's signature)
_.indentless  # yaml.SafeDumper.increase_indent's parameter

# Framework hooks and settings read by name: pydantic, kopf settings, http.server, socketserver, sqlglot's
# Dialect/Tokenizer/Generator/Parser, Spark's DataSource reader, Py4J's Java interface, decimal contexts,
# psycopg cursors, exceptions' chaining.
_.model_config
_.progress_storage
_.diffbase_storage
_.level
_.server_timeout
_.request_timeout
_.daemon_threads
_.protocol_version
_.default_request_version
_.send_error
_.log_message
_.close_connection
_.NORMALIZATION_STRATEGY
_.ALIAS_POST_VERSION
_.NULL_ORDERING
_.INSERT_OVERWRITE
_.QUERY_HINTS
_.TABLE_HINTS
_.QUOTES
_.IDENTIFIERS
_.STRING_ESCAPES
_.IDENTIFIER_ESCAPES
_.TOKENS_PRECEDING_HINT
_.NESTED_COMMENTS
_._warn_unsupported
_._prev_comments
_.initialOffset
_.latestOffset
_.streamReader
_.Java
_.implements
_.prec
_.itersize
_.__annotations__
_.__context__

# Python functions the test SQL names in CREATE FUNCTION ... AS 'module.name' (found by import path).
_.my_sum1
_.my_sum2
_.my_avg
_.LTCNT
_.SpendSummary
_.SessionSpend
_.ObjectAccumulatorSum
_.DictAccumulatorSum

# pytest: module marks, fixtures requested for their effect only, hook parameters, and values a test unpacks
# or records without reading them back.
_.pytestmark
_.contract_only
_.quick_timeouts
_.no_cluster
_.jvm_process
_.sparkplanjob_crd
_.lupa
_.nextitem
_.startup_seconds
_.timestamp_ms
_.started_in_s
_.GLOBAL_ARGS

# The JVM specs' dataclass fields (planengine/runtime/jvm/specs.py): read by ``to_json()`` through
# ``dataclasses.fields``, and by the Java record of the same name; and the TypedDict unpacked into them.
_.agg_calls
_.input_updating
_.left_width
_.right_width
_.record_watermark_field
_.gap_ms

