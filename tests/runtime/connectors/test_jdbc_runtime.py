"""The jdbc connector through the real executor, Spark and PostgreSQL: scan, lookup join, upsert sink."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from planengine.api import TableEnvironment

from .pg import changelog, jdbc_options, pg_execute, pg_rows, write_json

OUT_ITEMS = "id INT, name STRING, price DECIMAL(10, 2), added TIMESTAMP_NTZ"
OUT_LOOKUP = "id INT, name STRING, tier INT"


def test_scan_pushes_filters_and_projection_and_reads_once(tmp_path: Path, spark, postgres_db) -> None:
    pg_execute(postgres_db, "CREATE TABLE items (id INT PRIMARY KEY, name TEXT, price NUMERIC(10, 2), "
               "added TIMESTAMP, tags TEXT)",
               "INSERT INTO items VALUES (1, 'a', 1.50, '2024-01-01 10:00:00', 'x'), (2, 'b', 20.00, NULL, 'y'), "
               "(3, NULL, 3.25, '2024-01-03 00:00:01.5', 'z'), (4, 'd', 0.10, NULL, NULL), "
               "(5, 'e', 5.00, '2024-01-05 10:00:00', NULL)")
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE items (id INT, name STRING, price DECIMAL(10, 2), added TIMESTAMP(3), tags STRING)
          WITH ({jdbc_options(postgres_db, 'items')});
        CREATE TABLE out_t (id INT, name STRING, price DECIMAL(10, 2), added TIMESTAMP(3))
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/out', 'format' = 'changelog-json');
    """)
    plan = env.compile_plan_sql("INSERT INTO out_t SELECT id, name, price, added FROM items "
                                "WHERE (id > 1 OR name IS NULL) AND price < 10")
    scan = next(n for n in plan.data["nodes"] if "table-source-scan" in n["type"])
    # (id > 1 OR name IS NULL) runs in PostgreSQL; price < 10 (an implicit CAST) stays in the plan
    assert [a["type"] for a in scan["abilities"]] == ["FilterPushDown", "ProjectPushDown"]
    root = tmp_path / "job"
    first = env.execute_plan(plan, job_root=str(root), until_idle=True)
    want = ["+I[3, null, 3.25, 2024-01-03T00:00:01.500]", "+I[4, d, 0.10, null]", "+I[5, e, 5.00, 2024-01-05T10:00]"]
    assert Counter(changelog(spark, tmp_path / "out", OUT_ITEMS)) == Counter(want)
    # A continued run does not read the (bounded, finished) table again.
    pg_execute(postgres_db, "INSERT INTO items VALUES (6, 'f', 1.00, NULL, NULL)")
    second = env.execute_plan(plan, job_root=str(root), until_idle=True)
    assert second.run_id != first.run_id
    assert Counter(changelog(spark, tmp_path / "out", OUT_ITEMS)) == Counter(want)


LOOKUP_DDL = """
CREATE TABLE orders (id INT, uid BIGINT, amount INT, proc AS PROCTIME())
  WITH ('connector' = 'filesystem', 'path' = '{dir}/orders', 'format' = 'json');
CREATE TABLE users (uid BIGINT, name STRING, tier INT, PRIMARY KEY (uid) NOT ENFORCED) WITH ({users});
CREATE TABLE out_t (id INT, name STRING, tier INT)
  WITH ('connector' = 'filesystem', 'path' = '{dir}/out', 'format' = 'changelog-json');
"""


def test_lookup_join_left_with_condition_sees_changes_after_expiry(tmp_path: Path, spark, postgres_db) -> None:
    pg_execute(postgres_db, "CREATE TABLE users (uid BIGINT PRIMARY KEY, name TEXT, tier INT)",
               "INSERT INTO users VALUES (1, 'ann', 1), (2, 'bob', 0), (3, 'cy', 2)")
    users = jdbc_options(postgres_db, "users", **{"lookup.cache": "PARTIAL", "lookup.partial-cache.max-rows": "100",
                                                  "lookup.partial-cache.expire-after-write": "1 ms"})
    env = TableEnvironment()
    env.execute_sql(LOOKUP_DDL.format(dir=tmp_path, users=users))
    plan = env.compile_plan_sql(
        "INSERT INTO out_t SELECT o.id, u.name, u.tier FROM orders AS o "
        "LEFT JOIN users FOR SYSTEM_TIME AS OF o.proc AS u ON o.uid = u.uid AND u.tier > 0")
    assert any("lookup-join" in n["type"] for n in plan.data["nodes"])
    write_json(tmp_path / "orders", "one", [{"id": 10, "uid": 1, "amount": 5}, {"id": 11, "uid": 2, "amount": 6},
                                            {"id": 12, "uid": 9, "amount": 7}, {"id": 13, "uid": None, "amount": 8},
                                            {"id": 14, "uid": 3, "amount": 9}])
    root = tmp_path / "job"
    env.execute_plan(plan, job_root=str(root), until_idle=True)
    first = ["+I[10, ann, 1]", "+I[11, null, null]", "+I[12, null, null]", "+I[13, null, null]", "+I[14, cy, 2]"]
    assert Counter(changelog(spark, tmp_path / "out", OUT_LOOKUP)) == Counter(first)

    # The dimension changes between batches; the next lookups see it (the cache entries have expired).
    pg_execute(postgres_db, "UPDATE users SET name = 'ANN', tier = 5 WHERE uid = 1",
               "UPDATE users SET tier = 1 WHERE uid = 2", "DELETE FROM users WHERE uid = 3")
    write_json(tmp_path / "orders", "two", [{"id": 20, "uid": 1, "amount": 1}, {"id": 21, "uid": 2, "amount": 1},
                                            {"id": 22, "uid": 3, "amount": 1}])
    env.execute_plan(plan, job_root=str(root), until_idle=True)
    second = ["+I[20, ANN, 5]", "+I[21, bob, 1]", "+I[22, null, null]"]
    assert Counter(changelog(spark, tmp_path / "out", OUT_LOOKUP)) == Counter(first + second)


def test_lookup_join_inner_drops_misses(tmp_path: Path, spark, postgres_db) -> None:
    pg_execute(postgres_db, "CREATE TABLE users (uid BIGINT PRIMARY KEY, name TEXT, tier INT)",
               "INSERT INTO users VALUES (1, 'ann', 1), (2, 'bob', 0)")
    env = TableEnvironment()
    env.execute_sql(LOOKUP_DDL.format(dir=tmp_path, users=jdbc_options(postgres_db, "users")))
    plan = env.compile_plan_sql("INSERT INTO out_t SELECT o.id, u.name, u.tier + o.amount FROM orders AS o "
                                "JOIN users FOR SYSTEM_TIME AS OF o.proc AS u ON o.uid = u.uid")
    write_json(tmp_path / "orders", "one", [{"id": 1, "uid": 1, "amount": 5}, {"id": 2, "uid": 2, "amount": 6},
                                            {"id": 3, "uid": 7, "amount": 7}, {"id": 4, "uid": 1, "amount": 1}])
    env.execute_plan(plan, job_root=str(tmp_path / "job"), until_idle=True)
    want = ["+I[1, ann, 6]", "+I[2, bob, 6]", "+I[4, ann, 2]"]
    assert Counter(changelog(spark, tmp_path / "out", OUT_LOOKUP)) == Counter(want)


def test_upsert_sink_applies_changelog_by_primary_key(tmp_path: Path, spark, postgres_db) -> None:
    pg_execute(postgres_db, "CREATE TABLE totals (id INT PRIMARY KEY, v BIGINT, note TEXT)",
               "CREATE TABLE log_t (id INT, v BIGINT)")
    env = TableEnvironment()
    env.execute_sql(f"""
        CREATE TABLE src (id INT, v BIGINT, PRIMARY KEY (id) NOT ENFORCED)
          WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/src', 'format' = 'changelog-json',
                'changelog-mode' = 'I,UB,UA,D');
        CREATE TABLE totals (id INT, v BIGINT, note STRING, PRIMARY KEY (id) NOT ENFORCED)
          WITH ({jdbc_options(postgres_db, 'totals')});
    """)
    plan = env.compile_plan_sql("INSERT INTO totals SELECT id, v * 10, CAST(id AS STRING) FROM src")
    write_json(tmp_path / "src", "one", [{"op": "+I", "id": 1, "v": 1}, {"op": "+I", "id": 2, "v": 2},
                                         {"op": "-U", "id": 1, "v": 1}, {"op": "+U", "id": 1, "v": 3},
                                         {"op": "+I", "id": 3, "v": 4}])
    root = tmp_path / "job"
    env.execute_plan(plan, job_root=str(root), until_idle=True)
    assert pg_rows(postgres_db, "SELECT * FROM totals ORDER BY id") == [(1, 30, "1"), (2, 20, "2"), (3, 40, "3")]
    write_json(tmp_path / "src", "two", [{"op": "-D", "id": 2, "v": 2}, {"op": "-U", "id": 3, "v": 4},
                                         {"op": "+U", "id": 3, "v": 5}, {"op": "+I", "id": 4, "v": 0}])
    env.execute_plan(plan, job_root=str(root), until_idle=True)
    assert pg_rows(postgres_db, "SELECT * FROM totals ORDER BY id") == [(1, 30, "1"), (3, 50, "3"), (4, 0, "4")]
    commits = pg_rows(postgres_db, "SELECT query_uid, batch_id, row_count FROM planengine_sink_commits ORDER BY 2")
    assert [c[1] for c in commits] == [0, 1] and all(c[0].endswith("_stream-exec-sink-2_sink") for c in commits)
