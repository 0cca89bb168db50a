"""``jdbc`` (PostgreSQL) at run time: a bounded scan, batched cached lookups, and an exactly-once upsert sink.

Everything talks to PostgreSQL through psycopg (the PostgreSQL JDBC driver is not on Spark's classpath);
the SQL text comes from the planner-side source/sink (``select_query()``, ``write_statement()``, …), so the
runtime never re-parses options or renders predicates itself.

Scan: a **one-shot stream**. A Python streaming data source (``planengine-jdbc``) has two offsets, 0 and 1;
batch 0→1 runs the source's ``select_query()`` (projection, pushed filters, limit) in one transaction and
emits its rows. Spark's checkpoint records offset 1 as processed, so a restored or continued run never
re-reads the table (a bounded Flink source that finished stays finished), and ``--until-idle`` sees the
source idle once the rows are through. The query runs when Spark plans the batch, not when the job is
translated.

Sink: ``foreachBatch``; each micro-batch is applied in **one PostgreSQL transaction** that also inserts
``(query uid, batch id)`` into ``planengine_sink_commits``. A batch id found there is skipped (Spark
replays the last batch after a crash), so every batch is applied exactly once. With a primary key, the
batch is merged per key (last change wins; ``-U`` ignored), then deleted (``-D``) and upserted
(``INSERT … ON CONFLICT (pk) DO UPDATE``) in that order; without one, rows are inserted. See docs/jdbc.md.

Lookups: ``JdbcLookupFunction`` fetches the rows of many keys with one ``SELECT … WHERE (k…) IN (…)``
through a per-process ``lookup_cache`` (``'lookup.cache' = 'PARTIAL'``); ``engine/translators/lookup_join.py``
calls it from an Arrow UDF.
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from planengine.connectors.jdbc import CONNECTION_MAX_RETRY_TIMEOUT, SCAN_FETCH_SIZE, SINK_MAX_RETRIES
from planengine.connectors.jdbc_sql import postgres_conninfo, quote_identifier, render_postgres_select
from planengine.errors import ValidationError
from planengine.runtime.connectors import (
    BatchOptions,
    QueryOptions,
    SourceFrame,
    batch_sink_writer,
    sink_writer,
    source_reader,
    spark_schema_ddl,
)
from planengine.runtime.connectors.lookup_cache import cache_for, cached_lookup
from planengine.runtime.dataflow.stream import ROWKIND

log = logging.getLogger("planengine.runtime.jdbc")

COMMITS_TABLE = "planengine_sink_commits"
DATA_SOURCE_NAME = "planengine-jdbc"
LOOKUP_CHUNK = 1000  # keys per lookup statement
WRITE_CHUNK = 1000  # rows per executemany
#: Fault injection for the crash tests: ``<phase>:<min batch id>:<marker dir>`` with phase ``before-commit``
#: or ``after-commit``; the sink writes ``<marker dir>/<phase>-<batch id>-<query uid>`` and sleeps an hour.
TEST_PAUSE_ENV = "PLANENGINE_TEST_JDBC_SINK_PAUSE"


# --- connections ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JdbcEndpoint:
    """What a process needs to connect (picklable: shipped to Python workers for lookups)."""

    conninfo: str
    user: str | None = None
    password: str | None = None
    retry_timeout_ms: int = 60_000

    @staticmethod
    def of(table: Any) -> JdbcEndpoint:
        password = table.password
        if password is not None and set(password) == {"*"}:
            raise ValidationError(f"{table.identifier}: the jdbc password is masked in the plan",
                                  hint="restore with the catalog (table.plan.restore.catalog-objects = ALL and "
                                       "enrich-table-options) so the secret comes from it")
        timeout = table.options.value(CONNECTION_MAX_RETRY_TIMEOUT)
        return JdbcEndpoint(postgres_conninfo(table.url), table.username, password,
                            int(timeout if timeout is not None else 60_000))

    def connect(self, autocommit: bool = False) -> Any:
        """A psycopg connection, retried with backoff for up to ``connection.max-retry-timeout``."""
        import psycopg  # noqa: PLC0415 — psycopg is an optional extra (jdbc)

        kwargs: dict[str, Any] = {"autocommit": autocommit, "connect_timeout": 10}
        if self.user is not None:
            kwargs["user"] = self.user
        if self.password is not None:
            kwargs["password"] = self.password
        deadline = time.monotonic() + self.retry_timeout_ms / 1000.0
        delay = 0.1
        while True:
            try:
                return psycopg.connect(self.conninfo, **kwargs)
            except psycopg.OperationalError:
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 5.0)


# --- values ----------------------------------------------------------------------------------------------------
def coercer(spark_type: Any) -> Callable[[Any], Any]:
    """A function making a psycopg value acceptable to Spark for ``spark_type`` (a pyspark DataType)."""
    from pyspark.sql import types as T  # noqa: PLC0415 — pyspark is an optional extra

    if isinstance(spark_type, T.BooleanType):
        return bool
    if isinstance(spark_type, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return int
    if isinstance(spark_type, T.FloatType | T.DoubleType):
        return float
    if isinstance(spark_type, T.DecimalType):
        return lambda v: v if isinstance(v, decimal.Decimal) else decimal.Decimal(str(v))
    if isinstance(spark_type, T.StringType):
        return lambda v: v if isinstance(v, str) else (json.dumps(v) if isinstance(v, dict | list) else str(v))
    if isinstance(spark_type, T.BinaryType):
        return bytes
    if isinstance(spark_type, T.DateType):
        return lambda v: v.date() if isinstance(v, dt.datetime) else v
    if isinstance(spark_type, T.TimestampNTZType):
        return lambda v: v.astimezone(dt.UTC).replace(tzinfo=None) if getattr(v, "tzinfo", None) else v
    if isinstance(spark_type, T.TimestampType):
        return lambda v: v.replace(tzinfo=dt.UTC) if isinstance(v, dt.datetime) and v.tzinfo is None else v
    return lambda v: v


def row_coercer(schema: Any) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    fns = [coercer(f.dataType) for f in schema.fields]
    return lambda row: tuple(None if v is None else fn(v) for fn, v in zip(fns, row))


def encode_params(params: Sequence[Any]) -> str:
    """Query parameters as JSON that survives the trip to a Python worker with their Python types."""
    def tag(v: Any) -> Any:
        if isinstance(v, decimal.Decimal):
            return {"decimal": str(v)}
        if isinstance(v, dt.datetime):
            return {"datetime": v.isoformat()}
        if isinstance(v, dt.date):
            return {"date": v.isoformat()}
        if isinstance(v, dt.time):
            return {"time": v.isoformat()}
        if isinstance(v, dt.timedelta):
            return {"seconds": v.total_seconds()}
        if isinstance(v, bytes | bytearray):
            return {"bytes": bytes(v).hex()}
        return v

    return json.dumps([tag(p) for p in params])


def decode_params(text: str) -> list[Any]:
    def untag(v: Any) -> Any:
        if isinstance(v, dict) and len(v) == 1:
            (kind, value), = v.items()
            return {"decimal": decimal.Decimal, "datetime": dt.datetime.fromisoformat, "date": dt.date.fromisoformat,
                    "time": dt.time.fromisoformat, "seconds": lambda s: dt.timedelta(seconds=s),
                    "bytes": bytes.fromhex}[kind](value)
        return v

    return [untag(p) for p in json.loads(text or "[]")]


# --- scan: a one-shot streaming data source ----------------------------------------------------------------------
def _data_source_classes() -> tuple[type, type]:
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition  # noqa: PLC0415 — pyspark is an optional extra

    class JdbcSnapshotReader(DataSourceStreamReader):
        """Offsets ``{"read": 0}`` → ``{"read": 1}``: the table is read once, by the batch that covers 0→1."""

        def __init__(self, options: Any, schema: Any):
            self.options = dict(options)
            self.schema = schema

        def initialOffset(self) -> dict:
            return {"read": 0}

        def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
            return {"read": 1}

        def partitions(self, start: dict, end: dict) -> list:
            return [InputPartition(0)] if int(start["read"]) < int(end["read"]) else []

        def read(self, partition: Any) -> Iterable[tuple]:
            endpoint = JdbcEndpoint(self.options["conninfo"], self.options.get("user") or None,
                                    self.options.get("password") or None, int(self.options.get("retry_ms", 60000)))
            fetch = int(self.options.get("fetch_size") or 0) or 1000
            coerce = row_coercer(self.schema)
            with endpoint.connect() as conn, conn.cursor(name="planengine_scan") as cur:
                # A named (server-side) cursor streams the result; it needs a transaction, hence autocommit off.
                cur.itersize = fetch
                cur.execute(self.options["query"], decode_params(self.options.get("params", "[]")))
                for row in cur:
                    yield coerce(row)

        def commit(self, end: dict) -> None:
            pass

    class JdbcSnapshotSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return DATA_SOURCE_NAME

        def schema(self) -> str:
            return self.options["schema"]

        def streamReader(self, schema: Any) -> Any:
            return JdbcSnapshotReader(self.options, schema)

    return JdbcSnapshotReader, JdbcSnapshotSource


_REGISTERED: set[int] = set()


def register_data_source(spark: Any) -> None:
    key = id(spark)
    if key not in _REGISTERED:
        spark.dataSource.register(_data_source_classes()[1])
        _REGISTERED.add(key)


def scan_options(source: Any) -> dict[str, str]:
    """The data source options of a scan: connection, statement, parameters and the Spark schema."""

    endpoint = JdbcEndpoint.of(source)
    query, params = source.select_query()
    names = source.row.physical_names
    physical = source.schema.physical_row_type()
    types = [physical.fields[i].type for i in source.row.physical_indices]
    options = {"conninfo": endpoint.conninfo, "query": query, "params": encode_params(params),
               "schema": spark_schema_ddl(names, types), "retry_ms": str(endpoint.retry_timeout_ms),
               "fetch_size": str(source.options.value(SCAN_FETCH_SIZE) or 0)}
    if endpoint.user is not None:
        options["user"] = endpoint.user
    if endpoint.password is not None:
        options["password"] = endpoint.password  # Spark redacts option keys matching 'password' in plans
    return options


@source_reader("jdbc")
def read_jdbc(source: Any, ctx: Any, node: Any) -> SourceFrame:
    if source.row.metadata_keys:
        raise ValidationError(f"{source.identifier}: the jdbc source has no metadata columns")
    register_data_source(ctx.spark)
    reader = ctx.spark.readStream.format(DATA_SOURCE_NAME)
    for key, value in scan_options(source).items():
        reader = reader.option(key, value)
    return SourceFrame(reader.load(), updating=False, bounded=True)


# --- sink: exactly once per (query uid, batch id) -----------------------------------------------------------------
COMMITS_DDL = (f"CREATE TABLE IF NOT EXISTS {COMMITS_TABLE} (query_uid TEXT NOT NULL, batch_id BIGINT NOT NULL, "
               "row_count BIGINT NOT NULL, fingerprint TEXT NOT NULL, "
               "committed_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (query_uid, batch_id))")


def ensure_commits_table(conn: Any) -> None:
    """Create the progress table once; two sinks racing on CREATE are fine (the loser sees it exists)."""
    import psycopg  # noqa: PLC0415 — psycopg is an optional extra (jdbc)

    for _ in range(3):
        try:
            with conn.transaction():
                conn.execute(COMMITS_DDL)
            return
        except (psycopg.errors.UniqueViolation, psycopg.errors.DuplicateTable):
            continue


def batch_fingerprint(rows: Iterable[Sequence[Any]]) -> tuple[int, str]:
    """Row count and an order-insensitive multiset hash of a batch (a replay of the same batch matches)."""
    total, count = 0, 0
    for row in rows:
        digest = hashlib.sha256(repr(tuple(row)).encode("utf-8")).digest()
        total = (total + int.from_bytes(digest[:16], "big")) % (1 << 128)
        count += 1
    return count, f"{total:032x}"


@dataclass
class BatchResult:
    applied: bool
    upserts: int = 0
    deletes: int = 0
    inserts: int = 0
    reason: str = ""


class JdbcBatchWriter:
    """Applies one micro-batch (rows of ``(kind, values…)``) in one transaction, exactly once per batch id."""

    def __init__(self, endpoint: JdbcEndpoint, query_uid: str, columns: Sequence[str], key_columns: Sequence[str],
                 write_sql: str, delete_sql: str | None, max_retries: int = 3):
        self.endpoint = endpoint
        self.query_uid = query_uid
        self.columns = list(columns)
        self.key_columns = list(key_columns)
        self.key_index = [self.columns.index(k) for k in key_columns]
        self.write_sql = write_sql
        self.delete_sql = delete_sql
        self.max_retries = max_retries
        self._conn: Any = None

    @staticmethod
    def for_sink(sink: Any, query_uid: str) -> JdbcBatchWriter:
        return JdbcBatchWriter(JdbcEndpoint.of(sink), query_uid, sink.columns, sink.key_columns,
                               sink.write_statement(), sink.delete_statement(),
                               int(sink.options.value(SINK_MAX_RETRIES) or 0))

    # -- connection ---------------------------------------------------------------------------------------
    def connection(self) -> Any:
        if self._conn is None or self._conn.closed:
            self._conn = self.endpoint.connect()
            ensure_commits_table(self._conn)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def committed(self, batch_id: int) -> bool:
        with self.connection().transaction():
            cur = self._conn.execute(f"SELECT 1 FROM {COMMITS_TABLE} WHERE query_uid = %s AND batch_id = %s",
                                     (self.query_uid, batch_id))
            return cur.fetchone() is not None

    # -- one batch ----------------------------------------------------------------------------------------
    def plan(self, rows: Iterable[Sequence[Any]]) -> tuple[list[tuple], list[tuple], list[tuple]]:
        """``(upserts, deletes, inserts)``: per key, the batch's last change wins; ``-U`` is ignored."""
        if not self.key_columns:
            inserts = []
            for kind, *values in rows:
                if kind == "-U":
                    continue
                if kind != "+I":
                    raise ValidationError(f"jdbc sink without a primary key received a {kind} row",
                                          hint="declare PRIMARY KEY (…) NOT ENFORCED on the sink table")
                inserts.append(tuple(values))
            return [], [], inserts
        last: dict[tuple, tuple[str, tuple]] = {}
        for kind, *values in rows:
            if kind == "-U":
                continue
            key = tuple(values[i] for i in self.key_index)
            last.pop(key, None)  # keep the dict in order of each key's last change
            last[key] = (kind, tuple(values))
        upserts = [v for kind, v in last.values() if kind != "-D"]
        deletes = [key for key, (kind, _) in last.items() if kind == "-D"]
        return upserts, deletes, []

    def write_batch(self, batch_id: int, rows: list[Sequence[Any]]) -> BatchResult:
        """Apply ``rows`` (each ``(kind, *values)``) as batch ``batch_id`` exactly once; retried on errors."""
        import psycopg  # noqa: PLC0415 — psycopg is an optional extra (jdbc)

        attempt = 0
        while True:
            try:
                return self._write_once(batch_id, rows)
            except (psycopg.OperationalError, psycopg.errors.SerializationFailure,
                    psycopg.errors.DeadlockDetected):
                self.close()
                attempt += 1
                if attempt > self.max_retries:
                    raise
                log.warning("jdbc sink %s: batch %d failed, retry %d of %d", self.query_uid, batch_id, attempt,
                            self.max_retries, exc_info=True)
                time.sleep(min(0.2 * 2 ** attempt, 5.0))

    def _write_once(self, batch_id: int, rows: list[Sequence[Any]]) -> BatchResult:
        count, fingerprint = batch_fingerprint(rows)
        upserts, deletes, inserts = self.plan(rows)
        conn = self.connection()
        with conn.transaction(), conn.cursor() as cur:
            # The progress row first: it takes the (uid, batch) key, so a second driver writing the same
            # batch concurrently waits here and then sees it committed.
            cur.execute(f"INSERT INTO {COMMITS_TABLE} (query_uid, batch_id, row_count, fingerprint) "
                        "VALUES (%s, %s, %s, %s) ON CONFLICT (query_uid, batch_id) DO NOTHING RETURNING batch_id",
                        (self.query_uid, batch_id, count, fingerprint))
            if cur.fetchone() is None:
                cur.execute(f"SELECT row_count, fingerprint FROM {COMMITS_TABLE} WHERE query_uid = %s AND "
                            "batch_id = %s", (self.query_uid, batch_id))
                seen = cur.fetchone()
                if seen is not None and (seen[0], seen[1]) != (count, fingerprint):
                    log.warning("jdbc sink %s: batch %d was committed before with %d rows, the replay has %d "
                                "different rows; keeping the committed one (replays are skipped)",
                                self.query_uid, batch_id, seen[0], count)
                log.info("jdbc sink %s: batch %d already committed, skipped", self.query_uid, batch_id)
                return BatchResult(False, reason="already committed")
            if deletes and self.delete_sql:
                for chunk in _chunks(deletes, WRITE_CHUNK):
                    cur.executemany(self.delete_sql, chunk)
            for statement_rows in (upserts, inserts):
                for chunk in _chunks(statement_rows, WRITE_CHUNK):
                    cur.executemany(self.write_sql, chunk)
            _test_pause("before-commit", batch_id, self.query_uid)
        _test_pause("after-commit", batch_id, self.query_uid)
        return BatchResult(True, len(upserts), len(deletes), len(inserts))


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _test_pause(phase: str, batch_id: int, query_uid: str) -> None:
    spec = os.environ.get(TEST_PAUSE_ENV)
    if not spec:
        return
    want, first, marker_dir = spec.split(":", 2)
    if want == phase and batch_id >= int(first):
        os.makedirs(marker_dir, exist_ok=True)
        with open(os.path.join(marker_dir, f"{phase}-{batch_id}-{query_uid}"), "w") as f:
            f.write(str(os.getpid()))
        time.sleep(3600)


@sink_writer("jdbc")
def write_jdbc(stream: Any, sink: Any, node: Any, ctx: Any, query: QueryOptions) -> Any:
    if getattr(sink, "overwrite", False):
        raise ValidationError(f"INSERT OVERWRITE {sink.identifier}: the jdbc sink cannot overwrite a table")
    apply = _batch_applier(JdbcBatchWriter.for_sink(sink, query.name), query.name, query.fence)
    df = _kind_first(stream)
    return query.configure(df.writeStream.foreachBatch(apply).outputMode(stream.output_mode)).start()


@batch_sink_writer("jdbc")
def jdbc_batches(sink: Any, node: Any, ctx: Any, options: BatchOptions) -> Any:
    if getattr(sink, "overwrite", False):
        raise ValidationError(f"INSERT OVERWRITE {sink.identifier}: the jdbc sink cannot overwrite a table")
    apply = _batch_applier(JdbcBatchWriter.for_sink(sink, options.name), options.name, options.fence)
    return lambda stream, batch_id: apply(_kind_first(stream), batch_id)


def _kind_first(stream: Any) -> Any:
    from pyspark.sql import functions as F  # noqa: PLC0415 — pyspark is an optional extra

    kind = F.col(ROWKIND) if stream.updating else F.lit("+I")
    return stream.df.select(kind.alias(ROWKIND), *[F.col(c) for c in stream.columns])


def _batch_applier(writer: JdbcBatchWriter, name: str, fence: Callable[[int], None]) -> Callable[[Any, int], None]:
    """One micro-batch in one transaction, keyed by ``(name, batch id)``: a replayed batch is skipped."""

    def apply(batch: Any, batch_id: int) -> None:
        fence(batch_id)
        if writer.committed(batch_id):  # a replay: skip without reading the batch
            log.info("jdbc sink %s: batch %d already committed, skipped", name, batch_id)
            return
        rows = [tuple(r) for r in batch.toLocalIterator()]
        fence(batch_id)
        result = writer.write_batch(batch_id, rows)
        if result.applied:
            log.info("jdbc sink %s: batch %d committed (%d upserts, %d deletes, %d inserts)", name, batch_id,
                     result.upserts, result.deletes, result.inserts)

    return apply


# --- lookups -------------------------------------------------------------------------------------------------------
class JdbcLookupFunction:
    """Rows of many keys at once: cache first, then ``SELECT cols FROM t WHERE (k…) IN ((…), …)`` per chunk.

    Picklable (holds only strings and numbers); the cache is found per process by ``cache_id``.
    """

    def __init__(self, endpoint: JdbcEndpoint, table_name: str, columns: Sequence[str], key_names: Sequence[str],
                 cache_id: str, cache_options: dict[str, Any], max_retries: int = 3, row_schema: Any = None):
        self.endpoint = endpoint
        self.row_schema = row_schema  # pyspark StructType of a row: values are coerced to it (None: as fetched)
        self.columns = list(columns)
        self.key_names = list(key_names)
        self.key_index = [self.columns.index(k) for k in key_names]
        self.cache_id = cache_id
        self.cache_options = dict(cache_options)
        self.max_retries = max_retries
        keys = ", ".join(quote_identifier(k) for k in key_names)
        self._select = render_postgres_select(table_name, columns, f"({keys}) IN ({{values}})")
        self._tuple = "(" + ", ".join("%s" for _ in key_names) + ")"

    @staticmethod
    def for_source(source: Any, key_names: Sequence[str], cache_id: str, options: dict[str, Any],
                   row_schema: Any = None) -> JdbcLookupFunction:
        return JdbcLookupFunction(JdbcEndpoint.of(source), source.table_name, source.row.physical_names, key_names,
                                  cache_id, options, int(options.get("max_retries") or 0), row_schema)

    def statement(self, n: int) -> str:
        return self._select.replace("{values}", ", ".join(self._tuple for _ in range(n)))

    def load(self, keys: list[Hashable]) -> dict[Hashable, list[tuple]]:
        import psycopg  # noqa: PLC0415 — psycopg is an optional extra (jdbc)

        coerce = row_coercer(self.row_schema) if self.row_schema is not None else tuple
        attempt = 0
        while True:
            found: dict[Hashable, list[tuple]] = {}
            try:
                with self.endpoint.connect(autocommit=True) as conn:
                    for chunk in _chunks(keys, LOOKUP_CHUNK):
                        params = [v for key in chunk for v in key]  # type: ignore[union-attr]
                        for raw in conn.execute(self.statement(len(chunk)), params):
                            row = coerce(raw)
                            found.setdefault(tuple(row[i] for i in self.key_index), []).append(row)
                return found
            except psycopg.OperationalError:
                attempt += 1
                if attempt > self.max_retries:
                    raise
                time.sleep(min(0.2 * 2 ** attempt, 5.0))

    def lookup(self, keys: Iterable[tuple]) -> dict[Hashable, list[tuple]]:
        """Rows per key tuple; keys holding a null match nothing (SQL equality) and are not queried."""

        wanted = [k for k in keys if not any(v is None for v in k)]
        cache = cache_for(self.cache_id, self.cache_options)
        return cached_lookup(cache, wanted, self.load)
