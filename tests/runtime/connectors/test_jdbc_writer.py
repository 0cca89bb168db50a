"""The jdbc sink's batch writer and lookup function against real PostgreSQL, without Spark.

The writer is what ``foreachBatch`` calls; these tests drive it directly, including the replay of a batch id
(Spark re-runs the last batch after a crash) that must be applied exactly once.
"""

from __future__ import annotations

import logging
import time

import pytest

from planengine.connectors.jdbc_sql import (
    postgres_conninfo,
    render_postgres_delete,
    render_postgres_insert,
    render_postgres_upsert,
)
from planengine.runtime.connectors.jdbc import COMMITS_TABLE, JdbcBatchWriter, JdbcEndpoint, JdbcLookupFunction
from planengine.runtime.connectors.lookup_cache import reset_caches

from .pg import pg_execute, pg_rows


def endpoint(db) -> JdbcEndpoint:
    return JdbcEndpoint(postgres_conninfo(db.jdbc_url), db.user, None, 5000)


def upsert_writer(db, uid: str = "7_stream-exec-sink-1_sink") -> JdbcBatchWriter:
    cols, key = ["id", "v"], ["id"]
    return JdbcBatchWriter(endpoint(db), uid, cols, key, render_postgres_upsert("t", cols, key),
                           render_postgres_delete("t", key))


def test_batch_merges_per_key_and_ignores_update_before(postgres_db) -> None:
    pg_execute(postgres_db, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", "INSERT INTO t VALUES (5, 'old')")
    w = upsert_writer(postgres_db)
    upserts, deletes, inserts = w.plan([("+I", 1, "a"), ("-U", 1, "a"), ("+U", 1, "b"), ("+I", 2, "x"),
                                        ("-D", 2, "x"), ("-D", 5, "old"), ("+I", 5, "new")])
    assert upserts == [(1, "b"), (5, "new")] and deletes == [(2,)] and inserts == []
    result = w.write_batch(0, [("+I", 1, "a"), ("-U", 1, "a"), ("+U", 1, "b"), ("+I", 2, "x"), ("-D", 5, "old")])
    assert result.applied and (result.upserts, result.deletes) == (2, 1)
    assert pg_rows(postgres_db, "SELECT * FROM t ORDER BY id") == [(1, "b"), (2, "x")]
    w.write_batch(1, [("-D", 2, "x"), ("+U", 1, "c")])
    assert pg_rows(postgres_db, "SELECT * FROM t ORDER BY id") == [(1, "c")]
    w.close()


def test_replayed_batch_id_is_applied_once(postgres_db, caplog) -> None:
    pg_execute(postgres_db, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", "CREATE TABLE log_t (id INT, v TEXT)")
    w = upsert_writer(postgres_db)
    batch = [("+I", 1, "a"), ("+I", 2, "b")]
    assert w.write_batch(0, batch).applied
    pg_execute(postgres_db, "UPDATE t SET v = 'changed by someone' WHERE id = 1")
    # Spark re-runs batch 0 (the driver died before its commit log entry): nothing happens.
    replay = upsert_writer(postgres_db)
    assert replay.committed(0)
    result = replay.write_batch(0, batch)
    assert not result.applied and result.reason == "already committed"
    assert pg_rows(postgres_db, "SELECT * FROM t ORDER BY id") == [(1, "changed by someone"), (2, "b")]
    # Append-only (no key): a replay would duplicate rows, so the skip is what keeps it exactly once.
    cols = ["id", "v"]
    append = JdbcBatchWriter(endpoint(postgres_db), "9_stream-exec-sink-1_sink", cols, [],
                             render_postgres_insert("log_t", cols), None)
    for _ in range(2):
        append.write_batch(3, [("+I", 1, "a"), ("+I", 1, "a")])
    assert pg_rows(postgres_db, "SELECT * FROM log_t") == [(1, "a"), (1, "a")]
    # A replay whose rows differ from the committed batch is still skipped, with a warning.
    with caplog.at_level(logging.WARNING, logger="planengine.runtime.jdbc"):
        assert not append.write_batch(3, [("+I", 2, "z")]).applied
    assert "different rows" in caplog.text
    commits = pg_rows(postgres_db, f"SELECT query_uid, batch_id, row_count FROM {COMMITS_TABLE} ORDER BY 1, 2")
    assert commits == [("7_stream-exec-sink-1_sink", 0, 2), ("9_stream-exec-sink-1_sink", 3, 2)]
    for writer in (w, replay, append):
        writer.close()


def test_failed_batch_leaves_nothing_behind(postgres_db) -> None:
    pg_execute(postgres_db, "CREATE TABLE t (id INT PRIMARY KEY, v TEXT NOT NULL)")
    w = upsert_writer(postgres_db)
    with pytest.raises(Exception, match="null value"):
        w.write_batch(0, [("+I", 1, "a"), ("+I", 2, None)])
    assert pg_rows(postgres_db, "SELECT * FROM t") == []
    assert not w.committed(0)  # the progress row rolled back with the data: the batch can be retried
    assert w.write_batch(0, [("+I", 1, "a")]).applied
    w.close()


def test_insert_only_sink_refuses_updates(postgres_db) -> None:
    cols = ["id", "v"]
    w = JdbcBatchWriter(endpoint(postgres_db), "q", cols, [], render_postgres_insert("t", cols), None)
    with pytest.raises(Exception, match="PRIMARY KEY"):
        w.plan([("+I", 1, "a"), ("-D", 1, "a")])


def test_lookup_function_batches_keys_and_caches_with_expiry(postgres_db) -> None:
    reset_caches()
    pg_execute(postgres_db, "CREATE TABLE d (k INT, r TEXT, v INT)",
               "INSERT INTO d VALUES (1, 'x', 10), (1, 'y', 11), (2, 'z', 20)")
    options = {"cache": "PARTIAL", "max_rows": 100, "expire_after_write_ms": 400, "expire_after_access_ms": None,
               "cache_missing_key": True}
    fn = JdbcLookupFunction(endpoint(postgres_db), "d", ["k", "r", "v"], ["k"], "lk-test", options)
    assert fn.statement(2).endswith('WHERE ("k") IN ((%s), (%s))')
    got = fn.lookup([(1,), (2,), (3,), (None,)])
    assert sorted(got[(1,)]) == [(1, "x", 10), (1, "y", 11)] and got[(2,)] == [(2, "z", 20)] and got[(3,)] == []
    assert (None,) not in got  # a null key matches nothing and is never queried
    pg_execute(postgres_db, "UPDATE d SET v = 99 WHERE k = 2", "INSERT INTO d VALUES (3, 'new', 30)")
    cached = fn.lookup([(2,), (3,)])
    assert cached[(2,)] == [(2, "z", 20)] and cached[(3,)] == []  # stale until the entries expire
    time.sleep(0.5)
    fresh = fn.lookup([(2,), (3,)])
    assert fresh[(2,)] == [(2, "z", 99)] and fresh[(3,)] == [(3, "new", 30)]
    reset_caches()


def test_lookup_function_with_composite_key_and_no_cache(postgres_db) -> None:
    pg_execute(postgres_db, "CREATE TABLE d (a INT, b TEXT, v INT)", "INSERT INTO d VALUES (1, 'p', 1), (1, 'q', 2)")
    fn = JdbcLookupFunction(endpoint(postgres_db), "d", ["a", "b", "v"], ["a", "b"], "lk-none", {"cache": "NONE"})
    assert fn.lookup([(1, "q"), (1, "r")]) == {(1, "q"): [(1, "q", 2)], (1, "r"): []}
    pg_execute(postgres_db, "UPDATE d SET v = 5 WHERE b = 'q'")
    assert fn.lookup([(1, "q")]) == {(1, "q"): [(1, "q", 5)]}
