"""``'connector' = 'filesystem'``: files in a directory (local or object store), partitioned by directory.

Source: reads ``path`` with the configured format, bounded unless ``source.monitor-interval`` asks for a
continuous (streaming) read of new files. It prunes partitions: filters on partition columns only are
accepted (the runtime evaluates them on ``key=value`` directory names); everything else stays in the plan.
Lookup: a filesystem table can also be the dimension table of ``JOIN … FOR SYSTEM_TIME AS OF`` — meant for
*small* tables: the runtime reads the whole directory (bounded) when the query starts and broadcast-joins
it by key to every micro-batch. Insert-only formats only (a changelog file is not a table of rows).
Sink: writes with the format's encoder, partitioned by ``PARTITIONED BY`` columns, with static partitions
and ``INSERT OVERWRITE``; exactly-once through Spark's file-sink manifest (DESIGN §6).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlparse

from planengine.config.values import PATH as PATH_TYPE
from planengine.connectors.abilities import (
    FilterResult,
    SupportsFilterPushDown,
    SupportsLimitPushDown,
    SupportsOverwriting,
    SupportsPartitioning,
    SupportsPartitionPushDown,
)
from planengine.connectors.base import (
    DecodingFormat,
    DynamicTableSink,
    EncodingFormat,
    LookupContext,
    LookupRuntimeProvider,
    LookupTableSource,
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
    ValidatedOptions,
    duration_option,
    int_option,
    memory_option,
    option,
    string_option,
)
from planengine.connectors.projection import ProducedRow, TopLevelProjection
from planengine.connectors.source_changelog import CHANGELOG_MODE, resolve_source_changelog_mode
from planengine.errors import ValidationError
from planengine.ir.changelog import ChangelogMode
from planengine.ir.expressions import Expr, input_refs, remap_inputs
from planengine.ir.schema import ResolvedSchema

PATH = option("path", PATH_TYPE, description="Directory (or file) to read or write: a local path or a URI; not "
              "empty, no NUL bytes or surrounding blanks, and a sink's path not inside the job root's runs/, "
              "snapshots/ or checkpoints/ (checked when the job starts). A local sink path belongs to one job: the "
              "first job to write it claims it (_planengine_sink.json), and another job is refused when it starts "
              "(Spark's exactly-once log is per path, so it would lose the second job's rows).")
FORMAT = string_option("format", description="File format: json, csv, parquet, debezium-json or changelog-json.")
MONITOR_INTERVAL = duration_option(
    "source.monitor-interval",
    description="Watch the directory for new files at this interval (a continuous, unbounded read). "
    "Unset: read the files present at start, then finish.")
MAX_FILES_PER_TRIGGER = int_option(
    "source.max-files-per-trigger",
    description="Read at most this many new files per micro-batch (Spark's maxFilesPerTrigger); 1 makes every "
    "file its own batch, so event time advances file by file.")
PATH_REGEX = string_option("source.path.regex-pattern",
                           description="Only read files whose path matches this regular expression.")
DEFAULT_PARTITION_NAME = string_option(
    "partition.default-name", default="__DEFAULT_PARTITION__",
    description="Directory name for a null or empty partition value.")
ROLLING_FILE_SIZE = memory_option("sink.rolling-policy.file-size", default="128 mb",
                                  description="Roll a part file once it reaches this size.")
ROLLING_INTERVAL = duration_option("sink.rolling-policy.rollover-interval", default="30 min",
                                   description="Roll a part file once it has been open this long.")
ROLLING_CHECK_INTERVAL = duration_option("sink.rolling-policy.check-interval", default="1 min",
                                         description="How often the rollover interval is checked.")


def _partition_columns(ctx: FactoryContext) -> tuple[str, ...]:
    names = ctx.schema.column_names()
    missing = [k for k in ctx.table.partition_keys if k not in names]
    if missing:
        raise ValidationError(f"table {ctx.identifier}: PARTITIONED BY names unknown column(s) {missing}",
                              hint=f"partition by some of {names}")
    return ctx.table.partition_keys


class FileSystemTableSource(ScanTableSource, LookupTableSource, TopLevelProjection, SupportsFilterPushDown,
                            SupportsPartitionPushDown, SupportsLimitPushDown):
    def __init__(self, identifier: object, schema: ResolvedSchema, partition_keys: tuple[str, ...],
                 options: ValidatedOptions, fmt: DecodingFormat, mode: ChangelogMode):
        self.identifier = identifier
        self.schema = schema
        self.partition_keys = partition_keys
        self.options = options
        self.format = fmt
        self.mode = mode
        self.row = ProducedRow(schema.physical_row_type())
        self.partition_filters: list[Expr] = []
        self.partitions: list[dict[str, str]] | None = None
        self.limit: int | None = None

    # --- typed options the runtime reads ---------------------------------------------------------------
    @property
    def path(self) -> str:
        return self.options.value(PATH)  # type: ignore[return-value]

    @property
    def monitor_interval_ms(self) -> int | None:
        return self.options.value(MONITOR_INTERVAL)

    def changelog_mode(self) -> ChangelogMode:
        return self.mode

    def scan_runtime_provider(self, ctx: ScanContext) -> ScanRuntimeProvider:
        return ScanRuntimeProvider("filesystem", self, is_bounded=self.monitor_interval_ms is None)

    def lookup_runtime_provider(self, ctx: LookupContext) -> LookupRuntimeProvider:
        """A small dimension table: read whole (bounded) at query start and joined by key (see module doc)."""
        if self.format.carries_row_kinds():
            raise ValidationError(f"{self.identifier}: a '{self.format.identifier}' file holds changes, not rows, "
                                  "so it cannot serve lookups", hint="use json, csv or parquet for dimension tables")
        names = self.row.physical_type.field_names()
        keys = []
        for path in ctx.lookup_keys:
            physical = self.row.physical_index_of(path[0]) if len(path) == 1 else None
            if physical is None:
                raise ValidationError(f"{self.identifier}: lookup key {list(path)} is not a top-level column")
            keys.append(names[physical])
        return LookupRuntimeProvider("filesystem", self, tuple(keys))

    def apply_filters(self, filters: list[Expr]) -> FilterResult:
        partition_fields = {i for i, name in enumerate(self.row.produced_type.field_names())  # type: ignore[union-attr]
                            if name in self.partition_keys}
        accepted, remaining = [], []
        for f in filters:
            refs = input_refs(f)
            (accepted if refs and refs <= partition_fields else remaining).append(f)
        # Kept over the table's physical row: a projection applied later must not change what they read.
        physical = {i: self.row.physical_index_of(i) for i in range(len(self.row.physical_indices))}
        self.partition_filters = [remap_inputs(f, physical) for f in accepted]  # type: ignore[arg-type]
        return FilterResult(accepted, remaining)

    def list_partitions(self) -> list[dict[str, str]] | None:
        """Partitions found under a local ``path``; None for remote stores (the planner prunes by filters)."""
        if not self.partition_keys:
            return None
        parsed = urlparse(self.path)
        if parsed.scheme not in ("", "file") or not os.path.isdir(parsed.path):
            return None
        found: list[dict[str, str]] = []

        def walk(directory: str, depth: int, so_far: dict[str, str]) -> None:
            if depth == len(self.partition_keys):
                found.append(dict(so_far))
                return
            key = self.partition_keys[depth]
            for entry in sorted(os.listdir(directory)):
                full = os.path.join(directory, entry)
                if os.path.isdir(full) and entry.startswith(key + "="):
                    walk(full, depth + 1, {**so_far, key: unquote(entry[len(key) + 1:])})

        walk(parsed.path, 0, {})
        return found

    def apply_partitions(self, partitions: list[dict[str, str]]) -> None:
        unknown = sorted({k for p in partitions for k in p} - set(self.partition_keys))
        if unknown:
            raise ValidationError(f"partitions name non-partition columns {unknown} of {self.identifier}")
        self.partitions = [dict(p) for p in partitions]

    def apply_limit(self, limit: int) -> None:
        self.limit = limit

    def as_summary_string(self) -> str:
        parts = [f"path={self.path}", f"format={self.format.identifier}"]
        if self.row.projection is not None:
            parts.append("project=[" + ", ".join(self.row.physical_names) + "]")
        if self.partition_filters:
            parts.append("partitionFilter=[" + ", ".join(str(f) for f in self.partition_filters) + "]")
        if self.partitions is not None:
            parts.append(f"partitions={len(self.partitions)}")
        if self.limit is not None:
            parts.append(f"limit={self.limit}")
        return "filesystem(" + ", ".join(parts) + ")"


class FileSystemTableSink(DynamicTableSink, SupportsPartitioning, SupportsOverwriting):
    def __init__(self, identifier: object, schema: ResolvedSchema, partition_keys: tuple[str, ...],
                 options: ValidatedOptions, fmt: EncodingFormat):
        self.identifier = identifier
        self.schema = schema
        self.partition_keys = partition_keys
        self.options = options
        self.format = fmt
        self.static_partition: dict[str, str] = {}
        self.overwrite = False

    @property
    def path(self) -> str:
        return self.options.value(PATH)  # type: ignore[return-value]

    def changelog_mode(self, requested: ChangelogMode) -> ChangelogMode:
        return self.format.changelog_mode()

    def writes_micro_batches(self) -> bool:
        return True  # planengine.runtime.connectors: a batch writer next to the streaming one

    def sink_runtime_provider(self, ctx: SinkContext) -> SinkRuntimeProvider:
        return SinkRuntimeProvider("filesystem", self)

    def apply_static_partition(self, partition: dict[str, str]) -> None:
        unknown = [k for k in partition if k not in self.partition_keys]
        if unknown:
            raise ValidationError(
                f"INSERT INTO {self.identifier} PARTITION names {unknown}, which are not partition columns",
                hint=f"the table is partitioned by {list(self.partition_keys) or 'nothing'}")
        self.static_partition = dict(partition)

    def requires_partition_grouping(self, supports_sorting: bool) -> bool:
        return bool(self.partition_keys)

    def apply_overwrite(self, overwrite: bool) -> None:
        self.overwrite = overwrite

    def as_summary_string(self) -> str:
        parts = [f"path={self.path}", f"format={self.format.identifier}"]
        if self.static_partition:
            parts.append("partition=" + ", ".join(f"{k}={v}" for k, v in sorted(self.static_partition.items())))
        if self.overwrite:
            parts.append("overwrite")
        return "filesystem(" + ", ".join(parts) + ")"


class FileSystemTableFactory(DynamicTableSourceFactory, DynamicTableSinkFactory):
    factory_identifier = "filesystem"
    description = "Files in a directory, partitioned by directory (`k=v/`); batch or continuous read."
    changelog_doc = ("Source: the format's changelog (json, csv, parquet: I; debezium-json, changelog-json: "
                     "I,UB,UA,D), narrowed or declared with 'changelog-mode'. Sink: what the format can encode.")
    source_class = FileSystemTableSource
    sink_class = FileSystemTableSink

    def required_options(self) -> Sequence[ConfigOption[Any]]:
        return (PATH, FORMAT)

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (MONITOR_INTERVAL, PATH_REGEX, MAX_FILES_PER_TRIGGER, DEFAULT_PARTITION_NAME, ROLLING_FILE_SIZE,
                ROLLING_INTERVAL, ROLLING_CHECK_INTERVAL, CHANGELOG_MODE)

    def mutable_options(self) -> frozenset[str]:
        return frozenset({MONITOR_INTERVAL.key, MAX_FILES_PER_TRIGGER.key, "sink.rolling-policy.*"})

    def create_dynamic_table_source(self, ctx: FactoryContext) -> FileSystemTableSource:
        helper = TableFactoryHelper(self, ctx)
        options = helper.validate(format_keys=("format",))
        partition_keys = _partition_columns(ctx)
        fmt = helper.decoding_format()
        assert fmt is not None  # 'format' is required, so validate() guaranteed it
        mode = resolve_source_changelog_mode(ctx.identifier, ctx.schema, fmt, options.value(CHANGELOG_MODE))
        return FileSystemTableSource(ctx.identifier, ctx.schema, partition_keys, options, fmt, mode)

    def create_dynamic_table_sink(self, ctx: FactoryContext) -> FileSystemTableSink:
        helper = TableFactoryHelper(self, ctx)
        options = helper.validate(format_keys=("format",))
        partition_keys = _partition_columns(ctx)
        fmt = helper.encoding_format()
        assert fmt is not None
        return FileSystemTableSink(ctx.identifier, ctx.schema, partition_keys, options, fmt)
