"""``'connector' = 'jdbc'`` for PostgreSQL: bounded scans, lookups with a cache, and an upsert sink.

Scan: projection, filter (simple predicates, rendered into a parameterised WHERE clause by
``jdbc_sql``) and limit push-down. Lookup: ``JOIN … FOR SYSTEM_TIME AS OF`` fetches by key, optionally
through a partial cache. Sink: with a primary key it upserts (``INSERT … ON CONFLICT``) and deletes by
key, so it accepts I,UA,D; without one it only inserts. Committing each micro-batch exactly once, keyed by
(query uid, batch id), is the Spark runtime's job (DESIGN §6).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from planengine.connectors.abilities import FilterResult, SupportsFilterPushDown, SupportsLimitPushDown
from planengine.connectors.base import (
    DynamicTableSink,
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
from planengine.connectors.jdbc_sql import (
    is_pushable,
    render_postgres_delete,
    render_postgres_insert,
    render_postgres_lookup,
    render_postgres_select,
    render_postgres_upsert,
    render_postgres_where,
)
from planengine.connectors.options import (
    INT,
    ConfigOption,
    OptionProblems,
    OptionType,
    ValidatedOptions,
    bool_option,
    duration_option,
    enum_option,
    int_option,
    non_negative,
    option,
    positive,
    string_option,
)
from planengine.connectors.projection import ProducedRow, TopLevelProjection
from planengine.errors import ValidationError
from planengine.ir.changelog import INSERT_ONLY, UPSERT, ChangelogMode
from planengine.ir.expressions import Expr, input_refs, remap_inputs
from planengine.ir.schema import ResolvedSchema


def _postgres_url(text: str) -> str:
    if not text.startswith("jdbc:postgresql://"):
        raise ValueError("a PostgreSQL JDBC URL such as 'jdbc:postgresql://host:5432/database'")
    return text


URL = option("url", OptionType("String", _postgres_url),
             description="PostgreSQL JDBC URL, e.g. 'jdbc:postgresql://host:5432/db'.")
TABLE_NAME = string_option("table-name", description="Table to read or write, optionally schema-qualified.")
USERNAME = string_option("username", description="User name.")
PASSWORD = string_option("password", description="Password (sensitive: never written into plans or logs).")
DRIVER = string_option("driver", default="org.postgresql.Driver",
                       description="JDBC driver class (kept for Flink compatibility; psycopg is used).")
CONNECTION_MAX_RETRY_TIMEOUT = duration_option("connection.max-retry-timeout", default="60 s",
                                               description="How long to retry opening a connection.")
SCAN_FETCH_SIZE = int_option("scan.fetch-size", default=0, type_=non_negative(INT),
                             description="Rows fetched per round trip (0: driver default).")
SCAN_AUTO_COMMIT = bool_option("scan.auto-commit", default=True, description="Auto-commit while scanning.")
SCAN_PARTITION_COLUMN = string_option("scan.partition.column",
                                      description="Numeric, date or timestamp column to split the scan on.")
SCAN_PARTITION_NUM = int_option("scan.partition.num", type_=positive(INT), description="Number of splits.")
SCAN_PARTITION_LOWER = int_option("scan.partition.lower-bound", description="Smallest value of the first split.")
SCAN_PARTITION_UPPER = int_option("scan.partition.upper-bound", description="Largest value of the last split.")
LOOKUP_CACHE = enum_option("lookup.cache", ("NONE", "PARTIAL"), default="NONE",
                           description="Cache looked-up rows: NONE, or PARTIAL (an LRU of recent keys).")
LOOKUP_CACHE_MAX_ROWS = int_option("lookup.partial-cache.max-rows", type_=positive(INT),
                                   description="Largest number of cached keys (PARTIAL cache).")
LOOKUP_CACHE_EXPIRE_WRITE = duration_option("lookup.partial-cache.expire-after-write",
                                            description="Evict a cached row this long after it was loaded.")
LOOKUP_CACHE_EXPIRE_ACCESS = duration_option("lookup.partial-cache.expire-after-access",
                                             description="Evict a cached row this long after its last use.")
LOOKUP_CACHE_MISSING_KEY = bool_option("lookup.partial-cache.cache-missing-key", default=True,
                                       description="Also cache keys that matched no row.")
LOOKUP_MAX_RETRIES = int_option("lookup.max-retries", default=3, type_=non_negative(INT),
                                description="Retries of a failed lookup query.")
SINK_FLUSH_MAX_ROWS = int_option("sink.buffer-flush.max-rows", default=100, type_=non_negative(INT),
                                 description="Flush after this many buffered rows (0: only at batch end).")
SINK_FLUSH_INTERVAL = duration_option("sink.buffer-flush.interval", default="1 s",
                                      description="Flush buffered rows at least this often.")
SINK_MAX_RETRIES = int_option("sink.max-retries", default=3, type_=non_negative(INT),
                              description="Retries of a failed write.")

_SCAN_PARTITION = (SCAN_PARTITION_COLUMN, SCAN_PARTITION_NUM, SCAN_PARTITION_LOWER, SCAN_PARTITION_UPPER)
_PARTIAL_CACHE = (LOOKUP_CACHE_MAX_ROWS, LOOKUP_CACHE_EXPIRE_WRITE, LOOKUP_CACHE_EXPIRE_ACCESS)


@dataclass(frozen=True)
class JdbcLookupOptions:
    cache: str
    max_rows: int | None
    expire_after_write_ms: int | None
    expire_after_access_ms: int | None
    cache_missing_key: bool
    max_retries: int


class _JdbcConnection:
    """Typed connection options shared by source and sink."""

    options: ValidatedOptions

    @property
    def url(self) -> str:
        return self.options.value(URL)  # type: ignore[return-value]

    @property
    def table_name(self) -> str:
        return self.options.value(TABLE_NAME)  # type: ignore[return-value]

    @property
    def username(self) -> str | None:
        return self.options.value(USERNAME)

    @property
    def password(self) -> str | None:
        return self.options.value(PASSWORD)


class JdbcTableSource(_JdbcConnection, ScanTableSource, LookupTableSource, TopLevelProjection,
                      SupportsFilterPushDown, SupportsLimitPushDown):
    def __init__(self, identifier: object, schema: ResolvedSchema, options: ValidatedOptions):
        self.identifier = identifier
        self.schema = schema
        self.options = options
        self.row = ProducedRow(schema.physical_row_type())
        self.filters: list[Expr] = []  # accepted; InputRefs index the table's *physical* row
        self.limit: int | None = None

    def changelog_mode(self) -> ChangelogMode:
        return INSERT_ONLY

    def scan_runtime_provider(self, ctx: ScanContext) -> ScanRuntimeProvider:
        return ScanRuntimeProvider("jdbc", self, is_bounded=True)

    def apply_filters(self, filters: list[Expr]) -> FilterResult:
        width = len(self.row.physical_indices)
        mapping = {i: self.row.physical_index_of(i) for i in range(width)}
        accepted, remaining = [], []
        for f in filters:
            ok = is_pushable(f) and all(i in mapping for i in input_refs(f))
            (accepted if ok else remaining).append(f)
        self.filters = [remap_inputs(f, mapping) for f in accepted]  # type: ignore[arg-type]
        return FilterResult(accepted, remaining)

    def apply_limit(self, limit: int) -> None:
        self.limit = limit

    def where_clause(self) -> tuple[str, list[Any]]:
        """The accepted filters as ``("\"a\" > %s AND …", [params])`` over the table's columns."""
        return render_postgres_where(self.filters, self.schema.physical_row_type().field_names())

    def select_query(self) -> tuple[str, list[Any]]:
        """The scan as one parameterised statement: projection, pushed filters and limit applied."""
        where, params = self.where_clause()
        return render_postgres_select(self.table_name, self.row.physical_names, where, self.limit), params

    def lookup_options(self) -> JdbcLookupOptions:
        o = self.options
        return JdbcLookupOptions(o.value(LOOKUP_CACHE) or "NONE", o.value(LOOKUP_CACHE_MAX_ROWS),
                                 o.value(LOOKUP_CACHE_EXPIRE_WRITE), o.value(LOOKUP_CACHE_EXPIRE_ACCESS),
                                 bool(o.value(LOOKUP_CACHE_MISSING_KEY)), o.value(LOOKUP_MAX_RETRIES) or 0)

    def lookup_runtime_provider(self, ctx: LookupContext) -> LookupRuntimeProvider:
        nested = [k for k in ctx.lookup_keys if len(k) != 1]
        if nested:
            raise ValidationError(f"{self.identifier}: jdbc lookups need top-level key columns, got paths {nested}")
        names = self.schema.physical_row_type().field_names()
        keys = []
        for (index,) in ctx.lookup_keys:
            physical = self.row.physical_index_of(index)
            if physical is None:
                raise ValidationError(f"{self.identifier}: lookup key index {index} is not a column")
            keys.append(names[physical])
        return LookupRuntimeProvider("jdbc", self, tuple(keys), asdict(self.lookup_options()))

    def lookup_query(self, key_names: Sequence[str]) -> str:
        return render_postgres_lookup(self.table_name, self.row.physical_names, key_names)

    def as_summary_string(self) -> str:
        parts = [f"table={self.table_name}"]
        if self.row.projection is not None:
            parts.append("project=[" + ", ".join(self.row.physical_names) + "]")
        if self.filters:
            parts.append("where=[" + self.where_clause()[0] + "]")
        if self.limit is not None:
            parts.append(f"limit={self.limit}")
        return "jdbc(" + ", ".join(parts) + ")"


class JdbcTableSink(_JdbcConnection, DynamicTableSink):
    def __init__(self, identifier: object, schema: ResolvedSchema, options: ValidatedOptions):
        self.identifier = identifier
        self.schema = schema
        self.options = options

    @property
    def key_columns(self) -> tuple[str, ...]:
        return self.schema.primary_key.columns if self.schema.primary_key else ()

    @property
    def columns(self) -> list[str]:
        return self.schema.persisted_row_type().field_names()

    def changelog_mode(self, requested: ChangelogMode) -> ChangelogMode:
        """Upserts by primary key (I,UA,D); without a key only inserts, so the planner asks for one."""
        return UPSERT if self.key_columns else INSERT_ONLY

    def writes_micro_batches(self) -> bool:
        return True  # planengine.runtime.connectors: a batch writer next to the streaming one

    def sink_runtime_provider(self, ctx: SinkContext) -> SinkRuntimeProvider:
        return SinkRuntimeProvider("jdbc", self)

    def write_statement(self) -> str:
        if self.key_columns:
            return render_postgres_upsert(self.table_name, self.columns, self.key_columns)
        return render_postgres_insert(self.table_name, self.columns)

    def delete_statement(self) -> str | None:
        return render_postgres_delete(self.table_name, self.key_columns) if self.key_columns else None

    def as_summary_string(self) -> str:
        mode = f"upsert on ({', '.join(self.key_columns)})" if self.key_columns else "append"
        return f"jdbc(table={self.table_name}, {mode})"


class JdbcTableFactory(DynamicTableSourceFactory, DynamicTableSinkFactory):
    factory_identifier = "jdbc"
    description = "PostgreSQL tables: bounded scan, lookup with cache, upsert sink by primary key."
    changelog_doc = ("Source: insert-only (I), bounded; also a lookup source. Sink: I,UA,D (upsert and delete by "
                     "primary key) when the table has a PRIMARY KEY, else insert-only (I).")
    source_class = JdbcTableSource
    sink_class = JdbcTableSink

    def required_options(self) -> Sequence[ConfigOption[Any]]:
        return (URL, TABLE_NAME)

    def optional_options(self) -> Sequence[ConfigOption[Any]]:
        return (USERNAME, PASSWORD, DRIVER, CONNECTION_MAX_RETRY_TIMEOUT, SCAN_FETCH_SIZE, SCAN_AUTO_COMMIT,
                *_SCAN_PARTITION, LOOKUP_CACHE, *_PARTIAL_CACHE, LOOKUP_CACHE_MISSING_KEY, LOOKUP_MAX_RETRIES,
                SINK_FLUSH_MAX_ROWS, SINK_FLUSH_INTERVAL, SINK_MAX_RETRIES)

    def mutable_options(self) -> frozenset[str]:
        return frozenset({USERNAME.key, PASSWORD.key, CONNECTION_MAX_RETRY_TIMEOUT.key, SCAN_FETCH_SIZE.key,
                          "lookup.cache", "lookup.partial-cache.*", LOOKUP_MAX_RETRIES.key, "sink.buffer-flush.*",
                          SINK_MAX_RETRIES.key})

    def _validate(self, ctx: FactoryContext) -> ValidatedOptions:
        def check(values: ValidatedOptions, problems: OptionProblems) -> None:
            _check_credentials(values, problems)
            _check_scan_partition(values, problems, ctx.schema)
            _check_cache(values, problems)

        return TableFactoryHelper(self, ctx).validate(checks=(check,))

    def create_dynamic_table_source(self, ctx: FactoryContext) -> JdbcTableSource:
        return JdbcTableSource(ctx.identifier, ctx.schema, self._validate(ctx))

    def create_dynamic_table_sink(self, ctx: FactoryContext) -> JdbcTableSink:
        return JdbcTableSink(ctx.identifier, ctx.schema, self._validate(ctx))


def _check_credentials(values: ValidatedOptions, problems: OptionProblems) -> None:
    if values.get(PASSWORD.key) is not None and values.get(USERNAME.key) is None:
        problems.other.append("'password' is set without 'username'; set both or neither")


def _check_scan_partition(values: ValidatedOptions, problems: OptionProblems, schema: ResolvedSchema) -> None:
    given = [o.key for o in _SCAN_PARTITION if values.get(o.key) is not None]
    if not given:
        return
    if len(given) != len(_SCAN_PARTITION):
        missing = [o.key for o in _SCAN_PARTITION if o.key not in given]
        problems.other.append(f"the scan.partition.* options go together: {given} set but {missing} missing")
        return
    column = values[SCAN_PARTITION_COLUMN.key]
    if column not in schema.column_names():
        problems.other.append(f"'scan.partition.column' = '{column}' is not a column of the table")
    elif not (schema.column(column).type.is_numeric or schema.column(column).type.is_timestamp):
        problems.other.append(f"'scan.partition.column' = '{column}' must be numeric or a timestamp")
    if values[SCAN_PARTITION_LOWER.key] > values[SCAN_PARTITION_UPPER.key]:
        problems.other.append("'scan.partition.lower-bound' is greater than 'scan.partition.upper-bound'")


def _check_cache(values: ValidatedOptions, problems: OptionProblems) -> None:
    partial_given = [o.key for o in _PARTIAL_CACHE if values.get(o.key) is not None]
    if values.get(LOOKUP_CACHE.key) == "PARTIAL":
        if values.get(LOOKUP_CACHE_MAX_ROWS.key) is None:
            problems.other.append("'lookup.cache' = 'PARTIAL' needs 'lookup.partial-cache.max-rows'")
    elif partial_given:
        problems.other.append(f"{partial_given} only apply with 'lookup.cache' = 'PARTIAL'")
